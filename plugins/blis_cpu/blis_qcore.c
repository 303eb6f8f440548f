/* blis_qcore.c - the integer core of the INT8 layers: int16 x int16 -> int32 GEMM (AVX-512, AVX2
 * or plain C from one body), requantization, and reading INT8/INT4 weights. */
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

typedef int32_t mi__v16i __attribute__((vector_size(64)));
typedef int16_t mi__v16h __attribute__((vector_size(32)));

/* acc[m][n] = sum_k a[m][k] * b[k][n], exactly (|a|, |b| <= 255 and K < 2^15 keep it in int32).
 * Rows m0..m1 only, so the pool can split over m. Register blocks of 4 rows x 16 columns; a
 * partial column block reads up to 15 values past b's last row (callers leave that slack) and
 * stores only its n - j0 lanes. */
static inline __attribute__((always_inline)) void qgemm_body(int64_t m0, int64_t m1, int64_t n,
                                                             int64_t k, const int16_t *a,
                                                             const int16_t *b, int32_t *acc) {
  int64_t i, j0, p, l;
  for (i = m0; i < m1; i += 4) {
    int64_t rows = m1 - i < 4 ? m1 - i : 4;
    for (j0 = 0; j0 < n; j0 += 16) {
      mi__v16i c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
      int64_t nl = n - j0 < 16 ? n - j0 : 16;
      const int16_t *a0 = a + i * k, *a1 = a0 + (rows > 1) * k, *a2 = a0 + (rows > 2) * 2 * k,
                    *a3 = a0 + (rows > 3) * 3 * k;
      for (p = 0; p < k; p++) {
        mi__v16h bh;
        mi__v16i bv;
        memcpy(&bh, b + p * n + j0, sizeof bh);
        bv = __builtin_convertvector(bh, mi__v16i);
        c0 += a0[p] * bv;
        c1 += a1[p] * bv;
        c2 += a2[p] * bv;
        c3 += a3[p] * bv;
      }
      for (l = 0; l < nl; l++) {
        acc[i * n + j0 + l] = c0[l];
        if (rows > 1) acc[(i + 1) * n + j0 + l] = c1[l];
        if (rows > 2) acc[(i + 2) * n + j0 + l] = c2[l];
        if (rows > 3) acc[(i + 3) * n + j0 + l] = c3[l];
      }
    }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void
qgemm_avx512(int64_t m0, int64_t m1, int64_t n, int64_t k, const int16_t *a, const int16_t *b,
             int32_t *acc) {
  qgemm_body(m0, m1, n, k, a, b, acc);
}
__attribute__((target("avx2,fma"))) static void qgemm_avx2(int64_t m0, int64_t m1, int64_t n,
                                                           int64_t k, const int16_t *a,
                                                           const int16_t *b, int32_t *acc) {
  qgemm_body(m0, m1, n, k, a, b, acc);
}
static void qgemm_c(int64_t m0, int64_t m1, int64_t n, int64_t k, const int16_t *a,
                    const int16_t *b, int32_t *acc) {
  qgemm_body(m0, m1, n, k, a, b, acc);
}

void mi__blis_qgemm(int32_t simd, int64_t m0, int64_t m1, int64_t n, int64_t k, const int16_t *a,
                    const int16_t *b, int32_t *acc) {
  if (simd == MI__SIMD_AVX512) qgemm_avx512(m0, m1, n, k, a, b, acc);
  else if (simd == MI__SIMD_AVX2) qgemm_avx2(m0, m1, n, k, a, b, acc);
  else qgemm_c(m0, m1, n, k, a, b, acc);
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
