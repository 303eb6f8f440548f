/* test_exec_rotary.c - ONNX RotaryEmbedding (opset 23) and com.microsoft RotaryEmbedding: the
 * reference on values worked out by hand (halves and interleaved pairs, a partial rotary dim,
 * position_ids as rows and as com.microsoft's offset), inferred shapes equal to the run's,
 * refusals in one line; the loader's lowering to standard ops against the node's reference, and
 * blis-cpu on the lowered graph (host steps only for the offset form's position arithmetic), at
 * every SIMD cap. */
#include "test_attn_util.h"

typedef struct rspec {
  int ms; /* com.microsoft (inputs X, position_ids, cos, sin) */
  int64_t b, s, n, h, r;
  int rank; /* of X: 3 [B, S, N * H] or 4 [B, N, S, H] */
  int pos;  /* 0 none (ONNX: caches [B, S, r / 2]), 1 [B, S], 2 [1] (com.microsoft) */
  int interleaved;
  int rdim; /* write rotary_embedding_dim */
} rspec_t;

enum { MAXPOS = 16 };

/* x -> RotaryEmbedding -> y, the caches constants (given, else random angles). */
static mi_graph_t *rot_graph(const rspec_t *sp, const float *cosv, const float *sinv) {
  mi_graph_t *g = mi_graph_create("rot");
  int64_t xd[4] = {sp->b, sp->s, sp->n * sp->h}, cd[3] = {MAXPOS, sp->r / 2}, pd[2] = {sp->b, sp->s};
  if (sp->rank == 4) xd[1] = sp->n, xd[2] = sp->s, xd[3] = sp->h;
  if (!sp->pos) cd[0] = sp->b, cd[1] = sp->s, cd[2] = sp->r / 2;
  int32_t crank = sp->pos ? 2 : 3;
  int64_t cn = cd[0] * cd[1] * (crank == 3 ? cd[2] : 1);
  float *c = malloc(sizeof *c * (size_t)cn), *s = malloc(sizeof *s * (size_t)cn);
  uint64_t seed = 5;
  for (int64_t i = 0; i < cn; i++) {
    float a = (float)(lcg(&seed) % 628) / 100.f;
    c[i] = cosv ? cosv[i] : cosf(a);
    s[i] = sinv ? sinv[i] : sinf(a);
  }
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, sp->rank, xd), tc = mi_graph_add_const_f32(g, "cos", crank, cd, c),
          ts = mi_graph_add_const_f32(g, "sin", crank, cd, s), tp = -1;
  if (sp->pos == 1) tp = tin(g, "pos", MI_DTYPE_INT64, 2, pd);
  if (sp->pos == 2) tp = tin(g, "pos", MI_DTYPE_INT64, 1, (const int64_t[]){1});
  int32_t ins[4] = {x, tc, ts, tp}, msins[4] = {x, tp, tc, ts};
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = mi_graph_add_node(g, "RotaryEmbedding", "rot", sp->ms ? 4 : sp->pos ? 4
                                                                                  : 3,
                                sp->ms ? msins : ins, 1, &y);
  if (sp->ms) {
    free(g->nodes[n].domain);
    g->nodes[n].domain = strdup("com.microsoft");
  }
  if (sp->rank == 3) mi_node_set_int(g, n, "num_heads", sp->n);
  if (sp->interleaved) mi_node_set_int(g, n, "interleaved", 1);
  if (sp->rdim) mi_node_set_int(g, n, "rotary_embedding_dim", sp->r);
  mi_graph_add_output(g, y);
  g->opset = sp->ms ? 17 : 23;
  free(c), free(s);
  return g;
}

static void rot_inputs(const mi_graph_t *g, const rspec_t *sp, const float *xv, const int64_t *pv, uint64_t seed,
                       mi_array_t **in, int32_t *n) {
  *n = 0;
  for (int32_t k = 0; k < g->input_count; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    int64_t cnt;
    mi_array_t *a = input_array(g, k, &cnt);
    for (int64_t i = 0; i < cnt; i++)
      if (t->dtype == MI_DTYPE_INT64)
        ((int64_t *)a->data)[i] = pv ? pv[i] : (int64_t)(lcg(&seed) % (uint64_t)(sp->pos == 2 ? MAXPOS - sp->s : MAXPOS));
      else
        ((float *)a->data)[i] = xv ? xv[i] : rnd(&seed);
    in[(*n)++] = a;
  }
}

/* One head of 4 values [1, 2, 3, 4], B 1, S 1; cache row p (0, or position_ids 3 / offset 3)
 * cos 0, sin 1 (a quarter turn) on pair 0 and cos 1, sin 0 on pair 1:
 *   halves (0, 2), (1, 3): [1 * 0 - 3 * 1, 2, 3 * 0 + 1 * 1, 4] = [-3, 2, 1, 4]
 *   pairs (0, 1), (2, 3):  [1 * 0 - 2 * 1, 2 * 0 + 1 * 1, 3, 4] = [-2, 1, 3, 4]
 * and with r = 2 (caches of one value a row, row 3 a quarter turn) only the first pair turns:
 * [-2, 1, 3, 4] either way. */
static void hand_values(void) {
  static const float x[4] = {1, 2, 3, 4};
  float c[MAXPOS * 2], s[MAXPOS * 2];
  for (int i = 0; i < MAXPOS * 2; i++) c[i] = s[i] = 7.f; /* rows that must not be read */
  c[3 * 2] = 0, s[3 * 2] = 1, c[3 * 2 + 1] = 1, s[3 * 2 + 1] = 0;
  c[0] = 0, s[0] = 1, c[1] = 1, s[1] = 0; /* row 0: the [B, S, r / 2] caches of the no-position_ids form */
  c[3] = 0, s[3] = 1;                     /* row 3 of the r = 2 caches (one value a row) */
  static const float half_want[4] = {-3, 2, 1, 4}, pair_want[4] = {-2, 1, 3, 4};
  const int64_t xd[3] = {1, 1, 4}, x4[4] = {1, 1, 1, 4};
  for (int f = 0; f < 10; f++) {
    rspec_t sp = {f >= 5, 1, 1, 1, 4, 4, f % 2 ? 4 : 3, f % 5 == 4 ? 0 : 1, f % 5 == 2 || f % 5 == 3, 0};
    if (sp.ms && sp.pos == 0) sp.pos = 2; /* com.microsoft: the offset form instead */
    if (f % 5 == 3) sp.r = 2, sp.rdim = 1;
    mi_graph_t *g = rot_graph(&sp, c, s);
    mi_array_t *in[2] = {0}, *out[1] = {0};
    int32_t nin;
    rot_inputs(g, &sp, x, (const int64_t[]){3}, 1, in, &nin);
    ref_run(g, in, nin, out);
    char what[64];
    snprintf(what, sizeof what, "%s rank %d pos %d interleaved %d r %lld", sp.ms ? "ms" : "onnx", sp.rank, sp.pos,
             sp.interleaved, (long long)sp.r);
    expect_f32(what, out[0], sp.rank, sp.rank == 4 ? x4 : xd, sp.interleaved || sp.r == 2 ? pair_want : half_want, 0);
    free_arrays(out, 1);
    free_arrays(in, nin);
    mi_graph_destroy(g);
  }
}

static void refused(const rspec_t *sp, void (*edit)(mi_graph_t *), const char *want) {
  mi_graph_t *g = rot_graph(sp, NULL, NULL);
  if (edit) edit(g);
  expect_refused(g, "rot", want);
}

static void packed(mi_graph_t *g) { mi_node_set_int(g, 0, "is_packed_batching", 1); }
static void rdim_big(mi_graph_t *g) { mi_node_set_int(g, 0, "rotary_embedding_dim", 12); }
static void old_opset(mi_graph_t *g) { g->opset = 22; }

static void malformed(void) {
  const rspec_t onnx = {0, 2, 3, 2, 8, 8, 3, 1, 0, 0}, ms = {1, 2, 3, 2, 8, 8, 3, 1, 0, 0};
  rspec_t odd = onnx;
  odd.n = 3, odd.h = 4, odd.r = 8; /* rotary dim 8 > head 4 */
  refused(&ms, packed, "is_packed_batching");
  refused(&onnx, rdim_big, "rotary_embedding_dim = 12");
  refused(&onnx, old_opset, "from opset 23 on");
  refused(&odd, NULL, "more than the head size");
}

static const rspec_t k_forms[] = {
    /* ms b  s  n  h   r  rank pos interleaved rdim */
    {0, 2, 5, 3, 8, 8, 4, 1, 0, 0},
    {0, 2, 5, 3, 8, 8, 3, 1, 1, 0},
    {0, 2, 5, 3, 8, 4, 3, 1, 0, 1},
    {0, 2, 5, 3, 8, 4, 4, 0, 1, 1},
    {1, 2, 5, 3, 8, 8, 3, 1, 0, 0},
    {1, 2, 5, 3, 8, 8, 3, 2, 1, 0},
    {1, 2, 5, 3, 8, 8, 4, 2, 0, 0},
    {1, 2, 5, 3, 8, 4, 4, 1, 1, 1},
};

static void forms_on(mi_plugin_t *p) {
  for (size_t f = 0; f < sizeof k_forms / sizeof k_forms[0]; f++) {
    rspec_t sp = k_forms[f];
    mi_graph_t *g = rot_graph(&sp, NULL, NULL);
    mi_array_t *in[2] = {0};
    int32_t nin;
    rot_inputs(g, &sp, NULL, NULL, 9 + f, in, &nin);
    /* the caches' rows picked by runtime position_ids are Gathers blis-cpu runs (runtime indices:
     * blis_gather_rows.c); the offset form's position arithmetic (Range and its integer inputs),
     * 3 steps, stays on the host */
    lowered_form(p, f, g, in, nin, "RotaryEmbedding", sp.pos == 2 ? 3 : 0, 1);
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
