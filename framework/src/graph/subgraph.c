/* subgraph.c - building nodes with subgraphs (If branches, Loop bodies) by hand: captures and
 * the implicit inputs that make the enclosing graph see what a subgraph reads. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

MI_API int32_t mi_graph_add_capture(mi_graph_t *sub, int32_t t) {
  if (!sub || t < 0 || t >= sub->tensor_count) return MI_ERR_INVALID_ARGUMENT;
  int32_t *p = realloc(sub->captures, (size_t)(sub->capture_count + 1) * sizeof *p);
  if (!p) return MI_ERR_OUT_OF_MEMORY;
  sub->captures = p;
  p[sub->capture_count++] = t;
  return MI_OK;
}

static int32_t add_implicit(mi_node_t *n, int32_t t) {
  for (int32_t k = n->input_count - n->implicit_inputs; k < n->input_count; k++)
    if (n->inputs[k] == t) return MI_OK;
  int32_t *p = realloc(n->inputs, (size_t)(n->input_count + 1) * sizeof *p);
  if (!p) return MI_ERR_OUT_OF_MEMORY;
  n->inputs = p;
  p[n->input_count++] = t;
  n->implicit_inputs++;
  return MI_OK;
}

MI_API int32_t mi_node_add_subgraph(mi_graph_t *g, int32_t node, const char *name, mi_graph_t *sub,
                                    mi_error_t *err) {
  int32_t rc = MI_OK;
  if (!g || !name || !sub || node < 0 || node >= g->node_count) {
    mi_graph_destroy(sub);
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_node_add_subgraph: bad arguments");
  }
  mi_node_t *n = &g->nodes[node];
  for (int32_t i = 0; i < sub->capture_count; i++)
    if (mi_graph_find_tensor(g, sub->tensors[sub->captures[i]].name) < 0) {
      rc = mi_errorf(err, MI_ERR_PARSE,
                     "node '%s' (%s): subgraph '%s' captures '%s', which "
                     "graph '%s' does not have",
                     n->name, n->op_type, name,
                     sub->tensors[sub->captures[i]].name, g->name);
      mi_graph_destroy(sub);
      return rc;
    }
  mi_graph_t **gs = realloc(n->subgraphs, (size_t)(n->subgraph_count + 1) * sizeof *gs);
  if (gs) n->subgraphs = gs;
  char **ns = realloc(n->subgraph_names, (size_t)(n->subgraph_count + 1) * sizeof *ns);
  if (ns) n->subgraph_names = ns;
  char *nm = mi__strdup(name);
  if (!gs || !ns || !nm) {
    free(nm);
    mi_graph_destroy(sub);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_node_add_subgraph: out of memory");
  }
  n->subgraphs[n->subgraph_count] = sub;
  n->subgraph_names[n->subgraph_count++] = nm;
  for (int32_t i = 0; i < sub->capture_count && rc == MI_OK; i++)
    rc = add_implicit(n, mi_graph_find_tensor(g, sub->tensors[sub->captures[i]].name));
  if (rc != MI_OK) return mi_errorf(err, rc, "mi_node_add_subgraph: out of memory");
  return MI_OK;
}
