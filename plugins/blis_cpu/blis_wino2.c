/* blis_wino2.c - conv.packed_gemm_bf16 on dense 3x3 stride-1 convs: Winograd F(2x2, 3x3) with the
 * tile GEMMs in BF16 compute (AVX512_BF16 vdpbf16ps, FP32 sums).
 *
 * The im2col form of conv.packed_gemm_bf16 does 9 multiply-adds per output and channel pair;
 * F(2x2, 3x3) does 16 per 2x2 output tile (4 per output). The transforms run in FP32 (the input
 * tiles' B^T d B, the output's A^T m A with the bias/BN), the transformed weights are packed once
 * as BF16 pairs, and the 16 tile GEMMs (C x tiles by M x C, one per tile position) are
 * conv.packed_gemm_bf16's tiles, which round each block of transformed input tiles to BF16 once.
 * Run by conv.winograd's driver (blis_wino_drv.c): the same blocks of whole tile rows, scratch
 * slots and epilogue chain.
 *
 * Why 2x2 tiles and not conv.winograd's F(4x4): BF16's 8-bit significand rounds the transformed
 * operands, and the larger tiles' transforms amplify that. On random operands in [-1, 1) with 32
 * input channels, the output's relative L2 from the FP32 conv was 2.5e-2 at F(4x4) (1.6e-2 with
 * the points 0, +-1, 2, -1/2), 1.4e-2 at F(3x3), 3.9e-3 at F(2x2), and 2.1e-3 for the BF16 conv
 * without Winograd (a model of the rounding in double, 1500 tiles, 2026-12-06): only F(2x2) stays
 * within the 1e-2 the BF16 conv tests hold the kernels to. */
#include <string.h>

#include "blis_wino.h"

#define WT 2  /* output tile edge */
#define WA 4  /* input tile edge */
#define WL 16 /* tiles per transform step (the vector lanes) */
/* Blocks of tile rows as conv.winograd's AVX-512 rule: V and Mo within WB_FLOATS a block. */
#define WB_FLOATS 393216
#define WB_TILES 64

/* the transforms are AVX-512 only: the BF16 tiles they feed are */
#define AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))

/* Where conv.packed_gemm_bf16 takes this form: where it measured faster than the im2col form
 * (bench_blis_conv, 1 thread, process CPU time, min of 9, 3 interleaved rounds, hot and with the
 * caches flushed ("cold", as a layer inside a model reads its weights), and mi-run --profile on
 * ppocr_v4_det, M-LSD and ISNet; 2026-12-06, docs/benchmarks.md). The gain grows with
 * CM / (C + M), the GEMM's share against the transforms', and with the plane, over the 16 weight
 * sets (1.8x the im2col form's bytes) and the per-block work: CM / (C + M) of 32+ on 100+ 2x2
 * tiles (64->64 on 20x20 0.86 cold, 128->128 on 20x20 0.68 cold), or of 18+ on 400+ tiles (96->24
 * on 40x40 0.90 cold and 0.85-0.87 in ppocr_v4_det, 32->64 on 40x40 0.84 cold). Left out, cold:
 * 48->48 on 20x20 0.99, 40->40 on 40x40 0.99, 32->32 on 80x80 1.02, 96->24 on 20x20 to 32x32
 * 0.97-1.12 (1.10 in ppocr_v4_det), 16 or 24 channels on a side 1.01-1.59, 64->64 on 16x16 1.46
 * (256->256 on 12x12 and 16x16, 0.75-0.80, is a gain this rule leaves). */
int mi__blis_wino2_bf16_default(const mi__blis_conv_t *c) {
  int64_t tiles = (c->OH + WT - 1) / WT * ((c->OW + WT - 1) / WT), cm = c->C * c->M, cpm = c->C + c->M;
  return mi__blis_wino_fits(c) && c->simd == MI__SIMD_AVX512 &&
         ((tiles >= 100 && cm >= 32 * cpm) || (tiles >= 400 && cm >= 18 * cpm));
}

/* B^T d of one 4-vector (F(2,3)'s input transform, points 0, 1, -1 and infinity). */
#define W2_BT(d0, d1, d2, d3, o) \
  do {                           \
    (o)[0] = (d0) - (d2);        \
    (o)[1] = (d1) + (d2);        \
    (o)[2] = (d2) - (d1);        \
    (o)[3] = (d1) - (d3);        \
  } while (0)

/* A^T o of one 4-vector (the output transform). */
#define W2_AT(o0, o1, o2, o3, y) \
  do {                           \
    (y)[0] = (o0) + (o1) + (o2); \
    (y)[1] = (o1) - (o2) - (o3); \
  } while (0)

/* EVEN / ODD gather p[2k] / p[2k + 1] of two vectors (LO16 / HI16, which interleave their low /
 * high halves, and the vector types: blis_wino.h). */
#define EVEN16 \
  (wi16) { 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30 }
#define ODD16 \
  (wi16) { 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31 }

/* Tile rows [r0, r1) of image x into V[p][ci][tile] (tile = (th - r0) * tw + column), 16 tiles at
 * a time, as blis_wino.c's in_: per channel and tile row the column transform on the 4 input rows
 * (a zero row for padding rows) into tb[a][q] (q = input column + pl; the padding columns are
 * never written, zero since the slot's calloc), then the row transform on tile k's values at
 * tb[a][2k ... 2k + 3] (two pairs of loads, split into even and odd lanes). Lanes past a row's
 * last tile spill into the next row's tiles, written after them, or into the spare floats. */
AVX512_FN static void in2(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *x, int64_t r0, int64_t r1,
                          float *v, float *tb) {
  int64_t ci, th, a, b, q, k0, ld = wn->ld, cs = wn->vs, wtl = wn->wtl, W = c->W, pl = c->pl;
  const float *zrow = tb + WA * wtl;
  for (ci = 0; ci < c->C; ci++)
    for (th = r0; th < r1; th++) {
      const float *rp[WA];
      mi__blis_wino_rows(c, x, zrow, ci, th, WT, WA, rp);
      for (q = pl; q + WL <= pl + W; q += WL) {
        wv16 o[WA];
        W2_BT(*(const wv16u *)(rp[0] + q), *(const wv16u *)(rp[1] + q), *(const wv16u *)(rp[2] + q),
              *(const wv16u *)(rp[3] + q), o);
        for (a = 0; a < WA; a++) *(wv16u *)(tb + a * wtl + q) = o[a];
      }
      for (; q < pl + W; q++) {
        float o[WA];
        W2_BT(rp[0][q], rp[1][q], rp[2][q], rp[3][q], o);
        for (a = 0; a < WA; a++) tb[a * wtl + q] = o[a];
      }
      for (a = 0; a < WA; a++)
        for (k0 = 0; k0 < wn->tw; k0 += WL) {
          const float *p = tb + a * wtl + WT * k0;
          float *vo = v + a * WA * cs + ci * ld + (th - r0) * wn->tw + k0;
          wv16 l0 = *(const wv16u *)p, l1 = *(const wv16u *)(p + WL), l2 = *(const wv16u *)(p + 2);
          wv16 l3 = *(const wv16u *)(p + 2 + WL), o[WA];
          W2_BT(__builtin_shuffle(l0, l1, EVEN16), __builtin_shuffle(l0, l1, ODD16), __builtin_shuffle(l2, l3, EVEN16),
                __builtin_shuffle(l2, l3, ODD16), o);
          for (b = 0; b < WA; b++) *(wv16u *)(vo + b * cs) = o[b];
        }
    }
}

/* Mo[p][m][tile] back into 2x2 output blocks with bias/BN, the two columns of 16 tiles
 * interleaved into 32 floats of an output row. */
AVX512_FN static void out2(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *mo, int64_t r0, int64_t r1,
                           float *y) {
  int64_t m, th, k0, j, r, ld = wn->ld, ms = wn->mst;
  for (m = 0; m < c->M; m++) {
    float sc = c->affine ? c->scale[m] : 1.f, sh = c->affine ? c->shift[m] : 0.f;
    for (th = r0; th < r1; th++)
      for (k0 = 0; k0 < wn->tw; k0 += WL) {
        const float *o = mo + m * ld + (th - r0) * wn->tw + k0;
        wv16 s[WT][WA], t[WT], row[2];
        int64_t width = c->OW - k0 * WT;
        for (j = 0; j < WA; j++) {
          wv16 u[WT];
          W2_AT(*(const wv16u *)(o + j * ms), *(const wv16u *)(o + (WA + j) * ms),
                *(const wv16u *)(o + (2 * WA + j) * ms), *(const wv16u *)(o + (3 * WA + j) * ms), u);
          s[0][j] = u[0];
          s[1][j] = u[1];
        }
        for (r = 0; r < WT && th * WT + r < c->OH; r++) {
          float *yr = y + (m * c->OH + th * WT + r) * c->OW + k0 * WT;
          W2_AT(s[r][0], s[r][1], s[r][2], s[r][3], t);
          t[0] = t[0] * sc + sh;
          t[1] = t[1] * sc + sh;
          row[0] = __builtin_shuffle(t[0], t[1], LO16);
          row[1] = __builtin_shuffle(t[0], t[1], HI16);
          if (width >= WT * WL) {
            *(wv16u *)yr = row[0];
            *(wv16u *)(yr + WL) = row[1];
          } else {
            memcpy(yr, row, (size_t)width * sizeof(float));
          }
        }
      }
  }
}

/* The column-transformed rows: 2 floats a tile, the last tile's 2 of overlap, and room for the
 * shifted loads of a last WL-tile step past the row; a slot holds V, Mo, those rows and a row of
 * zeros. */
static void scratch(const mi__blis_conv_t *c, mi__blis_wino_t *wn) {
  wn->wtl = (WT * wn->tw + WT * WL + 2 * WT + 15) / 16 * 16;
  wn->slot_fl = WA * WA * (wn->vs + wn->mst) + WA * wn->wtl + c->W;
}

/* G of G g G^T. */
static const double G2[WA][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

int32_t mi__blis_wino2_bf16_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err) {
  static const mi__blis_wino_tile_t tile = {.wt = WT,
                                            .wa = WA,
                                            .wl = WL,
                                            .lanes = 16,
                                            .max_floats = WB_FLOATS,
                                            .max_tiles = WB_TILES,
                                            .g = G2,
                                            .in = in2,
                                            .out = out2,
                                            .scratch = scratch,
                                            .bf16 = 1};
  if (!mi__blis_wino_fits(c) || c->simd != MI__SIMD_AVX512)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "blis-cpu: BF16 Winograd F(2x2,3x3) needs a dense 3x3 stride-1 conv on AVX-512");
  return mi__blis_wino_drv_prep(p, s, c, &tile, err);
}
