/* blis_qgemm_op.c - com.microsoft QGemm (ONNX Runtime's QOperator form of a Gemm with a
 * constant B: the classifier heads of quantized CNNs and transformers) with the reference's
 * arithmetic (framework/src/ref/ref_qgemm.c): exact int32 sums of the centered codes (B centered
 * and transposed to [N][K] once at prepare), the INT32 C broadcast to [M, N], then the output
 * scale alpha * a_scale * b_scale[j] (/ y_scale) in float; codes saturate(nearbyint(float(acc) *
 * scale) + y_zero_point), or float32 without y_scale. Columns are split across threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blis_qgemm.h"

typedef struct qgo {
  int32_t a, y, ci, ta, s8, coded, za, zy; /* ci: C's tensor, or -1 */
  int64_t M, K, N, bm, bn;                 /* C's element (i, j) = c[i * bm + j * bn] */
  float *scale;                            /* per column (aux block) */
  int32_t *bt;                             /* centered B transposed, [N][K] (aux block) */
} qgo_t;

static void qgo_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *t = arg;
  const qgo_t *q = t->state;
  const void *a = t->t[q->a];
  const int32_t *c = q->ci >= 0 ? t->t[q->ci] : NULL;
  float lo = q->s8 ? -128.0f : 0.0f, hi = q->s8 ? 127.0f : 255.0f;
  for (int64_t i = 0; i < q->M; i++)
    for (int64_t j = b; j < e; j++) {
      const int32_t *bj = q->bt + j * q->K;
      uint32_t acc = c ? (uint32_t)c[i * q->bm + j * q->bn] : 0u; /* int32 wrap */
      for (int64_t k = 0; k < q->K; k++) {
        int64_t ai = q->ta ? k * q->M + i : i * q->K + k;
        int32_t av = (q->s8 ? ((const int8_t *)a)[ai] : ((const uint8_t *)a)[ai]) - q->za;
        acc += (uint32_t)av * (uint32_t)bj[k];
      }
      float v = (float)(int32_t)acc * q->scale[j];
      if (!q->coded) {
        ((float *)t->t[q->y])[i * q->N + j] = v;
        continue;
      }
      v = nearbyintf(v) + (float)q->zy;
      v = v < lo ? lo : v > hi ? hi
                               : v;
      ((uint8_t *)t->t[q->y])[i * q->N + j] = (uint8_t)(int32_t)v;
    }
}

static int32_t run_qgo(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qgo_t *q = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, q->N, 4, q->M * q->K, qgo_part);
}

/* Constant float32 values of input k: 1 or `n` of them (*count), all > 0 and finite. */
static const float *scales(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t k, int64_t want, int64_t *count) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, mi__blis_in(n, k));
  if (!t || !t->data || t->dtype != MI_DTYPE_FLOAT32) return NULL;
  *count = mi_sdk_numel(t);
  if (*count != 1 && *count != want) return NULL;
  for (int64_t i = 0; i < *count; i++)
    if (!(((const float *)t->data)[i] > 0.0f) || !isfinite(((const float *)t->data)[i])) return NULL;
  return t->data;
}

/* Constant zero point codes of input k (dtype dt): 1 or `want` of them; absent: NULL, *count 0. */
static int zps(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t k, int32_t dt, int64_t want,
               const void **z, int64_t *count) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, mi__blis_in(n, k));
  *z = NULL;
  *count = 0;
  if (!t) return 1;
  if (!t->data || t->dtype != dt) return 0;
  *count = mi_sdk_numel(t);
  *z = t->data;
  return *count == 1 || *count == want;
}

static int32_t code(const void *z, int s8, int64_t i) {
  return z ? (s8 ? ((const int8_t *)z)[i] : ((const uint8_t *)z)[i]) : 0;
}

int32_t mi__blis_prep_qgemm_op(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, mi__blis_in(n, 0)), *b = mi__blis_tensor(p, mi__blis_in(n, 3));
  const mi_tensor_desc_t *c = mi__blis_tensor(p, mi__blis_in(n, 6)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_tensor_desc_t *ys = mi__blis_tensor(p, mi__blis_in(n, 7));
  int64_t ta = mi_sdk_attr_int(n, "transA", 0), tb = mi_sdk_attr_int(n, "transB", 0), nsa, nsb, nsy, nza, nzb, nzy;
  float alpha = mi_sdk_attr_float(n, "alpha", 1.0f);
  qgo_t *q;
  if (p->desc->node_count != 1) return mi__blis_unsupported(err, n, "runs alone, not in a fused group");
  if (!a || !b || !y || !mi__blis_is_q8(a) || !mi__blis_is_q8(b) || !b->data || a->rank != 2 || b->rank != 2)
    return mi__blis_unsupported(err, n, "needs 2-D INT8/UINT8 A and a constant 2-D B");
  if ((a->dtype == MI_DTYPE_INT8 && b->dtype != MI_DTYPE_INT8) || (ta != 0 && ta != 1) || (tb != 0 && tb != 1) ||
      !isfinite(alpha))
    return mi__blis_unsupported(err, n, "an INT8 A needs an INT8 B; transA/transB 0 or 1");
  int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1], N = tb ? b->dims[0] : b->dims[1];
  if ((tb ? b->dims[1] : b->dims[0]) != K || K < 1) return mi__blis_unsupported(err, n, "A's and B's K differ");
  int coded = ys != NULL, s8a = a->dtype == MI_DTYPE_INT8, s8b = b->dtype == MI_DTYPE_INT8;
  const float *sa = scales(p, n, 1, 1, &nsa), *sb = scales(p, n, 4, N, &nsb), *sy = coded ? scales(p, n, 7, 1, &nsy) : NULL;
  const void *za, *zb, *zy;
  if (!sa || !sb || (coded && !sy) || !zps(p, n, 2, a->dtype, 1, &za, &nza) || !za ||
      !zps(p, n, 5, b->dtype, N, &zb, &nzb) || !zb || nzb != nsb || !zps(p, n, 8, a->dtype, 1, &zy, &nzy) ||
      (coded != (zy != NULL)))
    return mi__blis_unsupported(err, n, "scales and zero points must be constants (b's per tensor or per column)");
  if (coded ? y->dtype != a->dtype : y->dtype != MI_DTYPE_FLOAT32)
    return mi__blis_unsupported(err, n, "output dtype is not y_zero_point's (or FLOAT32 without y_scale)");
  int64_t bm = 0, bn = 0;
  if (c) {
    int64_t r = c->rank, d0 = r == 2 ? c->dims[0] : 1, d1 = r >= 1 ? c->dims[r - 1] : 1;
    if (!c->data || c->dtype != MI_DTYPE_INT32 || r > 2 || (d0 != 1 && d0 != M) || (d1 != 1 && d1 != N))
      return mi__blis_unsupported(err, n, "C must be a constant INT32 broadcasting to [M, N]");
    bm = d0 == M && M > 1 ? d1 : 0;
    bn = d1 == N && N > 1 ? 1 : 0;
  }
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  s->run = run_qgo;
  s->aux = mi__blis_alloc(p->ctx, (uint64_t)(N * K) * sizeof(int32_t) + (uint64_t)N * sizeof(float) + 64);
  if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  q->bt = s->aux;
  q->scale = (float *)(q->bt + N * K);
  for (int64_t j = 0; j < N; j++) {
    int32_t z = code(zb, s8b, nzb == 1 ? 0 : j);
    for (int64_t k = 0; k < K; k++) q->bt[j * K + k] = code(b->data, s8b, tb ? j * K + k : k * N + j) - z;
    q->scale[j] = alpha * sa[0] * sb[nsb == 1 ? 0 : j]; /* ONNX Runtime's order, in float */
    if (coded) q->scale[j] /= sy[0];
  }
  q->a = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->ta = (int32_t)ta;
  q->s8 = s8a;
  q->coded = coded;
  q->za = code(za, s8a, 0);
  q->zy = coded ? code(zy, s8a, 0) : 0;
  q->M = M;
  q->K = K;
  q->N = N;
  q->ci = c ? mi__blis_in(n, 6) : -1;
  q->bm = bm;
  q->bn = bn;
  return MI_OK;
}
