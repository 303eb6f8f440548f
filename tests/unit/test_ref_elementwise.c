/* test_ref_elementwise.c - reference activations, Clip forms, broadcasting binary ops, Where. */
#include "test_ref_common.h"

static const float XS[8] = {-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f, 4.0f};

/* Runs `op` on XS; `setup` may add attributes to the node. */
static mi_array_t *run_unary(const char *op, void (*setup)(mi_graph_t *, int32_t)) {
  int64_t d = 8;
  mi_graph_t *g = mi_graph_create("unary");
  int32_t n, x = tin(g, "x", MI_DTYPE_FLOAT32, 1, &d);
  int32_t y = node1(g, op, op, 1, &x, &n);
  mi_array_t *in = arr_f32(1, &d, XS), *out = NULL;
  mi_error_t err;
  mi_graph_add_output(g, y);
  if (setup) setup(g, n);
  int32_t rc = run1(g, 1, &in, &out, &err);
  CHECK(rc == MI_OK, "%s: %s", op, err.message);
  mi_array_destroy(in);
  mi_graph_destroy(g);
  return out;
}

static void set_leaky(mi_graph_t *g, int32_t n) { mi_node_set_float(g, n, "alpha", 0.1f); }
static void set_hsig(mi_graph_t *g, int32_t n) {
  mi_node_set_float(g, n, "alpha", 0.25f);
  mi_node_set_float(g, n, "beta", 0.4f);
}
static void set_gelu_tanh(mi_graph_t *g, int32_t n) { mi_node_set_string(g, n, "approximate", "tanh"); }

static void test_unary(void) {
  int64_t d = 8;
  float want[8];
  mi_array_t *y;
  /* Expected values from textbook formulas, in double, written independently of the kernels. */
#define UNARY_CASE(OP, SETUP, EXPR)        \
  do {                                     \
    for (int i = 0; i < 8; i++) {          \
      double x = XS[i];                    \
      want[i] = (float)(EXPR);             \
    }                                      \
    y = run_unary(OP, SETUP);              \
    expect_f32(OP, y, 1, &d, want, 1e-5f); \
    mi_array_destroy(y);                   \
  } while (0)
  UNARY_CASE("Relu", NULL, x < 0 ? 0 : x);
  UNARY_CASE("LeakyRelu", set_leaky, x < 0 ? 0.1 * x : x);
  UNARY_CASE("HardSigmoid", set_hsig, fmin(1.0, fmax(0.0, 0.25 * x + 0.4)));
  UNARY_CASE("HardSwish", NULL, x * fmin(6.0, fmax(0.0, x + 3.0)) / 6.0);
  UNARY_CASE("Sigmoid", NULL, 1.0 / (1.0 + exp(-x)));
  UNARY_CASE("Tanh", NULL, (exp(2 * x) - 1) / (exp(2 * x) + 1));
  UNARY_CASE("Erf", NULL, erf(x));
  UNARY_CASE("Gelu", NULL, x * 0.5 * erfc(-x / sqrt(2.0)));
  UNARY_CASE("Gelu", set_gelu_tanh,
             0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * pow(x, 3)))));
  UNARY_CASE("Exp", NULL, exp(x));
  UNARY_CASE("Neg", NULL, -x);
  UNARY_CASE("Abs", NULL, fabs(x));
  UNARY_CASE("Cos", NULL, cos(x));
  UNARY_CASE("Sin", NULL, sin(x));
#undef UNARY_CASE
}

static void test_clip(void) {
  int64_t d = 8;
  mi_error_t err;
  float want[8];
  /* opset 6: bounds are attributes. */
  {
    mi_graph_t *g = mi_graph_create("clip6");
    g->opset = 6;
    int32_t n, x = tin(g, "x", MI_DTYPE_FLOAT32, 1, &d), y = node1(g, "Clip", "c6", 1, &x, &n);
    mi_node_set_float(g, n, "min", -1.0f);
    mi_node_set_float(g, n, "max", 1.5f);
    mi_graph_add_output(g, y);
    mi_array_t *in = arr_f32(1, &d, XS), *out = NULL;
    CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s", err.message);
    for (int i = 0; i < 8; i++) want[i] = XS[i] < -1 ? -1 : XS[i] > 1.5f ? 1.5f
                                                                         : XS[i];
    expect_f32("Clip opset 6", out, 1, &d, want, 0);
    mi_array_destroy(in);
    mi_array_destroy(out);
    mi_graph_destroy(g);
  }
  /* opset 11: min as an input, max omitted (-1), attributes ignored. */
  {
    mi_graph_t *g = mi_graph_create("clip11");
    g->opset = 11;
    float lo = 0.25f;
    int32_t ins[3] = {tin(g, "x", MI_DTYPE_FLOAT32, 1, &d),
                      mi_graph_add_const_f32(g, "lo", 0, NULL, &lo), -1};
    int32_t n, y = node1(g, "Clip", "c11", 3, ins, &n);
    mi_node_set_float(g, n, "max", 0.0f); /* must have no effect from opset 11 on */
    mi_graph_add_output(g, y);
    mi_array_t *in = arr_f32(1, &d, XS), *out = NULL;
    CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s", err.message);
    for (int i = 0; i < 8; i++) want[i] = XS[i] < 0.25f ? 0.25f : XS[i];
    expect_f32("Clip opset 11", out, 1, &d, want, 0);
    mi_array_destroy(in);
    mi_array_destroy(out);
    mi_graph_destroy(g);
  }
}

/* Builds out = op(a, b) for graph inputs of the given shapes and runs it. */
static int32_t run_binary(const char *op, int32_t dtype, int32_t ra, const int64_t *da,
                          const void *va, int32_t rb, const int64_t *db, const void *vb,
                          mi_array_t **out, mi_error_t *err) {
  mi_graph_t *g = mi_graph_create("binary");
  int32_t ins[2] = {tin(g, "a", dtype, ra, da), tin(g, "b", dtype, rb, db)};
  mi_graph_add_output(g, node1(g, op, "bin_node", 2, ins, NULL));
  mi_array_t *a = mi_array_create(dtype, ra, da), *b = mi_array_create(dtype, rb, db);
  memcpy(a->data, va, a->nbytes);
  memcpy(b->data, vb, b->nbytes);
  mi_array_t *arrs[2] = {a, b};
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)arrs, 2, out, 1, err);
  mi_array_destroy(a);
  mi_array_destroy(b);
  mi_graph_destroy(g);
  return rc;
}

static void test_broadcast(void) {
  mi_error_t err;
  mi_array_t *y = NULL;
  /* [3,1] + [1,4] -> [3,4]: y[i][j] = a[i] + b[j]. */
  int64_t da[2] = {3, 1}, db[2] = {1, 4}, dy[2] = {3, 4};
  float a[3] = {1, 2, 3}, b[4] = {10, 20, 30, 40}, want[12];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) want[i * 4 + j] = a[i] + b[j];
  CHECK(run_binary("Add", MI_DTYPE_FLOAT32, 2, da, a, 2, db, b, &y, &err) == MI_OK, "%s",
        err.message);
  expect_f32("Add [3,1]+[1,4]", y, 2, dy, want, 0);
  mi_array_destroy(y);

  /* [2,3,4] - [4]: the right operand repeats over the leading dims. */
  int64_t dx[3] = {2, 3, 4}, d4 = 4;
  float x[24], v[4] = {0.5f, -1, 2, 8}, w[24];
  for (int i = 0; i < 24; i++) {
    x[i] = (float)(i * 3 % 7);
    w[i] = x[i] - v[i % 4];
  }
  CHECK(run_binary("Sub", MI_DTYPE_FLOAT32, 3, dx, x, 1, &d4, v, &y, &err) == MI_OK, "%s",
        err.message);
  expect_f32("Sub [2,3,4]-[4]", y, 3, dx, w, 0);
  mi_array_destroy(y);

  /* Scalar divisor (rank 0). */
  float two = 2.0f;
  for (int i = 0; i < 24; i++) w[i] = x[i] / 2.0f;
  CHECK(run_binary("Div", MI_DTYPE_FLOAT32, 3, dx, x, 0, NULL, &two, &y, &err) == MI_OK, "%s",
        err.message);
  expect_f32("Div by scalar", y, 3, dx, w, 0);
  mi_array_destroy(y);

  /* [3] + [4] does not broadcast: an invalid-argument error naming the node. */
  int64_t d3 = 3;
  CHECK(run_binary("Mul", MI_DTYPE_FLOAT32, 1, &d3, a, 1, &d4, b, &y, &err) ==
            MI_ERR_INVALID_ARGUMENT,
        "mismatch accepted");
  CHECK(y == NULL, "output set on failure");
  CHECK(strstr(err.message, "bin_node") && strstr(err.message, "Mul"), "message: %s", err.message);

  /* int64 shape arithmetic: [2] * [1], and Equal producing bool. */
  int64_t s[2] = {6, 8}, k = 2, d2 = 2, d1 = 1, wi[2] = {12, 16};
  CHECK(run_binary("Mul", MI_DTYPE_INT64, 1, &d2, s, 1, &d1, &k, &y, &err) == MI_OK, "%s",
        err.message);
  expect_i64("Mul int64", y, 1, &d2, wi);
  mi_array_destroy(y);
  int64_t e[2] = {6, 7};
  CHECK(run_binary("Equal", MI_DTYPE_INT64, 1, &d2, s, 1, &d2, e, &y, &err) == MI_OK, "%s",
        err.message);
  CHECK(y && y->dtype == MI_DTYPE_BOOL && ((uint8_t *)y->data)[0] == 1 &&
            ((uint8_t *)y->data)[1] == 0,
        "Equal int64 wrong");
  mi_array_destroy(y);
}

static void test_variadic_and_where(void) {
  mi_error_t err;
  /* Max over [2,1], [1,3], [3] -> [2,3]. */
  int64_t d21[2] = {2, 1}, d13[2] = {1, 3}, d3 = 3, d23[2] = {2, 3};
  float a[2] = {1, 5}, b[3] = {0, 2, 6}, c[3] = {3, -1, 4}, want[6];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) want[i * 3 + j] = fmaxf(a[i], fmaxf(b[j], c[j]));
  mi_graph_t *g = mi_graph_create("max3");
  int32_t ins[3] = {tin(g, "a", MI_DTYPE_FLOAT32, 2, d21), tin(g, "b", MI_DTYPE_FLOAT32, 2, d13),
                    tin(g, "c", MI_DTYPE_FLOAT32, 1, &d3)};
  mi_graph_add_output(g, node1(g, "Max", "max3", 3, ins, NULL));
  mi_array_t *arrs[3] = {arr_f32(2, d21, a), arr_f32(2, d13, b), arr_f32(1, &d3, c)}, *y = NULL;
  CHECK(mi_ref_run(g, (const mi_array_t *const *)arrs, 3, &y, 1, &err) == MI_OK, "%s",
        err.message);
  expect_f32("Max of three", y, 2, d23, want, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(arrs[i]);
  mi_graph_destroy(g);

  /* Where(x > 0, x, 0.1 * x) with a broadcast scalar-like [1] operand. */
  g = mi_graph_create("where");
  int64_t d1 = 1;
  float zero = 0.0f, tenth = 0.1f;
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 2, d23);
  int32_t gt_in[2] = {x, mi_graph_add_const_f32(g, "zero", 1, &d1, &zero)};
  int32_t cond = node1(g, "Greater", "gt", 2, gt_in, NULL);
  int32_t mul_in[2] = {x, mi_graph_add_const_f32(g, "tenth", 1, &d1, &tenth)};
  int32_t scaled = node1(g, "Mul", "mul", 2, mul_in, NULL);
  int32_t w_in[3] = {cond, x, scaled};
  mi_graph_add_output(g, node1(g, "Where", "where", 3, w_in, NULL));
  float xv[6] = {-2, -1, 0, 1, 2, 3};
  mi_array_t *in = arr_f32(2, d23, xv);
  for (int i = 0; i < 6; i++) want[i] = xv[i] > 0 ? xv[i] : xv[i] * 0.1f;
  CHECK(run1(g, 1, &in, &y, &err) == MI_OK, "%s", err.message);
  expect_f32("Where", y, 2, d23, want, 0);
  mi_array_destroy(y);
  mi_array_destroy(in);
  mi_graph_destroy(g);

  /* Pow with an int64 exponent (allowed from opset 12). */
  g = mi_graph_create("pow");
  int64_t three = 3;
  int32_t p_in[2] = {tin(g, "x", MI_DTYPE_FLOAT32, 2, d23),
                     mi_graph_add_const_i64(g, "three", 1, &three)};
  mi_graph_add_output(g, node1(g, "Pow", "pow", 2, p_in, NULL));
  in = arr_f32(2, d23, xv);
  for (int i = 0; i < 6; i++) want[i] = xv[i] * xv[i] * xv[i];
  CHECK(run1(g, 1, &in, &y, &err) == MI_OK, "%s", err.message);
  expect_f32("Pow", y, 2, d23, want, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_unary),
    TU_CASE(test_clip),
    TU_CASE(test_broadcast),
    TU_CASE(test_variadic_and_where),
};

TU_MAIN(NULL, NULL)
