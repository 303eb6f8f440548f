/* ref_pick.c - reference OneHot, Hardmax, Compress and ReverseSequence: ops that pick or move
 * whole elements by a rule (an index, the maximum, a mask, a length). */
#include <string.h>

#include "ref/ref_ops.h"

#define NUMERIC                                                                                  \
  (MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) | \
   MI_DTYPE_BIT(MI_DTYPE_INT16) | MI_DTYPE_BIT(MI_DTYPE_UINT16) | MI_DTYPE_BIT(MI_DTYPE_INT32) | \
   MI_DTYPE_BIT(MI_DTYPE_UINT32) | MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_UINT64))

/* Element i of a numeric array as a double (floats truncate later, as ONNX casts them). */
static double num_at(const mi_array_t *a, int64_t i) {
  if (a->dtype == MI_DTYPE_FLOAT32) return ((const float *)a->data)[i];
  return mi__int_load_f64(a->data, a->dtype, i);
}

/* y has indices' shape with `depth` inserted at axis; y[..., j at axis, ...] = on where
 * j == index (a negative index counts from depth), else off; out-of-range indices give all off. */
int32_t mi__ref_onehot(mi__ref_call_t *c) {
  const mi_array_t *ind, *dep, *val;
  mi_array_t *y;
  int32_t rc, axis;
  int64_t dims[MI_MAX_RANK];
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, NUMERIC, &ind)) != MI_OK ||
      (rc = mi__ref_need(c, 1, NUMERIC, &dep)) != MI_OK || (rc = mi__ref_need(c, 2, 0, &val)) != MI_OK)
    return rc;
  if (mi_array_numel(dep) != 1 || mi_array_numel(val) != 2 || val->rank != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "depth must be one value and values [off, on] two");
  if (ind->rank + 1 > MI_MAX_RANK)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the output rank is above %d", MI_MAX_RANK);
  double dd = num_at(dep, 0);
  if (!(dd >= 1 && dd < 1e12))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "depth %g must be at least 1", dd);
  int64_t depth = (int64_t)dd;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -1), ind->rank + 1, &axis)) != MI_OK)
    return rc;
  for (int32_t d = 0, k = 0; d <= ind->rank; d++) dims[d] = d == axis ? depth : ind->dims[k++];
  if ((rc = mi__ref_make_out(c, 0, val->dtype, ind->rank + 1, dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(val->dtype);
  int64_t inner = 1, n = mi_array_numel(y);
  for (int32_t d = axis + 1; d <= ind->rank; d++) inner *= dims[d];
  for (int64_t i = 0; i < n; i++) {
    /* output i = (outer o, j along axis, inner r); its index is ind[o * inner + r] */
    int64_t r = i % inner, j = (i / inner) % depth, o = i / inner / depth;
    double v = num_at(ind, o * inner + r);
    int64_t k = v > -1e15 && v < 1e15 ? (int64_t)v : depth; /* NaN, huge: out of range */
    if (k < 0) k += depth;                                  /* also under opset 9, whose text says out of range: as ONNX Runtime */
    memcpy((char *)y->data + (size_t)i * es, (const char *)val->data + (k == j ? es : 0), es);
  }
  return MI_OK;
}

/* 1 at the first maximum along the axis, 0 elsewhere; before opset 13 the input is a 2-D
 * [prod(dims[:axis]), prod(dims[axis:])] matrix, each row one line. */
int32_t mi__ref_hardmax(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc, axis;
  if ((rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x)) != MI_OK) return rc;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", c->opset >= 13 ? -1 : 1),
                         x->rank ? x->rank : 1, &axis)) != MI_OK)
    return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t len = 1, inner = 1, n = mi_array_numel(x);
  if (c->opset >= 13) {
    len = x->rank ? x->dims[axis] : 1;
    for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  } else {
    for (int32_t d = axis; d < x->rank; d++) len *= x->dims[d];
  }
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t base = 0; len > 0 && base < n; base += len * inner)
    for (int64_t r = 0; r < inner; r++) {
      int64_t best = 0;
      for (int64_t k = 1; k < len; k++)
        if (xp[base + k * inner + r] > xp[base + best * inner + r]) best = k;
      yp[base + best * inner + r] = 1.0f;
    }
  return MI_OK;
}

/* The slices along axis (or, without one, the elements of the flattened input) whose condition
 * is true; a condition shorter than the axis drops the rest. */
int32_t mi__ref_compress(mi__ref_call_t *c) {
  const mi_array_t *x, *cond;
  mi_array_t *y;
  int32_t rc, axis = -1;
  int64_t dims[MI_MAX_RANK], len, inner = 1, outer = 1, kept = 0;
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_BOOL), &cond)) != MI_OK)
    return rc;
  if (cond->rank != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "condition must be 1-D, got rank %d",
                        (int)cond->rank);
  if (mi_node_attr(c->node, "axis") &&
      (rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x->rank, &axis)) != MI_OK)
    return rc;
  len = axis < 0 ? mi_array_numel(x) : x->dims[axis];
  if (cond->dims[0] > len)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "condition has %lld values, the %s %lld",
                        (long long)cond->dims[0], axis < 0 ? "input" : "axis",
                        (long long)len);
  for (int64_t i = 0; i < cond->dims[0]; i++) kept += ((const uint8_t *)cond->data)[i] != 0;
  for (int32_t d = axis + 1; axis >= 0 && d < x->rank; d++) inner *= x->dims[d];
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = 0; d < x->rank; d++) dims[d] = d == axis ? kept : x->dims[d];
  if (axis < 0) dims[0] = kept;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, axis < 0 ? 1 : x->rank, dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype), row = (size_t)inner * es;
  char *dst = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < cond->dims[0]; k++)
      if (((const uint8_t *)cond->data)[k]) {
        memcpy(dst, (const char *)x->data + ((size_t)(o * len + k)) * row, row);
        dst += row;
      }
  return MI_OK;
}

/* For each batch b, the first sequence_lens[b] steps along time_axis are reversed, the rest
 * copied; time_axis and batch_axis are 0 and 1 (either way round). */
int32_t mi__ref_reverse_sequence(mi__ref_call_t *c) {
  const mi_array_t *x, *lens;
  mi_array_t *y;
  int32_t rc;
  int64_t ta = mi_node_attr_int(c->node, "time_axis", 0), ba = mi_node_attr_int(c->node, "batch_axis", 1);
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_INT64), &lens)) != MI_OK)
    return rc;
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)) || x->rank < 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "time_axis and batch_axis must be 0 and 1 (got %lld, %lld) of a rank >= 2 "
                        "input",
                        (long long)ta, (long long)ba);
  int64_t B = x->dims[ba], T = x->dims[ta], inner = 1;
  if (lens->rank != 1 || lens->dims[0] != B)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "sequence_lens must be 1-D with %lld values",
                        (long long)B);
  for (int32_t d = 2; d < x->rank; d++) inner *= x->dims[d];
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  size_t row = (size_t)inner * mi_dtype_size(x->dtype);
  for (int64_t b = 0; b < B; b++) {
    int64_t L = ((const int64_t *)lens->data)[b];
    if (L < 0 || L > T)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] = %lld is outside 0..%lld",
                          (long long)b, (long long)L, (long long)T);
    for (int64_t t = 0; t < T; t++) {
      int64_t src = t < L ? L - 1 - t : t;
      int64_t yo = ta == 0 ? t * B + b : b * T + t, xo = ta == 0 ? src * B + b : b * T + src;
      memcpy((char *)y->data + (size_t)yo * row, (const char *)x->data + (size_t)xo * row, row);
    }
  }
  return MI_OK;
}
