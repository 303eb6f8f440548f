/* shape_infer_control.c - shapes of If, Loop and Scan outputs, by inferring their subgraphs
 * with the shapes of the values they take from the enclosing graph. */
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

int32_t mi__si_if_op(mi__si_t *c, const mi_node_t *n) {
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
    /* Only the branch that runs matters; the other may not even fit these shapes. A taken
     * branch that does not infer leaves the outputs unknown, as when either may run: captures
     * bind shapes, not values, so a branch that reshapes by a captured constant (an Unsqueeze
     * on outer axes, Silero VAD v6 ifless) has no ranks here, and the run, or the branch once
     * inlined (mi_graph_inline_ifs) where the constants are its own, says whether it fits. */
    mi_graph_t *taken = br[cond[0] != 0 ? 0 : 1];
    mi_tensor_t unknown;
    memset(&unknown, 0, sizeof unknown);
    unknown.rank = -1;
    int ok_taken = infer_sub(c, n, taken) == MI_OK;
    for (int32_t k = 0; k < n->output_count; k++)
      set_like(c, n, k, ok_taken ? &taken->tensors[taken->outputs[k]] : &unknown);
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

int32_t mi__si_loop_op(mi__si_t *c, const mi_node_t *n) {
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

/* An INTS attribute with one entry per scan input or output (zeros when absent); -1 when it
 * has another count or does not fit. */
static int32_t scan_list(const mi_node_t *n, const char *name, int32_t want, int64_t *v) {
  const mi_attr_t *a = mi_node_attr(n, name);
  for (int32_t i = 0; i < want; i++) v[i] = 0;
  if (!a) return 0;
  if (a->type != MI_ATTR_INTS || a->count != want) return -1;
  for (int32_t i = 0; i < want; i++) v[i] = a->ints[i];
  return 0;
}

/* Scan (opset 9+: [state..., scan inputs...]; opset 8: [sequence_lens, state..., scan
 * inputs...] with a batch dim first on each and the scan axis 1). The body sees the state
 * shapes and the scan inputs without their scan axis (and batch dim); scan outputs get the
 * number of steps inserted at their axis. */
#define MAX_SCAN_VALUES 64
int32_t mi__si_scan_op(mi__si_t *c, const mi_node_t *n) {
  mi_graph_t *body = mi_node_subgraph(n, "body");
  int32_t v8 = c->g->opset < 9, first = v8 ? 1 : 0;
  int32_t nall = n->input_count - n->implicit_inputs - first, rc;
  int64_t nx = mi_node_attr_int(n, "num_scan_inputs", -1), steps = MI_DIM_DYNAMIC, batch = -2;
  int64_t in_axis[MAX_SCAN_VALUES], out_axis[MAX_SCAN_VALUES];
  if (!body) return mi__si_fail(c, n, MI_ERR_PARSE, "has no body");
  if (nx < 1 || nx > nall || nx > MAX_SCAN_VALUES)
    return mi__si_fail(c, n, MI_ERR_PARSE, "num_scan_inputs is %lld for %d inputs",
                       (long long)nx, (int)nall);
  int32_t ns = nall - (int32_t)nx, nk = body->output_count - ns;
  if (body->input_count != nall || nk < 0 || nk > MAX_SCAN_VALUES || n->output_count != ns + nk)
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "body takes %d inputs and gives %d outputs for %d state values, %d scan "
                       "inputs and %d node outputs",
                       (int)body->input_count, (int)body->output_count, (int)ns, (int)nx,
                       (int)n->output_count);
  /* Directions do not change shapes; opset 8 has no axis attributes (the scan axis is 1). */
  if (v8) {
    for (int32_t j = 0; j < nx; j++) in_axis[j] = 1;
  } else if (scan_list(n, "scan_input_axes", (int32_t)nx, in_axis) ||
             scan_list(n, "scan_output_axes", nk, out_axis)) {
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "scan_input_axes or scan_output_axes has the wrong count");
  }
  for (int32_t j = 0; j < nall; j++) {
    const mi_tensor_t *v = mi__si_in(c, n, first + j);
    mi_tensor_t *b = &body->tensors[body->inputs[j]];
    int32_t drop0 = v8, axis = -1;
    if (!v) return mi__si_fail(c, n, MI_ERR_PARSE, "input %d is missing", (int)(first + j));
    b->dtype = v->dtype;
    if (v->rank < 0) {
      mi__tensor_set_shape(b, -1, NULL);
      continue;
    }
    if (v8) {
      if (v->rank < (j < ns ? 1 : 2))
        return mi__si_fail(c, n, MI_ERR_PARSE, "input %d has no batch dim", (int)(first + j));
      if (batch == -2 || batch == MI_DIM_DYNAMIC) batch = v->dims[0];
    }
    if (j >= ns && (rc = mi__si_axis(c, n, in_axis[j - ns], v->rank, &axis))) return rc;
    if (axis >= 0 && steps == MI_DIM_DYNAMIC) steps = v->dims[axis];
    int64_t d[MI_MAX_RANK];
    int32_t r = 0;
    for (int32_t k = drop0; k < v->rank; k++)
      if (k != axis) d[r++] = v->dims[k];
    mi__tensor_set_shape(b, r, d);
  }
  if ((rc = infer_sub(c, n, body))) return rc;
  for (int32_t k = 0; k < ns + nk; k++) {
    const mi_tensor_t *o = &body->tensors[body->outputs[k]];
    int64_t d[MI_MAX_RANK];
    int32_t r = 0, axis;
    if (o->rank < 0 || o->rank + 1 + v8 > MI_MAX_RANK) {
      mi__si_set(c, n, k, o->dtype, -1, NULL);
      continue;
    }
    if (v8) d[r++] = batch >= 0 ? batch : MI_DIM_DYNAMIC;
    if (k < ns) { /* a state value: the body's output shape, merged with the initial one */
      mi_tensor_t t;
      memset(&t, 0, sizeof t);
      t.dtype = o->dtype;
      t.rank = o->rank;
      memcpy(t.dims, o->dims, sizeof t.dims);
      merge(&t, &body->tensors[body->inputs[k]]);
      for (int32_t i = 0; i < t.rank; i++) d[r++] = t.dims[i];
      mi__si_set(c, n, k, t.dtype, t.rank < 0 ? -1 : r, d);
      continue;
    }
    if ((rc = mi__si_axis(c, n, v8 ? 0 : out_axis[k - ns], o->rank + 1, &axis))) return rc;
    for (int32_t i = 0, src = 0; i <= o->rank; i++) d[r++] = i == axis ? steps : o->dims[src++];
    mi__si_set(c, n, k, o->dtype, r, d);
  }
  return MI_OK;
}
