/* blis_dw256.c - AVX2 depthwise 3x3 planes at stride 1 and 2: the row kernel of blis_dw512.c on
 * 8-lane registers, read straight from the input (no padded copy of the plane), the fused epilogue
 * applied in registers. */
#include "blis_epi512.h"

#define AVX2_FN __attribute__((target("avx2,fma")))

/* Output rows computed together (independent accumulators hide the FMA latency). */
#define DW2_ROWS 4

/* Lane j of a mask is set when lo <= j < hi (an all-ones lane: that float is read). */
static inline __attribute__((always_inline)) AVX2_FN __m256i lanes8(int64_t lo, int64_t hi) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  lo = lo < 0 ? 0 : lo > 8 ? 8
                           : lo;
  hi = hi < 0 ? 0 : hi > 8 ? 8
                           : hi;
  return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx),
                          _mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int)lo - 1)));
}

/* 8 floats from p; FULL (compile-time): every lane is inside the row, a plain load; else a masked
 * load (a masked lane is not read and is 0: the zero padding). */
#define LD8(p, k) (full ? _mm256_loadu_ps(p) : _mm256_maskload_ps((p), (k)))

/* ALLR (compile-time): all DW2_ROWS output rows wanted and all their input rows inside the plane,
 * so no row is skipped (the checks cost as much as the FMAs they guard in the unrolled loop). */
/* DW2_ROWS output rows of an 8-column block from their s * (DW2_ROWS - 1) + 3 input rows, each
 * tap of an input row loaded once and multiplied into the output rows it feeds. One accumulator
 * per output row, its nine products summed in filter order: with AVX2's 16 registers the nine
 * weights, DW2_ROWS accumulators and a tap fit (one accumulator per (row, kh), as the AVX-512 row
 * kernel keeps, spilled the weights to the stack: three of every four FMAs read one back). The
 * chains' latency is covered by the next column block, which is independent. */
static inline __attribute__((always_inline)) AVX2_FN void dw3_rows8(const float *xc, int64_t W, int64_t H,
                                                                    int64_t ih0, int nr, const __m256i *mk,
                                                                    const __m256 *w, __m256 *out, int s,
                                                                    int full, int allr) {
  __m256 acc[DW2_ROWS];
  int j, r, kh, kw;
  /* input rows [jlo, jhi) of the block exist (the others are zero padding and add nothing) */
  int jlo = allr || ih0 >= 0 ? 0 : (int)-ih0, jhi = allr ? s * (DW2_ROWS - 1) + 3 : s * (nr - 1) + 3;
  if (!allr && ih0 + jhi > H) jhi = (int)(H - ih0);
#pragma GCC unroll 4
  for (r = 0; r < DW2_ROWS; r++) acc[r] = _mm256_setzero_ps();
#pragma GCC unroll 9
  for (j = 0; j < s * (DW2_ROWS - 1) + 3; j++) {
    const float *xr = xc + (ih0 + j) * W;
    if (j < jlo || j >= jhi) continue;
#pragma GCC unroll 3
    for (kw = 0; kw < 3; kw++) {
      __m256 tap;
      if (s == 1) tap = LD8(xr + kw, mk[kw]);
      else {
        /* lanes 0,2 of each 4 from lo then hi, per 128-bit half; the 64-bit swap puts them in order */
        __m256 lo = LD8(xr + kw, mk[2 * kw]), hi = LD8(xr + kw + 8, mk[2 * kw + 1]);
        __m256 ev = _mm256_shuffle_ps(lo, hi, 0x88);
        tap = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
      }
#pragma GCC unroll 4
      for (r = 0; r < DW2_ROWS; r++) {
        kh = j - s * r; /* input row j is filter row kh of output row r */
        if (kh < 0 || kh > 2) continue;
        acc[r] = _mm256_fmadd_ps(w[kh * 3 + kw], tap, acc[r]);
      }
    }
  }
#pragma GCC unroll 4
  for (r = 0; r < DW2_ROWS; r++) out[r] = acc[r];
}

/* Bias/BN and the chain's vector prefix on output pixels [p, p + 8) of plane pl (offset of plane
 * (n, m) in the output-shaped tensors); the common chains (ek, compile-time) without the walk over
 * the op list. ko: the valid lanes; FO: all of them. */
static inline __attribute__((always_inline)) AVX2_FN __m256 dw_epi8(const mi__blis_conv_t *c, void *const *t,
                                                                    int64_t pl, int64_t p, __m256i ko, __m256 v,
                                                                    __m256 sc, __m256 sh, int ek, int fo) {
  int32_t e;
  v = _mm256_fmadd_ps(v, sc, sh);
  if (ek == MI__EK_RELU) return _mm256_max_ps(v, _mm256_setzero_ps());
  if (ek == MI__EK_CLIP)
    return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(c->epi[0].a)), _mm256_set1_ps(c->epi[0].b));
  if (ek == MI__EK_NONE) return v;
  for (e = 0; e < (ek == MI__EK_GENERIC ? c->pg_vec_ops : 1); e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    if (op->act == MI__ACT_NONE) {
      const float *r = (const float *)t[op->tensor] + pl + p;
      v = _mm256_add_ps(v, fo ? _mm256_loadu_ps(r) : _mm256_maskload_ps(r, ko));
    } else {
      v = mi__blis_act256_op(op, v);
    }
  }
  return ek == MI__EK_ADD_RELU ? _mm256_max_ps(v, _mm256_setzero_ps()) : v;
}

/* Output rows [oh0, oh1) of one plane (row oh0 stored at row), stride s (1 or 2) and epilogue kind
 * ek constants. Column blocks whose three taps' runs lie inside the row load without masks. */
static inline __attribute__((always_inline)) AVX2_FN void dw3_body8(const mi__blis_conv_t *c, void *const *t,
                                                                    int64_t n, int64_t m, const float *xc,
                                                                    const float *wm, float *row, int64_t oh0,
                                                                    int64_t oh1, int s, int ek) {
  int64_t W = c->W, H = c->H, OW = c->OW, pl = (n * c->M + m) * c->OH * OW, oh, ow0;
  __m256 w[9], sc = _mm256_set1_ps(c->affine ? c->scale[m] : 1.f), sh = _mm256_set1_ps(c->affine ? c->shift[m] : 0.f);
  __m256i mk[6];
  int i;
#pragma GCC unroll 9
  for (i = 0; i < 9; i++) w[i] = _mm256_set1_ps(wm[i]);
  /* A band of DW2_ROWS output rows across the whole width, then the next: its s * 3 + 3 input rows
   * stay in L1 from one column block to the next (column blocks down the whole plane read each
   * input line from L2 again: blazeface's 128x128 planes). */
  for (oh = oh0; oh < oh1; oh += DW2_ROWS) {
    int nr = oh1 - oh < DW2_ROWS ? (int)(oh1 - oh) : DW2_ROWS, r;
    int64_t ih0 = oh * s - c->pt;
    int allr = nr == DW2_ROWS && ih0 >= 0 && ih0 + s * (DW2_ROWS - 1) + 3 <= H;
    for (ow0 = 0; ow0 < OW; ow0 += 8) {
      int64_t b0 = ow0 * s - c->pl, nout = OW - ow0 < 8 ? OW - ow0 : 8;
      __m256i ko = lanes8(0, nout);
      /* inside the row: lane 7 of the last tap's run (column b0 + 8 * s + 1) exists */
      int full = b0 >= 0 && b0 + 8 * s + 2 <= W, fo = nout == 8;
      __m256 acc[DW2_ROWS];
      if (full && allr) {
        dw3_rows8(xc + b0, W, H, oh * s - c->pt, nr, mk, w, acc, s, 1, 1);
      } else if (full) {
        dw3_rows8(xc + b0, W, H, oh * s - c->pt, nr, mk, w, acc, s, 1, 0);
      } else {
        if (s == 1)
          for (i = 0; i < 3; i++) mk[i] = lanes8(-(b0 + i), W - (b0 + i));
        else
          for (i = 0; i < 6; i++) mk[i] = lanes8(-(b0 + i / 2 + 8 * (i % 2)), W - (b0 + i / 2 + 8 * (i % 2)));
        dw3_rows8(xc + b0, W, H, oh * s - c->pt, nr, mk, w, acc, s, 0, 0);
      }
#pragma GCC unroll 4
      for (r = 0; r < DW2_ROWS; r++)
        if (r < nr) {
          int64_t p = (oh + r) * OW + ow0;
          if (fo) _mm256_storeu_ps(row + (p - oh0 * OW), dw_epi8(c, t, pl, p, ko, acc[r], sc, sh, ek, 1));
          else
            _mm256_maskstore_ps(row + (p - oh0 * OW), ko, dw_epi8(c, t, pl, p, ko, acc[r], sc, sh, ek, 0));
        }
    }
  }
}

/* One instance per stride and epilogue kind: output rows [oh0, oh1), row oh0 stored at row. */
static AVX2_FN void dw3_plane8(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc,
                               const float *wm, float *row, int64_t oh0, int64_t oh1) {
#define MI__DW3_BODY(S, EK) dw3_body8(c, t, n, m, xc, wm, row, oh0, oh1, S, EK)
  MI__BLIS_DW3_SWITCH(c);
#undef MI__DW3_BODY
}

/* Channel m of image n: input plane xc, filter wm, output plane row, with the fused epilogue.
 * Returns 0 (nothing written) for the geometries it does not take: only 3x3 filters, dilation 1,
 * the same stride 1 or 2 both ways. Replaces the padded-copy planes of blis_simd.c there
 * (blazeface's 24-channel 3x3 convs on 128x128 planes ran at 19-22 GFLOP/s with those). */
AVX2_FN int mi__blis_dw256_plane(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc,
                                 const float *wm, float *row) {
  if (c->KH != 3 || c->KW != 3 || c->dh != 1 || c->dw != 1 || c->sh != c->sw || (c->sh != 1 && c->sh != 2))
    return 0;
  dw3_plane8(c, t, n, m, xc, wm, row, 0, c->OH);
  if (c->pg_vec_ops < c->epi_n) mi__blis_epi_tail(c, t, n, m, 0, row, c->OH * c->OW, c->pg_vec_ops, 0);
  return 1;
}

/* The row kernels above on output rows [oh0, oh1) only (a band of blis_dwpw.c's pass; the geometry
 * and epilogue that mi__blis_dw512_rows_fit takes). */
AVX2_FN void mi__blis_dw256_rows(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc,
                                 const float *wm, float *out, int64_t oh0, int64_t oh1) {
  dw3_plane8(c, t, n, m, xc, wm, out, oh0, oh1);
}
