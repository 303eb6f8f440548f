/* test_if_inline.c - an If whose condition fixed input values decide is replaced by its branch
 * (mi_graph_inline_ifs): the result equals the reference interpreter's run of the If, a nested
 * If inside the branch goes too, branch names the outer graph uses are made unique (a nested
 * subgraph's capture of a renamed value follows it), a branch output that is an outer value or
 * a constant comes through an Identity; input values come from --value and from the shape text,
 * and a different value is refused with both named. */
#include "test_ref_common.h"

/* The then branch: t = Relu(x) (t shadows the outer t), then If(k = true) { u = Neg(t) } else
 * { u = Abs(t) } nested in it; outputs (u, x): x a captured outer value. */
static mi_graph_t *then_branch(void) {
  mi_graph_t *s = mi_graph_create("then");
  mi_error_t err = {0};
  uint8_t yes = 1;
  int32_t x = mi_graph_add_tensor(s, "x", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t t = mi_graph_add_tensor(s, "t", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t k = mi_graph_add_tensor(s, "k", MI_DTYPE_BOOL, 0, NULL);
  int32_t u = mi_graph_add_tensor(s, "u", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t node;
  mi_graph_set_data(s, k, &yes, 1);
  mi_graph_add_capture(s, x);
  mi_graph_add_node(s, "Relu", "relu", 1, &x, 1, &t);
  node = mi_graph_add_node(s, "If", "inner", 1, &k, 1, &u);
  for (int b = 0; b < 2; b++) {
    mi_graph_t *in = mi_graph_create(b ? "inner_else" : "inner_then");
    int32_t ct = mi_graph_add_tensor(in, "t", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t o = mi_graph_add_tensor(in, b ? "u_else" : "u_then", MI_DTYPE_UNDEFINED, -1, NULL);
    mi_graph_add_capture(in, ct);
    mi_graph_add_node(in, b ? "Abs" : "Neg", "neg", 1, &ct, 1, &o);
    mi_graph_add_output(in, o);
    REQUIRE(mi_node_add_subgraph(s, node, b ? "else_branch" : "then_branch", in, &err) == MI_OK);
  }
  mi_graph_add_output(s, u);
  mi_graph_add_output(s, x);
  return s;
}

/* The else branch: t = Concat(x, x) (length 8); outputs (t, b) with b a constant [4]. */
static mi_graph_t *else_branch(void) {
  mi_graph_t *s = mi_graph_create("else");
  int64_t four = 4;
  float bv[4] = {10, 20, 30, 40};
  int32_t x = mi_graph_add_tensor(s, "x", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t t = mi_graph_add_tensor(s, "t", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t b = mi_graph_add_const_f32(s, "b", 1, &four, bv);
  int32_t ins[2] = {x, x};
  mi_graph_add_capture(s, x);
  int32_t n = mi_graph_add_node(s, "Concat", "relu", 2, ins, 1, &t);
  mi_node_set_int(s, n, "axis", 0);
  mi_graph_add_output(s, t);
  mi_graph_add_output(s, b);
  return s;
}

/* t = x + x; y, w = If(sel == 0, then, else); out1 = Relu(y) (node "relu"), out2 = w + t;
 * outputs out1, out2, t. */
static mi_graph_t *build(void) {
  int64_t xd[1] = {4}, zero = 0;
  mi_graph_t *g = mi_graph_create("if_inline");
  mi_error_t err = {0};
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, xd);
  int32_t sel = mi_graph_add_tensor(g, "sel", MI_DTYPE_INT64, 0, NULL);
  int32_t k0 = mi_graph_add_const_i64(g, "zero", 1, &zero);
  int32_t t = mi_graph_add_tensor(g, "t", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t c = mi_graph_add_tensor(g, "c", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t w = mi_graph_add_tensor(g, "w", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t o1 = mi_graph_add_tensor(g, "out1", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t o2 = mi_graph_add_tensor(g, "out2", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t xx[2] = {x, x}, eq[2] = {sel, k0}, yw[2] = {y, w}, wt[2] = {w, t}, node;
  mi_graph_add_input(g, x);
  mi_graph_add_input(g, sel);
  mi_graph_add_node(g, "Add", "twice", 2, xx, 1, &t);
  mi_graph_add_node(g, "Equal", "eq", 2, eq, 1, &c);
  node = mi_graph_add_node(g, "If", "if", 1, &c, 2, yw);
  mi_graph_add_node(g, "Relu", "relu", 1, &y, 1, &o1);
  mi_graph_add_node(g, "Add", "sum", 2, wt, 1, &o2);
  mi_graph_add_output(g, o1);
  mi_graph_add_output(g, o2);
  mi_graph_add_output(g, t);
  REQUIRE(mi_node_add_subgraph(g, node, "then_branch", then_branch(), &err) == MI_OK);
  REQUIRE(mi_node_add_subgraph(g, node, "else_branch", else_branch(), &err) == MI_OK);
  REQUIRE(mi_graph_toposort(g, &err) == MI_OK);
  return g;
}

static int count_op(const mi_graph_t *g, const char *op) {
  int n = 0;
  for (int32_t i = 0; i < g->node_count; i++) n += strcmp(g->nodes[i].op_type, op) == 0;
  return n;
}

static int names_unique(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->tensor_count; i++)
    for (int32_t j = i + 1; j < g->tensor_count; j++)
      if (!strcmp(g->tensors[i].name, g->tensors[j].name)) return 0;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = i + 1; j < g->node_count; j++)
      if (!strcmp(g->nodes[i].name, g->nodes[j].name)) return 0;
  return 1;
}

/* For sel = 0 (then, with its nested If) and 1 (else): the inlined graph's outputs equal the
 * reference run of the If graph, bit for bit. by_text: the value from a shape text entry. */
static void check_sel(int64_t v, int by_text) {
  mi_graph_t *g = build(), *h = mi_graph_clone(g);
  mi_error_t err = {0};
  int64_t xd[1] = {4};
  float xv[4] = {1.5f, -2.0f, 0.25f, 3.0f};
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 1, xd), *s = mi_array_create(MI_DTYPE_INT64, 0, NULL);
  mi_array_t *ref[3] = {0}, *got[3] = {0};
  int32_t inlined = -1;
  char spec[32];
  REQUIRE(x && s && h);
  memcpy(x->data, xv, sizeof xv);
  *(int64_t *)s->data = v;
  const mi_array_t *ins[2] = {x, s};
  CHECK(mi_ref_run(g, ins, 2, ref, 3, &err) == MI_OK, "ref of the If: %s", err.message);
  if (by_text) {
    snprintf(spec, sizeof spec, "x:4;sel={%lld}", (long long)v);
    CHECK(mi_graph_set_input_shapes(h, spec, "test", &err) == MI_OK, "shape text: %s", err.message);
  } else {
    const char *val = v ? "sel=1" : "sel=0";
    CHECK(mi_graph_input_values(h, &val, 1, &err) == MI_OK, "--value: %s", err.message);
  }
  CHECK(h->input_count == 1, "sel is no longer an input (%d inputs)", (int)h->input_count);
  CHECK(mi_graph_infer_shapes(h, &err) == MI_OK, "infer: %s", err.message);
  CHECK(mi_graph_inline_ifs(h, &inlined, &err) == MI_OK, "inline: %s", err.message);
  CHECK(inlined == (v == 0 ? 2 : 1), "sel=%lld: %d If inlined", (long long)v, (int)inlined);
  CHECK(count_op(h, "If") == 0, "no If left");
  CHECK(count_op(h, "Identity") == 1, "one Identity (x, or the constant b)");
  CHECK(names_unique(h), "tensor and node names unique");
  CHECK(mi_graph_find_tensor(h, "t") >= 0 && (v || mi_graph_find_tensor(h, "if/t") >= 0),
        "the then branch's t became if/t");
  CHECK(mi_ref_run(h, ins, 1, got, 3, &err) == MI_OK, "ref of the inlined graph: %s", err.message);
  for (int k = 0; k < 3; k++)
    CHECK(ref[k] && got[k] && ref[k]->rank == got[k]->rank && ref[k]->dims[0] == got[k]->dims[0] &&
              tu_rel_l2_arrays(got[k], ref[k]) == 0.0,
          "sel=%lld output %d equals the If's", (long long)v, k);
  for (int k = 0; k < 3; k++) {
    mi_array_destroy(ref[k]);
    mi_array_destroy(got[k]);
  }
  mi_array_destroy(x);
  mi_array_destroy(s);
  mi_graph_destroy(g);
  mi_graph_destroy(h);
}

static void test_inline_then_nested(void) { check_sel(0, 0); }
static void test_inline_else_constant(void) { check_sel(1, 1); }

/* Without a fixed value the condition is unknown: nothing changes. A graph without If too. */
static void test_unknown_kept(void) {
  mi_graph_t *g = build();
  mi_error_t err = {0};
  int32_t inlined = -1, nodes;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  nodes = g->node_count;
  CHECK(mi_graph_inline_ifs(g, &inlined, &err) == MI_OK && inlined == 0 && count_op(g, "If") == 1 &&
            g->node_count == nodes,
        "unknown condition kept (%d inlined)", (int)inlined);
  mi_graph_destroy(g);
}

/* Bad values are refused with the input named; a value check names both values. */
static void test_values_errors(void) {
  mi_graph_t *g = build();
  mi_error_t err = {0};
  const char *bad[] = {"sel=abc", "sel=1,2", "nope=1", "sel="};
  for (int i = 0; i < 4; i++) {
    CHECK(mi_graph_input_values(g, &bad[i], 1, &err) != MI_OK, "'%s' refused", bad[i]);
    CHECK(strstr(err.message, i == 2 ? "nope" : "sel") != NULL, "message names the input: %s", err.message);
  }
  CHECK(g->input_count == 2, "nothing fixed");
  mi_array_t *a = mi_array_create(MI_DTYPE_INT64, 0, NULL);
  REQUIRE(a);
  *(int64_t *)a->data = 16000;
  CHECK(mi_input_value_check("x:4;sel={16000}", "d.yaml", "sel", a, &err) == MI_OK, "same value accepted");
  CHECK(mi_input_value_check("x:4", "d.yaml", "sel", a, &err) == MI_OK, "no fixed value: nothing to check");
  *(int64_t *)a->data = 8000;
  CHECK(mi_input_value_check("x:4;sel={16000}", "d.yaml", "sel", a, &err) == MI_ERR_INVALID_ARGUMENT &&
            strstr(err.message, "'sel'") && strstr(err.message, "16000") && strstr(err.message, "8000") &&
            strstr(err.message, "d.yaml"),
        "other value refused: %s", err.message);
  mi_array_destroy(a);
  mi_graph_destroy(g);
}

/* A branch that reshapes by a captured constant (Unsqueeze on outer axes, as Silero VAD v6
 * ifless does) has no ranks while it is a subgraph (captures bind shapes, not values): shape
 * inference of the known branch leaves the If's outputs unknown rather than failing, and once
 * inlined the branch infers and runs as the If did. */
static void test_captured_constant_shape(void) {
  mi_graph_t *g = mi_graph_create("captured_axes"), *s = mi_graph_create("then"), *e = mi_graph_create("else");
  mi_error_t err = {0};
  int64_t four = 4, wd[2] = {4, 2}, zero = 0;
  float wv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, xv[4] = {0.5f, -1, 2, 0.25f};
  uint8_t yes = 1;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, &four);
  (void)mi_graph_add_const_i64(g, "axes", 1, &zero);
  (void)mi_graph_add_const_f32(g, "w", 2, wd, wv);
  int32_t c = mi_graph_add_tensor(g, "c", MI_DTYPE_BOOL, 0, NULL);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL), node, inlined = 0;
  mi_graph_set_data(g, c, &yes, 1);
  mi_graph_add_input(g, x);
  node = mi_graph_add_node(g, "If", "if", 1, &c, 1, &y);
  mi_graph_add_output(g, y);
  {
    int32_t sx = mi_graph_add_tensor(s, "x", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t sa = mi_graph_add_tensor(s, "axes", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t sw = mi_graph_add_tensor(s, "w", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t u = mi_graph_add_tensor(s, "u", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t v = mi_graph_add_tensor(s, "v", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t ui[2] = {sx, sa}, gi[2] = {u, sw};
    mi_graph_add_capture(s, sx);
    mi_graph_add_capture(s, sa);
    mi_graph_add_capture(s, sw);
    mi_graph_add_node(s, "Unsqueeze", "unsq", 2, ui, 1, &u);
    mi_graph_add_node(s, "Gemm", "gemm", 2, gi, 1, &v);
    mi_graph_add_output(s, v);
  }
  {
    int32_t ex = mi_graph_add_tensor(e, "x", MI_DTYPE_UNDEFINED, -1, NULL);
    int32_t o = mi_graph_add_tensor(e, "o", MI_DTYPE_UNDEFINED, -1, NULL);
    mi_graph_add_capture(e, ex);
    mi_graph_add_node(e, "Relu", "relu", 1, &ex, 1, &o);
    mi_graph_add_output(e, o);
  }
  REQUIRE(mi_node_add_subgraph(g, node, "then_branch", s, &err) == MI_OK);
  REQUIRE(mi_node_add_subgraph(g, node, "else_branch", e, &err) == MI_OK);
  REQUIRE(mi_graph_toposort(g, &err) == MI_OK);
  mi_array_t *xa = mi_array_create(MI_DTYPE_FLOAT32, 1, &four), *ref = NULL, *got = NULL;
  REQUIRE(xa);
  memcpy(xa->data, xv, sizeof xv);
  const mi_array_t *ins[1] = {xa};
  CHECK(mi_ref_run(g, ins, 1, &ref, 1, &err) == MI_OK, "ref of the If: %s", err.message);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer with the branch's ranks unknown: %s", err.message);
  CHECK(mi_graph_inline_ifs(g, &inlined, &err) == MI_OK && inlined == 1, "inline: %s", err.message);
  y = mi_graph_find_tensor(g, "y"); /* indices change when the If goes */
  CHECK(y >= 0 && g->tensors[y].rank == 2 && g->tensors[y].dims[1] == 2, "y [1, 2] once inlined");
  CHECK(mi_ref_run(g, ins, 1, &got, 1, &err) == MI_OK, "ref of the inlined graph: %s", err.message);
  CHECK(ref && got && got->rank == 2 && tu_rel_l2_arrays(got, ref) == 0.0, "same result as the If");
  mi_array_destroy(xa);
  mi_array_destroy(ref);
  mi_array_destroy(got);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_captured_constant_shape),
    TU_CASE(test_inline_then_nested),
    TU_CASE(test_inline_else_constant),
    TU_CASE(test_unknown_kept),
    TU_CASE(test_values_errors),
};

TU_MAIN(NULL, NULL)
