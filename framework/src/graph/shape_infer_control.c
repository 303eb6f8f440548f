/* shape_infer_control.c - shapes of If and Loop outputs, by inferring their subgraphs with the
 * shapes of the values they take from the enclosing graph. */
#include <string.h>

#include "graph/shape_infer.h"

/* Gives every capture of `sub` the dtype and shape of the outer tensor of the same name. */
static void bind_captures(mi__si_t *c, const mi_node_t *n, mi_graph_t *sub) {
  for (int32_t i = 0; i < sub->capture_count; i++) {
    mi_tensor_t *t = &sub->tensors[sub->captures[i]];
    for (int32_t k = n->input_count - n->implicit_inputs; k < n->input_count; k++) {
      const mi_tensor_t *o = mi__si_in(c, n, k);
      if (!o || strcmp(o->name, t->name) != 0) continue;
      t->dtype = o->dtype;
      mi__tensor_set_shape(t, o->rank, o->dims);
      break;
    }
  }
}

/* Widens `dst` so it also describes `src`: differing dims become dynamic, ranks unknown. */
static void merge(mi_tensor_t *dst, const mi_tensor_t *src) {
  if (dst->dtype == MI_DTYPE_UNDEFINED) dst->dtype = src->dtype;
  if (dst->rank != src->rank) {
    mi__tensor_set_shape(dst, -1, NULL);
    return;
  }
  for (int32_t d = 0; d < dst->rank; d++)
    if (dst->dims[d] != src->dims[d]) dst->dims[d] = MI_DIM_DYNAMIC;
}

static void set_like(mi__si_t *c, const mi_node_t *n, int32_t k, const mi_tensor_t *t) {
  mi__si_set(c, n, k, t->dtype, t->rank, t->dims);
}

/* Infers a subgraph; errors come back prefixed with the node. */
static int32_t infer_sub(mi__si_t *c, const mi_node_t *n, mi_graph_t *sub) {
  mi_error_t e = {0};
  bind_captures(c, n, sub);
  int32_t rc = mi_graph_infer_shapes(sub, &e);
  if (rc != MI_OK) return mi__si_fail(c, n, rc, "in subgraph '%s': %s", sub->name, e.message);
  return MI_OK;
}

static int32_t if_op(mi__si_t *c, const mi_node_t *n) {
  mi_graph_t *br[2] = {mi_node_subgraph(n, "then_branch"), mi_node_subgraph(n, "else_branch")};
  int32_t rc = mi__si_need(c, n, 1), ok[2] = {0, 0};
  int64_t cnt = 0;
  if (rc) return rc;
  for (int b = 0; b < 2; b++) {
    if (!br[b]) return mi__si_fail(c, n, MI_ERR_PARSE, "has no %s", b ? "else_branch" : "then_branch");
    if (br[b]->output_count != n->output_count)
      return mi__si_fail(c, n, MI_ERR_PARSE, "branch '%s' has %d outputs, the node %d",
                         br[b]->name, (int)br[b]->output_count, (int)n->output_count);
  }
  const double *cond = mi__si_val(c, n, 0, &cnt);
  if (cond && cnt == 1 && !isnan(cond[0])) {
    /* Only the branch that runs matters; the other may not even fit these shapes. */
    mi_graph_t *taken = br[cond[0] != 0 ? 0 : 1];
    if ((rc = infer_sub(c, n, taken))) return rc;
    for (int32_t k = 0; k < n->output_count; k++)
      set_like(c, n, k, &taken->tensors[taken->outputs[k]]);
    return MI_OK;
  }
  /* Either branch may run: a branch whose shapes do not work out for these inputs is left out
   * (the run itself reports it if it is taken), the rest are merged. */
  for (int b = 0; b < 2; b++) ok[b] = infer_sub(c, n, br[b]) == MI_OK;
  for (int32_t k = 0; k < n->output_count; k++) {
    mi_tensor_t t;
    memset(&t, 0, sizeof t);
    t.rank = -1;
    if (ok[0] || ok[1]) {
      const mi_tensor_t *a = &br[ok[0] ? 0 : 1]->tensors[br[ok[0] ? 0 : 1]->outputs[k]];
      t.dtype = a->dtype;
      t.rank = a->rank;
      memcpy(t.dims, a->dims, sizeof t.dims);
      if (ok[0] && ok[1]) merge(&t, &br[1]->tensors[br[1]->outputs[k]]);
    }
    set_like(c, n, k, &t);
  }
  return MI_OK;
}

static int32_t loop_op(mi__si_t *c, const mi_node_t *n) {
  mi_graph_t *body = mi_node_subgraph(n, "body");
  int32_t nv = n->input_count - n->implicit_inputs - 2, rc;
  if (!body) return mi__si_fail(c, n, MI_ERR_PARSE, "has no body");
  int32_t nscan = body->output_count - 1 - nv;
  if (nv < 0 || body->input_count != nv + 2 || nscan < 0 || n->output_count != nv + nscan)
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "body takes %d inputs and gives %d outputs for %d loop-carried values "
                       "and %d node outputs",
                       (int)body->input_count, (int)body->output_count, (int)nv,
                       (int)n->output_count);
  mi_tensor_t *it = &body->tensors[body->inputs[0]], *cd = &body->tensors[body->inputs[1]];
  it->dtype = MI_DTYPE_INT64;
  mi__tensor_set_shape(it, 0, NULL);
  cd->dtype = MI_DTYPE_BOOL;
  mi__tensor_set_shape(cd, 0, NULL);
  for (int32_t i = 0; i < nv; i++) {
    const mi_tensor_t *v = mi__si_in(c, n, 2 + i);
    mi_tensor_t *b = &body->tensors[body->inputs[2 + i]];
    if (!v) return mi__si_fail(c, n, MI_ERR_PARSE, "loop-carried input %d is missing", (int)i);
    b->dtype = v->dtype;
    mi__tensor_set_shape(b, v->rank, v->dims);
  }
  if ((rc = infer_sub(c, n, body))) return rc;
  /* The first iteration's shapes; a value that changes shape across iterations gets the
   * differing dims dynamic. */
  for (int32_t i = 0; i < nv; i++) {
    const mi_tensor_t *v = mi__si_in(c, n, 2 + i);
    mi_tensor_t t;
    memset(&t, 0, sizeof t); /* a plain copy of the shape: it owns no names */
    t.dtype = v->dtype;
    t.rank = v->rank;
    memcpy(t.dims, v->dims, sizeof t.dims);
    merge(&t, &body->tensors[body->outputs[1 + i]]);
    set_like(c, n, i, &t);
  }
  for (int32_t k = 0; k < nscan; k++) {
    const mi_tensor_t *s = &body->tensors[body->outputs[1 + nv + k]];
    int64_t d[MI_MAX_RANK];
    if (s->rank < 0 || s->rank + 1 > MI_MAX_RANK) {
      mi__si_set(c, n, nv + k, s->dtype, -1, NULL);
      continue;
    }
    d[0] = MI_DIM_DYNAMIC;
    for (int32_t r = 0; r < s->rank; r++) d[r + 1] = s->dims[r];
    mi__si_set(c, n, nv + k, s->dtype, s->rank + 1, d);
  }
  return MI_OK;
}

mi__si_fn mi__si_lookup_control(const char *op) {
  if (strcmp(op, "If") == 0) return if_op;
  if (strcmp(op, "Loop") == 0) return loop_op;
  return NULL;
}
