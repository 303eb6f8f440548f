/* shape_infer_vision.c - output shapes of LRN, GridSample and RoiAlign, with the attribute
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
