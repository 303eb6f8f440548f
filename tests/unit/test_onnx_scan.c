/* test_onnx_scan.c - hand-encoded ONNX models with Scan: the opset-9+ form (a cumulative sum
 * whose body captures an outer weight; a reverse-direction scan along axis 1 with two scan
 * outputs, one stacked forward and one backward along axis -1) and the opset-8 form (batch dim
 * first, sequence_lens), imported, shape-inferred and run on ref against values worked out by
 * hand; malformed Scan nodes are clear errors. The protobuf writer is independent of the
 * importer. */
#include "test_ref_common.h"

#include "test_pb.h"

static mi_graph_t *load_model(const pb_t *graph, int64_t opset, mi_error_t *err) {
  const pb_t *m = pb_model(graph, opset);
  mi_graph_t *g = NULL;
  return mi_onnx_load_buffer(m->d, m->n, NULL, &g, err) == MI_OK ? g : NULL;
}

/* Infers shapes, runs on ref and checks each run shape against the inferred one. */
static int infer_and_run(mi_graph_t *g, int nin, mi_array_t **ins, mi_array_t **outs) {
  mi_error_t err = {0};
  for (int32_t i = 0; i < g->output_count; i++) outs[i] = NULL;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)ins, nin, outs, g->output_count, &err);
  CHECK(rc == MI_OK, "run: %s", err.message);
  for (int32_t i = 0; rc == MI_OK && i < g->output_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->outputs[i]];
    CHECK(same_shape(outs[i], t->rank, t->dims) && t->dtype == outs[i]->dtype,
          "output '%s': inferred shape differs from the run", t->name);
  }
  return rc == MI_OK;
}

/* Body: s_out = s + x * w (w captured from the enclosing graph), y = Identity(s_out). */
static void body_cumsum(pb_t *b, const char *w, int nscan_out) {
  static pb_t n;
  b->n = 0;
  pb_value_f32(b, 11, "s", -1, NULL, "N");
  pb_value_f32(b, 11, "x_t", -1, NULL, "N");
  if (w) {
    char ins[64];
    snprintf(ins, sizeof ins, "x_t,%s", w);
    pb_node(&n, "Mul", "mul", ins, "xw");
    put_msg(b, 1, &n);
  }
  pb_node(&n, "Add", "add", w ? "s,xw" : "s,x_t", "s_out");
  put_msg(b, 1, &n);
  pb_node(&n, "Identity", "y", "s_out", "y");
  put_msg(b, 1, &n);
  if (nscan_out > 1) {
    pb_node(&n, "Identity", "y2", "s_out", "y2");
    put_msg(b, 1, &n);
  }
  pb_value_f32(b, 12, "s_out", -1, NULL, "N");
  pb_value_f32(b, 12, "y", -1, NULL, "N");
  if (nscan_out > 1) pb_value_f32(b, 12, "y2", -1, NULL, "N");
}

static void test_scan11(void) {
  static pb_t g, n, b;
  int64_t d2[1] = {2}, d32[2] = {3, 2}, d23[2] = {2, 3};
  float w[2] = {1, 10}, zero[2] = {0, 0};
  mi_error_t err = {0};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, d32, "N");
  pb_value_f32(&g, 11, "xt", 2, d23, "N");
  pb_init_f32(&g, "w", 1, d2, w);
  pb_init_f32(&g, "s0", 1, d2, zero);
  /* Forward along axis 0 of x [3,2], with the captured weight. */
  body_cumsum(&b, "w", 1);
  pb_node(&n, "Scan", "scan_fwd", "s0,x", "s_final,ys");
  pb_attr_int(&n, "num_scan_inputs", 1);
  pb_attr_graph(&n, "body", &b);
  put_msg(&g, 1, &n);
  /* Reverse along axis 1 of xt [2,3]: y2 stacked forward along axis 1, y3 backward along -1. */
  body_cumsum(&b, NULL, 2);
  pb_node(&n, "Scan", "scan_rev", "s0,xt", "r_final,r_fwd,r_back");
  pb_attr_int(&n, "num_scan_inputs", 1);
  pb_attr_ints(&n, "scan_input_axes", 1, (int64_t[]){1});
  pb_attr_ints(&n, "scan_input_directions", 1, (int64_t[]){1});
  pb_attr_ints(&n, "scan_output_axes", 2, (int64_t[]){1, -1});
  pb_attr_ints(&n, "scan_output_directions", 2, (int64_t[]){0, 1});
  pb_attr_graph(&n, "body", &b);
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "s_final", -1, NULL, "N");
  pb_value_f32(&g, 12, "ys", -1, NULL, "N");
  pb_value_f32(&g, 12, "r_final", -1, NULL, "N");
  pb_value_f32(&g, 12, "r_fwd", -1, NULL, "N");
  pb_value_f32(&g, 12, "r_back", -1, NULL, "N");
  mi_graph_t *gr = load_model(&g, 11, &err);
  CHECK(gr, "load: %s", err.message);
  if (!gr) return;
  int32_t fwd = -1;
  for (int32_t i = 0; i < gr->node_count; i++)
    if (strcmp(gr->nodes[i].name, "scan_fwd") == 0) fwd = i;
  CHECK(fwd >= 0 && gr->nodes[fwd].implicit_inputs == 1 &&
            mi_node_subgraph(&gr->nodes[fwd], "body"),
        "scan_fwd has its body and captures w as one implicit input");
  float xv[6] = {1, 2, 3, 4, 5, 6};
  mi_array_t *ins[2] = {arr_f32(2, d32, xv), arr_f32(2, d23, xv)}, *y[5];
  if (infer_and_run(gr, 2, ins, y)) {
    /* x * w row by row: [1,20] [3,40] [5,60]; running sums: */
    expect_f32("Scan final state", y[0], 1, d2, (float[]){9, 120}, 0);
    expect_f32("Scan cumulative sum", y[1], 2, d32, (float[]){1, 20, 4, 60, 9, 120}, 0);
    /* xt's columns from the last: [3,6] [2,5] [1,4]; running sums [3,6] [5,11] [6,15]. */
    expect_f32("reverse scan final", y[2], 1, d2, (float[]){6, 15}, 0);
    expect_f32("reverse scan, output axis 1", y[3], 2, d23, (float[]){3, 5, 6, 6, 11, 15}, 0);
    /* Stacked backward: the suffix sums of each row, in place. */
    expect_f32("reverse scan, output axis -1 backward", y[4], 2, d23,
               (float[]){6, 5, 3, 15, 11, 6}, 0);
  }
  for (int i = 0; i < 5; i++) mi_array_destroy(y[i]);
  mi_array_destroy(ins[0]), mi_array_destroy(ins[1]);
  mi_graph_destroy(gr);
}

/* Opset 8: state [2,1], x [2,3,1] (batch first, scan axis 1), sequence_lens `seq`. */
static mi_graph_t *scan8_model(const int64_t *seq, int64_t direction, mi_error_t *err) {
  static pb_t g, n, b;
  int64_t dx[3] = {2, 3, 1}, ds[2] = {2, 1};
  float s0[2] = {0, 100};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 3, dx, "N");
  pb_init_f32(&g, "s0", 2, ds, s0);
  if (seq) pb_init_i64(&g, "seq", 2, seq);
  body_cumsum(&b, NULL, 1);
  pb_node(&n, "Scan", "scan8", seq ? "seq,s0,x" : ",s0,x", "s_final,ys");
  pb_attr_int(&n, "num_scan_inputs", 1);
  pb_attr_ints(&n, "directions", 1, &direction);
  pb_attr_graph(&n, "body", &b);
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "s_final", -1, NULL, "N");
  pb_value_f32(&g, 12, "ys", -1, NULL, "N");
  return load_model(&g, 8, err);
}

static void test_scan8(void) {
  int64_t dx[3] = {2, 3, 1}, ds[2] = {2, 1};
  float xv[6] = {1, 2, 3, 10, 20, 30};
  static const float want_ys[2][6] = {{1, 3, 6, 110, 130, 160}, {3, 5, 6, 130, 150, 160}};
  for (int dir = 0; dir < 2; dir++) {
    mi_error_t err = {0};
    mi_graph_t *gr = scan8_model(dir ? (int64_t[]){3, 3} : NULL, dir, &err);
    CHECK(gr, "load opset 8: %s", err.message);
    if (!gr) continue;
    mi_array_t *x = arr_f32(3, dx, xv), *y[2];
    if (infer_and_run(gr, 1, &x, y)) {
      expect_f32("Scan-8 final state", y[0], 2, ds, (float[]){6, 160}, 0);
      expect_f32(dir ? "Scan-8 reverse" : "Scan-8 forward", y[1], 3, dx, want_ys[dir], 0);
    }
    mi_array_destroy(y[0]), mi_array_destroy(y[1]), mi_array_destroy(x);
    mi_graph_destroy(gr);
  }
  /* Per-batch lengths shorter than the sequence are refused by name, not run wrongly. */
  mi_error_t err = {0};
  mi_graph_t *gr = scan8_model((int64_t[]){3, 2}, 0, &err);
  CHECK(gr, "load opset 8: %s", err.message);
  if (!gr) return;
  mi_array_t *x = arr_f32(3, dx, xv), *y[2] = {NULL, NULL};
  CHECK(mi_graph_infer_shapes(gr, &err) == MI_OK, "inference: %s", err.message);
  int32_t rc = mi_ref_run(gr, (const mi_array_t *const *)&x, 1, y, 2, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "sequence_lens") &&
            strstr(err.message, "scan8"),
        "short sequence_lens refused naming the node, got %d: %s", (int)rc, err.message);
  mi_array_destroy(y[0]), mi_array_destroy(y[1]), mi_array_destroy(x);
  mi_graph_destroy(gr);
}

/* num_scan_inputs beyond the inputs, and scan inputs of different lengths: clear errors. */
static void test_scan_bad(void) {
  static pb_t g, n, b;
  int64_t d3[1] = {3}, d4[1] = {4}, d1[1] = {1};
  float zero = 0;
  for (int k = 0; k < 2; k++) {
    mi_error_t err = {0};
    g.n = 0;
    pb_value_f32(&g, 11, "x", 1, d3, "N");
    pb_value_f32(&g, 11, "z", 1, d4, "N");
    pb_init_f32(&g, "s0", 1, d1, &zero);
    b.n = 0;
    pb_value_f32(&b, 11, "s", -1, NULL, "N");
    pb_value_f32(&b, 11, "a", -1, NULL, "N");
    pb_value_f32(&b, 11, "c", -1, NULL, "N");
    pb_node(&n, "Add", "add", "a,c", "t");
    put_msg(&b, 1, &n);
    pb_node(&n, "Add", "acc", "s,t", "s_out");
    put_msg(&b, 1, &n);
    pb_value_f32(&b, 12, "s_out", -1, NULL, "N");
    pb_node(&n, "Scan", "bad_scan", "s0,x,z", "s_final");
    pb_attr_int(&n, "num_scan_inputs", k == 0 ? 4 : 2);
    pb_attr_graph(&n, "body", &b);
    put_msg(&g, 1, &n);
    pb_value_f32(&g, 12, "s_final", -1, NULL, "N");
    mi_graph_t *gr = load_model(&g, 16, &err);
    CHECK(gr, "load: %s", err.message);
    if (!gr) continue;
    mi_array_t *ins[2] = {arr_f32(1, d3, (float[]){1, 2, 3}),
                          arr_f32(1, d4, (float[]){1, 2, 3, 4})};
    mi_array_t *y = NULL;
    int32_t rc = mi_graph_infer_shapes(gr, &err);
    if (k == 0)
      CHECK(rc == MI_ERR_PARSE && strstr(err.message, "num_scan_inputs"),
            "4 scan inputs of 3 refused by inference: %s", err.message);
    rc = mi_ref_run(gr, (const mi_array_t *const *)ins, 2, &y, 1, &err);
    CHECK(rc != MI_OK && strstr(err.message, "bad_scan") && !y,
          "%s refused by the run naming the node: %s",
          k == 0 ? "num_scan_inputs 4" : "lengths 3 and 4", err.message);
    mi_array_destroy(ins[0]), mi_array_destroy(ins[1]), mi_array_destroy(y);
    mi_graph_destroy(gr);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_scan11),
    TU_CASE(test_scan8),
    TU_CASE(test_scan_bad),
};

TU_MAIN(NULL, NULL)
