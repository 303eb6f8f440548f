/* xf_layout.c - layout assignment: NHWC (or blocked NCHWc) regions with the fewest conversions.
 *
 * Shapes in the IR are logical (ONNX order) and mi_tensor_t.layout says how a tensor is
 * stored, so ops keep their ONNX meaning whatever the storage. A conversion at a region
 * boundary is therefore logically the identity: it is an Identity node whose input and output
 * tensors differ only in `layout` (a physical transpose for whoever executes it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "transform/xf_internal.h"

/* Ops whose meaning does not depend on how their 4-D activations are stored. */
static int flexible(const mi_node_t *n) {
  static const char *const ops[] = {
      "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      "BatchNormalization", "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Concat",
      "Resize", "Upsample", "QuantizeLinear", "DequantizeLinear", "Identity", "Dropout", "Pow",
      "Sqrt", "Abs", "Neg", "Exp", "Log", "Reciprocal", "Erf"};
  if (mi__xf_is_act(n)) return 1;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(n->op_type, ops[i]) == 0) return 1;
  return 0;
}

/* Ops that gain from a channels-last layout and so justify converting their region. */
static int prefers(const mi_node_t *n) {
  return strcmp(n->op_type, "Conv") == 0 || strstr(n->op_type, "Pool") != NULL;
}

static int is_act4(const mi_graph_t *g, int32_t t) {
  return t >= 0 && !g->tensors[t].data && g->tensors[t].rank == 4;
}

static int32_t find(int32_t *p, int32_t x) {
  while (p[x] != x) x = p[x] = p[p[x]];
  return x;
}

/* Adds "Identity" from t to a new tensor stored in `layout`; returns the new tensor or -1. */
static int32_t add_convert(mi_graph_t *g, int32_t t, int32_t layout, int32_t block) {
  char name[256];
  int32_t t2 = mi__xf_add_value(g, g->tensors[t].name, layout == MI_LAYOUT_NCHW ? ".nchw" : ".nhwc",
                                t);
  if (t2 < 0) return -1;
  g->tensors[t2].layout = layout;
  g->tensors[t2].block = layout == MI_LAYOUT_NCHWC ? block : 0;
  snprintf(name, sizeof name, "layout.%s", g->tensors[t2].name);
  if (mi_graph_add_node(g, "Identity", name, 1, &t, 1, &t2) < 0) return -1;
  return t2;
}

static int32_t swap_names(mi_graph_t *g, int32_t a, int32_t b) {
  char *tmp = g->tensors[a].name;
  int32_t shared = g->tensors[a].name_shared;
  g->tensors[a].name = g->tensors[b].name;
  g->tensors[a].name_shared = g->tensors[b].name_shared;
  g->tensors[b].name = tmp;
  g->tensors[b].name_shared = shared;
  return MI_OK;
}

MI_API int32_t mi_xf_layout(mi_graph_t *g, int32_t layout, int32_t block, mi_xf_stats_t *st,
                            mi_error_t *err) {
  int32_t rc = MI_OK, nn, nt;
  int32_t *parent = NULL, *want = NULL;
  uint8_t *hot = NULL;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "layout: graph is NULL");
  if (layout == MI_LAYOUT_ANY || layout == MI_LAYOUT_NCHW) return MI_OK;
  if (layout != MI_LAYOUT_NHWC && (layout != MI_LAYOUT_NCHWC || block < 2))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "layout: unsupported target layout %d block %d",
                     (int)layout, (int)block);
  nn = g->node_count;
  nt = g->tensor_count;
  parent = malloc((size_t)(nn + 1) * sizeof *parent);
  hot = calloc((size_t)nn + 1, 1);
  want = malloc((size_t)(nt + 1) * sizeof *want);
  if (!parent || !hot || !want) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layout: out of memory");
    goto done;
  }
  /* Regions: flexible nodes joined by the 4-D activations between them. */
  for (int32_t n = 0; n < nn; n++) parent[n] = n;
  for (int32_t n = 0; n < nn; n++) {
    const mi_node_t *x = &g->nodes[n];
    if (!flexible(x)) continue;
    for (int32_t k = 0; k < x->input_count; k++) {
      int32_t t = x->inputs[k], p = t >= 0 ? g->tensors[t].producer : -1;
      if (is_act4(g, t) && p >= 0 && flexible(&g->nodes[p])) parent[find(parent, p)] = find(parent, n);
    }
  }
  for (int32_t n = 0; n < nn; n++)
    if (flexible(&g->nodes[n]) && prefers(&g->nodes[n])) hot[find(parent, n)] = 1;
  /* The layout every 4-D activation is produced in. */
  for (int32_t t = 0; t < nt; t++) {
    int32_t p = g->tensors[t].producer;
    want[t] = is_act4(g, t) && p >= 0 && flexible(&g->nodes[p]) && hot[find(parent, p)] ? layout
                                                                                        : MI_LAYOUT_NCHW;
  }
  for (int32_t t = 0; t < nt && rc == MI_OK; t++) {
    int32_t conv = -1;
    if (!is_act4(g, t)) continue;
    g->tensors[t].layout = want[t];
    g->tensors[t].block = want[t] == MI_LAYOUT_NCHWC ? block : 0;
    if (want[t] != MI_LAYOUT_NCHW && st) st->layout_tensors++;
    /* Readers that want the other layout share one conversion. */
    for (int32_t n = 0; n < nn; n++) {
      /* Re-read g->nodes each time: adding a conversion node may move the array. */
      int32_t need = flexible(&g->nodes[n]) && hot[find(parent, n)] ? layout : MI_LAYOUT_NCHW;
      for (int32_t k = 0; k < g->nodes[n].input_count; k++) {
        if (g->nodes[n].inputs[k] != t || need == want[t]) continue;
        if (conv < 0 && (conv = add_convert(g, t, need, block)) < 0) {
          rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layout: out of memory");
          goto done;
        }
        g->nodes[n].inputs[k] = conv;
      }
    }
    if (want[t] != MI_LAYOUT_NCHW && mi__graph_is_output(g, t)) {
      /* The graph's outputs keep their name and NCHW storage. */
      int32_t t2 = add_convert(g, t, MI_LAYOUT_NCHW, block);
      if (t2 < 0) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layout: out of memory");
        goto done;
      }
      for (int32_t i = 0; i < g->output_count; i++)
        if (g->outputs[i] == t) g->outputs[i] = t2;
      swap_names(g, t, t2);
      if (st) st->layout_converts++;
    }
    if (conv >= 0 && st) st->layout_converts++;
  }
  rc = mi__xf_refresh(g, err);
done:
  free(parent);
  free(hot);
  free(want);
  return rc;
}
