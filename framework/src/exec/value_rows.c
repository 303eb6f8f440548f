/* value_rows.c - room for outputs whose row count is data (NonMaxSuppression's selected boxes)
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

void mi__value_rows_widen(mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int64_t cap;
    if (strcmp(n->op_type, "NonMaxSuppression") || n->output_count < 1 || n->outputs[0] < 0) continue;
    mi_tensor_t *t = &g->tensors[n->outputs[0]];
    /* A node reading it was prepared for the probe's rows: those stay, and a run with other
     * rows is refused there (session_run.c), as a host step's is. */
    if (t->rank != 2 || read_by_node(g, n->outputs[0]) || (cap = nms_rows(g, n)) < 0) continue;
    t->dims[0] = cap;
  }
}
