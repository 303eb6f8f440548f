/* cases.c - small one-node graphs per op type, the shapes the reference rule runs variants on.
 * Odd sizes on purpose: they catch tiles that assume divisibility. */
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* A deterministic weight generator (splitmix64), values in [lo, hi). */
static float *weights(int64_t count, uint64_t seed, float lo, float hi) {
  float *w = malloc((size_t)count * sizeof *w);
  mi_rng_t s = {seed}; /* the state as it is, not mi_rng_seed's mix */
  if (!w) return NULL;
  for (int64_t i = 0; i < count; i++) {
    uint64_t z = mi_rng_next(&s);
    w[i] = lo + (hi - lo) * (float)((double)(z >> 40) / 16777216.0);
  }
  return w;
}

static int32_t add_const(mi_graph_t *g, const char *name, int32_t rank, const int64_t *dims,
                         uint64_t seed, float lo, float hi) {
  int64_t count = 1;
  float *w;
  int32_t t;
  for (int32_t i = 0; i < rank; i++) count *= dims[i];
  w = weights(count, seed, lo, hi);
  if (!w) return -1;
  t = mi_graph_add_const_f32(g, name, rank, dims, w);
  free(w);
  return t;
}

static int32_t add_input(mi_graph_t *g, const char *name, int32_t rank, const int64_t *dims) {
  int32_t t = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, rank, dims);
  if (t >= 0) mi_graph_add_input(g, t);
  return t;
}

/* The empty graph of case `index` of a family with `cases` of them; NULL past the last one (or
 * out of memory). */
static mi_graph_t *case_graph(const char *name, int index, int cases) {
  return index < cases ? mi_graph_create(name) : NULL;
}

/* Finishes a one-node graph: output tensor, order, shapes. NULL on any failure. */
static mi_graph_t *finish(mi_graph_t *g, int32_t node) {
  if (node < 0 || mi_graph_toposort(g, NULL) != MI_OK || mi_graph_infer_shapes(g, NULL) != MI_OK) {
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

static int32_t one_node(mi_graph_t *g, const char *op, int32_t n_in, const int32_t *in) {
  int32_t out = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  int32_t node = mi_graph_add_node(g, op, "case", n_in, in, 1, &out);
  mi_graph_add_output(g, out);
  return node;
}

static mi_graph_t *conv_case(int index, uint64_t seed) {
  /* x shape, w shape, group, stride, pad, dilation */
  static const int64_t k[4][11] = {
      {1, 4, 9, 9, 8, 4, 3, 3, 1, 1, 1},
      {1, 8, 7, 7, 16, 8, 1, 1, 1, 1, 0},
      {1, 8, 10, 10, 8, 1, 3, 3, 8, 2, 1},
      {1, 4, 11, 11, 6, 2, 3, 3, 2, 1, 2},
  };
  mi_graph_t *g;
  int32_t in[3], node;
  int64_t pads[4], strides[2], dil[2];
  if (!(g = case_graph("conform.conv", index, 4))) return NULL;
  in[0] = add_input(g, "x", 4, k[index]);
  in[1] = add_const(g, "w", 4, k[index] + 4, seed, -0.5f, 0.5f);
  in[2] = add_const(g, "b", 1, k[index] + 4, seed + 1, -0.1f, 0.1f);
  node = one_node(g, "Conv", 3, in);
  for (int i = 0; i < 4; i++) pads[i] = k[index][10];
  strides[0] = strides[1] = k[index][9];
  dil[0] = dil[1] = index == 3 ? 2 : 1;
  if (node >= 0) {
    mi_node_set_int(g, node, "group", k[index][8]);
    mi_node_set_ints(g, node, "pads", 4, pads);
    mi_node_set_ints(g, node, "strides", 2, strides);
    mi_node_set_ints(g, node, "dilations", 2, dil);
  }
  return finish(g, node);
}

static mi_graph_t *gemm_case(const char *op, int index, uint64_t seed) {
  static const int64_t a3[3] = {2, 5, 7}, a2[2] = {5, 7}, b[2] = {7, 9}, bt[2] = {9, 7}, c[1] = {9};
  mi_graph_t *g;
  int32_t in[3], node;
  if (!(g = case_graph("conform.gemm", index, 2))) return NULL;
  if (!strcmp(op, "MatMul")) {
    in[0] = add_input(g, "a", index ? 2 : 3, index ? a2 : a3);
    in[1] = add_const(g, "b", 2, b, seed, -0.5f, 0.5f);
    node = one_node(g, "MatMul", 2, in);
    return finish(g, node);
  }
  in[0] = add_input(g, "a", 2, a2);
  in[1] = add_const(g, "b", 2, index ? bt : b, seed, -0.5f, 0.5f);
  in[2] = add_const(g, "c", 1, c, seed + 1, -0.1f, 0.1f);
  node = one_node(g, "Gemm", 3, in);
  if (node >= 0 && index) mi_node_set_int(g, node, "transB", 1);
  if (node >= 0 && index) mi_node_set_float(g, node, "alpha", 0.5f);
  return finish(g, node);
}

static int is_one_of(const char *op, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(op, *list)) return 1;
  return 0;
}

static mi_graph_t *elementwise_case(const char *op, int index, uint64_t seed) {
  static const char *const unary[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf",
                                      "Gelu", "HardSwish", "HardSigmoid", "LeakyRelu",
                                      "Identity", "Clip", NULL};
  static const char *const binary[] = {"Add", "Sub", "Mul", "Max", "Min", "Div", NULL};
  static const int64_t x[4] = {2, 3, 4, 5}, bc[3] = {3, 1, 1};
  mi_graph_t *g = NULL;
  int32_t in[3], node;
  if (is_one_of(op, unary)) {
    if (!(g = case_graph("conform.unary", index, 1))) return NULL;
    if (!strcmp(op, "Gelu")) g->opset = 20;
    in[0] = add_input(g, "x", 4, x);
    if (!strcmp(op, "Clip")) {
      float lo = 0.0f, hi = 0.5f;
      int64_t scalar_dims[1] = {0};
      in[1] = mi_graph_add_const_f32(g, "lo", 0, scalar_dims, &lo);
      in[2] = mi_graph_add_const_f32(g, "hi", 0, scalar_dims, &hi);
      node = one_node(g, op, 3, in);
      return finish(g, node);
    }
    node = one_node(g, op, 1, in);
    return finish(g, node);
  }
  if (is_one_of(op, binary)) {
    if (!(g = case_graph("conform.binary", index, 2))) return NULL;
    in[0] = add_input(g, "a", 4, x);
    if (!strcmp(op, "Div")) /* a divisor kept away from zero */
      in[1] = index ? add_const(g, "b", 3, bc, seed, 1.0f, 2.0f) : add_const(g, "b", 4, x, seed, 1.0f, 2.0f);
    else
      in[1] = index ? add_input(g, "b", 3, bc) : add_input(g, "b", 4, x);
    node = one_node(g, op, 2, in);
    return finish(g, node);
  }
  return NULL;
}

static mi_graph_t *norm_pool_case(const char *op, int index, uint64_t seed) {
  static const int64_t x4[4] = {1, 6, 7, 7}, c6[1] = {6}, x3[3] = {2, 5, 16}, d16[1] = {16};
  mi_graph_t *g;
  int32_t in[5], node;
  if (!(g = case_graph("conform.norm", index, 1))) return NULL;
  if (!strcmp(op, "BatchNormalization")) {
    in[0] = add_input(g, "x", 4, x4);
    in[1] = add_const(g, "scale", 1, c6, seed, 0.5f, 1.5f);
    in[2] = add_const(g, "bias", 1, c6, seed + 1, -0.2f, 0.2f);
    in[3] = add_const(g, "mean", 1, c6, seed + 2, -0.2f, 0.2f);
    in[4] = add_const(g, "var", 1, c6, seed + 3, 0.5f, 1.5f);
    node = one_node(g, op, 5, in);
    return finish(g, node);
  }
  if (!strcmp(op, "LayerNormalization")) {
    g->opset = 17;
    in[0] = add_input(g, "x", 3, x3);
    in[1] = add_const(g, "scale", 1, d16, seed, 0.5f, 1.5f);
    in[2] = add_const(g, "bias", 1, d16, seed + 1, -0.2f, 0.2f);
    node = one_node(g, op, 3, in);
    if (node >= 0) mi_node_set_int(g, node, "axis", -1);
    return finish(g, node);
  }
  if (!strcmp(op, "Softmax")) {
    in[0] = add_input(g, "x", 3, x3);
    node = one_node(g, op, 1, in);
    if (node >= 0) mi_node_set_int(g, node, "axis", -1);
    return finish(g, node);
  }
  if (!strcmp(op, "GlobalAveragePool") || !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) {
    int64_t ks[2] = {3, 3}, st[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
    in[0] = add_input(g, "x", 4, x4);
    node = one_node(g, op, 1, in);
    if (node >= 0 && strcmp(op, "GlobalAveragePool")) {
      mi_node_set_ints(g, node, "kernel_shape", 2, ks);
      mi_node_set_ints(g, node, "strides", 2, st);
      if (!strcmp(op, "MaxPool")) mi_node_set_ints(g, node, "pads", 4, pads);
    }
    return finish(g, node);
  }
  mi_graph_destroy(g);
  return NULL;
}

static mi_graph_t *shape_case(const char *op, int index) {
  static const int64_t x4[4] = {2, 3, 4, 5}, cat_b[4] = {2, 2, 4, 5}, two[1] = {2};
  static const int64_t new_shape[2] = {6, 20}, perm[4] = {0, 2, 3, 1}, axes[2] = {2, 3};
  mi_graph_t *g;
  int32_t in[2], node;
  if (!(g = case_graph("conform.shape", index, 1))) return NULL;
  in[0] = add_input(g, "x", 4, x4);
  if (!strcmp(op, "Flatten")) {
    node = one_node(g, op, 1, in);
  } else if (!strcmp(op, "Reshape")) {
    in[1] = mi_graph_add_const_i64(g, "shape", two[0], new_shape);
    node = one_node(g, op, 2, in);
  } else if (!strcmp(op, "Transpose")) {
    node = one_node(g, op, 1, in);
    if (node >= 0) mi_node_set_ints(g, node, "perm", 4, perm);
  } else if (!strcmp(op, "Concat")) {
    in[1] = add_input(g, "b", 4, cat_b);
    node = one_node(g, op, 2, in);
    if (node >= 0) mi_node_set_int(g, node, "axis", 1);
  } else if (!strcmp(op, "ReduceSum")) { /* axes became an input of ReduceSum at opset 13 */
    in[1] = mi_graph_add_const_i64(g, "axes", 2, axes);
    node = one_node(g, op, 2, in);
  } else if (!strcmp(op, "ReduceMean") || !strcmp(op, "ReduceMax")) {
    node = one_node(g, op, 1, in);
    if (node >= 0) mi_node_set_ints(g, node, "axes", 2, axes);
  } else {
    mi_graph_destroy(g);
    return NULL;
  }
  return finish(g, node);
}

mi_graph_t *conform_case_graph(const char *op_type, int index, uint64_t seed) {
  mi_graph_t *g;
  if (!strcmp(op_type, "Conv")) return conv_case(index, seed);
  if (!strcmp(op_type, "Gemm") || !strcmp(op_type, "MatMul")) return gemm_case(op_type, index, seed);
  if ((g = elementwise_case(op_type, index, seed))) return g;
  if ((g = norm_pool_case(op_type, index, seed))) return g;
  return shape_case(op_type, index);
}
