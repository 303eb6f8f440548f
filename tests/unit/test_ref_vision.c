/* test_ref_vision.c - the trigonometric and hyperbolic functions, LRN, GridSample (every mode
 * and padding, both opset spellings, 5-D) and RoiAlign (avg and max, both coordinate modes)
 * against values worked out by hand; the inferred output shapes checked against the run and
 * the refusals on both paths (test_ref_common.h: case_run, case_refused). */
#include "test_ref_common.h"

static const int64_t D5[1] = {5};

static void unary(const char *op, int64_t opset, const float *in, const float *want) {
  mi_array_t *x = arr_f32(1, D5, in), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, op, opset, 1, &x, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", op, err.message);
  expect_f32(op, y, 1, D5, want, 2e-6f);
  mi_array_destroy(y);
  mi_array_destroy(x);
}

static void test_trig(void) {
  static const float x[5] = {-2, -0.5f, 0, 0.5f, 2}, unit[5] = {-1, -0.5f, 0, 0.5f, 1};
  unary("Tan", 7, x, (float[]){2.1850399f, -0.5463025f, 0, 0.5463025f, -2.1850399f});
  unary("Atan", 7, x, (float[]){-1.1071487f, -0.4636476f, 0, 0.4636476f, 1.1071487f});
  unary("Asin", 7, unit, (float[]){-1.5707963f, -0.5235988f, 0, 0.5235988f, 1.5707963f});
  unary("Acos", 7, unit, (float[]){3.1415927f, 2.0943951f, 1.5707963f, 1.0471976f, 0});
  unary("Sinh", 9, x, (float[]){-3.6268604f, -0.5210953f, 0, 0.5210953f, 3.6268604f});
  unary("Cosh", 9, x, (float[]){3.7621957f, 1.127626f, 1, 1.127626f, 3.7621957f});
  unary("Asinh", 9, x, (float[]){-1.4436355f, -0.4812118f, 0, 0.4812118f, 1.4436355f});
  unary("Acosh", 9, (float[]){1, 1.5f, 2, 3, 10}, (float[]){0, 0.9624237f, 1.3169579f, 1.7627472f, 2.9932228f});
  unary("Atanh", 9, (float[]){-0.9f, -0.5f, 0, 0.5f, 0.9f},
        (float[]){-1.4722195f, -0.5493061f, 0, 0.5493061f, 1.4722195f});
  mi_array_t *xa = arr_f32(1, D5, x);
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Cosh", 8, 1, &xa, 0, 1); /* the hyperbolic functions came in opset 9 */
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  CHECK(strstr(err.message, "exists from opset 9") != NULL, "Cosh under opset 8: %s", err.message);
  mi_array_destroy(xa);
}

/* LRN over 3 channels {1, 2, 3} of one pixel: y = x / (bias + alpha / size * window sum)^beta. */
static void test_lrn(void) {
  int64_t d[4] = {1, 3, 1, 1};
  mi_array_t *x = arr_f32(4, d, (float[]){1, 2, 3}), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "LRN", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "size", 3); /* channels c-1..c+1: sums 5, 14, 13 */
  mi_node_set_float(k.g, k.node, "alpha", 1);
  mi_node_set_float(k.g, k.node, "beta", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LRN: %s", err.message);
  expect_f32("LRN size 3", y, 4, d, (float[]){0.375f, 6.0f / 17, 0.5625f}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LRN", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "size", 2); /* c..c+1: sums 5, 13, 9; alpha / size = 1 */
  mi_node_set_float(k.g, k.node, "alpha", 2);
  mi_node_set_float(k.g, k.node, "beta", 0.5f);
  mi_node_set_float(k.g, k.node, "bias", 2);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LRN: %s", err.message);
  expect_f32("LRN size 2", y, 4, d, (float[]){1 / sqrtf(7), 2 / sqrtf(15), 3 / sqrtf(11)}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LRN", 13, 1, &x, 0, 1); /* size is required */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x);
}

/* ImageScaler: scale * x + bias[c]; opset 10's Scatter is ScatterElements without reduction. */
static void test_scaler_scatter(void) {
  int64_t d[4] = {1, 2, 1, 2}, d2[2] = {2, 2};
  mi_array_t *x = arr_f32(4, d, (float[]){1, 2, 3, 4}), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "ImageScaler", 9, 1, &x, 0, 1);
  mi_node_set_float(k.g, k.node, "scale", 2);
  mi_node_set_floats(k.g, k.node, "bias", 2, (float[]){10, -10});
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ImageScaler: %s", err.message);
  expect_f32("ImageScaler", y, 4, d, (float[]){12, 14, -4, -2}, 0);
  mi_array_destroy(y);
  case_begin(&k, "ImageScaler", 9, 1, &x, 0, 1);
  mi_node_set_floats(k.g, k.node, "bias", 1, (float[]){1});
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "one per channel"),
        "ImageScaler with one bias for two channels: %s", err.message);
  mi_array_destroy(x);

  mi_array_t *in[3] = {arr_f32(2, d2, (float[]){0, 0, 0, 0}), arr_i64(2, d2, (int64_t[]){1, 0, 0, 1}),
                       arr_f32(2, d2, (float[]){5, 6, 7, 8})};
  case_begin(&k, "Scatter", 10, 3, in, 0, 1); /* axis 0: y[i[r][c]][c] = u[r][c] */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Scatter: %s", err.message);
  expect_f32("Scatter", y, 2, d2, (float[]){7, 6, 5, 8}, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
}

/* GridSample of X = [[1, 2], [3, 4]] at the points (x, y) of grid. */
static void gs(const char *what, int64_t opset, const char *mode, const char *pad, int align,
               int npts, const float *pts, const float *want) {
  int64_t dx[4] = {1, 1, 2, 2}, dg[4] = {1, 1, npts, 2}, dy[4] = {1, 1, 1, npts};
  mi_array_t *in[2] = {arr_f32(4, dx, (float[]){1, 2, 3, 4}), arr_f32(4, dg, pts)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "GridSample", opset, 2, in, 0, 1);
  if (mode) mi_node_set_string(k.g, k.node, "mode", mode);
  if (pad) mi_node_set_string(k.g, k.node, "padding_mode", pad);
  mi_node_set_int(k.g, k.node, "align_corners", align);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", what, err.message);
  expect_f32(what, y, 4, dy, want, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static void test_gridsample(void) {
  /* align_corners 1: the corners are the pixel centres; (1, -1) is x right, y top */
  gs("bilinear aligned", 16, NULL, NULL, 1, 4, (float[]){-1, -1, 1, 1, 0, 0, 1, -1}, (float[]){1, 4, 2.5f, 2});
  /* align_corners 0: -1 is the outer edge, half a pixel out: taps -1 and 0 with weights 1/2 */
  gs("bilinear zeros", 16, "bilinear", "zeros", 0, 2, (float[]){0, 0, -1, -1}, (float[]){2.5f, 0.25f});
  gs("bilinear border", 20, "linear", "border", 0, 2, (float[]){0, 0, -1, -1}, (float[]){2.5f, 1});
  /* tap -1 reflected about -0.5 is 0 */
  gs("bilinear reflection", 16, NULL, "reflection", 0, 2, (float[]){0, 0, -1, -1}, (float[]){2.5f, 1});
  /* nearest: x = -0.5 rounds half to even (0); (0.5, 0) is x 1.0, y 0.5 -> row 0 */
  gs("nearest", 16, "nearest", NULL, 0, 2, (float[]){-1, -1, 0.5f, 0}, (float[]){1, 2});
  /* cubic at the centre, aligned: taps -1..2 weigh -0.09375, 0.59375, 0.59375, -0.09375 and
   * the zero padding drops the outer ones: 0.59375^2 * (1 + 2 + 3 + 4) */
  gs("bicubic", 16, "bicubic", NULL, 1, 1, (float[]){0, 0}, (float[]){3.525390625f});
  gs("cubic", 22, "cubic", NULL, 1, 1, (float[]){0, 0}, (float[]){3.525390625f});
  /* NaN and far-out points read the padding (and take no undefined conversion on the way) */
  gs("NaN point", 16, NULL, NULL, 0, 2, (float[]){NAN, 0, 1e30f, -1e30f}, (float[]){0, 0});
  gs("far point, border", 16, NULL, "border", 0, 1, (float[]){1e30f, -1e30f}, (float[]){2});

  /* 5-D (opset 20): X depth 2 holding {1, 3}, sampled at the middle of the depth axis */
  int64_t dx5[5] = {1, 1, 2, 1, 1}, dg5[5] = {1, 1, 1, 1, 3}, dy5[5] = {1, 1, 1, 1, 1};
  mi_array_t *in[2] = {arr_f32(5, dx5, (float[]){1, 3}), arr_f32(5, dg5, (float[]){0, 0, 0})}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "GridSample", 20, 2, in, 0, 1);
  mi_node_set_int(k.g, k.node, "align_corners", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "GridSample 5-D: %s", err.message);
  expect_f32("GridSample 5-D linear", y, 5, dy5, (float[]){2}, 1e-6f);
  mi_array_destroy(y);
  /* refused: 5-D under opset 16, cubic on 5-D, opset 16's names under 20, the op under 15 */
  case_begin(&k, "GridSample", 16, 2, in, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  case_begin(&k, "GridSample", 20, 2, in, 0, 1);
  mi_node_set_string(k.g, k.node, "mode", "cubic");
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  int64_t dx[4] = {1, 1, 2, 2}, dg[4] = {1, 1, 1, 2};
  mi_array_t *in4[2] = {arr_f32(4, dx, (float[]){1, 2, 3, 4}), arr_f32(4, dg, (float[]){0, 0})};
  case_begin(&k, "GridSample", 20, 2, in4, 0, 1);
  mi_node_set_string(k.g, k.node, "mode", "bilinear");
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "linear, nearest, cubic") != NULL, "names the modes: %s", err.message);
  case_begin(&k, "GridSample", 15, 2, in4, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(in4[0]), mi_array_destroy(in4[1]);
}

/* RoiAlign over X[y][x] = 4y + x (4x4), one roi in image 0. */
static mi_array_t *roi(int64_t opset, const float *box, int64_t oh, int64_t ow, int64_t ratio,
                       const char *mode, const char *ct, float scale) {
  int64_t dx[4] = {1, 1, 4, 4}, dr[2] = {1, 4}, one = 1, zero = 0;
  float xv[16];
  for (int i = 0; i < 16; i++) xv[i] = (float)i;
  mi_array_t *in[3] = {arr_f32(4, dx, xv), arr_f32(2, dr, box), arr_i64(1, &one, &zero)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "RoiAlign", opset, 3, in, 0, 1);
  mi_node_set_int(k.g, k.node, "output_height", oh);
  mi_node_set_int(k.g, k.node, "output_width", ow);
  mi_node_set_int(k.g, k.node, "sampling_ratio", ratio);
  mi_node_set_float(k.g, k.node, "spatial_scale", scale);
  if (mode) mi_node_set_string(k.g, k.node, "mode", mode);
  if (ct) mi_node_set_string(k.g, k.node, "coordinate_transformation_mode", ct);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "RoiAlign: %s", err.message);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
  return y;
}

static void test_roialign(void) {
  int64_t d1[4] = {1, 1, 1, 1}, d2[4] = {1, 1, 2, 2};
  mi_array_t *y;
  /* half_pixel: the box 0..3 starts at -0.5, one sample at its centre (1, 1) */
  y = roi(16, (float[]){0, 0, 3, 3}, 1, 1, 1, NULL, NULL, 1);
  expect_f32("RoiAlign half_pixel", y, 4, d1, (float[]){5}, 1e-6f);
  mi_array_destroy(y);
  /* opset 10 (output_half_pixel): centre (1.5, 1.5); the mean of a 2x2 grid of samples of a
   * linear X is its centre value too */
  y = roi(10, (float[]){0, 0, 3, 3}, 1, 1, 1, NULL, NULL, 1);
  expect_f32("RoiAlign opset 10", y, 4, d1, (float[]){7.5f}, 1e-6f);
  mi_array_destroy(y);
  y = roi(16, (float[]){0, 0, 3, 3}, 1, 1, 2, "avg", "output_half_pixel", 1);
  expect_f32("RoiAlign 2x2 samples", y, 4, d1, (float[]){7.5f}, 1e-6f);
  mi_array_destroy(y);
  /* max: the largest weighted corner, 0.25 * 10 */
  y = roi(16, (float[]){0, 0, 3, 3}, 1, 1, 1, "max", "output_half_pixel", 1);
  expect_f32("RoiAlign max", y, 4, d1, (float[]){2.5f}, 1e-6f);
  mi_array_destroy(y);
  /* 2x2 bins of the box 0..4 (from -0.5): samples at 0.5 and 2.5 on each axis */
  y = roi(16, (float[]){0, 0, 4, 4}, 2, 2, 1, NULL, NULL, 1);
  expect_f32("RoiAlign 2x2 bins", y, 4, d2, (float[]){2.5f, 4.5f, 10.5f, 12.5f}, 1e-6f);
  mi_array_destroy(y);
  /* spatial_scale 0.5: the box 0..6 is 0..3 on X */
  y = roi(10, (float[]){0, 0, 6, 6}, 1, 1, 1, NULL, NULL, 0.5f);
  expect_f32("RoiAlign spatial_scale", y, 4, d1, (float[]){7.5f}, 1e-6f);
  mi_array_destroy(y);

  /* a batch index outside X's batch: refused by the run (a value, not a shape) */
  int64_t dx[4] = {1, 1, 4, 4}, dr[2] = {1, 4}, one = 1, two = 2;
  float xv[16] = {0};
  mi_array_t *in[3] = {arr_f32(4, dx, xv), arr_f32(2, dr, (float[]){0, 0, 1, 1}), arr_i64(1, &one, &two)}, *o = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "RoiAlign", 16, 3, in, 0, 1);
  CHECK(case_run(&k, &o, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "batch_indices"),
        "RoiAlign bad batch index: %s", err.message);
  mi_array_destroy(o);
  ((float *)in[1]->data)[2] = NAN; /* a NaN box: refused, named */
  ((int64_t *)in[2]->data)[0] = 0;
  case_begin(&k, "RoiAlign", 16, 3, in, 0, 1);
  CHECK(case_run(&k, &o, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "not finite"),
        "RoiAlign NaN box: %s", err.message);
  mi_array_destroy(o);
  case_begin(&k, "RoiAlign", 16, 3, in, 0, 1);
  mi_node_set_string(k.g, k.node, "mode", "sum");
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
}

/* MaxPool's Indices (flat over N, C and the plane; column-major with storage_order 1), MaxUnpool
 * putting the maxima back where they were. */
static void test_pool_indices(void) {
  int64_t dx[4] = {1, 2, 2, 3}, dy[4] = {1, 2, 1, 2}, ks[2] = {2, 2};
  mi_array_t *x = arr_f32(4, dx, (float[]){1, 5, 2, 4, 3, 6, 0, 0, 9, 0, 0, 0}), *out[2] = {NULL, NULL};
  mi_error_t err = {0};
  op_case_t k;
  for (int order = 0; order < 2; order++) {
    case_begin(&k, "MaxPool", 12, 1, &x, 0, 2);
    mi_node_set_ints(k.g, k.node, "kernel_shape", 2, ks);
    mi_node_set_int(k.g, k.node, "storage_order", order);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "MaxPool Indices: %s", err.message);
    expect_f32("MaxPool values", out[0], 4, dy, (float[]){5, 6, 0, 9}, 0);
    /* plane 0: 5 at (0, 1), 6 at (1, 2); plane 1 (offset 6): the first 0 at (0, 0), 9 at (0, 2) */
    expect_i64(order ? "MaxPool Indices column-major" : "MaxPool Indices", out[1], 4, dy,
               order ? (int64_t[]){2, 5, 6, 10} : (int64_t[]){1, 5, 6, 8});
    if (order) {
      mi_array_destroy(out[0]), mi_array_destroy(out[1]);
      break;
    }
    mi_array_t *in[2] = {out[0], out[1]}, *y = NULL;
    case_begin(&k, "MaxUnpool", 11, 2, in, 0, 1);
    mi_node_set_ints(k.g, k.node, "kernel_shape", 2, ks);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "MaxUnpool: %s", err.message);
    expect_f32("MaxUnpool", y, 4, dx, (float[]){0, 5, 0, 0, 0, 6, 0, 0, 9, 0, 0, 0}, 0);
    mi_array_destroy(y);
    ((int64_t *)out[1]->data)[3] = 12; /* past the 12 outputs */
    case_begin(&k, "MaxUnpool", 11, 2, in, 0, 1);
    mi_node_set_ints(k.g, k.node, "kernel_shape", 2, ks);
    CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "outside"),
          "MaxUnpool index out of range: %s", err.message);
    mi_array_destroy(out[0]), mi_array_destroy(out[1]);
  }
  mi_array_destroy(x);
}

/* AffineGrid: theta times (x, y, 1) over the normalised pixel centres of a 2x2 output. */
static void test_affine_grid(void) {
  int64_t dt[3] = {1, 2, 3}, four = 4, dg[4] = {1, 2, 2, 2};
  mi_array_t *in[2] = {arr_f32(3, dt, (float[]){1, 0, 0.25f, 0, 2, 0}), arr_i64(1, &four, (int64_t[]){1, 1, 2, 2})},
             *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "AffineGrid", 20, 2, in, 2u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "AffineGrid: %s", err.message);
  /* centres at -0.5 and 0.5: x + 0.25, 2 y */
  expect_f32("AffineGrid", y, 4, dg, (float[]){-0.25f, -1, 0.75f, -1, -0.25f, 1, 0.75f, 1}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "AffineGrid", 20, 2, in, 2u, 1);
  mi_node_set_int(k.g, k.node, "align_corners", 1); /* corners at -1 and 1 */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "AffineGrid aligned: %s", err.message);
  expect_f32("AffineGrid aligned", y, 4, dg, (float[]){-0.75f, -2, 1.25f, -2, -0.75f, 2, 1.25f, 2}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "AffineGrid", 19, 2, in, 2u, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_pool_indices),
    TU_CASE(test_affine_grid),
    TU_CASE(test_trig),
    TU_CASE(test_lrn),
    TU_CASE(test_scaler_scatter),
    TU_CASE(test_gridsample),
    TU_CASE(test_roialign),
};

TU_MAIN(NULL, NULL)
