/* test_onnx_seq.c - hand-encoded ONNX models with sequence and optional ops, lowered by the
 * loader to tensor ops (graph/seq_lower.c, seq_loop.c): SplitToSequence + SequenceAt /
 * SequenceLength / ConcatFromSequence (explicit, scalar and omitted split, keepdims 0, opsets 11
 * and 13), SequenceConstruct / Insert / Erase / Identity, Optional, and a Loop that builds a list
 * stacked and concatenated after it; each model is loaded, checked to have no sequence op left,
 * shape-inferred and run on ref against values worked out by hand. What cannot be lowered
 * (run-time positions and lengths, a list the loop does more with, a sequence graph input or
 * output, SequenceMap) is a clear load error naming the node. */
#include "test_ref_common.h"

#include "test_pb.h"

/* ONNX element types */
enum { T_FLOAT = 1,
       T_INT64 = 7,
       T_BOOL = 9 };

static mi_graph_t *load_model(const pb_t *graph, int64_t opset, mi_error_t *err) {
  const pb_t *m = pb_model(graph, opset);
  mi_graph_t *g = NULL;
  return mi_onnx_load_buffer(m->d, m->n, NULL, &g, err) == MI_OK ? g : NULL;
}

/* A scalar (rank 0) initializer of ONNX element type `elem` from its raw little-endian bytes. */
static void init_scalar(pb_t *g, const char *name, int elem, const void *bytes, size_t n) {
  pb_t t = {0};
  put_int(&t, 2, elem);
  put_str(&t, 8, name);
  put_bytes(&t, 9, bytes, n);
  put_msg(g, 5, &t);
}

/* A ValueInfoProto typed sequence(tensor(elem)) as graph input (field 11) or output (12). */
static void value_seq(pb_t *g, int field, const char *name, int elem) {
  pb_t vi = {0}, tp = {0}, sq = {0}, et = {0}, tt = {0};
  put_int(&tt, 1, elem);
  put_msg(&et, 1, &tt);
  put_msg(&sq, 1, &et);
  put_msg(&tp, 4, &sq);
  put_str(&vi, 1, name);
  put_msg(&vi, 2, &tp);
  put_msg(g, field, &vi);
}

static void add_node(pb_t *g, const char *op, const char *name, const char *ins, const char *outs) {
  static pb_t n;
  pb_node(&n, op, name, ins, outs);
  put_msg(g, 1, &n);
}

/* No sequence or optional op is left anywhere in g (subgraphs too). */
static int no_seq_ops(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++) {
    const char *op = g->nodes[i].op_type;
    if (strstr(op, "Sequence") || strstr(op, "Optional")) return 0;
    for (int32_t s = 0; s < g->nodes[i].subgraph_count; s++)
      if (!no_seq_ops(g->nodes[i].subgraphs[s])) return 0;
  }
  return 1;
}

static const char *op_of(const mi_graph_t *g, const char *node) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (!strcmp(g->nodes[i].name, node)) return g->nodes[i].op_type;
  return "";
}

/* Loads, checks the lowering left no sequence op, infers shapes and runs on ref. */
static mi_graph_t *load_run(const pb_t *graph, int64_t opset, int nin, mi_array_t **ins, mi_array_t **outs) {
  mi_error_t err = {0};
  mi_graph_t *g = load_model(graph, opset, &err);
  CHECK(g, "opset %d load: %s", (int)opset, err.message);
  if (!g) return NULL;
  CHECK(no_seq_ops(g), "opset %d: no sequence op is left after loading", (int)opset);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "opset %d inference: %s", (int)opset, err.message);
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)ins, nin, outs, g->output_count, &err);
  CHECK(rc == MI_OK, "opset %d run: %s", (int)opset, err.message);
  for (int32_t i = 0; rc == MI_OK && i < g->output_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->outputs[i]];
    int fits = t->rank == outs[i]->rank && t->dtype == outs[i]->dtype;
    for (int32_t d = 0; fits && d < t->rank; d++) /* (a Loop's scan outputs: a dynamic first dim) */
      fits = t->dims[d] < 0 || t->dims[d] == outs[i]->dims[d];
    CHECK(fits, "opset %d output '%s': inferred shape differs from the run", (int)opset, t->name);
  }
  if (rc != MI_OK) {
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* SplitToSequence with explicit sizes along axis 1, two SequenceAt (0 and -1) and the length. */
static void test_split_at(void) {
  static const int64_t opsets[2] = {11, 13};
  int64_t d26[2] = {2, 6}, d22[2] = {2, 2}, d24[2] = {2, 4}, sizes[2] = {2, 4}, zero = 0, last = -1;
  float xv[12];
  for (int k = 0; k < 12; k++) xv[k] = (float)k;
  for (int o = 0; o < 2; o++) {
    static pb_t g, n;
    g.n = 0;
    pb_value_f32(&g, 11, "x", 2, d26, NULL);
    pb_init_i64(&g, "sizes", 2, sizes);
    init_scalar(&g, "p0", T_INT64, &zero, sizeof zero);
    init_scalar(&g, "pm1", T_INT64, &last, sizeof last);
    pb_node(&n, "SplitToSequence", "split", "x,sizes", "s");
    pb_attr_int(&n, "axis", 1);
    put_msg(&g, 1, &n);
    add_node(&g, "SequenceAt", "first", "s,p0", "a");
    add_node(&g, "SequenceAt", "last", "s,pm1", "b");
    add_node(&g, "SequenceLength", "len", "s", "len");
    pb_value_f32(&g, 12, "a", -1, NULL, NULL);
    pb_value_f32(&g, 12, "b", -1, NULL, NULL);
    pb_value(&g, 12, "len", T_INT64, -1, NULL, NULL);
    mi_array_t *x = arr_f32(2, d26, xv), *y[3] = {0};
    mi_graph_t *gr = load_run(&g, opsets[o], 1, &x, y);
    if (gr) {
      CHECK(!strcmp(op_of(gr, "split"), "Split") && !strcmp(op_of(gr, "first"), "Identity"),
            "opset %d: SplitToSequence became Split, SequenceAt Identity (keeping their names)", (int)opsets[o]);
      expect_f32("SequenceAt 0", y[0], 2, d22, (float[]){0, 1, 6, 7}, 0);
      expect_f32("SequenceAt -1", y[1], 2, d24, (float[]){2, 3, 4, 5, 8, 9, 10, 11}, 0);
      expect_i64("SequenceLength", y[2], 0, NULL, (int64_t[]){2});
    }
    for (int k = 0; k < 3; k++) mi_array_destroy(y[k]);
    mi_array_destroy(x);
    mi_graph_destroy(gr);
  }
}

/* SplitToSequence without split, keepdims 0, of a value whose shape only inference knows:
 * SequenceAt, ConcatFromSequence stacking along axis 1 (a transpose) and concatenating. */
static void test_unbind(void) {
  static const int64_t opsets[2] = {11, 13};
  int64_t d32[2] = {3, 2}, d2[1] = {2}, d23[2] = {2, 3}, d6[1] = {6}, one = 1;
  for (int o = 0; o < 2; o++) {
    static pb_t g, n;
    g.n = 0;
    pb_value_f32(&g, 11, "in", 2, d32, NULL);
    init_scalar(&g, "p1", T_INT64, &one, sizeof one);
    add_node(&g, "Add", "double", "in,in", "x");
    pb_node(&n, "SplitToSequence", "unbind", "x", "s");
    pb_attr_int(&n, "keepdims", 0);
    put_msg(&g, 1, &n);
    add_node(&g, "SequenceAt", "row1", "s,p1", "r1");
    pb_node(&n, "ConcatFromSequence", "stack", "s", "st");
    pb_attr_int(&n, "axis", 1);
    pb_attr_int(&n, "new_axis", 1);
    put_msg(&g, 1, &n);
    pb_node(&n, "ConcatFromSequence", "cat", "s", "flat");
    pb_attr_int(&n, "axis", 0);
    put_msg(&g, 1, &n);
    pb_value_f32(&g, 12, "r1", -1, NULL, NULL);
    pb_value_f32(&g, 12, "st", -1, NULL, NULL);
    pb_value_f32(&g, 12, "flat", -1, NULL, NULL);
    mi_array_t *x = arr_f32(2, d32, (float[]){1, 2, 3, 4, 5, 6}), *y[3] = {0};
    mi_graph_t *gr = load_run(&g, opsets[o], 1, &x, y);
    if (gr) {
      CHECK(!strcmp(op_of(gr, "stack"), "Concat"), "ConcatFromSequence became Concat");
      expect_f32("row 1", y[0], 1, d2, (float[]){6, 8}, 0);
      expect_f32("stacked along axis 1", y[1], 2, d23, (float[]){2, 6, 10, 4, 8, 12}, 0);
      expect_f32("concatenated", y[2], 1, d6, (float[]){2, 4, 6, 8, 10, 12}, 0);
    }
    for (int k = 0; k < 3; k++) mi_array_destroy(y[k]);
    mi_array_destroy(x);
    mi_graph_destroy(gr);
  }
}

/* A scalar split of 2 over 5 rows: parts of 2, 2 and 1. */
static void test_split_scalar(void) {
  static pb_t g, n;
  int64_t d52[2] = {5, 2}, d12[2] = {1, 2}, two = 2, p = 2;
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, d52, NULL);
  init_scalar(&g, "two", T_INT64, &two, sizeof two);
  init_scalar(&g, "p", T_INT64, &p, sizeof p);
  pb_node(&n, "SplitToSequence", "chunk", "x,two", "s");
  put_msg(&g, 1, &n);
  add_node(&g, "SequenceAt", "tail", "s,p", "t");
  add_node(&g, "SequenceLength", "len", "s", "len");
  pb_value_f32(&g, 12, "t", -1, NULL, NULL);
  pb_value(&g, 12, "len", T_INT64, -1, NULL, NULL);
  mi_array_t *x = arr_f32(2, d52, (float[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), *y[2] = {0};
  mi_graph_t *gr = load_run(&g, 13, 1, &x, y);
  if (gr) {
    expect_f32("last, shorter part", y[0], 2, d12, (float[]){8, 9}, 0);
    expect_i64("three parts", y[1], 0, NULL, (int64_t[]){3});
  }
  for (int k = 0; k < 2; k++) mi_array_destroy(y[k]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

/* Split sizes given at run time (a graph input of 3 sizes): Split takes them from opset 13, so
 * the parts are known tensors; at opset 12 only the length is. An unbind of 70 rows, more than a
 * Split gives: the rows are slices of x (SequenceAt 65 a Gather), the length 70. */
static void test_split_runtime(void) {
  static pb_t g;
  int64_t d6[1] = {6}, d3[1] = {3}, d2[1] = {2}, d702[2] = {70, 2}, one = 1, p65 = 65;
  for (int opset = 12; opset <= 13; opset++) {
    g.n = 0;
    pb_value_f32(&g, 11, "x", 1, d6, NULL);
    pb_value(&g, 11, "sizes", T_INT64, 1, d3, NULL);
    init_scalar(&g, "one", T_INT64, &one, sizeof one);
    add_node(&g, "SplitToSequence", "split", "x,sizes", "s");
    add_node(&g, "SequenceLength", "len", "s", "len");
    if (opset == 13) add_node(&g, "SequenceAt", "second", "s,one", "b");
    pb_value(&g, 12, "len", T_INT64, -1, NULL, NULL);
    if (opset == 13) pb_value_f32(&g, 12, "b", -1, NULL, NULL);
    mi_array_t *in[2] = {arr_f32(1, d6, (float[]){1, 2, 3, 4, 5, 6}), arr_i64(1, d3, (int64_t[]){1, 2, 3})}, *y[2] = {0};
    mi_graph_t *gr = load_run(&g, opset, 2, in, y);
    if (gr) {
      expect_i64("length", y[0], 0, NULL, (int64_t[]){3});
      if (opset == 13) expect_f32("part 1 of sizes 1, 2, 3", y[1], 1, d2, (float[]){2, 3}, 0);
    }
    for (int k = 0; k < 2; k++) mi_array_destroy(y[k]), mi_array_destroy(in[k]);
    mi_graph_destroy(gr);
  }
  /* opset 12 and a part read: refused */
  g.n = 0;
  pb_value_f32(&g, 11, "x", 1, d6, NULL);
  pb_value(&g, 11, "sizes", T_INT64, 1, d3, NULL);
  init_scalar(&g, "one", T_INT64, &one, sizeof one);
  add_node(&g, "SplitToSequence", "split", "x,sizes", "s");
  add_node(&g, "SequenceAt", "second", "s,one", "b");
  pb_value_f32(&g, 12, "b", -1, NULL, NULL);
  mi_error_t err = {0};
  mi_graph_t *gr = load_model(&g, 12, &err);
  CHECK(!gr && strstr(err.message, "node 'second' (SequenceAt)") && strstr(err.message, "opset 13"),
        "a part of run-time sizes at opset 12 refused: %s", err.message);
  mi_graph_destroy(gr);
  /* 70 rows */
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, d702, NULL);
  init_scalar(&g, "p", T_INT64, &p65, sizeof p65);
  add_node(&g, "SplitToSequence", "rows", "x", "s");
  add_node(&g, "SequenceAt", "row65", "s,p", "r");
  add_node(&g, "SequenceLength", "len", "s", "len");
  pb_value_f32(&g, 12, "r", -1, NULL, NULL);
  pb_value(&g, 12, "len", T_INT64, -1, NULL, NULL);
  float xv[140];
  for (int k = 0; k < 140; k++) xv[k] = (float)k;
  mi_array_t *x = arr_f32(2, d702, xv), *y[2] = {0};
  int64_t d12[2] = {1, 2};
  gr = load_run(&g, 13, 1, &x, y);
  if (gr) {
    CHECK(!strcmp(op_of(gr, "row65"), "Unsqueeze"), "row 65 of 70 is a Gather of x (+ Unsqueeze), not a Split part");
    expect_f32("row 65", y[0], 2, d12, (float[]){130, 131}, 0);
    expect_i64("70 rows", y[1], 0, NULL, (int64_t[]){70});
  }
  for (int k = 0; k < 2; k++) mi_array_destroy(y[k]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

/* SequenceConstruct, Insert at the front, Erase the last, Identity of a sequence, Insert at the
 * end; At, Length and Concat of the results. */
static void test_construct_edit(void) {
  static pb_t g, n;
  int64_t d12[2] = {1, 2}, d22[2] = {2, 2}, zero = 0, last = -1, two = 2;
  g.n = 0;
  pb_value_f32(&g, 11, "a", 2, d12, NULL);
  pb_value_f32(&g, 11, "b", 2, d12, NULL);
  pb_value_f32(&g, 11, "c", 2, d12, NULL);
  init_scalar(&g, "p0", T_INT64, &zero, sizeof zero);
  init_scalar(&g, "pm1", T_INT64, &last, sizeof last);
  init_scalar(&g, "p2", T_INT64, &two, sizeof two);
  add_node(&g, "SequenceConstruct", "make", "a,b", "s0");
  add_node(&g, "SequenceInsert", "front", "s0,c,p0", "s1");   /* c a b */
  add_node(&g, "SequenceErase", "drop_last", "s1,pm1", "s2"); /* c a */
  add_node(&g, "Identity", "same", "s2", "s3");
  add_node(&g, "SequenceInsert", "append", "s3,b", "s4"); /* c a b */
  add_node(&g, "SequenceAt", "at2", "s1,p2", "z");
  add_node(&g, "SequenceLength", "len", "s4", "len");
  pb_node(&n, "ConcatFromSequence", "cat", "s3", "y");
  pb_attr_int(&n, "axis", 0);
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "y", -1, NULL, NULL);
  pb_value_f32(&g, 12, "z", -1, NULL, NULL);
  pb_value(&g, 12, "len", T_INT64, -1, NULL, NULL);
  mi_array_t *in[3] = {arr_f32(2, d12, (float[]){1, 2}), arr_f32(2, d12, (float[]){3, 4}),
                       arr_f32(2, d12, (float[]){5, 6})},
             *y[3] = {0};
  mi_graph_t *gr = load_run(&g, 16, 3, in, y);
  if (gr) {
    CHECK(gr->node_count == 2, "only Concat and Identity remain (the length is a constant): %d nodes",
          (int)gr->node_count);
    expect_f32("Concat of [c, a]", y[0], 2, d22, (float[]){5, 6, 1, 2}, 0);
    expect_f32("At 2 of [c, a, b]", y[1], 2, d12, (float[]){3, 4}, 0);
    expect_i64("Length of [c, a, b]", y[2], 0, NULL, (int64_t[]){3});
  }
  for (int k = 0; k < 3; k++) mi_array_destroy(y[k]), mi_array_destroy(in[k]);
  mi_graph_destroy(gr);
}

/* Optional(x): has an element, gives x; an empty Optional (type attribute) has none; a plain
 * tensor counts as set; an If's branch reads both optionals (captured). */
static void test_optional(void) {
  static pb_t g, n;
  int64_t d2[1] = {2};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 1, d2, NULL);
  add_node(&g, "Optional", "wrap", "x", "o");
  add_node(&g, "OptionalHasElement", "has", "o", "h");
  add_node(&g, "OptionalGetElement", "get", "o", "y");
  add_node(&g, "OptionalHasElement", "has_t", "x", "ht");
  pb_node(&n, "Optional", "none", "", "e");
  {
    pb_t a = {0}, tp = {0}, tt = {0};
    put_int(&tt, 1, T_FLOAT);
    put_msg(&tp, 1, &tt);
    put_str(&a, 1, "type");
    put_msg(&a, 14, &tp);
    put_int(&a, 20, 13);
    put_msg(&n, 5, &a);
  }
  put_msg(&g, 1, &n);
  add_node(&g, "OptionalHasElement", "has_e", "e", "he");
  /* `if o is not None: o + o else -x`, the branches capturing the optionals o and e */
  {
    static pb_t t, f;
    t.n = f.n = 0;
    add_node(&t, "OptionalGetElement", "unwrap", "o", "ov");
    add_node(&t, "Add", "twice", "ov,ov", "yt");
    add_node(&t, "OptionalHasElement", "has_e_in", "e", "het");
    pb_node(&n, "Cast", "het_f", "het", "hetf");
    pb_attr_int(&n, "to", T_FLOAT);
    put_msg(&t, 1, &n);
    add_node(&t, "Add", "plus_none", "yt,hetf", "yb");
    pb_value_f32(&t, 12, "yb", -1, NULL, NULL);
    add_node(&f, "Neg", "negate", "x", "yb");
    pb_value_f32(&f, 12, "yb", -1, NULL, NULL);
    pb_node(&n, "If", "branch", "h", "yif");
    pb_attr_graph(&n, "then_branch", &t);
    pb_attr_graph(&n, "else_branch", &f);
    put_msg(&g, 1, &n);
  }
  pb_value_f32(&g, 12, "y", -1, NULL, NULL);
  pb_value(&g, 12, "h", T_BOOL, -1, NULL, NULL);
  pb_value(&g, 12, "ht", T_BOOL, -1, NULL, NULL);
  pb_value(&g, 12, "he", T_BOOL, -1, NULL, NULL);
  pb_value_f32(&g, 12, "yif", -1, NULL, NULL);
  mi_array_t *x = arr_f32(1, d2, (float[]){7, 8}), *y[5] = {0};
  mi_graph_t *gr = load_run(&g, 18, 1, &x, y);
  if (gr) {
    expect_f32("OptionalGetElement", y[0], 1, d2, (float[]){7, 8}, 0);
    for (int k = 1; k < 4; k++)
      CHECK(y[k] && y[k]->dtype == MI_DTYPE_BOOL && y[k]->rank == 0 && ((uint8_t *)y[k]->data)[0] == (k < 3),
            "OptionalHasElement %d is %s", k, k < 3 ? "true" : "false");
    expect_f32("If reading the captured optionals", y[4], 1, d2, (float[]){14, 16}, 0);
  }
  for (int k = 0; k < 5; k++) mi_array_destroy(y[k]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

/* The body of a list-building loop: y = x * iter appended to the carried list; with `peek` it
 * also reads the list (SequenceLength), which is not an append only. */
static void loop_body(pb_t *b, int peek) {
  static pb_t n;
  b->n = 0;
  pb_value(b, 11, "iter", T_INT64, 0, NULL, NULL);
  pb_value(b, 11, "cond_in", T_BOOL, 0, NULL, NULL);
  value_seq(b, 11, "seq_in", T_FLOAT);
  pb_node(&n, "Cast", "itf", "iter", "itf");
  pb_attr_int(&n, "to", T_FLOAT);
  put_msg(b, 1, &n);
  add_node(b, "Mul", "scale", "x,itf", "y");
  add_node(b, "SequenceInsert", "append", "seq_in,y", "seq_out");
  add_node(b, "Identity", "keep_going", "cond_in", "cond_out");
  if (peek) add_node(b, "SequenceLength", "peek", "seq_in", "count");
  pb_value(b, 12, "cond_out", T_BOOL, 0, NULL, NULL);
  value_seq(b, 12, "seq_out", T_FLOAT);
}

static void loop_model(pb_t *g, int peek) {
  static pb_t n, b;
  int64_t d2[1] = {2}, m = 3;
  uint8_t yes = 1;
  g->n = 0;
  pb_value_f32(g, 11, "x", 1, d2, NULL);
  init_scalar(g, "M", T_INT64, &m, sizeof m);
  init_scalar(g, "cond", T_BOOL, &yes, 1);
  pb_node(&n, "SequenceEmpty", "empty", "", "s0");
  pb_attr_int(&n, "dtype", T_FLOAT);
  put_msg(g, 1, &n);
  loop_body(&b, peek);
  pb_node(&n, "Loop", "build", "M,cond,s0", "s_final");
  pb_attr_graph(&n, "body", &b);
  put_msg(g, 1, &n);
  pb_node(&n, "ConcatFromSequence", "stack", "s_final", "st");
  pb_attr_int(&n, "axis", 0);
  pb_attr_int(&n, "new_axis", 1);
  put_msg(g, 1, &n);
  pb_node(&n, "ConcatFromSequence", "cat", "s_final", "flat");
  pb_attr_int(&n, "axis", 0);
  put_msg(g, 1, &n);
  init_scalar(g, "last", T_INT64, (int64_t[]){-1}, sizeof(int64_t));
  add_node(g, "SequenceAt", "at_last", "s_final,last", "y_last");
  add_node(g, "SequenceLength", "count", "s_final", "n");
  pb_value_f32(g, 12, "st", -1, NULL, NULL);
  pb_value_f32(g, 12, "flat", -1, NULL, NULL);
  pb_value_f32(g, 12, "y_last", -1, NULL, NULL);
  pb_value(g, 12, "n", T_INT64, -1, NULL, NULL);
}

/* torch.jit's list in a loop: stacked, concatenated, its last element and its length after it. */
static void test_loop_list(void) {
  static pb_t g;
  int64_t d2[1] = {2}, d32[2] = {3, 2}, d6[1] = {6};
  loop_model(&g, 0);
  mi_array_t *x = arr_f32(1, d2, (float[]){1, 2}), *y[4] = {0};
  mi_graph_t *gr = load_run(&g, 13, 1, &x, y);
  if (gr) {
    CHECK(!strcmp(op_of(gr, "build"), "Loop") && !strcmp(op_of(gr, "stack"), "Identity") &&
              !strcmp(op_of(gr, "cat"), "Reshape") && !strcmp(op_of(gr, "at_last"), "Gather"),
          "the loop stays, the stack became Identity, the concatenation Reshape, the last element Gather");
    expect_f32("stacked list", y[0], 2, d32, (float[]){0, 0, 1, 2, 2, 4}, 0);
    expect_f32("concatenated list", y[1], 1, d6, (float[]){0, 0, 1, 2, 2, 4}, 0);
    expect_f32("last element", y[2], 1, d2, (float[]){2, 4}, 0);
    expect_i64("length", y[3], 0, NULL, (int64_t[]){3});
  }
  for (int k = 0; k < 4; k++) mi_array_destroy(y[k]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

/* The rows of x [N, 3] (N dynamic: their count is not known at load) as a sequence: its length,
 * the row at a position given at run time (keepdims 0 and 1), the rows stacked back, and a Loop
 * over them whose body reads row `iter` of the captured sequence (torch.jit's `for r in
 * x.unbind(0)`): a column sum. */
static void test_slices(void) {
  static pb_t g, n, b;
  int64_t dn3[2] = {-1, 3}, d43[2] = {4, 3}, d3[1] = {3}, d13[2] = {1, 3};
  uint8_t yes = 1;
  float zeros[3] = {0, 0, 0};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, dn3, "N");
  pb_value(&g, 11, "p", T_INT64, 0, NULL, NULL);
  init_scalar(&g, "cond", T_BOOL, &yes, 1);
  pb_init_f32(&g, "acc0", 1, d3, zeros);
  pb_node(&n, "SplitToSequence", "rows", "x", "s");
  pb_attr_int(&n, "keepdims", 0);
  put_msg(&g, 1, &n);
  add_node(&g, "SplitToSequence", "rows_kept", "x", "sk");
  add_node(&g, "SequenceLength", "len", "s", "len");
  add_node(&g, "SequenceAt", "row_p", "s,p", "row");
  add_node(&g, "SequenceAt", "row_p_kept", "sk,p", "row_kept");
  pb_node(&n, "ConcatFromSequence", "restack", "s", "back");
  pb_attr_int(&n, "axis", 0);
  pb_attr_int(&n, "new_axis", 1);
  put_msg(&g, 1, &n);
  b.n = 0;
  pb_value(&b, 11, "iter", T_INT64, 0, NULL, NULL);
  pb_value(&b, 11, "cond_in", T_BOOL, 0, NULL, NULL);
  pb_value_f32(&b, 11, "acc_in", -1, NULL, NULL);
  add_node(&b, "SequenceAt", "row_i", "s,iter", "r");
  add_node(&b, "Add", "accumulate", "acc_in,r", "acc_out");
  add_node(&b, "Identity", "keep_going", "cond_in", "cond_out");
  pb_value(&b, 12, "cond_out", T_BOOL, 0, NULL, NULL);
  pb_value_f32(&b, 12, "acc_out", -1, NULL, NULL);
  pb_node(&n, "Loop", "sum_rows", "len,cond,acc0", "colsum");
  pb_attr_graph(&n, "body", &b);
  put_msg(&g, 1, &n);
  pb_value(&g, 12, "len", T_INT64, -1, NULL, NULL);
  pb_value_f32(&g, 12, "row", -1, NULL, NULL);
  pb_value_f32(&g, 12, "row_kept", -1, NULL, NULL);
  pb_value_f32(&g, 12, "back", -1, NULL, NULL);
  pb_value_f32(&g, 12, "colsum", -1, NULL, NULL);
  mi_array_t *in[2] = {arr_f32(2, d43, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
                       arr_i64(0, NULL, (int64_t[]){-2})},
             *y[5] = {0};
  mi_graph_t *gr = load_run(&g, 13, 2, in, y);
  if (gr) {
    CHECK(!strcmp(op_of(gr, "row_p"), "Gather") && !strcmp(op_of(gr, "row_p_kept"), "Unsqueeze") &&
              !strcmp(op_of(gr, "restack"), "Identity"),
          "a run-time position is a Gather (+ Unsqueeze), the rows stacked back x itself");
    expect_i64("length N", y[0], 0, NULL, (int64_t[]){4});
    expect_f32("row -2", y[1], 1, d3, (float[]){7, 8, 9}, 0);
    expect_f32("row -2 kept", y[2], 2, d13, (float[]){7, 8, 9}, 0);
    expect_f32("rows stacked back", y[3], 2, d43, in[0]->data, 0);
    expect_f32("loop over the rows", y[4], 1, d3, (float[]){22, 26, 30}, 0);
  }
  for (int k = 0; k < 5; k++) mi_array_destroy(y[k]);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  mi_graph_destroy(gr);
}

/* Loads `g` expecting a refusal whose message holds both strings. */
static void expect_refused(const pb_t *g, int64_t opset, const char *what, const char *s1, const char *s2) {
  mi_error_t err = {0};
  mi_graph_t *gr = load_model(g, opset, &err);
  CHECK(!gr && err.code == MI_ERR_UNSUPPORTED && strstr(err.message, s1) && strstr(err.message, s2),
        "%s refused naming '%s' and '%s': %s", what, s1, s2, err.message);
  mi_graph_destroy(gr);
}

static void test_refusals(void) {
  static pb_t g, n, b;
  int64_t d2[1] = {2}, dn[2] = {-1, 2};
  /* a position known only at run time */
  g.n = 0;
  pb_value_f32(&g, 11, "a", 1, d2, NULL);
  pb_value(&g, 11, "p", T_INT64, 0, NULL, NULL);
  add_node(&g, "SequenceConstruct", "make", "a,a", "s");
  add_node(&g, "SequenceAt", "pick", "s,p", "y");
  pb_value_f32(&g, 12, "y", -1, NULL, NULL);
  expect_refused(&g, 13, "a run-time position", "node 'pick' (SequenceAt)", "not a constant");
  /* the parts of a dynamic dim, concatenated along another axis */
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, dn, "N");
  add_node(&g, "SplitToSequence", "rows", "x", "s");
  pb_node(&n, "ConcatFromSequence", "cat", "s", "y");
  pb_attr_int(&n, "axis", 1);
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "y", -1, NULL, NULL);
  expect_refused(&g, 13, "a concatenation of the parts of a dynamic dim", "node 'cat' (ConcatFromSequence)",
                 "not known at load time");
  /* a scalar split of a dynamic dim */
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, dn, "N");
  init_scalar(&g, "two", T_INT64, (int64_t[]){2}, sizeof(int64_t));
  add_node(&g, "SplitToSequence", "pairs", "x,two", "s");
  add_node(&g, "SequenceLength", "len", "s", "y");
  pb_value(&g, 12, "y", T_INT64, -1, NULL, NULL);
  expect_refused(&g, 13, "a scalar split of a dynamic dim", "node 'pairs' (SplitToSequence)", "not known at load time");
  /* a negative size in a constant split (the message quotes it) */
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, (int64_t[]){2, 6}, NULL);
  pb_init_i64(&g, "sizes", 2, (int64_t[]){7, -1});
  pb_node(&n, "SplitToSequence", "cut", "x,sizes", "s");
  pb_attr_int(&n, "axis", 1);
  put_msg(&g, 1, &n);
  add_node(&g, "SequenceLength", "len", "s", "y");
  pb_value(&g, 12, "y", T_INT64, -1, NULL, NULL);
  expect_refused(&g, 13, "a negative split size", "node 'cut' (SplitToSequence)", "split[1] is -1");
  /* a loop whose body reads the list it builds */
  loop_model(&g, 1);
  expect_refused(&g, 13, "a list the loop body reads", "node 'build' (Loop)", "sequence 's0' carried through the loop");
  /* a sequence graph output, a sequence graph input */
  g.n = 0;
  pb_value_f32(&g, 11, "a", 1, d2, NULL);
  add_node(&g, "SequenceConstruct", "make", "a", "s");
  value_seq(&g, 12, "s", T_FLOAT);
  expect_refused(&g, 13, "a sequence output", "output 's'", "is a sequence");
  g.n = 0;
  value_seq(&g, 11, "s", T_FLOAT);
  add_node(&g, "SequenceLength", "len", "s", "y");
  pb_value(&g, 12, "y", T_INT64, -1, NULL, NULL);
  expect_refused(&g, 13, "a sequence input", "input 's'", "sequence");
  /* SequenceMap */
  g.n = 0;
  b.n = 0;
  pb_value_f32(&b, 11, "e", -1, NULL, NULL);
  add_node(&b, "Identity", "id", "e", "f");
  pb_value_f32(&b, 12, "f", -1, NULL, NULL);
  pb_value_f32(&g, 11, "a", 1, d2, NULL);
  add_node(&g, "SequenceConstruct", "make", "a", "s");
  pb_node(&n, "SequenceMap", "map", "s", "t");
  pb_attr_graph(&n, "body", &b);
  put_msg(&g, 1, &n);
  add_node(&g, "SequenceLength", "len", "t", "y");
  pb_value(&g, 12, "y", T_INT64, -1, NULL, NULL);
  expect_refused(&g, 17, "SequenceMap", "node 'map' (SequenceMap)", "not supported");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_split_at),
    TU_CASE(test_unbind),
    TU_CASE(test_split_scalar),
    TU_CASE(test_split_runtime),
    TU_CASE(test_construct_edit),
    TU_CASE(test_optional),
    TU_CASE(test_loop_list),
    TU_CASE(test_slices),
    TU_CASE(test_refusals),
};

TU_MAIN(NULL, NULL)
