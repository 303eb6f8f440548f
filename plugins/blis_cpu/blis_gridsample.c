/* blis_gridsample.c - blis-cpu's GridSample on 4-D inputs (spatial transformers, optical flow,
 * warping): bilinear, nearest and bicubic x zeros, border and reflection padding x
 * align_corners; and on 5-D ones (volumes, stereo cost volumes): trilinear and nearest; in the
 * reference's arithmetic (framework/src/ref/ref_vision.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

enum { GS_LINEAR,
       GS_NEAREST,
       GS_CUBIC };
enum { GS_ZEROS,
       GS_BORDER,
       GS_REFLECTION };

/* Output points whose taps are worked out together, then applied to every channel. */
#define GS_BLOCK 64

typedef struct gs_state {
  int32_t x, grid, y, mode, pad, align, taps, simd;
  int64_t N, C, H, W, OP; /* OP: output points per image */
  int64_t D;              /* 5-D: the depth (0 on 4-D) */
} gs_state_t;

/* The taps of one block: per tap row i and point p, the row's offset (y * W) or -1 outside a
 * zero-padded input; per tap column j the column or -1; the weights along each axis. */
typedef struct gs_taps {
  int32_t row[4][GS_BLOCK], col[4][GS_BLOCK];
  float wy[4][GS_BLOCK], wx[4][GS_BLOCK];
} gs_taps_t;

/* Reflects x into [lo, hi] by the nearer border, as often as it takes (the reference's). */
static float gs_reflect(float x, float lo, float hi) {
  float range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo || x > hi) {
    float d = x < lo ? lo - x : x - hi;
    int64_t k = (int64_t)(d / range);
    float r = d - (float)k * range;
    int toward_lo = (x < lo) == (k % 2 == 0);
    x = toward_lo ? lo + r : hi - r;
  }
  return x;
}

/* Integer tap v on an axis of length len, padded: the index to read, or -1 for a zero. */
static int32_t gs_index(const gs_state_t *st, int64_t v, int64_t len) {
  if (st->pad == GS_ZEROS) return v < 0 || v >= len ? -1 : (int32_t)v;
  if (st->pad == GS_REFLECTION) {
    float lo = st->align ? 0.0f : -0.5f, hi = st->align ? (float)len - 1.0f : (float)len - 0.5f;
    v = (int64_t)gs_reflect((float)v, lo, hi);
  }
  return (int32_t)(v < 0 ? 0 : v >= len ? len - 1
                                        : v);
}

/* Keys' cubic convolution weights (A = -0.75) of the 4 taps around a fraction t in [0, 1). */
static void gs_cubic(float t, float *w, int32_t p) {
  const float A = -0.75f;
  float x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0 * GS_BLOCK + p] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
  w[1 * GS_BLOCK + p] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  w[2 * GS_BLOCK + p] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  w[3 * GS_BLOCK + p] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

/* One axis of one point: grid value v on an axis of length len gives its taps and weights. Kept
 * out of the SIMD bodies (no fused multiply-adds), so positions, and with them the taps a point
 * rounds to, are the reference's to the bit. */
static void gs_axis(const gs_state_t *st, float v, int64_t len, int32_t stride, int32_t (*idx)[GS_BLOCK],
                    float (*w)[GS_BLOCK], int32_t p) {
  float pos = st->align ? (v + 1) / 2.0f * (float)(len - 1) : ((v + 1) * (float)len - 1) / 2.0f;
  if (!(pos > -8388608.0f)) pos = -8388608.0f; /* NaN too */
  if (pos > 8388608.0f) pos = 8388608.0f;
  float f = floorf(pos), t = pos - f;
  int64_t base;
  if (st->mode == GS_NEAREST) {
    base = (int64_t)nearbyintf(pos);
    w[0][p] = 1.0f;
  } else if (st->mode == GS_LINEAR) {
    base = (int64_t)f;
    w[0][p] = 1.0f - t, w[1][p] = t;
  } else {
    base = (int64_t)f - 1;
    gs_cubic(t, &w[0][0], p);
  }
  for (int32_t k = 0; k < st->taps; k++) {
    int32_t i = gs_index(st, base + k, len);
    idx[k][p] = i < 0 ? -1 : i * stride;
  }
}

static void gs_block_taps(const gs_state_t *st, const float *g, int32_t np, gs_taps_t *tp) {
  for (int32_t p = 0; p < np; p++) {
    gs_axis(st, g[p * 2 + 1], st->H, (int32_t)st->W, tp->row, tp->wy, p); /* grid holds x first */
    gs_axis(st, g[p * 2], st->W, 1, tp->col, tp->wx, p);
  }
}

/* Items are (image, block of GS_BLOCK output points): the block's taps once, then each channel's
 * weighted sums, row by row of taps as the reference adds them. */
static inline __attribute__((always_inline)) void gs_body(const mi__blis_task_t *tk, int64_t i0, int64_t i1) {
  const gs_state_t *st = tk->state;
  const float *x = tk->t[st->x], *grid = tk->t[st->grid];
  float *y = tk->t[st->y];
  int64_t blocks = (st->OP + GS_BLOCK - 1) / GS_BLOCK, plane = st->H * st->W;
  int32_t T = st->taps;
  gs_taps_t tp;
  for (int64_t it = i0; it < i1; it++) {
    int64_t n = it / blocks, o0 = (it % blocks) * GS_BLOCK;
    int32_t np = (int32_t)(st->OP - o0 < GS_BLOCK ? st->OP - o0 : GS_BLOCK);
    gs_block_taps(st, grid + (n * st->OP + o0) * 2, np, &tp);
    for (int64_t ch = 0; ch < st->C; ch++) {
      const float *pl = x + (n * st->C + ch) * plane;
      float *yr = y + (n * st->C + ch) * st->OP + o0;
      if (T == 1) {
        for (int32_t p = 0; p < np; p++) {
          int32_t r = tp.row[0][p], c = tp.col[0][p];
          yr[p] = r >= 0 && c >= 0 ? pl[r + c] : 0.0f;
        }
        continue;
      }
      for (int32_t p = 0; p < np; p++) {
        float sum = 0;
        for (int32_t i = 0; i < T; i++) {
          int32_t r = tp.row[i][p];
          float row = 0;
          for (int32_t j = 0; j < T; j++) {
            int32_t c = tp.col[j][p];
            row += tp.wx[j][p] * (r >= 0 && c >= 0 ? pl[r + c] : 0.0f);
          }
          sum += tp.wy[i][p] * row;
        }
        yr[p] = sum;
      }
    }
  }
}

/* 5-D: per point the 8 (or 1) taps in the reference's order, depth outermost, each weight the
 * product w_x * w_y * w_z as the reference forms it, summed in that order. */
static inline __attribute__((always_inline)) void gs3_body(const mi__blis_task_t *tk, int64_t i0, int64_t i1) {
  const gs_state_t *st = tk->state;
  const float *x = tk->t[st->x], *grid = tk->t[st->grid];
  float *y = tk->t[st->y];
  int64_t blocks = (st->OP + GS_BLOCK - 1) / GS_BLOCK, vol = st->D * st->H * st->W;
  int32_t T = st->taps;
  /* per axis (depth, rows, columns) the taps' offsets (d * H * W, y * W, x; -1: a zero) and weights */
  int32_t idx[3][4][GS_BLOCK];
  float w[3][4][GS_BLOCK];
  for (int64_t it = i0; it < i1; it++) {
    int64_t n = it / blocks, o0 = (it % blocks) * GS_BLOCK;
    int32_t np = (int32_t)(st->OP - o0 < GS_BLOCK ? st->OP - o0 : GS_BLOCK);
    const float *g = grid + (n * st->OP + o0) * 3;
    for (int32_t p = 0; p < np; p++) { /* grid holds x, y, z */
      gs_axis(st, g[p * 3 + 2], st->D, (int32_t)(st->H * st->W), idx[0], w[0], p);
      gs_axis(st, g[p * 3 + 1], st->H, (int32_t)st->W, idx[1], w[1], p);
      gs_axis(st, g[p * 3], st->W, 1, idx[2], w[2], p);
    }
    for (int64_t ch = 0; ch < st->C; ch++) {
      const float *pl = x + (n * st->C + ch) * vol;
      float *yr = y + (n * st->C + ch) * st->OP + o0;
      if (T == 1) {
        for (int32_t p = 0; p < np; p++) {
          int32_t d = idx[0][0][p], r = idx[1][0][p], c = idx[2][0][p];
          yr[p] = d >= 0 && r >= 0 && c >= 0 ? pl[d + r + c] : 0.0f;
        }
        continue;
      }
      for (int32_t p = 0; p < np; p++) {
        float sum = 0;
        for (int32_t l = 0; l < 2; l++)
          for (int32_t i = 0; i < 2; i++)
            for (int32_t j = 0; j < 2; j++) {
              int32_t d = idx[0][l][p], r = idx[1][i][p], c = idx[2][j][p];
              float wt = w[2][j][p] * w[1][i][p] * w[0][l][p];
              sum += wt * (d >= 0 && r >= 0 && c >= 0 ? pl[d + r + c] : 0.0f);
            }
        yr[p] = sum;
      }
    }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void gs3_avx512(void *arg, int64_t i0, int64_t i1) {
  gs3_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void gs3_avx2(void *arg, int64_t i0, int64_t i1) {
  gs3_body(arg, i0, i1);
}
static void gs3_c(void *arg, int64_t i0, int64_t i1) { gs3_body(arg, i0, i1); }

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void gs_avx512(void *arg, int64_t i0, int64_t i1) {
  gs_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void gs_avx2(void *arg, int64_t i0, int64_t i1) {
  gs_body(arg, i0, i1);
}
static void gs_c(void *arg, int64_t i0, int64_t i1) { gs_body(arg, i0, i1); }

static int32_t run_gridsample(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const gs_state_t *st = s->state;
  (void)err;
  if (st->D)
    return mi__blis_run_parts(s, t, env, st->N * ((st->OP + GS_BLOCK - 1) / GS_BLOCK), 1,
                              GS_BLOCK * (36 + st->C * st->taps * st->taps * st->taps * 2),
                              st->simd == MI__SIMD_AVX512 ? gs3_avx512 : st->simd == MI__SIMD_AVX2 ? gs3_avx2
                                                                                                   : gs3_c);
  return mi__blis_run_parts(s, t, env, st->N * ((st->OP + GS_BLOCK - 1) / GS_BLOCK), 1,
                            GS_BLOCK * (24 + st->C * st->taps * st->taps * 2),
                            st->simd == MI__SIMD_AVX512 ? gs_avx512 : st->simd == MI__SIMD_AVX2 ? gs_avx2
                                                                                                : gs_c);
}

int32_t mi__blis_prep_gridsample(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *g = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int late = n->opset >= 20, v5 = late && x && x->rank == 5; /* 5-D from opset 20, as the reference */
  const char *ms = mi_sdk_attr_string(n, "mode", late ? "linear" : "bilinear");
  const char *ps = mi_sdk_attr_string(n, "padding_mode", "zeros");
  int32_t mode, pad;
  gs_state_t *st;
  if (!x || !g || !y || x->dtype != MI_DTYPE_FLOAT32 || g->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 ||
      x->rank != 4 + v5 || g->rank != x->rank || g->dims[0] != x->dims[0] || g->dims[x->rank - 1] != 2 + v5 ||
      y->rank != x->rank)
    return mi__blis_unsupported(err, n,
                                "X must be FLOAT32 [N, C, H, W] and grid [N, H_out, W_out, 2] (from opset 20 also [N, C, D, H, W] "
                                "and [N, D_out, H_out, W_out, 3])");
  if (!strcmp(ms, late ? "linear" : "bilinear")) mode = GS_LINEAR;
  else if (!strcmp(ms, "nearest"))
    mode = GS_NEAREST;
  else if (!strcmp(ms, late ? "cubic" : "bicubic"))
    mode = GS_CUBIC;
  else
    return mi__blis_unsupported(err, n, "mode is not one of the opset's three");
  if (!strcmp(ps, "zeros")) pad = GS_ZEROS;
  else if (!strcmp(ps, "border"))
    pad = GS_BORDER;
  else if (!strcmp(ps, "reflection"))
    pad = GS_REFLECTION;
  else
    return mi__blis_unsupported(err, n, "padding_mode is not zeros, border or reflection");
  if (v5 && mode == GS_CUBIC) return mi__blis_unsupported(err, n, "cubic mode on a 5-D X");
  if (x->dims[2] < 1 || x->dims[3] < 1 || (v5 && x->dims[4] < 1) ||
      x->dims[2] * x->dims[3] * (v5 ? x->dims[4] : 1) >= ((int64_t)1 << 31))
    return mi__blis_unsupported(err, n, "X's planes must hold 1 to 2^31 - 1 values");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->grid = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->mode = mode;
  st->pad = pad;
  st->align = mi_sdk_attr_int(n, "align_corners", 0) != 0;
  st->taps = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2
                                                        : 4;
  st->N = x->dims[0];
  st->C = x->dims[1];
  st->D = v5 ? x->dims[2] : 0;
  st->H = x->dims[2 + v5];
  st->W = x->dims[3 + v5];
  st->OP = g->dims[1] * g->dims[2] * (v5 ? g->dims[3] : 1);
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->run = run_gridsample;
  return MI_OK;
}
