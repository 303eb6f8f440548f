/* test_fold.c - constant folding: a Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain
 * becomes one constant shape once the input shape is known, the result is unchanged, and
 * nothing is folded while the shape is still dynamic; mi_graph_fold_weights folds a layer's weight
 * chain and nothing else. */
#include "metainfer/mi_transform.h"
#include "test_ref_common.h"

/* The graph's output y + (c1 + c2), c1 = 1 and c2 = 10: an Add of constants alone, which only
 * the full constant folding removes. */
static void output_plus_constants(mi_graph_t *g, int32_t y) {
  int64_t one = 1;
  float c1v[1] = {1}, c2v[1] = {10};
  int32_t ai[2] = {mi_graph_add_const_f32(g, "c1", 1, &one, c1v), mi_graph_add_const_f32(g, "c2", 1, &one, c2v)};
  int32_t yi[2] = {y, node1(g, "Add", "constadd", 2, ai, NULL)};
  mi_graph_add_output(g, node1(g, "Add", "out", 2, yi, NULL));
}

/* y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) + (c1 + c2) */
static mi_graph_t *build(int64_t d0) {
  mi_graph_t *g = mi_graph_create("fold");
  int64_t xd[3] = {d0, 3, 4}, zero = 0, minus1 = -1;
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 3, xd);
  int32_t idx = mi_graph_add_tensor(g, "idx", MI_DTYPE_INT64, 0, NULL);
  mi_graph_set_data(g, idx, &zero, sizeof zero);
  int32_t axes = mi_graph_add_const_i64(g, "axes", 1, &zero);
  int32_t tail = mi_graph_add_const_i64(g, "tail", 1, &minus1);
  int32_t s = node1(g, "Shape", "shape", 1, &x, NULL);
  int32_t gi[2] = {s, idx};
  int32_t n0 = node1(g, "Gather", "gather", 2, gi, NULL);
  int32_t ui[2] = {n0, axes};
  int32_t u = node1(g, "Unsqueeze", "unsq", 2, ui, NULL);
  int32_t ci[2] = {u, tail};
  int32_t cat = node1(g, "Concat", "concat", 2, ci, NULL);
  mi_node_set_int(g, g->node_count - 1, "axis", 0);
  int32_t ri[2] = {x, cat};
  output_plus_constants(g, node1(g, "Reshape", "reshape", 2, ri, NULL));
  return g;
}

static mi_array_t *run(mi_graph_t *g, mi_array_t *x) {
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&x, 1, &y, 1, &err) == MI_OK, "run: %s",
        err.message);
  return y;
}

static void test_static_chain(void) {
  mi_graph_t *g = build(2);
  mi_error_t err = {0};
  int64_t xd[3] = {2, 3, 4};
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 3, xd);
  for (int i = 0; i < 24; i++) ((float *)x->data)[i] = (float)i * 0.5f - 3.0f;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  mi_array_t *before = run(g, x);
  int32_t folded = -1, tensors_before = g->tensor_count;
  CHECK(mi_graph_fold_constants(g, &folded, &err) == MI_OK, "fold: %s", err.message);
  /* Shape, Gather, Unsqueeze, Concat and the constant Add go; Reshape and the last Add stay. */
  CHECK(folded == 5, "folded %d nodes, want 5", (int)folded);
  CHECK(g->node_count == 2, "%d nodes left, want 2", (int)g->node_count);
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    CHECK(strcmp(n->op_type, "Reshape") == 0 || strcmp(n->op_type, "Add") == 0,
          "unexpected node %s left", n->op_type);
    for (int32_t k = 0; k < n->input_count; k++) {
      const mi_tensor_t *t = &g->tensors[n->inputs[k]];
      if (strcmp(n->op_type, "Reshape") == 0 && k == 1) {
        CHECK(t->data && t->dtype == MI_DTYPE_INT64 && t->nbytes == 16 &&
                  ((int64_t *)t->data)[0] == 2 && ((int64_t *)t->data)[1] == -1,
              "Reshape's shape is not the constant [2,-1]");
      }
    }
  }
  CHECK(g->tensor_count < tensors_before, "dead tensors were kept (%d -> %d)",
        (int)tensors_before, (int)g->tensor_count);
  mi_array_t *after = run(g, x);
  int64_t yd[2] = {2, 12};
  if (before) expect_f32("folded graph", after, 2, yd, (const float *)before->data, 0);
  /* Hand check of two elements: x[i] + (1 + 10). */
  if (after) {
    CHECK(((float *)after->data)[0] == -3.0f + 11.0f, "y[0] = %g", ((float *)after->data)[0]);
    CHECK(((float *)after->data)[23] == 8.5f + 11.0f, "y[23] = %g", ((float *)after->data)[23]);
  }
  mi_array_destroy(before);
  mi_array_destroy(after);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

static void test_dynamic_kept(void) {
  mi_graph_t *g = build(MI_DIM_DYNAMIC);
  mi_error_t err = {0};
  int32_t folded = -1;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  CHECK(mi_graph_fold_constants(g, &folded, &err) == MI_OK, "fold: %s", err.message);
  /* Only the constant Add can go: the shape chain needs the batch dim. */
  CHECK(folded == 1, "folded %d nodes, want 1", (int)folded);
  CHECK(g->node_count == 6, "%d nodes left, want 6", (int)g->node_count);
  mi_graph_destroy(g);
}

static void test_errors(void) {
  mi_error_t err = {0};
  int32_t folded = 7;
  CHECK(mi_graph_fold_constants(NULL, &folded, &err) == MI_ERR_INVALID_ARGUMENT && folded == 0,
        "NULL graph");
  /* Folding evaluates: an impossible constant reshape is reported, naming the node. */
  mi_graph_t *g = mi_graph_create("bad");
  int64_t two = 2, bad = 3;
  float v[2] = {1, 2};
  int32_t ins[2] = {mi_graph_add_const_f32(g, "c", 1, &two, v),
                    mi_graph_add_const_i64(g, "s", 1, &bad)};
  mi_graph_add_output(g, node1(g, "Reshape", "badreshape", 2, ins, NULL));
  CHECK(mi_graph_fold_constants(g, &folded, &err) != MI_OK, "reshape 2 -> 3 folded");
  CHECK(strstr(err.message, "badreshape") != NULL, "message names the node: %s", err.message);
  mi_graph_destroy(g);
}

/* y = MatMul(x, Cast(codes) * scale) + (c1 + c2): a quantized export's weight. */
static mi_graph_t *build_weight(void) {
  mi_graph_t *g = mi_graph_create("weights");
  int64_t xd[2] = {1, 4}, wd[2] = {4, 3};
  int8_t codes[12] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -127};
  float sv[1] = {0.5f};
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 2, xd);
  int32_t w = mi_graph_add_tensor(g, "codes", MI_DTYPE_INT8, 2, wd);
  mi_graph_set_data(g, w, codes, sizeof codes);
  int32_t sc = mi_graph_add_const_f32(g, "scale", 0, NULL, sv);
  int32_t cw = node1(g, "Cast", "cast", 1, &w, NULL);
  mi_node_set_int(g, g->node_count - 1, "to", MI_DTYPE_FLOAT32);
  int32_t mi[2] = {cw, sc};
  int32_t wf = node1(g, "Mul", "dequant", 2, mi, NULL);
  int32_t mm[2] = {x, wf};
  output_plus_constants(g, node1(g, "MatMul", "fc", 2, mm, NULL));
  return g;
}

/* Only the weight's chain folds: the MatMul holds codes * scale as an initializer, the unrelated
 * constant Add stays, and the result is unchanged. */
static void test_weights(void) {
  mi_graph_t *g = build_weight();
  mi_error_t err = {0};
  int64_t xd[2] = {1, 4};
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 2, xd);
  for (int i = 0; i < 4; i++) ((float *)x->data)[i] = (float)i - 1.5f;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  mi_array_t *before = run(g, x);
  int32_t folded = -1;
  CHECK(mi_graph_fold_weights(g, &folded, &err) == MI_OK, "fold weights: %s", err.message);
  CHECK(folded == 2, "folded %d nodes, want 2 (Cast, Mul)", (int)folded);
  CHECK(g->node_count == 3, "%d nodes left, want 3", (int)g->node_count);
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    if (strcmp(n->op_type, "MatMul") == 0) {
      const mi_tensor_t *t = &g->tensors[n->inputs[1]];
      CHECK(t->data && t->dtype == MI_DTYPE_FLOAT32 && t->nbytes == 48, "the MatMul's weight is not a float initializer");
      if (t->data)
        CHECK(((const float *)t->data)[11] == -63.5f && ((const float *)t->data)[0] == 0.5f, "weight %g %g",
              ((const float *)t->data)[0], ((const float *)t->data)[11]);
    } else {
      CHECK(strcmp(n->op_type, "Add") == 0, "unexpected node %s left", n->op_type);
    }
  }
  mi_array_t *after = run(g, x);
  int64_t yd[2] = {1, 3};
  if (before) expect_f32("weights folded", after, 2, yd, (const float *)before->data, 0);
  /* A second call finds nothing left to fold. */
  CHECK(mi_graph_fold_weights(g, &folded, &err) == MI_OK && folded == 0, "second call folded %d", (int)folded);
  CHECK(mi_graph_fold_weights(NULL, &folded, &err) == MI_ERR_INVALID_ARGUMENT, "NULL graph");
  mi_array_destroy(before);
  mi_array_destroy(after);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

/* The transform names such a layer as any weighted one: a config for it applies to the graph as
 * loaded (mi_xf_apply folds the weight first); the caller's graph is not changed. */
static void test_weights_transform(void) {
  mi_graph_t *g = build_weight(), *xg = NULL;
  mi_xf_config_t *c = NULL;
  mi_xf_stats_t st;
  mi_error_t err = {0};
  static const char text[] = "layers:\n  fc: {weights: fp16}\n";
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  CHECK(mi_xf_config_parse(text, sizeof text - 1, "test", &c, &err) == MI_OK, "parse: %s", err.message);
  CHECK(c && mi_xf_apply(g, c, NULL, &xg, &st, &err) == MI_OK, "apply: %s", err.message);
  CHECK(st.quantized_layers == 1, "%d layers quantized, want 1", (int)st.quantized_layers);
  CHECK(g->node_count == 5, "the caller's graph changed: %d nodes", (int)g->node_count);
  mi_graph_destroy(xg);
  mi_xf_config_destroy(c);
  mi_graph_destroy(g);
}

/* What every tool measures: shapes inferred and constants folded in one call, the shape chain
 * included (the tools' Pads with computed amounts, Clips with computed bounds). */
static void test_make_static(void) {
  mi_graph_t *g = build(2);
  mi_error_t err = {0};
  int32_t folded = -1;
  CHECK(mi_graph_make_static(g, &folded, &err) == MI_OK, "make static: %s", err.message);
  CHECK(folded == 5 && g->node_count == 2, "folded %d, %d nodes left; want 5 and 2", (int)folded,
        (int)g->node_count);
  CHECK(mi_graph_make_static(NULL, &folded, &err) == MI_ERR_INVALID_ARGUMENT && folded == 0, "NULL graph");
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_static_chain),
    TU_CASE(test_dynamic_kept),
    TU_CASE(test_errors),
    TU_CASE(test_weights),
    TU_CASE(test_make_static),
    TU_CASE(test_weights_transform),
};

TU_MAIN(NULL, NULL)
