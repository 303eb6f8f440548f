/* blis_pgemm.c - conv.packed_gemm: a convolution as GEMM on weights packed once at prepare, with
 * register-blocked AVX-512 / AVX2 / C micro-kernels and the fused epilogue applied in registers. */
#include <immintrin.h>
#include <string.h>

#include "blis_epi512.h"

/* Y[m][p] = epilogue(sum_k W[m][k] * B[k][p]) for the rows of one group. W is packed at prepare in
 * panels of `mr` rows, [panel][k][mr] (zeros past the last row), so a micro-kernel broadcasts
 * consecutive floats. B is read in place: the input itself for a pointwise conv, the stride-phased
 * padded planes at per-row offsets (koff) for the flat path of blis_conv.c, or im2col columns.
 *
 * Two orientations, chosen at prepare from the number of pixels per call:
 *  - pixels in the vector lanes ("nv", 40 pixels or more): an mr x (16 or 32) tile, masked at the
 *    pixel tail; bias/BN and the epilogue chain applied to the accumulators before the one store
 *    (specialised code for the common chains: none, Relu, Clip, Add, Add+Relu);
 *  - channels in the vector lanes ("mv", under 40 pixels: 6x6 and smaller planes; measured): a
 *    tile of up to 6 pixels x (16 or 32) channels, bias/BN and the lane-wise ops applied, written
 *    transposed, the rest of the chain on those short rows.
 * Every output element is summed over k in the same order whatever the thread split. */

typedef float pg_v16 __attribute__((vector_size(64)));

typedef struct pg_call {
  const mi__blis_conv_t *c;
  void *const *t;
  const float *pw; /* packed weights of the group */
  const float *b;  /* B[k][p] at b + k * ldb + p, or b + koff[k] + p when koff is set */
  int64_t ldb;
  const int64_t *koff;
  int epi; /* 0: raw sums, the caller runs the epilogue */
  float *y; /* the group's first output row; pixel p of row m at y + m * ldc + p0 + p */
  int64_t ldc, n, m0, mg, K, N, p0;
  int64_t mp_n, nb_n; /* row panels, pixel blocks */
} pg_call_t;

/* Epilogue ops from index `from` on, scalar, on a row segment (channel m of image n, pixels
 * [p0, p0 + len)). Used for what the vector prefix does not cover and by the "mv" tiles. */
void mi__blis_epi_tail(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, int64_t p0,
                       float *row, int64_t len, int32_t from, int affine) {
  int64_t i, ohw = c->OH * c->OW;
  int32_t e;
  if (affine && c->affine) {
    float s = c->scale[m], b = c->shift[m];
    for (i = 0; i < len; i++) row[i] = row[i] * s + b;
  }
  for (e = from; e < c->epi_n; e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    if (op->act == MI__ACT_NONE) {
      const float *r = (const float *)t[op->tensor] + (n * c->M + m) * ohw + p0;
      for (i = 0; i < len; i++) row[i] += r[i];
    } else {
      mi__blis_act_apply(op->act, op->a, op->b, row, len);
    }
  }
}

/* ---- "nv" tiles, AVX-512: 8 rows x 32 pixels (16 accumulators). */
#define MR512 8
#define AVX512_FN MI__AVX512_FN
#define AVX2_FN __attribute__((target("avx2,fma")))

/* One accumulator through the epilogue of kind EK (compile-time after inlining): the common chains
 * without the per-vector walk over the op list that mi__blis_epi512 does. sc/sh: the row's scale and
 * shift (1 and 0 without bias/BN); lo/hi: the Clip bounds; r: the residual at this vector. */
static inline __attribute__((always_inline)) AVX512_FN __m512
epi_kind(const pg_call_t *q, int64_t m, int64_t p, __mmask16 k, __m512 v, int ek, __m512 sc, __m512 sh,
         __m512 lo, __m512 hi) {
  if (ek == MI__EK_GENERIC) return mi__blis_epi512(q->c, q->t, q->n, m, p, k, v);
  v = _mm512_fmadd_ps(v, sc, sh);
  switch (ek) {
  case MI__EK_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
  case MI__EK_CLIP: return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  case MI__EK_ADD:
  case MI__EK_ADD_RELU: {
    const mi__blis_conv_t *c = q->c;
    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, (const float *)q->t[c->epi[0].tensor] +
                                                      (q->n * c->M + m) * c->OH * c->OW + p));
    return ek == MI__EK_ADD ? v : _mm512_max_ps(v, _mm512_setzero_ps());
  }
  default: return v; /* MI__EK_NONE */
  }
}

static inline __attribute__((always_inline)) AVX512_FN void
nv512_tile(const pg_call_t *q, int64_t mp, int64_t col, int two, __mmask16 k0, __mmask16 k1, int ek) {
  const float *a = q->pw + mp * MR512 * q->K, *b = q->b + col;
  __m512 c0[MR512], c1[MR512];
  int64_t kk, ldb = q->ldb, rows = q->mg - mp * MR512;
  int i;
  /* Every index into c0/c1 is a constant after unrolling, so they stay in registers. */
#pragma GCC unroll 8
  for (i = 0; i < MR512; i++) c0[i] = c1[i] = _mm512_setzero_ps();
  for (kk = 0; kk < q->K; kk++) {
    const float *bk = q->koff ? b + q->koff[kk] : b + kk * ldb;
    __m512 b0 = _mm512_maskz_loadu_ps(k0, bk);
    __m512 b1 = two ? _mm512_maskz_loadu_ps(k1, bk + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (i = 0; i < MR512; i++) {
      __m512 av = _mm512_set1_ps(a[kk * MR512 + i]);
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
      if (two) c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
    }
  }
#pragma GCC unroll 8
  for (i = 0; i < MR512; i++) {
    if (i < rows) {
      int64_t m = mp * MR512 + i, p = q->p0 + col;
      float *yr = q->y + m * q->ldc + p;
      if (!q->epi) {
        _mm512_mask_storeu_ps(yr, k0, c0[i]);
        if (two) _mm512_mask_storeu_ps(yr + 16, k1, c1[i]);
        continue;
      }
      {
        const mi__blis_conv_t *c = q->c;
        int64_t mm = q->m0 + m;
        __m512 sc = _mm512_set1_ps(c->affine ? c->scale[mm] : 1.f), sh = _mm512_set1_ps(c->affine ? c->shift[mm] : 0.f);
        __m512 lo = _mm512_set1_ps(ek == MI__EK_CLIP ? c->epi[0].a : 0.f), hi = _mm512_set1_ps(ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
        _mm512_mask_storeu_ps(yr, k0, epi_kind(q, mm, p, k0, c0[i], ek, sc, sh, lo, hi));
        if (two) _mm512_mask_storeu_ps(yr + 16, k1, epi_kind(q, mm, p + 16, k1, c1[i], ek, sc, sh, lo, hi));
      }
    }
  }
}

/* The tile for one epilogue kind and pixel width, chosen at run time, specialised at compile time. */
static inline __attribute__((always_inline)) AVX512_FN void nv512_ek(const pg_call_t *q, int64_t mp, int64_t col,
                                                                      int two, __mmask16 k0, __mmask16 k1) {
  switch (q->c->pg_ek) {
  case MI__EK_NONE: nv512_tile(q, mp, col, two, k0, k1, MI__EK_NONE); break;
  case MI__EK_RELU: nv512_tile(q, mp, col, two, k0, k1, MI__EK_RELU); break;
  case MI__EK_CLIP: nv512_tile(q, mp, col, two, k0, k1, MI__EK_CLIP); break;
  case MI__EK_ADD: nv512_tile(q, mp, col, two, k0, k1, MI__EK_ADD); break;
  case MI__EK_ADD_RELU: nv512_tile(q, mp, col, two, k0, k1, MI__EK_ADD_RELU); break;
  default: nv512_tile(q, mp, col, two, k0, k1, MI__EK_GENERIC); break;
  }
}

AVX512_FN static void nv512(const pg_call_t *q, int64_t item) {
  int64_t mp = item % q->mp_n, col = (item / q->mp_n) * 32, left = q->N - col;
  __mmask16 k0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);
  if (left > 16) {
    __mmask16 k1 = left >= 32 ? 0xffff : (__mmask16)((1u << (left - 16)) - 1u);
    nv512_ek(q, mp, col, 1, k0, k1);
  } else {
    nv512_ek(q, mp, col, 0, k0, 0);
  }
}

/* ---- "nv" tiles, AVX2: 6 rows x 16 pixels (12 accumulators). */
#define MR256 6

static inline __attribute__((always_inline)) AVX2_FN __m256
epi256(const pg_call_t *q, int64_t m, int64_t p, __m256i k, __m256 v) {
  const mi__blis_conv_t *c = q->c;
  int32_t e;
  if (c->affine) v = _mm256_fmadd_ps(v, _mm256_set1_ps(c->scale[m]), _mm256_set1_ps(c->shift[m]));
  for (e = 0; e < c->pg_vec_ops; e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    switch (op->act) {
    case MI__ACT_NONE:
      v = _mm256_add_ps(v, _mm256_maskload_ps((const float *)q->t[op->tensor] +
                                                  (q->n * c->M + m) * c->OH * c->OW + p, k));
      break;
    case MI__ACT_RELU: v = _mm256_max_ps(v, _mm256_setzero_ps()); break;
    case MI__ACT_CLIP: v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(op->a)), _mm256_set1_ps(op->b)); break;
    default: {
      __m256 h = _mm256_add_ps(_mm256_div_ps(v, _mm256_set1_ps(6.f)), _mm256_set1_ps(0.5f));
      h = _mm256_min_ps(_mm256_max_ps(h, _mm256_setzero_ps()), _mm256_set1_ps(1.f));
      v = _mm256_mul_ps(v, h);
      break;
    }
    }
  }
  return v;
}

static inline __attribute__((always_inline)) AVX2_FN __m256i lane_mask256(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 8 ? 8 : left < 0 ? 0 : left)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AVX2_FN static void nv256(const pg_call_t *q, int64_t item) {
  int64_t mp = item % q->mp_n, col = (item / q->mp_n) * 16, left = q->N - col;
  const float *a = q->pw + mp * MR256 * q->K, *b = q->b + col;
  __m256i k0 = lane_mask256(left), k1 = lane_mask256(left - 8);
  __m256 c0[MR256], c1[MR256];
  int64_t kk, ldb = q->ldb, rows = q->mg - mp * MR256;
  int i;
#pragma GCC unroll 6
  for (i = 0; i < MR256; i++) c0[i] = c1[i] = _mm256_setzero_ps();
  for (kk = 0; kk < q->K; kk++) {
    const float *bk = q->koff ? b + q->koff[kk] : b + kk * ldb;
    __m256 b0 = _mm256_maskload_ps(bk, k0), b1 = _mm256_maskload_ps(bk + 8, k1);
#pragma GCC unroll 6
    for (i = 0; i < MR256; i++) {
      __m256 av = _mm256_broadcast_ss(a + kk * MR256 + i);
      c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
    }
  }
#pragma GCC unroll 6
  for (i = 0; i < MR256; i++) {
    if (i < rows) {
      int64_t m = mp * MR256 + i, p = q->p0 + col;
      float *yr = q->y + m * q->ldc + p;
      _mm256_maskstore_ps(yr, k0, q->epi ? epi256(q, q->m0 + m, p, k0, c0[i]) : c0[i]);
      if (left > 8) _mm256_maskstore_ps(yr + 8, k1, q->epi ? epi256(q, q->m0 + m, p + 8, k1, c1[i]) : c1[i]);
    }
  }
}

/* ---- "nv" tiles, plain C: 4 rows x 16 pixels; the epilogue runs on the stored rows. */
#define MRC 4

static void nvc(const pg_call_t *q, int64_t item) {
  int64_t mp = item % q->mp_n, col = (item / q->mp_n) * 16, left = q->N - col;
  const float *a = q->pw + mp * MRC * q->K, *b = q->b + col;
  float acc[MRC][16];
  int64_t kk, j, rows = q->mg - mp * MRC;
  int i;
  if (left > 16) left = 16;
  memset(acc, 0, sizeof acc);
  for (kk = 0; kk < q->K; kk++)
    for (i = 0; i < MRC; i++) {
      float av = a[kk * MRC + i];
      const float *bk = q->koff ? b + q->koff[kk] : b + kk * q->ldb;
      for (j = 0; j < left; j++) acc[i][j] += av * bk[j];
    }
  if (rows > MRC) rows = MRC;
  for (i = 0; i < rows; i++) {
    int64_t m = mp * MRC + i, p = q->p0 + col;
    float *yr = q->y + m * q->ldc + p;
    for (j = 0; j < left; j++) yr[j] = acc[i][j];
    if (q->epi) mi__blis_epi_tail(q->c, q->t, q->n, q->m0 + m, p, yr, left, 0, 1);
  }
}

/* ---- "mv" tiles: NP pixels x (16 * NV) channels from panels of 16 * NV channels. Vector types,
 * one body for the three targets (NV = 2 for AVX-512, 1 otherwise). */
#define MV_PIX 6

/* One tile of NP (compile-time) pixels starting at p: every index into acc is a constant, so the
 * accumulators stay in registers. */
/* Leading epilogue ops that act element by element (up to the first residual add). */
static int32_t lane_ops(const mi__blis_conv_t *c) {
  int32_t e;
  for (e = 0; e < c->pg_vec_ops && c->epi[e].act != MI__ACT_NONE; e++) {
  }
  return e;
}

/* Bias/BN and the lane-wise ops on one pixel's `width` channels (sc/sh padded with the panel). */
static inline __attribute__((always_inline)) void lane_epi(const mi__blis_conv_t *c, const float *sc,
                                                           const float *sh, float *v, int64_t width,
                                                           int32_t nops) {
  int64_t i;
  int32_t e;
  if (c->affine)
    for (i = 0; i < width; i++) v[i] = v[i] * sc[i] + sh[i];
  for (e = 0; e < nops; e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    float a = op->a, b = op->b;
    if (op->act == MI__ACT_RELU) {
      for (i = 0; i < width; i++) v[i] = v[i] > 0.f ? v[i] : 0.f;
    } else if (op->act == MI__ACT_CLIP) {
      for (i = 0; i < width; i++) v[i] = v[i] < a ? a : (v[i] > b ? b : v[i]);
    } else { /* HardSwish */
      for (i = 0; i < width; i++) {
        float h = v[i] / 6.f + 0.5f;
        h = h < 0.f ? 0.f : (h > 1.f ? 1.f : h);
        v[i] = v[i] * h;
      }
    }
  }
}

static inline __attribute__((always_inline)) void mv_tile(const pg_call_t *q, const float *a, int64_t mp,
                                                          int64_t rows, int64_t p, int NV, int NP,
                                                          const float *sc, const float *sh, int32_t nops) {
  int64_t width = 16 * NV, kk, i;
  pg_v16 acc[MV_PIX][2];
  const float *b = q->b + p;
  float tile[MV_PIX][32];
  int j;
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) acc[j][0] = acc[j][1] = (pg_v16){0};
  for (kk = 0; kk < q->K; kk++) {
    const float *bk = q->koff ? b + q->koff[kk] : b + kk * q->ldb;
    pg_v16 w0, w1 = {0};
    memcpy(&w0, a + kk * width, sizeof w0);
    if (NV == 2) memcpy(&w1, a + kk * width + 16, sizeof w1);
#pragma GCC unroll 6
    for (j = 0; j < MV_PIX; j++) {
      if (j < NP) {
        float bv = bk[j];
        acc[j][0] += bv * w0;
        if (NV == 2) acc[j][1] += bv * w1;
      }
    }
  }
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    if (j < NP) {
      memcpy(tile[j], &acc[j][0], sizeof acc[j][0]);
      if (NV == 2) memcpy(tile[j] + 16, &acc[j][1], sizeof acc[j][1]);
      if (q->epi) lane_epi(q->c, sc, sh, tile[j], width, nops);
    }
  }
  for (i = 0; i < rows; i++) {
    float *yr = q->y + (mp * width + i) * q->ldc + q->p0 + p;
#pragma GCC unroll 6
    for (j = 0; j < MV_PIX; j++)
      if (j < NP) yr[j] = tile[j][i];
  }
}

static inline __attribute__((always_inline)) void mv_body(const pg_call_t *q, int64_t item, int NV) {
  int64_t width = 16 * NV, mp = item, rows = q->mg - mp * width, p, i;
  const float *a = q->pw + mp * width * q->K;
  float sc[32], sh[32];
  int32_t nops = lane_ops(q->c);
  if (rows > width) rows = width;
  for (i = 0; i < width; i++) { /* the panel's scale/shift, zero past the last row */
    sc[i] = i < rows && q->c->affine ? q->c->scale[q->m0 + mp * width + i] : 0.f;
    sh[i] = i < rows && q->c->affine ? q->c->shift[q->m0 + mp * width + i] : 0.f;
  }
  for (p = 0; p + MV_PIX <= q->N; p += MV_PIX) mv_tile(q, a, mp, rows, p, NV, MV_PIX, sc, sh, nops);
  switch (q->N - p) {
  case 5: mv_tile(q, a, mp, rows, p, NV, 5, sc, sh, nops); break;
  case 4: mv_tile(q, a, mp, rows, p, NV, 4, sc, sh, nops); break;
  case 3: mv_tile(q, a, mp, rows, p, NV, 3, sc, sh, nops); break;
  case 2: mv_tile(q, a, mp, rows, p, NV, 2, sc, sh, nops); break;
  case 1: mv_tile(q, a, mp, rows, p, NV, 1, sc, sh, nops); break;
  default: break;
  }
  /* the rest of the chain (residual adds, other activations) on the stored rows */
  for (i = 0; i < rows && q->epi && nops < q->c->epi_n; i++)
    mi__blis_epi_tail(q->c, q->t, q->n, q->m0 + mp * width + i, q->p0,
                      q->y + (mp * width + i) * q->ldc + q->p0, q->N, nops, 0);
}

AVX512_FN static void mv512(const pg_call_t *q, int64_t item) { mv_body(q, item, 2); }
AVX2_FN static void mv256(const pg_call_t *q, int64_t item) { mv_body(q, item, 1); }
static void mvc(const pg_call_t *q, int64_t item) { mv_body(q, item, 1); }

/* Rows per packed panel for a SIMD level and orientation. */
int64_t mi__blis_pg_panel(int32_t simd, int mv) {
  if (mv) return simd == MI__SIMD_AVX512 ? 32 : 16;
  return simd == MI__SIMD_AVX512 ? MR512 : simd == MI__SIMD_AVX2 ? MR256 : MRC;
}

/* Pixels per "nv" block. */
static int64_t nv_cols(int32_t simd) { return simd == MI__SIMD_AVX512 ? 32 : 16; }

uint64_t mi__blis_pg_packed_floats(const mi__blis_conv_t *c) {
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW, mr = c->pg_mr;
  return (uint64_t)(c->G * ((mg + mr - 1) / mr) * mr * K);
}

void mi__blis_pg_pack(mi__blis_conv_t *c, const float *w) {
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW, mr = c->pg_mr, np = (mg + mr - 1) / mr;
  int64_t g, pnl, k, i;
  for (g = 0; g < c->G; g++)
    for (pnl = 0; pnl < np; pnl++) {
      float *dst = c->packed + (g * np + pnl) * mr * K;
      for (k = 0; k < K; k++)
        for (i = 0; i < mr; i++) {
          int64_t m = pnl * mr + i;
          dst[k * mr + i] = m < mg ? w[(g * mg + m) * K + k] : 0.f;
        }
    }
}

static void pg_part(void *arg, int64_t i0, int64_t i1) {
  const pg_call_t *q = arg;
  int32_t simd = q->c->simd;
  int64_t i;
  for (i = i0; i < i1; i++) {
    if (q->c->pg_mv) {
      if (simd == MI__SIMD_AVX512) mv512(q, i);
      else if (simd == MI__SIMD_AVX2) mv256(q, i);
      else mvc(q, i);
    } else if (simd == MI__SIMD_AVX512) {
      nv512(q, i);
    } else if (simd == MI__SIMD_AVX2) {
      nv256(q, i);
    } else {
      nvc(q, i);
    }
  }
}

/* One group of one image (or one chunk of its pixels): rows [g*mg, (g+1)*mg) of image n. */
void mi__blis_pg_gemm(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env, int64_t n,
                      int64_t g, const float *b, int64_t ldb, int64_t p0, int64_t npix) {
  mi__blis_pg_gemm_ex(c, t, env, n, g, b, ldb, NULL, p0, npix, NULL, 0);
}

void mi__blis_pg_gemm_ex(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env,
                         int64_t n, int64_t g, const float *b, int64_t ldb, const int64_t *koff,
                         int64_t p0, int64_t npix, float *raw, int64_t ldraw) {
  pg_call_t q;
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW, mr = c->pg_mr, ohw = c->OH * c->OW;
  q.c = c;
  q.t = t;
  q.mp_n = (mg + mr - 1) / mr;
  q.pw = c->packed + g * q.mp_n * mr * K;
  q.b = b;
  q.ldb = ldb;
  q.koff = koff;
  q.epi = raw == NULL;
  q.y = raw ? raw : (float *)t[c->y] + (n * c->M + g * mg) * ohw;
  q.ldc = raw ? ldraw : ohw;
  q.n = n;
  q.m0 = g * mg;
  q.mg = mg;
  q.K = K;
  q.N = npix;
  q.p0 = p0;
  if (c->pg_mv) {
    q.nb_n = 1;
    mi__blis_parallel(env, q.mp_n, 1, mr * K * npix, pg_part, &q);
  } else {
    int64_t cols = nv_cols(c->simd);
    q.nb_n = (npix + cols - 1) / cols;
    mi__blis_parallel(env, q.mp_n * q.nb_n, 1, mr * K * cols, pg_part, &q);
  }
  /* Epilogue ops past the vector prefix (sigmoid, ...), on the rows this call wrote. */
  if (q.epi && !c->pg_mv && c->pg_vec_ops < c->epi_n && c->simd != MI__SIMD_C) {
    int64_t m;
    for (m = 0; m < mg; m++)
      mi__blis_epi_tail(c, t, n, g * mg + m, p0, q.y + m * ohw + p0, npix, c->pg_vec_ops, 0);
  }
}
