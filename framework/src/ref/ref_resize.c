/* ref_resize.c - reference Resize (opset 10, 11+, 18+ forms) and Upsample, nearest and linear.
 * Both modes are separable, so the input is resized one axis at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"

typedef struct resize_mode {
  int linear;
  int ct;      /* coordinate transformation */
  int nearest; /* nearest_mode */
} resize_mode_t;

static int32_t read_mode(mi__ref_call_t *c, int modern, resize_mode_t *m) {
  static const char *const modes[] = {"nearest", "linear", "bilinear"};
  const char *mode = mi_node_attr_string(c->node, "mode", "nearest");
  int k = mi_sdk_pick(mode, modes, 3);
  if (k < 0) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "mode='%s' is not supported", mode);
  m->linear = k != 0;
  if (!modern) {
    /* Upsample and Resize-10 have no such attributes; ONNX Runtime runs them as asymmetric
     * with its "simple" nearest rule (floor when upsampling, ceil when downsampling). */
    m->ct = MI_SDK_CT_ASYMMETRIC;
    m->nearest = MI_SDK_NEAREST_SIMPLE;
    return MI_OK;
  }
  const char *ct = mi_node_attr_string(c->node, "coordinate_transformation_mode", "half_pixel");
  const char *nm = mi_node_attr_string(c->node, "nearest_mode", "round_prefer_floor");
  if ((m->ct = mi_sdk_resize_ct_from_name(ct)) < 0 ||
      (m->ct == MI_SDK_CT_HALF_PIXEL_SYMMETRIC && c->opset < 19))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "coordinate_transformation_mode='%s' is not "
                        "supported",
                        ct);
  if ((m->nearest = mi_sdk_resize_nearest_from_name(nm)) < 0)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "nearest_mode='%s' is not supported", nm);
  if (mi_node_attr_int(c->node, "antialias", 0) != 0)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "antialias=1 is not supported");
  if (k == 2) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "mode='bilinear' is not an opset 11+ mode");
  return MI_OK;
}

/* Resizes `x` along `axis` to `out` elements; the result is a new array or NULL (no memory). */
static mi_array_t *resize_axis(const mi_array_t *x, int32_t axis, int64_t out, float scale,
                               const resize_mode_t *m) {
  int64_t dims[MI_MAX_RANK], outer = 1, inner = 1, in = x->dims[axis];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = out;
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  mi_array_t *y = mi_array_create(MI_DTYPE_FLOAT32, x->rank, dims);
  int64_t *i0 = malloc((size_t)(out + 1) * sizeof *i0), *i1 = malloc((size_t)(out + 1) * sizeof *i1);
  float *w = malloc((size_t)(out + 1) * sizeof *w);
  if (!y || !i0 || !i1 || !w) {
    mi_array_destroy(y);
    y = NULL;
    goto done;
  }
  /* For each output position: the two input positions it blends and the second's weight. */
  for (int64_t j = 0; j < out; j++)
    mi_sdk_resize_tap(m->linear, m->ct, m->nearest, scale, in, out, j, &i0[j], &i1[j], &w[j]);
  const float *X = x->data;
  float *Y = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < out; j++) {
      const float *a = X + (o * in + i0[j]) * inner, *b = X + (o * in + i1[j]) * inner;
      float *dst = Y + (o * out + j) * inner;
      for (int64_t t = 0; t < inner; t++) dst[t] = (1.0f - w[j]) * a[t] + w[j] * b[t];
    }
done:
  free(i0);
  free(i1);
  free(w);
  return y;
}

/* Scales (float) from an attribute or an input; *count = -1 when neither has any. */
static int32_t read_scales(mi__ref_call_t *c, const mi_array_t *a, float *scales, int32_t *count) {
  *count = -1;
  if (a) {
    if (a->dtype != MI_DTYPE_FLOAT32 || a->rank > 1 || mi_array_numel(a) > MI_MAX_RANK)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "scales must be a float32 vector");
    if (mi_array_numel(a) == 0) return MI_OK;
    *count = (int32_t)mi_array_numel(a);
    memcpy(scales, a->data, (size_t)*count * sizeof *scales);
    return MI_OK;
  }
  const mi_attr_t *at = mi_node_attr(c->node, "scales");
  if (at && at->type == MI_ATTR_FLOATS && at->count <= MI_MAX_RANK) {
    *count = at->count;
    memcpy(scales, at->floats, (size_t)at->count * sizeof *scales);
  }
  return MI_OK;
}

int32_t mi__ref_resize(mi__ref_call_t *c) {
  const mi_array_t *x, *sz = NULL, *sc = NULL;
  resize_mode_t m = {0, MI_SDK_CT_HALF_PIXEL, MI_SDK_NEAREST_ROUND_PREFER_FLOOR};
  float scales[MI_MAX_RANK], sel[MI_MAX_RANK];
  int64_t sizes[MI_MAX_RANK], axes[MI_MAX_RANK], out[MI_MAX_RANK];
  int32_t nscales = -1, nsizes = -1, naxes = -1, rc;
  int upsample = strcmp(c->node->op_type, "Upsample") == 0;
  int modern = !upsample && c->opset >= 11;
  const mi_array_t *x0 = mi__ref_in(c, 0);
  if (x0 && (x0->dtype == MI_DTYPE_INT8 || x0->dtype == MI_DTYPE_UINT8)) {
    /* Codes (ONNX Runtime's QOperator models resize them directly): nearest picks codes. */
    if ((rc = read_mode(c, modern, &m)) != MI_OK) return rc;
    if (m.linear)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "a linear or cubic Resize of %s codes is not supported (nearest is)",
                          mi_dtype_name(x0->dtype));
    return mi__ref_on_codes(c, mi__ref_resize);
  }
  if ((rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x)) != MI_OK) return rc;
  if ((rc = read_mode(c, modern, &m)) != MI_OK) return rc;
  if (upsample && c->opset < 7)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "Upsample before opset 7 is not supported");
  if (modern) {
    sc = mi__ref_in(c, 2);
    sz = mi__ref_in(c, 3);
    if (c->opset >= 18 &&
        (rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK)
      return rc;
  } else if (!(upsample && c->opset < 9)) {
    sc = mi__ref_in(c, 1); /* Resize-10 and Upsample-9 take scales as input 1 */
    if (!sc) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "the scales input is missing");
  }
  if ((rc = read_scales(c, sc, scales, &nscales)) != MI_OK) return rc;
  if (sz && mi_array_numel(sz) > 0 &&
      (rc = mi__ref_read_ints(c, sz, "sizes", sizes, MI_MAX_RANK, &nsizes)) != MI_OK)
    return rc;
  if ((nscales < 0) == (nsizes < 0))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "exactly one of scales and sizes is needed");

  /* Expand per-axis values to every dim (axes, opset 18, lists only some of them). */
  int32_t given = nscales >= 0 ? nscales : nsizes, want = naxes >= 0 ? naxes : x->rank;
  int32_t axis_of[MI_MAX_RANK];
  if (given != want)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s has %d values, expected %d",
                        nscales >= 0 ? "scales" : "sizes", (int)given, (int)want);
  for (int32_t i = 0; i < want; i++)
    if (naxes < 0) axis_of[i] = i;
    else if ((rc = mi__ref_axis(c, axes[i], x->rank, &axis_of[i])) != MI_OK)
      return rc;
  for (int32_t d = 0; d < x->rank; d++) {
    sel[d] = 1.0f;
    out[d] = x->dims[d];
  }
  const char *policy = mi_node_attr_string(c->node, "keep_aspect_ratio_policy", "stretch");
  if (nsizes >= 0 && c->opset >= 18 && strcmp(policy, "stretch") != 0) {
    /* One common scale, the smallest (not_larger) or largest (not_smaller) of the ratios. */
    int larger = strcmp(policy, "not_smaller") == 0;
    if (!larger && strcmp(policy, "not_larger") != 0)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "keep_aspect_ratio_policy='%s'", policy);
    float s = larger ? 0.0f : INFINITY;
    for (int32_t i = 0; i < want; i++) {
      float r = (float)sizes[i] / (float)x->dims[axis_of[i]];
      s = larger ? fmaxf(s, r) : fminf(s, r);
    }
    for (int32_t i = 0; i < want; i++) {
      sel[axis_of[i]] = s;
      out[axis_of[i]] = (int64_t)roundf(s * (float)x->dims[axis_of[i]]);
    }
  } else {
    for (int32_t i = 0; i < want; i++) {
      int32_t d = axis_of[i];
      if (nscales >= 0) {
        if (!(scales[i] > 0.0f))
          return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "scale %g is not positive",
                              (double)scales[i]);
        sel[d] = scales[i];
        out[d] = (int64_t)floorf(scales[i] * (float)x->dims[d]);
      } else {
        if (sizes[i] < 0 || x->dims[d] == 0)
          return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "sizes[%d] = %lld is invalid",
                              (int)i, (long long)sizes[i]);
        out[d] = sizes[i];
        sel[d] = (float)sizes[i] / (float)x->dims[d];
      }
    }
  }

  mi_array_t *cur = mi__ref_clone(x);
  if (!cur) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t d = 0; d < x->rank; d++) {
    /* An axis of scale 1 and its own size is left alone in every mode, as ONNX Runtime does (and
     * the opencl and vulkan plugins): taken per axis, tf_half_pixel_for_nn's half-pixel shift
     * would move each channel of a [N, C, H, W] resize to the next under round_prefer_ceil. */
    if (out[d] == x->dims[d] && sel[d] == 1.0f) continue;
    if (out[d] < 1 || x->dims[d] < 1) {
      mi_array_destroy(cur);
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %d would resize %lld to %lld",
                          (int)d, (long long)x->dims[d], (long long)out[d]);
    }
    mi_array_t *next = resize_axis(cur, d, out[d], sel[d], &m);
    mi_array_destroy(cur);
    if (!next) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    cur = next;
  }
  c->out[0] = cur;
  return MI_OK;
}
