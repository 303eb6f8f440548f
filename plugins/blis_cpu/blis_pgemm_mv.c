/* blis_pgemm_mv.c - conv.packed_gemm's "mv" tiles: channels in the vector lanes for calls of few
 * pixels (6x6 and smaller planes), bias/BN and the lane-wise ops applied, written transposed. */
#include "blis_pgemm.h"

/* ---- "mv" tiles: NP pixels x (16 * NV) channels from panels of 16 * NV channels. Vector types,
 * one body for the three targets (NV = 2 for AVX-512, 1 otherwise). */
#define MV_PIX 6

/* The "mv" tiles are written with GCC vector types, and C11 keeps a * b + c as a multiply and an
 * add (no contraction): allow fused multiply-adds here, where the target has them (AVX-512 and
 * AVX2; the plain C build has none). Measured on mobilenetv2's 6x6 and 3x3 pointwise convs: 8-14%
 * faster than the multiply + add pairs. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")

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
    } else if (op->act == MI__ACT_LEAKY) {
      for (i = 0; i < width; i++) {
        float av = a * v[i];
        v[i] = v[i] >= 0.f ? v[i] : av;
      }
    } else if (op->act == MI__ACT_HSIGMOID) {
      for (i = 0; i < width; i++) {
        float h = a * v[i] + b;
        v[i] = h < 0.f ? 0.f : (h > 1.f ? 1.f : h);
      }
    } else if (op->act == MI__ACT_AFFINE) {
      for (i = 0; i < width; i++) v[i] = v[i] * a + b;
    } else { /* HardSwish */
      for (i = 0; i < width; i++) {
        float h = v[i] / 6.f + 0.5f;
        h = h < 0.f ? 0.f : (h > 1.f ? 1.f : h);
        v[i] = v[i] * h;
      }
    }
  }
}

/* One k block of one tile: NP (compile-time) pixels from p, k in [k0b, k0b + kn), the block's
 * weights at a; the accumulators live in acc between blocks and in registers within one. */
static inline __attribute__((always_inline)) void mv_tile_k(const pg_call_t *q, const float *a, int64_t k0b,
                                                            int64_t kn, int64_t p, int NV, int NP, int PIX,
                                                            pg_v16 (*acc_mem)[2]) {
  int64_t width = 16 * NV, kk, off[MV_PIX];
  pg_v16 acc[MV_PIX][2];
  const float *b = PIX ? q->b : q->b + p;
  int j;
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    acc[j][0] = j < NP ? acc_mem[j][0] : (pg_v16){0};
    acc[j][1] = j < NP && NV == 2 ? acc_mem[j][1] : (pg_v16){0};
    off[j] = PIX && j < NP ? q->pix[p + j] : j;
  }
  for (kk = 0; kk < kn; kk++) {
    const float *bk = q->koff ? b + q->koff[k0b + kk] : b + (k0b + kk) * q->ldb;
    pg_v16 w0, w1 = {0};
    memcpy(&w0, a + kk * width, sizeof w0);
    if (NV == 2) memcpy(&w1, a + kk * width + 16, sizeof w1);
#pragma GCC unroll 6
    for (j = 0; j < MV_PIX; j++) {
      if (j < NP) {
        float bv = bk[off[j]];
        acc[j][0] += bv * w0;
        if (NV == 2) acc[j][1] += bv * w1;
      }
    }
  }
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    if (j < NP) {
      acc_mem[j][0] = acc[j][0];
      if (NV == 2) acc_mem[j][1] = acc[j][1];
    }
  }
}

/* AVX2 form of mv_tile_k for one panel of 16 channels: 2 * NP accumulators, the two weight vectors
 * and one broadcast pixel value (15 of the 16 ymm registers at NP = 6). Written with intrinsics
 * because GCC splits the 16-float vector type of mv_tile_k into ymm halves badly under AVX2 (lane
 * inserts and spills through the stack on every k): a mel front end's 257x512 1-D conv over 5
 * pixels ran at 12 GFLOP/s there against 85 on the AVX-512 tile. Same fused multiply-adds in the
 * same k order as mv_tile_k, so the same sums. */
static inline __attribute__((always_inline)) AVX2_FN void mv_tile_k256(const pg_call_t *q, const float *a,
                                                                       int64_t k0b, int64_t kn, int64_t p, int NP,
                                                                       int PIX, pg_v16 (*acc_mem)[2]) {
  __m256 c0[MV_PIX], c1[MV_PIX];
  int64_t kk, off[MV_PIX];
  const float *b = PIX ? q->b : q->b + p;
  int j;
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    c0[j] = c1[j] = _mm256_setzero_ps();
    if (j < NP) {
      c0[j] = _mm256_loadu_ps((const float *)&acc_mem[j][0]);
      c1[j] = _mm256_loadu_ps((const float *)&acc_mem[j][0] + 8);
    }
    off[j] = PIX && j < NP ? q->pix[p + j] : j;
  }
  /* B at per-row offsets (im2col-free planes) or at a fixed stride: two loops, no test per k */
#define MV256_K(BK)                                                                  \
  for (kk = 0; kk < kn; kk++) {                                                      \
    const float *bk = (BK);                                                          \
    __m256 w0 = _mm256_loadu_ps(a + kk * 16), w1 = _mm256_loadu_ps(a + kk * 16 + 8); \
    _Pragma("GCC unroll 6") for (j = 0; j < MV_PIX; j++) {                           \
      if (j < NP) {                                                                  \
        __m256 bv = _mm256_broadcast_ss(bk + off[j]);                                \
        c0[j] = _mm256_fmadd_ps(bv, w0, c0[j]);                                      \
        c1[j] = _mm256_fmadd_ps(bv, w1, c1[j]);                                      \
      }                                                                              \
    }                                                                                \
  }
  if (q->koff) {
    const int64_t *koff = q->koff + k0b;
    MV256_K(b + koff[kk])
  } else {
    const float *bb = b + k0b * q->ldb;
    MV256_K(bb + kk * q->ldb)
  }
#undef MV256_K
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    if (j < NP) {
      _mm256_storeu_ps((float *)&acc_mem[j][0], c0[j]);
      _mm256_storeu_ps((float *)&acc_mem[j][0] + 8, c1[j]);
    }
  }
}

/* AVX-512 form of mv_tile_k: 2 * NP accumulators, the panel's two weight vectors loaded once per
 * k into registers and one broadcast pixel value. The vector-type body above let GCC fold the
 * weight loads into every multiply-add (2 * NP 512-bit loads per k instead of 2): on CPUs that
 * execute AVX-512 as two 256-bit halves (AMD Zen 4) the loads then bound the tile, and silero-vad's
 * 1-D convs over 2-3 pixels ran as slow as on the AVX2 tile or up to 1.23x slower (docs/benchmarks.md,
 * 2026-12-04, tiny planes). Same fused multiply-adds in the same k order, so the same sums. */
static inline __attribute__((always_inline)) AVX512_FN void mv_tile_k512(const pg_call_t *q, const float *a,
                                                                         int64_t k0b, int64_t kn, int64_t p, int NP,
                                                                         int PIX, pg_v16 (*acc_mem)[2]) {
  __m512 c0[MV_PIX], c1[MV_PIX];
  int64_t kk, off[MV_PIX];
  const float *b = PIX ? q->b : q->b + p;
  int j;
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    c0[j] = c1[j] = _mm512_setzero_ps();
    if (j < NP) {
      c0[j] = _mm512_loadu_ps((const float *)&acc_mem[j][0]);
      c1[j] = _mm512_loadu_ps((const float *)&acc_mem[j][1]);
    }
    off[j] = PIX && j < NP ? q->pix[p + j] : j;
  }
  /* the empty asm keeps each weight vector in a register (no load folded into the multiply-adds) */
#define MV512_K(BK)                                                                   \
  for (kk = 0; kk < kn; kk++) {                                                       \
    const float *bk = (BK);                                                           \
    __m512 w0 = _mm512_loadu_ps(a + kk * 32), w1 = _mm512_loadu_ps(a + kk * 32 + 16); \
    __asm__(""                                                                        \
            : "+v"(w0), "+v"(w1));                                                    \
    _Pragma("GCC unroll 6") for (j = 0; j < MV_PIX; j++) {                            \
      if (j < NP) {                                                                   \
        __m512 bv = _mm512_set1_ps(bk[off[j]]);                                       \
        c0[j] = _mm512_fmadd_ps(bv, w0, c0[j]);                                       \
        c1[j] = _mm512_fmadd_ps(bv, w1, c1[j]);                                       \
      }                                                                               \
    }                                                                                 \
  }
  if (q->koff) {
    const int64_t *koff = q->koff + k0b;
    MV512_K(b + koff[kk])
  } else {
    const float *bb = b + k0b * q->ldb;
    MV512_K(bb + kk * q->ldb)
  }
#undef MV512_K
#pragma GCC unroll 6
  for (j = 0; j < MV_PIX; j++) {
    if (j < NP) {
      _mm512_storeu_ps((float *)&acc_mem[j][0], c0[j]);
      _mm512_storeu_ps((float *)&acc_mem[j][1], c1[j]);
    }
  }
}

/* One AVX-512 tile of np pixels (as mv_tile256). */
static AVX512_FN void mv_tile512(const pg_call_t *q, const float *a, int64_t k0b, int64_t kn, int64_t p,
                                 int64_t np, int pix, pg_v16 (*acc)[2]) {
#define MV512_NP(NP)                                     \
  do {                                                   \
    if (pix) mv_tile_k512(q, a, k0b, kn, p, NP, 1, acc); \
    else                                                 \
      mv_tile_k512(q, a, k0b, kn, p, NP, 0, acc);        \
  } while (0)
  switch (np) {
  case 6: MV512_NP(6); break;
  case 5: MV512_NP(5); break;
  case 4: MV512_NP(4); break;
  case 3: MV512_NP(3); break;
  case 2: MV512_NP(2); break;
  default: MV512_NP(1); break;
  }
#undef MV512_NP
}

/* One AVX2 tile of np pixels, np a constant in each instance (called, not inlined, from the shared
 * body so that the plain C build of it never inlines AVX2 code). */
static AVX2_FN void mv_tile256(const pg_call_t *q, const float *a, int64_t k0b, int64_t kn, int64_t p, int64_t np,
                               int pix, pg_v16 (*acc)[2]) {
#define MV256_NP(NP)                                     \
  do {                                                   \
    if (pix) mv_tile_k256(q, a, k0b, kn, p, NP, 1, acc); \
    else                                                 \
      mv_tile_k256(q, a, k0b, kn, p, NP, 0, acc);        \
  } while (0)
  switch (np) {
  case 6: MV256_NP(6); break;
  case 5: MV256_NP(5); break;
  case 4: MV256_NP(4); break;
  case 3: MV256_NP(3); break;
  case 2: MV256_NP(2); break;
  default: MV256_NP(1); break;
  }
#undef MV256_NP
}

/* AVX2 form of mv_store: bias/BN and the lane-wise ops on two registers per pixel, then the
 * scalar transposed writes. */
static AVX2_FN void mv_store256(const pg_call_t *q, int64_t mp, int64_t rows, int64_t p, int64_t np,
                                pg_v16 (*acc)[2], const float *sc, const float *sh, int32_t nops) {
  const mi__blis_conv_t *c = q->c;
  float tile[MV_PIX][16];
  __m256 s0 = _mm256_loadu_ps(sc), s1 = _mm256_loadu_ps(sc + 8), h0 = _mm256_loadu_ps(sh), h1 = _mm256_loadu_ps(sh + 8);
  int64_t i, j;
  int32_t e;
  for (j = 0; j < np; j++) {
    __m256 v0 = _mm256_loadu_ps((const float *)&acc[j][0]), v1 = _mm256_loadu_ps((const float *)&acc[j][0] + 8);
    if (q->epi && c->affine) {
      v0 = _mm256_fmadd_ps(v0, s0, h0);
      v1 = _mm256_fmadd_ps(v1, s1, h1);
    }
    for (e = 0; q->epi && e < nops; e++) {
      v0 = mi__blis_act256_op(&c->epi[e], v0);
      v1 = mi__blis_act256_op(&c->epi[e], v1);
    }
    _mm256_storeu_ps(tile[j], v0);
    _mm256_storeu_ps(tile[j] + 8, v1);
  }
  for (i = 0; i < rows; i++) {
    float *yr = q->y + (mp * 16 + i) * q->ldc + q->p0 + p;
    for (j = 0; j < np; j++) yr[j] = tile[j][i];
  }
}

/* The finished sums of the np pixels from p: bias/BN and the lane-wise ops, written transposed. */
static inline __attribute__((always_inline)) void mv_store(const pg_call_t *q, int64_t mp, int64_t rows, int64_t p,
                                                           int64_t np, int NV, pg_v16 (*acc)[2], const float *sc,
                                                           const float *sh, int32_t nops) {
  int64_t width = 16 * NV, i, j;
  float tile[MV_PIX][32];
  for (j = 0; j < np; j++) {
    memcpy(tile[j], &acc[j][0], sizeof acc[j][0]);
    if (NV == 2) memcpy(tile[j] + 16, &acc[j][1], sizeof acc[j][1]);
    if (q->epi) lane_epi(q->c, sc, sh, tile[j], width, nops);
  }
  for (i = 0; i < rows; i++) {
    float *yr = q->y + (mp * width + i) * q->ldc + q->p0 + p;
    for (j = 0; j < np; j++) yr[j] = tile[j][i];
  }
}

/* AVX-512 form of mv_store: bias/BN and the lane-wise ops on the accumulators, then each half of
 * 16 channels transposed in registers (pixels to rows) and written with one masked store per
 * channel instead of np scalar stores. */
static MI__AVX512_FN void mv_store512(const pg_call_t *q, int64_t mp, int64_t rows, int64_t p, int64_t np,
                                      pg_v16 (*acc)[2], const float *sc, const float *sh, int32_t nops) {
  const mi__blis_conv_t *c = q->c;
  __mmask16 kp = (__mmask16)((1u << np) - 1u);
  int64_t hf, i;
  int32_t e;
  for (hf = 0; hf < 2 && hf * 16 < rows; hf++) {
    __m512 r[16], vs = _mm512_loadu_ps(sc + 16 * hf), vh = _mm512_loadu_ps(sh + 16 * hf);
    int j;
#pragma GCC unroll 16
    for (j = 0; j < 16; j++) {
      __m512 v = _mm512_setzero_ps();
      if (j < np) {
        memcpy(&v, &acc[j][hf], sizeof v);
        if (q->epi && c->affine) v = _mm512_fmadd_ps(v, vs, vh);
        for (e = 0; q->epi && e < nops; e++) v = mi__blis_act512_op(&c->epi[e], v);
      }
      r[j] = v;
    }
    mi__blis_tr16(r);
    for (i = 0; i < 16 && hf * 16 + i < rows; i++)
      _mm512_mask_storeu_ps(q->y + (mp * 32 + hf * 16 + i) * q->ldc + q->p0 + p, kp, r[i]);
  }
}

/* Tiles per pass over the k blocks (42 pixels: a call under 40 pixels is one pass, the flat planes
 * of up to 100 pixels take up to three); their accumulators, 5.4 KiB, live on the stack. */
#define MV_TILES 7

/* One panel of 16 * NV channels over all pixels: per k block, the weights are read (or converted
 * from half) once and every tile of the pass runs on them. Each sum runs over k in order. */
/* One tile of np (1..MV_PIX) pixels with np and PIX as constants, so that mv_tile_k unrolls. */
#define MV_TILE_NP(PIX)                                              \
  do {                                                               \
    switch (np) {                                                    \
    case 6: mv_tile_k(q, a, k0b, kn, p, NV, 6, PIX, acc[t]); break;  \
    case 5: mv_tile_k(q, a, k0b, kn, p, NV, 5, PIX, acc[t]); break;  \
    case 4: mv_tile_k(q, a, k0b, kn, p, NV, 4, PIX, acc[t]); break;  \
    case 3: mv_tile_k(q, a, k0b, kn, p, NV, 3, PIX, acc[t]); break;  \
    case 2: mv_tile_k(q, a, k0b, kn, p, NV, 2, PIX, acc[t]); break;  \
    default: mv_tile_k(q, a, k0b, kn, p, NV, 1, PIX, acc[t]); break; \
    }                                                                \
  } while (0)

/* X: the AVX2 intrinsic tile (NV = 1). */
static inline __attribute__((always_inline)) void mv_body(const pg_call_t *q, int64_t item, int NV, int X) {
  int64_t width = 16 * NV, mp = item, rows = q->mg - mp * width, p0, i;
  float sc[32], sh[32], abuf[32 * PG_KB] __attribute__((aligned(64)));
  pg_v16 acc[MV_TILES][MV_PIX][2];
  int32_t nops = lane_ops(q->c);
  if (rows > width) rows = width;
  for (i = 0; i < width; i++) { /* the panel's scale/shift, zero past the last row */
    sc[i] = i < rows && q->c->affine ? q->c->scale[q->m0 + mp * width + i] : 0.f;
    sh[i] = i < rows && q->c->affine ? q->c->shift[q->m0 + mp * width + i] : 0.f;
  }
  for (p0 = 0; p0 < q->N; p0 += MV_TILES * MV_PIX) {
    int64_t npass = q->N - p0 < MV_TILES * MV_PIX ? q->N - p0 : MV_TILES * MV_PIX, k0b, t;
    int64_t ntile = (npass + MV_PIX - 1) / MV_PIX;
    memset(acc, 0, (size_t)ntile * sizeof acc[0]); /* the pass's tiles only: 5.4 KiB for all 7 */
    for (k0b = 0; k0b < q->K; k0b += PG_KB) {
      int64_t kn = q->K - k0b < PG_KB ? q->K - k0b : PG_KB;
      const float *a = pg_a(q, (mp * q->K + k0b) * width, kn * width, abuf, NV == 2);
      for (t = 0; t < ntile; t++) {
        int64_t p = p0 + t * MV_PIX, np = npass - t * MV_PIX < MV_PIX ? npass - t * MV_PIX : MV_PIX;
        if (X) mv_tile256(q, a, k0b, kn, p, np, q->pix != NULL, acc[t]);
        else if (NV == 2)
          mv_tile512(q, a, k0b, kn, p, np, q->pix != NULL, acc[t]);
        else if (q->pix)
          MV_TILE_NP(1);
        else
          MV_TILE_NP(0);
      }
    }
    for (t = 0; t < ntile; t++) {
      int64_t p = p0 + t * MV_PIX, np = npass - t * MV_PIX < MV_PIX ? npass - t * MV_PIX : MV_PIX;
      if (NV == 2) mv_store512(q, mp, rows, p, np, acc[t], sc, sh, nops);
      else if (X)
        mv_store256(q, mp, rows, p, np, acc[t], sc, sh, nops);
      else
        mv_store(q, mp, rows, p, np, NV, acc[t], sc, sh, nops);
    }
  }
  /* the rest of the chain (residual adds, other activations) on the stored rows */
  for (i = 0; i < rows && q->epi && nops < q->c->epi_n; i++)
    mi__blis_epi_tail(q->c, q->t, q->n, q->m0 + mp * width + i, q->p0,
                      q->y + (mp * width + i) * q->ldc + q->p0, q->N, nops, 0);
}

AVX512_FN void mi__blis_pg_mv512(const pg_call_t *q, int64_t item) { mv_body(q, item, 2, 0); }
AVX2_FN void mi__blis_pg_mv256(const pg_call_t *q, int64_t item) { mv_body(q, item, 1, 1); }
void mi__blis_pg_mvc(const pg_call_t *q, int64_t item) { mv_body(q, item, 1, 0); }
#undef MV_TILE_NP
#pragma GCC pop_options
