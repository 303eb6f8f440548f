/* xf_prune_fc.c - structured pruning of fully connected layers: the output features of a Gemm or
 * MatMul (constant 2-D weight) that another Gemm/MatMul reads, through bias Adds and
 * elementwise activations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "transform/xf_internal.h"

#define FC_MAX_EDITS 32

/* One constant to slice: input `slot` of `node` along `axis`. */
typedef struct fc_edit {
  int32_t node, slot, axis;
} fc_edit_t;

typedef struct fc_plan {
  fc_edit_t e[FC_MAX_EDITS];
  int32_t n;
} fc_plan_t;

static int push(fc_plan_t *p, int32_t node, int32_t slot, int32_t axis) {
  if (p->n == FC_MAX_EDITS) return 0;
  p->e[p->n++] = (fc_edit_t){node, slot, axis};
  return 1;
}

/* The axis of the 2-D weight of FC node x that holds output features (out = 1) or input
 * features (out = 0); -1 when x is not a plain 2-D Gemm/MatMul. */
static int32_t fc_axis(const mi_graph_t *g, const mi_node_t *x, int out) {
  const mi_tensor_t *w = &g->tensors[x->inputs[1]];
  if (w->rank != 2) return -1;
  if (strcmp(x->op_type, "MatMul") == 0) return out ? 1 : 0;
  if (strcmp(x->op_type, "Gemm") != 0 || mi_node_attr_int(x, "transA", 0)) return -1;
  int tb = mi_node_attr_int(x, "transB", 0) != 0;
  return out ? (tb ? 0 : 1) : (tb ? 1 : 0);
}

/* A constant of `n` features along its last axis (a bias [N] or [1, N]); its axis or -1. */
static int32_t bias_axis(const mi_graph_t *g, int32_t t, int64_t n) {
  const mi_tensor_t *b = &g->tensors[t];
  if (!b->data || b->dtype != MI_DTYPE_FLOAT32) return -1;
  if (b->rank == 1 && b->dims[0] == n) return 0;
  if (b->rank == 2 && b->dims[0] == 1 && b->dims[1] == n) return 1;
  return -1;
}

/* Plans the edits for dropping features of activation t ([rows, n]); 0 when a reader cannot
 * follow (a residual Add, a reshape, a graph output, ...). */
static int walk(const mi_graph_t *g, int32_t t, int64_t n, fc_plan_t *p, int depth) {
  if (depth > 16 || mi__graph_is_output(g, t)) return 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *x = &g->nodes[i];
    for (int32_t k = 0; k < x->input_count; k++) {
      if (x->inputs[k] != t) continue;
      if (k == 0 && mi__xf_is_weighted(g, i) && strcmp(x->op_type, "Conv") != 0) {
        int32_t ax = fc_axis(g, x, 0);
        if (ax < 0 || g->tensors[x->inputs[1]].dims[ax] != n || !push(p, i, 1, ax)) return 0;
      } else if (k == 0 && x->output_count == 1 && mi__xf_is_act(x) &&
                 strcmp(x->op_type, "Clip") != 0) {
        if (!walk(g, x->outputs[0], n, p, depth + 1)) return 0;
      } else if (strcmp(x->op_type, "Add") == 0 && x->input_count == 2) {
        int32_t other = x->inputs[1 - k], ax = bias_axis(g, other, n);
        if (ax < 0 || !push(p, i, 1 - k, ax) || !walk(g, x->outputs[0], n, p, depth + 1)) return 0;
      } else {
        return 0;
      }
    }
  }
  return 1;
}

/* Replaces input `slot` of `node` by a copy keeping the features with keep[] set. */
static int32_t slice_input(mi_graph_t *g, int32_t node, int32_t slot, int32_t axis,
                           const uint8_t *keep, int64_t n) {
  int32_t t = g->nodes[node].inputs[slot];
  const mi_tensor_t *x = &g->tensors[t];
  int64_t dims[MI_MAX_RANK], outer = 1, inner = 1, kept = 0, at = 0;
  memcpy(dims, x->dims, sizeof dims);
  if (dims[axis] != n) return MI_ERR_INTERNAL;
  for (int32_t d = 0; d < axis; d++) outer *= dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) inner *= dims[d];
  for (int64_t c = 0; c < n; c++) kept += keep[c] != 0;
  float *nw = malloc((size_t)(outer * kept * inner + 1) * sizeof *nw);
  const float *w = x->data;
  if (!nw) return MI_ERR_OUT_OF_MEMORY;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < n; c++)
      if (keep[c])
        for (int64_t i = 0; i < inner; i++) nw[at++] = w[(o * n + c) * inner + i];
  dims[axis] = kept;
  int32_t nt = mi__xf_add_const(g, g->nodes[node].name, ".pruned", MI_DTYPE_FLOAT32, x->rank, dims,
                                nw, (size_t)at * sizeof *nw);
  free(nw);
  if (nt < 0) return MI_ERR_OUT_OF_MEMORY;
  g->nodes[node].inputs[slot] = nt;
  return MI_OK;
}

int32_t mi__xf_prune_fc(mi_graph_t *g, int32_t node, double ratio, int *done, mi_xf_stats_t *st,
                        mi_error_t *err) {
  fc_plan_t p;
  const mi_node_t *x = &g->nodes[node];
  int32_t ax = fc_axis(g, x, 1), rc = MI_OK;
  uint8_t *keep = NULL;
  double *norm = NULL;
  *done = 0;
  memset(&p, 0, sizeof p);
  if (ax < 0 || x->output_count != 1) goto skip;
  const mi_tensor_t *w = &g->tensors[x->inputs[1]];
  int64_t n = w->dims[ax], k = w->dims[1 - ax], drop = (int64_t)floor(ratio * (double)n);
  if (drop >= n) drop = n - 1;
  if (drop <= 0) goto skip;
  if (!push(&p, node, 1, ax)) goto skip;
  if (x->input_count > 2 && x->inputs[2] >= 0) {
    int32_t bx = bias_axis(g, x->inputs[2], n);
    if (bx < 0 && mi__xf_numel(g, x->inputs[2]) != 1) goto skip; /* a full [M, N] C */
    if (bx >= 0 && !push(&p, node, 2, bx)) goto skip;
  }
  if (!walk(g, x->outputs[0], n, &p, 0) || p.n < 2) goto skip;
  keep = malloc((size_t)n);
  norm = calloc((size_t)n, sizeof *norm);
  if (!keep || !norm) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "prune: out of memory");
    goto done;
  }
  const float *wv = w->data;
  for (int64_t f = 0; f < n; f++) {
    keep[f] = 1;
    for (int64_t i = 0; i < k; i++) norm[f] += fabs((double)(ax == 0 ? wv[f * k + i] : wv[i * n + f]));
  }
  mi__xf_drop_smallest(norm, n, drop, keep);
  for (int32_t i = 0; i < p.n && rc == MI_OK; i++)
    rc = slice_input(g, p.e[i].node, p.e[i].slot, p.e[i].axis, keep, n);
  rc = mi__xf_prune_commit(g, node, rc, drop, done, st, err);
  goto done;
skip:
  if (st && ratio > 0.0) st->prune_skipped++;
done:
  free(keep);
  free(norm);
  return rc;
}
