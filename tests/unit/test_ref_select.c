/* test_ref_select.c - ArgMax/ArgMin, TopK, NonZero, Einsum and the reductions ReduceL2,
 * ReduceProd, ReduceLogSumExp and ReduceMin, against values worked out by hand, with the
 * inferred output shapes checked against the run (test_ref_common.h: case_run). */
#include "test_ref_common.h"

static const int64_t D23[2] = {2, 3};

static void test_argminmax(void) {
  float xv[6] = {1, 5, 5, 7, 2, 7};
  mi_array_t *x = arr_f32(2, D23, xv), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  int64_t d21[2] = {2, 1}, d3[1] = {3};

  case_begin(&k, "ArgMax", 13, 1, &x, 0, 1); /* axis 1, keepdims: first of the ties */
  mi_node_set_int(k.g, k.node, "axis", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ArgMax: %s", err.message);
  expect_i64("ArgMax axis 1", y, 2, d21, (int64_t[]){1, 0});
  mi_array_destroy(y);

  case_begin(&k, "ArgMax", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", -1);
  mi_node_set_int(k.g, k.node, "select_last_index", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ArgMax last: %s", err.message);
  expect_i64("ArgMax select_last_index", y, 2, d21, (int64_t[]){2, 2});
  mi_array_destroy(y);

  case_begin(&k, "ArgMin", 13, 1, &x, 0, 1); /* axis 0, keepdims 0 */
  mi_node_set_int(k.g, k.node, "keepdims", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ArgMin: %s", err.message);
  expect_i64("ArgMin axis 0", y, 1, d3, (int64_t[]){0, 1, 0});
  mi_array_destroy(y);
  mi_array_destroy(x);
}

static void test_topk(void) {
  int64_t xd[2] = {2, 4}, one = 1, kv = 2, yd[2] = {2, 2};
  float xv[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  mi_array_t *in[2] = {arr_f32(2, xd, xv), arr_i64(1, &one, &kv)}, *y[2] = {NULL, NULL};
  mi_error_t err = {0};
  op_case_t k;

  case_begin(&k, "TopK", 11, 2, in, 2u, 2); /* k constant: the inferred dim is 2 */
  CHECK(case_run(&k, y, 0, &err) == MI_OK, "TopK: %s", err.message);
  expect_f32("TopK values", y[0], 2, yd, (float[]){4, 3, 9, 6}, 0);
  expect_i64("TopK indices", y[1], 2, yd, (int64_t[]){2, 0, 1, 3});
  mi_array_destroy(y[0]), mi_array_destroy(y[1]);

  case_begin(&k, "TopK", 11, 2, in, 2u, 2); /* smallest; equal values: lower index first */
  mi_node_set_int(k.g, k.node, "largest", 0);
  CHECK(case_run(&k, y, 0, &err) == MI_OK, "TopK smallest: %s", err.message);
  expect_f32("TopK smallest values", y[0], 2, yd, (float[]){1, 1, 2, 5}, 0);
  expect_i64("TopK smallest indices", y[1], 2, yd, (int64_t[]){1, 3, 2, 0});
  mi_array_destroy(y[0]), mi_array_destroy(y[1]);

  case_begin(&k, "TopK", 11, 2, in, 0, 2); /* unsorted, k at run time */
  mi_node_set_int(k.g, k.node, "sorted", 0);
  CHECK(case_run(&k, y, 1, &err) == MI_OK, "TopK unsorted: %s", err.message);
  expect_f32("TopK unsorted values (input order)", y[0], 2, yd, (float[]){3, 4, 9, 6}, 0);
  expect_i64("TopK unsorted indices", y[1], 2, yd, (int64_t[]){0, 2, 1, 3});
  mi_array_destroy(y[0]), mi_array_destroy(y[1]);

  kv = 5; /* more than the axis holds */
  mi_array_destroy(in[1]);
  in[1] = arr_i64(1, &one, &kv);
  case_begin(&k, "TopK", 11, 2, in, 2u, 2);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static void test_nonzero(void) {
  float xv[6] = {0, 1, 0, 2, 0, 3};
  mi_array_t *x = arr_f32(2, D23, xv), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "NonZero", 13, 1, &x, 0, 1);
  mi_graph_t *c = mi_graph_clone(k.g);
  CHECK(mi_graph_infer_shapes(c, &err) == MI_OK, "NonZero inference: %s", err.message);
  const mi_tensor_t *t = &c->tensors[c->outputs[0]];
  CHECK(t->rank == 2 && t->dims[0] == 2 && t->dims[1] == MI_DIM_DYNAMIC,
        "NonZero infers [rank, dynamic], got rank %d [%lld,%lld]", (int)t->rank,
        (long long)t->dims[0], (long long)t->dims[1]);
  mi_graph_destroy(c);
  CHECK(case_run(&k, &y, 1, &err) == MI_OK, "NonZero: %s", err.message);
  expect_i64("NonZero", y, 2, D23, (int64_t[]){0, 1, 1, 1, 0, 2});
  mi_array_destroy(y);
  mi_array_destroy(x);
}

static mi_array_t *einsum(const char *eq, int32_t nin, mi_array_t **ins) {
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Einsum", 13, nin, ins, 0, 1);
  mi_node_set_string(k.g, k.node, "equation", eq);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Einsum '%s': %s", eq, err.message);
  return y;
}

static void test_einsum(void) {
  float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {7, 8, 9, 10, 11, 12};
  int64_t bd[2] = {3, 2}, d22[2] = {2, 2}, d32[2] = {3, 2}, d2[1] = {2}, d222[3] = {2, 2, 2};
  mi_array_t *ab[2] = {arr_f32(2, D23, av), arr_f32(2, bd, bv)}, *y;
  float mm[4] = {58, 64, 139, 154};
  y = einsum("ij,jk->ik", 2, ab);
  expect_f32("Einsum ij,jk->ik", y, 2, d22, mm, 0);
  mi_array_destroy(y);
  y = einsum("ij,jk", 2, ab); /* implicit output: the labels used once, sorted */
  expect_f32("Einsum ij,jk", y, 2, d22, mm, 0);
  mi_array_destroy(y);
  y = einsum("ij->ji", 1, ab);
  expect_f32("Einsum ij->ji", y, 2, d32, (float[]){1, 4, 2, 5, 3, 6}, 0);
  mi_array_destroy(y);
  y = einsum("ij->i", 1, ab);
  expect_f32("Einsum ij->i", y, 1, d2, (float[]){6, 15}, 0);
  mi_array_destroy(y);
  mi_array_destroy(ab[0]), mi_array_destroy(ab[1]);

  float a3[8] = {1, 2, 3, 4, 0, 1, 1, 0}, b3[8] = {5, 6, 7, 8, 1, 2, 3, 4};
  ab[0] = arr_f32(3, d222, a3);
  ab[1] = arr_f32(3, d222, b3);
  y = einsum("bij,bjk->bik", 2, ab);
  expect_f32("Einsum bij,bjk->bik", y, 3, d222, (float[]){19, 22, 43, 50, 3, 4, 1, 2}, 0);
  mi_array_destroy(y);

  /* Equations outside the supported set are refused by name, on both paths. */
  const char *bad[] = {"ii->i", "...ij,...jk->...ik", "ij,jk,kl->il"};
  for (int i = 0; i < 3; i++) {
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, "Einsum", 13, i == 2 ? 2 : (i == 0 ? 1 : 2), ab, 0, 1);
    mi_node_set_string(k.g, k.node, "equation", bad[i]);
    case_refused(&k, MI_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, bad[i]) != NULL, "message names the equation: %s", err.message);
  }
  mi_array_destroy(ab[0]), mi_array_destroy(ab[1]);
}

/* One reduction over axis 1 of [[1,2,3],[4,5,6]], keepdims, in the opset-13 (attribute) or
 * opset-18 (input) form. */
static void reduce_case(const char *op, int64_t opset, const float *want) {
  float xv[6] = {1, 2, 3, 4, 5, 6};
  int64_t one = 1, axis = 1, d21[2] = {2, 1};
  mi_array_t *in[2] = {arr_f32(2, D23, xv), arr_i64(1, &one, &axis)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  int by_input = opset >= 18;
  case_begin(&k, op, opset, by_input ? 2 : 1, in, 2u, 1);
  if (!by_input) mi_node_set_ints(k.g, k.node, "axes", 1, &axis);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s opset %lld: %s", op, (long long)opset,
        err.message);
  char what[64];
  snprintf(what, sizeof what, "%s opset %lld", op, (long long)opset);
  expect_f32(what, y, 2, d21, want, 1e-6f);
  mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static void test_reduce(void) {
  /* sqrt(1+4+9), sqrt(16+25+36) */
  float l2[2] = {3.74165739f, 8.77496439f}, prod[2] = {6, 120}, mn[2] = {1, 4};
  /* 3 + ln(e^-2 + e^-1 + 1) and 6 + the same */
  float lse[2] = {3.40760596f, 6.40760596f};
  for (int64_t opset = 13; opset <= 18; opset += 5) {
    reduce_case("ReduceL2", opset, l2);
    reduce_case("ReduceProd", opset, prod);
    reduce_case("ReduceLogSumExp", opset, lse);
    reduce_case("ReduceMin", opset, mn);
  }
  /* LogSumExp of large values must not overflow: 1000 + ln 2. */
  int64_t two = 2, one = 1, di[1] = {3};
  float big[2] = {1000, 1000};
  mi_array_t *x = arr_f32(1, &two, big), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "ReduceLogSumExp", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "keepdims", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ReduceLogSumExp big: %s", err.message);
  expect_f32("ReduceLogSumExp big", y, 0, NULL, (float[]){1000.693147f}, 1e-6f);
  mi_array_destroy(x), mi_array_destroy(y);
  /* Integer product over everything. */
  x = arr_i64(1, di, (int64_t[]){2, 3, 4});
  case_begin(&k, "ReduceProd", 13, 1, &x, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ReduceProd int64: %s", err.message);
  expect_i64("ReduceProd int64", y, 1, &one, (int64_t[]){24});
  mi_array_destroy(x), mi_array_destroy(y);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_argminmax),
    TU_CASE(test_topk),
    TU_CASE(test_nonzero),
    TU_CASE(test_einsum),
    TU_CASE(test_reduce),
};

TU_MAIN(NULL, NULL)
