/* blis_qeltwise.c - the elementwise integer ops of quantized models: DynamicQuantizeLinear,
 * com.microsoft QLinearAdd / QLinearMul / QLinearGlobalAveragePool, and Cast of the INT32 sums
 * of ConvInteger / MatMulInteger to FLOAT. Same arithmetic as the reference (ref_qlinear.c), so
 * the codes are the reference's bit for bit. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_dynq512.h"
#include "blis_qgemm.h"

enum { QE_DYNQ = 1,
       QE_ADD,
       QE_MUL,
       QE_GAP,
       QE_CAST };

typedef struct qelt {
  int32_t kind, simd, a, b, y, ys, yz;                         /* tensor indices (b, ys, yz: -1 when unused) */
  int32_t u8;                                                  /* codes are UINT8 (else INT8) */
  int64_t n;                                                   /* elements of y */
  int64_t planes, hw, last;                                    /* GAP: N*C planes of hw pixels; channels_last */
  int32_t rank;                                                /* Add/Mul: output rank, and per dim the output size and */
  int64_t dims[MI_MAX_RANK], sa[MI_MAX_RANK], sb[MI_MAX_RANK]; /* A's, B's strides (0: broadcast) */
  int32_t za, zb, zc;
  double ra, rb, mult; /* Add: sa/sc, sb/sc; Mul: sa*sb/sc; GAP: sx/(sy*hw) */
  int32_t full512;     /* QLinearAdd of two operands of y's shape on AVX-512: mi__blis_qladd_avx512 */
} qelt_t;

typedef struct qelt_task {
  const qelt_t *q;
  void *const *t;
  float scale;
  int32_t zp;
} qelt_task_t;

/* Round half to even (rint in the default rounding mode) and saturate, in double. */
static inline int32_t sat_code(double v, int32_t z, int u8) {
  double r = rint(v) + z, lo = u8 ? 0. : -128., hi = u8 ? 255. : 127.;
  return (int32_t)(r < lo ? lo : r > hi ? hi
                                        : r);
}

static inline int32_t code_at(const void *x, int u8, int64_t i) {
  return u8 ? ((const uint8_t *)x)[i] : ((const int8_t *)x)[i];
}

/* ---- DynamicQuantizeLinear: min/max (widened to include 0), then y = sat(rint(x / s) + zp) in
 * float, as the reference and ONNX Runtime. */

/* Four chains each of min and max: one chain was bound by the latency of vminps. The new value
 * is the first operand, so a NaN leaves the running value as the C loop does. */
__attribute__((target("avx512f"))) static void minmax_avx512(const float *x, int64_t n, float *lo, float *hi) {
  __m512 l[4], h[4];
  int64_t i = 0, k;
  for (k = 0; k < 4; k++) l[k] = h[k] = _mm512_setzero_ps();
  for (; i + 64 <= n; i += 64)
    for (k = 0; k < 4; k++) {
      __m512 v = _mm512_loadu_ps(x + i + 16 * k);
      l[k] = _mm512_min_ps(v, l[k]);
      h[k] = _mm512_max_ps(v, h[k]);
    }
  for (; i < n; i += 16) {
    __m512 v = _mm512_maskz_loadu_ps(n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u), x + i);
    l[0] = _mm512_min_ps(v, l[0]); /* masked lanes are 0, inside every range */
    h[0] = _mm512_max_ps(v, h[0]);
  }
  *lo = _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(l[0], l[1]), _mm512_min_ps(l[2], l[3])));
  *hi = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(h[0], h[1]), _mm512_max_ps(h[2], h[3])));
}

/* The new value first here too: vminps returns its second operand when either is NaN. Four chains
 * each, as AVX-512's. */
__attribute__((target("avx2"))) static void minmax_avx2(const float *x, int64_t n, float *lo, float *hi) {
  __m256 l[4], h[4];
  float lv[8], hv[8];
  int64_t i = 0, k;
  for (k = 0; k < 4; k++) l[k] = h[k] = _mm256_setzero_ps();
  for (; i + 32 <= n; i += 32)
    for (k = 0; k < 4; k++) {
      __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      l[k] = _mm256_min_ps(v, l[k]);
      h[k] = _mm256_max_ps(v, h[k]);
    }
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    l[0] = _mm256_min_ps(v, l[0]);
    h[0] = _mm256_max_ps(v, h[0]);
  }
  _mm256_storeu_ps(lv, _mm256_min_ps(_mm256_min_ps(l[0], l[1]), _mm256_min_ps(l[2], l[3])));
  _mm256_storeu_ps(hv, _mm256_max_ps(_mm256_max_ps(h[0], h[1]), _mm256_max_ps(h[2], h[3])));
  *lo = *hi = 0.f;
  for (k = 0; k < 8; k++) {
    *lo = lv[k] < *lo ? lv[k] : *lo;
    *hi = hv[k] > *hi ? hv[k] : *hi;
  }
  for (; i < n; i++) {
    *lo = x[i] < *lo ? x[i] : *lo;
    *hi = x[i] > *hi ? x[i] : *hi;
  }
}

static void minmax_c(const float *x, int64_t n, float *lo, float *hi) {
  int64_t i;
  *lo = *hi = 0.f;
  for (i = 0; i < n; i++) {
    *lo = x[i] < *lo ? x[i] : *lo;
    *hi = x[i] > *hi ? x[i] : *hi;
  }
}

/* y = sat(rint(x / s) + z), one element; the vector loops below do the same operations in the
 * same order (divide, round to nearest even, add, clamp; NaN clamps to 0 either way), so the
 * codes match the reference's bit for bit. GCC leaves the scalar form unvectorised. */
static inline uint8_t dynq_one(float x, float s, float z) {
  float v = rintf(x / s) + z;
  v = v > 0.f ? v : 0.f; /* a NaN to 0 here, not in the int32 conversion (undefined for NaN) */
  v = v > 255.f ? 255.f : v;
  return (uint8_t)(int32_t)v;
}
/* 64 codes a step: two saturating packs to int16 and one to unsigned bytes clamp them to 0..255
 * (vpmovusdb after max(0, r) sixteen at a time at the end), one dword permute orders the lanes. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void dynq_avx512(const float *x, uint8_t *y, int64_t b, int64_t e, float s, float z) {
  const __m512 vs = _mm512_set1_ps(s), rcp = _mm512_set1_ps(1.f / s), zf = _mm512_set1_ps(z);
  const __m512i vz = _mm512_set1_epi32((int32_t)z), zero = _mm512_setzero_si512();
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  int64_t i = b;
  for (; i + 64 <= e; i += 64) {
    __m512i r0, r1, r2, r3;
    mi__blis_dynq_lanes(_mm512_loadu_ps(x + i), rcp, zf, vs, vz, &r0);
    mi__blis_dynq_lanes(_mm512_loadu_ps(x + i + 16), rcp, zf, vs, vz, &r1);
    mi__blis_dynq_lanes(_mm512_loadu_ps(x + i + 32), rcp, zf, vs, vz, &r2);
    mi__blis_dynq_lanes(_mm512_loadu_ps(x + i + 48), rcp, zf, vs, vz, &r3);
    _mm512_storeu_si512(y + i, _mm512_permutexvar_epi32(order, _mm512_packus_epi16(_mm512_packs_epi32(r0, r1),
                                                                                   _mm512_packs_epi32(r2, r3))));
  }
  for (; i < e; i += 16) {
    __mmask16 k = e - i >= 16 ? 0xffff : (__mmask16)((1u << (e - i)) - 1u);
    __m512i r;
    __m128i c;
    mi__blis_dynq_lanes(_mm512_maskz_loadu_ps(k, x + i), rcp, zf, vs, vz, &r);
    c = _mm512_cvtusepi32_epi8(_mm512_max_epi32(zero, r));
    if (k == 0xffff) /* a register then a plain store: the masked byte store's memory form is slow on Zen 4 */
      _mm_storeu_si128((__m128i *)(y + i), c);
    else
      _mm_mask_storeu_epi8(y + i, k, c);
  }
}
/* The AVX-512 form's quotient (blis_dynq512.h): x * fl(1 / s) + z in one FMA, rounded, and the
 * division itself only for a vector with a lane within 2^-12 of a half (or NaN), so every code is
 * the division's; vdivps was most of the pass. */
__attribute__((target("avx2,fma"))) static void dynq_avx2(const float *x, uint8_t *y, int64_t b, int64_t e, float s, float z) {
  const __m256 vs = _mm256_set1_ps(s), rcp = _mm256_set1_ps(1.f / s), vz = _mm256_set1_ps(z), v0 = _mm256_setzero_ps(),
               v255 = _mm256_set1_ps(255.f), near = _mm256_set1_ps(.5f - 1.f / 4096.f),
               sign = _mm256_set1_ps(-0.f);
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 x8 = _mm256_loadu_ps(x + i), p = _mm256_fmadd_ps(x8, rcp, vz);
    __m256 v = _mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i c;
    __m128i w;
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(p, v)), near, _CMP_LE_OQ)) != 0xff)
      v = _mm256_add_ps(_mm256_round_ps(_mm256_div_ps(x8, vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    c = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, v0), v255));
    w = _mm_packus_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    _mm_storel_epi64((__m128i *)(y + i), _mm_packus_epi16(w, w));
  }
  for (; i < e; i++) y[i] = dynq_one(x[i], s, z);
}
static void dynq_c(const float *x, uint8_t *y, int64_t b, int64_t e, float s, float z) {
  for (int64_t i = b; i < e; i++) y[i] = dynq_one(x[i], s, z);
}

void mi__blis_dynq_row(int32_t simd, const float *x, uint8_t *y, int64_t n, float scale, int32_t zp) {
  if (simd == MI__SIMD_AVX512) dynq_avx512(x, y, 0, n, scale, (float)zp);
  else if (simd == MI__SIMD_AVX2)
    dynq_avx2(x, y, 0, n, scale, (float)zp);
  else
    dynq_c(x, y, 0, n, scale, (float)zp);
}

/* Codes of `outer` blocks of `inner` floats, block o from x + o * inner into y + o * ystride (one
 * block: a whole tensor; several: one input of a Concat into its slab of the output). */
typedef struct dynq_task {
  int32_t simd;
  const float *x;
  uint8_t *y;
  int64_t inner, ystride;
  float scale, zp;
} dynq_task_t;

static void dynq_part(void *arg, int64_t b, int64_t e) {
  const dynq_task_t *t = arg;
  while (b < e) {
    int64_t o = b / t->inner, r = b % t->inner, len = t->inner - r < e - b ? t->inner - r : e - b;
    const float *x = t->x + o * t->inner + r;
    uint8_t *y = t->y + o * t->ystride + r;
    if (t->simd == MI__SIMD_AVX512) dynq_avx512(x, y, 0, len, t->scale, t->zp);
    else if (t->simd == MI__SIMD_AVX2)
      dynq_avx2(x, y, 0, len, t->scale, t->zp);
    else
      dynq_c(x, y, 0, len, t->scale, t->zp);
    b += len;
  }
}

void mi__blis_dynq_blocks(const mi__blis_env_t *env, int32_t simd, const float *x, int64_t outer, int64_t inner,
                          uint8_t *y, int64_t ystride, float scale, int32_t zp) {
  dynq_task_t task = {simd, x, y, inner, ystride, scale, (float)zp};
  if (inner > 0) mi__blis_parallel(env, outer * inner, 4096, 4, dynq_part, &task);
}

/* The min/max pass in at most MM_PARTS parts across the threads (it ran on one while the quantize
 * pass used every thread), each part's range then merged: min and max do not depend on the order. */
#define MM_PARTS 64
typedef struct mm_task {
  int32_t simd;
  const float *x;
  int64_t n, chunk;
  float lo[MM_PARTS], hi[MM_PARTS];
} mm_task_t;

static void minmax_part(void *arg, int64_t b, int64_t e) {
  mm_task_t *t = arg;
  for (; b < e; b++) {
    int64_t i0 = b * t->chunk, n = t->n - i0 < t->chunk ? t->n - i0 : t->chunk;
    if (t->simd == MI__SIMD_AVX512) minmax_avx512(t->x + i0, n, &t->lo[b], &t->hi[b]);
    else if (t->simd == MI__SIMD_AVX2)
      minmax_avx2(t->x + i0, n, &t->lo[b], &t->hi[b]);
    else
      minmax_c(t->x + i0, n, &t->lo[b], &t->hi[b]);
  }
}

void mi__blis_minmax(int32_t simd, const float *x, int64_t n, float *lo, float *hi) {
  float l, h;
  if (simd == MI__SIMD_AVX512) minmax_avx512(x, n, &l, &h);
  else if (simd == MI__SIMD_AVX2)
    minmax_avx2(x, n, &l, &h);
  else
    minmax_c(x, n, &l, &h);
  *lo = l < *lo ? l : *lo;
  *hi = h > *hi ? h : *hi;
}

void mi__blis_dynq_range(const mi__blis_env_t *env, int32_t simd, const float *x, int64_t n, float *lo, float *hi) {
  mm_task_t mm;
  int64_t parts, i;
  mm.simd = simd;
  mm.x = x;
  mm.n = n;
  mm.chunk = (n + MM_PARTS - 1) / MM_PARTS < 16384 ? 16384 : (n + MM_PARTS - 1) / MM_PARTS;
  parts = (n + mm.chunk - 1) / mm.chunk;
  mi__blis_parallel(env, parts, 1, mm.chunk, minmax_part, &mm);
  for (i = 0; i < parts; i++) {
    *lo = mm.lo[i] < *lo ? mm.lo[i] : *lo;
    *hi = mm.hi[i] > *hi ? mm.hi[i] : *hi;
  }
}

void mi__blis_dynq_params(float lo, float hi, float *scale, int32_t *zp) {
  float z0;
  *scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  z0 = 0.0f - lo / *scale;
  z0 = z0 < 0.f ? 0.f : z0 > 255.f ? 255.f
                                   : z0;
  *zp = (int32_t)rintf(z0);
}

void mi__blis_dynq_outputs(void *const *t, int32_t ys, int32_t yz, float lo, float hi, float *scale, int32_t *zp) {
  mi__blis_dynq_params(lo, hi, scale, zp);
  *(float *)t[ys] = *scale;
  *(uint8_t *)t[yz] = (uint8_t)*zp;
}

void mi__blis_dynq_codes(const mi__blis_env_t *env, int32_t simd, void *const *t, int32_t x, int32_t y, int32_t ys,
                         int32_t yz, int64_t n, float lo, float hi) {
  float scale;
  int32_t zp;
  mi__blis_dynq_outputs(t, ys, yz, lo, hi, &scale, &zp);
  mi__blis_dynq_blocks(env, simd, t[x], 1, n, t[y], n, scale, zp);
}

static int32_t run_dynq(const qelt_t *q, void *const *t, const mi__blis_env_t *env) {
  float lo = 0.f, hi = 0.f;
  if (env->range && env->range[q->a].known) { /* its producer found it */
    mi__blis_range_get(&env->range[q->a], &lo, &hi);
    atomic_fetch_add(env->range_used, 1);
  } else
    mi__blis_dynq_range(env, q->simd, t[q->a], q->n, &lo, &hi);
  mi__blis_dynq_codes(env, q->simd, t, q->a, q->y, q->ys, q->yz, q->n, lo, hi);
  return MI_OK;
}

/* ---- QLinearAdd / QLinearMul: same shapes, or one side a single code. */
static void binary_part(void *arg, int64_t b, int64_t e) {
  const qelt_task_t *t = arg;
  const qelt_t *q = t->q;
  const void *a = t->t[q->a], *bb = t->t[q->b];
  if (q->full512) /* the scalar loop below takes the tail */
    b = mi__blis_qladd_avx512(a, bb, t->t[q->y], b, e, q->ra, q->rb, q->za, q->zb, q->zc, q->u8);
  int64_t i, idx[MI_MAX_RANK], oa = 0, ob = 0, rem = b;
  double ta[256], tb[256];
  int32_t v, d;
  for (d = q->rank - 1; d >= 0; d--) { /* the operands' offsets of output element b */
    idx[d] = rem % q->dims[d];
    rem /= q->dims[d];
    oa += idx[d] * q->sa[d];
    ob += idx[d] * q->sb[d];
  }
  if (q->kind == QE_ADD) { /* (x - z) * r for every code: the reference's products */
    for (v = 0; v < 256; v++) {
      int32_t c = q->u8 ? v : v - 128;
      ta[v] = (double)(c - q->za) * q->ra;
      tb[v] = (double)(c - q->zb) * q->rb;
    }
  }
  for (i = b; i < e; i++) {
    int32_t ca = code_at(a, q->u8, oa), cb = code_at(bb, q->u8, ob), r;
    double x = q->kind == QE_ADD ? ta[q->u8 ? ca : ca + 128] + tb[q->u8 ? cb : cb + 128]
                                 : (double)((ca - q->za) * (cb - q->zb)) * q->mult;
    r = sat_code(x, q->zc, q->u8);
    if (q->u8) ((uint8_t *)t->t[q->y])[i] = (uint8_t)r;
    else
      ((int8_t *)t->t[q->y])[i] = (int8_t)r;
    for (d = q->rank - 1; d >= 0; d--) { /* next output index: odometer over the dims */
      oa += q->sa[d];
      ob += q->sb[d];
      if (++idx[d] < q->dims[d]) break;
      oa -= q->sa[d] * q->dims[d];
      ob -= q->sb[d] * q->dims[d];
      idx[d] = 0;
    }
  }
}

/* Numpy broadcasting of A and B to y's shape: per output dim, each operand's element stride
 * (0 where it is broadcast); 0 when the shapes do not broadcast to y. */
static int bcast(qelt_t *q, const mi_tensor_desc_t *a, const mi_tensor_desc_t *b, const mi_tensor_desc_t *y) {
  const mi_tensor_desc_t *ops[2] = {a, b};
  int32_t k, d;
  q->rank = y->rank;
  for (d = 0; d < y->rank; d++) q->dims[d] = y->dims[d];
  for (k = 0; k < 2; k++) {
    int64_t *st = k ? q->sb : q->sa, s = 1;
    int32_t off = y->rank - ops[k]->rank;
    if (off < 0) return 0;
    for (d = y->rank - 1; d >= 0; d--) {
      int64_t n = d >= off ? ops[k]->dims[d - off] : 1;
      if (n != 1 && n != y->dims[d]) return 0;
      st[d] = n == 1 ? 0 : s;
      s *= n;
    }
  }
  return 1;
}

/* ---- QLinearGlobalAveragePool: exact integer sums per plane, one scaling. */
static void gap_part(void *arg, int64_t b, int64_t e) {
  const qelt_task_t *t = arg;
  const qelt_t *q = t->q;
  const void *x = t->t[q->a];
  int64_t pl, i, ch = q->last; /* channels_last: C, else 0 */
  for (pl = b; pl < e; pl++) {
    int64_t sum = 0, base = ch ? (pl / ch) * q->hw * ch + pl % ch : pl * q->hw, st = ch ? ch : 1;
    int32_t r;
    for (i = 0; i < q->hw; i++) sum += code_at(x, q->u8, base + i * st);
    r = sat_code((double)(sum - (int64_t)q->za * q->hw) * q->mult, q->zc, q->u8);
    if (q->u8) ((uint8_t *)t->t[q->y])[pl] = (uint8_t)r;
    else
      ((int8_t *)t->t[q->y])[pl] = (int8_t)r;
  }
}

static void cast_part(void *arg, int64_t b, int64_t e) {
  const qelt_task_t *t = arg;
  const int32_t *x = t->t[t->q->a];
  float *y = t->t[t->q->y];
  int64_t i;
  for (i = b; i < e; i++) y[i] = (float)x[i];
}

static int32_t run_qelt(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qelt_t *q = s->state;
  qelt_task_t task = {q, t, 0.f, 0};
  (void)err;
  if (q->kind == QE_DYNQ) return run_dynq(q, t, env);
  if (q->kind == QE_GAP) mi__blis_parallel(env, q->planes, 1, q->hw, gap_part, &task);
  else if (q->kind == QE_CAST)
    mi__blis_parallel(env, q->n, 4096, 1, cast_part, &task);
  else
    mi__blis_parallel(env, q->n, 4096, 8, binary_part, &task);
  return MI_OK;
}

int mi__blis_qpair(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t si, int32_t zi, int32_t dt,
                   double *s, int32_t *z) {
  const mi_tensor_desc_t *ts = mi__blis_tensor(p, mi__blis_in(n, si)), *tz = mi__blis_tensor(p, mi__blis_in(n, zi));
  *z = 0;
  if (!ts || !ts->data || ts->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(ts) != 1) return 0;
  *s = (double)((const float *)ts->data)[0];
  if (!(*s > 0.)) return 0;
  if (!tz) return 1;
  if (!tz->data || tz->dtype != dt || mi_sdk_numel(tz) != 1) return 0;
  *z = dt == MI_DTYPE_UINT8 ? ((const uint8_t *)tz->data)[0] : ((const int8_t *)tz->data)[0];
  return 1;
}

int mi__blis_qpair_f(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t si, int32_t zi, int32_t dt, float *s,
                     int32_t *z) {
  double d;
  if (!mi__blis_qpair(p, n, si, zi, dt, &d, z) || !isfinite(d)) return 0;
  *s = (float)d;
  return 1;
}

int32_t mi__blis_prep_qeltwise(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const char *op = n->op_type;
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  qelt_t *q;
  if (!x || !y) return mi__blis_unsupported(err, n, "missing input or output");
  if (p->desc->node_count != 1) return mi__blis_unsupported(err, n, "runs alone, not in a fused group");
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  s->run = run_qelt;
  q->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  q->a = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->b = q->ys = q->yz = -1;
  q->n = mi_sdk_numel(y);
  q->u8 = x->dtype == MI_DTYPE_UINT8;
  if (strcmp(op, "Cast") == 0) {
    if (x->dtype != MI_DTYPE_INT32 || y->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(x) != q->n)
      return mi__blis_unsupported(err, n, "only INT32 to FLOAT32 is cast here");
    q->kind = QE_CAST;
    return MI_OK;
  }
  if (strcmp(op, "DynamicQuantizeLinear") == 0) {
    const mi_tensor_desc_t *ys = mi__blis_tensor(p, mi__blis_out(n, 1)), *yz = mi__blis_tensor(p, mi__blis_out(n, 2));
    if (x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_UINT8 || !ys || !yz || ys->dtype != MI_DTYPE_FLOAT32 ||
        yz->dtype != MI_DTYPE_UINT8 || mi_sdk_numel(ys) != 1 || mi_sdk_numel(yz) != 1 || mi_sdk_numel(x) != q->n)
      return mi__blis_unsupported(err, n, "needs FLOAT32 in, UINT8 codes, a FLOAT32 scale and a UINT8 zero point out");
    q->kind = QE_DYNQ;
    p->k->range[q->a].reads = 1;
    q->ys = mi__blis_out(n, 1);
    q->yz = mi__blis_out(n, 2);
    return MI_OK;
  }
  if (!mi__blis_is_q8(x) || y->dtype != x->dtype)
    return mi__blis_unsupported(err, n, "needs INT8/UINT8 codes in and out, of one dtype");
  if (strcmp(op, "QLinearGlobalAveragePool") == 0) {
    double sx, sy;
    int64_t last = mi_sdk_attr_int(n, "channels_last", 0), d;
    if (!mi__blis_qpair(p, n, 1, 2, x->dtype, &sx, &q->za) || !mi__blis_qpair(p, n, 3, 4, x->dtype, &sy, &q->zc))
      return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
    if (x->rank < 3 || (last != 0 && last != 1)) return mi__blis_unsupported(err, n, "input rank < 3 or channels_last not 0/1");
    q->kind = QE_GAP;
    q->hw = 1;
    for (d = last ? 1 : 2; d < (last ? x->rank - 1 : x->rank); d++) q->hw *= x->dims[d];
    q->planes = q->n;
    q->last = last ? x->dims[x->rank - 1] : 0;
    if (q->hw < 1 || q->planes * q->hw != mi_sdk_numel(x)) return mi__blis_unsupported(err, n, "empty spatial extent");
    q->mult = sx / (sy * (double)q->hw);
    return MI_OK;
  }
  {
    const mi_tensor_desc_t *b = mi__blis_tensor(p, mi__blis_in(n, 3));
    double sa, sb, sc;
    if (!b || b->dtype != x->dtype) return mi__blis_unsupported(err, n, "B must be codes of A's dtype");
    if (!mi__blis_qpair(p, n, 1, 2, x->dtype, &sa, &q->za) || !mi__blis_qpair(p, n, 4, 5, x->dtype, &sb, &q->zb) ||
        !mi__blis_qpair(p, n, 6, 7, x->dtype, &sc, &q->zc))
      return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
    if (!bcast(q, x, b, y)) return mi__blis_unsupported(err, n, "A and B do not broadcast to the output's shape");
    q->b = mi__blis_in(n, 3);
    q->kind = strcmp(op, "QLinearAdd") == 0 ? QE_ADD : QE_MUL;
    q->ra = sa / sc;
    q->rb = sb / sc;
    q->mult = sa * sb / sc;
    int full = 1;
    for (int64_t d = q->rank - 1, st = 1; d >= 0; st *= q->dims[d], d--)
      full &= (q->sa[d] == st || q->dims[d] == 1) && (q->sb[d] == st || q->dims[d] == 1);
    /* from the ISA after MI_BLIS_MAX_SIMD's cap (blis_device.c), which an AVX2 run must not pass */
    q->full512 = full && q->kind == QE_ADD && (p->ctx->cpu.isa & MI__ISA_AVX512F) &&
                 (p->ctx->cpu.isa & MI__ISA_AVX512DQBWVL);
  }
  return MI_OK;
}

int mi__blis_int_tensor_ok(const mi_kernel_desc_t *d, int32_t t) {
  static const char *const ops[] = {"DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
                                    "MatMulInteger", "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool",
                                    "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat", "QLinearSoftmax", "QGemm", "QLinearAveragePool",
                                    "QLinearWhere", "Cast", "Add", "Mul", /* Add, Mul: lowered QDQ (blis_qadd.c) */
                                    "MaxPool", "Resize", "Upsample"};     /* on codes: blis_qpool.c, blis_qresize.c */
  int32_t i, j, k, touches, any = 0;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int known = 0;
    touches = 0;
    for (j = 0; j < n->input_count; j++) touches |= n->inputs[j] == t;
    for (j = 0; j < n->output_count; j++) touches |= n->outputs[j] == t;
    if (!touches) continue;
    for (k = 0; k < (int32_t)(sizeof ops / sizeof ops[0]); k++) known |= strcmp(n->op_type, ops[k]) == 0;
    if (!known) return 0;
    any = 1;
  }
  return any;
}
