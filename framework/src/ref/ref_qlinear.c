/* ref_qlinear.c - DynamicQuantizeLinear and the com.microsoft elementwise ops ONNX Runtime's
 * quantizer writes (QLinearAdd, QLinearMul, QLinearGlobalAveragePool), on codes. */
#include <float.h>
#include <string.h>

#include "ref/ref_qutil.h"

int32_t mi__ref_qparam(const mi__ref_call_t *c, int32_t k, const char *what, int is_scale,
                       int32_t zdt, int64_t count, const mi_array_t **a, int64_t *n) {
  const mi_array_t *p = mi__ref_in(c, k);
  *a = p;
  *n = 1;
  if (!p) {
    if (is_scale) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d (%s) is missing", (int)k, what);
    return MI_OK;
  }
  int64_t m = mi_array_numel(p);
  if (m != 1 && (m != count || p->rank != 1))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "%s has %lld values (shape of rank %d); only one (per tensor) or %lld "
                        "(per channel, 1-D) are supported",
                        what, (long long)m, (int)p->rank, (long long)count);
  *n = m;
  if (is_scale) {
    if (p->dtype != MI_DTYPE_FLOAT32)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "%s must be float32, got %s", what,
                          mi_dtype_name(p->dtype));
    for (int64_t i = 0; i < m; i++)
      if (!(((const float *)p->data)[i] > 0.0f) || !isfinite(((const float *)p->data)[i]))
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s[%lld] = %g; scales must be finite and > 0",
                            what, (long long)i, (double)((const float *)p->data)[i]);
    return MI_OK;
  }
  if (zdt >= 0 ? p->dtype != zdt : !(MI_DTYPE_BIT(p->dtype) & MI__Q8))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s has dtype %s, expected %s", what,
                        mi_dtype_name(p->dtype), zdt >= 0 ? mi_dtype_name(zdt) : "int8 or uint8");
  return MI_OK;
}

static int32_t zp_of(const mi_array_t *z, int64_t i) { return z ? mi__ref_code(z, i) : 0; }

/* ONNX DynamicQuantizeLinear (uint8): the range is widened to include 0, scale = range / 255,
 * zero point = saturate(round(0 - min / scale)), y = saturate(round(x / scale) + zp). Float32
 * arithmetic throughout, as the operator's definition and ONNX Runtime compute it; an all-zero
 * input (empty range) gets scale 1 (ONNX Runtime's choice; the definition divides by zero). */
static int32_t dynamic_quantize(mi__ref_call_t *c) {
  const mi_array_t *x = NULL;
  mi_array_t *y = NULL, *ys = NULL, *yz = NULL;
  int32_t rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x);
  if (rc != MI_OK) return rc;
  int64_t n = mi_array_numel(x);
  const float *xv = x->data;
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(xv[i])) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input holds NaN at %lld", (long long)i);
    lo = xv[i] < lo ? xv[i] : lo;
    hi = xv[i] > hi ? xv[i] : hi;
  }
  if (isinf(lo) || isinf(hi))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input holds an infinity: no finite range");
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  float z0 = 0.0f - lo / scale;
  z0 = z0 < 0.0f ? 0.0f : z0 > 255.0f ? 255.0f
                                      : z0;
  int32_t zp = (int32_t)rintf(z0);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_UINT8, x->rank, x->dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  if ((rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 0, NULL, &ys)) != MI_OK) return rc;
  c->out[1] = ys;
  if ((rc = mi__ref_make_out(c, 2, MI_DTYPE_UINT8, 0, NULL, &yz)) != MI_OK) return rc;
  c->out[2] = yz;
  *(float *)ys->data = scale;
  *(uint8_t *)yz->data = (uint8_t)zp;
  uint8_t *yv = y->data;
  for (int64_t i = 0; i < n; i++) {
    float v = rintf(xv[i] / scale) + (float)zp;
    yv[i] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f
                                                   : v);
  }
  return MI_OK;
}

/* com.microsoft QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp):
 * C = quantize(op(dequantize(A), dequantize(B))) with numpy broadcasting, in double: Add as
 * (a - za) * sa/sc + (b - zb) * sb/sc, Mul as (a - za) * (b - zb) * sa*sb/sc. */
static int32_t qlinear_binary(mi__ref_call_t *c, int is_mul) {
  const mi_array_t *a = NULL, *b = NULL, *sa, *za, *sb, *zb, *sc, *zc;
  mi_array_t *y = NULL;
  int64_t k;
  int32_t rc = mi__ref_need(c, 0, MI__Q8, &a);
  if (rc == MI_OK) rc = mi__ref_need(c, 3, MI_DTYPE_BIT(a->dtype), &b);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 1, "A_scale", 1, -1, 1, &sa, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 2, "A_zero_point", 0, a->dtype, 1, &za, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 4, "B_scale", 1, -1, 1, &sb, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 5, "B_zero_point", 0, a->dtype, 1, &zb, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 6, "C_scale", 1, -1, 1, &sc, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 7, "C_zero_point", 0, a->dtype, 1, &zc, &k);
  if (rc != MI_OK) return rc;
  const mi_array_t *ops[2] = {a, b};
  mi__ref_bcast_t bc;
  if ((rc = mi__ref_broadcast(c, 2, ops, &bc)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, a->dtype, bc.rank, bc.dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  double fa = *(const float *)sa->data, fb = *(const float *)sb->data, fc = *(const float *)sc->data;
  double ra = fa / fc, rb = fb / fc, rab = fa * fb / fc;
  int32_t ia = zp_of(za, 0), ib = zp_of(zb, 0), ic = zp_of(zc, 0);
  for (int64_t i = 0; i < bc.numel; i++) {
    int64_t off[2];
    mi__ref_bcast_offsets(&bc, 2, i, off);
    int32_t qa = mi__ref_code(a, off[0]) - ia, qb = mi__ref_code(b, off[1]) - ib;
    double v = is_mul ? (double)qa * qb * rab : qa * ra + qb * rb;
    mi__ref_put_code(y, i, v, ic);
  }
  return MI_OK;
}

/* com.microsoft QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp; channels_last):
 * y = quantize(mean over the spatial dims of dequantize(X)), the sum taken exactly in integers
 * and scaled once: sum(x - zx) * sx / (sy * HW). */
static int32_t qlinear_gap(mi__ref_call_t *c) {
  const mi_array_t *x = NULL, *sx, *zx, *sy, *zy;
  mi_array_t *y = NULL;
  int64_t k, dims[MI_MAX_RANK];
  int32_t rc = mi__ref_need(c, 0, MI__Q8, &x);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 1, "x_scale", 1, -1, 1, &sx, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 2, "x_zero_point", 0, x->dtype, 1, &zx, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 3, "y_scale", 1, -1, 1, &sy, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 4, "y_zero_point", 0, x->dtype, 1, &zy, &k);
  if (rc != MI_OK) return rc;
  if (x->rank < 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input rank %d < 3", (int)x->rank);
  int64_t last = mi_node_attr_int(c->node, "channels_last", 0);
  if (last != 0 && last != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "channels_last = %lld (0 or 1)", (long long)last);
  int64_t N = x->dims[0], C = last ? x->dims[x->rank - 1] : x->dims[1], HW = 1;
  for (int32_t d = 0; d < x->rank; d++) {
    int spatial = last ? (d > 0 && d < x->rank - 1) : d >= 2;
    dims[d] = spatial ? 1 : x->dims[d];
    if (spatial) HW *= x->dims[d];
  }
  if (HW < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "empty spatial extent");
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  double mult = (double)*(const float *)sx->data / ((double)*(const float *)sy->data * (double)HW);
  int32_t izx = zp_of(zx, 0), izy = zp_of(zy, 0);
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++) {
      int64_t sum = 0;
      for (int64_t p = 0; p < HW; p++)
        sum += mi__ref_code(x, last ? (n * HW + p) * C + ch : (n * C + ch) * HW + p) - izx;
      mi__ref_put_code(y, n * C + ch, (double)sum * mult, izy);
    }
  return MI_OK;
}

int32_t mi__ref_qlinear(mi__ref_call_t *c) {
  const char *op = c->node->op_type;
  if (strcmp(op, "DynamicQuantizeLinear") == 0) return dynamic_quantize(c);
  if (strcmp(op, "QLinearAdd") == 0) return qlinear_binary(c, 0);
  if (strcmp(op, "QLinearMul") == 0) return qlinear_binary(c, 1);
  return qlinear_gap(c);
}
