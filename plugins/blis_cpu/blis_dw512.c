/* blis_dw512.c - AVX-512 depthwise convolution: channels in the lanes for small planes (16 channels
 * per pass, transposed in registers), and stride-2 planes read with masked loads straight from the
 * input; the fused epilogue applied in registers. */
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

/* Adds the taps of filter row kh to acc for output rows oh0 + r (r < nr), 16 output pixels of a
 * block whose lane 0 reads input column b0 (+ kw); the column masks (input bounds) depend only on
 * the block: mlo/mhi per kw, m3 for the three 16-float runs from b0. A masked lane is not read. */
static inline __attribute__((always_inline)) MI__AVX512_FN void
dw_rows(const mi__blis_conv_t *c, const float *xc, const float *wt, int64_t oh0, int nr, int64_t kh,
        int64_t b0, const __mmask16 *mlo, const __mmask16 *mhi, const __mmask16 *m3, __m512 *acc) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  int64_t kw, KW = c->KW;
  int r;
#pragma GCC unroll 4
  for (r = 0; r < DW_ROWS; r++) {
    int64_t ih = (oh0 + r) * c->sh - c->pt + kh;
    const float *xr = xc + ih * c->W + b0;
    if (r >= nr || ih < 0 || ih >= c->H) continue;
    if (KW == 3) {
      /* three runs of 16 input columns give all three taps: even and odd lanes of the first two,
       * and the even lanes shifted by one with the third run's first value */
      __m512 l0 = _mm512_maskz_loadu_ps(m3[0], xr), l1 = _mm512_maskz_loadu_ps(m3[1], xr + 16);
      __m512 l2 = _mm512_maskz_loadu_ps(m3[2], xr + 32);
      __m512 e0 = _mm512_permutex2var_ps(l0, even, l1), o0 = _mm512_permutex2var_ps(l0, odd, l1);
      __m512 e1 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(l2), _mm512_castps_si512(e0), 1));
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * 3]), e0, acc[r]);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * 3 + 1]), o0, acc[r]);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * 3 + 2]), e1, acc[r]);
      continue;
    }
    for (kw = 0; kw < KW; kw++) {
      __m512 lo = _mm512_maskz_loadu_ps(mlo[kw], xr + kw), hi = _mm512_maskz_loadu_ps(mhi[kw], xr + kw + 16);
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(wt[kh * KW + kw]), _mm512_permutex2var_ps(lo, even, hi), acc[r]);
    }
  }
}

/* Channel m of image n: input plane xc, filter wm, output plane row. Returns 0 (nothing written)
 * for the geometries it does not take. Each output pixel sums its taps in (kh, kw) order. */
MI__AVX512_FN int mi__blis_dw512_plane(const mi__blis_conv_t *c, void *const *t, int64_t n,
                                       int64_t m, const float *xc, const float *wm, float *row) {
  int64_t W = c->W, OW = c->OW, KW = c->KW, oh, ow0, kh, kw;
  float wt[64];
  __mmask16 mlo[16], mhi[16], m3[3];
  /* Stride 1 stays with the flat padded-copy planes of blis_simd.c, measured faster there (also
   * with a 3-tap shifted-load variant of this kernel: 144x24x24 31 vs 46 us). */
  if (c->dh != 1 || c->dw != 1 || c->sw != 2 || c->KH * KW > 64 || KW > 16) return 0;
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

/* Channels [16 * blk, +16) of image n. */
MI__AVX512_FN void mi__blis_dw_cl_block(const mi__blis_conv_t *c, void *const *t, int64_t n,
                                        int64_t blk) {
  float buf[(MI__DW_CL_PIX + CL_SLACK) * 16] __attribute__((aligned(64)));
  float out[MI__DW_CL_PIX * 16] __attribute__((aligned(64)));
  int64_t hp = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1;
  int64_t wp = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1;
  int64_t m0 = blk * 16, nch = c->M - m0 < 16 ? c->M - m0 : 16, ohw = c->OH * c->OW, taps = c->KH * c->KW;
  int64_t i, ch, oh, ow, tp, off[64], hw = c->H * c->W;
  const float *x = (const float *)t[c->x] + (n * c->C + m0) * c->H * c->W;
  const float *wv = c->packed + blk * taps * 16;
  float *y = (float *)t[c->y] + (n * c->M + m0) * ohw;
  __mmask16 km = (__mmask16)((1u << nch) - 1u);
  int32_t nops = cl_ops(c), e;
  __m512 sc = _mm512_set1_ps(1.f), sh = _mm512_setzero_ps();
  if (c->affine) {
    sc = _mm512_maskz_loadu_ps(km, c->scale + m0);
    sh = _mm512_maskz_loadu_ps(km, c->shift + m0);
  }
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
  /* channel-major input to pixel-major buf, 16 pixels x 16 channels at a time */
  for (i = 0; i < hw; i += 16) {
    __mmask16 kp = hw - i >= 16 ? 0xffff : (__mmask16)((1u << (hw - i)) - 1u);
    __m512 r[16];
    int l;
#pragma GCC unroll 16
    for (l = 0; l < 16; l++) r[l] = l < nch ? _mm512_maskz_loadu_ps(kp, x + l * hw + i) : _mm512_setzero_ps();
    mi__blis_tr16(r);
    for (l = 0; l < 16 && i + l < hw; l++) {
      int64_t ih = (i + l) / c->W + c->pt, iw = (i + l) % c->W + c->pl;
      if (ih < hp && iw < wp) _mm512_store_ps(buf + (ih * wp + iw) * 16, r[l]);
    }
  }
  for (tp = 0; tp < taps; tp++) off[tp] = ((tp / c->KW) * c->dh * wp + (tp % c->KW) * c->dw) * 16;
  /* CL_GROUP output pixels at a time: independent FMA chains (one chain is latency-bound). */
  for (oh = 0; oh < c->OH; oh++)
    for (ow = 0; ow < c->OW; ow += CL_GROUP) {
      const float *b0 = buf + (oh * c->sh * wp + ow * c->sw) * 16;
      int64_t np = c->OW - ow < CL_GROUP ? c->OW - ow : CL_GROUP, st = c->sw * 16;
      __m512 acc[CL_GROUP];
      int r;
#pragma GCC unroll 8
      for (r = 0; r < CL_GROUP; r++) acc[r] = _mm512_setzero_ps();
      for (tp = 0; tp < taps; tp++) {
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
        if (c->affine) v = _mm512_fmadd_ps(v, sc, sh);
        for (e = 0; e < nops; e++) {
          const mi__blis_epi_op_t *op = &c->epi[e];
          if (op->act == MI__ACT_RELU) {
            v = _mm512_max_ps(v, _mm512_setzero_ps());
          } else if (op->act == MI__ACT_CLIP) {
            v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(op->a)), _mm512_set1_ps(op->b));
          } else { /* HardSwish */
            __m512 h = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.f)), _mm512_set1_ps(0.5f));
            h = _mm512_min_ps(_mm512_max_ps(h, _mm512_setzero_ps()), _mm512_set1_ps(1.f));
            v = _mm512_mul_ps(v, h);
          }
        }
        _mm512_store_ps(out + (oh * c->OW + ow + r) * 16, v);
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
