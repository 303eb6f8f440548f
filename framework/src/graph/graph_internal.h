/* graph_internal.h - what the graph module's own files share: the IR plumbing of graph/graph.h
 * and the whole public API. */
#ifndef METAINFER_GRAPH_INTERNAL_H
#define METAINFER_GRAPH_INTERNAL_H

#include "graph/graph.h"
#include "metainfer/mi_core.h"

#endif /* METAINFER_GRAPH_INTERNAL_H */
