/* test_onnx_newops.c - hand-encoded ONNX models using the ops added for real exports (Split in
 * its opset-11 and opset-18 forms, Einsum, TopK, ReduceLogSumExp with an axes input,
 * DepthToSpace CRD) import with their attributes, infer the shapes the run produces and give
 * values worked out by hand; the opsets taken (7..25) and refused. The protobuf writer here is
 * independent of the importer. */
#include "test_ref_common.h"

#include "test_pb.h"

static mi_graph_t *load_model(const pb_t *graph, int64_t opset) {
  const pb_t *m = pb_model(graph, opset);
  mi_graph_t *g = NULL;
  mi_error_t err = {0};
  CHECK(mi_onnx_load_buffer(m->d, m->n, NULL, &g, &err) == MI_OK, "load: %s", err.message);
  return g;
}

/* Infers shapes, runs on ref and checks every output's run shape against the inferred one. */
static void infer_and_run(mi_graph_t *g, mi_array_t *x, mi_array_t **outs) {
  mi_error_t err = {0};
  for (int32_t i = 0; i < g->output_count; i++) outs[i] = NULL;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&x, 1, outs, g->output_count, &err) == MI_OK,
        "run: %s", err.message);
  for (int32_t i = 0; i < g->output_count && outs[i]; i++) {
    const mi_tensor_t *t = &g->tensors[g->outputs[i]];
    CHECK(same_shape(outs[i], t->rank, t->dims) && t->dtype == outs[i]->dtype,
          "output '%s': inferred shape differs from the run", t->name);
  }
}

static void test_opset11(void) {
  static pb_t g, n;
  int64_t xd[2] = {2, 3}, d21[2] = {2, 1}, d22[2] = {2, 2};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, xd, "N");
  pb_init_i64(&g, "k", 1, (int64_t[]){2});
  pb_node(&n, "Split", NULL, "x", "a,b");
  pb_attr_int(&n, "axis", 1);
  pb_attr_ints(&n, "split", 2, (int64_t[]){1, 2});
  put_msg(&g, 1, &n);
  pb_node(&n, "Einsum", NULL, "b", "bt");
  pb_attr_str(&n, "equation", "ij->ji");
  put_msg(&g, 1, &n);
  pb_node(&n, "TopK", NULL, "x,k", "vals,idx");
  pb_attr_int(&n, "largest", 0);
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "a", -1, NULL, NULL);
  pb_value_f32(&g, 12, "bt", -1, NULL, NULL);
  pb_value_f32(&g, 12, "vals", -1, NULL, NULL);
  pb_value_f32(&g, 12, "idx", -1, NULL, NULL);
  mi_graph_t *gr = load_model(&g, 11);
  if (!gr) return;
  int32_t e = -1;
  for (int32_t i = 0; i < gr->node_count; i++)
    if (strcmp(gr->nodes[i].op_type, "Einsum") == 0) e = i;
  CHECK(e >= 0 && strcmp(mi_node_attr_string(&gr->nodes[e], "equation", ""), "ij->ji") == 0,
        "Einsum's equation imported");
  float xv[6] = {3, 1, 2, 6, 5, 4};
  mi_array_t *x = arr_f32(2, xd, xv), *y[4];
  infer_and_run(gr, x, y);
  expect_f32("Split 11 a", y[0], 2, d21, (float[]){3, 6}, 0);
  expect_f32("Einsum of Split b", y[1], 2, d22, (float[]){1, 5, 2, 4}, 0);
  expect_f32("TopK smallest", y[2], 2, d22, (float[]){1, 2, 4, 5}, 0);
  expect_i64("TopK indices", y[3], 2, d22, (int64_t[]){1, 2, 2, 1});
  for (int i = 0; i < 4; i++) mi_array_destroy(y[i]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

static void test_opset18(void) {
  static pb_t g, n;
  int64_t xd[4] = {1, 4, 1, 2}, dp[4] = {1, 4, 1, 1}, ds[4] = {1, 1, 2, 4}, dr[4] = {1, 4, 1, 1};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 4, xd, "N");
  pb_init_i64(&g, "axes", 1, (int64_t[]){3});
  pb_node(&n, "Split", NULL, "x", "p,q");
  pb_attr_int(&n, "axis", 3);
  pb_attr_int(&n, "num_outputs", 2);
  put_msg(&g, 1, &n);
  pb_node(&n, "DepthToSpace", NULL, "x", "s");
  pb_attr_int(&n, "blocksize", 2);
  pb_attr_str(&n, "mode", "CRD");
  put_msg(&g, 1, &n);
  pb_node(&n, "ReduceLogSumExp", NULL, "x,axes", "r");
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "p", -1, NULL, NULL);
  pb_value_f32(&g, 12, "s", -1, NULL, NULL);
  pb_value_f32(&g, 12, "r", -1, NULL, NULL);
  mi_graph_t *gr = load_model(&g, 18);
  if (!gr) return;
  /* x[0][c][0][w] = 2c + w */
  float xv[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  mi_array_t *x = arr_f32(4, xd, xv), *y[3];
  infer_and_run(gr, x, y);
  expect_f32("Split 18 p", y[0], 4, dp, (float[]){0, 2, 4, 6}, 0);
  /* CRD with one output channel: y[h*2+i][w*2+j] = x[i*2+j][h][w], as DCR. */
  expect_f32("DepthToSpace CRD", y[1], 4, ds, (float[]){0, 2, 1, 3, 4, 6, 5, 7}, 0);
  /* ln(e^(2c) + e^(2c+1)) = 2c + 1 + ln(1 + e^-1) */
  float l = 1.31326169f;
  expect_f32("ReduceLogSumExp axes input", y[2], 4, dr, (float[]){l, 2 + l, 4 + l, 6 + l}, 1e-6f);
  for (int i = 0; i < 3; i++) mi_array_destroy(y[i]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

/* Opsets 22-25 load (they changed no semantics of the ops here) and run; 6 and 26 are refused
 * with the supported range named. */
static void test_opset_range(void) {
  static pb_t g, n;
  int64_t d[2] = {1, 2};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 2, d, NULL);
  pb_node(&n, "Relu", NULL, "x", "y");
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "y", 2, d, NULL);
  for (int64_t opset = 22; opset <= 25; opset++) {
    mi_graph_t *gr = load_model(&g, opset);
    if (!gr) continue;
    mi_array_t *x = arr_f32(2, d, (float[]){-1, 2}), *y[1];
    infer_and_run(gr, x, y);
    if (y[0]) expect_f32("Relu at a late opset", y[0], 2, d, (float[]){0, 2}, 0);
    mi_array_destroy(y[0]);
    mi_array_destroy(x);
    mi_graph_destroy(gr);
  }
  for (int64_t opset = 6; opset <= 26; opset += 20) {
    const pb_t *m = pb_model(&g, opset);
    mi_graph_t *gr = NULL;
    mi_error_t err = {0};
    CHECK(mi_onnx_load_buffer(m->d, m->n, NULL, &gr, &err) == MI_ERR_UNSUPPORTED && !gr &&
              strstr(err.message, "supported: 7..25"),
          "opset %lld refused: %s", (long long)opset, err.message);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_opset11),
    TU_CASE(test_opset18),
    TU_CASE(test_opset_range),
};

TU_MAIN(NULL, NULL)
