/* test_measure_util.h - what the measure, history and feature tests share besides test_util.h:
 * a small model every device runs. */
#ifndef TEST_MEASURE_UTIL_H
#define TEST_MEASURE_UTIL_H

#include "test_util.h"

/* x[1,8,8,8] -> Conv 3x3 (16 out, pads 1) -> Relu -> y: a model every device runs. */
static inline mi_graph_t *tm_conv_relu(void) {
  mi_graph_t *g = mi_graph_create("conv_relu");
  int64_t xd[4] = {1, 8, 8, 8}, wd[4] = {16, 8, 3, 3}, k[2] = {3, 3}, p[4] = {1, 1, 1, 1};
  float *w = malloc(16 * 8 * 9 * sizeof *w);
  int32_t x, wt, c, y, in[2], n;
  for (int i = 0; i < 16 * 8 * 9; i++) w[i] = (float)((i * 37) % 19 - 9) * 0.05f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  wt = mi_graph_add_const_f32(g, "w", 4, wd, w);
  c = mi_graph_add_tensor(g, "c", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  free(w);
  mi_graph_add_input(g, x);
  in[0] = x;
  in[1] = wt;
  n = mi_graph_add_node(g, "Conv", "conv", 2, in, 1, &c);
  mi_node_set_ints(g, n, "kernel_shape", 2, k);
  mi_node_set_ints(g, n, "pads", 4, p);
  mi_graph_add_node(g, "Relu", "relu", 1, &c, 1, &y);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, NULL) || mi_graph_infer_shapes(g, NULL)) {
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

#endif
