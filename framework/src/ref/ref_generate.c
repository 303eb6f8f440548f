/* ref_generate.c - reference ops that make tensors from shapes: Expand, ConstantOfShape,
 * Range, Tile (the shape plumbing of PyTorch and tf2onnx exports) and EyeLike. */
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

#define INTS (MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32))

/* Reads a shape input: every value >= 0 (Expand also allows 1 as "keep"). */
static int32_t read_shape(mi__ref_call_t *c, int32_t i, const char *what, int64_t *dims,
                          int32_t *rank) {
  const mi_array_t *s;
  int32_t rc;
  if ((rc = mi__ref_need(c, i, INTS, &s)) != MI_OK) return rc;
  if ((rc = mi__ref_read_ints(c, s, what, dims, MI_MAX_RANK, rank)) != MI_OK) return rc;
  for (int32_t d = 0; d < *rank; d++)
    if (dims[d] < 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s[%d] = %lld is negative", what, (int)d,
                          (long long)dims[d]);
  return MI_OK;
}

int32_t mi__ref_expand(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t shape_only, *y;
  mi__ref_bcast_t b;
  int64_t idx[MI_MAX_RANK] = {0}, off = 0;
  int32_t rc, rank;
  size_t es;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  memset(&shape_only, 0, sizeof shape_only);
  if ((rc = read_shape(c, 1, "shape", shape_only.dims, &rank)) != MI_OK) return rc;
  shape_only.rank = rank;
  shape_only.dtype = x->dtype;
  const mi_array_t *pair[2] = {x, &shape_only};
  /* Expand broadcasts both ways: a 1 in `shape` keeps the input's dim. */
  if ((rc = mi__ref_broadcast(c, 2, pair, &b)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, b.rank, b.dims, &y)) != MI_OK) return rc;
  es = mi_dtype_size(x->dtype);
  for (int64_t i = 0; i < b.numel; i++) {
    memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
    mi__ref_index_next(b.rank, b.dims, b.strides[0], idx, &off);
  }
  return MI_OK;
}

int32_t mi__ref_constant_of_shape(mi__ref_call_t *c) {
  int64_t dims[MI_MAX_RANK];
  int32_t rank, rc;
  mi_array_t *y;
  const mi_attr_t *v = mi_node_attr(c->node, "value");
  int32_t dtype = (int32_t)mi_node_attr_int(c->node, "value_dtype",
                                            v && v->type == MI_ATTR_INT ? MI_DTYPE_INT64
                                                                        : MI_DTYPE_FLOAT32);
  if ((rc = read_shape(c, 0, "shape", dims, &rank)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, dtype, rank, dims, &y)) != MI_OK) return rc;
  if (!v) return MI_OK; /* default: float32 zeros */
  int64_t n = mi_array_numel(y);
  for (int64_t i = 0; i < n; i++) {
    switch (dtype) {
    case MI_DTYPE_FLOAT32: ((float *)y->data)[i] = v->type == MI_ATTR_FLOAT ? v->f : (float)v->i; break;
    default:
      if (!mi__dtype_is_int(dtype) && dtype != MI_DTYPE_BOOL)
        return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "value dtype %s is not supported", mi_dtype_name(dtype));
      mi__int_store(y->data, dtype, i, v->i);
    }
  }
  return MI_OK;
}

static double scalar(const mi_array_t *a) {
  if (a->dtype == MI_DTYPE_FLOAT32) return ((const float *)a->data)[0];
  return mi__int_load_f64(a->data, a->dtype, 0);
}

int32_t mi__ref_range(mi__ref_call_t *c) {
  const mi_array_t *a[3];
  /* ONNX's Range: float, double, int16, int32, int64 */
  const uint32_t ok = INTS | MI_DTYPE_BIT(MI_DTYPE_INT16) | MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  int32_t rc;
  mi_array_t *y;
  for (int32_t i = 0; i < 3; i++) {
    if ((rc = mi__ref_need(c, i, ok, &a[i])) != MI_OK) return rc;
    if (mi_array_numel(a[i]) != 1 || a[i]->dtype != a[0]->dtype)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "start, limit and delta must be scalars of one dtype");
  }
  double start = scalar(a[0]), limit = scalar(a[1]), delta = scalar(a[2]);
  if (delta == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "delta is 0");
  /* The count formula of the ONNX spec: max(ceil((limit - start) / delta), 0). */
  double cnt = ceil((limit - start) / delta);
  int64_t n = cnt > 0 ? (int64_t)cnt : 0;
  if ((rc = mi__ref_make_out(c, 0, a[0]->dtype, 1, &n, &y)) != MI_OK) return rc;
  for (int64_t i = 0; i < n; i++) {
    if (a[0]->dtype == MI_DTYPE_FLOAT32)
      ((float *)y->data)[i] = (float)(start + (double)i * delta);
    else /* the integer types: start + i * delta, kept to the type's width */
      mi__int_store(y->data, a[0]->dtype, i, (int64_t)start + i * (int64_t)delta);
  }
  return MI_OK;
}

int32_t mi__ref_tile(mi__ref_call_t *c) {
  const mi_array_t *x, *r;
  int64_t reps[MI_MAX_RANK], od[MI_MAX_RANK], xs[MI_MAX_RANK], idx[MI_MAX_RANK] = {0};
  int32_t rc, n;
  mi_array_t *y;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 1, INTS, &r)) != MI_OK) return rc;
  if ((rc = mi__ref_read_ints(c, r, "repeats", reps, MI_MAX_RANK, &n)) != MI_OK) return rc;
  if (n != x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "repeats has %d values for rank %d", (int)n,
                        (int)x->rank);
  for (int32_t d = 0; d < n; d++) {
    if (reps[d] < 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "repeats[%d] is negative", (int)d);
    od[d] = x->dims[d] * reps[d];
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, od, &y)) != MI_OK) return rc;
  mi__ref_strides(x->rank, x->dims, xs);
  size_t es = mi_dtype_size(x->dtype);
  int64_t total = mi_array_numel(y);
  for (int64_t i = 0; i < total; i++) {
    int64_t off = 0;
    for (int32_t d = 0; d < x->rank; d++) off += (idx[d] % x->dims[d]) * xs[d];
    memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
    for (int32_t d = x->rank - 1; d >= 0; d--) {
      if (++idx[d] < od[d]) break;
      idx[d] = 0;
    }
  }
  return MI_OK;
}

/* The element type EyeLike's `dtype` names, as the loader holds it (half and double precision
 * load as float32); MI_DTYPE_UNDEFINED for one the framework does not hold. */
static int32_t eye_dtype(int64_t onnx) {
  switch (onnx) {
  case 1:
  case 10:
  case 11:
  case 16: return MI_DTYPE_FLOAT32;
  case 2: return MI_DTYPE_UINT8;
  case 3: return MI_DTYPE_INT8;
  case 4: return MI_DTYPE_UINT16;
  case 5: return MI_DTYPE_INT16;
  case 6: return MI_DTYPE_INT32;
  case 7: return MI_DTYPE_INT64;
  case 9: return MI_DTYPE_BOOL;
  case 12: return MI_DTYPE_UINT32;
  case 13: return MI_DTYPE_UINT64;
  default: return MI_DTYPE_UNDEFINED;
  }
}

/* EyeLike (opset 9, 22): a 2-D tensor of input 0's shape, ones on the diagonal shifted by k
 * (k > 0 above it), zeros elsewhere, in `dtype` or the input's type. */
int32_t mi__ref_eyelike(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc, dt;
  int64_t k = mi_node_attr_int(c->node, "k", 0);
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (x->rank != 2) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input must be 2-D, got rank %d", (int)x->rank);
  dt = mi_node_attr(c->node, "dtype") ? eye_dtype(mi_node_attr_int(c->node, "dtype", 0)) : x->dtype;
  if (dt == MI_DTYPE_UNDEFINED || dt == MI_DTYPE_INT4 || dt == MI_DTYPE_FLOAT16)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "output type %lld is not supported",
                        (long long)mi_node_attr_int(c->node, "dtype", -1));
  if ((rc = mi__ref_make_out(c, 0, dt, 2, x->dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(dt);
  if (k >= x->dims[1] || k <= -x->dims[0]) return MI_OK; /* no diagonal inside: all zeros */
  for (int64_t r = 0; r < x->dims[0]; r++) {
    int64_t col = r + k;
    if (col < 0 || col >= x->dims[1]) continue;
    uint8_t *at = (uint8_t *)y->data + (size_t)(r * x->dims[1] + col) * es;
    if (dt == MI_DTYPE_FLOAT32) *(float *)at = 1.0f;
    else
      mi__int_store(at, dt, 0, 1); /* the integer types and bool, at their width */
  }
  return MI_OK;
}
