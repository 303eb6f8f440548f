/* ref_qlut.c - the com.microsoft ops of ONNX Runtime's QOperator format that map codes through
 * a 256-entry table or a row of exponentials: QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
 * QLinearWhere and QLinearSoftmax, in ONNX Runtime's float arithmetic (its CPU kernels build the
 * tables as dequantize -> float op -> quantize, with float division, round half to even and
 * saturation), so the codes are the ones it computes. */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "ref/ref_qutil.h"

/* ONNX Runtime's quantization of one float (MlasQuantizeLinear): saturate(nearbyint(v / s) + zp),
 * all in float. */
static uint8_t quant_f(float v, float s, int32_t zp, int is_s8) {
  float lo = is_s8 ? -128.0f : 0.0f, hi = is_s8 ? 127.0f : 255.0f;
  float q = nearbyintf(v / s) + (float)zp;
  q = q < lo ? lo : q > hi ? hi
                           : q;
  return (uint8_t)(int32_t)q; /* the byte of the INT8 or UINT8 code */
}

/* Code of table entry t (the byte t read as the input's dtype). */
static int32_t code_of(int is_s8, int32_t t) { return is_s8 ? (int32_t)(int8_t)(uint8_t)t : t; }

enum { LUT_COPY = 0,
       LUT_SIGMOID = 1,
       LUT_LEAKY = 2 };

/* table[byte of x] = quantize(f(dequantize(x))), dequantize as xs * (x - zx) in float. */
static void build_table(int is_s8, float xs, int32_t zx, float ys, int32_t zy, int fn, float alpha,
                        uint8_t table[256]) {
  for (int32_t t = 0; t < 256; t++) {
    float x = xs * (float)(code_of(is_s8, t) - zx), v = x;
    if (fn == LUT_SIGMOID) v = (float)(1.0 / (1.0 + exp(-(double)x)));
    else if (fn == LUT_LEAKY)
      v = x >= 0.0f ? x : alpha * x;
    table[t] = quant_f(v, ys, zy, is_s8);
  }
}

static float scale_of(const mi_array_t *s) { return *(const float *)s->data; }
static int32_t zp_of(const mi_array_t *z) { return z ? mi__ref_code(z, 0) : 0; }

/* Per-tensor scale (input ks) and optional zero point (input ks + 1) of dtype dt. */
static int32_t qpair(const mi__ref_call_t *c, int32_t ks, const char *sname, const char *zname, int32_t dt,
                     float *s, int32_t *z) {
  const mi_array_t *sa, *za;
  int64_t k;
  int32_t rc = mi__ref_qparam(c, ks, sname, 1, -1, 1, &sa, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, ks + 1, zname, 0, dt, 1, &za, &k);
  if (rc != MI_OK) return rc;
  *s = scale_of(sa);
  *z = zp_of(za);
  return MI_OK;
}

/* QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zero_point, Y_scale, Y_zero_point; alpha). */
static int32_t qlinear_act(mi__ref_call_t *c, int fn) {
  const mi_array_t *x = NULL;
  mi_array_t *y = NULL;
  float xs, ys, alpha = mi_node_attr_float(c->node, "alpha", 0.01f);
  int32_t zx, zy, rc = mi__ref_need(c, 0, MI__Q8, &x);
  if (rc == MI_OK) rc = qpair(c, 1, "X_scale", "X_zero_point", x->dtype, &xs, &zx);
  if (rc == MI_OK) rc = qpair(c, 3, "Y_scale", "Y_zero_point", x->dtype, &ys, &zy);
  if (rc != MI_OK) return rc;
  if (fn == LUT_LEAKY && !isfinite(alpha))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "alpha = %g is not finite", (double)alpha);
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  uint8_t table[256];
  build_table(x->dtype == MI_DTYPE_INT8, xs, zx, ys, zy, fn, alpha, table);
  const uint8_t *xv = x->data;
  uint8_t *yv = y->data;
  for (int64_t i = 0, n = mi_array_numel(x); i < n; i++) yv[i] = table[xv[i]];
  return MI_OK;
}

/* QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per input; axis): each
 * input's codes requantized to Y's through a table (a copy where its parameters are Y's). */
static int32_t qlinear_concat(mi__ref_call_t *c) {
  const mi_array_t *x0 = NULL;
  mi_array_t *y = NULL;
  int32_t n = (c->nin - 2) / 3, axis, rc;
  if (c->nin < 5 || (c->nin - 2) % 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "%d inputs; expected Y_scale, Y_zero_point and then (X, X_scale, X_zero_point) triples",
                        (int)c->nin);
  if (!mi_node_attr(c->node, "axis"))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute axis is missing");
  if ((rc = mi__ref_need(c, 2, MI__Q8, &x0)) != MI_OK) return rc;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x0->rank, &axis)) != MI_OK) return rc;
  float ys;
  int32_t zy, is_s8 = x0->dtype == MI_DTYPE_INT8;
  if ((rc = qpair(c, 0, "Y_scale", "Y_zero_point", x0->dtype, &ys, &zy)) != MI_OK) return rc;
  int64_t dims[MI_MAX_RANK];
  memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)x0->rank);
  dims[axis] = 0;
  for (int32_t k = 0; k < n; k++) {
    const mi_array_t *x;
    if ((rc = mi__ref_need(c, 2 + 3 * k, MI_DTYPE_BIT(x0->dtype), &x)) != MI_OK) return rc;
    if (x->rank != x0->rank)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d has rank %d, input 2 rank %d", (int)(2 + 3 * k),
                          (int)x->rank, (int)x0->rank);
    for (int32_t d = 0; d < x->rank; d++)
      if (d != axis && x->dims[d] != x0->dims[d])
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d: dim %d is %lld, input 2's is %lld",
                            (int)(2 + 3 * k), (int)d, (long long)x->dims[d], (long long)x0->dims[d]);
    dims[axis] += x->dims[axis];
  }
  if ((rc = mi__ref_make_out(c, 0, x0->dtype, x0->rank, dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  int64_t outer = 1, inner = 1, at = 0;
  for (int32_t d = 0; d < axis; d++) outer *= dims[d];
  for (int32_t d = axis + 1; d < x0->rank; d++) inner *= dims[d];
  for (int32_t k = 0; k < n; k++) {
    const mi_array_t *x = mi__ref_in(c, 2 + 3 * k);
    float xs;
    int32_t zx;
    char sn[32], zn[40];
    snprintf(sn, sizeof sn, "X_scale %d", (int)k);
    snprintf(zn, sizeof zn, "X_zero_point %d", (int)k);
    if ((rc = qpair(c, 3 + 3 * k, sn, zn, x0->dtype, &xs, &zx)) != MI_OK) return rc;
    uint8_t table[256];
    build_table(is_s8, xs, zx, ys, zy, LUT_COPY, 0.0f, table);
    int copy = xs == ys && zx == zy;
    int64_t row = x->dims[axis] * inner;
    const uint8_t *xv = x->data;
    uint8_t *yv = y->data;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < row; i++) {
        uint8_t v = xv[o * row + i];
        yv[o * dims[axis] * inner + at + i] = copy ? v : table[v];
      }
    at += row;
  }
  return MI_OK;
}

/* QLinearWhere (condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale,
 * z_zero_point): X's or Y's code requantized to Z's parameters through a table indexed by the
 * code's byte (a copy where they are Z's), with numpy broadcasting of the three. */
static int32_t qlinear_where(mi__ref_call_t *c) {
  const mi_array_t *cond = NULL, *x = NULL, *yv = NULL;
  mi_array_t *z = NULL;
  float xs, ys, zs;
  int32_t zx, zy, zz, rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_BOOL), &cond);
  if (rc == MI_OK && c->nin != 9)
    rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%d inputs; QLinearWhere takes 9", (int)c->nin);
  if (rc == MI_OK) rc = mi__ref_need(c, 1, MI__Q8, &x);
  if (rc == MI_OK) rc = mi__ref_need(c, 4, MI_DTYPE_BIT(x->dtype), &yv);
  if (rc == MI_OK) rc = qpair(c, 2, "x_scale", "x_zero_point", x->dtype, &xs, &zx);
  if (rc == MI_OK) rc = qpair(c, 5, "y_scale", "y_zero_point", x->dtype, &ys, &zy);
  if (rc == MI_OK) rc = qpair(c, 7, "z_scale", "z_zero_point", x->dtype, &zs, &zz);
  if (rc != MI_OK) return rc;
  if (!mi__ref_in(c, 3) || !mi__ref_in(c, 6) || !mi__ref_in(c, 8))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "the zero points x, y and z are required");
  const mi_array_t *ops[3] = {cond, x, yv};
  mi__ref_bcast_t bc;
  if ((rc = mi__ref_broadcast(c, 3, ops, &bc)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, bc.rank, bc.dims, &z)) != MI_OK) return rc;
  c->out[0] = z;
  int is_s8 = x->dtype == MI_DTYPE_INT8;
  uint8_t tx[256], ty[256];
  build_table(is_s8, xs, zx, zs, zz, LUT_COPY, 0.0f, tx);
  build_table(is_s8, ys, zy, zs, zz, LUT_COPY, 0.0f, ty);
  int cx = xs == zs && zx == zz, cy = ys == zs && zy == zz;
  const uint8_t *cv = cond->data, *xb = x->data, *yb = yv->data;
  uint8_t *zb = z->data;
  for (int64_t i = 0; i < bc.numel; i++) {
    int64_t off[3];
    mi__ref_bcast_offsets(&bc, 3, i, off);
    if (cv[off[0]]) zb[i] = cx ? xb[off[1]] : tx[xb[off[1]]];
    else
      zb[i] = cy ? yb[off[2]] : ty[yb[off[2]]];
  }
  return MI_OK;
}

/* QLinearSoftmax (X, X_scale, x_zero_point, y_scale, y_zero_point; axis, opset) as ONNX
 * Runtime computes it: per row of D codes, e(x) = float(exp((x - max + b) * X_scale)) with
 * b = max(0, ln(FLT_MAX / D) - 5) / X_scale (a shift that keeps the float sum finite; it cancels
 * in the ratio), the float sum of e in order, and y = nearbyint(e * floor(1 / y_scale) / sum) +
 * y_zero_point, saturated. The zero point of X cancels. opset < 13: the rows are the 2-D
 * flattening at axis (default 1); opset >= 13: the single dim axis (default -1). ONNX Runtime
 * lets an INT8 code above 127 wrap; it saturates here. */
static int32_t qlinear_softmax(mi__ref_call_t *c) {
  const mi_array_t *x = NULL;
  mi_array_t *y = NULL;
  float xs, ys;
  int32_t zx, zy, axis, rc = mi__ref_need(c, 0, MI__Q8, &x);
  if (rc == MI_OK) rc = qpair(c, 1, "X_scale", "x_zero_point", x->dtype, &xs, &zx);
  if (rc == MI_OK) rc = qpair(c, 3, "y_scale", "y_zero_point", x->dtype, &ys, &zy);
  if (rc != MI_OK) return rc;
  if (!mi_node_attr(c->node, "opset"))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute opset is missing (the Softmax opset it follows)");
  int64_t opset = mi_node_attr_int(c->node, "opset", 13);
  if (x->rank < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input is a scalar");
  rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", opset < 13 ? 1 : -1), x->rank, &axis);
  if (rc != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  int64_t outer = 1, D = 1, inner = 1;
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = axis; d < x->rank; d++)
    if (opset < 13 || d == axis) D *= x->dims[d];
    else
      inner *= x->dims[d];
  if (D == 0 || outer * inner == 0) return MI_OK;
  int is_s8 = x->dtype == MI_DTYPE_INT8;
  double b = log((double)(FLT_MAX / (float)D)) - 5.0;
  b = (b > 0.0 ? b : 0.0) / (double)xs;
  float e[256], yinv = floorf(1.0f / ys), lo = is_s8 ? -128.0f : 0.0f, hi = is_s8 ? 127.0f : 255.0f;
  for (int32_t i = 0; i < 256; i++) e[i] = (float)exp(((double)i - 255.0 + b) * (double)xs);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * D * inner + in;
      int32_t mx = -129;
      for (int64_t k = 0; k < D; k++) {
        int32_t v = mi__ref_code(x, base + k * inner);
        mx = v > mx ? v : mx;
      }
      float sum = 0.0f;
      for (int64_t k = 0; k < D; k++) sum += e[255 - (mx - mi__ref_code(x, base + k * inner))];
      for (int64_t k = 0; k < D; k++) {
        float q = nearbyintf(e[255 - (mx - mi__ref_code(x, base + k * inner))] * yinv / sum) + (float)zy;
        q = q < lo ? lo : q > hi ? hi
                                 : q;
        if (is_s8) ((int8_t *)y->data)[base + k * inner] = (int8_t)q;
        else
          ((uint8_t *)y->data)[base + k * inner] = (uint8_t)q;
      }
    }
  (void)zx;
  return MI_OK;
}

int32_t mi__ref_qlut(mi__ref_call_t *c) {
  const char *op = c->node->op_type;
  if (strcmp(op, "QLinearSigmoid") == 0) return qlinear_act(c, LUT_SIGMOID);
  if (strcmp(op, "QLinearLeakyRelu") == 0) return qlinear_act(c, LUT_LEAKY);
  if (strcmp(op, "QLinearConcat") == 0) return qlinear_concat(c);
  if (strcmp(op, "QLinearWhere") == 0) return qlinear_where(c);
  return qlinear_softmax(c);
}
