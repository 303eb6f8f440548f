/* test_transform_calib.c - least-MSE activation ranges, weight bias correction and cross-layer
 * equalization: each beats the plain quantization on a case built so that it must, equalization
 * keeps the FP32 outputs, and the codec carries all three. */
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

/* The configuration `yaml` applied to g with samples s (and bias correction's means from
 * `means`, NULL: computed), then compared with g over s: the relative L2. */
static double apply_compare_means(const mi_graph_t *g, const char *yaml, const mi_xf_samples_t *s,
                                  mi_xf_means_t *means) {
  mi_xf_config_t *c = NULL;
  mi_graph_t *x = NULL;
  mi_xf_metrics_t m;
  mi_error_t err;
  double r = 1e9;
  mi_xf_apply_opts_t o = {.calib = s, .means = means};
  if (mi_xf_config_parse(yaml, strlen(yaml), "inline", &c, &err) != MI_OK ||
      mi_xf_apply(g, c, &o, &x, NULL, &err) != MI_OK || mi_xf_compare(g, x, s, &m, &err) != MI_OK)
    fprintf(stderr, "%s: %s\n", yaml, err.message);
  else
    r = m.rel_l2;
  mi_graph_destroy(x);
  mi_xf_config_destroy(c);
  return r;
}

static double apply_compare(const mi_graph_t *g, const char *yaml, const mi_xf_samples_t *s) {
  return apply_compare_means(g, yaml, s, NULL);
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

/* Inputs constant per channel (mean[k] exactly): the correction removes the whole shift of the
 * rounded weights (w: the weights' setting; plain_min: the error they give uncorrected), so what
 * is left is float rounding. */
static void check_bias_case(const char *what, mi_graph_t *g, const float *mean, const char *w,
                            double plain_min) {
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 0.0f, 0, 1);
  char yaml[160];
  snprintf(yaml, sizeof yaml, "calibration: {bias_correction: true}\n%s", w);
  double plain = apply_compare(g, w, s), corr = apply_compare(g, yaml, s);
  printf("%-20s rel_l2 plain %.4g, bias-corrected %.4g\n", what, plain, corr);
  CHECK(plain > plain_min, "%s: rounding left no error (%g)", what, plain);
  CHECK(corr < 1e-5 && corr < 0.05 * plain, "%s: bias correction left %g of %g", what, corr, plain);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

/* Means kept across applies: the same result as computed ones, read from the cache (samples
 * of other means give another result through it), through a file too; a file that is not one
 * leaves the cache as it was. */
static void check_means_cache(void) {
  float mean_a[8] = {1.0f, -0.5f, 2.0f, 0.25f, -1.5f, 0.75f, 1.25f, -2.0f}, mean_b[8];
  const char *y = "calibration: {bias_correction: true}\ndefaults: {weights: bf16, activations: bf16}\n";
  char path[] = "/tmp/mi-means-XXXXXX";
  mi_graph_t *g = one_conv(8, 1, 1, 4, 21);
  mi_xf_samples_t *a, *b;
  mi_xf_means_t *m = mi_xf_means_create(), *m2 = mi_xf_means_create();
  mi_error_t err;
  int fd = mkstemp(path);
  double plain_a, plain_b, r1, r2, rb, rf;
  for (int k = 0; k < 8; k++) mean_b[k] = -3.0f * mean_a[k];
  a = channel_samples(g, 2, mean_a, 0.0f, 0, 1);
  b = channel_samples(g, 2, mean_b, 0.0f, 0, 1);
  CHECK(m && m2 && fd >= 0, "setup");
  if (fd >= 0) close(fd);
  plain_a = apply_compare(g, y, a);
  plain_b = apply_compare(g, y, b);
  r1 = apply_compare_means(g, y, a, m); /* computes them */
  r2 = apply_compare_means(g, y, a, m); /* reads them */
  rb = apply_compare_means(g, y, b, m); /* a's means on b's samples */
  printf("means cache: computed %.4g, first %.4g, kept %.4g; b computed %.4g, with a's means %.4g\n", plain_a, r1,
         r2, plain_b, rb);
  CHECK(r1 == plain_a && r2 == plain_a, "cached %g / %g against %g", r1, r2, plain_a);
  CHECK(plain_b < 1e-5 && rb > 100 * plain_b, "b's samples through a's means: %g (own %g)", rb, plain_b);
  CHECK(mi_xf_means_save(m, path, &err) == MI_OK, "save: %s", err.message);
  CHECK(mi_xf_means_load(m2, path, &err) == MI_OK, "load: %s", err.message);
  rf = apply_compare_means(g, y, b, m2);
  CHECK(rf == rb, "read from the file: %g, kept %g", rf, rb);
  {
    FILE *f = fopen(path, "r+b");
    if (f) { /* the count of entries, past the magic line, made absurd */
      int32_t bad = -7;
      fseek(f, 11, SEEK_SET);
      fwrite(&bad, sizeof bad, 1, f);
      fclose(f);
    }
    CHECK(mi_xf_means_load(m2, path, &err) == MI_ERR_PARSE && strstr(err.message, path), "damaged file: %s",
          err.message);
    CHECK(apply_compare_means(g, y, b, m2) == rb, "a failed load changed the cache");
  }
  remove(path);
  mi_xf_means_destroy(m);
  mi_xf_means_destroy(m2);
  mi_xf_samples_destroy(a);
  mi_xf_samples_destroy(b);
  mi_graph_destroy(g);
}

static void check_bias_correction(void) {
  float mean[8] = {1.0f, -0.5f, 2.0f, 0.25f, -1.5f, 0.75f, 1.25f, -2.0f};
  const char *int4 = "defaults: {weights: int4, scales: per_tensor}\n";
  check_bias_case("conv with bias", one_conv(8, 1, 1, 4, 9), mean, int4, 1e-3);
  check_bias_case("conv, no bias", one_conv(8, 1, 0, 4, 10), mean, int4, 1e-3);
  check_bias_case("grouped conv", one_conv(8, 4, 1, 4, 11), mean, int4, 1e-3);
  check_bias_case("gemm transB", one_gemm(12), mean, int4, 1e-3);
  /* BF16 and FP16 weights are rounded too: their shift is corrected the same way (BF16 left
   * ppocr_v4_det's and blazeface_back's output 0.02 off uncorrected, 0.009 corrected). */
  check_bias_case("conv bf16 weights", one_conv(8, 1, 1, 4, 14), mean, "defaults: {weights: bf16}\n", 1e-4);
  check_bias_case("conv bf16 w+act", one_conv(8, 1, 0, 4, 15), mean,
                  "defaults: {weights: bf16, activations: bf16}\n", 1e-4);
  check_bias_case("gemm fp16 weights", one_gemm(16), mean, "defaults: {weights: fp16}\n", 1e-5);
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

/* x [1, 8, 6, 6] -> conv a (8 -> 8, 3x3, bias; output channel c scaled by 4^(c - 4)) -> act ->
 * depthwise b (3x3, bias) -> Relu -> pointwise c (8 -> 4; input channel c scaled by 4^(4 - c)).
 * The tensors between have channel ranges 4^7 apart; the FP32 function is an ordinary one.
 * `act` is the op after a ("Relu" or "HardSwish", which equalization must not cross). */
static mi_graph_t *uneven_chain(const char *act) {
  mi_graph_t *g = mi_graph_create("uneven");
  int64_t xd[4] = {1, 8, 6, 6}, ad[4] = {8, 8, 3, 3}, bd[4] = {8, 1, 3, 3}, cd[4] = {4, 8, 1, 1};
  int64_t nb = 8, pads[4] = {1, 1, 1, 1};
  float wa[576], wb[72], wc[32], ba[8], bb[8];
  uint64_t seed = 21;
  for (int i = 0; i < 576; i++) wa[i] = uni(&seed) * powf(4.0f, (float)(i / 72 - 4));
  for (int i = 0; i < 72; i++) wb[i] = uni(&seed);
  for (int i = 0; i < 32; i++) wc[i] = uni(&seed) * powf(4.0f, (float)(4 - i % 8));
  for (int i = 0; i < 8; i++) {
    ba[i] = 0.1f * uni(&seed) * powf(4.0f, (float)(i - 4));
    bb[i] = 0.1f * uni(&seed);
  }
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  int32_t ia[3] = {x, mi_graph_add_const_f32(g, "wa", 4, ad, wa), mi_graph_add_const_f32(g, "ba", 1, &nb, ba)};
  int32_t ya = mi_graph_add_tensor(g, "ya", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t na = mi_graph_add_node(g, "Conv", "a", 3, ia, 1, &ya);
  int32_t ra = mi_graph_add_tensor(g, "ra", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(g, act, "act_a", 1, &ya, 1, &ra);
  int32_t ib[3] = {ra, mi_graph_add_const_f32(g, "wb", 4, bd, wb), mi_graph_add_const_f32(g, "bb", 1, &nb, bb)};
  int32_t yb = mi_graph_add_tensor(g, "yb", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t nbn = mi_graph_add_node(g, "Conv", "b", 3, ib, 1, &yb);
  int32_t rb = mi_graph_add_tensor(g, "rb", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu_b", 1, &yb, 1, &rb);
  int32_t ic[2] = {rb, mi_graph_add_const_f32(g, "wc", 4, cd, wc)};
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(g, "Conv", "c", 2, ic, 1, &y);
  mi_node_set_ints(g, na, "pads", 4, pads);
  mi_node_set_ints(g, nbn, "pads", 4, pads);
  mi_node_set_int(g, nbn, "group", 8);
  mi_graph_add_output(g, y);
  mi_error_t err;
  if (mi_graph_infer_shapes(g, &err) != MI_OK) fprintf(stderr, "uneven: %s\n", err.message);
  return g;
}

static const float *weight_of(const mi_graph_t *g, const char *node) {
  for (int32_t n = 0; n < g->node_count; n++)
    if (!strcmp(g->nodes[n].name, node)) return g->tensors[g->nodes[n].inputs[1]].data;
  return NULL;
}

/* Largest ratio between channel c's range as the output of `a` (per rows of k1 weights) and as
 * the input of `b` (columns of a [oc, icg, k2] weight; icg = 1 for the depthwise one). */
static double range_mismatch(const float *a, int64_t k1, const float *b, int64_t oc, int64_t icg,
                             int64_t k2) {
  double worst = 1.0;
  for (int64_t c = 0; c < 8; c++) {
    double r1 = 0.0, r2 = 0.0;
    for (int64_t i = 0; i < k1; i++) r1 = fmax(r1, fabs(a[c * k1 + i]));
    for (int64_t o = 0; o < oc; o++)
      for (int64_t i = 0; i < k2; i++)
        if (icg > 1 || o == c) r2 = fmax(r2, fabs(b[(o * icg + (icg > 1 ? c : 0)) * k2 + i]));
    worst = fmax(worst, fmax(r1 / r2, r2 / r1));
  }
  return worst;
}

/* Equalization keeps the outputs (a zoo model after BN folding, and the chain) and evens both
 * pairs' channel ranges; a HardSwish between is not crossed. */
static void check_equalize_exact(void) {
  static const char *const fam[] = {"resnet", "mobilenetv3"};
  mi_error_t err;
  for (int i = 0; i < 2; i++) {
    mi_graph_t *g = zoo(fam[i], 32), *x;
    mi_xf_stats_t st = {0};
    if (!g) {
      CHECK(0, "zoo %s", fam[i]);
      continue;
    }
    CHECK(mi_xf_fold_bn(g, NULL, &err) == MI_OK, "%s fold: %s", fam[i], err.message);
    x = mi_graph_clone(g);
    CHECK(mi_xf_equalize(x, &st, &err) == MI_OK, "%s equalize: %s", fam[i], err.message);
    mi_xf_metrics_t m = compare(g, x, 2);
    printf("equalize %-12s %d pairs, rel_l2 %.3g\n", fam[i], (int)st.equalized_pairs, m.rel_l2);
    CHECK(st.equalized_pairs > 0, "%s: no pair", fam[i]);
    CHECK(m.rel_l2 < 1e-5, "%s: rel_l2 %g", fam[i], m.rel_l2);
    mi_graph_destroy(x);
    mi_graph_destroy(g);
  }
  mi_graph_t *g = uneven_chain("Relu"), *x = mi_graph_clone(g);
  mi_xf_stats_t st = {0};
  double before = range_mismatch(weight_of(g, "a"), 72, weight_of(g, "b"), 8, 1, 9);
  CHECK(mi_xf_equalize(x, &st, &err) == MI_OK, "chain: %s", err.message);
  double ab = range_mismatch(weight_of(x, "a"), 72, weight_of(x, "b"), 8, 1, 9);
  double bc = range_mismatch(weight_of(x, "b"), 9, weight_of(x, "c"), 4, 8, 1);
  mi_xf_metrics_t m = compare(g, x, 2);
  printf("equalize chain: %d pairs, range ratio a|b %.3g -> %.6f, b|c %.6f, rel_l2 %.3g\n",
         (int)st.equalized_pairs, before, ab, bc, m.rel_l2);
  CHECK(st.equalized_pairs == 2, "chain: %d pairs", (int)st.equalized_pairs);
  CHECK(before > 100.0 && ab < 1.001 && bc < 1.001, "ranges not even: %g %g", ab, bc);
  CHECK(m.rel_l2 < 1e-5, "chain: rel_l2 %g", m.rel_l2);
  CHECK(weight_of(g, "a")[0] != weight_of(x, "a")[0], "equalization changed no weight");
  mi_graph_destroy(x);
  mi_graph_destroy(g);
  g = uneven_chain("HardSwish");
  memset(&st, 0, sizeof st);
  CHECK(mi_xf_equalize(g, &st, &err) == MI_OK && st.equalized_pairs == 1,
        "hard-swish chain: %d pairs, expected only b|c", (int)st.equalized_pairs);
  mi_graph_destroy(g);
}

/* Per-tensor INT8 activations on the chain: equalization lowers the drop. */
static void check_equalize_int8(void) {
  mi_graph_t *g = uneven_chain("Relu");
  float mean[8] = {0};
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 1.0f, 0, 5);
  const char *q = "defaults: {weights: int8, scales: per_channel, activations: int8}\n";
  char yaml[160];
  snprintf(yaml, sizeof yaml, "calibration: {equalize: true}\n%s", q);
  double plain = apply_compare(g, q, s), eq = apply_compare(g, yaml, s);
  printf("uneven chain int8_act: rel_l2 plain %.4g, equalized %.4g\n", plain, eq);
  CHECK(eq < 0.5 * plain, "equalized %g not below half of %g", eq, plain);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

/* x [1, 8, 6, 6] (values in [0, 1) in every channel) -> conv a (1x1, 8 -> 8, diagonal: every
 * row's weight range is about 1; bias 10 * 4^(c - 4)) -> Relu -> conv b (1x1, 8 -> 4; input
 * channel c scaled by 4^(4 - c)) -> y. The channel ranges of the activation between come from
 * the biases, 4^7 apart, which a's weight ranges do not show: only the calibration does. */
static mi_graph_t *data_pair(void) {
  mi_graph_t *g = mi_graph_create("data_pair");
  int64_t xd[4] = {1, 8, 6, 6}, ad[4] = {8, 8, 1, 1}, bd[4] = {4, 8, 1, 1}, nb = 8;
  float wa[64], wb[32], ba[8];
  uint64_t seed = 31;
  for (int i = 0; i < 64; i++) wa[i] = i / 8 == i % 8 ? 0.75f + 0.25f * uni(&seed) : 0.0f;
  for (int i = 0; i < 32; i++) wb[i] = uni(&seed) * powf(4.0f, (float)(4 - i % 8));
  for (int i = 0; i < 8; i++) ba[i] = 10.0f * powf(4.0f, (float)(i - 4));
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  int32_t ia[3] = {x, mi_graph_add_const_f32(g, "wa", 4, ad, wa), mi_graph_add_const_f32(g, "ba", 1, &nb, ba)};
  int32_t ya = mi_graph_add_tensor(g, "ya", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(g, "Conv", "a", 3, ia, 1, &ya);
  int32_t ra = mi_graph_add_tensor(g, "ra", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu_a", 1, &ya, 1, &ra);
  int32_t ib[2] = {ra, mi_graph_add_const_f32(g, "wb", 4, bd, wb)};
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(g, "Conv", "b", 2, ib, 1, &y);
  mi_graph_add_output(g, y);
  mi_error_t err;
  if (mi_graph_infer_shapes(g, &err) != MI_OK) fprintf(stderr, "data_pair: %s\n", err.message);
  return g;
}

/* Largest over smallest per-channel max |x| of tensor `name` of g on sample 0. */
static double channel_spread(const mi_graph_t *g, const char *name, const mi_xf_samples_t *s) {
  mi_graph_t *c = mi_graph_clone(g);
  mi_array_t *outs[2] = {NULL, NULL};
  mi_error_t err;
  double lo = INFINITY, hi = 0.0;
  int32_t t = c ? mi_graph_find_tensor(c, name) : -1;
  if (t < 0 || mi_graph_add_output(c, t) != MI_OK ||
      mi_ref_run(c, (const mi_array_t *const *)s->inputs, 1, outs, 2, &err) != MI_OK) {
    mi_graph_destroy(c);
    return -1.0;
  }
  const float *v = outs[1]->data;
  int64_t ch = outs[1]->dims[1], inner = mi_array_numel(outs[1]) / ch;
  for (int64_t k = 0; k < ch; k++) {
    double m = 0.0;
    for (int64_t i = 0; i < inner; i++) m = fmax(m, fabs(v[k * inner + i]));
    lo = fmin(lo, m);
    hi = fmax(hi, m);
  }
  mi_array_destroy(outs[0]);
  mi_array_destroy(outs[1]);
  mi_graph_destroy(c);
  return lo > 0.0 ? hi / lo : INFINITY;
}

/* Data-aware equalization (`equalize: data`) keeps the FP32 outputs, evens the calibrated
 * channel ranges of the tensor between where the weight ranges see nothing to even, and so
 * lowers the INT8 drop well below the weight-based pass's. */
static void check_equalize_data(void) {
  mi_graph_t *g = data_pair(), *x = NULL;
  float mean[8] = {0};
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 1.0f, 0, 7);
  mi_xf_config_t *c = NULL;
  mi_xf_stats_t st = {0};
  mi_error_t err;
  for (int32_t k = 0; k < s->sample_count; k++) {
    float *p = s->inputs[k]->data;
    for (int64_t i = 0; i < 8 * 36; i++) p[i] = fabsf(p[i]);
  }
  const char *fp = "calibration: {equalize: data}\n";
  mi_xf_apply_opts_t o = {.calib = s};
  CHECK(mi_xf_config_parse(fp, strlen(fp), "inline", &c, &err) == MI_OK, "parse: %s", err.message);
  CHECK(c && c->equalize == MI_XF_EQUALIZE_DATA, "equalize: data not parsed");
  CHECK(c && mi_xf_apply(g, c, &o, &x, &st, &err) == MI_OK, "apply: %s", err.message);
  if (x) {
    mi_xf_metrics_t m = compare(g, x, 2);
    double before = channel_spread(g, "ra", s), after = channel_spread(x, "ra", s);
    printf("equalize data: %d pair, channel range spread %.4g -> %.4g, fp32 rel_l2 %.3g\n",
           (int)st.equalized_pairs, before, after, m.rel_l2);
    CHECK(st.equalized_pairs == 1, "%d pairs", (int)st.equalized_pairs);
    CHECK(m.rel_l2 < 1e-5, "fp32 changed: rel_l2 %g", m.rel_l2);
    CHECK(before > 500.0 && after < 0.02 * before, "spread %g -> %g", before, after);
  }
  const char *q = "defaults: {weights: int8, scales: per_channel, activations: int8}\n";
  char yw[160], yd[160];
  snprintf(yw, sizeof yw, "calibration: {equalize: true}\n%s", q);
  snprintf(yd, sizeof yd, "calibration: {equalize: data}\n%s", q);
  double plain = apply_compare(g, q, s), w = apply_compare(g, yw, s), d = apply_compare(g, yd, s);
  printf("data pair int8_act: rel_l2 plain %.4g, weight-equalized %.4g, data-equalized %.4g\n", plain, w, d);
  CHECK(d < 0.5 * w && d < 0.5 * plain, "data-equalized %g not below half of %g / %g", d, w, plain);
  /* Without samples (a weight-only run has none) it is the weight-based pass. */
  mi_graph_destroy(x);
  x = NULL;
  memset(&st, 0, sizeof st);
  o.calib = NULL;
  CHECK(c && mi_xf_apply(g, c, &o, &x, &st, &err) == MI_OK && st.equalized_pairs == 1,
        "no samples: %s", err.message);
  mi_graph_destroy(x);
  mi_xf_config_destroy(c);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

/* The per-tensor pass: with every layer FP32 nothing is quantized and nothing differs; with
 * INT8 activations on the uneven chain the tensor between a and b is quantized, adds error,
 * and a per-channel scale would have left under 0.6 of its own rounding (its channel ranges
 * are 4^7 apart). */
static void check_tensor_errors(void) {
  mi_graph_t *g = uneven_chain("Relu");
  float mean[8] = {0};
  mi_xf_samples_t *s = channel_samples(g, 2, mean, 1.0f, 0, 5);
  const char *yq = "defaults: {weights: int8, scales: per_channel, activations: int8}\n", *yf = "passes: {fold_bn: true}\n";
  mi_xf_config_t *cq = NULL, *cf = NULL;
  mi_xf_tensor_error_t *te = NULL;
  int32_t n = 0, seen = 0;
  mi_error_t err;
  CHECK(mi_xf_config_parse(yq, strlen(yq), "q", &cq, &err) == MI_OK && mi_xf_config_parse(yf, strlen(yf), "f", &cf, &err) == MI_OK,
        "parse: %s", err.message);
  CHECK(cf && mi_xf_tensor_errors(g, cf, s, s, &te, &n, &err) == MI_OK && n >= 5, "fp32: %s (%d)", err.message, (int)n);
  for (int32_t i = 0; i < n; i++)
    CHECK(!te[i].quantized && te[i].rel_l2 < 1e-6, "fp32 %s: %g", te[i].tensor, te[i].rel_l2);
  free(te);
  te = NULL;
  CHECK(cq && mi_xf_tensor_errors(g, cq, s, s, &te, &n, &err) == MI_OK, "int8: %s", err.message);
  for (int32_t i = 0; i < n; i++) {
    if (strcmp(te[i].tensor, "ra")) continue;
    seen = 1;
    printf("tensor ra (%s): rel_l2 %.4g, own %.4g, per-channel %.4g\n", te[i].op, te[i].rel_l2,
           te[i].own_rel_l2, te[i].per_channel_rel_l2);
    CHECK(te[i].quantized && te[i].rel_l2 > 1e-3 && te[i].own_rel_l2 > 1e-3, "ra: no error");
    CHECK(te[i].per_channel_rel_l2 < 0.6 * te[i].own_rel_l2, "ra: per-channel %g, own %g",
          te[i].per_channel_rel_l2, te[i].own_rel_l2);
  }
  CHECK(seen, "tensor ra not reported");
  free(te);
  mi_xf_config_destroy(cq);
  mi_xf_config_destroy(cf);
  mi_xf_samples_destroy(s);
  mi_graph_destroy(g);
}

/* The options' YAML spellings, canonical text and hash. */
static void check_codec(void) {
  const char *y = "calibration: {method: mse, bias_correction: true, equalize: true}\n";
  mi_xf_config_t *c = NULL, *d = mi_xf_config_create();
  mi_error_t err;
  char *text = NULL, *plain = NULL;
  CHECK(mi_xf_config_parse(y, strlen(y), "inline", &c, &err) == MI_OK, "parse: %s", err.message);
  if (c) {
    CHECK(c->calib_method == MI_XF_CALIB_MSE && c->bias_correction == 1 && c->equalize == 1, "fields");
    CHECK(mi_xf_config_canonical(c, &text, &err) == MI_OK &&
              strstr(text, "calibration=mse bias_correction=1 equalize=1\n"),
          "canonical: %s", text ? text : "-");
    CHECK(mi_xf_config_hash(c) != mi_xf_config_hash(d), "hash unchanged");
  }
  /* A configuration without the options keeps its canonical text. */
  CHECK(mi_xf_config_canonical(d, &plain, &err) == MI_OK && strstr(plain, "calibration=minmax\n"),
        "plain canonical: %s", plain ? plain : "-");
  mi_xf_config_t *dc = NULL;
  char *dtext = NULL;
  const char *yd = "calibration: {equalize: data}\n";
  CHECK(mi_xf_config_parse(yd, strlen(yd), "inline", &dc, &err) == MI_OK && dc &&
            dc->equalize == MI_XF_EQUALIZE_DATA && mi_xf_config_canonical(dc, &dtext, &err) == MI_OK &&
            strstr(dtext, "calibration=minmax equalize=data\n") &&
            mi_xf_config_hash(dc) != mi_xf_config_hash(c),
        "equalize: data codec: %s", dtext ? dtext : "-");
  free(dtext);
  mi_xf_config_destroy(dc);
  mi_xf_config_t *bad = NULL;
  const char *b = "calibration: {equalize: sometimes}\n";
  CHECK(mi_xf_config_parse(b, strlen(b), "inline", &bad, &err) != MI_OK && !bad &&
            strstr(err.message, "equalize"),
        "bad equalize value accepted: %s", err.message);
  free(text);
  free(plain);
  mi_xf_config_destroy(c);
  mi_xf_config_destroy(d);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(check_mse_range),
    TU_CASE(check_mse_model),
    TU_CASE(check_bias_correction),
    TU_CASE(check_means_cache),
    TU_CASE(check_equalize_exact),
    TU_CASE(check_equalize_int8),
    TU_CASE(check_equalize_data),
    TU_CASE(check_tensor_errors),
    TU_CASE(check_codec),
};

TU_MAIN(NULL, NULL)
