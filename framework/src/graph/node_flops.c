/* node_flops.c - the operation count of one node from its inferred shapes: model features sum
 * it (feature), the per-layer table divides it by measured time (measure). */
#include <string.h>

#include "graph/graph.h"

double mi__tensor_numel_est(const mi_tensor_t *t) {
  double n = 1;
  if (t->rank < 0) return 0;
  for (int32_t i = 0; i < t->rank; i++) n *= t->dims[i] > 0 ? (double)t->dims[i] : 1;
  return n;
}

const mi_tensor_t *mi__node_tensor(const mi_graph_t *g, const mi_node_t *n, int out, int32_t i) {
  int32_t c = out ? n->output_count : n->input_count;
  const int32_t *ix = out ? n->outputs : n->inputs;
  return i < c && ix[i] >= 0 ? &g->tensors[ix[i]] : NULL;
}

/* The integer forms count as their float op (QGemm as Gemm, QLinearAveragePool as AveragePool):
 * one multiply-add is two operations whatever the width. QLinearConv's weight is its fourth input
 * (x, x_scale, x_zero_point, w, ...). */
double mi__node_flops(const mi_graph_t *g, const mi_node_t *n) {
  const char *op = n->op_type;
  int qconv = !strcmp(op, "QLinearConv");
  int conv = qconv || !strcmp(op, "Conv") || !strcmp(op, "ConvInteger");
  int matmul = !strcmp(op, "MatMul") || !strcmp(op, "MatMulInteger") || !strcmp(op, "QLinearMatMul");
  const mi_tensor_t *x = mi__node_tensor(g, n, 0, 0), *w = mi__node_tensor(g, n, 0, qconv ? 3 : 1);
  const mi_tensor_t *y = mi__node_tensor(g, n, 1, 0);
  double out = y ? mi__tensor_numel_est(y) : 0;
  if (conv && w && w->rank >= 3) {
    double k = 1;
    for (int32_t i = 1; i < w->rank; i++) k *= (double)w->dims[i]; /* Cin/group * kh * kw */
    return 2.0 * out * k;
  }
  int gemm = !strcmp(op, "Gemm") || !strcmp(op, "QGemm");
  if ((matmul || gemm) && x && x->rank >= 1) {
    double k = (double)x->dims[x->rank - 1];
    if (gemm && mi_node_attr_int(n, "transA", 0) && x->rank == 2)
      k = (double)x->dims[0];
    return 2.0 * out * k;
  }
  if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") || !strcmp(op, "QLinearAveragePool")) {
    const mi_attr_t *ks = mi_node_attr(n, "kernel_shape");
    double k = 1;
    for (int32_t i = 0; ks && i < ks->count; i++) k *= (double)ks->ints[i];
    return out * k;
  }
  if (!strcmp(op, "GlobalAveragePool") && x) return mi__tensor_numel_est(x);
  return out;
}
