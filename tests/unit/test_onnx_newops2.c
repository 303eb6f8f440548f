/* test_onnx_newops2.c - a hand-encoded opset-18 ONNX model using the ops added for detectors and
 * normalization exports (GroupNormalization, ReduceSumSquare with an axes input, GatherND,
 * Hardmax, CastLike, NonMaxSuppression with center_point_box): it imports with its attributes,
 * infers the shapes the run produces (NonMaxSuppression's count left dynamic) and gives values
 * worked out by hand. The protobuf writer here is independent of the importer. */
#include "test_ref_common.h"

#include "test_pb.h"

static void test_opset18_model(void) {
  static pb_t g, n;
  int64_t xd[3] = {1, 4, 2}, d2[1] = {2}, d14[2] = {1, 4}, bd[3] = {1, 2, 4}, sd[3] = {1, 1, 2};
  g.n = 0;
  pb_value_f32(&g, 11, "x", 3, xd, "N");
  pb_init_f32(&g, "s", 1, d2, (float[]){1, 2});
  pb_init_f32(&g, "b", 1, d2, (float[]){0, 1});
  pb_init_i64(&g, "axes", 1, (int64_t[]){2});
  pb_init_i64(&g, "idx", 2, (int64_t[]){0, 3});
  pb_init_i64(&g, "like", 1, (int64_t[]){0});
  /* two boxes as centre and size: the second (score 0.9) overlaps the first by IoU 0.82 */
  pb_init_f32(&g, "boxes", 3, bd, (float[]){0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1});
  pb_init_f32(&g, "scores", 3, sd, (float[]){0.6f, 0.9f});
  pb_init_i64(&g, "maxb", 1, (int64_t[]){2});
  pb_init_f32(&g, "iou", 1, (int64_t[]){1}, (float[]){0.5f});
  pb_node(&n, "GroupNormalization", NULL, "x,s,b", "gn");
  pb_attr_int(&n, "num_groups", 2);
  put_msg(&g, 1, &n);
  pb_node(&n, "ReduceSumSquare", NULL, "x,axes", "ss");
  pb_attr_int(&n, "keepdims", 0);
  put_msg(&g, 1, &n);
  pb_node(&n, "GatherND", NULL, "x,idx", "gnd");
  put_msg(&g, 1, &n);
  pb_node(&n, "Hardmax", NULL, "x", "hm");
  pb_attr_int(&n, "axis", 1);
  put_msg(&g, 1, &n);
  pb_node(&n, "CastLike", NULL, "ss,like", "ci");
  put_msg(&g, 1, &n);
  pb_node(&n, "NonMaxSuppression", NULL, "boxes,scores,maxb,iou", "sel");
  pb_attr_int(&n, "center_point_box", 1);
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "gn", -1, NULL, NULL);
  pb_value_f32(&g, 12, "ss", -1, NULL, NULL);
  pb_value_f32(&g, 12, "gnd", -1, NULL, NULL);
  pb_value_f32(&g, 12, "hm", -1, NULL, NULL);
  pb_value_f32(&g, 12, "ci", -1, NULL, NULL);
  pb_value_f32(&g, 12, "sel", -1, NULL, NULL);
  const pb_t *m = pb_model(&g, 18);
  mi_graph_t *gr = NULL;
  mi_error_t err = {0};
  CHECK(mi_onnx_load_buffer(m->d, m->n, NULL, &gr, &err) == MI_OK, "load: %s", err.message);
  if (!gr) return;
  CHECK(mi_graph_infer_shapes(gr, &err) == MI_OK, "inference: %s", err.message);
  mi_array_t *x = arr_f32(3, xd, (float[]){0, 1, 2, 3, 4, 5, 6, 7}), *y[6] = {NULL};
  CHECK(mi_ref_run(gr, (const mi_array_t *const *)&x, 1, y, 6, &err) == MI_OK, "run: %s",
        err.message);
  for (int32_t i = 0; i < 6 && y[0]; i++) {
    const mi_tensor_t *t = &gr->tensors[gr->outputs[i]];
    int ok = y[i] && t->rank == y[i]->rank && t->dtype == y[i]->dtype;
    for (int32_t d = 0; ok && d < t->rank; d++)
      ok = t->dims[d] == y[i]->dims[d] || (i == 5 && d == 0 && t->dims[d] == MI_DIM_DYNAMIC);
    CHECK(ok, "output '%s': inferred shape or dtype differs from the run", t->name);
  }
  if (y[0]) {
    /* each group {0,1,2,3} + 4g normalized: {-3,-1,1,3} / sqrt(5) (epsilon 1e-5 aside) */
    float a = 1.3416408f, c = 0.4472136f;
    expect_f32("GroupNormalization", y[0], 3, xd,
               (float[]){-a, -c, c, a, 1 - 2 * a, 1 - 2 * c, 1 + 2 * c, 1 + 2 * a}, 2e-5f);
    expect_f32("ReduceSumSquare", y[1], 2, d14, (float[]){1, 13, 41, 85}, 0);
    expect_f32("GatherND", y[2], 1, d2, (float[]){6, 7}, 0);
    expect_f32("Hardmax axis 1", y[3], 3, xd, (float[]){0, 0, 0, 0, 0, 0, 1, 1}, 0);
    expect_i64("CastLike", y[4], 2, d14, (int64_t[]){1, 13, 41, 85});
    expect_i64("NonMaxSuppression", y[5], 2, (int64_t[]){1, 3}, (int64_t[]){0, 0, 1});
  }
  for (int i = 0; i < 6; i++) mi_array_destroy(y[i]);
  mi_array_destroy(x);
  mi_graph_destroy(gr);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_opset18_model),
};

TU_MAIN(NULL, NULL)
