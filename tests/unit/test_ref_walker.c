/* test_ref_walker.c - the reference walker: errors, dynamic shapes, multi-use values, outputs. */
#include "test_ref_common.h"

static void test_unsupported(void) {
  int64_t d = 2;
  mi_graph_t *g = mi_graph_create("bad");
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 1, &d);
  mi_graph_add_output(g, node1(g, "FooBar", "my_weird_node", 1, &x, NULL));
  mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 1, &d), *out = (mi_array_t *)1;
  mi_error_t err;
  CHECK(run1(g, 1, &in, &out, &err) == MI_ERR_UNSUPPORTED, "unknown op accepted");
  CHECK(out == NULL, "output not NULL after failure");
  CHECK(strstr(err.message, "my_weird_node") && strstr(err.message, "FooBar") &&
            strstr(err.message, "opset 13"),
        "message: %s", err.message);
  CHECK(!mi_ref_supports("FooBar", 13) && mi_ref_supports("Conv", 13) &&
            mi_ref_supports("Resize", 11),
        "mi_ref_supports");
  /* Wrong number of inputs, wrong declared shape. */
  CHECK(mi_ref_run(g, NULL, 0, &out, 1, &err) == MI_ERR_INVALID_ARGUMENT, "missing input");
  mi_array_t *wrong = mi_array_create(MI_DTYPE_FLOAT32, 1, (int64_t[]){3});
  CHECK(run1(g, 1, &wrong, &out, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "'x'"),
        "wrong shape: %s", err.message);
  mi_array_destroy(wrong);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

/* x[-1,3] -> r = Relu(x); s = r + r; outputs s and r (r also feeds s): run at two batch sizes. */
static void test_dynamic_and_reuse(void) {
  int64_t dd[2] = {MI_DIM_DYNAMIC, 3};
  mi_graph_t *g = mi_graph_create("dyn");
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 2, dd);
  int32_t r = node1(g, "Relu", "relu", 1, &x, NULL);
  int32_t add_in[2] = {r, r};
  int32_t s = node1(g, "Add", "add", 2, add_in, NULL);
  int32_t neg = node1(g, "Neg", "unused_branch", 1, &x, NULL); /* produced, never read */
  (void)neg;
  mi_graph_add_output(g, s);
  mi_graph_add_output(g, r);
  for (int64_t batch = 1; batch <= 4; batch += 3) {
    int64_t d[2] = {batch, 3};
    mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 2, d), *outs[2] = {NULL, NULL};
    mi_array_fill_random(in, (uint64_t)batch);
    mi_error_t err;
    CHECK(mi_ref_run(g, (const mi_array_t *const *)&in, 1, outs, 2, &err) == MI_OK, "%s",
          err.message);
    float want_s[12], want_r[12];
    for (int64_t i = 0; i < batch * 3; i++) {
      float v = ((float *)in->data)[i];
      want_r[i] = v > 0 ? v : 0;
      want_s[i] = 2 * want_r[i];
    }
    expect_f32("dynamic Add", outs[0], 2, d, want_s, 0);
    expect_f32("dynamic Relu (also consumed)", outs[1], 2, d, want_r, 0);
    mi_array_destroy(outs[0]);
    mi_array_destroy(outs[1]);
    mi_array_destroy(in);
  }
  mi_graph_destroy(g);
}

/* Dropout at inference is the identity, and its optional mask output is all true. */
static void test_dropout_mask(void) {
  int64_t d = 3;
  mi_graph_t *g = mi_graph_create("drop");
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 1, &d);
  int32_t outs_t[2] = {tval(g, "y"), tval(g, "mask")};
  mi_graph_add_node(g, "Dropout", "drop", 1, &x, 2, outs_t);
  mi_graph_add_output(g, outs_t[0]);
  mi_graph_add_output(g, outs_t[1]);
  float v[3] = {1, -2, 3};
  mi_array_t *in = arr_f32(1, &d, v), *outs[2] = {NULL, NULL};
  mi_error_t err;
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&in, 1, outs, 2, &err) == MI_OK, "%s",
        err.message);
  expect_f32("Dropout", outs[0], 1, &d, v, 0);
  CHECK(outs[1] && outs[1]->dtype == MI_DTYPE_BOOL && ((uint8_t *)outs[1]->data)[2] == 1,
        "Dropout mask");
  mi_array_destroy(outs[0]);
  mi_array_destroy(outs[1]);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_unsupported),
    TU_CASE(test_dynamic_and_reuse),
    TU_CASE(test_dropout_mask),
};

TU_MAIN(NULL, NULL)
