/* ref_quant.c - QuantizeLinear / DequantizeLinear (per tensor, per axis, or opset 21's blocks
 * along an axis) on the reference path, so QDQ-quantized graphs run with their real integer
 * rounding and saturation. */
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

/* Scale and zero point of element i: per tensor, per index along `axis`, or per block of
 * `block` indices along it (opset 21's block_size; the scale has x's shape with that dim
 * ceil-divided). */
typedef struct qparams {
  const float *scale;
  const mi_array_t *zp;
  int64_t count;       /* 1 = per tensor */
  int64_t inner, dim;  /* element i belongs to channel (i / inner) % dim */
  int64_t block, sdim; /* blocked: block size and the scale's dim along axis (0: not blocked) */
} qparams_t;

/* Index into the scale (and zero point) of element i. */
static int64_t param_at(const qparams_t *q, int64_t i) {
  if (q->count == 1) return 0;
  int64_t ia = (i / q->inner) % q->dim;
  if (!q->block) return ia;
  int64_t outer = i / (q->inner * q->dim);
  return (outer * q->sdim + ia / q->block) * q->inner + i % q->inner;
}

/* Blocked parameters: block_size b > 0 along axis; the scale must have x's shape with the axis
 * dim ceil(x / b). */
static int32_t read_blocked(mi__ref_call_t *c, const mi_array_t *x, const mi_array_t *s, int64_t b,
                            qparams_t *q) {
  int32_t axis = 0, rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 1), x->rank, &axis);
  if (rc != MI_OK) return rc;
  if (s->rank != x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "block_size %lld: scale rank %d, input rank %d",
                        (long long)b, (int)s->rank, (int)x->rank);
  for (int32_t d = 0; d < x->rank; d++) {
    int64_t want = d == axis ? (x->dims[d] + b - 1) / b : x->dims[d];
    if (s->dims[d] != want)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "block_size %lld along axis %d: scale dim %d is %lld, the input needs %lld",
                          (long long)b, (int)axis, (int)d, (long long)s->dims[d], (long long)want);
  }
  q->block = b;
  q->dim = x->dims[axis];
  q->sdim = s->dims[axis];
  for (int32_t d = axis + 1; d < x->rank; d++) q->inner *= x->dims[d];
  return MI_OK;
}

static int32_t read_params(mi__ref_call_t *c, const mi_array_t *x, qparams_t *q) {
  const mi_array_t *s = NULL, *zp = mi__ref_in(c, 2);
  int32_t rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &s), axis = 0;
  if (rc != MI_OK) return rc;
  memset(q, 0, sizeof *q);
  q->scale = s->data;
  q->zp = zp;
  q->count = mi_array_numel(s);
  q->inner = 1;
  q->dim = 1;
  if (zp && mi_array_numel(zp) != q->count)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "zero point has %lld values, scale %lld",
                        (long long)mi_array_numel(zp), (long long)q->count);
  if (zp && zp->dtype != MI_DTYPE_INT8 && zp->dtype != MI_DTYPE_UINT8 &&
      zp->dtype != MI_DTYPE_INT32 && (zp->dtype != MI_DTYPE_INT4 || x->dtype != MI_DTYPE_INT4))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "zero point dtype %s", mi_dtype_name(zp->dtype));
  int64_t block = mi_node_attr_int(c->node, "block_size", 0);
  if (block < 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "block_size %lld < 0", (long long)block);
  if (zp && block > 0 && zp->rank != s->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "zero point rank %d, scale rank %d",
                        (int)zp->rank, (int)s->rank);
  if (block > 0 && !(s->rank == 0 || (q->count == 1 && s->rank <= 1 && x->rank <= 1)))
    return read_blocked(c, x, s, block, q);
  if (s->rank == 0 || (q->count == 1 && s->rank <= 1)) return MI_OK;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 1), x->rank, &axis)) != MI_OK)
    return rc;
  if (x->dims[axis] != q->count)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "per-axis scale has %lld values, axis %d has %lld", (long long)q->count,
                        (int)axis, (long long)x->dims[axis]);
  q->dim = q->count;
  for (int32_t d = axis + 1; d < x->rank; d++) q->inner *= x->dims[d];
  return MI_OK;
}

/* Code i of an INT8, UINT8, INT32 or packed INT4 (low nibble first, sign-extended) array. */
static double code_at(const mi_array_t *a, int64_t i) {
  switch (a->dtype) {
  case MI_DTYPE_INT8: return ((const int8_t *)a->data)[i];
  case MI_DTYPE_UINT8: return ((const uint8_t *)a->data)[i];
  case MI_DTYPE_INT4: {
    int v = (((const uint8_t *)a->data)[i / 2] >> (4 * (i & 1))) & 0xf;
    return v >= 8 ? v - 16 : v;
  }
  default: return ((const int32_t *)a->data)[i];
  }
}

static double zp_at(const qparams_t *q, int64_t ch) { return q->zp ? code_at(q->zp, ch) : 0.0; }

static int32_t quantize(mi__ref_call_t *c) {
  const mi_array_t *x = NULL;
  mi_array_t *y = NULL;
  qparams_t q;
  int32_t rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x);
  if (rc == MI_OK) rc = read_params(c, x, &q);
  if (rc != MI_OK) return rc;
  /* opset 21: output_dtype picks the type when no zero point does (ONNX numbering) */
  int64_t od = mi_node_attr_int(c->node, "output_dtype", 0);
  int32_t dt = q.zp ? q.zp->dtype : od == 3 ? MI_DTYPE_INT8
                                            : MI_DTYPE_UINT8;
  if (q.zp && q.zp->dtype == MI_DTYPE_INT4)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "quantizing to packed INT4 is not supported");
  if (!q.zp && od != 0 && od != 2 && od != 3)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "output_dtype %lld (UINT8 and INT8 are supported)",
                        (long long)od);
  double lo = dt == MI_DTYPE_INT8 ? -128.0 : dt == MI_DTYPE_UINT8 ? 0.0
                                                                  : -2147483648.0;
  double hi = dt == MI_DTYPE_INT8 ? 127.0 : dt == MI_DTYPE_UINT8 ? 255.0
                                                                 : 2147483647.0;
  if ((rc = mi__ref_make_out(c, 0, dt, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t n = mi_array_numel(x);
  const float *xv = x->data;
  for (int64_t i = 0; i < n; i++) {
    int64_t ch = param_at(&q, i);
    /* ONNX: saturate(round_half_to_even(x / scale) + zero_point). The division is done in
     * double, as an integer device's requantization is specified (docs/backends/npu-stub.md):
     * a float quotient would be rounded once before rint() and could land on a tie that the
     * exact quotient does not. rint() rounds half to even in the default rounding mode. */
    double v = rint((double)xv[i] / (double)q.scale[ch]) + zp_at(&q, ch);
    v = v < lo ? lo : v > hi ? hi
                             : v;
    if (dt == MI_DTYPE_INT8) ((int8_t *)y->data)[i] = (int8_t)v;
    else if (dt == MI_DTYPE_UINT8)
      ((uint8_t *)y->data)[i] = (uint8_t)v;
    else
      ((int32_t *)y->data)[i] = (int32_t)v;
  }
  c->out[0] = y;
  return MI_OK;
}

static int32_t dequantize(mi__ref_call_t *c) {
  const mi_array_t *x = NULL;
  mi_array_t *y = NULL;
  qparams_t q;
  /* packed INT4: a lowered MatMulNBits' codes (graph/nbits.c) */
  uint32_t ok = MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) |
                MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_INT4);
  int32_t rc = mi__ref_need(c, 0, ok, &x);
  if (rc == MI_OK) rc = read_params(c, x, &q);
  if (rc != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t n = mi_array_numel(x);
  float *yv = y->data;
  for (int64_t i = 0; i < n; i++) {
    int64_t ch = param_at(&q, i);
    double v = code_at(x, i);
    /* For 8-bit codes (q - z) * s is exact in double (9 bits times a 24-bit float), so the
     * only rounding is the one to the float output. */
    yv[i] = (float)((v - zp_at(&q, ch)) * (double)q.scale[ch]);
  }
  c->out[0] = y;
  return MI_OK;
}

int32_t mi__ref_quant(mi__ref_call_t *c) {
  if (strcmp(c->node->op_type, "QuantizeLinear") == 0) return quantize(c);
  return dequantize(c);
}
