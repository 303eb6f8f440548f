/* seq_slices.c - a sequence that is the slices of a tensor along an axis (SplitToSequence without
 * split: torch's unbind, `for x in t` in torch.jit), read where its elements are not graph tensors
 * at load: at a position known only at run time (SequenceAt -> Gather of the tensor, + Unsqueeze
 * when keepdims is 1), its length when the axis' size is not known at load (Shape -> Gather), the
 * slices along axis 0 concatenated along it (a Reshape merging the first two axes), and
 * inside a subgraph that captures it (a Loop body reading element `iter`): the subgraph captures
 * the tensor instead and its own walk starts from that. An optional a subgraph captures is
 * passed the same way (its element, or nothing when empty). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/seq_lower.h"

int32_t mi__seq_set_slices(mi__seql_t *l, int32_t i, int32_t n, int32_t src, int64_t axis, int keep) {
  int32_t rc = mi__seq_set(l, i, MI__SEQ_LIST, 0, NULL), t = l->g->nodes[i].outputs[0];
  if (rc != MI_OK || t >= l->nsv) return rc;
  mi__seqv_t *s = &l->sv[t];
  free(s->el);
  *s = (mi__seqv_t){.kind = MI__SEQ_LIST, .n = n, .el = NULL, .src = src, .axis = axis, .keep = keep};
  return MI_OK;
}

int32_t mi__seq_at_slice(mi__seql_t *l, int32_t i, const mi__seqv_t *s, int32_t pos) {
  mi_graph_t *g = l->g;
  int32_t out = g->nodes[i].outputs[0], src = s->src, rc;
  int64_t axis = s->axis;
  if (!s->keep) {
    if ((rc = mi__seq_become(l, i, "Gather", 2, (int32_t[]){src, pos}, 1, &out))) return rc;
    return mi_node_set_int(g, i, "axis", axis) ? mi__seq_oom(l, i) : MI_OK;
  }
  mi__ab_t b;
  mi__ab_start(&b, g, &g->nodes[i]);
  int32_t slice = mi__ab_op(&b, "Gather", "slice", 2, (int32_t[]){src, pos});
  mi__ab_attr_int(&b, "axis", axis);
  int32_t axes = g->opset >= 13 ? mi__ab_c_i64(&b, "axes", 1, 1, &axis) : -1;
  if (!b.ok || mi__seq_track_nodes(l)) return mi__seq_oom(l, i);
  if ((rc = mi__seq_become(l, i, "Unsqueeze", axes >= 0 ? 2 : 1, (int32_t[]){slice, axes}, 1, &out))) return rc;
  return g->opset < 13 && mi_node_set_ints(g, i, "axes", 1, &axis) ? mi__seq_oom(l, i) : MI_OK;
}

int32_t mi__seq_len_slices(mi__seql_t *l, int32_t i, const mi__seqv_t *s) {
  mi_graph_t *g = l->g;
  int32_t out = g->nodes[i].outputs[0], src = s->src, rc;
  int64_t axis = s->axis;
  mi__ab_t b;
  mi__ab_start(&b, g, &g->nodes[i]);
  int32_t shape = mi__ab_op(&b, "Shape", "shape", 1, &src), at = mi__ab_c_i64(&b, "axis", 0, 1, &axis);
  if (!b.ok || mi__seq_track_nodes(l)) return mi__seq_oom(l, i);
  if ((rc = mi__seq_become(l, i, "Gather", 2, (int32_t[]){shape, at}, 1, &out))) return rc;
  return mi_node_set_int(g, i, "axis", 0) ? mi__seq_oom(l, i) : MI_OK;
}

int32_t mi__seq_cat_slices0(mi__seql_t *l, int32_t i, const mi__seqv_t *s) {
  static const int64_t m1 = -1, two = 2, end = INT64_MAX, ax0 = 0;
  mi_graph_t *g = l->g;
  int32_t out = g->nodes[i].outputs[0], src = s->src, rc;
  mi__ab_t b;
  mi__ab_start(&b, g, &g->nodes[i]);
  /* [N, d0, d1, ...] -> [N * d0, d1, ...] */
  int32_t sh = mi__ab_op(&b, "Shape", "shape", 1, &src);
  int32_t tail = mi__ab_op(&b, "Slice", "tail", 4,
                           (int32_t[]){sh, mi__ab_c_i64(&b, "starts", 1, 1, &two), mi__ab_c_i64(&b, "ends", 1, 1, &end),
                                       mi__ab_c_i64(&b, "axes", 1, 1, &ax0)});
  int32_t shape = mi__ab_op(&b, "Concat", "new_shape", 2, (int32_t[]){mi__ab_c_i64(&b, "lead", 1, 1, &m1), tail});
  mi__ab_attr_int(&b, "axis", 0);
  if (!b.ok || mi__seq_track_nodes(l)) return mi__seq_oom(l, i);
  return (rc = mi__seq_become(l, i, "Reshape", 2, (int32_t[]){src, shape}, 1, &out)) ? rc : MI_OK;
}

static int is_capture(const mi_graph_t *sub, int32_t t) {
  for (int32_t k = 0; k < sub->capture_count; k++)
    if (sub->captures[k] == t) return 1;
  return 0;
}

/* The tensor a subgraph captures in place of captured sequence s: the tensor it slices, or an
 * optional's element; -1 for an empty optional (nothing to capture). */
static int32_t stand_in(const mi__seqv_t *s) { return s->kind == MI__SEQ_OPT ? (s->n > 0 ? s->el[0] : -1) : s->src; }

/* Sequence or optional s of the walk's graph, captured by subgraph `sub` of node i as tensor ct:
 * sub captures its stand-in (by name) instead, and *seed says what ct is. */
static int32_t capture_as(mi__seql_t *l, int32_t i, mi_graph_t *sub, int32_t ct, const mi__seqv_t *s, mi__seq_seed_t *seed) {
  int32_t xs = -1, x = stand_in(s);
  if (x >= 0) {
    const mi_tensor_t *xt = &l->g->tensors[x];
    if ((xs = mi_graph_find_tensor(sub, xt->name)) >= 0 && !is_capture(sub, xs))
      return mi__seq_fail(l, i, "subgraph '%s' reads '%s', which stands for '%s', but has its own tensor '%s'", sub->name,
                          sub->tensors[ct].name, xt->name, xt->name);
    if (xs < 0 && ((xs = mi_graph_add_tensor(sub, xt->name, xt->dtype, xt->rank, xt->rank >= 0 ? xt->dims : NULL)) < 0 ||
                   mi_graph_add_capture(sub, xs) != MI_OK))
      return mi__seq_oom(l, i);
  }
  for (int32_t k = 0; k < sub->capture_count; k++) /* ct is no value at run time any more */
    if (sub->captures[k] == ct) {
      memmove(sub->captures + k, sub->captures + k + 1, sizeof *sub->captures * (size_t)(sub->capture_count - k - 1));
      sub->capture_count--;
      break;
    }
  *seed = (mi__seq_seed_t){.t = ct, .v = *s, .el1 = xs};
  seed->v.el = NULL;
  if (s->kind == MI__SEQ_LIST) seed->v.src = xs;
  return MI_OK;
}

int32_t mi__seq_capture_slices(mi__seql_t *l, int32_t i, mi_graph_t *sub, mi__seq_seed_t **seeds, int32_t *nseeds) {
  const mi_node_t *n = &l->g->nodes[i];
  int32_t rc = MI_OK, ns = 0;
  mi__seq_seed_t *sd = calloc((size_t)n->implicit_inputs + 1, sizeof *sd);
  *seeds = NULL;
  *nseeds = 0;
  if (!sd) return mi__seq_oom(l, i);
  for (int32_t k = n->input_count - n->implicit_inputs; k < n->input_count && rc == MI_OK; k++) {
    int32_t t = n->inputs[k];
    if (!mi__seq_is(l, t)) continue;
    int32_t ct = mi_graph_find_tensor(sub, l->g->tensors[t].name);
    if (ct >= 0 && is_capture(sub, ct)) rc = capture_as(l, i, sub, ct, mi__seq_of(l, t), &sd[ns++]);
    n = &l->g->nodes[i];
  }
  if (rc != MI_OK) {
    free(sd);
    return rc;
  }
  *seeds = sd;
  *nseeds = ns;
  return MI_OK;
}

int32_t mi__seq_implicit_slices(mi__seql_t *l, int32_t i) {
  mi_node_t *n = &l->g->nodes[i];
  for (int32_t k = n->input_count - n->implicit_inputs; k < n->input_count;) {
    int32_t t = n->inputs[k], dup = 0;
    if (!mi__seq_is(l, t)) {
      k++;
      continue;
    }
    int32_t src = stand_in(mi__seq_of(l, t));
    for (int32_t q = n->input_count - n->implicit_inputs; q < n->input_count; q++) dup |= n->inputs[q] == src;
    if (!dup && src >= 0) {
      n->inputs[k++] = src;
      continue;
    }
    memmove(n->inputs + k, n->inputs + k + 1, sizeof *n->inputs * (size_t)(n->input_count - k - 1));
    n->input_count--;
    n->implicit_inputs--;
  }
  return MI_OK;
}
