/* test_graph_shapes.c - shape inference on hand-built graphs; expected shapes are derived by
 * hand from the ONNX operator formulas (see the comment at each case). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "metainfer/mi.h"

#include "test_util.h"

static int32_t input(mi_graph_t *g, const char *name, int32_t rank, const int64_t *dims) {
  int32_t t = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, rank, dims);
  mi_graph_add_input(g, t);
  return t;
}

/* Adds a one-output node; returns the output tensor. */
static int32_t node(mi_graph_t *g, const char *op, int32_t nin, const int32_t *ins, int32_t *node_out) {
  char name[64];
  snprintf(name, sizeof name, "%s_out%d", op, (int)g->tensor_count);
  int32_t y = mi_graph_add_tensor(g, name, MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = mi_graph_add_node(g, op, NULL, nin, ins, 1, &y);
  if (node_out) *node_out = n;
  return y;
}

static int shape_is(const mi_graph_t *g, int32_t t, int32_t rank, const int64_t *d) {
  const mi_tensor_t *x = &g->tensors[t];
  if (x->rank != rank) {
    fprintf(stderr, "  tensor %s: rank %d, expected %d\n", x->name, (int)x->rank, (int)rank);
    return 0;
  }
  for (int32_t i = 0; i < rank; i++)
    if (x->dims[i] != d[i]) {
      fprintf(stderr, "  tensor %s: dim %d = %lld, expected %lld\n", x->name, (int)i,
              (long long)x->dims[i], (long long)d[i]);
      return 0;
    }
  return 1;
}

static float g_w[16 * 8 * 9];

static void test_conv(void) {
  mi_graph_t *g = mi_graph_create("conv");
  mi_error_t err = {0};
  int32_t x = input(g, "x", 4, (int64_t[]){1, 8, 15, 15}), n;
  /* Grouped: 8 channels, group 4 -> weight [16, 2, 3, 3]; out = floor((15+1+1-3)/2)+1 = 8. */
  int32_t w = mi_graph_add_const_f32(g, "w", 4, (int64_t[]){16, 2, 3, 3}, g_w);
  int32_t y1 = node(g, "Conv", 2, (int32_t[]){x, w}, &n);
  mi_node_set_int(g, n, "group", 4);
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  mi_node_set_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  /* Depthwise, dilation 2 (effective kernel 5), pads 2: (15+4-5)/1+1 = 15. */
  int32_t wd = mi_graph_add_const_f32(g, "wd", 4, (int64_t[]){8, 1, 3, 3}, g_w);
  int32_t y2 = node(g, "Conv", 2, (int32_t[]){x, wd}, &n);
  mi_node_set_int(g, n, "group", 8);
  mi_node_set_ints(g, n, "dilations", 2, (int64_t[]){2, 2});
  mi_node_set_ints(g, n, "pads", 4, (int64_t[]){2, 2, 2, 2});
  /* SAME_UPPER, stride 2: ceil(15/2) = 8. VALID, stride 2: (15-3)/2+1 = 7. */
  int32_t wf = mi_graph_add_const_f32(g, "wf", 4, (int64_t[]){4, 8, 3, 3}, g_w);
  int32_t y3 = node(g, "Conv", 2, (int32_t[]){x, wf}, &n);
  mi_node_set_string(g, n, "auto_pad", "SAME_UPPER");
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  int32_t y4 = node(g, "Conv", 2, (int32_t[]){x, wf}, &n);
  mi_node_set_string(g, n, "auto_pad", "VALID");
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  /* ConvTranspose, weight [C_in=8, 4, 3, 3]: 2*(15-1) + 3 - 1 - 1 = 29, 4 channels. */
  int32_t wt = mi_graph_add_const_f32(g, "wt", 4, (int64_t[]){8, 4, 3, 3}, g_w);
  int32_t y5 = node(g, "ConvTranspose", 2, (int32_t[]){x, wt}, &n);
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  mi_node_set_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
  CHECK(shape_is(g, y1, 4, (int64_t[]){1, 16, 8, 8}));
  CHECK(shape_is(g, y2, 4, (int64_t[]){1, 8, 15, 15}));
  CHECK(shape_is(g, y3, 4, (int64_t[]){1, 4, 8, 8}));
  CHECK(shape_is(g, y4, 4, (int64_t[]){1, 4, 7, 7}));
  CHECK(shape_is(g, y5, 4, (int64_t[]){1, 4, 29, 29}));
  CHECK(g->tensors[y1].dtype == MI_DTYPE_FLOAT32);
  /* A group that does not divide the channels is an error naming the node. */
  int32_t y6 = node(g, "Conv", 2, (int32_t[]){x, w}, &n);
  mi_node_set_int(g, n, "group", 2);
  (void)y6;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_PARSE);
  CHECK(strstr(err.message, g->nodes[n].name) && strstr(err.message, "Conv"));
  mi_graph_destroy(g);
}

static void test_pool_broadcast_matmul(void) {
  mi_graph_t *g = mi_graph_create("misc");
  mi_error_t err = {0};
  int32_t x = input(g, "x", 4, (int64_t[]){1, 1, 5, 5}), n;
  /* k2 s2: floor((5-2)/2)+1 = 2; with ceil_mode: ceil(3/2)+1 = 3 (last window starts at 4 < 5). */
  int32_t p1 = node(g, "MaxPool", 1, &x, &n);
  mi_node_set_ints(g, n, "kernel_shape", 2, (int64_t[]){2, 2});
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  int32_t p2 = node(g, "AveragePool", 1, &x, &n);
  mi_node_set_ints(g, n, "kernel_shape", 2, (int64_t[]){2, 2});
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  mi_node_set_int(g, n, "ceil_mode", 1);
  int32_t gp = node(g, "GlobalAveragePool", 1, &x, NULL);
  int32_t a = input(g, "a", 3, (int64_t[]){2, 1, 4});
  int32_t b = input(g, "b", 2, (int64_t[]){3, 1});
  int32_t s = node(g, "Add", 2, (int32_t[]){a, b}, NULL);
  int32_t e = node(g, "Equal", 2, (int32_t[]){a, b}, NULL);
  int32_t m1 = input(g, "m1", 4, (int64_t[]){2, 1, 3, 4});
  int32_t m2 = input(g, "m2", 3, (int64_t[]){5, 4, 6});
  int32_t v4 = input(g, "v4", 1, (int64_t[]){4});
  int32_t mm = node(g, "MatMul", 2, (int32_t[]){m1, m2}, NULL);
  int32_t mv = node(g, "MatMul", 2, (int32_t[]){v4, m2}, NULL); /* [4] x [5,4,6] -> [5,6] */
  int32_t vm = node(g, "MatMul", 2, (int32_t[]){m1, v4}, NULL); /* [2,1,3,4] x [4] -> [2,1,3] */
  int32_t ga = input(g, "ga", 2, (int64_t[]){7, 4});
  int32_t gb = input(g, "gb", 2, (int64_t[]){9, 4});
  int32_t gm = node(g, "Gemm", 2, (int32_t[]){ga, gb}, &n);
  mi_node_set_int(g, n, "transB", 1);
  int32_t sm = node(g, "Softmax", 1, &m1, NULL);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
  CHECK(shape_is(g, p1, 4, (int64_t[]){1, 1, 2, 2}));
  CHECK(shape_is(g, p2, 4, (int64_t[]){1, 1, 3, 3}));
  CHECK(shape_is(g, gp, 4, (int64_t[]){1, 1, 1, 1}));
  CHECK(shape_is(g, s, 3, (int64_t[]){2, 3, 4}));
  CHECK(shape_is(g, e, 3, (int64_t[]){2, 3, 4}) && g->tensors[e].dtype == MI_DTYPE_BOOL);
  CHECK(shape_is(g, mm, 4, (int64_t[]){2, 5, 3, 6}));
  CHECK(shape_is(g, mv, 2, (int64_t[]){5, 6}));
  CHECK(shape_is(g, vm, 3, (int64_t[]){2, 1, 3}));
  CHECK(shape_is(g, gm, 2, (int64_t[]){7, 9}));
  CHECK(shape_is(g, sm, 4, (int64_t[]){2, 1, 3, 4}));
  /* Incompatible broadcast: [2,1,4] + [3] fails, naming both shapes. */
  int32_t c3 = input(g, "c3", 1, (int64_t[]){3});
  node(g, "Mul", 2, (int32_t[]){a, c3}, &n);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_PARSE);
  CHECK(strstr(err.message, "[2,1,4]") && strstr(err.message, "[3]") && strstr(err.message, "Mul"));
  mi_graph_destroy(g);

  /* Softmax axis out of range. */
  g = mi_graph_create("sm");
  x = input(g, "x", 2, (int64_t[]){2, 3});
  node(g, "Softmax", 1, &x, &n);
  mi_node_set_int(g, n, "axis", 2);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_PARSE && strstr(err.message, "axis"));
  mi_graph_destroy(g);
}

static void test_reshape_squeeze_slice(void) {
  mi_graph_t *g = mi_graph_create("rs");
  mi_error_t err = {0};
  int32_t x = input(g, "x", 3, (int64_t[]){2, 3, 4}), n;
  int32_t s1 = mi_graph_add_const_i64(g, "s1", 2, (int64_t[]){0, -1});
  int32_t s2 = mi_graph_add_const_i64(g, "s2", 3, (int64_t[]){4, -1, 1});
  int32_t r1 = node(g, "Reshape", 2, (int32_t[]){x, s1}, NULL); /* [2, 12] */
  int32_t r2 = node(g, "Reshape", 2, (int32_t[]){x, s2}, NULL); /* [4, 6, 1] */
  int32_t f = node(g, "Flatten", 1, &x, &n);                    /* axis 2: [6, 4] */
  mi_node_set_int(g, n, "axis", 2);
  int32_t t = node(g, "Transpose", 1, &x, &n);
  mi_node_set_ints(g, n, "perm", 3, (int64_t[]){2, 0, 1});
  /* Opset 13: Squeeze/Unsqueeze axes come from an input. */
  int32_t ax = mi_graph_add_const_i64(g, "ax", 1, (int64_t[]){-1});
  int32_t sq = node(g, "Squeeze", 2, (int32_t[]){r2, ax}, NULL); /* [4, 6] */
  int32_t ax2 = mi_graph_add_const_i64(g, "ax2", 2, (int64_t[]){0, -1});
  int32_t us = node(g, "Unsqueeze", 2, (int32_t[]){x, ax2}, NULL); /* [1,2,3,4,1] */
  int32_t rax = mi_graph_add_const_i64(g, "rax", 1, (int64_t[]){1});
  int32_t rs = node(g, "ReduceSum", 2, (int32_t[]){x, rax}, &n); /* keepdims 0: [2, 4] */
  mi_node_set_int(g, n, "keepdims", 0);
  int32_t rm = node(g, "ReduceMean", 1, &x, &n); /* opset 13: axes attribute, keepdims 1 */
  mi_node_set_ints(g, n, "axes", 1, (int64_t[]){-1});
  /* Slice(x, starts=[1,-3], ends=[INT64_MAX, 1000], axes=[0,2], steps=[2,1]):
   * axis 0: start 1, end 2 -> ceil(1/2) = 1; axis 2: start 1, end 4 -> 3. */
  int32_t st = mi_graph_add_const_i64(g, "st", 2, (int64_t[]){1, -3});
  int32_t en = mi_graph_add_const_i64(g, "en", 2, (int64_t[]){INT64_MAX, 1000});
  int32_t sa = mi_graph_add_const_i64(g, "sa", 2, (int64_t[]){0, 2});
  int32_t ss = mi_graph_add_const_i64(g, "ss", 2, (int64_t[]){2, 1});
  int32_t sl = node(g, "Slice", 5, (int32_t[]){x, st, en, sa, ss}, NULL);
  int32_t sn = mi_graph_add_const_i64(g, "sn", 1, (int64_t[]){-1});
  int32_t sz = mi_graph_add_const_i64(g, "sz", 1, (int64_t[]){INT64_MIN});
  int32_t s0 = mi_graph_add_const_i64(g, "s0", 1, (int64_t[]){0});
  int32_t rev = node(g, "Slice", 5, (int32_t[]){x, sn, sz, s0, sn}, NULL); /* reversed: [2,3,4] */
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
  if (err.code) fprintf(stderr, "  %s\n", err.message);
  CHECK(shape_is(g, r1, 2, (int64_t[]){2, 12}));
  CHECK(shape_is(g, r2, 3, (int64_t[]){4, 6, 1}));
  CHECK(shape_is(g, f, 2, (int64_t[]){6, 4}));
  CHECK(shape_is(g, t, 3, (int64_t[]){4, 2, 3}));
  CHECK(shape_is(g, sq, 2, (int64_t[]){4, 6}));
  CHECK(shape_is(g, us, 5, (int64_t[]){1, 2, 3, 4, 1}));
  CHECK(shape_is(g, rs, 2, (int64_t[]){2, 4}));
  CHECK(shape_is(g, rm, 3, (int64_t[]){2, 3, 1}));
  CHECK(shape_is(g, sl, 3, (int64_t[]){1, 3, 3}));
  CHECK(shape_is(g, rev, 3, (int64_t[]){2, 3, 4}));
  mi_graph_destroy(g);

  /* Opset 11: Squeeze axes and Slice bounds are attributes. */
  g = mi_graph_create("old");
  g->opset = 9;
  x = input(g, "x", 4, (int64_t[]){1, 3, 1, 5});
  sq = node(g, "Squeeze", 1, &x, &n);
  mi_node_set_ints(g, n, "axes", 1, (int64_t[]){2});
  int32_t sq_all = node(g, "Squeeze", 1, &x, NULL);
  sl = node(g, "Slice", 1, &x, &n);
  mi_node_set_ints(g, n, "starts", 1, (int64_t[]){1});
  mi_node_set_ints(g, n, "ends", 1, (int64_t[]){-1});
  mi_node_set_ints(g, n, "axes", 1, (int64_t[]){3});
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
  CHECK(shape_is(g, sq, 3, (int64_t[]){1, 3, 5}));
  CHECK(shape_is(g, sq_all, 2, (int64_t[]){3, 5}));
  CHECK(shape_is(g, sl, 4, (int64_t[]){1, 3, 1, 3}));
  /* Squeezing a dim that is not 1 is an error. */
  node(g, "Squeeze", 1, &x, &n);
  mi_node_set_ints(g, n, "axes", 1, (int64_t[]){1});
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_PARSE && strstr(err.message, "Squeeze"));
  mi_graph_destroy(g);

  /* A -1 that does not divide: 24 elements into [5, -1]. */
  g = mi_graph_create("bad");
  x = input(g, "x", 3, (int64_t[]){2, 3, 4});
  int32_t bad = mi_graph_add_const_i64(g, "s", 2, (int64_t[]){5, -1});
  node(g, "Reshape", 2, (int32_t[]){x, bad}, NULL);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_PARSE && strstr(err.message, "Reshape"));
  mi_graph_destroy(g);
}

/* The PyTorch flatten idiom: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])). */
static void test_shape_arithmetic(void) {
  mi_error_t err = {0};
  for (int dyn = 0; dyn < 2; dyn++) {
    mi_graph_t *g = mi_graph_create("chain");
    int32_t x = input(g, "x", 4, (int64_t[]){dyn ? MI_DIM_DYNAMIC : 2, 3, 8, 8});
    int32_t sh = node(g, "Shape", 1, &x, NULL);
    int32_t i0 = mi_graph_add_tensor(g, "i0", MI_DTYPE_INT64, 0, NULL);
    mi_graph_set_data(g, i0, (int64_t[]){0}, sizeof(int64_t));
    int32_t ga = node(g, "Gather", 2, (int32_t[]){sh, i0}, NULL);
    int32_t ax = mi_graph_add_const_i64(g, "ax", 1, (int64_t[]){0});
    int32_t un = node(g, "Unsqueeze", 2, (int32_t[]){ga, ax}, NULL);
    int32_t m1 = mi_graph_add_const_i64(g, "m1", 1, (int64_t[]){-1});
    int32_t n;
    int32_t cc = node(g, "Concat", 2, (int32_t[]){un, m1}, &n);
    mi_node_set_int(g, n, "axis", 0);
    int32_t r = node(g, "Reshape", 2, (int32_t[]){x, cc}, NULL);
    /* And a computed Resize scale: Cast(Shape) -> Div -> scales for "double H and W". */
    int32_t shf = node(g, "Cast", 1, &sh, &n);
    mi_node_set_int(g, n, "to", 1);
    float half[4] = {1, 1, 4, 4};
    int32_t h = mi_graph_add_const_f32(g, "q", 1, (int64_t[]){4}, half);
    int32_t dv = node(g, "Div", 2, (int32_t[]){h, h}, NULL); /* [1,1,1,1] */
    int32_t two = mi_graph_add_const_f32(g, "two", 1, (int64_t[]){4}, (float[]){1, 1, 2, 2});
    int32_t scales = node(g, "Mul", 2, (int32_t[]){dv, two}, NULL);
    int32_t rz = node(g, "Resize", 3, (int32_t[]){x, -1, scales}, NULL);
    (void)shf;
    CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
    CHECK(shape_is(g, sh, 1, (int64_t[]){4}) && g->tensors[sh].dtype == MI_DTYPE_INT64);
    CHECK(shape_is(g, cc, 1, (int64_t[]){2}));
    CHECK(shape_is(g, rz, 4, (int64_t[]){dyn ? MI_DIM_DYNAMIC : 2, 3, 16, 16}));
    if (!dyn) CHECK(shape_is(g, r, 2, (int64_t[]){2, 192}));
    else
      CHECK(shape_is(g, r, 2, (int64_t[]){MI_DIM_DYNAMIC, MI_DIM_DYNAMIC}));
    mi_graph_destroy(g);
  }
}

/* The variadic ops (Max, Min, Sum, Mean) broadcast every input, and their known values (shape
 * arithmetic) fold over every input; LogSoftmax keeps its input's shape. Each Reshape below
 * reads a target shape that is right only when every input is folded in. */
static void test_variadic(void) {
  mi_error_t err = {0};
  mi_graph_t *g = mi_graph_create("variadic");
  int32_t a = input(g, "a", 3, (int64_t[]){2, 1, 4}), b = input(g, "b", 2, (int64_t[]){3, 1});
  int32_t c = input(g, "c", 1, (int64_t[]){4});
  int32_t sum = node(g, "Sum", 3, (int32_t[]){a, b, c}, NULL);
  int32_t mean = node(g, "Mean", 3, (int32_t[]){a, b, c}, NULL);
  int32_t lsm = node(g, "LogSoftmax", 1, &sum, NULL);
  int32_t x = input(g, "x", 2, (int64_t[]){3, 4});
  int32_t k1 = mi_graph_add_const_i64(g, "k1", 2, (int64_t[]){1, 0});
  int32_t k2 = mi_graph_add_const_i64(g, "k2", 2, (int64_t[]){0, 3});
  int32_t k3 = mi_graph_add_const_i64(g, "k3", 2, (int64_t[]){2, 6});
  int32_t kn = mi_graph_add_const_i64(g, "kn", 2, (int64_t[]){-1, 6});
  int32_t m3 = node(g, "Max", 3, (int32_t[]){k1, k2, k3}, NULL);  /* [2, 6] */
  int32_t m1 = node(g, "Max", 1, &kn, NULL);                      /* [-1, 6] */
  int32_t s2 = node(g, "Sum", 3, (int32_t[]){k1, k1, k2}, NULL);  /* [2, 3] */
  int32_t me = node(g, "Mean", 3, (int32_t[]){k3, k3, k3}, NULL); /* [2, 6] */
  int32_t r3 = node(g, "Reshape", 2, (int32_t[]){x, m3}, NULL);
  int32_t r1 = node(g, "Reshape", 2, (int32_t[]){x, m1}, NULL);
  int32_t y = input(g, "y", 1, (int64_t[]){6});
  int32_t rs = node(g, "Reshape", 2, (int32_t[]){y, s2}, NULL);
  int32_t rm = node(g, "Reshape", 2, (int32_t[]){x, me}, NULL);
  g->opset = 13;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
  CHECK(shape_is(g, sum, 3, (int64_t[]){2, 3, 4}) && shape_is(g, mean, 3, (int64_t[]){2, 3, 4}));
  CHECK(shape_is(g, lsm, 3, (int64_t[]){2, 3, 4}));
  CHECK(shape_is(g, r3, 2, (int64_t[]){2, 6}) && shape_is(g, r1, 2, (int64_t[]){2, 6}));
  CHECK(shape_is(g, rm, 2, (int64_t[]){2, 6}) && shape_is(g, rs, 2, (int64_t[]){2, 3}));
  mi_graph_destroy(g);
}

static void test_unsupported(void) {
  mi_graph_t *g = mi_graph_create("u");
  mi_error_t err = {0};
  int32_t x = input(g, "x", 1, (int64_t[]){4});
  int32_t y = mi_graph_add_tensor(g, "y", 0, -1, NULL);
  mi_graph_add_node(g, "FancyOp", "my_fancy_node", 1, &x, 1, &y);
  g->opset = 17;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_ERR_UNSUPPORTED);
  CHECK(strstr(err.message, "my_fancy_node") && strstr(err.message, "FancyOp") &&
        strstr(err.message, "opset 17") && strstr(err.message, "unsupported op"));
  mi_graph_destroy(g);
}

/* Declared dims whose product overflows int64 (2^93 elements): the shape still propagates and
 * nothing multiplies past the type (this used to be signed overflow in the constant
 * evaluator, seen by the ONNX fuzzer under UBSan). */
static void test_overflowing_numel(void) {
  mi_graph_t *g = mi_graph_create("big");
  mi_error_t err = {0};
  const int64_t big = (int64_t)1 << 31, d[3] = {big, big, big};
  int32_t x = input(g, "x", 3, d);
  int32_t y = node(g, "Add", 2, (int32_t[]){x, x}, NULL);
  int32_t z = node(g, "Mul", 2, (int32_t[]){y, x}, NULL);
  mi_graph_add_output(g, z);
  g->opset = 17;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK);
  CHECK(shape_is(g, z, 3, d));
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_conv),
    TU_CASE(test_pool_broadcast_matmul),
    TU_CASE(test_reshape_squeeze_slice),
    TU_CASE(test_shape_arithmetic),
    TU_CASE(test_variadic),
    TU_CASE(test_unsupported),
    TU_CASE(test_overflowing_numel),
};

TU_MAIN(NULL, NULL)
