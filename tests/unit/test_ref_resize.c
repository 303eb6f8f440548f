/* test_ref_resize.c - reference Resize/Upsample modes on a 2x2 input vs values worked by hand. */
#include "test_ref_common.h"

static const float X[4] = {1, 2, 3, 4}; /* [[1,2],[3,4]] as [1,1,2,2] */
static const int64_t DX[4] = {1, 1, 2, 2};

typedef struct rcase {
  const char *op;
  int64_t opset;
  const char *mode, *ct, *nearest; /* NULL: attribute not set */
  int use_sizes;                   /* 1: sizes input [1,1,4,1]; 0: scales [1,1,2,2] */
  int scales_attr;                 /* Upsample-7: scales as an attribute */
} rcase_t;

static mi_array_t *run_resize(const rcase_t *k, int32_t *rc_out, mi_error_t *err) {
  static const float scales[4] = {1, 1, 2, 2};
  static const int64_t sizes[4] = {1, 1, 4, 1}, four = 4;
  mi_graph_t *g = mi_graph_create("resize");
  int32_t ins[4] = {tin(g, "x", MI_DTYPE_FLOAT32, 4, DX), -1, -1, -1}, nin = 1, n;
  g->opset = k->opset;
  if (k->scales_attr) {
    nin = 1;
  } else if (strcmp(k->op, "Upsample") == 0 || k->opset < 11) {
    ins[1] = mi_graph_add_const_f32(g, "scales", 1, &four, scales);
    nin = 2;
  } else if (k->use_sizes) {
    ins[3] = mi_graph_add_const_i64(g, "sizes", 4, sizes);
    nin = 4;
  } else {
    ins[2] = mi_graph_add_const_f32(g, "scales", 1, &four, scales);
    nin = 3;
  }
  mi_graph_add_output(g, node1(g, k->op, "resize_node", nin, ins, &n));
  if (k->scales_attr) mi_node_set_floats(g, n, "scales", 4, scales);
  if (k->mode) mi_node_set_string(g, n, "mode", k->mode);
  if (k->ct) mi_node_set_string(g, n, "coordinate_transformation_mode", k->ct);
  if (k->nearest) mi_node_set_string(g, n, "nearest_mode", k->nearest);
  mi_array_t *in = arr_f32(4, DX, X), *out = NULL;
  *rc_out = run1(g, 1, &in, &out, err);
  mi_array_destroy(in);
  mi_graph_destroy(g);
  return out;
}

/* Output of a bilinear resize of [[1,2],[3,4]]: the input is linear (1 + 2*row + col), so
 * the result is 1 + 2*wr[i] + wc[j] with the source coordinates clamped to [0,1]. */
static void linear_expect(const float *wr, int nr, const float *wc, int nc, float *out) {
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < nc; j++) out[i * nc + j] = 1 + 2 * wr[i] + wc[j];
}

static void nearest_expect(const int *idx, float *out) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) out[i * 4 + j] = X[idx[i] * 2 + idx[j]];
}

static void check(const char *what, const rcase_t *k, int32_t rank, const int64_t *dims,
                  const float *want) {
  mi_error_t err;
  int32_t rc;
  mi_array_t *y = run_resize(k, &rc, &err);
  CHECK(rc == MI_OK, "%s: %s", what, err.message);
  expect_f32(what, y, rank, dims, want, 1e-6f);
  mi_array_destroy(y);
}

static int64_t d44[4] = {1, 1, 4, 4}, d41[4] = {1, 1, 4, 1};

static void nearest(void) {
  float want[16];
  /* Nearest, asymmetric + floor: source index floor(j / 2) = 0,0,1,1. */
  int floor_idx[4] = {0, 0, 1, 1};
  nearest_expect(floor_idx, want);
  rcase_t asym = {"Resize", 13, "nearest", "asymmetric", "floor", 0, 0};
  check("nearest asymmetric floor", &asym, 4, d44, want);
  /* half_pixel: (j + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25; round_prefer_floor: 0,0,1,1. */
  rcase_t hp = {"Resize", 13, "nearest", NULL, NULL, 0, 0};
  check("nearest half_pixel round_prefer_floor", &hp, 4, d44, want);
  /* ... and with nearest_mode ceil: 0,1,1,2 -> clamped 0,1,1,1. */
  int ceil_idx[4] = {0, 1, 1, 1};
  nearest_expect(ceil_idx, want);
  rcase_t hpc = {"Resize", 13, "nearest", "half_pixel", "ceil", 0, 0};
  check("nearest half_pixel ceil", &hpc, 4, d44, want);
  /* Opset 10 Resize and Upsample 9 (scales input) and 7 (attribute): asymmetric floor. */
  nearest_expect(floor_idx, want);
  rcase_t r10 = {"Resize", 10, NULL, NULL, NULL, 0, 0};
  check("Resize opset 10 nearest", &r10, 4, d44, want);
  rcase_t u9 = {"Upsample", 9, "nearest", NULL, NULL, 0, 0};
  check("Upsample opset 9", &u9, 4, d44, want);
}

/* An axis of scale 1 stays as it is in every mode, as ONNX Runtime leaves it: per axis, the
 * tf_half_pixel_for_nn shift (c + 0.5 under round_prefer_ceil) took each channel from the next
 * (a [1, 2, 2, 2] input's channel 0 became its channel 1; with one channel a clamp hid it). */
static void scale_one_axis(void) {
  static const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, scales[4] = {1, 1, 2, 2};
  static const int64_t dx[4] = {1, 2, 2, 2}, dy[4] = {1, 2, 4, 4}, four = 4;
  /* H and W: (j + 0.5) / 2 = 0.25, 0.75, 1.25, 1.75 rounded half up: 0, 1, 1, 2 -> 1 */
  static const int idx[4] = {0, 1, 1, 1};
  float want[32];
  mi_graph_t *g = mi_graph_create("resize_c");
  int32_t ins[3] = {tin(g, "x", MI_DTYPE_FLOAT32, 4, dx), -1, -1}, n, rc;
  mi_array_t *in = arr_f32(4, dx, x), *out = NULL;
  mi_error_t err = {0};
  g->opset = 13;
  ins[2] = mi_graph_add_const_f32(g, "scales", 1, &four, scales);
  mi_graph_add_output(g, node1(g, "Resize", "resize_node", 3, ins, &n));
  mi_node_set_string(g, n, "mode", "nearest");
  mi_node_set_string(g, n, "coordinate_transformation_mode", "tf_half_pixel_for_nn");
  mi_node_set_string(g, n, "nearest_mode", "round_prefer_ceil");
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) want[(c * 4 + i) * 4 + j] = x[(c * 2 + idx[i]) * 2 + idx[j]];
  rc = run1(g, 1, &in, &out, &err);
  CHECK(rc == MI_OK, "tf_half_pixel_for_nn on [1, 2, 2, 2]: %s", err.message);
  expect_f32("tf_half_pixel_for_nn keeps the channels", out, 4, dy, want, 0);
  mi_array_destroy(out);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

static void linear(void) {
  float want[16];
  /* Linear: source coordinates per mode, clamped to [0, 1]. */
  float w_hp[4] = {0, 0.25f, 0.75f, 1}, w_ac[4] = {0, 1.0f / 3, 2.0f / 3, 1};
  float w_as[4] = {0, 0.5f, 1, 1}, zero = 0;
  linear_expect(w_hp, 4, w_hp, 4, want);
  rcase_t lin_hp = {"Resize", 13, "linear", "half_pixel", NULL, 0, 0};
  check("linear half_pixel", &lin_hp, 4, d44, want);
  linear_expect(w_ac, 4, w_ac, 4, want);
  rcase_t lin_ac = {"Resize", 13, "linear", "align_corners", NULL, 0, 0};
  check("linear align_corners", &lin_ac, 4, d44, want);
  linear_expect(w_as, 4, w_as, 4, want);
  rcase_t lin_as = {"Resize", 11, "linear", "asymmetric", NULL, 0, 0};
  check("linear asymmetric (opset 11)", &lin_as, 4, d44, want);
  rcase_t u7 = {"Upsample", 7, "linear", NULL, NULL, 0, 1};
  check("Upsample opset 7 linear", &u7, 4, d44, want);
  /* pytorch_half_pixel with sizes [.., 4, 1]: a length-1 output axis samples coordinate 0. */
  linear_expect(w_hp, 4, &zero, 1, want);
  rcase_t pt = {"Resize", 13, "linear", "pytorch_half_pixel", NULL, 1, 0};
  check("linear pytorch_half_pixel sizes", &pt, 4, d41, want);
}

static void unsupported_modes(void) {
  /* Modes the interpreter does not implement are refused, naming the node. */
  mi_error_t err;
  int32_t rc;
  rcase_t cubic = {"Resize", 13, "cubic", NULL, NULL, 0, 0};
  mi_array_t *y = run_resize(&cubic, &rc, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && y == NULL, "cubic accepted (rc %d)", (int)rc);
  CHECK(strstr(err.message, "resize_node") && strstr(err.message, "cubic"), "message: %s",
        err.message);
  rcase_t crop = {"Resize", 13, "linear", "tf_crop_and_resize", NULL, 0, 0};
  y = run_resize(&crop, &rc, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && y == NULL, "tf_crop_and_resize accepted (rc %d)", (int)rc);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(nearest),
    TU_CASE(scale_one_axis),
    TU_CASE(linear),
    TU_CASE(unsupported_modes),
};

TU_MAIN(NULL, NULL)
