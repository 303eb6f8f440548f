/* shape_infer_vision.c - output shapes of LRN, GridSample, AffineGrid, RoiAlign and MaxUnpool, with the attribute
 * checks that do not need input values (the interpreter repeats them on the actual inputs). */
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_lrn(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_shaped_like(c, n, 1, MI_DTYPE_UNDEFINED, &x);
  if (rc) return rc;
  if (mi_node_attr_int(n, "size", 0) < 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "attribute size must be given and >= 1");
  if (x->rank >= 0 && x->rank < 3)
    return mi__si_fail(c, n, MI_ERR_PARSE, "X must be [N, C, D1, ...], got rank %d", (int)x->rank);
  return MI_OK;
}

/* Y [N, C, grid's spatial dims]. */
int32_t mi__si_gridsample(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *grid;
  int64_t dims[MI_MAX_RANK];
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_open2(c, n, 2, 1, &x, &grid))) return rc;
  int late = c->g->opset >= 20, d = x->rank - 2;
  const char *ms = mi_node_attr_string(n, "mode", late ? "linear" : "bilinear");
  const char *ps = mi_node_attr_string(n, "padding_mode", "zeros");
  int cubic = !strcmp(ms, late ? "cubic" : "bicubic");
  if (!cubic && strcmp(ms, "nearest") && strcmp(ms, late ? "linear" : "bilinear"))
    return mi__si_fail(c, n, MI_ERR_PARSE, "mode '%s' is not one of %s", ms,
                       late ? "linear, nearest, cubic" : "bilinear, nearest, bicubic");
  if (strcmp(ps, "zeros") && strcmp(ps, "border") && strcmp(ps, "reflection"))
    return mi__si_fail(c, n, MI_ERR_PARSE, "padding_mode '%s' is not one of zeros, border, reflection", ps);
  if (d != 2 && !(late && d == 3))
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "X of rank %d: only 4-D%s is supported", (int)x->rank,
                       late ? " and 5-D" : "");
  if (d == 3 && cubic) return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "cubic mode on a 5-D X is not supported");
  if (grid->rank != x->rank || (grid->dims[d + 1] >= 0 && grid->dims[d + 1] != d))
    return mi__si_fail(c, n, MI_ERR_PARSE, "grid must be [N, ..., %d] of rank %d", d, (int)x->rank);
  dims[0] = x->dims[0] >= 0 ? x->dims[0] : grid->dims[0];
  dims[1] = x->dims[1];
  for (int32_t a = 0; a < d; a++) dims[2 + a] = grid->dims[1 + a];
  mi__si_set(c, n, 0, x->dtype, x->rank, dims);
  return MI_OK;
}

/* Y [R, C, output_height, output_width], R from rois (or batch_indices). */
int32_t mi__si_roialign(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *rois, *bi;
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 3))) return rc;
  x = mi__si_in(c, n, 0), rois = mi__si_in(c, n, 1), bi = mi__si_in(c, n, 2);
  int64_t oh = mi_node_attr_int(n, "output_height", 1), ow = mi_node_attr_int(n, "output_width", 1);
  const char *ms = mi_node_attr_string(n, "mode", "avg");
  const char *ct = mi_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
  if (oh < 1 || ow < 1 || mi_node_attr_int(n, "sampling_ratio", 0) < 0)
    return mi__si_fail(c, n, MI_ERR_PARSE, "output_height, output_width must be >= 1 and sampling_ratio >= 0");
  if (strcmp(ms, "avg") && strcmp(ms, "max")) return mi__si_fail(c, n, MI_ERR_PARSE, "mode '%s' is not avg or max", ms);
  if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
    return mi__si_fail(c, n, MI_ERR_PARSE, "coordinate_transformation_mode '%s' is not half_pixel or output_half_pixel", ct);
  if (x->rank >= 0 && x->rank != 4) return mi__si_fail(c, n, MI_ERR_PARSE, "X must be 4-D, got rank %d", (int)x->rank);
  if (rois->rank >= 0 && (rois->rank != 2 || (rois->dims[1] >= 0 && rois->dims[1] != 4)))
    return mi__si_fail(c, n, MI_ERR_PARSE, "rois must be [R, 4]");
  if (bi->rank >= 0 && bi->rank != 1) return mi__si_fail(c, n, MI_ERR_PARSE, "batch_indices must be 1-D");
  int64_t R = rois->rank == 2 && rois->dims[0] >= 0 ? rois->dims[0] : bi->rank == 1 ? bi->dims[0]
                                                                                    : -1;
  int64_t dims[4] = {R, x->rank == 4 ? x->dims[1] : -1, oh, ow};
  mi__si_set(c, n, 0, x->dtype, 4, dims);
  return MI_OK;
}

/* AffineGrid: [N, H, W, 2] from size (N, C, H, W), [N, D, H, W, 3] from (N, C, D, H, W); dims
 * dynamic where size's values are not known. */
int32_t mi__si_affine_grid(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 2))) return rc;
  const mi_tensor_t *s = mi__si_in(c, n, 1);
  int64_t cnt = 0, dims[5];
  const double *v = mi__si_val(c, n, 1, &cnt);
  int64_t len = v ? cnt : s->rank == 1 ? s->dims[0]
                                       : -1;
  if (len < 0) {
    mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, -1, NULL);
    return MI_OK;
  }
  if (len != 4 && len != 5) return mi__si_fail(c, n, MI_ERR_PARSE, "size must have 4 or 5 values, has %lld", (long long)len);
  dims[0] = v && !isnan(v[0]) ? mi__si_d2i(v[0]) : -1;
  for (int64_t a = 2; a < len; a++) dims[a - 1] = v && !isnan(v[a]) ? mi__si_d2i(v[a]) : -1;
  dims[len - 1] = len - 2;
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, (int32_t)len, dims);
  return MI_OK;
}

/* MaxUnpool: (in - 1) * stride + kernel - pads per spatial dim, or output_shape's values. */
int32_t mi__si_max_unpool(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int64_t dims[MI_MAX_RANK];
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_open(c, n, 2, &x))) return rc;
  int32_t r = x->rank, sp = r - 2;
  if (r < 3) return mi__si_fail(c, n, MI_ERR_PARSE, "X must be [N, C, D...], got rank %d", (int)r);
  const mi_attr_t *k = mi_node_attr(n, "kernel_shape"), *st = mi_node_attr(n, "strides"), *pads = mi_node_attr(n, "pads");
  int32_t ns = st ? st->count : -1, np = pads ? pads->count : -1;
  if (!k || k->type != MI_ATTR_INTS || k->count != sp || (st && (st->type != MI_ATTR_INTS || ns != sp)) ||
      (pads && (pads->type != MI_ATTR_INTS || np != 2 * sp)))
    return mi__si_fail(c, n, MI_ERR_PARSE, "kernel_shape, strides and pads must match the %d spatial dims", (int)sp);
  if (mi__si_in(c, n, 2)) {
    int64_t cnt = 0;
    const double *v = mi__si_val(c, n, 2, &cnt);
    for (int32_t d = 0; d < r; d++) dims[d] = v && cnt == r && !isnan(v[d]) ? mi__si_d2i(v[d]) : -1;
  } else {
    dims[0] = x->dims[0], dims[1] = x->dims[1];
    for (int32_t d = 0; d < sp; d++)
      dims[2 + d] = x->dims[2 + d] < 0 ? -1
                                       : (x->dims[2 + d] - 1) * (ns > 0 ? st->ints[d] : 1) + k->ints[d] -
                                             (np > 0 ? pads->ints[d] + pads->ints[sp + d] : 0);
  }
  mi__si_set(c, n, 0, x->dtype, r, dims);
  return MI_OK;
}
