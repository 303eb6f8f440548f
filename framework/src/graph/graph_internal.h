/* graph_internal.h - what the graph module's own files share: the IR plumbing of graph/graph.h
 * and the whole public API. */
#ifndef METAINFER_GRAPH_INTERNAL_H
#define METAINFER_GRAPH_INTERNAL_H

#include "graph/graph.h"
#include "metainfer/mi_core.h"

/** 1 for an op of the default domain ("" or "ai.onnx") or one of the com.microsoft ops the
 * framework runs (op_domain.c: the quantized ops ONNX Runtime's quantizer writes); else 0. */
int mi__graph_op_known(const char *domain, const char *op_type);

#endif /* METAINFER_GRAPH_INTERNAL_H */
