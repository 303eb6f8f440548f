/* feature.h - what the feature module offers other modules beyond the public API: the operation
 * count of one node, which the model features sum and the per-layer table divides by time. */
#ifndef MI_FEATURE_FEATURE_H
#define MI_FEATURE_FEATURE_H

#include "metainfer/mi_graph.h"

/* Floating-point operations of one node (multiply-add = 2; one per output value for the ops
 * that are not Conv, Gemm, MatMul or a pool), from its inferred shapes (model_features.c). */
double mi__node_flops(const mi_graph_t *g, const mi_node_t *n);

#endif
