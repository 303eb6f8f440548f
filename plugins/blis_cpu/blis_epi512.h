/* blis_epi512.h - the fused conv epilogue on one AVX-512 register of output pixels (bias/BN, then
 * the vector prefix of the chain: residual adds and the lane-wise ops of mi__blis_epi_vec_op); shared by the packed
 * GEMM and the AVX-512 depthwise kernel. Include only from functions built for AVX-512. */
#ifndef MI_BLIS_EPI512_H
#define MI_BLIS_EPI512_H

#include <immintrin.h>

#include "blis_conv.h"

#define MI__AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))

/* Runs BODY(EK) with the epilogue kind `ek` (MI__EK_*) as a constant: one instance of a kernel
 * per chain kind it specialises, MI__EK_GENERIC for the rest. */
#define MI__BLIS_EK_SWITCH(ek, BODY)                  \
  switch (ek) {                                       \
  case MI__EK_NONE: BODY(MI__EK_NONE); break;         \
  case MI__EK_RELU: BODY(MI__EK_RELU); break;         \
  case MI__EK_CLIP: BODY(MI__EK_CLIP); break;         \
  case MI__EK_ADD: BODY(MI__EK_ADD); break;           \
  case MI__EK_ADD_RELU: BODY(MI__EK_ADD_RELU); break; \
  default: BODY(MI__EK_GENERIC); break;               \
  }

/* A 3x3 depthwise row kernel's instances: the caller's MI__DW3_BODY(S, EK) for the conv's stride
 * S (1, else 2) and epilogue kind EK, both compile-time (blis_dw512.c, blis_dw256.c). */
#define MI__BLIS_DW3_BODY1(EK) MI__DW3_BODY(1, EK)
#define MI__BLIS_DW3_BODY2(EK) MI__DW3_BODY(2, EK)
#define MI__BLIS_DW3_SWITCH(c)                           \
  do {                                                   \
    if ((c)->sh == 1) {                                  \
      MI__BLIS_EK_SWITCH((c)->pg_ek, MI__BLIS_DW3_BODY1) \
    } else {                                             \
      MI__BLIS_EK_SWITCH((c)->pg_ek, MI__BLIS_DW3_BODY2) \
    }                                                    \
  } while (0)

/* One lane-wise op of the chain (the kinds mi__blis_epi_vec_op accepts) on one register. */
static inline __attribute__((always_inline)) MI__AVX512_FN __m512 mi__blis_act512_op(const mi__blis_epi_op_t *op,
                                                                                     __m512 v) {
  switch (op->act) {
  case MI__ACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
  case MI__ACT_CLIP: return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(op->a)), _mm512_set1_ps(op->b));
  case MI__ACT_LEAKY: /* x >= 0 ? x : a * x, as the scalar code (NaN stays NaN) */
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, _mm512_set1_ps(op->a));
  case MI__ACT_HSIGMOID:
    return _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(v, _mm512_set1_ps(op->a), _mm512_set1_ps(op->b)),
                                       _mm512_setzero_ps()),
                         _mm512_set1_ps(1.f));
  case MI__ACT_AFFINE: return _mm512_fmadd_ps(v, _mm512_set1_ps(op->a), _mm512_set1_ps(op->b));
  default: { /* MI__ACT_HSWISH */
    __m512 h = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.f)), _mm512_set1_ps(0.5f));
    h = _mm512_min_ps(_mm512_max_ps(h, _mm512_setzero_ps()), _mm512_set1_ps(1.f));
    return _mm512_mul_ps(v, h);
  }
  }
}

/* Channel m of image n, pixels [p, p + 16) of its output row (lanes outside mask k are ignored). */
static inline __attribute__((always_inline)) MI__AVX512_FN __m512
mi__blis_epi512(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, int64_t p,
                __mmask16 k, __m512 v) {
  int32_t e;
  if (c->affine) v = _mm512_fmadd_ps(v, _mm512_set1_ps(c->scale[m]), _mm512_set1_ps(c->shift[m]));
  for (e = 0; e < c->pg_vec_ops; e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    if (op->act == MI__ACT_NONE)
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, (const float *)t[op->tensor] +
                                                        (n * c->M + m) * c->OH * c->OW + p));
    else
      v = mi__blis_act512_op(op, v);
  }
  return v;
}

/* The same op on one AVX2 register. */
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma"))) __m256
mi__blis_act256_op(const mi__blis_epi_op_t *op, __m256 v) {
  switch (op->act) {
  case MI__ACT_RELU: return _mm256_max_ps(v, _mm256_setzero_ps());
  case MI__ACT_CLIP: return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(op->a)), _mm256_set1_ps(op->b));
  case MI__ACT_LEAKY:
    return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(op->a)), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
  case MI__ACT_HSIGMOID:
    return _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(v, _mm256_set1_ps(op->a), _mm256_set1_ps(op->b)),
                                       _mm256_setzero_ps()),
                         _mm256_set1_ps(1.f));
  case MI__ACT_AFFINE: return _mm256_fmadd_ps(v, _mm256_set1_ps(op->a), _mm256_set1_ps(op->b));
  default: { /* MI__ACT_HSWISH */
    __m256 h = _mm256_add_ps(_mm256_div_ps(v, _mm256_set1_ps(6.f)), _mm256_set1_ps(0.5f));
    h = _mm256_min_ps(_mm256_max_ps(h, _mm256_setzero_ps()), _mm256_set1_ps(1.f));
    return _mm256_mul_ps(v, h);
  }
  }
}

/* In-register transpose of a 16x16 block: r[i][j] becomes r[j][i]. Unpacks and in-lane shuffles
 * transpose the 4x4 blocks inside each 128-bit lane, two rounds of 128-bit lane shuffles move the
 * blocks. */
static inline __attribute__((always_inline)) MI__AVX512_FN void mi__blis_tr16(__m512 *r) {
  __m512 t[16], u[16];
  int i, j;
#pragma GCC unroll 8
  for (i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (i = 0; i < 4; i++) {
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  /* u[4i + j], 128-bit lane L: element 4L + j of rows 4i..4i+3 */
#pragma GCC unroll 4
  for (j = 0; j < 4; j++) {
    __m512 v = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), w = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(v, v2, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(v, v2, 0xDD);
    r[4 + j] = _mm512_shuffle_f32x4(w, w2, 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(w, w2, 0xDD);
  }
}

#endif
