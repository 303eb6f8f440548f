/* blis_qftail.c - the float tail of the integer core's sums (Cast, Mul by the scale, Add of the
 * bias or residual, the activation: each rounded as the nodes) in AVX-512 lanes or plain C, the
 * ranges the tail hands to a DynamicQuantizeLinear that follows, and that quantization's codes. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

/* The range of a written part merged into *a (float bits, shared by the threads): v replaces it
 * only when strictly below (lo) or above (hi) it, as the unfused min/max pass's comparisons (a
 * -0 never replaces the initial +0; NaNs never reach here). */
static void merge_range(const uint32_t *shared, float v, int hi) {
  uint32_t *a = (uint32_t *)shared, o = __atomic_load_n(a, __ATOMIC_RELAXED), nb;
  float f;
  memcpy(&nb, &v, sizeof nb);
  for (;;) {
    memcpy(&f, &o, sizeof f);
    if (!(hi ? v > f : v < f) ||
        __atomic_compare_exchange_n(a, &o, nb, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return;
  }
}

void mi__blis_ftail_merge(const mi__blis_hsw_t *hs, float lo, float hi) {
  merge_range(&hs->rlo, lo, 0);
  merge_range(&hs->rhi, hi, 1);
}

void mi__blis_ftail_begin(const mi__blis_hsw_t *hs, const mi__blis_env_t *env) {
  /* the state is the step's own writable block, seen const by the run */
  int32_t track = hs->dq || (hs->hand && env && env->range && env->range[hs->y].asked);
  __atomic_store_n((int32_t *)&hs->track, track, __ATOMIC_RELAXED);
  if (track) {
    __atomic_store_n((uint32_t *)&hs->rlo, 0u, __ATOMIC_RELAXED);
    __atomic_store_n((uint32_t *)&hs->rhi, 0u, __ATOMIC_RELAXED);
  }
}

void mi__blis_ftail_end(const mi__blis_hsw_t *hs, void *const *t, const mi__blis_env_t *env, int32_t simd) {
  uint32_t lb = __atomic_load_n(&hs->rlo, __ATOMIC_RELAXED), hb = __atomic_load_n(&hs->rhi, __ATOMIC_RELAXED);
  float lo, hi, scale;
  int32_t zp;
  if (!hs->track) return;
  memcpy(&lo, &lb, sizeof lo);
  memcpy(&hi, &hb, sizeof hi);
  if (hs->hand && env->range && env->range[hs->y].asked) { /* kernel_run records it on y's buffer */
    mi__blis_range_merge(&env->range[hs->y], lo, hi);
    env->range[hs->y].known = 1;
  }
  if (!hs->dq) return;
  if (!hs->pad) {
    mi__blis_dynq_codes(env, simd, t, hs->dq_x, hs->dq_y, hs->dq_s, hs->dq_z, hs->dq_n, lo, hi);
    return;
  }
  mi__blis_dynq_start(hs, t, lo, hi, &scale, &zp); /* as blis_qpad.c: each plane's rows into the padded one */
  for (int64_t p = 0; p < hs->dq_n / (hs->ih * hs->iw); p++)
    mi__blis_dynq_blocks(env, simd, (const float *)t[hs->dq_x] + p * hs->ih * hs->iw, hs->ih, hs->iw,
                         (uint8_t *)t[hs->dq_y] + (p * hs->oh + hs->pt) * hs->ow + hs->pl, hs->ow, scale, zp);
}

void mi__blis_dynq_put(const mi__blis_hsw_t *hs, int32_t simd, const float *f, int64_t e0, int64_t n, uint8_t *codes,
                       float scale, int32_t zp) {
  int64_t hw = hs->ih * hs->iw;
  if (!hs->pad) {
    mi__blis_dynq_row(simd, f, codes + e0, n, scale, zp);
    return;
  }
  while (n > 0) { /* row by row: each lands at its place in the padded plane */
    int64_t pl = e0 / hw, r = e0 % hw / hs->iw, c = e0 % hs->iw, k = hs->iw - c < n ? hs->iw - c : n;
    mi__blis_dynq_row(simd, f, codes + (pl * hs->oh + hs->pt + r) * hs->ow + hs->pl + c, k, scale, zp);
    f += k, e0 += k, n -= k;
  }
}

uint8_t *mi__blis_dynq_start(const mi__blis_hsw_t *hs, void *const *t, float lo, float hi, float *scale, int32_t *zp) {
  uint8_t *codes = t[hs->dq_y];
  mi__blis_dynq_outputs(t, hs->dq_s, hs->dq_z, lo, hi, scale, zp);
  if (hs->pad) /* the whole plane: the rows then overwrite the inside */
    memset(codes, *zp, (size_t)(hs->dq_n / (hs->ih * hs->iw) * hs->oh * hs->ow));
  return codes;
}

/* The tail's activations on a written row, in order (the plain path), then its range. */
static void tail_acts(const mi__blis_hsw_t *hs, float *y, int64_t n) {
  int64_t j;
  for (int32_t i = 0; i < hs->nact; i++) {
    float a = hs->aa[i];
    if (hs->act[i] == MI__QT_MAX)
      for (j = 0; j < n; j++) y[j] = y[j] != y[j] || y[j] > a ? y[j] : a;
    else if (hs->act[i] == MI__QT_MIN)
      for (j = 0; j < n; j++) y[j] = y[j] != y[j] || y[j] < a ? y[j] : a;
    else
      mi__blis_act_apply(hs->act[i], a, hs->ab[i], y, n);
  }
  if (hs->track) {
    float lo = 0.f, hi = 0.f;
    for (j = 0; j < n; j++) {
      lo = y[j] < lo ? y[j] : lo;
      hi = y[j] > hi ? y[j] : hi;
    }
    merge_range(&hs->rlo, lo, 0);
    merge_range(&hs->rhi, hi, 1);
  }
}

/* One vector of the tail (the lanes of km) from its int32 sums and residual. */
typedef struct ftail_k {
  __m512 vs, vb, z, ha, hlo, hhi, hd, am, ac;
} ftail_k_t;
static inline __attribute__((always_inline, target("avx512f"))) __m512
ftail_vec512(const ftail_k_t *k, const int32_t *acc, const float *res, __mmask16 km, int has_b, int relu,
             const mi__blis_hsw_t *hs) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(km, acc)), k->vs);
  if (has_b) v = _mm512_add_ps(v, k->vb);
  if (res && !hs->res_post) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(km, res));
  if (relu) v = _mm512_max_ps(v, k->z); /* NaN and -0 give +0, as x > 0 ? x : 0 */
  if (res && hs->res_post) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(km, res));
  if (hs->has_am) v = _mm512_mul_ps(v, k->am);
  if (hs->has_ac) v = _mm512_add_ps(v, k->ac);
  if (hs->on) { /* clip as x < lo ? lo : x, then x > hi ? hi : x: the bound first keeps a NaN */
    __m512 c = _mm512_min_ps(k->hhi, _mm512_max_ps(k->hlo, _mm512_add_ps(v, k->ha)));
    v = _mm512_mul_ps(v, c);
    v = hs->div ? _mm512_div_ps(v, k->hd) : _mm512_mul_ps(v, k->hd);
  }
  for (int32_t i = 0; i < hs->nact; i++) { /* the unfused ops' comparisons, NaN and -0 included */
    __m512 a = _mm512_set1_ps(hs->aa[i]), b = _mm512_set1_ps(hs->ab[i]);
    switch (hs->act[i]) {
    case MI__ACT_LEAKY: /* v >= 0 ? v : a * v */
      v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, k->z, _CMP_GE_OQ), _mm512_mul_ps(v, a), v);
      break;
    case MI__ACT_RELU: v = _mm512_max_ps(v, k->z); break;
    case MI__ACT_CLIP: { /* v < a ? a : (v > b ? b : v) */
      __mmask16 lo = _mm512_cmp_ps_mask(v, a, _CMP_LT_OQ);
      v = _mm512_mask_blend_ps(lo, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, b, _CMP_GT_OQ), v, b), a);
      break;
    }
    case MI__QT_MAX: /* v != v || v > a ? v : a */
      v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a, _CMP_NLE_UQ), a, v);
      break;
    default: /* MI__QT_MIN: v != v || v < a ? v : a */
      v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a, _CMP_NGE_UQ), a, v);
      break;
    }
  }
  return v;
}

/* Two vectors a step: with a DynamicQuantizeLinear after the tail, its range in two chains each
 * of min and max (one chain's vminps latency bound the loop and made the layer slower than the
 * separate min/max pass it replaces). The new value first: vminps returns its second operand
 * for a NaN, so a NaN leaves the range as the unfused pass's comparisons do. */
__attribute__((target("avx512f"))) static void qv_ftail512(const int32_t *acc, int64_t n, float s, int has_b, float b,
                                                           const float *res, int relu, const mi__blis_hsw_t *hs,
                                                           float *y) {
  ftail_k_t k;
  __m512 l0, l1, h0, h1, v0, v1;
  int64_t j;
  k.vs = _mm512_set1_ps(s);
  k.vb = _mm512_set1_ps(b);
  k.z = l0 = l1 = h0 = h1 = _mm512_setzero_ps();
  k.ha = _mm512_set1_ps(hs->a);
  k.hlo = _mm512_set1_ps(hs->lo);
  k.hhi = _mm512_set1_ps(hs->hi);
  k.hd = _mm512_set1_ps(hs->d);
  k.am = _mm512_set1_ps(hs->am);
  k.ac = _mm512_set1_ps(hs->ac);
  for (j = 0; j + 32 <= n; j += 32) {
    v0 = ftail_vec512(&k, acc + j, res ? res + j : NULL, 0xffff, has_b, relu, hs);
    v1 = ftail_vec512(&k, acc + j + 16, res ? res + j + 16 : NULL, 0xffff, has_b, relu, hs);
    if (hs->track) {
      l0 = _mm512_min_ps(v0, l0);
      h0 = _mm512_max_ps(v0, h0);
      l1 = _mm512_min_ps(v1, l1);
      h1 = _mm512_max_ps(v1, h1);
    }
    _mm512_storeu_ps(y + j, v0);
    _mm512_storeu_ps(y + j + 16, v1);
  }
  for (; j < n; j += 16) {
    __mmask16 km = n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1u);
    v0 = ftail_vec512(&k, acc + j, res ? res + j : NULL, km, has_b, relu, hs);
    if (hs->track) {
      l0 = _mm512_mask_min_ps(l0, km, v0, l0);
      h0 = _mm512_mask_max_ps(h0, km, v0, h0);
    }
    if (km == 0xffff)
      _mm512_storeu_ps(y + j, v0);
    else
      _mm512_mask_storeu_ps(y + j, km, v0);
  }
  if (hs->track) { /* reduced and merged only where they widen the range so far (rare after the first
                 rows): a reduction per call cost more than the min/max pass saved, at 128-256
                 outputs a call */
    uint32_t lb = __atomic_load_n(&hs->rlo, __ATOMIC_RELAXED), hb = __atomic_load_n(&hs->rhi, __ATOMIC_RELAXED);
    float lo, hi;
    memcpy(&lo, &lb, sizeof lo);
    memcpy(&hi, &hb, sizeof hi);
    l0 = _mm512_min_ps(l0, l1);
    h0 = _mm512_max_ps(h0, h1);
    if (_mm512_cmp_ps_mask(l0, _mm512_set1_ps(lo), _CMP_LT_OQ)) merge_range(&hs->rlo, _mm512_reduce_min_ps(l0), 0);
    if (_mm512_cmp_ps_mask(h0, _mm512_set1_ps(hi), _CMP_GT_OQ)) merge_range(&hs->rhi, _mm512_reduce_max_ps(h0), 1);
  }
}

void mi__blis_qv_ftail(int32_t simd, const int32_t *acc, int64_t n, float s, int has_b, float b, const float *res,
                       int relu, const mi__blis_hsw_t *hs, float *y) {
  static const mi__blis_hsw_t none;
  int64_t j;
  if (!hs) hs = &none;
  if (simd == MI__SIMD_AVX512) {
    qv_ftail512(acc, n, s, has_b, b, res, relu, hs, y);
    return;
  }
  if (simd == MI__SIMD_AVX2 && hs->nact == 0) { /* the plain loop was a tenth of IS-Net at AVX2 */
    float lo, hi;
    mi__blis_qv_ftail256(acc, n, s, has_b, b, res, relu, hs, y, &lo, &hi);
    if (hs->track) {
      merge_range(&hs->rlo, lo, 0);
      merge_range(&hs->rhi, hi, 1);
    }
    return;
  }
  for (j = 0; j < n; j++) y[j] = mi__blis_ftail_one(acc[j], s, has_b, b, res ? res + j : NULL, relu, hs);
  tail_acts(hs, y, n);
}

/* Monotone: every op of the tail maps a <= b to f(a) <= f(b), or every one to f(a) >= f(b) where
 * it reverses (a Mul by a negative constant, a Clip whose bounds cross), so the composition is
 * one or the other; a residual (another tensor), the hard-swish and a LeakyRelu of negative slope
 * are not. Finite constants keep NaN out (0 * inf), which the unfused min/max pass skips. */
static int ftail_monotone(const mi__blis_hsw_t *hs, int has_res) {
  if (has_res || hs->on || !isfinite(hs->am) || !isfinite(hs->ac)) return 0;
  for (int32_t i = 0; i < hs->nact; i++)
    if (!isfinite(hs->aa[i]) || !isfinite(hs->ab[i]) || (hs->act[i] == MI__ACT_LEAKY && !(hs->aa[i] >= 0.f)))
      return 0;
  return 1;
}

int mi__blis_ftail_codes(const mi__blis_prep_t *p, const mi__blis_qsrc_t *src, int64_t kk) {
  const mi_tensor_desc_t *y = mi__blis_tensor(p, src->y);
  int64_t i;
  if (!src->tail || !src->hs.dq || !y || !ftail_monotone(&src->hs, src->res_t >= 0) ||
      mi__blis_consumers(p, src->hs.dq_x) != 1 || mi__blis_is_kernel_output(p, src->hs.dq_x))
    return 0;
  for (i = 0; src->tb && i < src->ntb; i++)
    if (!isfinite(src->tb[i])) return 0;
  uint64_t l2 = p->ctx->cpu.l2_bytes ? p->ctx->cpu.l2_bytes : 2u << 20;
  return kk <= MI__QCODES_MAX_K && mi_sdk_tensor_bytes(y) > l2 / 4;
}

__attribute__((target("avx512f"))) static void acc_range512(const int32_t *acc, int64_t n, int32_t *r) {
  __m512i lo = _mm512_set1_epi32(r[0]), hi = _mm512_set1_epi32(r[1]);
  int64_t j;
  for (j = 0; j + 16 <= n; j += 16) {
    __m512i v = _mm512_loadu_si512(acc + j);
    lo = _mm512_min_epi32(lo, v);
    hi = _mm512_max_epi32(hi, v);
  }
  if (j < n) {
    __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
    __m512i v = _mm512_maskz_loadu_epi32(k, acc + j);
    lo = _mm512_mask_min_epi32(lo, k, lo, v);
    hi = _mm512_mask_max_epi32(hi, k, hi, v);
  }
  r[0] = _mm512_reduce_min_epi32(lo);
  r[1] = _mm512_reduce_max_epi32(hi);
}

void mi__blis_acc_range(int32_t simd, const int32_t *acc, int64_t n, int32_t *r) {
  if (simd == MI__SIMD_AVX512) {
    acc_range512(acc, n, r);
    return;
  }
  for (int64_t j = 0; j < n; j++) {
    r[0] = acc[j] < r[0] ? acc[j] : r[0];
    r[1] = acc[j] > r[1] ? acc[j] : r[1];
  }
}

/* The two ends through the same tail code as the plane's values (the same lanes' arithmetic), and
 * merged as the min/max pass does: strictly below lo or above hi, so a -0 never replaces the
 * initial +0 and the result's bits are the pass's whatever the order. */
void mi__blis_ftail_ends(int32_t simd, int32_t alo, int32_t ahi, float s, int has_b, float b, int relu,
                         const mi__blis_hsw_t *hs, float *lo, float *hi) {
  mi__blis_hsw_t h = *hs;
  int32_t a[2] = {alo, ahi};
  float v[2];
  h.dq = 0;
  mi__blis_qv_ftail(simd, a, 2, s, has_b, b, NULL, relu, &h, v);
  for (int i = 0; i < 2; i++) {
    *lo = v[i] < *lo ? v[i] : *lo;
    *hi = v[i] > *hi ? v[i] : *hi;
  }
}
