/* blis_qcol256.c - the int16 pair columns of the INT8 conv's GEMM path in AVX2, one k pair at a time. */
#include <immintrin.h>
#include <string.h>

#include "blis_qgemm.h"

/* Pixels of one output row taken at a time: two rows of values and their pairs stay in L1. */
#define QC_CHUNK 256

/* Column row k's values for output pixels a..b of the span starting at xr (NULL: a padding row,
 * all zero): v[ow - a] = x[col + ow * sw] - zx for ow in lo..hi (the input columns inside the
 * row), 0 elsewhere (the padding is real zero). Strides 1 and 2 widen 16 codes a step; a load
 * never reaches past the last column the row uses (stride 2 stops one vector early, as its 32
 * bytes end one byte past the 16th code). */
__attribute__((target("avx2"))) static void qc_vals(int16_t *v, const uint8_t *xr, int u8, int64_t a, int64_t b,
                                                    int64_t lo, int64_t hi, int64_t col, int64_t sw, int32_t zx) {
  const __m256i z = _mm256_set1_epi16((int16_t)zx), lo8 = _mm256_set1_epi16(0x00ff);
  int64_t ow, s = lo > a ? lo : a, e = hi < b ? hi : b;
  if (!xr || s >= e) {
    memset(v, 0, (size_t)(b - a) * sizeof *v);
    return;
  }
  for (ow = a; ow < s; ow++) v[ow - a] = 0;
  ow = s;
  if (sw == 1)
    for (; ow + 16 <= e; ow += 16) {
      __m128i c = _mm_loadu_si128((const __m128i *)(xr + col + ow));
      __m256i w = u8 ? _mm256_cvtepu8_epi16(c) : _mm256_cvtepi8_epi16(c);
      _mm256_storeu_si256((__m256i *)(v + ow - a), _mm256_sub_epi16(w, z));
    }
  else if (sw == 2)
    for (; ow + 16 < e; ow += 16) { /* the even bytes of 32: output columns ow..ow+15 in order */
      __m256i c = _mm256_loadu_si256((const __m256i *)(xr + col + 2 * ow));
      __m256i w = u8 ? _mm256_and_si256(c, lo8) : _mm256_srai_epi16(_mm256_slli_epi16(c, 8), 8);
      _mm256_storeu_si256((__m256i *)(v + ow - a), _mm256_sub_epi16(w, z));
    }
  if (u8)
    for (; ow < e; ow++) v[ow - a] = (int16_t)(xr[col + ow * sw] - zx);
  else
    for (; ow < e; ow++) v[ow - a] = (int16_t)((int8_t)xr[col + ow * sw] - zx);
  for (; ow < b; ow++) v[ow - a] = 0;
}

/* dst[j * 2 + e] = v[e][j] for j < n: two rows interleaved into int16 pairs. */
__attribute__((target("avx2"))) static void qc_pairs(int16_t *dst, const int16_t *v0, const int16_t *v1, int64_t n) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) { /* unpacks work in 128-bit lanes: put the lanes back in order */
    __m256i a = _mm256_loadu_si256((const __m256i *)(v0 + j)), b = _mm256_loadu_si256((const __m256i *)(v1 + j));
    __m256i l = _mm256_unpacklo_epi16(a, b), h = _mm256_unpackhi_epi16(a, b);
    _mm256_storeu_si256((__m256i *)(dst + 2 * j), _mm256_permute2x128_si256(l, h, 0x20));
    _mm256_storeu_si256((__m256i *)(dst + 2 * j + 16), _mm256_permute2x128_si256(l, h, 0x31));
  }
  for (; j < n; j++) {
    dst[2 * j] = v0[j];
    dst[2 * j + 1] = v1[j];
  }
}

/* Where row k of the columns reads: its input plane (NULL: k past kk), its kernel row kh, and the
 * output columns lo..hi whose input column col + ow * sw lies inside an input row. A 1x1 stride-1
 * conv without pads (flat) reads the tile's rows as one span of `span` codes. k is walked as
 * (ci, kh, kw) counters, not divided out of k: ten divisions a pair, for every part of every tile,
 * were a tenth of IS-Net's run when its tiles were split over pixels. */
typedef struct qc_row {
  const uint8_t *plane;
  int64_t kh, lo, hi, col;
} qc_row_t;

typedef struct qc_cur {
  int64_t k, ci, kh, kw;
} qc_cur_t;

static void qc_cur_init(const mi__blis_conv_t *c, int64_t k, qc_cur_t *u) {
  int64_t taps = c->KH * c->KW;
  u->k = k;
  u->ci = k / taps;
  u->kh = k % taps / c->KW;
  u->kw = k % c->KW;
}

/* Row u's place, then u moved to row k + 1. */
static void qc_decode(const mi__blis_conv_t *c, const uint8_t *x, int64_t kk, qc_cur_t *u, int flat, int64_t span,
                      qc_row_t *r) {
  r->plane = u->k < kk ? x + u->ci * c->H * c->W : NULL;
  r->kh = u->kh;
  if (flat) {
    r->lo = r->col = 0;
    r->hi = span;
  } else {
    r->col = u->kw * c->dw - c->pl;
    if (c->sw == 1) {
      r->lo = r->col >= 0 ? 0 : -r->col;
      r->hi = c->W - r->col;
    } else {
      r->lo = r->col >= 0 ? 0 : (-r->col + c->sw - 1) / c->sw;
      r->hi = c->W - 1 - r->col < 0 ? 0 : (c->W - 1 - r->col) / c->sw + 1;
    }
    r->hi = r->hi < c->OW ? r->hi : c->OW;
    r->hi = r->hi > 0 ? r->hi : 0;
    r->lo = r->lo < r->hi ? r->lo : r->hi;
  }
  u->k++;
  if (++u->kw == c->KW) {
    u->kw = 0;
    if (++u->kh == c->KH) {
      u->kh = 0;
      u->ci++;
    }
  }
}

/* Row k's input row for output row oh (NULL: padding, or k past kk). */
static inline const uint8_t *qc_src(const mi__blis_conv_t *c, const qc_row_t *r, int64_t oh, int flat) {
  int64_t ih = oh * c->sh - c->pt + r->kh * c->dh;
  if (!r->plane) return NULL;
  if (flat) return r->plane + oh * c->W;
  return ih < 0 || ih >= c->H ? NULL : r->plane + ih * c->W;
}

/* Pairs p0..p1 of the tile's pixels j0..j1: each output row's share of them, in chunks. */
static void qc_range(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0, int64_t oh1,
                     int64_t p0, int64_t p1, int64_t j0, int64_t j1, int16_t *col) {
  int flat = c->KH == 1 && c->KW == 1 && c->sh == 1 && c->sw == 1 && c->pt == 0 && c->pl == 0 && c->OW == c->W &&
             c->OH == c->H;
  int64_t ohw = (oh1 - oh0) * c->OW, span = flat ? ohw : c->OW, rows = flat ? 1 : oh1 - oh0, p, r, a;
  int16_t v0[QC_CHUNK], v1[QC_CHUNK];
  qc_cur_t u;
  qc_cur_init(c, 2 * p0, &u);
  for (p = p0; p < p1; p++) {
    qc_row_t k0, k1;
    qc_decode(c, x, kk, &u, flat, span, &k0);
    qc_decode(c, x, kk, &u, flat, span, &k1);
    for (r = j0 / span; r < rows && r * span < j1; r++) {
      const uint8_t *x0 = qc_src(c, &k0, oh0 + r, flat), *x1 = qc_src(c, &k1, oh0 + r, flat);
      int16_t *dst = col + p * ohw * 2 + r * span * 2;
      int64_t s0 = j0 - r * span > 0 ? j0 - r * span : 0, s1 = j1 - r * span < span ? j1 - r * span : span;
      for (a = s0; a < s1; a += QC_CHUNK) {
        int64_t b = a + QC_CHUNK < s1 ? a + QC_CHUNK : s1;
        qc_vals(v0, x0, u8, a, b, k0.lo, k0.hi, k0.col, c->sw, zx);
        qc_vals(v1, x1, u8, a, b, k1.lo, k1.hi, k1.col, c->sw, zx);
        qc_pairs(dst + 2 * a, v0, v1, b - a);
      }
    }
  }
}

void mi__blis_qcol_pairs256(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0,
                            int64_t oh1, int64_t p0, int64_t p1, int16_t *col) {
  qc_range(c, x, u8, zx, kk, oh0, oh1, p0, p1, 0, (oh1 - oh0) * c->OW, col);
}

void mi__blis_qcol_pix256(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0,
                          int64_t oh1, int64_t j0, int64_t j1, int16_t *col) {
  qc_range(c, x, u8, zx, kk, oh0, oh1, 0, (kk + 1) / 2, j0, j1, col);
}

/* ---- The byte columns of the AVX2 byte core (mi__blis_qcol_quads256): raw codes, no widening. */

/* Column row k's codes for output pixels a..b of the span at xr (NULL: a padding row): v[ow - a]
 * = x[col + ow * sw] ^ flip for ow in lo..hi, pad (the zero point's code, flipped) elsewhere.
 * Stride 1 copies 32 codes a step; stride 2 takes the even bytes of 64, stopping one vector early
 * as qc_vals does (its last load ends one byte past the 32nd code). */
__attribute__((target("avx2"))) static void qb_vals(uint8_t *v, const uint8_t *xr, int64_t a, int64_t b, int64_t lo,
                                                    int64_t hi, int64_t col, int64_t sw, uint8_t flip, uint8_t pad) {
  const __m256i f = _mm256_set1_epi8((char)flip), lo8 = _mm256_set1_epi16(0x00ff);
  int64_t ow, s = lo > a ? lo : a, e = hi < b ? hi : b;
  if (!xr || s >= e) {
    memset(v, pad, (size_t)(b - a));
    return;
  }
  for (ow = a; ow < s; ow++) v[ow - a] = pad;
  ow = s;
  if (sw == 1)
    for (; ow + 32 <= e; ow += 32)
      _mm256_storeu_si256((__m256i *)(v + ow - a),
                          _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(xr + col + ow)), f));
  else if (sw == 2)
    for (; ow + 32 < e; ow += 32) {
      __m256i c0 = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(xr + col + 2 * ow)), lo8);
      __m256i c1 = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(xr + col + 2 * ow + 32)), lo8);
      __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(c0, c1), 0xd8);
      _mm256_storeu_si256((__m256i *)(v + ow - a), _mm256_xor_si256(p, f));
    }
  for (; ow < e; ow++) v[ow - a] = (uint8_t)(xr[col + ow * sw] ^ flip);
  for (; ow < b; ow++) v[ow - a] = pad;
}

/* dst[j * 4 + e] = v[e][j] for j < n: four rows interleaved into quads. */
__attribute__((target("avx2"))) static void qb_quads(uint8_t *dst, const uint8_t *v0, const uint8_t *v1,
                                                     const uint8_t *v2, const uint8_t *v3, int64_t n) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) { /* unpacks work in 128-bit lanes: put the lanes back in order */
    __m256i a = _mm256_loadu_si256((const __m256i *)(v0 + j)), b = _mm256_loadu_si256((const __m256i *)(v1 + j));
    __m256i c = _mm256_loadu_si256((const __m256i *)(v2 + j)), d = _mm256_loadu_si256((const __m256i *)(v3 + j));
    __m256i ab0 = _mm256_unpacklo_epi8(a, b), ab1 = _mm256_unpackhi_epi8(a, b);
    __m256i cd0 = _mm256_unpacklo_epi8(c, d), cd1 = _mm256_unpackhi_epi8(c, d);
    __m256i q0 = _mm256_unpacklo_epi16(ab0, cd0), q1 = _mm256_unpackhi_epi16(ab0, cd0);
    __m256i q2 = _mm256_unpacklo_epi16(ab1, cd1), q3 = _mm256_unpackhi_epi16(ab1, cd1);
    _mm256_storeu_si256((__m256i *)(dst + 4 * j), _mm256_permute2x128_si256(q0, q1, 0x20));
    _mm256_storeu_si256((__m256i *)(dst + 4 * j + 32), _mm256_permute2x128_si256(q2, q3, 0x20));
    _mm256_storeu_si256((__m256i *)(dst + 4 * j + 64), _mm256_permute2x128_si256(q0, q1, 0x31));
    _mm256_storeu_si256((__m256i *)(dst + 4 * j + 96), _mm256_permute2x128_si256(q2, q3, 0x31));
  }
  for (; j < n; j++) {
    dst[4 * j] = v0[j];
    dst[4 * j + 1] = v1[j];
    dst[4 * j + 2] = v2[j];
    dst[4 * j + 3] = v3[j];
  }
}

/* psum[j] = the sum of pixel j's quads over kq (bytes past kk are 0), pixels j0..j1: vpmaddubsw
 * against ones (two codes, at most 510) then vpmaddwd, eight pixels a step. */
__attribute__((target("avx2"))) static void qb_psum(const uint8_t *col, int64_t kq, int64_t npix, int64_t j0,
                                                    int64_t j1, int32_t *psum) {
  const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
  int64_t j = j0, q;
  for (; j + 8 <= j1; j += 8) {
    __m256i s = _mm256_setzero_si256();
    for (q = 0; q < kq; q++) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(col + (q * npix + j) * 4));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(v, one8), one16));
    }
    _mm256_storeu_si256((__m256i *)(psum + j), s);
  }
  for (; j < j1; j++) {
    int32_t s = 0;
    for (q = 0; q < kq * 4; q++) s += col[((q >> 2) * npix + j) * 4 + (q & 3)];
    psum[j] = s;
  }
}

void mi__blis_qcol_quads256(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0,
                            int64_t oh1, int64_t j0, int64_t j1, uint8_t *col, int32_t *psum) {
  int flat = c->KH == 1 && c->KW == 1 && c->sh == 1 && c->sw == 1 && c->pt == 0 && c->pl == 0 && c->OW == c->W &&
             c->OH == c->H;
  int64_t ohw = (oh1 - oh0) * c->OW, span = flat ? ohw : c->OW, rows = flat ? 1 : oh1 - oh0, kq = (kk + 3) / 4;
  int64_t qd, r, a, e;
  uint8_t flip = u8 ? 0 : 0x80, pad = (uint8_t)((uint8_t)zx ^ flip);
  uint8_t v[4][QC_CHUNK];
  qc_cur_t u;
  qc_cur_init(c, 0, &u);
  for (qd = 0; qd < kq; qd++) {
    qc_row_t k[4];
    for (e = 0; e < 4; e++) qc_decode(c, x, kk, &u, flat, span, &k[e]);
    for (r = j0 / span; r < rows && r * span < j1; r++) {
      uint8_t *dst = col + (qd * ohw + r * span) * 4;
      int64_t s0 = j0 - r * span > 0 ? j0 - r * span : 0, s1 = j1 - r * span < span ? j1 - r * span : span;
      for (a = s0; a < s1; a += QC_CHUNK) {
        int64_t b = a + QC_CHUNK < s1 ? a + QC_CHUNK : s1;
        for (e = 0; e < 4; e++) {
          if (!k[e].plane) memset(v[e], 0, (size_t)(b - a)); /* past kk: weight 0 */
          else
            qb_vals(v[e], qc_src(c, &k[e], oh0 + r, flat), a, b, k[e].lo, k[e].hi, k[e].col, c->sw, flip, pad);
        }
        qb_quads(dst + 4 * a, v[0], v[1], v[2], v[3], b - a);
      }
    }
  }
  if (psum) qb_psum(col, kq, ohw, j0, j1, psum);
}
