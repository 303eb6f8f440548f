/* blis_dw512.c - AVX-512 depthwise convolution: channels in the lanes for small planes (16 channels
 * per pass, transposed in registers), 3x3 planes and stride-2 planes read with masked loads straight
 * from the input; the fused epilogue applied in registers. */
#include "blis_epi512.h"

/* Lanes j with lo <= j < hi, clamped to [0, 16). */
static inline __attribute__((always_inline)) __mmask16 lanes(int64_t lo, int64_t hi) {
  if (lo < 0) lo = 0;
  if (hi > 16) hi = 16;
  if (hi <= lo) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* Rows of output computed together: independent accumulators hide the FMA latency. */
#define DW_ROWS 4

/* The three taps (kw = 0, 1, 2) of one input row for 16 output columns of a 3-wide filter row,
 * from the 16-float runs at xr under the column masks m3 (a masked lane is not read). Stride 2:
 * even and odd lanes of the first two runs, and the even lanes shifted by one with the third
 * run's first value. Stride 1: two runs, taps 1 and 2 by lane shifts. */
static inline __attribute__((always_inline)) MI__AVX512_FN void dw3s2_taps(const float *xr, const __mmask16 *m3,
                                                                           __m512 *tap) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512 l0 = _mm512_maskz_loadu_ps(m3[0], xr), l1 = _mm512_maskz_loadu_ps(m3[1], xr + 16);
  __m512 l2 = _mm512_maskz_loadu_ps(m3[2], xr + 32);
  tap[0] = _mm512_permutex2var_ps(l0, even, l1);
  tap[1] = _mm512_permutex2var_ps(l0, odd, l1);
  tap[2] = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(l2), _mm512_castps_si512(tap[0]), 1));
}

static inline __attribute__((always_inline)) MI__AVX512_FN void dw3s1_taps(const float *xr, const __mmask16 *m3,
                                                                           __m512 *tap) {
  __m512 l0 = _mm512_maskz_loadu_ps(m3[0], xr), l1 = _mm512_maskz_loadu_ps(m3[1], xr + 16);
  tap[0] = l0;
  tap[1] = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(l1), _mm512_castps_si512(l0), 1));
  tap[2] = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(l1), _mm512_castps_si512(l0), 2));
}

/* Adds the taps of filter row kh to acc for output rows oh0 + r (r < nr), 16 output pixels of a
 * block whose lane 0 reads input column b0 (+ kw); the column masks (input bounds) depend only on
 * the block: mlo/mhi per kw, m3 for the three 16-float runs from b0. A masked lane is not read. */
static inline __attribute__((always_inline)) MI__AVX512_FN void
dw_rows(const mi__blis_conv_t *c, const float *xc, const float *wt, int64_t oh0, int nr, int64_t kh,
        int64_t b0, const __mmask16 *mlo, const __mmask16 *mhi, const __mmask16 *m3, __m512 *acc) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  int64_t kw, KW = c->KW;
  int r;
#pragma GCC unroll 4
  for (r = 0; r < DW_ROWS; r++) {
    int64_t ih = (oh0 + r) * c->sh - c->pt + kh;
    const float *xr = xc + ih * c->W + b0;
    if (r >= nr || ih < 0 || ih >= c->H) continue;
    if (KW == 3) {
      __m512 tap[3];
      dw3s2_taps(xr, m3, tap);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * 3]), tap[0], acc[r]);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * 3 + 1]), tap[1], acc[r]);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * 3 + 2]), tap[2], acc[r]);
      continue;
    }
    for (kw = 0; kw < KW; kw++) {
      __m512 lo = _mm512_maskz_loadu_ps(mlo[kw], xr + kw), hi = _mm512_maskz_loadu_ps(mhi[kw], xr + kw + 16);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * KW + kw]), _mm512_permutex2var_ps(lo, even, hi), acc[r]);
    }
  }
}

/* The epilogue of the 3x3 row kernels for the common chains (kind ek, a constant after inlining):
 * the per-plane constants sc/sh (bias/BN, 1 and 0 without), lo/hi (Clip) and res (the residual
 * plane) are read once per plane, not per vector as mi__blis_epi512 does. */
typedef struct dw_epi {
  __m512 sc, sh, lo, hi;
  const float *res;
} dw_epi_t;

static inline __attribute__((always_inline)) MI__AVX512_FN dw_epi_t dw_epi_init(const mi__blis_conv_t *c,
                                                                                void *const *t, int64_t n,
                                                                                int64_t m) {
  dw_epi_t e;
  e.sc = _mm512_set1_ps(c->affine ? c->scale[m] : 1.f);
  e.sh = _mm512_set1_ps(c->affine ? c->shift[m] : 0.f);
  e.lo = _mm512_set1_ps(c->pg_ek == MI__EK_CLIP ? c->epi[0].a : 0.f);
  e.hi = _mm512_set1_ps(c->pg_ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
  e.res = c->pg_ek == MI__EK_ADD || c->pg_ek == MI__EK_ADD_RELU
              ? (const float *)t[c->epi[0].tensor] + (n * c->M + m) * c->OH * c->OW
              : NULL;
  return e;
}

static inline __attribute__((always_inline)) MI__AVX512_FN __m512
dw_epi(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, int64_t p, __mmask16 k, __m512 v,
       int ek, const dw_epi_t *e) {
  if (ek == MI__EK_GENERIC) return mi__blis_epi512(c, t, n, m, p, k, v);
  v = _mm512_fmadd_ps(v, e->sc, e->sh);
  switch (ek) {
  case MI__EK_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
  case MI__EK_CLIP: return _mm512_min_ps(_mm512_max_ps(v, e->lo), e->hi);
  case MI__EK_ADD: return _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, e->res + p));
  case MI__EK_ADD_RELU:
    return _mm512_max_ps(_mm512_add_ps(v, _mm512_maskz_loadu_ps(k, e->res + p)), _mm512_setzero_ps());
  default: return v; /* MI__EK_NONE */
  }
}

/* 3x3, stride s = 1 or 2 (dilation 1; s a constant after inlining): DW_ROWS output rows of a
 * 16-column block from their s * (DW_ROWS - 1) + 3 input rows, each input row loaded once (its
 * three taps from masked runs, dw3s*_taps) and added to the output rows it feeds, one accumulator
 * per (output row, kh) so the FMA chains are three long; the three kh sums are added at the end. */
static inline __attribute__((always_inline)) MI__AVX512_FN void
dw3_rows(const float *xc, int64_t W, int64_t H, int64_t ih0, int nr, const __mmask16 *m3, const __m512 *w,
         __m512 *out, int s) {
  __m512 acc[DW_ROWS][3];
  int j, r, kh;
#pragma GCC unroll 4
  for (r = 0; r < DW_ROWS; r++) {
#pragma GCC unroll 3
    for (kh = 0; kh < 3; kh++) acc[r][kh] = _mm512_setzero_ps();
  }
#pragma GCC unroll 9
  for (j = 0; j < s * (DW_ROWS - 1) + 3; j++) {
    int64_t ih = ih0 + j;
    __m512 tap[3];
    if (j > s * (nr - 1) + 2 || ih < 0 || ih >= H) continue; /* padding rows add nothing */
    if (s == 2) dw3s2_taps(xc + ih * W, m3, tap);
    else
      dw3s1_taps(xc + ih * W, m3, tap);
      /* input row j is filter row kh = j - s * r of output row r */
#pragma GCC unroll 4
    for (r = 0; r < DW_ROWS; r++) {
      kh = j - s * r;
      if (kh < 0 || kh > 2) continue;
      acc[r][kh] = _mm512_fmadd_ps(w[kh * 3], tap[0], acc[r][kh]);
      acc[r][kh] = _mm512_fmadd_ps(w[kh * 3 + 1], tap[1], acc[r][kh]);
      acc[r][kh] = _mm512_fmadd_ps(w[kh * 3 + 2], tap[2], acc[r][kh]);
    }
  }
#pragma GCC unroll 4
  for (r = 0; r < DW_ROWS; r++) out[r] = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), acc[r][2]);
}

static inline __attribute__((always_inline)) MI__AVX512_FN void
dw3_body(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc, const float *wm,
         float *row, int64_t oh0, int64_t oh1, int s, int ek) {
  dw_epi_t e = dw_epi_init(c, t, n, m);
  int64_t W = c->W, H = c->H, OW = c->OW, oh, ow0;
  __m512 w[9];
  __mmask16 m3[3];
  int i;
#pragma GCC unroll 9
  for (i = 0; i < 9; i++) w[i] = _mm512_set1_ps(wm[i]);
  for (ow0 = 0; ow0 < OW; ow0 += 16) {
    __mmask16 kout = lanes(0, OW - ow0);
    int64_t b0 = ow0 * s - c->pl;
    for (i = 0; i < 3; i++) m3[i] = lanes(-b0 - 16 * i, W - b0 - 16 * i);
    for (oh = oh0; oh < oh1; oh += DW_ROWS) {
      int nr = oh1 - oh < DW_ROWS ? (int)(oh1 - oh) : DW_ROWS, r;
      __m512 acc[DW_ROWS];
      dw3_rows(xc + b0, W, H, oh * s - c->pt, nr, m3, w, acc, s);
#pragma GCC unroll 4
      for (r = 0; r < DW_ROWS; r++)
        if (r < nr) {
          int64_t p = (oh + r) * OW + ow0;
          _mm512_mask_storeu_ps(row + (p - oh0 * OW), kout, dw_epi(c, t, n, m, p, kout, acc[r], ek, &e));
        }
    }
  }
}

/* One instance per stride and epilogue kind: output rows [oh0, oh1), row oh0 stored at `row`. */
MI__AVX512_FN static void dw3_plane(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m,
                                    const float *xc, const float *wm, float *row, int64_t oh0, int64_t oh1) {
#define MI__DW3_BODY(S, EK) dw3_body(c, t, n, m, xc, wm, row, oh0, oh1, S, EK)
  MI__BLIS_DW3_SWITCH(c);
#undef MI__DW3_BODY
}

/* Channel m of image n: input plane xc, filter wm, output plane row. Returns 0 (nothing written)
 * for the geometries it does not take. Each output pixel sums its taps in (kh, kw) order (the 3x3
 * row kernels: each filter row's three taps, then the three row sums). */
MI__AVX512_FN int mi__blis_dw512_plane(const mi__blis_conv_t *c, void *const *t, int64_t n,
                                       int64_t m, const float *xc, const float *wm, float *row) {
  int64_t W = c->W, OW = c->OW, KW = c->KW, oh, ow0, kh, kw;
  float wt[64];
  __mmask16 mlo[16], mhi[16], m3[3];
  /* 3x3, stride 1 or 2: the row kernels above with a specialised epilogue (mobilenetv2, 1 thread:
   * 32x48x48 23.5 -> 8.5 us against the flat padded-copy planes of blis_simd.c, 96x48x48 stride 2
   * 35.5 -> 18). Other stride-1 shapes stay with those flat planes. */
  if (c->dh == 1 && c->dw == 1 && c->KH == 3 && KW == 3 && c->sh == 1 && c->sw == 1) {
    dw3_plane(c, t, n, m, xc, wm, row, 0, c->OH);
    if (c->pg_vec_ops < c->epi_n) mi__blis_epi_tail(c, t, n, m, 0, row, c->OH * OW, c->pg_vec_ops, 0);
    return 1;
  }
  if (c->dh != 1 || c->dw != 1 || c->sw != 2 || c->KH * KW > 64 || KW > 16) return 0;
  if (c->KH == 3 && KW == 3 && c->sh == 2) {
    dw3_plane(c, t, n, m, xc, wm, row, 0, c->OH);
    if (c->pg_vec_ops < c->epi_n) mi__blis_epi_tail(c, t, n, m, 0, row, c->OH * OW, c->pg_vec_ops, 0);
    return 1;
  }
  for (kh = 0; kh < c->KH * KW; kh++) wt[kh] = wm[kh];
  for (ow0 = 0; ow0 < OW; ow0 += 16) {
    __mmask16 kout = lanes(0, OW - ow0);
    int64_t b0 = ow0 * c->sw - c->pl;
    for (kw = 0; kw < KW; kw++) { /* masked lanes are not read: no access outside the row */
      mlo[kw] = lanes(-(b0 + kw), W - (b0 + kw));
      mhi[kw] = lanes(-(b0 + kw) - 16, W - (b0 + kw) - 16);
    }
    for (kw = 0; kw < 3; kw++) m3[kw] = lanes(-b0 - 16 * kw, W - b0 - 16 * kw);
    for (oh = 0; oh < c->OH; oh += DW_ROWS) {
      int nr = c->OH - oh < DW_ROWS ? (int)(c->OH - oh) : DW_ROWS, r;
      __m512 acc[DW_ROWS];
#pragma GCC unroll 4
      for (r = 0; r < DW_ROWS; r++) acc[r] = _mm512_setzero_ps();
      for (kh = 0; kh < c->KH; kh++) dw_rows(c, xc, wt, oh, nr, kh, b0, mlo, mhi, m3, acc);
#pragma GCC unroll 4
      for (r = 0; r < DW_ROWS; r++)
        if (r < nr) {
          int64_t p = (oh + r) * OW + ow0;
          _mm512_mask_storeu_ps(row + p, kout, mi__blis_epi512(c, t, n, m, p, kout, acc[r]));
        }
    }
  }
  if (c->pg_vec_ops < c->epi_n)
    mi__blis_epi_tail(c, t, n, m, 0, row, c->OH * OW, c->pg_vec_ops, 0);
  return 1;
}

int mi__blis_dw512_rows_fit(const mi__blis_conv_t *c) {
  return c->KH == 3 && c->KW == 3 && c->dh == 1 && c->dw == 1 && c->sh == c->sw && (c->sh == 1 || c->sh == 2) &&
         c->pg_vec_ops == c->epi_n;
}

MI__AVX512_FN void mi__blis_dw512_rows(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m,
                                       const float *xc, const float *wm, float *out, int64_t oh0, int64_t oh1) {
  dw3_plane(c, t, n, m, xc, wm, out, oh0, oh1);
}

/* ---- Small planes, channels in the lanes: 16 channels at a time, the planes transposed once into
 * a zero-padded [hp][wp][16] buffer, every tap one FMA over 16 channels, the results transposed
 * back. Per-plane costs (row loops, partial vectors of 3- or 6-wide rows) go away. */

int mi__blis_dw_cl_fits(const mi__blis_conv_t *c) {
  int64_t hp = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1;
  int64_t wp = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1;
  /* Measured on the mobilenets and kws: faster than the flat stride-1 planes whenever the padded
   * plane fits (144x24x24: 30 vs 32 us, 25x5: 3.3 vs 10); with stride 2 faster than the
   * masked-load planes up to about 10x10 outputs (12x12 from 24x24: 16 vs 14 us). */
  if (c->sw != 1 && c->OH * c->OW > 100) return 0;
  /* 3x3 stride 1 rows of 9+ outputs go to the row kernel of mi__blis_dw512_plane instead (144x24x24:
   * 15 vs 22 us, 192x12x12: 6.7 vs 8.1; 384x6x6 stays here: 5.6 vs 8.5, and kws' 25x5) */
  if (c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 && c->KH == 3 && c->KW == 3 && c->OW > 8) return 0;
  return c->M == c->C && c->sw <= 4 && hp * wp <= MI__DW_CL_PIX && c->OH * c->OW <= MI__DW_CL_PIX;
}

void mi__blis_dw_cl_pack(const mi__blis_conv_t *c, const float *w, float *packed) {
  int64_t taps = c->KH * c->KW, blocks = (c->M + 15) / 16, b, tp, l;
  for (b = 0; b < blocks; b++)
    for (tp = 0; tp < taps; tp++)
      for (l = 0; l < 16; l++)
        packed[(b * taps + tp) * 16 + l] = b * 16 + l < c->M ? w[(b * 16 + l) * taps + tp] : 0.f;
}

/* Leading epilogue ops that act lane by lane (no residual add: that operand is channel-major). */
static int32_t cl_ops(const mi__blis_conv_t *c) {
  int32_t e;
  for (e = 0; e < c->pg_vec_ops && c->epi[e].act != MI__ACT_NONE; e++) {
  }
  return e;
}

/* Output pixels of a row computed together (independent FMA chains, one weight load for all), and
 * the buffer slack their over-read needs: (CL_GROUP - 1) * sw pixels, sw <= 4. */
#define CL_GROUP 8
#define CL_SLACK 32

/* Channels [16 * blk, +16) of image n, for epilogue kind ek (NONE, RELU and CLIP inline; any other
 * chain through the per-op loop and the scalar tail). */
static inline __attribute__((always_inline)) MI__AVX512_FN void
dw_cl_body(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t blk, int ek, float *buf, float *out) {
  int64_t hp = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1;
  int64_t wp = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1;
  int64_t m0 = blk * 16, nch = c->M - m0 < 16 ? c->M - m0 : 16, ohw = c->OH * c->OW, taps = c->KH * c->KW;
  int64_t i, ch, oh, ow, tp, off[64], hw = c->H * c->W;
  const float *x = (const float *)t[c->x] + (n * c->C + m0) * c->H * c->W;
  const float *wv = c->packed + blk * taps * 16;
  float *y = (float *)t[c->y] + (n * c->M + m0) * ohw;
  __mmask16 km = (__mmask16)((1u << nch) - 1u);
  int32_t nops = cl_ops(c), e;
  __m512 sc = _mm512_set1_ps(1.f), sh = _mm512_setzero_ps(), lo, hi;
  if (c->affine) {
    sc = _mm512_maskz_loadu_ps(km, c->scale + m0);
    sh = _mm512_maskz_loadu_ps(km, c->shift + m0);
  }
  lo = _mm512_set1_ps(ek == MI__EK_CLIP ? c->epi[0].a : 0.f);
  hi = _mm512_set1_ps(ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
  /* zeros where the transposed input does not land: the padding border and the slack */
  for (i = 0; i < hp; i++) {
    int64_t j0 = 0, j1 = wp, j;
    if (i >= c->pt && i < c->pt + c->H) { /* an input row: only its left and right padding */
      for (j = 0; j < c->pl && j < wp; j++) _mm512_store_ps(buf + (i * wp + j) * 16, _mm512_setzero_ps());
      j0 = c->pl + c->W;
    }
    for (j = j0; j < j1; j++) _mm512_store_ps(buf + (i * wp + j) * 16, _mm512_setzero_ps());
  }
  for (i = hp * wp; i < hp * wp + CL_SLACK; i++) _mm512_store_ps(buf + i * 16, _mm512_setzero_ps());
  /* channel-major input to pixel-major buf, 16 pixels x 16 channels at a time; the input row and
   * column of each pixel are stepped, not divided (a 64-bit division per pixel cost more than the
   * transposes) */
  {
    int64_t ih = c->pt, iw = c->pl, W = c->W;
    for (i = 0; i < hw; i += 16) {
      __mmask16 kp = hw - i >= 16 ? 0xffff : (__mmask16)((1u << (hw - i)) - 1u);
      __m512 r[16];
      int l;
#pragma GCC unroll 16
      for (l = 0; l < 16; l++) r[l] = l < nch ? _mm512_maskz_loadu_ps(kp, x + l * hw + i) : _mm512_setzero_ps();
      mi__blis_tr16(r);
      for (l = 0; l < 16 && i + l < hw; l++) {
        if (ih < hp && iw < wp) _mm512_store_ps(buf + (ih * wp + iw) * 16, r[l]);
        if (++iw == c->pl + W) {
          iw = c->pl;
          ih++;
        }
      }
    }
  }
  for (tp = 0; tp < taps; tp++) off[tp] = ((tp / c->KW) * c->dh * wp + (tp % c->KW) * c->dw) * 16;
  /* CL_GROUP output pixels at a time: independent FMA chains (one chain is latency-bound). The
   * filter rows that fall on padding rows add zeros: an output row runs the taps of its other
   * rows only (the same sums: x + 0 * w is x); ppocr-v2-cls's 5x5 convs over planes 2 rows high
   * ran 25 taps a pixel for 10 that read the input. */
  for (oh = 0; oh < c->OH; oh++) {
    int64_t t0, t1;
    mi__blis_dw_row_taps(c, oh, &t0, &t1);
    for (ow = 0; ow < c->OW; ow += CL_GROUP) {
      const float *b0 = buf + (oh * c->sh * wp + ow * c->sw) * 16;
      int64_t np = c->OW - ow < CL_GROUP ? c->OW - ow : CL_GROUP, st = c->sw * 16;
      __m512 acc[CL_GROUP];
      int r;
#pragma GCC unroll 8
      for (r = 0; r < CL_GROUP; r++) acc[r] = _mm512_setzero_ps();
      for (tp = t0; tp < t1; tp++) {
        __m512 wvec = _mm512_load_ps(wv + tp * 16);
        const float *bt = b0 + off[tp];
#pragma GCC unroll 8
        for (r = 0; r < CL_GROUP; r++) /* pixels past np read buffer slack and are not stored */
          acc[r] = _mm512_fmadd_ps(_mm512_load_ps(bt + r * st), wvec, acc[r]);
      }
#pragma GCC unroll 8
      for (r = 0; r < CL_GROUP; r++) {
        __m512 v = acc[r];
        if (r >= np) break;
        if (ek == MI__EK_NONE || ek == MI__EK_RELU || ek == MI__EK_CLIP) { /* the common chains */
          v = _mm512_fmadd_ps(v, sc, sh);
          if (ek == MI__EK_RELU) v = _mm512_max_ps(v, _mm512_setzero_ps());
          if (ek == MI__EK_CLIP) v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
          _mm512_store_ps(out + (oh * c->OW + ow + r) * 16, v);
          continue;
        }
        if (c->affine) v = _mm512_fmadd_ps(v, sc, sh);
        for (e = 0; e < nops; e++) v = mi__blis_act512_op(&c->epi[e], v);
        _mm512_store_ps(out + (oh * c->OW + ow + r) * 16, v);
      }
    }
  }
  /* pixel-major out to the channel-major output, 16 x 16 at a time */
  for (i = 0; i < ohw; i += 16) {
    __mmask16 kp = ohw - i >= 16 ? 0xffff : (__mmask16)((1u << (ohw - i)) - 1u);
    __m512 r[16];
    int l;
#pragma GCC unroll 16
    for (l = 0; l < 16; l++) r[l] = i + l < ohw ? _mm512_load_ps(out + (i + l) * 16) : _mm512_setzero_ps();
    mi__blis_tr16(r);
    for (l = 0; l < nch; l++) _mm512_mask_storeu_ps(y + l * ohw + i, kp, r[l]);
  }
  for (ch = 0; ch < nch && nops < c->epi_n; ch++)
    mi__blis_epi_tail(c, t, n, m0 + ch, 0, y + ch * ohw, ohw, nops, 0);
}

/* Channels [16 * blk, +16) of image n: the common epilogues get their own instance (the per-pixel
 * walk over the op list cost 144x24x24 23.5 vs 22.2 us). */
MI__AVX512_FN void mi__blis_dw_cl_block(const mi__blis_conv_t *c, void *const *t, int64_t n,
                                        int64_t blk) {
  /* the stack buffers live here, once for the four instances (an unoptimised build would give each
   * inlined instance its own) */
  float buf[(MI__DW_CL_PIX + CL_SLACK) * 16] __attribute__((aligned(64)));
  float out[MI__DW_CL_PIX * 16] __attribute__((aligned(64)));
  switch (c->pg_ek) {
  case MI__EK_NONE: dw_cl_body(c, t, n, blk, MI__EK_NONE, buf, out); break;
  case MI__EK_RELU: dw_cl_body(c, t, n, blk, MI__EK_RELU, buf, out); break;
  case MI__EK_CLIP: dw_cl_body(c, t, n, blk, MI__EK_CLIP, buf, out); break;
  default: dw_cl_body(c, t, n, blk, MI__EK_GENERIC, buf, out); break;
  }
}
