/* test_blis_gru.c - GRU (linear_before_reset 0 and 1) and RNN on blis-cpu (forward, reverse,
 * bidirectional; layout 0 and 1; with and without bias and initial_h; batch 1 and 3; hidden sizes
 * across the packed blocks' edges) through a session with host fallback off, Y and Y_h against the
 * reference interpreter, on each SIMD level (MI_BLIS_MAX_SIMD caps it); and the refusals (clip,
 * sequence_lens, Softsign) come back as MI_ERR_UNSUPPORTED naming the node, so the host runs them;
 * Relu and named activations run (what PyTorch's RNN export writes). */
#include <stdlib.h>

#include "test_util.h"

#include "metainfer/mi_graph.h"

static float rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

static int32_t const_f32(mi_graph_t *g, const char *name, int rank, const int64_t *dims,
                         uint64_t seed, float scale) {
  static float v[2 * 3 * 150 * 150];
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  REQUIRE(n <= (int64_t)(sizeof v / sizeof v[0]));
  for (int64_t i = 0; i < n; i++) v[i] = scale * rnd(&seed);
  return mi_graph_add_const_f32(g, name, rank, dims, v);
}

typedef struct gru_case {
  const char *op, *dir;
  int64_t S, N, I, H;
  int lbr, layout, bias, init, clip, seqlens;
  const char *acts; /* `activations` as the importer keeps it (joined by ','), or NULL */
  int w_input;      /* W a graph input, not a constant */
} gru_case_t;

/* Y, Y_h = GRU/RNN(X, W, R, [B], [sequence_lens], [h0]); X and h0 are graph inputs. */
static mi_graph_t *gru_graph(const gru_case_t *c) {
  int64_t D = strcmp(c->dir, "bidirectional") == 0 ? 2 : 1, G = strcmp(c->op, "GRU") == 0 ? 3 * c->H : c->H;
  int64_t dx[3] = {c->layout ? c->N : c->S, c->layout ? c->S : c->N, c->I}, dw[3] = {D, G, c->I};
  int64_t dr[3] = {D, G, c->H}, db[2] = {D, 2 * G}, dh[3] = {c->layout ? c->N : D, c->layout ? D : c->N, c->H};
  int64_t ds[1] = {c->N};
  mi_graph_t *g = mi_graph_create("gru");
  int32_t in[6] = {-1, -1, -1, -1, -1, -1}, out[2], node, nin = 3;
  REQUIRE(g);
  g->opset = 14;
  in[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 3, dx);
  mi_graph_add_input(g, in[0]);
  if (c->w_input) {
    in[1] = mi_graph_add_tensor(g, "w", MI_DTYPE_FLOAT32, 3, dw);
    mi_graph_add_input(g, in[1]);
  } else
    in[1] = const_f32(g, "w", 3, dw, 11, 0.5f);
  in[2] = const_f32(g, "r", 3, dr, 12, 0.5f);
  if (c->bias) in[3] = const_f32(g, "b", 2, db, 13, 0.5f), nin = 4;
  if (c->seqlens) {
    int32_t v[8];
    for (int64_t i = 0; i < c->N; i++) v[i] = (int32_t)c->S;
    in[4] = mi_graph_add_tensor(g, "seq", MI_DTYPE_INT32, 1, ds);
    mi_graph_set_data(g, in[4], v, sizeof(int32_t) * (size_t)c->N);
    nin = 5;
  }
  if (c->init) {
    in[5] = mi_graph_add_tensor(g, "h0", MI_DTYPE_FLOAT32, 3, dh);
    mi_graph_add_input(g, in[5]);
    nin = 6;
  }
  out[0] = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  out[1] = mi_graph_add_tensor(g, "yh", MI_DTYPE_UNDEFINED, -1, NULL);
  node = mi_graph_add_node(g, c->op, "rnn_node", nin, in, 2, out);
  mi_node_set_int(g, node, "hidden_size", c->H);
  mi_node_set_string(g, node, "direction", c->dir);
  if (c->lbr) mi_node_set_int(g, node, "linear_before_reset", 1);
  if (c->layout) mi_node_set_int(g, node, "layout", 1);
  if (c->clip) mi_node_set_float(g, node, "clip", 3.0f);
  if (c->acts) mi_node_set_string(g, node, "activations", c->acts);
  for (int i = 0; i < 2; i++) mi_graph_add_output(g, out[i]);
  return g;
}

/* MI_OK and the worst rel L2 over the two outputs, or the session's status. */
static int32_t run_case(mi_plugin_t *p, const gru_case_t *c, double *worst, mi_error_t *err) {
  mi_graph_t *g = gru_graph(c);
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in[3] = {0}, *got[2] = {0}, *ref[2] = {0};
  int32_t rc = mi_graph_infer_shapes(g, err);
  *worst = INFINITY;
  for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    in[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
    REQUIRE(in[i]);
    mi_array_fill_random(in[i], 31 + (uint64_t)i);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0;
  if (rc == MI_OK) rc = mi_session_create(g, p, 0, &o, &s, err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)in, g->input_count, got, 2, err);
  if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)in, g->input_count, ref, 2, err);
  if (rc == MI_OK) {
    *worst = 0;
    for (int i = 0; i < 2; i++) {
      double e = got[i] && ref[i] ? tu_rel_l2_arrays(got[i], ref[i]) : INFINITY;
      *worst = e > *worst ? e : *worst;
    }
  }
  mi_session_destroy(s);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
  for (int i = 0; i < 2; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(ref[i]);
  }
  mi_graph_destroy(g);
  return rc;
}

static const gru_case_t cases[] = {
    {"GRU", "forward", 5, 1, 7, 16, 0, 0, 1, 1, 0, 0, NULL, 0},
    {"GRU", "forward", 5, 1, 7, 16, 1, 0, 1, 1, 0, 0, NULL, 0},
    {"GRU", "forward", 1, 1, 3, 64, 1, 0, 1, 0, 0, 0, NULL, 0},
    {"GRU", "reverse", 4, 3, 5, 9, 0, 0, 0, 1, 0, 0, NULL, 0},
    {"GRU", "reverse", 4, 3, 5, 9, 1, 1, 1, 1, 0, 0, NULL, 0},
    {"GRU", "bidirectional", 6, 2, 8, 24, 1, 0, 1, 1, 0, 0, NULL, 0},
    {"GRU", "bidirectional", 6, 2, 8, 24, 0, 1, 1, 1, 0, 0, NULL, 0},
    {"GRU", "bidirectional", 3, 1, 24, 5, 1, 1, 0, 0, 0, 0, NULL, 0},
    {"GRU", "forward", 4, 1, 6, 150, 0, 0, 1, 1, 0, 0, NULL, 0}, /* z|r 304 wide: blocks 128, 128, 48 */
    {"GRU", "bidirectional", 3, 3, 4, 70, 1, 1, 1, 1, 0, 0, NULL, 0},
    {"RNN", "forward", 5, 1, 7, 16, 0, 0, 1, 1, 0, 0, NULL, 0},
    {"RNN", "reverse", 4, 3, 5, 9, 0, 1, 0, 1, 0, 0, NULL, 0},
    {"RNN", "bidirectional", 6, 2, 8, 130, 0, 0, 1, 1, 0, 0, NULL, 0},
    {"RNN", "bidirectional", 3, 2, 8, 33, 0, 1, 1, 0, 0, 0, NULL, 0},
    {"RNN", "bidirectional", 5, 2, 8, 40, 0, 0, 1, 1, 0, 0, "relu", 0},
    {"RNN", "bidirectional", 5, 1, 8, 20, 0, 1, 1, 1, 0, 0, "Relu,Sigmoid", 0},
    {"GRU", "bidirectional", 4, 2, 6, 24, 1, 0, 1, 1, 0, 0, "Sigmoid,Tanh,Sigmoid,Relu", 0},
    {"GRU", "bidirectional", 4, 2, 6, 24, 0, 1, 1, 1, 0, 0, NULL, 1},
    {"RNN", "reverse", 4, 1, 6, 20, 0, 0, 1, 1, 0, 0, NULL, 1},
};
static const gru_case_t refused[] = {
    {"GRU", "forward", 3, 1, 4, 8, 0, 0, 1, 1, 1, 0, NULL, 0},       /* clip */
    {"GRU", "forward", 3, 2, 4, 8, 1, 0, 1, 1, 0, 1, NULL, 0},       /* sequence_lens */
    {"RNN", "forward", 3, 2, 4, 8, 0, 0, 1, 1, 0, 1, NULL, 0},       /* sequence_lens */
    {"RNN", "forward", 3, 2, 4, 8, 0, 0, 1, 1, 0, 0, "Softsign", 0}, /* activation */
};

static void all_blis_gru(void) {
  static const char *caps[3] = {NULL, "avx2", "c"};
  for (int lv = 0; lv < 3; lv++) {
    mi_registry_t *reg;
    mi_plugin_t *p = NULL;
    uint32_t dev = 0;
    mi_error_t err = {0};
    if (caps[lv]) setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    else
      unsetenv("MI_BLIS_MAX_SIMD");
    reg = mi_registry_create();
    REQUIRE(reg && tu_scan_plugins(reg, &err) == MI_OK);
    if (mi_registry_device(reg, "blis-cpu:0", &p, &dev, &err) != MI_OK) {
      mi_registry_destroy(reg);
      TU_SKIP("blis-cpu not built: %s", err.message);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      const gru_case_t *c = &cases[i];
      double e;
      int32_t rc = run_case(p, c, &e, &err);
      CHECK(rc == MI_OK && e <= 1e-5,
            "simd cap %s: %s %s S=%lld N=%lld I=%lld H=%lld lbr %d layout %d bias %d init %d: "
            "rc %d (%s), rel L2 %g",
            caps[lv] ? caps[lv] : "none", c->op, c->dir, (long long)c->S, (long long)c->N,
            (long long)c->I, (long long)c->H, c->lbr, c->layout, c->bias, c->init, (int)rc,
            rc ? err.message : "", e);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
      double e;
      int32_t rc = run_case(p, &refused[i], &e, &err);
      CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "blis-cpu") && strstr(err.message, "'rnn_node'") &&
                strstr(err.message, refused[i].clip || refused[i].acts ? "clip" : "sequence_lens") &&
                !strchr(err.message, '\n'),
            "refusal %zu: rc %d: %s", i, (int)rc, err.message);
    }
    mi_registry_destroy(reg);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_blis_gru),
};

TU_MAIN(NULL, NULL)
