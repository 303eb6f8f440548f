/* test_vulkan_fused.c - fused epilogues through the plugin ABI: hand-built multi-node kernel
 * descriptions (Conv -> BN -> Relu -> Add, Gemm -> Relu, ...) against mi_ref_run on the same
 * graph (rel L2 < 1e-4), and chains the plugin must refuse. */
#include "test_vulkan_util.h"

/* Prepares the whole graph as one kernel on vulkan:0; returns rel L2 against mi_ref_run, or a
 * negative status (prepare's status when it refused). */
static double run_fused(mi_plugin_t *p, mi_graph_t *g, const char *variant, mi_error_t *err) {
  const mi_plugin_api_t *api = &p->api;
  tv_desc_t f;
  mi_kernel_t *k = NULL;
  mi_buffer_t *bin[4] = {0}, *bout = NULL;
  mi_array_t *in[4] = {0}, *ref = NULL, *got = NULL;
  mi_run_stats_t st;
  int32_t rc, i, nin = g->input_count;
  double e = -1;
  tv_desc_build(g, variant, &f);
  rc = api->kernel_prepare(p->ctx, 0, &f.k, &k, err);
  if (rc != MI_OK) return -(double)rc;
  for (i = 0; i < nin; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    in[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
    mi_array_fill_random(in[i], 11 + (uint64_t)i);
    rc = api->buffer_alloc(p->ctx, 0, (uint64_t)mi_array_numel(in[i]) * 4, &bin[i], err);
    if (rc == MI_OK) rc = api->buffer_write(p->ctx, bin[i], 0, in[i]->data, (uint64_t)mi_array_numel(in[i]) * 4, err);
    if (rc != MI_OK) goto done;
  }
  rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, &ref, 1, err);
  if (rc == MI_OK) got = mi_array_create(MI_DTYPE_FLOAT32, ref->rank, ref->dims);
  if (rc == MI_OK) rc = api->buffer_alloc(p->ctx, 0, (uint64_t)mi_array_numel(ref) * 4, &bout, err);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (rc == MI_OK) rc = api->kernel_run(p->ctx, k, bin, nin, &bout, 1, &st, err);
  if (rc == MI_OK) rc = api->buffer_read(p->ctx, bout, 0, got->data, (uint64_t)mi_array_numel(ref) * 4, err);
  if (rc == MI_OK) {
    double norm = 0;
    for (int64_t j = 0; j < mi_array_numel(ref); j++) norm += fabs(((const float *)ref->data)[j]);
    CHECK(norm > 0, "the reference output is all zeros: the comparison would prove nothing");
    e = tu_rel_l2_arrays(got, ref);
    CHECK(st.has_device_time && st.device_time_ns > 0, "fused run reported no device time");
  }
done:
  api->kernel_release(p->ctx, k);
  for (i = 0; i < nin; i++) {
    api->buffer_free(p->ctx, bin[i]);
    mi_array_destroy(in[i]);
  }
  api->buffer_free(p->ctx, bout);
  mi_array_destroy(ref);
  mi_array_destroy(got);
  return rc == MI_OK ? e : -(double)rc;
}

static int32_t input(mi_graph_t *g, const char *name, int rank, const int64_t *dims) {
  int32_t t = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, rank, dims);
  mi_graph_add_input(g, t);
  return t;
}

static int32_t value(mi_graph_t *g, const char *name) {
  return mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
}

/* Conv(+bias) -> BatchNormalization -> tail. tail 0: Relu -> Add(residual);
 * 1: Add(residual) -> Relu (ResNet block end); 2: Mul(const per-channel) -> Clip -> Add -> Relu. */
static mi_graph_t *conv_chain(int64_t C, int64_t K, int64_t group, int tail) {
  mi_graph_t *g = mi_graph_create("conv_chain");
  int64_t xd[4] = {2, C, 9, 7}, wd[4] = {K, C / group, 3, 3}, cd[1] = {K}, md[3] = {K, 1, 1};
  int64_t pads[4] = {1, 1, 1, 1};
  int32_t x = input(g, "x", 4, xd), r, in[5], t0 = value(g, "conv"), t1 = value(g, "bn"), t2, t3, y, n;
  float var[64];
  in[0] = x, in[1] = tv_const(g, "w", 4, wd, 21), in[2] = tv_const(g, "b", 1, cd, 22);
  n = mi_graph_add_node(g, "Conv", "conv", 3, in, 1, &t0);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, n, "group", group);
  for (int i = 0; i < K; i++) var[i] = 0.5f + 0.01f * (float)i; /* variances must be positive */
  in[0] = t0, in[1] = tv_const(g, "gamma", 1, cd, 23), in[2] = tv_const(g, "beta", 1, cd, 24);
  in[3] = tv_const(g, "mean", 1, cd, 25), in[4] = mi_graph_add_const_f32(g, "var", 1, cd, var);
  n = mi_graph_add_node(g, "BatchNormalization", "bn", 5, in, 1, &t1);
  mi_node_set_float(g, n, "epsilon", 1e-3f);
  r = input(g, "r", 4, (int64_t[4]){2, K, 9, 7}); /* first used after x: input order holds */
  t2 = value(g, "t2"), y = value(g, "y");
  if (tail == 0) {
    mi_graph_add_node(g, "Relu", "relu", 1, &t1, 1, &t2);
    in[0] = t2, in[1] = r;
    mi_graph_add_node(g, "Add", "add", 2, in, 1, &y);
  } else if (tail == 1) {
    in[0] = r, in[1] = t1; /* residual on the left: the chain value may be either operand */
    mi_graph_add_node(g, "Add", "add", 2, in, 1, &t2);
    mi_graph_add_node(g, "Relu", "relu", 1, &t2, 1, &y);
  } else {
    int32_t t4 = value(g, "t4");
    float lo = -0.5f, hi = 0.75f;
    t3 = value(g, "t3");
    in[0] = t1, in[1] = tv_const(g, "m", 3, md, 26);
    mi_graph_add_node(g, "Mul", "mul", 2, in, 1, &t2);
    /* opset 13: the bounds are constant inputs, not attributes */
    in[0] = t2, in[1] = mi_graph_add_const_f32(g, "lo", 0, NULL, &lo);
    in[2] = mi_graph_add_const_f32(g, "hi", 0, NULL, &hi);
    mi_graph_add_node(g, "Clip", "clip", 3, in, 1, &t3);
    in[0] = t3, in[1] = r;
    mi_graph_add_node(g, "Add", "add", 2, in, 1, &t4);
    mi_graph_add_node(g, "Relu", "relu", 1, &t4, 1, &y);
  }
  mi_graph_add_output(g, y);
  return g;
}

/* Gemm(transB, per-column C) -> Relu, or MatMul -> Add(const row) -> Sigmoid when matmul. */
static mi_graph_t *gemm_chain(int64_t M, int64_t K, int64_t N, int matmul) {
  mi_graph_t *g = mi_graph_create("gemm_chain");
  int64_t ad[2] = {M, K}, bd[2] = {N, K}, bmd[2] = {K, N}, cd[1] = {N};
  int32_t a = input(g, "a", 2, ad), in[3], t0 = value(g, "mm"), t1, y = value(g, "y"), n;
  if (!matmul) {
    in[0] = a, in[1] = tv_const(g, "b", 2, bd, 31), in[2] = tv_const(g, "c", 1, cd, 32);
    n = mi_graph_add_node(g, "Gemm", "gemm", 3, in, 1, &t0);
    mi_node_set_int(g, n, "transB", 1);
    mi_node_set_float(g, n, "alpha", 0.5f);
    mi_graph_add_node(g, "Relu", "relu", 1, &t0, 1, &y);
  } else {
    t1 = value(g, "t1");
    in[0] = a, in[1] = tv_const(g, "b", 2, bmd, 33);
    mi_graph_add_node(g, "MatMul", "mm", 2, in, 1, &t0);
    in[0] = t0, in[1] = tv_const(g, "c", 1, cd, 34);
    mi_graph_add_node(g, "Add", "bias", 2, in, 1, &t1);
    mi_graph_add_node(g, "Sigmoid", "act", 1, &t1, 1, &y);
  }
  mi_graph_add_output(g, y);
  return g;
}

static void expect_ok(mi_plugin_t *p, mi_graph_t *g, const char *what, const char *variant) {
  mi_error_t err = {0, ""};
  double e;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "%s: shapes: %s", what, err.message);
  e = run_fused(p, g, variant, &err);
  CHECK(e >= 0 && e < 1e-4, "%s [%s]: rel L2 %g (%s)", what, variant, e, err.message);
  printf("%-24s %-16s %d nodes in one kernel: rel L2 %.2e\n", what, variant, g->node_count, e);
  mi_graph_destroy(g);
}

static void expect_refused(mi_plugin_t *p, mi_graph_t *g, const char *what) {
  mi_error_t err = {0, ""};
  double e;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "%s: shapes: %s", what, err.message);
  e = run_fused(p, g, NULL, &err);
  CHECK(e == -(double)MI_ERR_UNSUPPORTED && strstr(err.message, "fused") != NULL,
        "%s: expected MI_ERR_UNSUPPORTED naming the unfusable node, got %g (%s)", what, e, err.message);
  mi_graph_destroy(g);
}

static mi_plugin_t *p;
static mi_registry_t *r;

static void setup(void) {
  r = tv_load_or_skip(&p, NULL);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void conv_chains(void) {
  for (int tail = 0; tail < 3; tail++) {
    char what[64];
    snprintf(what, sizeof what, "Conv-BN chain tail %d", tail);
    expect_ok(p, conv_chain(6, 10, 2, tail), what, "conv.direct");
    expect_ok(p, conv_chain(8, 8, 8, tail), what, "conv.depthwise");
  }
}

static void gemm_chains(void) {
  static const char *const mm[] = {"gemm.regblock", "gemm.tiled", "gemm.naive"};
  static const char *const mmm[] = {"matmul.regblock", "matmul.tiled", "matmul.naive"};
  for (int v = 0; v < 3; v++) {
    expect_ok(p, gemm_chain(37, 29, 45, 0), "Gemm-Relu", mm[v]);
    expect_ok(p, gemm_chain(37, 29, 45, 1), "MatMul-Add-Sigmoid", mmm[v]);
  }
}

static void conv_softmax_refused(void) {
  /* Softmax after a Conv is no epilogue: the plugin must refuse the group, not mis-run it. */
  mi_graph_t *g = mi_graph_create("bad");
  int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {4, 4, 1, 1};
  int32_t in[2], t0 = -1, y;
  in[0] = input(g, "x", 4, xd);
  in[1] = tv_const(g, "w", 4, wd, 41);
  t0 = value(g, "c");
  y = value(g, "y");
  mi_graph_add_node(g, "Conv", "conv", 2, in, 1, &t0);
  mi_graph_add_node(g, "Softmax", "sm", 1, &t0, 1, &y);
  mi_graph_add_output(g, y);
  expect_refused(p, g, "Conv-Softmax");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(conv_chains),
    TU_CASE(gemm_chains),
    TU_CASE(conv_softmax_refused),
};

TU_MAIN(setup, teardown)
