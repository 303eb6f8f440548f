/* test_ref_smallops.c - EyeLike, BitShift, BitwiseAnd / Or / Xor / Not, LpPool, GlobalLpPool,
 * Col2Im, DeformConv, Det, CenterCropPad, MaxRoiPool, TensorScatter and Unique on the reference against
 * values worked out by hand, the inferred output shapes checked against each run and the
 * refusals on both paths (test_ref_common.h). */
#include "test_ref_common.h"

static mi_array_t *arr_of(int32_t dtype, int32_t rank, const int64_t *dims, const void *vals) {
  mi_array_t *a = mi_array_create(dtype, rank, dims);
  if (a && vals) memcpy(a->data, vals, a->nbytes);
  return a;
}

static void expect_bytes(const char *what, const mi_array_t *a, int32_t dtype, int32_t rank, const int64_t *dims,
                         const void *want) {
  CHECK(a && a->dtype == dtype && same_shape(a, rank, dims), "%s: dtype %s or shape wrong", what,
        a ? mi_dtype_name(a->dtype) : "(none)");
  if (a && a->dtype == dtype && same_shape(a, rank, dims))
    CHECK(memcmp(a->data, want, a->nbytes) == 0, "%s: values differ", what);
}

/* EyeLike: ones on the k-th diagonal, in `dtype` or the input's type. */
static void test_eyelike(void) {
  int64_t d34[2] = {3, 4}, d32[2] = {3, 2}, d3[3] = {1, 2, 2};
  mi_array_t *x = arr_f32(2, d34, NULL), *xi = arr_of(MI_DTYPE_UINT8, 2, d32, NULL), *x3 = arr_f32(3, d3, NULL);
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "EyeLike", 9, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "k", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "EyeLike: %s", err.message);
  expect_f32("EyeLike k 1", y, 2, d34, (float[]){0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0);
  mi_array_destroy(y);
  case_begin(&k, "EyeLike", 22, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "k", -1);
  mi_node_set_int(k.g, k.node, "dtype", 7); /* INT64 */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "EyeLike: %s", err.message);
  expect_i64("EyeLike k -1 int64", y, 2, d34, (int64_t[]){0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0});
  mi_array_destroy(y);
  case_begin(&k, "EyeLike", 22, 1, &xi, 0, 1); /* the input's type, UINT8 */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "EyeLike: %s", err.message);
  expect_bytes("EyeLike uint8", y, MI_DTYPE_UINT8, 2, d32, (uint8_t[]){1, 0, 0, 1, 0, 0});
  mi_array_destroy(y);
  case_begin(&k, "EyeLike", 22, 1, &xi, 0, 1);
  mi_node_set_int(k.g, k.node, "dtype", 9);     /* BOOL */
  mi_node_set_int(k.g, k.node, "k", INT64_MAX); /* no diagonal inside, and no overflow */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "EyeLike: %s", err.message);
  expect_bytes("EyeLike bool k max", y, MI_DTYPE_BOOL, 2, d32, (uint8_t[]){0, 0, 0, 0, 0, 0});
  mi_array_destroy(y);
  case_begin(&k, "EyeLike", 22, 1, &x3, 0, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "node 'EyeLike'") && strstr(err.message, "2-D"), "EyeLike rank 3: %s", err.message);
  case_begin(&k, "EyeLike", 8, 1, &x, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  CHECK(strstr(err.message, "exists from opset 9") != NULL, "EyeLike under opset 8: %s", err.message);
  case_begin(&k, "EyeLike", 22, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "dtype", 8); /* STRING */
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(x);
  mi_array_destroy(xi);
  mi_array_destroy(x3);
}

static void bit_case(const char *op, int64_t opset, mi_array_t *a, mi_array_t *b, const char *dir, int32_t rank,
                     const int64_t *dims, const void *want) {
  mi_array_t *ins[2] = {a, b}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, op, opset, b ? 2 : 1, ins, 0, 1);
  if (dir) mi_node_set_string(k.g, k.node, "direction", dir);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", op, err.message);
  expect_bytes(op, y, a->dtype, rank, dims, want);
  mi_array_destroy(y);
}

static void test_bitwise(void) {
  int64_t d4[1] = {4}, d22[2] = {2, 2}, d2[1] = {2}, d21[2] = {2, 1};
  mi_array_t *a8 = arr_of(MI_DTYPE_INT8, 1, d4, (int8_t[]){-1, 0x5a, -128, 7});
  mi_array_t *b8 = arr_of(MI_DTYPE_INT8, 1, d4, (int8_t[]){0x0f, 0x0f, 1, -8});
  bit_case("BitwiseAnd", 18, a8, b8, NULL, 1, d4, (int8_t[]){0x0f, 0x0a, 0, 0});
  bit_case("BitwiseOr", 18, a8, b8, NULL, 1, d4, (int8_t[]){-1, 0x5f, -127, -1});
  bit_case("BitwiseXor", 18, a8, b8, NULL, 1, d4, (int8_t[]){-16, 0x55, -127, -1});
  bit_case("BitwiseNot", 18, a8, NULL, NULL, 1, d4, (int8_t[]){0, ~0x5a, 127, -8});
  /* broadcast [2, 1] against [2] on INT64 and INT32, all 64 / 32 bits */
  mi_array_t *a64 = arr_of(MI_DTYPE_INT64, 2, d21, (int64_t[]){INT64_MIN, 0x00ff00ff00ff00ffLL});
  mi_array_t *b64 = arr_of(MI_DTYPE_INT64, 1, d2, (int64_t[]){-1, 0x0f0f0f0f0f0f0f0fLL});
  bit_case("BitwiseAnd", 18, a64, b64, NULL, 2, d22,
           (int64_t[]){INT64_MIN, 0, 0x00ff00ff00ff00ffLL, 0x000f000f000f000fLL});
  mi_array_t *a32 = arr_of(MI_DTYPE_INT32, 2, d21, (int32_t[]){INT32_MIN, 0x12345678});
  mi_array_t *b32 = arr_of(MI_DTYPE_INT32, 1, d2, (int32_t[]){-1, 0});
  bit_case("BitwiseXor", 18, a32, b32, NULL, 2, d22, (int32_t[]){INT32_MAX, INT32_MIN, ~0x12345678, 0x12345678});
  mi_array_t *u = arr_of(MI_DTYPE_UINT8, 1, d4, (uint8_t[]){0x81, 0x81, 0xff, 3});
  mi_array_t *s = arr_of(MI_DTYPE_UINT8, 1, d4, (uint8_t[]){1, 7, 8, 200}); /* 8 and more: 0 */
  bit_case("BitShift", 11, u, s, "LEFT", 1, d4, (uint8_t[]){0x02, 0x80, 0, 0});
  bit_case("BitShift", 11, u, s, "RIGHT", 1, d4, (uint8_t[]){0x40, 0x01, 0, 0});
  bit_case("BitwiseNot", 18, u, NULL, NULL, 1, d4, (uint8_t[]){0x7e, 0x7e, 0, 0xfc});
  /* refusals: a bad direction, a signed BitShift, mixed types, an older opset, floats */
  mi_error_t err = {0};
  op_case_t k;
  mi_array_t *ins[2] = {u, s};
  case_begin(&k, "BitShift", 11, 2, ins, 0, 1);
  mi_node_set_string(k.g, k.node, "direction", "UP");
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "node 'BitShift'") && strstr(err.message, "UP"), "direction UP: %s", err.message);
  ins[0] = a8, ins[1] = b8;
  case_begin(&k, "BitShift", 11, 2, ins, 0, 1);
  mi_node_set_string(k.g, k.node, "direction", "LEFT");
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  ins[1] = u;
  case_begin(&k, "BitwiseAnd", 18, 2, ins, 0, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  ins[1] = b8;
  case_begin(&k, "BitwiseOr", 17, 2, ins, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  CHECK(strstr(err.message, "exists from opset 18") != NULL, "BitwiseOr under 17: %s", err.message);
  mi_array_t *f = arr_f32(1, d4, NULL);
  case_begin(&k, "BitwiseNot", 18, 1, &f, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_t *all[] = {a8, b8, a64, b64, a32, b32, u, s, f};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mi_array_destroy(all[i]);
}

/* x = 1, -2, 3, 4, 5, -6, 7, 8, 9 in one 3x3 plane. */
static void test_lppool(void) {
  int64_t d[4] = {1, 1, 3, 3}, d22[4] = {1, 1, 2, 2}, d11[4] = {1, 1, 1, 1}, d1[3] = {1, 1, 5}, d13[3] = {1, 1, 3};
  mi_array_t *x = arr_f32(4, d, (float[]){1, -2, 3, 4, 5, -6, 7, 8, 9}), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "LpPool", 11, 1, &x, 0, 1); /* p 2 by default: windows {1,2,4,5} ... */
  mi_node_set_ints(k.g, k.node, "kernel_shape", 2, (int64_t[]){2, 2});
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpPool: %s", err.message);
  expect_f32("LpPool p 2", y, 4, d22, (float[]){sqrtf(46), sqrtf(74), sqrtf(154), sqrtf(206)}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LpPool", 2, 1, &x, 0, 1); /* p 1, pads 1 on top / left, stride 2: |..| sums */
  mi_node_set_ints(k.g, k.node, "kernel_shape", 2, (int64_t[]){2, 2});
  mi_node_set_ints(k.g, k.node, "pads", 4, (int64_t[]){1, 1, 0, 0});
  mi_node_set_ints(k.g, k.node, "strides", 2, (int64_t[]){2, 2});
  mi_node_set_int(k.g, k.node, "p", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpPool: %s", err.message);
  expect_f32("LpPool p 1 pads", y, 4, d22, (float[]){1, 5, 11, 28}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LpPool", 1, 1, &x, 0, 1); /* opset 1: p is a FLOAT; one 3x3 window, p 3 */
  mi_node_set_ints(k.g, k.node, "kernel_shape", 2, (int64_t[]){3, 3});
  mi_node_set_float(k.g, k.node, "p", 3.0f);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpPool: %s", err.message);
  expect_f32("LpPool p 3.0", y, 4, d11, (float[]){cbrtf(2025)}, 1e-6f); /* sum of cubes 1..9 */
  mi_array_destroy(y);
  case_begin(&k, "LpPool", 18, 1, &x, 0, 1); /* ceil_mode: a second window of one column / row */
  mi_node_set_ints(k.g, k.node, "kernel_shape", 2, (int64_t[]){2, 2});
  mi_node_set_ints(k.g, k.node, "strides", 2, (int64_t[]){2, 2});
  mi_node_set_int(k.g, k.node, "ceil_mode", 1);
  mi_node_set_int(k.g, k.node, "p", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpPool: %s", err.message);
  expect_f32("LpPool ceil", y, 4, d22, (float[]){12, 9, 15, 9}, 1e-6f);
  mi_array_destroy(y);
  mi_array_t *x1 = arr_f32(3, d1, (float[]){3, 4, 0, 5, 12});
  case_begin(&k, "LpPool", 18, 1, &x1, 0, 1); /* 1-D, dilation 2: {3, 0}, {4, 5}, {0, 12} */
  mi_node_set_ints(k.g, k.node, "kernel_shape", 1, (int64_t[]){2});
  mi_node_set_ints(k.g, k.node, "dilations", 1, (int64_t[]){2});
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpPool: %s", err.message);
  expect_f32("LpPool 1-D dilated", y, 3, d13, (float[]){3, sqrtf(41), 12}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "GlobalLpPool", 2, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "p", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "GlobalLpPool: %s", err.message);
  expect_f32("GlobalLpPool p 1", y, 4, d11, (float[]){45}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LpPool", 11, 1, &x, 0, 1); /* no kernel_shape */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "node 'LpPool'") && strstr(err.message, "kernel_shape"), "LpPool: %s", err.message);
  case_begin(&k, "LpPool", 11, 1, &x, 0, 1); /* p 0 (run: the attribute, not a shape) */
  mi_node_set_ints(k.g, k.node, "kernel_shape", 2, (int64_t[]){2, 2});
  mi_node_set_int(k.g, k.node, "p", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "p must be"), "LpPool p 0: %s",
        err.message);
  mi_array_destroy(x);
  mi_array_destroy(x1);
}

/* Col2Im of 4 rows (a 2x2 block) of 2 columns into a 2x3 image: rows (0,0) = {1,2} at (0,0),
 * (0,1); (0,1) = {3,4} at (0,1), (0,2); (1,0) = {5,6} at (1,0), (1,1); (1,1) = {7,8} at (1,1),
 * (1,2). */
static void test_col2im(void) {
  int64_t d[3] = {1, 4, 2}, d2[1] = {2}, dy[4] = {1, 1, 2, 3};
  mi_array_t *x = arr_f32(3, d, (float[]){1, 2, 3, 4, 5, 6, 7, 8});
  mi_array_t *img = arr_i64(1, d2, (int64_t[]){2, 3}), *blk = arr_i64(1, d2, (int64_t[]){2, 2}), *y = NULL;
  mi_array_t *ins[3] = {x, img, blk};
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Col2Im", 18, 3, ins, 6, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Col2Im: %s", err.message);
  expect_f32("Col2Im", y, 4, dy, (float[]){1, 5, 4, 5, 13, 8}, 0);
  mi_array_destroy(y);
  /* stride 2 with pads 1 left and right: block columns at -1 + 2 l (+ 1 for the second tap) */
  int64_t d1[3] = {1, 2, 2}, dy1[4] = {1, 1, 1, 3};
  mi_array_t *x1 = arr_f32(3, d1, (float[]){1, 2, 3, 4});
  mi_array_t *img1 = arr_i64(1, d2, (int64_t[]){1, 3}), *blk1 = arr_i64(1, d2, (int64_t[]){1, 2});
  mi_array_t *ins1[3] = {x1, img1, blk1};
  case_begin(&k, "Col2Im", 18, 3, ins1, 6, 1);
  mi_node_set_ints(k.g, k.node, "strides", 2, (int64_t[]){1, 2});
  mi_node_set_ints(k.g, k.node, "pads", 4, (int64_t[]){0, 1, 0, 1});
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Col2Im: %s", err.message);
  expect_f32("Col2Im stride pads", y, 4, dy1, (float[]){3, 2, 4}, 0);
  mi_array_destroy(y);
  case_begin(&k, "Col2Im", 18, 3, ins1, 6, 1); /* without the pads one block fits, not L = 2 */
  mi_node_set_ints(k.g, k.node, "strides", 2, (int64_t[]){1, 2});
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "node 'Col2Im'"), "Col2Im L: %s",
        err.message);
  case_begin(&k, "Col2Im", 17, 3, ins, 6, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_t *all[] = {x, img, blk, x1, img1, blk1};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mi_array_destroy(all[i]);
}

/* A 1x1 DeformConv on x = 0..8 (3x3) with every tap moved half a pixel down: the mean of a pixel
 * and the one below it, the last row half its value (the row below is outside, 0); a mask of
 * 0.5 halves all; a 2x2 kernel with zero offsets equals Conv. */
static void test_deform_conv(void) {
  int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 1, 1}, doff[4] = {1, 2, 3, 3}, dm[4] = {1, 1, 3, 3};
  float off[18] = {0}, half[9];
  for (int i = 0; i < 9; i++) off[i] = 0.5f, half[i] = 0.5f;
  mi_array_t *x = arr_f32(4, dx, (float[]){0, 1, 2, 3, 4, 5, 6, 7, 8}), *w = arr_f32(4, dw, (float[]){2});
  mi_array_t *o = arr_f32(4, doff, off), *m = arr_f32(4, dm, half), *b = arr_f32(1, (int64_t[]){1}, (float[]){1});
  mi_array_t *ins[5] = {x, w, o, NULL, NULL}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "DeformConv", 19, 3, ins, 2, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DeformConv: %s", err.message);
  expect_f32("DeformConv shift", y, 4, dx, (float[]){3, 5, 7, 9, 11, 13, 6, 7, 8}, 1e-6f);
  mi_array_destroy(y);
  ins[3] = b, ins[4] = m;
  case_begin(&k, "DeformConv", 22, 5, ins, 2 | 8, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DeformConv: %s", err.message);
  expect_f32("DeformConv mask bias", y, 4, dx, (float[]){2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 4, 4.5f, 5}, 1e-6f);
  mi_array_destroy(y);
  /* 2x2 kernel, zero offsets: Conv's sums of each 2x2 window times 1, 2, 3, 4 */
  int64_t dw2[4] = {1, 1, 2, 2}, doff2[4] = {1, 8, 2, 2}, dy2[4] = {1, 1, 2, 2};
  float zero[32] = {0};
  mi_array_t *w2 = arr_f32(4, dw2, (float[]){1, 2, 3, 4}), *o2 = arr_f32(4, doff2, zero);
  mi_array_t *ins2[3] = {x, w2, o2};
  case_begin(&k, "DeformConv", 19, 3, ins2, 2, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DeformConv: %s", err.message);
  expect_f32("DeformConv as Conv", y, 4, dy2, (float[]){27, 37, 57, 67}, 1e-6f);
  mi_array_destroy(y);
  /* refusals: the offset for another kernel, offset_group not dividing C, an older opset */
  ins2[2] = o;
  case_begin(&k, "DeformConv", 19, 3, ins2, 2, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "node 'DeformConv'") && strstr(err.message, "offset"), "DeformConv offset: %s",
        err.message);
  ins2[2] = o2;
  case_begin(&k, "DeformConv", 19, 3, ins2, 2, 1);
  mi_node_set_int(k.g, k.node, "offset_group", 2);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  case_begin(&k, "DeformConv", 18, 3, ins2, 2, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_t *all[] = {x, w, o, m, b, w2, o2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mi_array_destroy(all[i]);
}

/* Det of [[1, 2], [3, 4]] and [[0, 1], [1, 0]] (a row swap), and of diag(2, 3, 4). */
static void test_det(void) {
  int64_t d[3] = {2, 2, 2}, d2[1] = {2}, d3[2] = {3, 3}, d23[2] = {2, 3};
  mi_array_t *x = arr_f32(3, d, (float[]){1, 2, 3, 4, 0, 1, 1, 0}), *x3 = arr_f32(2, d3, (float[]){2, 0, 0, 0, 3, 0, 0, 0, 4});
  mi_array_t *bad = arr_f32(2, d23, NULL), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Det", 11, 1, &x, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Det: %s", err.message);
  expect_f32("Det batch", y, 1, d2, (float[]){-2, -1}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "Det", 11, 1, &x3, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Det: %s", err.message);
  expect_f32("Det 3x3", y, 0, NULL, (float[]){24}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "Det", 11, 1, &bad, 0, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "node 'Det'") != NULL, "Det 2x3: %s", err.message);
  case_begin(&k, "Det", 10, 1, &x, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(x), mi_array_destroy(x3), mi_array_destroy(bad);
}

/* CenterCropPad of [[1, 2, 3], [4, 5, 6]] to [4, 1]: a row of zeros each side, the middle column;
 * axes [1] to 5: a zero column each side. */
static void test_center_crop_pad(void) {
  int64_t d[2] = {2, 3}, d1[1] = {1}, d2[1] = {2}, d41[2] = {4, 1}, d25[2] = {2, 5};
  mi_array_t *x = arr_f32(2, d, (float[]){1, 2, 3, 4, 5, 6}), *s = arr_i64(1, d2, (int64_t[]){4, 1});
  mi_array_t *s5 = arr_i64(1, d1, (int64_t[]){5}), *ins[2] = {x, s}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "CenterCropPad", 18, 2, ins, 2, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "CenterCropPad: %s", err.message);
  expect_f32("CenterCropPad", y, 2, d41, (float[]){0, 2, 5, 0}, 0);
  mi_array_destroy(y);
  ins[1] = s5;
  case_begin(&k, "CenterCropPad", 18, 2, ins, 2, 1);
  mi_node_set_ints(k.g, k.node, "axes", 1, (int64_t[]){-1});
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "CenterCropPad: %s", err.message);
  expect_f32("CenterCropPad axes", y, 2, d25, (float[]){0, 1, 2, 3, 0, 0, 4, 5, 6, 0}, 0);
  mi_array_destroy(y);
  case_begin(&k, "CenterCropPad", 18, 2, ins, 2, 1); /* one value for two axes */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "node 'CenterCropPad'") != NULL, "CenterCropPad: %s", err.message);
  mi_array_destroy(x), mi_array_destroy(s), mi_array_destroy(s5);
}

/* MaxRoiPool on x = 0..15 (4x4): the whole map in 2x2 bins of 2x2, and the box (1,1)-(2,2) in
 * bins of one pixel. */
static void test_max_roi_pool(void) {
  int64_t d[4] = {1, 1, 4, 4}, dr[2] = {2, 5}, dy[4] = {2, 1, 2, 2};
  float xv[16];
  for (int i = 0; i < 16; i++) xv[i] = (float)i;
  mi_array_t *x = arr_f32(4, d, xv), *r = arr_f32(2, dr, (float[]){0, 0, 0, 3, 3, 0, 1, 1, 2, 2});
  mi_array_t *ins[2] = {x, r}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "MaxRoiPool", 7, 2, ins, 2, 1);
  mi_node_set_ints(k.g, k.node, "pooled_shape", 2, (int64_t[]){2, 2});
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "MaxRoiPool: %s", err.message);
  expect_f32("MaxRoiPool", y, 4, dy, (float[]){5, 7, 13, 15, 5, 6, 9, 10}, 0);
  mi_array_destroy(y);
  case_begin(&k, "MaxRoiPool", 7, 2, ins, 2, 1); /* no pooled_shape */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "pooled_shape") != NULL, "MaxRoiPool: %s", err.message);
  mi_array_destroy(x), mi_array_destroy(r);
}

/* TensorScatter of 2 rows into a cache of 4 (past = 0..7, rows of 2) from row 3: circular wraps
 * the second row to row 0; linear refuses it. */
static void test_tensor_scatter(void) {
  int64_t dp[3] = {1, 4, 2}, du[3] = {1, 2, 2}, dw[1] = {1};
  mi_array_t *past = arr_f32(3, dp, (float[]){0, 1, 2, 3, 4, 5, 6, 7}), *u = arr_f32(3, du, (float[]){10, 11, 12, 13});
  mi_array_t *w = arr_i64(1, dw, (int64_t[]){3}), *ins[3] = {past, u, w}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "TensorScatter", 24, 3, ins, 4, 1);
  mi_node_set_string(k.g, k.node, "mode", "circular");
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "TensorScatter: %s", err.message);
  expect_f32("TensorScatter circular", y, 3, dp, (float[]){12, 13, 2, 3, 4, 5, 10, 11}, 0);
  mi_array_destroy(y);
  case_begin(&k, "TensorScatter", 24, 3, ins, 4, 1); /* linear: rows 3 and 4 of 4 */
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "node 'TensorScatter'"),
        "TensorScatter linear past the end: %s", err.message);
  case_begin(&k, "TensorScatter", 24, 3, ins, 4, 1);
  mi_node_set_string(k.g, k.node, "mode", "ring");
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  case_begin(&k, "TensorScatter", 23, 3, ins, 4, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(past), mi_array_destroy(u), mi_array_destroy(w);
}

/* Unique on the spec's examples: [2, 1, 1, 3, 4, 3] in first-occurrence order and sorted, and
 * the rows of [[1, 0, 0], [1, 0, 0], [2, 3, 4]]. */
static void unique_case(mi_array_t *x, int64_t sorted, int64_t axis, int32_t yrank, const int64_t *ydims,
                        const int64_t *y, const int64_t *idx, const int64_t *inv, const int64_t *cnt, int64_t u) {
  mi_array_t *outs[4] = {NULL};
  int64_t du[1] = {u}, ds[1] = {axis >= 0 ? x->dims[axis] : mi_array_numel(x)};
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Unique", 11, 1, &x, 0, 4);
  mi_node_set_int(k.g, k.node, "sorted", sorted);
  if (axis >= 0) mi_node_set_int(k.g, k.node, "axis", axis);
  CHECK(case_run(&k, outs, 1, &err) == MI_OK, "Unique: %s", err.message);
  expect_i64("Unique Y", outs[0], yrank, ydims, y);
  expect_i64("Unique indices", outs[1], 1, du, idx);
  expect_i64("Unique inverse_indices", outs[2], 1, ds, inv);
  expect_i64("Unique counts", outs[3], 1, du, cnt);
  for (int i = 0; i < 4; i++) mi_array_destroy(outs[i]);
}

static void test_unique(void) {
  int64_t d6[1] = {6}, d33[2] = {3, 3}, d4[1] = {4}, d23[2] = {2, 3};
  mi_array_t *x = arr_i64(1, d6, (int64_t[]){2, 1, 1, 3, 4, 3}), *x2 = arr_i64(2, d33, (int64_t[]){1, 0, 0, 1, 0, 0, 2, 3, 4});
  unique_case(x, 0, -1, 1, d4, (int64_t[]){2, 1, 3, 4}, (int64_t[]){0, 1, 3, 4}, (int64_t[]){0, 1, 1, 2, 3, 2},
              (int64_t[]){1, 2, 2, 1}, 4);
  unique_case(x, 1, -1, 1, d4, (int64_t[]){1, 2, 3, 4}, (int64_t[]){1, 0, 3, 4}, (int64_t[]){1, 0, 0, 2, 3, 2},
              (int64_t[]){2, 1, 2, 1}, 4);
  unique_case(x2, 1, 0, 2, d23, (int64_t[]){1, 0, 0, 2, 3, 4}, (int64_t[]){0, 2}, (int64_t[]){0, 0, 1},
              (int64_t[]){2, 1}, 2);
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Unique", 10, 1, &x, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  case_begin(&k, "Unique", 11, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", 1); /* out of range for rank 1 */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x), mi_array_destroy(x2);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_eyelike),
    TU_CASE(test_bitwise),
    TU_CASE(test_lppool),
    TU_CASE(test_col2im),
    TU_CASE(test_deform_conv),
    TU_CASE(test_det),
    TU_CASE(test_center_crop_pad),
    TU_CASE(test_max_roi_pool),
    TU_CASE(test_tensor_scatter),
    TU_CASE(test_unique),
};

TU_MAIN(NULL, NULL)
