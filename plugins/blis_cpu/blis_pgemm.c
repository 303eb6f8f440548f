/* blis_pgemm.c - conv.packed_gemm: a convolution as GEMM on weights packed once at prepare, with
 * register-blocked AVX-512 / AVX2 / C micro-kernels and the fused epilogue applied in registers. */
#include "blis_pgemm.h"

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
    } else if (!mi__blis_act_simd(c->simd, op->act, row, len)) {
      mi__blis_act_apply(op->act, op->a, op->b, row, len);
    }
  }
}

/* Items [i0, i1) of a pixel tile (row panel fastest). With pack, each column block is copied
 * into bp (pk) before the first of its panels, and the tiles read the copy (see pack_b16). */
typedef void (*pg_pack_fn)(const pg_call_t *q, int64_t blk, float *bp);
typedef void (*pg_tile_fn)(const pg_call_t *q, int64_t item, const float *bp);
static void pg_items(const pg_call_t *q, int64_t i0, int64_t i1, int pack, float *bp, pg_pack_fn pk,
                     pg_tile_fn tile) {
  int64_t i, last = -1;
  for (i = i0; i < i1; i++) {
    int64_t blk = i / q->mp_n;
    if (pack && blk != last) {
      pk(q, blk, bp);
      last = blk;
    }
    tile(q, i, pack ? bp : NULL);
  }
}

/* ---- "nv" tiles, AVX-512: 8 rows x 32 pixels (16 accumulators). */

__attribute__((target("avx,f16c"))) void mi__blis_h2f(const uint16_t *h, float *f, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
  if (i < n) {
    uint16_t t[8] = {0};
    float o[8];
    memcpy(t, h + i, (size_t)(n - i) * sizeof *t);
    _mm256_storeu_ps(o, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)t)));
    memcpy(f + i, o, (size_t)(n - i) * sizeof *o);
  }
}

__attribute__((target("avx,f16c"))) void mi__blis_f2h(const float *f, uint16_t *h, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (i < n) {
    float t[8] = {0};
    uint16_t o[8];
    memcpy(t, f + i, (size_t)(n - i) * sizeof *t);
    _mm_storeu_si128((__m128i *)o, _mm256_cvtps_ph(_mm256_loadu_ps(t), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    memcpy(h + i, o, (size_t)(n - i) * sizeof *o);
  }
}

AVX512_FN void mi__blis_h2f512(const uint16_t *h, float *f, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(f + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(f + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)));
  }
}

/* The two 16-lane vectors of a tile read B at flat offsets bo0 / bo1 and write output pixels
 * po0 / po1 (contiguous, bo1 = bo0 + 16, or two row segments of the flat planes). */
/* Full tiles (every lane of both vectors valid) load and store without masks (mobilenetv2, in
 * interleaved runs: 415-426 us against 424-431 with masks everywhere). */
#define PG_LD(k, p) (full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((k), (p)))
#define PG_ST(p, k, v) (full ? _mm512_storeu_ps((p), (v)) : _mm512_mask_storeu_ps((p), (k), (v)))
static inline __attribute__((always_inline)) AVX512_FN void
nv512_tile(const pg_call_t *q, int64_t mp, int64_t bo0, int64_t bo1, int64_t po0, int64_t po1, int two,
           __mmask16 k0, __mmask16 k1, const float *bp, int ek, int full) {
  /* bp: the block packed [K][32] (see nv512_items); bo0 and bo1 are then 0 and 16 */
  const float *b = bp ? bp : q->b;
  int pf = full && !q->koff; /* B rows at a fixed stride: prefetch (see PG_PF) */
  float abuf[MR512 * PG_KB] __attribute__((aligned(64)));
  __m512 c0[MR512], c1[MR512];
  int64_t kk, k0b, ldb = bp ? 32 : q->ldb;
  int i;
  /* Every index into c0/c1 is a constant after unrolling, so they stay in registers. */
#pragma GCC unroll 8
  for (i = 0; i < MR512; i++) c0[i] = c1[i] = _mm512_setzero_ps();
  for (k0b = 0; k0b < q->K; k0b += PG_KB) {
    int64_t kn = q->K - k0b < PG_KB ? q->K - k0b : PG_KB;
    const float *a = pg_a(q, (mp * q->K + k0b) * MR512, kn * MR512, abuf, 1);
    const int64_t *koff = q->koff ? q->koff + k0b : NULL;
    /* B at per-row offsets (flat planes) or at a fixed stride: two loops, no test per k */
#define NV512_K(BK)                                              \
  for (kk = 0; kk < kn; kk++) {                                  \
    const float *bk = (BK);                                      \
    __m512 b0 = PG_LD(k0, bk + bo0);                             \
    __m512 b1 = two ? PG_LD(k1, bk + bo1) : _mm512_setzero_ps(); \
    _Pragma("GCC unroll 8") for (i = 0; i < MR512; i++) {        \
      __m512 av = _mm512_set1_ps(a[kk * MR512 + i]);             \
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);                    \
      if (two) c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);           \
    }                                                            \
  }
    if (koff) {
      NV512_K(b + koff[kk])
    } else {
      const float *bb = b + k0b * ldb;
      if (pf && !bp) pg_prefetch_rows(bb, ldb, kn, bo0, bo1);
      NV512_K(bb + kk * ldb)
    }
#undef NV512_K
  }
  pg_store512(q, mp, po0, po1, two, k0, k1, ek, full, pf, c0, c1);
}
#undef PG_LD
#undef PG_ST

/* The tile for one epilogue kind and pixel width, chosen at run time, specialised at compile time. */
#define NV512_EK(EK)                                                 \
  do {                                                               \
    if (k0 == 0xffff && (!two || k1 == 0xffff))                      \
      nv512_tile(q, mp, bo0, bo1, po0, po1, two, k0, k1, bp, EK, 1); \
    else                                                             \
      nv512_tile(q, mp, bo0, bo1, po0, po1, two, k0, k1, bp, EK, 0); \
  } while (0)
static inline __attribute__((always_inline)) AVX512_FN void nv512_ek(const pg_call_t *q, int64_t mp, int64_t bo0,
                                                                     int64_t bo1, int64_t po0, int64_t po1,
                                                                     int two, __mmask16 k0, __mmask16 k1,
                                                                     const float *bp) {
  MI__BLIS_EK_SWITCH(q->c->pg_ek, NV512_EK)
}
#undef NV512_EK

static inline __attribute__((always_inline)) __mmask16 mask16(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0
                                                    : (__mmask16)((1u << left) - 1u);
}

AVX512_FN static void nv512(const pg_call_t *q, int64_t item, const float *bp) {
  int64_t mp = item % q->mp_n, blk = item / q->mp_n;
  if (q->seg) { /* two row segments of the flat planes: no junk columns, stored in place */
    const int64_t *s0 = q->seg + 6 * blk, *s1 = s0 + 3;
    int two = 2 * blk + 1 < q->nseg;
    nv512_ek(q, mp, s0[0], two ? s1[0] : 0, s0[1], two ? s1[1] : 0, two, mask16(s0[2]), two ? mask16(s1[2]) : 0,
             NULL);
  } else {
    int64_t col = blk * 32, left = q->N - col;
    nv512_ek(q, mp, bp ? 0 : col, bp ? 16 : col + 16, q->p0 + col, q->p0 + col + 16, left > 16, mask16(left),
             mask16(left - 16), bp);
  }
}

/* Most K rows of a packed B block of the AVX-512 tile (64 KiB on the stack). */
#define PG_BPK512_K 512

/* The AVX-512 form of pack_b16 below (same condition, same L1 set thrash): B rows a multiple of
 * 2 KiB apart are copied once per 32-pixel block, [K][32] with zeros past the last pixel, and
 * every row panel of the block reads the copy. */
AVX512_FN static void pack_b32(const pg_call_t *q, int64_t blk, float *bp) {
  const float *b = q->b + blk * 32;
  int64_t k, left = q->N - blk * 32;
  __mmask16 k0 = mask16(left), k1 = mask16(left - 16);
  for (k = 0; k < q->K; k++) {
    const float *bk = b + k * q->ldb;
    _mm_prefetch((const char *)(bk + PG_PF), _MM_HINT_T0);
    _mm512_store_ps(bp + k * 32, _mm512_maskz_loadu_ps(k0, bk));
    _mm512_store_ps(bp + k * 32 + 16, _mm512_maskz_loadu_ps(k1, bk + 16));
  }
}

/* Items [i0, i1) (row panel fastest): B packed when three or more panels read each block. The
 * copy costs about what one panel's reads of the block do, so with two panels it saves at most
 * one re-read: 64 -> 16 1x1 on 160x160 (2 panels) ran 1.09-1.19x slower packed. */
AVX512_FN static void nv512_items(const pg_call_t *q, int64_t i0, int64_t i1) {
  float bp[PG_BPK512_K * 32] __attribute__((aligned(64)));
  pg_items(q, i0, i1, !q->koff && q->mp_n >= 3 && q->K <= PG_BPK512_K && q->ldb % 512 == 0, bp, pack_b32, nv512);
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
                                                  (q->n * c->M + m) * c->OH * c->OW + p,
                                              k));
      break;
    default: v = mi__blis_act256_op(op, v); break;
    }
  }
  return v;
}

static inline __attribute__((always_inline)) AVX2_FN __m256i lane_mask256(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 8 ? 8 : left < 0 ? 0
                                                                            : left)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* FULL (compile-time): all 16 pixels valid, so B is read with plain loads; masked loads cost more
 * than the FMAs they feed on some cores. EK (compile-time): the epilogue kind. With B rows at a
 * fixed stride (a pointwise conv's input planes) the output and the residual are prefetched PG_PF
 * floats ahead, as the AVX-512 tile does; the B rows too unless bp holds the block packed (K rows
 * of 16 floats, see nv256_items). HALF (compile-time): left <= 8, only the first vector. */
static inline __attribute__((always_inline)) AVX2_FN void nv256_body(const pg_call_t *q, int64_t mp, int64_t bo,
                                                                     int64_t po, int64_t left, const float *bp,
                                                                     int full, int half, int ek, int nr) {
  const float *b = bp ? bp : q->b + bo;
  float abuf[MR256 * PG_KB] __attribute__((aligned(32)));
  __m256i k0 = lane_mask256(left), k1 = lane_mask256(left - 8);
  __m256 c0[MR256], c1[MR256];
  int64_t kk, k0b, ldb = bp ? 16 : q->ldb, rows = q->mg - mp * MR256;
  int i, pf = full && !q->koff;
#pragma GCC unroll 6
  for (i = 0; i < MR256; i++) c0[i] = c1[i] = _mm256_setzero_ps();
  for (k0b = 0; k0b < q->K; k0b += PG_KB) {
    int64_t kn = q->K - k0b < PG_KB ? q->K - k0b : PG_KB;
    const float *a = pg_a(q, (mp * q->K + k0b) * MR256, kn * MR256, abuf, 0);
    const int64_t *koff = q->koff ? q->koff + k0b : NULL;
    const float *bb = b + (koff ? 0 : k0b * ldb);
#define NV256_K(BK)                                                      \
  for (kk = 0; kk < kn; kk++) {                                          \
    const float *bk = (BK);                                              \
    __m256 b0 = full ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, k0); \
    __m256 b1 = full   ? _mm256_loadu_ps(bk + 8)                         \
                : half ? _mm256_setzero_ps()                             \
                       : _mm256_maskload_ps(bk + 8, k1);                 \
    _Pragma("GCC unroll 6") for (i = 0; i < MR256; i++) {                \
      if (i < nr) {                                                      \
        __m256 av = _mm256_broadcast_ss(a + kk * MR256 + i);             \
        c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);                          \
        if (!half) c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);               \
      }                                                                  \
    }                                                                    \
  }
    if (koff) {
      NV256_K(bb + koff[kk])
    } else {
      /* one line a row (a block is one line; the run's next block prefetches the following),
       * and only where the row goes on that far: the tile GEMMs of conv.winograd read rows of
       * 60-80 floats, and the prefetches past them cost 9% of M-LSD's AVX2 tile time (perf) */
      if (pf && !bp && mp == 0 && bo + PG_PF < q->N)
        for (kk = 0; kk < kn; kk++) _mm_prefetch((const char *)(bb + kk * ldb + PG_PF), _MM_HINT_T0);
      NV256_K(bb + kk * ldb)
    }
#undef NV256_K
  }
  /* The store: everything the rows need is read into locals first. The stores go through a
   * may_alias type, so anything read after one (q's and c's fields, the residual's address) was
   * read again for every row: with K = 24 (BlazeFace's pointwise convs) that address arithmetic
   * was a third of the tile's time. */
  {
    const mi__blis_conv_t *c = q->c;
    const int res = ek == MI__EK_ADD || ek == MI__EK_ADD_RELU;
    const int64_t ldc = q->ldc, ohw = c->OH * c->OW, mm0 = q->m0 + mp * MR256;
    float *y0 = q->y + mp * MR256 * ldc + po;
    const float *sc = c->affine ? c->scale + mm0 : NULL, *sh = c->affine ? c->shift + mm0 : NULL;
    const float *r0 = res ? (const float *)q->t[c->epi[0].tensor] + (q->n * c->M + mm0) * ohw + po : NULL;
    const __m256 lo = _mm256_set1_ps(ek == MI__EK_CLIP ? c->epi[0].a : 0.f);
    const __m256 hi = _mm256_set1_ps(ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
    const int epi = q->epi;
#pragma GCC unroll 6
    for (i = 0; i < MR256; i++) {
      if (i < rows) {
        float *yr = y0 + i * ldc;
        __m256 v0 = c0[i], v1 = c1[i];
        if (pf) {
          /* one line a row: the block is 16 floats, and the next block of the run reads on */
          _mm_prefetch((const char *)(yr + PG_PF), _MM_HINT_T0);
          if (res && epi) _mm_prefetch((const char *)(r0 + i * ohw + PG_PF), _MM_HINT_T0);
        }
        if (epi && ek == MI__EK_GENERIC) {
          v0 = epi256(q, mm0 + i, po, k0, v0);
          if (!half) v1 = epi256(q, mm0 + i, po + 8, k1, v1);
        } else if (epi) {
          if (sc) {
            __m256 s8 = _mm256_broadcast_ss(sc + i), h8 = _mm256_broadcast_ss(sh + i);
            v0 = _mm256_fmadd_ps(v0, s8, h8);
            v1 = _mm256_fmadd_ps(v1, s8, h8);
          }
          if (ek == MI__EK_RELU || ek == MI__EK_ADD_RELU || ek == MI__EK_ADD) {
            if (res) {
              const float *rr = r0 + i * ohw;
              v0 = _mm256_add_ps(v0, full ? _mm256_loadu_ps(rr) : _mm256_maskload_ps(rr, k0));
              if (!half) v1 = _mm256_add_ps(v1, full ? _mm256_loadu_ps(rr + 8) : _mm256_maskload_ps(rr + 8, k1));
            }
            if (ek != MI__EK_ADD) {
              v0 = _mm256_max_ps(v0, _mm256_setzero_ps());
              v1 = _mm256_max_ps(v1, _mm256_setzero_ps());
            }
          } else if (ek == MI__EK_CLIP) {
            v0 = _mm256_min_ps(_mm256_max_ps(v0, lo), hi);
            v1 = _mm256_min_ps(_mm256_max_ps(v1, lo), hi);
          }
        }
        if (full) {
          _mm256_storeu_ps(yr, v0);
          _mm256_storeu_ps(yr + 8, v1);
        } else {
          _mm256_maskstore_ps(yr, k0, v0);
          if (!half) _mm256_maskstore_ps(yr + 8, k1, v1);
        }
      }
    }
  }
}

/* Whether rows m0 .. m0 + 5 have scale 1 (a bias, or none): nv256_run then starts its sums from
 * the shift and the residual. */
static inline int unit6(const mi__blis_conv_t *c, int64_t m0) {
  int i;
  if (!c->affine) return 1;
  for (i = 0; i < MR256; i++)
    if (c->scale[m0 + i] != 1.f) return 0;
  return 1;
}

/* A run of n full 16-pixel blocks (blk0 on) of one full 6-row panel, FP32 weights, one k block,
 * B at a fixed stride or packed (bp: the run's blocks, [block][K][16]), a common epilogue chain
 * (EK, compile-time). The same sums and epilogue as nv256_body, but everything a tile needs past
 * its k loop (rows' addresses, scale/shift, the residual's rows, the clip bounds) is set up once
 * per run and stepped by a block, and no row is tested: per tile, nv256_body's set-up, its
 * per-row tests and the item loop's dispatch cost about half again the k loop at K = 24
 * (BlazeFace's pointwise convs; perf). */
static inline __attribute__((always_inline)) AVX2_FN void nv256_run(const pg_call_t *q, int64_t mp, int64_t blk0,
                                                                    int64_t n, const float *bp, int ek, int unit) {
  const mi__blis_conv_t *c = q->c;
  /* prefetch as nv256_body (B rows unless packed, output and residual rows), but not on a dw+pw
   * band: there B is the band just written, the residual (BlazeFace's) the rows the depthwise
   * half just read, and the prefetches cost 2-5% of blazeface-back capped (mi-run, 4 rounds) */
  const int res = ek == MI__EK_ADD || ek == MI__EK_ADD_RELU, pf = !c->pg_band, pfb = pf && !bp;
  const int64_t K = q->K, ldb = bp ? 16 : q->ldb, bstep = bp ? K * 16 : 16, ldc = q->ldc, ohw = c->OH * c->OW;
  const int64_t mm0 = q->m0 + mp * MR256, bo0 = blk0 * 16;
  const float *a = q->pw + mp * K * MR256, *b = bp ? bp : q->b + bo0;
  float *y = q->y + mp * MR256 * ldc + q->p0 + bo0;
  const float *r = res ? (const float *)q->t[c->epi[0].tensor] + (q->n * c->M + mm0) * ohw + q->p0 + bo0 : NULL, *rr;
  float *yr;
  const __m256 lo = _mm256_set1_ps(ek == MI__EK_CLIP ? c->epi[0].a : 0.f);
  const __m256 hi = _mm256_set1_ps(ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
  const int aff = c->affine;
  float sc[MR256], sh[MR256]; /* locals: the stores below cannot change them */
  int64_t j, kk, bo = bo0;
  int i;
  for (i = 0; i < MR256; i++) {
    sc[i] = aff ? c->scale[mm0 + i] : 1.f;
    sh[i] = aff ? c->shift[mm0 + i] : 0.f;
  }
  for (j = 0; j < n; j++, b += bstep, y += 16, r = res ? r + 16 : r, bo += 16) {
    __m256 c0[MR256], c1[MR256];
    if (unit) { /* the sums start from the shift and the residual: the epilogue is the activation */
      rr = r;
#pragma GCC unroll 6
      for (i = 0; i < MR256; i++, rr = res ? rr + ohw : rr) {
        __m256 h8 = _mm256_broadcast_ss(sh + i);
        c0[i] = res ? _mm256_add_ps(h8, _mm256_loadu_ps(rr)) : h8;
        c1[i] = res ? _mm256_add_ps(h8, _mm256_loadu_ps(rr + 8)) : h8;
      }
    } else {
#pragma GCC unroll 6
      for (i = 0; i < MR256; i++) c0[i] = c1[i] = _mm256_setzero_ps();
    }
    /* the B rows' next lines, once a block (first panel only), as nv256_body */
    if (pfb && mp == 0 && bo + PG_PF < q->N)
      for (kk = 0; kk < K; kk++) _mm_prefetch((const char *)(b + kk * ldb + PG_PF), _MM_HINT_T0);
    for (kk = 0; kk < K; kk++) {
      const float *bk = b + kk * ldb;
      __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8);
#pragma GCC unroll 6
      for (i = 0; i < MR256; i++) {
        __m256 av = _mm256_broadcast_ss(a + kk * MR256 + i);
        c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
        c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
      }
    }
    yr = y;
    rr = r;
#pragma GCC unroll 6
    for (i = 0; i < MR256; i++, yr += ldc, rr = res ? rr + ohw : rr) {
      __m256 v0 = c0[i], v1 = c1[i];
      if (pf) {
        _mm_prefetch((const char *)(yr + PG_PF), _MM_HINT_T0);
        if (res) _mm_prefetch((const char *)(rr + PG_PF), _MM_HINT_T0);
      }
      if (aff && !unit) {
        __m256 s8 = _mm256_broadcast_ss(sc + i), h8 = _mm256_broadcast_ss(sh + i);
        v0 = _mm256_fmadd_ps(v0, s8, h8);
        v1 = _mm256_fmadd_ps(v1, s8, h8);
      }
      if (res && !unit) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(rr));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(rr + 8));
      }
      if (ek == MI__EK_RELU || ek == MI__EK_ADD_RELU) {
        v0 = _mm256_max_ps(v0, _mm256_setzero_ps());
        v1 = _mm256_max_ps(v1, _mm256_setzero_ps());
      } else if (ek == MI__EK_CLIP) {
        v0 = _mm256_min_ps(_mm256_max_ps(v0, lo), hi);
        v1 = _mm256_min_ps(_mm256_max_ps(v1, lo), hi);
      }
      _mm256_storeu_ps(yr, v0);
      _mm256_storeu_ps(yr + 8, v1);
    }
  }
}

/* One function per chain kind, out of line: inlined into nv256_items beside nv256_body's
 * instances, GCC spilled the accumulators of the first conv's k loop (koff) to the stack (the
 * whole model 17% slower capped). */
#define NV256_RUN_FN(EK)                                                                                    \
  static AVX2_FN __attribute__((noinline)) void nv256_run_##EK(const pg_call_t *q, int64_t mp, int64_t blk, \
                                                               int64_t nb, const float *bp) {               \
    if (unit6(q->c, q->m0 + mp * MR256)) nv256_run(q, mp, blk, nb, bp, EK, 1);                              \
    else                                                                                                    \
      nv256_run(q, mp, blk, nb, bp, EK, 0);                                                                 \
  }
NV256_RUN_FN(MI__EK_GENERIC)
NV256_RUN_FN(MI__EK_NONE)
NV256_RUN_FN(MI__EK_RELU)
NV256_RUN_FN(MI__EK_CLIP)
NV256_RUN_FN(MI__EK_ADD)
NV256_RUN_FN(MI__EK_ADD_RELU)
#undef NV256_RUN_FN

/* Where column block blk of B starts (bo), where its outputs go (po) and how many pixels it has
 * (left, may exceed 16 on the last block): a 16-pixel block, or one row segment of the flat planes
 * (no junk columns, stored in place, as nv512's pairs of segments). */
static inline void nv256_block(const pg_call_t *q, int64_t blk, int64_t *bo, int64_t *po, int64_t *left) {
  *bo = blk * 16;
  *po = q->p0 + *bo;
  *left = q->N - *bo;
  if (q->seg) {
    *bo = q->seg[3 * blk];
    *po = q->seg[3 * blk + 1];
    *left = q->seg[3 * blk + 2];
  }
}

/* A last block of 8 pixels or fewer runs half the tile: its second vector would be all masked
 * lanes, and the multiply-adds on them are wasted (conv.winograd's 50-tile blocks on 40x40 planes
 * end in one of 2 pixels). */

/* Most K rows of a packed B block of the AVX2 tile (32 KiB on the stack). */
#define PG_BPK_K 512

/* B rows at a fixed stride that is a multiple of 2 KiB are packed once per 16-pixel block, [K][16]
 * with zeros past the last pixel, and every row panel of that block reads the copy. In place, the
 * K rows of one block sit a plane apart, and such planes (64x64, 128x128, 160x160) put them all in
 * one or two sets of the L1, so each panel found the previous one's rows evicted. 1x1 convs capped
 * at AVX2 (bench_blis_conv, warm, min of 60): 24->24 128x128 0.327 ms against 0.229 for the same
 * conv on 128x130 planes; 48->48 64x64 0.288 against 0.196 on 66x64. Packed: 0.235 and 0.195.
 * Other strides stay in place: packing 144->24 or 64->32 on 80x80 planes (rows over four sets)
 * was 3-13% slower. */
static inline __attribute__((always_inline)) AVX2_FN void pack_b16(const pg_call_t *q, int64_t bo, int64_t left,
                                                                   float *bp) {
  const float *b = q->b + bo;
  int64_t k;
  __m256i k0 = lane_mask256(left), k1 = lane_mask256(left - 8);
  if (left >= 16) {
    for (k = 0; k < q->K; k++) {
      const float *bk = b + k * q->ldb;
      _mm_prefetch((const char *)(bk + PG_PF), _MM_HINT_T0);
      _mm256_store_ps(bp + k * 16, _mm256_loadu_ps(bk));
      _mm256_store_ps(bp + k * 16 + 8, _mm256_loadu_ps(bk + 8));
    }
    return;
  }
  for (k = 0; k < q->K; k++) {
    _mm256_store_ps(bp + k * 16, _mm256_maskload_ps(b + k * q->ldb, k0));
    _mm256_store_ps(bp + k * 16 + 8, _mm256_maskload_ps(b + k * q->ldb + 8, k1));
  }
}

AVX2_FN static void pack256(const pg_call_t *q, int64_t blk, float *bp) {
  int64_t bo, po, left;
  nv256_block(q, blk, &bo, &po, &left);
  pack_b16(q, bo, left, bp);
}

/* A last row panel of 1-4 rows (M = 16, 32, 64 ... in panels of 6) runs 4 or 2 rows of the tile:
 * all 6 cost as much as the 6 rows (bench_blis_conv capped, 3x3 stride 2 from 4 channels on
 * 320x320: 30 outputs 0.71-0.74 ms, 32 outputs 0.83-0.84, 36 outputs 0.82-0.85). */

/* Most 16-pixel blocks one row panel runs in a row. */
#define NV256_S 8

/* Items [i0, i1): runs of up to S adjacent 16-pixel blocks (S * K <= PG_BPK_K, so S = 8 for
 * K <= 64), row panel next, block fastest. One panel's run writes S * 64 contiguous bytes of each
 * of its 6 output rows; one block per panel visit wrote one cache line to each of M output planes
 * in turn, more streams than the core's write combining and prefetchers follow: 16 -> 96 1x1 on
 * 160x160 capped at AVX2, caches cold, 1.51-2.22 ms min with S = 1, 1.14-1.29 with S = 8 (K 24 ->
 * 144 on 80x80: 0.61 -> 0.55). With K over 64 the run is shorter and the tile's sums dominate.
 * Where B is packed (see pack_b16) the run's blocks are copied together, [block][K][16]. */
AVX2_FN static void nv256_items(const pg_call_t *q, int64_t i0, int64_t i1) {
  float bp[PG_BPK_K * 16] __attribute__((aligned(32)));
  int64_t S = q->K >= PG_BPK_K ? 1 : PG_BPK_K / q->K;
  int pack = !q->koff && q->mp_n >= 2 && q->K <= PG_BPK_K && q->ldb % 512 == 0;
  int64_t i, last = -1, per, run, r, cnt, mp, sub;
  /* runs for nv256_run: fixed-stride B, FP32 weights, one k block, a common chain */
  int lean = !q->koff && !q->seg && !q->pwh && q->K <= PG_KB && q->epi && q->c->pg_ek != MI__EK_GENERIC;
  int64_t nfull = q->N / 16; /* blocks of 16 valid pixels */
  if (S > NV256_S) S = NV256_S;
  per = q->mp_n * S;
  /* item i0's place, then stepped (no divisions per item) */
  run = i0 / per;
  r = i0 - run * per;
  cnt = q->nb_n - run * S < S ? q->nb_n - run * S : S;
  mp = r / cnt;
  sub = r - mp * cnt;
  for (i = i0; i < i1; i++) {
    int64_t blk = run * S + sub, bo, po, left, mrows = q->mg - mp * MR256; /* rows of this panel */
    const float *bpp = NULL;
    if (pack) {
      if (run != last) {
        int64_t j;
        for (j = 0; j < cnt; j++) pack256(q, run * S + j, bp + j * q->K * 16);
        last = run;
      }
      bpp = bp + sub * q->K * 16;
    }
    /* this panel's full blocks of the run, in one nv256_run */
    if (lean && mrows >= MR256 && blk < nfull) {
      int64_t nb = cnt - sub < i1 - i ? cnt - sub : i1 - i;
      if (nb > nfull - blk) nb = nfull - blk;
#define NV256_RUN(EK) nv256_run_##EK(q, mp, blk, nb, bpp)
      MI__BLIS_EK_SWITCH(q->c->pg_ek, NV256_RUN)
#undef NV256_RUN
      i += nb - 1;
      sub += nb - 1;
      if (++sub == cnt) {
        sub = 0;
        if (++mp == q->mp_n) {
          mp = 0;
          run++;
          cnt = q->nb_n - run * S < S ? q->nb_n - run * S : S;
        }
      }
      continue;
    }
    nv256_block(q, blk, &bo, &po, &left);
#define NV256_NR(EK, NR)                                              \
  do {                                                                \
    if (left >= 16) nv256_body(q, mp, bo, po, 16, bpp, 1, 0, EK, NR); \
    else if (left <= 8)                                               \
      nv256_body(q, mp, bo, po, left, bpp, 0, 1, EK, NR);             \
    else                                                              \
      nv256_body(q, mp, bo, po, left, bpp, 0, 0, EK, NR);             \
  } while (0)
#define NV256_EK(EK)                    \
  do {                                  \
    if (mrows > 4) NV256_NR(EK, MR256); \
    else if (mrows > 2)                 \
      NV256_NR(EK, 4);                  \
    else                                \
      NV256_NR(EK, 2);                  \
  } while (0)
    MI__BLIS_EK_SWITCH(q->c->pg_ek, NV256_EK)
#undef NV256_EK
#undef NV256_NR
    if (++sub == cnt) {
      sub = 0;
      if (++mp == q->mp_n) {
        mp = 0;
        run++;
        cnt = q->nb_n - run * S < S ? q->nb_n - run * S : S;
      }
    }
  }
}

/* ---- "nv" tiles, plain C: 4 rows x 16 pixels; the epilogue runs on the stored rows. */
#define MRC 4

static void nvc(const pg_call_t *q, int64_t item) {
  int64_t mp = item % q->mp_n, col = (item / q->mp_n) * 16, left = q->N - col;
  const float *b = q->b + col;
  float acc[MRC][16], abuf[MRC * PG_KB];
  int64_t kk, k0b, j, rows = q->mg - mp * MRC;
  int i;
  if (left > 16) left = 16;
  memset(acc, 0, sizeof acc);
  for (k0b = 0; k0b < q->K; k0b += PG_KB) {
    int64_t kn = q->K - k0b < PG_KB ? q->K - k0b : PG_KB;
    const float *a = pg_a(q, (mp * q->K + k0b) * MRC, kn * MRC, abuf, 0);
    for (kk = 0; kk < kn; kk++)
      for (i = 0; i < MRC; i++) {
        float av = a[kk * MRC + i];
        const float *bk = q->koff ? b + q->koff[k0b + kk] : b + (k0b + kk) * q->ldb;
        for (j = 0; j < left; j++) acc[i][j] += av * bk[j];
      }
  }
  if (rows > MRC) rows = MRC;
  for (i = 0; i < rows; i++) {
    int64_t m = mp * MRC + i, p = q->p0 + col;
    float *yr = q->y + m * q->ldc + p;
    for (j = 0; j < left; j++) yr[j] = acc[i][j];
    if (q->epi) mi__blis_epi_tail(q->c, q->t, q->n, q->m0 + m, p, yr, left, 0, 1);
  }
}

/* Rows per packed panel for a SIMD level and orientation. */
int64_t mi__blis_pg_panel(int32_t simd, int mv) {
  if (mv) return simd == MI__SIMD_AVX512 ? 32 : 16;
  return simd == MI__SIMD_AVX512 ? MR512 : simd == MI__SIMD_AVX2 ? MR256
                                                                 : MRC;
}

/* Pixels per "nv" block. */
static int64_t nv_cols(int32_t simd) { return simd == MI__SIMD_AVX512 ? 32 : 16; }

uint64_t mi__blis_pg_packed_floats(const mi__blis_conv_t *c) {
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW, mr = c->pg_mr;
  return (uint64_t)(c->G * ((mg + mr - 1) / mr) * mr * K);
}

void mi__blis_pg_pack(mi__blis_conv_t *c, const void *w, int w_half) {
  int64_t mg = c->M / c->G, K = c->C / c->G * c->KH * c->KW, mr = c->pg_mr, np = (mg + mr - 1) / mr;
  int64_t g, pnl, k, i;
  float col[32]; /* one k of a panel (mr <= 32) */
  for (g = 0; g < c->G; g++)
    for (pnl = 0; pnl < np; pnl++) {
      int64_t base = (g * np + pnl) * mr * K;
      for (k = 0; k < K; k++) {
        for (i = 0; i < mr; i++) {
          int64_t m = pnl * mr + i, src = (g * mg + m) * K + k;
          if (m >= mg) col[i] = 0.f;
          else if (w_half)
            mi__blis_h2f((const uint16_t *)w + src, &col[i], 1);
          else
            col[i] = ((const float *)w)[src];
        }
        if (c->packed_h) mi__blis_f2h(col, c->packed_h + base + k * mr, mr);
        else
          memcpy(c->packed + base + k * mr, col, (size_t)mr * sizeof *col);
      }
    }
}

static void pg_part(void *arg, int64_t i0, int64_t i1) {
  const pg_call_t *q = arg;
  int32_t simd = q->c->simd;
  int64_t i;
  if (q->pwb) { /* conv.packed_gemm_bf16: AVX-512 "nv" tiles only (see blis_conv.c) */
    mi__blis_pgb_items(q, i0, i1);
    return;
  }
  if (!q->c->pg_mv && simd == MI__SIMD_AVX2) {
    nv256_items(q, i0, i1);
    return;
  }
  if (!q->c->pg_mv && simd == MI__SIMD_AVX512) {
    nv512_items(q, i0, i1);
    return;
  }
  for (i = i0; i < i1; i++) {
    if (q->c->pg_mv) {
      if (simd == MI__SIMD_AVX512) mi__blis_pg_mv512(q, i);
      else if (simd == MI__SIMD_AVX2)
        mi__blis_pg_mv256(q, i);
      else
        mi__blis_pg_mvc(q, i);
    } else {
      nvc(q, i);
    }
  }
}

static void pgb_mv_part(void *arg, int64_t i0, int64_t i1) { mi__blis_pgb_mv_items(arg, i0, i1); }

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
  int mvb;
  q.c = c;
  q.t = t;
  q.mp_n = (mg + mr - 1) / mr;
  q.pw = c->packed ? c->packed + g * q.mp_n * mr * K : NULL;
  q.pwh = c->packed_h ? c->packed_h + g * q.mp_n * mr * K : NULL;
  q.pwb = c->packed_b ? c->packed_b + g * q.mp_n * mr * ((K + 1) / 2) : NULL;
  q.b = b;
  q.gate = c->pg_gated && c->packed_b ? (const float *)t[c->gate] : NULL;
  q.gkk = c->KH * c->KW;
  q.ldb = ldb;
  q.koff = koff;
  q.pix = koff && c->pg_mv && !raw ? c->pg_pix : NULL;
  q.seg = koff && !c->pg_mv && !raw && c->simd != MI__SIMD_C ? c->pg_seg : NULL;
  q.nseg = q.seg ? c->pg_nseg : 0;
  q.epi = raw == NULL;
  q.y = raw ? raw : (float *)t[c->y] + (n * c->M + g * mg) * ohw;
  q.ldc = raw ? ldraw : ohw;
  q.n = n;
  q.m0 = g * mg;
  q.mg = mg;
  q.K = K;
  q.N = npix;
  q.p0 = p0;
  /* (its tiles run the whole epilogue). A flat plane's single row segment is one block too: the
   * 1-D convs of silero-vad's encoder (3 taps, 1-3 output pixels) ran 3 of 32 lanes of the "nv"
   * tiles, slower in BF16 than in FP32. */
  mvb = q.pwb && (!q.seg || q.nseg == 1) && npix <= MI__PGB_MV_PIX;
  if (c->pg_mv) {
    q.nb_n = 1;
    mi__blis_parallel(env, q.mp_n, 1, mr * K * npix, pg_part, &q);
  } else if (mvb) {
    /* BF16 on a few pixels: the channels in the lanes, two row panels an item */
    q.nb_n = 1;
    mi__blis_parallel(env, (q.mp_n + 1) / 2, 1, 2 * mr * K * npix, pgb_mv_part, &q);
  } else {
    int64_t cols = nv_cols(c->simd);
    q.nb_n = q.seg ? (q.nseg + cols / 16 - 1) / (cols / 16) : (npix + cols - 1) / cols;
    mi__blis_parallel(env, q.mp_n * q.nb_n, 1, mr * K * cols, pg_part, &q);
  }
  /* Epilogue ops past the vector prefix (sigmoid, ...), on the rows this call wrote. */
  if (q.epi && !c->pg_mv && !mvb && c->pg_vec_ops < c->epi_n && c->simd != MI__SIMD_C) {
    int64_t m;
    for (m = 0; m < mg; m++)
      mi__blis_epi_tail(c, t, n, g * mg + m, p0, q.y + m * ohw + p0, npix, c->pg_vec_ops, 0);
  }
}
