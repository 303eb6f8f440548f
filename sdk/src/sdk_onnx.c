/* sdk_onnx.c - ONNX semantics shared by the reference interpreter and every plugin: broadcast
 * shapes, Resize coordinates, Pad modes, window pads and output sizes, Det's LU. One copy, so that the
 * backends and the oracle cannot drift apart. */
#include <math.h>
#include <string.h>

#include "metainfer/mi_sdk.h"

int mi_sdk_pick(const char *name, const char *const *names, int count) {
  int i;
  for (i = 0; name && i < count; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

int32_t mi_sdk_broadcast_shape(int32_t ra, const int64_t *a, int32_t rb, const int64_t *b,
                               int32_t *rank, int64_t *out) {
  int32_t r = ra > rb ? ra : rb, i;
  if (ra < 0 || rb < 0 || r > MI_MAX_RANK || !rank || !out) return MI_ERR_INVALID_ARGUMENT;
  for (i = 0; i < r; i++) { /* aligned from the last dim; a missing dim is 1 */
    int64_t da = i < r - ra ? 1 : a[i - (r - ra)], db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da != db && da != 1 && db != 1) return MI_ERR_INVALID_ARGUMENT;
    out[i] = da == 1 ? db : da;
  }
  *rank = r;
  return MI_OK;
}

int mi_sdk_resize_ct_from_name(const char *name) {
  static const char *const cts[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_half_pixel_for_nn", "half_pixel_symmetric"};
  return mi_sdk_pick(name, cts, 6);
}

int mi_sdk_resize_nearest_from_name(const char *name) {
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  return mi_sdk_pick(name, nms, 4);
}

float mi_sdk_resize_coord(int ct, float x, float scale, int64_t in, int64_t out) {
  switch (ct) {
  case MI_SDK_CT_HALF_PIXEL: return (x + 0.5f) / scale - 0.5f;
  case MI_SDK_CT_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
  case MI_SDK_CT_ALIGN_CORNERS: return out == 1 ? 0.0f : x * (float)(in - 1) / (float)(out - 1);
  case MI_SDK_CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / scale;
  case MI_SDK_CT_HALF_PIXEL_SYMMETRIC: {
    float adj = (float)out / (scale * (float)in), center = (float)in / 2.0f;
    return center * (1.0f - adj) + (x + 0.5f) / scale - 0.5f;
  }
  default: return x / scale; /* asymmetric */
  }
}

int64_t mi_sdk_resize_nearest_index(int nearest, float x, float scale) {
  switch (nearest) {
  case MI_SDK_NEAREST_ROUND_PREFER_FLOOR:
    return x == floorf(x) + 0.5f ? (int64_t)floorf(x) : (int64_t)roundf(x);
  case MI_SDK_NEAREST_ROUND_PREFER_CEIL: return (int64_t)roundf(x); /* ties away from zero */
  case MI_SDK_NEAREST_FLOOR: return (int64_t)floorf(x);
  case MI_SDK_NEAREST_CEIL: return (int64_t)ceilf(x);
  default: return scale < 1.0f ? (int64_t)ceilf(x) : (int64_t)floorf(x);
  }
}

void mi_sdk_resize_tap(int linear, int ct, int nearest, float scale, int64_t in, int64_t out,
                       int64_t j, int64_t *i0, int64_t *i1, float *w) {
  float x = mi_sdk_resize_coord(ct, (float)j, scale, in, out);
  if (linear) {
    if (x < 0.0f) x = 0.0f;
    if (x > (float)(in - 1)) x = (float)(in - 1);
    *i0 = (int64_t)x;
    *i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
    *w = x - (float)*i0;
  } else {
    int64_t k = mi_sdk_resize_nearest_index(nearest, x, scale);
    *i0 = *i1 = k < 0 ? 0 : k >= in ? in - 1
                                    : k;
    *w = 0.0f;
  }
}

int mi_sdk_pad_mode_from_name(const char *name) {
  static const char *const modes[] = {"constant", "edge", "reflect"};
  return name ? mi_sdk_pick(name, modes, 3) : MI_SDK_PAD_CONSTANT;
}

int64_t mi_sdk_pad_source(int mode, int64_t o, int64_t begin, int64_t n) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == MI_SDK_PAD_CONSTANT || n <= 0) return -1;
  if (mode == MI_SDK_PAD_EDGE) return i < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  for (;;) { /* reflect, folding as often as the pad needs */
    if (i < 0) i = -i;
    else if (i >= n)
      i = 2 * (n - 1) - i;
    else
      return i;
  }
}

int mi_sdk_auto_pad_from_name(const char *name) {
  static const char *const modes[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  return name ? mi_sdk_pick(name, modes, 4) : MI_SDK_AUTO_PAD_NOTSET;
}

void mi_sdk_same_pads(int auto_pad, int64_t total, int64_t *begin, int64_t *end) {
  if (total < 0) total = 0;
  *begin = auto_pad == MI_SDK_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
  *end = total - *begin;
}

int64_t mi_sdk_window_out(int auto_pad, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, int ceil_mode) {
  int64_t ek = (k - 1) * dilation + 1, span, out;
  if (stride < 1) return 0;
  if (auto_pad == MI_SDK_AUTO_PAD_SAME_UPPER || auto_pad == MI_SDK_AUTO_PAD_SAME_LOWER)
    return (in + stride - 1) / stride;
  if (auto_pad == MI_SDK_AUTO_PAD_VALID) return in >= ek ? (in - ek) / stride + 1 : 0;
  span = in + pad_begin + pad_end - ek;
  if (span < 0) return 0;
  out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  /* A window that would start in the end padding is dropped (PyTorch, the ONNX reference). */
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) out--;
  return out;
}

double mi_sdk_det(double *a, int64_t n) {
  double d = 1.0;
  for (int64_t k = 0; k < n; k++) {
    int64_t piv = k;
    for (int64_t i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > fabs(a[piv * n + k])) piv = i;
    if (a[piv * n + k] == 0.0) return 0.0;
    if (piv != k) {
      for (int64_t j = 0; j < n; j++) {
        double t = a[k * n + j];
        a[k * n + j] = a[piv * n + j], a[piv * n + j] = t;
      }
      d = -d;
    }
    d *= a[k * n + k];
    for (int64_t i = k + 1; i < n; i++) {
      double f = a[i * n + k] / a[k * n + k];
      for (int64_t j = k; j < n; j++) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return d;
}
