/* blis_epi512.h - the fused conv epilogue on one AVX-512 register of output pixels (bias/BN, then
 * the vector prefix of the chain: residual adds, Relu, Clip, HardSwish); shared by the packed
 * GEMM and the AVX-512 depthwise kernel. Include only from functions built for AVX-512. */
#ifndef MI_BLIS_EPI512_H
#define MI_BLIS_EPI512_H

#include <immintrin.h>

#include "blis_conv.h"

#define MI__AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))

/* Channel m of image n, pixels [p, p + 16) of its output row (lanes outside mask k are ignored). */
static inline __attribute__((always_inline)) MI__AVX512_FN __m512
mi__blis_epi512(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, int64_t p,
                __mmask16 k, __m512 v) {
  int32_t e;
  if (c->affine) v = _mm512_fmadd_ps(v, _mm512_set1_ps(c->scale[m]), _mm512_set1_ps(c->shift[m]));
  for (e = 0; e < c->pg_vec_ops; e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    switch (op->act) {
    case MI__ACT_NONE:
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, (const float *)t[op->tensor] +
                                                        (n * c->M + m) * c->OH * c->OW + p));
      break;
    case MI__ACT_RELU: v = _mm512_max_ps(v, _mm512_setzero_ps()); break;
    case MI__ACT_CLIP:
      v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(op->a)), _mm512_set1_ps(op->b));
      break;
    default: { /* MI__ACT_HSWISH */
      __m512 h = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.f)), _mm512_set1_ps(0.5f));
      h = _mm512_min_ps(_mm512_max_ps(h, _mm512_setzero_ps()), _mm512_set1_ps(1.f));
      v = _mm512_mul_ps(v, h);
      break;
    }
    }
  }
  return v;
}

#endif
