/* blis_wino1d.c - conv.winograd1d: 1-D convolutions of any stride as Winograd F(m, r) on a
 * polyphase split.
 *
 * A stride-s conv of C channels with K taps reads x[c][s*o + k]; with k = s*j + p it is a
 * stride-1 conv of s*C channels x'[c*s + p][u] = x[c][s*u + p] with ceil(K/s) taps
 * w'[m][c*s + p][j] = w[m][c][s*j + p] (zero where s*j + p >= K). Kernels of more than 6 taps
 * after the split are cut into nq chunks of at most 3, each chunk one more set of channels reading
 * x' shifted by its first tap, so every conv runs as F(m, r) with r small: per tile of m outputs, alpha = m + r - 1 inputs,
 * Y = A^T [(G g) . (B^T d)], alpha GEMMs of the transformed weights (M x C*s*nq, transformed in
 * double and packed once at prepare) by the transformed input tiles (C*s*nq x tiles) on
 * conv.packed_gemm's register-blocked tiles: alpha multiply-adds per tile, channel and chunk
 * instead of the direct sum's m*K (Moonshine's 288 -> 576 k7 stride-3 conv: 864 channels of 3
 * taps, F(4,3): 1296 per output and output channel against 2016, 1152 with the depth cut of
 * w1_depths).
 *
 * Tile t of the stride-1 conv reads x'[t*m + i], i < alpha, which is x[c][s*m*(t + i/m) +
 * s*(i%m) + p]: each input row is split once into its s*m phases (Q, zero where the padding is),
 * and the input transform reads tile t's i-th value of every tile at Q[c][s*(i%m) + p][t + i/m],
 * contiguous over tiles, so it runs on whole vectors of tiles. The output transform writes m
 * vectors of tiles and interleaves them into the output row, then bias/BN and the epilogue chain
 * run on the row while it is in cache. Work items are blocks of tiles of one output row (image,
 * row of a 2-D conv with a 1xK kernel): a block a thread in its own scratch slot, or, with fewer
 * rows than cores, a block at a time with each stage split over the threads. */
#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>

#include "blis_conv.h"

#define W1_A 8  /* inputs per tile, at most: 7 finite points and infinity */
#define W1_R 6  /* taps per chunk, at most */
#define W1_L 16 /* tiles a transform step, at most (AVX-512 lanes): V, Mo and Q rows are padded to it */

typedef struct mi__blis_w1d {
  mi__blis_conv_t sub[W1_A]; /* position i's GEMM as a 1x1 conv of kd[i] to M channels */
  int64_t kd[W1_A];          /* ... its depth: the leading channels of V (the others' weights are 0 there) */
  int64_t m, r, a, nq;       /* outputs, taps, inputs per tile; tap chunks */
  int64_t sm, cv;            /* phases per input row (s*m); channels of V, C*s*nq, (chunk, phase, ci) */
  int64_t amax;              /* tile t reads phase columns t .. t + amax */
  int64_t nt, tb, nb;        /* tiles per output row, per block (the last fewer), blocks per row */
  int64_t ld, lq;            /* floats per row of V and Mo, of Q */
  int64_t slots, slot_fl;    /* scratch slots (one per running part), floats per slot */
  int32_t phased;            /* fewer rows than cores: a block at a time, each stage on all threads */
  float bt[W1_A][W1_A];      /* B^T */
  float at[W1_A][W1_A];      /* A^T, m rows */
  atomic_int *busy;          /* per slot */
  float *slot;
} mi__blis_w1d_t;

/* The interpolation points (with infinity as the last): 0, +-1, +-2, +-1/2, as the usual F(2,3),
 * F(4,3), F(6,3) take them. */
static const double w1_pts[W1_A - 1] = {0., 1., -1., 2., -2., 0.5, -0.5};

void mi__blis_w1d_tile(int64_t K, int64_t s, int64_t *m, int64_t *r, int64_t *nq) {
  int64_t kp = (K + s - 1) / s;
  *nq = kp <= W1_R ? 1 : (kp + 2) / 3;
  *r = (kp + *nq - 1) / *nq;
  /* F(4, r) up to r = 5 (alpha 8 at most), F(3,6); r = 1: one output a tile (no transform) */
  *m = *r == 1 ? 1 : *r <= 5 ? 4
                             : 3;
}

int mi__blis_w1d_fits(const mi__blis_conv_t *c) {
  /* 2-D: output row h is the 1-D conv of input row h * sh */
  return c->G == 1 && c->KH == 1 && c->dw == 1 && c->pt == 0 && c->OH == (c->H - 1) / c->sh + 1 && !c->nhwc_in &&
         !c->nhwc_out;
}

/* The transforms of F(m, r) for alpha = m + r - 1 points (alpha - 1 finite, then infinity), in
 * double. The linear convolution of g (r) and h (m) is evaluated at the points and
 * interpolated back; correlation is its transpose: G[i][k] = p_i^k / f_i, B^T[i][j] = the x^j
 * coefficient of L_i(x) = prod_{l != i} (x - p_l) (f_i = L_i(p_i)), A^T[j][i] = p_i^j; at infinity
 * G's row picks g[r-1], B^T's row is prod_l (x - p_l)'s coefficients and A^T's column picks j = m-1. */
static void w1_transforms(int64_t m, int64_t r, double bt[W1_A][W1_A], double g[W1_A][W1_A], double at[W1_A][W1_A]) {
  int64_t a = m + r - 1, i, j, l, k;
  memset(bt, 0, sizeof(double) * W1_A * W1_A);
  memset(g, 0, sizeof(double) * W1_A * W1_A);
  memset(at, 0, sizeof(double) * W1_A * W1_A);
  for (i = 0; i < a; i++) {
    double poly[W1_A + 1] = {1.}, f = 1.;
    int64_t deg = 0;
    for (l = 0; l < a - 1; l++) {
      if (l == i) continue;
      /* poly *= (x - p_l) */
      for (k = deg + 1; k > 0; k--) poly[k] = poly[k - 1] - w1_pts[l] * poly[k];
      poly[0] = -w1_pts[l] * poly[0];
      deg++;
      if (i < a - 1) f *= w1_pts[i] - w1_pts[l];
    }
    for (j = 0; j < a; j++) bt[i][j] = j <= deg ? poly[j] : 0.;
    if (i < a - 1) {
      double pw = 1.;
      for (k = 0; k < r; k++, pw *= w1_pts[i]) g[i][k] = pw / f;
      for (pw = 1., j = 0; j < m; j++, pw *= w1_pts[i]) at[j][i] = pw;
    } else {
      g[i][r - 1] = 1.;
      at[m - 1][i] = 1.;
    }
  }
}

/* Position i's GEMM depth kd[i] for F(m, r) in nq chunks of a K-tap stride-s conv of C channels:
 * up to the last (chunk, phase) block of C channels whose transformed weights can be nonzero
 * there. At infinity G takes each chunk's last tap, which for the phases past K % s (and the
 * last chunk's) is past the kernel: Moonshine's k7 stride-3 conv has 3 phases of 3 taps, the last
 * tap only in phase 0, so its last GEMM is 288 deep, not 864 (F(4,3): 1152 multiply-adds per
 * output and output channel instead of 1296). */
static void w1_depths(int64_t C, int64_t K, int64_t s, int64_t m, int64_t r, int64_t nq, int64_t kd[W1_A],
                      double bt[W1_A][W1_A], double g[W1_A][W1_A], double at[W1_A][W1_A]) {
  int64_t i, blk, j, a = m + r - 1;
  w1_transforms(m, r, bt, g, at);
  for (i = 0; i < a; i++) {
    int64_t last = 0;
    for (blk = 0; blk < s * nq; blk++)
      for (j = 0; j < r; j++)
        if (g[i][j] != 0. && s * (blk / s * r + j) + blk % s < K) last = blk;
    kd[i] = (last + 1) * C;
  }
}

/* The default takes it where bench_blis_conv measured it faster than its default (conv.packed_gemm
 * with AVX2 or AVX-512, im2col + BLIS at the C level; 1 thread, process CPU time, min of 20,
 * 2026-12-05, docs/backends/blis-cpu.md): GEMMs 64 or more deep (C*s*nq: 48 and 32 ran 0.9-1.05x,
 * slower at the C level), 64+ output channels (16: 0.7-0.8x), at least 1.5x fewer multiply-adds
 * than the direct sum (576 -> 288 k3 stride 2, 1.33x fewer: 0.9-1.1x) and 16+ tiles a row (not
 * silero's 8-sample convs). Taken: Moonshine's conv1 (1 -> 288 k127 stride 64, 1.54x at AVX-512)
 * and conv2 (288 -> 576 k7 stride 3, 1.4x), 128 -> 128 k5 (1.8x), 64 -> 64 k3 (1.2x; 1.0x at C). */
int mi__blis_w1d_default(const mi__blis_conv_t *c) {
  int64_t m, r, nq, kd[W1_A], i, sum = 0;
  double bt[W1_A][W1_A], g[W1_A][W1_A], at[W1_A][W1_A];
  if (!mi__blis_w1d_fits(c)) return 0;
  mi__blis_w1d_tile(c->KW, c->sw, &m, &r, &nq);
  if (c->C * c->sw * nq < 64 || c->M < 64 || (c->OW + m - 1) / m < 16) return 0;
  w1_depths(c->C, c->KW, c->sw, m, r, nq, kd, bt, g, at);
  for (i = 0; i < m + r - 1; i++) sum += kd[i];
  return 2 * c->C * c->KW * m >= 3 * sum;
}

typedef float w1v16 __attribute__((vector_size(64)));
typedef float w1v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef float w1v8 __attribute__((vector_size(32)));
typedef float w1v8u __attribute__((vector_size(32), aligned(4), may_alias));

/* The input transform of one virtual channel on nt tiles (rounded up to VL; Q's rows and V's have
 * room), and the output transform of one output channel into tiles [0, nt) of the row at y
 * (tile 0's first output at y, `width` outputs left from there) with bias/BN; one instance per
 * SIMD level, A (alpha) a constant where the caller's switch makes it one. */
#define W1_FNS(VT, VTU, VL, SFX, ATTR)                                                                      \
  static inline __attribute__((always_inline)) ATTR void in_body_##SFX(const mi__blis_w1d_t *wd, int64_t A, \
                                                                       const float *const *src, float *v,   \
                                                                       int64_t vs, int64_t nt) {            \
    int64_t u, i, j;                                                                                        \
    for (u = 0; u < nt; u += VL) {                                                                          \
      VT d[W1_A];                                                                                           \
      for (i = 0; i < A; i++) d[i] = *(const VTU *)(src[i] + u);                                            \
      for (i = 0; i < A; i++) {                                                                             \
        VT acc = d[0] * wd->bt[i][0];                                                                       \
        for (j = 1; j < A; j++) acc += d[j] * wd->bt[i][j];                                                 \
        *(VTU *)(v + i * vs + u) = acc;                                                                     \
      }                                                                                                     \
    }                                                                                                       \
  }                                                                                                         \
  ATTR static void in_##SFX(const mi__blis_w1d_t *wd, const float *const *src, float *v, int64_t vs,        \
                            int64_t nt) {                                                                   \
    switch (wd->a) {                                                                                        \
    case 6: in_body_##SFX(wd, 6, src, v, vs, nt); break;                                                    \
    case 8: in_body_##SFX(wd, 8, src, v, vs, nt); break;                                                    \
    default: in_body_##SFX(wd, wd->a, src, v, vs, nt); break;                                               \
    }                                                                                                       \
  }                                                                                                         \
  static inline __attribute__((always_inline)) ATTR void out_body_##SFX(                                    \
      const mi__blis_w1d_t *wd, int64_t A, int64_t Mt, const float *mo, int64_t ms, int64_t nt, float sc,   \
      float sh, float *y, int64_t width) {                                                                  \
    int64_t u, i, j, l;                                                                                     \
    for (u = 0; u < nt; u += VL) {                                                                          \
      VT o[W1_A];                                                                                           \
      float tmp[W1_A][VL];                                                                                  \
      int64_t lanes = nt - u < VL ? nt - u : VL;                                                            \
      float *yr = y + u * Mt;                                                                               \
      for (i = 0; i < A; i++) o[i] = *(const VTU *)(mo + i * ms + u);                                       \
      for (j = 0; j < Mt; j++) {                                                                            \
        VT acc = o[0] * wd->at[j][0];                                                                       \
        for (i = 1; i < A; i++) acc += o[i] * wd->at[j][i];                                                 \
        *(VTU *)tmp[j] = acc * sc + sh;                                                                     \
      }                                                                                                     \
      if (lanes == VL && (u + VL) * Mt <= width) {                                                          \
        for (l = 0; l < VL; l++)                                                                            \
          for (j = 0; j < Mt; j++) yr[l * Mt + j] = tmp[j][l];                                              \
      } else {                                                                                              \
        for (l = 0; l < lanes; l++)                                                                         \
          for (j = 0; j < Mt && (u + l) * Mt + j < width; j++) yr[l * Mt + j] = tmp[j][l];                  \
      }                                                                                                     \
    }                                                                                                       \
  }                                                                                                         \
  ATTR static void out_##SFX(const mi__blis_w1d_t *wd, const float *mo, int64_t ms, int64_t nt, float sc,   \
                             float sh, float *y, int64_t width) {                                           \
    if (wd->a == 6 && wd->m == 4) out_body_##SFX(wd, 6, 4, mo, ms, nt, sc, sh, y, width);                   \
    else if (wd->a == 8 && wd->m == 6)                                                                      \
      out_body_##SFX(wd, 8, 6, mo, ms, nt, sc, sh, y, width);                                               \
    else if (wd->a == 5 && wd->m == 4)                                                                      \
      out_body_##SFX(wd, 5, 4, mo, ms, nt, sc, sh, y, width);                                               \
    else                                                                                                    \
      out_body_##SFX(wd, wd->a, wd->m, mo, ms, nt, sc, sh, y, width);                                       \
  }

W1_FNS(w1v16, w1v16u, 16, avx512, __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))))
W1_FNS(w1v8, w1v8u, 8, avx2, __attribute__((target("avx2,fma"))))
W1_FNS(w1v8, w1v8u, 8, c, )

/* Rows r < 8 of 8 floats at src + r * ss into rows k < 8 of 8 floats at dst + k * ds (the
 * phase split of 8 tiles: 8 shuffles a row instead of 8 scalar copies). */
__attribute__((target("avx2"))) static void tr8(const float *src, int64_t ss, float *dst, int64_t ds) {
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss), r2 = _mm256_loadu_ps(src + 2 * ss);
  __m256 r3 = _mm256_loadu_ps(src + 3 * ss), r4 = _mm256_loadu_ps(src + 4 * ss), r5 = _mm256_loadu_ps(src + 5 * ss);
  __m256 r6 = _mm256_loadu_ps(src + 6 * ss), r7 = _mm256_loadu_ps(src + 7 * ss);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3);
  __m256 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}

typedef struct w1_task {
  const mi__blis_conv_t *c;
  const mi__blis_w1d_t *wd;
  void *const *t;
  mi__blis_env_t env1;  /* the run's BLIS contexts, one thread: the tile GEMMs run inside a part */
  int64_t n, h, t0, nt; /* phased: the block */
  float *q, *v, *mo;    /* phased: its scratch */
} w1_task_t;

/* Tiles [t0, t0 + nt) of row h of image n, channels [c0, c1): the phases Q[ci][k][u] =
 * x[ci][s*m*(t0 + u) + k - pl] (zero outside the row), then the input transform, channel
 * (ci, p, chunk) of the GEMMs' depth at a time. */
static void w1_in(const w1_task_t *wt, int64_t n, int64_t h, int64_t t0, int64_t nt, float *q, float *v, int64_t c0,
                  int64_t c1) {
  const mi__blis_conv_t *c = wt->c;
  const mi__blis_w1d_t *wd = wt->wd;
  int64_t sw = c->sw, W = c->W, ld = wd->ld, lq = wd->lq, sm = wd->sm, ci, k, u, p, jq, i;
  int64_t ntv = (nt + W1_L - 1) / W1_L * W1_L;
  const float *x = (const float *)wt->t[c->x] + (n * c->C * c->H + h * c->sh) * W;
  for (ci = c0; ci < c1; ci++) {
    const float *xr = x + ci * c->H * W;
    float *qc = q + ci * sm * lq;
    for (u = 0; u < lq; u++) {
      int64_t base = sm * (t0 + u) - c->pl;
      if (c->simd != MI__SIMD_C && sm >= 8 && u + 8 <= lq && base >= 0 && base + 8 * sm <= W) {
        /* 8 tiles inside the row: 8x8 transposes (the last one overlapping where sm % 8) */
        int64_t k0;
        for (k0 = 0; k0 < sm; k0 += 8) {
          int64_t kk = k0 + 8 <= sm ? k0 : sm - 8;
          tr8(xr + base + kk, sm, qc + kk * lq + u, lq);
        }
        u += 7;
      } else if (base >= 0 && base + sm <= W) {
        for (k = 0; k < sm; k++) qc[k * lq + u] = xr[base + k];
      } else {
        for (k = 0; k < sm; k++) qc[k * lq + u] = base + k >= 0 && base + k < W ? xr[base + k] : 0.f;
      }
    }
    for (p = 0; p < sw; p++)
      for (jq = 0; jq < wd->nq; jq++) {
        const float *src[W1_A];
        int64_t vc = (jq * sw + p) * c->C + ci;
        for (i = 0; i < wd->a; i++) {
          int64_t tap = i + jq * wd->r;
          src[i] = qc + (sw * (tap % wd->m) + p) * lq + tap / wd->m;
        }
        if (c->simd == MI__SIMD_AVX512) in_avx512(wd, src, v + vc * ld, wd->cv * ld, ntv);
        else if (c->simd == MI__SIMD_AVX2)
          in_avx2(wd, src, v + vc * ld, wd->cv * ld, ntv);
        else
          in_c(wd, src, v + vc * ld, wd->cv * ld, ntv);
      }
  }
}

/* The output transform of output channels [m0, m1) into tiles [t0, t0 + nt) of row h of image n,
 * with bias/BN, then the epilogue chain on the row segment. */
static void w1_out(const w1_task_t *wt, int64_t n, int64_t h, int64_t t0, int64_t nt, const float *mo, int64_t m0,
                   int64_t m1) {
  const mi__blis_conv_t *c = wt->c;
  const mi__blis_w1d_t *wd = wt->wd;
  int64_t OW = c->OW, ld = wd->ld, ms = c->M * ld, o0 = t0 * wd->m, width = OW - o0, mm;
  int64_t len = nt * wd->m < width ? nt * wd->m : width;
  float *y = (float *)wt->t[c->y] + (n * c->M * c->OH + h) * OW + o0;
  for (mm = m0; mm < m1; mm++) {
    float sc = c->affine ? c->scale[mm] : 1.f, sh = c->affine ? c->shift[mm] : 0.f;
    float *yr = y + mm * c->OH * OW;
    if (c->simd == MI__SIMD_AVX512) out_avx512(wd, mo + mm * ld, ms, nt, sc, sh, yr, width);
    else if (c->simd == MI__SIMD_AVX2)
      out_avx2(wd, mo + mm * ld, ms, nt, sc, sh, yr, width);
    else
      out_c(wd, mo + mm * ld, ms, nt, sc, sh, yr, width);
    if (c->epi_n) mi__blis_epi_tail(c, wt->t, n, mm, h * OW + o0, yr, len, 0, 0);
  }
}

static void w1_gemms(const w1_task_t *wt, const mi__blis_env_t *env, const float *v, float *mo, int64_t nt) {
  const mi__blis_w1d_t *wd = wt->wd;
  int64_t i;
  for (i = 0; i < wd->a; i++) {
    const float *vi = v + i * wd->cv * wd->ld;
    float *moi = mo + i * wt->c->M * wd->ld;
    if (wd->sub[i].simd == MI__SIMD_C) /* the plain weights, BLIS's kernels */
      mi__blis_sgemm(env, wt->c->M, nt, wd->kd[i], 1.f, wd->sub[i].packed, wd->kd[i], 1, vi, wd->ld, 1, 0.f, moi,
                     wd->ld, 1);
    else
      mi__blis_pg_gemm_ex(&wd->sub[i], wt->t, env, 0, 0, vi, wd->ld, NULL, 0, nt, moi, wd->ld);
  }
}

/* Blocks of tiles of one output row each, a block a part: item = ((n * OH) + h) * nb + block. */
static void w1_part(void *arg, int64_t i0, int64_t i1) {
  const w1_task_t *wt = arg;
  const mi__blis_conv_t *c = wt->c;
  const mi__blis_w1d_t *wd = wt->wd;
  int64_t s = mi__blis_wino_slot_claim(wd->busy, wd->slots), it;
  float *q, *v, *mo;
  q = wd->slot + s * wd->slot_fl;
  v = q + c->C * wd->sm * wd->lq;
  mo = v + wd->a * wd->cv * wd->ld;
  for (it = i0; it < i1; it++) {
    int64_t n = it / (c->OH * wd->nb), h = it / wd->nb % c->OH, t0 = it % wd->nb * wd->tb;
    int64_t nt = wd->nt - t0 < wd->tb ? wd->nt - t0 : wd->tb;
    w1_in(wt, n, h, t0, nt, q, v, 0, c->C);
    w1_gemms(wt, &wt->env1, v, mo, nt);
    w1_out(wt, n, h, t0, nt, mo, 0, c->M);
  }
  mi__blis_wino_slot_release(wd->busy, s);
}

/* Phased (fewer rows than cores): each block's stages split over the threads in turn. */
static void w1_in_part(void *arg, int64_t c0, int64_t c1) {
  const w1_task_t *wt = arg;
  w1_in(wt, wt->n, wt->h, wt->t0, wt->nt, wt->q, wt->v, c0, c1);
}

static void w1_out_part(void *arg, int64_t m0, int64_t m1) {
  const w1_task_t *wt = arg;
  w1_out(wt, wt->n, wt->h, wt->t0, wt->nt, wt->mo, m0, m1);
}

static int32_t run_w1d(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  const mi__blis_w1d_t *wd = s->aux;
  mi__blis_env_t pe = *env;
  w1_task_t wt;
  int64_t it;
  (void)err;
  memset(&wt, 0, sizeof wt);
  wt.c = c;
  wt.wd = wd;
  wt.t = t;
  wt.env1 = *env;
  wt.env1.threads = 1;
  wt.env1.pool = NULL;
  if (!wd->phased) {
    if (pe.threads > wd->slots) pe.threads = (int32_t)wd->slots;
    mi__blis_parallel(&pe, c->N * c->OH * wd->nb, 1, wd->a * c->M * wd->cv * wd->tb, w1_part, &wt);
    return MI_OK;
  }
  wt.q = wd->slot;
  wt.v = wt.q + c->C * wd->sm * wd->lq;
  wt.mo = wt.v + wd->a * wd->cv * wd->ld;
  for (it = 0; it < c->N * c->OH * wd->nb; it++) {
    wt.n = it / (c->OH * wd->nb);
    wt.h = it / wd->nb % c->OH;
    wt.t0 = it % wd->nb * wd->tb;
    wt.nt = wd->nt - wt.t0 < wd->tb ? wd->nt - wt.t0 : wd->tb;
    mi__blis_parallel(env, c->C, 1, wd->sm * wd->lq * wd->a, w1_in_part, &wt);
    w1_gemms(&wt, env, wt.v, wt.mo, wt.nt);
    mi__blis_parallel(env, c->M, 1, wd->a * wd->m * wd->ld, w1_out_part, &wt);
  }
  return MI_OK;
}

/* Tiles a block, at most: Moonshine's 104-tile rows in one block (its 2.3 MB of V for the 6
 * positions stream through L2 one position at a time) */
#define W1_TB_MAX 128

int32_t mi__blis_w1d_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err) {
  const float *w = p->k->ptr[c->w];
  mi__blis_w1d_t *wd, geo;
  int64_t M = c->M, C = c->C, K = c->KW, sw = c->sw, i, j, k, mm, ci, pp, jq, rows, parts, tbmax, unit;
  int32_t gsimd;
  uint64_t hdr = (sizeof *wd + 63) / 64 * 16, packed, busy, total;
  double bt[W1_A][W1_A], g[W1_A][W1_A], at[W1_A][W1_A];
  float *tmp, *packed0;
  uint64_t po[W1_A];
  if (!mi__blis_w1d_fits(c))
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "blis-cpu: conv.winograd1d needs a dense (group 1) 1-D conv (or 1xK on 2-D, no row padding), "
                        "dilation 1, on NCHW");
  memset(&geo, 0, sizeof geo);
  mi__blis_w1d_tile(K, sw, &geo.m, &geo.r, &geo.nq);
  geo.a = geo.m + geo.r - 1;
  geo.sm = sw * geo.m;
  geo.cv = C * sw * geo.nq;
  geo.amax = (geo.a - 1 + (geo.nq - 1) * geo.r) / geo.m;
  geo.nt = (c->OW + geo.m - 1) / geo.m;
  /* Blocks of at most W1_TB_MAX tiles, whole blocks of the GEMM tiles' pixels (32 on AVX-512
   * tiles, else 16) where a row takes more than one. With fewer rows than cores the blocks run one at a
   * time, each stage split over the threads (channels, the GEMMs' panels, output channels), so
   * that a single row does not split into blocks that leave the GEMM tiles' lanes idle; else a
   * block a thread. Planned for the device's cores, not the run's threads: the bits do not
   * depend on them. */
  rows = c->N * c->OH;
  parts = p->ctx->cpu.cores > 0 ? p->ctx->cpu.cores : 1;
  /* the GEMMs on AVX2 tiles where AVX-512 runs as two halves (Zen 4: Moonshine's conv2, 1 thread,
   * 6.9 -> 6.25 ms; the transforms stay on AVX-512) */
  gsimd = c->simd == MI__SIMD_AVX512 && p->ctx->cpu.avx512_halves ? MI__SIMD_AVX2 : c->simd;
  unit = gsimd == MI__SIMD_AVX512 ? 32 : 16;
  tbmax = W1_TB_MAX / unit * unit;
  if (tbmax < unit) tbmax = unit;
  geo.nb = (geo.nt + tbmax - 1) / tbmax;
  geo.tb = geo.nb == 1 ? geo.nt : ((geo.nt + geo.nb - 1) / geo.nb + unit - 1) / unit * unit;
  geo.nb = (geo.nt + geo.tb - 1) / geo.tb;
  geo.phased = rows < parts;
  geo.ld = (geo.tb + W1_L - 1) / W1_L * W1_L;
  geo.lq = (geo.ld + geo.amax + W1_L - 1) / W1_L * W1_L;
  geo.slots = geo.phased ? 1 : parts < rows * geo.nb ? parts
                                                     : rows * geo.nb;
  geo.slot_fl = C * geo.sm * geo.lq + geo.a * (geo.cv + M) * geo.ld;
  w1_depths(C, K, sw, geo.m, geo.r, geo.nq, geo.kd, bt, g, at);
  for (i = 0; i < W1_A; i++)
    for (j = 0; j < W1_A; j++) {
      geo.bt[i][j] = (float)bt[i][j];
      geo.at[i][j] = (float)at[i][j];
    }
  geo.sub[0].variant = MI__CONV_PG;
  geo.sub[0].simd = gsimd;
  geo.sub[0].N = geo.sub[0].G = geo.sub[0].KH = geo.sub[0].KW = 1;
  geo.sub[0].H = geo.sub[0].W = geo.sub[0].OH = geo.sub[0].OW = 1;
  geo.sub[0].sh = geo.sub[0].sw = geo.sub[0].dh = geo.sub[0].dw = 1;
  geo.sub[0].C = geo.cv;
  geo.sub[0].M = M;
  geo.sub[0].pg_mr = mi__blis_pg_panel(geo.sub[0].simd, 0);
  geo.sub[0].pg_ek = MI__EK_NONE;
  geo.sub[0].scale = c->scale;
  geo.sub[0].shift = c->shift;
  for (packed = 0, i = 0; i < geo.a; i++) {
    geo.sub[i] = geo.sub[0];
    geo.sub[i].C = geo.kd[i];
    po[i] = packed;
    packed += (mi__blis_pg_packed_floats(&geo.sub[i]) + 15) / 16 * 16;
  }
  busy = ((uint64_t)geo.slots * sizeof(atomic_int) + 63) / 64 * 16;
  total = hdr + busy + packed + (uint64_t)geo.slots * (uint64_t)geo.slot_fl;
  if (!(s->aux = mi__blis_calloc(p->ctx, total * sizeof(float))))
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  wd = s->aux;
  *wd = geo;
  wd->busy = (atomic_int *)((float *)s->aux + hdr);
  for (i = 0; i < wd->slots; i++) atomic_init(&wd->busy[i], 0);
  packed0 = (float *)s->aux + hdr + busy;
  wd->slot = packed0 + packed;
  if (!(tmp = mi__blis_alloc(p->ctx, (uint64_t)(M * wd->cv) * sizeof(float)))) {
    mi__blis_free(p->ctx, s->aux);
    s->aux = NULL;
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  }
  /* U[i][m][(chunk, p, ci)] = sum_j G[i][j] w[m][ci][s*(chunk*r + j) + p], position by position */
  for (i = 0; i < wd->a; i++) {
    int64_t kdi = wd->kd[i];
    for (mm = 0; mm < M; mm++)
      for (jq = 0; jq < wd->nq; jq++)
        for (pp = 0; pp < sw; pp++)
          for (ci = 0; ci < C; ci++) {
            int64_t vc = (jq * sw + pp) * C + ci;
            double acc = 0.;
            if (vc >= kdi) continue;
            for (j = 0; j < wd->r; j++) {
              k = sw * (jq * wd->r + j) + pp;
              if (k < K) acc += g[i][j] * (double)w[(mm * C + ci) * K + k];
            }
            tmp[mm * kdi + vc] = (float)acc;
          }
    wd->sub[i].packed = packed0 + po[i];
    if (wd->sub[i].simd == MI__SIMD_C) /* BLIS sgemm reads them as they are (C level: 2.5-4x faster
                                        * than the plain C tiles) */
      memcpy(wd->sub[i].packed, tmp, (size_t)(M * kdi) * sizeof(float));
    else
      mi__blis_pg_pack(&wd->sub[i], tmp, 0);
  }
  mi__blis_free(p->ctx, tmp);
  mi__blis_drop_const(p, c->w);
  s->run = run_w1d;
  return MI_OK;
}
