/* dqlstm.h - com.microsoft DynamicQuantizeLSTM (what ONNX Runtime's dynamic quantization writes for
 * an LSTM): its 8-bit weights dequantized into the float LSTM's layout, for shape inference, the
 * reference and the loader's lowering to LSTM. */
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
 * inputs. With out_w / out_r not NULL and the inputs constant, also writes the float LSTM's W
 * [D, 4H, I] and R [D, 4H, H] (malloc'd; each (q - z) * s in double, rounded once). On error one
 * line in why and -1 (-2: out of memory). */
int mi__dqlstm_weights(const mi_node_t *node, const mi__dql_in_t *ins, float **out_w, float **out_r,
                       int64_t *dims_w, int64_t *dims_r, char *why, size_t cap);

/** 1 when the graph has a DynamicQuantizeLSTM node. */
int mi__graph_has_dqlstm(const mi_graph_t *g);
/** Rewrites each DynamicQuantizeLSTM with constant weights into an LSTM on the dequantized float
 * weights (same name, attributes, other inputs and outputs). MI_OK or an error naming the node. */
int32_t mi__graph_lower_dqlstm(mi_graph_t *g, mi_error_t *err);

#endif /* METAINFER_GRAPH_DQLSTM_H */
