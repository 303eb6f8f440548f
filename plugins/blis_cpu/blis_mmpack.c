/* blis_mmpack.c - FP32 GEMM on B packed in column panels (once at prepare, or per call for a runtime
 * B): AVX-512 12 x 32 / 12 x 16, AVX2 6 x 16 and C 4 x 16 tiles, A read in place. */
#include "blis_mmpack.h"

#include <immintrin.h>
#include <string.h>

#include "blis_epi512.h"

#define AVX2_FN __attribute__((target("avx2,fma")))
/* AVX-512 with the 256-bit FMA intrinsics (tile512q) */
#define AVX512Q_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))

/* k is walked in blocks of MM_KC: one block of a 32-column panel is 32 KiB, which stays in L1
 * while every row tile of the block's rows reads it; the rows are walked in blocks of MM_MC so that
 * A's part of a k block (MM_MC x MM_KC floats, 192 KiB) stays in L2 across the panels. Between k
 * blocks the partial sums go through Y. */
#define MM_KC 256
#define MM_MC 192
/* The first row tile of a panel prefetches the panel MM_PF floats ahead (into the next panel at its
 * end): the panel is that tile's one stream from memory when B does not stay in cache. */
#define MM_PF 512

/* AVX-512 panels are 32 columns wide, 16 when B has no more (a 10-class head: 10 of 16 lanes used
 * instead of 10 of 32; 1024 rows by 1024x10 took 0.43 ms on 32-wide panels against 0.30 through
 * BLIS). */
static int64_t panel_width(int32_t simd, int64_t n) { return simd == MI__SIMD_AVX512 && n > 16 ? 32 : 16; }

uint64_t mi__blis_mmp_bytes(int32_t simd, int64_t k, int64_t n, int bias) {
  int64_t nr = panel_width(simd, n), np = (n + nr - 1) / nr;
  return (uint64_t)(np * nr * (k + (bias ? 1 : 0))) * sizeof(float);
}

/* The transposed panel on AVX-512: blocks of 16 columns by 16 k, each column's 16 k one masked
 * load, transposed in registers (mi__blis_tr16), stored as 16 rows of the panel; the scalar loop
 * stored each float on its own (8% of attention's Q*K^T step, K^T 36 deep). The same products. */
static AVX512Q_FN void pack_panel_t512(float *dst, const float *b, int64_t csb, int64_t k, int64_t n, int64_t nr,
                                       int64_t pn, float alpha) {
  const __m512 va = _mm512_set1_ps(alpha);
  int64_t j0, k0;
  int i;
  for (j0 = 0; j0 < nr; j0 += 16)
    for (k0 = 0; k0 < k; k0 += 16) {
      int64_t kn = k - k0 < 16 ? k - k0 : 16;
      __mmask16 km = (__mmask16)(kn == 16 ? 0xffff : (1u << kn) - 1u);
      __m512 r[16];
      for (i = 0; i < 16; i++) {
        int64_t col = pn * nr + j0 + i;
        r[i] = col < n ? _mm512_mul_ps(va, _mm512_maskz_loadu_ps(km, b + col * csb + k0)) : _mm512_setzero_ps();
      }
      mi__blis_tr16(r);
      for (i = 0; i < kn; i++) _mm512_storeu_ps(dst + (k0 + i) * nr + j0, r[i]);
    }
}

/* Panel pn of alpha * B into dst, [k][nr], zeros past n. A transposed B (columns contiguous:
 * attention's K read as K^T) is read column by column, so the reads run along memory. */
static void pack_panel(float *dst, const float *b, int64_t rsb, int64_t csb, int64_t k, int64_t n, int64_t nr,
                       int64_t pn, float alpha, int32_t simd) {
  int64_t kk, j;
  if (rsb == 1 && csb != 1 && simd == MI__SIMD_AVX512 && nr % 16 == 0) {
    pack_panel_t512(dst, b, csb, k, n, nr, pn, alpha);
    return;
  }
  if (rsb == 1 && csb != 1) {
    for (j = 0; j < nr; j++) {
      int64_t col = pn * nr + j;
      const float *src = b + col * csb;
      if (col < n)
        for (kk = 0; kk < k; kk++) dst[kk * nr + j] = alpha * src[kk];
      else
        for (kk = 0; kk < k; kk++) dst[kk * nr + j] = 0.f;
    }
    return;
  }
  if (csb == 1) { /* rows contiguous (attention's V, any row stride): a loop the compiler vectorises */
    int64_t c0 = pn * nr, cols = n - c0 < nr ? n - c0 : nr;
    for (kk = 0; kk < k; kk++) {
      const float *src = b + kk * rsb + c0;
      float *row = dst + kk * nr;
      for (j = 0; j < cols; j++) row[j] = alpha * src[j];
      for (; j < nr; j++) row[j] = 0.f;
    }
    return;
  }
  for (kk = 0; kk < k; kk++) {
    float *row = dst + kk * nr;
    for (j = 0; j < nr; j++) {
      int64_t col = pn * nr + j;
      row[j] = col < n ? alpha * b[kk * rsb + col * csb] : 0.f;
    }
  }
}

static void set_shape(mi__blis_mmp_t *p, int32_t simd, int64_t k, int64_t n) {
  p->k = k;
  p->n = n;
  p->simd = simd;
  p->nr = panel_width(simd, n);
  p->panels = (n + p->nr - 1) / p->nr;
  p->pb = p->bias = NULL;
  p->act = p->gate = 0;
  p->act_a = p->act_b = 0.f;
}

void mi__blis_mmp_pack(mi__blis_mmp_t *p, float *mem, int32_t simd, const float *b, int64_t rsb, int64_t csb,
                       int64_t k, int64_t n, float alpha, const float *c, int64_t ccs, float beta) {
  int64_t pn, j;
  set_shape(p, simd, k, n);
  for (pn = 0; pn < p->panels; pn++) pack_panel(mem + pn * k * p->nr, b, rsb, csb, k, n, p->nr, pn, alpha, simd);
  p->pb = mem;
  if (c) {
    float *bias = mem + p->panels * p->nr * k;
    for (j = 0; j < p->panels * p->nr; j++) bias[j] = j < n ? beta * c[j * ccs] : 0.f;
    p->bias = bias;
  }
}

/* ---- AVX-512: MR (compile-time, 1..12) rows x 16 * NV (NV 1 or 2) columns, up to 24 accumulators.
 * A tile starts from the bias (first k block) or from the partial sums in Y, and ends with one
 * store, masked at the last panel's columns. */
static inline __attribute__((always_inline)) MI__AVX512_FN void
tile512(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy, const float *bias, int first,
        int64_t cols, int MR, int pf, int NV, int PS) {
  __mmask16 m0 = (__mmask16)(cols >= 16 ? 0xffff : (1u << cols) - 1u);
  __mmask16 m1 = (__mmask16)(cols >= 32 ? 0xffff : cols <= 16 ? 0
                                                              : (1u << (cols - 16)) - 1u);
  __m512 c0[12], c1[12];
  const float *ar[12];
  int64_t kk;
  int i;
#pragma GCC unroll 12
  for (i = 0; i < 12; i++) {
    if (i >= MR) continue;
    ar[i] = a + i * lda;
    c1[i] = _mm512_setzero_ps();
    if (!first) {
      c0[i] = _mm512_maskz_loadu_ps(m0, y + i * ldy);
      if (NV == 2) c1[i] = _mm512_maskz_loadu_ps(m1, y + i * ldy + 16);
    } else if (bias) {
      c0[i] = _mm512_loadu_ps(bias);
      if (NV == 2) c1[i] = _mm512_loadu_ps(bias + 16);
    } else {
      c0[i] = _mm512_setzero_ps();
    }
  }
  for (kk = 0; kk < kn; kk++) {
    __m512 b0 = _mm512_loadu_ps(pb + kk * PS), b1 = NV == 2 ? _mm512_loadu_ps(pb + kk * PS + 16) : b0;
    if (pf) {
      _mm_prefetch((const char *)(pb + kk * PS + MM_PF), _MM_HINT_T0);
      if (PS == 32) _mm_prefetch((const char *)(pb + kk * PS + MM_PF + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 12
    for (i = 0; i < 12; i++) {
      if (i >= MR) continue;
      __m512 av = _mm512_set1_ps(ar[i][kk]);
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
      if (NV == 2) c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
    }
  }
#pragma GCC unroll 12
  for (i = 0; i < 12; i++) {
    if (i >= MR) continue;
    _mm512_mask_storeu_ps(y + i * ldy, m0, c0[i]);
    if (NV == 2) _mm512_mask_storeu_ps(y + i * ldy + 16, m1, c1[i]);
  }
}

/* The rows as the fewest tiles of at most 12, their heights differing by one at most: 40 rows run
 * as 4 tiles of 10, not 3 of 12 and one of 4 (a 4-row tile does 8 multiply-adds per two panel
 * loads). */
#define MM_T512(R) \
  case R: tile512(a, lda, pb, kn, y, ldy, bias, first, cols, R, t == 0, NV, PS); break;
static inline __attribute__((always_inline)) MI__AVX512_FN void
rows512(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy, const float *bias, int first,
        int64_t cols, int64_t rows, int NV, int PS) {
  int64_t tiles = (rows + 11) / 12, t;
  for (t = 0; t < tiles; t++) {
    int64_t r = rows / tiles + (t < rows % tiles);
    /* the macro cases: clang-format does not settle on them */
    /* clang-format off */
    switch (r) {
      MM_T512(1) MM_T512(2) MM_T512(3) MM_T512(4) MM_T512(5) MM_T512(6)
      MM_T512(7) MM_T512(8) MM_T512(9) MM_T512(10) MM_T512(11)
      default: tile512(a, lda, pb, kn, y, ldy, bias, first, cols, 12, t == 0, NV, PS);
    }
    /* clang-format on */
    a += r * lda;
    y += r * ldy;
  }
}

static MI__AVX512_FN void rows512_16(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                                     const float *bias, int first, int64_t cols, int64_t rows) {
  rows512(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 1, 16);
}

static MI__AVX512_FN void rows512_32(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                                     const float *bias, int first, int64_t cols, int64_t rows) {
  rows512(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 2, 32);
}

/* The last 32-wide panel when at most 16 of its columns are B's (N = 36: 4 of 32): one vector per
 * row (its first 16 lanes), not two; the same products in the same order. The PV product of an
 * attention head of 36 (Moonshine's encoder) did 64 columns of multiply-adds for 36, now 48. */
static MI__AVX512_FN void rows512_32h(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                                      const float *bias, int first, int64_t cols, int64_t rows) {
  rows512(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 1, 32);
}

/* The last panel when at most 8 of its columns are B's (N = 36 in panels of 32: 4 columns): 256-bit
 * accumulators, masked, 12 rows. Zen 4 runs a 512-bit multiply-add as two 256-bit halves, so the
 * attention head's PV (207 x 207 by 207 x 36) spent a third of its multiply-adds on 4 columns; the
 * same products in the same order. */
static inline __attribute__((always_inline)) AVX512Q_FN void tile512q(const float *a, int64_t lda, const float *pb,
                                                                      int64_t kn, float *y, int64_t ldy,
                                                                      const float *bias, int first, int64_t cols,
                                                                      int MR, int PS) {
  __mmask8 m0 = (__mmask8)((1u << cols) - 1u);
  __m256 c0[12];
  const float *ar[12];
  int64_t kk;
  int i;
#pragma GCC unroll 12
  for (i = 0; i < 12; i++) {
    if (i >= MR) continue;
    ar[i] = a + i * lda;
    c0[i] = !first ? _mm256_maskz_loadu_ps(m0, y + i * ldy) : bias ? _mm256_loadu_ps(bias)
                                                                   : _mm256_setzero_ps();
  }
  for (kk = 0; kk < kn; kk++) {
    __m256 b0 = _mm256_loadu_ps(pb + kk * PS);
#pragma GCC unroll 12
    for (i = 0; i < 12; i++) {
      if (i >= MR) continue;
      c0[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(ar[i] + kk), b0, c0[i]);
    }
  }
#pragma GCC unroll 12
  for (i = 0; i < 12; i++) {
    if (i >= MR) continue;
    _mm256_mask_storeu_ps(y + i * ldy, m0, c0[i]);
  }
}

#define MM_T512Q(R) \
  case R: tile512q(a, lda, pb, kn, y, ldy, bias, first, cols, R, PS); break;
static inline __attribute__((always_inline)) AVX512Q_FN void rows512q(const float *a, int64_t lda, const float *pb,
                                                                      int64_t kn, float *y, int64_t ldy,
                                                                      const float *bias, int first, int64_t cols,
                                                                      int64_t rows, int PS) {
  int64_t tiles = (rows + 11) / 12, t;
  for (t = 0; t < tiles; t++) {
    int64_t r = rows / tiles + (t < rows % tiles);
    /* clang-format off */
    switch (r) {
      MM_T512Q(1) MM_T512Q(2) MM_T512Q(3) MM_T512Q(4) MM_T512Q(5) MM_T512Q(6)
      MM_T512Q(7) MM_T512Q(8) MM_T512Q(9) MM_T512Q(10) MM_T512Q(11)
      default: tile512q(a, lda, pb, kn, y, ldy, bias, first, cols, 12, PS);
    }
    /* clang-format on */
    a += r * lda;
    y += r * ldy;
  }
}

static AVX512Q_FN void rows512_q16(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                                   const float *bias, int first, int64_t cols, int64_t rows) {
  rows512q(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 16);
}

static AVX512Q_FN void rows512_q32(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                                   const float *bias, int first, int64_t cols, int64_t rows) {
  rows512q(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 32);
}

/* ---- AVX2: MR (1..6) rows x 16 columns, 12 accumulators, the two panel vectors and one broadcast
 * (15 of the 16 ymm registers). */
static inline __attribute__((always_inline)) AVX2_FN void tile256(const float *a, int64_t lda, const float *pb,
                                                                  int64_t kn, float *y, int64_t ldy, const float *bias,
                                                                  int first, int64_t cols, int MR, int pf, int NV,
                                                                  int FULL) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols), lane);
  __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols - 8), lane);
  __m256 c0[6], c1[6];
  const float *ar[6];
  int64_t kk;
  int i;
#pragma GCC unroll 6
  for (i = 0; i < 6; i++) {
    if (i >= MR) continue;
    ar[i] = a + i * lda;
    c1[i] = _mm256_setzero_ps();
    if (!first && FULL) {
      c0[i] = _mm256_loadu_ps(y + i * ldy);
      if (NV == 2) c1[i] = _mm256_loadu_ps(y + i * ldy + 8);
    } else if (!first) {
      c0[i] = NV == 2 ? _mm256_loadu_ps(y + i * ldy) : _mm256_maskload_ps(y + i * ldy, m0);
      if (NV == 2) c1[i] = _mm256_maskload_ps(y + i * ldy + 8, m1);
    } else if (bias) {
      c0[i] = _mm256_loadu_ps(bias);
      if (NV == 2) c1[i] = _mm256_loadu_ps(bias + 8);
    } else {
      c0[i] = _mm256_setzero_ps();
    }
  }
  for (kk = 0; kk < kn; kk++) {
    __m256 b0 = _mm256_loadu_ps(pb + kk * 16), b1 = NV == 2 ? _mm256_loadu_ps(pb + kk * 16 + 8) : b0;
    if (pf) _mm_prefetch((const char *)(pb + kk * 16 + MM_PF), _MM_HINT_T0);
#pragma GCC unroll 6
    for (i = 0; i < 6; i++) {
      if (i >= MR) continue;
      __m256 av = _mm256_broadcast_ss(ar[i] + kk);
      c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
      if (NV == 2) c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
    }
  }
#pragma GCC unroll 6
  for (i = 0; i < 6; i++) {
    if (i >= MR) continue;
    if (FULL) {
      _mm256_storeu_ps(y + i * ldy, c0[i]);
      if (NV == 2) _mm256_storeu_ps(y + i * ldy + 8, c1[i]);
    } else if (NV == 2) { /* more than 8 columns: the first vector is whole */
      _mm256_storeu_ps(y + i * ldy, c0[i]);
      _mm256_maskstore_ps(y + i * ldy + 8, m1, c1[i]);
    } else {
      _mm256_maskstore_ps(y + i * ldy, m0, c0[i]);
    }
  }
}

/* NV 1: the last panel when at most 8 of its columns are B's (N = 36: 4 of the third panel's 16),
 * one vector a row instead of two; the same products in the same order. FULL: all 8 * NV columns
 * are Y's, so the tile reads and writes Y with plain loads and stores: a masked store
 * (vmaskmovps) took 5.3 ns against 0.5 for a plain one on the Zen 4 (AMD runs it in microcode),
 * twelve of them a tile, as much as the FMAs of a 36-deep attention tile (Q*K^T at AVX2 ran 1.5x
 * PV's time for the same FLOPs). */
#define MM_T256(R) \
  case R: tile256(a, lda, pb, kn, y, ldy, bias, first, cols, R, t == 0, NV, FULL); break;
static inline __attribute__((always_inline)) AVX2_FN void rows256(const float *a, int64_t lda, const float *pb,
                                                                  int64_t kn, float *y, int64_t ldy, const float *bias,
                                                                  int first, int64_t cols, int64_t rows, int NV,
                                                                  int FULL) {
  int64_t tiles = (rows + 5) / 6, t;
  for (t = 0; t < tiles; t++) {
    int64_t r = rows / tiles + (t < rows % tiles);
    /* the macro cases: clang-format does not settle on them */
    /* clang-format off */
    switch (r) {
      MM_T256(1) MM_T256(2) MM_T256(3) MM_T256(4) MM_T256(5)
      default: tile256(a, lda, pb, kn, y, ldy, bias, first, cols, 6, t == 0, NV, FULL);
    }
    /* clang-format on */
    a += r * lda;
    y += r * ldy;
  }
}

static AVX2_FN void rows256_2(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                              const float *bias, int first, int64_t cols, int64_t rows) {
  if (cols == 16) rows256(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 2, 1);
  else
    rows256(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 2, 0);
}

static AVX2_FN void rows256_1(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                              const float *bias, int first, int64_t cols, int64_t rows) {
  if (cols == 8) rows256(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 1, 1);
  else
    rows256(a, lda, pb, kn, y, ldy, bias, first, cols, rows, 1, 0);
}

/* ---- plain C: 4 rows x 16 columns in a local block, the same k order. */
static void rows_c(const float *a, int64_t lda, const float *pb, int64_t kn, float *y, int64_t ldy,
                   const float *bias, int first, int64_t cols, int64_t rows) {
  for (; rows > 0; rows -= 4, a += 4 * lda, y += 4 * ldy) {
    int64_t r = rows > 4 ? 4 : rows, i, j, kk;
    float acc[4][16];
    for (i = 0; i < r; i++)
      for (j = 0; j < 16; j++) acc[i][j] = !first ? (j < cols ? y[i * ldy + j] : 0.f) : bias ? bias[j]
                                                                                             : 0.f;
    for (kk = 0; kk < kn; kk++)
      for (i = 0; i < r; i++) {
        float av = a[i * lda + kk];
        for (j = 0; j < 16; j++) acc[i][j] += av * pb[kk * 16 + j];
      }
    for (i = 0; i < r; i++)
      for (j = 0; j < cols; j++) y[i * ldy + j] = acc[i][j];
  }
}

/* A fused activation, then a fused residual add (res at the same offsets as y), on a panel's
 * finished rows (rows x cols at y, row stride ldy) while they are still in L1/L2: the vectorised
 * transcendental ones (blis_vmath.c), else the lane-wise loops; the add is the unfused Add's one
 * rounding. */
void mi__blis_mmp_finish(const mi__blis_mmp_t *p, float *y, const float *res, int64_t ldy, int64_t cols, int64_t rows) {
  int64_t i, j;
  float gate[32]; /* cols <= nr <= 32 */
  for (i = 0; i < rows; i++, y += ldy) {
    float *x = p->gate ? gate : y;
    if (p->gate) memcpy(gate, y, (size_t)cols * sizeof *gate);
    if (p->act && !mi__blis_act_simd(p->simd, p->act, x, cols))
      mi__blis_act_apply(p->act, p->act_a, p->act_b, x, cols);
    if (p->gate)
      for (j = 0; j < cols; j++) y[j] *= gate[j];
    if (res) {
      for (j = 0; j < cols; j++) y[j] += res[j];
      res += ldy;
    }
  }
}

/* Panels [p0, p1) of p over rows [0, m): row blocks, then k blocks, then panels, then row tiles. */
/* One panel's k block [k0, k0 + kn) for `rows` rows from row m0. */
static void panel_block(const mi__blis_mmp_t *p, const float *a0, int64_t m0, int64_t rows, float *y0,
                        const float *res, int64_t pn, int64_t k0, int64_t kn) {
  int64_t K = p->k, N = p->n, nr = p->nr;
  int first = k0 == 0;
  const float *a = a0 + m0 * K + k0, *pb = p->pb + (pn * K + k0) * nr;
  const float *bias = first && p->bias ? p->bias + pn * nr : NULL;
  float *y = y0 + m0 * N + pn * nr;
  int64_t cols = N - pn * nr < nr ? N - pn * nr : nr;
  if (p->simd == MI__SIMD_AVX512 && cols <= 8)
    (nr == 16 ? rows512_q16 : rows512_q32)(a, K, pb, kn, y, N, bias, first, cols, rows);
  else if (p->simd == MI__SIMD_AVX512 && nr == 16)
    rows512_16(a, K, pb, kn, y, N, bias, first, cols, rows);
  else if (p->simd == MI__SIMD_AVX512 && cols <= 16)
    rows512_32h(a, K, pb, kn, y, N, bias, first, cols, rows);
  else if (p->simd == MI__SIMD_AVX512)
    rows512_32(a, K, pb, kn, y, N, bias, first, cols, rows);
  else if (p->simd == MI__SIMD_AVX2)
    (cols <= 8 ? rows256_1 : rows256_2)(a, K, pb, kn, y, N, bias, first, cols, rows);
  else
    rows_c(a, K, pb, kn, y, N, bias, first, cols, rows);
  if ((p->act || res) && k0 + kn >= K) mi__blis_mmp_finish(p, y, res ? res + (y - y0) : NULL, N, cols, rows);
}

/* Rows of at most one tile (MM_MR1, a GEMV's one row: a decoder's head) read each panel's k block
 * once, so keeping it in L1 across row tiles gains nothing: each panel is then walked whole, k
 * blocks in order, before the next. Walking every panel's first k block, then every panel's
 * second, streamed B from memory in strides (Moonshine's head, K = 288: 32 KiB of each 36 KiB
 * panel, then the other 4 KiB). Each element's sum runs in the same k order either way. */
#define MM_MR1 12

static void run_panels(const mi__blis_mmp_t *p, const float *a0, int64_t m, float *y0, const float *res, int64_t p0,
                       int64_t p1) {
  int64_t K = p->k, m0, k0, pn, blocks = (m + MM_MC - 1) / MM_MC, bk = 0;
  /* row blocks of equal height (207 rows: 104 + 103, not 192 + 15 in short tiles); each element's
   * sum runs in the same k order whatever the blocks */
  for (m0 = 0; m0 < m; bk++) {
    int64_t rows = m / blocks + (bk < m % blocks);
    if (rows <= MM_MR1) {
      for (pn = p0; pn < p1; pn++)
        for (k0 = 0; k0 < K; k0 += MM_KC) panel_block(p, a0, m0, rows, y0, res, pn, k0, K - k0 < MM_KC ? K - k0 : MM_KC);
    } else {
      for (k0 = 0; k0 < K; k0 += MM_KC)
        for (pn = p0; pn < p1; pn++) panel_block(p, a0, m0, rows, y0, res, pn, k0, K - k0 < MM_KC ? K - k0 : MM_KC);
    }
    m0 += rows;
  }
}

typedef struct mmp_task {
  const mi__blis_mmp_t *p;
  const mi__blis_mmb_t *mb;
  const float *a, *b, *res;
  float *y;
  int64_t m;
} mmp_task_t;

static void mmp_part(void *arg, int64_t p0, int64_t p1) {
  const mmp_task_t *t = arg;
  run_panels(t->p, t->a, t->m, t->y, t->res, p0, p1);
}

void mi__blis_mmp_run(const mi__blis_env_t *env, const mi__blis_mmp_t *p, const float *a, int64_t m, float *y,
                      const float *res) {
  mmp_task_t t;
  memset(&t, 0, sizeof t);
  t.p = p;
  t.a = a;
  t.y = y;
  t.res = res;
  t.m = m;
  mi__blis_parallel(env, p->panels, 1, m * p->k * p->nr, mmp_part, &t);
}

/* ---- runtime B: items are (batch, panel), batch-major. */

uint64_t mi__blis_mmb_bytes(int32_t simd, int64_t k, int64_t n, int64_t batches) {
  return (uint64_t)batches * (2u * sizeof(int64_t) + mi__blis_mmp_bytes(simd, k, n, 0));
}

void mi__blis_mmb_init(mi__blis_mmb_t *mb, void *mem, int32_t simd, int64_t m, int64_t k, int64_t n,
                       int64_t batches) {
  set_shape(&mb->p, simd, k, n);
  mb->m = m;
  mb->batches = batches;
  mb->rsb = n;
  mb->csb = 1;
  mb->alpha = 1.f;
  mb->oa = mem;
  mb->ob = mb->oa + batches;
  mb->scratch = (float *)(mb->ob + batches);
}

/* Items [i0, i1): each packs its panel, then runs the tiles on it. */
static void mmb_part(void *arg, int64_t i0, int64_t i1) {
  const mmp_task_t *t = arg;
  const mi__blis_mmb_t *mb = t->mb;
  int64_t np = mb->p.panels, i;
  for (i = i0; i < i1; i++) {
    int64_t bi = i / np, pn = i % np;
    float *pb = mb->scratch + bi * np * mb->p.k * mb->p.nr;
    mi__blis_mmp_t q = mb->p;
    pack_panel(pb + pn * q.k * q.nr, t->b + mb->ob[bi], mb->rsb, mb->csb, q.k, q.n, q.nr, pn, mb->alpha, q.simd);
    q.pb = pb;
    run_panels(&q, t->a + mb->oa[bi], mb->m, t->y + bi * mb->m * q.n, NULL, pn, pn + 1);
  }
}

void mi__blis_mmb_run(const mi__blis_env_t *env, const mi__blis_mmb_t *mb, const float *a, const float *b, float *y) {
  mmp_task_t t;
  memset(&t, 0, sizeof t);
  t.mb = mb;
  t.a = a;
  t.b = b;
  t.y = y;
  mi__blis_parallel(env, mb->batches * mb->p.panels, 1, (mb->m + 1) * mb->p.k * mb->p.nr, mmb_part, &t);
}
