/* blis_qftail256.c - the float tail of an integer conv (mi__blis_qv_ftail) in AVX2 lanes. */
#include <immintrin.h>

#include "blis_qgemm.h"

/* Eight values: the same ops lane-wise. vmaxps/vminps return their second operand when either is
 * NaN and when both are zeros, so max(v, 0) is v > 0 ? v : 0 (NaN and -0 give +0) and
 * max(lo, c), min(hi, c) are the clip's c < lo ? lo : c, c > hi ? hi : c (a NaN stays). Built
 * without FMA, so no multiply and add are fused into one rounding. */
__attribute__((target("avx2"))) void mi__blis_qv_ftail256(const int32_t *acc, int64_t n, float s, int has_b, float b,
                                                          const float *res, int relu, const mi__blis_hsw_t *hs,
                                                          float *y, float *lo, float *hi) {
  const __m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(b), z = _mm256_setzero_ps();
  const __m256 am = _mm256_set1_ps(hs->am), ac = _mm256_set1_ps(hs->ac), ha = _mm256_set1_ps(hs->a);
  const __m256 hlo = _mm256_set1_ps(hs->lo), hhi = _mm256_set1_ps(hs->hi), hd = _mm256_set1_ps(hs->d);
  __m256 l = z, h = z;
  float lb[8], hb[8], rl = 0.f, rh = 0.f;
  int64_t j;
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(acc + j))), vs);
    if (has_b) v = _mm256_add_ps(v, vb);
    if (res && !hs->res_post) v = _mm256_add_ps(v, _mm256_loadu_ps(res + j));
    if (relu) v = _mm256_max_ps(v, z);
    if (res && hs->res_post) v = _mm256_add_ps(v, _mm256_loadu_ps(res + j));
    if (hs->has_am) v = _mm256_mul_ps(v, am);
    if (hs->has_ac) v = _mm256_add_ps(v, ac);
    if (hs->on) {
      __m256 c = _mm256_min_ps(hhi, _mm256_max_ps(hlo, _mm256_add_ps(v, ha)));
      v = _mm256_mul_ps(v, c);
      v = hs->div ? _mm256_div_ps(v, hd) : _mm256_mul_ps(v, hd);
    }
    l = _mm256_min_ps(v, l); /* v < l ? v : l: a NaN leaves the range */
    h = _mm256_max_ps(v, h);
    _mm256_storeu_ps(y + j, v);
  }
  for (; j < n; j++) {
    float v = mi__blis_ftail_one(acc[j], s, has_b, b, res ? res + j : NULL, relu, hs);
    rl = v < rl ? v : rl;
    rh = v > rh ? v : rh;
    y[j] = v;
  }
  _mm256_storeu_ps(lb, l);
  _mm256_storeu_ps(hb, h);
  for (j = 0; j < 8; j++) {
    rl = lb[j] < rl ? lb[j] : rl;
    rh = hb[j] > rh ? hb[j] : rh;
  }
  *lo = rl;
  *hi = rh;
}
