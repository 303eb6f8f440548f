/* dqlstm.h - com.microsoft DynamicQuantizeLSTM (what ONNX Runtime's dynamic quantization writes for
 * an LSTM): the checks of its 8-bit weights, for shape inference and the reference. */
#ifndef METAINFER_GRAPH_DQLSTM_H
#define METAINFER_GRAPH_DQLSTM_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "metainfer/mi_graph.h"

/* One input as the checks see it: a graph tensor or a reference array (absent: present 0). */
typedef mi__in_view_t mi__dql_in_t;

/* Checks W (INT8/UINT8 [D, I, 4H]), R ([D, H, 4H], W's dtype), their scales (FLOAT32, D or D * 4H
 * values) and zero points (the weights' dtype, as many as the scales): ins[] holds the node's 12
 * inputs. On error one line in why and -1. */
int mi__dqlstm_check(const mi_node_t *node, const mi__dql_in_t *ins, char *why, size_t cap);

#endif /* METAINFER_GRAPH_DQLSTM_H */
