/* test_onnx_tf2onnx_idioms.c - a hand-encoded opset-13 model in the shape tf2onnx gives
 * TensorFlow graphs (it is not a tf2onnx export: the real one is tests/onnx's oww_embedding):
 * an NHWC input with a named dynamic batch dim, Transposes around an NCHW Conv, a resize whose
 * sizes come from Shape -> Slice -> Cast -> Mul -> Cast -> Concat (tf.image.resize) with empty
 * roi and scales initializers, ReduceMean over the NHWC spatial axes and a Squeeze with an axes
 * input. With the batch bound, shape inference gives static shapes, constant folding leaves no
 * shape arithmetic, and the run gives the values worked out by hand. */
#include "test_ref_common.h"

#include "test_pb.h"

static mi_graph_t *load(void) {
  static pb_t g, n, m;
  pb_t os = {0};
  int64_t dx[4] = {-1, 2, 2, 1}, dw[4] = {1, 1, 1, 1}, d1[1] = {1}, d0[1] = {0}, d2[1] = {2};
  g.n = 0;
  pb_value_f32(&g, 11, "input_1:0", 4, dx, "unk__12");
  pb_init_f32(&g, "conv/kernel", 4, dw, (float[]){2});
  pb_init_f32(&g, "conv/bias", 1, d1, (float[]){1});
  pb_init_f32(&g, "roi__empty", 1, d0, (float[]){0});
  pb_init_f32(&g, "scales__empty", 1, d0, (float[]){0});
  pb_init_f32(&g, "resize/mul_y", 1, d2, (float[]){2, 2});
  pb_init_i64(&g, "const_starts__2", 1, (int64_t[]){2});
  pb_init_i64(&g, "const_ends__4", 1, (int64_t[]){4});
  pb_init_i64(&g, "const_starts__0", 1, (int64_t[]){0});
  pb_init_i64(&g, "squeeze_axes", 1, (int64_t[]){1});
  pb_node(&n, "Transpose", "conv__6", "input_1:0", "conv__6:0");
  pb_attr_ints(&n, "perm", 4, (int64_t[]){0, 3, 1, 2});
  put_msg(&g, 1, &n);
  pb_node(&n, "Conv", "conv/Conv2D", "conv__6:0,conv/kernel,conv/bias", "conv/BiasAdd:0");
  pb_attr_ints(&n, "kernel_shape", 2, (int64_t[]){1, 1});
  pb_attr_ints(&n, "strides", 2, (int64_t[]){1, 1});
  put_msg(&g, 1, &n);
  pb_node(&n, "Shape", "resize/Shape", "conv/BiasAdd:0", "resize/Shape:0");
  put_msg(&g, 1, &n);
  pb_node(&n, "Slice", "resize/hw", "resize/Shape:0,const_starts__2,const_ends__4",
          "resize/hw:0");
  put_msg(&g, 1, &n);
  pb_node(&n, "Cast", "resize/Cast", "resize/hw:0", "resize/Cast:0");
  pb_attr_int(&n, "to", 1);
  put_msg(&g, 1, &n);
  pb_node(&n, "Mul", "resize/mul", "resize/Cast:0,resize/mul_y", "resize/mul:0");
  put_msg(&g, 1, &n);
  pb_node(&n, "Cast", "resize/Cast_1", "resize/mul:0", "resize/Cast_1:0");
  pb_attr_int(&n, "to", 7);
  put_msg(&g, 1, &n);
  pb_node(&n, "Slice", "resize/nc", "resize/Shape:0,const_starts__0,const_starts__2",
          "resize/nc:0");
  put_msg(&g, 1, &n);
  pb_node(&n, "Concat", "resize/sizes", "resize/nc:0,resize/Cast_1:0", "resize/sizes:0");
  pb_attr_int(&n, "axis", 0);
  put_msg(&g, 1, &n);
  pb_node(&n, "Resize", "resize/ResizeNearestNeighbor",
          "conv/BiasAdd:0,roi__empty,scales__empty,resize/sizes:0", "resize:0");
  pb_attr_str(&n, "mode", "nearest");
  pb_attr_str(&n, "coordinate_transformation_mode", "asymmetric");
  pb_attr_str(&n, "nearest_mode", "floor");
  put_msg(&g, 1, &n);
  pb_node(&n, "Transpose", "resize__12", "resize:0", "upsampled");
  pb_attr_ints(&n, "perm", 4, (int64_t[]){0, 2, 3, 1});
  put_msg(&g, 1, &n);
  pb_node(&n, "ReduceMean", "mean", "upsampled", "mean:0");
  pb_attr_ints(&n, "axes", 2, (int64_t[]){1, 2});
  pb_attr_int(&n, "keepdims", 0);
  put_msg(&g, 1, &n);
  pb_node(&n, "Squeeze", "squeeze", "mean:0,squeeze_axes", "pooled");
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "upsampled", -1, NULL, NULL);
  pb_value_f32(&g, 12, "pooled", -1, NULL, NULL);
  put_str(&os, 1, "");
  put_int(&os, 2, 13);
  m.n = 0;
  put_int(&m, 1, 8);
  put_str(&m, 2, "tf2onnx-style test");
  put_msg(&m, 8, &os);
  put_msg(&m, 7, &g);
  mi_graph_t *gr = NULL;
  mi_error_t err = {0};
  CHECK(mi_onnx_load_buffer(m.d, m.n, NULL, &gr, &err) == MI_OK, "load: %s", err.message);
  return gr;
}

static int count_op(const mi_graph_t *g, const char *op) {
  int k = 0;
  for (int32_t i = 0; i < g->node_count; i++) k += strcmp(g->nodes[i].op_type, op) == 0;
  return k;
}

static void shapes_fold_and_run(void) {
  mi_graph_t *g = load();
  if (!g) return; /* load() counted the failure */
  mi_error_t err = {0};
  mi_tensor_t *x = &g->tensors[g->inputs[0]];
  CHECK(x->rank == 4 && x->dims[0] == MI_DIM_DYNAMIC, "the batch dim is dynamic");
  x->dims[0] = 2; /* bound as mi-run does from an input file */
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  const mi_tensor_t *up = &g->tensors[g->outputs[0]], *pool = &g->tensors[g->outputs[1]];
  int64_t dup[4] = {2, 4, 4, 1}, dpool[1] = {2};
  CHECK(up->rank == 4 && memcmp(up->dims, dup, sizeof dup) == 0, "upsampled is [2,4,4,1]");
  CHECK(pool->rank == 1 && pool->dims[0] == 2, "pooled is [2]");
  int32_t folded = 0;
  CHECK(mi_graph_fold_constants(g, &folded, &err) == MI_OK, "fold: %s", err.message);
  CHECK(folded == 7 && g->node_count == 6, "the 7 shape nodes are folded (folded %d, %d left)",
        (int)folded, (int)g->node_count);
  static const char *gone[] = {"Shape", "Slice", "Cast", "Mul", "Concat"};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
    CHECK(count_op(g, gone[i]) == 0, "no %s left after folding", gone[i]);
  CHECK(count_op(g, "Resize") == 1 && count_op(g, "Transpose") == 2 && count_op(g, "Conv") == 1,
        "the compute nodes stay");
  /* x NHWC, batch 0 pixels 1..4, batch 1 5..8; Conv 1x1: 2x + 1; nearest x2 repeats each
   * pixel in a 2x2 block; the mean over H, W is the mean of the conv output. */
  int64_t dx[4] = {2, 2, 2, 1};
  float xv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, want_up[32];
  for (int b = 0; b < 2; b++)
    for (int h = 0; h < 4; h++)
      for (int w = 0; w < 4; w++)
        want_up[b * 16 + h * 4 + w] = 2 * xv[b * 4 + (h / 2) * 2 + w / 2] + 1;
  mi_array_t *in = arr_f32(4, dx, xv), *out[2] = {NULL, NULL};
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&in, 1, out, 2, &err) == MI_OK, "run: %s",
        err.message);
  expect_f32("upsampled NHWC", out[0], 4, dup, want_up, 0);
  expect_f32("pooled", out[1], 1, dpool, (float[]){6, 14}, 1e-6f);
  mi_array_destroy(in), mi_array_destroy(out[0]), mi_array_destroy(out[1]);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(shapes_fold_and_run),
};

TU_MAIN(NULL, NULL)
