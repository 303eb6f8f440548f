/* shape_infer_pick.c - shapes of OneHot, Compress and ReverseSequence. */
#include "graph/shape_infer.h"

/* indices' shape with depth (its value when known, else dynamic) inserted at axis, in the
 * dtype of values. */
int32_t mi__si_onehot(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n), axis;
  int64_t d[MI_MAX_RANK], cnt = 0;
  if (rc || (rc = mi__si_need(c, n, 3))) return rc;
  const mi_tensor_t *ind = mi__si_in(c, n, 0), *val = mi__si_in(c, n, 2);
  if (ind->rank < 0) {
    mi__si_set(c, n, 0, val->dtype, -1, NULL);
    return MI_OK;
  }
  if (ind->rank + 1 > MI_MAX_RANK)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "the output rank is above %d", MI_MAX_RANK);
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", -1), ind->rank + 1, &axis))) return rc;
  const double *dv = mi__si_val(c, n, 1, &cnt);
  int64_t depth = dv && cnt == 1 && dv[0] >= 1 && dv[0] < 1e12 ? (int64_t)dv[0] : MI_DIM_DYNAMIC;
  if (dv && cnt == 1 && !(dv[0] >= 1))
    return mi__si_fail(c, n, MI_ERR_PARSE, "depth %g must be at least 1", dv[0]);
  for (int32_t i = 0, k = 0; i <= ind->rank; i++) d[i] = i == axis ? depth : ind->dims[k++];
  mi__si_set(c, n, 0, val->dtype, ind->rank + 1, d);
  return MI_OK;
}

/* How many slices survive is data: that dim stays dynamic (1-D without an axis). */
int32_t mi__si_compress(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n), axis;
  int64_t d[MI_MAX_RANK] = {MI_DIM_DYNAMIC};
  if (rc || (rc = mi__si_need(c, n, 2))) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  if (!mi_node_attr(n, "axis")) {
    mi__si_set(c, n, 0, x->dtype, 1, d);
    return MI_OK;
  }
  if (x->rank < 0) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    return MI_OK;
  }
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", 0), x->rank, &axis))) return rc;
  for (int32_t i = 0; i < x->rank; i++) d[i] = i == axis ? MI_DIM_DYNAMIC : x->dims[i];
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  return MI_OK;
}

int32_t mi__si_reverse_sequence(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int64_t ta = mi_node_attr_int(n, "time_axis", 0), ba = mi_node_attr_int(n, "batch_axis", 1);
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_shaped_like(c, n, 2, MI_DTYPE_UNDEFINED, &x))) return rc;
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)) || (x->rank >= 0 && x->rank < 2))
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "time_axis and batch_axis must be 0 and 1 (got %lld, %lld) of a rank >= 2 "
                       "input",
                       (long long)ta, (long long)ba);
  return MI_OK;
}
