/* test_exec_linfuse.c - a Linear as torch and tf2onnx export it (MatMul / Gemm with a constant B ->
 * Add of a constant bias along the last dim, or a Gemm's own C [-> activation or x * Sigmoid(x)]
 * [-> LayerNormalization [-> activation]]), with a residual Add after the second,
 * runs as one kernel of the session's own grouping (framework/src/exec/plan.c) on blis-cpu, whose
 * packed tiles start from the bias and apply the activation and residual to each panel's finished
 * rows: fewer kernels, outputs within 1e-5 relative L2 of the reference interpreter on every SIMD
 * path, at 1 and 2 threads; a bias that does not broadcast along the rows keeps its own kernel. */
#include "test_exec_util.h"

typedef struct spec {
  const char *act; /* NULL: no activation */
  int gemm;        /* the first layer a Gemm (transB) on 2-D x, bias operand first; 2: and transA
                    * (blis-cpu's BLIS path: the members run as later steps of the kernel) */
  int row_bias;    /* not fusable: the first bias varies over the rows too */
  int residual;    /* x + the second Linear */
} spec_t;

static float vals[8192];

/* x -> Linear(48 -> 40) [-> act] -> Linear(40 -> 48) [-> + x] -> y */
static mi_graph_t *linear_graph(const spec_t *sp) {
  mi_graph_t *g = mi_graph_create("linfuse");
  int64_t x3[3] = {2, 19, 48}, x2[2] = {37, 48}, x2t[2] = {48, 37}, w1[2] = {48, 40}, w1t[2] = {40, 48}, b1[1] = {40};
  int64_t rb[2] = {19, 40}, w2[2] = {40, 48}, b2[2] = {1, 48};
  float lo = -0.3f, hi = 0.4f;
  int32_t x, y1, z1, h, y2, out, w, b, n;
  mi_error_t err = {0};
  g->opset = 20;
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define NODE(op, nm, nin, ins, o) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){o})
  x = sp->gemm ? mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, sp->gemm == 2 ? x2t : x2) : mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 3, x3);
  mi_graph_add_input(g, x);
  y1 = T("y1");
  z1 = T("z1");
  w = mi_graph_add_const_f32(g, "w1", 2, sp->gemm ? w1t : w1, vals);
  b = sp->row_bias ? mi_graph_add_const_f32(g, "b1", 2, rb, vals + 2000) : mi_graph_add_const_f32(g, "b1", 1, b1, vals + 2000);
  if (sp->gemm) {
    n = NODE("Gemm", "fc1", 2, ((int32_t[]){x, w}), y1);
    mi_node_set_int(g, n, "transB", 1);
    if (sp->gemm == 2) mi_node_set_int(g, n, "transA", 1);
    NODE("Add", "fc1_bias", 2, ((int32_t[]){b, y1}), z1);
  } else {
    NODE("MatMul", "fc1", 2, ((int32_t[]){x, w}), y1);
    NODE("Add", "fc1_bias", 2, ((int32_t[]){y1, b}), z1);
  }
  h = z1;
  if (sp->act) {
    h = T("h");
    if (!strcmp(sp->act, "Swish")) { /* x * Sigmoid(x) written out */
      int32_t sg = T("sg");
      NODE("Sigmoid", "act_sigmoid", 1, ((int32_t[]){z1}), sg);
      NODE("Mul", "act", 2, ((int32_t[]){z1, sg}), h);
    } else if (!strcmp(sp->act, "Clip"))
      NODE("Clip", "act", 3,
           ((int32_t[]){z1, mi_graph_add_const_f32(g, "lo", 0, NULL, &lo), mi_graph_add_const_f32(g, "hi", 0, NULL, &hi)}),
           h);
    else
      NODE(sp->act, "act", 1, ((int32_t[]){z1}), h);
    if (!strcmp(sp->act, "LeakyRelu")) mi_node_set_float(g, g->node_count - 1, "alpha", 0.1f);
    if (!strcmp(sp->act, "Gelu")) mi_node_set_string(g, g->node_count - 1, "approximate", "tanh");
  }
  y2 = T("y2");
  out = T("out");
  NODE("MatMul", "fc2", 2, ((int32_t[]){h, mi_graph_add_const_f32(g, "w2", 2, w2, vals + 3000)}), y2);
  if (sp->residual) {
    int32_t y3 = T("y3");
    NODE("Add", "fc2_bias", 2, ((int32_t[]){y2, mi_graph_add_const_f32(g, "b2", 2, b2, vals + 5000)}), y3);
    NODE("Add", "residual", 2, ((int32_t[]){x, y3}), out);
  } else {
    NODE("Add", "fc2_bias", 2, ((int32_t[]){y2, mi_graph_add_const_f32(g, "b2", 2, b2, vals + 5000)}), out);
  }
  mi_graph_add_output(g, out);
#undef T
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("linear graph", &err);
  return g;
}

/* x [37, 48] -> Gemm (C) -> LayerNormalization -> Relu -> Gemm (C) [-> Sigmoid] (a wake-word head's
 * layers); post: x [2, 19, 48] -> MatMul -> Add bias -> + x -> LayerNormalization (a post-norm
 * encoder layer's output) */
static mi_graph_t *norm_graph(int post, int sigmoid) {
  mi_graph_t *g = mi_graph_create("normfuse");
  int64_t x2[2] = {37, 48}, x3[3] = {2, 19, 48}, w1[2] = {40, 48}, w[2] = {48, 48}, b1[1] = {40}, w2[2] = {40, 7},
          b2[1] = {7}, c48[1] = {48};
  int32_t x, y1, z, h, y2, out, n, ln;
  mi_error_t err = {0};
  g->opset = 20;
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define NODE(op, nm, nin, ins, o) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){o})
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, post ? 3 : 2, post ? x3 : x2);
  mi_graph_add_input(g, x);
  y1 = T("y1");
  z = T("z");
  h = T("h");
  out = T("out");
  if (post) {
    int32_t b = T("b");
    NODE("MatMul", "fc", 2, ((int32_t[]){x, mi_graph_add_const_f32(g, "w", 2, w, vals)}), y1);
    NODE("Add", "fc_bias", 2, ((int32_t[]){y1, mi_graph_add_const_f32(g, "b", 1, c48, vals + 3000)}), b);
    NODE("Add", "residual", 2, ((int32_t[]){b, x}), z);
    ln = NODE("LayerNormalization", "ln", 3,
              ((int32_t[]){z, mi_graph_add_const_f32(g, "g", 1, c48, vals + 4000),
                           mi_graph_add_const_f32(g, "beta", 1, c48, vals + 5000)}),
              out);
    mi_node_set_int(g, ln, "axis", 2);
  } else {
    n = NODE("Gemm", "fc1", 3,
             ((int32_t[]){x, mi_graph_add_const_f32(g, "w1", 2, w1, vals), mi_graph_add_const_f32(g, "b1", 1, b1, vals + 2000)}),
             y1);
    mi_node_set_int(g, n, "transB", 1);
    NODE("LayerNormalization", "ln", 3,
         ((int32_t[]){y1, mi_graph_add_const_f32(g, "g", 1, b1, vals + 4000),
                      mi_graph_add_const_f32(g, "beta", 1, b1, vals + 5000)}),
         z);
    NODE("Relu", "relu", 1, ((int32_t[]){z}), h);
    y2 = sigmoid ? T("y2") : out;
    NODE("Gemm", "fc2", 3,
         ((int32_t[]){h, mi_graph_add_const_f32(g, "w2", 2, w2, vals + 6000), mi_graph_add_const_f32(g, "b2", 1, b2, vals + 7000)}),
         y2);
    if (sigmoid) NODE("Sigmoid", "sig", 1, ((int32_t[]){y2}), out);
  }
  mi_graph_add_output(g, out);
#undef T
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("norm graph", &err);
  return g;
}

/* Runs graph g (which it destroys) on p at `threads` (auto_fuse or not) and on the reference: the
 * session's kernels. */
static int32_t check_graph(mi_plugin_t *p, mi_graph_t *g, const char *what, int32_t threads, int no_auto_fuse) {
  mi_array_t *x = input_for(g, 11), *got[4] = {0}, *want[4] = {0};
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  int32_t kernels;
  double d;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  o.no_auto_fuse = no_auto_fuse;
  o.device_knob_count = 1;
  o.device_knobs = &th;
  if (mi_session_create(g, p, 0, &o, &s, &err) != MI_OK) die("mi_session_create", &err);
  kernels = mi_session_kernel_count(s) + mi_session_fallback_count(s);
  run(s, g, x, got);
  ref(g, x, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s %s t%d%s: %d steps, rel L2 %.2e\n", p->name, what, threads, no_auto_fuse ? " unfused" : "", kernels, d);
  CHECK(d < 1e-5, "%s %s t%d: rel L2 %.3e", p->name, what, threads, d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(x);
  mi_graph_destroy(g);
  return kernels;
}

/* Runs sp on p at `threads` (auto_fuse or not) and on the reference: the session's kernels. */
static int32_t check(mi_plugin_t *p, const spec_t *sp, int32_t threads, int no_auto_fuse) {
  char what[96];
  snprintf(what, sizeof what, "%s%s%s%s%s", sp->gemm == 2 ? "Gemm(transA)" : sp->gemm ? "Gemm"
                                                                                      : "MatMul",
           sp->act ? "+" : "", sp->act ? sp->act : "", sp->residual ? "+residual" : "", sp->row_bias ? " row bias" : "");
  return check_graph(p, linear_graph(sp), what, threads, no_auto_fuse);
}

static void on_plugin(mi_plugin_t *p) {
  static const char *const acts[] = {NULL, "Relu", "Gelu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "Swish"};
  for (int32_t t = 1; t <= 2; t++)
    for (int gemm = 0; gemm < 3; gemm++)
      for (size_t i = 0; i < sizeof acts / sizeof acts[0] * 2; i++) {
        spec_t sp = {acts[i / 2], gemm, 0, (int)(i % 2)};
        int32_t nodes = (acts[i / 2] ? 5 : 4) + (int32_t)(i % 2) + (acts[i / 2] && !strcmp(acts[i / 2], "Swish"));
        if (gemm == 2 && sp.residual) continue; /* x is [48, 37]: no residual of the output's shape */
        CHECK(check(p, &sp, t, 1) == nodes, "without the grouping: one kernel a node");
        CHECK(check(p, &sp, t, 0) == 2, "%s %s%s: each Linear one kernel", gemm ? "Gemm" : "MatMul",
              acts[i / 2] ? acts[i / 2] : "-", sp.residual ? " residual" : "");
      }
  {
    spec_t sp = {"Relu", 0, 1, 0};
    CHECK(check(p, &sp, 1, 0) == 4, "a bias over the rows too is not grouped (fc2's is)");
  }
  /* a Gemm's own C as the bias, a LayerNormalization and its activation in the Linear's kernel */
  for (int32_t t = 1; t <= 2; t++) {
    CHECK(check_graph(p, norm_graph(0, 1), "Gemm+LayerNorm+Relu, Gemm+Sigmoid", t, 1) == 5, "one kernel a node");
    CHECK(check_graph(p, norm_graph(0, 1), "Gemm+LayerNorm+Relu, Gemm+Sigmoid", t, 0) == 2, "each Linear one kernel");
    CHECK(check_graph(p, norm_graph(0, 0), "Gemm+LayerNorm+Relu, Gemm", t, 0) == 2,
          "a Gemm with C and nothing after it: a kernel of its own");
    CHECK(check_graph(p, norm_graph(1, 0), "MatMul+bias+residual+LayerNorm", t, 1) == 4, "one kernel a node");
    CHECK(check_graph(p, norm_graph(1, 0), "MatMul+bias+residual+LayerNorm", t, 0) == 1, "one kernel");
  }
}

/* blis-cpu at each SIMD cap. */
static void blis_cpu(void) {
  fill_halves(vals, 8192, 5);
  on_blis_cpu_each_simd(on_plugin);
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
