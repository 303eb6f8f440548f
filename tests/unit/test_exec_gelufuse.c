/* test_exec_gelufuse.c - the exact Gelu spelled out in elementwise ops (Div by sqrt(2) or Mul by
 * 1 / sqrt(2), Erf, Add 1, Mul x, Mul 0.5, as exports before opset 20 write nn.GELU) runs as one
 * Gelu kernel in the session (framework/src/graph/gelu_fuse.c): one step instead of five, within
 * 1e-5 relative L2 of the reference interpreter (which runs the nodes as written), in the three
 * orders of the products; behind a float MatMul and its bias Add, blis-cpu runs all of it as one
 * kernel. Look-alikes (another constant, an intermediate that is a graph output) run node by
 * node. */
#include "test_exec_util.h"

static mi_registry_t *r;

typedef struct spec {
  int order;     /* 0: (x * u) * 0.5; 1: (x * 0.5) * u; 2: x * (u * 0.5) */
  int mul_scale; /* x * (1 / sqrt(2)) rather than x / sqrt(2) */
  int linear;    /* x is MatMul(input, W) + b */
  float divisor; /* not fusable unless sqrt(2) (0: sqrt(2)) */
  int u_output;  /* not fusable: 1 + erf(...) is a graph output too */
} spec_t;

static int32_t node2(mi_graph_t *g, const char *op, const char *name, int32_t a, int32_t b) {
  int32_t ins[2] = {a, b}, y = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, op, name, b != -2 ? 2 : 1, ins, 1, &y);
  return y;
}

static int32_t scalar(mi_graph_t *g, const char *name, float v) {
  return mi_graph_add_const_f32(g, name, 0, NULL, &v);
}

/* in[3,7,40] -> [MatMul 40x24 + bias ->] the spelled-out Gelu -> y */
static mi_graph_t *gelu_graph(const spec_t *sp) {
  mi_graph_t *g = mi_graph_create("gelufuse");
  int64_t xd[3] = {3, 7, 40}, wd[2] = {40, 24}, bd[1] = {24};
  float w[40 * 24], b[24];
  int32_t in, x, t, e, u, y;
  for (int i = 0; i < 40 * 24; i++) w[i] = (float)((i * 37) % 23) / 23.0f - 0.5f;
  for (int i = 0; i < 24; i++) b[i] = (float)(i % 5) / 5.0f - 0.4f;
  g->opset = 14;
  in = mi_graph_add_tensor(g, "in", MI_DTYPE_FLOAT32, 3, xd);
  mi_graph_add_input(g, in);
  x = in;
  if (sp->linear) {
    x = node2(g, "MatMul", "mm", in, mi_graph_add_const_f32(g, "w", 2, wd, w));
    x = node2(g, "Add", "bias", x, mi_graph_add_const_f32(g, "b", 1, bd, b));
  }
  if (sp->mul_scale) t = node2(g, "Mul", "t", x, scalar(g, "rs2", 0.70710677f));
  else
    t = node2(g, "Div", "t", x, scalar(g, "s2", sp->divisor != 0.f ? sp->divisor : 1.4142135f));
  e = node2(g, "Erf", "e", t, -2);
  u = node2(g, "Add", "u", e, scalar(g, "one", 1.0f));
  if (sp->order == 0) y = node2(g, "Mul", "y", node2(g, "Mul", "xu", x, u), scalar(g, "half", 0.5f));
  else if (sp->order == 1)
    y = node2(g, "Mul", "y", node2(g, "Mul", "xh", scalar(g, "half", 0.5f), x), u);
  else
    y = node2(g, "Mul", "y", x, node2(g, "Mul", "uh", u, scalar(g, "half", 0.5f)));
  mi_graph_add_output(g, y);
  if (sp->u_output) mi_graph_add_output(g, u);
  mi_error_t err = {0};
  if (mi_graph_infer_shapes(g, &err) != MI_OK) die("infer shapes", &err);
  return g;
}

/* Runs the spelling on p and the reference; returns the session's steps (kernels + host). */
static int32_t check(mi_plugin_t *p, const char *what, spec_t sp) {
  mi_graph_t *g = gelu_graph(&sp);
  mi_array_t *got[4] = {0}, *want[4] = {0};
  int32_t steps = run_both(g, p, 11, got, want);
  double d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s %s: %d steps, rel L2 vs reference %.2e\n", p->name, what, steps, d);
  /* npu-stub computes in FP16 (docs/backends/npu-stub.md): its own tolerance */
  double tol = strcmp(p->name, "npu-stub") ? 1e-5 : 5e-3;
  CHECK(d < tol, "%s %s: rel L2 %.3e", p->name, what, d);
  if (sp.u_output) CHECK(tu_rel_l2_arrays(got[1], want[1]) < tol, "%s %s: the u output", p->name, what);
  destroy_outs(got, want);
  mi_graph_destroy(g);
  return steps;
}

static void on_plugin(mi_plugin_t *p) {
  int blis = strcmp(p->name, "blis-cpu") == 0;
  CHECK(check(p, "(x * u) * 0.5", (spec_t){0}) == 1, "%s: one step", p->name);
  CHECK(check(p, "(0.5 * x) * u", (spec_t){.order = 1}) == 1, "%s: one step", p->name);
  CHECK(check(p, "x * (u * 0.5)", (spec_t){.order = 2}) == 1, "%s: one step", p->name);
  CHECK(check(p, "x * (1 / sqrt 2)", (spec_t){.mul_scale = 1}) == 1, "%s: one step", p->name);
  if (blis)
    CHECK(check(p, "MatMul + bias + Gelu", (spec_t){.linear = 1}) == 1,
          "%s: the Gelu is the MatMul's activation", p->name);
  CHECK(check(p, "x / 2", (spec_t){.divisor = 2.0f}) == 5, "%s: x / 2 runs as written", p->name);
  CHECK(check(p, "u output", (spec_t){.u_output = 1}) == 5,
        "%s: a Gelu whose 1 + erf is an output runs node by node", p->name);
}

static void setup(void) { r = open_plugins(); }
static void teardown(void) { mi_registry_destroy(r); }
static void blis_cpu(void) { on_blis_cpu(r, on_plugin); }
static void others(void) { other_plugins(r, on_plugin); }
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu), TU_CASE(others)};

TU_MAIN(setup, teardown)
