/* test_ref_pick.c - OneHot (both negative-index rules, axis), Hardmax (opset 13 and the older
 * 2-D form), Compress (with and without an axis) and ReverseSequence (both axis orders) against
 * values worked out by hand, the inferred output shapes checked against the run and the refusals
 * on both paths (test_ref_common.h: case_run, case_refused). */
#include "test_ref_common.h"

static const int64_t D23[2] = {2, 3};

static mi_array_t *onehot(int64_t opset, int64_t axis, float depth, int32_t want_rc) {
  int64_t three = 3, one = 1, two = 2;
  mi_array_t *in[3] = {arr_i64(1, &three, (int64_t[]){0, -1, 5}), arr_f32(1, &one, &depth),
                       arr_f32(1, &two, (float[]){0, 1})},
             *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "OneHot", opset, 3, in, 6u, 1);
  if (axis != -1) mi_node_set_int(k.g, k.node, "axis", axis);
  if (want_rc == MI_OK)
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "OneHot: %s", err.message);
  else
    case_refused(&k, want_rc, &err);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
  return y;
}

static void test_onehot(void) {
  int64_t d33[2] = {3, 3};
  mi_array_t *y = onehot(11, -1, 3, MI_OK); /* -1 is the last class; 5 is out of range: all off */
  expect_f32("OneHot 11", y, 2, d33, (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0}, 0);
  mi_array_destroy(y);
  y = onehot(11, 0, 3, MI_OK); /* classes along axis 0 */
  expect_f32("OneHot axis 0", y, 2, d33, (float[]){1, 0, 0, 0, 0, 0, 0, 1, 0}, 0);
  mi_array_destroy(y);
  y = onehot(9, -1, 3, MI_OK); /* opset 9 wraps a negative index too, as ONNX Runtime does */
  expect_f32("OneHot 9", y, 2, d33, (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0}, 0);
  mi_array_destroy(y);
  onehot(8, -1, 3, MI_ERR_UNSUPPORTED);
  onehot(11, -1, 0, MI_ERR_INVALID_ARGUMENT);

  /* float indices truncate; NaN and huge ones are out of range (all off), not undefined casts */
  int64_t three = 3, one = 1, two = 2, d32[2] = {3, 2};
  mi_array_t *in[3] = {arr_f32(1, &three, (float[]){1.7f, NAN, -1e30f}),
                       arr_i64(1, &one, (int64_t[]){2}), arr_f32(1, &two, (float[]){0, 1})};
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "OneHot", 11, 3, in, 6u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "OneHot float indices: %s", err.message);
  expect_f32("OneHot float indices", y, 2, d32, (float[]){0, 1, 0, 0, 0, 0}, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
}

static void test_hardmax(void) {
  mi_array_t *x = arr_f32(2, D23, (float[]){1, 3, 3, 5, 2, 1}), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Hardmax", 13, 1, &x, 0, 1); /* per row; the first of equal maxima */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Hardmax: %s", err.message);
  expect_f32("Hardmax 13", y, 2, D23, (float[]){0, 1, 0, 1, 0, 0}, 0);
  mi_array_destroy(y);
  case_begin(&k, "Hardmax", 11, 1, &x, 0, 1); /* axis 0 before 13: the whole input is one row */
  mi_node_set_int(k.g, k.node, "axis", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Hardmax 11: %s", err.message);
  expect_f32("Hardmax 11 axis 0", y, 2, D23, (float[]){0, 0, 0, 1, 0, 0}, 0);
  mi_array_destroy(y);
  case_begin(&k, "Hardmax", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", 2);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x);
}

static mi_array_t *compress(const uint8_t *cond, int64_t n, int64_t axis, int32_t *rc) {
  mi_array_t *in[2] = {arr_f32(2, D23, (float[]){1, 2, 3, 4, 5, 6}),
                       mi_array_create(MI_DTYPE_BOOL, 1, &n)},
             *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  memcpy(in[1]->data, cond, (size_t)n);
  case_begin(&k, "Compress", 11, 2, in, 0, 1);
  if (axis >= -2) mi_node_set_int(k.g, k.node, "axis", axis);
  *rc = case_run(&k, &y, 1, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  return y;
}

static void test_compress(void) {
  int64_t d22[2] = {2, 2}, d2[1] = {2}, d13[2] = {1, 3};
  int32_t rc;
  mi_array_t *y = compress((const uint8_t[]){1, 0, 1}, 3, 1, &rc);
  expect_f32("Compress axis 1", y, 2, d22, (float[]){1, 3, 4, 6}, 0);
  mi_array_destroy(y);
  y = compress((const uint8_t[]){0, 1}, 2, -2, &rc); /* shorter than the axis: the rest dropped */
  expect_f32("Compress axis -2", y, 2, d13, (float[]){4, 5, 6}, 0);
  mi_array_destroy(y);
  y = compress((const uint8_t[]){0, 1, 1, 0}, 4, -3, &rc); /* no axis: the flattened input */
  expect_f32("Compress flattened", y, 1, d2, (float[]){2, 3}, 0);
  mi_array_destroy(y);
  y = compress((const uint8_t[]){1, 1, 1}, 3, 0, &rc);
  CHECK(rc == MI_ERR_INVALID_ARGUMENT && y == NULL, "Compress: a condition longer than the axis");
}

static void test_reverse_sequence(void) {
  int64_t d42[2] = {4, 2}, d24[2] = {2, 4}, two = 2;
  float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  mi_array_t *in[2] = {arr_f32(2, d42, v), arr_i64(1, &two, (int64_t[]){4, 2})}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "ReverseSequence", 10, 2, in, 2u, 1); /* time 0, batch 1: x[t][b] = 2t + b */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ReverseSequence: %s", err.message);
  expect_f32("ReverseSequence time-major", y, 2, d42, (float[]){6, 3, 4, 1, 2, 5, 0, 7}, 0);
  mi_array_destroy(y);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  in[0] = arr_f32(2, d24, v);
  in[1] = arr_i64(1, &two, (int64_t[]){3, 1});
  case_begin(&k, "ReverseSequence", 10, 2, in, 2u, 1);
  mi_node_set_int(k.g, k.node, "batch_axis", 0);
  mi_node_set_int(k.g, k.node, "time_axis", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ReverseSequence batch-major: %s", err.message);
  expect_f32("ReverseSequence batch-major", y, 2, d24, (float[]){2, 1, 0, 3, 4, 5, 6, 7}, 0);
  mi_array_destroy(y);
  case_begin(&k, "ReverseSequence", 10, 2, in, 2u, 1);
  mi_node_set_int(k.g, k.node, "time_axis", 2);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_onehot),
    TU_CASE(test_hardmax),
    TU_CASE(test_compress),
    TU_CASE(test_reverse_sequence),
};

TU_MAIN(NULL, NULL)
