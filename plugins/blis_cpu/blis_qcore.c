/* blis_qcore.c - the integer core of the INT8 layers: int16 x int16 -> int32 GEMM (AVX-512, AVX2
 * or plain C from one body), requantization, and reading INT8/INT4 weights. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

/* acc[m][n] = sum_k a[m][k] * b[k][n], exactly, with k taken in pairs: b2 holds b as
 * [k/2][n][2] (pair p of column j at b2 + (p * n + j) * 2), a's rows hold the pairs contiguously
 * (row stride ka, even, zero past k). A pair of int16 products summed in int32 is exact here
 * (|a|, |b| <= 255), and so is the int32 sum (K < 2^15). Rows m0..m1 only, so the pool can split
 * over m; register blocks of 4 rows x 32 (AVX-512) or 16 (AVX2) columns, masked at the column tail
 * (no reads past b2's last pair).
 *  - AVX-512 VNNI: vpdpwssd (pair products and the add in one instruction, no saturation);
 *  - AVX-512BW / AVX2: vpmaddwd then vpaddd;
 *  - plain C: the same sums, scalar. */

#define QROWS 4

/* The AVX-512 body as a macro over the pair-dot step DOT(acc, b, a): the VNNI function must be the
 * only one built with the VNNI target (the compiler may fuse vpmaddwd + vpaddd into vpdpwssd). */
#define Q512_BODY(DOT)                                                                             \
  int64_t i, j0, p;                                                                                \
  for (i = m0; i < m1; i += QROWS) {                                                               \
    int64_t rows = m1 - i < QROWS ? m1 - i : QROWS;                                                \
    const int16_t *ar[QROWS];                                                                      \
    int r;                                                                                         \
    for (r = 0; r < QROWS; r++) ar[r] = a + (i + (r < rows ? r : 0)) * ka;                         \
    for (j0 = 0; j0 < n; j0 += 32) {                                                               \
      int64_t left = n - j0;                                                                       \
      __mmask16 k0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);                          \
      __mmask16 k1 = left >= 32 ? 0xffff : left > 16 ? (__mmask16)((1u << (left - 16)) - 1u) : 0;   \
      __m512i c0[QROWS], c1[QROWS];                                                                \
      _Pragma("GCC unroll 4") for (r = 0; r < QROWS; r++) c0[r] = c1[r] = _mm512_setzero_si512();  \
      for (p = 0; p < kp; p++) {                                                                   \
        const int16_t *bp = b2 + (p * n + j0) * 2;                                                 \
        __m512i b0 = _mm512_maskz_loadu_epi32(k0, bp), b1 = _mm512_maskz_loadu_epi32(k1, bp + 32); \
        _Pragma("GCC unroll 4") for (r = 0; r < QROWS; r++) {                                      \
          int32_t pr;                                                                              \
          __m512i av;                                                                              \
          memcpy(&pr, ar[r] + 2 * p, sizeof pr);                                                   \
          av = _mm512_set1_epi32(pr);                                                              \
          c0[r] = DOT(c0[r], b0, av);                                                              \
          c1[r] = DOT(c1[r], b1, av);                                                              \
        }                                                                                          \
      }                                                                                            \
      _Pragma("GCC unroll 4") for (r = 0; r < QROWS; r++) {                                        \
        if (r < rows) {                                                                            \
          _mm512_mask_storeu_epi32(acc + (i + r) * n + j0, k0, c0[r]);                             \
          if (k1) _mm512_mask_storeu_epi32(acc + (i + r) * n + j0 + 16, k1, c1[r]);                \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

#define DOT_VNNI(c, b, a) _mm512_dpwssd_epi32(c, b, a)
#define DOT_MADD512(c, b, a) _mm512_add_epi32(c, _mm512_madd_epi16(b, a))

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"))) static void
q512_vnni(int64_t m0, int64_t m1, int64_t n, int64_t kp, const int16_t *a, int64_t ka, const int16_t *b2,
          int32_t *acc) {
  Q512_BODY(DOT_VNNI)
}
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void
q512_madd(int64_t m0, int64_t m1, int64_t n, int64_t kp, const int16_t *a, int64_t ka, const int16_t *b2,
          int32_t *acc) {
  Q512_BODY(DOT_MADD512)
}

__attribute__((target("avx2,fma"))) static void q256_madd(int64_t m0, int64_t m1, int64_t n, int64_t kp,
                                                          const int16_t *a, int64_t ka,
                                                          const int16_t *b2, int32_t *acc) {
  int64_t i, j0, p;
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (i = m0; i < m1; i += QROWS) {
    int64_t rows = m1 - i < QROWS ? m1 - i : QROWS;
    const int16_t *ar[QROWS];
    int r;
    for (r = 0; r < QROWS; r++) ar[r] = a + (i + (r < rows ? r : 0)) * ka;
    for (j0 = 0; j0 < n; j0 += 16) {
      int64_t left = n - j0;
      __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 8 ? 8 : left)), iota);
      __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 16 ? 8 : left > 8 ? left - 8 : 0)), iota);
      __m256i c0[QROWS], c1[QROWS];
#pragma GCC unroll 4
      for (r = 0; r < QROWS; r++) c0[r] = c1[r] = _mm256_setzero_si256();
      for (p = 0; p < kp; p++) {
        const int16_t *bp = b2 + (p * n + j0) * 2;
        __m256i b0 = _mm256_maskload_epi32((const int *)bp, k0);
        __m256i b1 = _mm256_maskload_epi32((const int *)(bp + 16), k1);
#pragma GCC unroll 4
        for (r = 0; r < QROWS; r++) {
          int32_t pr;
          __m256i av;
          memcpy(&pr, ar[r] + 2 * p, sizeof pr);
          av = _mm256_set1_epi32(pr);
          c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(b0, av));
          c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(b1, av));
        }
      }
#pragma GCC unroll 4
      for (r = 0; r < QROWS; r++) {
        if (r < rows) {
          _mm256_maskstore_epi32((int *)(acc + (i + r) * n + j0), k0, c0[r]);
          if (left > 8) _mm256_maskstore_epi32((int *)(acc + (i + r) * n + j0 + 8), k1, c1[r]);
        }
      }
    }
  }
}

static void qc(int64_t m0, int64_t m1, int64_t n, int64_t kp, const int16_t *a, int64_t ka,
               const int16_t *b2, int32_t *acc) {
  int64_t i, j, p;
  for (i = m0; i < m1; i++)
    for (j = 0; j < n; j++) {
      int32_t sum = 0;
      for (p = 0; p < kp; p++)
        sum += a[i * ka + 2 * p] * b2[(p * n + j) * 2] + a[i * ka + 2 * p + 1] * b2[(p * n + j) * 2 + 1];
      acc[i * n + j] = sum;
    }
}

void mi__blis_qgemm(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kp, const int16_t *a,
                    int64_t ka, const int16_t *b2, int32_t *acc) {
  switch (dot) {
  case MI__QDOT_VNNI: q512_vnni(m0, m1, n, kp, a, ka, b2, acc); break;
  case MI__QDOT_AVX512: q512_madd(m0, m1, n, kp, a, ka, b2, acc); break;
  case MI__QDOT_AVX2: q256_madd(m0, m1, n, kp, a, ka, b2, acc); break;
  default: qc(m0, m1, n, kp, a, ka, b2, acc); break;
  }
}

int32_t mi__blis_qdot_level(uint32_t isa, int32_t simd) {
  if (simd == MI__SIMD_AVX512 && (isa & MI__ISA_AVX512VNNI) && __builtin_cpu_supports("avx512vnni"))
    return MI__QDOT_VNNI;
  if (simd == MI__SIMD_AVX512) return MI__QDOT_AVX512;
  if (simd == MI__SIMD_AVX2) return MI__QDOT_AVX2;
  return MI__QDOT_C;
}

/* Round half to even without a libm call: adding and removing 1.5 * 2^52 leaves the nearest
 * integer, ties to even, in the default rounding mode (what nearbyint does) for |v| < 2^51; v is
 * first clamped far outside every code range, which changes no code. */
#define MI__RNE_MAGIC 6755399441055744.0
static inline __attribute__((always_inline)) int32_t rne_code(double v, int32_t zy, int32_t lo,
                                                               int32_t hi) {
  double r;
  v = v < -1e9 ? -1e9 : v;
  v = v > 1e9 ? 1e9 : v;
  r = (v + MI__RNE_MAGIC) - MI__RNE_MAGIC + zy;
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  return (int32_t)r;
}

/* y = clamp(round_half_even(acc * mult + bias) + zy): the double-precision form npu-stub and
 * docs/abi.md specify. Per-channel mult/bias: element i uses mult[i * mstep] (mstep 0: one).
 * Branch-free min/max so the loop vectorises in the AVX2/AVX-512 builds below. */
static inline __attribute__((always_inline)) void requant_body(const int32_t *acc, int64_t n,
                                                               const double *mult,
                                                               const double *bias, int64_t mstep,
                                                               int32_t zy, int32_t is_u8, void *y) {
  int64_t i;
  double mu = mult[0], bi = bias[0];
  /* four plain loops (one scale or per column, UINT8 or INT8): no gathers, no branches */
  if (is_u8 && mstep == 0) {
    uint8_t *o = y;
    for (i = 0; i < n; i++) o[i] = (uint8_t)rne_code((double)acc[i] * mu + bi, zy, 0, 255);
  } else if (is_u8) {
    uint8_t *o = y;
    for (i = 0; i < n; i++) o[i] = (uint8_t)rne_code((double)acc[i] * mult[i] + bias[i], zy, 0, 255);
  } else if (mstep == 0) {
    int8_t *o = y;
    for (i = 0; i < n; i++) o[i] = (int8_t)rne_code((double)acc[i] * mu + bi, zy, -128, 127);
  } else {
    int8_t *o = y;
    for (i = 0; i < n; i++) o[i] = (int8_t)rne_code((double)acc[i] * mult[i] + bias[i], zy, -128, 127);
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void
requant_avx512(const int32_t *acc, int64_t n, const double *mult, const double *bias, int64_t mstep,
               int32_t zy, int32_t is_u8, void *y) {
  requant_body(acc, n, mult, bias, mstep, zy, is_u8, y);
}
__attribute__((target("avx2,fma"))) static void requant_avx2(const int32_t *acc, int64_t n,
                                                             const double *mult, const double *bias,
                                                             int64_t mstep, int32_t zy, int32_t is_u8,
                                                             void *y) {
  requant_body(acc, n, mult, bias, mstep, zy, is_u8, y);
}

void mi__blis_requant(int32_t simd, const int32_t *acc, int64_t n, const double *mult,
                      const double *bias, int64_t mstep, int32_t zy, int32_t is_u8, void *y) {
  if (simd == MI__SIMD_AVX512) requant_avx512(acc, n, mult, bias, mstep, zy, is_u8, y);
  else if (simd == MI__SIMD_AVX2) requant_avx2(acc, n, mult, bias, mstep, zy, is_u8, y);
  else requant_body(acc, n, mult, bias, mstep, zy, is_u8, y);
}

int32_t mi__blis_qweight(const mi_tensor_desc_t *w, int64_t i) {
  if (w->dtype == MI_DTYPE_INT4) {
    uint8_t byte = ((const uint8_t *)w->data)[i / 2];
    int32_t v = (i & 1) ? byte >> 4 : byte & 15; /* low nibble first */
    return v >= 8 ? v - 16 : v;
  }
  return ((const int8_t *)w->data)[i];
}

int mi__blis_qscale(const mi_tensor_desc_t *w, int64_t channels, int64_t c, double *s) {
  if (w->channel_count == 0) *s = (double)w->scale;
  else if ((int64_t)w->channel_count == channels && w->channel_scales) *s = (double)w->channel_scales[c];
  else return 0;
  return *s > 0.;
}

int mi__blis_is_q8(const mi_tensor_desc_t *t) {
  return t && (t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8);
}
