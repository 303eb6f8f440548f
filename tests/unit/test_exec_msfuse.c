/* test_exec_msfuse.c - ONNX Runtime's transformer-optimizer fused ops (com.microsoft
 * SkipLayerNormalization, SkipSimplifiedLayerNormalization, FastGelu, BiasGelu, Gelu, QuickGelu,
 * BiasAdd; the default-domain SimplifiedLayerNormalization) and ONNX RMSNormalization / Swish: the
 * reference on values worked out by hand, inferred shapes equal to the run's; each op and form
 * written as a model, loaded (the loader lowers it to standard ops) and run on the reference equal
 * to the op's own reference, and on blis-cpu at every SIMD cap with no host fallback; malformed
 * nodes refused in one line naming the node. */
#include <math.h>

#include "test_exec_util.h"
#include "test_pb.h"
#include "test_ref_common.h"

typedef struct attr {
  const char *name;
  int type; /* 0 none, 1 float, 2 int, 3 string */
  double v;
  const char *s;
} attr_t;

typedef struct mcase {
  const char *op, *domain; /* domain NULL: the default one */
  int64_t opset;
  int nin;
  mi_array_t *in[10];  /* NULL: omitted */
  uint32_t const_mask; /* bit i: input i an initializer */
  int nout;
  uint32_t want; /* bit k: output k is a graph output (else omitted "") */
  attr_t attrs[3];
} mcase_t;

static void free_case(mcase_t *k) {
  for (int i = 0; i < k->nin; i++) mi_array_destroy(k->in[i]);
}

/* The node built in code, unlowered: its own reference and shape inference. */
static mi_graph_t *code_graph(const mcase_t *k, mi_array_t **rt, int *nrt) {
  mi_graph_t *g = mi_graph_create(k->op);
  int32_t t[10], o[4];
  char nm[32];
  g->opset = k->opset;
  *nrt = 0;
  for (int i = 0; i < k->nin; i++) {
    t[i] = -1;
    if (!k->in[i]) continue;
    snprintf(nm, sizeof nm, "in%d", i);
    t[i] = mi_graph_add_tensor(g, nm, k->in[i]->dtype, k->in[i]->rank, k->in[i]->dims);
    if (k->const_mask & (1u << i)) mi_graph_set_data(g, t[i], k->in[i]->data, k->in[i]->nbytes);
    else {
      mi_graph_add_input(g, t[i]);
      rt[(*nrt)++] = k->in[i];
    }
  }
  int nout = 0;
  for (int i = 0; i < k->nout; i++) {
    snprintf(nm, sizeof nm, "out%d", i);
    o[i] = tval(g, nm);
    nout = i + 1;
  }
  int32_t n = mi_graph_add_node(g, k->op, "fused", k->nin, t, nout, o);
  if (k->domain) {
    free(g->nodes[n].domain);
    g->nodes[n].domain = strdup(k->domain);
  }
  for (int i = 0; i < k->nout; i++)
    if (k->want & (1u << i)) mi_graph_add_output(g, o[i]);
  for (int a = 0; a < 3 && k->attrs[a].type; a++) {
    const attr_t *at = &k->attrs[a];
    if (at->type == 1) mi_node_set_float(g, n, at->name, (float)at->v);
    else if (at->type == 2)
      mi_node_set_int(g, n, at->name, (int64_t)at->v);
    else
      mi_node_set_string(g, n, at->name, at->s);
  }
  return g;
}

static void pb_attr_float(pb_t *node, const char *name, float v) {
  pb_t a = {0};
  put_str(&a, 1, name);
  tag(&a, 2, 5);
  memcpy(a.d + a.n, &v, 4);
  a.n += 4;
  put_int(&a, 20, 1);
  put_msg(node, 5, &a);
}

/* A graph input (field 11) of element type dt and fixed dims. */
static void pb_value_dt(pb_t *g, const char *name, int32_t dt, int rank, const int64_t *dims) {
  pb_t vi = {0}, tp = {0}, tt = {0}, sh = {0};
  put_str(&vi, 1, name);
  for (int i = 0; i < rank; i++) {
    pb_t dim = {0};
    put_int(&dim, 1, dims[i]);
    put_msg(&sh, 1, &dim);
  }
  put_int(&tt, 1, dt);
  put_msg(&tt, 2, &sh);
  put_msg(&tp, 1, &tt);
  put_msg(&vi, 2, &tp);
  put_msg(g, 11, &vi);
}

/* An initializer of any dtype, raw data. */
static void pb_init_raw(pb_t *g, const char *name, const mi_array_t *a) {
  pb_t t = {0};
  for (int i = 0; i < a->rank; i++) put_int(&t, 1, a->dims[i]);
  put_int(&t, 2, a->dtype);
  put_str(&t, 8, name);
  put_bytes(&t, 9, a->data, a->nbytes);
  put_msg(g, 5, &t);
}

static uint32_t g_untyped; /* bit i: graph input i written without a type */

/* The same node written as a model and loaded back (the loader lowers it). */
static mi_graph_t *loaded_graph(const mcase_t *k, mi_error_t *err) {
  static pb_t g, n, m;
  char ins[128] = "", outs[128] = "", nm[16];
  g.n = n.n = m.n = 0;
  for (int i = 0; i < k->nin; i++) {
    snprintf(nm, sizeof nm, "%s%s", i ? "," : "", k->in[i] ? "in" : "");
    strncat(ins, nm, sizeof ins - strlen(ins) - 1);
    if (k->in[i]) {
      snprintf(nm, sizeof nm, "%d", i);
      strncat(ins, nm, sizeof ins - strlen(ins) - 1);
    }
  }
  for (int i = 0; i < k->nout; i++) {
    snprintf(nm, sizeof nm, "%s", i ? "," : "");
    strncat(outs, nm, sizeof outs - strlen(outs) - 1);
    if (k->want & (1u << i)) {
      snprintf(nm, sizeof nm, "out%d", i);
      strncat(outs, nm, sizeof outs - strlen(outs) - 1);
    }
  }
  pb_node(&n, k->op, "fused", ins, outs);
  if (k->domain) put_str(&n, 7, k->domain);
  for (int a = 0; a < 3 && k->attrs[a].type; a++) {
    const attr_t *at = &k->attrs[a];
    if (at->type == 1) pb_attr_float(&n, at->name, (float)at->v);
    else if (at->type == 2)
      pb_attr_int(&n, at->name, (int64_t)at->v);
    else
      pb_attr_str(&n, at->name, at->s);
  }
  put_msg(&g, 1, &n);
  put_str(&g, 2, "msfuse");
  for (int i = 0; i < k->nin; i++) {
    if (!k->in[i]) continue;
    snprintf(nm, sizeof nm, "in%d", i);
    if (k->const_mask & (1u << i))
      pb_init_raw(&g, nm, k->in[i]);
    else if (g_untyped & (1u << i))
      pb_value_f32(&g, 11, nm, -1, NULL, "n"); /* no type: rank unknown at load */
    else
      pb_value_dt(&g, nm, k->in[i]->dtype, k->in[i]->rank, k->in[i]->dims);
  }
  for (int i = 0; i < k->nout; i++)
    if (k->want & (1u << i)) {
      snprintf(nm, sizeof nm, "out%d", i);
      pb_value_f32(&g, 12, nm, -1, NULL, "n");
    }
  pb_t os = {0}, ms = {0};
  put_str(&os, 1, "");
  put_int(&os, 2, k->opset);
  put_str(&ms, 1, "com.microsoft");
  put_int(&ms, 2, 1);
  put_int(&m, 1, 8);
  put_msg(&m, 8, &os);
  put_msg(&m, 8, &ms);
  put_msg(&m, 7, &g);
  mi_graph_t *out = NULL;
  mi_onnx_load_buffer(m.d, m.n, NULL, &out, err);
  return out;
}

/* Runs g on the reference (outs: its graph outputs), after shape inference on a copy that must
 * agree with the run. */
static int32_t ref_outs(mi_graph_t *g, mi_array_t **rt, int nrt, mi_array_t **outs, mi_error_t *err) {
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)rt, nrt, outs, g->output_count, err);
  if (rc) return rc;
  mi_graph_t *c = mi_graph_clone(g);
  mi_error_t e = {0};
  CHECK(mi_graph_infer_shapes(c, &e) == MI_OK, "%s: shape inference: %s", g->name, e.message);
  for (int32_t i = 0; e.code == MI_OK && i < g->output_count; i++) {
    const mi_tensor_t *t = &c->tensors[c->outputs[i]];
    CHECK(same_shape(outs[i], t->rank, t->dims) && t->dtype == outs[i]->dtype, "%s output %d: inferred shape is the run's",
          g->name, (int)i);
  }
  mi_graph_destroy(c);
  return MI_OK;
}

static float max_abs(const mi_array_t *a, const mi_array_t *b) {
  if (!a || !b || mi_array_numel(a) != mi_array_numel(b) || a->dtype != b->dtype) return INFINITY;
  if (a->dtype != MI_DTYPE_FLOAT32) return memcmp(a->data, b->data, a->nbytes) ? INFINITY : 0.f;
  float m = 0;
  for (int64_t i = 0; i < mi_array_numel(a); i++) m = fmaxf(m, fabsf(((float *)a->data)[i] - ((float *)b->data)[i]));
  return m;
}

static mi_registry_t *g_reg;

/* The op's own reference (hand values `want` where given, per wanted output), then the loaded,
 * lowered model on the reference and on blis-cpu: equal within tol, no host fallback. */
static void check_case(const char *what, mcase_t *k, const float *const *want, float tol) {
  mi_array_t *rt[10], *own[4] = {0}, *low[4] = {0};
  int nrt;
  mi_error_t err = {0};
  int host_ok = ((k->want & 0x6) && !strcmp(k->op, "SkipLayerNormalization")) ||
                ((k->want & 0x2) && !strcmp(k->op, "EmbedLayerNormalization")); /* mask_index: integer ops */
  mi_graph_t *g = code_graph(k, rt, &nrt);
  int32_t rc = ref_outs(g, rt, nrt, own, &err);
  CHECK(rc == MI_OK, "%s: own reference: %s", what, err.message);
  for (int32_t i = 0; rc == MI_OK && want && i < g->output_count; i++)
    if (want[i] && own[i]->dtype == MI_DTYPE_INT32) { /* (mask_index: the want holds the counts as floats) */
      for (int64_t j = 0; j < mi_array_numel(own[i]); j++)
        CHECK(((int32_t *)own[i]->data)[j] == (int32_t)want[i][j], "%s output %d element %lld: %d, want %g", what, (int)i,
              (long long)j, ((int32_t *)own[i]->data)[j], want[i][j]);
    } else if (want[i])
      expect_f32(what, own[i], own[i]->rank, own[i]->dims, want[i], 1e-6f);
  mi_graph_t *l = loaded_graph(k, &err);
  CHECK(l != NULL, "%s: load: %s", what, err.message);
  if (l && rc == MI_OK) {
    for (int32_t j = 0; j < l->node_count; j++)
      CHECK(!l->nodes[j].domain || !l->nodes[j].domain[0], "%s: node %s still in domain %s after lowering", what,
            l->nodes[j].op_type, l->nodes[j].domain);
    CHECK(mi_graph_infer_shapes(l, &err) == MI_OK, "%s: lowered shapes: %s", what, err.message);
    rc = ref_outs(l, rt, nrt, low, &err);
    CHECK(rc == MI_OK, "%s: lowered reference: %s", what, err.message);
    for (int32_t i = 0; rc == MI_OK && i < g->output_count; i++) {
      float d = max_abs(own[i], low[i]);
      CHECK(d <= tol, "%s output %d: lowered graph vs the op's reference: max abs %.3g", what, (int)i, d);
    }
    mi_plugin_t *p = g_reg ? mi_registry_find(g_reg, "blis-cpu") : NULL;
    if (p && rc == MI_OK) {
      mi_session_t *s = session(l, p);
      mi_array_t *got[4] = {0};
      /* (blis-cpu's LayerNormalization leaves Mean and InvStdDev to the host) */
      CHECK(mi_session_fallback_count(s) == 0 || host_ok, "%s: %d nodes fell back to the host (first: %s)", what,
            (int)mi_session_fallback_count(s), mi_session_fallback_count(s) ? mi_session_fallback_node(s, 0) : "");
      CHECK(mi_session_run(s, (const mi_array_t *const *)rt, nrt, got, l->output_count, &err) == MI_OK,
            "%s: blis-cpu run: %s", what, err.message);
      for (int32_t i = 0; i < l->output_count; i++) {
        float d = max_abs(own[i], got[i]);
        CHECK(d <= tol * 4, "%s output %d: blis-cpu vs the op's reference: max abs %.3g", what, (int)i, d);
        mi_array_destroy(got[i]);
      }
      mi_session_destroy(s);
      /* the node built in code: the session lowers it on its copy */
      mi_graph_t *gc = mi_graph_clone(g);
      CHECK(mi_graph_infer_shapes(gc, &err) == MI_OK, "%s: code graph shapes: %s", what, err.message);
      s = session(gc, p);
      CHECK(mi_session_fallback_count(s) == 0 || host_ok, "%s: built in code, %d nodes fell back to the host", what,
            (int)mi_session_fallback_count(s));
      CHECK(mi_session_run(s, (const mi_array_t *const *)rt, nrt, got, gc->output_count, &err) == MI_OK,
            "%s: blis-cpu run of the graph built in code: %s", what, err.message);
      for (int32_t i = 0; i < gc->output_count; i++) {
        float d = max_abs(own[i], got[i]);
        CHECK(d <= tol * 4, "%s output %d: built in code, blis-cpu vs the op's reference: max abs %.3g", what, (int)i, d);
        mi_array_destroy(got[i]);
        got[i] = NULL;
      }
      mi_session_destroy(s);
      mi_graph_destroy(gc);
    }
  }
  for (int i = 0; i < 4; i++) mi_array_destroy(own[i]), mi_array_destroy(low[i]);
  mi_graph_destroy(g);
  mi_graph_destroy(l);
  free_case(k);
}

static mi_array_t *A(int32_t rank, const int64_t *dims, const float *v) { return arr_f32(rank, dims, v); }

static mi_array_t *R(int32_t rank, const int64_t *dims, uint64_t seed) {
  mi_array_t *a = arr_f32(rank, dims, NULL);
  fill_halves(a->data, (int)mi_array_numel(a), seed);
  for (int64_t i = 0; i < mi_array_numel(a); i++) ((float *)a->data)[i] *= 4.f;
  return a;
}

/* SkipLayerNormalization, H = 2: each row's sum (a, b) normalises to (+-1, -+1) with epsilon 0.
 * input [[[1,2],[3,3]],[[0,0],[5,1]]] + skip [[1,0],[0,2]] (repeated over the batch) + bias
 * [0.5,-0.5] = rows (2.5,1.5) (3.5,4.5) (1.5,-0.5) (5.5,2.5); gamma [2,3], beta [0.5,-1]:
 * (1,-1) -> (2.5,-4), (-1,1) -> (-1.5,2); means 2, 4, 0.5, 4; inverse std 1/0.5, 1/0.5, 1/1, 1/1.5. */
static void skip_layernorm(void) {
  int64_t xd[3] = {2, 2, 2}, sd2[2] = {2, 2}, hd[1] = {2}, s1d[3] = {1, 2, 2};
  const float x[8] = {1, 2, 3, 3, 0, 0, 5, 1}, skip[4] = {1, 0, 0, 2}, gamma[2] = {2, 3}, beta[2] = {0.5f, -1},
              bias[2] = {0.5f, -0.5f};
  const float y[8] = {2.5f, -4, -1.5f, 2, 2.5f, -4, 2.5f, -4}, mean[4] = {2, 4, 0.5f, 4},
              inv[4] = {2, 2, 1, 1 / 1.5f}, sum[8] = {2.5f, 1.5f, 3.5f, 4.5f, 1.5f, -0.5f, 5.5f, 2.5f};
  const float *want[4] = {y, mean, inv, sum};
  mcase_t k = {"SkipLayerNormalization", "com.microsoft", 17, 5, {A(3, xd, x), A(2, sd2, skip), A(1, hd, gamma), A(1, hd, beta), A(1, hd, bias)}, 0x1c, 4, 0xf, {{"epsilon", 1, 0, NULL}}};
  check_case("skip LN hand, all outputs", &k, want, 1e-6f);
  /* the same, skip [1, 2, 2], output and sum only (mean and inv_std_var omitted in the middle) */
  const float *want2[4] = {y, NULL, NULL, sum};
  mcase_t k2 = {"SkipLayerNormalization", "com.microsoft", 17, 5, {A(3, xd, x), A(3, s1d, skip), A(1, hd, gamma), A(1, hd, beta), A(1, hd, bias)}, 0x1c, 4, 0x9, {{"epsilon", 1, 0, NULL}}};
  check_case("skip LN hand, skip [1,S,H], sum output", &k2, want2, 1e-6f);
  /* random: every optional input present or not, skip of the input's shape or [S, H], default epsilon */
  int64_t bd[3] = {2, 5, 24}, sk[2] = {5, 24}, h[1] = {24};
  for (int f = 0; f < 8; f++) {
    mcase_t r = {"SkipLayerNormalization", "com.microsoft", 17, (f & 2) ? 5 : (f & 1) ? 4
                                                                                      : 3,
                 {R(3, bd, 1 + f), (f & 4) ? R(2, sk, 2) : R(3, bd, 2), R(1, h, 3), (f & 1) ? R(1, h, 4) : NULL, (f & 2) ? R(1, h, 5) : NULL},
                 (f & 4) ? 0x1e : 0x1c,
                 1,
                 1,
                 {{0}}};
    char what[64];
    snprintf(what, sizeof what, "skip LN beta%d bias%d skip2d%d", f & 1, (f >> 1) & 1, (f >> 2) & 1);
    check_case(what, &r, NULL, 2e-6f);
  }
  /* 2-D input */
  mcase_t r2 = {"SkipLayerNormalization", "com.microsoft", 17, 5, {R(2, sk, 7), R(2, sk, 8), R(1, h, 9), R(1, h, 10), R(1, h, 11)}, 0x1c, 4, 0x9, {{"epsilon", 1, 1e-5, NULL}}};
  check_case("skip LN 2-D", &r2, NULL, 2e-6f);
}

/* SkipSimplifiedLayerNormalization: sums (1,7) and (2,-14) have RMS 5 and 10; gamma [2,3] gives
 * (0.4, 4.2) and (0.4, -4.2). Then random forms with a bias and the sum output. */
static void skip_simplified(void) {
  int64_t d[2] = {2, 2}, hd[1] = {2};
  const float x[4] = {1, 5, 2, -10}, skip[4] = {0, 2, 0, -4}, gamma[2] = {2, 3}, y[4] = {0.4f, 4.2f, 0.4f, -4.2f};
  const float *want[1] = {y};
  mcase_t k = {"SkipSimplifiedLayerNormalization", "com.microsoft", 17, 3, {A(2, d, x), A(2, d, skip), A(1, hd, gamma)}, 0x4, 1, 1, {{"epsilon", 1, 0, NULL}}};
  check_case("skip simplified LN hand", &k, want, 1e-6f);
  int64_t bd[3] = {3, 4, 40}, sk[3] = {1, 4, 40}, h[1] = {40};
  mcase_t r = {"SkipSimplifiedLayerNormalization", "com.microsoft", 17, 4, {R(3, bd, 21), R(3, sk, 22), R(1, h, 23), R(1, h, 24)}, 0xe, 4, 0x9, {{0}}};
  check_case("skip simplified LN bias, sum output", &r, NULL, 2e-6f);
}

/* RMSNormalization rows (1,1,1) and (2,2,-2): RMS 1 and 2; scale [1,2,3]: (1,2,3), (1,2,-3).
 * axis 0 over [2,2] of 3 * (1,-1,1,-1) (RMS 3) with a scale [2] broadcast: (a,-b,a,-b). */
static void rms_norm(void) {
  int64_t d[2] = {2, 3}, sd[1] = {3}, d2[2] = {2, 2}, s2[1] = {2};
  const float x[6] = {1, 1, 1, 2, 2, -2}, sc[3] = {1, 2, 3}, y[6] = {1, 2, 3, 1, 2, -3};
  const float x2[4] = {3, -3, 3, -3}, sc2[2] = {0.5f, 4}, y2[4] = {0.5f, -4, 0.5f, -4};
  const float *w1[1] = {y}, *w2[1] = {y2};
  mcase_t k = {"RMSNormalization", NULL, 23, 2, {A(2, d, x), A(1, sd, sc)}, 0x2, 1, 1, {{"epsilon", 1, 0, NULL}}};
  check_case("RMSNormalization hand", &k, w1, 1e-6f);
  mcase_t k2 = {"RMSNormalization", NULL, 23, 2, {A(2, d2, x2), A(1, s2, sc2)}, 0x2, 1, 1, {{"epsilon", 1, 0, NULL}, {"axis", 2, 0, NULL}}};
  /* axis 0 with a partly broadcast scale: the reference only (blis-cpu takes a full or scalar scale) */
  mi_array_t *rt[10], *o[1] = {0};
  int nrt;
  mi_error_t err = {0};
  mi_graph_t *g = code_graph(&k2, rt, &nrt);
  CHECK(ref_outs(g, rt, nrt, o, &err) == MI_OK, "RMS axis 0: %s", err.message);
  if (o[0]) expect_f32("RMSNormalization axis 0", o[0], 2, d2, w2[0], 1e-6f);
  mi_array_destroy(o[0]);
  mi_graph_destroy(g);
  free_case(&k2);
  /* random rows of odd lengths (the SIMD bodies' tails), a scalar scale, axis -2 */
  int64_t rd[3] = {3, 7, 37}, rs[1] = {37}, one[1] = {1}, rs2[2] = {7, 37};
  mcase_t r = {"RMSNormalization", NULL, 23, 2, {R(3, rd, 31), R(1, rs, 32)}, 0x2, 1, 1, {{0}}};
  check_case("RMSNormalization random", &r, NULL, 2e-6f);
  mcase_t r2 = {"RMSNormalization", NULL, 23, 2, {R(3, rd, 33), R(1, one, 34)}, 0x2, 1, 1, {{"epsilon", 1, 1e-3, NULL}}};
  check_case("RMSNormalization scalar scale", &r2, NULL, 2e-6f);
  mcase_t r3 = {"RMSNormalization", NULL, 23, 2, {R(3, rd, 35), R(2, rs2, 36)}, 0x2, 1, 1, {{"axis", 2, -2, NULL}}};
  check_case("RMSNormalization axis -2", &r3, NULL, 2e-6f);
  /* ONNX Runtime's default-domain SimplifiedLayerNormalization at opset 17: the same op */
  mcase_t s = {"SimplifiedLayerNormalization", NULL, 17, 2, {A(2, d, x), A(1, sd, sc)}, 0x2, 1, 1, {{"epsilon", 1, 0, NULL}}};
  check_case("SimplifiedLayerNormalization hand", &s, w1, 1e-6f);
}

/* FastGelu(x + bias) with x (0, 1, -1, 2) + bias (1, -1, 1, -2) = (1, 0, 0, 0): tanh Gelu(1) =
 * 0.8411920; BiasGelu: erf Gelu(1) = 0.8413447; QuickGelu (alpha 1.702) of x (0, 1, -1, 2):
 * 0, 0.8457958, -0.1542042, 2 / (1 + exp(-3.404)); Swish (alpha 1): 0, 0.7310586, -0.2689414. */
static void gelus(void) {
  int64_t d[2] = {1, 4}, hd[1] = {4};
  const float x[4] = {0, 1, -1, 2}, b[4] = {1, -1, 1, -2};
  const float fast[4] = {0.8411920f, 0, 0, 0}, erfg[4] = {0.8413447f, 0, 0, 0},
              quick[4] = {0, 0.8457958f, -0.1542042f, (float)(2 / (1 + exp(-3.404)))},
              swish[4] = {0, 0.7310586f, -0.2689414f, (float)(2 / (1 + exp(-2.0)))};
  const float *w[1];
  w[0] = fast;
  mcase_t k = {"FastGelu", "com.microsoft", 17, 2, {A(2, d, x), A(1, hd, b)}, 0x2, 1, 1, {{0}}};
  check_case("FastGelu hand", &k, w, 1e-6f);
  w[0] = erfg;
  mcase_t k2 = {"BiasGelu", "com.microsoft", 17, 2, {A(2, d, x), A(1, hd, b)}, 0x2, 1, 1, {{0}}};
  check_case("BiasGelu hand", &k2, w, 1e-6f);
  w[0] = quick;
  mcase_t k3 = {"QuickGelu", "com.microsoft", 17, 1, {A(2, d, x)}, 0, 1, 1, {{0}}};
  check_case("QuickGelu hand", &k3, w, 1e-6f);
  w[0] = swish;
  mcase_t k4 = {"Swish", NULL, 24, 1, {A(2, d, x)}, 0, 1, 1, {{0}}};
  check_case("Swish hand", &k4, w, 1e-6f);
  mcase_t k5 = {"QuickGelu", "com.microsoft", 17, 1, {A(2, d, x)}, 0, 1, 1, {{"alpha", 1, 1.0, NULL}}};
  check_case("QuickGelu alpha 1 (Sigmoid, Mul)", &k5, w, 1e-6f);
  int64_t rd[3] = {2, 3, 50}, rh[1] = {50};
  mcase_t r1 = {"FastGelu", "com.microsoft", 17, 1, {R(3, rd, 41)}, 0, 1, 1, {{0}}};
  check_case("FastGelu no bias", &r1, NULL, 2e-6f);
  mcase_t r2 = {"BiasGelu", "com.microsoft", 17, 2, {R(3, rd, 42), R(1, rh, 43)}, 0x2, 1, 1, {{0}}};
  check_case("BiasGelu random", &r2, NULL, 2e-6f);
  mcase_t r3 = {"Gelu", "com.microsoft", 17, 1, {R(3, rd, 44)}, 0, 1, 1, {{0}}};
  check_case("com.microsoft Gelu", &r3, NULL, 2e-6f);
  mcase_t r4 = {"Swish", NULL, 24, 1, {R(3, rd, 45)}, 0, 1, 1, {{"alpha", 1, 0.5, NULL}}};
  check_case("Swish alpha 0.5", &r4, NULL, 2e-6f);
  /* BiasAdd: (1, 2) + (10, 20) + (100, 200) */
  int64_t bd[3] = {1, 1, 2}, h2[1] = {2};
  const float bx[2] = {1, 2}, bb[2] = {10, 20}, bs[2] = {100, 200}, by[2] = {111, 222};
  w[0] = by;
  mcase_t k6 = {"BiasAdd", "com.microsoft", 17, 3, {A(3, bd, bx), A(1, h2, bb), A(3, bd, bs)}, 0x2, 1, 1, {{0}}};
  check_case("BiasAdd hand", &k6, w, 1e-6f);
}

static mi_array_t *I(int32_t rank, const int64_t *dims, const int32_t *v) {
  mi_array_t *a = mi_array_create(MI_DTYPE_INT32, rank, dims);
  memcpy(a->data, v, a->nbytes);
  return a;
}

/* EmbedLayerNormalization, H = 2, epsilon 0: word rows (1,0) (0,1) (2,2), position rows (0,0)
 * (1,-1) (5,5), segment rows (0,0) (0,3); ids [[0,1],[2,0]], segments [[0,1],[1,0]]: sums (1,0),
 * (0,1)+(1,-1)+(0,3) = (1,3), (2,2)+(0,0)+(0,3) = (2,5), (1,0)+(1,-1) = (2,-1), normalised to
 * (1,-1) (-1,1) (-1,1) (1,-1); gamma (2,3), beta (0.5,-1): (2.5,-4) (-1.5,2) (-1.5,2) (2.5,-4).
 * mask [[1,0],[1,1]] (values equal to 1 counted): mask_index (1, 2). */
static void embed_layernorm(void) {
  int64_t id[2] = {2, 2}, wd[2] = {3, 2}, sd[2] = {2, 2}, hd[1] = {2}, p1[2] = {1, 2};
  const int32_t ids[4] = {0, 1, 2, 0}, seg[4] = {0, 1, 1, 0}, mask[4] = {1, 0, 1, 1}, pos[2] = {1, 0};
  const float word[6] = {1, 0, 0, 1, 2, 2}, pe[6] = {0, 0, 1, -1, 5, 5}, se[4] = {0, 0, 0, 3}, g[2] = {2, 3},
              b[2] = {0.5f, -1};
  const float y[8] = {2.5f, -4, -1.5f, 2, -1.5f, 2, 2.5f, -4}, mi[2] = {1, 2}, sum[8] = {1, 0, 1, 3, 2, 5, 2, -1};
  const float *want[3] = {y, mi, sum};
  mcase_t k = {"EmbedLayerNormalization", "com.microsoft", 17, 8, {I(2, id, ids), I(2, id, seg), A(2, wd, word), A(2, wd, pe), A(2, sd, se), A(1, hd, g), A(1, hd, b), I(2, id, mask)}, 0x7c, 3, 0x7, {{"epsilon", 1, 0, NULL}}};
  check_case("embed LN hand, every output", &k, want, 1e-6f);
  const float *want1[1] = {y};
  mcase_t k1 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, id, ids), I(2, id, seg), A(2, wd, word), A(2, wd, pe), A(2, sd, se), A(1, hd, g), A(1, hd, b)}, 0x7c, 1, 0x1, {{"epsilon", 1, 0, NULL}}};
  check_case("embed LN hand, output only", &k1, want1, 1e-6f);
  /* no segment (DistilBERT), position_ids [1, S] = (1, 0), no mask (mask_index zeros), opsets 17 and 11 */
  for (int opset = 11; opset <= 17; opset += 6) {
    mcase_t k2 = {"EmbedLayerNormalization", "com.microsoft", opset, 9, {I(2, id, ids), NULL, A(2, wd, word), A(2, wd, pe), NULL, A(1, hd, g), A(1, hd, b), NULL, I(2, p1, pos)}, 0x6c, 3, 0x7, {{0}}};
    char what[64];
    snprintf(what, sizeof what, "embed LN distil, position_ids, opset %d", opset);
    check_case(what, &k2, NULL, 2e-6f);
  }
  /* random: BERT-sized rows, a runtime position table (the Shape -> Slice path) */
  int64_t rid[2] = {2, 7}, rw[2] = {12, 16}, rp[2] = {9, 16}, rs[2] = {2, 16}, rh[1] = {16}; /* (the model fits test_pb.h) */
  int32_t rids[14], rseg[14];
  for (int i = 0; i < 14; i++) rids[i] = (i * 7 + 3) % 12, rseg[i] = i % 2;
  mcase_t k3 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, rid, rids), I(2, rid, rseg), R(2, rw, 71), R(2, rp, 72), R(2, rs, 73), R(1, rh, 74), R(1, rh, 75)}, 0x74, 1, 0x1, {{"epsilon", 1, 1e-5, NULL}}};
  check_case("embed LN random, runtime position table", &k3, NULL, 2e-6f);
}

/* FusedMatMul: A [2,3] @ B [3,2] with A = (1 2 3; 4 5 6), B = (1 0; 0 1; 1 1): (4 5; 10 11), times
 * alpha 0.5: (2 2.5; 5 5.5); transA of A^T [3,2] and transB of B^T [2,3] give the same. Then
 * random batched forms (broadcast batch, each trans, alpha), and a transposed operand of unknown
 * rank at load: left for the session, which lowers it after shape inference. */
static void fused_matmul(void) {
  int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, atd[2] = {3, 2}, btd[2] = {2, 3};
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, at[6] = {1, 4, 2, 5, 3, 6}, bt[6] = {1, 0, 1, 0, 1, 1};
  const float y[4] = {2, 2.5f, 5, 5.5f}, *want[1] = {y};
  for (int f = 0; f < 4; f++) {
    mcase_t k = {"FusedMatMul", "com.microsoft", 17, 2, {(f & 1) ? A(2, atd, at) : A(2, ad, a), (f & 2) ? A(2, btd, bt) : A(2, bd, b)}, 0x2, 1, 1, {{"alpha", 1, 0.5, NULL}, {"transA", 2, f & 1, NULL}, {"transB", 2, (f >> 1) & 1, NULL}}};
    char what[64];
    snprintf(what, sizeof what, "FusedMatMul hand transA %d transB %d", f & 1, (f >> 1) & 1);
    check_case(what, &k, want, 1e-6f);
  }
  int64_t xa[4] = {2, 3, 5, 8}, xb[3] = {3, 8, 6}, xbt[3] = {3, 6, 8}, xat[4] = {2, 3, 8, 5};
  for (int f = 0; f < 4; f++) {
    mcase_t k = {"FusedMatMul", "com.microsoft", 17, 2, {(f & 1) ? R(4, xat, 80 + f) : R(4, xa, 80 + f), (f & 2) ? R(3, xbt, 90 + f) : R(3, xb, 90 + f)}, 0, 1, 1, {{"alpha", 1, f ? 0.125 : 1.0, NULL}, {"transA", 2, f & 1, NULL}, {"transB", 2, (f >> 1) & 1, NULL}}};
    char what[64];
    snprintf(what, sizeof what, "FusedMatMul batched transA %d transB %d", f & 1, (f >> 1) & 1);
    check_case(what, &k, NULL, 4e-6f);
  }
}

/* A transposed FusedMatMul operand whose rank the model does not give: the loader leaves the node,
 * its own reference runs it, and the session lowers it once shapes are known. */
static void fused_matmul_deferred(void) {
  int64_t ad[3] = {2, 3, 4}, bd[2] = {3, 5};
  mcase_t k = {"FusedMatMul", "com.microsoft", 17, 2, {R(3, ad, 11), R(2, bd, 12)}, 0x2, 1, 1, {{"transA", 2, 1, NULL}}};
  mi_array_t *rt[10], *own[1] = {0}, *low[1] = {0};
  int nrt;
  mi_error_t err = {0};
  mi_graph_t *g = code_graph(&k, rt, &nrt);
  CHECK(ref_outs(g, rt, nrt, own, &err) == MI_OK, "deferred: own reference: %s", err.message);
  g_untyped = 1;
  mi_graph_t *l = loaded_graph(&k, &err);
  g_untyped = 0;
  CHECK(l != NULL, "deferred: load: %s", err.message);
  int kept = 0;
  for (int32_t j = 0; l && j < l->node_count; j++) kept += !strcmp(l->nodes[j].op_type, "FusedMatMul");
  CHECK(kept == 1, "deferred: the FusedMatMul is kept at load (%d)", kept);
  CHECK(l && mi_ref_run(l, (const mi_array_t *const *)rt, nrt, low, 1, &err) == MI_OK, "deferred: run: %s", err.message);
  CHECK(max_abs(own[0], low[0]) == 0, "deferred: the loaded node's run is the reference's");
  mi_array_destroy(own[0]);
  mi_array_destroy(low[0]);
  mi_graph_destroy(g);
  mi_graph_destroy(l);
  free_case(&k);
}

/* A malformed node: the loader refuses it in one line naming the node and the op. */
static void refused(const char *what, mcase_t *k, const char *needle) {
  mi_error_t err = {0};
  mi_graph_t *l = loaded_graph(k, &err);
  CHECK(l == NULL, "%s: the loader should refuse", what);
  CHECK(strstr(err.message, "'fused'") && strstr(err.message, k->op) && !strchr(err.message, '\n'),
        "%s: one line naming node and op: %s", what, err.message);
  CHECK(strstr(err.message, needle) != NULL, "%s: says '%s': %s", what, needle, err.message);
  mi_graph_destroy(l);
  free_case(k);
}

static void malformed(void) {
  int64_t xd[3] = {2, 2, 4}, x4[4] = {1, 2, 2, 4}, hd[1] = {4}, h3[1] = {3}, bd2[2] = {1, 4};
  mcase_t a = {"SkipLayerNormalization", "com.microsoft", 17, 3, {R(4, x4, 1), R(4, x4, 2), R(1, hd, 3)}, 0x4, 1, 1, {{0}}};
  refused("skip LN rank 4", &a, "rank 4");
  mcase_t b = {"SkipLayerNormalization", "com.microsoft", 17, 3, {R(3, xd, 1), R(3, xd, 2), R(1, h3, 3)}, 0x4, 1, 1, {{0}}};
  refused("skip LN gamma length", &b, "gamma has 3 values");
  mcase_t c = {"SkipSimplifiedLayerNormalization", "com.microsoft", 17, 3, {R(3, xd, 1), R(3, xd, 2), R(1, hd, 3)}, 0x4, 3, 0x3, {{0}}};
  refused("skip simplified mean output", &c, "mean and inv_std_var");
  mcase_t d = {"SimplifiedLayerNormalization", NULL, 17, 2, {R(3, xd, 1), R(1, hd, 2)}, 0x2, 2, 0x3, {{0}}};
  refused("simplified LN inv_std_var", &d, "inv_std_var");
  mcase_t e = {"Swish", NULL, 23, 1, {R(3, xd, 1)}, 0, 1, 1, {{0}}};
  refused("Swish at opset 23", &e, "opset 24");
  mcase_t f = {"FastGelu", "com.microsoft", 17, 2, {R(3, xd, 1), R(2, bd2, 2)}, 0x2, 1, 1, {{0}}};
  refused("FastGelu 2-D bias", &f, "1-D");
  mcase_t g = {"BiasGelu", "com.microsoft", 17, 1, {R(3, xd, 1)}, 0, 1, 1, {{0}}};
  refused("BiasGelu without B", &g, "A and B");
  mcase_t h = {"SkipLayerNormalization", "com.microsoft", 17, 3, {R(3, xd, 1), R(3, xd, 2), R(1, hd, 3)}, 0x4, 1, 1, {{"epsilon", 1, -1, NULL}}};
  refused("skip LN negative epsilon", &h, "epsilon");
  int64_t id[2] = {1, 2}, wd[2] = {3, 4};
  const int32_t ids[2] = {0, 1};
  mcase_t e1 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, id, ids), NULL, R(2, wd, 1), R(2, wd, 2), NULL, R(1, h3, 3), R(1, hd, 4)}, 0x6c, 1, 1, {{0}}};
  refused("embed LN gamma length", &e1, "gamma must be 1-D");
  mcase_t e2 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, id, ids), I(2, id, ids), R(2, wd, 1), R(2, wd, 2), NULL, R(1, hd, 3), R(1, hd, 4)}, 0x6c, 1, 1, {{0}}};
  refused("embed LN segment ids without table", &e2, "go together");
  int64_t long_ids[2] = {1, 5};
  const int32_t ids5[5] = {0, 1, 2, 0, 1};
  mcase_t e3 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, long_ids, ids5), NULL, R(2, wd, 1), R(2, wd, 2), NULL, R(1, hd, 3), R(1, hd, 4)}, 0x6c, 1, 1, {{0}}};
  refused("embed LN sequence longer than the position table", &e3, "exceeds");
  mcase_t f1 = {"FusedMatMul", "com.microsoft", 17, 2, {R(3, xd, 1), R(3, xd, 2)}, 0, 1, 1, {{"transBatchA", 2, 1, NULL}}};
  refused("FusedMatMul transBatchA", &f1, "transBatchA");
  /* the reference and shape inference refuse a stash_type they do not compute and a scale that
   * does not broadcast */
  op_case_t oc;
  mi_error_t err = {0};
  int64_t d2[2] = {2, 3}, s2[1] = {2}, s3[1] = {3};
  mi_array_t *ins[2] = {R(2, d2, 5), R(1, s3, 6)};
  case_begin(&oc, "RMSNormalization", 23, 2, ins, 0x2, 1);
  mi_node_set_int(oc.g, oc.node, "stash_type", 0);
  case_refused(&oc, MI_ERR_UNSUPPORTED, &err);
  CHECK(strstr(err.message, "stash_type") != NULL, "stash_type named: %s", err.message);
  mi_array_destroy(ins[1]);
  ins[1] = R(1, s2, 7);
  case_begin(&oc, "RMSNormalization", 23, 2, ins, 0x2, 1);
  case_refused(&oc, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "scale") != NULL, "scale named: %s", err.message);
  mi_array_destroy(ins[0]);
  mi_array_destroy(ins[1]);
}

static void setup(void) { g_reg = open_plugins(); }
static void teardown(void) { mi_registry_destroy(g_reg); }

/* blis-cpu's RMSNormalization at each SIMD cap against the reference (odd row lengths). */
static void rms_each(mi_plugin_t *p) {
  int64_t lens[4] = {1, 7, 64, 333};
  for (int i = 0; i < 4; i++) {
    int64_t xd[2] = {5, lens[i]}, sd[1] = {lens[i]};
    mi_graph_t *g = mi_graph_create("rms");
    int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 2, xd), y = tval(g, "y");
    mi_array_t *s = R(1, sd, 50 + (uint64_t)i);
    int32_t sc = mi_graph_add_const_f32(g, "scale", 1, sd, s->data);
    int32_t n = mi_graph_add_node(g, "RMSNormalization", "rms", 2, (int32_t[]){x, sc}, 1, &y);
    mi_node_set_float(g, n, "epsilon", 1e-6f);
    mi_graph_add_output(g, y);
    g->opset = 23;
    mi_error_t err = {0};
    CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "rms shapes: %s", err.message);
    mi_array_t *got[4] = {0}, *want[4] = {0};
    mi_session_t *ss = session(g, p);
    CHECK(mi_session_fallback_count(ss) == 0, "RMSNormalization runs on blis-cpu");
    mi_session_destroy(ss);
    run_both(g, p, 60 + (uint64_t)i, got, want);
    float d = max_abs(got[0], want[0]);
    CHECK(d < 2e-6f, "len %lld: blis-cpu vs reference max abs %.3g", (long long)lens[i], d);
    destroy_outs(got, want);
    mi_array_destroy(s);
    mi_graph_destroy(g);
  }
}

static void blis_rms(void) { on_blis_cpu_each_simd(rms_each); }

/* blis-cpu's Gather with runtime indices (the embedding lookups above): rows of a [5, 3] table by
 * INT32 and INT64 ids, negative ones counting from the end; an index out of range fails the run in
 * one line. */
static void gather_each(mi_plugin_t *p) {
  int64_t td[2] = {5, 3}, id[2] = {2, 2};
  float tab[15];
  for (int i = 0; i < 15; i++) tab[i] = (float)i;
  for (int wide = 0; wide < 2; wide++) {
    mi_graph_t *g = mi_graph_create("gather");
    int32_t ids = tin(g, "ids", wide ? MI_DTYPE_INT64 : MI_DTYPE_INT32, 2, id), y = tval(g, "y");
    int32_t t = mi_graph_add_const_f32(g, "table", 2, td, tab);
    mi_graph_add_node(g, "Gather", "gather", 2, (int32_t[]){t, ids}, 1, &y);
    mi_graph_add_output(g, y);
    g->opset = 13;
    mi_error_t err = {0};
    CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "gather shapes: %s", err.message);
    mi_session_t *s = session(g, p);
    CHECK(mi_session_fallback_count(s) == 0, "Gather with runtime indices runs on blis-cpu");
    const int64_t v64[2][4] = {{4, 0, -1, 2}, {1, 5, 0, 0}};
    for (int bad = 0; bad < 2; bad++) {
      mi_array_t *x = mi_array_create(wide ? MI_DTYPE_INT64 : MI_DTYPE_INT32, 2, id), *out = NULL;
      for (int i = 0; i < 4; i++) {
        if (wide) ((int64_t *)x->data)[i] = v64[bad][i];
        else
          ((int32_t *)x->data)[i] = (int32_t)v64[bad][i];
      }
      int32_t rc = mi_session_run(s, (const mi_array_t *const *)&x, 1, &out, 1, &err);
      if (!bad) {
        const float want[12] = {12, 13, 14, 0, 1, 2, 12, 13, 14, 6, 7, 8};
        int64_t yd[3] = {2, 2, 3};
        CHECK(rc == MI_OK, "gather run: %s", err.message);
        if (out) expect_f32("blis-cpu Gather rows", out, 3, yd, want, 0);
      } else {
        CHECK(rc != MI_OK && strstr(err.message, "out of range") && !strchr(err.message, '\n'),
              "an index out of range fails the run in one line: %s", err.message);
      }
      mi_array_destroy(out);
      mi_array_destroy(x);
    }
    mi_session_destroy(s);
    mi_graph_destroy(g);
  }
}

static void blis_gather(void) { on_blis_cpu_each_simd(gather_each); }

static const tu_case_t tu_cases[] = {TU_CASE(skip_layernorm), TU_CASE(skip_simplified), TU_CASE(rms_norm),
                                     TU_CASE(gelus), TU_CASE(embed_layernorm), TU_CASE(fused_matmul), TU_CASE(fused_matmul_deferred), TU_CASE(malformed), TU_CASE(blis_rms), TU_CASE(blis_gather)};

TU_MAIN(setup, teardown)
