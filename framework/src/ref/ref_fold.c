/* ref_fold.c - constant folding: nodes computable before run time (constants only, or shape
 * queries of fully known shapes) are evaluated on the reference interpreter and replaced by
 * initializers; and If nodes whose condition is so known replaced by the branch it takes. It lives
 * in ref because graph may not call ref (module order). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ref/ref.h"

/* Folding must not blow a model up (Expand or ConstantOfShape to a huge constant). */
#define FOLD_MAX_BYTES ((size_t)64 << 20)

static int is_const(const mi_graph_t *g, int32_t t) {
  return t < 0 || g->tensors[t].data != NULL;
}

static int shape_known(const mi_tensor_t *t) { return t->rank >= 0 && mi_tensor_dynamic_dim(t) < 0; }

/* Shape (with opset-15 start/end) and Size of a tensor whose shape is known. */
static mi_array_t *shape_query(const mi_graph_t *g, const mi_node_t *n) {
  const mi_tensor_t *in = &g->tensors[n->inputs[0]];
  mi_array_t *a;
  if (strcmp(n->op_type, "Size") == 0) {
    int64_t numel = 1;
    for (int32_t d = 0; d < in->rank; d++) numel *= in->dims[d];
    if ((a = mi_array_create(MI_DTYPE_INT64, 0, NULL))) *(int64_t *)a->data = numel;
    return a;
  }
  int64_t start, count = mi__shape_op_range(n, in->rank, 1, &start);
  if ((a = mi_array_create(MI_DTYPE_INT64, 1, &count)))
    for (int64_t i = 0; i < count; i++) ((int64_t *)a->data)[i] = in->dims[start + i];
  return a;
}

/* 1 when node n can be evaluated now; shape queries set *query. The inputs are looked at
 * first: most nodes of a graph have a runtime input, and the op's look-ups cost more. */
static int foldable(const mi_graph_t *g, const mi_node_t *n, int *query) {
  int shape_op = (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0) &&
                 n->input_count >= 1 && n->inputs[0] >= 0 && n->output_count == 1;
  *query = 0;
  if (shape_op && !shape_known(&g->tensors[n->inputs[0]])) return 0;
  for (int32_t k = 0; !shape_op && k < n->input_count; k++)
    if (!is_const(g, n->inputs[k])) return 0;
  if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return 0;
  if (strcmp(n->op_type, "QuantizeLinear") == 0 || strcmp(n->op_type, "DequantizeLinear") == 0)
    return 0;
  if (!mi_ref_supports(n->op_type, g->opset)) return 0;
  for (int32_t k = 0; k < n->output_count; k++) {
    const mi_tensor_t *o = &g->tensors[n->outputs[k]];
    if (shape_known(o)) {
      int64_t numel = 1;
      for (int32_t d = 0; d < o->rank; d++) numel *= o->dims[d];
      if (mi_dtype_bytes_for(o->dtype, numel) > FOLD_MAX_BYTES) return 0;
    }
  }
  *query = shape_op;
  return 1;
}

/* A non-owning array header over an initializer's data. */
static void view(const mi_tensor_t *t, mi_array_t *a) {
  memset(a, 0, sizeof *a);
  a->dtype = t->dtype;
  a->rank = t->rank;
  for (int32_t d = 0; d < t->rank; d++) a->dims[d] = t->dims[d];
  a->data = t->data;
  a->nbytes = t->nbytes;
}

/* Makes tensor t the constant `a`. */
static int32_t store(mi_graph_t *g, int32_t t, const mi_array_t *a, mi_error_t *err) {
  mi_tensor_t *x = &g->tensors[t];
  int32_t rc;
  if (a->nbytes > FOLD_MAX_BYTES) return 0;
  if ((rc = mi_graph_set_data(g, t, a->data, a->nbytes)))
    return mi_errorf(err, rc, "fold constants: cannot store the value of '%s'", x->name);
  x->dtype = a->dtype;
  x->rank = a->rank;
  for (int32_t d = 0; d < MI_MAX_RANK; d++) {
    x->dims[d] = d < a->rank ? a->dims[d] : 0;
    free(x->dim_names[d]);
    x->dim_names[d] = NULL;
  }
  x->producer = -1;
  return MI_OK;
}

/* Evaluates node i into its outputs' tensors. Returns 1 when folded, 0 when it could not be
 * stored whole (too large), or -status. */
static int32_t fold_node(mi_graph_t *g, int32_t i, int query, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[i];
  mi_array_t views[16], *outs[16] = {0};
  const mi_array_t *ins[16];
  int32_t rc = MI_OK, res = 1;
  if (n->input_count > 16 || n->output_count > 16) return 0;
  if (query) {
    if (!(outs[0] = shape_query(g, n)))
      return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "fold constants: out of memory");
  } else {
    for (int32_t k = 0; k < n->input_count; k++) {
      ins[k] = NULL;
      if (n->inputs[k] < 0) continue;
      view(&g->tensors[n->inputs[k]], &views[k]);
      ins[k] = &views[k];
    }
    if ((rc = mi__ref_node(g, i, ins, outs, err))) return -rc;
  }
  for (int32_t k = 0; k < n->output_count; k++)
    if (!outs[k] || outs[k]->nbytes > FOLD_MAX_BYTES) res = 0;
  for (int32_t k = 0; res == 1 && k < n->output_count; k++)
    if ((rc = store(g, n->outputs[k], outs[k], err))) res = -rc;
  for (int32_t k = 0; k < n->output_count; k++) mi_array_destroy(outs[k]);
  return res;
}

/* Folds the nodes with want[i] != 0 (every node when want is NULL) that can be folded. */
static int32_t fold_some(mi_graph_t *g, const uint8_t *want, int32_t *folded, mi_error_t *err) {
  uint8_t *drop = NULL;
  int32_t rc, count = 0;
  if (folded) *folded = 0;
  if ((rc = mi_graph_toposort(g, err))) return rc;
  if (!(drop = calloc((size_t)g->node_count + 1, 1)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "fold constants: out of memory");
  /* Topological order: a node's constant inputs were folded before it is looked at. */
  for (int32_t i = 0; i < g->node_count; i++) {
    int query = 0;
    if ((want && !want[i]) || !foldable(g, &g->nodes[i], &query)) continue;
    int32_t r = fold_node(g, i, query, err);
    if (r < 0) {
      rc = -r;
      goto done;
    }
    drop[i] = (uint8_t)r;
    count += r;
  }
  if (count) rc = mi_graph_remove_nodes(g, drop, err);
done:
  free(drop);
  if (rc == MI_OK && folded) *folded = count;
  return rc;
}

MI_API int32_t mi_graph_fold_constants(mi_graph_t *g, int32_t *folded, mi_error_t *err) {
  if (folded) *folded = 0;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "fold constants: graph is NULL");
  return fold_some(g, NULL, folded, err);
}

/* Marks in want[] the producers of the `top` tensors on the stack and everything they depend
 * on (seen[]: tensors already stacked; the stack has room for every tensor). The graph is sorted,
 * so producers are set. */
static void mark_producers(const mi_graph_t *g, int32_t *stack, int32_t top, uint8_t *seen, uint8_t *want) {
  while (top > 0) {
    int32_t p = g->tensors[stack[--top]].producer;
    if (p < 0 || want[p]) continue;
    want[p] = 1;
    for (int32_t k = 0; k < g->nodes[p].input_count; k++) {
      int32_t t = g->nodes[p].inputs[k];
      if (t >= 0 && !seen[t]) {
        seen[t] = 1;
        stack[top++] = t;
      }
    }
  }
}

/* The layers whose second input is the weight the transform passes act on (space and transform
 * agree on these op types). */
static int weight_op(const mi_node_t *n) {
  return !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "MatMul");
}

MI_API int32_t mi_graph_fold_weights(mi_graph_t *g, int32_t *folded, mi_error_t *err) {
  int32_t *stack = NULL, top = 0, rc;
  uint8_t *want = NULL, *seen = NULL;
  if (folded) *folded = 0;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "fold weights: graph is NULL");
  if ((rc = mi_graph_toposort(g, err))) return rc;
  want = calloc((size_t)g->node_count + 1, 1);
  seen = calloc((size_t)g->tensor_count + 1, 1);
  stack = malloc(((size_t)g->tensor_count + 1) * sizeof *stack);
  if (!want || !seen || !stack) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "fold weights: out of memory");
    goto done;
  }
  /* The producers of every weight and bias that is not an initializer yet, back to the graph's
   * constants; fold_some evaluates those whose inputs all turn out constant. */
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    if (!weight_op(n)) continue;
    for (int32_t k = 1; k < n->input_count && k < 3; k++) {
      int32_t t = n->inputs[k];
      if (t >= 0 && !g->tensors[t].data && g->tensors[t].producer >= 0 && !seen[t]) {
        seen[t] = 1;
        stack[top++] = t;
      }
    }
  }
  mark_producers(g, stack, top, seen, want);
  for (int32_t i = 0; i < g->node_count; i++)
    if (want[i]) {
      rc = fold_some(g, want, folded, err);
      break;
    }
done:
  free(stack);
  free(seen);
  free(want);
  return rc;
}

static int is_if(const mi_node_t *n) {
  return strcmp(n->op_type, "If") == 0 && (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx"));
}

/* Marks the nodes some If's condition depends on (want[], node_count entries); 1 when the
 * graph has an If at all. The graph is sorted, so producers are set. */
static int32_t mark_conditions(const mi_graph_t *g, uint8_t *want, int *any, mi_error_t *err) {
  int32_t *stack = malloc(((size_t)g->tensor_count + 1) * sizeof *stack), top = 0;
  uint8_t *seen = calloc((size_t)g->tensor_count + 1, 1);
  *any = 0;
  if (!stack || !seen) {
    free(stack);
    free(seen);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "inline If: out of memory");
  }
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    if (!is_if(n) || n->input_count < 1 || n->inputs[0] < 0) continue;
    *any = 1;
    if (!seen[n->inputs[0]]) {
      seen[n->inputs[0]] = 1;
      stack[top++] = n->inputs[0];
    }
  }
  mark_producers(g, stack, top, seen, want);
  free(stack);
  free(seen);
  return MI_OK;
}

/* The truth of a constant condition (its first element), or -1 when it is not one. */
static int condition_value(const mi_tensor_t *t) {
  if (!t->data || t->nbytes == 0) return -1;
  switch (t->dtype) {
  case MI_DTYPE_FLOAT32:
    return t->nbytes >= 4 && *(const float *)t->data != 0.0f;
  case MI_DTYPE_INT64:
    return t->nbytes >= 8 && *(const int64_t *)t->data != 0;
  case MI_DTYPE_INT32:
    return t->nbytes >= 4 && *(const int32_t *)t->data != 0;
  case MI_DTYPE_BOOL:
  case MI_DTYPE_UINT8:
  case MI_DTYPE_INT8:
    return *(const uint8_t *)t->data != 0;
  default:
    return -1;
  }
}

MI_API int32_t mi_graph_make_static(mi_graph_t *g, int32_t *folded, mi_error_t *err) {
  int32_t rc;
  if (folded) *folded = 0;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "make static: graph is NULL");
  if ((rc = mi_graph_toposort(g, err)) || (rc = mi_graph_infer_shapes(g, err)) ||
      (rc = mi_graph_inline_ifs(g, NULL, err)))
    return rc;
  return mi_graph_fold_constants(g, folded, err);
}

MI_API int32_t mi_graph_inline_ifs(mi_graph_t *g, int32_t *inlined, mi_error_t *err) {
  int32_t rc = MI_OK, count = 0;
  if (inlined) *inlined = 0;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "inline If: graph is NULL");
  for (;;) {
    uint8_t *want;
    int any = 0, round = 0;
    if ((rc = mi_graph_toposort(g, err))) break;
    if (!(want = calloc((size_t)g->node_count + 1, 1))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "inline If: out of memory");
      break;
    }
    rc = mark_conditions(g, want, &any, err);
    /* Only what the conditions depend on is folded: the rest of the graph stays as it was. */
    if (rc == MI_OK && any) rc = fold_some(g, want, NULL, err);
    free(want);
    if (rc || !any) break;
    for (int32_t i = 0; i < g->node_count && rc == MI_OK; i++) {
      const mi_node_t *n = &g->nodes[i];
      int v = is_if(n) && n->input_count >= 1 && n->inputs[0] >= 0 ? condition_value(&g->tensors[n->inputs[0]]) : -1;
      if (v < 0) continue;
      rc = mi__graph_inline_if(g, i, v, err);
      round++;
      i = -1; /* indices changed: look again from the start */
    }
    count += round;
    if (rc || !round) break;
    /* The branch's nodes may hold Ifs of their own, whose conditions the next round folds. */
    if ((rc = mi_graph_toposort(g, err)) || (rc = mi_graph_infer_shapes(g, err))) break;
  }
  if (inlined) *inlined = count;
  return rc;
}
