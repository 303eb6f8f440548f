/* blis_vmath.c - vectorised exp, erf, tanh, log and the activations built on them (Gelu, Erf, Sigmoid,
 * Tanh, Exp, Log) for AVX-512 and AVX2; the plain C level keeps libm (blis_eltwise.c).
 *
 * exp: n = round(x log2 e), r = x - n ln 2 (two-part ln 2), Cephes' degree-6 polynomial for
 * e^r, times 2^n built in the exponent bits; x is clamped to [-87.3, 88.3] (e^-87.3 = 1.2e-38, a
 * flush the callers do not see: softmax sums, sigmoid and tanh tails). Relative error about 2 ulp.
 * erf: a rational function on [-4, 4] (ERF_RATIONAL below), absolute error under 3.4e-7.
 * tanh(x) = 1 - 2 / (e^2x + 1), x clamped to [-9, 9] (tanh(9) rounds to 1.0f), and sigmoid(x) =
 * 1 / (1 + e^-x), 0 below x = -87: neither divides by e^88 into a subnormal quotient, which cost a
 * microcode assist per lane on Intel (an LSTM cell's saturated gates: a 128-wide Tanh took 2 us
 * instead of 0.2). The true values there are under 1.7e-38.
 * log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log x = e ln 2 + log(1 + f), f = m - 1, by Cephes'
 * logf (degree-8 polynomial, two-part ln 2), about 1 ulp; zero gives -inf, negatives NaN, +inf
 * itself. AVX-512 splits x with vgetexpps / vgetmantps (subnormals too); AVX2 from the bits, and
 * a vector with a lane that is not a positive normal number takes libm for its lanes. These differ from libm by a few ulp, well inside the 1e-4 relative
 * L2 the plugin is held to (test_blis_ops checks 1e-6 against double precision). */
#include <immintrin.h>
#include <math.h>

#include "blis_conv.h"

#define AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define AVX2_FN __attribute__((target("avx2,fma")))

/* ---- AVX-512 */

static inline __attribute__((always_inline)) AVX512_FN __m512 exp512(__m512 x) {
  __m512 n, r, p;
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  /* p * 2^n in one vscalefps: n is in [-126, 127] after the clamp, so 2^n is a normal float and
   * the product the one rounding of p times the exponent bits built by hand */
  return _mm512_scalef_ps(p, n);
}

/* erf as a rational function of x on [-4, 4] (odd numerator of degree 13 over an even denominator
 * of degree 8: the float coefficients Eigen and XLA use), |erf| clamped to 1; outside, +-1 (erf(4)
 * rounds to 1.0f). One divide and twelve FMAs where Abramowitz & Stegun 7.1.26 took a divide, an
 * exp and eight more: Gelu over 207 x 1152 floats 107 -> 76 us at AVX-512 (Zen 4). Absolute
 * error under 3.4e-7 against double erf (A&S: 5.4e-7 in float arithmetic), but not relative to
 * 1 - |erf| in the tails: Gelu(x) near x = -5.5 is up to 0.93e-6 off a value under 1e-7. */
#define ERF_RATIONAL(T, SET, MUL, FMA, MIN, MAX, DIV, a)                     \
  do {                                                                       \
    T x_ = MIN(MAX(a, SET(-4.f)), SET(4.f)), x2_ = MUL(x_, x_), p_, q_;      \
    p_ = FMA(x2_, SET(-2.72614225801306e-10f), SET(2.77068142495902e-08f));  \
    p_ = FMA(x2_, p_, SET(-2.10102402082508e-06f));                          \
    p_ = FMA(x2_, p_, SET(-5.69250639462346e-05f));                          \
    p_ = FMA(x2_, p_, SET(-7.34990630326855e-04f));                          \
    p_ = FMA(x2_, p_, SET(-2.95459980854025e-03f));                          \
    p_ = FMA(x2_, p_, SET(-1.60960333262415e-02f));                          \
    p_ = MUL(x_, p_);                                                        \
    q_ = FMA(x2_, SET(-1.45660718464996e-05f), SET(-2.13374055278905e-04f)); \
    q_ = FMA(x2_, q_, SET(-1.68282697438203e-03f));                          \
    q_ = FMA(x2_, q_, SET(-7.37332916720468e-03f));                          \
    q_ = FMA(x2_, q_, SET(-1.42647390514189e-02f));                          \
    a = MIN(MAX(DIV(p_, q_), SET(-1.f)), SET(1.f));                          \
  } while (0)

static inline __attribute__((always_inline)) AVX512_FN __m512 erf512(__m512 x) {
  ERF_RATIONAL(__m512, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_min_ps, _mm512_max_ps, _mm512_div_ps, x);
  return x;
}

static inline __attribute__((always_inline)) AVX512_FN __m512 tanh512(__m512 x) {
  __m512 e;
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-9.f)), _mm512_set1_ps(9.f));
  e = exp512(_mm512_add_ps(x, x));
  return _mm512_sub_ps(_mm512_set1_ps(1.f), _mm512_div_ps(_mm512_set1_ps(2.f), _mm512_add_ps(e, _mm512_set1_ps(1.f))));
}

/* Cephes' logf polynomial: log(1 + f) - f + f^2 / 2 over f^3, for f in [sqrt(1/2) - 1, sqrt(2) - 1]. */
#define LOG_POLY(FMA, SET, f, z, p)        \
  do {                                     \
    p = SET(7.0376836292E-2f);             \
    p = FMA(p, f, SET(-1.1514610310E-1f)); \
    p = FMA(p, f, SET(1.1676998740E-1f));  \
    p = FMA(p, f, SET(-1.2420140846E-1f)); \
    p = FMA(p, f, SET(1.4249322787E-1f));  \
    p = FMA(p, f, SET(-1.6668057665E-1f)); \
    p = FMA(p, f, SET(2.0000714765E-1f));  \
    p = FMA(p, f, SET(-2.4999993993E-1f)); \
    p = FMA(p, f, SET(3.3333331174E-1f));  \
  } while (0)

static inline __attribute__((always_inline)) AVX512_FN __m512 log512(__m512 x) {
  __m512 e = _mm512_getexp_ps(x), m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan), f, z, p, y;
  __mmask16 big = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356237f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5f));
  e = _mm512_mask_add_ps(e, big, e, _mm512_set1_ps(1.f));
  f = _mm512_sub_ps(m, _mm512_set1_ps(1.f));
  z = _mm512_mul_ps(f, f);
  LOG_POLY(_mm512_fmadd_ps, _mm512_set1_ps, f, z, p);
  y = _mm512_mul_ps(_mm512_mul_ps(p, f), z);
  y = _mm512_fmadd_ps(e, _mm512_set1_ps(-2.12194440e-4f), y);
  y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
  y = _mm512_add_ps(f, y);
  y = _mm512_fmadd_ps(e, _mm512_set1_ps(0.693359375f), y);
  /* +-0: -inf (getmant of -0 is no NaN); +inf: itself (getmant gives NaN) */
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), _mm512_set1_ps(-INFINITY));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ), x);
}

static inline __attribute__((always_inline)) AVX512_FN __m512 act512(int32_t kind, __m512 v) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.f);
  switch (kind) {
  case MI__ACT_EXP: return exp512(v);
  case MI__ACT_LOG: return log512(v);
  case MI__ACT_ERF: return erf512(v);
  case MI__ACT_TANH: return tanh512(v);
  case MI__ACT_SIGMOID: {
    __m512 y = _mm512_max_ps(v, _mm512_set1_ps(-87.f));
    y = _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), y))));
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(v, _mm512_set1_ps(-87.f), _CMP_LT_OQ), _mm512_setzero_ps());
  }
  case MI__ACT_GELU:
    return _mm512_mul_ps(_mm512_mul_ps(half, v),
                         _mm512_add_ps(one, erf512(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f)))));
  default: { /* MI__ACT_GELU_TANH */
    __m512 u = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), v), _mm512_mul_ps(v, v));
    u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_add_ps(v, u));
    return _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, tanh512(u)));
  }
  }
}

AVX512_FN static void act_avx512(int32_t kind, float *x, int64_t n) {
  int64_t i;
  for (i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, k, act512(kind, _mm512_maskz_loadu_ps(k, x + i)));
  }
}

/* A row whose max is not finite (every value -inf: a query whose keys are all masked by -inf; a
 * +inf or NaN) as the plain formula gives it, e^(x - max) / sum: NaN throughout where the max is
 * -inf or +inf, as ONNX Runtime and the reference interpreter give it. The vector exp clamps its
 * argument, and its max with the -87.3 bound turned x - max = NaN into -87.3: such a row came
 * out uniform (1 / len). */
static void softmax_nonfinite(const float *x, float *y, int64_t len, float m) {
  float sum = 0.f;
  int64_t i;
  for (i = 0; i < len; i++) sum += (y[i] = expf(x[i] - m));
  for (i = 0; i < len; i++) y[i] /= sum;
}

/* Softmax row: y = e^(x - max) * (1 / sum), contiguous, over len values. The reciprocal once a row
 * and a multiply (one rounding more than the quotient, under 1.5 ulp): a 512-bit divide per
 * vector took about a tenth of an attention head's 207-wide rows (Moonshine's encoder: 8 x 207
 * rows of 207, 143 -> 128 us with the exponent by vscalefps below, bench at 1 thread). */
AVX512_FN static void softmax_avx512_from(const float *x, float *y, int64_t len, float m);

AVX512_FN static void softmax_avx512(const float *x, float *y, int64_t len) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  int64_t i;
  for (i = 0; i < len; i += 16) {
    __mmask16 k = len - i >= 16 ? 0xffff : (__mmask16)((1u << (len - i)) - 1u);
    mx = _mm512_mask_max_ps(mx, k, mx, _mm512_maskz_loadu_ps(k, x + i));
  }
  softmax_avx512_from(x, y, len, _mm512_reduce_max_ps(mx));
}

/* The row's last two passes given its max m: e^(x - m), their sum, the scaling. */
AVX512_FN static void softmax_avx512_from(const float *x, float *y, int64_t len, float m) {
  __m512 s = _mm512_setzero_ps();
  float sum;
  int64_t i;
  if (!(m > -INFINITY && m < INFINITY)) {
    softmax_nonfinite(x, y, len, m);
    return;
  }
  for (i = 0; i < len; i += 16) {
    __mmask16 k = len - i >= 16 ? 0xffff : (__mmask16)((1u << (len - i)) - 1u);
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_set1_ps(m)));
    e = _mm512_maskz_mov_ps(k, e);
    s = _mm512_add_ps(s, e);
    _mm512_mask_storeu_ps(y + i, k, e);
  }
  sum = _mm512_reduce_add_ps(s);
  for (i = 0; i < len; i += 16) {
    __mmask16 k = len - i >= 16 ? 0xffff : (__mmask16)((1u << (len - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), _mm512_set1_ps(1.f / sum)));
  }
}

/* ---- AVX2: the same formulas on 8 lanes; tails go through a stack copy. */

static inline __attribute__((always_inline)) AVX2_FN __m256 exp256(__m256 x) {
  __m256 n, r, p;
  __m256i e;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static inline __attribute__((always_inline)) AVX2_FN __m256 erf256(__m256 x) {
  ERF_RATIONAL(__m256, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_min_ps, _mm256_max_ps, _mm256_div_ps, x);
  return x;
}

static inline __attribute__((always_inline)) AVX2_FN __m256 tanh256(__m256 x) {
  __m256 e;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-9.f)), _mm256_set1_ps(9.f));
  e = exp256(_mm256_add_ps(x, x));
  return _mm256_sub_ps(_mm256_set1_ps(1.f), _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, _mm256_set1_ps(1.f))));
}

/* Positive normal lanes only (the caller checks): e and m from the bits. */
static inline __attribute__((always_inline)) AVX2_FN __m256 log256(__m256 x) {
  __m256i b = _mm256_castps_si256(x);
  __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(127)));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
  __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356237f), _CMP_GT_OQ), f, z, p, y;
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
  e = _mm256_add_ps(e, _mm256_and_ps(big, _mm256_set1_ps(1.f)));
  f = _mm256_sub_ps(m, _mm256_set1_ps(1.f));
  z = _mm256_mul_ps(f, f);
  LOG_POLY(_mm256_fmadd_ps, _mm256_set1_ps, f, z, p);
  y = _mm256_mul_ps(_mm256_mul_ps(p, f), z);
  y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  y = _mm256_add_ps(f, y);
  return _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), y);
}

/* Log on 8 lanes: libm for a vector with a zero, negative, subnormal, infinite or NaN lane. */
static inline __attribute__((always_inline)) AVX2_FN __m256 log256_safe(__m256 x) {
  __m256 ok = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_GE_OQ),
                            _mm256_cmp_ps(x, _mm256_set1_ps(3.40282347e+38f), _CMP_LE_OQ));
  if (_mm256_movemask_ps(ok) != 0xff) {
    float t[8];
    int j;
    _mm256_storeu_ps(t, x);
    for (j = 0; j < 8; j++) t[j] = logf(t[j]);
    return _mm256_loadu_ps(t);
  }
  return log256(x);
}

static inline __attribute__((always_inline)) AVX2_FN __m256 act256(int32_t kind, __m256 v) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f);
  switch (kind) {
  case MI__ACT_EXP: return exp256(v);
  case MI__ACT_LOG: return log256_safe(v);
  case MI__ACT_ERF: return erf256(v);
  case MI__ACT_TANH: return tanh256(v);
  case MI__ACT_SIGMOID: {
    __m256 y = _mm256_max_ps(v, _mm256_set1_ps(-87.f));
    y = _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), y))));
    return _mm256_andnot_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-87.f), _CMP_LT_OQ), y);
  }
  case MI__ACT_GELU:
    return _mm256_mul_ps(_mm256_mul_ps(half, v),
                         _mm256_add_ps(one, erf256(_mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)))));
  default: {
    __m256 u = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), v), _mm256_mul_ps(v, v));
    u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_add_ps(v, u));
    return _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, tanh256(u)));
  }
  }
}

AVX2_FN static void act_avx2(int32_t kind, float *x, int64_t n) {
  int64_t i, j;
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, act256(kind, _mm256_loadu_ps(x + i)));
  if (i < n) {
    float tmp[8] = {0};
    for (j = 0; j < n - i; j++) tmp[j] = x[i + j];
    _mm256_storeu_ps(tmp, act256(kind, _mm256_loadu_ps(tmp)));
    for (j = 0; j < n - i; j++) x[i + j] = tmp[j];
  }
}

/* Softmax row on 8 lanes (the AVX-512 row's steps; left to libm's expf it was 4.6% of a CRNN
 * recogniser's AVX2 profile, its 40x6625 output). Tails as act_avx2: -inf for the max, the sum
 * over the valid lanes only. */
AVX2_FN static void softmax_avx2_from(const float *x, float *y, int64_t len, float m);

AVX2_FN static void softmax_avx2(const float *x, float *y, int64_t len) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  float tmp[8];
  int64_t i, j, full = len / 8 * 8;
  for (i = 0; i < full; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
  for (j = 0; j < 8; j++) tmp[j] = i + j < len ? x[i + j] : -INFINITY;
  mx = _mm256_max_ps(mx, _mm256_loadu_ps(tmp));
  mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
  mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, 0x4e));
  mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, 0xb1));
  softmax_avx2_from(x, y, len, _mm256_cvtss_f32(mx));
}

AVX2_FN static void softmax_avx2_from(const float *x, float *y, int64_t len, float m) {
  __m256 s = _mm256_setzero_ps(), vm, vs;
  float sum, tmp[8];
  int64_t i, j, full = len / 8 * 8;
  if (!(m > -INFINITY && m < INFINITY)) {
    softmax_nonfinite(x, y, len, m);
    return;
  }
  vm = _mm256_set1_ps(m);
  for (i = 0; i < full; i += 8) {
    __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    s = _mm256_add_ps(s, e);
    _mm256_storeu_ps(y + i, e);
  }
  if (i < len) {
    for (j = 0; j < 8; j++) tmp[j] = i + j < len ? x[i + j] : m;
    _mm256_storeu_ps(tmp, exp256(_mm256_sub_ps(_mm256_loadu_ps(tmp), vm)));
    for (j = 0; i + j < len; j++) y[i + j] = tmp[j];
    for (; j < 8; j++) tmp[j] = 0.f;
    s = _mm256_add_ps(s, _mm256_loadu_ps(tmp));
  }
  s = _mm256_add_ps(s, _mm256_permute2f128_ps(s, s, 1));
  s = _mm256_add_ps(s, _mm256_shuffle_ps(s, s, 0x4e));
  s = _mm256_add_ps(s, _mm256_shuffle_ps(s, s, 0xb1));
  sum = _mm256_cvtss_f32(s);
  vs = _mm256_set1_ps(1.f / sum);
  for (i = 0; i < full; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vs));
  for (; i < len; i++) y[i] *= 1.f / sum;
}

int mi__blis_act_simd(int32_t simd, int32_t kind, float *x, int64_t n) {
  if (kind == MI__ACT_MISH) return mi__blis_act2_simd(simd, kind, x, n); /* blis_act2.c */
  if (kind != MI__ACT_EXP && kind != MI__ACT_ERF && kind != MI__ACT_TANH && kind != MI__ACT_SIGMOID &&
      kind != MI__ACT_GELU && kind != MI__ACT_GELU_TANH && kind != MI__ACT_LOG)
    return 0;
  if (simd == MI__SIMD_AVX512) act_avx512(kind, x, n);
  else if (simd == MI__SIMD_AVX2)
    act_avx2(kind, x, n);
  else
    return 0;
  return 1;
}

int mi__blis_softmax_from_simd(int32_t simd, const float *x, float *y, int64_t len, float m) {
  if (simd == MI__SIMD_AVX512) softmax_avx512_from(x, y, len, m);
  else if (simd == MI__SIMD_AVX2)
    softmax_avx2_from(x, y, len, m);
  else
    return 0;
  return 1;
}

int mi__blis_softmax_simd(int32_t simd, const float *x, float *y, int64_t len) {
  if (simd == MI__SIMD_AVX512) softmax_avx512(x, y, len);
  else if (simd == MI__SIMD_AVX2)
    softmax_avx2(x, y, len);
  else
    return 0;
  return 1;
}
