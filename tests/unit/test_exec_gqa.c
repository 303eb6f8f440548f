/* test_exec_gqa.c - com.microsoft GroupQueryAttention: the reference on values worked out by hand
 * (causal, two query heads on one K / V head, seqlens_k masking keys, past and present, packed
 * QKV), inferred shapes equal to the run's, refusals in one line; the loader's lowering to
 * standard ops against the node's reference (do_rotary too), and blis-cpu on the lowered graph
 * (no host step; with do_rotary and a past the positions from seqlens_k and the caches' rows
 * they pick run on the host), at every SIMD cap. */
#include "test_attn_util.h"

typedef struct gspec {
  int64_t b, s, past, nq, nkv, h;
  int packed;
  float scale, softcap;
  int64_t rot;     /* do_rotary with caches of 32 positions and rot / 2 columns (0: none) */
  int interleaved; /* rotary_interleaved */
} gspec_t;

static mi_graph_t *gqa_graph(const gspec_t *sp) {
  mi_graph_t *g = mi_graph_create("gqa");
  int64_t qd[3] = {sp->b, sp->s, (sp->packed ? sp->nq + 2 * sp->nkv : sp->nq) * sp->h}, kd[3] = {sp->b, sp->s, sp->nkv * sp->h},
          pd[4] = {sp->b, sp->nkv, sp->past, sp->h}, ld[1] = {sp->b};
  int32_t ins[9] = {tin(g, "q", MI_DTYPE_FLOAT32, 3, qd), -1, -1, -1, -1, -1, -1, -1, -1};
  if (!sp->packed) {
    ins[1] = tin(g, "k", MI_DTYPE_FLOAT32, 3, kd);
    ins[2] = tin(g, "v", MI_DTYPE_FLOAT32, 3, kd);
  }
  if (sp->past) {
    ins[3] = tin(g, "past_k", MI_DTYPE_FLOAT32, 4, pd);
    ins[4] = tin(g, "past_v", MI_DTYPE_FLOAT32, 4, pd);
  }
  ins[5] = tin(g, "seqlens_k", MI_DTYPE_INT32, 1, ld);
  int32_t total = sp->past + sp->s;
  ins[6] = mi_graph_add_tensor(g, "total", MI_DTYPE_INT32, 0, NULL);
  mi_graph_set_data(g, ins[6], &total, sizeof total);
  int32_t outs[3] = {mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present_key", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present_value", MI_DTYPE_UNDEFINED, -1, NULL)};
  if (sp->rot) {
    int64_t cd[2] = {32, sp->rot / 2};
    float c[32 * 32], s[32 * 32];
    uint64_t seed = 3;
    for (int64_t i = 0; i < cd[0] * cd[1]; i++) {
      float a = (float)(lcg(&seed) % 628) / 100.f;
      c[i] = cosf(a), s[i] = sinf(a);
    }
    ins[7] = mi_graph_add_const_f32(g, "cos", 2, cd, c);
    ins[8] = mi_graph_add_const_f32(g, "sin", 2, cd, s);
  }
  int32_t n = mi_graph_add_node(g, "GroupQueryAttention", "gqa", sp->rot ? 9 : 7, ins, 3, outs);
  free(g->nodes[n].domain);
  g->nodes[n].domain = strdup("com.microsoft");
  mi_node_set_int(g, n, "num_heads", sp->nq);
  mi_node_set_int(g, n, "kv_num_heads", sp->nkv);
  if (sp->scale != 0.f) mi_node_set_float(g, n, "scale", sp->scale);
  if (sp->softcap != 0.f) mi_node_set_float(g, n, "softcap", sp->softcap);
  if (sp->rot) mi_node_set_int(g, n, "do_rotary", 1);
  if (sp->interleaved) mi_node_set_int(g, n, "rotary_interleaved", 1);
  for (int32_t k = 0; k < 3; k++) mi_graph_add_output(g, outs[k]);
  g->opset = 17;
  return g;
}

/* Inputs: float ones from vals in order (else random), seqlens_k from lens (else P + S - 1). */
static void gqa_inputs(const mi_graph_t *g, const gspec_t *sp, const float *const *vals, const int32_t *lens, uint64_t seed,
                       mi_array_t **in, int32_t *n) {
  *n = 0;
  for (int32_t k = 0; k < g->input_count; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    int64_t cnt;
    mi_array_t *a = input_array(g, k, &cnt);
    for (int64_t i = 0; i < cnt; i++)
      if (t->dtype == MI_DTYPE_INT32) ((int32_t *)a->data)[i] = lens ? lens[i] : (int32_t)(sp->past + sp->s - 1);
      else
        ((float *)a->data)[i] = vals && vals[k] ? vals[k][i] : rnd(&seed);
    in[(*n)++] = a;
  }
}

/* Q = K = V = [[1, 0], [0, 1]] (B 1, S 2, h 2), scale ln 3: causal gives [1, 0] and [.25, .75];
 * two query heads (both I) on one K / V head give each head that; seqlens_k 0 keeps key 0 only:
 * [1, 0] twice. A past key [0, 0] with value [2, 2] (seqlens 2): query 0 sees past and key 0
 * (1 : 3): [.25 * 2 + .75, .25 * 2] = [1.25, .5]; query 1 all three (1 : 1 : 3):
 * [.2 * 2 + .2, .2 * 2 + .6] = [.6, 1]. */
static void hand_values(void) {
  const float l3 = logf(3.f);
  static const float x[4] = {1, 0, 0, 1}, x2[8] = {1, 0, 1, 0, 0, 1, 0, 1};
  static const float packed[12] = {1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}; /* q | k | v per row */
  struct {
    const char *what;
    gspec_t sp;
    const float *vals[5];
    const int32_t *lens;
    float want[8];
    int64_t yn;
  } cases[] = {
      {"causal", {1, 2, 0, 1, 1, 2, 0, l3, 0, 0, 0}, {x, x, x}, NULL, {1, 0, .25f, .75f}, 2},
      {"two query heads", {1, 2, 0, 2, 1, 2, 0, l3, 0, 0, 0}, {x2, x, x}, NULL, {1, 0, 1, 0, .25f, .75f, .25f, .75f}, 4},
      {"seqlens_k", {1, 2, 0, 1, 1, 2, 0, l3, 0, 0, 0}, {x, x, x}, (const int32_t[]){0}, {1, 0, 1, 0}, 2},
      {"past", {1, 2, 1, 1, 1, 2, 0, l3, 0, 0, 0}, {x, x, x, (const float[]){0, 0}, (const float[]){2, 2}}, NULL, {1.25f, .5f, .6f, 1.f}, 2},
      {"packed", {1, 2, 0, 1, 1, 2, 1, l3, 0, 0, 0}, {packed}, NULL, {1, 0, .25f, .75f}, 2},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    mi_graph_t *g = gqa_graph(&cases[c].sp);
    mi_array_t *in[6] = {0}, *out[3] = {0};
    int32_t nin;
    gqa_inputs(g, &cases[c].sp, cases[c].vals, cases[c].lens, 1, in, &nin);
    ref_run(g, in, nin, out);
    expect_f32(cases[c].what, out[0], 3, (const int64_t[]){1, 2, cases[c].yn}, cases[c].want, 1e-6f);
    free_arrays(out, 3);
    free_arrays(in, nin);
    mi_graph_destroy(g);
  }
}

static void refused_attr(const char *attr, int64_t v, const char *want) {
  const gspec_t sp = {1, 2, 0, 4, 2, 8, 0, 0, 0, 0, 0};
  mi_graph_t *g = gqa_graph(&sp);
  mi_node_set_int(g, 0, attr, v);
  expect_refused(g, "gqa", want);
}

static void malformed(void) {
  refused_attr("do_rotary", 1, "do_rotary");
  refused_attr("local_window_size", 16, "local_window_size = 16");
  refused_attr("smooth_softmax", 1, "smooth_softmax");
  refused_attr("kv_num_heads", 3, "multiple of kv_num_heads");
}

static const gspec_t k_forms[] = {
    /* b  s  past nq nkv h  packed scale softcap rot interleaved */
    {2, 5, 0, 4, 2, 8, 0, 0, 0, 0, 0},
    {2, 1, 6, 4, 2, 8, 0, 0, 0, 0, 0},
    {1, 3, 4, 4, 1, 8, 0, 0, 0, 0, 0},
    {2, 1, 5, 6, 2, 8, 1, 0, 0, 0, 0},
    {1, 4, 3, 4, 2, 8, 0, 0, 2.f, 0, 0},
    {1, 4, 0, 2, 2, 8, 0, 0.2f, 0, 0, 0},
    {2, 5, 0, 4, 2, 8, 0, 0, 0, 8, 0},
    {2, 1, 6, 4, 2, 8, 0, 0, 0, 8, 0},
    {1, 3, 4, 4, 2, 8, 0, 0, 0, 4, 1},
    {2, 1, 5, 6, 2, 8, 1, 0, 0, 8, 0},
};

static void forms_on(mi_plugin_t *p) {
  for (size_t f = 0; f < sizeof k_forms / sizeof k_forms[0]; f++) {
    gspec_t sp = k_forms[f];
    mi_graph_t *g = gqa_graph(&sp);
    mi_array_t *in[6] = {0};
    int32_t nin, lens[2] = {(int32_t)(sp.past + sp.s - 1), (int32_t)(sp.past + sp.s - 1)};
    if (f == 0) lens[1] = 2; /* a right-padded prompt */
    gqa_inputs(g, &sp, NULL, lens, 5 + f, in, &nin);
    /* do_rotary with a past: the positions from seqlens_k (Cast, Add, Sub, Add: integer
     * arithmetic) run on the host, their INT64 Unsqueeze (a move) and the cos / sin Gathers by them
     * on blis-cpu (runtime indices); without one the positions are 0 .. S - 1, from shapes alone,
     * and all of it folds */
    lowered_form(p, f, g, in, nin, NULL, sp.rot && sp.past ? 4 : 0, 0);
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
