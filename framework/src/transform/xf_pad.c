/* xf_pad.c - pads Conv output channels to an alignment with zero filters (exact). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "transform/xf_internal.h"

#define PAD_MAX_NODES 64

/* What padding one conv touches: per-channel nodes on the way and the convs that read it. */
typedef struct pad_plan {
  int32_t chain[PAD_MAX_NODES], nchain; /* BatchNormalization nodes to pad */
  int32_t readers[PAD_MAX_NODES], nreaders;
} pad_plan_t;

/* Walks every reader of t; 0 when one of them cannot take zero-padded channels. */
static int plan(const mi_graph_t *g, int32_t t, pad_plan_t *p, int depth) {
  if (depth > 16 || mi__graph_is_output(g, t)) return 0;
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *x = &g->nodes[n];
    for (int32_t k = 0; k < x->input_count; k++) {
      if (x->inputs[k] != t) continue;
      if (k == 0 && strcmp(x->op_type, "Conv") == 0 && mi__xf_is_weighted(g, n) &&
          mi_node_attr_int(x, "group", 1) == 1) {
        if (p->nreaders == PAD_MAX_NODES) return 0;
        p->readers[p->nreaders++] = n;
      } else if (k == 0 && x->output_count == 1 && mi__xf_is_zero_act(g, x)) {
        if (!plan(g, x->outputs[0], p, depth + 1)) return 0;
      } else if (k == 0 && x->output_count == 1 &&
                 strcmp(x->op_type, "BatchNormalization") == 0 && mi__xf_const_f32(g, x, 1) &&
                 mi__xf_const_f32(g, x, 2) && mi__xf_const_f32(g, x, 3) &&
                 mi__xf_const_f32(g, x, 4)) {
        if (p->nchain == PAD_MAX_NODES) return 0;
        p->chain[p->nchain++] = n;
        if (!plan(g, x->outputs[0], p, depth + 1)) return 0;
      } else {
        return 0;
      }
    }
  }
  return 1;
}

/* A copy of `w` (dims[axis] = from) widened to `to` along axis with zeros (fill for BN var). */
static int32_t widen(mi_graph_t *g, int32_t t, int32_t axis, int64_t to, float fill,
                     const char *owner) {
  const mi_tensor_t *x = &g->tensors[t];
  int64_t dims[MI_MAX_RANK], outer = 1, inner = 1, from;
  int32_t rank = x->rank < 1 ? 1 : x->rank, r;
  memcpy(dims, x->dims, sizeof dims);
  if (x->rank < 1) dims[0] = (int64_t)(x->nbytes / sizeof(float));
  from = dims[axis];
  for (int32_t d = 0; d < axis; d++) outer *= dims[d];
  for (int32_t d = axis + 1; d < rank; d++) inner *= dims[d];
  float *nw = malloc((size_t)(outer * to * inner) * sizeof *nw);
  const float *w = x->data;
  if (!nw) return -1;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < to; c++)
      for (int64_t i = 0; i < inner; i++)
        nw[(o * to + c) * inner + i] = c < from ? w[(o * from + c) * inner + i] : fill;
  dims[axis] = to;
  r = mi__xf_add_const(g, owner, ".pad", MI_DTYPE_FLOAT32, rank, dims, nw,
                       (size_t)(outer * to * inner) * sizeof *nw);
  free(nw);
  return r;
}

MI_API int32_t mi_xf_pad_channels(mi_graph_t *g, int32_t align, mi_xf_stats_t *st,
                                  mi_error_t *err) {
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "pad: graph is NULL");
  if (align <= 1) return MI_OK;
  if (align > 64) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "pad: alignment %d > 64", (int)align);
  for (int32_t n = 0; n < g->node_count; n++) {
    mi_node_t *x = &g->nodes[n];
    pad_plan_t p;
    if (strcmp(x->op_type, "Conv") != 0 || !mi__xf_is_weighted(g, n) ||
        mi_node_attr_int(x, "group", 1) != 1 || x->output_count != 1)
      continue;
    if (x->input_count > 2 && x->inputs[2] >= 0 && !mi__xf_const_f32(g, x, 2)) continue;
    int64_t m = g->tensors[x->inputs[1]].dims[0], mp = (m + align - 1) / align * align;
    if (mp == m) continue;
    memset(&p, 0, sizeof p);
    if (!plan(g, x->outputs[0], &p, 0) || p.nreaders == 0) continue;
    int32_t tw = widen(g, g->nodes[n].inputs[1], 0, mp, 0.0f, g->nodes[n].name);
    if (tw < 0) goto oom;
    g->nodes[n].inputs[1] = tw;
    if (g->nodes[n].input_count > 2 && g->nodes[n].inputs[2] >= 0) {
      int32_t tb = widen(g, g->nodes[n].inputs[2], 0, mp, 0.0f, g->nodes[n].name);
      if (tb < 0) goto oom;
      g->nodes[n].inputs[2] = tb;
    }
    for (int32_t i = 0; i < p.nchain; i++)
      for (int32_t k = 1; k <= 4; k++) {
        /* Padded BN channels must map 0 to 0: gamma 0, beta 0, mean 0, var 1. */
        int32_t tb = widen(g, g->nodes[p.chain[i]].inputs[k], 0, mp, k == 4 ? 1.0f : 0.0f,
                           g->nodes[p.chain[i]].name);
        if (tb < 0) goto oom;
        g->nodes[p.chain[i]].inputs[k] = tb;
      }
    for (int32_t i = 0; i < p.nreaders; i++) {
      int32_t r = p.readers[i], tr = widen(g, g->nodes[r].inputs[1], 1, mp, 0.0f, g->nodes[r].name);
      if (tr < 0) goto oom;
      g->nodes[r].inputs[1] = tr;
    }
    if (st) {
      st->padded_layers++;
      st->padded_channels += mp - m;
    }
  }
  return mi__xf_refresh(g, err);
oom:
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "pad: out of memory");
}
