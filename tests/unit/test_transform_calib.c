/* test_transform_calib.c - least-MSE activation ranges and weight bias correction: each beats
 * the plain quantization on a case built so that it must, and the codec carries both. */
#include "test_transform_common.h"
#include "transform/xf_internal.h"

/* Deterministic uniform in [-1, 1). */
static float uni(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) / 8388608.0) - 1.0f;
}

/* Laplace(1): a heavy tail, as convolution outputs have. */
static float laplace(uint64_t *s) {
  float u = 0.5f * (uni(s) + 1.0f) + 1e-7f;
  return (uni(s) < 0.0f ? -1.0f : 1.0f) * -logf(u);
}

/* A large heavy-tailed tensor: min-max spends codes on the few extreme values, and the search
 * finds a clipped range of lower error; on a short uniform tensor it is never worse. */
static void check_mse_range(void) {
  enum { N = 400000 };
  static float v[N];
  uint64_t s = 3;
  float lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < N; i++) {
    v[i] = laplace(&s);
    lo = fminf(lo, v[i]);
    hi = fmaxf(hi, v[i]);
  }
  float l0 = lo, h0 = hi;
  double mm = mi__xf_qdq_mse(v, N, lo, hi);
  mi__xf_mse_range(v, N, &lo, &hi);
  double ms = mi__xf_qdq_mse(v, N, lo, hi);
  printf("laplace: min-max [%g, %g] mse %.3g, clipped [%g, %g] mse %.3g (%.3f)\n", l0, h0, mm, lo,
         hi, ms, ms / mm);
  CHECK(ms < 0.9 * mm, "MSE range %g not below min-max %g", ms, mm);
  CHECK(hi < h0 && lo > l0, "range not clipped");
  float l2 = -1.0f, h2 = 1.0f;
  for (int i = 0; i < 2000; i++) v[i] = uni(&s);
  double u0 = mi__xf_qdq_mse(v, 2000, l2, h2);
  mi__xf_mse_range(v, 2000, &l2, &h2);
  CHECK(mi__xf_qdq_mse(v, 2000, l2, h2) <= u0, "MSE range worse than min-max");
}

/* x [1, C, hw, hw] -> conv (1x1, C -> C, optional bias, `group`) -> y. */
static mi_graph_t *one_conv(int32_t c, int32_t group, int with_bias, int64_t hw, uint64_t seed) {
  mi_graph_t *g = mi_graph_create("conv");
  int64_t xd[4] = {1, c, hw, hw}, wd[4] = {c, c / group, 1, 1}, bd[1] = {c};
  float w[64], b[8];
  for (int i = 0; i < c * c / group; i++) w[i] = uni(&seed);
  for (int i = 0; i < c; i++) b[i] = 0.1f * uni(&seed);
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  int32_t in[3] = {x, mi_graph_add_const_f32(g, "w", 4, wd, w), -1};
  if (with_bias) in[2] = mi_graph_add_const_f32(g, "b", 1, bd, b);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = mi_graph_add_node(g, "Conv", "conv", with_bias ? 3 : 2, in, 1, &y);
  if (group > 1) mi_node_set_int(g, n, "group", group);
  mi_graph_add_output(g, y);
  mi_error_t err;
  if (mi_graph_infer_shapes(g, &err) != MI_OK) fprintf(stderr, "conv: %s\n", err.message);
  return g;
}

/* x [2, 8] -> Gemm(transB=1, alpha 0.5, C [5] times beta 2) -> y [2, 5]. */
static mi_graph_t *one_gemm(uint64_t seed) {
  mi_graph_t *g = mi_graph_create("gemm");
  int64_t xd[2] = {2, 8}, wd[2] = {5, 8}, cd[1] = {5};
  float w[40], cb[5];
  for (int i = 0; i < 40; i++) w[i] = uni(&seed);
  for (int i = 0; i < 5; i++) cb[i] = uni(&seed);
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd);
  mi_graph_add_input(g, x);
  int32_t in[3] = {x, mi_graph_add_const_f32(g, "w", 2, wd, w), mi_graph_add_const_f32(g, "c", 1, cd, cb)};
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = mi_graph_add_node(g, "Gemm", "fc", 3, in, 1, &y);
  mi_node_set_int(g, n, "transB", 1);
  mi_node_set_float(g, n, "alpha", 0.5f);
  mi_node_set_float(g, n, "beta", 2.0f);
  mi_graph_add_output(g, y);
  mi_error_t err;
  if (mi_graph_infer_shapes(g, &err) != MI_OK) fprintf(stderr, "gemm: %s\n", err.message);
  return g;
}

/* Samples whose channel k (axis 1) holds mean[k] plus `noise` times a uniform value (a Laplace
 * one with `heavy`). */
static mi_xf_samples_t *channel_samples(const mi_graph_t *g, int32_t count, const float *mean,
                                        float noise, int heavy, uint64_t seed) {
  const mi_tensor_t *t = &g->tensors[g->inputs[0]];
  mi_xf_samples_t *s = calloc(1, sizeof *s);
  s->input_count = 1;
  s->sample_count = count;
  s->inputs = calloc((size_t)count, sizeof *s->inputs);
  for (int32_t k = 0; k < count; k++) {
    mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
    int64_t n = mi_array_numel(a), inner = 1;
    for (int32_t d = 2; d < t->rank; d++) inner *= t->dims[d];
    float *p = a->data;
    for (int64_t i = 0; i < n; i++) {
      p[i] = mean[(i / inner) % t->dims[1]] + noise * (heavy ? laplace(&seed) : uni(&seed));
    }
    s->inputs[k] = a;
  }
  return s;
}

static double apply_compare(const mi_graph_t *g, const char *yaml, const mi_xf_samples_t *s) {
  mi_xf_config_t *c = NULL;
  mi_graph_t *x = NULL;
  mi_xf_metrics_t m;
  mi_error_t err;
  double r = 1e9;
  mi_xf_apply_opts_t o = {.calib = s};
  if (mi_xf_config_parse(yaml, strlen(yaml), "inline", &c, &err) != MI_OK ||
      mi_xf_apply(g, c, &o, &x, NULL, &err) != MI_OK || mi_xf_compare(g, x, s, &m, &err) != MI_OK)
    fprintf(stderr, "%s: %s\n", yaml, err.message);
  else
    r = m.rel_l2;
  mi_graph_destroy(x);
  mi_xf_config_destroy(c);
  return r;
}

/* Heavy-tailed inputs through an INT8 conv: MSE ranges give a smaller output error. */
static void check_mse_model(void) {
  mi_graph_t *g = one_conv(8, 1, 1, 128, 5);
  float mean[8] = {0};
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 1.0f, 1, 17);
  double mm = apply_compare(g, "defaults: {weights: int8, activations: int8}\n", s);
  double ms = apply_compare(g, "calibration: {method: mse}\ndefaults: {weights: int8, activations: int8}\n", s);
  printf("heavy-tailed conv: rel_l2 min-max %.4g, mse %.4g\n", mm, ms);
  CHECK(ms < 0.95 * mm, "mse %g not below min-max %g", ms, mm);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

/* Inputs constant per channel (mean[k] exactly): the correction removes the whole shift of
 * INT4 per-tensor weights, so what is left is float rounding. */
static void check_bias_case(const char *what, mi_graph_t *g, const float *mean) {
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 0.0f, 0, 1);
  const char *w = "defaults: {weights: int4, scales: per_tensor}\n";
  char yaml[160];
  snprintf(yaml, sizeof yaml, "calibration: {bias_correction: true}\n%s", w);
  double plain = apply_compare(g, w, s), corr = apply_compare(g, yaml, s);
  printf("%-16s rel_l2 plain %.4g, bias-corrected %.4g\n", what, plain, corr);
  CHECK(plain > 1e-3, "%s: quantization left no error (%g)", what, plain);
  CHECK(corr < 1e-5, "%s: bias correction left %g", what, corr);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

static void check_bias_correction(void) {
  float mean[8] = {1.0f, -0.5f, 2.0f, 0.25f, -1.5f, 0.75f, 1.25f, -2.0f};
  check_bias_case("conv with bias", one_conv(8, 1, 1, 4, 9), mean);
  check_bias_case("conv, no bias", one_conv(8, 1, 0, 4, 10), mean);
  check_bias_case("grouped conv", one_conv(8, 4, 1, 4, 11), mean);
  check_bias_case("gemm transB", one_gemm(12), mean);
  /* Random inputs around the means: the shift is the expected one, the noise stays. */
  mi_graph_t *g = one_conv(8, 1, 1, 4, 13);
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 0.3f, 0, 2);
  const char *w = "defaults: {weights: int4, scales: per_tensor, activations: int8}\n";
  char yaml[160];
  snprintf(yaml, sizeof yaml, "calibration: {bias_correction: true}\n%s", w);
  double plain = apply_compare(g, w, s), corr = apply_compare(g, yaml, s);
  printf("noisy conv int8 acts: rel_l2 plain %.4g, bias-corrected %.4g\n", plain, corr);
  CHECK(corr < 0.7 * plain, "bias correction %g not below %g", corr, plain);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

/* The options' YAML spellings, canonical text and hash. */
static void check_codec(void) {
  const char *y = "calibration: {method: mse, bias_correction: true}\n";
  mi_xf_config_t *c = NULL, *d = mi_xf_config_create();
  mi_error_t err;
  char *text = NULL, *plain = NULL;
  CHECK(mi_xf_config_parse(y, strlen(y), "inline", &c, &err) == MI_OK, "parse: %s", err.message);
  if (c) {
    CHECK(c->calib_method == MI_XF_CALIB_MSE && c->bias_correction == 1, "fields");
    CHECK(mi_xf_config_canonical(c, &text, &err) == MI_OK && strstr(text, "calibration=mse bias_correction=1\n"),
          "canonical: %s", text ? text : "-");
    CHECK(mi_xf_config_hash(c) != mi_xf_config_hash(d), "hash unchanged");
  }
  /* A configuration without the options keeps its canonical text. */
  CHECK(mi_xf_config_canonical(d, &plain, &err) == MI_OK && strstr(plain, "calibration=minmax\n"),
        "plain canonical: %s", plain ? plain : "-");
  free(text);
  free(plain);
  mi_xf_config_destroy(c);
  mi_xf_config_destroy(d);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(check_mse_range),
    TU_CASE(check_mse_model),
    TU_CASE(check_bias_correction),
    TU_CASE(check_codec),
};

TU_MAIN(NULL, NULL)
