/* blis_detroi.c - blis-cpu's Det (the determinant of each square matrix of the last two axes) and
 * MaxRoiPool (Caffe's ROI max pooling on integer bins of rounded boxes), in the reference's
 * arithmetic (framework/src/ref/ref_extra.c): Det's LU with partial pivoting in double, the bins'
 * edges in float as ONNX Runtime's. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blis_internal.h"

/* ---- Det */

typedef struct det_state {
  int32_t x, y;
  int64_t n, batch;
} det_state_t;

#define DET_STACK 16 /* matrices up to 16 x 16 in a stack buffer */

static void det_part(void *arg, int64_t b0, int64_t b1) {
  const mi__blis_task_t *tk = arg;
  const det_state_t *st = tk->state;
  const float *x = tk->t[st->x];
  float *y = tk->t[st->y];
  int64_t n = st->n, nn = n * n;
  double stack[DET_STACK * DET_STACK], *a = nn <= DET_STACK * DET_STACK ? stack : malloc((size_t)nn * sizeof *a);
  for (int64_t b = b0; b < b1; b++) {
    const float *m = x + b * nn;
    if (!a) { /* out of memory for a large matrix: NaN rather than a wrong value */
      y[b] = NAN;
      continue;
    }
    for (int64_t i = 0; i < nn; i++) a[i] = m[i];
    y[b] = (float)mi_sdk_det(a, n);
  }
  if (a != stack) free(a);
}

static int32_t run_det(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const det_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->batch, 1, st->n * st->n * st->n, det_part);
}

int32_t mi__blis_prep_det(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  det_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank < 2 ||
      x->dims[x->rank - 1] != x->dims[x->rank - 2] || x->dims[x->rank - 1] > 4096)
    return mi__blis_unsupported(err, n, "input must be FLOAT32 [..., M, M] with M <= 4096");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->n = x->dims[x->rank - 1];
  st->batch = mi_sdk_numel(y);
  s->run = run_det;
  return MI_OK;
}

/* ---- MaxRoiPool (X [N, C, H, W], rois [R, 5] of batch index, x1, y1, x2, y2): Y [R, C, PH, PW].
 * The rois are checked first (a one-line error naming the node); then items are (roi, channel). */

typedef struct mrp_state {
  int32_t x, r, y;
  int32_t *edges; /* per roi the bins' row and column edges, written by each run (the step's aux) */
  int64_t N, C, H, W, R, PH, PW;
  float scale;
  char name[64];
} mrp_state_t;

/* The edges [s, e) of bin b of n over a roi side of size `side` starting at pixel `at`, clamped to
 * [0, len]: the reference's float arithmetic. */
static void mrp_edges(float at, float side, int64_t n, int64_t len, int32_t *s, int32_t *e) {
  float bs = side / (float)n;
  for (int64_t b = 0; b < n; b++) {
    int64_t lo = (int64_t)floorf((float)b * bs) + (int64_t)at, hi = (int64_t)ceilf((float)(b + 1) * bs) + (int64_t)at;
    s[b] = (int32_t)(lo < 0 ? 0 : lo > len ? len
                                           : lo);
    e[b] = (int32_t)(hi < 0 ? 0 : hi > len ? len
                                           : hi);
  }
}

/* Items are channels: each channel's plane of each image stays in L1 while every roi reads it
 * (by roi, each plane was read from memory once per roi: 65536 scattered windows for 128 rois of
 * 512 channels). The bins' edges come from run_mrp, per roi: hs, he, ws, we. */
static void mrp_part(void *arg, int64_t c0, int64_t c1) {
  const mi__blis_task_t *tk = arg;
  const mrp_state_t *st = tk->state;
  const float *X = tk->t[st->x], *rois = tk->t[st->r];
  float *Y = tk->t[st->y];
  const int32_t *edges = st->edges;
  int64_t H = st->H, W = st->W, per = 2 * (st->PH + st->PW);
  for (int64_t ch = c0; ch < c1; ch++)
    for (int64_t i = 0; i < st->R; i++) {
      const int32_t *hs = edges + i * per, *he = hs + st->PH, *ws = he + st->PH, *we = ws + st->PW;
      const float *pl = X + ((int64_t)rois[i * 5] * st->C + ch) * H * W;
      float *yo = Y + (i * st->C + ch) * st->PH * st->PW;
      for (int64_t ph = 0; ph < st->PH; ph++)
        for (int64_t pw = 0; pw < st->PW; pw++) {
          float best = he[ph] <= hs[ph] || we[pw] <= ws[pw] ? 0.0f : -FLT_MAX;
          for (int64_t h = hs[ph]; h < he[ph]; h++) {
            const float *row = pl + h * W;
            for (int64_t w = ws[pw]; w < we[pw]; w++) best = row[w] > best ? row[w] : best;
          }
          yo[ph * st->PW + pw] = best;
        }
    }
}

static int32_t run_mrp(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mrp_state_t *st = s->state;
  const float *rois = t[st->r];
  int64_t per = 2 * (st->PH + st->PW);
  for (int64_t i = 0; i < st->R; i++) {
    const float *b = rois + i * 5;
    int32_t *hs = st->edges + i * per, *he = hs + st->PH, *ws = he + st->PH, *we = ws + st->PW;
    if (!(b[0] >= 0 && b[0] < (float)st->N))
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: MaxRoiPool '%s': roi %lld has batch index %g outside X",
                           st->name, (long long)i, b[0]);
    for (int k = 1; k < 5; k++)
      if (!(fabsf(b[k] * st->scale) < 1e9f))
        return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: MaxRoiPool '%s': roi %lld has coordinate %g out of range",
                             st->name, (long long)i, b[k]);
    float x1 = roundf(b[1] * st->scale), y1 = roundf(b[2] * st->scale), x2 = roundf(b[3] * st->scale),
          y2 = roundf(b[4] * st->scale);
    mrp_edges(y1, fmaxf(y2 - y1 + 1, 1), st->PH, st->H, hs, he);
    mrp_edges(x1, fmaxf(x2 - x1 + 1, 1), st->PW, st->W, ws, we);
  }
  return mi__blis_run_parts(s, t, env, st->C, 1, st->R * st->PH * st->PW * 16, mrp_part);
}

int32_t mi__blis_prep_max_roi_pool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *r = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_attr_t *ps = mi_sdk_attr(n, "pooled_shape");
  mrp_state_t *st;
  if (!x || !r || !y || x->dtype != MI_DTYPE_FLOAT32 || r->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 ||
      x->rank != 4 || r->rank != 2 || r->dims[1] != 5 || y->rank != 4)
    return mi__blis_unsupported(err, n, "X must be FLOAT32 [N, C, H, W] and rois FLOAT32 [R, 5]");
  if (!ps || ps->type != MI_ATTR_INTS || ps->count != 2 || ps->ints[0] < 1 || ps->ints[1] < 1 || ps->ints[0] > 4096 ||
      ps->ints[1] > 4096 || x->dims[2] > INT32_MAX || x->dims[3] > INT32_MAX || y->dims[0] != r->dims[0] ||
      y->dims[1] != x->dims[1] || y->dims[2] != ps->ints[0] || y->dims[3] != ps->ints[1])
    return mi__blis_unsupported(err, n, "pooled_shape must be two values in 1..4096, the output [R, C, pooled_shape]");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->r = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->N = x->dims[0];
  st->C = x->dims[1];
  st->H = x->dims[2];
  st->W = x->dims[3];
  st->R = r->dims[0];
  st->PH = ps->ints[0];
  st->PW = ps->ints[1];
  st->scale = mi_sdk_attr_float(n, "spatial_scale", 1.0f);
  s->aux = mi__blis_alloc(p->ctx, (uint64_t)(st->R * 2 * (st->PH + st->PW) + 1) * sizeof(int32_t));
  if (!(st->edges = s->aux)) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  s->run = run_mrp;
  return MI_OK;
}
