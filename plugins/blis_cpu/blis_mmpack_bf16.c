/* blis_mmpack_bf16.c - matmul.packed_bf16 and gemm.packed_bf16: blis_mmpack.c's GEMM on a constant B
 * in BF16 compute (AVX512_BF16 vdpbf16ps), B packed once as BF16 pairs along k, A rounded to BF16
 * once per call, FP32 sums. */
#include <immintrin.h>
#include <string.h>

#include "blis_mmpack.h"

/* What the tiles compute, element for element: A and B rounded to BF16 (nearest even; FP32
 * denormals read as zero, as the conversion instruction does), each output alpha times the FP32
 * sum over k pairs of a[k] * b[k] + a[k+1] * b[k+1] (products of two BF16 values are exact in
 * FP32), plus the bias, then the fused tail (blis_mmpack.c's) in FP32. One vdpbf16ps does 32
 * multiply-adds where an FP32 FMA does 16, on half the bytes of B. */
#define BF16_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")))

/* k is walked in blocks of MB_KC2 pairs: one block of a 32-column panel is 32 KiB, as blis_mmpack.c's
 * 256 floats; rows in blocks of MB_MC (A's block as pairs: 192 KiB at most, in L2). Between k blocks
 * the partial sums go through Y. */
#define MB_KC2 256
#define MB_MC 192
/* The first row tile of a panel prefetches it this many pairs' columns ahead (32-wide: 2 KiB). */
#define MB_PF 512
/* Rows of at most this (a decoder's tokens) walk each panel whole before the next. */
#define MB_MR1 12

static int64_t panel_width(int64_t n) { return n > 16 ? 32 : 16; }

static uint64_t align64(uint64_t b) { return (b + 63u) / 64u * 64u; }

uint64_t mi__blis_mmpb_bytes(int64_t m, int64_t k, int64_t n, int bias) {
  int64_t nr = panel_width(n), np = (n + nr - 1) / nr, k2 = (k + 1) / 2;
  return align64((uint64_t)(np * nr * k2) * 4u) + align64(bias ? (uint64_t)(np * nr) * 4u : 0u) +
         (uint64_t)(m * k2) * 4u;
}

void mi__blis_mmpb_pack(mi__blis_mmp_t *p, void *mem, const float *b, int64_t rsb, int64_t csb, int64_t m, int64_t k,
                        int64_t n, float alpha, const float *c, int64_t ccs, float beta) {
  int64_t nr = panel_width(n), np = (n + nr - 1) / nr, k2 = (k + 1) / 2, pn, j, i;
  uint32_t *pw = mem;
  char *at = (char *)mem + align64((uint64_t)(np * nr * k2) * 4u);
  memset(p, 0, sizeof *p);
  p->k = k;
  p->n = n;
  p->nr = nr;
  p->panels = np;
  p->simd = MI__SIMD_AVX512;
  p->alpha = alpha;
  /* [panel][k pair][column]: low half b[2j][col], high half b[2j + 1][col], zeros past k and n */
  for (pn = 0; pn < np; pn++)
    for (j = 0; j < k2; j++)
      for (i = 0; i < nr; i++) {
        int64_t col = pn * nr + i;
        uint32_t lo = 0, hi = 0;
        if (col < n) {
          lo = mi__blis_f2bf(b[2 * j * rsb + col * csb]);
          if (2 * j + 1 < k) hi = mi__blis_f2bf(b[(2 * j + 1) * rsb + col * csb]);
        }
        pw[(pn * k2 + j) * nr + i] = lo | hi << 16;
      }
  p->pw = pw;
  if (c) {
    float *bias = (float *)at;
    for (j = 0; j < np * nr; j++) bias[j] = j < n ? beta * c[j * ccs] : 0.f;
    p->bias = bias;
    at += align64((uint64_t)(np * nr) * 4u);
  }
  p->ab = (uint32_t *)at;
  p->m = m;
  p->rsa = k;
  p->csa = 1;
}

/* Rows [i0, i1) of A (element [i][kk] at a + i * rsa + kk * csa) into p->ab as BF16 pairs along k,
 * [row][k pair], the last pair's high half zero for an odd k. */
static BF16_FN void convert_rows(const mi__blis_mmp_t *p, const float *a, int64_t i0, int64_t i1) {
  int64_t K = p->k, k2 = (K + 1) / 2, i, kk;
  for (i = i0; i < i1; i++) {
    const float *r = a + i * p->rsa;
    uint16_t *o = (uint16_t *)(p->ab + i * k2);
    if (p->csa == 1) {
      for (kk = 0; kk + 16 <= K; kk += 16)
        _mm256_storeu_si256((__m256i *)(o + kk), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(r + kk)));
      if (kk < K) {
        __mmask16 mk = (__mmask16)((1u << (K - kk)) - 1u);
        _mm256_mask_storeu_epi16(o + kk, mk, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mk, r + kk)));
      }
    } else { /* transA: A's columns are its rows; the scalar rounding is the instruction's */
      for (kk = 0; kk < K; kk++) o[kk] = mi__blis_f2bf(r[kk * p->csa]);
    }
    if (K & 1) o[K] = 0;
  }
}

/* MR (1..12) rows x 16 * NV (1 or 2) columns over kn2 pairs of a panel block whose rows are PS
 * uint32 apart. first: the sums start at zero, else from Y; last: Y = alpha * sums + bias, else the
 * partial sums. S (1, 2 or 4) chains a sum: pair j goes to set j % S, the sets added at the end, so
 * that the few rows of a GEMV keep enough multiply-adds in flight (vdpbf16ps's latency, not its
 * rate, bounds a tile of one row with one chain a vector). */
static inline __attribute__((always_inline)) BF16_FN void
tileb(const uint32_t *a, int64_t lda, const uint32_t *pw, int64_t kn2, float *y, int64_t ldy, const float *bias,
      float alpha, int first, int last, int64_t cols, int MR, int pf, int NV, int PS, int S) {
  __mmask16 m0 = (__mmask16)(cols >= 16 ? 0xffff : (1u << cols) - 1u);
  __mmask16 m1 = (__mmask16)(cols >= 32 ? 0xffff : cols <= 16 ? 0
                                                              : (1u << (cols - 16)) - 1u);
  __m512 c0[4][12], c1[4][12];
  int64_t j = 0;
  int i, q;
#pragma GCC unroll 12
  for (i = 0; i < 12; i++) {
    if (i >= MR) continue;
    c0[0][i] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, y + i * ldy);
    c1[0][i] = first || NV == 1 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, y + i * ldy + 16);
#pragma GCC unroll 4
    for (q = 1; q < 4; q++)
      if (q < S) c0[q][i] = c1[q][i] = _mm512_setzero_ps();
  }
  for (; j + S <= kn2; j += S) {
    if (pf) /* the S pair rows' cache lines */
      for (i = 0; i < S * PS / 16; i++) _mm_prefetch((const char *)(pw + j * PS + MB_PF + 16 * i), _MM_HINT_T0);
#pragma GCC unroll 4
    for (q = 0; q < 4; q++) {
      if (q >= S) continue;
      __m512bh b0 = (__m512bh)_mm512_loadu_si512(pw + (j + q) * PS);
      __m512bh b1 = NV == 2 ? (__m512bh)_mm512_loadu_si512(pw + (j + q) * PS + 16) : b0;
#pragma GCC unroll 12
      for (i = 0; i < 12; i++) {
        if (i >= MR) continue;
        __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[i * lda + j + q]);
        c0[q][i] = _mm512_dpbf16_ps(c0[q][i], av, b0);
        if (NV == 2) c1[q][i] = _mm512_dpbf16_ps(c1[q][i], av, b1);
      }
    }
  }
  for (; j < kn2; j++) { /* the last kn2 % S pairs, on the first set */
    __m512bh b0 = (__m512bh)_mm512_loadu_si512(pw + j * PS);
    __m512bh b1 = NV == 2 ? (__m512bh)_mm512_loadu_si512(pw + j * PS + 16) : b0;
#pragma GCC unroll 12
    for (i = 0; i < 12; i++) {
      if (i >= MR) continue;
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[i * lda + j]);
      c0[0][i] = _mm512_dpbf16_ps(c0[0][i], av, b0);
      if (NV == 2) c1[0][i] = _mm512_dpbf16_ps(c1[0][i], av, b1);
    }
  }
  {
    const __m512 va = _mm512_set1_ps(alpha);
    __m512 v0 = last && bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
    __m512 v1 = last && bias && NV == 2 ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 12
    for (i = 0; i < 12; i++) {
      if (i >= MR) continue;
      __m512 s0 = c0[0][i], s1 = c1[0][i];
      if (S == 2) {
        s0 = _mm512_add_ps(s0, c0[1][i]);
        s1 = _mm512_add_ps(s1, c1[1][i]);
      } else if (S == 4) {
        s0 = _mm512_add_ps(_mm512_add_ps(s0, c0[1][i]), _mm512_add_ps(c0[2][i], c0[3][i]));
        s1 = _mm512_add_ps(_mm512_add_ps(s1, c1[1][i]), _mm512_add_ps(c1[2][i], c1[3][i]));
      }
      if (last) {
        s0 = _mm512_fmadd_ps(s0, va, v0);
        s1 = _mm512_fmadd_ps(s1, va, v1);
      }
      _mm512_mask_storeu_ps(y + i * ldy, m0, s0);
      if (NV == 2) _mm512_mask_storeu_ps(y + i * ldy + 16, m1, s1);
    }
  }
}

/* The rows as the fewest tiles of at most 12, heights differing by one at most (blis_mmpack.c's
 * rows512); rows of at most 6 split their k chains: 4 sets for one row, 2 for 2-6. */
#define MB_S(R) ((R) == 1 ? 4 : (R) <= 6 ? 2 \
                                         : 1)
#define MB_T(R) \
  case R: tileb(a, lda, pw, kn2, y, ldy, bias, alpha, first, last, cols, R, t == 0, NV, PS, MB_S(R)); break;
static inline __attribute__((always_inline)) BF16_FN void rowsb(const uint32_t *a, int64_t lda, const uint32_t *pw,
                                                                int64_t kn2, float *y, int64_t ldy, const float *bias,
                                                                float alpha, int first, int last, int64_t cols,
                                                                int64_t rows, int NV, int PS) {
  int64_t tiles = (rows + 11) / 12, t;
  for (t = 0; t < tiles; t++) {
    int64_t r = rows / tiles + (t < rows % tiles);
    /* clang-format off */
    switch (r) {
      MB_T(1) MB_T(2) MB_T(3) MB_T(4) MB_T(5) MB_T(6)
      MB_T(7) MB_T(8) MB_T(9) MB_T(10) MB_T(11)
      default: tileb(a, lda, pw, kn2, y, ldy, bias, alpha, first, last, cols, 12, t == 0, NV, PS, 1);
    }
    /* clang-format on */
    a += r * lda;
    y += r * ldy;
  }
}
#undef MB_T
#undef MB_S

static BF16_FN void rowsb_16(const uint32_t *a, int64_t lda, const uint32_t *pw, int64_t kn2, float *y, int64_t ldy,
                             const float *bias, float alpha, int first, int last, int64_t cols, int64_t rows) {
  rowsb(a, lda, pw, kn2, y, ldy, bias, alpha, first, last, cols, rows, 1, 16);
}

/* the last 32-wide panel with at most 16 of its columns B's: one vector a row */
static BF16_FN void rowsb_32h(const uint32_t *a, int64_t lda, const uint32_t *pw, int64_t kn2, float *y, int64_t ldy,
                              const float *bias, float alpha, int first, int last, int64_t cols, int64_t rows) {
  rowsb(a, lda, pw, kn2, y, ldy, bias, alpha, first, last, cols, rows, 1, 32);
}

static BF16_FN void rowsb_32(const uint32_t *a, int64_t lda, const uint32_t *pw, int64_t kn2, float *y, int64_t ldy,
                             const float *bias, float alpha, int first, int last, int64_t cols, int64_t rows) {
  rowsb(a, lda, pw, kn2, y, ldy, bias, alpha, first, last, cols, rows, 2, 32);
}

/* Pairs [j0, j0 + kn2) of panel pn for `rows` rows from row m0, then the fused tail on the
 * finished rows. */
static void panel_block(const mi__blis_mmp_t *p, int64_t m0, int64_t rows, float *y0, const float *res, int64_t pn,
                        int64_t j0, int64_t kn2) {
  int64_t N = p->n, nr = p->nr, k2 = (p->k + 1) / 2;
  int first = j0 == 0, last = j0 + kn2 >= k2;
  const uint32_t *a = p->ab + m0 * k2 + j0, *pw = p->pw + (pn * k2 + j0) * nr;
  const float *bias = p->bias ? p->bias + pn * nr : NULL;
  float *y = y0 + m0 * N + pn * nr;
  int64_t cols = N - pn * nr < nr ? N - pn * nr : nr;
  if (nr == 16) rowsb_16(a, k2, pw, kn2, y, N, bias, p->alpha, first, last, cols, rows);
  else if (cols <= 16)
    rowsb_32h(a, k2, pw, kn2, y, N, bias, p->alpha, first, last, cols, rows);
  else
    rowsb_32(a, k2, pw, kn2, y, N, bias, p->alpha, first, last, cols, rows);
  if ((p->act || res) && last) mi__blis_mmp_finish(p, y, res ? res + (y - y0) : NULL, N, cols, rows);
}

/* Panels [p0, p1) over rows [r0, r1): row blocks, then k blocks, then panels (rows of at most one
 * tile: each panel whole, as blis_mmpack.c's run_panels). */
static void run_panels(const mi__blis_mmp_t *p, int64_t r0, int64_t r1, float *y0, const float *res, int64_t p0,
                       int64_t p1) {
  int64_t k2 = (p->k + 1) / 2, m = r1 - r0, m0, j0, pn, blocks = (m + MB_MC - 1) / MB_MC, bk = 0;
  for (m0 = r0; m0 < r1; bk++) {
    int64_t rows = m / blocks + (bk < m % blocks);
    if (rows <= MB_MR1) {
      for (pn = p0; pn < p1; pn++)
        for (j0 = 0; j0 < k2; j0 += MB_KC2) panel_block(p, m0, rows, y0, res, pn, j0, k2 - j0 < MB_KC2 ? k2 - j0 : MB_KC2);
    } else {
      for (j0 = 0; j0 < k2; j0 += MB_KC2)
        for (pn = p0; pn < p1; pn++) panel_block(p, m0, rows, y0, res, pn, j0, k2 - j0 < MB_KC2 ? k2 - j0 : MB_KC2);
    }
    m0 += rows;
  }
}

typedef struct mmpb_task {
  const mi__blis_mmp_t *p;
  const float *a, *res;
  float *y;
  int64_t halves; /* 2: items are (panel, half of the rows) */
} mmpb_task_t;

static void convert_part(void *arg, int64_t i0, int64_t i1) {
  const mmpb_task_t *t = arg;
  convert_rows(t->p, t->a, i0, i1);
}

static void panels_part(void *arg, int64_t i0, int64_t i1) {
  const mmpb_task_t *t = arg;
  int64_t i, m = t->p->m, mid = m / 2;
  if (t->halves == 1) {
    run_panels(t->p, 0, m, t->y, t->res, i0, i1);
    return;
  }
  for (i = i0; i < i1; i++) {
    int64_t pn = i / 2, lo = i % 2;
    run_panels(t->p, lo ? mid : 0, lo ? m : mid, t->y, t->res, pn, pn + 1);
  }
}

void mi__blis_mmpb_run(const mi__blis_env_t *env, const mi__blis_mmp_t *p, const float *a, float *y,
                       const float *res) {
  mmpb_task_t t;
  t.p = p;
  t.a = a;
  t.y = y;
  t.res = res;
  /* Under 16 panels the items are (panel, half of the rows), so that 9 panels (N = 288) split
   * 9 : 9 halves over two threads, not 5 : 4 panels. Whatever the threads: the halves fix the
   * row tiles, whose heights fix each sum's chains, so the bits stay the same at any count. */
  t.halves = p->m >= 24 && p->panels < 16 ? 2 : 1;
  /* A rounded once per call (a row's conversion is about K / 16 instructions), then the panels */
  mi__blis_parallel(env, p->m, 1, p->k / 4 + 1, convert_part, &t);
  mi__blis_parallel(env, p->panels * t.halves, 1, p->m * p->k * p->nr / 2 / t.halves, panels_part, &t);
}
