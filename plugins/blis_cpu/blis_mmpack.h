/* blis_mmpack.h - FP32 GEMM on a constant B packed once at prepare (Gemm, MatMul weights). */
#ifndef MI_BLIS_MMPACK_H
#define MI_BLIS_MMPACK_H

#include "blis_conv.h"

/* Y[m][n] = sum_k A[m][k] * B[k][n] (+ bias[n]) with B packed in panels of `nr` columns,
 * [panel][k][nr] (zeros past n), so the micro-kernel reads one row of a panel as whole vectors
 * and broadcasts A's values from A in place (A is not copied: its rows are the tokens of a
 * transformer, few, and read once per panel from L1/L2). */
typedef struct mi__blis_mmp {
  int64_t k, n, nr, panels;
  int32_t simd;
  const float *pb;   /* packed B */
  const float *bias; /* [panels * nr], zeros past n; NULL without bias */
  int32_t act;       /* MI__ACT_* applied to each panel's finished rows (a fused activation), or 0 */
  int32_t gate;      /* 1: those rows times act of themselves (x * Sigmoid(x) written out) */
  float act_a, act_b;
  /* matmul.packed_bf16 / gemm.packed_bf16 (blis_mmpack_bf16.c; pb unused there) */
  const uint32_t *pw; /* B as BF16 pairs along k, [panel][k pair][nr], zeros past k and n */
  uint32_t *ab;       /* scratch: A as BF16 pairs, [m][k pair], written by each run */
  int64_t m;          /* A's rows */
  int64_t rsa, csa;   /* A's element [i][kk] at i * rsa + kk * csa (transA: strides) */
  float alpha;        /* times each FP32 sum, before the bias (the FP32 tiles have it in pb) */
} mi__blis_mmp_t;

/* Bytes of the block mi__blis_mmp_pack fills (packed B, then the bias when `bias`). */
uint64_t mi__blis_mmp_bytes(int32_t simd, int64_t k, int64_t n, int bias);
/* Packs alpha * B (element [kk][j] at b + kk * rsb + j * csb: transB is a stride) into mem and,
 * with c, beta * c[j * ccs] as the bias; fills *p. */
void mi__blis_mmp_pack(mi__blis_mmp_t *p, float *mem, int32_t simd, const float *b, int64_t rsb, int64_t csb,
                       int64_t k, int64_t n, float alpha, const float *c, int64_t ccs, float beta);
/* y [m][n] (row stride n) from a [m][k] (row stride k), then p->act and + res [m][n] (NULL: none)
 * on each panel's finished rows, split over the pool by panels of columns:
 * every element is summed in the same order whatever the split. */
void mi__blis_mmp_run(const mi__blis_env_t *env, const mi__blis_mmp_t *p, const float *a, int64_t m, float *y,
                      const float *res);

/* The fused activation, gate and residual add of p on a panel's finished rows (rows x cols at y,
 * row stride ldy; res at the same offsets, NULL: none). */
void mi__blis_mmp_finish(const mi__blis_mmp_t *p, float *y, const float *res, int64_t ldy, int64_t cols, int64_t rows);

/* BF16 compute on a constant B (matmul.packed_bf16, gemm.packed_bf16; AVX512_BF16 CPUs only):
 * Y = alpha * (bf16(A) bf16(B)) with FP32 sums, + bias, then the fused tail, as mi__blis_mmp_run.
 * Bytes of the block mi__blis_mmpb_pack fills: B's pairs, the bias when `bias`, A's scratch (m rows). */
uint64_t mi__blis_mmpb_bytes(int64_t m, int64_t k, int64_t n, int bias);
/* Packs B (element [kk][j] at b + kk * rsb + j * csb) as BF16 pairs into mem and, with c,
 * beta * c[j * ccs] as the bias; fills *p (A's strides rsa = k, csa = 1: the caller may set them). */
void mi__blis_mmpb_pack(mi__blis_mmp_t *p, void *mem, const float *b, int64_t rsb, int64_t csb, int64_t m, int64_t k,
                        int64_t n, float alpha, const float *c, int64_t ccs, float beta);
/* y [m][n] from A at a (p's strides): A's rows rounded into p->ab, then the panels split over the
 * pool (each element summed in the same order whatever the split). */
void mi__blis_mmpb_run(const mi__blis_env_t *env, const mi__blis_mmp_t *p, const float *a, float *y,
                       const float *res);

/* A GEMM per batch whose B is a runtime tensor (attention's QK^T and PV): batch bi reads A [m][k] at
 * a + oa[bi] and B's element [kk][j] at b + ob[bi] + kk * rsb + j * csb (a transposed B is strides)
 * and writes Y at y + bi * m * n, alpha times the product. One pass on the pool over (batch, panel)
 * items: each packs its panel of alpha * B into its own slot of scratch and runs the tiles on it
 * while it is in L1. The caller fills oa and ob (batches each) after mi__blis_mmb_init, which sets
 * rsb = n, csb = 1, alpha = 1. */
typedef struct mi__blis_mmb {
  mi__blis_mmp_t p; /* shape and code path; pb set per batch */
  int64_t m, batches;
  int64_t rsb, csb;
  float alpha;
  int64_t *oa, *ob;
  float *scratch;
} mi__blis_mmb_t;

/* Bytes of the block mi__blis_mmb_init lays out (offsets, then packed panels of every batch). */
uint64_t mi__blis_mmb_bytes(int32_t simd, int64_t k, int64_t n, int64_t batches);
void mi__blis_mmb_init(mi__blis_mmb_t *mb, void *mem, int32_t simd, int64_t m, int64_t k, int64_t n,
                       int64_t batches);
void mi__blis_mmb_run(const mi__blis_env_t *env, const mi__blis_mmb_t *mb, const float *a, const float *b, float *y);

#endif
