/* test_ref_gru.c - the reference GRU and RNN against values worked out by hand (a one-step GRU
 * with both linear_before_reset values; two steps bidirectional and reverse on a batch of two in
 * layouts 0 and 1; a one-step RNN, with Relu too; a shorter sequence_lens), shape inference agreeing with the
 * run, LSTM's layout 1 (shapes, and values equal to layout 0's on transposed inputs), and
 * refusals as one line naming the node. */
#include <math.h>
#include <unistd.h>

#include "test_ref_common.h"

/* Direction 0's and direction 1's weights (gate order z, r, h; B = [Wb, Rb]). */
static const float W0[3] = {0.5f, -1.0f, 2.0f}, R0[3] = {0.3f, 0.7f, -0.4f};
static const float B0[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
static const float W1[3] = {-0.3f, 0.9f, 1.1f}, R1[3] = {0.5f, -0.6f, 0.8f};
static const float B1[6] = {0.05f, -0.1f, 0.2f, 0.0f, 0.3f, -0.2f};

typedef struct gcase {
  const char *op, *dir;
  int64_t S, N, layout, lbr;
  const float *x, *h0; /* in the layout's order */
  const int32_t *lens; /* NULL: no sequence_lens */
  const char *acts;    /* `activations` as the importer keeps it (joined by ','), or NULL */
} gcase_t;

/* One GRU/RNN node (hidden 1, input 1) named "rnn_node"; X and h0 graph inputs; Y and Y_h. */
static mi_graph_t *build(const gcase_t *c, int32_t *node) {
  int64_t D = strcmp(c->dir, "bidirectional") == 0 ? 2 : 1, G = strcmp(c->op, "GRU") == 0 ? 3 : 1;
  int64_t dx[3] = {c->layout ? c->N : c->S, c->layout ? c->S : c->N, 1};
  int64_t dh[3] = {c->layout ? c->N : D, c->layout ? D : c->N, 1}, dw[3] = {D, G, 1}, db[2] = {D, 2 * G};
  int64_t dl[1] = {c->N};
  float w[6], r[6], b[12];
  int rev = strcmp(c->dir, "reverse") == 0;
  for (int64_t d = 0; d < D; d++) { /* reverse alone takes direction 1's weights */
    int one = rev || d == 1;
    for (int64_t j = 0; j < G; j++) {
      w[d * G + j] = G == 1 ? 0.5f : (one ? W1 : W0)[j];
      r[d * G + j] = G == 1 ? 0.3f : (one ? R1 : R0)[j];
      b[d * 2 * G + j] = G == 1 ? 0.1f : (one ? B1 : B0)[j];
      b[d * 2 * G + G + j] = G == 1 ? 0.4f : (one ? B1 : B0)[3 + j];
    }
  }
  mi_graph_t *g = mi_graph_create("rnn");
  g->opset = 14;
  int32_t in[6] = {tin(g, "x", MI_DTYPE_FLOAT32, 3, dx), mi_graph_add_const_f32(g, "W", 3, dw, w),
                   mi_graph_add_const_f32(g, "R", 3, dw, r), mi_graph_add_const_f32(g, "B", 2, db, b), -1,
                   tin(g, "h0", MI_DTYPE_FLOAT32, 3, dh)};
  if (c->lens) {
    in[4] = mi_graph_add_tensor(g, "lens", MI_DTYPE_INT32, 1, dl);
    mi_graph_set_data(g, in[4], c->lens, sizeof(int32_t) * (size_t)c->N);
  }
  int32_t outs[2] = {tval(g, "Y"), tval(g, "Yh")};
  *node = mi_graph_add_node(g, c->op, "rnn_node", 6, in, 2, outs);
  mi_node_set_int(g, *node, "hidden_size", 1);
  mi_node_set_string(g, *node, "direction", c->dir);
  if (c->layout) mi_node_set_int(g, *node, "layout", 1);
  if (c->lbr) mi_node_set_int(g, *node, "linear_before_reset", 1);
  if (c->acts) mi_node_set_string(g, *node, "activations", c->acts);
  mi_graph_add_output(g, outs[0]), mi_graph_add_output(g, outs[1]);
  return g;
}

/* Runs the case; checks Y and Y_h against want_y / want_h and the inferred shapes against the run's. */
static void check(const char *what, const gcase_t *c, const float *want_y, const float *want_h) {
  int64_t D = strcmp(c->dir, "bidirectional") == 0 ? 2 : 1;
  int64_t dx[3] = {c->layout ? c->N : c->S, c->layout ? c->S : c->N, 1};
  int64_t dh[3] = {c->layout ? c->N : D, c->layout ? D : c->N, 1};
  int64_t dy0[4] = {c->S, D, c->N, 1}, dy1[4] = {c->N, c->S, D, 1};
  int32_t node;
  mi_graph_t *g = build(c, &node);
  mi_error_t err = {0};
  mi_array_t *ins[2] = {arr_f32(3, dx, c->x), arr_f32(3, dh, c->h0)}, *out[2] = {NULL, NULL};
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "%s: infer: %s", what, err.message);
  const mi_tensor_t *ty = &g->tensors[g->outputs[0]], *th = &g->tensors[g->outputs[1]];
  CHECK(ty->rank == 4 && !memcmp(ty->dims, c->layout ? dy1 : dy0, sizeof dy0), "%s: inferred Y shape", what);
  CHECK(th->rank == 3 && !memcmp(th->dims, dh, sizeof dh), "%s: inferred Y_h shape", what);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)ins, 2, out, 2, &err) == MI_OK, "%s: run: %s", what,
        err.message);
  expect_f32(what, out[0], 4, c->layout ? dy1 : dy0, want_y, 2e-6f);
  expect_f32(what, out[1], 3, dh, want_h, 2e-6f);
  for (int k = 0; k < 2; k++) mi_array_destroy(out[k]), mi_array_destroy(ins[k]);
  mi_graph_destroy(g);
}

/* x = 0.8, h0 = 0.6: z = sig(0.5*0.8 + 0.3*0.6 + 0.1 + 0.4) = sig(1.08), r = sig(0.32);
 * lbr 0: h~ = tanh(1.6 + 0.3 + 0.6 - 0.4 * (r * 0.6)) = tanh(2.36096) = 0.98232;
 * lbr 1: h~ = tanh(1.6 + 0.3 + r * (-0.4 * 0.6 + 0.6)); h = (1 - z) * h~ + z * 0.6. */
static void test_one_step(void) {
  const float x = 0.8f, h0 = 0.6f, want[2] = {0.69693078f, 0.69403705f};
  for (int lbr = 0; lbr < 2; lbr++) {
    gcase_t c = {"GRU", "forward", 1, 1, 0, lbr, &x, &h0, NULL, NULL};
    check(lbr ? "GRU 1 step, linear_before_reset 1" : "GRU 1 step, linear_before_reset 0", &c, &want[lbr],
          &want[lbr]);
  }
  const float rnn = 0.79319910f; /* tanh(0.5*0.8 + 0.3*0.6 + 0.1 + 0.4) */
  gcase_t c = {"RNN", "forward", 1, 1, 0, 0, &x, &h0, NULL, NULL};
  check("RNN 1 step", &c, &rnn, &rnn);
  const float relu = 1.08f; /* Relu(1.08), as PyTorch's nonlinearity='relu' exports it */
  gcase_t cr = {"RNN", "forward", 1, 1, 0, 0, &x, &h0, NULL, "relu"};
  check("RNN 1 step, relu", &cr, &relu, &relu);
  gcase_t cg = {"GRU", "forward", 1, 1, 0, 1, &x, &h0, NULL, "sigmoid,Tanh"};
  check("GRU 1 step, activations named", &cg, &want[1], &want[1]);
}

/* Two steps, batch 2: X[n][t] = {{0.8, -0.5}, {0.3, 1.2}}, h0[d][n] = {{0.6, -0.2}, {0.1, 0.4}};
 * direction 1 runs t = 1, 0 with W1/R1/B1. Expected values from the equations above, per step. */
static void test_bidirectional_layouts(void) {
  static const float x0[4] = {0.8f, 0.3f, -0.5f, 1.2f}, x1[4] = {0.8f, -0.5f, 0.3f, 1.2f};
  static const float h00[4] = {0.6f, -0.2f, 0.1f, 0.4f}, h01[4] = {0.6f, 0.1f, -0.2f, 0.4f};
  static const float y0[2][8] = {
      {0.69693078f, 0.19692931f, 0.30724540f, 0.61648815f, 0.30191401f, 0.38803826f, -0.15162756f, 0.67156412f},
      {0.69403705f, 0.17715366f, 0.34499034f, 0.64696389f, 0.26877852f, 0.37316226f, -0.11042272f, 0.67584800f}};
  static const float y1[2][8] = {
      {0.69693078f, 0.30724540f, 0.30191401f, -0.15162756f, 0.19692931f, 0.61648815f, 0.38803826f, 0.67156412f},
      {0.69403705f, 0.34499034f, 0.26877852f, -0.11042272f, 0.17715366f, 0.64696389f, 0.37316226f, 0.67584800f}};
  static const float h0w[2][4] = {{0.30191401f, 0.38803826f, 0.30724540f, 0.61648815f},
                                  {0.26877852f, 0.37316226f, 0.34499034f, 0.64696389f}};
  for (int lbr = 0; lbr < 2; lbr++) {
    const float h1w[4] = {h0w[lbr][0], h0w[lbr][2], h0w[lbr][1], h0w[lbr][3]};
    gcase_t a = {"GRU", "bidirectional", 2, 2, 0, lbr, x0, h00, NULL, NULL};
    gcase_t b = {"GRU", "bidirectional", 2, 2, 1, lbr, x1, h01, NULL, NULL};
    check(lbr ? "bidirectional layout 0 lbr 1" : "bidirectional layout 0 lbr 0", &a, y0[lbr], h0w[lbr]);
    check(lbr ? "bidirectional layout 1 lbr 1" : "bidirectional layout 1 lbr 0", &b, y1[lbr], h1w);
    /* reverse alone: direction 1's values; Y_h is the value at t = 0 */
    const float yr[4] = {y0[lbr][2], y0[lbr][3], y0[lbr][6], y0[lbr][7]}, hr[2] = {y0[lbr][2], y0[lbr][3]};
    gcase_t r = {"GRU", "reverse", 2, 2, 0, lbr, x0, h00 + 2, NULL, NULL};
    check(lbr ? "reverse lbr 1" : "reverse lbr 0", &r, yr, hr);
  }
}

/* sequence_lens {1} of 2 steps: step 0 as the one-step case, Y's step 1 zero, Y_h step 0's. */
static void test_sequence_lens(void) {
  static const float x[2] = {0.8f, 5.0f}, h0 = 0.6f, y[2] = {0.69403705f, 0.0f};
  static const int32_t lens[1] = {1};
  gcase_t c = {"GRU", "forward", 2, 1, 0, 1, x, &h0, lens, NULL};
  check("sequence_lens 1 of 2", &c, y, y);
}

/* A refused attribute: one line naming the node and the op, MI_ERR_UNSUPPORTED. */
static void test_refusals(void) {
  static const float x = 0.8f, h0 = 0.6f, alpha = 1.0f;
  static const int32_t lens[1] = {3};
  int64_t dx[3] = {1, 1, 1};
  int32_t node;
  mi_error_t err = {0};
  gcase_t c = {"GRU", "forward", 1, 1, 0, 0, &x, &h0, NULL, NULL};
  mi_graph_t *g = build(&c, &node);
  mi_node_set_floats(g, node, "activation_alpha", 1, &alpha);
  mi_array_t *ins[2] = {arr_f32(3, dx, &x), arr_f32(3, dx, &h0)}, *out[2] = {NULL, NULL};
  CHECK(mi_ref_run(g, (const mi_array_t *const *)ins, 2, out, 2, &err) == MI_ERR_UNSUPPORTED, "activation_alpha refused");
  CHECK(strstr(err.message, "'rnn_node'") && strstr(err.message, "GRU") && strstr(err.message, "activation") &&
            !strchr(err.message, '\n'),
        "one line naming the node: %s", err.message);
  mi_graph_destroy(g);
  gcase_t hs = {"GRU", "forward", 1, 1, 0, 0, &x, &h0, NULL, "HardSigmoid,Tanh"};
  g = build(&hs, &node);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)ins, 2, out, 2, &err) == MI_ERR_UNSUPPORTED &&
            strstr(err.message, "'rnn_node'") && strstr(err.message, "'HardSigmoid'") && !strchr(err.message, '\n'),
        "HardSigmoid refused naming the node: %s", err.message);
  mi_graph_destroy(g);
  gcase_t l = {"GRU", "forward", 1, 1, 0, 0, &x, &h0, lens, NULL};
  g = build(&l, &node);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)ins, 2, out, 2, &err) == MI_ERR_INVALID_ARGUMENT &&
            strstr(err.message, "'rnn_node'") && strstr(err.message, "sequence_lens"),
        "a length past S refused: %s", err.message);
  mi_graph_destroy(g);
  g = build(&c, &node);
  mi_node_set_int(g, node, "layout", 2);
  CHECK(mi_graph_infer_shapes(g, &err) != MI_OK && strstr(err.message, "rnn_node") && strstr(err.message, "layout"),
        "layout 2 refused by shape inference: %s", err.message);
  mi_graph_destroy(g);
  for (int k = 0; k < 2; k++) mi_array_destroy(ins[k]);
}

/* A bidirectional LSTM (hidden 5, input 2) on X in the layout given; W, R, B and the initial
 * states fixed patterns; outputs Y, Y_h, Y_c. */
static mi_graph_t *lstm_graph(int layout, const int64_t *xd) {
  int64_t wd[3] = {2, 20, 2}, rd[3] = {2, 20, 5}, bd[2] = {2, 40};
  int64_t hd[3] = {layout ? xd[0] : 2, layout ? 2 : xd[1], 5};
  float w[80], r[200], b[80];
  for (int i = 0; i < 200; i++) r[i] = 0.05f * (float)((i * 7) % 13 - 6);
  for (int i = 0; i < 80; i++) w[i] = 0.1f * (float)((i * 5) % 11 - 5), b[i] = 0.02f * (float)(i % 9 - 4);
  mi_graph_t *g = mi_graph_create("lstm");
  g->opset = 14;
  int32_t in[7] = {tin(g, "x", MI_DTYPE_FLOAT32, 3, xd), mi_graph_add_const_f32(g, "W", 3, wd, w),
                   mi_graph_add_const_f32(g, "R", 3, rd, r), mi_graph_add_const_f32(g, "B", 2, bd, b), -1,
                   tin(g, "h0", MI_DTYPE_FLOAT32, 3, hd), tin(g, "c0", MI_DTYPE_FLOAT32, 3, hd)};
  int32_t outs[3] = {tval(g, "Y"), tval(g, "Yh"), tval(g, "Yc")};
  int32_t node = mi_graph_add_node(g, "LSTM", "lstm", 7, in, 3, outs);
  mi_node_set_int(g, node, "hidden_size", 5);
  mi_node_set_string(g, node, "direction", "bidirectional");
  mi_node_set_int(g, node, "layout", layout);
  for (int k = 0; k < 3; k++) mi_graph_add_output(g, outs[k]);
  return g;
}

/* LSTM with layout 1: X [N, S, I] gives Y [N, S, D, H] and Y_h, Y_c [N, D, H] (inferred and run),
 * the values of layout 0 on the transposed inputs, transposed. */
static void test_lstm_layout(void) {
  const int64_t N = 2, S = 3, D = 2, H = 5;
  int64_t x1d[3] = {N, S, 2}, x0d[3] = {S, N, 2}, h1d[3] = {N, D, H}, h0d[3] = {D, N, H};
  int64_t yd[4] = {N, S, D, H};
  float x1[12], x0[12], s1[20], s0[20], c1[20], c0[20];
  for (int64_t n = 0; n < N; n++)
    for (int64_t t = 0; t < S; t++)
      for (int64_t i = 0; i < 2; i++) x1[(n * S + t) * 2 + i] = x0[(t * N + n) * 2 + i] = 0.3f * (float)(n - t) + 0.2f * (float)i;
  for (int64_t n = 0; n < N; n++)
    for (int64_t d = 0; d < D; d++)
      for (int64_t j = 0; j < H; j++) {
        s1[(n * D + d) * H + j] = s0[(d * N + n) * H + j] = 0.1f * (float)(j - d) - 0.05f * (float)n;
        c1[(n * D + d) * H + j] = c0[(d * N + n) * H + j] = 0.2f * (float)(n + d) - 0.03f * (float)j;
      }
  mi_graph_t *g1 = lstm_graph(1, x1d), *g0 = lstm_graph(0, x0d);
  mi_error_t err = {0};
  CHECK(mi_graph_infer_shapes(g1, &err) == MI_OK, "infer: %s", err.message);
  const mi_tensor_t *ty = &g1->tensors[g1->outputs[0]];
  CHECK(ty->rank == 4 && !memcmp(ty->dims, yd, sizeof yd), "LSTM layout 1: inferred Y [N, S, D, H]");
  for (int k = 1; k < 3; k++)
    CHECK(g1->tensors[g1->outputs[k]].rank == 3 && !memcmp(g1->tensors[g1->outputs[k]].dims, h1d, sizeof h1d),
          "LSTM layout 1: inferred state %d [N, D, H]", k);
  mi_array_t *in1[3] = {arr_f32(3, x1d, x1), arr_f32(3, h1d, s1), arr_f32(3, h1d, c1)};
  mi_array_t *in0[3] = {arr_f32(3, x0d, x0), arr_f32(3, h0d, s0), arr_f32(3, h0d, c0)};
  mi_array_t *o1[3] = {NULL, NULL, NULL}, *o0[3] = {NULL, NULL, NULL};
  CHECK(mi_ref_run(g1, (const mi_array_t *const *)in1, 3, o1, 3, &err) == MI_OK, "layout 1 run: %s", err.message);
  CHECK(mi_ref_run(g0, (const mi_array_t *const *)in0, 3, o0, 3, &err) == MI_OK, "layout 0 run: %s", err.message);
  if (o1[0] && o0[0]) {
    float want[60], wh[2][20];
    const float *y0 = o0[0]->data;
    for (int64_t n = 0; n < N; n++)
      for (int64_t t = 0; t < S; t++)
        for (int64_t d = 0; d < D; d++)
          for (int64_t j = 0; j < H; j++) want[((n * S + t) * D + d) * H + j] = y0[((t * D + d) * N + n) * H + j];
    for (int k = 0; k < 2; k++)
      for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++)
          for (int64_t j = 0; j < H; j++)
            wh[k][(n * D + d) * H + j] = ((const float *)o0[k + 1]->data)[(d * N + n) * H + j];
    expect_f32("LSTM layout 1 Y", o1[0], 4, yd, want, 0);
    expect_f32("LSTM layout 1 Y_h", o1[1], 3, h1d, wh[0], 0);
    expect_f32("LSTM layout 1 Y_c", o1[2], 3, h1d, wh[1], 0);
  }
  for (int k = 0; k < 3; k++) {
    mi_array_destroy(in1[k]), mi_array_destroy(in0[k]);
    mi_array_destroy(o1[k]), mi_array_destroy(o0[k]);
  }
  mi_graph_destroy(g1);
  mi_graph_destroy(g0);
}

/* `activations` goes out as a STRINGS attribute (PyTorch's RNN writes ["relu"]) and comes back
 * as the joined names. */
static void test_activations_roundtrip(void) {
  static const float x = 0.8f, h0 = 0.6f;
  char dir[] = "/tmp/mi_rnn_acts_XXXXXX", path[256];
  int32_t node;
  mi_error_t err = {0};
  REQUIRE(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  gcase_t c = {"GRU", "bidirectional", 1, 1, 0, 0, &x, &h0, NULL, "Sigmoid,Tanh,sigmoid,relu"};
  mi_graph_t *g = build(&c, &node), *back = NULL;
  CHECK(mi_onnx_save(g, path, &err) == MI_OK, "save: %s", err.message);
  FILE *f = fopen(path, "rb");
  char buf[4096];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  /* AttributeProto field 9 (strings) per name, then type (field 20) STRINGS = 8 */
  static const char want[] = "\x4a\x07Sigmoid\x4a\x04Tanh\x4a\x07sigmoid\x4a\x04relu\xa0\x01\x08";
  int found = 0;
  for (size_t i = 0; i + sizeof want - 1 <= n && !found; i++) found = !memcmp(buf + i, want, sizeof want - 1);
  CHECK(found, "activations written as STRINGS with the four names");
  CHECK(mi_onnx_load(path, &back, &err) == MI_OK, "load: %s", err.message);
  const char *s = back ? mi_node_attr_string(&back->nodes[0], "activations", NULL) : NULL;
  CHECK(s && !strcmp(s, "Sigmoid,Tanh,sigmoid,relu"), "activations read back: %s", s ? s : "(none)");
  mi_graph_destroy(back);
  mi_graph_destroy(g);
  unlink(path);
  rmdir(dir);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_one_step),
    TU_CASE(test_bidirectional_layouts),
    TU_CASE(test_sequence_lens),
    TU_CASE(test_refusals),
    TU_CASE(test_lstm_layout),
    TU_CASE(test_activations_roundtrip),
};

TU_MAIN(NULL, NULL)
