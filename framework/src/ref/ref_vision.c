/* ref_vision.c - reference LRN (the classic CNNs' local response normalisation), ImageScaler
 * (the experimental op of opset 1-9 that older converted models open with), GridSample (spatial
 * transformers, optical flow, warping) and RoiAlign (two-stage detectors), in ONNX Runtime's
 * arithmetic where the spec leaves room. */
#include <math.h>
#include <string.h>

#include "graph/op_since.h"
#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

/* LRN: y = x / (bias + alpha / size * sum of x^2 over the `size` channels around c)^beta, the
 * window from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), cut at the edges. */
int32_t mi__ref_lrn(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t size = mi_node_attr_int(c->node, "size", 0);
  float alpha = mi_node_attr_float(c->node, "alpha", 1e-4f);
  float beta = mi_node_attr_float(c->node, "beta", 0.75f);
  float bias = mi_node_attr_float(c->node, "bias", 1.0f);
  int32_t rc = mi__ref_need(c, 0, F32, &x);
  if (rc != MI_OK) return rc;
  if (size < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute size must be given and >= 1");
  if (x->rank < 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be [N, C, D1, ...], got rank %d", (int)x->rank);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t N = x->dims[0], C = x->dims[1], S = mi_array_numel(x) / (N * C > 0 ? N * C : 1);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t s = 0; s < S; s++) {
        double sq = 0;
        for (int64_t k = ch - lo < 0 ? 0 : ch - lo; k <= ch + hi && k < C; k++) {
          float v = xp[(n * C + k) * S + s];
          sq += (double)v * v;
        }
        int64_t i = (n * C + ch) * S + s;
        yp[i] = (float)(xp[i] / pow(bias + alpha / (double)size * sq, beta));
      }
  return MI_OK;
}

/* ImageScaler: y = scale * x + bias[c] on [N, C, ...]. */
int32_t mi__ref_image_scaler(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  const mi_attr_t *b = mi_node_attr(c->node, "bias");
  float scale = mi_node_attr_float(c->node, "scale", 1.0f);
  int32_t rc = mi__ref_need(c, 0, F32, &x);
  if (rc != MI_OK) return rc;
  if (x->rank < 2) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be [N, C, ...], got rank %d", (int)x->rank);
  if (b && (b->type != MI_ATTR_FLOATS || b->count != x->dims[1]))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "bias must be %lld floats, one per channel", (long long)x->dims[1]);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t N = x->dims[0], C = x->dims[1], S = N * C > 0 ? mi_array_numel(x) / (N * C) : 0;
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t i = 0; i < N * C; i++)
    for (int64_t s = 0; s < S; s++) yp[i * S + s] = scale * xp[i * S + s] + (b ? b->floats[i % C] : 0.0f);
  return MI_OK;
}

/* ---------------------------------------------------------------- GridSample */

enum { GS_LINEAR,
       GS_NEAREST,
       GS_CUBIC };
enum { GS_ZEROS,
       GS_BORDER,
       GS_REFLECTION };

/* Reflects x into [lo, hi] by the nearer border, as often as it takes. */
static float gs_reflect(float x, float lo, float hi) {
  float range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo || x > hi) {
    float d = x < lo ? lo - x : x - hi;
    int64_t k = (int64_t)(d / range);
    float r = d - (float)k * range;
    int toward_lo = (x < lo) == (k % 2 == 0); /* lands r inside from lo, else from hi */
    x = toward_lo ? lo + r : hi - r;
  }
  return x;
}

/* The geometry of one sample: the input's spatial sizes (d = 2 or 3, innermost last), padding,
 * and the reflection borders of each axis. */
typedef struct gs {
  int32_t d, pad;
  int64_t in[3];
  float lo[3], hi[3];
} gs_t;

/* Input value at integer position p (axes outermost first) of one channel plane, padded. */
static float gs_pixel(const gs_t *g, const float *plane, int64_t *p) {
  int64_t off = 0;
  for (int32_t a = 0; a < g->d; a++) {
    int64_t v = p[a];
    if (g->pad == GS_ZEROS) {
      if (v < 0 || v >= g->in[a]) return 0.0f;
    } else if (g->pad == GS_BORDER) {
      v = v < 0 ? 0 : v >= g->in[a] ? g->in[a] - 1
                                    : v;
    } else {
      v = (int64_t)gs_reflect((float)v, g->lo[a], g->hi[a]);
      v = v < 0 ? 0 : v >= g->in[a] ? g->in[a] - 1
                                    : v; /* a 1-pixel axis reflects onto -0.5 */
    }
    off = off * g->in[a] + v;
  }
  return plane[off];
}

/* Keys' cubic convolution weights (A = -0.75) of the 4 taps around a fraction t in [0, 1). */
static void gs_cubic(float t, float w[4]) {
  const float A = -0.75f;
  float x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
  w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

/* One output point: pos[a] is the position on input axis a (in input pixels). The taps of each
 * axis and their weights, then the weighted sum over every combination of taps. */
static float gs_sample(const gs_t *g, int32_t mode, const float *plane, const float *pos) {
  int64_t base[3], p[3];
  float w[3][4];
  int32_t taps = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2
                                                            : 4,
          a;
  for (a = 0; a < g->d; a++) {
    float f = floorf(pos[a]), t = pos[a] - f;
    if (mode == GS_NEAREST) {
      base[a] = (int64_t)nearbyintf(pos[a]); /* halves to even, as std::nearbyint */
      w[a][0] = 1.0f;
    } else if (mode == GS_LINEAR) {
      base[a] = (int64_t)f;
      w[a][0] = 1.0f - t, w[a][1] = t;
    } else {
      base[a] = (int64_t)f - 1;
      gs_cubic(t, w[a]);
    }
  }
  if (g->d == 2 && mode != GS_NEAREST) { /* rows of taps, each row's weighted sum, then the rows' */
    float sum = 0;
    for (int32_t i = 0; i < taps; i++) {
      float row = 0;
      p[0] = base[0] + i;
      for (int32_t j = 0; j < taps; j++) {
        p[1] = base[1] + j;
        row += w[1][j] * gs_pixel(g, plane, p);
      }
      sum += w[0][i] * row;
    }
    return sum;
  }
  float sum = 0;
  int32_t combos = 1;
  for (a = 0; a < g->d; a++) combos *= taps;
  for (int32_t k = 0; k < combos; k++) {
    float wt = 1.0f;
    for (int32_t a2 = g->d - 1, r = k; a2 >= 0; a2--, r /= taps) {
      p[a2] = base[a2] + r % taps;
      wt *= w[a2][r % taps];
    }
    sum += wt * gs_pixel(g, plane, p);
  }
  return sum;
}

/* X [N, C, D1..Dr] sampled at grid [N, O1..Or, r] (normalised, x first): Y [N, C, O1..Or].
 * Opset 16 (bilinear / nearest / bicubic) takes 4-D X; 20 and later (linear / nearest / cubic)
 * also 5-D, cubic 4-D only (ONNX Runtime's limits). */
int32_t mi__ref_gridsample(mi__ref_call_t *c) {
  const mi_array_t *x, *grid;
  mi_array_t *y;
  int32_t rc, mode, pad, d;
  int64_t align = mi_node_attr_int(c->node, "align_corners", 0), dims[MI_MAX_RANK];
  int late = c->opset >= 20;
  const char *ms = mi_node_attr_string(c->node, "mode", late ? "linear" : "bilinear");
  const char *ps = mi_node_attr_string(c->node, "padding_mode", "zeros");
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &grid)) != MI_OK)
    return rc;
  if (!strcmp(ms, late ? "linear" : "bilinear")) mode = GS_LINEAR;
  else if (!strcmp(ms, "nearest"))
    mode = GS_NEAREST;
  else if (!strcmp(ms, late ? "cubic" : "bicubic"))
    mode = GS_CUBIC;
  else
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "mode '%s' is not one of %s", ms,
                        late ? "linear, nearest, cubic" : "bilinear, nearest, bicubic");
  if (!strcmp(ps, "zeros")) pad = GS_ZEROS;
  else if (!strcmp(ps, "border"))
    pad = GS_BORDER;
  else if (!strcmp(ps, "reflection"))
    pad = GS_REFLECTION;
  else
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "padding_mode '%s' is not one of zeros, border, reflection", ps);
  d = x->rank - 2;
  if (d != 2 && !(late && d == 3))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "X of rank %d: only 4-D%s is supported", (int)x->rank,
                        late ? " and 5-D" : "");
  if (d == 3 && mode == GS_CUBIC)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "cubic mode on a 5-D X is not supported");
  if (grid->rank != x->rank || grid->dims[0] != x->dims[0] || grid->dims[grid->rank - 1] != d)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "grid must be [N, ..., %d] of rank %d with N = %lld",
                        (int)d, (int)x->rank, (long long)x->dims[0]);
  gs_t g = {.d = d, .pad = pad};
  int64_t N = x->dims[0], C = x->dims[1], plane = 1, opts = 1;
  dims[0] = N, dims[1] = C;
  for (int32_t a = 0; a < d; a++) {
    g.in[a] = x->dims[2 + a];
    g.lo[a] = align ? 0.0f : -0.5f;
    g.hi[a] = align ? (float)g.in[a] - 1.0f : (float)g.in[a] - 0.5f;
    plane *= g.in[a];
    dims[2 + a] = grid->dims[1 + a];
    opts *= grid->dims[1 + a];
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, dims, &y)) != MI_OK) return rc;
  if (plane == 0 && opts > 0 && pad != GS_ZEROS)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X has an empty spatial axis");
  const float *xp = x->data, *gp = grid->data;
  float *yp = y->data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < opts; o++) {
      const float *gv = gp + (n * opts + o) * d;
      float pos[3];
      /* grid holds x (innermost axis) first: axis a of X takes grid value d - 1 - a */
      for (int32_t a = 0; a < d; a++) {
        float v = gv[d - 1 - a];
        int64_t len = g.in[a];
        pos[a] = align ? (v + 1) / 2.0f * (float)(len - 1) : ((v + 1) * (float)len - 1) / 2.0f;
        /* NaN and positions beyond 2^23 (where a float has no fraction left) are held there,
         * so the taps' integer positions stay representable */
        if (!(pos[a] > -8388608.0f)) pos[a] = -8388608.0f;
        if (pos[a] > 8388608.0f) pos[a] = 8388608.0f;
      }
      for (int64_t ch = 0; ch < C; ch++)
        yp[(n * C + ch) * opts + o] = plane ? gs_sample(&g, mode, xp + (n * C + ch) * plane, pos) : 0.0f;
    }
  return MI_OK;
}

/* AffineGrid (opset 20): theta [N, 2, 3] and size (N, C, H, W) give the grid [N, H, W, 2] that
 * GridSample reads, theta times (x, y, 1) over the normalised pixel centres; theta [N, 3, 4] and
 * size (N, C, D, H, W) give [N, D, H, W, 3]. */
int32_t mi__ref_affine_grid(mi__ref_call_t *c) {
  const mi_array_t *theta, *size;
  mi_array_t *y;
  int64_t sz[5], dims[5];
  int32_t n = 0, rc;
  int align = mi_node_attr_int(c->node, "align_corners", 0) != 0;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, F32, &theta)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_INT64), &size)) != MI_OK ||
      (rc = mi__ref_read_ints(c, size, "size", sz, 5, &n)) != MI_OK)
    return rc;
  int32_t d = n - 2; /* spatial dims: 2 or 3 */
  if ((n != 4 && n != 5) || theta->rank != 3 || theta->dims[0] != sz[0] || theta->dims[1] != d ||
      theta->dims[2] != d + 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "theta must be [N, 2, 3] with size (N, C, H, W) or [N, 3, 4] with (N, C, D, H, W)");
  dims[0] = sz[0];
  for (int32_t a = 0; a < d; a++) {
    if (sz[2 + a] < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "size[%d] = %lld", (int)(2 + a), (long long)sz[2 + a]);
    dims[1 + a] = sz[2 + a];
  }
  dims[1 + d] = d;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, d + 2, dims, &y)) != MI_OK) return rc;
  int64_t pts = 1;
  for (int32_t a = 0; a < d; a++) pts *= sz[2 + a];
  const float *tp = theta->data;
  float *yp = y->data;
  for (int64_t b = 0; b < sz[0]; b++)
    for (int64_t i = 0; i < pts; i++) {
      float base[4]; /* x, y(, z), 1: the innermost axis is x */
      int64_t stride = 1;
      for (int32_t a = 0; a < d; a++) {
        int64_t len = sz[1 + d - a], k = (i / stride) % len;
        /* a one-pixel axis with align_corners sits at 0, as in PyTorch's affine_grid, which
         * such models come from (the spec's reference code puts it at -1, ONNX Runtime at 1) */
        base[a] = align ? (len > 1 ? -1.0f + 2.0f * (float)k / (float)(len - 1) : 0.0f)
                        : (2.0f * (float)k + 1.0f) / (float)len - 1.0f;
        stride *= len;
      }
      base[d] = 1.0f;
      for (int32_t o = 0; o < d; o++) {
        float acc = 0;
        for (int32_t j = 0; j <= d; j++) acc += tp[(b * d + o) * (d + 1) + j] * base[j];
        yp[(b * pts + i) * d + o] = acc;
      }
    }
  return MI_OK;
}

/* ---------------------------------------------------------------- RoiAlign */

/* The bilinear sample of a plane at (y, x) in the detectors' convention: a point more than one
 * pixel outside is 0; one within it is clamped onto the edge. mode max keeps the largest of the
 * four weighted corners (ONNX Runtime's and the spec reference's arithmetic). */
static float roi_sample(const float *plane, int64_t H, int64_t W, float y, float x, int max_mode) {
  if (!(y >= -1.0f && y <= (float)H && x >= -1.0f && x <= (float)W)) return 0.0f; /* NaN too */
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
  if (y0 >= H - 1) y1 = y0 = H - 1, y = (float)y0;
  else
    y1 = y0 + 1;
  if (x0 >= W - 1) x1 = x0 = W - 1, x = (float)x0;
  else
    x1 = x0 + 1;
  float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
  float a = hy * hx * plane[y0 * W + x0], b = hy * lx * plane[y0 * W + x1];
  float e = ly * hx * plane[y1 * W + x0], f = ly * lx * plane[y1 * W + x1];
  if (!max_mode) return a + b + e + f;
  return fmaxf(fmaxf(a, b), fmaxf(e, f));
}

/* X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R]: Y [R, C, oh, ow], each bin the
 * average (or max) of a grid of bilinear samples. Opset 16's coordinate_transformation_mode
 * half_pixel (its default) shifts by half a pixel; output_half_pixel (opset 10's only behaviour)
 * does not and makes every roi at least one pixel. */
int32_t mi__ref_roialign(mi__ref_call_t *c) {
  const mi_array_t *x, *rois, *bi;
  mi_array_t *y;
  int32_t rc;
  int64_t oh = mi_node_attr_int(c->node, "output_height", 1);
  int64_t ow = mi_node_attr_int(c->node, "output_width", 1);
  int64_t ratio = mi_node_attr_int(c->node, "sampling_ratio", 0);
  float scale = mi_node_attr_float(c->node, "spatial_scale", 1.0f);
  const char *ms = mi_node_attr_string(c->node, "mode", "avg");
  const char *ct = mi_node_attr_string(c->node, "coordinate_transformation_mode",
                                       c->opset >= 16 ? "half_pixel" : "output_half_pixel");
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &rois)) != MI_OK ||
      (rc = mi__ref_need(c, 2, MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32), &bi)) != MI_OK)
    return rc;
  int max_mode = !strcmp(ms, "max");
  if (!max_mode && strcmp(ms, "avg"))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "mode '%s' is not avg or max", ms);
  int half = !strcmp(ct, "half_pixel");
  if (!half && strcmp(ct, "output_half_pixel"))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "coordinate_transformation_mode '%s' is not half_pixel or output_half_pixel", ct);
  if (oh < 1 || ow < 1 || ratio < 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "output_height, output_width must be >= 1 and sampling_ratio >= 0");
  if (x->rank != 4) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be 4-D, got rank %d", (int)x->rank);
  if (rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != rois->dims[0])
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "rois must be [R, 4] and batch_indices [R]");
  int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t dims[4] = {R, C, oh, ow};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, dims, &y)) != MI_OK) return rc;
  const float *xp = x->data, *rp = rois->data;
  float *yp = y->data;
  float off = half ? 0.5f : 0.0f;
  for (int64_t r = 0; r < R; r++) {
    int64_t b = bi->dtype == MI_DTYPE_INT64 ? ((const int64_t *)bi->data)[r] : ((const int32_t *)bi->data)[r];
    if (b < 0 || b >= N)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "batch_indices[%lld] = %lld is not in [0, %lld)",
                          (long long)r, (long long)b, (long long)N);
    float x0 = rp[r * 4] * scale - off, y0 = rp[r * 4 + 1] * scale - off;
    float rw = rp[r * 4 + 2] * scale - off - x0, rh = rp[r * 4 + 3] * scale - off - y0;
    if (!half) rw = fmaxf(rw, 1.0f), rh = fmaxf(rh, 1.0f);
    float bh = rh / (float)oh, bw = rw / (float)ow;
    if (!(fabsf(x0) < 1e7f && fabsf(y0) < 1e7f && rw > -1e7f && rw < 1e7f && rh > -1e7f && rh < 1e7f))
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "roi %lld is not finite or is over 1e7 pixels", (long long)r);
    int64_t gh = ratio > 0 ? ratio : (int64_t)ceilf(rh / (float)oh);
    int64_t gw = ratio > 0 ? ratio : (int64_t)ceilf(rw / (float)ow);
    if (gh > 4096 || gw > 4096)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "roi %lld needs %lld x %lld samples per bin (over 4096)", (long long)r,
                          (long long)gh, (long long)gw);
    float count = (float)(gh * gw > 0 ? gh * gw : 1);
    for (int64_t ch = 0; ch < C; ch++) {
      const float *plane = xp + (b * C + ch) * H * W;
      for (int64_t ph = 0; ph < oh; ph++)
        for (int64_t pw = 0; pw < ow; pw++) {
          float acc = 0;
          int first = 1;
          for (int64_t iy = 0; iy < gh; iy++) {
            float sy = y0 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
            for (int64_t ix = 0; ix < gw; ix++) {
              float sx = x0 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
              float v = roi_sample(plane, H, W, sy, sx, max_mode);
              acc = !max_mode ? acc + v : first ? v
                                                : fmaxf(acc, v);
              first = 0;
            }
          }
          yp[((r * C + ch) * oh + ph) * ow + pw] = max_mode ? acc : acc / count;
        }
    }
  }
  return MI_OK;
}
