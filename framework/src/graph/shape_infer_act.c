/* shape_infer_act.c - shapes of Elu, Selu, Celu, Softsign, Mish, ThresholdedRelu, Shrink,
 * CastLike, GroupNormalization, LpNormalization and MeanVarianceNormalization, with the refusals
 * the interpreter makes too. */
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_act(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  if (rc) return rc;
  if (strcmp(n->op_type, "Celu") == 0 && mi_node_attr_float(n, "alpha", 1.0f) == 0.0f)
    return mi__si_fail(c, n, MI_ERR_INVALID_ARGUMENT, "alpha must not be 0");
  return mi__si_same_shape(c, n);
}

int32_t mi__si_castlike(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 2))) return rc;
  return mi__si_shaped_like(c, n, 2, mi__si_in(c, n, 1)->dtype, NULL);
}

/* Scale and bias: one value per group (opset 18) or per channel (21). */
static int32_t check_vec(mi__si_t *c, const mi_node_t *n, int32_t k, int64_t want) {
  const mi_tensor_t *t = mi__si_in(c, n, k);
  if (want < 0 || t->rank < 0) return MI_OK;
  if (t->rank != 1 || (t->dims[0] >= 0 && t->dims[0] != want))
    return mi__si_fail(c, n, MI_ERR_PARSE, "%s must be 1-D with %lld values",
                       k == 1 ? "scale" : "bias", (long long)want);
  return MI_OK;
}

int32_t mi__si_groupnorm(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int64_t G = mi_node_attr_int(n, "num_groups", 0);
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_shaped_like(c, n, 3, MI_DTYPE_UNDEFINED, &x))) return rc;
  if (G <= 0) return mi__si_fail(c, n, MI_ERR_PARSE, "num_groups must be positive");
  if (x->rank >= 0 && x->rank < 2)
    return mi__si_fail(c, n, MI_ERR_PARSE, "X must have rank 2 or more, got %d", (int)x->rank);
  int64_t C = x->rank >= 2 ? x->dims[1] : -1;
  if (C >= 0 && C % G != 0)
    return mi__si_fail(c, n, MI_ERR_PARSE, "num_groups %lld does not divide the %lld channels",
                       (long long)G, (long long)C);
  int64_t want = c->g->opset >= 21 ? C : G;
  if ((rc = check_vec(c, n, 1, want)) || (rc = check_vec(c, n, 2, want))) return rc;
  return MI_OK;
}

/* LpNormalization (axis, p 1 or 2) and MeanVarianceNormalization (axes): the input's shape. */
int32_t mi__si_lpnorm(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_since(c, n), a;
  if (rc || (rc = mi__si_shaped_like(c, n, 1, MI_DTYPE_UNDEFINED, &x))) return rc;
  if (n->op_type[0] == 'L') {
    int64_t p = mi_node_attr_int(n, "p", 2);
    if (p != 1 && p != 2)
      return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "p = %lld is not supported (only 1 and 2)",
                         (long long)p);
    if (x->rank >= 0) return mi__si_axis(c, n, mi_node_attr_int(n, "axis", -1), x->rank, &a);
    return MI_OK;
  }
  const mi_attr_t *ax = mi_node_attr(n, "axes");
  if (x->rank < 0) return MI_OK;
  if (!ax) return x->rank > 3 ? MI_OK : mi__si_axis(c, n, 3, x->rank, &a); /* default 0, 2, 3 */
  for (int32_t i = 0; ax->type == MI_ATTR_INTS && i < ax->count; i++)
    if ((rc = mi__si_axis(c, n, ax->ints[i], x->rank, &a))) return rc;
  return MI_OK;
}
