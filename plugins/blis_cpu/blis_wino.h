/* blis_wino.h - conv.winograd's driver (blis_wino_drv.c) as the tile sizes' files use it. */
#ifndef MI_BLIS_WINO_H
#define MI_BLIS_WINO_H

#include "blis_conv.h"

typedef struct mi__blis_wino mi__blis_wino_t;

/* A tile size's transforms (blis_wino.c's in_ / out_ per SIMD level, blis_wino6.c's in6 / out6),
 * one call per block of tile rows [r0, r1) of one image. in: image x into the slot's V (wn->wp
 * positions wn->vs apart, C rows of wn->ld), through tb (wn->wa rows of wn->wtl, then a row of
 * zeros). out: the slot's Mo (positions wn->mst apart, M rows of wn->ld) back into output y with
 * bias/BN. */
typedef void (*mi__blis_wino_in_fn)(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *x, int64_t r0,
                                    int64_t r1, float *v, float *tb);
typedef void (*mi__blis_wino_out_fn)(const mi__blis_conv_t *c, const mi__blis_wino_t *wn, const float *mo, int64_t r0,
                                     int64_t r1, float *y);

/* What a tile size gives the driver: one static table per tile size and SIMD level. */
typedef struct mi__blis_wino_tile {
  int64_t wt, wa, wl;                   /* output tile edge, input tile edge, tiles a transform step */
  int64_t lanes, max_floats, max_tiles; /* mi__blis_wino_blocks' block rule */
  const double (*g)[3];                 /* G (wa rows) of the weight transform G g G^T */
  mi__blis_wino_in_fn in;               /* the transforms at one SIMD level */
  mi__blis_wino_out_fn out;
  /* sets wn->wtl and wn->slot_fl from the block geometry (th ... mst, slots) */
  void (*scratch)(const mi__blis_conv_t *c, mi__blis_wino_t *wn);
  int bf16; /* the tile GEMMs in BF16 compute: conv.packed_gemm_bf16's tiles, weights packed as BF16 pairs */
} mi__blis_wino_tile_t;

/* One prepared conv.winograd layer (s->aux): the tile size, the block geometry, the scratch slots
 * and the packed weight sets, all in one allocation. The header stays at 128 bytes (the edges as
 * int16_t, one pointer to the tile's table): the busy flags, weight sets and slots after the wp
 * sub-convs then lie at the offsets they had before the tile sizes shared this driver (a 64-byte
 * shift of the slots ran M-LSD's 3x3 convs 3-7% slower at AVX-512, mi-run --profile, 2026-12-06). */
struct mi__blis_wino {
  int16_t wt, wa, wp, wl;           /* output tile edge, input tile edge, positions (wa * wa), tiles a transform step */
  const mi__blis_wino_tile_t *tile; /* the transforms at the conv's SIMD level */
  int64_t th, tw, rows;             /* tile rows, tile columns, tile rows of the largest block */
  int64_t nb, parts, fixed;         /* blocks (mi__blis_wino_start's), the threads they are for, rows a block or 0 */
  int64_t ld;                       /* floats per channel row of a slot's V and Mo (a block + wl spare) */
  int64_t vs, mst;                  /* floats from one position's V (C rows), Mo (M rows) to the next */
  int64_t wtl;                      /* floats per row of the column-transformed tile row (padded) */
  int64_t slots, slot_fl;           /* scratch slots (one per running part), floats per slot */
  _Atomic int *busy;                /* per slot */
  float *slot;
  mi__blis_conv_t sub[]; /* wp: position p's GEMM as a 1x1 conv of C to M channels */
};
_Static_assert(sizeof(mi__blis_wino_t) == 128, "conv.winograd's layer header is 128 bytes");

/* The driver's prepare: block geometry, scratch slots, weights transformed (in double) and packed
 * into wp conv.packed_gemm weight sets (conv.packed_gemm_bf16's BF16 pairs where tile->bf16); s->aux
 * and s->run set, the constant weights dropped. The caller has checked that the conv fits. */
int32_t mi__blis_wino_drv_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c,
                               const mi__blis_wino_tile_t *tile, mi_error_t *err);

/* The input transforms' row pointers: rp[i] for input row th * wt - pt + i of channel ci of image
 * x (i < n), shifted by -pl so that rp[i][q] is column q - pl; a row outside the image reads
 * zrow, a row of zeros. */
static inline void mi__blis_wino_rows(const mi__blis_conv_t *c, const float *x, const float *zrow, int64_t ci,
                                      int64_t th, int64_t wt, int64_t n, const float **rp) {
  for (int64_t i = 0; i < n; i++) {
    int64_t r = th * wt - c->pt + i;
    rp[i] = r >= 0 && r < c->H ? x + (ci * c->H + r) * c->W - c->pl : zrow - c->pl;
  }
}

/* The AVX-512 transforms' vectors (GCC vector extensions): 16 floats, 16 ints, 16 floats at any
 * float-aligned address; LO16 / HI16 interleave the low / high halves of two vectors lane by lane. */
typedef float wv16 __attribute__((vector_size(64)));
typedef int wi16 __attribute__((vector_size(64)));
typedef float wv16u __attribute__((vector_size(64), aligned(4), may_alias));
#define LO16 \
  (wi16) { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23 }
#define HI16 \
  (wi16) { 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31 }

#endif
