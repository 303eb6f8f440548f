/* shape_infer_extra.c - output shapes of Det, CenterCropPad, MaxRoiPool, TensorScatter and Unique. */
#include <string.h>

#include "graph/shape_infer.h"

/* Det: [..., M, M] -> [...]. */
int32_t mi__si_det(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_open(c, n, 1, &x))) return rc == MI__SI_DONE ? MI_OK : rc;
  if (x->rank < 2 || (x->dims[x->rank - 1] >= 0 && x->dims[x->rank - 2] >= 0 && x->dims[x->rank - 1] != x->dims[x->rank - 2]))
    return mi__si_fail(c, n, MI_ERR_PARSE, "input must be [..., M, M]");
  mi__si_set(c, n, 0, x->dtype, x->rank - 2, x->dims);
  return MI_OK;
}

/* CenterCropPad: the axes given (default all) take shape's values, dynamic where not known. */
int32_t mi__si_center_crop_pad(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int64_t tgt[MI_MAX_RANK], dims[MI_MAX_RANK];
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_open(c, n, 2, &x))) return rc == MI__SI_DONE ? MI_OK : rc;
  const mi_attr_t *axes = mi_node_attr(n, "axes");
  int32_t na = axes && axes->type == MI_ATTR_INTS ? axes->count : x->rank;
  int64_t nt = mi__si_ints(c, n, 1, tgt, MI_MAX_RANK);
  if (na > x->rank || (nt >= 0 && nt != na))
    return mi__si_fail(c, n, MI_ERR_PARSE, "shape has %lld values for %d axes", (long long)nt, (int)na);
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int32_t i = 0; i < na; i++) {
    int32_t ax = i;
    if (axes && axes->type == MI_ATTR_INTS && (rc = mi__si_axis(c, n, axes->ints[i], x->rank, &ax))) return rc;
    dims[ax] = nt >= 0 ? tgt[i] : MI_DIM_DYNAMIC;
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, dims);
  return MI_OK;
}

/* MaxRoiPool: [R, C, pooled_shape]. */
int32_t mi__si_max_roi_pool(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *r;
  int32_t rc = mi__si_need(c, n, 2);
  if (rc) return rc;
  x = mi__si_in(c, n, 0), r = mi__si_in(c, n, 1);
  const mi_attr_t *ps = mi_node_attr(n, "pooled_shape");
  if (!ps || ps->type != MI_ATTR_INTS || ps->count != 2 || ps->ints[0] < 1 || ps->ints[1] < 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "pooled_shape must be two values >= 1");
  if ((x->rank >= 0 && x->rank != 4) || (r->rank >= 0 && (r->rank != 2 || (r->dims[1] >= 0 && r->dims[1] != 5))))
    return mi__si_fail(c, n, MI_ERR_PARSE, "X must be [N, C, H, W] and rois [R, 5]");
  int64_t dims[4] = {r->rank == 2 ? r->dims[0] : MI_DIM_DYNAMIC, x->rank == 4 ? x->dims[1] : MI_DIM_DYNAMIC,
                     ps->ints[0], ps->ints[1]};
  mi__si_set(c, n, 0, x->dtype, 4, dims);
  return MI_OK;
}

/* TensorScatter: present_cache has past_cache's type and shape. */
int32_t mi__si_tensor_scatter(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  const char *mode = mi_node_attr_string(n, "mode", "linear");
  if (rc || (rc = mi__si_need(c, n, 2))) return rc;
  if (strcmp(mode, "linear") && strcmp(mode, "circular"))
    return mi__si_fail(c, n, MI_ERR_PARSE, "mode '%s' is not linear or circular", mode);
  return mi__si_same_shape(c, n);
}

/* Unique: how many distinct values or slices there are is data, so that dim is dynamic: Y [U]
 * (flattened) or X's shape with U on the axis; indices and counts [U]; inverse_indices one per
 * element or slice of X. */
int32_t mi__si_unique(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int64_t dims[MI_MAX_RANK], du[1] = {MI_DIM_DYNAMIC}, ds[1];
  int32_t rc = mi__si_since(c, n), ax = -1;
  if (rc || (rc = mi__si_open(c, n, 1, &x))) return rc == MI__SI_DONE ? MI_OK : rc;
  const mi_attr_t *axis = mi_node_attr(n, "axis");
  if (axis && (rc = mi__si_axis(c, n, axis->i, x->rank, &ax))) return rc;
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  ds[0] = ax >= 0 ? x->dims[ax] : mi__tensor_numel(x);
  if (ax >= 0) dims[ax] = MI_DIM_DYNAMIC;
  mi__si_set(c, n, 0, x->dtype, ax >= 0 ? x->rank : 1, ax >= 0 ? dims : du);
  mi__si_set(c, n, 1, MI_DTYPE_INT64, 1, du);
  mi__si_set(c, n, 2, MI_DTYPE_INT64, 1, ds);
  mi__si_set(c, n, 3, MI_DTYPE_INT64, 1, du);
  return MI_OK;
}
