/* blis_pgemm.h - what the "nv", "mv" and BF16 tile files of conv.packed_gemm share: the call
 * record, the k blocking, the read of a block of packed (FP32 or FP16) weights and the AVX-512 store. */
#ifndef MI_BLIS_PGEMM_H
#define MI_BLIS_PGEMM_H

#include <immintrin.h>
#include <string.h>

#include "blis_epi512.h"

#define AVX512_FN MI__AVX512_FN
#define AVX2_FN __attribute__((target("avx2,fma")))

/* The tiles walk k in blocks of PG_KB. With FP16 storage each block of the panel is converted to
 * float on the stack first (one conversion per weight per tile: 1/32 of its multiply-adds on the
 * "nv" tiles); with FP32 storage the panel is read in place. The sums run in the same k order. */
#define PG_KB 128

typedef float pg_v16 __attribute__((vector_size(64)));

typedef struct pg_call {
  const mi__blis_conv_t *c;
  void *const *t;
  const float *pw;     /* packed weights of the group (FP32 storage), else NULL */
  const uint16_t *pwh; /* the same as IEEE half (FP16 storage), else NULL */
  const uint32_t *pwb; /* the same as BF16 pairs along k (BF16 compute, blis_pgemm_bf16.c), else NULL */
  const float *b;      /* B[k][p] at b + k * ldb + p, or b + koff[k] + p when koff is set */
  const float *gate;   /* BF16 tiles: B row k times gate[k / gkk] as it is converted, else NULL */
  int64_t gkk;
  int64_t ldb;
  const int64_t *koff;
  const int64_t *pix; /* "mv" on the flat planes: pixel p at b + koff[k] + pix[p] (no junk columns) */
  const int64_t *seg; /* "nv" AVX-512 on the flat planes: row segments {flat, out, len}, two a tile */
  int64_t nseg;
  int epi;  /* 0: raw sums, the caller runs the epilogue */
  float *y; /* the group's first output row; pixel p of row m at y + m * ldc + p0 + p */
  int64_t ldc, n, m0, mg, K, N, p0;
  int64_t mp_n, nb_n; /* row panels, pixel blocks */
} pg_call_t;

/* n halves to floats, 16 at a time (AVX-512). */
void mi__blis_h2f512(const uint16_t *h, float *f, int64_t n);

/* cnt packed values from offset off: in place (FP32 storage) or converted into buf (FP16). */
static inline __attribute__((always_inline)) const float *pg_a(const pg_call_t *q, int64_t off, int64_t cnt,
                                                               float *buf, int wide) {
  if (!q->pwh) return q->pw + off;
  if (wide) mi__blis_h2f512(q->pwh + off, buf, cnt);
  else
    mi__blis_h2f(q->pwh + off, buf, cnt);
  return buf;
}

/* Software prefetch distance of the "nv" tiles on B rows at a fixed stride (a pointwise conv's
 * input planes), on the output rows and on a residual operand: PG_PF floats ahead of the tile's
 * pixels. Those are one stream per channel plane (24-144 of them), more than the hardware
 * prefetchers follow; a 24->24 1x1 conv with a residual add on 128x128 planes, caches cold, ran
 * 0.30-0.37 ms without, 0.18-0.22 ms with (bench_blis_conv ... cold). */
#define PG_PF 256

/* Prefetch of the kn B rows of a k block at pixels bo0 / bo1 (+ PG_PF). */
static inline __attribute__((always_inline)) void pg_prefetch_rows(const float *bb, int64_t ldb, int64_t kn,
                                                                   int64_t bo0, int64_t bo1) {
  int64_t kk;
  for (kk = 0; kk < kn; kk++) {
    _mm_prefetch((const char *)(bb + kk * ldb + bo0 + PG_PF), _MM_HINT_T0);
    _mm_prefetch((const char *)(bb + kk * ldb + bo1 + PG_PF), _MM_HINT_T0);
  }
}

/* Rows of an AVX-512 "nv" tile (8 rows x 32 pixels, 16 accumulators). */
#define MR512 8

/* The store of an AVX-512 "nv" tile's sums c0 (pixels po0..) and c1 (po1.., when two) of row
 * panel mp, with the epilogue kind ek (MI__EK_*, a constant at the call) applied in registers;
 * full: every lane of both vectors valid (no masks); pf: prefetch the output and residual rows.
 * What the rows need is read into locals first (see nv256_body). Shared by the FP32/FP16 tiles
 * (blis_pgemm.c) and the BF16 ones (blis_pgemm_bf16.c). */
#define PG_ST512(p, k, v) (full ? _mm512_storeu_ps((p), (v)) : _mm512_mask_storeu_ps((p), (k), (v)))
static inline __attribute__((always_inline)) AVX512_FN void
pg_store512(const pg_call_t *q, int64_t mp, int64_t po0, int64_t po1, int two, __mmask16 k0, __mmask16 k1, int ek,
            int full, int pf, const __m512 *c0, const __m512 *c1) {
  const mi__blis_conv_t *c = q->c;
  const int res = ek == MI__EK_ADD || ek == MI__EK_ADD_RELU, epi = q->epi;
  const int64_t ldc = q->ldc, ohw = c->OH * c->OW, mm0 = q->m0 + mp * MR512, rows = q->mg - mp * MR512;
  float *y0 = q->y + mp * MR512 * ldc;
  const float *sc = c->affine ? c->scale + mm0 : NULL, *sh = c->affine ? c->shift + mm0 : NULL;
  const float *r0 = res && epi ? (const float *)q->t[c->epi[0].tensor] + (q->n * c->M + mm0) * ohw : NULL;
  const __m512 lo = _mm512_set1_ps(ek == MI__EK_CLIP ? c->epi[0].a : 0.f);
  const __m512 hi = _mm512_set1_ps(ek == MI__EK_CLIP ? c->epi[0].b : 0.f);
  int i;
#pragma GCC unroll 8
  for (i = 0; i < MR512; i++) {
    if (i < rows) {
      float *yr = y0 + i * ldc;
      __m512 v0 = c0[i], v1 = c1[i];
      if (pf) {
        _mm_prefetch((const char *)(yr + po0 + PG_PF), _MM_HINT_T0);
        _mm_prefetch((const char *)(yr + po1 + PG_PF), _MM_HINT_T0);
        if (r0) {
          _mm_prefetch((const char *)(r0 + i * ohw + po0 + PG_PF), _MM_HINT_T0);
          _mm_prefetch((const char *)(r0 + i * ohw + po1 + PG_PF), _MM_HINT_T0);
        }
      }
      if (epi && ek == MI__EK_GENERIC) {
        v0 = mi__blis_epi512(c, q->t, q->n, mm0 + i, po0, k0, v0);
        if (two) v1 = mi__blis_epi512(c, q->t, q->n, mm0 + i, po1, k1, v1);
      } else if (epi) {
        if (sc) {
          __m512 s16 = _mm512_set1_ps(sc[i]), h16 = _mm512_set1_ps(sh[i]);
          v0 = _mm512_fmadd_ps(v0, s16, h16);
          v1 = _mm512_fmadd_ps(v1, s16, h16);
        }
        if (ek == MI__EK_RELU || ek == MI__EK_ADD_RELU || ek == MI__EK_ADD) {
          if (res) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(k0, r0 + i * ohw + po0));
            if (two) v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(k1, r0 + i * ohw + po1));
          }
          if (ek != MI__EK_ADD) {
            v0 = _mm512_max_ps(v0, _mm512_setzero_ps());
            v1 = _mm512_max_ps(v1, _mm512_setzero_ps());
          }
        } else if (ek == MI__EK_CLIP) {
          v0 = _mm512_min_ps(_mm512_max_ps(v0, lo), hi);
          v1 = _mm512_min_ps(_mm512_max_ps(v1, lo), hi);
        }
      }
      PG_ST512(yr + po0, k0, v0);
      if (two) PG_ST512(yr + po1, k1, v1);
    }
  }
}
#undef PG_ST512

/* The BF16 "nv" tiles' items [i0, i1) (blis_pgemm_bf16.c; q->pwb set, AVX512_BF16 CPUs only). */
void mi__blis_pgb_items(const pg_call_t *q, int64_t i0, int64_t i1);
/* conv.packed_gemm_bf16 on at most MI__PGB_MV_PIX pixels (one block, or one row segment of a flat
 * plane): the output channels in the lanes, items [i0, i1) of ceil(mp_n / 2) pairs of row panels. */
#define MI__PGB_MV_PIX 8
void mi__blis_pgb_mv_items(const pg_call_t *q, int64_t i0, int64_t i1);

/* The "mv" tiles (blis_pgemm_mv.c): one panel of channels over all the call's pixels. */
void mi__blis_pg_mv512(const pg_call_t *q, int64_t item);
void mi__blis_pg_mv256(const pg_call_t *q, int64_t item);
void mi__blis_pg_mvc(const pg_call_t *q, int64_t item);

#endif
