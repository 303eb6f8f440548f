/* ref_col2im.c - reference Col2Im (opset 18): the columns of an im2col, [N, C x prod(block),
 * L], added back into an image [N, C, image_shape...] of any number of spatial dims. */
#include <stdint.h>
#include <string.h>

#include "ref/ref_ops.h"

#define INTS (MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32))

/* Reads INTS attribute `name` of nsp values (mult per dim) into out, else dflt everywhere. */
static int32_t spatial(mi__ref_call_t *c, const char *name, int32_t nsp, int32_t mult, int64_t dflt, int64_t *out) {
  int64_t v[2 * MI_MAX_RANK];
  int32_t n, rc;
  if ((rc = mi__ref_attr_ints(c, name, v, 2 * MI_MAX_RANK, &n)) != MI_OK) return rc;
  if (n >= 0 && n != nsp * mult)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute '%s' has %d values, expected %d", name, (int)n,
                        (int)(nsp * mult));
  for (int32_t i = 0; i < nsp * mult; i++) out[i] = n < 0 ? dflt : v[i];
  return MI_OK;
}

int32_t mi__ref_col2im(mi__ref_call_t *c) {
  const mi_array_t *x, *ims, *bks;
  mi_array_t *y;
  int64_t img[MI_MAX_RANK], blk[MI_MAX_RANK], str[MI_MAX_RANK], dil[MI_MAX_RANK], pad[2 * MI_MAX_RANK];
  int64_t cnt[MI_MAX_RANK], dims[MI_MAX_RANK], kprod = 1, lprod = 1;
  int32_t ni, nb, rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, INTS, &ims)) != MI_OK || (rc = mi__ref_need(c, 2, INTS, &bks)) != MI_OK)
    return rc;
  if ((rc = mi__ref_read_ints(c, ims, "image_shape", img, MI_MAX_RANK - 2, &ni)) != MI_OK ||
      (rc = mi__ref_read_ints(c, bks, "block_shape", blk, MI_MAX_RANK - 2, &nb)) != MI_OK)
    return rc;
  if (x->rank != 3 || ni < 1 || ni != nb)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "input must be [N, C x block, L] and image_shape, block_shape of one length (got rank %d, "
                        "%d and %d values)",
                        (int)x->rank, (int)ni, (int)nb);
  if ((rc = spatial(c, "strides", ni, 1, 1, str)) != MI_OK || (rc = spatial(c, "dilations", ni, 1, 1, dil)) != MI_OK ||
      (rc = spatial(c, "pads", ni, 2, 0, pad)) != MI_OK)
    return rc;
  for (int32_t d = 0; d < ni; d++) {
    /* (bounded so that the sizes below cannot overflow) */
    if (img[d] < 1 || blk[d] < 1 || str[d] < 1 || dil[d] < 1 || pad[d] < 0 || pad[ni + d] < 0 ||
        img[d] > INT32_MAX || blk[d] > INT32_MAX || str[d] > INT32_MAX || dil[d] > INT32_MAX ||
        pad[d] > INT32_MAX || pad[ni + d] > INT32_MAX)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "image_shape, block_shape, strides, dilations must be in 1..2^31 and pads in 0..2^31 (dim %d)",
                          (int)d);
    int64_t span = img[d] + pad[d] + pad[ni + d] - (dil[d] * (blk[d] - 1) + 1);
    if (span < 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "the block does not fit the padded image on dim %d", (int)d);
    cnt[d] = span / str[d] + 1;
    kprod *= blk[d];
    lprod *= cnt[d];
    if (kprod > x->dims[1] || lprod > x->dims[2]) break; /* refused below, before any overflow */
  }
  if (x->dims[1] % kprod != 0 || x->dims[2] != lprod)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "input is [%lld, %lld, %lld]: needs a multiple of %lld (the block) by %lld (the blocks)",
                        (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)kprod,
                        (long long)lprod);
  int64_t C = x->dims[1] / kprod, plane = 1;
  dims[0] = x->dims[0], dims[1] = C;
  for (int32_t d = 0; d < ni; d++) dims[2 + d] = img[d], plane *= img[d];
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 2 + ni, dims, &y)) != MI_OK) return rc;
  const float *X = x->data;
  float *Y = y->data;
  int64_t zero[MI_MAX_RANK] = {0}, off = 0; /* the index walks need no offset */
  for (int64_t nc = 0; nc < x->dims[0] * C; nc++) {
    float *yp = Y + nc * plane;
    int64_t bi[MI_MAX_RANK] = {0};
    for (int64_t k = 0; k < kprod; k++) {
      const float *row = X + (nc * kprod + k) * lprod;
      int64_t li[MI_MAX_RANK] = {0};
      for (int64_t l = 0; l < lprod; l++) {
        int64_t at = 0, inside = 1;
        for (int32_t d = 0; d < ni && inside; d++) {
          int64_t p = li[d] * str[d] - pad[d] + bi[d] * dil[d];
          inside = p >= 0 && p < img[d];
          at = at * img[d] + p;
        }
        if (inside) yp[at] += row[l];
        mi__ref_index_next(ni, cnt, zero, li, &off);
      }
      mi__ref_index_next(ni, blk, zero, bi, &off);
    }
  }
  return MI_OK;
}
