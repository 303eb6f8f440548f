/* blis_mmv.h - a MatMul of a few rows of A by a runtime B, streamed (blis_mmv.c). */
#ifndef MI_BLIS_MMV_H
#define MI_BLIS_MMV_H

#include "blis_conv.h"

/* A of at most this many rows takes mi__blis_mmv (more rows reuse B enough for the packed tiles
 * or BLIS). */
#define MI__MMV_MAX_M 4

/* y [m][n] (row stride n) = alpha * a [m][k] (row stride k) times B, whose element [kk][j] is at
 * b + kk * rsb + j * csb with rsb == 1 or csb == 1, on the SIMD level `simd` (MI__SIMD_*). Each
 * sum runs over k in order within a vector lane; lanes are added at the end. */
void mi__blis_mmv(int32_t simd, int64_t m, int64_t k, int64_t n, float alpha, const float *a, const float *b,
                  int64_t rsb, int64_t csb, float *y);

#endif
