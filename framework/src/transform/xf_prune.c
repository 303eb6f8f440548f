/* xf_prune.c - structured channel pruning: drop the lowest-L1 filters of a Conv and the matching
 * channels everywhere they flow (BN, activations, pools, depthwise convs, Concat, readers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "transform/xf_internal.h"

#define PRUNE_MAX_ACTIONS 64

enum { ACT_OUT = 0,
       ACT_IN = 1,
       ACT_BN = 2 };

typedef struct prune_action {
  int32_t kind, node;
  int64_t channels; /* length of mask */
  uint8_t *keep;
} prune_action_t;

typedef struct prune_plan {
  prune_action_t a[PRUNE_MAX_ACTIONS];
  int32_t n;
} prune_plan_t;

static int push(prune_plan_t *p, int32_t kind, int32_t node, const uint8_t *keep, int64_t ch) {
  if (p->n == PRUNE_MAX_ACTIONS) return 0;
  uint8_t *m = malloc((size_t)ch);
  if (!m) return 0;
  memcpy(m, keep, (size_t)ch);
  p->a[p->n++] = (prune_action_t){kind, node, ch, m};
  return 1;
}

static int per_channel_passthrough(const mi_node_t *x) {
  return mi__xf_is_act(x) || strcmp(x->op_type, "MaxPool") == 0 ||
         strcmp(x->op_type, "AveragePool") == 0 || strcmp(x->op_type, "GlobalAveragePool") == 0 ||
         strcmp(x->op_type, "GlobalMaxPool") == 0 || strcmp(x->op_type, "Identity") == 0;
}

/* Plans the edits for removing the channels of t (ch of them) where keep[c] == 0. */
static int walk(const mi_graph_t *g, int32_t t, const uint8_t *keep, int64_t ch, prune_plan_t *p,
                int depth) {
  if (depth > 32 || mi__graph_is_output(g, t)) return 0;
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *x = &g->nodes[n];
    for (int32_t k = 0; k < x->input_count; k++) {
      if (x->inputs[k] != t) continue;
      int is_conv = strcmp(x->op_type, "Conv") == 0 && mi__xf_is_weighted(g, n);
      int64_t grp = mi_node_attr_int(x, "group", 1);
      if (k != 0 || x->output_count != 1) return 0;
      if (is_conv && grp == 1) {
        if (!push(p, ACT_IN, n, keep, ch)) return 0;
      } else if (is_conv && grp == ch && g->tensors[x->inputs[1]].dims[0] == ch &&
                 g->tensors[x->inputs[1]].dims[1] == 1) {
        /* Depthwise: it follows its producer's channels. */
        if (!push(p, ACT_OUT, n, keep, ch) || !walk(g, x->outputs[0], keep, ch, p, depth + 1))
          return 0;
      } else if (strcmp(x->op_type, "BatchNormalization") == 0) {
        if (!mi__xf_const_f32(g, x, 1) || !push(p, ACT_BN, n, keep, ch) ||
            !walk(g, x->outputs[0], keep, ch, p, depth + 1))
          return 0;
      } else if (per_channel_passthrough(x) && x->input_count <= 3) {
        if (!walk(g, x->outputs[0], keep, ch, p, depth + 1)) return 0;
      } else if (strcmp(x->op_type, "Concat") == 0) {
        int64_t axis = mi_node_attr_int(x, "axis", 0), off = 0, total = 0;
        const mi_tensor_t *o = &g->tensors[x->outputs[0]];
        if (o->rank != 4 || (axis != 1 && axis != -3)) return 0;
        for (int32_t j = 0; j < x->input_count; j++) {
          const mi_tensor_t *in = &g->tensors[x->inputs[j]];
          if (in->rank != 4 || in->dims[1] < 0) return 0;
          if (j < k) off += in->dims[1];
          total += in->dims[1];
        }
        uint8_t *m = malloc((size_t)total);
        if (!m) return 0;
        memset(m, 1, (size_t)total);
        memcpy(m + off, keep, (size_t)ch);
        int ok = walk(g, x->outputs[0], m, total, p, depth + 1);
        free(m);
        if (!ok) return 0;
      } else {
        return 0; /* residual Add, Flatten, Reshape, ...: not consistent, skip the layer */
      }
    }
  }
  return 1;
}

/* A copy of constant t keeping the entries whose index along `axis` has keep[] set. */
static int32_t slice(mi_graph_t *g, int32_t t, int32_t axis, const uint8_t *keep, int64_t ch,
                     const char *owner) {
  const mi_tensor_t *x = &g->tensors[t];
  int64_t dims[MI_MAX_RANK], outer = 1, inner = 1, kept = 0, at = 0;
  int32_t rank = x->rank < 1 ? 1 : x->rank, r;
  memcpy(dims, x->dims, sizeof dims);
  if (x->rank < 1) dims[0] = (int64_t)(x->nbytes / sizeof(float));
  if (dims[axis] != ch) return -2;
  for (int32_t d = 0; d < axis; d++) outer *= dims[d];
  for (int32_t d = axis + 1; d < rank; d++) inner *= dims[d];
  for (int64_t c = 0; c < ch; c++) kept += keep[c] != 0;
  float *nw = malloc((size_t)(outer * kept * inner + 1) * sizeof *nw);
  const float *w = x->data;
  if (!nw) return -1;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++)
      if (keep[c])
        for (int64_t i = 0; i < inner; i++) nw[at++] = w[(o * ch + c) * inner + i];
  dims[axis] = kept;
  r = mi__xf_add_const(g, owner, ".pruned", MI_DTYPE_FLOAT32, rank, dims, nw,
                       (size_t)(outer * kept * inner) * sizeof *nw);
  free(nw);
  return r;
}

static int32_t apply_action(mi_graph_t *g, const prune_action_t *a) {
  mi_node_t *x = &g->nodes[a->node];
  int64_t kept = 0;
  int32_t nt;
  for (int64_t c = 0; c < a->channels; c++) kept += a->keep[c] != 0;
  if (a->kind == ACT_IN) {
    nt = slice(g, x->inputs[1], 1, a->keep, a->channels, x->name);
    if (nt < 0) return nt == -1 ? MI_ERR_OUT_OF_MEMORY : MI_ERR_INTERNAL;
    g->nodes[a->node].inputs[1] = nt;
    return MI_OK;
  }
  int32_t first = 1, last = a->kind == ACT_BN ? 4 : 2;
  for (int32_t k = first; k <= last; k++) {
    if (k >= g->nodes[a->node].input_count || g->nodes[a->node].inputs[k] < 0) continue;
    nt = slice(g, g->nodes[a->node].inputs[k], 0, a->keep, a->channels, g->nodes[a->node].name);
    if (nt < 0) return nt == -1 ? MI_ERR_OUT_OF_MEMORY : MI_ERR_INTERNAL;
    g->nodes[a->node].inputs[k] = nt;
  }
  if (a->kind == ACT_OUT && mi_node_attr_int(&g->nodes[a->node], "group", 1) != 1)
    return mi_node_set_int(g, a->node, "group", kept);
  return MI_OK;
}

MI_API int mi_xf_prunable(const mi_graph_t *g, int32_t node) {
  prune_plan_t p;
  uint8_t *keep;
  int64_t m;
  int ok;
  const mi_node_t *x;
  if (!g || node < 0 || node >= g->node_count) return 0;
  x = &g->nodes[node];
  if (strcmp(x->op_type, "Conv") != 0 || !mi__xf_is_weighted(g, node) ||
      mi_node_attr_int(x, "group", 1) != 1 || x->output_count != 1)
    return 0;
  m = g->tensors[x->inputs[1]].dims[0];
  if (m < 2 || !(keep = malloc((size_t)m))) return 0;
  /* The same plan mi_xf_prune_layer makes: where its channels flow decides, not which go. */
  memset(keep, 1, (size_t)m);
  memset(&p, 0, sizeof p);
  ok = push(&p, ACT_OUT, node, keep, m) && walk(g, x->outputs[0], keep, m, &p, 0) && p.n >= 2;
  for (int32_t i = 0; i < p.n; i++) free(p.a[i].keep);
  free(keep);
  return ok;
}

void mi__xf_drop_smallest(const double *norm, int64_t n, int64_t drop, uint8_t *keep) {
  for (int64_t d = 0; d < drop; d++) {
    int64_t best = -1;
    for (int64_t c = 0; c < n; c++)
      if (keep[c] && (best < 0 || norm[c] < norm[best])) best = c;
    if (best < 0) break;
    keep[best] = 0;
  }
}

int32_t mi__xf_prune_commit(mi_graph_t *g, int32_t node, int32_t rc, int64_t drop, int *done,
                            mi_xf_stats_t *st, mi_error_t *err) {
  if (rc != MI_OK)
    return mi_errorf(err, rc, "prune: node '%s': %s", g->nodes[node].name, mi_status_message(rc));
  if (done) *done = 1;
  if (st) {
    st->pruned_layers++;
    st->pruned_channels += drop;
  }
  return mi__xf_refresh(g, err);
}

MI_API int32_t mi_xf_prune_layer(mi_graph_t *g, int32_t node, double ratio, int *done,
                                 mi_xf_stats_t *st, mi_error_t *err) {
  prune_plan_t p;
  int32_t rc = MI_OK;
  uint8_t *keep = NULL;
  double *norm = NULL;
  if (done) *done = 0;
  if (!g || node < 0 || node >= g->node_count || !(ratio >= 0.0 && ratio <= 0.95))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "prune: bad node or ratio %g", ratio);
  memset(&p, 0, sizeof p);
  const mi_node_t *x = &g->nodes[node];
  if ((strcmp(x->op_type, "Gemm") == 0 || strcmp(x->op_type, "MatMul") == 0) &&
      mi__xf_is_weighted(g, node)) {
    int fc_done = 0;
    rc = mi__xf_prune_fc(g, node, ratio, &fc_done, st, err);
    if (done) *done = fc_done;
    return rc;
  }
  if (strcmp(x->op_type, "Conv") != 0 || !mi__xf_is_weighted(g, node) ||
      mi_node_attr_int(x, "group", 1) != 1 || x->output_count != 1)
    goto skip;
  const mi_tensor_t *wt = &g->tensors[x->inputs[1]];
  int64_t m = wt->dims[0], per = mi__xf_numel(g, x->inputs[1]) / m;
  int64_t drop = (int64_t)floor(ratio * (double)m);
  if (drop >= m) drop = m - 1;
  if (drop <= 0) goto skip;
  keep = malloc((size_t)m);
  norm = malloc((size_t)m * sizeof *norm);
  if (!keep || !norm) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "prune: out of memory");
    goto done;
  }
  for (int64_t c = 0; c < m; c++) {
    const float *w = (const float *)wt->data + c * per;
    norm[c] = 0.0;
    for (int64_t i = 0; i < per; i++) norm[c] += fabs((double)w[i]);
    keep[c] = 1;
  }
  mi__xf_drop_smallest(norm, m, drop, keep);
  if (!push(&p, ACT_OUT, node, keep, m) || !walk(g, x->outputs[0], keep, m, &p, 0) ||
      p.n < 2)
    goto skip;
  for (int32_t i = 0; i < p.n && rc == MI_OK; i++) rc = apply_action(g, &p.a[i]);
  rc = mi__xf_prune_commit(g, node, rc, drop, done, st, err);
  goto done;
skip:
  if (st && ratio > 0.0) st->prune_skipped++;
done:
  for (int32_t i = 0; i < p.n; i++) free(p.a[i].keep);
  free(keep);
  free(norm);
  return rc;
}
