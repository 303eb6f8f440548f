/* test_exec_gatefuse.c - an SE block's gating Mul (x times one runtime value per channel, its
 * result read by a group-1 Conv alone) runs in that conv's kernel on blis-cpu (framework/src/exec/plan.c
 * groups the Mul with the conv's chain; conv.packed_gemm scales its packed weights by the gate
 * instead of writing x * gate): one kernel less, outputs within 1e-5 relative L2 of the unfused
 * session's and of the reference interpreter's on every SIMD path at 1 and 2 threads; where the
 * weights outnumber x's values, or the conv is not conv.packed_gemm, the Mul runs as a step of that
 * kernel with the unfused session's very bits; a gated value read elsewhere too is not grouped.
 * With the conv at the bf16 precision (the BF16 transform's Casts before it) on a CPU whose
 * blis-cpu lists conv.packed_gemm_bf16, the Mul joins the conv's kernel through the Casts (which do
 * not run) and the BF16 tiles take x * gate as they round their input: the unfused session's bits,
 * weights outnumbering values or not. */
#include "metainfer/mi_transform.h"
#include "test_exec_util.h"

typedef struct spec {
  int64_t m, k;    /* the gated conv: m output channels, k x k kernel (padding k / 2) */
  int gate_first;  /* Mul(gate, x) rather than Mul(x, gate) */
  int also_output; /* x * gate is a graph output too: not grouped */
} spec_t;

#define C 24
#define H 8
#define W 20

static float vals[16384];

/* x [1,C,H,W] * gate [1,C,1,1] (both inputs, so that nothing else differs between the grouped and
 * the one-kernel-a-node sessions) -> Conv(C -> m, k x k) -> Relu -> y */
static mi_graph_t *gate_graph(const spec_t *sp) {
  mi_graph_t *g = mi_graph_create("gatefuse");
  int64_t xd[4] = {1, C, H, W}, gd[4] = {1, C, 1, 1}, w3[4] = {sp->m, C, sp->k, sp->k}, b3[1] = {sp->m},
          pads[4] = {sp->k / 2, sp->k / 2, sp->k / 2, sp->k / 2};
  int32_t x, gate, xs, y3, out, n;
  mi_error_t err = {0};
  g->opset = 13;
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define NODE(op, nm, nin, ins, o) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){o})
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  gate = mi_graph_add_tensor(g, "gate", MI_DTYPE_FLOAT32, 4, gd);
  mi_graph_add_input(g, x);
  mi_graph_add_input(g, gate);
  xs = T("xs");
  y3 = T("y3");
  out = T("out");
  NODE("Mul", "gate", 2, (sp->gate_first ? (int32_t[]){gate, x} : (int32_t[]){x, gate}), xs);
  n = NODE("Conv", "pw", 3,
           ((int32_t[]){xs, mi_graph_add_const_f32(g, "w3", 4, w3, vals + 4000),
                        mi_graph_add_const_f32(g, "b3", 1, b3, vals + 1500)}),
           y3);
  mi_node_set_ints(g, n, "pads", 4, pads);
  NODE("Relu", "pw_relu", 1, ((int32_t[]){y3}), out);
  mi_graph_add_output(g, out);
  if (sp->also_output) mi_graph_add_output(g, xs);
#undef T
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("gate graph", &err);
  return g;
}

static void run2(mi_session_t *s, const mi_graph_t *g, mi_array_t *const *in, mi_array_t **outs) {
  mi_error_t err = {0};
  if (mi_session_run(s, (const mi_array_t *const *)in, 2, outs, g->output_count, &err) != MI_OK)
    die("mi_session_run", &err);
}

/* A gate graph run grouped (s) and one kernel a node (s0) at some thread count, and on the
 * reference interpreter: the inputs and each one's outputs. */
typedef struct pair {
  mi_session_t *s, *s0;
  mi_array_t *in[2], *got[4], *plain[4], *want[4];
} pair_t;

static void pair_run(mi_plugin_t *p, const mi_graph_t *g, int32_t threads, pair_t *r) {
  const mi_tensor_t *gt = &g->tensors[g->inputs[1]];
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_options_t o;
  mi_error_t err = {0};
  memset(r, 0, sizeof *r);
  r->in[0] = input_for(g, 17);
  r->in[1] = mi_array_create(gt->dtype, gt->rank, gt->dims);
  if (!r->in[1]) die("gate", NULL);
  mi_array_fill_random(r->in[1], 23);
  memset(&o, 0, sizeof o);
  o.device_knob_count = 1;
  o.device_knobs = &th;
  r->s = session_opts(g, p, o);
  o.no_auto_fuse = 1;
  r->s0 = session_opts(g, p, o);
  run2(r->s, g, r->in, r->got);
  run2(r->s0, g, r->in, r->plain);
  if (mi_ref_run(g, (const mi_array_t *const *)r->in, 2, r->want, g->output_count, &err) != MI_OK)
    die("mi_ref_run", &err);
}

static void pair_free(pair_t *r) {
  for (int i = 0; i < 4; i++) mi_array_destroy(r->plain[i]);
  destroy_outs(r->got, r->want);
  mi_session_destroy(r->s);
  mi_session_destroy(r->s0);
  mi_array_destroy(r->in[0]);
  mi_array_destroy(r->in[1]);
}

/* Runs sp's graph on p at `threads`, grouped and one kernel a node, and on the reference; returns
 * the grouped session's steps and sets *d_plain to the grouped outputs' rel L2 from the ungrouped. */
static int32_t check(mi_plugin_t *p, const spec_t *sp, int32_t threads, double *d_plain) {
  mi_graph_t *g = gate_graph(sp);
  pair_t r;
  int32_t steps, plain_steps;
  double d;
  pair_run(p, g, threads, &r);
  steps = mi_session_kernel_count(r.s) + mi_session_fallback_count(r.s);
  plain_steps = mi_session_kernel_count(r.s0) + mi_session_fallback_count(r.s0);
  d = tu_rel_l2_arrays(r.got[0], r.want[0]);
  *d_plain = tu_rel_l2_arrays(r.got[0], r.plain[0]);
  printf("%s m%d k%d%s%s t%d: %d steps (%d one a node), rel L2 %.2e to the reference, %.2e to one a node\n",
         p->name, (int)sp->m, (int)sp->k, sp->gate_first ? " gate*x" : "", sp->also_output ? " x*gate an output" : "",
         threads, steps, plain_steps, d, *d_plain);
  CHECK(d < 1e-5, "rel L2 %.3e to the reference", d);
  CHECK(*d_plain < 1e-5, "rel L2 %.3e to one kernel a node", *d_plain);
  CHECK(plain_steps == 3, "one kernel a node: %d", plain_steps);
  if (sp->also_output) CHECK(tu_rel_l2_arrays(r.got[1], r.want[1]) == 0, "x * gate as an output, exactly");
  pair_free(&r);
  mi_graph_destroy(g);
  return steps;
}

/* 1 when device 0 of p lists variant `id`. */
static int lists_variant(mi_plugin_t *p, const char *id) {
  mi_variant_desc_t *v = NULL;
  uint32_t n = 0;
  int found = 0;
  if (mi_plugin_variants(p, 0, &v, &n, NULL) != MI_OK) return 0;
  for (uint32_t i = 0; i < n; i++) found |= strcmp(v[i].id, id) == 0;
  free(v);
  return found;
}

/* sp's graph with its Conv at the bf16 precision: grouped and one kernel a node at `threads`,
 * against each other and the reference interpreter on the transformed graph. */
static void check_bf16(mi_plugin_t *p, const spec_t *sp, int32_t threads, int listed) {
  mi_graph_t *g0 = gate_graph(sp), *g = NULL;
  mi_xf_config_t *xc = mi_xf_config_create();
  mi_xf_layer_t l;
  mi_xf_apply_opts_t ao;
  pair_t r;
  mi_error_t err = {0};
  int32_t casts = 0, mul_with_conv = 0;
  double d, d_plain;
  memset(&l, 0, sizeof l);
  memset(&ao, 0, sizeof ao);
  l.set = MI_XF_SET_WEIGHTS | MI_XF_SET_ACTS;
  l.weights = l.activations = MI_XF_BF16;
  if (!xc || mi_xf_config_set_layer(xc, 1, "Conv", &l, &err) || mi_xf_apply(g0, xc, &ao, &g, NULL, &err))
    die("bf16 transform", &err);
  pair_run(p, g, threads, &r);
  for (int32_t k = 0; k < mi_session_kernel_count(r.s); k++) {
    const int32_t *nodes = NULL;
    int32_t c = mi_session_kernel_nodes(r.s, k, &nodes), mul = 0, conv = 0;
    for (int32_t j = 0; j < c; j++) {
      casts += !strcmp(g->nodes[nodes[j]].op_type, "Cast");
      mul += !strcmp(g->nodes[nodes[j]].op_type, "Mul");
      conv += !strcmp(g->nodes[nodes[j]].op_type, "Conv");
    }
    mul_with_conv += mul && conv;
  }
  d = tu_rel_l2_arrays(r.got[0], r.want[0]);
  d_plain = tu_rel_l2_arrays(r.got[0], r.plain[0]);
  printf("%s bf16 m%d k%d t%d: %d kernels, %d Casts run, rel L2 %.2e to the reference, %.2e to one a node\n", p->name,
         (int)sp->m, (int)sp->k, threads, mi_session_kernel_count(r.s), casts, d, d_plain);
  CHECK(d < 1e-5, "bf16: rel L2 %.3e to the reference", d);
  CHECK(mi_session_fallback_count(r.s) == 0, "bf16: %d nodes off the device", mi_session_fallback_count(r.s));
  if (listed) {
    CHECK(mul_with_conv == 1 && casts == 0 && mi_session_kernel_count(r.s) == 1,
          "bf16: the Mul in the conv's kernel, no Cast run (%d kernels, %d Casts)", mi_session_kernel_count(r.s), casts);
    CHECK(d_plain == 0, "bf16: x * gate rounded as the unfused session rounds it: rel L2 %.3e", d_plain);
  } else {
    CHECK(mul_with_conv == 0 && casts == 2, "no BF16 variant: the Casts run between Mul and conv");
  }
  pair_free(&r);
  mi_graph_destroy(g);
  mi_graph_destroy(g0);
  mi_xf_config_destroy(xc);
}

static void on_plugin(mi_plugin_t *p) {
  /* the default conv variant is conv.packed_gemm with AVX2 and FMA, unless capped at plain C */
  const char *cap = getenv("MI_BLIS_MAX_SIMD");
  int packed_conv = !(cap && strcmp(cap, "c") == 0) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  /* 1x1 and 3x3 (flat padded planes) with the gate folded; 1x1 with 200 weights a channel against
   * x's 160 values a channel: grouped, the Mul run as the kernel's first step */
  static const spec_t folded[] = {{16, 1, 0, 0}, {16, 1, 1, 0}, {16, 3, 0, 0}, {12, 3, 1, 0}};
  static const spec_t kept = {200, 1, 0, 0}, apart = {16, 1, 0, 1};
  for (int32_t t = 1; t <= 2; t++) {
    double d;
    for (size_t i = 0; i < sizeof folded / sizeof folded[0]; i++) {
      CHECK(check(p, &folded[i], t, &d) == 1, "the Mul in the gated conv's kernel");
      if (packed_conv) CHECK(d > 0, "the gate in the weights: the products reassociated");
      else
        CHECK(d == 0, "another conv variant: the Mul a step of the kernel, the same bits");
    }
    CHECK(check(p, &kept, t, &d) == 1, "grouped");
    CHECK(d == 0, "more weights than values: the Mul a step of the kernel, the same bits");
    CHECK(check(p, &apart, t, &d) == 2, "x * gate read outside: not grouped");
    for (size_t i = 0; i < sizeof folded / sizeof folded[0]; i++)
      check_bf16(p, &folded[i], t, lists_variant(p, "conv.packed_gemm_bf16"));
    check_bf16(p, &kept, t, lists_variant(p, "conv.packed_gemm_bf16"));
  }
}

/* blis-cpu at each SIMD cap. */
static void blis_cpu(void) {
  fill_halves(vals, 16384, 7);
  on_blis_cpu_each_simd(on_plugin);
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
