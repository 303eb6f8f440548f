/* blis_wino6.c - conv.winograd at the AVX2 level: dense 3x3 stride-1 convolutions as Winograd
 * F(6x6, 3x3).
 *
 * At AVX2 the F(4x4, 3x3) tile GEMMs of blis_wino.c run near the FMA peak, so what is left is
 * less work: 6x6 output tiles from 8x8 input tiles take 64 multiply-adds per tile and channel pair
 * for 36 outputs (1.78 per output) where F(4x4) takes 36 for 16 (2.25). The transforms cost more
 * per tile but about the same per output. Points 0, +-1, +-2, +-1/2 and infinity (the usual
 * choice: the transforms' largest coefficients are 5.25 in B, 32 in A; test_blis_conv's cases stay
 * within its 1e-5 relative L2, M-LSD's outputs 1.65e-5 from the reference as before). Run by the
 * same driver as F(4x4) (blis_wino_drv.c): weights transformed in double and packed once into 64
 * conv.packed_gemm weight sets; per block of whole tile rows one thread transforms the input
 * tiles, runs the 64 tile GEMMs and transforms back while the block is in cache, then runs the
 * epilogue chain on the block's output rows. The transforms run 8 tiles at a time in the lanes: a
 * tile's 8 values of a row are one unaligned load, and an 8x8 transpose turns 8 tiles' loads into
 * one vector per value (and back on the output side). */
#include <immintrin.h>
#include <string.h>

#include "blis_tr256.h"
#include "blis_wino.h"

#define AVX2_FN __attribute__((target("avx2,fma")))

#define WT 6 /* output tile edge */
#define WA 8 /* input tile edge */
#define WL 8 /* tiles per transform step (the vector lanes) */
/* Largest block of tiles (the fewest blocks of at most this many, in a multiple of the cores):
 * about the pixels of blis_wino.c's 64-tile AVX2 blocks. */
#define WB_TILES 56

/* The default takes it at AVX2 where it measured faster than F(4x4) (bench_blis_conv capped at
 * AVX2, 1 thread, min of 20, three interleaved rounds, 2026-12-05, load 2.6-3.0; F(4x4) with its
 * positions apart as here): 64->64 80x80 1.42-1.50 against 1.65-1.72 ms, 128->128 40x40 1.42-1.50
 * against 1.55-1.66, 128->64 40x40 0.71-0.75 against 0.80-0.85, 64->64 24x24 0.154-0.162 against
 * 0.187-0.194, 32->32 40x40 0.118-0.133 against 0.134-0.136, 32->32 160x160 even (1.71-2.00
 * against 1.73-2.00): 32+ channels in and out on planes of 24+ rows and columns (smaller ones
 * leave most of a 6x6 tile's outputs in the padding; not measured). */
int mi__blis_wino6_default(const mi__blis_conv_t *c) {
  return mi__blis_wino_fits(c) && c->simd == MI__SIMD_AVX2 && c->C >= 32 && c->M >= 32 && c->OH >= 24 &&
         c->OW >= 24;
}

/* B^T d of one 8-vector (the input transform). */
#define W6_BT(d, o)                                       \
  do {                                                    \
    __typeof__((d)[0]) a_, b_;                            \
    (o)[0] = (d)[0] - (d)[6] + 5.25f * ((d)[4] - (d)[2]); \
    (o)[7] = (d)[7] - (d)[1] + 5.25f * ((d)[3] - (d)[5]); \
    a_ = (d)[2] + (d)[6] - 4.25f * (d)[4];                \
    b_ = (d)[1] + (d)[5] - 4.25f * (d)[3];                \
    (o)[1] = a_ + b_;                                     \
    (o)[2] = a_ - b_;                                     \
    a_ = (d)[6] + 0.25f * (d)[2] - 1.25f * (d)[4];        \
    b_ = 0.5f * (d)[1] - 2.5f * (d)[3] + 2.f * (d)[5];    \
    (o)[3] = a_ + b_;                                     \
    (o)[4] = a_ - b_;                                     \
    a_ = (d)[6] + 4.f * ((d)[2] - 1.25f * (d)[4]);        \
    b_ = 2.f * (d)[1] - 2.5f * (d)[3] + 0.5f * (d)[5];    \
    (o)[5] = a_ + b_;                                     \
    (o)[6] = a_ - b_;                                     \
  } while (0)

/* A^T o of one 8-vector (the output transform). */
#define W6_AT(o, y)                                                                         \
  do {                                                                                      \
    __typeof__((o)[0]) a0_ = (o)[1] + (o)[2], a1_ = (o)[1] - (o)[2], b0_ = (o)[3] + (o)[4]; \
    __typeof__((o)[0]) b1_ = (o)[3] - (o)[4], c0_ = (o)[5] + (o)[6], c1_ = (o)[5] - (o)[6]; \
    (y)[0] = (o)[0] + a0_ + b0_ + 32.f * c0_;                                               \
    (y)[1] = a1_ + 2.f * b1_ + 16.f * c1_;                                                  \
    (y)[2] = a0_ + 4.f * b0_ + 8.f * c0_;                                                   \
    (y)[3] = a1_ + 8.f * b1_ + 4.f * c1_;                                                   \
    (y)[4] = a0_ + 16.f * b0_ + 2.f * c0_;                                                  \
    (y)[5] = (o)[7] + a1_ + 32.f * b1_ + c1_;                                               \
  } while (0)

/* Tile rows [r0, r1) of image x into V[p][ci][tile] (tile = (th - r0) * tw + column). Per channel
 * and tile row, the column transform runs on the 8 input rows at once (a zero row for padding
 * rows) into tb[a][q] (q = input column + pl; the columns outside [pl, pl + W) are never written,
 * zero since the slot's calloc); then tile k's 8 values of row a are the load at tb[a][6k]. Lanes
 * past a row's last tile spill into the next row's tiles, written after them, or the spare floats. */
AVX2_FN static void in6(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *x, int64_t r0, int64_t r1,
                        float *v, float *tb) {
  int64_t ci, th, i, a, b, q, k, k0, ld = wn->ld, cs = wn->vs, wtl = wn->wtl, W = c->W, pl = c->pl;
  const float *zrow = tb + WA * wtl;
  for (ci = 0; ci < c->C; ci++)
    for (th = r0; th < r1; th++) {
      const float *rp[WA];
      mi__blis_wino_rows(c, x, zrow, ci, th, WT, WA, rp);
      for (q = pl; q + 8 <= pl + W; q += 8) {
        __m256 d[WA], o[WA];
#pragma GCC unroll 8
        for (i = 0; i < WA; i++) d[i] = _mm256_loadu_ps(rp[i] + q);
        W6_BT(d, o);
#pragma GCC unroll 8
        for (a = 0; a < WA; a++) _mm256_storeu_ps(tb + a * wtl + q, o[a]);
      }
      for (; q < pl + W; q++) {
        float d[WA], o[WA];
        for (i = 0; i < WA; i++) d[i] = rp[i][q];
        W6_BT(d, o);
        for (a = 0; a < WA; a++) tb[a * wtl + q] = o[a];
      }
      for (a = 0; a < WA; a++)
        for (k0 = 0; k0 < wn->tw; k0 += WL) {
          const float *p = tb + a * wtl + WT * k0;
          float *vo = v + a * WA * cs + ci * ld + (th - r0) * wn->tw + k0;
          __m256 e[WA], o[WA];
#pragma GCC unroll 8
          for (k = 0; k < WL; k++) e[k] = _mm256_loadu_ps(p + WT * k);
          mi__blis_tr8x8(e);
          W6_BT(e, o);
#pragma GCC unroll 8
          for (b = 0; b < WA; b++) _mm256_storeu_ps(vo + b * cs, o[b]);
        }
    }
}

/* Mo[p][m][tile] back into 6x6 output blocks with bias/BN: per output row of a tile row, the six
 * values of 8 tiles transposed into one vector per tile, stored 6 apart (each store's last two
 * lanes are overwritten by the next tile's; the row's last tile stores through a mask). */
AVX2_FN static void out6(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *mo, int64_t r0,
                         int64_t r1, float *y) {
  int64_t m, th, k0, i, j, k, r, ld = wn->ld, ms = wn->mst;
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (m = 0; m < c->M; m++) {
    __m256 sc = _mm256_set1_ps(c->affine ? c->scale[m] : 1.f), sh = _mm256_set1_ps(c->affine ? c->shift[m] : 0.f);
    for (th = r0; th < r1; th++)
      for (k0 = 0; k0 < wn->tw; k0 += WL) {
        const float *o = mo + m * ld + (th - r0) * wn->tw + k0;
        __m256 s[WT][WA];
        int64_t width = c->OW - k0 * WT;
        for (j = 0; j < WA; j++) {
          __m256 col[WA], u[WT];
#pragma GCC unroll 8
          for (i = 0; i < WA; i++) col[i] = _mm256_loadu_ps(o + (i * WA + j) * ms);
          W6_AT(col, u);
#pragma GCC unroll 6
          for (i = 0; i < WT; i++) s[i][j] = u[i];
        }
        for (r = 0; r < WT && th * WT + r < c->OH; r++) {
          float *yr = y + (m * c->OH + th * WT + r) * c->OW + k0 * WT;
          __m256 e[WL];
          W6_AT(s[r], e);
#pragma GCC unroll 6
          for (i = 0; i < WT; i++) e[i] = _mm256_fmadd_ps(e[i], sc, sh);
          e[6] = e[7] = _mm256_setzero_ps();
          mi__blis_tr8x8(e);
          for (k = 0; k < WL; k++) {
            int64_t n = width - WT * k;
            if (n <= 0) break;
            if (n >= 8) _mm256_storeu_ps(yr + WT * k, e[k]);
            else
              _mm256_maskstore_ps(yr + WT * k, _mm256_cmpgt_epi32(_mm256_set1_epi32(n < WT ? (int)n : WT), idx), e[k]);
          }
        }
      }
  }
}

/* The column-transformed rows: the 6-apart loads of a last WL-tile step reach 6 * (tw rounded up
 * to WL) + 2 floats; a slot holds V, Mo, those rows and a row of zeros (8 floats spare). */
static void scratch(const mi__blis_conv_t *c, mi__blis_wino_t *wn) {
  wn->wtl = (WT * ((wn->tw + WL - 1) / WL * WL) + WA + 15) / 16 * 16;
  wn->slot_fl = WA * WA * (wn->vs + wn->mst) + WA * wn->wtl + c->W + 8;
}

/* G of G g G^T (8x3: the rows for the points 0, -1, 1, 1/2, -1/2, 2, -2 and infinity, scaled to
 * match the A^T above). */
static const double G6[WA][3] = {{1, 0, 0},
                                 {-2. / 9, -2. / 9, -2. / 9},
                                 {-2. / 9, 2. / 9, -2. / 9},
                                 {1. / 90, 1. / 45, 2. / 45},
                                 {1. / 90, -1. / 45, 2. / 45},
                                 {1. / 45, 1. / 90, 1. / 180},
                                 {1. / 45, -1. / 90, 1. / 180},
                                 {0, 0, 1}};

int32_t mi__blis_wino6_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err) {
  static const mi__blis_wino_tile_t tile = {
      .wt = WT, .wa = WA, .wl = WL, .max_tiles = WB_TILES, .g = G6, .in = in6, .out = out6, .scratch = scratch};
  if (!mi__blis_wino_fits(c) || c->simd != MI__SIMD_AVX2)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "blis-cpu: Winograd F(6x6,3x3) needs a dense 3x3 stride-1 conv at AVX2");
  return mi__blis_wino_drv_prep(p, s, c, &tile, err);
}
