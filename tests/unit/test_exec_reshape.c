/* test_exec_reshape.c - a device session whose inputs change shape from run to run where only an
 * If reads them (a merged decoder's caches grow by one position per token): every run matches
 * the reference interpreter and a session prepared from scratch for its shapes, the nested
 * branch prepared again takes over the kernels whose shapes did not change (counted by
 * mi_session_kernel_reused_count), a branch the session rewrites (a fused layer norm, positions
 * folded from the input's shape) gives a fresh session's bytes at every length, a kernel whose
 * shapes stay the same while a constant it reads follows the length is prepared again (the
 * branch's unchanged steps are taken over whole), and an input a device kernel reads is still
 * refused. */
#include <math.h>
#include <stdint.h>

#include "exec/exec.h"
#include "test_util.h"

static mi_registry_t *g_reg;

/* Deterministic pseudo-random float32 values in [-a, a). */
static void fill(mi_array_t *arr, uint32_t seed, float a) {
  float *f = arr->data;
  for (int64_t i = 0; i < mi_array_numel(arr); i++) {
    seed = seed * 1664525u + 1013904223u;
    f[i] = a * ((float)(seed >> 8) / 8388608.0f - 1.0f);
  }
}

/* A branch reading captures x (its length changes), k [1, 2, 5, 5] and the outer initializer w:
 * y = Relu(x) (prepared for each length), z = Conv(k, w) (the same kernel at every length),
 * and (then only) a constant DequantizeLinear folded at create time added to z. */
static mi_graph_t *branch(const char *name, int then) {
  mi_graph_t *s = mi_graph_create(name);
  int64_t qd[1] = {3};
  uint8_t codes[3] = {10, 200, 77};
  int32_t x = mi_graph_add_tensor(s, "x", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t k = mi_graph_add_tensor(s, "k", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t w = mi_graph_add_tensor(s, "w", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t y = mi_graph_add_tensor(s, then ? "y_then" : "y_else", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t c = mi_graph_add_tensor(s, then ? "c_then" : "z_else", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t ins[3] = {k, w, -1};
  mi_graph_add_capture(s, x);
  mi_graph_add_capture(s, k);
  mi_graph_add_capture(s, w);
  mi_graph_add_node(s, "Relu", "relu", 1, &x, 1, &y);
  mi_graph_add_node(s, "Conv", "conv", 2, ins, 1, &c);
  mi_graph_add_output(s, y);
  if (then) {
    int32_t q = mi_graph_add_tensor(s, "q", MI_DTYPE_UINT8, 1, qd);
    float sc = 0.01f;
    uint8_t zp = 128;
    int32_t scale = mi_graph_add_const_f32(s, "q_scale", 0, NULL, &sc);
    int32_t zt = mi_graph_add_tensor(s, "q_zp", MI_DTYPE_UINT8, 0, NULL);
    int32_t dq = mi_graph_add_tensor(s, "q_float", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t z = mi_graph_add_tensor(s, "z_then", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t dqin[3] = {q, scale, zt}, add[2] = {c, dq};
    mi_graph_set_data(s, q, codes, sizeof codes);
    mi_graph_set_data(s, zt, &zp, 1);
    mi_graph_add_node(s, "DequantizeLinear", "dq", 3, dqin, 1, &dq);
    mi_graph_add_node(s, "Add", "add", 2, add, 1, &z);
    mi_graph_add_output(s, z);
  } else {
    mi_graph_add_output(s, c);
  }
  return s;
}

/* Adds input c (BOOL) and (o0, o1) = If(c, then_g, else_g) to g, whose other inputs are added, then
 * sorts g. */
static mi_graph_t *add_if(mi_graph_t *g, const char *o0, const char *o1, mi_graph_t *then_g, mi_graph_t *else_g) {
  mi_error_t err = {0};
  int32_t c = mi_graph_add_tensor(g, "c", MI_DTYPE_BOOL, 0, NULL);
  int32_t outs[2] = {mi_graph_add_tensor(g, o0, MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, o1, MI_DTYPE_UNDEFINED, -1, NULL)};
  int32_t node;
  mi_graph_add_input(g, c);
  node = mi_graph_add_node(g, "If", "if", 1, &c, 2, outs);
  mi_graph_add_output(g, outs[0]);
  mi_graph_add_output(g, outs[1]);
  REQUIRE(mi_node_add_subgraph(g, node, "then_branch", then_g, &err) == MI_OK);
  REQUIRE(mi_node_add_subgraph(g, node, "else_branch", else_g, &err) == MI_OK);
  REQUIRE(mi_graph_toposort(g, &err) == MI_OK);
  return g;
}

/* (y, z) = If(c, ...) over inputs x [n], k [1, 2, 5, 5], c; w an initializer. */
static mi_graph_t *decoder_like(int64_t n) {
  int64_t xd[1] = {n}, kd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3};
  float wv[54];
  mi_graph_t *g = mi_graph_create("reshape_if");
  for (int i = 0; i < 54; i++) wv[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  mi_graph_add_input(g, mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, xd));
  mi_graph_add_input(g, mi_graph_add_tensor(g, "k", MI_DTYPE_FLOAT32, 4, kd));
  REQUIRE(mi_graph_add_const_f32(g, "w", 4, wd, wv) >= 0);
  return add_if(g, "y", "z", branch("then", 1), branch("else", 0));
}

/* The then branch's nested session after the last run, or NULL. */
static const mi_session_t *then_session(const mi_session_t *s, const mi_graph_t **graph) {
  for (int32_t i = 0; i < mi_session_nested_count(s); i++) {
    const char *b = NULL;
    const mi_session_t *n = mi_session_nested(s, i, NULL, &b, graph);
    if (n && b && strcmp(b, "then") == 0) return n;
  }
  return NULL;
}

/* One length of a case: ins through the session s prepared for other shapes (got), the reference
 * on fg, the graph made for this length (ref), and a fresh session of fg (fresh; returned, for
 * drop_three). The caller compares them. */
static mi_session_t *run_three(mi_session_t *s, const mi_graph_t *fg, mi_plugin_t *p, uint32_t dev,
                               const mi_array_t *const *ins, int32_t nin, int64_t len, mi_array_t **got,
                               mi_array_t **ref, mi_array_t **fresh) {
  mi_error_t err = {0};
  mi_session_t *f = NULL;
  CHECK(mi_session_run(s, ins, nin, got, 2, &err) == MI_OK, "run at %lld: %s", (long long)len, err.message);
  CHECK(mi_ref_run(fg, ins, nin, ref, 2, &err) == MI_OK, "ref: %s", err.message);
  CHECK(mi_session_create(fg, p, dev, NULL, &f, &err) == MI_OK && mi_session_run(f, ins, nin, fresh, 2, &err) == MI_OK,
        "fresh session at %lld: %s", (long long)len, err.message);
  return f;
}

static void drop_three(mi_array_t **got, mi_array_t **ref, mi_array_t **fresh, mi_session_t *f) {
  for (int o = 0; o < 2; o++) {
    mi_array_destroy(got[o]);
    mi_array_destroy(ref[o]);
    mi_array_destroy(fresh[o]);
  }
  mi_session_destroy(f);
}

static int same_bytes(const mi_array_t *a, const mi_array_t *b) {
  return a && b && a->dtype == b->dtype && a->rank == b->rank && a->nbytes == b->nbytes &&
         memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims) == 0 &&
         memcmp(a->data, b->data, a->nbytes) == 0;
}

/* x grows 4 -> 6 -> 9, shrinks to 6 and 4, grows to 7: each run's outputs equal a fresh
 * session's for those shapes bytewise and the reference's; from the second length on the
 * branch's Conv is taken over (one kernel reused) and its Relu prepared anew. */
static void growing_capture(void) {
  const int64_t lens[6] = {4, 6, 9, 6, 4, 7};
  int64_t kd[4] = {1, 2, 5, 5};
  mi_graph_t *g = decoder_like(4);
  mi_array_t *k = mi_array_create(MI_DTYPE_FLOAT32, 4, kd), *c = mi_array_create(MI_DTYPE_BOOL, 0, NULL);
  mi_error_t err = {0};
  uint32_t dev = 0;
  mi_plugin_t *p = NULL;
  mi_session_t *s = NULL;
  REQUIRE(g && k && c);
  REQUIRE(mi_registry_device(g_reg, "blis-cpu:0", &p, &dev, &err) == MI_OK, "%s", err.message);
  fill(k, 7u, 1.0f);
  *(uint8_t *)c->data = 1;
  REQUIRE(mi_session_create(g, p, dev, NULL, &s, &err) == MI_OK, "create: %s", err.message);
  for (int r = 0; r < 6; r++) {
    int64_t xd[1] = {lens[r]};
    mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 1, xd), *got[2] = {0}, *ref[2] = {0},
               *fresh[2] = {0};
    const mi_array_t *ins[3] = {x, k, c};
    mi_graph_t *fg = decoder_like(lens[r]);
    mi_session_t *f;
    const mi_session_t *n;
    REQUIRE(x && fg);
    fill(x, 11u + (uint32_t)r, 2.0f);
    f = run_three(s, fg, p, dev, ins, 3, lens[r], got, ref, fresh);
    for (int o = 0; o < 2; o++) {
      CHECK(same_bytes(got[o], fresh[o]), "length %lld: output %d is a fresh session's",
            (long long)lens[r], o);
      CHECK(got[o] && ref[o] && got[o]->rank == ref[o]->rank && tu_rel_l2_arrays(got[o], ref[o]) < 1e-6,
            "length %lld: output %d matches the reference", (long long)lens[r], o);
    }
    CHECK(got[0] && got[0]->dims[0] == lens[r], "y has the run's length");
    n = then_session(s, NULL);
    CHECK(n != NULL, "the then branch ran in a nested session at %lld", (long long)lens[r]);
    if (n) {
      int32_t kc = mi_session_kernel_count(n), kr = mi_session_kernel_reused_count(n);
      CHECK(kc >= 2, "Relu, Conv and Add are kernels (%d)", (int)kc);
      if (r == 0)
        CHECK(kr == 0, "prepared from scratch at the first length (reused %d)", (int)kr);
      else
        CHECK(kr == kc - 1, "length %lld: every kernel but the Relu taken over (%d of %d)",
              (long long)lens[r], (int)kr, (int)kc);
    }
    drop_three(got, ref, fresh, f);
    mi_graph_destroy(fg);
    mi_array_destroy(x);
  }
  mi_session_destroy(s);
  mi_array_destroy(k);
  mi_array_destroy(c);
  mi_graph_destroy(g);
}

/* x also feeds a Relu of the outer graph, a device kernel prepared for [4]: a run with x [6] is
 * refused with the shapes named, as before. */
static void device_input_refused(void) {
  int64_t xd[1] = {4}, x6[1] = {6};
  mi_graph_t *g = mi_graph_create("fixed");
  mi_error_t err = {0};
  uint32_t dev = 0;
  mi_plugin_t *p = NULL;
  mi_session_t *s = NULL;
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 1, x6), *y = NULL;
  const mi_array_t *ins[1] = {x};
  int32_t xt = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, xd);
  int32_t yt = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 1, xd);
  REQUIRE(x);
  mi_graph_add_input(g, xt);
  mi_graph_add_node(g, "Relu", "relu", 1, &xt, 1, &yt);
  mi_graph_add_output(g, yt);
  REQUIRE(mi_registry_device(g_reg, "blis-cpu:0", &p, &dev, &err) == MI_OK, "%s", err.message);
  REQUIRE(mi_session_create(g, p, dev, NULL, &s, &err) == MI_OK, "create: %s", err.message);
  CHECK(mi_session_run(s, ins, 1, &y, 1, &err) == MI_ERR_INVALID_ARGUMENT && !y &&
            strstr(err.message, "[6]") && strstr(err.message, "[4]"),
        "refused: %s", err.message);
  CHECK(mi_session_kernel_reused_count(s) == 0, "nothing reused");
  mi_session_destroy(s);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

/* Adds node `op` named `name` reading ins[0..n) and writing a new tensor `out`; its index. */
static int32_t op(mi_graph_t *s, const char *o, const char *name, int n, const int32_t *ins, const char *out,
                  int32_t *node) {
  int32_t y = mi_graph_add_tensor(s, out, MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t k = mi_graph_add_node(s, o, name, n, ins, 1, &y);
  if (node) *node = k;
  return y;
}

/* A branch capturing x [1, L, 4] whose preparation the session rewrites: a layer norm spelled
 * out in nine ops (fused into one LayerNormalization, the rewrite of a node named with the
 * branch's strings), plus positions 0..L-1 from Shape(x) (Gather, Range, Cast, Unsqueeze:
 * folded to a constant whose length and values follow L), then MatMul by a constant and two
 * readers of its result m: Relu(m), and Sigmoid(m) + MatMul(ReduceMean(m over L), w) (a kernel
 * of the same shapes at every length). The else branch: Relu(x), Sigmoid(x). */
static mi_graph_t *norm_branch(const char *name, int then) {
  mi_graph_t *s = mi_graph_create(name);
  int64_t d4[1] = {4}, w2[2] = {4, 4}, axes[1] = {-1}, one = 1, zero = 0, ax[2] = {0, 2};
  float gamma[4] = {1.5f, 0.5f, -1.0f, 2.0f}, beta[4] = {0.25f, -0.5f, 0.0f, 1.0f}, eps = 1e-5f, w[16];
  int32_t x = mi_graph_add_tensor(s, "x", MI_DTYPE_UNDEFINED, -1, NULL), y[2], n;
  char o1[16], o2[16];
  snprintf(o1, sizeof o1, "r_%s", name);
  snprintf(o2, sizeof o2, "s_%s", name);
  mi_graph_add_capture(s, x);
  if (!then) {
    y[0] = op(s, "Relu", "relu", 1, &x, o1, NULL);
    y[1] = op(s, "Sigmoid", "sig", 1, &x, o2, NULL);
  } else {
    int32_t in[3], mean, d, sq, var, ve, sd, nrm, sc, ln, shp, len, r, rf, pos, h, m, sg, mm;
    for (int i = 0; i < 16; i++) w[i] = (float)((i * 5) % 7) / 7.0f - 0.4f;
    mean = op(s, "ReduceMean", "mean", 1, &x, "mean", &n);
    mi_node_set_ints(s, n, "axes", 1, axes);
    in[0] = x, in[1] = mean;
    d = op(s, "Sub", "centre", 2, in, "d", NULL);
    in[0] = d, in[1] = d;
    sq = op(s, "Mul", "square", 2, in, "sq", NULL);
    var = op(s, "ReduceMean", "var", 1, &sq, "var", &n);
    mi_node_set_ints(s, n, "axes", 1, axes);
    in[0] = var, in[1] = mi_graph_add_const_f32(s, "eps", 0, NULL, &eps);
    ve = op(s, "Add", "add_eps", 2, in, "ve", NULL);
    sd = op(s, "Sqrt", "sqrt", 1, &ve, "sd", NULL);
    in[0] = d, in[1] = sd;
    nrm = op(s, "Div", "div", 2, in, "nrm", NULL);
    in[0] = nrm, in[1] = mi_graph_add_const_f32(s, "gamma", 1, d4, gamma);
    sc = op(s, "Mul", "scale", 2, in, "sc", NULL);
    in[0] = sc, in[1] = mi_graph_add_const_f32(s, "beta", 1, d4, beta);
    ln = op(s, "Add", "shift", 2, in, "ln", NULL);
    shp = op(s, "Shape", "shape", 1, &x, "shp", NULL);
    in[0] = shp, in[1] = mi_graph_add_const_i64(s, "one_i", 1, &one);
    len = op(s, "Gather", "len", 2, in, "len", NULL);
    in[0] = mi_graph_add_const_i64(s, "zero_i", 1, &zero), in[1] = len, in[2] = mi_graph_add_const_i64(s, "step", 1, &one);
    r = op(s, "Range", "range", 3, in, "r", NULL);
    rf = op(s, "Cast", "cast", 1, &r, "rf", &n);
    mi_node_set_int(s, n, "to", MI_DTYPE_FLOAT32);
    in[0] = rf, in[1] = mi_graph_add_const_i64(s, "ax", 2, ax);
    pos = op(s, "Unsqueeze", "unsq", 2, in, "pos", NULL);
    in[0] = ln, in[1] = pos;
    h = op(s, "Add", "add_pos", 2, in, "h", NULL);
    in[0] = h, in[1] = mi_graph_add_const_f32(s, "w", 2, w2, w);
    m = op(s, "MatMul", "mm", 2, in, "m", NULL);
    y[0] = op(s, "Relu", "relu", 1, &m, o1, NULL);
    sg = op(s, "Sigmoid", "sig", 1, &m, "sg", NULL);
    /* (a MatMul of [1, 1, 4]: the same kernel at every length) */
    mm = op(s, "ReduceMean", "mean_len", 1, &m, "mm", &n);
    mi_node_set_ints(s, n, "axes", 1, &one);
    in[0] = mm, in[1] = mi_graph_add_const_f32(s, "w_len", 2, w2, w);
    in[1] = op(s, "MatMul", "mm_len", 2, in, "mw", NULL);
    in[0] = sg;
    y[1] = op(s, "Add", "add_len", 2, in, o2, NULL);
  }
  mi_graph_add_output(s, y[0]);
  mi_graph_add_output(s, y[1]);
  return s;
}

/* (a, b) = If(c, norm_branch then, else) over x [1, n, 4] and c. */
static mi_graph_t *norm_if(int64_t n) {
  int64_t xd[3] = {1, n, 4};
  mi_graph_t *g = mi_graph_create("norm_if");
  mi_graph_add_input(g, mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 3, xd));
  return add_if(g, "a", "b", norm_branch("then", 1), norm_branch("else", 0));
}

/* The branch prepared again at lengths 3, 5, 8, 5, 2, 9 (then) in one session, with the else
 * branch taken between: each run's outputs are a fresh session's bytes and the reference's
 * values, the norm is one LayerNormalization in the prepared branch at every length, and from
 * the second length on kernels are taken over. A rewrite that freed a string the branch's copy
 * shares with the If's graph, a folded position vector kept from another length, or a fused
 * kernel that did not write the MatMul result its second reader needs would fail here. */
static void rewritten_branch(void) {
  const int64_t lens[7] = {3, 5, 8, 5, 4, 2, 9};
  mi_graph_t *g = norm_if(3);
  mi_array_t *c = mi_array_create(MI_DTYPE_BOOL, 0, NULL);
  mi_error_t err = {0};
  uint32_t dev = 0;
  mi_plugin_t *p = NULL;
  mi_session_t *s = NULL;
  REQUIRE(g && c);
  REQUIRE(mi_registry_device(g_reg, "blis-cpu:0", &p, &dev, &err) == MI_OK, "%s", err.message);
  REQUIRE(mi_session_create(g, p, dev, NULL, &s, &err) == MI_OK, "create: %s", err.message);
  for (int r = 0; r < 7; r++) {
    int64_t xd[3] = {1, lens[r], 4};
    int then = r != 4;
    mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 3, xd), *got[2] = {0}, *ref[2] = {0}, *fresh[2] = {0};
    const mi_array_t *ins[2] = {x, c};
    mi_graph_t *fg = norm_if(lens[r]);
    mi_session_t *f;
    REQUIRE(x && fg);
    fill(x, 3u + (uint32_t)r, 2.0f);
    *(uint8_t *)c->data = (uint8_t)then;
    f = run_three(s, fg, p, dev, ins, 2, lens[r], got, ref, fresh);
    for (int o = 0; o < 2; o++) {
      CHECK(same_bytes(got[o], fresh[o]), "length %lld: output %d is a fresh session's", (long long)lens[r], o);
      CHECK(got[o] && ref[o] && got[o]->rank == 3 && got[o]->dims[1] == lens[r] && tu_rel_l2_arrays(got[o], ref[o]) < 1e-5,
            "length %lld: output %d matches the reference", (long long)lens[r], o);
    }
    if (then) {
      const mi_graph_t *bg = NULL;
      const mi_session_t *n = then_session(s, &bg);
      int fused = 0;
      CHECK(n && bg, "the then branch ran in a nested session at %lld", (long long)lens[r]);
      for (int32_t i = 0; bg && i < bg->node_count; i++) fused += strcmp(bg->nodes[i].op_type, "LayerNormalization") == 0;
      CHECK(fused == 1, "length %lld: the norm is one LayerNormalization (%d)", (long long)lens[r], fused);
      if (n && r > 0)
        CHECK(mi_session_kernel_reused_count(n) > 0, "length %lld: kernels taken over (%d of %d)", (long long)lens[r],
              (int)mi_session_kernel_reused_count(n), (int)mi_session_kernel_count(n));
    }
    drop_three(got, ref, fresh, f);
    mi_graph_destroy(fg);
    mi_array_destroy(x);
  }
  mi_session_destroy(s);
  mi_array_destroy(c);
  mi_graph_destroy(g);
}

/* A branch capturing x [L] and k [4]: a = Relu(x); b = ReduceSum((k * L + Relu(k)) * W, axis 0)
 * + ReduceSum(W, axis 0), W = Expand(L, [512, 4]) (the length as a 4-byte constant and an 8 KiB
 * one, both folded from Shape(x): the Mul's, the Add's and the sum's shapes are the same at
 * every length, only the constants' values tell). Relu(k) is the same step at every length.
 * The else branch: Relu(x), Sigmoid(k). */
static mi_graph_t *len_branch(const char *name, int then) {
  mi_graph_t *s = mi_graph_create(name);
  int64_t wide_shape[2] = {512, 4}, ax0 = 0;
  int32_t x = mi_graph_add_tensor(s, "x", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t k = mi_graph_add_tensor(s, "k", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t in[2], y[2], n;
  char o1[16], o2[16];
  snprintf(o1, sizeof o1, "a_%s", name);
  snprintf(o2, sizeof o2, "b_%s", name);
  mi_graph_add_capture(s, x);
  mi_graph_add_capture(s, k);
  y[0] = op(s, "Relu", "relu", 1, &x, o1, NULL);
  if (then) {
    int32_t shp = op(s, "Shape", "shape", 1, &x, "shp", NULL), lf, wide, sum, t, rk, axis;
    lf = op(s, "Cast", "cast", 1, &shp, "lf", &n);
    mi_node_set_int(s, n, "to", MI_DTYPE_FLOAT32);
    in[0] = lf, in[1] = mi_graph_add_const_i64(s, "wide_shape", 2, wide_shape);
    wide = op(s, "Expand", "expand", 2, in, "wide", NULL);
    axis = mi_graph_add_const_i64(s, "ax0", 1, &ax0);
    in[0] = wide, in[1] = axis;
    sum = op(s, "ReduceSum", "sum_wide", 2, in, "sum", &n);
    mi_node_set_int(s, n, "keepdims", 0);
    in[0] = k, in[1] = lf;
    t = op(s, "Mul", "mul_len", 2, in, "kl", NULL);
    rk = op(s, "Relu", "relu_k", 1, &k, "rk", NULL);
    in[0] = t, in[1] = rk;
    t = op(s, "Add", "add_k", 2, in, "pk", NULL);
    in[0] = t, in[1] = wide;
    t = op(s, "Mul", "mul_wide", 2, in, "pw", NULL);
    in[0] = t, in[1] = axis;
    t = op(s, "ReduceSum", "sum_rows", 2, in, "rs", &n);
    mi_node_set_int(s, n, "keepdims", 0);
    in[0] = t, in[1] = sum;
    y[1] = op(s, "Add", "add_sum", 2, in, o2, NULL);
  } else {
    y[1] = op(s, "Sigmoid", "sig", 1, &k, o2, NULL);
  }
  mi_graph_add_output(s, y[0]);
  mi_graph_add_output(s, y[1]);
  return s;
}

/* (a, b) = If(c, len_branch then, else) over x [n], k [4] and c. */
static mi_graph_t *len_if(int64_t n) {
  int64_t xd[1] = {n}, kd[1] = {4};
  mi_graph_t *g = mi_graph_create("len_if");
  mi_graph_add_input(g, mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, xd));
  mi_graph_add_input(g, mi_graph_add_tensor(g, "k", MI_DTYPE_FLOAT32, 1, kd));
  return add_if(g, "a", "b", len_branch("then", 1), len_branch("else", 0));
}

/* The branch prepared again at lengths 3, 5, 8, 5, 2, 9 (then) and 4 (else) in one session: b
 * at each length is a fresh session's bytes and 512 L (k L + Relu(k) + 1), though the
 * kernels that read L have the same shapes at every length; the steps that do not read it
 * (Relu(x) aside, whose shape changes) are taken over whole. Steps taken over by their
 * shapes alone would keep the first length's L here. */
static void length_in_a_value(void) {
  const int64_t lens[7] = {3, 5, 8, 5, 4, 2, 9};
  int64_t kd[1] = {4};
  mi_graph_t *g = len_if(3);
  mi_array_t *c = mi_array_create(MI_DTYPE_BOOL, 0, NULL), *k = mi_array_create(MI_DTYPE_FLOAT32, 1, kd);
  mi_error_t err = {0};
  uint32_t dev = 0;
  mi_plugin_t *p = NULL;
  mi_session_t *s = NULL;
  int32_t taken = 0;
  REQUIRE(g && c && k);
  fill(k, 5u, 2.0f);
  REQUIRE(mi_registry_device(g_reg, "blis-cpu:0", &p, &dev, &err) == MI_OK, "%s", err.message);
  REQUIRE(mi_session_create(g, p, dev, NULL, &s, &err) == MI_OK, "create: %s", err.message);
  for (int r = 0; r < 7; r++) {
    int64_t xd[1] = {lens[r]};
    int then = r != 4;
    mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 1, xd), *got[2] = {0}, *ref[2] = {0}, *fresh[2] = {0};
    const mi_array_t *ins[3] = {x, k, c};
    mi_graph_t *fg = len_if(lens[r]);
    mi_session_t *f;
    REQUIRE(x && fg);
    fill(x, 9u + (uint32_t)r, 2.0f);
    *(uint8_t *)c->data = (uint8_t)then;
    f = run_three(s, fg, p, dev, ins, 3, lens[r], got, ref, fresh);
    for (int o = 0; o < 2; o++)
      CHECK(same_bytes(got[o], fresh[o]), "length %lld: output %d is a fresh session's", (long long)lens[r], o);
    if (then && got[1] && got[1]->nbytes == 4 * sizeof(float)) {
      const float *kv = k->data, *b = got[1]->data;
      double l = (double)lens[r];
      for (int i = 0; i < 4; i++) {
        double rk = kv[i] > 0.0f ? kv[i] : 0.0, want = 512.0 * l * ((kv[i] * l + rk) + 1.0);
        CHECK(fabs(b[i] - want) <= 1e-4 * fabs(want), "length %lld: b[%d] = %g, want %g", (long long)lens[r], i,
              (double)b[i], want);
      }
    }
    if (then && r > 0) {
      const mi_session_t *n = then_session(s, NULL);
      CHECK(n != NULL, "the then branch ran in a nested session at %lld", (long long)lens[r]);
      if (n) taken += n->kernels_retaken;
    }
    drop_three(got, ref, fresh, f);
    mi_graph_destroy(fg);
    mi_array_destroy(x);
  }
  CHECK(taken > 0, "steps taken over whole (%d)", (int)taken);
  mi_session_destroy(s);
  mi_array_destroy(c);
  mi_array_destroy(k);
  mi_graph_destroy(g);
}

static void setup(void) {
  mi_error_t err = {0};
  g_reg = mi_registry_create();
  REQUIRE(g_reg && tu_scan_plugins(g_reg, &err) == MI_OK);
}

static void teardown(void) {
  mi_registry_destroy(g_reg);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(growing_capture),
    TU_CASE(device_input_refused),
    TU_CASE(rewritten_branch),
    TU_CASE(length_in_a_value),
};

TU_MAIN(setup, teardown)
