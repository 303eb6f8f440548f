/* test_exec_mha.c - com.microsoft MultiHeadAttention: the reference on values worked out by hand
 * (each key_padding_mask form, unidirectional, bias, past_key / past_value and present, cross
 * attention, key and value as heads), inferred shapes equal to the run's, the forms not covered
 * refused in one line; then the loader's lowering to standard ops against the node's reference,
 * and blis-cpu on the lowered graph with no host step, at every SIMD cap. */
#include "test_attn_util.h"

typedef struct mspec {
  int64_t b, s, l, d, dv, heads;
  int bias;     /* a bias input */
  int mask;     /* 0 none, 1 [B] lengths, 2 [B, T], 3 [B, S, T], 4 [2B] (refused) */
  int unidir;   /* unidirectional */
  int64_t past; /* past length (0: none) */
  int abias;    /* 0 none, 1 [B, N, S, T], 2 [1, 1, S, T] */
  int present;  /* present_key / present_value outputs */
  int kv4;      /* key and value as heads [B, N, L, h] */
  float scale;
} mspec_t;

/* Named input values: given, else random (a mask valid for its form). */
typedef struct mvals {
  const float *q, *k, *v, *bias, *pk, *pv, *abias;
  const int32_t *mask;
} mvals_t;

/* q, k, v -> MultiHeadAttention -> y (and present_key, present_value); graph inputs in that order,
 * then mask, attention_bias, past_key, past_value. */
static mi_graph_t *mha_graph(const mspec_t *sp, const mvals_t *v) {
  mi_graph_t *g = mi_graph_create("mha");
  int64_t t = sp->l + sp->past, h = sp->d / sp->heads, hv = sp->dv / sp->heads, nb = 2 * sp->d + sp->dv;
  int64_t qd[3] = {sp->b, sp->s, sp->d}, kd[4] = {sp->b, sp->l, sp->d}, vd[4] = {sp->b, sp->l, sp->dv}, bd[1] = {nb},
          md[3] = {sp->b, t, 0}, ad[4] = {sp->b, sp->heads, sp->s, t}, pkd[4] = {sp->b, sp->heads, sp->past, h},
          pvd[4] = {sp->b, sp->heads, sp->past, hv};
  int32_t mrank = sp->mask == 1 || sp->mask == 4 ? 1 : sp->mask == 2 ? 2
                                                                     : 3;
  if (sp->mask == 3) md[1] = sp->s, md[2] = t;
  if (sp->mask == 4) md[0] = 2 * sp->b;
  if (sp->kv4) {
    kd[1] = vd[1] = sp->heads, kd[2] = vd[2] = sp->l, kd[3] = h, vd[3] = hv;
  }
  int32_t ins[8] = {tin(g, "q", MI_DTYPE_FLOAT32, 3, qd), tin(g, "k", MI_DTYPE_FLOAT32, sp->kv4 ? 4 : 3, kd),
                    tin(g, "v", MI_DTYPE_FLOAT32, sp->kv4 ? 4 : 3, vd), -1, -1, -1, -1, -1};
  if (sp->bias) {
    float *bias = malloc(sizeof *bias * (size_t)nb);
    uint64_t seed = 77;
    for (int64_t i = 0; i < nb; i++) bias[i] = v && v->bias ? v->bias[i] : rnd(&seed);
    ins[3] = mi_graph_add_const_f32(g, "bias", 1, bd, bias);
    free(bias);
  }
  if (sp->mask) ins[4] = tin(g, "mask", MI_DTYPE_INT32, mrank, md);
  if (sp->abias) {
    if (sp->abias == 2) ad[0] = ad[1] = 1;
    ins[5] = tin(g, "attention_bias", MI_DTYPE_FLOAT32, 4, ad);
  }
  if (sp->past) {
    ins[6] = tin(g, "past_k", MI_DTYPE_FLOAT32, 4, pkd);
    ins[7] = tin(g, "past_v", MI_DTYPE_FLOAT32, 4, pvd);
  }
  int32_t nin = sp->past ? 8 : sp->abias ? 6
                           : sp->mask    ? 5
                           : sp->bias    ? 4
                                         : 3;
  int32_t outs[3] = {mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present_key", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present_value", MI_DTYPE_UNDEFINED, -1, NULL)};
  int32_t n = mi_graph_add_node(g, "MultiHeadAttention", "mha", nin, ins, sp->present ? 3 : 1, outs);
  free(g->nodes[n].domain);
  g->nodes[n].domain = strdup("com.microsoft");
  mi_node_set_int(g, n, "num_heads", sp->heads);
  if (sp->unidir) mi_node_set_int(g, n, "unidirectional", 1);
  if (sp->scale != 0.f) mi_node_set_float(g, n, "scale", sp->scale);
  for (int32_t k = 0; k < (sp->present ? 3 : 1); k++) mi_graph_add_output(g, outs[k]);
  g->opset = 17;
  return g;
}

static void mha_inputs(const mi_graph_t *g, const mspec_t *sp, const mvals_t *v, uint64_t seed, mi_array_t **in,
                       int32_t *n) {
  *n = 0;
  for (int32_t k = 0; k < g->input_count; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    int64_t cnt;
    mi_array_t *a = input_array(g, k, &cnt);
    if (!strcmp(t->name, "mask")) {
      int32_t *m = a->data;
      for (int64_t i = 0; i < cnt; i++)
        m[i] = v && v->mask    ? v->mask[i]
               : sp->mask == 1 ? (int32_t)(1 + lcg(&seed) % (uint64_t)(sp->l + sp->past))
                               : (int32_t)(lcg(&seed) % 4 != 0);
    } else {
      const float *src = !v                           ? NULL
                         : !strcmp(t->name, "q")      ? v->q
                         : !strcmp(t->name, "k")      ? v->k
                         : !strcmp(t->name, "v")      ? v->v
                         : !strcmp(t->name, "past_k") ? v->pk
                         : !strcmp(t->name, "past_v") ? v->pv
                                                      : v->abias;
      float *f = a->data;
      for (int64_t i = 0; i < cnt; i++) f[i] = src ? src[i] : rnd(&seed);
    }
    in[(*n)++] = a;
  }
}

/* One hand case: Q = K = V = [[1, 0], [0, 1]] (B 1, S = L = 2, D 2, one head) unless v says
 * otherwise, scale ln 3: a key that scores 1 against one that scores 0 weighs 3 : 1. */
static void hand_case(const char *what, mspec_t sp, const mvals_t *extra, const float *want, const float *want_pk,
                      const float *want_pv) {
  static const float x[4] = {1, 0, 0, 1};
  mvals_t v = extra ? *extra : (mvals_t){0};
  if (!v.q) v.q = x;
  if (!v.k) v.k = x;
  if (!v.v) v.v = x;
  mi_graph_t *g = mha_graph(&sp, &v);
  mi_array_t *in[8] = {0}, *out[3] = {0};
  int32_t nin;
  mha_inputs(g, &sp, &v, 1, in, &nin);
  ref_run(g, in, nin, out);
  int64_t yd[3] = {1, sp.s, sp.dv}, pd[4] = {1, 1, sp.l + sp.past, 2};
  expect_f32(what, out[0], 3, yd, want, 1e-6f);
  if (want_pk) expect_f32(what, out[1], 4, pd, want_pk, 0);
  if (want_pv) expect_f32(what, out[2], 4, pd, want_pv, 0);
  free_arrays(out, 3);
  free_arrays(in, nin);
  mi_graph_destroy(g);
}

static void hand_values(void) {
  const float l3 = logf(3.f);
  const mspec_t base = {1, 2, 2, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, l3};
  mspec_t sp = base;
  hand_case("no mask", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, NULL, NULL);
  sp.mask = 1;
  hand_case("key lengths", sp, &(mvals_t){.mask = (const int32_t[]){1}}, (const float[]){1, 0, 1, 0}, NULL, NULL);
  sp.mask = 2;
  hand_case("2D mask", sp, &(mvals_t){.mask = (const int32_t[]){0, 1}}, (const float[]){0, 1, 0, 1}, NULL, NULL);
  sp.mask = 3;
  hand_case("3D mask", sp, &(mvals_t){.mask = (const int32_t[]){1, 0, 0, 1}}, (const float[]){1, 0, 0, 1}, NULL, NULL);
  sp = base;
  sp.unidir = 1;
  hand_case("unidirectional", sp, NULL, (const float[]){1, 0, .25f, .75f}, NULL, NULL);
  sp = base;
  sp.bias = 1; /* V's bias 1 */
  hand_case("bias", sp, &(mvals_t){.bias = (const float[]){0, 0, 0, 0, 1, 1}}, (const float[]){1.75f, 1.25f, 1.25f, 1.75f},
            NULL, NULL);
  sp = base;
  sp.past = 1, sp.present = 1; /* past key [0, 0] (scores 0), value [2, 2]: 1 : 3 : 1 for query 0 */
  hand_case("past", sp, &(mvals_t){.pk = (const float[]){0, 0}, .pv = (const float[]){2, 2}},
            (const float[]){1.f, .6f, .6f, 1.f}, (const float[]){0, 0, 1, 0, 0, 1}, (const float[]){2, 2, 1, 0, 0, 1});
  sp = base;
  sp.l = 1; /* one key: every query takes its value */
  hand_case("cross", sp, &(mvals_t){.k = (const float[]){1, 0}, .v = (const float[]){5, 7}}, (const float[]){5, 7, 5, 7},
            NULL, NULL);
  sp = base;
  sp.kv4 = 1, sp.present = 1; /* key and value as heads [1, 1, 2, 2]: the same values */
  hand_case("kv as heads", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, (const float[]){1, 0, 0, 1},
            (const float[]){1, 0, 0, 1});
}

static void refused(const mspec_t *sp, void (*edit)(mi_graph_t *), const char *want) {
  mi_graph_t *g = mha_graph(sp, NULL);
  if (edit) edit(g);
  expect_refused(g, "mha", want);
}

/* query [B, S, N, 3, H]: the packed QKV form */
static void packed_qkv(mi_graph_t *g) {
  mi_tensor_t *q = &g->tensors[g->nodes[0].inputs[0]];
  q->rank = 5, q->dims[2] = 2, q->dims[3] = 3, q->dims[4] = 4;
}
static void packed_kv(mi_graph_t *g) {
  mi_tensor_t *k = &g->tensors[g->nodes[0].inputs[1]];
  k->rank = 5, k->dims[2] = 2, k->dims[3] = 2, k->dims[4] = 4;
}
static void no_key(mi_graph_t *g) { g->nodes[0].inputs[1] = -1; }
/* a second node with the 4 outputs (the qk one too), the first kept out of the way */
static void qk_output(mi_graph_t *g) {
  int32_t o[4] = {g->nodes[0].outputs[0], mi_graph_add_tensor(g, "pk", 0, -1, NULL), mi_graph_add_tensor(g, "pv", 0, -1, NULL),
                  mi_graph_add_tensor(g, "qk", 0, -1, NULL)};
  int32_t n = mi_graph_add_node(g, "MultiHeadAttention", "mha", 3, g->nodes[0].inputs, 4, o);
  free(g->nodes[n].domain);
  g->nodes[n].domain = strdup("com.microsoft");
  mi_node_set_int(g, n, "num_heads", 2);
  g->nodes[0].output_count = 1;
  g->nodes[0].outputs[0] = mi_graph_add_tensor(g, "unused", 0, -1, NULL);
  g->tensors[g->nodes[0].outputs[0]].producer = 0;
  g->tensors[o[0]].producer = n;
  free(g->nodes[0].name);
  g->nodes[0].name = strdup("other");
}

static void malformed(void) {
  const mspec_t ok = {2, 3, 3, 8, 8, 2, 1, 0, 0, 0, 0, 0, 0, 0};
  mspec_t m2b = ok, kvb = ok, uni = ok, odd = ok;
  m2b.mask = 4;
  kvb.kv4 = 1;
  uni.unidir = 1, uni.l = 4;
  odd.heads = 3;
  refused(&m2b, NULL, "3 * batch + 2");
  refused(&kvb, NULL, "bias with key and value as heads");
  refused(&uni, NULL, "unidirectional with key length 4");
  refused(&odd, NULL, "not a known multiple of num_heads");
  refused(&ok, packed_qkv, "packed QKV");
  refused(&ok, packed_kv, "packed KV");
  refused(&ok, no_key, "key and value are required");
  refused(&ok, qk_output, "qk output");
}

static const mspec_t k_forms[] = {
    /* b  s  l  d   dv  heads bias mask uni past abias present kv4 scale */
    {2, 5, 5, 16, 16, 2, 1, 0, 0, 0, 0, 0, 0, 0},
    {2, 4, 7, 16, 24, 4, 1, 1, 0, 0, 0, 0, 0, 0},
    {2, 5, 6, 16, 16, 4, 0, 2, 0, 0, 1, 0, 0, 0.3f},
    {2, 5, 6, 16, 16, 4, 1, 3, 0, 0, 2, 0, 0, 0},
    {2, 6, 6, 16, 16, 2, 1, 2, 1, 0, 0, 1, 0, 0},
    {2, 3, 3, 16, 16, 2, 1, 2, 0, 4, 0, 1, 0, 0},
    {2, 1, 1, 16, 16, 2, 1, 1, 1, 6, 0, 1, 0, 0},
    {2, 4, 7, 16, 24, 4, 0, 2, 0, 0, 0, 1, 1, 0},
};

/* The lowered graph on the reference and on blis-cpu (with no host step, when p) equals the
 * node's reference. */
static void forms_on(mi_plugin_t *p) {
  for (size_t f = 0; f < sizeof k_forms / sizeof k_forms[0]; f++) {
    mspec_t sp = k_forms[f];
    mi_graph_t *g = mha_graph(&sp, NULL);
    mi_array_t *in[8] = {0};
    int32_t nin;
    mha_inputs(g, &sp, NULL, 5 + f, in, &nin);
    lowered_form(p, f, g, in, nin, NULL, 0, 0);
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
