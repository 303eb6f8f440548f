/* test_vulkan_ops.c - each Vulkan kernel variant on odd shapes against mi_ref_run (rel L2 <
 * 1e-4), knob constraints refused with the rule, device time, and the buffer-range limit. */
#include "test_vulkan_util.h"

static mi_plugin_t *g_p;

static mi_graph_t *g1(const char *op, int nin, int rank, const int64_t *dims, int32_t *x, int32_t *y) {
  mi_graph_t *g = mi_graph_create(op);
  char name[16];
  for (int i = 0; i < nin; i++) {
    snprintf(name, sizeof name, "x%d", i);
    x[i] = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, rank, dims);
    mi_graph_add_input(g, x[i]);
  }
  *y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_output(g, *y);
  return g;
}

static void expect(mi_graph_t *g, const char *what, const char *variant, const mi_knob_value_t *k, int nk) {
  mi_error_t err = {0, ""};
  int fb = -1;
  uint64_t ns = 0;
  double e = tv_compare(g_p, g, "n", variant, k, nk, 0, &fb, &ns, &err);
  CHECK(e >= 0 && e < 1e-4, "%s [%s]: rel L2 %g (%s)", what, variant ? variant : "default", e, err.message);
  CHECK(fb == 0, "%s: %d host fallbacks", what, fb);
  CHECK(ns > 0, "%s: no device time reported", what);
  mi_graph_destroy(g);
}

static void conv_case(const char *variant, int64_t C, int64_t K, int64_t group, int64_t stride,
                      int64_t dil, const mi_knob_value_t *kn, int nk) {
  int64_t xd[4] = {2, C, 11, 9}, wd[4] = {K, C / group, 3, 3}, bd[1] = {K};
  int64_t st[2] = {stride, stride}, pads[4] = {1, 2, 1, 0}, dl[2] = {dil, 1};
  int32_t x, y, in[3];
  mi_graph_t *g = g1("Conv", 1, 4, xd, &x, &y);
  int n;
  in[0] = x;
  in[1] = tv_const(g, "w", 4, wd, 3);
  in[2] = tv_const(g, "b", 1, bd, 4);
  n = mi_graph_add_node(g, "Conv", "n", 3, in, 1, &y);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_ints(g, n, "dilations", 2, dl);
  expect(g, "Conv", variant, kn, nk);
}

static void matmul_case(const char *op, const char *variant, const int64_t *ad, int ar, const int64_t *bd,
                        const mi_knob_value_t *kn, int nk) {
  int32_t x, y, in[3];
  mi_graph_t *g = g1(op, 1, ar, ad, &x, &y);
  int64_t cd[1] = {bd[0]};
  int n;
  in[0] = x;
  in[1] = tv_const(g, "b", 2, bd, 5);
  if (op[0] == 'G') {
    in[2] = tv_const(g, "c", 1, cd, 6);
    n = mi_graph_add_node(g, op, "n", 3, in, 1, &y);
    mi_node_set_int(g, n, "transB", 1);
    mi_node_set_float(g, n, "alpha", 0.5f);
  } else {
    mi_graph_add_node(g, op, "n", 2, in, 1, &y);
  }
  expect(g, op, variant, kn, nk);
}

static void binary_case(const char *op, int rank_b, const int64_t *bdims) {
  int64_t xd[4] = {2, 3, 4, 5};
  int32_t x, y, in[2];
  mi_graph_t *g = g1(op, 1, 4, xd, &x, &y);
  in[0] = x;
  in[1] = mi_graph_add_tensor(g, "b", MI_DTYPE_FLOAT32, rank_b, bdims);
  mi_graph_add_input(g, in[1]);
  mi_graph_add_node(g, op, "n", 2, in, 1, &y);
  expect(g, op, NULL, NULL, 0);
}

static void unary_case(const char *op) {
  int64_t xd[3] = {3, 5, 7};
  int32_t x, y;
  mi_graph_t *g = g1(op, 1, 3, xd, &x, &y);
  int n = mi_graph_add_node(g, op, "n", 1, &x, 1, &y);
  if (!strcmp(op, "LeakyRelu")) mi_node_set_float(g, n, "alpha", 0.3f);
  expect(g, op, NULL, NULL, 0);
}

static void misc_cases(void) {
  int64_t xd[4] = {2, 3, 11, 10}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  int64_t perm[4] = {0, 2, 3, 1}, axes[1] = {2}, cd[1] = {3}, ld[3] = {4, 6, 33}, gd[1] = {33};
  const char *ops[] = {"MaxPool", "AveragePool", "GlobalAveragePool", "Softmax", "Transpose",
                       "ReduceMean", "ReduceMax", "Concat", "BatchNormalization", "LayerNormalization"};
  for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const char *op = ops[i];
    int ln = !strcmp(op, "LayerNormalization");
    int32_t x[2], y, in[5];
    mi_graph_t *g = g1(op, !strcmp(op, "Concat") ? 2 : 1, ln ? 3 : 4, ln ? ld : xd, x, &y);
    int n, nin = 1;
    in[0] = x[0];
    if (!strcmp(op, "Concat")) in[1] = x[1], nin = 2;
    if (!strcmp(op, "BatchNormalization")) {
      float var[3] = {0.5f, 1.5f, 2.0f};
      for (int k = 1; k < 4; k++) {
        char nm[4] = {'p', (char)('0' + k), 0, 0};
        in[k] = tv_const(g, nm, 1, cd, (uint64_t)k);
      }
      in[4] = mi_graph_add_const_f32(g, "var", 1, cd, var);
      nin = 5;
    }
    if (ln) in[1] = tv_const(g, "gm", 1, gd, 8), in[2] = tv_const(g, "bt", 1, gd, 9), nin = 3;
    n = mi_graph_add_node(g, op, "n", nin, in, 1, &y);
    if (strstr(op, "Pool") && op[0] != 'G') {
      mi_node_set_ints(g, n, "kernel_shape", 2, k3);
      mi_node_set_ints(g, n, "strides", 2, s2);
      mi_node_set_ints(g, n, "pads", 4, p1);
    }
    if (!strcmp(op, "Transpose")) mi_node_set_ints(g, n, "perm", 4, perm);
    if (!strncmp(op, "Reduce", 6)) mi_node_set_ints(g, n, "axes", 1, axes);
    if (!strcmp(op, "Concat")) mi_node_set_int(g, n, "axis", 1);
    if (!strcmp(op, "Softmax")) mi_node_set_int(g, n, "axis", 2);
    expect(g, op, NULL, NULL, 0);
  }
}

/* One image, Concat along channels: each input is one block of the output, a buffer copy at
 * its offset (a constant between two runtime inputs, so each offset differs). */
static void concat_blocks(void) {
  int64_t xd[4] = {1, 2, 5, 4}, cd[4] = {1, 1, 5, 4};
  int32_t x[2], y, in[3];
  mi_graph_t *g = g1("Concat", 2, 4, xd, x, &y);
  in[0] = x[0], in[1] = tv_const(g, "c", 4, cd, 5), in[2] = x[1];
  int n = mi_graph_add_node(g, "Concat", "n", 3, in, 1, &y);
  mi_node_set_int(g, n, "axis", 1);
  expect(g, "Concat one image", NULL, NULL, 0);
}

static void knob_rules(void) {
  mi_error_t err = {0, ""};
  mi_knob_value_t big[2] = {{"local_x", 64, 0}, {"local_y", 64, 0}};
  mi_knob_value_t shm[5] = {{"local_x", 32, 0}, {"local_y", 16, 0}, {"reg_m", 8, 0}, {"reg_n", 8, 0}, {"tile_k", 64, 0}};
  mi_knob_value_t unr[2] = {{"tile_k", 4, 0}, {"unroll", 8, 0}};
  mi_knob_value_t bad[1] = {{"local_x", 3, 0}};
  mi_knob_value_t ok[2] = {{"local_x", 8, 0}, {"local_y", 8, 0}};
  const mi_plugin_api_t *a = &g_p->api;
  int32_t rc = a->check_config(g_p->ctx, 0, "matmul.tiled", big, 2, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && strstr(err.message, "maxComputeWorkGroupInvocations"), "invocations: %d %s", rc, err.message);
  rc = a->check_config(g_p->ctx, 0, "gemm.regblock", shm, 5, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && strstr(err.message, "maxComputeSharedMemorySize"), "shared: %d %s", rc, err.message);
  rc = a->check_config(g_p->ctx, 0, "matmul.tiled", unr, 2, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && strstr(err.message, "unroll divides tile_k"), "unroll: %d %s", rc, err.message);
  rc = a->check_config(g_p->ctx, 0, "conv.direct", bad, 1, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && strstr(err.message, "domain"), "domain: %d %s", rc, err.message);
  rc = a->check_config(g_p->ctx, 0, "matmul.tiled", ok, 2, &err);
  CHECK(rc == MI_OK, "valid config refused: %s", err.message);
  /* No variant is "auto", the plugin's own pick: the host asks it for every auto node, and a
   * refusal made the space's default point name explicit variants. */
  rc = a->check_config(g_p->ctx, 0, NULL, NULL, 0, &err);
  CHECK(rc == MI_OK, "auto refused: %d %s", rc, err.message);
  rc = a->check_config(g_p->ctx, 0, NULL, bad, 1, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && strstr(err.message, "local_x=3"), "auto, bad knob: %d %s", rc, err.message);
  { /* the same rule through kernel preparation, without host fallback */
    int64_t ad[2] = {8, 8}, bd[2] = {8, 8};
    int32_t x, y, in[2];
    mi_graph_t *g = g1("MatMul", 1, 2, ad, &x, &y);
    double e;
    in[0] = x;
    in[1] = tv_const(g, "b", 2, bd, 1);
    mi_graph_add_node(g, "MatMul", "n", 2, in, 1, &y);
    e = tv_compare(g_p, g, "n", "matmul.tiled", big, 2, 0, NULL, NULL, &err);
    CHECK(e == -(double)MI_ERR_INVALID_CONFIG && strstr(err.message, "maxComputeWorkGroupInvocations"),
          "session: %g %s", e, err.message);
    mi_graph_destroy(g);
  }
}

static void buffer_limit(void) {
  mi_device_desc_t d;
  mi_buffer_t *b = NULL;
  mi_error_t err = {0, ""};
  int32_t rc;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  rc = g_p->api.device_info(g_p->ctx, 0, &d, &err);
  CHECK(rc == MI_OK && d.max_buffer_bytes > 0, "device_info: %s", err.message);
  rc = g_p->api.buffer_alloc(g_p->ctx, 0, d.max_buffer_bytes + 4, &b, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && !b && strstr(err.message, "maxStorageBufferRange"), "over-range buffer: %d %s", rc, err.message);
  rc = g_p->api.buffer_alloc(g_p->ctx, 0, 1 << 20, &b, &err);
  CHECK(rc == MI_OK && b, "1 MiB buffer: %s", err.message);
  g_p->api.buffer_free(g_p->ctx, b);
}

/* One prepared kernel run on buffers that change between runs: new values in the same buffers,
 * other buffers, then buffers allocated after those were freed (a freed VkBuffer's handle value
 * can come back): each run must read and write the buffers it is given, whether the plugin
 * records its command buffer again or submits the one it recorded for the same buffers. */
static void rerun_buffers(void) {
  enum { N = 64 };
  mi_graph_t *g = mi_graph_create("relu");
  int64_t dims[1] = {N};
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, dims), y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 1, dims);
  mi_graph_add_input(g, x);
  mi_graph_add_output(g, y);
  mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &y);
  g->opset = 13;
  tv_desc_t f;
  mi_kernel_t *k = NULL;
  mi_error_t err = {0, ""};
  tv_desc_build(g, NULL, &f);
  int32_t rc = g_p->api.kernel_prepare(g_p->ctx, 0, &f.k, &k, &err);
  CHECK(rc == MI_OK && k, "prepare Relu: %s", err.message);
  mi_buffer_t *in[3] = {0}, *out[3] = {0};
  float v[N], got[N];
  for (int step = 0; rc == MI_OK && step < 5; step++) {
    int b = step < 2 ? 0 : step == 2 ? 1
                                     : 2; /* buffers 0, 0 again, 1, then 2 after 1 was freed */
    if (step == 3) {
      g_p->api.buffer_free(g_p->ctx, in[1]);
      g_p->api.buffer_free(g_p->ctx, out[1]);
      in[1] = out[1] = NULL;
    }
    if (!in[b]) {
      rc = g_p->api.buffer_alloc(g_p->ctx, 0, sizeof v, &in[b], &err);
      if (rc == MI_OK) rc = g_p->api.buffer_alloc(g_p->ctx, 0, sizeof v, &out[b], &err);
      CHECK(rc == MI_OK, "step %d: buffer_alloc: %s", step, err.message);
    }
    for (int i = 0; i < N; i++) v[i] = (float)((i * 7 + step * 13) % 23) - 11.f;
    if (rc == MI_OK) rc = g_p->api.buffer_write(g_p->ctx, in[b], 0, v, sizeof v, &err);
    if (rc == MI_OK) rc = g_p->api.kernel_run(g_p->ctx, k, &in[b], 1, &out[b], 1, NULL, &err);
    if (rc == MI_OK) rc = g_p->api.buffer_read(g_p->ctx, out[b], 0, got, sizeof got, &err);
    CHECK(rc == MI_OK, "step %d: %s", step, err.message);
    int bad = 0;
    for (int i = 0; rc == MI_OK && i < N; i++) bad += got[i] != (v[i] > 0.f ? v[i] : 0.f);
    CHECK(bad == 0, "step %d (buffers %d): %d of %d outputs are not this run's Relu", step, b, bad, N);
  }
  for (int b = 0; b < 3; b++) {
    g_p->api.buffer_free(g_p->ctx, in[b]);
    g_p->api.buffer_free(g_p->ctx, out[b]);
  }
  g_p->api.kernel_release(g_p->ctx, k);
  mi_graph_destroy(g);
}

/* A prepared one-node kernel of `op` on N floats (the caller releases it and frees *g). */
static mi_kernel_t *prep1(const char *op, int64_t n, mi_graph_t **g) {
  int32_t x, y;
  tv_desc_t f;
  mi_kernel_t *k = NULL;
  mi_error_t err = {0, ""};
  *g = mi_graph_create(op);
  x = mi_graph_add_tensor(*g, "x", MI_DTYPE_FLOAT32, 1, &n);
  y = mi_graph_add_tensor(*g, "y", MI_DTYPE_FLOAT32, 1, &n);
  mi_graph_add_input(*g, x);
  mi_graph_add_output(*g, y);
  mi_graph_add_node(*g, op, "n", 1, &x, 1, &y);
  (*g)->opset = 13;
  tv_desc_build(*g, NULL, &f);
  CHECK(g_p->api.kernel_prepare(g_p->ctx, 0, &f.k, &k, &err) == MI_OK && k, "prepare %s: %s", op, err.message);
  return k;
}

/* ABI 1.3: kernels enqueued and submitted together at device_sync, each reading the one before
 * (the barriers that end each command buffer order them); a kernel enqueued a second time before
 * the sync (Neg below) sends what is pending first. */
static void enqueued_chain(void) {
  enum { N = 64 };
  mi_graph_t *gn, *gr;
  mi_kernel_t *kneg = prep1("Neg", N, &gn), *krelu = prep1("Relu", N, &gr);
  mi_buffer_t *b[4] = {0};
  mi_error_t err = {0, ""};
  mi_run_stats_t st;
  float v[N], got[N];
  int32_t rc = kneg && krelu && g_p->api.kernel_enqueue && g_p->api.device_sync ? MI_OK : MI_ERR_INTERNAL;
  CHECK(rc == MI_OK, "no kernels, or no asynchronous pair in the table");
  for (int i = 0; i < 4 && rc == MI_OK; i++) rc = g_p->api.buffer_alloc(g_p->ctx, 0, sizeof v, &b[i], &err);
  for (int i = 0; i < N; i++) v[i] = (float)((i * 7) % 23) - 11.f;
  if (rc == MI_OK) rc = g_p->api.buffer_write(g_p->ctx, b[0], 0, v, sizeof v, &err);
  for (int pass = 0; pass < 2 && rc == MI_OK; pass++) {
    /* pass 0: Relu, Neg -> -max(v, 0); pass 1: Neg, Relu, Neg -> min(v, 0), Neg twice */
    mi_kernel_t *seq[3] = {pass ? kneg : krelu, pass ? krelu : kneg, kneg};
    int n = pass ? 3 : 2;
    for (int j = 0; j < n && rc == MI_OK; j++) rc = g_p->api.kernel_enqueue(g_p->ctx, seq[j], &b[j], 1, &b[j + 1], 1, &err);
    CHECK(rc == MI_OK, "pass %d: enqueue: %s", pass, err.message);
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (rc == MI_OK) rc = g_p->api.device_sync(g_p->ctx, 0, &st, &err);
    CHECK(rc == MI_OK, "pass %d: device_sync: %s", pass, err.message);
    if (rc == MI_OK && st.has_device_time) CHECK(st.device_time_ns > 0, "pass %d: a timed sync of 0 ns", pass);
    if (rc == MI_OK) rc = g_p->api.buffer_read(g_p->ctx, b[n], 0, got, sizeof got, &err);
    int bad = 0;
    for (int i = 0; rc == MI_OK && i < N; i++) {
      float want = pass ? (v[i] < 0.f ? v[i] : 0.f) : -(v[i] > 0.f ? v[i] : 0.f);
      bad += got[i] != want;
    }
    CHECK(rc == MI_OK && bad == 0, "pass %d: %d of %d outputs wrong (%s)", pass, bad, N, err.message);
  }
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK(rc != MI_OK || (g_p->api.device_sync(g_p->ctx, 0, &st, &err) == MI_OK && st.device_time_ns == 0),
        "a sync with nothing enqueued: %s", err.message);
  for (int i = 0; i < 4; i++) g_p->api.buffer_free(g_p->ctx, b[i]);
  g_p->api.kernel_release(g_p->ctx, kneg);
  g_p->api.kernel_release(g_p->ctx, krelu);
  mi_graph_destroy(gn);
  mi_graph_destroy(gr);
}

static mi_registry_t *r;
static int64_t ad[2] = {37, 45}, bd[2] = {45, 29}, bt[2] = {29, 45}, a4[4] = {2, 3, 17, 19}, b4[2] = {19, 23};
static int64_t bb1[3] = {3, 1, 5}, bb2[1] = {1}, bb3[4] = {2, 1, 4, 1};
static mi_knob_value_t tiled[3] = {{"local_x", 8, 0}, {"local_y", 8, 0}, {"tile_k", 8, 0}};
static mi_knob_value_t reg[6] = {{"local_x", 8, 0}, {"local_y", 4, 0}, {"reg_m", 2, 0}, {"reg_n", 4, 0}, {"tile_k", 16, 0}, {"unroll", 4, 0}};
static mi_knob_value_t unroll[2] = {{"local_x", 32, 0}, {"unroll", 2, 0}};
static const char *un[] = {"Relu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Erf", "Exp", "Abs", "Neg"};

static void setup(void) {
  r = tv_load_or_skip(&g_p, "/tmp/mi-test-vulkan-ops-cache");
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void conv(void) {
  conv_case("conv.direct", 6, 4, 2, 2, 2, NULL, 0);
  conv_case("conv.direct", 3, 5, 1, 1, 1, unroll, 2);
  conv_case("conv.depthwise", 8, 8, 8, 2, 1, NULL, 0);
  /* the implicit GEMM: groups, stride, dilation and asymmetric pads, batch 2; a depthwise
   * shape (one row per group) and register blocks larger than the problem */
  conv_case("conv.gemm", 6, 4, 2, 2, 2, NULL, 0);
  conv_case("conv.gemm", 3, 5, 1, 1, 1, reg, 6);
  conv_case("conv.gemm", 8, 8, 8, 2, 1, reg, 6);
  conv_case(NULL, 8, 8, 8, 1, 1, NULL, 0);
}

static void matmul(void) {
  matmul_case("MatMul", "matmul.naive", ad, 2, bd, NULL, 0);
  matmul_case("MatMul", "matmul.tiled", ad, 2, bd, tiled, 3);
  matmul_case("MatMul", "matmul.regblock", ad, 2, bd, reg, 6);
  matmul_case("MatMul", NULL, a4, 4, b4, NULL, 0);
  matmul_case("Gemm", "gemm.naive", ad, 2, bt, NULL, 0);
  matmul_case("Gemm", "gemm.tiled", ad, 2, bt, tiled, 3);
  matmul_case("Gemm", "gemm.regblock", ad, 2, bt, reg, 6);
}

static void binary(void) {
  binary_case("Add", 3, bb1);
  binary_case("Mul", 1, bb2);
  binary_case("Sub", 4, bb3);
  binary_case("Div", 3, bb1);
}

static void unary(void) {
  for (unsigned i = 0; i < sizeof un / sizeof un[0]; i++) unary_case(un[i]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(conv),
    TU_CASE(matmul),
    TU_CASE(binary),
    TU_CASE(unary),
    TU_CASE(misc_cases),
    TU_CASE(concat_blocks),
    TU_CASE(knob_rules),
    TU_CASE(buffer_limit),
    TU_CASE(rerun_buffers),
    TU_CASE(enqueued_chain),
};

TU_MAIN(setup, teardown)
