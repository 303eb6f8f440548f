/* test_exec_mmfold.c - attention's Q * K^T as exports write it (the scale a Mul by a constant scalar
 * on Q, on K^T or on both, or a Div or Mul of the product as PyTorch writes it; K^T a Transpose
 * of K's last two axes, or of a [B, T, H, D] tensor straight to [B, H, D, T]) runs as one kernel
 * of the session's own grouping (framework/src/exec/mm_fold.c) on blis-cpu, which reads K through strides and folds the scales
 * into the product: fewer kernels, outputs within 1e-5 relative L2 of the reference interpreter
 * on every SIMD path, at 1 and 2 threads; a Transpose whose result another node reads too stays
 * a kernel of its own. */
#include "test_exec_util.h"

typedef struct spec {
  int four_d;   /* x [1, T, H, D], heads split by Transposes; else x [H, T, D] */
  int scale_q;  /* Mul(q, 1/d^(1/4)) */
  int scale_k;  /* Mul(K^T, 1/d^(1/4)) */
  int shared_t; /* the Transpose's result also read by an Add after the attention */
  int64_t t, h, d;
  int after; /* the scale after the product: 1 Div by sqrt(d), 2 Mul by 1/sqrt(d) (PyTorch's form) */
} spec_t;

static float vals[8192];

/* k = x Wk; scores = [q * s] [K^T * s]; p = Softmax(scores); y = p v, with q = v = x (heads
 * first) */
static mi_graph_t *attn_graph(const spec_t *sp) {
  mi_graph_t *g = mi_graph_create("mmfold");
  int64_t x4[4] = {1, sp->t, sp->h, sp->d}, x3[3] = {sp->h, sp->t, sp->d}, wd[2] = {sp->d, sp->d};
  static const int64_t p_heads[4] = {0, 2, 1, 3}, p_kt4[4] = {0, 2, 3, 1}, p_kt3[3] = {0, 2, 1};
  float s = 1.f / sqrtf(sqrtf((float)sp->d));
  int32_t x, q, k, kt, sc, pr, y, n, out;
  mi_error_t err = {0};
  g->opset = 17;
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define NODE(op, nm, nin, ins, o) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){o})
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, sp->four_d ? 4 : 3, sp->four_d ? x4 : x3);
  mi_graph_add_input(g, x);
  k = T("k");
  NODE("MatMul", "k_proj", 2, ((int32_t[]){x, mi_graph_add_const_f32(g, "wk", 2, wd, vals)}), k);
  q = x;
  if (sp->four_d) {
    q = T("q");
    n = NODE("Transpose", "heads", 1, ((int32_t[]){x}), q);
    mi_node_set_ints(g, n, "perm", 4, p_heads);
  }
  kt = T("kt");
  n = NODE("Transpose", "k_t", 1, ((int32_t[]){k}), kt);
  mi_node_set_ints(g, n, "perm", sp->four_d ? 4 : 3, sp->four_d ? p_kt4 : p_kt3);
  if (sp->scale_q) {
    int32_t qs = T("qs");
    NODE("Mul", "q_scale", 2, ((int32_t[]){q, mi_graph_add_const_f32(g, "sq", 0, NULL, &s)}), qs);
    q = qs;
  }
  if (sp->scale_k) {
    int32_t ks = T("ks");
    NODE("Mul", "k_scale", 2, ((int32_t[]){mi_graph_add_const_f32(g, "sk", 1, (int64_t[]){1}, &s), kt}), ks);
    kt = ks;
  }
  sc = T("scores");
  NODE("MatMul", "qk", 2, ((int32_t[]){q, kt}), sc);
  if (sp->after) {
    float c = sp->after == 1 ? sqrtf((float)sp->d) : 1.f / sqrtf((float)sp->d);
    int32_t o = T("scores_scaled");
    NODE(sp->after == 1 ? "Div" : "Mul", "scale_after", 2, ((int32_t[]){sc, mi_graph_add_const_f32(g, "sa", 0, NULL, &c)}), o);
    sc = o;
  }
  pr = T("p");
  NODE("Softmax", "softmax", 1, ((int32_t[]){sc}), pr);
  y = T("y");
  NODE("MatMul", "pv", 2, ((int32_t[]){pr, sp->four_d ? g->nodes[1].outputs[0] : x}), y);
  out = y;
  if (sp->shared_t) { /* [.., T, D] + [.., D, T] when T == D */
    out = T("out");
    NODE("Add", "shared", 2, ((int32_t[]){y, g->nodes[sp->four_d ? 2 : 1].outputs[0]}), out);
  }
  mi_graph_add_output(g, out);
#undef T
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("attention graph", &err);
  return g;
}

/* Runs sp on p at `threads` (auto_fuse or not) and on the reference: the session's kernels. */
static int32_t check(mi_plugin_t *p, const spec_t *sp, int32_t threads, int no_auto_fuse) {
  mi_graph_t *g = attn_graph(sp);
  mi_array_t *x = input_for(g, 7), *got[4] = {0}, *want[4] = {0};
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_options_t o;
  mi_session_t *s;
  int32_t kernels;
  double d;
  memset(&o, 0, sizeof o);
  o.no_auto_fuse = no_auto_fuse;
  o.device_knob_count = 1;
  o.device_knobs = &th;
  s = session_opts(g, p, o);
  kernels = mi_session_kernel_count(s) + mi_session_fallback_count(s);
  run(s, g, x, got);
  ref(g, x, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s %s T%lld H%lld D%lld q%d k%d after %d shared %d t%d%s: %d steps, rel L2 %.2e\n", p->name,
         sp->four_d ? "4-D" : "3-D", (long long)sp->t, (long long)sp->h, (long long)sp->d, sp->scale_q, sp->scale_k,
         sp->after, sp->shared_t, threads,
         no_auto_fuse ? " unfused" : "", kernels, d);
  CHECK(d < 1e-5, "%s: rel L2 %.3e", p->name, d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(x);
  mi_graph_destroy(g);
  return kernels;
}

static void on_plugin(mi_plugin_t *p) {
  /* odd sizes: tile and panel tails; 13 rows: under the packed path's 16, BLIS with strides */
  static const int64_t sizes[][3] = {{37, 3, 20}, {70, 2, 36}, {13, 2, 33}};
  for (int32_t t = 1; t <= 2; t++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      for (int f = 0; f < 24; f++) {
        spec_t sp = {f & 1, (f >> 1) & 1, (f >> 2) & 1, 0, sizes[i][0], sizes[i][1], sizes[i][2], f >> 3};
        int32_t plain = check(p, &sp, t, 1), fused = check(p, &sp, t, 0);
        CHECK(fused == plain - 1 - sp.scale_q - sp.scale_k - (sp.after != 0),
              "Transpose, scale Muls and the scale after the product in the MatMul's kernel: %d -> %d", plain, fused);
      }
  {
    spec_t sp = {0, 1, 1, 1, 24, 2, 24, 0};
    int32_t plain = check(p, &sp, 1, 1), fused = check(p, &sp, 1, 0);
    CHECK(fused == plain - 2, "a Transpose read by another node keeps its kernel; the Muls join: %d -> %d", plain,
          fused);
  }
  {
    spec_t sp = {0, 0, 0, 0, 24, 2, 24, 1}; /* Transpose and a Div after the product only */
    int32_t plain = check(p, &sp, 1, 1), fused = check(p, &sp, 1, 0);
    CHECK(fused == plain - 2, "the Transpose and the Div after the product join: %d -> %d", plain, fused);
  }
}

/* blis-cpu at each SIMD cap. */
static void blis_cpu(void) {
  fill_halves(vals, 8192, 9);
  on_blis_cpu_each_simd(on_plugin);
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
