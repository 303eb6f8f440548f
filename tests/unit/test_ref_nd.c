/* test_ref_nd.c - GatherND (with batch_dims), ScatterElements (every reduction) and
 * NonMaxSuppression (both box encodings, the optional inputs) against values worked out by hand,
 * the inferred output shapes checked against the run and the refusals on both paths
 * (test_ref_common.h: case_run, case_refused). */
#include "test_ref_common.h"

static mi_array_t *gather_nd(mi_array_t *x, mi_array_t *ind, int64_t batch_dims) {
  mi_array_t *in[2] = {x, ind}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "GatherND", 13, 2, in, 2u, 1);
  if (batch_dims) mi_node_set_int(k.g, k.node, "batch_dims", batch_dims);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "GatherND: %s", err.message);
  return y;
}

static void test_gather_nd(void) {
  int64_t d22[2] = {2, 2}, d21[2] = {2, 1}, d2[1] = {2}, d222[3] = {2, 2, 2}, d13[2] = {1, 3};
  mi_array_t *x = arr_f32(2, d22, (float[]){0, 1, 2, 3});
  mi_array_t *x3 = arr_f32(3, d222, (float[]){0, 1, 2, 3, 4, 5, 6, 7}), *ind, *y;
  ind = arr_i64(2, d22, (int64_t[]){0, 0, 1, -1}); /* whole tuples: elements; -1 is the last */
  y = gather_nd(x, ind, 0);
  expect_f32("GatherND elements", y, 1, d2, (float[]){0, 3}, 0);
  mi_array_destroy(y), mi_array_destroy(ind);
  ind = arr_i64(2, d21, (int64_t[]){1, 0}); /* one index each: rows */
  y = gather_nd(x, ind, 0);
  expect_f32("GatherND rows", y, 2, d22, (float[]){2, 3, 0, 1}, 0);
  mi_array_destroy(y), mi_array_destroy(ind);
  ind = arr_i64(2, d21, (int64_t[]){1, 0}); /* batch_dims 1: batch 0 row 1, batch 1 row 0 */
  y = gather_nd(x3, ind, 1);
  expect_f32("GatherND batch_dims 1", y, 2, d22, (float[]){2, 3, 4, 5}, 0);
  mi_array_destroy(y), mi_array_destroy(ind);

  mi_array_t *in[2] = {x, arr_i64(2, d13, (int64_t[]){0, 0, 0})};
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "GatherND", 13, 2, in, 2u, 1); /* a tuple longer than the data's rank */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(in[1]);
  in[1] = arr_i64(2, d21, (int64_t[]){2, 0}); /* an index past the end: the run says so */
  mi_array_t *yy = NULL;
  case_begin(&k, "GatherND", 13, 2, in, 0, 1);
  CHECK(case_run(&k, &yy, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "out of range"),
        "GatherND out of range: %s", err.message);
  mi_array_destroy(in[1]);
  mi_array_destroy(x), mi_array_destroy(x3);
}

static mi_array_t *scatter(int64_t opset, mi_array_t **in, int64_t axis, const char *red) {
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "ScatterElements", opset, 3, in, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", axis);
  if (red) mi_node_set_string(k.g, k.node, "reduction", red);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ScatterElements %s: %s", red ? red : "", err.message);
  return y;
}

static void test_scatter_elements(void) {
  int64_t d33[2] = {3, 3}, d23[2] = {2, 3}, d15[2] = {1, 5}, d12[2] = {1, 2};
  float zeros[9] = {0};
  mi_array_t *in[3] = {arr_f32(2, d33, zeros), arr_i64(2, d23, (int64_t[]){1, 0, 2, 0, 2, 1}),
                       arr_f32(2, d23, (float[]){1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})},
             *y;
  y = scatter(11, in, 0, NULL); /* the ONNX operator page's axis-0 example */
  expect_f32("ScatterElements axis 0", y, 2, d33,
             (float[]){2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
  /* one row, the same position twice: the updates combine in order */
  in[0] = arr_f32(2, d15, (float[]){1, 2, 3, 4, 5});
  in[1] = arr_i64(2, d12, (int64_t[]){1, -4});
  in[2] = arr_f32(2, d12, (float[]){1.5f, 3});
  static const struct {
    const char *red;
    int64_t opset;
    float v;
  } forms[] = {{NULL, 13, 3}, {"none", 16, 3}, {"add", 16, 6.5f}, {"mul", 16, 9}, {"max", 18, 3}, {"min", 18, 1.5f}};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    y = scatter(forms[i].opset, in, 1, forms[i].red);
    expect_f32(forms[i].red ? forms[i].red : "ScatterElements axis 1", y, 2, d15,
               (float[]){1, forms[i].v, 3, 4, 5}, 0);
    mi_array_destroy(y);
  }
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "ScatterElements", 16, 3, in, 0, 1); /* max is opset 18's */
  mi_node_set_string(k.g, k.node, "reduction", "max");
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(in[1]);
  in[1] = arr_i64(2, d12, (int64_t[]){1, 5});
  y = NULL;
  case_begin(&k, "ScatterElements", 13, 3, in, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "out of range"),
        "ScatterElements out of range: %s", err.message);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
}

/* The ONNX operator page's boxes: 0 overlaps 1 and 2; 3 overlaps 4; 5 stands alone. */
static const float CORNERS[24] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f,
                                  0, 10.f, 1, 11.f, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
static const float CENTERS[24] = {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 0.4f, 1, 1,
                                  0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1};
static const float SCORES[6] = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

/* NonMaxSuppression with max_output 3, iou 0.5 and score threshold `thr` (< 0: omitted). */
static mi_array_t *nms(const float *boxes, int64_t center, int64_t max_out, float thr,
                       int32_t want_rc) {
  int64_t bd[3] = {1, 6, 4}, sd[3] = {1, 1, 6}, one = 1;
  mi_array_t *in[5] = {arr_f32(3, bd, boxes), arr_f32(3, sd, SCORES), arr_i64(1, &one, &max_out),
                       arr_f32(1, &one, (float[]){0.5f}), arr_f32(1, &one, &thr)},
             *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "NonMaxSuppression", 11, thr < 0 ? 4 : 5, in, 0x1cu, 1);
  mi_node_set_int(k.g, k.node, "center_point_box", center);
  if (want_rc == MI_OK)
    CHECK(case_run(&k, &y, 1, &err) == MI_OK, "NonMaxSuppression: %s", err.message);
  else
    case_refused(&k, want_rc, &err);
  for (int i = 0; i < 5; i++) mi_array_destroy(in[i]);
  return y;
}

static void test_nms(void) {
  int64_t d33[2] = {3, 3}, d23[2] = {2, 3}, d03[2] = {0, 3};
  int64_t want[9] = {0, 0, 3, 0, 0, 0, 0, 0, 5};
  mi_array_t *y = nms(CORNERS, 0, 3, -1, MI_OK);
  expect_i64("NonMaxSuppression corners", y, 2, d33, want);
  mi_array_destroy(y);
  y = nms(CENTERS, 1, 3, -1, MI_OK);
  expect_i64("NonMaxSuppression center_point_box 1", y, 2, d33, want);
  mi_array_destroy(y);
  y = nms(CORNERS, 0, 3, 0.4f, MI_OK); /* box 5 (0.3) is below the threshold */
  expect_i64("NonMaxSuppression score_threshold", y, 2, d23, want);
  mi_array_destroy(y);
  y = nms(CORNERS, 0, 0, -1, MI_OK); /* no boxes asked for */
  expect_i64("NonMaxSuppression max 0", y, 2, d03, want);
  mi_array_destroy(y);
  nms(CORNERS, 2, 3, -1, MI_ERR_INVALID_ARGUMENT);

  /* Shape inference leaves the count dynamic: it is data. */
  int64_t bd[3] = {1, 6, 4}, sd[3] = {1, 1, 6};
  mi_array_t *in[2] = {arr_f32(3, bd, CORNERS), arr_f32(3, sd, SCORES)};
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "NonMaxSuppression", 10, 2, in, 0, 1);
  mi_graph_t *c = mi_graph_clone(k.g);
  CHECK(mi_graph_infer_shapes(c, &err) == MI_OK, "NonMaxSuppression inference: %s", err.message);
  const mi_tensor_t *t = &c->tensors[c->outputs[0]];
  CHECK(t->rank == 2 && t->dims[0] == MI_DIM_DYNAMIC && t->dims[1] == 3 &&
            t->dtype == MI_DTYPE_INT64,
        "NonMaxSuppression infers [dynamic, 3] int64");
  mi_graph_destroy(c);
  y = NULL; /* without max_output_boxes_per_class: none selected */
  CHECK(case_run(&k, &y, 1, &err) == MI_OK, "NonMaxSuppression two inputs: %s", err.message);
  expect_i64("NonMaxSuppression default max 0", y, 2, d03, want);
  mi_array_destroy(y);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_gather_nd),
    TU_CASE(test_scatter_elements),
    TU_CASE(test_nms),
};

TU_MAIN(NULL, NULL)
