/* test_ref_intops.c - the reference's reductions, ArgMax, TopK and CumSum on UINT16 and UINT64
 * (and a saturating INT32 sum, an INT32 mean truncated toward zero), against values worked out by
 * hand: exact above 2^53 and INT64_MAX, saturated at the type's range, wrapping where ONNX Runtime
 * wraps (CumSum); an INT16 ReduceSum, which ONNX does not define, refused in one line. */
#include "test_ref_common.h"

static mi_array_t *arr(int32_t dtype, int32_t rank, const int64_t *dims, const void *vals) {
  mi_array_t *a = mi_array_create(dtype, rank, dims);
  if (a) memcpy(a->data, vals, a->nbytes);
  return a;
}

/* Runs op on x (reduced along axis 1, keepdims 0, as an attribute: opset 11 for ReduceSum, 13 for
 * the others) and compares the
 * output bytes with want (dtype `odt`, nbytes). */
static void reduce1(const char *op, mi_array_t *x, int32_t odt, const void *want, size_t nbytes) {
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  int64_t ax[1] = {1};
  case_begin(&k, op, strcmp(op, "ReduceSum") == 0 ? 11 : 13, 1, &x, 0, 1);
  mi_node_set_ints(k.g, k.node, "axes", 1, ax);
  mi_node_set_int(k.g, k.node, "keepdims", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s %s: %s", op, mi_dtype_name(x->dtype), err.message);
  CHECK(y && y->dtype == odt && y->nbytes == nbytes && !memcmp(y->data, want, nbytes), "%s on %s: values", op,
        mi_dtype_name(x->dtype));
  mi_array_destroy(y);
}

static void test_reduce(void) {
  const int64_t d23[2] = {2, 3};
  const uint64_t big = 0xfffffffffffffff0ull;
  const uint64_t u64[6] = {big, 14, 0, 1ull << 63, 1ull << 63, 1};
  mi_array_t *x = arr(MI_DTYPE_UINT64, 2, d23, u64);
  REQUIRE(x);
  /* 2^64 - 16 + 14 fits; 2^63 + 2^63 + 1 is past UINT64_MAX: saturated, not wrapped to 1 */
  reduce1("ReduceSum", x, MI_DTYPE_UINT64, (const uint64_t[]){UINT64_MAX - 1, UINT64_MAX}, 16);
  reduce1("ReduceMax", x, MI_DTYPE_UINT64, (const uint64_t[]){big, 1ull << 63}, 16);
  reduce1("ReduceMin", x, MI_DTYPE_UINT64, (const uint64_t[]){0, 1}, 16);
  /* (2^64 - 2) / 3 and (2^64 + 1) / 3, exact sums, truncated */
  reduce1("ReduceMean", x, MI_DTYPE_UINT64, (const uint64_t[]){0x5555555555555554ull, 0x5555555555555555ull}, 16);
  mi_array_destroy(x);
  const int32_t i32[6] = {INT32_MAX, INT32_MAX, 3, -7, -8, -1};
  x = arr(MI_DTYPE_INT32, 2, d23, i32);
  REQUIRE(x);
  reduce1("ReduceSum", x, MI_DTYPE_INT32, (const int32_t[]){INT32_MAX, -16}, 8);
  /* -16 / 3 = -5.33: -5 toward zero, as ONNX Runtime (not -6) */
  reduce1("ReduceMean", x, MI_DTYPE_INT32, (const int32_t[]){1431655765, -5}, 8);
  mi_array_destroy(x);
  const uint16_t u16[6] = {65535, 2, 65535, 9, 3, 4};
  x = arr(MI_DTYPE_UINT16, 2, d23, u16);
  REQUIRE(x);
  {
    mi_array_t *y = NULL;
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, "ReduceSum", 13, 1, &x, 0, 1);
    int32_t rc = mi_ref_run(k.g, (const mi_array_t *const *)k.rt, k.nrt, &y, 1, &err);
    CHECK(rc == MI_ERR_UNSUPPORTED && y == NULL, "UINT16 ReduceSum refused: %d", (int)rc);
    CHECK(strstr(err.message, "ReduceSum") && strstr(err.message, "uint16") && !strchr(err.message, '\n'),
          "one line naming the op and dtype: %s", err.message);
    mi_graph_destroy(k.g);
  }
  mi_array_destroy(x);
}

static void test_argmax_topk(void) {
  const int64_t d23[2] = {2, 3}, d1[1] = {1}, k2[1] = {2};
  /* 2^53 + 1 and 2^53 are one double: a double comparison would see a tie */
  const uint64_t u64[6] = {(1ull << 53), (1ull << 53) + 1, 5, UINT64_MAX, 1ull << 63, UINT64_MAX};
  const uint16_t u16[6] = {7, 65535, 65535, 0, 40000, 1};
  mi_array_t *x = arr(MI_DTYPE_UINT64, 2, d23, u64), *kk = arr_i64(1, d1, k2), *y = NULL, *outs[2] = {NULL};
  mi_error_t err = {0};
  op_case_t k;
  REQUIRE(x && kk);
  case_begin(&k, "ArgMax", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ArgMax: %s", err.message);
  expect_i64("ArgMax UINT64", y, 2, (const int64_t[]){2, 1}, (const int64_t[]){1, 0});
  mi_array_destroy(y);
  mi_array_t *ins[2] = {x, kk};
  case_begin(&k, "TopK", 11, 2, ins, 0x2, 2);
  CHECK(case_run(&k, outs, 0, &err) == MI_OK, "TopK: %s", err.message);
  CHECK(outs[0] && outs[0]->dtype == MI_DTYPE_UINT64 &&
            !memcmp(outs[0]->data, (const uint64_t[]){(1ull << 53) + 1, 1ull << 53, UINT64_MAX, UINT64_MAX}, 32),
        "TopK UINT64 values");
  expect_i64("TopK UINT64 indices (ties: lower index first)", outs[1], 2, (const int64_t[]){2, 2},
             (const int64_t[]){1, 0, 0, 2});
  mi_array_destroy(outs[0]);
  mi_array_destroy(outs[1]);
  mi_array_destroy(x);
  x = arr(MI_DTYPE_UINT16, 2, d23, u16);
  REQUIRE(x);
  case_begin(&k, "ArgMin", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", 1);
  mi_node_set_int(k.g, k.node, "keepdims", 0);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ArgMin: %s", err.message);
  expect_i64("ArgMin UINT16", y, 1, (const int64_t[]){2}, (const int64_t[]){0, 0});
  mi_array_destroy(y);
  ins[0] = x;
  case_begin(&k, "TopK", 11, 2, ins, 0x2, 2);
  mi_node_set_int(k.g, k.node, "largest", 0);
  CHECK(case_run(&k, outs, 0, &err) == MI_OK, "TopK smallest: %s", err.message);
  CHECK(outs[0] && outs[0]->dtype == MI_DTYPE_UINT16 &&
            !memcmp(outs[0]->data, (const uint16_t[]){7, 65535, 0, 1}, 8),
        "TopK UINT16 smallest values (65535 above 7, not a negative)");
  mi_array_destroy(outs[0]);
  mi_array_destroy(outs[1]);
  mi_array_destroy(x);
  mi_array_destroy(kk);
}

/* CumSum wraps at the type's width, as ONNX Runtime's INT32/INT64 CumSum does. */
static void test_cumsum(void) {
  const int64_t d4[1] = {4}, d0[1] = {0};
  const uint64_t v[4] = {UINT64_MAX, 2, 1ull << 63, 1ull << 63};
  mi_array_t *x = arr(MI_DTYPE_UINT64, 1, d4, v), *ax = arr_i64(0, d0, (const int64_t[]){0}), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  REQUIRE(x && ax);
  mi_array_t *ins[2] = {x, ax};
  case_begin(&k, "CumSum", 14, 2, ins, 0x2, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "CumSum: %s", err.message);
  CHECK(y && y->dtype == MI_DTYPE_UINT64 &&
            !memcmp(y->data, (const uint64_t[]){UINT64_MAX, 1, (1ull << 63) + 1, 1}, 32),
        "CumSum UINT64 wraps");
  mi_array_destroy(y);
  mi_array_destroy(x);
  mi_array_destroy(ax);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_reduce),
    TU_CASE(test_argmax_topk),
    TU_CASE(test_cumsum),
};

TU_MAIN(NULL, NULL)
