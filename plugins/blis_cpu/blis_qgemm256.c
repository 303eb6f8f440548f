/* blis_qgemm256.c - the AVX2 byte core of the integer Gemm / MatMul: unsigned codes times INT8
 * weights by vpmaddubsw + vpmaddwd, exact, with the weights packed in column panels. */
#include <immintrin.h>
#include <string.h>

#include "blis_qgemm.h"

/* vpmaddubsw sums two byte products into int16 with saturation; vpmaddwd against ones then sums
 * two of those into int32, so a k quad of 16 columns costs two multiply-port operations and one
 * add per register, where the int16 pair core (vpmaddwd + vpaddd on pairs) spends two of each:
 * the same 32 multiply-adds a cycle at the two ports' peak, a quarter fewer operations to issue.
 * A pair (s0, s1) of weights saturates for some codes in 0..255 exactly when its positive parts
 * sum past 128 or its negative parts below -128 (255 * 129 > 32767). Such a pair is packed with
 * its second weight moved toward 0 until it cannot saturate, and the rest r goes to a list of
 * fixes, acc[i][j] += a[i][k] * r after the core: exact for any weights, cheap while the fixes
 * are rare (trained weights: a few in ten thousand pairs; the caller keeps the int16 core where
 * they are not, see mi__blis_q256_fixes). */

#define PANEL 16 /* columns of a panel: two ymm of quads */
/* Rows of a register block: 12 accumulators, the broadcast, a product and the ones; B is read from
 * L1 by each vpmaddubsw (a load port each, no register). */
#define ROWS MI__Q256_ROWS

/* The part r of s1 that goes to the fix list so that (s0, s1 - r) cannot saturate, 0 when the
 * pair is safe as it is. Only pairs of one sign saturate, and s1 - r = +-128 - s0 then has that
 * sign too (|s0| <= 128). */
static int32_t pair_excess(int32_t s0, int32_t s1) {
  int32_t pos = (s0 > 0 ? s0 : 0) + (s1 > 0 ? s1 : 0), neg = (s0 < 0 ? s0 : 0) + (s1 < 0 ? s1 : 0);
  if (pos > 128) return s1 > 0 ? pos - 128 : 0;
  if (neg < -128) return s1 < 0 ? neg + 128 : 0;
  return 0;
}

int64_t mi__blis_q256_fixes(const uint8_t *b8, int64_t n, int64_t kq) {
  int64_t p, j, e, cnt = 0;
  for (p = 0; p < kq; p++)
    for (j = 0; j < n; j++)
      for (e = 0; e < 4; e += 2) {
        const int8_t *s = (const int8_t *)b8 + (p * n + j) * 4 + e;
        cnt += pair_excess(s[0], s[1]) != 0;
      }
  return cnt;
}

uint64_t mi__blis_q256_bytes(int64_t n, int64_t kq, int64_t nfix) {
  int64_t np = (n + PANEL - 1) / PANEL;
  return (uint64_t)(np * PANEL) * (uint64_t)kq * 4u + (uint64_t)nfix * sizeof(mi__blis_q256_fix_t) +
         (uint64_t)(np + 1) * sizeof(int32_t);
}

void mi__blis_q256_pack(mi__blis_q256_t *pb, const uint8_t *b8, int64_t n, int64_t kq, void *mem) {
  int64_t p, j, e, nf = 0, np = (n + PANEL - 1) / PANEL;
  int8_t *d = mem;
  pb->n = n;
  pb->kq = kq;
  pb->b = d;
  pb->fix = (mi__blis_q256_fix_t *)(d + np * PANEL * kq * 4);
  for (j = 0; j < n; j++) /* column by column: each panel's fixes in one run (fstart) */
    for (p = 0; p < kq; p++) {
      int8_t *o = d + ((j / PANEL * kq + p) * PANEL + j % PANEL) * 4;
      memcpy(o, b8 + (p * n + j) * 4, 4);
      for (e = 0; e < 4; e += 2) {
        int32_t r = pair_excess(o[e], o[e + 1]);
        if (!r) continue;
        o[e + 1] = (int8_t)(o[e + 1] - r);
        pb->fix[nf].k = (int32_t)(p * 4 + e + 1);
        pb->fix[nf].j = (int32_t)j;
        pb->fix[nf].r = r;
        nf++;
      }
    }
  pb->nfix = nf;
  pb->fstart = (int32_t *)(pb->fix + nf);
  for (p = 0, e = 0; p <= np; p++) {
    while (e < nf && pb->fix[e].j < p * PANEL) e++;
    pb->fstart[p] = (int32_t)e;
  }
}

/* Rows 0..R (R a constant) of codes a by the panel at bp: the sums of quads minus zu * csum
 * (cols of them real, the rest 0) to the tile t ([ROWS][16]). Row r's quad p at a + r * lda + p * 4
 * (a Gemm's rows), or with Q (a constant) at a + p * lda + r * 4: a conv's byte columns, quad rows
 * of lda bytes ([kq][pixels][4], mi__blis_q256_conv). */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void
block(int R, int Q, const uint8_t *a, int64_t lda, int64_t kq, const int8_t *bp, const int32_t *csum, int32_t zu,
      int64_t cols, int32_t *t) {
  const __m256i ones = _mm256_set1_epi16(1), iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i c0[ROWS], c1[ROWS], z0, z1;
  int64_t p;
  int r;
  _Pragma("GCC unroll 6") for (r = 0; r < R; r++) c0[r] = c1[r] = _mm256_setzero_si256();
  for (p = 0; p < kq; p++, bp += PANEL * 4) {
    _Pragma("GCC unroll 6") for (r = 0; r < R; r++) {
      __m256i av, t0;
      /* one row's step as written: GCC hoisted every broadcast and kept accumulators on the stack */
      __asm__(
          "vpbroadcastd %[a], %[av]\n\t"
          "vpmaddubsw %[b0], %[av], %[t0]\n\t"
          "vpmaddubsw %[b1], %[av], %[av]\n\t"
          "vpmaddwd %[ones], %[t0], %[t0]\n\t"
          "vpmaddwd %[ones], %[av], %[av]\n\t"
          "vpaddd %[t0], %[c0], %[c0]\n\t"
          "vpaddd %[av], %[c1], %[c1]"
          : [c0] "+x"(c0[r]), [c1] "+x"(c1[r]), [av] "=&x"(av), [t0] "=&x"(t0)
          : [a] "m"(*(const int32_t *)(Q ? a + p * lda + r * 4 : a + r * lda + p * 4)), [b0] "m"(*(const __m256i *)bp),
            [b1] "m"(*(const __m256i *)(bp + 32)), [ones] "x"(ones));
    }
  }

  if (cols == PANEL) {
    z0 = _mm256_loadu_si256((const __m256i *)csum);
    z1 = _mm256_loadu_si256((const __m256i *)(csum + 8));
  } else {
    z0 = _mm256_maskload_epi32(csum, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cols > 8 ? 8 : cols)), iota));
    z1 = _mm256_maskload_epi32(csum + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cols > 8 ? cols - 8 : 0)), iota));
  }
  z0 = _mm256_mullo_epi32(_mm256_set1_epi32(zu), z0);
  z1 = _mm256_mullo_epi32(_mm256_set1_epi32(zu), z1);
  _Pragma("GCC unroll 6") for (r = 0; r < R; r++) {
    _mm256_store_si256((__m256i *)(t + r * PANEL), _mm256_sub_epi32(c0[r], z0));
    _mm256_store_si256((__m256i *)(t + r * PANEL + 8), _mm256_sub_epi32(c1[r], z1));
  }
}

#define BLOCK_FN(R)                                                                                            \
  __attribute__((target("avx2,fma"))) static void block##R(const uint8_t *a, int64_t lda, int64_t kq,          \
                                                           const int8_t *bp, const int32_t *csum, int32_t zu,  \
                                                           int64_t cols, int32_t *t) {                         \
    block(R, 0, a, lda, kq, bp, csum, zu, cols, t);                                                            \
  }                                                                                                            \
  __attribute__((target("avx2,fma"))) static void cblock##R(const uint8_t *a, int64_t lda, int64_t kq,         \
                                                            const int8_t *bp, const int32_t *csum, int32_t zu, \
                                                            int64_t cols, int32_t *t) {                        \
    block(R, 1, a, lda, kq, bp, csum, zu, cols, t);                                                            \
  }
BLOCK_FN(1)
BLOCK_FN(2)
BLOCK_FN(3)
BLOCK_FN(4)
BLOCK_FN(5)
BLOCK_FN(6)

typedef void (*block_fn)(const uint8_t *, int64_t, int64_t, const int8_t *, const int32_t *, int32_t, int64_t,
                         int32_t *);

/* The tile of rows i..i+rows, columns j0..j0+cols: the saturating pairs' rest (fixes f0..f1, modulo
 * 2^32 as the sums), then out's sums or floats. */
__attribute__((target("avx2,fma"))) static void put(const mi__blis_q256_t *pb, const mi__blis_q256_out_t *o,
                                                    const uint8_t *a, int64_t lda, int64_t i, int64_t rows,
                                                    int64_t j0, int64_t cols, int32_t *t) {
  const int64_t n = pb->n, f0 = pb->fstart[j0 / PANEL], f1 = pb->fstart[j0 / PANEL + 1];
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cols > 8 ? 8 : cols)), iota);
  const __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cols > 8 ? cols - 8 : 0)), iota);
  int64_t f, r;
  for (f = f0; f < f1; f++) {
    const mi__blis_q256_fix_t *x = &pb->fix[f];
    for (r = 0; r < rows; r++)
      t[r * PANEL + x->j - j0] = (int32_t)((uint32_t)t[r * PANEL + x->j - j0] + (uint32_t)(a[(i + r) * lda + x->k] * x->r));
  }
  if (o->wd) { /* the weight shift, wd[j] * rs[i] modulo 2^32 as the sums */
    const __m256i d0 = _mm256_maskload_epi32(o->wd + j0, k0), d1 = _mm256_maskload_epi32(o->wd + j0 + 8, k1);
    for (r = 0; r < rows; r++) {
      const __m256i rs = _mm256_set1_epi32(o->rs[i + r]);
      __m256i *tr = (__m256i *)(t + r * PANEL);
      _mm256_store_si256(tr, _mm256_add_epi32(_mm256_load_si256(tr), _mm256_mullo_epi32(d0, rs)));
      _mm256_store_si256(tr + 1, _mm256_add_epi32(_mm256_load_si256(tr + 1), _mm256_mullo_epi32(d1, rs)));
    }
  }
  for (r = 0; r < rows; r++) {
    __m256i v0 = _mm256_load_si256((const __m256i *)(t + r * PANEL)), v1 = _mm256_load_si256((const __m256i *)(t + r * PANEL + 8));
    if (o->y) { /* Cast, Mul by the scale [, Add of the bias]: each rounded as the nodes */
      const __m256 s = _mm256_set1_ps(o->s);
      float *y = o->y + (i + r) * n + j0;
      __m256 y0 = _mm256_mul_ps(_mm256_cvtepi32_ps(v0), s), y1 = _mm256_mul_ps(_mm256_cvtepi32_ps(v1), s);
      if (o->tb) {
        y0 = _mm256_add_ps(y0, _mm256_maskload_ps(o->tb + j0, k0));
        y1 = _mm256_add_ps(y1, _mm256_maskload_ps(o->tb + j0 + 8, k1));
      }
      if (cols == PANEL) {
        _mm256_storeu_ps(y, y0);
        _mm256_storeu_ps(y + 8, y1);
      } else {
        _mm256_maskstore_ps(y, k0, y0);
        _mm256_maskstore_ps(y + 8, k1, y1);
      }
    } else {
      int32_t *acc = o->acc + (i + r) * n + j0;
      if (cols == PANEL) {
        _mm256_storeu_si256((__m256i *)acc, v0);
        _mm256_storeu_si256((__m256i *)(acc + 8), v1);
      } else {
        _mm256_maskstore_epi32(acc, k0, v0);
        _mm256_maskstore_epi32(acc + 8, k1, v1);
      }
    }
  }
}

/* Bytes of B panels one column group spans: they stay in L2 while every row block reads them. */
#define GROUP_BYTES (192 * 1024)

void mi__blis_q256_gemm(const mi__blis_q256_t *pb, int64_t m0, int64_t m1, const uint8_t *a, int64_t lda,
                        const int32_t *csum, int32_t zu, const mi__blis_q256_out_t *o) {
  static const block_fn fns[ROWS + 1] = {NULL, block1, block2, block3, block4, block5, block6};
  const int64_t n = pb->n, kq = pb->kq, np = (n + PANEL - 1) / PANEL, pbytes = kq * PANEL * 4;
  int64_t gp = GROUP_BYTES / (pbytes > 0 ? pbytes : 1), g0, g1, i, jp;
  _Alignas(32) int32_t t[ROWS * PANEL];
  gp = gp < 1 ? 1 : gp;
  for (g0 = 0; g0 < np; g0 = g1) {
    g1 = np - g0 > gp ? g0 + gp : np;
    for (i = m0; i < m1; i += ROWS) {
      int64_t rows = m1 - i < ROWS ? m1 - i : ROWS;
      for (jp = g0; jp < g1; jp++) {
        int64_t j0 = jp * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
        fns[rows](a + i * lda, lda, kq, pb->b + jp * pbytes, csum + j0, zu, cols, t);
        put(pb, o, a, lda, i, rows, j0, cols, t);
      }
    }
  }
}

/* The conv's tile of pixels i..i+rows (codes at col + (k >> 2) * lda + pixel * 4 + (k & 3)) and
 * channels j0..j0+cols: the fixes, the weight shift (sh), then each channel's sums to its row of
 * acc (stride ldc). */
__attribute__((target("avx2,fma"))) static void cput(const mi__blis_q256_t *pb, const mi__blis_q256_shift_t *sh,
                                                     const uint8_t *col, int64_t lda, int64_t i, int64_t rows,
                                                     int64_t j0, int64_t cols, int32_t *t, int32_t *acc, int64_t ldc) {
  const int64_t f0 = pb->fstart[j0 / PANEL], f1 = pb->fstart[j0 / PANEL + 1];
  int64_t f, r, j, r0;
  for (f = f0; f < f1; f++) {
    const mi__blis_q256_fix_t *x = &pb->fix[f];
    const uint8_t *a = col + (x->k >> 2) * lda + i * 4 + (x->k & 3);
    for (r = 0; r < rows; r++)
      t[r * PANEL + x->j - j0] = (int32_t)((uint32_t)t[r * PANEL + x->j - j0] + (uint32_t)(a[r * 4] * x->r));
  }
  if (sh) { /* wd[j] * (psum[pixel] - base), modulo 2^32 as the sums, on the tile in L1 before it is spread */
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cols > 8 ? 8 : cols)), iota);
    const __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cols > 8 ? cols - 8 : 0)), iota);
    const __m256i d0 = _mm256_maskload_epi32(sh->wd + j0, k0), d1 = _mm256_maskload_epi32(sh->wd + j0 + 8, k1);
    for (r = 0; r < rows; r++) {
      const __m256i rs = _mm256_set1_epi32((int32_t)((uint32_t)sh->psum[i + r] - (uint32_t)sh->base));
      __m256i *tr = (__m256i *)(t + r * PANEL);
      _mm256_store_si256(tr, _mm256_add_epi32(_mm256_load_si256(tr), _mm256_mullo_epi32(d0, rs)));
      _mm256_store_si256(tr + 1, _mm256_add_epi32(_mm256_load_si256(tr + 1), _mm256_mullo_epi32(d1, rs)));
    }
  }
  if (rows == ROWS && cols == PANEL) /* each channel's six pixels: 8 x 8 transposes of the tile */
    for (j = 0; j < PANEL; j += 8) {
      __m256i r[8], u[8], v[8];
      for (r0 = 0; r0 < 6; r0++) r[r0] = _mm256_load_si256((const __m256i *)(t + r0 * PANEL + j));
      r[6] = r[7] = _mm256_setzero_si256();
      for (r0 = 0; r0 < 8; r0 += 2) {
        u[r0] = _mm256_unpacklo_epi32(r[r0], r[r0 + 1]);
        u[r0 + 1] = _mm256_unpackhi_epi32(r[r0], r[r0 + 1]);
      }
      for (r0 = 0; r0 < 8; r0 += 4) {
        v[r0] = _mm256_unpacklo_epi64(u[r0], u[r0 + 2]);
        v[r0 + 1] = _mm256_unpackhi_epi64(u[r0], u[r0 + 2]);
        v[r0 + 2] = _mm256_unpacklo_epi64(u[r0 + 1], u[r0 + 3]);
        v[r0 + 3] = _mm256_unpackhi_epi64(u[r0 + 1], u[r0 + 3]);
      }
      /* v[0..3]: channels j+0..3 (lane half 0) and j+4..7 (half 1) of rows 0..3; v[4..7] rows 4..7 */
      for (r0 = 0; r0 < 4; r0++) {
        int32_t *d0 = acc + (j0 + j + r0) * ldc + i, *d1 = acc + (j0 + j + 4 + r0) * ldc + i;
        _mm_storeu_si128((__m128i *)d0, _mm256_castsi256_si128(v[r0]));
        _mm_storel_epi64((__m128i *)(d0 + 4), _mm256_castsi256_si128(v[4 + r0]));
        _mm_storeu_si128((__m128i *)d1, _mm256_extracti128_si256(v[r0], 1));
        _mm_storel_epi64((__m128i *)(d1 + 4), _mm256_extracti128_si256(v[4 + r0], 1));
      }
    }
  else
    for (j = 0; j < cols; j++)
      for (r = 0; r < rows; r++) acc[(j0 + j) * ldc + i + r] = t[r * PANEL + j];
}

void mi__blis_q256_conv(const mi__blis_q256_t *pb, int64_t i0, int64_t i1, int64_t p0, int64_t p1, const uint8_t *col,
                        int64_t npix, const int32_t *csum, int32_t zu, const mi__blis_q256_shift_t *sh, int32_t *acc) {
  static const block_fn fns[ROWS + 1] = {NULL, cblock1, cblock2, cblock3, cblock4, cblock5, cblock6};
  const int64_t n = pb->n, kq = pb->kq, pbytes = kq * PANEL * 4, lda = npix * 4;
  int64_t gp = GROUP_BYTES / (pbytes > 0 ? pbytes : 1), g0, g1, i, jp;
  _Alignas(32) int32_t t[ROWS * PANEL];
  gp = gp < 1 ? 1 : gp;
  for (g0 = p0; g0 < p1; g0 = g1) {
    g1 = p1 - g0 > gp ? g0 + gp : p1;
    for (i = i0; i < i1; i += ROWS) {
      int64_t rows = i1 - i < ROWS ? i1 - i : ROWS;
      for (jp = g0; jp < g1; jp++) {
        int64_t j0 = jp * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
        fns[rows](col + i * 4, lda, kq, pb->b + jp * pbytes, csum + j0, zu, cols, t);
        cput(pb, sh, col, lda, i, rows, j0, cols, t, acc, npix);
      }
    }
  }
}
