/* ref_shape.c - reference shape ops: Reshape, Flatten, Squeeze/Unsqueeze, Shape, Cast,
 * Constant, Identity and Dropout. Values are copied bytewise, so every dtype works. */
#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/onnx_dtype.h"
#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"

/* Output i: a copy of x's bytes under a new shape. */
static int32_t copy_as(mi__ref_call_t *c, const mi_array_t *x, int32_t rank, const int64_t *dims) {
  mi_array_t *y;
  int32_t rc = mi__ref_make_out(c, 0, x->dtype, rank, dims, &y);
  if (rc != MI_OK) return rc;
  if (y->nbytes != x->nbytes) return mi__ref_fail(c, MI_ERR_INTERNAL, "size changed");
  if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
  return MI_OK;
}

int32_t mi__ref_reshape(mi__ref_call_t *c) {
  const mi_array_t *x, *s;
  int64_t shape[MI_MAX_RANK], known = 1;
  int32_t n, rc, infer = -1;
  int allowzero = mi_node_attr_int(c->node, "allowzero", 0) != 0;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (c->opset < 5) { /* the target shape was an attribute before opset 5 */
    if ((rc = mi__ref_attr_ints(c, "shape", shape, MI_MAX_RANK, &n)) != MI_OK) return rc;
    if (n < 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute 'shape' is missing");
  } else {
    if ((rc = mi__ref_need(c, 1, 0, &s)) != MI_OK ||
        (rc = mi__ref_read_ints(c, s, "shape", shape, MI_MAX_RANK, &n)) != MI_OK)
      return rc;
  }
  for (int32_t d = 0; d < n; d++) {
    if (shape[d] == 0 && !allowzero) {
      if (d >= x->rank)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "shape[%d] = 0 copies a dimension the input (rank %d) lacks", (int)d,
                            (int)x->rank);
      shape[d] = x->dims[d];
    }
    if (shape[d] == -1) {
      if (infer >= 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "more than one -1 in shape");
      infer = d;
    } else if (shape[d] < 0) {
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "shape[%d] = %lld is negative", (int)d,
                          (long long)shape[d]);
    } else {
      known *= shape[d];
    }
  }
  int64_t total = mi_array_numel(x);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "cannot infer -1: %lld elements do not divide by %lld",
                          (long long)total, (long long)known);
    shape[infer] = total / known;
  } else if (known != total) {
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "cannot reshape %lld elements into a shape of %lld", (long long)total,
                        (long long)known);
  }
  return copy_as(c, x, n, shape);
}

int32_t mi__ref_flatten(mi__ref_call_t *c) {
  const mi_array_t *x;
  int64_t axis = mi_node_attr_int(c->node, "axis", 1), dims[2] = {1, 1};
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  /* Flatten's axis may equal the rank (everything goes into the first dim). */
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis > x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis is out of range for rank %d",
                        (int)x->rank);
  for (int32_t d = 0; d < x->rank; d++) dims[d < axis ? 0 : 1] *= x->dims[d];
  return copy_as(c, x, 2, dims);
}

int32_t mi__ref_squeeze(mi__ref_call_t *c) {
  const mi_array_t *x, *ax;
  int unsqueeze = strcmp(c->node->op_type, "Unsqueeze") == 0;
  int64_t axes[MI_MAX_RANK], dims[MI_MAX_RANK];
  int32_t naxes = -1, rc, rank = 0;
  int mark[MI_MAX_RANK] = {0};
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (c->opset >= 13) { /* axes moved from attribute to input in opset 13 */
    if ((ax = mi__ref_in(c, 1)) != NULL &&
        (rc = mi__ref_read_ints(c, ax, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK)
      return rc;
  } else if ((rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK) {
    return rc;
  }
  if (unsqueeze) {
    int32_t out_rank = x->rank + (naxes > 0 ? naxes : 0), src = 0;
    if (naxes <= 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axes are required");
    if (out_rank > MI_MAX_RANK)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "result rank above %d", MI_MAX_RANK);
    for (int32_t i = 0; i < naxes; i++) {
      int32_t a;
      /* Unsqueeze axes count in the output's rank. */
      if ((rc = mi__ref_axis(c, axes[i], out_rank, &a)) != MI_OK) return rc;
      if (mark[a]) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %d repeats", (int)a);
      mark[a] = 1;
    }
    for (int32_t d = 0; d < out_rank; d++) dims[d] = mark[d] ? 1 : x->dims[src++];
    return copy_as(c, x, out_rank, dims);
  }
  for (int32_t i = 0; i < naxes; i++) {
    int32_t a;
    if ((rc = mi__ref_axis(c, axes[i], x->rank, &a)) != MI_OK) return rc;
    if (x->dims[a] != 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "cannot squeeze axis %d of size %lld",
                          (int)a, (long long)x->dims[a]);
    mark[a] = 1;
  }
  for (int32_t d = 0; d < x->rank; d++) {
    int drop = naxes > 0 ? mark[d] : x->dims[d] == 1; /* no axes: every size-1 dim goes */
    if (!drop) dims[rank++] = x->dims[d];
  }
  return copy_as(c, x, rank, dims);
}

int32_t mi__ref_shape(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  /* start/end are clamped, never an error. */
  int64_t start, len = mi__shape_op_range(c->node, x->rank, 1, &start);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_INT64, 1, &len, &y)) != MI_OK) return rc;
  for (int64_t i = 0; i < len; i++) ((int64_t *)y->data)[i] = x->dims[start + i];
  return MI_OK;
}

/* ONNX TensorProto.DataType codes -> ours: onnx_dtype.h's table, except that FLOAT16 stays
 * FLOAT16 here (the importer already turned a Cast to a float type it holds as float32 into a
 * Cast to FLOAT; a FLOAT16 target is one the graph's own passes made), BFLOAT16 is FLOAT32
 * rounded to BF16 (the BF16 transform's Cast, mi__ref_cast), DOUBLE is refused, and so are the
 * 4-bit types, which would need saturating at 4 bits. */
static int32_t onnx_to_dtype(int64_t t) {
  if (t == MI__ONNX_FLOAT16) return MI_DTYPE_FLOAT16;
  if (t == MI__ONNX_DOUBLE || t == MI__ONNX_INT4 || t == MI__ONNX_UINT4 || t <= 0 || t > INT32_MAX)
    return MI_DTYPE_UNDEFINED;
  return mi__dtype_from_onnx((int32_t)t);
}

static int is_float(int32_t dt) { return dt == MI_DTYPE_FLOAT32 || dt == MI_DTYPE_FLOAT16; }

static double get_f(const mi_array_t *a, int64_t i) {
  if (a->dtype == MI_DTYPE_FLOAT32) return ((const float *)a->data)[i];
  return mi__ref_half_to_float(((const uint16_t *)a->data)[i]);
}

/* Float to integer the way C truncates, but defined for NaN and out-of-range values. */
static int64_t trunc_clamped(double v, double lo, double hi) {
  if (v != v) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return (int64_t)hi;
  return (int64_t)v;
}

/* A float cast to integer dtype `to`: truncated, saturated at the type's range (C leaves an
 * out-of-range conversion undefined), NaN 0; the result's bits as mi__int_store takes them. */
static int64_t float_to_int(double f, int32_t to) {
  switch (to) {
  case MI_DTYPE_INT64: return trunc_clamped(f, -9.2233720368547748e18, 9.2233720368547748e18 - 1024.0);
  case MI_DTYPE_UINT64:
    if (f != f || f <= 0.0) return 0;
    return (int64_t)(f >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)f);
  case MI_DTYPE_INT32: return trunc_clamped(f, -2147483648.0, 2147483647.0);
  case MI_DTYPE_UINT32: return trunc_clamped(f, 0.0, 4294967295.0);
  case MI_DTYPE_INT16: return trunc_clamped(f, -32768.0, 32767.0);
  case MI_DTYPE_UINT16: return trunc_clamped(f, 0.0, 65535.0);
  case MI_DTYPE_INT8: return trunc_clamped(f, -128.0, 127.0);
  default: return trunc_clamped(f, 0.0, 255.0); /* UINT8 */
  }
}

int32_t mi__ref_cast(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc, to = onnx_to_dtype(mi_node_attr_int(c->node, "to", 0));
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (to == MI_DTYPE_UNDEFINED)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "cast to ONNX type %lld (%s) is not supported",
                        (long long)mi_node_attr_int(c->node, "to", 0),
                        mi__onnx_type_name((int32_t)mi_node_attr_int(c->node, "to", 0)));
  if (!is_float(x->dtype) && !mi__dtype_is_int(x->dtype) && x->dtype != MI_DTYPE_BOOL)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "cast from %s is not supported",
                        mi_dtype_name(x->dtype));
  if ((rc = mi__ref_make_out(c, 0, to, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t n = mi_array_numel(x);
  int fsrc = is_float(x->dtype), u64 = x->dtype == MI_DTYPE_UINT64;
  /* To BFLOAT16: held as FLOAT32 (onnx_dtype.h), the values rounded to BF16 as ONNX's Cast
   * rounds them (what the BF16 transform writes before a layer, docs/transforms.md). */
  int bf16 = mi_node_attr_int(c->node, "to", 0) == MI__ONNX_BFLOAT16;
  for (int64_t i = 0; i < n; i++) {
    double f = fsrc ? get_f(x, i) : 0.0;
    int64_t v = fsrc ? 0 : mi__int_load(x->data, x->dtype, i);
    /* integer to float rounds once, from the exact value (a UINT64 read as unsigned) */
    float vf = u64 ? (float)(uint64_t)v : (float)v;
    switch (to) {
    case MI_DTYPE_FLOAT32:
      ((float *)y->data)[i] = fsrc ? (float)f : vf;
      if (bf16) ((float *)y->data)[i] = mi_sdk_bf16_to_float(mi_sdk_float_to_bf16(((float *)y->data)[i]));
      break;
    case MI_DTYPE_FLOAT16: ((uint16_t *)y->data)[i] = mi__ref_float_to_half(fsrc ? (float)f : vf); break;
    case MI_DTYPE_BOOL: ((uint8_t *)y->data)[i] = fsrc ? f != 0.0 : v != 0; break;
    /* integer to integer keeps the low bits (two's-complement wrap-around, as ONNX Runtime's
     * static_cast) */
    default: mi__int_store(y->data, to, i, fsrc ? float_to_int(f, to) : v); break;
    }
  }
  return MI_OK;
}

int32_t mi__ref_constant(mi__ref_call_t *c) {
  const mi_attr_t *a;
  mi_array_t *y;
  int32_t rc;
  int64_t n;
  if ((a = mi_node_attr(c->node, "value_float")) || (a = mi_node_attr(c->node, "value_floats"))) {
    n = a->type == MI_ATTR_FLOAT ? 1 : a->count;
    if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, a->type == MI_ATTR_FLOAT ? 0 : 1, &n,
                               &y)) != MI_OK)
      return rc;
    for (int64_t i = 0; i < n; i++)
      ((float *)y->data)[i] = a->type == MI_ATTR_FLOAT ? a->f : a->floats[i];
    return MI_OK;
  }
  if ((a = mi_node_attr(c->node, "value_int")) || (a = mi_node_attr(c->node, "value_ints"))) {
    n = a->type == MI_ATTR_INT ? 1 : a->count;
    if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_INT64, a->type == MI_ATTR_INT ? 0 : 1, &n, &y)) !=
        MI_OK)
      return rc;
    for (int64_t i = 0; i < n; i++)
      ((int64_t *)y->data)[i] = a->type == MI_ATTR_INT ? a->i : a->ints[i];
    return MI_OK;
  }
  /* A tensor-valued Constant is turned into an initializer by the ONNX importer. */
  return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                      "only value_float(s)/value_int(s) attributes are supported here");
}

int32_t mi__ref_identity(mi__ref_call_t *c) {
  const mi_array_t *x, *training = mi__ref_in(c, 2);
  mi_array_t *mask;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (strcmp(c->node->op_type, "Dropout") == 0 && training && mi_array_numel(training) > 0 &&
      ((const uint8_t *)training->data)[0])
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "training_mode=true is not supported");
  if ((rc = copy_as(c, x, x->rank, x->dims)) != MI_OK) return rc;
  if (mi__ref_out_wanted(c, 1)) { /* Dropout's mask: nothing is dropped at inference */
    if ((rc = mi__ref_make_out(c, 1, MI_DTYPE_BOOL, x->rank, x->dims, &mask)) != MI_OK) return rc;
    memset(mask->data, 1, mask->nbytes);
  }
  return MI_OK;
}
