/* blis_dw256cl.c - AVX2 depthwise with the channels in the lanes on small planes, any filter size:
 * blis_dw512.c's channel-lane blocks on 8-lane registers.
 *
 * The 3x3 row kernel of blis_dw256.c takes only 3x3 filters; any other filter (PP-OCR's 5x5
 * depthwise convs on 2- and 3-row planes) fell to the padded-copy planes of blis_simd.c, whose
 * per-plane row loops and partial vectors ran them at 2.2-2.7x their AVX-512 time. Here each 16-
 * channel block of the AVX-512 packing (mi__blis_dw_cl_pack) runs as two halves of 8 channels: the
 * planes transposed once into a zero-padded [hp][wp][8] buffer, every tap one FMA over 8 channels,
 * the results transposed back. */
#include "blis_epi512.h"
#include "blis_tr256.h"

#define AVX2_FN __attribute__((target("avx2,fma")))

/* Output pixels of a row computed together (independent FMA chains, one weight load for all: 8
 * accumulators, the weight and a tap fit AVX2's 16 registers), and the buffer slack their
 * over-read needs: (CL8_GROUP - 1) * sw pixels, sw <= 4. */
#define CL8_GROUP 8
#define CL8_SLACK 32

/* Lane j of a mask is set when j < n (that float is read or written). */
static inline __attribute__((always_inline)) AVX2_FN __m256i first8(int64_t n) {
  n = n < 0 ? 0 : n > 8 ? 8
                        : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Leading epilogue ops that act lane by lane (no residual add: that operand is channel-major). */
static int32_t cl8_ops(const mi__blis_conv_t *c) {
  int32_t e;
  for (e = 0; e < c->pg_vec_ops && c->epi[e].act != MI__ACT_NONE; e++) {
  }
  return e;
}

/* Channels [m0, m0 + nch) of image n (nch <= 8), their packed weights at wv with a tap stride of 16
 * floats, for epilogue kind ek (NONE, RELU and CLIP inline; any other chain through the per-op
 * loop and the scalar tail). */
static inline __attribute__((always_inline)) AVX2_FN void cl8_body(const mi__blis_conv_t *c, void *const *t,
                                                                   int64_t n, int64_t m0, int64_t nch,
                                                                   const float *wv, int ek, float *buf,
                                                                   float *out) {
  int64_t hp = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1;
  int64_t wp = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1;
  int64_t ohw = c->OH * c->OW, taps = c->KH * c->KW, hw = c->H * c->W;
  int64_t i, ch, oh, ow, tp, off[64];
  const float *x = (const float *)t[c->x] + (n * c->C + m0) * hw;
  float *y = (float *)t[c->y] + (n * c->M + m0) * ohw;
  __m256i km = first8(nch);
  int32_t nops = cl8_ops(c), e;
  __m256 sc = _mm256_set1_ps(1.f), sh = _mm256_setzero_ps(), lo, hi, z = _mm256_setzero_ps();
  if (c->affine) {
    sc = _mm256_maskload_ps(c->scale + m0, km);
    sh = _mm256_maskload_ps(c->shift + m0, km);
  }
  lo = _mm256_set1_ps(ek == MI__EK_CLIP ? c->epi[0].a : 0.f);
  hi = _mm256_set1_ps(ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
  /* zeros where the transposed input does not land: the padding border and the slack */
  for (i = 0; i < hp; i++) {
    int64_t j0 = 0, j;
    if (i >= c->pt && i < c->pt + c->H) { /* an input row: only its left and right padding */
      for (j = 0; j < c->pl && j < wp; j++) _mm256_store_ps(buf + (i * wp + j) * 8, z);
      j0 = c->pl + c->W;
    }
    for (j = j0; j < wp; j++) _mm256_store_ps(buf + (i * wp + j) * 8, z);
  }
  for (i = hp * wp; i < hp * wp + CL8_SLACK; i++) _mm256_store_ps(buf + i * 8, z);
  /* channel-major input to pixel-major buf, 8 pixels x 8 channels at a time; the input row and
   * column of each pixel are stepped, not divided */
  {
    int64_t ih = c->pt, iw = c->pl, W = c->W;
    for (i = 0; i < hw; i += 8) {
      __m256i kp = first8(hw - i);
      __m256 r[8];
      int l;
#pragma GCC unroll 8
      for (l = 0; l < 8; l++) r[l] = l < nch ? _mm256_maskload_ps(x + l * hw + i, kp) : z;
      mi__blis_tr8x8(r);
      for (l = 0; l < 8 && i + l < hw; l++) {
        if (ih < hp && iw < wp) _mm256_store_ps(buf + (ih * wp + iw) * 8, r[l]);
        if (++iw == c->pl + W) {
          iw = c->pl;
          ih++;
        }
      }
    }
  }
  for (tp = 0; tp < taps; tp++) off[tp] = ((tp / c->KW) * c->dh * wp + (tp % c->KW) * c->dw) * 8;
  for (oh = 0; oh < c->OH; oh++) {
    int64_t t0, t1; /* the taps on input rows (mi__blis_dw_row_taps, as blis_dw512.c) */
    mi__blis_dw_row_taps(c, oh, &t0, &t1);
    for (ow = 0; ow < c->OW; ow += CL8_GROUP) {
      const float *b0 = buf + (oh * c->sh * wp + ow * c->sw) * 8;
      int64_t np = c->OW - ow < CL8_GROUP ? c->OW - ow : CL8_GROUP, st = c->sw * 8;
      __m256 acc[CL8_GROUP];
      int r;
#pragma GCC unroll 8
      for (r = 0; r < CL8_GROUP; r++) acc[r] = z;
      for (tp = t0; tp < t1; tp++) {
        __m256 wvec = _mm256_loadu_ps(wv + tp * 16);
        const float *bt = b0 + off[tp];
#pragma GCC unroll 8
        for (r = 0; r < CL8_GROUP; r++) /* pixels past np read buffer slack and are not stored */
          acc[r] = _mm256_fmadd_ps(_mm256_load_ps(bt + r * st), wvec, acc[r]);
      }
#pragma GCC unroll 8
      for (r = 0; r < CL8_GROUP; r++) {
        __m256 v = acc[r];
        if (r >= np) break;
        if (ek == MI__EK_NONE || ek == MI__EK_RELU || ek == MI__EK_CLIP) { /* the common chains */
          v = _mm256_fmadd_ps(v, sc, sh);
          if (ek == MI__EK_RELU) v = _mm256_max_ps(v, z);
          if (ek == MI__EK_CLIP) v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
          _mm256_store_ps(out + (oh * c->OW + ow + r) * 8, v);
          continue;
        }
        if (c->affine) v = _mm256_fmadd_ps(v, sc, sh);
        for (e = 0; e < nops; e++) v = mi__blis_act256_op(&c->epi[e], v);
        _mm256_store_ps(out + (oh * c->OW + ow + r) * 8, v);
      }
    }
  }
  /* pixel-major out to the channel-major output, 8 x 8 at a time */
  for (i = 0; i < ohw; i += 8) {
    __m256i kp = first8(ohw - i);
    __m256 r[8];
    int l;
#pragma GCC unroll 8
    for (l = 0; l < 8; l++) r[l] = i + l < ohw ? _mm256_load_ps(out + (i + l) * 8) : z;
    mi__blis_tr8x8(r);
    for (l = 0; l < nch; l++) _mm256_maskstore_ps(y + l * ohw + i, kp, r[l]);
  }
  for (ch = 0; ch < nch && nops < c->epi_n; ch++)
    mi__blis_epi_tail(c, t, n, m0 + ch, 0, y + ch * ohw, ohw, nops, 0);
}

/* Channels [16 * blk, +16) of image n, as two halves of 8; the common epilogues get their own
 * instance, as on AVX-512. */
AVX2_FN void mi__blis_dw256_cl_block(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t blk) {
  /* the stack buffers live here, once for the four instances */
  float buf[(MI__DW_CL_PIX + CL8_SLACK) * 8] __attribute__((aligned(32)));
  float out[MI__DW_CL_PIX * 8] __attribute__((aligned(32)));
  int64_t taps = c->KH * c->KW, h;
  for (h = 0; h < 2; h++) {
    int64_t m0 = blk * 16 + h * 8, nch = c->M - m0 < 8 ? c->M - m0 : 8;
    const float *wv = c->packed + blk * taps * 16 + h * 8;
    if (nch <= 0) break;
    switch (c->pg_ek) {
    case MI__EK_NONE: cl8_body(c, t, n, m0, nch, wv, MI__EK_NONE, buf, out); break;
    case MI__EK_RELU: cl8_body(c, t, n, m0, nch, wv, MI__EK_RELU, buf, out); break;
    case MI__EK_CLIP: cl8_body(c, t, n, m0, nch, wv, MI__EK_CLIP, buf, out); break;
    default: cl8_body(c, t, n, m0, nch, wv, MI__EK_GENERIC, buf, out); break;
    }
  }
}

int mi__blis_dw256_cl_fits(const mi__blis_conv_t *c) {
  int row3 = c->KH == 3 && c->KW == 3 && c->dh == 1 && c->dw == 1 && c->sh == c->sw && (c->sh == 1 || c->sh == 2);
  return !row3 && mi__blis_dw_cl_fits(c);
}
