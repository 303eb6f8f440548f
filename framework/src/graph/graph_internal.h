/* graph_internal.h - what the graph module's own files share: the IR plumbing of graph/graph.h
 * and the whole public API. */
#ifndef METAINFER_GRAPH_INTERNAL_H
#define METAINFER_GRAPH_INTERNAL_H

#include "graph/graph.h"
#include "metainfer/mi_core.h"

/* Writes a printf-style reason into why (cap bytes) and returns -1: the checks that explain a
 * refusal to their caller (nbits.c, dqlstm.c). */
int mi__why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* METAINFER_GRAPH_INTERNAL_H */
