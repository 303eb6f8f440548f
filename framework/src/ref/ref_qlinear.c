/* ref_qlinear.c - DynamicQuantizeLinear and the com.microsoft elementwise and pooling ops ONNX
 * Runtime's quantizer writes (QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
 * QLinearAveragePool), on codes. */
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

/* The mean of each plane of x (N planes of HW codes, C channels; channels_last: the channel is
 * the innermost dim) into y: ONNX Runtime's QLinearGlobalAveragePool, the sum taken exactly in
 * integers and scaled once: sum(x - zx) * sx / (sy * HW). */
static void gap_planes(const mi_array_t *x, mi_array_t *y, int64_t N, int64_t C, int64_t HW, int last, float sx,
                       int32_t izx, float sy, int32_t izy) {
  double mult = (double)sx / ((double)sy * (double)HW);
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++) {
      int64_t sum = 0;
      for (int64_t p = 0; p < HW; p++)
        sum += mi__ref_code(x, last ? (n * HW + p) * C + ch : (n * C + ch) * HW + p) - izx;
      mi__ref_put_code(y, n * C + ch, (double)sum * mult, izy);
    }
}

/* com.microsoft QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp; channels_last). */
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
  gap_planes(x, y, N, C, HW, (int)last, *(const float *)sx->data, zp_of(zx, 0), *(const float *)sy->data,
             zp_of(zy, 0));
  return MI_OK;
}

/* com.microsoft QLinearAveragePool (X, x_scale, x_zp, y_scale, y_zp; AveragePool's attributes
 * and channels_last), 1-D and 2-D, as ONNX Runtime computes it: the codes dequantized in float
 * (sx * (x - zx)), summed in float over the window clipped to the input, divided by the kernel
 * size (count_include_pad) or the clipped window's, and quantized as nearbyint(v / sy + zy) in
 * float, saturated. A window that covers the whole unpadded input is its global average pool. */
static int32_t qlinear_avgpool(mi__ref_call_t *c) {
  const mi_array_t *x = NULL, *psx, *pzx, *psy, *pzy;
  mi_array_t *y = NULL;
  int64_t k, kernel[4], dims[MI_MAX_RANK];
  int32_t nk, rc = mi__ref_need(c, 0, MI__Q8, &x);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 1, "x_scale", 1, -1, 1, &psx, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 2, "x_zero_point", 0, x->dtype, 1, &pzx, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 3, "y_scale", 1, -1, 1, &psy, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 4, "y_zero_point", 0, x->dtype, 1, &pzy, &k);
  if (rc != MI_OK) return rc;
  int64_t last = mi_node_attr_int(c->node, "channels_last", 0);
  int ceil_mode = (int)mi_node_attr_int(c->node, "ceil_mode", 0);
  int include_pad = (int)mi_node_attr_int(c->node, "count_include_pad", 0);
  if (last != 0 && last != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "channels_last = %lld (0 or 1)", (long long)last);
  if (x->rank != 3 && x->rank != 4)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "input rank %d; only 1-D and 2-D pools (rank 3 or 4) are supported",
                        (int)x->rank);
  if ((rc = mi__ref_attr_ints(c, "kernel_shape", kernel, 4, &nk)) != MI_OK) return rc;
  if (nk != x->rank - 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "kernel_shape must have %d values for an input of rank %d",
                        (int)(x->rank - 2), (int)x->rank);
  /* The geometry on the NCHW view of the input. */
  mi_array_t v = *x;
  if (last) {
    v.dims[1] = x->dims[x->rank - 1];
    for (int32_t d = 2; d < x->rank; d++) v.dims[d] = x->dims[d - 1];
  }
  mi__ref_window_t w;
  if ((rc = mi__ref_window(c, &v, kernel, ceil_mode, &w)) != MI_OK) return rc;
  if (w.dil[0] != 1 || w.dil[1] != 1)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "dilations other than 1 are not supported");
  int64_t N = v.dims[0], C = v.dims[1], H = w.in[0], W = w.in[1];
  dims[0] = N;
  dims[last ? x->rank - 1 : 1] = C;
  if (x->rank == 3) dims[last ? 1 : 2] = w.out[1];
  else
    dims[last ? 1 : 2] = w.out[0], dims[last ? 2 : 3] = w.out[1];
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  float sx = *(const float *)psx->data, sy = *(const float *)psy->data;
  int32_t zx = zp_of(pzx, 0), zy = zp_of(pzy, 0);
  if (w.k[0] == H && w.k[1] == W && !w.pad_begin[0] && !w.pad_begin[1] && !w.pad_end[0] && !w.pad_end[1]) {
    gap_planes(x, y, N, C, H * W, (int)last, sx, zx, sy, zy);
    return MI_OK;
  }
  float lo = x->dtype == MI_DTYPE_INT8 ? -128.0f : 0.0f, hi = x->dtype == MI_DTYPE_INT8 ? 127.0f : 255.0f;
  int64_t OH = w.out[0], OW = w.out[1];
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t h0 = oh * w.stride[0] - w.pad_begin[0], w0 = ow * w.stride[1] - w.pad_begin[1];
          int64_t h1 = h0 + w.k[0] < H ? h0 + w.k[0] : H, w1 = w0 + w.k[1] < W ? w0 + w.k[1] : W;
          h0 = h0 > 0 ? h0 : 0;
          w0 = w0 > 0 ? w0 : 0;
          float sum = 0.0f;
          for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
              int64_t xi = last ? ((n * H + ih) * W + iw) * C + ch : ((n * C + ch) * H + ih) * W + iw;
              sum += sx * (float)(mi__ref_code(x, xi) - zx);
            }
          int64_t cnt = include_pad ? w.k[0] * w.k[1] : (h1 - h0) * (w1 - w0);
          float q = cnt > 0 ? sum / (float)cnt : 0.0f;
          q = nearbyintf(q / sy + (float)zy);
          q = q < lo ? lo : q > hi ? hi
                                   : q;
          int64_t yi = last ? ((n * OH + oh) * OW + ow) * C + ch : ((n * C + ch) * OH + oh) * OW + ow;
          if (x->dtype == MI_DTYPE_INT8) ((int8_t *)y->data)[yi] = (int8_t)q;
          else
            ((uint8_t *)y->data)[yi] = (uint8_t)q;
        }
  return MI_OK;
}

int32_t mi__ref_qlinear(mi__ref_call_t *c) {
  const char *op = c->node->op_type;
  if (strcmp(op, "DynamicQuantizeLinear") == 0) return dynamic_quantize(c);
  if (strcmp(op, "QLinearAdd") == 0) return qlinear_binary(c, 0);
  if (strcmp(op, "QLinearMul") == 0) return qlinear_binary(c, 1);
  if (strcmp(op, "QLinearAveragePool") == 0) return qlinear_avgpool(c);
  return qlinear_gap(c);
}
