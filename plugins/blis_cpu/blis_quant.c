/* blis_quant.c - QuantizeLinear / DequantizeLinear (INT8/UINT8, per-tensor or per-axis scales). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

typedef struct quant_state {
  int32_t x, y, quantize, is_u8, simd;
  int64_t n, inner, channels; /* element i has channel (i / inner) % channels */
  float *scale;               /* channels each, after the struct */
  int32_t *zp;
} quant_state_t;

typedef struct quant_task {
  const quant_state_t *q;
  const void *x;
  void *y;
} quant_task_t;

/* Round half to even in double without a libm call, so the loops vectorise: adding and removing
 * 1.5 * 2^52 leaves the nearest integer, ties to even, in the default rounding mode (what rint
 * does) for |v| < 2^51; v is clamped far outside every code range first, which changes no code. */
static inline __attribute__((always_inline)) double rne(double v) {
  v = v < -1e9 ? -1e9 : v > 1e9 ? 1e9
                                : v;
  return (v + 6755399441055744.0) - 6755399441055744.0;
}

/* ONNX QuantizeLinear saturate(round_half_to_even(x / scale) + zero_point) with the division in
 * double, as the reference does it (ref_quant.c: a float quotient is rounded once before the
 * rounding to a code and can land on a tie the exact quotient does not), and DequantizeLinear
 * (x - z) * s in float, which is the reference's double product rounded once (the 9-bit integer
 * times a float is exact in either). Branch-free, so the target clones below vectorise. */
static inline __attribute__((always_inline)) void q_body(const float *x, void *y, int64_t n, float s,
                                                         int32_t zp, int32_t u8) {
  double sd = (double)s, z = (double)zp, lo = u8 ? 0. : -128., hi = u8 ? 255. : 127.;
  int64_t i;
  if (u8)
    for (i = 0; i < n; i++) {
      double v = rne((double)x[i] / sd) + z;
      ((uint8_t *)y)[i] = (uint8_t)(int32_t)(v < lo ? lo : v > hi ? hi
                                                                  : v);
    }
  else
    for (i = 0; i < n; i++) {
      double v = rne((double)x[i] / sd) + z;
      ((int8_t *)y)[i] = (int8_t)(int32_t)(v < lo ? lo : v > hi ? hi
                                                                : v);
    }
}
static inline __attribute__((always_inline)) void dq_body(const void *x, float *y, int64_t n, float s,
                                                          int32_t zp, int32_t u8) {
  int64_t i;
  if (u8)
    for (i = 0; i < n; i++) y[i] = (float)(((const uint8_t *)x)[i] - zp) * s;
  else
    for (i = 0; i < n; i++) y[i] = (float)(((const int8_t *)x)[i] - zp) * s;
}
#define T512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define T256 __attribute__((target("avx2,fma")))
/* The quotient x / s of QuantizeLinear as x * (1 / s): vdivpd was the whole cost of a QDQ
 * export's residual adds and quantize steps. The product is within 3 ulp of the correctly
 * rounded quotient (|q| < 2^31 where it matters, so within 2^-21), and rounding to an integer
 * only changes at a half; a lane whose product lies within 2^-20 of a half takes the division
 * itself, so every code is the division's. (Float x and s put an inexact quotient below 2^20 at
 * least 2^-48 of it away from a half, so only exact ties, where the product is exact too, reach
 * the division in practice; test_blis_quant's near ties check the codes.) NaN takes neither
 * branch and ends as the plain C loop's clamps and conversion make it. */
#define Q_NEAR_HALF (1. / 1048576.)
T512 static inline __m512i q512_codes(__m512d d, __m512d sd, __m512d rcp) {
  const __m512d half = _mm512_set1_pd(.5), eps = _mm512_set1_pd(Q_NEAR_HALF);
  __m512d p = _mm512_mul_pd(d, rcp);
  __m512d f = _mm512_sub_pd(p, _mm512_roundscale_pd(p, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  __mmask8 tie = _mm512_cmp_pd_mask(_mm512_abs_pd(_mm512_sub_pd(f, half)), eps, _CMP_LT_OQ);
  if (tie) p = _mm512_mask_div_pd(p, tie, d, sd);
  p = _mm512_min_pd(_mm512_set1_pd(1e9), _mm512_max_pd(_mm512_set1_pd(-1e9), p));
  return _mm512_castsi256_si512(_mm512_cvtpd_epi32(p)); /* round half to even (default mode) */
}
/* Sixteen codes in float first, the zero point in the same rounding: p = fma(x, fl(1 / s), z) is
 * within 2^-24 |x / s| + 2^-24 |p| of the quotient plus z, so where |p| < 2^10 (|x / s| < 1300)
 * within 2^-13 of it, and rounds as it does unless it lies within 2^-12 of a half; larger |p|
 * saturates either way (|x / s + z| > 1000 with a zero point in -128..255). r = round(p) (vcvtps2dq,
 * half to even) and |p - r| (exact) say how near a half p lies; a vector with a lane within 2^-12
 * of one (ties and near ties, rare; NaN, and |p| >= 2^31, where r is INT_MIN) takes the double path
 * above, every code of it the division's. Half the double path's work: the residual adds and
 * quantize steps of a QDQ export are this loop. 0 when the double path must run. */
#define Q_NEAR_HALF_F (1.f / 4096.f)
T512 static inline int q512_codes_f(__m512 v, __m512 rcpf, __m512 zf, __m512i *r) {
  const __m512 lim = _mm512_set1_ps(.5f - Q_NEAR_HALF_F);
  __m512 p = _mm512_fmadd_ps(v, rcpf, zf);
  *r = _mm512_cvtps_epi32(p);
  return _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(p, _mm512_cvtepi32_ps(*r))), lim, _CMP_LE_OQ) == 0xffff;
}
/* Codes of the k lanes of v to y: the float-first quotient, else the double path and the zero
 * point on int32 lanes; the clamp as the saturating narrow (vpmovsdb; UINT8 after max(r, 0),
 * vpmovusdb). */
T512 static inline void q512_store(__m512 v, __mmask16 k, int8_t *y, __m512d sd, __m512d rcp, __m512 rcpf, __m512i z,
                                   __m512 zf, int32_t u8) {
  __m512i r;
  __m128i c;
  if (!q512_codes_f(v, rcpf, zf, &r)) {
    __m512i r0 = q512_codes(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), sd, rcp);
    __m512i r1 = q512_codes(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), sd, rcp);
    r = _mm512_add_epi32(_mm512_inserti64x4(r0, _mm512_castsi512_si256(r1), 1), z); /* |r0|, |r1| <= 1e9 */
  }
  c = u8 ? _mm512_cvtusepi32_epi8(_mm512_max_epi32(r, _mm512_setzero_si512())) : _mm512_cvtsepi32_epi8(r);
  if (k == 0xffff) /* the narrow to a register, then a plain store: its memory form is slow on Zen 4 */
    _mm_storeu_si128((__m128i *)y, c);
  else
    _mm_mask_storeu_epi8(y, k, c);
}
#define Q512_CONSTS(s, zp, u8)                                                            \
  const __m512d sd = _mm512_set1_pd((double)(s)), rcp = _mm512_set1_pd(1. / (double)(s)); \
  const __m512 rcpf = _mm512_set1_ps((float)(1. / (double)(s)));                          \
  const __m512i z = _mm512_set1_epi32(zp);                                                \
  const __m512 zf = _mm512_set1_ps((float)(zp))
/* 64 codes of four float vectors v[0..3] to y when every lane is float-first (two saturating packs
 * to int16 and one to bytes clamp them, one dword permute puts the 128-bit lanes' groups of four in
 * order), else sixteen at a time. */
T512 static inline void q512_store64(const __m512 *v, int8_t *y, __m512d sd, __m512d rcp, __m512 rcpf, __m512i z,
                                     __m512 zf, int32_t u8) {
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  __m512i r[4], p01, p23;
  int ok = 1, j;
  for (j = 0; j < 4; j++) ok &= q512_codes_f(v[j], rcpf, zf, &r[j]);
  if (!ok) { /* a lane near a half */
    for (j = 0; j < 4; j++) q512_store(v[j], 0xffff, y + 16 * j, sd, rcp, rcpf, z, zf, u8);
    return;
  }
  p01 = _mm512_packs_epi32(r[0], r[1]);
  p23 = _mm512_packs_epi32(r[2], r[3]);
  _mm512_storeu_si512(y, _mm512_permutexvar_epi32(order, u8 ? _mm512_packus_epi16(p01, p23) : _mm512_packs_epi16(p01, p23)));
}
T512 static void q_512(const float *x, void *y, int64_t n, float s, int32_t zp, int32_t u8) {
  Q512_CONSTS(s, zp, u8);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 v[4] = {_mm512_loadu_ps(x + i), _mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i + 32),
                         _mm512_loadu_ps(x + i + 48)};
    q512_store64(v, (int8_t *)y + i, sd, rcp, rcpf, z, zf, u8);
  }
  for (; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
    q512_store(_mm512_maskz_loadu_ps(k, x + i), k, (int8_t *)y + i, sd, rcp, rcpf, z, zf, u8);
  }
}
/* Sixteen codes of x as floats, (x - z) * s: DequantizeLinear's product, exact before its one rounding. */
T512 static inline __m512 dq512(const void *x, __mmask16 k, int32_t u8, __m512i z, __m512 s) {
  __m128i c = _mm_maskz_loadu_epi8(k, x);
  __m512i w = u8 ? _mm512_cvtepu8_epi32(c) : _mm512_cvtepi8_epi32(c);
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(w, z)), s);
}
/* A lowered QDQ Add / Mul of two full operands, 16 outputs a step: both DequantizeLinear rows,
 * the op and QuantizeLinear in registers (the block loop wrote and read three float rows). */
T512 static void qbin_512(const mi__blis_qbin_row_t *b, const void *xa, const void *xb, void *y, int64_t n) {
  Q512_CONSTS(b->ys, b->yz, b->yu8);
  const __m512i za = _mm512_set1_epi32(b->za), zb = _mm512_set1_epi32(b->zb);
  const __m512 sa = _mm512_set1_ps(b->sa), sb = _mm512_set1_ps(b->sb);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 v[4];
    for (int j = 0; j < 4; j++) {
      __m512 fa = dq512((const uint8_t *)xa + i + 16 * j, 0xffff, b->au8, za, sa);
      __m512 fb = dq512((const uint8_t *)xb + i + 16 * j, 0xffff, b->bu8, zb, sb);
      v[j] = b->mul ? _mm512_mul_ps(fa, fb) : _mm512_add_ps(fa, fb);
    }
    q512_store64(v, (int8_t *)y + i, sd, rcp, rcpf, z, zf, b->yu8);
  }
  for (; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
    __m512 fa = dq512((const uint8_t *)xa + i, k, b->au8, za, sa), fb = dq512((const uint8_t *)xb + i, k, b->bu8, zb, sb);
    q512_store(b->mul ? _mm512_mul_ps(fa, fb) : _mm512_add_ps(fa, fb), k, (int8_t *)y + i, sd, rcp, rcpf, z, zf, b->yu8);
  }
}

int mi__blis_qbin_row(int32_t simd, const mi__blis_qbin_row_t *b, const void *xa, const void *xb, void *y, int64_t n) {
  if (simd != MI__SIMD_AVX512) return 0;
  qbin_512(b, xa, xb, y, n);
  return 1;
}
/* AVX2: the same in four-lane halves, eight codes a step; the tail in plain C. */
T256 static inline __m128i q256_codes(__m256d d, __m256d sd, __m256d rcp) {
  const __m256d half = _mm256_set1_pd(.5), eps = _mm256_set1_pd(Q_NEAR_HALF);
  const __m256d sign = _mm256_set1_pd(-0.);
  __m256d p = _mm256_mul_pd(d, rcp);
  __m256d f = _mm256_sub_pd(p, _mm256_round_pd(p, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  __m256d tie = _mm256_cmp_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(f, half)), eps, _CMP_LT_OQ);
  if (_mm256_movemask_pd(tie)) p = _mm256_blendv_pd(p, _mm256_div_pd(d, sd), tie);
  p = _mm256_min_pd(_mm256_set1_pd(1e9), _mm256_max_pd(_mm256_set1_pd(-1e9), p));
  return _mm256_cvtpd_epi32(p);
}
T256 static void q_256(const float *x, void *y, int64_t n, float s, int32_t zp, int32_t u8) {
  const __m256d sd = _mm256_set1_pd((double)s), rcp = _mm256_set1_pd(1. / (double)s);
  const __m128i z = _mm_set1_epi32(zp), lo = _mm_set1_epi32(u8 ? 0 : -128), hi = _mm_set1_epi32(u8 ? 255 : 127);
  int64_t i;
  for (i = 0; i + 8 <= n; i += 8) {
    __m128i r0 = q256_codes(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), sd, rcp);
    __m128i r1 = q256_codes(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), sd, rcp);
    __m128i h;
    r0 = _mm_min_epi32(hi, _mm_max_epi32(lo, _mm_add_epi32(r0, z)));
    r1 = _mm_min_epi32(hi, _mm_max_epi32(lo, _mm_add_epi32(r1, z)));
    h = _mm_packs_epi32(r0, r1);
    _mm_storel_epi64((__m128i *)((int8_t *)y + i), u8 ? _mm_packus_epi16(h, h) : _mm_packs_epi16(h, h));
  }
  if (i < n) q_body(x + i, (int8_t *)y + i, n - i, s, zp, u8);
}
T512 static void dq_512(const void *x, float *y, int64_t n, float s, int32_t z, int32_t u8) { dq_body(x, y, n, s, z, u8); }
T256 static void dq_256(const void *x, float *y, int64_t n, float s, int32_t z, int32_t u8) { dq_body(x, y, n, s, z, u8); }

void mi__blis_q_row(int32_t simd, const float *x, void *y, int64_t n, float s, int32_t zp, int32_t u8) {
  if (simd == MI__SIMD_AVX512) q_512(x, y, n, s, zp, u8);
  else if (simd == MI__SIMD_AVX2)
    q_256(x, y, n, s, zp, u8);
  else
    q_body(x, y, n, s, zp, u8);
}

void mi__blis_dq_row(int32_t simd, const void *x, float *y, int64_t n, float s, int32_t zp, int32_t u8) {
  if (simd == MI__SIMD_AVX512) dq_512(x, y, n, s, zp, u8);
  else if (simd == MI__SIMD_AVX2)
    dq_256(x, y, n, s, zp, u8);
  else
    dq_body(x, y, n, s, zp, u8);
}

/* Elements [b, e) of one channel (scale s, zero point z). */
static void quant_run(const quant_state_t *q, const void *x, void *y, int64_t b, int64_t e, float s, int32_t zp) {
  if (q->quantize) mi__blis_q_row(q->simd, (const float *)x + b, (uint8_t *)y + b, e - b, s, zp, q->is_u8);
  else
    mi__blis_dq_row(q->simd, (const uint8_t *)x + b, (float *)y + b, e - b, s, zp, q->is_u8);
}

/* Elements [b, e), in runs of one channel each. */
static void quant_part(void *arg, int64_t b, int64_t e) {
  const quant_task_t *qt = arg;
  const quant_state_t *q = qt->q;
  while (b < e) {
    int64_t c = q->channels == 1 ? 0 : (b / q->inner) % q->channels;
    int64_t end = q->channels == 1 ? e : (b / q->inner + 1) * q->inner;
    if (end > e) end = e;
    quant_run(q, qt->x, qt->y, b, end, q->scale[c], q->zp[c]);
    b = end;
  }
}

static int32_t run_quant(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  quant_task_t qt;
  qt.q = s->state;
  qt.x = t[qt.q->x];
  qt.y = t[qt.q->y];
  (void)err;
  mi__blis_parallel(env, qt.q->n, 4096, 4, quant_part, &qt);
  return MI_OK;
}

int32_t mi__blis_prep_quant(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)),
                         *sc = mi__blis_tensor(p, mi__blis_in(n, 1)),
                         *zp = mi__blis_tensor(p, mi__blis_in(n, 2)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int quantize = strcmp(n->op_type, "QuantizeLinear") == 0;
  const mi_tensor_desc_t *q8 = quantize ? y : x, *f32 = quantize ? x : y;
  quant_state_t *q;
  int64_t axis, ch, i, d;
  if (!quantize && p->node_index == 0 && p->desc->node_count > 1 &&
      !strcmp(p->desc->nodes[p->desc->node_count - 1]->op_type, "QuantizeLinear"))
    return mi__blis_prep_qlut(p, s, err); /* DQ -> elementwise ops -> Q */
  if (!x || !y || !sc || mi_sdk_numel(x) != mi_sdk_numel(y))
    return mi__blis_unsupported(err, n, "missing input, scale or output");
  if (f32->dtype != MI_DTYPE_FLOAT32 || (q8->dtype != MI_DTYPE_INT8 && q8->dtype != MI_DTYPE_UINT8))
    return mi__blis_unsupported(err, n, "only FLOAT32 <-> INT8/UINT8");
  if (!sc->data || sc->dtype != MI_DTYPE_FLOAT32 || (zp && (!zp->data || zp->dtype != q8->dtype)))
    return mi__blis_unsupported(err, n, "scale and zero point must be constants (FLOAT32, INT8/UINT8)");
  ch = mi_sdk_numel(sc);
  axis = mi_sdk_attr_int(n, "axis", 1);
  if (axis < 0) axis += x->rank;
  if (ch > 1 && (axis < 0 || axis >= x->rank || x->dims[axis] != ch))
    return mi__blis_unsupported(err, n, "per-axis scale does not match the axis");
  if (mi_sdk_attr(n, "block_size") && mi_sdk_attr_int(n, "block_size", 0) != 0)
    return mi__blis_unsupported(err, n, "blocked quantization");
  if (zp && mi_sdk_numel(zp) != ch) return mi__blis_unsupported(err, n, "zero point count != scale count");
  if (!(q = mi__blis_state_new(p, s, sizeof *q + (uint64_t)ch * (sizeof(float) + sizeof(int32_t)), err))) return MI_ERR_OUT_OF_MEMORY;
  q->scale = (float *)(q + 1);
  q->zp = (int32_t *)(q->scale + ch);
  q->x = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->quantize = quantize;
  q->is_u8 = q8->dtype == MI_DTYPE_UINT8;
  q->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  q->n = mi_sdk_numel(x);
  q->channels = ch;
  q->inner = 1;
  if (ch > 1)
    for (d = axis + 1; d < x->rank; d++) q->inner *= x->dims[d];
  for (i = 0; i < ch; i++) {
    q->scale[i] = ((const float *)sc->data)[i];
    q->zp[i] = !zp ? 0 : q->is_u8 ? ((const uint8_t *)zp->data)[i]
                                  : ((const int8_t *)zp->data)[i];
    if (!(q->scale[i] > 0.f) && quantize) return mi__blis_unsupported(err, n, "scale must be > 0");
  }
  s->run = run_quant;
  return MI_OK;
}
