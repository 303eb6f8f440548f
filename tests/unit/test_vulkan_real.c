/* test_vulkan_real.c - wrong results and fallbacks found on real exported models (openWakeWord,
 * PP-OCRv4 rec and det) on vulkan:0, and AveragePool's asymmetric pads found on the way, each
 * reproduced on a small hand-built graph against mi_ref_run; then the real models themselves
 * when they are cached (SKIP otherwise). */
#include <sys/stat.h>

#include "test_vulkan_util.h"

static mi_plugin_t *g_p;

static void expect(mi_graph_t *g, const char *what, double limit) {
  mi_error_t err = {0, ""};
  int fb = -1;
  double e = tv_compare(g_p, g, NULL, NULL, NULL, 0, 0, &fb, NULL, &err);
  CHECK(e >= 0 && e < limit, "%s: rel L2 %g, limit %g (%s)", what, e, limit, err.message);
  CHECK(fb == 0, "%s: %d host fallbacks", what, fb);
  fprintf(stderr, "%s: rel L2 %.3g\n", what, e);
  mi_graph_destroy(g);
}

static int32_t input(mi_graph_t *g, const char *name, int rank, const int64_t *dims) {
  int32_t t = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, rank, dims);
  mi_graph_add_input(g, t);
  return t;
}

static int32_t node1(mi_graph_t *g, const char *op, const char *name, int nin, const int32_t *in) {
  int32_t y = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, op, name, nin, in, 1, &y);
  return y;
}

/* GLSL pow() is undefined for a negative base; lavapipe got (x - mean)^2 wrong, which broke
 * the decomposed LayerNorms of openWakeWord (rel L2 0.55) and PP-OCRv4 rec (NaN). */
static void pow_negative_base(void) {
  int64_t xd[3] = {2, 3, 37}, one = 1;
  float e2 = 2.0f, e3 = 3.0f;
  int32_t in[2], y;
  mi_graph_t *g = mi_graph_create("pow2");
  in[0] = input(g, "x", 3, xd);
  in[1] = mi_graph_add_const_f32(g, "e", 1, &one, &e2);
  mi_graph_add_output(g, node1(g, "Pow", "y", 2, in));
  expect(g, "Pow(x in [-1,1], 2)", 1e-6);

  g = mi_graph_create("pow3");
  in[0] = input(g, "x", 3, xd);
  in[1] = mi_graph_add_const_f32(g, "e", 1, &one, &e3);
  mi_graph_add_output(g, node1(g, "Pow", "y", 2, in));
  expect(g, "Pow(x in [-1,1], 3)", 1e-5);

  /* runtime exponents on a positive base still take GLSL pow */
  g = mi_graph_create("powrt");
  in[0] = input(g, "x", 3, xd);
  in[1] = input(g, "e", 3, xd);
  in[0] = node1(g, "Abs", "ax", 1, in);
  y = node1(g, "Pow", "y", 2, in);
  mi_graph_add_output(g, y);
  expect(g, "Pow(|x|, e)", 1e-5);
}

/* openWakeWord's LayerNorm as exported: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div. */
static void decomposed_layernorm(void) {
  int64_t xd[2] = {4, 96}, one = 1, axes = -1;
  float two = 2.0f, eps = 1e-5f;
  int32_t x, in[2], mean, d, var, y;
  mi_graph_t *g = mi_graph_create("ln");
  int n;
  x = input(g, "x", 2, xd);
  mean = mi_graph_add_tensor(g, "mean", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "ReduceMean", "m1", 1, &x, 1, &mean);
  mi_node_set_ints(g, n, "axes", 1, &axes);
  in[0] = x, in[1] = mean;
  d = node1(g, "Sub", "d", 2, in);
  in[0] = d, in[1] = mi_graph_add_const_f32(g, "two", 1, &one, &two);
  in[0] = node1(g, "Pow", "sq", 2, in);
  var = mi_graph_add_tensor(g, "var", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "ReduceMean", "m2", 1, in, 1, &var);
  mi_node_set_ints(g, n, "axes", 1, &axes);
  in[0] = var, in[1] = mi_graph_add_const_f32(g, "eps", 1, &one, &eps);
  in[0] = node1(g, "Add", "ve", 2, in);
  in[1] = node1(g, "Sqrt", "sd", 1, in);
  in[0] = d;
  y = node1(g, "Div", "y", 2, in);
  mi_graph_add_output(g, y);
  expect(g, "decomposed LayerNorm", 1e-5);
}

/* PP-OCRv4 rec slices with constant starts/ends (negative, clamped) and steps; they used to
 * fall back to the host. */
static void slice_case(void) {
  int64_t xd[4] = {2, 5, 7, 6}, starts[3] = {1, -5, 100}, ends[3] = {2, 1000, -100};
  int64_t axes[3] = {0, 2, 3}, steps[3] = {1, 2, -2};
  int32_t in[5], y;
  mi_graph_t *g = mi_graph_create("slice");
  in[0] = input(g, "x", 4, xd);
  in[1] = mi_graph_add_const_i64(g, "starts", 3, starts);
  in[2] = mi_graph_add_const_i64(g, "ends", 3, ends);
  in[3] = mi_graph_add_const_i64(g, "axes", 3, axes);
  in[4] = mi_graph_add_const_i64(g, "steps", 3, steps);
  y = node1(g, "Slice", "y", 5, in);
  mi_graph_add_output(g, y);
  expect(g, "Slice (negative start, clamped ends, step -2)", 1e-7);

  g = mi_graph_create("slice4");
  in[0] = input(g, "x", 4, xd);
  starts[0] = 2, ends[0] = -1;
  in[1] = mi_graph_add_const_i64(g, "starts", 1, starts);
  in[2] = mi_graph_add_const_i64(g, "ends", 1, ends);
  y = node1(g, "Slice", "y", 3, in); /* axes default to 0.. */
  mi_graph_add_output(g, y);
  expect(g, "Slice (default axes and steps)", 1e-7);
}

/* count_include_pad counted up to the begin pads on both sides, not the explicit end pads. */
static void avgpool_asymmetric_pads(int ceil_mode) {
  int64_t xd[4] = {1, 2, 7, 8}, k[2] = {3, 3}, st[2] = {2, 2}, pads[4] = {1, 0, 0, 2};
  int32_t x, y;
  mi_graph_t *g = mi_graph_create("avgpool");
  int n;
  x = input(g, "x", 4, xd);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "AveragePool", "y", 1, &x, 1, &y);
  mi_node_set_ints(g, n, "kernel_shape", 2, k);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, n, "count_include_pad", 1);
  mi_node_set_int(g, n, "ceil_mode", ceil_mode);
  mi_graph_add_output(g, y);
  expect(g, ceil_mode ? "AveragePool (pads 1,0,0,2, include pad, ceil)" : "AveragePool (pads 1,0,0,2, include pad)",
         1e-6);
}

/* PP-OCRv4 det upsamples with Resize (nearest, asymmetric, floor) by 2 and 4; it fell back. */
static void resize_case(const char *ctm, const char *nearest, int use_sizes) {
  int64_t xd[4] = {2, 3, 5, 4}, four = 4, sizes[4] = {2, 3, 15, 8};
  float scales[4] = {1, 1, 3, 2};
  int32_t in[4], y;
  char what[96];
  mi_graph_t *g = mi_graph_create("resize");
  int n;
  in[0] = input(g, "x", 4, xd);
  in[1] = mi_graph_add_const_f32(g, "roi", 1, &(int64_t){0}, NULL);
  in[2] = use_sizes ? mi_graph_add_const_f32(g, "scales", 1, &(int64_t){0}, NULL)
                    : mi_graph_add_const_f32(g, "scales", 1, &four, scales);
  in[3] = use_sizes ? mi_graph_add_const_i64(g, "sizes", 4, sizes) : -1;
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "Resize", "y", use_sizes ? 4 : 3, in, 1, &y);
  mi_node_set_string(g, n, "mode", "nearest");
  mi_node_set_string(g, n, "coordinate_transformation_mode", ctm);
  mi_node_set_string(g, n, "nearest_mode", nearest);
  mi_graph_add_output(g, y);
  snprintf(what, sizeof what, "Resize nearest x3,x2 (%s, %s, %s)", ctm, nearest, use_sizes ? "sizes" : "scales");
  expect(g, what, 1e-7);
}

/* PP-OCRv4 det's ConvTranspose (k 2, s 2) fell back; here also groups, pads, dilations,
 * output_padding, a bias and a fused Relu. */
static void convtranspose_case(int64_t group, int64_t stride, int64_t dil, int64_t pad, int64_t opad) {
  int64_t xd[4] = {2, 4, 5, 6}, wd[4] = {4, 6 / group, 3, 2}, bd[1] = {6};
  int64_t st[2] = {stride, stride}, dl[2] = {dil, 1}, pads[4] = {pad, 0, 0, pad}, op[2] = {opad, 0};
  int32_t in[3], y, r;
  char what[96];
  mi_graph_t *g = mi_graph_create("convt");
  int n;
  in[0] = input(g, "x", 4, xd);
  in[1] = tv_const(g, "w", 4, wd, 3);
  in[2] = tv_const(g, "b", 1, bd, 4);
  y = mi_graph_add_tensor(g, "ct", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "ConvTranspose", "ct", 3, in, 1, &y);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_ints(g, n, "dilations", 2, dl);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_ints(g, n, "output_padding", 2, op);
  r = node1(g, "Relu", "y", 1, &y);
  mi_graph_add_output(g, r);
  snprintf(what, sizeof what, "ConvTranspose+Relu (group %lld, stride %lld, dilation %lld, pad %lld, opad %lld)",
           (long long)group, (long long)stride, (long long)dil, (long long)pad, (long long)opad);
  expect(g, what, 1e-5);
}

/* A cached real model on vulkan:0 (no host fallback) against the reference. 1 when the model
 * was there to run, 0 when it is not fetched here. */
static int real_model(const char *file, const int64_t *shape, double limit) {
  char path[1024];
  const char *dir = getenv("MI_MODEL_DIR"), *home = getenv("HOME");
  mi_error_t err = {0, ""};
  mi_graph_t *g = NULL;
  struct stat st;
  int fb = -1;
  double e;
  if (dir && dir[0]) snprintf(path, sizeof path, "%s/%s", dir, file);
  else
    snprintf(path, sizeof path, "%s/.cache/metainfer/models/%s", home ? home : "", file);
  if (stat(path, &st) != 0) {
    printf("%s: not in %s (tools/models/fetch.sh)\n", file, path);
    return 0;
  }
  if (mi_onnx_load(path, &g, &err) != MI_OK) {
    CHECK(0, "load %s: %s", path, err.message);
    return 1;
  }
  if (shape) memcpy(g->tensors[g->inputs[0]].dims, shape, 4 * sizeof *shape);
  e = tv_compare(g_p, g, NULL, NULL, NULL, 0, 1, &fb, NULL, &err);
  CHECK(e >= 0 && e < limit, "%s: rel L2 %g, limit %g (%s)", file, e, limit, err.message);
  CHECK(fb == 0, "%s: %d node(s) fell back to the host", file, fb);
  fprintf(stderr, "%s: rel L2 %.3g, %d node(s) on the host\n", file, e, fb);
  mi_graph_destroy(g);
  return 1;
}

static const int64_t rec_shape[4] = {1, 3, 48, 96}, det_shape[4] = {1, 3, 64, 96};
static mi_registry_t *r;

static void setup(void) {
  r = tv_load_or_skip(&g_p, NULL);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void avgpool_asymmetric_pads_all(void) {
  avgpool_asymmetric_pads(0);
  avgpool_asymmetric_pads(1);
}

static void resize(void) {
  resize_case("asymmetric", "floor", 0);
  resize_case("half_pixel", "round_prefer_floor", 1);
  resize_case("half_pixel", "round_prefer_ceil", 0);
}

static void convtranspose(void) {
  convtranspose_case(1, 2, 1, 0, 0);
  convtranspose_case(2, 3, 2, 1, 1);
}

/* With none of the models fetched nothing was checked: that is a skip, not a pass. */
static void real_models(void) {
  int ran = real_model("oww_hello_deepa.onnx", NULL, 1e-4);
  ran += real_model("ppocr_v4_rec.onnx", rec_shape, 1e-4);
  ran += real_model("ppocr_v4_det.onnx", det_shape, 1e-4);
  if (!ran) TU_SKIP("real_models: none of the models is fetched (tools/models/fetch.sh)");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(pow_negative_base),
    TU_CASE(decomposed_layernorm),
    TU_CASE(slice_case),
    TU_CASE(avgpool_asymmetric_pads_all),
    TU_CASE(resize),
    TU_CASE(convtranspose),
    TU_CASE(real_models),
};

TU_MAIN(setup, teardown)
