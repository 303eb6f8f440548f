/* test_ref_act.c - Elu, Selu, Celu, Softsign, Mish, ThresholdedRelu, Shrink, CastLike, ReduceL1,
 * ReduceSumSquare, ReduceLogSum, GroupNormalization (opset 18 and 21 forms), LpNormalization
 * and MeanVarianceNormalization against values
 * worked out by hand, the inferred output shapes checked against the run, and their refusals
 * checked on both paths (test_ref_common.h: case_run, case_refused). */
#include "test_ref_common.h"

static const int64_t D5[1] = {5};
static const float X5[5] = {-2, -0.5f, 0, 0.5f, 2};

/* One activation on X5 at `opset` with up to two float attributes (name NULL: none). */
static void act(const char *op, int64_t opset, const char *a1, float v1, const char *a2, float v2,
                const float *want) {
  mi_array_t *x = arr_f32(1, D5, X5), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, op, opset, 1, &x, 0, 1);
  if (a1) mi_node_set_float(k.g, k.node, a1, v1);
  if (a2) mi_node_set_float(k.g, k.node, a2, v2);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", op, err.message);
  expect_f32(op, y, 1, D5, want, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(x);
}

static void test_activations(void) {
  act("Elu", 6, NULL, 0, NULL, 0, (float[]){-0.8646647f, -0.3934693f, 0, 0.5f, 2});
  act("Elu", 21, "alpha", 0.5f, NULL, 0, (float[]){-0.43233235f, -0.19673467f, 0, 0.5f, 2});
  /* gamma * alpha * (e^x - 1) below 0, gamma * x above */
  act("Selu", 6, NULL, 0, NULL, 0, (float[]){-1.5201665f, -0.6917582f, 0, 0.5253505f, 2.101402f});
  act("Celu", 12, "alpha", 2, NULL, 0, (float[]){-1.2642411f, -0.4423984f, 0, 0.5f, 2});
  act("Softsign", 1, NULL, 0, NULL, 0,
      (float[]){-0.6666667f, -0.3333333f, 0, 0.3333333f, 0.6666667f});
  act("Mish", 18, NULL, 0, NULL, 0, (float[]){-0.2525015f, -0.2207438f, 0, 0.3752452f, 1.943959f});
  act("ThresholdedRelu", 10, "alpha", 0.5f, NULL, 0, (float[]){0, 0, 0, 0, 2}); /* 0.5 is not > 0.5 */
  act("Shrink", 9, "lambd", 0.5f, "bias", 0.25f, (float[]){-1.75f, 0, 0, 0, 1.75f});
  act("Shrink", 9, NULL, 0, NULL, 0, (float[]){-2, 0, 0, 0, 2}); /* lambd 0.5, bias 0 */

  /* Named under an opset that does not have them yet; Celu's x / alpha with alpha 0. */
  static const struct {
    const char *op;
    int64_t opset;
  } early[] = {{"Mish", 17}, {"Celu", 11}, {"ThresholdedRelu", 9}, {"Shrink", 8}, {"Elu", 5}};
  mi_array_t *x = arr_f32(1, D5, X5);
  mi_error_t err = {0};
  op_case_t k;
  for (size_t i = 0; i < sizeof early / sizeof early[0]; i++) {
    case_begin(&k, early[i].op, early[i].opset, 1, &x, 0, 1);
    case_refused(&k, MI_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "exists from opset") != NULL, "%s: %s", early[i].op, err.message);
  }
  case_begin(&k, "Celu", 12, 1, &x, 0, 1);
  mi_node_set_float(k.g, k.node, "alpha", 0);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x);
  /* Integer input: refused by the run (float only), with the dtype named. */
  int64_t iv[5] = {-2, -1, 0, 1, 2};
  mi_array_t *xi = arr_i64(1, D5, iv), *y = NULL;
  case_begin(&k, "Softsign", 13, 1, &xi, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_UNSUPPORTED && strstr(err.message, "int64"),
        "Softsign on int64: %s", err.message);
  mi_array_destroy(xi);
}

static void test_castlike(void) {
  int64_t d2[1] = {2}, one = 1, z = 0;
  mi_array_t *in[2] = {arr_f32(1, d2, (float[]){1.7f, -2.2f}), arr_i64(1, &one, &z)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "CastLike", 15, 2, in, 2u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "CastLike: %s", err.message);
  expect_i64("CastLike float -> int64 (truncates)", y, 1, d2, (int64_t[]){1, -2});
  mi_array_destroy(y);
  case_begin(&k, "CastLike", 14, 2, in, 2u, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static mi_array_t *reduce(const char *op, int64_t opset, mi_array_t *x, int64_t axis, int keep) {
  int64_t one = 1;
  mi_array_t *in[2] = {x, arr_i64(1, &one, &axis)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  if (opset >= 18) { /* axes as a constant input */
    case_begin(&k, op, opset, 2, in, 2u, 1);
  } else {
    case_begin(&k, op, opset, 1, in, 0, 1);
    mi_node_set_ints(k.g, k.node, "axes", 1, &axis);
  }
  mi_node_set_int(k.g, k.node, "keepdims", keep);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s opset %lld: %s", op, (long long)opset,
        err.message);
  mi_array_destroy(in[1]);
  return y;
}

static void test_reductions(void) {
  int64_t d23[2] = {2, 3}, d21[2] = {2, 1}, d3[1] = {3};
  mi_array_t *x = arr_f32(2, d23, (float[]){1, -2, 3, -4, 5, -6});
  mi_array_t *p = arr_f32(2, d23, (float[]){1, 2, 3, 4, 5, 6});
  mi_array_t *xi = arr_i64(2, d23, (int64_t[]){1, -2, 3, -4, 5, -6}), *y;
  y = reduce("ReduceL1", 18, x, 1, 1);
  expect_f32("ReduceL1 axes input", y, 2, d21, (float[]){6, 15}, 0);
  mi_array_destroy(y);
  y = reduce("ReduceL1", 13, x, 0, 0);
  expect_f32("ReduceL1 axes attribute", y, 1, d3, (float[]){5, 7, 9}, 0);
  mi_array_destroy(y);
  y = reduce("ReduceL1", 18, xi, -1, 1);
  expect_i64("ReduceL1 int64", y, 2, d21, (int64_t[]){6, 15});
  mi_array_destroy(y);
  y = reduce("ReduceSumSquare", 18, x, 1, 1);
  expect_f32("ReduceSumSquare axes input", y, 2, d21, (float[]){14, 77}, 0);
  mi_array_destroy(y);
  y = reduce("ReduceSumSquare", 11, x, 0, 0);
  expect_f32("ReduceSumSquare axes attribute", y, 1, d3, (float[]){17, 29, 45}, 0);
  mi_array_destroy(y);
  y = reduce("ReduceLogSum", 18, p, 1, 1);
  expect_f32("ReduceLogSum axes input", y, 2, d21, (float[]){1.7917595f, 2.7080502f}, 1e-6f);
  mi_array_destroy(y);
  y = reduce("ReduceLogSum", 13, p, 0, 0);
  expect_f32("ReduceLogSum axes attribute", y, 1, d3, (float[]){1.6094379f, 1.9459101f, 2.1972246f},
             1e-6f);
  mi_array_destroy(y);
  /* noop_with_empty_axes and no axes: nothing is reduced, the element-wise part still applies */
  static const struct {
    const char *op;
    float v[6];
  } noop[] = {{"ReduceL1", {1, 2, 3, 4, 5, 6}},
              {"ReduceSumSquare", {1, 4, 9, 16, 25, 36}},
              {"ReduceL2", {1, 2, 3, 4, 5, 6}}};
  for (size_t i = 0; i < sizeof noop / sizeof noop[0]; i++) {
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, noop[i].op, 18, 1, &x, 0, 1);
    mi_node_set_int(k.g, k.node, "noop_with_empty_axes", 1);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s noop: %s", noop[i].op, err.message);
    expect_f32(noop[i].op, y, 2, d23, noop[i].v, 1e-6f);
    mi_array_destroy(y);
  }
  mi_array_destroy(x), mi_array_destroy(p), mi_array_destroy(xi);
}

/* x [1, 4, 2] = 0..7, two groups of two channels: each group is {0,1,2,3} + 4g, mean 1.5 + 4g,
 * variance 1.25; with epsilon 0 the normalized group is {-3, -1, 1, 3} / sqrt(5). */
#define N1 1.3416408f
#define N2 0.4472136f
static mi_array_t *groupnorm(int64_t opset, int64_t groups, int64_t nsb, const float *s,
                             const float *b, int32_t want_rc) {
  int64_t xd[3] = {1, 4, 2};
  float xv[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  mi_array_t *in[3] = {arr_f32(3, xd, xv), arr_f32(1, &nsb, s), arr_f32(1, &nsb, b)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "GroupNormalization", opset, 3, in, 6u, 1);
  mi_node_set_int(k.g, k.node, "num_groups", groups);
  mi_node_set_float(k.g, k.node, "epsilon", 0);
  if (want_rc == MI_OK)
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "GroupNormalization %lld: %s", (long long)opset,
          err.message);
  else
    case_refused(&k, want_rc, &err);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
  return y;
}

static void test_groupnorm(void) {
  int64_t yd[3] = {1, 4, 2};
  mi_array_t *y;
  /* opset 18: scale {1, 2} and bias {0, 1} per group */
  y = groupnorm(18, 2, 2, (float[]){1, 2}, (float[]){0, 1}, MI_OK);
  expect_f32("GroupNormalization 18", y, 3, yd,
             (float[]){-N1, -N2, N2, N1, 1 - 2 * N1, 1 - 2 * N2, 1 + 2 * N2, 1 + 2 * N1}, 1e-6f);
  mi_array_destroy(y);
  /* opset 21: scale {1, 2, 3, 4} and bias {0, 0, 1, 1} per channel */
  y = groupnorm(21, 2, 4, (float[]){1, 2, 3, 4}, (float[]){0, 0, 1, 1}, MI_OK);
  expect_f32("GroupNormalization 21", y, 3, yd,
             (float[]){-N1, -N2, 2 * N2, 2 * N1, 1 - 3 * N1, 1 - 3 * N2, 1 + 4 * N2, 1 + 4 * N1},
             1e-6f);
  mi_array_destroy(y);
  /* refused: 3 groups of 4 channels; per-channel scale under opset 18; opset 17 */
  groupnorm(18, 3, 3, (float[]){1, 1, 1}, (float[]){0, 0, 0}, MI_ERR_INVALID_ARGUMENT);
  groupnorm(18, 2, 4, (float[]){1, 2, 3, 4}, (float[]){0, 0, 1, 1}, MI_ERR_INVALID_ARGUMENT);
  groupnorm(17, 2, 2, (float[]){1, 2}, (float[]){0, 1}, MI_ERR_UNSUPPORTED);
}

static void test_lp_mvn(void) {
  int64_t d22[2] = {2, 2}, d4[4] = {1, 2, 1, 2}, d3[3] = {1, 2, 2};
  mi_array_t *x = arr_f32(2, d22, (float[]){3, 4, -6, 8}), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "LpNormalization", 13, 1, &x, 0, 1); /* p 2, axis -1 */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpNormalization: %s", err.message);
  expect_f32("LpNormalization p 2", y, 2, d22, (float[]){0.6f, 0.8f, -0.6f, 0.8f}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LpNormalization", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "p", 1);
  mi_node_set_int(k.g, k.node, "axis", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "LpNormalization p 1: %s", err.message);
  expect_f32("LpNormalization p 1 axis 0", y, 2, d22,
             (float[]){1 / 3.0f, 1 / 3.0f, -2 / 3.0f, 2 / 3.0f}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "LpNormalization", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "p", 3);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(x);

  /* channel 0 holds {1, 3} (mean 2, deviation 1), channel 1 {2, 6} (mean 4, deviation 2) */
  x = arr_f32(4, d4, (float[]){1, 3, 2, 6});
  case_begin(&k, "MeanVarianceNormalization", 13, 1, &x, 0, 1); /* axes 0, 2, 3 */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "MeanVarianceNormalization: %s", err.message);
  expect_f32("MeanVarianceNormalization per channel", y, 4, d4, (float[]){-1, 1, -1, 1}, 1e-6f);
  mi_array_destroy(y);
  case_begin(&k, "MeanVarianceNormalization", 9, 1, &x, 0, 1);
  mi_node_set_ints(k.g, k.node, "axes", 1, (int64_t[]){1}); /* across channels: {1,2}, {3,6} */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "MeanVarianceNormalization axes: %s", err.message);
  expect_f32("MeanVarianceNormalization axes 1", y, 4, d4, (float[]){-1, -1, 1, 1}, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(x);
  x = arr_f32(3, d3, (float[]){1, 2, 3, 4}); /* rank 3: the default axis 3 does not exist */
  case_begin(&k, "MeanVarianceNormalization", 13, 1, &x, 0, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_lp_mvn),
    TU_CASE(test_activations),
    TU_CASE(test_castlike),
    TU_CASE(test_reductions),
    TU_CASE(test_groupnorm),
};

TU_MAIN(NULL, NULL)
