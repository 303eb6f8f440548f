/* toposort.c - stable topological sort of a graph's nodes (Kahn's algorithm, lowest index
 * first, so an already sorted graph keeps its order), producer bookkeeping and who reads a
 * tensor. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

/* A binary min-heap of node indices: always emitting the lowest ready index is what makes
 * the sort stable. */
static void heap_push(int32_t *h, int32_t *n, int32_t v) {
  int32_t i = (*n)++;
  h[i] = v;
  while (i > 0 && h[(i - 1) / 2] > h[i]) {
    int32_t p = (i - 1) / 2, tmp = h[p];
    h[p] = h[i];
    h[i] = tmp;
    i = p;
  }
}

static int32_t heap_pop(int32_t *h, int32_t *n) {
  int32_t top = h[0];
  h[0] = h[--(*n)];
  int32_t i = 0;
  for (;;) {
    int32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && h[l] < h[m]) m = l;
    if (r < *n && h[r] < h[m]) m = r;
    if (m == i) break;
    int32_t tmp = h[m];
    h[m] = h[i];
    h[i] = tmp;
    i = m;
  }
  return top;
}

static int is_graph_input(const mi_graph_t *g, int32_t t) {
  for (int32_t i = 0; i < g->input_count; i++)
    if (g->inputs[i] == t) return 1;
  for (int32_t i = 0; i < g->capture_count; i++) /* bound from the enclosing graph */
    if (g->captures[i] == t) return 1;
  return 0;
}

MI_API int32_t mi_graph_toposort(mi_graph_t *g, mi_error_t *err) {
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "toposort: graph is NULL");
  int32_t rc = MI_OK, nn = g->node_count, nt = g->tensor_count;
  int32_t *prod = malloc((size_t)(nt ? nt : 1) * sizeof *prod);
  int32_t *indeg = calloc((size_t)(nn ? nn : 1), sizeof *indeg);
  int32_t *start = calloc((size_t)nn + 1, sizeof *start);
  int32_t *edges = NULL, *fill = NULL, *heap = NULL, *order = NULL;
  mi_node_t *sorted = NULL;
  if (!prod || !indeg || !start) goto oom;
  for (int32_t t = 0; t < nt; t++) prod[t] = -1;
  for (int32_t i = 0; i < nn; i++) {
    const mi_node_t *n = &g->nodes[i];
    for (int32_t k = 0; k < n->output_count; k++) {
      int32_t t = n->outputs[k];
      if (t < 0 || t >= nt) {
        rc = mi_errorf(err, MI_ERR_PARSE, "node '%s' (%s): output %d is not a tensor", n->name,
                       n->op_type, (int)k);
        goto done;
      }
      if (prod[t] >= 0) {
        rc = mi_errorf(err, MI_ERR_PARSE, "tensor '%s' is produced by both node '%s' and node '%s'",
                       g->tensors[t].name, g->nodes[prod[t]].name, n->name);
        goto done;
      }
      prod[t] = i;
    }
  }
  /* Edges producer -> consumer in CSR form, one per input occurrence. */
  size_t edge_count = 0;
  int in_order = 1; /* every producer before its readers already */
  for (int32_t i = 0; i < nn; i++) {
    const mi_node_t *n = &g->nodes[i];
    for (int32_t k = 0; k < n->input_count; k++) {
      int32_t t = n->inputs[k];
      if (t < 0) continue;
      if (t >= nt) {
        rc = mi_errorf(err, MI_ERR_PARSE, "node '%s' (%s): input %d is not a tensor", n->name,
                       n->op_type, (int)k);
        goto done;
      }
      if (prod[t] < 0) {
        if (!g->tensors[t].data && !is_graph_input(g, t)) {
          rc = mi_errorf(err, MI_ERR_PARSE,
                         "node '%s' (%s): input '%s' is never defined (no producer, not a graph "
                         "input, not an initializer)",
                         n->name, n->op_type, g->tensors[t].name);
          goto done;
        }
        continue;
      }
      indeg[i]++;
      start[prod[t] + 1]++;
      edge_count++;
      in_order &= prod[t] < i;
    }
  }
  if (in_order) {
    /* The order the sort below would give (the lowest ready index first keeps a sorted graph
     * as it is): a graph sorted again after a rewrite, or before each pass that asks for it
     * (shape inference, folding), skips the sort. */
    for (int32_t t = 0; t < nt; t++) g->tensors[t].producer = prod[t];
    goto done;
  }
  for (int32_t i = 0; i < nn; i++) start[i + 1] += start[i];
  edges = malloc((edge_count ? edge_count : 1) * sizeof *edges);
  fill = malloc((size_t)(nn ? nn : 1) * sizeof *fill);
  heap = malloc((size_t)(nn ? nn : 1) * sizeof *heap);
  order = malloc((size_t)(nn ? nn : 1) * sizeof *order);
  if (!edges || !fill || !heap || !order) goto oom;
  memcpy(fill, start, (size_t)nn * sizeof *fill);
  for (int32_t i = 0; i < nn; i++) {
    const mi_node_t *n = &g->nodes[i];
    for (int32_t k = 0; k < n->input_count; k++) {
      int32_t t = n->inputs[k];
      if (t >= 0 && prod[t] >= 0) edges[fill[prod[t]]++] = i;
    }
  }
  int32_t hn = 0, done_count = 0;
  for (int32_t i = 0; i < nn; i++)
    if (indeg[i] == 0) heap_push(heap, &hn, i);
  while (hn > 0) {
    int32_t i = heap_pop(heap, &hn);
    order[done_count++] = i;
    for (int32_t e = start[i]; e < start[i + 1]; e++)
      if (--indeg[edges[e]] == 0) heap_push(heap, &hn, edges[e]);
  }
  if (done_count < nn) {
    /* Any node left has an input whose producer is also left: that tensor is on a cycle. */
    for (int32_t i = 0; i < nn; i++) {
      if (indeg[i] == 0) continue;
      const mi_node_t *n = &g->nodes[i];
      for (int32_t k = 0; k < n->input_count; k++) {
        int32_t t = n->inputs[k];
        if (t >= 0 && prod[t] >= 0 && indeg[prod[t]] > 0) {
          rc = mi_errorf(err, MI_ERR_PARSE,
                         "graph '%s' has a cycle: tensor '%s' (produced by node '%s') feeds back "
                         "into node '%s'",
                         g->name, g->tensors[t].name, g->nodes[prod[t]].name, n->name);
          goto done;
        }
      }
    }
    rc = mi_errorf(err, MI_ERR_PARSE, "graph '%s' has a cycle", g->name);
    goto done;
  }
  if (nn) {
    if (!(sorted = malloc((size_t)(uint32_t)nn * sizeof *sorted))) goto oom;
    for (int32_t k = 0; k < nn; k++) {
      sorted[k] = g->nodes[order[k]];
      fill[order[k]] = k; /* old index -> new index */
    }
    memcpy(g->nodes, sorted, (size_t)nn * sizeof *sorted);
  }
  for (int32_t t = 0; t < nt; t++) g->tensors[t].producer = prod[t] >= 0 ? fill[prod[t]] : -1;
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "toposort: out of memory");
done:
  free(prod);
  free(indeg);
  free(start);
  free(edges);
  free(fill);
  free(heap);
  free(order);
  free(sorted);
  return rc;
}

int mi__graph_is_op(const mi_graph_t *g, int32_t n, const char *op) {
  /* (the first byte first: the planner's matchers ask this of most nodes, several times) */
  return n >= 0 && n < g->node_count && g->nodes[n].op_type[0] == op[0] && strcmp(g->nodes[n].op_type, op) == 0 &&
         !(g->nodes[n].domain && g->nodes[n].domain[0]);
}

int mi__graph_is_output(const mi_graph_t *g, int32_t t) {
  for (int32_t i = 0; i < g->output_count; i++)
    if (g->outputs[i] == t) return 1;
  return 0;
}

int32_t mi__graph_producer(const mi_graph_t *g, int32_t t) {
  int32_t h;
  if (t < 0) return -1;
  /* The tensor's producer field, when that node does write it (a graph is single-assignment;
   * a rewrite may leave the field stale, hence the check and the scan). Matchers ask for
   * producers node by node: a scan per question was quadratic in the graph's size. */
  h = t < g->tensor_count ? g->tensors[t].producer : -1;
  if (h >= 0 && h < g->node_count)
    for (int32_t o = 0; o < g->nodes[h].output_count; o++)
      if (g->nodes[h].outputs[o] == t) return h;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t o = 0; o < g->nodes[i].output_count; o++)
      if (g->nodes[i].outputs[o] == t) return i;
  return -1;
}

int32_t *mi__graph_sole_readers(const mi_graph_t *g) {
  size_t n = (size_t)g->tensor_count + 1;
  int32_t *r = malloc(n * sizeof *r);
  if (!r) return NULL;
  for (size_t t = 0; t < n; t++) r[t] = -1;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
      int32_t t = g->nodes[i].inputs[j];
      if (t >= 0 && t < g->tensor_count) r[t] = r[t] == -1 || r[t] == i ? i : -2; /* -2: several */
    }
  for (int32_t o = 0; o < g->output_count; o++)
    if (g->outputs[o] >= 0 && g->outputs[o] < g->tensor_count) r[g->outputs[o]] = -1;
  for (size_t t = 0; t < n; t++)
    if (r[t] == -2) r[t] = -1;
  return r;
}

int32_t mi__graph_sole_reader(const mi_graph_t *g, int32_t t) {
  int32_t found = -1;
  if (mi__graph_is_output(g, t)) return -1;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] == t) {
        if (found >= 0 && found != i) return -1;
        found = i;
      }
  return found;
}
