/* blis_resize.c - Resize (opset 10, 11+, 18+ forms) and Upsample, nearest and linear (nearest also
 * on INT8/UINT8 codes, whose passes blis_qresize.c runs), with the
 * reference interpreter's semantics (framework/src/ref/ref_resize.c): the input is resized one
 * axis at a time, each output position blending two input positions (weight 0 for nearest), so
 * the results match the reference bit for bit. Scales and sizes must be constants; the index
 * tables are computed at prepare. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_conv.h"

typedef mi__blis_rpass_t resize_pass_t;

typedef struct resize_state {
  int32_t x, y, npass; /* npass 0: an identity resize, a copy of `bytes` */
  int32_t q8;          /* a nearest resize of INT8/UINT8 codes: the passes move bytes (blis_qresize.c) */
  uint64_t bytes;
  resize_pass_t pass[MI_MAX_RANK];
  float *scratch[2]; /* ping-pong buffers for the intermediate passes, into aux */
  int32_t fused;     /* the last two passes are rows then the innermost axis: run as one */
  int32_t nearest_w; /* the innermost pass is nearest (weights all 0): a plain gather */
  /* The innermost pass doubles the axis (any coordinate mode): from output up_h to up_e, output
   * h + 2k + e blends input i0[h + e] + k and i1[h + e] + k with weight w[h + e], so 16 outputs
   * are two 8-wide blends interleaved (AVX2); 0 when not so or the CPU lacks AVX2. */
  int64_t up_h, up_e;
  /* The output is the kernel's: its range is found row by row as it is written (in L1), for a
   * DynamicQuantizeLinear in a later kernel (a U-Net decoder's upsample -> Concat -> quantize). */
  int32_t want_range, simd;
} resize_state_t;

/* Output values whose range is read back at once (consecutive rows; 8 KiB, in L1): one call a
 * row of 512 cost about a tenth of the Resize. */
#define RANGE_RUN 2048

/* Widest input row the fused passes blend on the stack. */
#define RESIZE_ROW 4096

/* Bytes of one pass's tables (two index arrays, one weight array), kept 8-byte aligned. */
static uint64_t pass_bytes(int64_t out) {
  return ((uint64_t)out * (2 * sizeof(int64_t) + sizeof(float)) + 7) & ~(uint64_t)7;
}

/* One output row of `inner` values of an axis pass: a copy where the tap is nearest (weight 0,
 * one source), else the blend. A copy gives the blend's bits for every finite value. */
static inline void pass_row(const resize_pass_t *ps, const float *x, float *y, int64_t o, int64_t j) {
  const float *a = x + (o * ps->in + ps->i0[j]) * ps->inner, *b = x + (o * ps->in + ps->i1[j]) * ps->inner;
  float *dst = y + (o * ps->out + j) * ps->inner, w = ps->w[j];
  int64_t t;
  if (w == 0.0f)
    memcpy(dst, a, (size_t)ps->inner * sizeof *dst);
  else
    for (t = 0; t < ps->inner; t++) dst[t] = (1.0f - w) * a[t] + w * b[t];
}

/* Outputs [j0, j1) of the innermost axis (inner 1) of one row: a gather through the tables. */
static inline void gather_run(const resize_pass_t *ps, const float *xr, float *yr, int nearest, int64_t j0,
                              int64_t j1) {
  int64_t j;
  if (nearest)
    for (j = j0; j < j1; j++) yr[j] = xr[ps->i0[j]];
  else
    for (j = j0; j < j1; j++) yr[j] = (1.0f - ps->w[j]) * xr[ps->i0[j]] + ps->w[j] * xr[ps->i1[j]];
}

/* The doubling run [h, e) of one row, 16 outputs a step: the same products and sum as the scalar
 * blend (no fused multiply-add, so the bits match the reference); returns where it stopped. */
__attribute__((target("avx2"))) static int64_t up2_run(const resize_pass_t *ps, const float *xr, float *yr,
                                                       int nearest, int64_t h, int64_t e) {
  const float *a0 = xr + ps->i0[h], *b0 = xr + ps->i1[h], *a1 = xr + ps->i0[h + 1], *b1 = xr + ps->i1[h + 1];
  __m256 w0 = _mm256_set1_ps(ps->w[h]), v0 = _mm256_set1_ps(1.0f - ps->w[h]);
  __m256 w1 = _mm256_set1_ps(ps->w[h + 1]), v1 = _mm256_set1_ps(1.0f - ps->w[h + 1]);
  int64_t k;
  for (k = 0; h + 2 * k + 16 <= e; k += 8) {
    __m256 ev = _mm256_loadu_ps(a0 + k), od = _mm256_loadu_ps(a1 + k), lo, hi;
    if (!nearest) {
      ev = _mm256_add_ps(_mm256_mul_ps(v0, ev), _mm256_mul_ps(w0, _mm256_loadu_ps(b0 + k)));
      od = _mm256_add_ps(_mm256_mul_ps(v1, od), _mm256_mul_ps(w1, _mm256_loadu_ps(b1 + k)));
    }
    lo = _mm256_unpacklo_ps(ev, od); /* e0 o0 e1 o1 | e4 o4 e5 o5 */
    hi = _mm256_unpackhi_ps(ev, od); /* e2 o2 e3 o3 | e6 o6 e7 o7 */
    _mm256_storeu_ps(yr + h + 2 * k, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(yr + h + 2 * k + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
  return h + 2 * k;
}

/* up2_run in AVX-512 lanes: 32 outputs a step, the same products and sums. */
__attribute__((target("avx512f"))) static int64_t up2_run512(const resize_pass_t *ps, const float *xr, float *yr,
                                                             int nearest, int64_t h, int64_t e) {
  const float *a0 = xr + ps->i0[h], *b0 = xr + ps->i1[h], *a1 = xr + ps->i0[h + 1], *b1 = xr + ps->i1[h + 1];
  const __m512 w0 = _mm512_set1_ps(ps->w[h]), v0 = _mm512_set1_ps(1.0f - ps->w[h]);
  const __m512 w1 = _mm512_set1_ps(ps->w[h + 1]), v1 = _mm512_set1_ps(1.0f - ps->w[h + 1]);
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  int64_t k;
  for (k = 0; h + 2 * k + 32 <= e; k += 16) {
    __m512 ev = _mm512_loadu_ps(a0 + k), od = _mm512_loadu_ps(a1 + k);
    if (!nearest) {
      ev = _mm512_add_ps(_mm512_mul_ps(v0, ev), _mm512_mul_ps(w0, _mm512_loadu_ps(b0 + k)));
      od = _mm512_add_ps(_mm512_mul_ps(v1, od), _mm512_mul_ps(w1, _mm512_loadu_ps(b1 + k)));
    }
    _mm512_storeu_ps(yr + h + 2 * k, _mm512_permutex2var_ps(ev, lo, od));
    _mm512_storeu_ps(yr + h + 2 * k + 16, _mm512_permutex2var_ps(ev, hi, od));
  }
  { /* the last whole pairs, under 16, in masked lanes (they had gone to up2_run and the scalar
     * gather: up to 15 outputs of a 512-wide row one at a time) */
    int64_t left = (e - h - 2 * k) / 2;
    __mmask16 m = (__mmask16)((1u << left) - 1u);
    uint32_t out = (1u << (2 * left)) - 1u;
    __m512 ev = _mm512_maskz_loadu_ps(m, a0 + k), od = _mm512_maskz_loadu_ps(m, a1 + k);
    if (!nearest) {
      ev = _mm512_add_ps(_mm512_mul_ps(v0, ev), _mm512_mul_ps(w0, _mm512_maskz_loadu_ps(m, b0 + k)));
      od = _mm512_add_ps(_mm512_mul_ps(v1, od), _mm512_mul_ps(w1, _mm512_maskz_loadu_ps(m, b1 + k)));
    }
    _mm512_mask_storeu_ps(yr + h + 2 * k, (__mmask16)out, _mm512_permutex2var_ps(ev, lo, od));
    _mm512_mask_storeu_ps(yr + h + 2 * k + 16, (__mmask16)(out >> 16), _mm512_permutex2var_ps(ev, hi, od));
    k += left;
  }
  return h + 2 * k;
}

/* gather_run 8 outputs a step with vgatherqps (the tables' int64 indices as they are), the same
 * products and sum: a Resize by another factor than 2 (IS-Net's side outputs, 16 -> 1024 and
 * 32 -> 1024) had gathered every output one at a time; returns where it stopped. */
__attribute__((target("avx2"))) static int64_t gather_run8(const resize_pass_t *ps, const float *xr, float *yr,
                                                           int nearest, int64_t j0, int64_t j1) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t j;
  for (j = j0; j + 8 <= j1; j += 8) {
    __m128 a0 = _mm256_i64gather_ps(xr, _mm256_loadu_si256((const __m256i *)(ps->i0 + j)), 4);
    __m128 a1 = _mm256_i64gather_ps(xr, _mm256_loadu_si256((const __m256i *)(ps->i0 + j + 4)), 4);
    __m256 a = _mm256_set_m128(a1, a0);
    if (!nearest) {
      __m128 b0 = _mm256_i64gather_ps(xr, _mm256_loadu_si256((const __m256i *)(ps->i1 + j)), 4);
      __m128 b1 = _mm256_i64gather_ps(xr, _mm256_loadu_si256((const __m256i *)(ps->i1 + j + 4)), 4);
      __m256 w = _mm256_loadu_ps(ps->w + j);
      a = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(one, w), a), _mm256_mul_ps(w, _mm256_set_m128(b1, b0)));
    }
    _mm256_storeu_ps(yr + j, a);
  }
  return j;
}

static inline void gather_row(const resize_state_t *r, const resize_pass_t *ps, const float *xr, float *yr,
                              int nearest) {
  int64_t j = 0;
  if (r->up_e > r->up_h) {
    gather_run(ps, xr, yr, nearest, 0, r->up_h);
    j = r->simd == MI__SIMD_AVX512 ? up2_run512(ps, xr, yr, nearest, r->up_h, r->up_e) : r->up_h;
    if (j + 16 <= r->up_e) j = up2_run(ps, xr, yr, nearest, j, r->up_e); /* (its taps j, j + 1 exist) */
  } else if (r->simd != MI__SIMD_C)
    j = gather_run8(ps, xr, yr, nearest, 0, ps->out);
  gather_run(ps, xr, yr, nearest, j, ps->out);
}

/* One blended row tmp[t] = (1 - w) * a[t] + w * b[t], in AVX-512 lanes where the CPU has them
 * (the same products and sum: no fused multiply-add). */
__attribute__((target("avx512f"))) static void blend512(const float *a, const float *b, float w, int64_t n,
                                                        float *tmp) {
  const __m512 vw = _mm512_set1_ps(w), v1 = _mm512_set1_ps(1.0f - w);
  int64_t t;
  for (t = 0; t + 16 <= n; t += 16)
    _mm512_storeu_ps(tmp + t, _mm512_add_ps(_mm512_mul_ps(v1, _mm512_loadu_ps(a + t)),
                                            _mm512_mul_ps(vw, _mm512_loadu_ps(b + t))));
  for (; t < n; t++) tmp[t] = (1.0f - w) * a[t] + w * b[t];
}

/* blend512 in AVX2 lanes, for the same reason (the rows of a capped plugin or an AVX2 CPU had been
 * blended one float at a time). */
__attribute__((target("avx2"))) static void blend256(const float *a, const float *b, float w, int64_t n, float *tmp) {
  const __m256 vw = _mm256_set1_ps(w), v1 = _mm256_set1_ps(1.0f - w);
  int64_t t;
  for (t = 0; t + 8 <= n; t += 8)
    _mm256_storeu_ps(tmp + t, _mm256_add_ps(_mm256_mul_ps(v1, _mm256_loadu_ps(a + t)),
                                            _mm256_mul_ps(vw, _mm256_loadu_ps(b + t))));
  for (; t < n; t++) tmp[t] = (1.0f - w) * a[t] + w * b[t];
}

/* Finds the doubling run of the innermost pass: the longest stretch from an early output where
 * every tap is its neighbour-but-one's moved by one input (edges clamp, so they stay scalar). */
static void plan_up2(resize_state_t *r, int32_t simd) {
  const resize_pass_t *ps = &r->pass[r->npass - 1];
  int64_t h, e;
  r->up_h = r->up_e = 0;
  if (simd == MI__SIMD_C || ps->inner != 1 || ps->out != 2 * ps->in || ps->out < 20) return;
  for (h = 0; h < 4; h++) {
    for (e = h; e + 2 < ps->out; e++)
      if (ps->i0[e + 2] != ps->i0[e] + 1 || ps->i1[e + 2] != ps->i1[e] + 1 || ps->w[e + 2] != ps->w[e]) break;
    if (e + 2 - h >= 16) { /* taps h .. e + 1 follow the rule */
      r->up_h = h;
      r->up_e = e + 2;
      return;
    }
  }
}

typedef struct resize_task {
  const resize_state_t *r;
  const resize_pass_t *ps;
  const float *x;
  float *y;
  mi__blis_range_t *rg; /* the output's range, merged per part; NULL: not wanted (or not the last pass) */
} resize_task_t;

/* Items are (outer block, output position) rows of one pass. */
static void pass_part(void *arg, int64_t i0, int64_t i1) {
  const resize_task_t *rt = arg;
  int64_t i, n = rt->ps->inner, b = i0;
  float lo = 0.f, hi = 0.f;
  for (i = i0; i < i1; i++) {
    pass_row(rt->ps, rt->x, rt->y, i / rt->ps->out, i % rt->ps->out);
    if (rt->rg && ((i + 1 - b) * n >= RANGE_RUN || i + 1 == i1)) { /* the rows just written, in L1 */
      mi__blis_minmax(rt->r->simd, rt->y + b * n, (i + 1 - b) * n, &lo, &hi);
      b = i + 1;
    }
  }
  if (rt->rg) mi__blis_range_merge(rt->rg, lo, hi);
}

/* Output row i's vertical blend (the second-to-last pass): its two input rows blended into tmp
 * (RESIZE_ROW floats), or the one nearest input row itself where the weight is 0. */
static inline const float *vblend_row(const resize_state_t *r, const float *x, int64_t i, float *tmp) {
  const resize_pass_t *ph = &r->pass[r->npass - 2];
  int64_t o = i / ph->out, j = i % ph->out, t;
  const float *a = x + (o * ph->in + ph->i0[j]) * ph->inner, *b;
  float w = ph->w[j];
  if (w == 0.0f) return a;
  b = x + (o * ph->in + ph->i1[j]) * ph->inner;
  if (r->simd == MI__SIMD_AVX512) blend512(a, b, w, ph->inner, tmp);
  else if (r->simd == MI__SIMD_AVX2)
    blend256(a, b, w, ph->inner, tmp);
  else
    for (t = 0; t < ph->inner; t++) tmp[t] = (1.0f - w) * a[t] + w * b[t];
  return tmp;
}

/* Output row i (outer block, output row j) of the last two passes together (rows, then the
 * innermost axis): row j's blend of its two input rows (or the one nearest row itself) is
 * gathered straight into dst, no intermediate plane. The sums are the two passes' own. */
static inline void fused_row(const resize_state_t *r, const float *x, int64_t i, float *dst) {
  float tmp[RESIZE_ROW];
  gather_row(r, &r->pass[r->npass - 1], vblend_row(r, x, i, tmp), dst, r->nearest_w);
}

/* The range of outputs [j0, j1) of a gathered row (gather_run's values), by minmax_c's rule: the
 * new value compared first, so a NaN leaves the running value. */
static void gather_range(const resize_pass_t *ps, const float *xr, int nearest, int64_t j0, int64_t j1, float *lo,
                         float *hi) {
  float l = *lo, g = *hi; /* (locals: lo and hi could alias the tables for all the compiler knows) */
  for (int64_t j = j0; j < j1; j++) {
    float v = nearest ? xr[ps->i0[j]] : (1.0f - ps->w[j]) * xr[ps->i0[j]] + ps->w[j] * xr[ps->i1[j]];
    l = v < l ? v : l;
    g = v > g ? v : g;
  }
  *lo = l;
  *hi = g;
}

/* The range of the doubling run [h, e) of a row without writing it: up2_run512's blends, the
 * even and odd outputs compared as they come (a range needs no interleaving), the last fewer
 * than 32 outputs in masked lanes (masked-off lanes keep the running value); returns where it
 * stopped (e, or e - 1 for an odd run). */
__attribute__((target("avx512f"))) static int64_t up2_range512(const resize_pass_t *ps, const float *xr, int nearest,
                                                               int64_t h, int64_t e, float *lo, float *hi) {
  const float *a0 = xr + ps->i0[h], *b0 = xr + ps->i1[h], *a1 = xr + ps->i0[h + 1], *b1 = xr + ps->i1[h + 1];
  const __m512 w0 = _mm512_set1_ps(ps->w[h]), v0 = _mm512_set1_ps(1.0f - ps->w[h]);
  const __m512 w1 = _mm512_set1_ps(ps->w[h + 1]), v1 = _mm512_set1_ps(1.0f - ps->w[h + 1]);
  __m512 l0 = _mm512_set1_ps(*lo), l1 = l0, h0 = _mm512_set1_ps(*hi), h1 = h0, ev, od;
  int64_t k, left;
  __mmask16 m;
  for (k = 0; h + 2 * k + 32 <= e; k += 16) {
    ev = _mm512_loadu_ps(a0 + k);
    od = _mm512_loadu_ps(a1 + k);
    if (!nearest) {
      ev = _mm512_add_ps(_mm512_mul_ps(v0, ev), _mm512_mul_ps(w0, _mm512_loadu_ps(b0 + k)));
      od = _mm512_add_ps(_mm512_mul_ps(v1, od), _mm512_mul_ps(w1, _mm512_loadu_ps(b1 + k)));
    }
    l0 = _mm512_min_ps(ev, l0);
    h0 = _mm512_max_ps(ev, h0);
    l1 = _mm512_min_ps(od, l1);
    h1 = _mm512_max_ps(od, h1);
  }
  left = (e - h - 2 * k) / 2; /* whole pairs left, under 16 */
  m = (__mmask16)((1u << left) - 1u);
  ev = _mm512_maskz_loadu_ps(m, a0 + k);
  od = _mm512_maskz_loadu_ps(m, a1 + k);
  if (!nearest) {
    ev = _mm512_add_ps(_mm512_mul_ps(v0, ev), _mm512_mul_ps(w0, _mm512_maskz_loadu_ps(m, b0 + k)));
    od = _mm512_add_ps(_mm512_mul_ps(v1, od), _mm512_mul_ps(w1, _mm512_maskz_loadu_ps(m, b1 + k)));
  }
  l0 = _mm512_mask_min_ps(l0, m, ev, l0);
  h0 = _mm512_mask_max_ps(h0, m, ev, h0);
  l1 = _mm512_mask_min_ps(l1, m, od, l1);
  h1 = _mm512_mask_max_ps(h1, m, od, h1);
  *lo = _mm512_reduce_min_ps(_mm512_min_ps(l0, l1));
  *hi = _mm512_reduce_max_ps(_mm512_max_ps(h0, h1));
  return h + 2 * (k + left);
}

/* up2_range512 in AVX2 lanes: 16 outputs a step, up2_run's blends. */
__attribute__((target("avx2"))) static int64_t up2_range(const resize_pass_t *ps, const float *xr, int nearest,
                                                         int64_t h, int64_t e, float *lo, float *hi) {
  const float *a0 = xr + ps->i0[h], *b0 = xr + ps->i1[h], *a1 = xr + ps->i0[h + 1], *b1 = xr + ps->i1[h + 1];
  const __m256 w0 = _mm256_set1_ps(ps->w[h]), v0 = _mm256_set1_ps(1.0f - ps->w[h]);
  const __m256 w1 = _mm256_set1_ps(ps->w[h + 1]), v1 = _mm256_set1_ps(1.0f - ps->w[h + 1]);
  __m256 l = _mm256_set1_ps(*lo), g = _mm256_set1_ps(*hi);
  float lv[8], hv[8];
  int64_t k;
  int i;
  for (k = 0; h + 2 * k + 16 <= e; k += 8) {
    __m256 ev = _mm256_loadu_ps(a0 + k), od = _mm256_loadu_ps(a1 + k);
    if (!nearest) {
      ev = _mm256_add_ps(_mm256_mul_ps(v0, ev), _mm256_mul_ps(w0, _mm256_loadu_ps(b0 + k)));
      od = _mm256_add_ps(_mm256_mul_ps(v1, od), _mm256_mul_ps(w1, _mm256_loadu_ps(b1 + k)));
    }
    l = _mm256_min_ps(od, _mm256_min_ps(ev, l));
    g = _mm256_max_ps(od, _mm256_max_ps(ev, g));
  }
  _mm256_storeu_ps(lv, l);
  _mm256_storeu_ps(hv, g);
  for (i = 0; i < 8; i++) {
    *lo = lv[i] < *lo ? lv[i] : *lo;
    *hi = hv[i] > *hi ? hv[i] : *hi;
  }
  return h + 2 * k;
}

/* The range of output row i of the last two passes merged into lo, hi, as fused_row would write
 * it and mi__blis_minmax would read it back, but with nothing written: the doubling run's blends
 * go straight to min and max. */
static void fused_row_range(const resize_state_t *r, const float *x, int64_t i, float *lo, float *hi) {
  const resize_pass_t *pw = &r->pass[r->npass - 1];
  float tmp[RESIZE_ROW];
  const float *row = vblend_row(r, x, i, tmp);
  int64_t h = 0;
  if (r->up_e > r->up_h) {
    gather_range(pw, row, r->nearest_w, 0, r->up_h, lo, hi);
    h = r->simd == MI__SIMD_AVX512 ? up2_range512(pw, row, r->nearest_w, r->up_h, r->up_e, lo, hi) : r->up_h;
    if (h + 16 <= r->up_e) h = up2_range(pw, row, r->nearest_w, h, r->up_e, lo, hi);
  }
  gather_range(pw, row, r->nearest_w, h, pw->out, lo, hi);
}

/* The fused passes: items are output rows. */
static void fused_part(void *arg, int64_t i0, int64_t i1) {
  const resize_task_t *rt = arg;
  const resize_state_t *r = rt->r;
  const resize_pass_t *pw = &r->pass[r->npass - 1];
  float lo = 0.f, hi = 0.f;
  int64_t i, b = i0;
  for (i = i0; i < i1; i++) {
    fused_row(r, rt->x, i, rt->y + i * pw->out);
    if (rt->rg && ((i + 1 - b) * pw->out >= RANGE_RUN || i + 1 == i1)) { /* the rows just written, in L1 */
      mi__blis_minmax(r->simd, rt->y + b * pw->out, (i + 1 - b) * pw->out, &lo, &hi);
      b = i + 1;
    }
  }
  if (rt->rg) mi__blis_range_merge(rt->rg, lo, hi);
}

static int32_t run_resize(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  const resize_state_t *r = s->state;
  const float *src = t[r->x];
  resize_task_t rt;
  int32_t i, last = r->npass - (r->fused ? 2 : 0);
  (void)err;
  if (r->q8)
    return mi__blis_qresize_run(r->pass, r->npass, r->fused, (uint8_t *)r->scratch[0], (uint8_t *)r->scratch[1],
                                t[r->x], t[r->y], r->bytes, env);
  if (r->npass == 0 && t[r->y] != t[r->x]) memcpy(t[r->y], t[r->x], (size_t)r->bytes);
  rt.r = r;
  for (i = 0; i < last; i++) {
    rt.ps = &r->pass[i];
    rt.x = src;
    rt.y = i == r->npass - 1 ? (float *)t[r->y] : r->scratch[i & 1];
    rt.rg = i == r->npass - 1 && r->want_range && env->range[r->y].asked ? &env->range[r->y] : NULL;
    mi__blis_parallel(env, rt.ps->outer * rt.ps->out, 1, rt.ps->inner, pass_part, &rt);
    src = rt.y;
  }
  if (r->fused) {
    const resize_pass_t *ph = &r->pass[r->npass - 2];
    rt.x = src;
    rt.y = t[r->y];
    rt.rg = r->want_range && env->range[r->y].asked ? &env->range[r->y] : NULL;
    mi__blis_parallel(env, ph->outer * ph->out, 1, ph->inner + r->pass[r->npass - 1].out, fused_part, &rt);
  }
  if (r->want_range && env->range[r->y].asked && r->npass > 0) env->range[r->y].known = 1;
  return MI_OK;
}

/* The step of a Resize of the last two passes alone (npass 2) whose output the Concat ->
 * DynamicQuantizeLinear step after it alone reads: that step computes the rows where it needs
 * them (blis_qconcat.c), and this one writes nothing. */
static int32_t run_deferred(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  (void)s, (void)t, (void)env, (void)err;
  return MI_OK;
}

int64_t mi__blis_resize_rows_of(const mi__blis_step_t *s, int32_t y, int64_t *len) {
  const resize_state_t *r = s->state;
  if (s->run != run_deferred || r->y != y) return 0;
  *len = r->pass[1].out;
  return r->pass[0].outer * r->pass[0].out;
}

void mi__blis_resize_rows(const mi__blis_step_t *s, void *const *t, int64_t i0, int64_t i1, float *dst) {
  const resize_state_t *r = s->state;
  for (int64_t i = i0; i < i1; i++, dst += r->pass[1].out) fused_row(r, t[r->x], i, dst);
}

void mi__blis_resize_rows_range(const mi__blis_step_t *s, void *const *t, int64_t i0, int64_t i1, float *lo,
                                float *hi) {
  const resize_state_t *r = s->state;
  for (int64_t i = i0; i < i1; i++) fused_row_range(r, t[r->x], i, lo, hi);
}

/* Reads a constant float vector (scales); count, 0 for an absent or empty input, -1 when not a
 * constant FLOAT32 vector. */
static int32_t const_floats(const mi__blis_prep_t *p, int32_t idx, float *out, int32_t max) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
  int64_t n;
  if (!t) return 0;
  n = mi_sdk_numel(t);
  if (n == 0) return 0;
  if (!t->data || t->dtype != MI_DTYPE_FLOAT32 || t->rank > 1 || n > max) return -1;
  memcpy(out, t->data, (size_t)n * sizeof *out);
  return (int32_t)n;
}

int32_t mi__blis_prep_resize(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  static const char *const modes[] = {"nearest", "linear", "bilinear"};
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int upsample = strcmp(n->op_type, "Upsample") == 0, modern = !upsample && n->opset >= 11;
  int linear, ct = MI_SDK_CT_ASYMMETRIC, nm = MI_SDK_NEAREST_SIMPLE, k;
  float scales[MI_MAX_RANK], sel[MI_MAX_RANK];
  int64_t sizes[MI_MAX_RANK], axes[MI_MAX_RANK], out[MI_MAX_RANK], cur[MI_MAX_RANK];
  int32_t nscales = 0, nsizes = 0, naxes = -1, given, want, axis_of[MI_MAX_RANK], i, d;
  uint64_t table = 0, scratch = 0;
  resize_state_t *r;
  char *aux;
  int q8 = x && (x->dtype == MI_DTYPE_INT8 || x->dtype == MI_DTYPE_UINT8);
  if (!x || !y || x->rank < 1 || y->rank != x->rank || (x->dtype != MI_DTYPE_FLOAT32 && !q8) || y->dtype != x->dtype)
    return mi__blis_unsupported(err, n, "input must be a FLOAT32 (or INT8/UINT8 codes) tensor of the output's rank");
  if ((k = mi_sdk_pick(mi_sdk_attr_string(n, "mode", "nearest"), modes, 3)) < 0) return mi__blis_unsupported(err, n, "mode not supported");
  linear = k != 0;
  if (q8 && linear) return mi__blis_unsupported(err, n, "a linear Resize of INT8/UINT8 codes (nearest only)");
  if (upsample && n->opset < 7) return mi__blis_unsupported(err, n, "Upsample before opset 7");
  if (modern) {
    /* Upsample and Resize-10 have no such attributes: asymmetric with the "simple" nearest rule. */
    if ((ct = mi_sdk_resize_ct_from_name(mi_sdk_attr_string(n, "coordinate_transformation_mode", "half_pixel"))) < 0 ||
        (ct == MI_SDK_CT_HALF_PIXEL_SYMMETRIC && n->opset < 19))
      return mi__blis_unsupported(err, n, "coordinate_transformation_mode not supported");
    if ((nm = mi_sdk_resize_nearest_from_name(mi_sdk_attr_string(n, "nearest_mode", "round_prefer_floor"))) < 0)
      return mi__blis_unsupported(err, n, "nearest_mode not supported");
    if (mi_sdk_attr_int(n, "antialias", 0) != 0) return mi__blis_unsupported(err, n, "antialias=1");
    if (k == 2) return mi__blis_unsupported(err, n, "mode='bilinear' is not an opset 11+ mode");
    if (n->opset >= 18 && mi_sdk_attr(n, "axes")) {
      const mi_attr_t *a = mi_sdk_attr(n, "axes");
      if (a->type != MI_ATTR_INTS || a->count > MI_MAX_RANK) return mi__blis_unsupported(err, n, "bad axes");
      naxes = a->count;
      for (i = 0; i < naxes; i++) axes[i] = a->ints[i];
    }
    nscales = const_floats(p, mi__blis_in(n, 2), scales, MI_MAX_RANK);
    if (mi__blis_in(n, 3) >= 0 && mi__blis_tensor(p, mi__blis_in(n, 3)) &&
        mi_sdk_numel(mi__blis_tensor(p, mi__blis_in(n, 3))) > 0) {
      nsizes = mi__blis_const_ints(p, mi__blis_in(n, 3), sizes, MI_MAX_RANK);
      if (nsizes <= 0) return mi__blis_unsupported(err, n, "sizes must be a constant");
    }
  } else if (upsample && n->opset < 9) {
    const mi_attr_t *a = mi_sdk_attr(n, "scales");
    if (a && a->type == MI_ATTR_FLOATS && a->count <= MI_MAX_RANK) {
      nscales = a->count;
      memcpy(scales, a->floats, (size_t)a->count * sizeof *scales);
    }
  } else {
    nscales = const_floats(p, mi__blis_in(n, 1), scales, MI_MAX_RANK);
  }
  if (nscales < 0) return mi__blis_unsupported(err, n, "scales must be a constant FLOAT32 vector");
  if ((nscales > 0) == (nsizes > 0)) return mi__blis_unsupported(err, n, "exactly one of scales and sizes is needed");
  given = nscales > 0 ? nscales : nsizes;
  want = naxes >= 0 ? naxes : x->rank;
  if (given != want) return mi__blis_unsupported(err, n, "scales/sizes count differs from the rank");
  for (i = 0; i < want; i++) {
    int64_t a = naxes < 0 ? i : axes[i] < 0 ? axes[i] + x->rank
                                            : axes[i];
    if (a < 0 || a >= x->rank) return mi__blis_unsupported(err, n, "axis out of range");
    axis_of[i] = (int32_t)a;
  }
  for (d = 0; d < x->rank; d++) {
    sel[d] = 1.0f;
    out[d] = x->dims[d];
  }
  {
    const char *policy = mi_sdk_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    if (nsizes > 0 && n->opset >= 18 && strcmp(policy, "stretch") != 0) {
      /* One common scale, the smallest (not_larger) or largest (not_smaller) of the ratios. */
      int larger = strcmp(policy, "not_smaller") == 0;
      float sc = larger ? 0.0f : INFINITY;
      if (!larger && strcmp(policy, "not_larger") != 0)
        return mi__blis_unsupported(err, n, "keep_aspect_ratio_policy not supported");
      for (i = 0; i < want; i++) {
        float q = (float)sizes[i] / (float)x->dims[axis_of[i]];
        sc = larger ? fmaxf(sc, q) : fminf(sc, q);
      }
      for (i = 0; i < want; i++) {
        sel[axis_of[i]] = sc;
        out[axis_of[i]] = (int64_t)roundf(sc * (float)x->dims[axis_of[i]]);
      }
    } else {
      for (i = 0; i < want; i++) {
        d = axis_of[i];
        if (nscales > 0) {
          if (!(scales[i] > 0.0f)) return mi__blis_unsupported(err, n, "scale is not positive");
          sel[d] = scales[i];
          out[d] = (int64_t)floorf(scales[i] * (float)x->dims[d]);
        } else {
          if (sizes[i] < 0 || x->dims[d] == 0) return mi__blis_unsupported(err, n, "invalid sizes");
          out[d] = sizes[i];
          sel[d] = (float)sizes[i] / (float)x->dims[d];
        }
      }
    }
  }
  for (d = 0; d < x->rank; d++)
    if (out[d] != y->dims[d]) return mi__blis_unsupported(err, n, "output shape differs from the computed one");

  if (!(r = mi__blis_state_new(p, s, sizeof *r, err))) return MI_ERR_OUT_OF_MEMORY;
  r->x = mi__blis_in(n, 0);
  r->y = mi__blis_out(n, 0);
  r->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  r->q8 = q8;
  r->want_range = !q8 && mi__blis_is_kernel_output(p, r->y);
  /* Plan the passes, sizing the index tables and the largest intermediate. */
  memcpy(cur, x->dims, sizeof cur);
  for (d = 0; d < x->rank; d++) {
    resize_pass_t *ps = &r->pass[r->npass];
    if (out[d] == x->dims[d] && sel[d] == 1.0f) continue; /* identity, in every mode: the reference's rule */
    if (out[d] < 1 || x->dims[d] < 1) return mi__blis_unsupported(err, n, "resize to or from an empty axis");
    ps->outer = ps->inner = 1;
    for (i = 0; i < d; i++) ps->outer *= cur[i];
    for (i = d + 1; i < x->rank; i++) ps->inner *= cur[i];
    ps->in = cur[d];
    ps->out = out[d];
    ps->scale = sel[d];
    cur[d] = out[d];
    table += pass_bytes(ps->out);
    r->npass++;
  }
  r->bytes = (uint64_t)mi_sdk_numel(x) * (q8 ? 1 : sizeof(float));
  /* Intermediates are the outputs of every pass but the last; rounded to 16 floats so the
   * tables after them stay 64-byte aligned. */
  r->fused = r->npass >= 2 && r->pass[r->npass - 1].inner == 1 &&
             r->pass[r->npass - 2].inner == r->pass[r->npass - 1].in && r->pass[r->npass - 1].in <= RESIZE_ROW;
  for (i = 0; i + 1 < r->npass - (r->fused ? 1 : 0); i++) {
    uint64_t e = (uint64_t)(r->pass[i].outer * r->pass[i].out * r->pass[i].inner);
    if (e > scratch) scratch = e;
  }
  scratch = (scratch + 15) & ~(uint64_t)15;
  aux = mi__blis_alloc(p->ctx, table + 2 * scratch * sizeof(float) + 64);
  if (!aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  s->aux = aux;
  r->scratch[0] = (float *)aux;
  r->scratch[1] = r->scratch[0] + scratch;
  aux += 2 * scratch * sizeof(float);
  for (i = 0; i < r->npass; i++) {
    resize_pass_t *ps = &r->pass[i];
    int64_t j;
    const float scale = ps->scale;
    ps->i0 = (int64_t *)aux;
    ps->i1 = ps->i0 + ps->out;
    ps->w = (float *)(ps->i1 + ps->out);
    aux += pass_bytes(ps->out);
    for (j = 0; j < ps->out; j++)
      mi_sdk_resize_tap(linear, ct, nm, scale, ps->in, ps->out, j, &ps->i0[j], &ps->i1[j], &ps->w[j]);
  }
  if (r->npass > 0) {
    const resize_pass_t *ps = &r->pass[r->npass - 1];
    int64_t j;
    r->nearest_w = 1;
    for (j = 0; j < ps->out; j++)
      if (ps->w[j] != 0.0f) r->nearest_w = 0;
    if (r->fused) plan_up2(r, mi__blis_simd_level(p->ctx->cpu.isa));
  }
  s->run = run_resize;
  if (!q8 && r->fused && r->npass == 2 && r->pass[1].out <= RESIZE_ROW && mi__blis_qconcat_takes(p, r->y)) {
    s->run = run_deferred;                            /* its rows are the quantize step's to compute */
    mi__blis_plane_mark(p, r->y, MI__PLANE_RESERVED); /* so the output is never written */
  }
  return MI_OK;
}
