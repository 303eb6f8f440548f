/* value_rows.c - room for outputs whose row count is data (NonMaxSuppression's selected boxes,
 * the slices a runtime condition keeps in Compress)
 * where the device reports the rows it wrote (mi_run_stats_t.has_rows). */
#include <string.h>

#include "exec/exec.h"

/* 1 when a node of g reads tensor t. */
static int read_by_node(const mi_graph_t *g, int32_t t) {
  for (int32_t n = 0; n < g->node_count; n++)
    for (int32_t j = 0; j < g->nodes[n].input_count; j++)
      if (g->nodes[n].inputs[j] == t) return 1;
  return 0;
}

/* The most rows NonMaxSuppression node n can select: batches x classes x boxes, or x the
 * constant max_output_boxes_per_class where that is smaller; -1 when the inputs' shapes are not
 * known. */
static int64_t nms_rows(const mi_graph_t *g, const mi_node_t *n) {
  const mi_tensor_t *bx, *sc, *m;
  if (n->input_count < 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return -1;
  bx = &g->tensors[n->inputs[0]];
  sc = &g->tensors[n->inputs[1]];
  if (bx->rank != 3 || sc->rank != 3 || bx->dims[0] < 0 || bx->dims[1] < 0 || sc->dims[1] < 0) return -1;
  int64_t per = bx->dims[1];
  if (n->input_count < 3 || n->inputs[2] < 0) return 0; /* absent: no boxes */
  m = &g->tensors[n->inputs[2]];
  if (m->data && m->dtype == MI_DTYPE_INT64 && m->nbytes >= sizeof(int64_t)) {
    int64_t v;
    memcpy(&v, m->data, sizeof v);
    if (v < per) per = v < 0 ? 0 : v;
  }
  return bx->dims[0] * sc->dims[1] * per;
}

/* The most slices Compress node n can keep along its output's first dim: the condition's length,
 * where the condition is a runtime value and the kept slices are the first dim (no axis, or
 * axis 0); else -1. */
static int64_t compress_rows(const mi_graph_t *g, const mi_node_t *n) {
  const mi_tensor_t *x, *c;
  const mi_attr_t *a = mi_node_attr(n, "axis");
  if (n->input_count < 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return -1;
  x = &g->tensors[n->inputs[0]];
  c = &g->tensors[n->inputs[1]];
  if (c->data || c->rank != 1 || c->dims[0] < 0) return -1;
  if (a && !(mi_node_attr_int(n, "axis", 0) == 0 || mi_node_attr_int(n, "axis", 0) == -x->rank)) return -1;
  return c->dims[0];
}

void mi__value_rows_widen(mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int nms = !strcmp(n->op_type, "NonMaxSuppression");
    int64_t cap;
    if ((!nms && strcmp(n->op_type, "Compress")) || n->output_count < 1 || n->outputs[0] < 0) continue;
    mi_tensor_t *t = &g->tensors[n->outputs[0]];
    /* A node reading it was prepared for the probe's rows: those stay, and a run with other
     * rows is refused there (session_run.c), as a host step's is. */
    if (t->rank < 1 || read_by_node(g, n->outputs[0]) || (cap = nms ? nms_rows(g, n) : compress_rows(g, n)) < 0)
      continue;
    t->dims[0] = cap;
  }
}
