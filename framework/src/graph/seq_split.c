/* seq_split.c - SplitToSequence lowered at load time (seq_lower.c's walk): Split along the axis
 * into parts of explicit sizes (+ Squeeze of each when split is omitted and keepdims is 0), once
 * the number of parts is known: from a 1-D split, else from the axis' size, declared or inferred
 * over the nodes computing the input (1-D sizes given at run time: from their shape). Without
 * split the parts are x's slices along the axis:
 * the walk remembers that, so a part at a run-time position is a Gather of x, and a split whose
 * count is not known at load leaves only that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/seq_lower.h"

/* Split's most outputs (its shape inference and reference hold the sizes in 64 entries). */
#define MAX_PARTS 64

static int32_t in_at(const mi_node_t *n, int32_t k) { return k < n->input_count ? n->inputs[k] : -1; }

/* The size of x's dim `axis` where it is known at load time: from its declared shape, else from
 * shape inference over the nodes that compute it (on a copy sharing the weights). -1 when
 * unknown; *rank is x's rank (-1 when unknown). */
static int64_t dim_at_load(mi__seql_t *l, int32_t x, int64_t axis, int32_t *rank) {
  const mi_tensor_t *t = &l->g->tensors[x];
  int32_t r = t->rank;
  const int64_t *dims = t->dims;
  mi_graph_t *c = NULL;
  uint8_t *drop = NULL;
  int32_t *stack = NULL, sp = 0;
  int64_t d = -1;
  mi_error_t e = {0};
  if (r < 0 || (axis >= -r && axis < r && dims[axis < 0 ? axis + r : axis] < 0)) {
    /* keep only x's producers and theirs, so an op shape inference does not know elsewhere
     * does not stop it */
    c = mi__graph_clone_shared(l->g);
    drop = malloc((size_t)l->g->node_count + 1);
    stack = malloc(sizeof *stack * ((size_t)l->g->node_count + 1));
    if (!c || !drop || !stack) goto done;
    memset(drop, 1, (size_t)l->g->node_count + 1);
    if (t->producer >= 0) drop[stack[sp++] = t->producer] = 0;
    while (sp > 0) {
      const mi_node_t *p = &l->g->nodes[stack[--sp]];
      for (int32_t k = 0; k < p->input_count; k++) {
        int32_t u = p->inputs[k], q = u >= 0 && !l->g->tensors[u].data ? l->g->tensors[u].producer : -1;
        if (q >= 0 && drop[q] && !(q < l->ndead && l->dead[q])) drop[stack[sp++] = q] = 0;
      }
    }
    if (mi_graph_remove_nodes(c, drop, &e) || mi_graph_infer_shapes(c, &e)) goto done;
    int32_t cx = mi_graph_find_tensor(c, t->name);
    if (cx < 0) goto done;
    r = c->tensors[cx].rank;
    dims = c->tensors[cx].dims;
  }
  if (r >= 0 && axis >= -r && axis < r) d = dims[axis < 0 ? axis + r : axis];
done:
  *rank = r;
  mi_graph_destroy(c);
  free(drop);
  free(stack);
  return d;
}

/* Squeeze of x at axis (an attribute before opset 13, an input since). */
static int32_t squeeze(mi__ab_t *b, const char *what, int32_t x, int64_t axis) {
  if (b->opset >= 13) return mi__ab_op(b, "Squeeze", what, 2, (int32_t[]){x, mi__ab_c_i64(b, "axes", 1, 1, &axis)});
  int32_t y = mi__ab_op(b, "Squeeze", what, 1, &x);
  mi__ab_attr_ints(b, "axes", 1, &axis);
  return y;
}

/* SplitToSequence(x, split) with 1-D sizes given at run time: their count, from split's shape
 * (declared or inferred), is the sequence's length; since opset 13 Split takes the sizes as an
 * input, so the parts are its outputs; before, only the length is known. */
static int32_t runtime_split(mi__seql_t *l, int32_t i, int32_t x, int32_t sp, int64_t axis) {
  int32_t rank = -1, rc;
  int64_t count = dim_at_load(l, sp, 0, &rank);
  if (rank != 1 || count < 0)
    return mi__seq_fail(l, i,
                        "split '%s' is not a constant and its number of sizes is not known at load time (a "
                        "sequence whose length is known only at run time is not supported)",
                        l->g->tensors[sp].name);
  if (count > MAX_PARTS)
    return mi__seq_fail(l, i, "splits into %lld tensors (at most %d are supported)", (long long)count, MAX_PARTS);
  if (l->g->opset < 13) return mi__seq_set_slices(l, i, (int32_t)count, -1, axis, 0);
  mi__ab_t b;
  int32_t *parts = malloc(sizeof *parts * (size_t)(count + 1)), seq = l->g->nodes[i].outputs[0];
  mi__ab_start(&b, l->g, &l->g->nodes[i]);
  if (!parts) b.ok = 0;
  for (int64_t k = 0; k < count && b.ok; k++) {
    char what[32];
    snprintf(what, sizeof what, "part%lld", (long long)k);
    parts[k] = mi__ab_tensor(&b, what);
  }
  if (!b.ok) rc = mi__seq_oom(l, i);
  else if (!(rc = mi__seq_become(l, i, "Split", 2, (int32_t[]){x, sp}, (int32_t)count, parts)) &&
           mi_node_set_int(l->g, i, "axis", axis))
    rc = mi__seq_oom(l, i);
  if (rc == MI_OK && seq < l->nsv) {
    mi__seqv_t *s = &l->sv[seq];
    free(s->el);
    *s = (mi__seqv_t){.kind = MI__SEQ_LIST, .n = (int32_t)count, .el = parts, .src = -1};
    parts = NULL;
  }
  free(parts);
  return rc;
}

/* SplitToSequence(x[, split]; axis, keepdims): Split into the parts (explicit sizes), each
 * squeezed along the axis when split is omitted and keepdims is 0. */
int32_t mi__seq_lower_split(mi__seql_t *l, int32_t i) {
  mi_node_t *n = &l->g->nodes[i];
  int32_t x = in_at(n, 0), sp = in_at(n, 1), rank = -1, rc = MI_OK;
  int64_t axis = mi_node_attr_int(n, "axis", 0), keep = mi_node_attr_int(n, "keepdims", 1), d, chunk = 1, count;
  int64_t *sizes = NULL;
  int32_t *parts = NULL;
  const mi_tensor_t *st = sp >= 0 ? &l->g->tensors[sp] : NULL;
  if (x < 0) return mi__seq_fail(l, i, "input is missing");
  if (st && !st->data) return runtime_split(l, i, x, sp, axis);
  if (st && st->dtype != MI_DTYPE_INT64 && st->dtype != MI_DTYPE_INT32)
    return mi__seq_fail(l, i, "split must be int32 or int64, not %s", mi_dtype_name(st->dtype));
  int64_t ns = st ? mi__tensor_numel(st) : 0;
  if (st && (st->rank > 1 || ns < 0 || (st->rank == 0 && ns != 1)))
    return mi__seq_fail(l, i, "split must be a scalar or a 1-D list");
  if (st && st->rank == 1) { /* the sizes themselves: the count is known without the shape */
    count = ns;
    if (!(sizes = malloc(sizeof *sizes * (size_t)(count + 1)))) return mi__seq_oom(l, i);
    for (int64_t k = 0; k < count; k++) {
      sizes[k] = st->dtype == MI_DTYPE_INT64 ? ((const int64_t *)st->data)[k] : ((const int32_t *)st->data)[k];
      if (sizes[k] < 0) {
        long long bad = (long long)sizes[k];
        free(sizes);
        return mi__seq_fail(l, i, "split[%lld] is %lld, sizes must be >= 0", (long long)k, bad);
      }
    }
  } else {
    if (st && mi__seq_int(l->g, sp, &chunk) == 0 && chunk <= 0)
      return mi__seq_fail(l, i, "split is %lld, it must be > 0", (long long)chunk);
    if ((d = dim_at_load(l, x, axis, &rank)) < 0) {
      if (rank >= 0 && (axis < -rank || axis >= rank))
        return mi__seq_fail(l, i, "axis %lld is out of range for rank %d", (long long)axis, (int)rank);
      if (!st) /* parts of one: element p is x's slice p along the axis, whatever the count */
        return mi__seq_set_slices(l, i, -1, x, axis, keep != 0);
      return mi__seq_fail(l, i,
                          "the size of axis %lld of '%s' is not known at load time, so neither is the number of "
                          "tensors (a sequence whose length is known only at run time is not supported)",
                          (long long)axis, l->g->tensors[x].name);
    }
    count = (d + chunk - 1) / chunk;
    if (count > MAX_PARTS && !st) /* more than a Split gives: the slices alone */
      return mi__seq_set_slices(l, i, (int32_t)count, x, axis, keep != 0);
    if (count > MAX_PARTS)
      return mi__seq_fail(l, i, "splits into %lld tensors (at most %d are supported)", (long long)count, MAX_PARTS);
    if (!(sizes = malloc(sizeof *sizes * (size_t)(count + 1)))) return mi__seq_oom(l, i);
    for (int64_t k = 0; k < count; k++) sizes[k] = k + 1 < count ? chunk : d - chunk * (count - 1);
  }
  if (count > MAX_PARTS) {
    free(sizes);
    return mi__seq_fail(l, i, "splits into %lld tensors (at most %d are supported)", (long long)count, MAX_PARTS);
  }
  int sq = !st && keep == 0;
  mi__ab_t b;
  mi__ab_start(&b, l->g, n);
  int32_t dt = l->g->tensors[x].dtype;
  parts = malloc(sizeof *parts * (size_t)(count + 1));
  int32_t *items = malloc(sizeof *items * (size_t)(count + 1));
  if (!parts || !items) b.ok = 0;
  for (int64_t k = 0; k < count && b.ok; k++) {
    char what[32];
    snprintf(what, sizeof what, "part%lld", (long long)k);
    if ((parts[k] = mi__ab_tensor(&b, what)) >= 0) l->g->tensors[parts[k]].dtype = dt;
    items[k] = parts[k];
  }
  if (count == 0) {
    rc = st ? mi__seq_set(l, i, MI__SEQ_LIST, 0, NULL) : mi__seq_set_slices(l, i, 0, x, axis, keep != 0);
    goto done;
  }
  int32_t split_in = l->g->opset >= 13 ? mi__ab_c_i64(&b, "split", 1, count, sizes) : -1;
  for (int64_t k = 0; sq && k < count && b.ok; k++) {
    char what[32];
    snprintf(what, sizeof what, "item%lld", (long long)k);
    items[k] = squeeze(&b, what, parts[k], axis);
  }
  if (!b.ok || mi__seq_track_nodes(l)) {
    rc = mi__seq_oom(l, i);
    goto done;
  }
  const mi_node_t *old = &l->g->nodes[i];
  int32_t seq = old->outputs[0];
  if ((rc = mi__seq_become(l, i, "Split", split_in >= 0 ? 2 : 1, (int32_t[]){x, split_in}, (int32_t)count, parts)))
    goto done;
  if ((l->g->opset < 13 && mi_node_set_ints(l->g, i, "split", (int32_t)count, sizes)) ||
      mi_node_set_int(l->g, i, "axis", axis)) {
    rc = mi__seq_oom(l, i);
    goto done;
  }
  mi__seqv_t *s = &l->sv[seq];
  free(s->el);
  *s = (mi__seqv_t){.kind = MI__SEQ_LIST, .n = (int32_t)count, .el = items, .src = sq || !st ? x : -1};
  s->axis = axis;
  s->keep = keep != 0;
  items = NULL;
done:
  free(sizes);
  free(parts);
  free(items);
  return rc;
}
