/* blis_pgemm_bf16.c - conv.packed_gemm_bf16: conv.packed_gemm's AVX-512 "nv" tiles on BF16 operands
 * with FP32 sums (AVX512_BF16 vdpbf16ps), the weights packed once as BF16 pairs along k. */
#include <stdlib.h>

#include "blis_pgemm.h"

/* What the tiles compute, element for element: W and B rounded to BF16 (nearest even; FP32
 * denormals read as zero, as the conversion instruction does), each output the FP32 sum over k pairs
 * of w[k] * b[k] + w[k+1] * b[k+1] (products of two BF16 values are exact in FP32). One vdpbf16ps
 * does 32 multiply-adds where an FP32 FMA does 16; the epilogue is conv.packed_gemm's. */
#define BF16_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")))

/* k pairs of B converted per block on the stack: [pair][32 pixels] as 32-bit BF16 pairs (128 KiB,
 * K up to 2048); with more k on the heap, once per call and thread. Where that allocation fails the
 * tiles convert their block PGB_KP pairs at a time, once per tile rather than once per block. */
#define PGB_KP 1024

uint16_t mi__blis_f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);                                /* denormal or zero: signed zero */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

uint64_t mi__blis_pgb_packed_pairs(const mi__blis_conv_t *c) {
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW;
  return (uint64_t)(c->G * ((mg + MR512 - 1) / MR512) * MR512 * ((K + 1) / 2));
}

void mi__blis_pgb_pack(mi__blis_conv_t *c, const float *w) {
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW, np = (mg + MR512 - 1) / MR512, k2 = (K + 1) / 2;
  int64_t g, pnl, j, i;
  /* [group][panel][k pair][row]: low half w[m][2j], high half w[m][2j + 1] (zero past K and M) */
  for (g = 0; g < c->G; g++)
    for (pnl = 0; pnl < np; pnl++)
      for (j = 0; j < k2; j++)
        for (i = 0; i < MR512; i++) {
          int64_t m = pnl * MR512 + i, src = (g * mg + m) * K + 2 * j;
          uint32_t lo = m < mg ? mi__blis_f2bf(w[src]) : 0, hi = m < mg && 2 * j + 1 < K ? mi__blis_f2bf(w[src + 1]) : 0;
          c->packed_b[((g * np + pnl) * k2 + j) * MR512 + i] = lo | hi << 16;
        }
}

/* Row k of B (k < K) at pixel offset o. */
static inline __attribute__((always_inline)) const float *pgb_row(const pg_call_t *q, int64_t k, int64_t o) {
  return q->koff ? q->b + q->koff[k] + o : q->b + k * q->ldb + o;
}

/* Pairs [j0, j0 + n2) of the pixel block (B at bo0 / bo1, lanes k0 / k1) into bp[pair][32]: lane p
 * of each half holds (b[2j][p], b[2j + 1][p]) rounded to BF16, zero past K and outside the masks. */
static inline __attribute__((always_inline)) BF16_FN void pgb_convert(const pg_call_t *q, int64_t j0, int64_t n2,
                                                                      int64_t bo0, int64_t bo1, int two,
                                                                      __mmask16 k0, __mmask16 k1, uint32_t *bp) {
  /* cvtne2ps gives [16 of row 2j | 16 of row 2j+1]; the permute interleaves them per pixel */
  static const uint16_t ix[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                  8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i perm = _mm512_loadu_si512(ix);
  int64_t j;
  for (j = 0; j < n2; j++) {
    int64_t k = 2 * (j0 + j);
    int odd = k + 1 < q->K;
    const float *r0 = pgb_row(q, k, 0), *r1 = odd ? pgb_row(q, k + 1, 0) : NULL;
    /* a gate Mul taken over (blis_convgate.c): x * gate rounded as the Mul's FP32 result would be */
    const __m512 ga = _mm512_set1_ps(q->gate ? q->gate[k / q->gkk] : 1.f);
    const __m512 gb = _mm512_set1_ps(q->gate && odd ? q->gate[(k + 1) / q->gkk] : 1.f);
    __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(k0, r0 + bo0), ga);
    __m512 b = odd ? _mm512_mul_ps(_mm512_maskz_loadu_ps(k0, r1 + bo0), gb) : _mm512_setzero_ps();
    _mm512_store_si512(bp + j * 32, _mm512_permutexvar_epi16(perm, (__m512i)_mm512_cvtne2ps_pbh(b, a)));
    if (two) {
      a = _mm512_mul_ps(_mm512_maskz_loadu_ps(k1, r0 + bo1), ga);
      b = odd ? _mm512_mul_ps(_mm512_maskz_loadu_ps(k1, r1 + bo1), gb) : _mm512_setzero_ps();
      _mm512_store_si512(bp + j * 32 + 16, _mm512_permutexvar_epi16(perm, (__m512i)_mm512_cvtne2ps_pbh(b, a)));
    }
  }
}

/* Pairs [j0, j0 + n2) of row panel mp on the converted block bp into the sums c0 / c1. */
static inline __attribute__((always_inline)) BF16_FN void pgb_sums(const pg_call_t *q, int64_t mp, int64_t j0,
                                                                   int64_t n2, const uint32_t *bp, int two,
                                                                   __m512 *c0, __m512 *c1) {
  const uint32_t *a = q->pwb + (mp * ((q->K + 1) / 2) + j0) * MR512;
  int64_t j;
  int i;
  for (j = 0; j < n2; j++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(bp + j * 32);
    __m512bh b1 = two ? (__m512bh)_mm512_load_si512(bp + j * 32 + 16) : b0;
#pragma GCC unroll 8
    for (i = 0; i < MR512; i++) {
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[j * MR512 + i]);
      c0[i] = _mm512_dpbf16_ps(c0[i], av, b0);
      if (two) c1[i] = _mm512_dpbf16_ps(c1[i], av, b1);
    }
  }
}

static inline __attribute__((always_inline)) __mmask16 pgb_mask(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0
                                                    : (__mmask16)((1u << left) - 1u);
}

/* One tile: row panel mp of the pixel block whose B is at bo0 / bo1 and output at po0 / po1.
 * bp: the whole block converted (K <= 2 * PGB_KP), else NULL and the tile converts into buf. */
static inline __attribute__((always_inline)) BF16_FN void
pgb_tile(const pg_call_t *q, int64_t mp, int64_t bo0, int64_t bo1, int64_t po0, int64_t po1, int two, __mmask16 k0,
         __mmask16 k1, const uint32_t *bp, uint32_t *buf, int ek, int full) {
  __m512 c0[MR512], c1[MR512];
  int64_t k2 = (q->K + 1) / 2, j0;
  int i;
#pragma GCC unroll 8
  for (i = 0; i < MR512; i++) c0[i] = c1[i] = _mm512_setzero_ps();
  if (bp) {
    pgb_sums(q, mp, 0, k2, bp, two, c0, c1);
  } else {
    for (j0 = 0; j0 < k2; j0 += PGB_KP) {
      int64_t n2 = k2 - j0 < PGB_KP ? k2 - j0 : PGB_KP;
      pgb_convert(q, j0, n2, bo0, bo1, two, k0, k1, buf);
      pgb_sums(q, mp, j0, n2, buf, two, c0, c1);
    }
  }
  /* full tiles on B rows at a fixed stride prefetch their output rows, as nv512_tile */
  pg_store512(q, mp, po0, po1, two, k0, k1, ek, full, full && !q->koff, c0, c1);
}

/* Where pixel block blk reads B and writes its outputs: 32 pixels, or two row segments of the
 * flat planes (as nv512). */
static void pgb_block(const pg_call_t *q, int64_t blk, int64_t *bo, int64_t *po, __mmask16 *k, int *two) {
  if (q->seg) {
    const int64_t *s0 = q->seg + 6 * blk, *s1 = s0 + 3;
    *two = 2 * blk + 1 < q->nseg;
    bo[0] = s0[0];
    po[0] = s0[1];
    k[0] = pgb_mask(s0[2]);
    bo[1] = *two ? s1[0] : 0;
    po[1] = *two ? s1[1] : 0;
    k[1] = *two ? pgb_mask(s1[2]) : 0;
  } else {
    int64_t col = blk * 32, left = q->N - col;
    *two = left > 16;
    bo[0] = col;
    bo[1] = col + 16;
    po[0] = q->p0 + col;
    po[1] = q->p0 + col + 16;
    k[0] = pgb_mask(left);
    k[1] = pgb_mask(left - 16);
  }
}

/* Full tiles (both vectors, every lane) are their own instance: no masks, no test of `two`. */
#define PGB_EK(EK)                                                                                        \
  do {                                                                                                    \
    if (two && k[0] == 0xffff && k[1] == 0xffff)                                                          \
      pgb_tile(q, mp, bo[0], bo[1], po[0], po[1], 1, 0xffff, 0xffff, whole ? blk_b : NULL, blk_b, EK, 1); \
    else                                                                                                  \
      pgb_tile(q, mp, bo[0], bo[1], po[0], po[1], two, k[0], k[1], whole ? blk_b : NULL, blk_b, EK, 0);   \
  } while (0)
BF16_FN void mi__blis_pgb_items(const pg_call_t *q, int64_t i0, int64_t i1) {
  uint32_t bp[PGB_KP * 32] __attribute__((aligned(64)));
  int64_t i, last = -1, bo[2] = {0, 0}, po[2] = {0, 0}, k2 = (q->K + 1) / 2;
  __mmask16 k[2] = {0, 0};
  /* more k than the stack holds: the whole block on the heap (128 bytes a pair) */
  uint32_t *heap = k2 > PGB_KP ? aligned_alloc(64, (size_t)k2 * 32 * sizeof *heap) : NULL, *blk_b = heap ? heap : bp;
  int two = 0, whole = k2 <= PGB_KP || heap;
  /* items row panel fastest: each block converted once for all the panels this call runs on it */
  for (i = i0; i < i1; i++) {
    int64_t blk = i / q->mp_n, mp = i % q->mp_n;
    if (blk != last) {
      pgb_block(q, blk, bo, po, k, &two);
      if (whole) pgb_convert(q, 0, k2, bo[0], bo[1], two, k[0], k[1], blk_b);
      last = blk;
    }
    MI__BLIS_EK_SWITCH(q->c->pg_ek, PGB_EK)
  }
  free(heap);
}
#undef PGB_EK

/* Pair j of both panels (a1: the second, or a0 again where there is none: its lanes are not
 * stored) times pixel px's pair of B into acc[px]. */
static inline __attribute__((always_inline)) BF16_FN void pgb_mv_pair(const uint32_t *a0, const uint32_t *a1,
                                                                      const uint32_t *bp, int64_t j, const int npx,
                                                                      __m512 *acc) {
  __m256i lo = _mm256_loadu_si256((const __m256i *)(a0 + j * MR512));
  __m512bh a = (__m512bh)_mm512_inserti64x4(_mm512_castsi256_si512(lo),
                                            _mm256_loadu_si256((const __m256i *)(a1 + j * MR512)), 1);
  const uint32_t *b = bp + j * 32;
  int px;
  for (px = 0; px < npx; px++) acc[px] = _mm512_dpbf16_ps(acc[px], a, (__m512bh)_mm512_set1_epi32((int)b[px]));
}

/* Few pixels (an STFT as a strided 1-D conv: 5 frames of 512 taps; the last planes of a
 * network): the "nv" tiles hold 16 pixels a vector, so 5 pixels used 5 of 16 lanes, and
 * oww_melspectrogram's two 257-channel convs ran slower in BF16 than in FP32 (its model-wide
 * `bf16` 0.041 ms against the default's 0.031). Here two row panels (16 channels, the pairs of
 * both read side by side) are the lanes, each pair of k one vdpbf16ps a pixel on a broadcast BF16
 * pair of B. With one accumulator a pixel the 5 chains waited on vdpbf16ps's latency (13.9 us a
 * conv, slower than FP32's 12.9): the pairs go round `ph` phases, ph * npx chains (9-16), summed
 * in a fixed order at the end (the same bits at any thread count). */
static inline __attribute__((always_inline)) BF16_FN void pgb_mv_sums(const uint32_t *a0, const uint32_t *a1,
                                                                      const uint32_t *bp, int64_t k2, const int npx,
                                                                      const int ph, __m512 *out) {
  __m512 acc[4][MI__PGB_MV_PIX];
  int64_t j = 0;
  int f, px;
  for (f = 0; f < ph; f++)
    for (px = 0; px < npx; px++) acc[f][px] = _mm512_setzero_ps();
  /* whole rounds of ph pairs unrolled (no bound test inside), then the pairs left in phases
   * 0.. (the same phase a pair would take in a longer round: the order of the sums is fixed) */
  for (; j + ph <= k2; j += ph)
    for (f = 0; f < ph; f++) pgb_mv_pair(a0, a1, bp, j + f, npx, acc[f]);
  for (f = 0; j + f < k2; f++) pgb_mv_pair(a0, a1, bp, j + f, npx, acc[f]);
  for (px = 0; px < npx; px++) {
    __m512 v = acc[0][px];
    for (f = 1; f < ph; f++) v = _mm512_add_ps(v, acc[f][px]);
    out[px] = v;
  }
}

static BF16_FN void pgb_mv_tile(const pg_call_t *q, int64_t mp, const uint32_t *bp, int64_t npx) {
  __m512 acc[MI__PGB_MV_PIX];
  int64_t k2 = (q->K + 1) / 2, px, r, rows = q->mg - mp * MR512;
  const uint32_t *a0 = q->pwb + mp * k2 * MR512, *a1 = mp + 1 < q->mp_n ? a0 + k2 * MR512 : a0;
  switch (npx) { /* each count its own instance: the chains in registers */
  case 1: pgb_mv_sums(a0, a1, bp, k2, 1, 4, acc); break;
  case 2: pgb_mv_sums(a0, a1, bp, k2, 2, 4, acc); break;
  case 3: pgb_mv_sums(a0, a1, bp, k2, 3, 4, acc); break;
  case 4: pgb_mv_sums(a0, a1, bp, k2, 4, 3, acc); break;
  case 5: pgb_mv_sums(a0, a1, bp, k2, 5, 3, acc); break;
  case 6: pgb_mv_sums(a0, a1, bp, k2, 6, 2, acc); break;
  case 7: pgb_mv_sums(a0, a1, bp, k2, 7, 2, acc); break;
  default: pgb_mv_sums(a0, a1, bp, k2, 8, 2, acc); break;
  }
  if (rows > 16) rows = 16;
  /* lane r of pixel px's sums is row mp * 8 + r; then each row's whole epilogue */
  for (px = 0; px < npx; px++) {
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[px]);
    for (r = 0; r < rows; r++) q->y[(mp * MR512 + r) * q->ldc + q->p0 + px] = lanes[r];
  }
  for (r = 0; q->epi && r < rows; r++) {
    int64_t m = mp * MR512 + r;
    mi__blis_epi_tail(q->c, q->t, q->n, q->m0 + m, q->p0, q->y + m * q->ldc + q->p0, npx, 0, 1);
  }
}

BF16_FN void mi__blis_pgb_mv_items(const pg_call_t *q, int64_t i0, int64_t i1) {
  uint32_t *bp, stack[PGB_KP * 32] __attribute__((aligned(64)));
  int64_t i, bo[2] = {0, 0}, po[2] = {0, 0}, k2 = (q->K + 1) / 2;
  __mmask16 k[2] = {0, 0};
  int two = 0;
  /* B's pairs once per call: [pair][32] (lanes past N zero) */
  bp = k2 > PGB_KP ? aligned_alloc(64, (size_t)k2 * 32 * sizeof *bp) : stack;
  if (!bp) { /* no memory for a long k: the "nv" tiles, which convert in slices */
    mi__blis_pgb_items(q, i0 * 2, i1 * 2 < q->mp_n ? i1 * 2 : q->mp_n);
    return;
  }
  pgb_block(q, 0, bo, po, k, &two);
  pgb_convert(q, 0, k2, bo[0], bo[1], two, k[0], k[1], bp);
  for (i = i0; i < i1; i++) pgb_mv_tile(q, 2 * i, bp, q->N);
  if (bp != stack) free(bp);
}
