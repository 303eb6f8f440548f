/* test_exec_onnx_attn.c - ONNX Attention (opset 23): the reference on values worked out by hand
 * (3D and 4D, bool and float masks, is_causal, GQA, qk_matmul_output), inferred shapes equal to
 * the run's, refusals in one line; the loader's lowering to standard ops against the node's
 * reference, and blis-cpu on the lowered graph (a bool mask's Where is its one host step) at
 * every SIMD cap. */
#include "test_attn_util.h"

typedef struct ospec {
  int64_t b, s, l, nq, nkv, h, hv;
  int rank;     /* of Q, K, V: 3 or 4 */
  int mask;     /* 0 none, 1 bool [B, Nq, S, T], 2 float [S, T], 3 float with a short last dim */
  int causal;   /* is_causal */
  int64_t past; /* past length (0: none) */
  int present;  /* present_key / present_value */
  int qk;       /* qk_matmul_output_mode + 1 (0: no such output) */
  float scale, softcap;
} ospec_t;

typedef struct ovals {
  const float *q, *k, *v, *mask;
  const uint8_t *bmask;
} ovals_t;

static mi_graph_t *oa_graph(const ospec_t *sp) {
  mi_graph_t *g = mi_graph_create("oattn");
  int64_t t = sp->l + sp->past;
  int64_t qd[4] = {sp->b, sp->s, sp->nq * sp->h}, kd[4] = {sp->b, sp->l, sp->nkv * sp->h},
          vd[4] = {sp->b, sp->l, sp->nkv * sp->hv}, md[4] = {sp->b, sp->nq, sp->s, t},
          pkd[4] = {sp->b, sp->nkv, sp->past, sp->h}, pvd[4] = {sp->b, sp->nkv, sp->past, sp->hv};
  if (sp->rank == 4) {
    int64_t q4[4] = {sp->b, sp->nq, sp->s, sp->h}, k4[4] = {sp->b, sp->nkv, sp->l, sp->h},
            v4[4] = {sp->b, sp->nkv, sp->l, sp->hv};
    memcpy(qd, q4, sizeof qd), memcpy(kd, k4, sizeof kd), memcpy(vd, v4, sizeof vd);
  }
  int32_t ins[6] = {tin(g, "q", MI_DTYPE_FLOAT32, sp->rank, qd), tin(g, "k", MI_DTYPE_FLOAT32, sp->rank, kd),
                    tin(g, "v", MI_DTYPE_FLOAT32, sp->rank, vd), -1, -1, -1};
  if (sp->mask == 1) ins[3] = tin(g, "mask", MI_DTYPE_BOOL, 4, md);
  else if (sp->mask >= 2) {
    int64_t st[2] = {sp->s, sp->mask == 3 ? t - 1 : t};
    ins[3] = tin(g, "mask", MI_DTYPE_FLOAT32, 2, st);
  }
  if (sp->past) {
    ins[4] = tin(g, "past_k", MI_DTYPE_FLOAT32, 4, pkd);
    ins[5] = tin(g, "past_v", MI_DTYPE_FLOAT32, 4, pvd);
  }
  int32_t nin = sp->past ? 6 : sp->mask ? 4
                                        : 3,
          nout = sp->qk ? 4 : sp->present ? 3
                                          : 1;
  int32_t outs[4] = {mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present_key", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present_value", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "qk", MI_DTYPE_UNDEFINED, -1, NULL)};
  int32_t n = mi_graph_add_node(g, "Attention", "attn", nin, ins, nout, outs);
  if (sp->rank == 3) {
    mi_node_set_int(g, n, "q_num_heads", sp->nq);
    mi_node_set_int(g, n, "kv_num_heads", sp->nkv);
  }
  if (sp->causal) mi_node_set_int(g, n, "is_causal", 1);
  if (sp->qk) mi_node_set_int(g, n, "qk_matmul_output_mode", sp->qk - 1);
  if (sp->scale != 0.f) mi_node_set_float(g, n, "scale", sp->scale);
  if (sp->softcap != 0.f) mi_node_set_float(g, n, "softcap", sp->softcap);
  for (int32_t k = 0; k < nout; k++) mi_graph_add_output(g, outs[k]);
  g->opset = 23;
  return g;
}

static void oa_inputs(const mi_graph_t *g, const ovals_t *v, uint64_t seed, mi_array_t **in, int32_t *n) {
  *n = 0;
  for (int32_t k = 0; k < g->input_count; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    int64_t cnt;
    mi_array_t *a = input_array(g, k, &cnt);
    if (t->dtype == MI_DTYPE_BOOL) {
      uint8_t *m = a->data;
      for (int64_t i = 0; i < cnt; i++) /* key 0 of each row kept: no row masked whole */
        m[i] = v && v->bmask ? v->bmask[i] : (uint8_t)(i % t->dims[3] == 0 || lcg(&seed) % 4 != 0);
    } else {
      const float *src = !v                         ? NULL
                         : !strcmp(t->name, "q")    ? v->q
                         : !strcmp(t->name, "k")    ? v->k
                         : !strcmp(t->name, "v")    ? v->v
                         : !strcmp(t->name, "mask") ? v->mask
                                                    : NULL;
      float *f = a->data;
      for (int64_t i = 0; i < cnt; i++) f[i] = src ? src[i] : rnd(&seed);
    }
    in[(*n)++] = a;
  }
}

/* Q = K = V = [[1, 0], [0, 1]] per head (B 1, S = L = 2, h 2), scale ln 3: 3 : 1. */
static void hand_case(const char *what, ospec_t sp, const ovals_t *extra, const float *want, int64_t yn,
                      const float *want_qk) {
  static const float x[4] = {1, 0, 0, 1}, x2[8] = {1, 0, 1, 0, 0, 1, 0, 1}; /* 2 heads, [S, 2 * h] */
  ovals_t v = extra ? *extra : (ovals_t){0};
  v.q = sp.nq == 2 ? x2 : x;
  v.k = v.v = x;
  mi_graph_t *g = oa_graph(&sp);
  mi_array_t *in[6] = {0}, *out[4] = {0};
  int32_t nin;
  oa_inputs(g, &v, 1, in, &nin);
  ref_run(g, in, nin, out);
  int64_t yd[4] = {1, 2, yn}, y4[4] = {1, 1, 2, 2}, qd[4] = {1, sp.nq, 2, 2};
  expect_f32(what, out[0], sp.rank, sp.rank == 4 ? y4 : yd, want, 1e-6f);
  if (want_qk) expect_f32(what, out[3], 4, qd, want_qk, 1e-6f);
  free_arrays(out, 4);
  free_arrays(in, nin);
  mi_graph_destroy(g);
}

static void hand_values(void) {
  const float l3 = logf(3.f);
  const ospec_t base = {1, 2, 2, 1, 1, 2, 2, 3, 0, 0, 0, 0, 0, l3, 0};
  ospec_t sp = base;
  hand_case("3D", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, 2, NULL);
  sp.rank = 4;
  hand_case("4D", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, 2, NULL);
  sp = base;
  sp.mask = 1; /* query 0 keeps key 0, query 1 key 1 */
  hand_case("bool mask", sp, &(ovals_t){.bmask = (const uint8_t[]){1, 0, 0, 1}}, (const float[]){1, 0, 0, 1}, 2, NULL);
  sp.mask = 2; /* -ln 3 on query 0's key 0: even */
  hand_case("float mask", sp, &(ovals_t){.mask = (const float[]){-l3, 0, 0, 0}}, (const float[]){.5f, .5f, .25f, .75f}, 2,
            NULL);
  sp = base;
  sp.causal = 1;
  hand_case("is_causal", sp, NULL, (const float[]){1, 0, .25f, .75f}, 2, NULL);
  sp = base;
  sp.nq = 2; /* GQA: two query heads (the same values) on one K / V head */
  hand_case("GQA", sp, NULL, (const float[]){.75f, .25f, .75f, .25f, .25f, .75f, .25f, .75f}, 4, NULL);
  sp = base;
  sp.qk = 4; /* mode 3: the softmax */
  hand_case("qk softmax", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, 2, (const float[]){.75f, .25f, .25f, .75f});
  sp.qk = 1; /* mode 0: the scaled scores */
  hand_case("qk scores", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, 2, (const float[]){l3, 0, 0, l3});
}

static void refused(const ospec_t *sp, int64_t opset, const char *want) {
  mi_graph_t *g = oa_graph(sp);
  g->opset = opset;
  expect_refused(g, "attn", want);
}

static void malformed(void) {
  const ospec_t ok = {2, 3, 3, 4, 2, 4, 4, 3, 0, 0, 0, 0, 0, 0, 0};
  ospec_t shortm = ok, heads = ok, cap = ok, mode = ok;
  shortm.mask = 3;
  heads.nq = 3, heads.nkv = 2;
  cap.softcap = -1.f;
  mode.qk = 5;
  refused(&ok, 22, "from opset 23 on");
  refused(&shortm, 23, "shorter mask padded");
  refused(&heads, 23, "not a multiple of kv heads");
  refused(&cap, 23, "softcap");
  refused(&mode, 23, "qk_matmul_output_mode = 4");
}

static const ospec_t k_forms[] = {
    /* b  s  l  nq nkv h  hv rank mask causal past present qk scale softcap */
    {2, 5, 5, 4, 4, 4, 4, 3, 0, 0, 0, 0, 0, 0, 0},
    {2, 4, 7, 4, 4, 4, 6, 4, 0, 0, 0, 0, 0, 0, 0},
    {2, 5, 5, 6, 2, 4, 4, 3, 1, 0, 0, 0, 0, 0, 0},
    {2, 5, 6, 4, 1, 4, 4, 4, 2, 0, 0, 1, 0, 0.7f, 0},
    {2, 6, 6, 4, 2, 4, 4, 3, 2, 1, 0, 0, 0, 0, 1.5f},
    {2, 3, 3, 4, 2, 4, 4, 3, 0, 1, 4, 1, 0, 0, 0},
    {2, 3, 4, 4, 2, 4, 4, 3, 2, 0, 0, 0, 2, 0, 3.f},
    {2, 3, 4, 4, 2, 4, 4, 4, 2, 0, 0, 0, 3, 0, 3.f},
};

/* The lowered graph on the reference (p NULL) or on blis-cpu equals the node's reference. */
static void forms_on(mi_plugin_t *p) {
  for (size_t f = 0; f < sizeof k_forms / sizeof k_forms[0]; f++) {
    ospec_t sp = k_forms[f];
    mi_graph_t *g = oa_graph(&sp);
    mi_array_t *in[6] = {0};
    int32_t nin;
    oa_inputs(g, NULL, 5 + f, in, &nin);
    lowered_form(p, f, g, in, nin, "Attention", sp.mask == 1, 0); /* a bool mask's Where: one host step */
    free_arrays(in, nin);
    mi_graph_destroy(g);
  }
}

static void lowered_forms(void) { forms_on(NULL); }
static void blis_cpu(void) { on_blis_cpu_each_simd(forms_on); }

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(hand_values), TU_CASE(malformed), TU_CASE(lowered_forms),
                                     TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
