/* test_ref_shape.c - reference Reshape, Slice, Gather, Transpose, Concat, Squeeze/Unsqueeze,
 * Shape and Cast, including the opset-dependent attribute/input forms. */
#include "test_ref_common.h"

static float X12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const int64_t D34[2] = {3, 4};

/* x[3,4] = 0..11 as the graph input, `op` applied with constant int64 inputs `consts`. */
static mi_array_t *run_x(const char *op, int64_t opset, int32_t nconst, const int64_t *counts,
                         const int64_t *const *consts, void (*setup)(mi_graph_t *, int32_t)) {
  mi_graph_t *g = mi_graph_create("shape");
  int32_t ins[6], n;
  char name[16];
  g->opset = opset;
  ins[0] = tin(g, "x", MI_DTYPE_FLOAT32, 2, D34);
  for (int32_t i = 0; i < nconst; i++) {
    snprintf(name, sizeof name, "k%d", (int)i);
    ins[i + 1] = counts[i] < 0 ? -1 : mi_graph_add_const_i64(g, name, counts[i], consts[i]);
  }
  mi_graph_add_output(g, node1(g, op, "shape_node", 1 + nconst, ins, &n));
  if (setup) setup(g, n);
  mi_array_t *in = arr_f32(2, D34, X12), *out = NULL;
  mi_error_t err;
  CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s: %s", op, err.message);
  mi_array_destroy(in);
  mi_graph_destroy(g);
  return out;
}

static void test_reshape(void) {
  int64_t shape[3] = {0, -1, 2}, cnt = 3, want_d[3] = {3, 2, 2};
  const int64_t *k[1] = {shape};
  mi_array_t *y = run_x("Reshape", 13, 1, &cnt, k, NULL);
  expect_f32("Reshape 0,-1,2", y, 3, want_d, X12, 0);
  mi_array_destroy(y);
}

static void test_slice(void) {
  /* Rows reversed (start -1, end INT64_MIN, step -1), columns 3 down to 1 in steps of -2. */
  int64_t starts[2] = {-1, 3}, ends[2] = {INT64_MIN, 0}, axes[2] = {0, 1}, steps[2] = {-1, -2};
  int64_t cnt[4] = {2, 2, 2, 2}, dy[2] = {3, 2};
  const int64_t *k[4] = {starts, ends, axes, steps};
  float want[6];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++) want[r * 2 + c] = X12[(2 - r) * 4 + (3 - 2 * c)];
  mi_array_t *y = run_x("Slice", 13, 4, cnt, k, NULL);
  expect_f32("Slice negative steps", y, 2, dy, want, 0);
  mi_array_destroy(y);

  /* Ends past the dim clamp; axes and steps omitted; start -3 on axis 1 = 1. */
  int64_t s2[2] = {1, -3}, e2[2] = {100, 1000}, c2[4] = {2, 2, -1, -1}, d2[2] = {2, 3};
  const int64_t *k2[4] = {s2, e2, NULL, NULL};
  float w2[6] = {5, 6, 7, 9, 10, 11};
  y = run_x("Slice", 13, 4, c2, k2, NULL);
  expect_f32("Slice clamped", y, 2, d2, w2, 0);
  mi_array_destroy(y);
}

static void slice9_setup(mi_graph_t *g, int32_t n) {
  int64_t starts[1] = {1}, ends[1] = {-1}, axes[1] = {1};
  mi_node_set_ints(g, n, "starts", 1, starts);
  mi_node_set_ints(g, n, "ends", 1, ends);
  mi_node_set_ints(g, n, "axes", 1, axes);
}

static void test_slice_opset9(void) {
  int64_t dy[2] = {3, 2};
  float want[6] = {1, 2, 5, 6, 9, 10};
  mi_array_t *y = run_x("Slice", 9, 0, NULL, NULL, slice9_setup);
  expect_f32("Slice opset 9 attributes", y, 2, dy, want, 0);
  mi_array_destroy(y);
}

static void gather_axis1(mi_graph_t *g, int32_t n) { mi_node_set_int(g, n, "axis", 1); }

static void test_gather(void) {
  /* int64 indices [-1, 0] on axis 0 pick rows 2 and 0. */
  int64_t idx[2] = {-1, 0}, cnt = 2, dy[2] = {2, 4};
  const int64_t *k[1] = {idx};
  float want[8] = {8, 9, 10, 11, 0, 1, 2, 3};
  mi_array_t *y = run_x("Gather", 13, 1, &cnt, k, NULL);
  expect_f32("Gather negative indices", y, 2, dy, want, 0);
  mi_array_destroy(y);

  /* int32 indices of shape [2,2] on axis 1: output [3,2,2]. */
  mi_graph_t *g = mi_graph_create("gather32");
  int64_t di[2] = {2, 2}, dy3[3] = {3, 2, 2};
  int32_t ins[2] = {tin(g, "x", MI_DTYPE_FLOAT32, 2, D34), tin(g, "i", MI_DTYPE_INT32, 2, di)};
  int32_t n, out = node1(g, "Gather", "gather", 2, ins, &n);
  gather_axis1(g, n);
  mi_graph_add_output(g, out);
  mi_array_t *arrs[2] = {arr_f32(2, D34, X12), mi_array_create(MI_DTYPE_INT32, 2, di)};
  int32_t iv[4] = {3, -4, 1, 1};
  memcpy(arrs[1]->data, iv, sizeof iv);
  float w3[12];
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 4; j++) w3[r * 4 + j] = X12[r * 4 + (iv[j] < 0 ? iv[j] + 4 : iv[j])];
  mi_error_t err;
  CHECK(mi_ref_run(g, (const mi_array_t *const *)arrs, 2, &y, 1, &err) == MI_OK, "%s",
        err.message);
  expect_f32("Gather int32 axis 1", y, 3, dy3, w3, 0);
  mi_array_destroy(y);
  mi_array_destroy(arrs[0]);
  mi_array_destroy(arrs[1]);
  mi_graph_destroy(g);
}

static void unsq_attr(mi_graph_t *g, int32_t n) {
  int64_t axes[2] = {0, -1};
  mi_node_set_ints(g, n, "axes", 2, axes);
}

static void test_misc(void) {
  /* Transpose default perm: y[j][i] = x[i][j]. */
  int64_t d43[2] = {4, 3};
  float t[12];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) t[j * 3 + i] = X12[i * 4 + j];
  mi_array_t *y = run_x("Transpose", 13, 0, NULL, NULL, NULL);
  expect_f32("Transpose", y, 2, d43, t, 0);
  mi_array_destroy(y);

  /* Unsqueeze: axes attribute at opset 11, input at opset 13; both give [1,3,4,1]. */
  int64_t d1341[4] = {1, 3, 4, 1}, axes[2] = {0, -1}, cnt = 2;
  const int64_t *k[1] = {axes};
  y = run_x("Unsqueeze", 11, 0, NULL, NULL, unsq_attr);
  expect_f32("Unsqueeze opset 11", y, 4, d1341, X12, 0);
  mi_array_destroy(y);
  y = run_x("Unsqueeze", 13, 1, &cnt, k, NULL);
  expect_f32("Unsqueeze opset 13", y, 4, d1341, X12, 0);
  mi_array_destroy(y);

  /* Shape -> Cast(float) -> Concat with itself along 0, and Shape with start. */
  mi_graph_t *g = mi_graph_create("chain");
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 2, D34), n;
  int32_t s = node1(g, "Shape", "shape", 1, &x, NULL);
  int32_t s1 = node1(g, "Shape", "shape1", 1, &x, &n);
  mi_node_set_int(g, n, "start", -1);
  int32_t cat_in[2] = {s, s1};
  int32_t cat = node1(g, "Concat", "cat", 2, cat_in, &n);
  mi_node_set_int(g, n, "axis", 0);
  int32_t f = node1(g, "Cast", "cast", 1, &cat, &n);
  mi_node_set_int(g, n, "to", 1);
  mi_graph_add_output(g, f);
  mi_array_t *in = arr_f32(2, D34, X12);
  mi_error_t err;
  int64_t d3 = 3;
  float want[3] = {3, 4, 4};
  CHECK(run1(g, 1, &in, &y, &err) == MI_OK, "%s", err.message);
  expect_f32("Shape/Concat/Cast", y, 1, &d3, want, 0);
  mi_array_destroy(y);
  mi_array_destroy(in);
  mi_graph_destroy(g);

  /* Cast float -> int64 truncates toward zero. */
  g = mi_graph_create("cast");
  x = tin(g, "x", MI_DTYPE_FLOAT32, 1, &d3);
  f = node1(g, "Cast", "cast", 1, &x, &n);
  mi_node_set_int(g, n, "to", 7);
  mi_graph_add_output(g, f);
  float cv[3] = {-1.7f, 2.9f, 0.2f};
  int64_t ci[3] = {-1, 2, 0};
  in = arr_f32(1, &d3, cv);
  CHECK(run1(g, 1, &in, &y, &err) == MI_OK, "%s", err.message);
  expect_i64("Cast to int64", y, 1, &d3, ci);
  mi_array_destroy(y);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_reshape),
    TU_CASE(test_slice),
    TU_CASE(test_slice_opset9),
    TU_CASE(test_gather),
    TU_CASE(test_misc),
};

TU_MAIN(NULL, NULL)
