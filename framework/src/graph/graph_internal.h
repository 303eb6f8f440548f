/* graph_internal.h - what the graph module's own files share: the IR plumbing of graph/graph.h
 * and the whole public API. */
#ifndef METAINFER_GRAPH_INTERNAL_H
#define METAINFER_GRAPH_INTERNAL_H

#include "graph/graph.h"
#include "metainfer/mi_core.h"

/* Writes a printf-style reason into why (cap bytes) and returns -1: the checks that explain a
 * refusal to their caller (nbits.c, dqlstm.c). */
int mi__why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Makes node m a standard-domain op_type (taking op, a heap string) with no attributes: the
 * lowering passes that turn a com.microsoft node into a standard one in place (nbits.c,
 * ms_fuse_lower.c, attn_build.c). The caller has made m own its strings first. */
void mi__node_become(mi_node_t *m, char *op);

/* Drops the tensors no node reads any more after a lowering pass (removes no node): the loader's
 * lowerings (onnx_load.c, attn_lower.c). */
int32_t mi__graph_drop_unread(mi_graph_t *g, mi_error_t *err);

#endif /* METAINFER_GRAPH_INTERNAL_H */
