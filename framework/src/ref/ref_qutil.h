/* ref_qutil.h - small helpers shared by the reference's integer ops (ref_qlinear.c, ref_qgemm.c):
 * reading codes, scales and zero points, and the ONNX requantization. */
#ifndef MI_REF_REF_QUTIL_H
#define MI_REF_REF_QUTIL_H

#include <math.h>

#include "ref/ref_ops.h"

#define MI__Q8 (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8))

/* Element i of an INT8, UINT8 or INT32 array. */
static inline int32_t mi__ref_code(const mi_array_t *a, int64_t i) {
  switch (a->dtype) {
  case MI_DTYPE_INT8: return ((const int8_t *)a->data)[i];
  case MI_DTYPE_UINT8: return ((const uint8_t *)a->data)[i];
  default: return ((const int32_t *)a->data)[i];
  }
}

/* ONNX saturate(round_half_to_even(v) + zp) into an INT8 or UINT8 output, element i. rint rounds
 * half to even in the default rounding mode. */
static inline void mi__ref_put_code(mi_array_t *y, int64_t i, double v, int32_t zp) {
  double lo = y->dtype == MI_DTYPE_INT8 ? -128.0 : 0.0, hi = y->dtype == MI_DTYPE_INT8 ? 127.0 : 255.0;
  v = rint(v) + zp;
  v = v < lo ? lo : v > hi ? hi
                           : v;
  if (y->dtype == MI_DTYPE_INT8) ((int8_t *)y->data)[i] = (int8_t)v;
  else
    ((uint8_t *)y->data)[i] = (uint8_t)v;
}

/* Per-tensor (one value) or per-channel (`count` values) scales or zero points of input k:
 * *n is 1 or count. A zero point must have the dtype `zdt` (-1: any 8-bit); an absent optional
 * zero point reads as 0 (*a NULL). Scales must be FLOAT32 and > 0. */
int32_t mi__ref_qparam(const mi__ref_call_t *c, int32_t k, const char *what, int is_scale,
                       int32_t zdt, int64_t count, const mi_array_t **a, int64_t *n);

/* Integer conv sums acc[n][m][oh][ow] = sum X * W (+ bias[m]) of centered codes X [N][C][H][W]
 * and W [M][C/group][KH][KW] over window w, wrapping as int32 does; -1: out of memory
 * (ref_qgemm.c). */
int mi__ref_conv_acc(const int32_t *X, const int32_t *Wt, const int32_t *bias, int32_t *Y, int64_t N,
                     int64_t C, int64_t M, int64_t group, const mi__ref_window_t *w);

#endif /* MI_REF_REF_QUTIL_H */
