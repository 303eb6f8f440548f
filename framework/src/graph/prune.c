/* prune.c - removes nodes from a graph and then every tensor nobody refers to any more, so
 * passes that replace subgraphs by constants leave no dead initializers behind. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

/* Marks the tensors still referenced by a kept node, a graph input or a graph output. */
static void mark_used(const mi_graph_t *g, uint8_t *used) {
  for (int32_t i = 0; i < g->input_count; i++) used[g->inputs[i]] = 1;
  for (int32_t i = 0; i < g->output_count; i++) used[g->outputs[i]] = 1;
  for (int32_t i = 0; i < g->capture_count; i++) used[g->captures[i]] = 1;
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *nd = &g->nodes[n];
    for (int32_t k = 0; k < nd->input_count; k++)
      if (nd->inputs[k] >= 0) used[nd->inputs[k]] = 1;
    for (int32_t k = 0; k < nd->output_count; k++)
      if (nd->outputs[k] >= 0) used[nd->outputs[k]] = 1;
  }
}

static void remap(int32_t *idx, int32_t count, const int32_t *map) {
  for (int32_t i = 0; i < count; i++)
    if (idx[i] >= 0) idx[i] = map[idx[i]];
}

MI_API int32_t mi_graph_remove_nodes(mi_graph_t *g, const uint8_t *drop, mi_error_t *err) {
  uint8_t *used = NULL;
  int32_t *map = NULL, kept = 0;
  if (!g || (!drop && g->node_count))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_graph_remove_nodes: NULL argument");
  used = calloc((size_t)g->tensor_count + 1, 1);
  map = malloc(((size_t)g->tensor_count + 1) * sizeof *map);
  if (!used || !map) {
    free(used);
    free(map);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_graph_remove_nodes: out of memory");
  }
  for (int32_t n = 0; n < g->node_count; n++) {
    if (drop[n]) {
      mi__node_release(&g->nodes[n]);
      continue;
    }
    if (kept != n) g->nodes[kept] = g->nodes[n];
    kept++;
  }
  g->node_count = kept;

  mark_used(g, used);
  kept = 0;
  for (int32_t t = 0; t < g->tensor_count; t++) {
    if (!used[t]) {
      mi__tensor_release(&g->tensors[t]);
      map[t] = -1;
      continue;
    }
    if (kept != t) g->tensors[kept] = g->tensors[t];
    map[t] = kept++;
  }
  g->tensor_count = kept;
  remap(g->inputs, g->input_count, map);
  remap(g->outputs, g->output_count, map);
  remap(g->captures, g->capture_count, map);
  for (int32_t t = 0; t < g->tensor_count; t++) g->tensors[t].producer = -1;
  for (int32_t n = 0; n < g->node_count; n++) {
    mi_node_t *nd = &g->nodes[n];
    remap(nd->inputs, nd->input_count, map);
    remap(nd->outputs, nd->output_count, map);
    for (int32_t k = 0; k < nd->output_count; k++)
      if (nd->outputs[k] >= 0) g->tensors[nd->outputs[k]].producer = n;
  }
  free(used);
  free(map);
  return MI_OK;
}

int32_t mi__graph_drop_unread(mi_graph_t *g, mi_error_t *err) {
  uint8_t *keep = calloc((size_t)g->node_count + 1, 1); /* + 1: no zero-size allocation */
  int32_t rc = keep ? mi_graph_remove_nodes(g, keep, err) : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  free(keep);
  return rc;
}
