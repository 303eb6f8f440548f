/* blis_mmv.c - a MatMul of a few rows of A by a runtime B (a decoding step's attention: the query
 * of one token against the cached keys, its weights against the cached values): streamed from B
 * once, with no packing and no BLIS call. Through BLIS each head was a call of its own (1 x 36 by
 * 36 x 207 and 1 x 207 by 207 x 36 in Moonshine tiny's decoder: 22-28 us for 8 heads, 3-5
 * GFLOP/s). B's rows contiguous (csb 1): each row of A times B's rows, whole vectors of columns;
 * B's columns contiguous (rsb 1, a transposed B): dot products along k, four columns at a time. */
#include <immintrin.h>
#include <string.h>

#include "blis_mmv.h"

#define AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define AVX2_FN __attribute__((target("avx2,fma")))

/* ---- plain C */
static void rows_c(int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b, int64_t rsb,
                   float *y) {
  for (int64_t r = 0; r < m; r++) {
    float *yr = y + r * n;
    memset(yr, 0, (size_t)n * sizeof *yr);
    for (int64_t kk = 0; kk < k; kk++) {
      float av = a[r * k + kk];
      const float *br = b + kk * rsb;
      for (int64_t j = 0; j < n; j++) yr[j] += av * br[j];
    }
    for (int64_t j = 0; j < n; j++) yr[j] *= alpha;
  }
}

static void dots_c(int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b, int64_t csb,
                   float *y) {
  for (int64_t r = 0; r < m; r++)
    for (int64_t j = 0; j < n; j++) {
      float s = 0.f;
      for (int64_t kk = 0; kk < k; kk++) s += a[r * k + kk] * b[j * csb + kk];
      y[r * n + j] = alpha * s;
    }
}

/* ---- AVX-512 */
static inline __attribute__((always_inline)) AVX512_FN __mmask16 mask16(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                                   : 0;
}

/* Row r of y, 64 columns a pass (4 accumulators), B's rows read as vectors. */
static AVX512_FN void rows512(int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b,
                              int64_t rsb, float *y) {
  for (int64_t r = 0; r < m; r++)
    for (int64_t j0 = 0; j0 < n; j0 += 64) {
      __mmask16 km[4];
      __m512 acc[4];
      for (int v = 0; v < 4; v++) {
        km[v] = mask16(n - j0 - 16 * v);
        acc[v] = _mm512_setzero_ps();
      }
      for (int64_t kk = 0; kk < k; kk++) {
        __m512 av = _mm512_set1_ps(a[r * k + kk]);
        const float *br = b + kk * rsb + j0;
        for (int v = 0; v < 4; v++)
          if (km[v]) acc[v] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(km[v], br + 16 * v), acc[v]);
      }
      for (int v = 0; v < 4; v++)
        if (km[v]) _mm512_mask_storeu_ps(y + r * n + j0 + 16 * v, km[v], _mm512_mul_ps(acc[v], _mm512_set1_ps(alpha)));
    }
}

/* Four columns of row r at a time: four dot products along k sharing A's loads. */
static AVX512_FN void dots512(int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b,
                              int64_t csb, float *y) {
  for (int64_t r = 0; r < m; r++) {
    const float *ar = a + r * k;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int64_t kk = 0; kk < k; kk += 16) {
        __mmask16 km = mask16(k - kk);
        __m512 av = _mm512_maskz_loadu_ps(km, ar + kk);
        for (int c = 0; c < 4; c++)
          acc[c] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(km, b + (j + c) * csb + kk), acc[c]);
      }
      for (int c = 0; c < 4; c++) y[r * n + j + c] = alpha * _mm512_reduce_add_ps(acc[c]);
    }
    for (; j < n; j++) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t kk = 0; kk < k; kk += 16) {
        __mmask16 km = mask16(k - kk);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, ar + kk), _mm512_maskz_loadu_ps(km, b + j * csb + kk), acc);
      }
      y[r * n + j] = alpha * _mm512_reduce_add_ps(acc);
    }
  }
}

/* ---- AVX2: 8 lanes, masked loads and stores by a lane mask */
static inline __attribute__((always_inline)) AVX2_FN __m256i mask8(int64_t left) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 8 ? 8 : left < 0 ? 0
                                                                            : left)),
                            lane);
}

static inline __attribute__((always_inline)) AVX2_FN float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static AVX2_FN void rows256(int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b,
                            int64_t rsb, float *y) {
  for (int64_t r = 0; r < m; r++)
    for (int64_t j0 = 0; j0 < n; j0 += 32) {
      __m256i km[4];
      __m256 acc[4];
      for (int v = 0; v < 4; v++) {
        km[v] = mask8(n - j0 - 8 * v);
        acc[v] = _mm256_setzero_ps();
      }
      for (int64_t kk = 0; kk < k; kk++) {
        __m256 av = _mm256_set1_ps(a[r * k + kk]);
        const float *br = b + kk * rsb + j0;
        for (int v = 0; v < 4; v++)
          if (j0 + 8 * v < n) acc[v] = _mm256_fmadd_ps(av, _mm256_maskload_ps(br + 8 * v, km[v]), acc[v]);
      }
      for (int v = 0; v < 4; v++)
        if (j0 + 8 * v < n) _mm256_maskstore_ps(y + r * n + j0 + 8 * v, km[v], _mm256_mul_ps(acc[v], _mm256_set1_ps(alpha)));
    }
}

static AVX2_FN void dots256(int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b,
                            int64_t csb, float *y) {
  for (int64_t r = 0; r < m; r++) {
    const float *ar = a + r * k;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int64_t kk = 0; kk < k; kk += 8) {
        __m256i km = mask8(k - kk);
        __m256 av = _mm256_maskload_ps(ar + kk, km);
        for (int c = 0; c < 4; c++) acc[c] = _mm256_fmadd_ps(av, _mm256_maskload_ps(b + (j + c) * csb + kk, km), acc[c]);
      }
      for (int c = 0; c < 4; c++) y[r * n + j + c] = alpha * hsum8(acc[c]);
    }
    for (; j < n; j++) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t kk = 0; kk < k; kk += 8) {
        __m256i km = mask8(k - kk);
        acc = _mm256_fmadd_ps(_mm256_maskload_ps(ar + kk, km), _mm256_maskload_ps(b + j * csb + kk, km), acc);
      }
      y[r * n + j] = alpha * hsum8(acc);
    }
  }
}

void mi__blis_mmv(int32_t simd, int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b,
                  int64_t rsb, int64_t csb, float *y) {
  int rows = csb == 1;
  if (simd == MI__SIMD_AVX512) {
    if (rows) rows512(m, k, n, alpha, a, b, rsb, y);
    else
      dots512(m, k, n, alpha, a, b, csb, y);
  } else if (simd == MI__SIMD_AVX2) {
    if (rows) rows256(m, k, n, alpha, a, b, rsb, y);
    else
      dots256(m, k, n, alpha, a, b, csb, y);
  } else if (rows) {
    rows_c(m, k, n, alpha, a, b, rsb, y);
  } else {
    dots_c(m, k, n, alpha, a, b, csb, y);
  }
}
