/* blis_wino.c - conv.winograd: dense 3x3 stride-1 convolutions as Winograd F(4x4, 3x3): where
 * the default takes it, the tile size's transforms and its prepare (blis_wino_drv.c runs it).
 *
 * 4x4 output tiles from 6x6 input tiles: 36 tile GEMMs, 36 multiply-adds per tile and channel
 * pair instead of the direct sum's 144; the transforms run 16 tiles at a time in the vector lanes
 * (8 at AVX2 and C). At AVX2, convs of 32+ channels on planes of 24+ rows and columns run as
 * F(6x6, 3x3) instead (blis_wino6.c). */
#include <string.h>

#include "blis_wino.h"

#define WT 4  /* output tile edge */
#define WA 6  /* input tile edge */
#define WL 16 /* tiles per transform step (the vector lanes) */
/* How many blocks of tile rows, planned for as many threads as cores (mi__blis_wino_blocks, whose
 * comments hold the 2026-12-03 figures; earlier ones: bench_blis_conv, process CPU time, ms):
 * - AVX-512: by the longest thread share in 16-tile vectors, V and Mo within WB_FLOATS (1.5 MB)
 *   a block (when the rule chose a row count per block by the fill of 32 lanes, 128->128 on 40x40:
 *   30-tile blocks 1.16-1.18, 50-tile ones 1.29-1.31; 128->64 on 40x40 0.74-0.89 against
 *   0.83-1.00; 64->64 and 96->24 on 80x80 and 16->16 on 160x160 within noise of the rule below);
 * - AVX2 and C: the fewest blocks of at most WB_TILES tiles in a multiple of the cores (then an
 *   even count: 96->24 on 80x80 1.09-1.21 against 1.60-1.63 with the lane rule's 80-tile blocks;
 *   16->16 on 160x160 0.60-0.62 against 0.68-0.69). */
#define WB_FLOATS 393216
#define WB_TILES 64

int mi__blis_wino_fits(const mi__blis_conv_t *c) {
  return c->G == 1 && c->KH == 3 && c->KW == 3 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 &&
         !c->nhwc_in && !c->nhwc_out;
}

/* The default takes it where it measured faster than conv.packed_gemm (bench_blis_conv, process
 * CPU time, 2026-12-02): 8+ channels in and out and enough 4x4 tiles to fill the GEMM tiles'
 * pixel lanes (64 with AVX-512: 64->64 on 20x20 ran even, 128->128 on 10x10 at half speed; 16
 * with AVX2, where 64->64 on 20x20 ran 1.9x faster). */
int mi__blis_wino_default(const mi__blis_conv_t *c) {
  int64_t tiles = (c->OH + WT - 1) / WT * ((c->OW + WT - 1) / WT);
  return mi__blis_wino_fits(c) && c->simd != MI__SIMD_C && c->C >= 8 && c->M >= 8 &&
         tiles >= (c->simd == MI__SIMD_AVX512 ? 64 : 16);
}

/* B^T d of one 6-vector (F(4,3)'s input transform), on vectors of tiles. */
#define WINO_BT(d0, d1, d2, d3, d4, d5, o)       \
  do {                                           \
    (o)[0] = 4.f * (d0)-5.f * (d2) + (d4);       \
    (o)[1] = -4.f * ((d1) + (d2)) + (d3) + (d4); \
    (o)[2] = 4.f * ((d1) - (d2)) - (d3) + (d4);  \
    (o)[3] = 2.f * ((d3) - (d1)) - (d2) + (d4);  \
    (o)[4] = 2.f * ((d1) - (d3)) - (d2) + (d4);  \
    (o)[5] = 4.f * (d1)-5.f * (d3) + (d5);       \
  } while (0)

/* A^T o of one 6-vector (the output transform). */
#define WINO_AT(o0, o1, o2, o3, o4, o5, y)                                     \
  do {                                                                         \
    __typeof__(o0) s12_ = (o1) + (o2), d12_ = (o1) - (o2), s34_ = (o3) + (o4); \
    __typeof__(o0) d34_ = (o3) - (o4);                                         \
    (y)[0] = (o0) + s12_ + s34_;                                               \
    (y)[1] = d12_ + 2.f * d34_;                                                \
    (y)[2] = s12_ + 4.f * s34_;                                                \
    (y)[3] = d12_ + 8.f * d34_ + (o5);                                         \
  } while (0)

typedef float wv8 __attribute__((vector_size(32)));
typedef int wi8 __attribute__((vector_size(32)));
typedef float wv8u __attribute__((vector_size(32), aligned(4), may_alias));

/* Shuffle masks: DI(j) gathers p[4k + j] of two vectors into the low half, CAT joins two low
 * halves, LO/HI interleave the low/high halves of two vectors lane by lane (LO16 / HI16 and the
 * 16-float types: blis_wino.h). */
#define DI16(j) \
  (wi16) { j, j + 4, j + 8, j + 12, j + 16, j + 20, j + 24, j + 28, j, j, j, j, j, j, j, j }
#define CAT16 \
  (wi16) { 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23 }
#define DI8(j) \
  (wi8) { j, j + 4, j + 8, j + 12, j, j, j, j }
#define CAT8 \
  (wi8) { 0, 1, 2, 3, 8, 9, 10, 11 }
#define LO8 \
  (wi8) { 0, 8, 1, 9, 2, 10, 3, 11 }
#define HI8 \
  (wi8) { 4, 12, 5, 13, 6, 14, 7, 15 }

/* The transforms on VL tiles at a time (one vector of VT per tile-wide value), one instance per
 * SIMD level.
 * in_*: tile rows [r0, r1) of image x into V[p][ci][tile] (tile = (th - r0) * tw + column). Per
 * channel and tile row, the column transform runs on the 6 input rows at once (contiguous, a zero
 * row for padding rows) into tb[a][q] (q = input column + pl; the padding columns outside
 * [pl, pl + W) are never written, zero since the slot's calloc), then the row transform
 * reads tile k's six values at tb[a][4k ...] through shuffles (4 loads give VL tiles' first four
 * values). Lanes past a row's last tile spill into the next row's columns, which are written after
 * them, or into the spare floats at the end.
 * out_*: Mo[p][m][tile] back into 4x4 output blocks with bias/BN, interleaved through shuffles into
 * whole output rows. */
#define WINO_FNS(VT, VI, VTU, VL, DI, CAT, LO, HI, SFX, ATTR)                                                  \
  static inline __attribute__((always_inline)) ATTR void deint_##SFX(const float *p, VT e[4], int n) {         \
    VT l0 = *(const VTU *)p, l1 = *(const VTU *)(p + VL), l2 = *(const VTU *)(p + 2 * VL);                     \
    VT l3 = *(const VTU *)(p + 3 * VL);                                                                        \
    e[0] = __builtin_shuffle(__builtin_shuffle(l0, l1, DI(0)), __builtin_shuffle(l2, l3, DI(0)), CAT);         \
    e[1] = __builtin_shuffle(__builtin_shuffle(l0, l1, DI(1)), __builtin_shuffle(l2, l3, DI(1)), CAT);         \
    if (n > 2) {                                                                                               \
      e[2] = __builtin_shuffle(__builtin_shuffle(l0, l1, DI(2)), __builtin_shuffle(l2, l3, DI(2)), CAT);       \
      e[3] = __builtin_shuffle(__builtin_shuffle(l0, l1, DI(3)), __builtin_shuffle(l2, l3, DI(3)), CAT);       \
    }                                                                                                          \
  }                                                                                                            \
  ATTR static void in_##SFX(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *x, int64_t r0,   \
                            int64_t r1, float *v, float *tb) {                                                 \
    int64_t ci, th, a, b, q, k0, ld = wn->ld, cs = wn->vs, wtl = wn->wtl, W = c->W, pl = c->pl;                \
    const float *zrow = tb + WA * wtl;                                                                         \
    for (ci = 0; ci < c->C; ci++)                                                                              \
      for (th = r0; th < r1; th++) {                                                                           \
        const float *rp[WA];                                                                                   \
        mi__blis_wino_rows(c, x, zrow, ci, th, WT, WA, rp);                                                    \
        for (q = pl; q + VL <= pl + W; q += VL) {                                                              \
          VT o[WA];                                                                                            \
          WINO_BT(*(const VTU *)(rp[0] + q), *(const VTU *)(rp[1] + q), *(const VTU *)(rp[2] + q),             \
                  *(const VTU *)(rp[3] + q), *(const VTU *)(rp[4] + q), *(const VTU *)(rp[5] + q), o);         \
          for (a = 0; a < WA; a++) *(VTU *)(tb + a * wtl + q) = o[a];                                          \
        }                                                                                                      \
        for (; q < pl + W; q++) {                                                                              \
          float o[WA];                                                                                         \
          WINO_BT(rp[0][q], rp[1][q], rp[2][q], rp[3][q], rp[4][q], rp[5][q], o);                              \
          for (a = 0; a < WA; a++) tb[a * wtl + q] = o[a];                                                     \
        }                                                                                                      \
        for (a = 0; a < WA; a++)                                                                               \
          for (k0 = 0; k0 < wn->tw; k0 += VL) {                                                                \
            const float *p = tb + a * wtl + WT * k0;                                                           \
            float *vo = v + a * WA * cs + ci * ld + (th - r0) * wn->tw + k0;                                   \
            VT e[8], o[WA];                                                                                    \
            deint_##SFX(p, e, 4);                                                                              \
            deint_##SFX(p + WT, e + 4, 2);                                                                     \
            WINO_BT(e[0], e[1], e[2], e[3], e[4], e[5], o);                                                    \
            for (b = 0; b < WA; b++) *(VTU *)(vo + b * cs) = o[b];                                             \
          }                                                                                                    \
      }                                                                                                        \
  }                                                                                                            \
  ATTR static void out_##SFX(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *mo, int64_t r0, \
                             int64_t r1, float *y) {                                                           \
    int64_t m, th, k0, i, j, r, ld = wn->ld, ms = wn->mst;                                                     \
    for (m = 0; m < c->M; m++) {                                                                               \
      float sc = c->affine ? c->scale[m] : 1.f, sh = c->affine ? c->shift[m] : 0.f;                            \
      for (th = r0; th < r1; th++)                                                                             \
        for (k0 = 0; k0 < wn->tw; k0 += VL) {                                                                  \
          const float *o = mo + m * ld + (th - r0) * wn->tw + k0;                                              \
          VT s[WT][WA], t[WA], z02a, z02b, z13a, z13b, row[WT];                                                \
          int64_t width = c->OW - k0 * WT;                                                                     \
          for (j = 0; j < WA; j++) {                                                                           \
            VT u[WT];                                                                                          \
            WINO_AT(*(const VTU *)(o + j * ms), *(const VTU *)(o + (WA + j) * ms),                             \
                    *(const VTU *)(o + (2 * WA + j) * ms), *(const VTU *)(o + (3 * WA + j) * ms),              \
                    *(const VTU *)(o + (4 * WA + j) * ms), *(const VTU *)(o + (5 * WA + j) * ms), u);          \
            for (i = 0; i < WT; i++) s[i][j] = u[i];                                                           \
          }                                                                                                    \
          for (r = 0; r < WT && th * WT + r < c->OH; r++) {                                                    \
            float *yr = y + (m * c->OH + th * WT + r) * c->OW + k0 * WT;                                       \
            WINO_AT(s[r][0], s[r][1], s[r][2], s[r][3], s[r][4], s[r][5], t);                                  \
            for (i = 0; i < WT; i++) t[i] = t[i] * sc + sh;                                                    \
            z02a = __builtin_shuffle(t[0], t[2], LO);                                                          \
            z02b = __builtin_shuffle(t[0], t[2], HI);                                                          \
            z13a = __builtin_shuffle(t[1], t[3], LO);                                                          \
            z13b = __builtin_shuffle(t[1], t[3], HI);                                                          \
            row[0] = __builtin_shuffle(z02a, z13a, LO);                                                        \
            row[1] = __builtin_shuffle(z02a, z13a, HI);                                                        \
            row[2] = __builtin_shuffle(z02b, z13b, LO);                                                        \
            row[3] = __builtin_shuffle(z02b, z13b, HI);                                                        \
            if (width >= WT * VL) {                                                                            \
              for (i = 0; i < WT; i++) *(VTU *)(yr + i * VL) = row[i];                                         \
            } else {                                                                                           \
              memcpy(yr, row, (size_t)width * sizeof(float));                                                  \
            }                                                                                                  \
          }                                                                                                    \
        }                                                                                                      \
    }                                                                                                          \
  }

WINO_FNS(wv16, wi16, wv16u, 16, DI16, CAT16, LO16, HI16, avx512, __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))))
WINO_FNS(wv8, wi8, wv8u, 8, DI8, CAT8, LO8, HI8, avx2, __attribute__((target("avx2,fma"))))
WINO_FNS(wv8, wi8, wv8u, 8, DI8, CAT8, LO8, HI8, c, )

/* The column-transformed rows: 4 floats a tile, the 2 of the last tile's overlap, and room for
 * the shifted loads of a last WL-tile step past the row; a slot holds V, Mo, those rows and a row
 * of zeros. */
static void scratch(const mi__blis_conv_t *c, mi__blis_wino_t *wn) {
  wn->wtl = (WT * wn->tw + WT * WL + 2 * WT + 15) / 16 * 16;
  wn->slot_fl = WA * WA * (wn->vs + wn->mst) + WA * wn->wtl + c->W;
}

/* G of G g G^T. */
static const double G4[WA][3] = {{0.25, 0, 0},
                                 {-1. / 6, -1. / 6, -1. / 6},
                                 {-1. / 6, 1. / 6, -1. / 6},
                                 {1. / 24, 1. / 12, 1. / 6},
                                 {1. / 24, -1. / 12, 1. / 6},
                                 {0, 0, 1}};

/* The tables per SIMD level: the AVX-512 block rule weighs 16-lane vectors of tiles, AVX2 and C
 * take the fewest blocks of at most WB_TILES. */
#define WINO_TILE(LANES, SFX)                                                                              \
  { .wt = WT, .wa = WA, .wl = WL, .lanes = LANES, .max_floats = WB_FLOATS, .max_tiles = WB_TILES, .g = G4, \
    .in = in_##SFX, .out = out_##SFX, .scratch = scratch }
static const mi__blis_wino_tile_t tile_avx512 = WINO_TILE(16, avx512), tile_avx2 = WINO_TILE(0, avx2),
                                  tile_c = WINO_TILE(0, c);

int32_t mi__blis_wino_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err) {
  if (!mi__blis_wino_fits(c))
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "blis-cpu: conv.winograd needs a dense (group 1) 3x3 conv, stride 1, dilation 1, on NCHW");
  if (mi__blis_wino6_default(c)) return mi__blis_wino6_prep(p, s, c, err); /* AVX2: 6x6 tiles */
  return mi__blis_wino_drv_prep(p, s, c,
                                c->simd == MI__SIMD_AVX512 ? &tile_avx512
                                : c->simd == MI__SIMD_AVX2 ? &tile_avx2
                                                           : &tile_c,
                                err);
}
