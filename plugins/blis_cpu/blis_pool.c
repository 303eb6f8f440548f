/* blis_pool.c - MaxPool, AveragePool (pads, strides, dilations, ceil_mode) and global pools. */
#include <math.h>
#include <string.h>

#include <immintrin.h>

#include "blis_conv.h"

/* Row blocks of a plane in the split of a pool (a multiple of the usual 2 and 4 threads). */
#define MI__POOL_ROW_BLOCKS 8

typedef struct pool_state {
  int32_t x, y, is_max, include_pad, simd, tiled;
  int64_t NC, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} pool_state_t;

/* Horizontal max of a KW-wide (2 or 3), stride-2 window over one row vm of W values (columns
 * outside [0, W) are skipped, as padding): yr[ow] = max over kw of vm[2 * ow - pl + kw], -inf when
 * none. Sixteen outputs per step from masked runs of 16 (-inf in the masked lanes): the even lanes,
 * the odd lanes and (KW 3) the even lanes shifted by one give the taps; taps are taken in kw order
 * with the same `v > acc` rule as the plain loops. KW 2 is the common 2x2/2 MaxPool, whose scalar
 * stride-2 loop ran at about 13 GB/s (blazeface-front's first MaxPool, 4.9% of the model). */
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void
hmax_s2_avx512(const float *vm, int64_t W, int64_t pl, float *yr, int64_t OW, int64_t KW) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  int64_t ow0, r;
  for (ow0 = 0; ow0 < OW; ow0 += 16) {
    int64_t b = 2 * ow0 - pl;
    __m512 l[3] = {ninf, ninf, ninf}, acc = ninf;
    __mmask16 kout = OW - ow0 >= 16 ? 0xffff : (__mmask16)((1u << (OW - ow0)) - 1u);
    for (r = 0; r < (KW == 3 ? 3 : 2); r++) { /* lanes whose column lies in [0, W); masked lanes are not read */
      int64_t lo = -(b + 16 * r), hi = W - (b + 16 * r);
      uint32_t m;
      lo = lo < 0 ? 0 : lo;
      hi = hi > 16 ? 16 : hi;
      m = hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;
      l[r] = _mm512_mask_loadu_ps(ninf, (__mmask16)m, vm + b + 16 * r);
    }
    {
      __m512 e0 = _mm512_permutex2var_ps(l[0], even, l[1]), o0 = _mm512_permutex2var_ps(l[0], odd, l[1]);
      acc = _mm512_max_ps(e0, acc); /* max_ps(v, acc) = v > acc ? v : acc */
      acc = _mm512_max_ps(o0, acc);
      if (KW == 3)
        acc = _mm512_max_ps(_mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(l[2]),
                                                                    _mm512_castps_si512(e0), 1)),
                            acc);
    }
    _mm512_mask_storeu_ps(yr + ow0, kout, acc);
  }
}

/* The same horizontal max with AVX2, eight outputs a step, on the outputs whose taps all lie in
 * [0, W) (the edges take the plain loop): the even and the odd columns of two runs of 8 by an
 * in-lane shuffle and a lane permute, the third tap (KW 3) as the even columns of the runs two
 * columns on. Taps in kw order with `v > acc`, as everywhere here. Returns the first output
 * column it did not write (from lo on). */
__attribute__((target("avx2,fma"))) static int64_t hmax_s2_avx2(const float *vm, int64_t pl, float *yr, int64_t lo,
                                                                int64_t hi, int64_t KW) {
  int64_t ow;
  for (ow = lo; ow + 8 <= hi; ow += 8) {
    const float *v = vm + 2 * ow - pl;
    __m256 a = _mm256_loadu_ps(v), b = _mm256_loadu_ps(v + 8);
    __m256 e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    __m256 o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
    __m256 acc = _mm256_max_ps(o, _mm256_max_ps(e, _mm256_set1_ps(-INFINITY)));
    if (KW == 3) {
      __m256 c = _mm256_loadu_ps(v + 2), d = _mm256_loadu_ps(v + 10);
      acc = _mm256_max_ps(_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(c, d, 0x88)), 0xd8)),
                          acc);
    }
    _mm256_storeu_ps(yr + ow, acc);
  }
  return ow;
}

/* Max over non-overlapping windows that tile the plane exactly (kernel = strides, no pads, no
 * dilation, H = KH * OH, W = KW * OW, KW 1 or 2): output row g is input rows KH*g .. KH*g+KH-1,
 * and with W = 2 * OW the horizontal pairs run on across rows, so `rows` output rows (any run of
 * whole planes) are one flat pass: the vertical maxima of a batch of rows into vm, then pairs
 * over vm as one array. The per-row loop below paid its setup on every output row, which on the
 * small planes of audio and detector models (1x48x32x16 -> 32x8, 72x28x8 -> 14x4) ran at
 * 1.5-5.6 GB/s. Same tap order and `v > acc` rule as the separable path. */
#define MI__POOL_VM 4096
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void
maxpool_tiled_avx512(const float *x, float *y, int64_t rows, int64_t W, int64_t KH, int64_t KW) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  float vm[MI__POOL_VM];
  int64_t batch = MI__POOL_VM / W, g0, g, w, kh, i;
  for (g0 = 0; g0 < rows; g0 += batch) {
    int64_t nb = rows - g0 < batch ? rows - g0 : batch, n = nb * W;
    const float *src = x + g0 * KH * W;
    float *dst = KW == 1 ? y + g0 * W : vm;
    if (KH > 1 || KW == 1) {
      for (g = 0; g < nb; g++)
        for (w = 0; w < W; w += 16) {
          __mmask16 m = W - w >= 16 ? 0xffff : (__mmask16)((1u << (W - w)) - 1u);
          const float *xr = x + (g0 + g) * KH * W + w;
          __m512 acc = ninf;
          for (kh = 0; kh < KH; kh++) acc = _mm512_max_ps(_mm512_maskz_loadu_ps(m, xr + kh * W), acc);
          _mm512_mask_storeu_ps(dst + g * W + w, m, acc);
        }
      src = vm;
    }
    if (KW == 1) continue;
    for (i = 0; i < n / 2; i += 16) {
      int64_t left = n / 2 - i;
      __mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);
      __mmask16 m0 = left >= 8 ? 0xffff : (__mmask16)((1u << (2 * left)) - 1u);
      __mmask16 m1 = left >= 16 ? 0xffff : left > 8 ? (__mmask16)((1u << (2 * left - 16)) - 1u)
                                                    : 0;
      __m512 l0 = _mm512_maskz_loadu_ps(m0, src + 2 * i), l1 = _mm512_maskz_loadu_ps(m1, src + 2 * i + 16);
      __m512 acc = _mm512_max_ps(_mm512_permutex2var_ps(l0, even, l1), ninf);
      acc = _mm512_max_ps(_mm512_permutex2var_ps(l0, odd, l1), acc);
      _mm512_mask_storeu_ps(y + g0 * (W / 2) + i, m, acc);
    }
  }
}

/* The same pass in C, compiled for AVX2 and for the baseline (the loops vectorise). */
static inline __attribute__((always_inline)) void maxpool_tiled_body(const float *x, float *y, int64_t rows,
                                                                     int64_t W, int64_t KH, int64_t KW) {
  float vm[MI__POOL_VM];
  int64_t batch = MI__POOL_VM / W, g0, g, w, kh, i;
  for (g0 = 0; g0 < rows; g0 += batch) {
    int64_t nb = rows - g0 < batch ? rows - g0 : batch, n = nb * W;
    const float *src = x + g0 * KH * W;
    float *dst = KW == 1 ? y + g0 * W : vm;
    if (KH > 1 || KW == 1) {
      for (g = 0; g < nb; g++) {
        const float *xr = x + (g0 + g) * KH * W;
        float *d = dst + g * W;
        for (w = 0; w < W; w++) d[w] = -INFINITY;
        for (kh = 0; kh < KH; kh++)
          for (w = 0; w < W; w++) d[w] = xr[kh * W + w] > d[w] ? xr[kh * W + w] : d[w];
      }
      src = vm;
    }
    if (KW == 1) continue;
    for (i = 0; i < n / 2; i++) {
      float a = src[2 * i] > -INFINITY ? src[2 * i] : -INFINITY;
      y[g0 * (W / 2) + i] = src[2 * i + 1] > a ? src[2 * i + 1] : a;
    }
  }
}
__attribute__((target("avx2,fma"))) static void maxpool_tiled_avx2(const float *x, float *y, int64_t rows, int64_t W,
                                                                   int64_t KH, int64_t KW) {
  maxpool_tiled_body(x, y, rows, W, KH, KW);
}
static void maxpool_tiled(const float *x, float *y, int64_t rows, int64_t W, int64_t KH, int64_t KW) {
  maxpool_tiled_body(x, y, rows, W, KH, KW);
}

/* Global pools: items are (image, channel) planes. */
static void global_part(void *arg, int64_t c0, int64_t c1) {
  const mi__blis_task_t *pt = arg;
  const pool_state_t *q = pt->state;
  const float *x = pt->t[q->x];
  float *y = pt->t[q->y];
  int64_t c, hw = q->H * q->W;
  /* one contiguous run per plane, eight partial sums / maxima (vectorisable), then combined in a
   * fixed order, so the result does not depend on the thread split */
  for (c = c0; c < c1; c++) {
    const float *xc = x + c * hw;
    float part[8];
    int64_t i, j;
    if (q->is_max) {
      for (j = 0; j < 8; j++) part[j] = -INFINITY;
      for (i = 0; i + 8 <= hw; i += 8)
        for (j = 0; j < 8; j++) part[j] = xc[i + j] > part[j] ? xc[i + j] : part[j];
      for (j = 0; i + j < hw; j++) part[j] = xc[i + j] > part[j] ? xc[i + j] : part[j];
      for (j = 1; j < 8; j++) part[0] = part[j] > part[0] ? part[j] : part[0];
    } else {
      for (j = 0; j < 8; j++) part[j] = 0.f;
      for (i = 0; i + 8 <= hw; i += 8)
        for (j = 0; j < 8; j++) part[j] += xc[i + j];
      for (j = 0; i + j < hw; j++) part[j] += xc[i + j];
      for (j = 1; j < 8; j++) part[0] += part[j];
    }
    y[c] = q->is_max ? part[0] : part[0] / (float)hw;
  }
}

/* Output rows [oh0, oh1) of planes [c0, c1) (image and channel flattened). */
static void pool_rows(const pool_state_t *q, const float *x, float *y, int64_t c0, int64_t c1, int64_t oh0,
                      int64_t oh1) {
  int64_t c, oh, ow, kh, kw;
  /* tiled: output row oh of plane c reads input rows [oh * KH, (oh + 1) * KH); whole planes are
   * one run of rows */
  if (q->tiled) {
    if (oh0 == 0 && oh1 == q->OH) {
      oh0 = 0;
      oh1 = (c1 - c0) * q->OH;
      c1 = c0 + 1;
    }
    for (c = c0; c < c1; c++) {
      const float *xr = x + (c * q->OH + oh0) * q->KH * q->W;
      float *yr = y + (c * q->OH + oh0) * q->OW;
      if (q->simd == MI__SIMD_AVX512)
        maxpool_tiled_avx512(xr, yr, oh1 - oh0, q->W, q->KH, q->KW);
      else if (q->simd == MI__SIMD_AVX2)
        maxpool_tiled_avx2(xr, yr, oh1 - oh0, q->W, q->KH, q->KW);
      else
        maxpool_tiled(xr, yr, oh1 - oh0, q->W, q->KH, q->KW);
    }
    return;
  }
  if (q->is_max && q->dh == 1 && q->dw == 1 && q->W <= 4096) {
    /* Max without dilation, separably: the running max of the window's input rows first (one
     * contiguous pass per row), then the horizontal max over that row's taps, on the run of output
     * columns whose input column exists. Max is order-free here: the value starts at -inf and a
     * NaN never replaces it (`v > acc` is false), as in the tap-by-tap loop below. */
    float vm[4096 + 8]; /* + 8: the AVX2 third-tap load reads one float past the row */
    for (c = c0; c < c1; c++) {
      const float *xc = x + c * q->H * q->W;
      for (oh = oh0; oh < oh1; oh++) {
        float *yr = y + (c * q->OH + oh) * q->OW;
        int64_t iw;
        for (iw = 0; iw < q->W; iw++) vm[iw] = -INFINITY;
        for (kh = 0; kh < q->KH; kh++) {
          int64_t ih = oh * q->sh - q->pt + kh;
          const float *xr = xc + ih * q->W;
          if (ih < 0 || ih >= q->H) continue;
          for (iw = 0; iw < q->W; iw++) vm[iw] = xr[iw] > vm[iw] ? xr[iw] : vm[iw];
        }
        if (q->simd == MI__SIMD_AVX512 && (q->KW == 3 || q->KW == 2) && q->sw == 2) {
          hmax_s2_avx512(vm, q->W, q->pl, yr, q->OW, q->KW);
          continue;
        }
        if (q->simd == MI__SIMD_AVX2 && (q->KW == 3 || q->KW == 2) && q->sw == 2) {
          /* outputs [vlo, vhi) have every tap inside the row; the others take the loop below */
          int64_t last = q->W - q->KW + q->pl, vlo = (q->pl + 1) / 2, vhi = last >= 0 ? last / 2 + 1 : 0, done;
          if (vhi > q->OW) vhi = q->OW;
          done = vhi > vlo ? hmax_s2_avx2(vm, q->pl, yr, vlo, vhi, q->KW) : vlo;
          for (ow = 0; ow < q->OW; ow++) {
            if (ow >= vlo && ow < done) continue;
            yr[ow] = -INFINITY;
            for (kw = 0; kw < q->KW; kw++) {
              int64_t iw = 2 * ow - q->pl + kw;
              if (iw >= 0 && iw < q->W) yr[ow] = vm[iw] > yr[ow] ? vm[iw] : yr[ow];
            }
          }
          continue;
        }
        for (ow = 0; ow < q->OW; ow++) yr[ow] = -INFINITY;
        for (kw = 0; kw < q->KW; kw++) {
          int64_t off = kw - q->pl, lo = 0, hi;
          const float *vr = vm + off;
          if (off < 0) lo = (-off + q->sw - 1) / q->sw;
          hi = q->W - 1 - off >= 0 ? (q->W - 1 - off) / q->sw + 1 : 0;
          if (hi > q->OW) hi = q->OW;
          if (q->sw == 2) {
            for (ow = lo; ow < hi; ow++) yr[ow] = vr[2 * ow] > yr[ow] ? vr[2 * ow] : yr[ow];
          } else {
            for (ow = lo; ow < hi; ow++) yr[ow] = vr[ow * q->sw] > yr[ow] ? vr[ow * q->sw] : yr[ow];
          }
        }
      }
    }
    return;
  }
  for (c = c0; c < c1; c++) {
    const float *xc = x + c * q->H * q->W;
    for (oh = oh0; oh < oh1; oh++)
      for (ow = 0; ow < q->OW; ow++) {
        float acc = q->is_max ? -INFINITY : 0.f;
        int64_t cnt = 0, h0 = oh * q->sh - q->pt, w0 = ow * q->sw - q->pl, padded;
        for (kh = 0; kh < q->KH; kh++) {
          int64_t ih = h0 + kh * q->dh;
          if (ih < 0 || ih >= q->H) continue;
          for (kw = 0; kw < q->KW; kw++) {
            int64_t iw = w0 + kw * q->dw;
            if (iw < 0 || iw >= q->W) continue;
            float v = xc[ih * q->W + iw];
            /* fmaxf without the libm call: acc starts at -inf and never becomes NaN, and a
             * NaN v leaves acc as fmaxf does */
            acc = q->is_max ? (v > acc ? v : acc) : acc + v;
            cnt++;
          }
        }
        if (!q->is_max) {
          if (q->include_pad) {
            /* The window counts pads but not the ceil_mode overhang past them. */
            int64_t he = h0 + (q->KH - 1) * q->dh + 1, we = w0 + (q->KW - 1) * q->dw + 1;
            if (he > q->H + q->pb) he = q->H + q->pb;
            if (we > q->W + q->pr) we = q->W + q->pr;
            padded = ((he - h0 + q->dh - 1) / q->dh) * ((we - w0 + q->dw - 1) / q->dw);
            cnt = padded;
          }
          acc = cnt ? acc / (float)cnt : 0.f;
        }
        y[(c * q->OH + oh) * q->OW + ow] = acc;
      }
  }
}

/* Items are (row block, plane) pairs, row blocks outer: part k of a split takes the k-th stretch
 * of the items (blis_threads.c), so with the planes' rows cut in MI__POOL_ROW_BLOCKS it reads the
 * k-th band of rows of every plane, the band the k-th part of a conv split over pixels (the packed
 * GEMM's pixel blocks) wrote before: its reads stay in its own core's cache. Split per plane, each
 * part read the other core's band of every plane, at about half the speed (blis-cpu.md). Max and
 * the average's sums run over each window in the same order whatever the split. */
static void pool_part(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *pt = arg;
  const pool_state_t *q = pt->state;
  int64_t rb = q->OH < MI__POOL_ROW_BLOCKS ? q->OH : MI__POOL_ROW_BLOCKS, i = i0;
  if (i0 == 0 && i1 == rb * q->NC) { /* not split: whole planes (one tiled call over all rows) */
    pool_rows(q, pt->t[q->x], pt->t[q->y], 0, q->NC, 0, q->OH);
    return;
  }
  while (i < i1) { /* each row block's run of planes in one call */
    int64_t b = i / q->NC, c = i - b * q->NC, n = i1 - i < q->NC - c ? i1 - i : q->NC - c;
    pool_rows(q, pt->t[q->x], pt->t[q->y], c, c + n, b * q->OH / rb, (b + 1) * q->OH / rb);
    i += n;
  }
}

/* Global pools of at least this many input floats follow a split producer's split (run_pool). */
#define MI__POOL_FOLLOW_MIN 8192

static int32_t run_pool(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  const pool_state_t *q = s->state;
  int64_t rb = q->OH < MI__POOL_ROW_BLOCKS ? q->OH : MI__POOL_ROW_BLOCKS;
  int global = q->KH == q->H && q->KW == q->W && q->OH == 1 && q->OW == 1 && !q->pt && !q->pl && !q->pb && !q->pr;
  /* an item's work: its window reads and its output writes (a streaming pass, counted in the
   * elements it moves; the window compares alone kept oww-embedding's first MaxPool on one thread) */
  int64_t work = global ? q->H * q->W : (q->OH * q->OW * (q->KH * q->KW + 1) + rb - 1) / rb;
  /* Why a global pool follows the loop before: it reads what the step before it wrote, and when
   * that step ran split (a conv over 12 us), half of it sits in the other core's cache. Run alone,
   * the pool read that half across cores at about half the speed (ppocr-v2-cls's
   * GlobalAveragePools after its split depthwise convs: 3.3-5.1 us at 2 threads, 1.5-2.3 at 1);
   * split per plane, as a depthwise conv splits, each part reads its own core's planes (2.2-3.3
   * us; docs/benchmarks.md, 2026-12-03 22:55 UTC). The windowed pools do not follow: their row
   * bands need not match the producer's split (a packed GEMM on small planes splits over channel
   * panels), and oww-embedding's smaller MaxPools ran 4.3 -> 6.8 and 6.5 -> 12.8 us with it. */
  if (global && env && env->threads > 1 && mi__blis_last_parts(env) > 1 &&
      q->NC * q->H * q->W >= MI__POOL_FOLLOW_MIN && work < MI__PAR_MIN_WORK)
    work = MI__PAR_MIN_WORK;
  (void)err;
  if (global) return mi__blis_run_parts(s, t, env, q->NC, 1, work, global_part);
  return mi__blis_run_parts(s, t, env, rb * q->NC, 1, work, pool_part);
}

static int q8_codes(const mi_tensor_desc_t *x) {
  return x && (x->dtype == MI_DTYPE_INT8 || x->dtype == MI_DTYPE_UINT8);
}

int32_t mi__blis_prep_pool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int global = strncmp(n->op_type, "Global", 6) == 0;
  int64_t k[2] = {1, 1}, st[2] = {1, 1}, d[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int auto_pad;
  pool_state_t *q;
  if (!global && q8_codes(x) && strcmp(n->op_type, "MaxPool") == 0) return mi__blis_prep_qmaxpool(p, s, err);
  if (!x || !y || x->rank != 4 || y->rank != 4 || x->layout == MI_LAYOUT_NHWC)
    return mi__blis_unsupported(err, n, "only 2-D NCHW pooling");
  if (mi__blis_out(n, 1) >= 0) return mi__blis_unsupported(err, n, "MaxPool Indices output");
  if (mi_sdk_attr_int(n, "storage_order", 0) != 0) return mi__blis_unsupported(err, n, "storage_order");
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  if (global) {
    k[0] = x->dims[2];
    k[1] = x->dims[3];
  } else if (!mi_sdk_attr_ints(n, "kernel_shape", k, 2, 1) || !mi_sdk_attr_ints(n, "strides", st, 2, 1) ||
             !mi_sdk_attr_ints(n, "dilations", d, 2, 1) || !mi_sdk_attr_ints(n, "pads", pads, 4, 0)) {
    return mi__blis_unsupported(err, n, "malformed kernel_shape/strides/dilations/pads");
  }
  q->x = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->is_max = strstr(n->op_type, "Max") != NULL;
  q->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  if (q->is_max) {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd` (MaxPool): 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) q->simd = p->ctx->simd_ids[si];
  }
  q->include_pad = (int32_t)mi_sdk_attr_int(n, "count_include_pad", 0);
  q->NC = x->dims[0] * x->dims[1];
  q->H = x->dims[2];
  q->W = x->dims[3];
  q->OH = y->dims[2];
  q->OW = y->dims[3];
  q->KH = k[0];
  q->KW = k[1];
  q->sh = st[0];
  q->sw = st[1];
  q->dh = d[0];
  q->dw = d[1];
  q->pt = pads[0];
  q->pl = pads[1];
  q->pb = pads[2];
  q->pr = pads[3];
  auto_pad = mi_sdk_auto_pad_from_name(ap && ap->type == MI_ATTR_STRING ? ap->s : NULL);
  if (auto_pad == MI_SDK_AUTO_PAD_SAME_UPPER || auto_pad == MI_SDK_AUTO_PAD_SAME_LOWER) {
    mi_sdk_same_pads(auto_pad, (q->OH - 1) * q->sh + (q->KH - 1) * q->dh + 1 - q->H, &q->pt, &q->pb);
    mi_sdk_same_pads(auto_pad, (q->OW - 1) * q->sw + (q->KW - 1) * q->dw + 1 - q->W, &q->pl, &q->pr);
  }
  q->tiled = q->is_max && q->KH == q->sh && q->KW == q->sw && (q->KW == 1 || q->KW == 2) && q->dh == 1 &&
             q->dw == 1 && !q->pt && !q->pl && !q->pb && !q->pr && q->H == q->KH * q->OH &&
             q->W == q->KW * q->OW && q->W <= MI__POOL_VM;
  s->run = run_pool;
  return MI_OK;
}
