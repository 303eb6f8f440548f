/* pad_fold.c - a zero constant Pad of the spatial dims whose only reader is a Conv becomes the
 * Conv's own padding (what ONNX Runtime's default graph optimisation does too). TensorFlow
 * exports write SAME padding of stride-2 convs as an explicit Pad (M-LSD: three of them, 4% of
 * its run copying planes one pixel larger); the conv pads for free inside its kernel. */
#include <string.h>

#include "graph/graph.h"

/* The 2 * rank Pad amounts of node n (ONNX order: every begin, then every end), from its pads
 * input (opset >= 11) or attribute. 0 when they are not constant int64 values. */
static int pad_amounts(const mi_graph_t *g, const mi_node_t *n, int32_t rank, int64_t *pads) {
  if (n->input_count >= 2 && n->inputs[1] >= 0) {
    const mi_tensor_t *p = &g->tensors[n->inputs[1]];
    if (!p->data || p->dtype != MI_DTYPE_INT64 || p->nbytes != (size_t)(2 * rank) * sizeof(int64_t))
      return 0;
    memcpy(pads, p->data, p->nbytes);
    return 1;
  }
  const mi_attr_t *a = mi_node_attr(n, "pads");
  if (!a || a->type != MI_ATTR_INTS || a->count != 2 * rank) return 0;
  for (int32_t i = 0; i < 2 * rank; i++) pads[i] = a->ints[i];
  return 1;
}

/* 1 when the pad value is zero: no value input (or attribute), or a constant scalar 0. */
static int zero_value(const mi_graph_t *g, const mi_node_t *n) {
  if (n->input_count >= 3 && n->inputs[2] >= 0) {
    const mi_tensor_t *v = &g->tensors[n->inputs[2]];
    if (!v->data || v->dtype != MI_DTYPE_FLOAT32 || v->nbytes != sizeof(float)) return 0;
    return *(const float *)v->data == 0.0f;
  }
  return mi_node_attr_float(n, "value", 0.0f) == 0.0f;
}

/* The Conv that Pad node p can fold into, or -1; *amounts gets the Pad's amounts. */
static int32_t fold_target(const mi_graph_t *g, int32_t p, int64_t *amounts) {
  const mi_node_t *n = &g->nodes[p], *c;
  int32_t out, conv, rank;
  if (strcmp(n->op_type, "Pad") || (n->domain && n->domain[0]) || n->input_count < 1 ||
      n->inputs[0] < 0 || n->output_count != 1 || n->outputs[0] < 0)
    return -1;
  if (n->input_count >= 4 && n->inputs[3] >= 0) return -1; /* axes (opset 18): not folded */
  if (strcmp(mi_node_attr_string(n, "mode", "constant"), "constant") || !zero_value(g, n)) return -1;
  rank = g->tensors[n->inputs[0]].rank;
  if (rank < 3 || rank > 5 || !pad_amounts(g, n, rank, amounts)) return -1;
  /* batch and channels unpadded, no cropping */
  if (amounts[0] || amounts[1] || amounts[rank] || amounts[rank + 1]) return -1;
  for (int32_t i = 2; i < rank; i++)
    if (amounts[i] < 0 || amounts[rank + i] < 0) return -1;
  out = n->outputs[0];
  conv = mi__graph_sole_reader(g, out);
  if (conv < 0) return -1;
  c = &g->nodes[conv];
  if (strcmp(c->op_type, "Conv") || (c->domain && c->domain[0]) || c->input_count < 2 ||
      c->inputs[0] != out || c->inputs[1] == out)
    return -1;
  if (strcmp(mi_node_attr_string(c, "auto_pad", "NOTSET"), "NOTSET")) return -1;
  const mi_attr_t *cp = mi_node_attr(c, "pads"); /* absent, or 2 per spatial dim */
  if (cp && (cp->type != MI_ATTR_INTS || cp->count != 2 * (rank - 2))) return -1;
  return conv;
}

int mi__graph_pad_foldable(const mi_graph_t *g) {
  int64_t amounts[10];
  for (int32_t i = 0; g && i < g->node_count; i++)
    if (fold_target(g, i, amounts) >= 0) return 1;
  return 0;
}

int32_t mi__graph_fold_pads(mi_graph_t *g) {
  int32_t folded = 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    int64_t amounts[10], pads[6] = {0};
    int32_t conv = fold_target(g, i, amounts), rank, sp;
    const mi_attr_t *cp;
    if (conv < 0) continue;
    rank = g->tensors[g->nodes[i].inputs[0]].rank;
    sp = rank - 2;
    cp = mi_node_attr(&g->nodes[conv], "pads");
    for (int32_t k = 0; k < sp; k++) {
      pads[k] = (cp ? cp->ints[k] : 0) + amounts[2 + k];
      pads[sp + k] = (cp ? cp->ints[sp + k] : 0) + amounts[rank + 2 + k];
    }
    if (mi_node_set_ints(g, conv, "pads", 2 * sp, pads) != MI_OK) return -MI_ERR_OUT_OF_MEMORY;
    /* The Pad keeps its output, read by nobody now: the session skips such nodes. */
    g->nodes[conv].inputs[0] = g->nodes[i].inputs[0];
    folded++;
  }
  return folded;
}
