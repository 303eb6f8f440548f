/* test_exec_dqlstm.c - com.microsoft DynamicQuantizeLSTM in ONNX Runtime's arithmetic (X and the
 * hidden state quantized to UINT8 at run time, ref_dqlstm.c) against an LSTM on the float weights
 * its INT8 ones stand for (W [D, I, 4H] transposed to [D, 4H, I], (q - z) * s with a scale per
 * direction for W and per gate column for R, worked out here independently): X lies on the grid
 * of its codes (scale 1/16, zero point 128) and the first step starts from a zero hidden state, so
 * the first step's outputs are the float LSTM's to float rounding; later steps read a quantized
 * hidden state and differ by that rounding, bounded below and above. Inferred shapes equal the
 * run's; a model written and loaded back keeps the op with the same values, also on blis-cpu (the
 * host runs it); bad weight shapes and zero point types are refused in one line. */
#include <math.h>

#include "test_exec_util.h"
#include "test_ref_common.h"

#define S 3
#define N 1
#define I 2
#define H 2

static int8_t g_wq[I * 4 * H], g_rq[H * 4 * H];
static float g_rs[4 * H], g_b[8 * H];
static const float k_ws = 0.02f;
static const int8_t k_wz = 3;

static void fill(void) {
  for (int i = 0; i < I * 4 * H; i++) g_wq[i] = (int8_t)((i * 37) % 61 - 30);
  for (int i = 0; i < H * 4 * H; i++) g_rq[i] = (int8_t)((i * 23) % 53 - 26);
  for (int j = 0; j < 4 * H; j++) g_rs[j] = 0.01f + 0.005f * (float)j;
  for (int j = 0; j < 8 * H; j++) g_b[j] = 0.05f * (float)(j % 5) - 0.1f;
}

/* DynamicQuantizeLSTM(X, W, R, B, "", "", "", "", W_scale [1], W_zp [1], R_scale [1, 8], R_zp [1, 8]). */
static mi_graph_t *dq_graph(int bad) {
  mi_graph_t *g = mi_graph_create("dqlstm");
  int64_t xd[3] = {S, N, I}, wd[3] = {1, I, 4 * H}, rd[3] = {1, H, 4 * H}, bd[2] = {1, 8 * H}, one[1] = {1},
          rs[2] = {1, 4 * H};
  int8_t rz[4 * H];
  for (int j = 0; j < 4 * H; j++) rz[j] = (int8_t)(j % 3 - 1);
  if (bad == 1) wd[1] = I + 1; /* W's input_size is not X's */
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 3, xd);
  int32_t w = mi_graph_add_tensor(g, "w", MI_DTYPE_INT8, 3, wd), r = mi_graph_add_tensor(g, "r", MI_DTYPE_INT8, 3, rd);
  int8_t wpad[(I + 1) * 4 * H] = {0};
  memcpy(wpad, g_wq, sizeof g_wq);
  mi_graph_set_data(g, w, wpad, (size_t)(wd[1] * 4 * H));
  mi_graph_set_data(g, r, g_rq, sizeof g_rq);
  int32_t b = mi_graph_add_const_f32(g, "b", 2, bd, g_b), ws = mi_graph_add_const_f32(g, "ws", 1, one, &k_ws);
  int32_t wz = mi_graph_add_tensor(g, "wz", bad == 2 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8, 1, one);
  mi_graph_set_data(g, wz, &k_wz, 1);
  int32_t rsc = mi_graph_add_const_f32(g, "rs", 2, rs, g_rs), rzt = mi_graph_add_tensor(g, "rz", MI_DTYPE_INT8, 2, rs);
  mi_graph_set_data(g, rzt, rz, sizeof rz);
  int32_t ins[12] = {x, w, r, b, -1, -1, -1, -1, ws, wz, rsc, rzt};
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL), yh = mi_graph_add_tensor(g, "yh", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t outs[2] = {y, yh};
  int32_t n = mi_graph_add_node(g, "DynamicQuantizeLSTM", "lstm", 12, ins, 2, outs);
  free(g->nodes[n].domain);
  g->nodes[n].domain = strdup("com.microsoft");
  mi_node_set_int(g, n, "hidden_size", H);
  mi_graph_add_output(g, y);
  mi_graph_add_output(g, yh);
  g->opset = 14;
  return g;
}

/* The float LSTM: W[0][j][i] = (wq[i][j] - 3) * 0.02, R[0][j][h] = (rq[h][j] - rz[j]) * rs[j]. */
static mi_graph_t *float_graph(void) {
  mi_graph_t *g = mi_graph_create("lstm");
  int64_t xd[3] = {S, N, I}, wd[3] = {1, 4 * H, I}, rd[3] = {1, 4 * H, H}, bd[2] = {1, 8 * H};
  float wf[4 * H * I], rf[4 * H * H];
  for (int i = 0; i < I; i++)
    for (int j = 0; j < 4 * H; j++) wf[j * I + i] = (float)(((double)g_wq[i * 4 * H + j] - 3.0) * (double)k_ws);
  for (int h = 0; h < H; h++)
    for (int j = 0; j < 4 * H; j++)
      rf[j * H + h] = (float)(((double)g_rq[h * 4 * H + j] - (double)(j % 3 - 1)) * (double)g_rs[j]);
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 3, xd);
  int32_t ins[4] = {x, mi_graph_add_const_f32(g, "w", 3, wd, wf), mi_graph_add_const_f32(g, "r", 3, rd, rf),
                    mi_graph_add_const_f32(g, "b", 2, bd, g_b)};
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL), yh = mi_graph_add_tensor(g, "yh", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t outs[2] = {y, yh};
  int32_t n = mi_graph_add_node(g, "LSTM", "lstm", 4, ins, 2, outs);
  mi_node_set_int(g, n, "hidden_size", H);
  mi_graph_add_output(g, y);
  mi_graph_add_output(g, yh);
  g->opset = 14;
  return g;
}

static void run_ref(mi_graph_t *g, mi_array_t *x, mi_array_t **outs) {
  mi_error_t err = {0};
  CHECK(mi_graph_toposort(g, &err) == MI_OK && mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&x, 1, outs, 2, &err) == MI_OK, "run: %s", err.message);
  for (int k = 0; k < 2 && outs[k]; k++) {
    const mi_tensor_t *t = &g->tensors[g->outputs[k]];
    CHECK(same_shape(outs[k], t->rank, t->dims), "output %d: inferred shape is the run's", k);
  }
}

/* Relative L2 of the first `n` values of a against b's. */
static double rel_first(const mi_array_t *a, const mi_array_t *b, int64_t n) {
  const float *x = a->data, *y = b->data;
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; i++) d += ((double)x[i] - y[i]) * ((double)x[i] - y[i]), r += (double)y[i] * y[i];
  return sqrt(d / (r > 0 ? r : 1));
}

static void same_values(void) {
  int64_t xd[3] = {S, N, I};
  /* on the code grid: the range [-8, 7.9375] gives scale 1/16 and zero point 128 exactly */
  float xv[S * N * I] = {-8.f, 7.9375f, 0.5f, -1.f, 0.25f, 0.75f};
  mi_array_t *x = arr_f32(3, xd, xv), *a[2] = {0}, *b[2] = {0}, *c[2] = {0};
  mi_graph_t *dq, *fl = float_graph(), *back = NULL;
  mi_error_t err = {0};
  char path[] = "/tmp/mi_test_dqlstm_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "temp file");
  close(fd);
  fill();
  mi_graph_destroy(fl);
  fl = float_graph();
  dq = dq_graph(0);
  run_ref(dq, x, a);
  run_ref(fl, x, b);
  if (a[0] && b[0]) {
    double first = rel_first(a[0], b[0], N * H), all = tu_rel_l2_arrays(a[0], b[0]);
    CHECK(first < 1e-6, "step 0: %.3e from the dequantized LSTM's values (X on its code grid, h0 = 0)", first);
    CHECK(all > 1e-6 && all < 5e-2, "all steps: %.3e from the dequantized LSTM's (the hidden state's 8-bit rounding)", all);
  }
  CHECK(a[1] && b[1] && tu_rel_l2_arrays(a[1], b[1]) < 5e-2, "Y_h near the dequantized LSTM's");
  CHECK(mi_onnx_save(dq, path, &err) == MI_OK, "save: %s", err.message);
  CHECK(mi_onnx_load(path, &back, &err) == MI_OK, "load: %s", err.message);
  if (back) {
    CHECK(back->node_count == 1 && !strcmp(back->nodes[0].op_type, "DynamicQuantizeLSTM") &&
              !strcmp(back->nodes[0].name, "lstm"),
          "loaded as the DynamicQuantizeLSTM");
    run_ref(back, x, c);
    CHECK(c[0] && a[0] && tu_rel_l2_arrays(c[0], a[0]) == 0.0, "the loaded model gives the same values");
    mi_registry_t *reg = open_plugins();
    mi_plugin_t *p = mi_registry_find(reg, "blis-cpu");
    if (p) {
      mi_array_t *got[4] = {0};
      mi_session_t *s = session(back, p);
      run(s, back, x, got);
      double d = got[0] && a[0] ? tu_rel_l2_arrays(got[0], a[0]) : 1.0;
      CHECK(d == 0.0, "blis-cpu session: rel L2 %.3e from the reference", d);
      for (int k = 0; k < 4; k++) mi_array_destroy(got[k]);
      mi_session_destroy(s);
    }
    mi_registry_destroy(reg);
  }
  unlink(path);
  for (int k = 0; k < 2; k++) mi_array_destroy(a[k]), mi_array_destroy(b[k]), mi_array_destroy(c[k]);
  mi_array_destroy(x);
  mi_graph_destroy(dq);
  mi_graph_destroy(fl);
  mi_graph_destroy(back);
}

static void refused(void) {
  for (int bad = 1; bad <= 2; bad++) {
    mi_graph_t *g = dq_graph(bad);
    mi_error_t err = {0};
    CHECK(mi_graph_toposort(g, &err) == MI_OK, "sort");
    CHECK(mi_graph_infer_shapes(g, &err) != MI_OK && strstr(err.message, "'lstm'") && strstr(err.message, "W") &&
              !strchr(err.message, '\n'),
          "bad %d refused naming the node: %s", bad, err.message);
    mi_graph_destroy(g);
  }
}

static void setup(void) { fill(); }
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(same_values), TU_CASE(refused)};

TU_MAIN(setup, teardown)
