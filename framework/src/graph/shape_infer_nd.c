/* shape_infer_nd.c - shapes of GatherND, ScatterElements and NonMaxSuppression. */
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_gather_nd(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *ind;
  int32_t rc = mi__si_open2(c, n, 2, 1, &x, &ind);
  int64_t b = mi_node_attr_int(n, "batch_dims", 0), d[MI_MAX_RANK];
  if (rc) return rc;
  if ((rc = mi__si_since(c, n))) return rc;
  if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "batch_dims %lld must be below the ranks of data (%d) and indices (%d)",
                       (long long)b, (int)x->rank, (int)ind->rank);
  int64_t k = ind->dims[ind->rank - 1];
  if (k < 0) { /* the tuple length decides the rank */
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    return MI_OK;
  }
  if (k < 1 || k > x->rank - b)
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "the last dim of indices is %lld, it must be 1..%d (data rank - batch_dims)",
                       (long long)k, (int)(x->rank - b));
  int32_t r = 0;
  for (int32_t i = 0; i < ind->rank - 1; i++) d[r++] = ind->dims[i];
  if (r + x->rank - b - k > MI_MAX_RANK)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "the output rank is above %d", MI_MAX_RANK);
  for (int64_t i = b + k; i < x->rank; i++) d[r++] = x->dims[i];
  mi__si_set(c, n, 0, x->dtype, r, d);
  return MI_OK;
}

int32_t mi__si_scatter_elements(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_since(c, n), a; /* ScatterElements from 11; Scatter, its older name, 9 */
  if (rc || (rc = mi__si_shaped_like(c, n, 3, MI_DTYPE_UNDEFINED, &x))) return rc;
  const char *red = c->g->opset >= 16 ? mi_node_attr_string(n, "reduction", "none") : "none";
  int64_t need = strcmp(red, "none") == 0                             ? 1
                 : strcmp(red, "add") == 0 || strcmp(red, "mul") == 0 ? 16
                 : strcmp(red, "max") == 0 || strcmp(red, "min") == 0 ? 18
                                                                      : -1;
  if (need < 0 || c->g->opset < need)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "reduction '%s' is not supported", red);
  const mi_tensor_t *ind = mi__si_in(c, n, 1), *upd = mi__si_in(c, n, 2);
  if (x->rank >= 0 && (rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", 0), x->rank, &a)))
    return rc;
  if (x->rank >= 0 && ((ind->rank >= 0 && ind->rank != x->rank) ||
                       (upd->rank >= 0 && upd->rank != x->rank)))
    return mi__si_fail(c, n, MI_ERR_PARSE, "indices and updates must have the data's rank %d",
                       (int)x->rank);
  return MI_OK;
}

/* [selected, 3]: how many boxes survive is data, so the first dim stays dynamic (as NonZero's). */
int32_t mi__si_nms(mi__si_t *c, const mi_node_t *n) {
  int64_t d[2] = {MI_DIM_DYNAMIC, 3}, cpb = mi_node_attr_int(n, "center_point_box", 0);
  int32_t rc = mi__si_need(c, n, 2);
  if (rc) return rc;
  if (c->g->opset < 10) return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "the op exists from opset 10 on");
  if (cpb != 0 && cpb != 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "center_point_box must be 0 or 1, got %lld",
                       (long long)cpb);
  const mi_tensor_t *b = mi__si_in(c, n, 0), *s = mi__si_in(c, n, 1);
  if ((b->rank >= 0 && (b->rank != 3 || (b->dims[2] >= 0 && b->dims[2] != 4))) ||
      (s->rank >= 0 && s->rank != 3))
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  mi__si_set(c, n, 0, MI_DTYPE_INT64, 2, d);
  return MI_OK;
}
