/* blis_pgemm.h - what the "nv" and "mv" tile files of conv.packed_gemm share: the call record,
 * the k blocking and the read of a block of packed (FP32 or FP16) weights. */
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
  const float *b;      /* B[k][p] at b + k * ldb + p, or b + koff[k] + p when koff is set */
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

/* The "mv" tiles (blis_pgemm_mv.c): one panel of channels over all the call's pixels. */
void mi__blis_pg_mv512(const pg_call_t *q, int64_t item);
void mi__blis_pg_mv256(const pg_call_t *q, int64_t item);
void mi__blis_pg_mvc(const pg_call_t *q, int64_t item);

#endif
