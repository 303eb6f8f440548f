/* test_ref_generate.c - the ops added for real exports (Expand, ConstantOfShape, Range, Tile,
 * Sign/Floor/Ceil/Round/Softplus, comparisons and logic), each checked against values worked
 * out by hand, on the interpreter and through shape inference. */
#include "test_ref_common.h"

/* Runs op on runtime inputs (float32 or int64 by `dt`), infers shapes on a clone to check that
 * inference agrees with the interpreter, and returns the output. */
static mi_array_t *run_op(const char *op, int32_t nin, mi_array_t **ins, int32_t nconst,
                          mi_array_t **consts, void (*attrs)(mi_graph_t *, int32_t)) {
  mi_graph_t *g = mi_graph_create(op);
  int32_t t[8], node, n = 0;
  mi_array_t *out = NULL;
  mi_error_t err = {0};
  char name[16];
  for (int32_t i = 0; i < nin; i++) {
    snprintf(name, sizeof name, "x%d", (int)i);
    t[n++] = tin(g, name, ins[i]->dtype, ins[i]->rank, ins[i]->dims);
  }
  for (int32_t i = 0; i < nconst; i++) {
    snprintf(name, sizeof name, "c%d", (int)i);
    t[n] = mi_graph_add_tensor(g, name, consts[i]->dtype, consts[i]->rank, consts[i]->dims);
    mi_graph_set_data(g, t[n], consts[i]->data, consts[i]->nbytes);
    n++;
  }
  int32_t y = node1(g, op, op, n, t, &node);
  mi_graph_add_output(g, y);
  if (attrs) attrs(g, node);
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)ins, nin, &out, 1, &err);
  CHECK(rc == MI_OK, "%s: %s", op, err.message);
  mi_graph_t *c = mi_graph_clone(g);
  rc = mi_graph_infer_shapes(c, &err);
  CHECK(rc == MI_OK, "%s shape inference: %s", op, err.message);
  if (rc == MI_OK && out) {
    const mi_tensor_t *ty = &c->tensors[c->outputs[0]];
    CHECK(ty->rank == out->rank && ty->dtype == out->dtype, "%s: inferred rank %d dtype %s", op,
          (int)ty->rank, mi_dtype_name(ty->dtype));
    for (int32_t d = 0; d < out->rank && ty->rank == out->rank; d++)
      CHECK(ty->dims[d] == out->dims[d], "%s: inferred dim %d = %lld, ran %lld", op, (int)d,
            (long long)ty->dims[d], (long long)out->dims[d]);
  }
  mi_graph_destroy(c);
  mi_graph_destroy(g);
  return out;
}

static void test_expand(void) {
  int64_t xd[2] = {3, 1}, sd[1] = {3};
  float xv[3] = {1, 2, 3};
  int64_t shape[3] = {2, 1, 4}; /* bidirectional: [3,1] with [2,1,4] -> [2,3,4] */
  mi_array_t *x = arr_f32(2, xd, xv), *s = arr_i64(1, sd, shape);
  mi_array_t *y = run_op("Expand", 1, &x, 1, &s, NULL);
  float want[24];
  for (int i = 0; i < 24; i++) want[i] = (float)((i / 4) % 3 + 1);
  int64_t yd[3] = {2, 3, 4};
  expect_f32("Expand", y, 3, yd, want, 0);
  mi_array_destroy(x), mi_array_destroy(s), mi_array_destroy(y);
}

static void cos_attrs(mi_graph_t *g, int32_t node) {
  mi_node_set_int(g, node, "value", 7);
  mi_node_set_int(g, node, "value_dtype", MI_DTYPE_INT64);
}

static void test_constant_of_shape(void) {
  int64_t sd[1] = {2}, shape[2] = {2, 3}, want[6] = {7, 7, 7, 7, 7, 7};
  mi_array_t *s = arr_i64(1, sd, shape);
  mi_array_t *y = run_op("ConstantOfShape", 0, NULL, 1, &s, cos_attrs);
  expect_i64("ConstantOfShape int64", y, 2, shape, want);
  mi_array_destroy(y);
  y = run_op("ConstantOfShape", 0, NULL, 1, &s, NULL); /* default: float32 zeros */
  float zeros[6] = {0};
  expect_f32("ConstantOfShape default", y, 2, shape, zeros, 0);
  mi_array_destroy(s), mi_array_destroy(y);
}

static void test_range(void) {
  mi_array_t *a[3];
  int64_t v[3] = {10, 1, -3}, want[3] = {10, 7, 4}, n = 3; /* ceil((1-10)/-3) = 3 */
  for (int i = 0; i < 3; i++) a[i] = arr_i64(0, NULL, &v[i]);
  mi_array_t *y = run_op("Range", 0, NULL, 3, a, NULL);
  expect_i64("Range int64", y, 1, &n, want);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(a[i]);
  float fv[3] = {0.5f, 2.0f, 0.5f}, fw[3] = {0.5f, 1.0f, 1.5f};
  for (int i = 0; i < 3; i++) a[i] = arr_f32(0, NULL, &fv[i]);
  y = run_op("Range", 0, NULL, 3, a, NULL);
  expect_f32("Range float", y, 1, &n, fw, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(a[i]);
}

static void test_tile(void) {
  int64_t xd[2] = {2, 2}, rd[1] = {2}, reps[2] = {1, 2}, yd[2] = {2, 4};
  float xv[4] = {1, 2, 3, 4}, want[8] = {1, 2, 1, 2, 3, 4, 3, 4};
  mi_array_t *x = arr_f32(2, xd, xv), *r = arr_i64(1, rd, reps);
  mi_array_t *y = run_op("Tile", 1, &x, 1, &r, NULL);
  expect_f32("Tile", y, 2, yd, want, 0);
  mi_array_destroy(x), mi_array_destroy(r), mi_array_destroy(y);
}

static void test_unary(void) {
  int64_t d[1] = {6};
  float xv[6] = {-2.5f, -0.5f, 0.0f, 0.5f, 1.5f, 2.5f};
  struct {
    const char *op;
    float want[6];
  } cases[] = {
      {"Sign", {-1, -1, 0, 1, 1, 1}},
      {"Floor", {-3, -1, 0, 0, 1, 2}},
      {"Ceil", {-2, -0.0f, 0, 1, 2, 3}},
      {"Round", {-2, -0.0f, 0, 0, 2, 2}}, /* halves go to the even neighbour */
      /* Softplus ln(1 + e^x), computed from the definition in double precision */
      {"Softplus", {0.07888973f, 0.47407698f, 0.69314718f, 0.97407698f, 1.70141328f, 2.57888973f}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mi_array_t *x = arr_f32(1, d, xv);
    mi_array_t *y = run_op(cases[i].op, 1, &x, 0, NULL, NULL);
    expect_f32(cases[i].op, y, 1, d, cases[i].want, 1e-6f);
    mi_array_destroy(x), mi_array_destroy(y);
  }
}

static void test_compare_logic(void) {
  int64_t ad[2] = {2, 1}, bd[1] = {3}, yd[2] = {2, 3};
  float av[2] = {1, 2}, bv[3] = {0, 1, 2};
  struct {
    const char *op;
    uint8_t want[6];
  } cases[] = {
      {"LessOrEqual", {0, 1, 1, 0, 0, 1}},
      {"GreaterOrEqual", {1, 1, 0, 1, 1, 1}},
      {"Less", {0, 0, 1, 0, 0, 0}},
      {"Greater", {1, 0, 0, 1, 1, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mi_array_t *ab[2] = {arr_f32(2, ad, av), arr_f32(1, bd, bv)};
    mi_array_t *y = run_op(cases[i].op, 2, ab, 0, NULL, NULL);
    CHECK(y && same_shape(y, 2, yd) && y->dtype == MI_DTYPE_BOOL, "%s shape/dtype", cases[i].op);
    for (int k = 0; y && k < 6; k++)
      CHECK(((uint8_t *)y->data)[k] == cases[i].want[k], "%s element %d", cases[i].op, k);
    mi_array_destroy(ab[0]), mi_array_destroy(ab[1]), mi_array_destroy(y);
  }
  int64_t n4 = 4;
  uint8_t p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
  struct {
    const char *op;
    uint8_t want[4];
  } logic[] = {
      {"And", {0, 0, 0, 1}}, {"Or", {0, 1, 1, 1}}, {"Xor", {0, 1, 1, 0}}};
  for (size_t i = 0; i < sizeof logic / sizeof logic[0]; i++) {
    mi_array_t *ab[2] = {mi_array_create(MI_DTYPE_BOOL, 1, &n4), mi_array_create(MI_DTYPE_BOOL, 1, &n4)};
    memcpy(ab[0]->data, p, 4);
    memcpy(ab[1]->data, q, 4);
    mi_array_t *y = run_op(logic[i].op, 2, ab, 0, NULL, NULL);
    for (int k = 0; y && k < 4; k++)
      CHECK(((uint8_t *)y->data)[k] == logic[i].want[k], "%s element %d", logic[i].op, k);
    CHECK(y != NULL, "%s ran", logic[i].op);
    mi_array_destroy(ab[0]), mi_array_destroy(ab[1]), mi_array_destroy(y);
  }
}

/* Bad shapes are errors, not crashes. */
static void test_errors(void) {
  int64_t xd[2] = {3, 2}, sd[1] = {2}, bad[2] = {4, 2};
  float xv[6] = {0};
  mi_array_t *x = arr_f32(2, xd, xv), *s = arr_i64(1, sd, bad), *out = NULL;
  mi_graph_t *g = mi_graph_create("bad");
  int32_t t[2] = {tin(g, "x", MI_DTYPE_FLOAT32, 2, xd), mi_graph_add_tensor(g, "s", MI_DTYPE_INT64, 1, sd)};
  mi_graph_set_data(g, t[1], s->data, s->nbytes);
  mi_graph_add_output(g, node1(g, "Expand", "e", 2, t, NULL));
  mi_error_t err = {0};
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_PARSE, "Expand [3,2] to [4,2] must not infer");
  CHECK(strstr(err.message, "Expand") != NULL, "message names the op: %s", err.message);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&x, 1, &out, 1, &err) != MI_OK && !out,
        "Expand [3,2] to [4,2] must fail on ref");
  mi_graph_destroy(g);
  mi_array_destroy(x), mi_array_destroy(s);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_expand),
    TU_CASE(test_constant_of_shape),
    TU_CASE(test_range),
    TU_CASE(test_tile),
    TU_CASE(test_unary),
    TU_CASE(test_compare_logic),
    TU_CASE(test_errors),
};

TU_MAIN(NULL, NULL)
