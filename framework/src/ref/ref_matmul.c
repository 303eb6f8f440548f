/* ref_matmul.c - reference MatMul (batched, numpy rules) and Gemm. */
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

/* C[M,N] = A[M,K] * B[K,N], dense row-major; i-k-j order streams through rows of B. */
static void matmul_2d(const float *A, const float *B, float *C, int64_t M, int64_t K, int64_t N) {
  for (int64_t i = 0; i < M; i++) {
    float *c = C + i * N;
    for (int64_t j = 0; j < N; j++) c[j] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
      float a = A[i * K + k];
      const float *b = B + k * N;
      for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
    }
  }
}

int32_t mi__ref_matmul_shape(const mi__ref_call_t *c, const mi_array_t *a, const mi_array_t *b,
                             mi__ref_mm_t *mm) {
  int32_t rc;
  if (a->rank < 1 || b->rank < 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "operands must have rank >= 1");
  mi_array_t av = *a, bv = *b;
  int a_vec = a->rank == 1, b_vec = b->rank == 1;
  if (a_vec) {
    av.rank = 2;
    av.dims[0] = 1;
    av.dims[1] = a->dims[0];
  }
  if (b_vec) {
    bv.rank = 2;
    bv.dims[0] = b->dims[0];
    bv.dims[1] = 1;
  }
  mm->M = av.dims[av.rank - 2];
  mm->K = av.dims[av.rank - 1];
  mm->N = bv.dims[bv.rank - 1];
  if (mm->K != bv.dims[bv.rank - 2])
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "inner dimensions differ: %lld and %lld",
                        (long long)mm->K, (long long)bv.dims[bv.rank - 2]);
  /* Broadcast the batch dims: shapes of everything but the last two dims. */
  av.rank -= 2;
  bv.rank -= 2;
  const mi_array_t *batch[2] = {&av, &bv};
  if ((rc = mi__ref_broadcast(c, 2, batch, &mm->bc)) != MI_OK) return rc;
  mm->rank = 0;
  for (int32_t d = 0; d < mm->bc.rank; d++) mm->dims[mm->rank++] = mm->bc.dims[d];
  if (!a_vec) mm->dims[mm->rank++] = mm->M;
  if (!b_vec) mm->dims[mm->rank++] = mm->N;
  if (mm->rank > MI_MAX_RANK)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "result rank above %d", MI_MAX_RANK);
  return MI_OK;
}

int32_t mi__ref_matmul(mi__ref_call_t *c) {
  const mi_array_t *a, *b;
  mi_array_t *y;
  mi__ref_mm_t mm;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &a)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &b)) != MI_OK)
    return rc;
  if ((rc = mi__ref_matmul_shape(c, a, b, &mm)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, mm.rank, mm.dims, &y)) != MI_OK) return rc;
  int64_t M = mm.M, K = mm.K, N = mm.N;
  for (int64_t i = 0; i < mm.bc.numel; i++) {
    int64_t off[2]; /* batch i in A and B, in matrices */
    mi__ref_bcast_offsets(&mm.bc, 2, i, off);
    matmul_2d((const float *)a->data + off[0] * M * K, (const float *)b->data + off[1] * K * N,
              (float *)y->data + i * M * N, M, K, N);
  }
  return MI_OK;
}

int32_t mi__ref_gemm(mi__ref_call_t *c) {
  const mi_array_t *a, *b, *cc = mi__ref_in(c, 2);
  mi_array_t *y;
  int32_t rc;
  int64_t ta = mi_node_attr_int(c->node, "transA", 0), tb = mi_node_attr_int(c->node, "transB", 0);
  float alpha = mi_node_attr_float(c->node, "alpha", 1.0f);
  float beta = mi_node_attr_float(c->node, "beta", 1.0f);
  if ((rc = mi__ref_need(c, 0, F32, &a)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &b)) != MI_OK)
    return rc;
  if (a->rank != 2 || b->rank != 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "A and B must be 2-D, got rank %d and %d",
                        (int)a->rank, (int)b->rank);
  int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
  int64_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
  if (K != K2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "inner dimensions differ: %lld and %lld",
                        (long long)K, (long long)K2);
  /* C broadcasts to [M, N] in one direction only. */
  int64_t cs_m = 0, cs_n = 0;
  if (cc) {
    int64_t cm = cc->rank >= 2 ? cc->dims[cc->rank - 2] : 1;
    int64_t cn = cc->rank >= 1 ? cc->dims[cc->rank - 1] : 1;
    if (cc->dtype != MI_DTYPE_FLOAT32 || cc->rank > 2 || (cm != 1 && cm != M) ||
        (cn != 1 && cn != N))
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "C (rank %d) does not broadcast to [%lld, %lld]", (int)cc->rank,
                          (long long)M, (long long)N);
    cs_m = cm == 1 ? 0 : cn;
    cs_n = cn == 1 ? 0 : 1;
  }
  int64_t dims[2] = {M, N};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 2, dims, &y)) != MI_OK) return rc;
  const float *A = a->data, *B = b->data, *C = cc ? cc->data : NULL;
  float *Y = y->data;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float s = 0.0f;
      for (int64_t k = 0; k < K; k++) {
        float av = ta ? A[k * M + i] : A[i * K + k];
        float bv = tb ? B[j * K + k] : B[k * N + j];
        s += av * bv;
      }
      Y[i * N + j] = alpha * s + (C ? beta * C[i * cs_m + j * cs_n] : 0.0f);
    }
  return MI_OK;
}
