/* shape_infer_deform.c - output shapes of DeformConv (Conv's rule plus the offset and mask
 * shapes) and Col2Im (the image from image_shape's values), with their attribute checks. */
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_deform_conv(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *w, *off, *mask;
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 3))) return rc;
  x = mi__si_in(c, n, 0), w = mi__si_in(c, n, 1), off = mi__si_in(c, n, 2), mask = mi__si_in(c, n, 4);
  if ((x->rank >= 0 && x->rank != 4) || (w->rank >= 0 && w->rank != 4) || (off->rank >= 0 && off->rank != 4))
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "X, W and offset must be 4-D (2-D deformable convolution)");
  int64_t og = mi_node_attr_int(n, "offset_group", 1);
  if (og < 1 || (x->rank == 4 && x->dims[1] >= 0 && x->dims[1] % og))
    return mi__si_fail(c, n, MI_ERR_PARSE, "offset_group %lld does not divide the channels", (long long)og);
  if ((rc = mi__si_conv(c, n))) return rc;
  if (w->rank == 4 && w->dims[2] >= 0 && w->dims[3] >= 0) {
    int64_t k = w->dims[2] * w->dims[3];
    if (off->rank == 4 && off->dims[1] >= 0 && off->dims[1] != og * 2 * k)
      return mi__si_fail(c, n, MI_ERR_PARSE, "offset has %lld channels, expected %lld", (long long)off->dims[1],
                         (long long)(og * 2 * k));
    if (mask && mask->rank == 4 && mask->dims[1] >= 0 && mask->dims[1] != og * k)
      return mi__si_fail(c, n, MI_ERR_PARSE, "mask has %lld channels, expected %lld", (long long)mask->dims[1],
                         (long long)(og * k));
  }
  return MI_OK;
}

/* Col2Im: [N, C / prod(block_shape), image_shape...]; the spatial dims are dynamic unless
 * image_shape's values are known, C unless block_shape's are. */
int32_t mi__si_col2im(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *is;
  int64_t img[MI_MAX_RANK], blk[MI_MAX_RANK], dims[MI_MAX_RANK];
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 3))) return rc;
  x = mi__si_in(c, n, 0), is = mi__si_in(c, n, 1);
  if (x->rank >= 0 && x->rank != 3) return mi__si_fail(c, n, MI_ERR_PARSE, "input must be 3-D, got rank %d", (int)x->rank);
  int64_t ni = mi__si_ints(c, n, 1, img, MI_MAX_RANK - 2), nb = mi__si_ints(c, n, 2, blk, MI_MAX_RANK - 2);
  int64_t nsp = ni >= 0 ? ni : is->rank == 1 ? is->dims[0]
                                             : -1;
  if (nsp < 0 || nsp > MI_MAX_RANK - 2) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    return MI_OK;
  }
  if (nsp < 1 || (nb >= 0 && nb != nsp))
    return mi__si_fail(c, n, MI_ERR_PARSE, "image_shape and block_shape must have one length >= 1");
  int64_t kprod = 1;
  for (int64_t d = 0; nb >= 0 && d < nb; d++) {
    if (blk[d] < 1) return mi__si_fail(c, n, MI_ERR_PARSE, "block_shape must be >= 1");
    kprod = kprod <= INT32_MAX && blk[d] <= INT32_MAX ? kprod * blk[d] : -1;
  }
  dims[0] = x->rank == 3 ? x->dims[0] : MI_DIM_DYNAMIC;
  dims[1] = x->rank == 3 && x->dims[1] >= 0 && nb >= 0 && kprod > 0 ? x->dims[1] / kprod : MI_DIM_DYNAMIC;
  if (dims[1] >= 0 && x->dims[1] % kprod)
    return mi__si_fail(c, n, MI_ERR_PARSE, "input's %lld channels are no multiple of the block's %lld",
                       (long long)x->dims[1], (long long)kprod);
  for (int64_t d = 0; d < nsp; d++) dims[2 + d] = ni >= 0 ? img[d] : MI_DIM_DYNAMIC;
  mi__si_set(c, n, 0, x->dtype, (int32_t)(2 + nsp), dims);
  return MI_OK;
}
