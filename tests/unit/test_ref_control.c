/* test_ref_control.c - If and Loop with subgraphs that capture outer values, Pad in its three
 * modes, Size and a one-step LSTM, against values worked out by hand; shape inference agrees
 * with the interpreter, and cloning keeps subgraphs. */
#include <math.h>

#include "test_ref_common.h"

/* A subgraph computing out = OP(x) where x is captured from the enclosing graph. */
static mi_graph_t *branch(const char *name, const char *op) {
  mi_graph_t *s = mi_graph_create(name);
  int32_t x = tval(s, "x"), ins[2] = {x, x};
  mi_graph_add_capture(s, x);
  int32_t y = node1(s, op, name, strcmp(op, "Add") == 0 ? 2 : 1, ins, NULL);
  mi_graph_add_output(s, y);
  return s;
}

static void test_if(void) {
  int64_t xd[1] = {3}, none[1] = {0};
  float xv[3] = {1, -2, 3}, dbl[3] = {2, -4, 6}, neg[3] = {-1, 2, -3};
  mi_graph_t *g = mi_graph_create("if");
  mi_error_t err = {0};
  int32_t cond = tin(g, "cond", MI_DTYPE_BOOL, 0, NULL), node;
  tin(g, "x", MI_DTYPE_FLOAT32, 1, xd);
  int32_t y = node1(g, "If", "if", 1, &cond, &node);
  mi_graph_add_output(g, y);
  CHECK(mi_node_add_subgraph(g, node, "then_branch", branch("then", "Add"), &err) == MI_OK, "%s", err.message);
  CHECK(mi_node_add_subgraph(g, node, "else_branch", branch("else", "Neg"), &err) == MI_OK, "%s", err.message);
  CHECK(g->nodes[node].input_count == 2 && g->nodes[node].implicit_inputs == 1,
        "x is one implicit input (got %d inputs)", (int)g->nodes[node].input_count);
  mi_graph_t *c = mi_graph_clone(g);
  CHECK(c && mi_node_subgraph(&c->nodes[node], "else_branch"), "clone keeps subgraphs");
  CHECK(mi_graph_infer_shapes(c, &err) == MI_OK, "infer: %s", err.message);
  const mi_tensor_t *ty = &c->tensors[c->outputs[0]];
  CHECK(ty->rank == 1 && ty->dims[0] == 3 && ty->dtype == MI_DTYPE_FLOAT32, "If output [3] float");
  for (int k = 0; k < 2; k++) {
    mi_array_t *ins[2] = {mi_array_create(MI_DTYPE_BOOL, 0, none), arr_f32(1, xd, xv)}, *out = NULL;
    ((uint8_t *)ins[0]->data)[0] = (uint8_t)(k == 0);
    CHECK(run1(c, 2, ins, &out, &err) == MI_OK, "run: %s", err.message);
    expect_f32(k == 0 ? "If then" : "If else", out, 1, xd, k == 0 ? dbl : neg, 0);
    mi_array_destroy(out), mi_array_destroy(ins[0]), mi_array_destroy(ins[1]);
  }
  mi_graph_destroy(c);
  mi_graph_destroy(g);
}

/* Loop M=3 times: v += x (captured), scan output v each iteration. */
static void test_loop(void) {
  int64_t xd[1] = {2}, sd[2] = {3, 2}, m = 3;
  float xv[2] = {1, 10}, fin[2] = {4, 40}, scan[6] = {2, 20, 3, 30, 4, 40};
  mi_graph_t *g = mi_graph_create("loop"), *b = mi_graph_create("body");
  mi_error_t err = {0};
  int32_t tm = mi_graph_add_const_i64(g, "M", 1, &m), x = tin(g, "x", MI_DTYPE_FLOAT32, 1, xd);
  int32_t outs[2] = {tval(g, "v_final"), tval(g, "v_scan")}, ins[3] = {tm, -1, x};
  int32_t node = mi_graph_add_node(g, "Loop", "loop", 3, ins, 2, outs);
  mi_graph_add_output(g, outs[0]);
  mi_graph_add_output(g, outs[1]);
  int32_t it = tin(b, "iter", MI_DTYPE_INT64, 0, NULL), cin = tin(b, "cond_in", MI_DTYPE_BOOL, 0, NULL);
  int32_t v = tin(b, "v", MI_DTYPE_FLOAT32, 1, xd), bx = tval(b, "x");
  (void)it;
  mi_graph_add_capture(b, bx);
  int32_t add[2] = {v, bx};
  int32_t cout = node1(b, "Identity", "c", 1, &cin, NULL), vo = node1(b, "Add", "add", 2, add, NULL);
  int32_t so = node1(b, "Identity", "s", 1, &vo, NULL);
  mi_graph_add_output(b, cout), mi_graph_add_output(b, vo), mi_graph_add_output(b, so);
  CHECK(mi_node_add_subgraph(g, node, "body", b, &err) == MI_OK, "%s", err.message);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  CHECK(g->tensors[outs[0]].rank == 1 && g->tensors[outs[0]].dims[0] == 2, "final v is [2]");
  CHECK(g->tensors[outs[1]].rank == 2 && g->tensors[outs[1]].dims[1] == 2, "scan is [?,2]");
  mi_array_t *in = arr_f32(1, xd, xv), *out[2] = {NULL, NULL};
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&in, 1, out, 2, &err) == MI_OK, "run: %s", err.message);
  expect_f32("Loop final", out[0], 1, xd, fin, 0); /* x + 3x */
  expect_f32("Loop scan", out[1], 2, sd, scan, 0);
  mi_array_destroy(in), mi_array_destroy(out[0]), mi_array_destroy(out[1]);
  mi_graph_destroy(g);
}

/* Pad [2,3] = 1..6 by one column in front and one row after; opset 13 (pads as input). */
static void test_pad(void) {
  static const char *modes[3] = {"constant", "reflect", "edge"};
  static const float want[3][12] = {{0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0},
                                    {2, 1, 2, 3, 5, 4, 5, 6, 2, 1, 2, 3},
                                    {1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6}};
  int64_t xd[2] = {2, 3}, pd[1] = {4}, pads[4] = {0, 1, 1, 0}, yd[2] = {3, 4};
  float xv[6] = {1, 2, 3, 4, 5, 6};
  for (int m = 0; m < 3; m++) {
    mi_graph_t *g = mi_graph_create("pad");
    mi_error_t err = {0};
    int32_t in[2] = {tin(g, "x", MI_DTYPE_FLOAT32, 2, xd), mi_graph_add_const_i64(g, "p", pd[0], pads)}, node;
    mi_graph_add_output(g, node1(g, "Pad", "pad", 2, in, &node));
    mi_node_set_string(g, node, "mode", modes[m]);
    CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
    CHECK(g->tensors[g->outputs[0]].dims[0] == 3 && g->tensors[g->outputs[0]].dims[1] == 4, "Pad shape");
    mi_array_t *x = arr_f32(2, xd, xv), *y = NULL;
    CHECK(run1(g, 1, &x, &y, &err) == MI_OK, "Pad %s: %s", modes[m], err.message);
    expect_f32(modes[m], y, 2, yd, want[m], 0);
    mi_array_destroy(x), mi_array_destroy(y);
    mi_graph_destroy(g);
  }
}

static float sig(float v) { return 1.0f / (1.0f + expf(-v)); }

/* One step, one unit: gates from W = [wi, wo, wf, wc] (ONNX order i, o, f, c), biases, c0. */
static void test_lstm_size(void) {
  int64_t xd[3] = {1, 1, 1}, wd[3] = {1, 4, 1}, bd[2] = {1, 8}, hd[3] = {1, 1, 1}, one[1] = {1};
  float w[4] = {0.5f, -1.0f, 2.0f, 1.5f}, r[4] = {0}, bias[8] = {0.1f, 0.2f, 0.3f, 0.4f, 0, 0, 0, 0};
  float xv = 0.8f, c0 = 0.6f;
  float i = sig(0.4f + 0.1f), o = sig(-0.8f + 0.2f), f = sig(1.6f + 0.3f), cc = tanhf(1.2f + 0.4f);
  float cn = f * c0 + i * cc, hn = o * tanhf(cn);
  mi_graph_t *g = mi_graph_create("lstm");
  mi_error_t err = {0};
  int32_t in[7] = {tin(g, "x", MI_DTYPE_FLOAT32, 3, xd), mi_graph_add_const_f32(g, "W", 3, wd, w),
                   mi_graph_add_const_f32(g, "R", 3, wd, r), mi_graph_add_const_f32(g, "B", 2, bd, bias),
                   -1, -1, mi_graph_add_const_f32(g, "c0", 3, hd, &c0)};
  int32_t outs[3] = {tval(g, "Y"), tval(g, "Yh"), tval(g, "Yc")};
  int32_t node = mi_graph_add_node(g, "LSTM", "lstm", 7, in, 3, outs), sz, s;
  mi_node_set_int(g, node, "hidden_size", 1);
  sz = node1(g, "Size", "size", 1, &outs[0], &s);
  mi_graph_add_output(g, outs[1]), mi_graph_add_output(g, outs[2]), mi_graph_add_output(g, sz);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  CHECK(g->tensors[outs[0]].rank == 4, "Y is 4-D");
  mi_array_t *x = arr_f32(3, xd, &xv), *out[3] = {NULL, NULL, NULL};
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&x, 1, out, 3, &err) == MI_OK, "run: %s", err.message);
  expect_f32("LSTM Y_h", out[0], 3, hd, &hn, 1e-6f);
  expect_f32("LSTM Y_c", out[1], 3, hd, &cn, 1e-6f);
  int64_t n1 = 1;
  expect_i64("Size", out[2], 0, one, &n1);
  for (int k = 0; k < 3; k++) mi_array_destroy(out[k]);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_if),
    TU_CASE(test_loop),
    TU_CASE(test_pad),
    TU_CASE(test_lstm_size),
};

TU_MAIN(NULL, NULL)
