/* ref_extra.c - reference ops the loader used to refuse by name that real exports contain: Det
 * (opset 11: the determinant of each square matrix of the last two axes), CenterCropPad (18: each
 * axis cropped or zero-padded about its centre), MaxRoiPool (1: Caffe's ROI max pooling on integer
 * bins of rounded boxes) and TensorScatter (24: the KV cache update of LLM exports). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

int32_t mi__ref_det(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2] || x->dims[x->rank - 1] > 4096)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input must be [..., M, M] with M <= 4096");
  int64_t n = x->dims[x->rank - 1];
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank - 2, x->dims, &y)) != MI_OK) return rc;
  double *a = malloc((size_t)(n * n + 1) * sizeof *a);
  if (!a) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t b = 0; b < mi_array_numel(y); b++) {
    const float *m = (const float *)x->data + b * n * n;
    for (int64_t i = 0; i < n * n; i++) a[i] = m[i];
    ((float *)y->data)[b] = (float)mi_sdk_det(a, n);
  }
  free(a);
  return MI_OK;
}

/* CenterCropPad (input, shape): on each axis of `axes` (default all), a target longer than the
 * input pads zeros, (target - in) / 2 before; a shorter one keeps the window from (in - target) / 2. */
int32_t mi__ref_center_crop_pad(mi__ref_call_t *c) {
  const mi_array_t *x, *s;
  mi_array_t *y;
  int64_t tgt[MI_MAX_RANK], axes[MI_MAX_RANK], dims[MI_MAX_RANK], shift[MI_MAX_RANK] = {0};
  int32_t nt, na, rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32), &s)) != MI_OK ||
      (rc = mi__ref_read_ints(c, s, "shape", tgt, MI_MAX_RANK, &nt)) != MI_OK ||
      (rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &na)) != MI_OK)
    return rc;
  if (x->dtype == MI_DTYPE_INT4) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "packed 4-bit input");
  if (na < 0) {
    na = x->rank;
    for (int32_t d = 0; d < na; d++) axes[d] = d;
  }
  if (nt != na)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "shape has %d values for %d axes", (int)nt, (int)na);
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int32_t i = 0; i < na; i++) {
    int32_t ax;
    if ((rc = mi__ref_axis(c, axes[i], x->rank, &ax)) != MI_OK) return rc;
    if (tgt[i] < 0 || tgt[i] > INT32_MAX) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "shape value %lld", (long long)tgt[i]);
    dims[ax] = tgt[i];
    shift[ax] = tgt[i] >= x->dims[ax] ? (tgt[i] - x->dims[ax]) / 2 : -((x->dims[ax] - tgt[i]) / 2);
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t idx[MI_MAX_RANK] = {0}, zero[MI_MAX_RANK] = {0}, off = 0, n = mi_array_numel(x);
  for (int64_t i = 0; i < n; i++) { /* each input element lands at idx + shift, if inside */
    int64_t at = 0, inside = 1;
    for (int32_t d = 0; d < x->rank && inside; d++) {
      int64_t o = idx[d] + shift[d];
      inside = o >= 0 && o < dims[d];
      at = at * dims[d] + o;
    }
    if (inside) memcpy((uint8_t *)y->data + (size_t)at * es, (const uint8_t *)x->data + (size_t)i * es, es);
    mi__ref_index_next(x->rank, x->dims, zero, idx, &off);
  }
  return MI_OK;
}

/* MaxRoiPool (X, rois [R, 5] of batch index, x1, y1, x2, y2): per roi and channel, the maximum of
 * each of pooled_shape's bins over the box scaled by spatial_scale and rounded to pixels, as
 * Caffe's ROIPooling and ONNX Runtime; an empty bin gives 0. */
int32_t mi__ref_max_roi_pool(mi__ref_call_t *c) {
  const mi_array_t *x, *r;
  mi_array_t *y;
  int64_t ps[2];
  int32_t np, rc;
  float scale = mi_node_attr_float(c->node, "spatial_scale", 1.0f);
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &r)) != MI_OK ||
      (rc = mi__ref_attr_ints(c, "pooled_shape", ps, 2, &np)) != MI_OK)
    return rc;
  if (np != 2 || ps[0] < 1 || ps[1] < 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "pooled_shape must be two values >= 1");
  if (x->rank != 4 || r->rank != 2 || r->dims[1] != 5)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be [N, C, H, W] and rois [R, 5]");
  int64_t R = r->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], dims[4] = {R, C, ps[0], ps[1]};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, dims, &y)) != MI_OK) return rc;
  const float *rois = r->data;
  float *Y = y->data;
  for (int64_t i = 0; i < R; i++) {
    const float *b = rois + i * 5;
    if (!(b[0] >= 0 && b[0] < (float)x->dims[0]))
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "roi %lld has batch index %g outside X", (long long)i, b[0]);
    int64_t n = (int64_t)b[0];
    for (int k = 1; k < 5; k++)
      if (!(fabsf(b[k] * scale) < 1e9f))
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "roi %lld has coordinate %g out of range", (long long)i, b[k]);
    /* float arithmetic as ONNX Runtime's, so that the bins' integer edges are the same */
    float x1 = roundf(b[1] * scale), y1 = roundf(b[2] * scale), x2 = roundf(b[3] * scale), y2 = roundf(b[4] * scale);
    float rh = fmaxf(y2 - y1 + 1, 1), rw = fmaxf(x2 - x1 + 1, 1), bh = rh / (float)ps[0], bw = rw / (float)ps[1];
    for (int64_t ch = 0; ch < C; ch++) {
      const float *pl = (const float *)x->data + (n * C + ch) * H * W;
      for (int64_t ph = 0; ph < ps[0]; ph++)
        for (int64_t pw = 0; pw < ps[1]; pw++) {
          int64_t hs = (int64_t)floorf((float)ph * bh) + (int64_t)y1, he = (int64_t)ceilf((float)(ph + 1) * bh) + (int64_t)y1;
          int64_t ws = (int64_t)floorf((float)pw * bw) + (int64_t)x1, we = (int64_t)ceilf((float)(pw + 1) * bw) + (int64_t)x1;
          hs = hs < 0 ? 0 : hs > H ? H
                                   : hs,
          he = he < 0 ? 0 : he > H ? H
                                   : he;
          ws = ws < 0 ? 0 : ws > W ? W
                                   : ws,
          we = we < 0 ? 0 : we > W ? W
                                   : we;
          float best = he <= hs || we <= ws ? 0.0f : -FLT_MAX;
          for (int64_t h = hs; h < he; h++)
            for (int64_t w = ws; w < we; w++)
              if (pl[h * W + w] > best) best = pl[h * W + w];
          Y[((i * C + ch) * ps[0] + ph) * ps[1] + pw] = best;
        }
    }
  }
  return MI_OK;
}

/* TensorScatter (past_cache, update, write_indices?): present = past with update's rows written
 * along `axis` (default -2) from write_indices[b] (absent: 0) for each batch b, wrapping modulo
 * the cache length in mode "circular"; in "linear" a write past the end is refused. */
int32_t mi__ref_tensor_scatter(mi__ref_call_t *c) {
  const mi_array_t *past, *upd, *wi = mi__ref_in(c, 2);
  mi_array_t *y;
  int32_t rc, ax;
  const char *mode = mi_node_attr_string(c->node, "mode", "linear");
  int circular = !strcmp(mode, "circular");
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, 0, &past)) != MI_OK ||
      (rc = mi__ref_need(c, 1, 0, &upd)) != MI_OK)
    return rc;
  if (!circular && strcmp(mode, "linear"))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "mode '%s' is not linear or circular", mode);
  if (past->rank < 2 || upd->rank != past->rank || upd->dtype != past->dtype || past->dtype == MI_DTYPE_INT4)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "past_cache and update must be of one type and rank >= 2");
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -2), past->rank, &ax)) != MI_OK) return rc;
  if (ax == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis 0 is the batch axis");
  for (int32_t d = 0; d < past->rank; d++)
    if (d != ax ? upd->dims[d] != past->dims[d] : upd->dims[d] > past->dims[d])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "update's dim %d is %lld against the cache's %lld", (int)d,
                          (long long)upd->dims[d], (long long)past->dims[d]);
  int64_t B = past->dims[0], L = past->dims[ax], S = upd->dims[ax], outer = 1, inner = 1;
  if (wi && (wi->dtype != MI_DTYPE_INT64 || mi_array_numel(wi) != B))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "write_indices must be INT64 [%lld]", (long long)B);
  for (int32_t d = 1; d < ax; d++) outer *= past->dims[d];
  for (int32_t d = ax + 1; d < past->rank; d++) inner *= past->dims[d];
  if ((rc = mi__ref_make_out(c, 0, past->dtype, past->rank, past->dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(past->dtype), row = (size_t)inner * es;
  if (past->nbytes) memcpy(y->data, past->data, past->nbytes);
  for (int64_t b = 0; b < B; b++) {
    int64_t w0 = wi ? ((const int64_t *)wi->data)[b] : 0;
    if (w0 < 0 || (!circular && w0 + S > L) || (circular && L == 0 && S > 0))
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "write index %lld of batch %lld does not fit %lld rows of %lld",
                          (long long)w0, (long long)b, (long long)S, (long long)L);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t s = 0; s < S; s++) {
        int64_t at = circular ? (w0 + s) % L : w0 + s;
        memcpy((uint8_t *)y->data + (size_t)((b * outer + o) * L + at) * row,
               (const uint8_t *)upd->data + (size_t)((b * outer + o) * S + s) * row, row);
      }
  }
  return MI_OK;
}
