/* blis_tr256.h - the 8x8 float transpose in AVX2 registers shared by the AVX2 kernels that move
 * between channel-major planes and channel lanes (blis_dw256cl.c, blis_wino6.c). */
#ifndef MI_BLIS_TR256_H
#define MI_BLIS_TR256_H

#include <immintrin.h>

/* r[i][j] becomes r[j][i]. */
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma"))) void mi__blis_tr8x8(__m256 *r) {
  __m256 t[8], u[8];
  int i;
#pragma GCC unroll 4
  for (i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (i = 0; i < 2; i++) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  /* u[j] (rows 0-3) and u[4 + j] (rows 4-7), 128-bit lane L: element 4L + j */
#pragma GCC unroll 4
  for (i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}

#endif
