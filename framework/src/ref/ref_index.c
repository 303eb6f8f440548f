/* ref_index.c - reference ops that move elements to or from positions an index tensor names:
 * GatherElements, GatherND, ScatterND and ScatterElements (PyTorch's gather, index_put, slice
 * assignment and scatter / scatter_reduce exports; TensorFlow's gather_nd). */
#include <string.h>

#include "ref/ref_ops.h"

#define INDEX_DTYPES (MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32))

static int64_t index_at(const mi_array_t *ind, int64_t i) {
  return ind->dtype == MI_DTYPE_INT64 ? ((const int64_t *)ind->data)[i]
                                      : ((const int32_t *)ind->data)[i];
}

/* The element offset in x that element i of ind names along `axis` (pos: i's coordinates in
 * ind, advanced here to i + 1's; xstride: x's strides); a one-line error for an index out of
 * range. GatherElements and ScatterElements walk their indices this way. */
static int32_t element_at(mi__ref_call_t *c, const mi_array_t *x, const mi_array_t *ind, int64_t i,
                          int32_t axis, const int64_t *xstride, int64_t *pos, int64_t *off) {
  int64_t k = index_at(ind, i), len = x->dims[axis];
  if (k < -len || k >= len)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "index %lld is out of range for axis %d of size %lld",
                        (long long)k, (int)axis, (long long)len);
  if (k < 0) k += len;
  *off = 0;
  for (int32_t d = 0; d < x->rank; d++) *off += (d == axis ? k : pos[d]) * xstride[d];
  for (int32_t d = ind->rank - 1; d >= 0 && ++pos[d] == ind->dims[d]; d--) pos[d] = 0;
  return MI_OK;
}

/* y[i0..,ia,..] = x[i0..,ind[i0..,ia,..],..]: the output has the indices' shape; along every
 * other axis the indices may be smaller than the data (ONNX allows it), never larger. */
int32_t mi__ref_gather_elements(mi__ref_call_t *c) {
  const mi_array_t *x, *ind;
  mi_array_t *y;
  int32_t rc, axis;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, INDEX_DTYPES, &ind)) != MI_OK)
    return rc;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x->rank, &axis)) != MI_OK)
    return rc;
  if (ind->rank != x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "indices have rank %d, data rank %d",
                        (int)ind->rank, (int)x->rank);
  for (int32_t d = 0; d < x->rank; d++)
    if (d != axis && ind->dims[d] > x->dims[d])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "indices dim %d is %lld, larger than the data's %lld", (int)d,
                          (long long)ind->dims[d], (long long)x->dims[d]);
  if ((rc = mi__ref_make_out(c, 0, x->dtype, ind->rank, ind->dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t n = mi_array_numel(ind), xstride[MI_MAX_RANK], pos[MI_MAX_RANK], off;
  mi__ref_strides(x->rank, x->dims, xstride);
  memset(pos, 0, sizeof pos);
  for (int64_t i = 0; i < n; i++) {
    if ((rc = element_at(c, x, ind, i, axis, xstride, pos, &off)) != MI_OK) return rc;
    memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
  }
  return MI_OK;
}

typedef enum { RED_NONE,
               RED_ADD,
               RED_MUL,
               RED_MAX,
               RED_MIN } reduction_t;

static void combine(int32_t dtype, reduction_t r, char *dst, const char *src) {
  if (dtype == MI_DTYPE_FLOAT32) {
    float a = *(float *)dst, b = *(const float *)src;
    *(float *)dst = r == RED_ADD ? a + b : r == RED_MUL ? a * b
                                       : r == RED_MAX   ? (a > b ? a : b)
                                                        : (a < b ? a : b);
    return;
  }
  /* Integers of any width: add and mul wrap at the type's width (the store keeps the low
   * bits); max and min compare unsigned types as unsigned. */
  int64_t a = mi__int_load(dst, dtype, 0), b = mi__int_load(src, dtype, 0), v;
  int u = mi__dtype_is_unsigned(dtype), gt = u ? (uint64_t)a > (uint64_t)b : a > b;
  switch (r) {
  case RED_ADD: v = (int64_t)((uint64_t)a + (uint64_t)b); break;
  case RED_MUL: v = (int64_t)((uint64_t)a * (uint64_t)b); break;
  case RED_MAX: v = gt ? a : b; break;
  default: v = gt ? b : a; break; /* RED_MIN */
  }
  mi__int_store(dst, dtype, 0, v);
}

/* y = copy of data; for every index tuple (the last dim of `indices`, q of them), the slice
 * data[tuple] is replaced by (or, with `reduction`, combined with) the matching updates slice.
 * Updates apply in index order, so with duplicate tuples and no reduction the last one wins
 * (ONNX leaves that order undefined; ONNX Runtime applies them in order too). */
/* The `reduction` attribute of ScatterND and ScatterElements: add and mul from opset 16, max
 * and min from 18. */
static int32_t read_reduction(mi__ref_call_t *c, reduction_t *r) {
  const char *red = c->opset >= 16 ? mi_node_attr_string(c->node, "reduction", "none") : "none";
  if (strcmp(red, "none") == 0) *r = RED_NONE;
  else if (strcmp(red, "add") == 0)
    *r = RED_ADD;
  else if (strcmp(red, "mul") == 0)
    *r = RED_MUL;
  else if (strcmp(red, "max") == 0 && c->opset >= 18)
    *r = RED_MAX;
  else if (strcmp(red, "min") == 0 && c->opset >= 18)
    *r = RED_MIN;
  else
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "reduction '%s' is not supported", red);
  return MI_OK;
}

int32_t mi__ref_scatter_nd(mi__ref_call_t *c) {
  const mi_array_t *x, *ind, *upd;
  mi_array_t *y;
  int32_t rc;
  reduction_t r;
  if ((rc = read_reduction(c, &r)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_INT64), &ind)) != MI_OK ||
      (rc = mi__ref_need(c, 2, MI_DTYPE_BIT(x->dtype), &upd)) != MI_OK)
    return rc;
  if (r != RED_NONE && x->dtype != MI_DTYPE_FLOAT32 && !mi__dtype_is_int(x->dtype))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "a reduction on %s data is not supported",
                        mi_dtype_name(x->dtype));
  if (ind->rank < 1 || ind->dims[ind->rank - 1] < 1 || ind->dims[ind->rank - 1] > x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "the last dim of indices must be 1..%d (the data rank)", (int)x->rank);
  int32_t q = (int32_t)ind->dims[ind->rank - 1];
  /* updates.shape == indices.shape[:-1] + data.shape[q:] */
  int ok = upd->rank == ind->rank - 1 + x->rank - q;
  for (int32_t d = 0; ok && d < ind->rank - 1; d++) ok = upd->dims[d] == ind->dims[d];
  for (int32_t d = q; ok && d < x->rank; d++) ok = upd->dims[ind->rank - 1 + d - q] == x->dims[d];
  if (!ok)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "updates do not have the shape indices[:-1] + data[%d:]", (int)q);
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t slice = 1, stride[MI_MAX_RANK], tuples = mi_array_numel(ind) / q;
  for (int32_t d = q; d < x->rank; d++) slice *= x->dims[d];
  int64_t s = slice;
  for (int32_t d = q - 1; d >= 0; d--) {
    stride[d] = s;
    s *= x->dims[d];
  }
  memcpy(y->data, x->data, (size_t)mi_array_numel(x) * es);
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off = 0;
    for (int32_t d = 0; d < q; d++) {
      int64_t k = index_at(ind, t * q + d), len = x->dims[d];
      if (k < -len || k >= len)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "index %lld is out of range for axis %d of size %lld", (long long)k,
                            (int)d, (long long)len);
      off += (k < 0 ? k + len : k) * stride[d];
    }
    char *dst = (char *)y->data + (size_t)off * es;
    const char *src = (const char *)upd->data + (size_t)(t * slice) * es;
    if (r == RED_NONE) {
      memcpy(dst, src, (size_t)slice * es);
      continue;
    }
    for (int64_t e = 0; e < slice; e++)
      combine(x->dtype, r, dst + (size_t)e * es, src + (size_t)e * es);
  }
  return MI_OK;
}

/* y = copy of data; then for every element of updates at position p, the data element at p with
 * p[axis] replaced by indices[p] is replaced by (or combined with) it, in row-major order. */
int32_t mi__ref_scatter_elements(mi__ref_call_t *c) {
  const mi_array_t *x, *ind, *upd;
  mi_array_t *y;
  int32_t rc, axis;
  reduction_t r;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = read_reduction(c, &r)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, INDEX_DTYPES, &ind)) != MI_OK ||
      (rc = mi__ref_need(c, 2, MI_DTYPE_BIT(x->dtype), &upd)) != MI_OK)
    return rc;
  if (r != RED_NONE && x->dtype != MI_DTYPE_FLOAT32 && !mi__dtype_is_int(x->dtype))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "a reduction on %s data is not supported",
                        mi_dtype_name(x->dtype));
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x->rank, &axis)) != MI_OK)
    return rc;
  if (ind->rank != x->rank || upd->rank != x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "indices (rank %d) and updates (rank %d) must have the data's rank %d",
                        (int)ind->rank, (int)upd->rank, (int)x->rank);
  for (int32_t d = 0; d < x->rank; d++) {
    if (upd->dims[d] != ind->dims[d])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "updates and indices differ in dim %d",
                          (int)d);
    if (d != axis && ind->dims[d] > x->dims[d])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "indices dim %d is %lld, larger than the data's %lld", (int)d,
                          (long long)ind->dims[d], (long long)x->dims[d]);
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t n = mi_array_numel(ind), xstride[MI_MAX_RANK], pos[MI_MAX_RANK], off;
  mi__ref_strides(x->rank, x->dims, xstride);
  memcpy(y->data, x->data, (size_t)mi_array_numel(x) * es);
  memset(pos, 0, sizeof pos);
  for (int64_t i = 0; i < n; i++) {
    if ((rc = element_at(c, x, ind, i, axis, xstride, pos, &off)) != MI_OK) return rc;
    char *dst = (char *)y->data + (size_t)off * es;
    const char *src = (const char *)upd->data + (size_t)i * es;
    if (r == RED_NONE) memcpy(dst, src, es);
    else
      combine(x->dtype, r, dst, src);
  }
  return MI_OK;
}

/* GatherND with b = batch_dims: the first b dims of data and indices are shared; each tuple of
 * k = indices.shape[-1] indices picks the slice data[batch..., tuple] of shape data[b + k:].
 * y.shape = indices.shape[:-1] + data.shape[b + k:]. */
int32_t mi__ref_gather_nd(mi__ref_call_t *c) {
  const mi_array_t *x, *ind;
  mi_array_t *y;
  int32_t rc, b = (int32_t)mi_node_attr_int(c->node, "batch_dims", 0);
  int64_t dims[MI_MAX_RANK];
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, INDEX_DTYPES, &ind)) != MI_OK)
    return rc;
  if (c->opset < 12 && b != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "batch_dims needs opset 12");
  if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "batch_dims %d must be below the ranks of data (%d) and indices (%d)",
                        (int)b, (int)x->rank, (int)ind->rank);
  int32_t k = (int32_t)ind->dims[ind->rank - 1];
  if (k < 1 || k > x->rank - b)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "the last dim of indices is %d, it must be 1..%d (data rank - batch_dims)",
                        (int)k, (int)(x->rank - b));
  for (int32_t d = 0; d < b; d++)
    if (ind->dims[d] != x->dims[d])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "batch dim %d is %lld in indices and %lld in data", (int)d,
                          (long long)ind->dims[d], (long long)x->dims[d]);
  int32_t rank = ind->rank - 1 + x->rank - b - k;
  if (rank > MI_MAX_RANK)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the output rank %d is above %d", (int)rank,
                        MI_MAX_RANK);
  rank = 0;
  for (int32_t d = 0; d < ind->rank - 1; d++) dims[rank++] = ind->dims[d];
  for (int32_t d = b + k; d < x->rank; d++) dims[rank++] = x->dims[d];
  if ((rc = mi__ref_make_out(c, 0, x->dtype, rank, dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t xstride[MI_MAX_RANK], slice = 1, batch = 1;
  mi__ref_strides(x->rank, x->dims, xstride);
  for (int32_t d = b + k; d < x->rank; d++) slice *= x->dims[d];
  for (int32_t d = 0; d < b; d++) batch *= x->dims[d];
  int64_t tuples = mi_array_numel(ind) / k, per_batch = batch ? tuples / batch : 0;
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off = 0, bi = per_batch ? t / per_batch : 0;
    /* the batch index bi, as a multi-index over data's first b dims */
    for (int32_t d = b - 1; d >= 0; d--) {
      off += (bi % x->dims[d]) * xstride[d];
      bi /= x->dims[d];
    }
    for (int32_t j = 0; j < k; j++) {
      int64_t v = index_at(ind, t * k + j), len = x->dims[b + j];
      if (v < -len || v >= len)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "index %lld is out of range for axis %d of size %lld", (long long)v,
                            (int)(b + j), (long long)len);
      off += (v < 0 ? v + len : v) * xstride[b + j];
    }
    memcpy((char *)y->data + (size_t)(t * slice) * es, (const char *)x->data + (size_t)off * es,
           (size_t)slice * es);
  }
  return MI_OK;
}
