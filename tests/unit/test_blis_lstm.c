/* test_blis_lstm.c - LSTM on blis-cpu (forward, reverse, bidirectional; with and without bias and
 * initial states; batch 1 and 3; layout 0 and 1, batch first; few steps, where the input projection
 * runs as matvecs, and more; weights of exactly FP16 values, which it holds as halves) through a
 * session with host fallback off, every output (Y, Y_h, Y_c) against the reference interpreter, on
 * each SIMD level (MI_BLIS_MAX_SIMD caps it); and the refusals (peepholes, sequence_lens) come back
 * as MI_ERR_UNSUPPORTED, so the host runs them. */
#include <stdlib.h>

#include "test_util.h"

#include "metainfer/mi_graph.h"
#include "metainfer/mi_sdk.h"

static float rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* half: each value rounded to FP16 (what the fp16 precision writes). */
static int32_t const_f32(mi_graph_t *g, const char *name, int rank, const int64_t *dims,
                         uint64_t seed, float scale, int half) {
  static float v[4 * 128 * 128];
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  REQUIRE(n <= (int64_t)(sizeof v / sizeof v[0]));
  for (int64_t i = 0; i < n; i++) {
    v[i] = scale * rnd(&seed);
    if (half) v[i] = mi_sdk_half_to_float(mi_sdk_float_to_half(v[i]));
  }
  return mi_graph_add_const_f32(g, name, rank, dims, v);
}

typedef struct lstm_case {
  const char *dir;
  int64_t S, N, I, H;
  int bias, init, peep, seqlens;
  int layout; /* 1: X [N, S, I], Y [N, S, D, H], initial and final states [N, D, H] */
  int half;   /* W and R of exactly FP16 values */
} lstm_case_t;

/* Y, Y_h, Y_c = LSTM(X, W, R, [B], [""], [h0, c0], [P]); X, h0 and c0 are graph inputs. */
static mi_graph_t *lstm_graph(const lstm_case_t *c) {
  int64_t dirs = strcmp(c->dir, "bidirectional") == 0 ? 2 : 1;
  int64_t dx[3] = {c->S, c->N, c->I}, dw[3] = {dirs, 4 * c->H, c->I}, dr[3] = {dirs, 4 * c->H, c->H};
  int64_t db[2] = {dirs, 8 * c->H}, dh[3] = {dirs, c->N, c->H}, dp[2] = {dirs, 3 * c->H};
  int64_t ds[1] = {c->N};
  if (c->layout) {
    dx[0] = c->N, dx[1] = c->S;
    dh[0] = c->N, dh[1] = dirs;
  }
  mi_graph_t *g = mi_graph_create("lstm");
  int32_t in[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, out[3], node, nin = 3;
  REQUIRE(g);
  g->opset = 14;
  in[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 3, dx);
  mi_graph_add_input(g, in[0]);
  in[1] = const_f32(g, "w", 3, dw, 11, 0.5f, c->half);
  in[2] = const_f32(g, "r", 3, dr, 12, 0.5f, c->half);
  if (c->bias) in[3] = const_f32(g, "b", 2, db, 13, 0.5f, 0), nin = 4;
  if (c->seqlens) {
    int32_t sl = mi_graph_add_tensor(g, "seq", MI_DTYPE_INT32, 1, ds);
    int32_t *v = malloc(sizeof(int32_t) * (size_t)c->N);
    REQUIRE(v);
    for (int64_t i = 0; i < c->N; i++) v[i] = (int32_t)c->S;
    g->tensors[sl].data = v;
    g->tensors[sl].nbytes = sizeof(int32_t) * (size_t)c->N;
    in[4] = sl;
    nin = 5;
  }
  if (c->init) {
    in[5] = mi_graph_add_tensor(g, "h0", MI_DTYPE_FLOAT32, 3, dh);
    in[6] = mi_graph_add_tensor(g, "c0", MI_DTYPE_FLOAT32, 3, dh);
    mi_graph_add_input(g, in[5]);
    mi_graph_add_input(g, in[6]);
    nin = 7;
  }
  if (c->peep) in[7] = const_f32(g, "p", 2, dp, 14, 0.5f, 0), nin = 8;
  out[0] = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  out[1] = mi_graph_add_tensor(g, "yh", MI_DTYPE_UNDEFINED, -1, NULL);
  out[2] = mi_graph_add_tensor(g, "yc", MI_DTYPE_UNDEFINED, -1, NULL);
  node = mi_graph_add_node(g, "LSTM", "lstm", nin, in, 3, out);
  mi_node_set_int(g, node, "hidden_size", c->H);
  mi_node_set_string(g, node, "direction", c->dir);
  if (c->layout) mi_node_set_int(g, node, "layout", 1);
  for (int i = 0; i < 3; i++) mi_graph_add_output(g, out[i]);
  return g;
}

/* MI_OK and the worst rel L2 over the three outputs, or the session's status. */
static int32_t run_case(mi_plugin_t *p, const lstm_case_t *c, double *worst, mi_error_t *err) {
  mi_graph_t *g = lstm_graph(c);
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in[3] = {0}, *got[3] = {0}, *ref[3] = {0};
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
  if (rc == MI_OK)
    rc = mi_session_run(s, (const mi_array_t *const *)in, g->input_count, got, 3, err);
  if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)in, g->input_count, ref, 3, err);
  if (rc == MI_OK) {
    *worst = 0;
    for (int i = 0; i < 3; i++) {
      double e = got[i] && ref[i] ? tu_rel_l2_arrays(got[i], ref[i]) : INFINITY;
      *worst = e > *worst ? e : *worst;
    }
  }
  mi_session_destroy(s);
  for (int i = 0; i < 3; i++) {
    mi_array_destroy(in[i]);
    mi_array_destroy(got[i]);
    mi_array_destroy(ref[i]);
  }
  mi_graph_destroy(g);
  return rc;
}

static const lstm_case_t cases[] = {
    {"forward", 5, 1, 7, 16, 1, 1, 0, 0, 0, 0},
    {"forward", 1, 1, 3, 64, 1, 0, 0, 0, 0, 0},
    {"reverse", 4, 3, 5, 9, 0, 1, 0, 0, 0, 0},
    {"bidirectional", 6, 2, 8, 24, 1, 1, 0, 0, 0, 0},
    {"bidirectional", 3, 1, 24, 5, 0, 0, 0, 0, 0, 0},
    {"forward", 7, 3, 2, 33, 1, 1, 0, 0, 0, 0},
    {"forward", 5, 3, 7, 16, 1, 1, 0, 0, 1, 0},
    {"reverse", 4, 2, 5, 9, 0, 0, 0, 0, 1, 0},
    {"bidirectional", 6, 3, 8, 24, 1, 1, 0, 0, 1, 0},
    /* weights of FP16 values: held as halves; one step (Silero VAD's 64 and 128 units), a
     * bidirectional pair of steps, a longer sequence (its input projection a GEMM), 4H under a
     * vector and 4H with a tail past the 128-gate blocks */
    {"forward", 1, 1, 64, 64, 1, 1, 0, 0, 0, 1},
    {"forward", 1, 1, 128, 128, 1, 1, 0, 0, 0, 1},
    {"bidirectional", 2, 2, 8, 24, 1, 1, 0, 0, 1, 1},
    {"reverse", 9, 2, 5, 9, 0, 1, 0, 0, 0, 1},
    {"forward", 3, 1, 6, 3, 1, 0, 0, 0, 0, 1},
    {"forward", 1, 3, 7, 37, 1, 1, 0, 0, 0, 1},
};
static const lstm_case_t refused[] = {
    {"forward", 3, 1, 4, 8, 1, 1, 1, 0, 0, 0}, /* peepholes */
    {"forward", 3, 2, 4, 8, 1, 1, 0, 1, 0, 0}, /* sequence_lens */
};

static void all_blis_lstm(void) {
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
      const lstm_case_t *c = &cases[i];
      double e;
      int32_t rc = run_case(p, c, &e, &err);
      CHECK(rc == MI_OK && e <= 1e-5,
            "simd cap %s: %s S=%lld N=%lld I=%lld H=%lld bias %d init %d layout %d half %d: "
            "rc %d (%s), rel L2 %g",
            caps[lv] ? caps[lv] : "none", c->dir, (long long)c->S,
            (long long)c->N, (long long)c->I, (long long)c->H, c->bias, c->init, c->layout, c->half, (int)rc,
            rc ? err.message : "", e);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
      double e;
      int32_t rc = run_case(p, &refused[i], &e, &err);
      CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "blis-cpu") &&
                strstr(err.message, refused[i].peep ? "peephole" : "sequence_lens"),
            "refusal %zu: rc %d: %s", i, (int)rc, err.message);
    }
    mi_registry_destroy(reg);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_blis_lstm),
};

TU_MAIN(NULL, NULL)
