/* blis_dynq512.h - DynamicQuantizeLinear's codes of one AVX-512 register of floats, the reference's
 * codes bit for bit; shared by the quantize pass (blis_qeltwise.c) and the depthwise byte kernel's
 * codes from registers (blis_qdw.c). Include only from functions built for AVX-512 (F, BW, VL, DQ). */
#ifndef MI_BLIS_DYNQ512_H
#define MI_BLIS_DYNQ512_H

#include <immintrin.h>

/* The quotient as x * fl(1 / s), the zero point in the same rounding: |x / s| <= 255 (s spans the
 * range of x), so p = fma(x, fl(1 / s), z) is within 2^-14 of the float quotient plus z and rounds
 * as it does unless it lies within 2^-12 of a half; r = round(p) (vcvtps2dq, half to even), and
 * |p - round(p)| (vreduceps, exact, one instruction where converting r back and subtracting took
 * two) says how near. A vector with such a lane (ties, rare; NaN) takes the division
 * itself, then the zero point, so every code is the reference's. vdivps was most of the quantize
 * pass. *r: the int32 codes before the clamp to 0..255; returns the mask of lanes away from a half. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq"))) __mmask16
mi__blis_dynq_lanes(__m512 v, __m512 rcp, __m512 zf, __m512 vs, __m512i vz, __m512i *r) {
  const __m512 near = _mm512_set1_ps(.5f - 1.f / 4096.f);
  __m512 p = _mm512_fmadd_ps(v, rcp, zf);
  __mmask16 ok;
  *r = _mm512_cvtps_epi32(p);
  ok = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_reduce_ps(p, _MM_FROUND_TO_NEAREST_INT)), near, _CMP_LE_OQ);
  if (ok != 0xffff) /* a NaN converts to INT_MIN and ends as 0, as the C loop's */
    *r = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_div_ps(v, vs), _MM_FROUND_CUR_DIRECTION)), vz);
  return ok;
}

#endif
