/* test_vulkan_fp16.c - the FP16 variants (FP16 weights and products, FP32 sums and I/O): listed
 * exactly when the device has shaderFloat16 + storageBuffer16BitAccess, declared FP16, and
 * within the FP16 tolerance of mi_ref_run (rel L2 < 2e-2) while measurably not FP32. */
#include "test_vulkan_util.h"

static int has_variant(mi_plugin_t *p, const char *id, int32_t *dtype_mask) {
  uint32_t n = 0;
  p->api.variant_count(p->ctx, 0, &n, NULL);
  for (uint32_t i = 0; i < n; i++) {
    mi_variant_desc_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (p->api.variant_desc(p->ctx, 0, i, &v, NULL) == MI_OK && !strcmp(v.id, id)) {
      *dtype_mask = (int32_t)v.dtype_mask;
      return 1;
    }
  }
  return 0;
}

static mi_graph_t *mm_graph(const char *op, int64_t M, int64_t K, int64_t N, int relu) {
  mi_graph_t *g = mi_graph_create(op);
  int64_t ad[3] = {2, M, K}, bd[2] = {K, N}, btd[2] = {N, K}, cd[1] = {N};
  int gemm = op[0] == 'G';
  int32_t in[3], y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL), t = y, n;
  in[0] = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, gemm ? 2 : 3, gemm ? ad + 1 : ad);
  mi_graph_add_input(g, in[0]);
  in[1] = tv_const(g, "b", 2, gemm ? btd : bd, 51);
  if (relu) t = mi_graph_add_tensor(g, "t", MI_DTYPE_FLOAT32, -1, NULL);
  if (gemm) in[2] = tv_const(g, "c", 1, cd, 52);
  n = mi_graph_add_node(g, op, "n", gemm ? 3 : 2, in, 1, &t);
  if (gemm) mi_node_set_int(g, n, "transB", 1);
  if (relu) mi_graph_add_node(g, "Relu", "r", 1, &t, 1, &y);
  mi_graph_add_output(g, y);
  return g;
}

static void expect_fp16(mi_plugin_t *p, const char *op, const char *variant, const mi_knob_value_t *kv, int nk) {
  mi_error_t err = {0, ""};
  int fb = -1;
  mi_graph_t *g = mm_graph(op, 33, 70, 41, 0);
  double e = tv_compare(p, g, "n", variant, kv, nk, 0, &fb, NULL, &err);
  /* FP16 products of values in [-1, 1) over K = 70 terms: well inside 2e-2, far above FP32's 1e-7 */
  CHECK(e >= 0 && e < 2e-2, "%s [%s]: rel L2 %g (%s)", op, variant, e, err.message);
  CHECK(e > 1e-6, "%s [%s]: rel L2 %g is FP32-exact: the FP16 path did not run", op, variant, e);
  CHECK(fb == 0, "%s [%s]: %d host fallbacks", op, variant, fb);
  printf("%-7s %-22s nk=%d rel L2 %.2e\n", op, variant, nk, e);
  mi_graph_destroy(g);
}

static mi_plugin_t *p;
static mi_registry_t *r;
static mi_knob_value_t kv[4] = {{"local_x", 8, 0}, {"local_y", 4, 0}, {"reg_m", 2, 0}, {"reg_n", 8, 0}};
static int32_t mask = 0;

static void setup(void) {
  r = tv_load_or_skip(&p, NULL);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void fp16_variants(void) {
  if (!has_variant(p, "gemm.regblock.fp16", &mask)) {
    /* Only right when the device lacks FP16; lavapipe (Mesa 22.3) has both features. */
    mi_device_desc_t d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    p->api.device_info(p->ctx, 0, &d, NULL);
    printf("SKIP: %s lists no FP16 variant\n", d.name);
    CHECK(strstr(d.name, "llvmpipe") == NULL, "lavapipe supports FP16 but the plugin lists no FP16 variant");
  } else {
    CHECK(mask == MI_DTYPE_BIT(MI_DTYPE_FLOAT16), "gemm.regblock.fp16 declares dtype mask 0x%x, not FP16", mask);
    CHECK(has_variant(p, "matmul.regblock.fp16", &mask), "matmul.regblock.fp16 not listed");
    expect_fp16(p, "Gemm", "gemm.regblock.fp16", NULL, 0);
    expect_fp16(p, "Gemm", "gemm.regblock.fp16", kv, 4);
    expect_fp16(p, "MatMul", "matmul.regblock.fp16", NULL, 0);
    expect_fp16(p, "MatMul", "matmul.regblock.fp16", kv, 4);
    {
      /* Gemm -> Relu fused in one kernel on the FP16 variant */
      mi_error_t err = {0, ""};
      mi_graph_t *g = mm_graph("Gemm", 33, 70, 41, 1);
      tv_desc_t f;
      mi_kernel_t *k = NULL;
      CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "shapes: %s", err.message);
      tv_desc_build(g, "gemm.regblock.fp16", &f);
      CHECK(p->api.kernel_prepare(p->ctx, 0, &f.k, &k, &err) == MI_OK, "fused FP16 Gemm-Relu refused: %s", err.message);
      p->api.kernel_release(p->ctx, k);
      mi_graph_destroy(g);
    }
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(fp16_variants),
};

TU_MAIN(setup, teardown)
