/* test_exec_smask.c - attention's masked softmax as exports and the attention lowering write it
 * (a Div or Mul of the scores by a constant scalar, the Adds of masks that broadcast to them, a
 * Softmax over the last axis) runs as one kernel of the session's own grouping
 * (framework/src/exec/sm_fold.c) on blis-cpu (plugins/blis_cpu/blis_smask.c): one step fewer per
 * member, the outputs equal to the unfused kernels' bit for bit and within 2e-6 of the reference
 * interpreter on every SIMD path, at 1 and 2 threads, odd row lengths (vector tails), masks of
 * -inf, -1e9 and the lowest float, rows masked whole (NaN, as ONNX Runtime and the reference
 * give them). Not grouped: a masked sum another node reads too, a softmax over another axis. */
#include <math.h>

#include "test_exec_util.h"

typedef struct mask {
  int32_t rank;
  int64_t dims[4];
  int runtime; /* the graph's second input; else a constant */
  int first;   /* Add(mask, scores) */
} mask_t;

typedef struct spec {
  const char *what;
  int64_t b, h, s, t;
  int scale;      /* 0 none, 1 Div by 8 (taken as a product), 2 Mul by 0.125, 3 Div by sqrt(32) */
  mask_t m[2];    /* rank 0: no such mask */
  int64_t axis;   /* the Softmax's */
  int shared;     /* the first masked sum is a graph output too */
  int32_t joined; /* nodes that should join the Softmax's kernel */
} spec_t;

static float mvals[2][65536];

/* Mask values by position: mostly 0, some -10000, -1e9, the lowest float and -inf; with whole
 * -inf rows where the mask has full rows (its last two dims). */
static void fill_mask(float *v, int64_t n, int64_t row, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    switch ((seed >> 40) % 9) {
    case 0: v[i] = -10000.f; break;
    case 1: v[i] = -1e9f; break;
    case 2: v[i] = -INFINITY; break;
    case 3: v[i] = -3.4028235e38f; break;
    default: v[i] = (float)((seed >> 24) & 0xff) / 64.f - 2.f;
    }
  }
  if (n >= 2 * row)
    for (int64_t j = 0; j < row; j++) v[row + j] = -INFINITY; /* the second row masked whole */
}

static int64_t numel(const mask_t *m) {
  int64_t n = 1;
  for (int32_t d = 0; d < m->rank; d++) n *= m->dims[d];
  return n;
}

/* y = Softmax([scores / 8 | scores * 0.125] + m0 [+ m1]) */
static mi_graph_t *graph(const spec_t *sp) {
  mi_graph_t *g = mi_graph_create("smask");
  int64_t xd[4] = {sp->b, sp->h, sp->s, sp->t};
  float cs[4] = {1.f, 8.f, 0.125f, 5.656854f};
  int32_t x, cur, n, y;
  mi_error_t err = {0};
  g->opset = 17;
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define NODE(op, nm, nin, ins, o) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){o})
  x = mi_graph_add_tensor(g, "scores", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  cur = x;
  if (sp->scale) {
    int32_t o = T("scaled");
    NODE(sp->scale == 2 ? "Mul" : "Div", "scale", 2, ((int32_t[]){cur, mi_graph_add_const_f32(g, "c", 0, NULL, &cs[sp->scale])}),
         o);
    cur = o;
  }
  for (int i = 0; i < 2 && sp->m[i].rank; i++) {
    const mask_t *m = &sp->m[i];
    int32_t mt, o = T(i ? "masked2" : "masked");
    fill_mask(mvals[i], numel(m), m->dims[m->rank - 1], 11 + (uint64_t)i);
    if (m->runtime) {
      mt = mi_graph_add_tensor(g, "mask", MI_DTYPE_FLOAT32, m->rank, m->dims);
      mi_graph_add_input(g, mt);
    } else {
      mt = mi_graph_add_const_f32(g, i ? "mask_c2" : "mask_c", m->rank, m->dims, mvals[i]);
    }
    NODE("Add", i ? "add_mask2" : "add_mask", 2, ((int32_t[]){m->first ? mt : cur, m->first ? cur : mt}), o);
    cur = o;
  }
  y = T("y");
  n = NODE("Softmax", "softmax", 1, ((int32_t[]){cur}), y);
  mi_node_set_int(g, n, "axis", sp->axis);
  mi_graph_add_output(g, y);
  if (sp->shared) mi_graph_add_output(g, g->nodes[sp->scale ? 1 : 0].outputs[0]);
#undef T
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("masked softmax graph", &err);
  return g;
}

/* NaN where the other is NaN, else within tol (tol 0: the same bits). */
static double worst(const mi_array_t *a, const mi_array_t *b, int *nan_mismatch, int64_t *nans) {
  const float *x = a->data, *y = b->data;
  int64_t n = (int64_t)(a->nbytes / sizeof(float));
  double w = 0.;
  *nan_mismatch = a->nbytes != b->nbytes;
  for (int64_t i = 0; i < n && !*nan_mismatch; i++) {
    if (isnan(x[i]) || isnan(y[i])) {
      *nan_mismatch |= !(isnan(x[i]) && isnan(y[i]));
      *nans += 1;
      continue;
    }
    if (fabs((double)x[i] - y[i]) > w) w = fabs((double)x[i] - y[i]);
  }
  return w;
}

/* Runs sp's graph fused and unfused at `threads` and on the reference; checks the step counts. */
static void check(mi_plugin_t *p, const spec_t *sp, int32_t threads) {
  mi_graph_t *g = graph(sp);
  mi_array_t *in[2] = {input_for(g, 7), NULL}, *got[2] = {0}, *plain[2] = {0}, *want[2] = {0};
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_options_t o;
  mi_session_t *s[2];
  mi_error_t err = {0};
  int32_t steps[2], nin = g->input_count, nout = g->output_count, bad = 0;
  int64_t nans = 0;
  double dr, du;
  for (float *v = in[0]->data; v < (float *)in[0]->data + in[0]->nbytes / sizeof(float); v++) *v *= 16.f;
  if (nin == 2) {
    const mi_tensor_t *mt = &g->tensors[g->inputs[1]];
    in[1] = mi_array_create(MI_DTYPE_FLOAT32, mt->rank, mt->dims);
    memcpy(in[1]->data, mvals[sp->m[0].runtime ? 0 : 1], in[1]->nbytes);
  }
  for (int f = 0; f < 2; f++) {
    memset(&o, 0, sizeof o);
    o.no_auto_fuse = !f;
    o.device_knob_count = 1;
    o.device_knobs = &th;
    s[f] = session_opts(g, p, o);
    steps[f] = mi_session_kernel_count(s[f]) + mi_session_fallback_count(s[f]);
    if (mi_session_run(s[f], (const mi_array_t *const *)in, nin, f ? got : plain, nout, &err) != MI_OK)
      die("mi_session_run", &err);
  }
  if (mi_ref_run(g, (const mi_array_t *const *)in, nin, want, nout, &err) != MI_OK) die("mi_ref_run", &err);
  dr = worst(got[0], want[0], &bad, &nans);
  CHECK(!bad, "%s: NaN where the reference has none, or none where it has", sp->what);
  du = worst(got[0], plain[0], &bad, &nans);
  CHECK(!bad, "%s: NaN where the unfused kernels have none, or none where they have", sp->what);
  printf("%s %s t%d: %d -> %d steps, max |diff| %.2e (reference) %.2e (unfused), %lld NaN\n", p->name, sp->what,
         threads, steps[0], steps[1], dr, du, (long long)nans);
  CHECK(dr < 2e-6, "%s: max |diff| %.3e against the reference", sp->what, dr);
  CHECK(du == 0., "%s: max |diff| %.3e against the unfused kernels", sp->what, du);
  CHECK(steps[1] == steps[0] - sp->joined, "%s: %d joined the Softmax's kernel: %d -> %d steps", sp->what, sp->joined,
        steps[0], steps[1]);
  if (sp->shared && nout > 1) {
    dr = worst(got[1], want[1], &bad, &nans);
    CHECK(!bad && dr == 0., "%s: the shared masked sum %.3e", sp->what, dr);
  }
  for (int i = 0; i < 2; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(plain[i]);
    mi_array_destroy(want[i]);
    mi_array_destroy(in[i]);
  }
  mi_session_destroy(s[0]);
  mi_session_destroy(s[1]);
  mi_graph_destroy(g);
}

static void on_plugin(mi_plugin_t *p) {
  /* B, H, S, T: T 37 and 13 leave tails on both vector widths, 64 none */
  static const spec_t specs[] = {
      {"key padding [B,1,1,T], Div", 2, 3, 5, 37, 1, {{4, {2, 1, 1, 37}, 1, 0}}, -1, 0, 2},
      {"key padding [B,1,1,T], Div by sqrt(32)", 1, 2, 9, 45, 3, {{4, {1, 1, 1, 45}, 1, 0}}, -1, 0, 2},
      {"[B,1,S,T] then a causal [S,T] constant, Mul", 2, 2, 7, 13, 2, {{4, {2, 1, 7, 13}, 1, 0}, {2, {7, 13}, 0, 0}}, -1, 0, 3},
      {"[1,1,S,T] constant, no scale", 1, 4, 6, 64, 0, {{4, {1, 1, 6, 64}, 0, 0}}, -1, 0, 1},
      {"bias [B,H,S,T] first operand", 1, 2, 3, 21, 1, {{4, {1, 2, 3, 21}, 1, 1}}, -1, 0, 2},
      {"[T] and one value a row [B,H,S,1]", 2, 2, 3, 19, 0, {{1, {19}, 1, 0}, {4, {2, 2, 3, 1}, 0, 1}}, -1, 0, 2},
      {"scale alone", 1, 3, 4, 50, 2, {{0}}, -1, 0, 1},
      {"masked sum read elsewhere", 1, 2, 4, 17, 1, {{4, {1, 1, 1, 17}, 1, 0}}, -1, 1, 0},
      {"softmax over axis 2", 1, 2, 17, 17, 1, {{4, {1, 1, 1, 17}, 1, 0}}, 2, 0, 0},
  };
  for (int32_t t = 1; t <= 2; t++)
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) check(p, &specs[i], t);
}

static void blis_cpu(void) { on_blis_cpu_each_simd(on_plugin); }

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
