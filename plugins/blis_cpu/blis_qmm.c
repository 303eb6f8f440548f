/* blis_qmm.c - INT8 Gemm (transA 0) and MatMul with a constant 2-D B: the lowered QDQ layers of
 * docs/abi.md, MatMulInteger and its float tail. Codes minus their zero point times the INT8 (or
 * INT4) weights, accumulated exactly in int32; the output stage as blis_qgemm.c's convs. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

/* ---- Gemm (transA 0) and MatMul with a constant 2-D B. */

typedef struct qgemm {
  int32_t a, y, za, zy, a_u8, y_u8, simd, dot;
  int32_t za_t, out32;   /* runtime zero point tensor of A (or -1: za); write int32 sums */
  int32_t tail, scale_t; /* out32's float tail (gemm_tail, blis_qlinear.c): nodes, scale tensor */
  float *tb;             /* its bias along the last axis (n values), or NULL */
  int32_t act;           /* then an activation on each row (MI__ACT_*, 0: none) */
  float act_a, act_b;
  int32_t w4;          /* INT4 B kept packed: b4, not b */
  int64_t m, n, k, ka; /* ka: k rounded up to even */
  double *mult, *bias; /* n each */
  int16_t *b;          /* [ka/2][n][2]: pairs of rows (INT8) */
  uint8_t *b4;         /* INT4: [ka/2][n] bytes, one per pair of rows (MI__QPACK_B4) */
  int16_t *a16;        /* [m][ka] scratch, zero past k */
  int32_t *acc;        /* [m][n] scratch */
  int32_t u8k;         /* byte core: a8, b8, csum instead of a16, b */
  int64_t kq;          /* k rounded up to 4, in quads */
  uint8_t *a8, *b8;    /* [m][kq*4] codes made unsigned; [kq][n][4] INT8 weights */
  int32_t *csum;       /* [n] sums of each column's weights: the zero point's correction */
  int32_t *wd;         /* [n] byte core: weight shift of each column (blis_qgemm.h), or NULL */
  int32_t *rs;         /* [m] AVX2 or VNNI byte core with wd: each row's code sum minus zu * k, for the tiles */
  int32_t amx;         /* byte core on AMX tiles (blis_qamx.c): wb */
  uint8_t *wb;         /* b8 packed for the tiles (mi__blis_qa_gemm_pack) */
  int32_t b256;        /* byte core on AVX2 (blis_qgemm256.c): the weights in pb, no b / b8 */
  mi__blis_q256_t pb;
} qgemm_t;

typedef struct qgemm_task {
  const qgemm_t *q;
  const void *a;
  void *y;
  int32_t za; /* A's zero point for this run */
  float fs;   /* the float tail's scale for this run */
} qgemm_task_t;

/* The float tail's activation on one output row of n floats. */
static void row_act(const qgemm_t *q, float *yr) {
  if (!mi__blis_act_simd(q->simd, q->act, yr, q->n)) mi__blis_act_apply(q->act, q->act_a, q->act_b, yr, q->n);
}

/* A row's term of the weight shift: sum_k (u_k - zu) over its k codes, modulo 2^32 as the sums. */
static uint32_t row_term(const uint8_t *row, int64_t k, int32_t zu) {
  uint32_t rs = 0;
  for (int64_t j = 0; j < k; j++) rs += row[j];
  return rs - (uint32_t)zu * (uint32_t)k;
}

static void qgemm_rows(void *arg, int64_t r0, int64_t r1) {
  const qgemm_task_t *t = arg;
  const qgemm_t *q = t->q;
  int64_t i, j;
  if (q->u8k) { /* the codes as unsigned bytes (INT8: sign bit flipped, zero point + 128) */
    uint8_t flip = q->a_u8 ? 0 : 0x80;
    int32_t zu = t->za + (q->a_u8 ? 0 : 128);
    /* rows in locals: a byte store may alias q's fields, which the loop read again for every byte
     * (a step of 207 x 1152 codes spent 0.2 ms on this copy) */
    const int64_t k = q->k, lda = q->kq * 4;
    const uint8_t *src = t->a;
    uint8_t *a8 = q->a8;
    for (i = r0; i < r1; i++) {
      const uint8_t *s = src + i * k;
      uint8_t *d = a8 + i * lda;
      if (!flip) memcpy(d, s, (size_t)k);
      else
        for (j = 0; j < k; j++) d[j] = (uint8_t)(s[j] ^ flip);
    }
    if (q->amx) mi__blis_qa_gemm(r0, r1, q->n, q->kq, q->a8, q->wb, q->csum, zu, q->acc);
    else { /* AVX2 or VNNI core: the float tail straight from its tiles where nothing follows */
      mi__blis_q256_out_t o = {q->acc, NULL, t->fs, q->tb, NULL, NULL};
      if (q->out32 && q->tail) o.y = (float *)t->y;
      if (q->wd) { /* the weight shift on the tiles: each row's term first */
        for (i = r0; i < r1; i++) q->rs[i] = (int32_t)row_term(a8 + i * lda, k, zu);
        o.wd = q->wd;
        o.rs = q->rs;
      }
      if (q->b256) mi__blis_q256_gemm(&q->pb, r0, r1, q->a8, lda, q->csum, zu, &o);
      else
        mi__blis_qv_gemm_out(q->dot, r0, r1, q->n, q->kq, q->a8, q->b8, q->csum, zu, &o);
      if (o.y) { /* then the activation, on the rows while they are in cache */
        for (i = r0; i < r1 && q->act; i++) row_act(q, (float *)t->y + i * q->n);
        return;
      }
    }
    for (i = r0; i < r1 && q->wd && q->amx; i++) { /* row i's shift: d[j] * sum_k (u - zu), modulo 2^32 */
      uint32_t rs = row_term(a8 + i * lda, k, zu);
      for (j = 0; j < q->n; j++) q->acc[i * q->n + j] = (int32_t)((uint32_t)q->acc[i * q->n + j] + (uint32_t)q->wd[j] * rs);
    }
  } else {
    for (i = r0; i < r1; i++)
      for (j = 0; j < q->k; j++) q->a16[i * q->ka + j] = (int16_t)(mi__blis_qcode(t->a, q->a_u8, i * q->k + j) - t->za);
    if (q->w4)
      mi__blis_qgemm_packed(q->dot, MI__QPACK_B4, r0, r1, q->n, q->ka / 2, q->a16, q->ka, q->b4, q->acc);
    else
      mi__blis_qgemm(q->dot, r0, r1, q->n, q->ka / 2, q->a16, q->ka, q->b, q->acc);
  }
  if (q->out32 && q->tail) { /* Cast, Mul by the scale, Add of the bias, the activation: each rounded as the nodes */
    for (i = r0; i < r1; i++) {
      float *yr = (float *)t->y + i * q->n;
      mi__blis_qv_ftail(q->simd, q->acc + i * q->n, q->n, t->fs, 0, 0.f, NULL, 0, NULL, yr);
      for (j = 0; q->tb && j < q->n; j++) yr[j] = yr[j] + q->tb[j];
      if (q->act) row_act(q, yr);
    }
    return;
  }
  if (q->out32) {
    memcpy((int32_t *)t->y + r0 * q->n, q->acc + r0 * q->n, (size_t)((r1 - r0) * q->n) * sizeof(int32_t));
    return;
  }
  for (i = r0; i < r1; i++)
    mi__blis_requant(q->simd, q->acc + i * q->n, q->n, q->mult, q->bias, 1, q->zy, q->y_u8,
                     (uint8_t *)t->y + i * q->n); /* 1-byte codes: byte offsets */
}

static int32_t run_qgemm(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  qgemm_task_t task;
  (void)err;
  task.q = s->state;
  task.a = t[task.q->a];
  task.y = t[task.q->y];
  task.za = task.q->za_t >= 0 ? mi__blis_qruntime_zp(t, task.q->za_t, task.q->a_u8) : task.q->za;
  task.fs = task.q->tail ? *(const float *)t[task.q->scale_t] : 0.f;
  /* the AVX2 byte core's register blocks are MI__Q256_ROWS rows: chunks of whole blocks */
  mi__blis_parallel(env, task.q->m, task.q->b256 ? MI__Q256_ROWS : 1, task.q->n * task.q->k, qgemm_rows, &task);
  return MI_OK;
}

/* The AVX2 byte core (blis_qgemm256.c) for q, set up as far as mi__blis_qgemm_build has it (k, n,
 * m, its output): the weights minus their zero point as INT8 quads with a per-column shift where
 * they do not fit, their column sums, the count of saturating pairs from a transient copy; where
 * they fit and the pairs are few, s->aux holds the codes' rows, the panels (no int16 B) and the
 * int32 sums only where the float tail is not written from the tiles (else acc is NULL), and
 * q->b256 is set. Else nothing is kept and the int16 core is prepared after it. */
static int32_t qgemm_b256(mi__blis_prep_t *p, mi__blis_step_t *s, qgemm_t *q, const mi__blis_qsrc_t *src,
                          const mi_tensor_desc_t *w, int64_t tb, mi_error_t *err) {
  const int64_t kk = q->k, nn = q->n, kq = (kk + 3) / 4;
  int64_t i, j, nfix;
  int32_t shift = 0, fused;
  uint8_t *b8;
  uint64_t acc_bytes, a_bytes, rs_bytes;
  for (j = 0; j < nn; j++) {
    if (!mi__blis_qbyte_shift(src, w, j, tb ? j * kk : j, kk, tb ? 1 : nn, &q->wd[j])) return MI_OK;
    shift |= q->wd[j] != 0;
  }
  if (!(b8 = mi__blis_calloc(p->ctx, (uint64_t)(kq * 4 * nn))))
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  for (i = 0; i < kk; i++)
    for (j = 0; j < nn; j++) {
      int32_t v = mi__blis_qwval(src, w, tb ? j * kk + i : i * nn + j, j) - q->wd[j];
      b8[((i >> 2) * nn + j) * 4 + (i & 3)] = (uint8_t)(int8_t)v;
      q->csum[j] += v;
    }
  nfix = mi__blis_q256_fixes(b8, nn, kq);
  if (nfix > kk * nn / MI__Q256_FIX_SHARE) { /* too many saturating pairs: the int16 core */
    mi__blis_free(p->ctx, b8);
    memset(q->csum, 0, (size_t)nn * sizeof(int32_t));
    return MI_OK;
  }
  /* the floats from the tiles, the weight shift applied there too: no int32 plane (it was written,
   * shifted and read again for the tail) */
  fused = q->out32 && q->tail;
  acc_bytes = fused ? 0 : ((uint64_t)(q->m * nn) * sizeof(int32_t) + 31) / 32 * 32; /* the rows, then the panels: 32-byte aligned */
  a_bytes = ((uint64_t)(q->m * kq * 4) + 31) / 32 * 32;
  rs_bytes = shift ? ((uint64_t)q->m * sizeof(int32_t) + 31) / 32 * 32 : 0;
  s->aux = mi__blis_calloc(p->ctx, 32 + acc_bytes + rs_bytes + a_bytes + mi__blis_q256_bytes(nn, kq, nfix));
  if (!s->aux) {
    mi__blis_free(p->ctx, b8);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  }
  {
    uint8_t *base = (uint8_t *)(((uintptr_t)s->aux + 31) & ~(uintptr_t)31);
    q->acc = fused ? NULL : (int32_t *)base;
    q->rs = shift ? (int32_t *)(base + acc_bytes) : NULL;
    q->a8 = base + acc_bytes + rs_bytes;
    mi__blis_q256_pack(&q->pb, b8, nn, kq, q->a8 + a_bytes);
  }
  mi__blis_free(p->ctx, b8);
  q->kq = kq;
  q->u8k = q->b256 = 1;
  if (!shift) q->wd = NULL;
  s->run = run_qgemm;
  return MI_OK;
}

int32_t mi__blis_qgemm_build(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src,
                             mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, src->x), *w = mi__blis_tensor(p, src->w);
  const mi_tensor_desc_t *y = mi__blis_tensor(p, src->y);
  int is_gemm = strcmp(n->op_type, "Gemm") == 0;
  int64_t tb = is_gemm ? mi_sdk_attr_int(n, "transB", 0) : 0, kk, nn, i, j;
  uint64_t rs_bytes;
  qgemm_t *q;
  int32_t rc;
  if (!mi__blis_is_q8(a) || !w || !w->data || w->rank != 2 || a->rank < 1 || !y ||
      (src->out32 ? y->dtype != (src->tail ? MI_DTYPE_FLOAT32 : MI_DTYPE_INT32) : !mi__blis_is_q8(y)))
    return mi__blis_unsupported(err, n, "integer MatMul needs INT8/UINT8 codes in, a 2-D constant B, codes or INT32 out");
  if (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_UINT8 && w->dtype != MI_DTYPE_INT4)
    return mi__blis_unsupported(err, n, "integer MatMul: B must be INT8, UINT8 or INT4");
  if (p->desc->node_count != 1 + src->tail)
    return mi__blis_unsupported(err, n, "INT8 Gemm/MatMul runs alone or with its whole float tail");
  kk = tb ? w->dims[1] : w->dims[0];
  nn = tb ? w->dims[0] : w->dims[1];
  if (a->dims[a->rank - 1] != kk || kk >= 32768) return mi__blis_unsupported(err, n, "INT8: inner dims differ or too long");
  if (!(q = mi__blis_state_new(p, s, sizeof *q + (uint64_t)nn * (2 * sizeof(double) + 2 * sizeof(int32_t) + sizeof(float)), err)))
    return MI_ERR_OUT_OF_MEMORY;
  q->mult = (double *)(q + 1);
  q->bias = q->mult + nn;
  q->csum = (int32_t *)(q->bias + nn);
  q->wd = q->csum + nn;
  q->k = kk;
  q->n = nn;
  q->m = mi_sdk_numel(a) / kk;
  if (q->m * nn != mi_sdk_numel(y)) return mi__blis_unsupported(err, n, "INT8: output shape does not match");
  rc = mi__blis_q_out_stage(p, n, src, nn, q->mult, q->bias, err);
  if (rc != MI_OK) return rc;
  q->a = src->x;
  q->y = src->y;
  q->za = src->zx;
  q->za_t = src->zx_t;
  q->zy = src->zy;
  q->out32 = src->out32;
  if ((q->tail = src->tail) > 0) { /* y is the tail's FLOAT32 output */
    q->scale_t = src->scale_t;
    q->tb = src->tb ? (float *)(q->wd + nn) : NULL;
    for (i = 0; q->tb && i < nn; i++) q->tb[i] = src->tb[src->ntb == 1 ? 0 : i];
    if (src->hs.nact == 1) {
      q->act = src->hs.act[0];
      q->act_a = src->hs.aa[0];
      q->act_b = src->hs.ab[0];
    }
    p->nodes_used = 1 + src->tail;
  }
  q->a_u8 = a->dtype == MI_DTYPE_UINT8;
  q->y_u8 = y->dtype == MI_DTYPE_UINT8;
  q->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  q->dot = mi__blis_q_int8_dot(p, q->simd);
  q->amx = q->dot == MI__QDOT_AMX_U8 && mi__blis_qa_pays(q->m, nn, kk); /* else the VNNI byte core */
  q->dot = q->dot == MI__QDOT_AMX_U8 ? MI__QDOT_VNNI_U8 : q->dot;
  q->ka = (kk + 1) / 2 * 2;
  q->w4 = !src->wz && mi__blis_qweight_4bit(w);
  if (q->dot == MI__QDOT_AVX2 && !q->w4) { /* the AVX2 byte core where the weights let it */
    rc = qgemm_b256(p, s, q, src, w, tb, err);
    if (rc != MI_OK || q->b256) return rc;
  }
  /* byte core where B minus its zero point fits INT8 (per column shifts wd where it needs them):
   * [m][kq*4] and [kq][n][4] bytes fit in a16's and b's storage (4 * kq <= 2 * ka) */
  q->kq = (kk + 3) / 4;
  q->u8k = q->dot == MI__QDOT_VNNI_U8 && !q->w4;
  for (j = 0, i = 0; j < nn && q->u8k; j++) {
    q->u8k = mi__blis_qbyte_shift(src, w, j, tb ? j * kk : j, kk, tb ? 1 : nn, &q->wd[j]);
    i |= q->wd[j] != 0;
  }
  if (!i || !q->u8k) q->wd = NULL;
  q->amx &= q->u8k;
  /* the VNNI core's row terms of the shift (for its tiles), int32 acc, int16 a16, then B: int16
   * pairs, or one byte per pair for INT4 */
  rs_bytes = q->wd && !q->amx ? ((uint64_t)q->m * sizeof(int32_t) + 63) / 64 * 64 : 0;
  s->aux = mi__blis_calloc(p->ctx, rs_bytes + (uint64_t)(q->m * nn) * sizeof(int32_t) +
                                       (uint64_t)(q->m * q->ka) * sizeof(int16_t) +
                                       (uint64_t)(q->ka * nn) * (q->w4 ? 1u : 4u) / 2u + 64 +
                                       (q->amx ? 32u * (uint64_t)(kk + 3) + mi__blis_qa_gemm_bytes(nn, (kk + 3) / 4) : 0));
  if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  q->rs = rs_bytes ? s->aux : NULL;
  q->acc = (int32_t *)((uint8_t *)s->aux + rs_bytes);
  q->a16 = (int16_t *)(q->acc + q->m * nn);
  if (q->w4) {
    q->b4 = (uint8_t *)(q->a16 + q->m * q->ka);
    for (i = 0; i < kk; i++) /* row i is nibble i & 1 of pair i / 2; an odd k's last stays 0 */
      for (j = 0; j < nn; j++) {
        int32_t v = mi__blis_qwval(src, w, tb ? j * kk + i : i * nn + j, j);
        q->b4[(i >> 1) * nn + j] |= mi__blis_nib_byte(i & 1 ? 0 : v, i & 1 ? v : 0);
      }
    s->run = run_qgemm;
    return MI_OK;
  }
  q->b = q->a16 + q->m * q->ka;
  if (q->u8k) {
    q->a8 = (uint8_t *)q->a16;
    q->b8 = (uint8_t *)q->b;
    for (i = 0; i < kk; i++)
      for (j = 0; j < nn; j++) {
        int32_t v = mi__blis_qwval(src, w, tb ? j * kk + i : i * nn + j, j) - (q->wd ? q->wd[j] : 0);
        q->b8[((i >> 2) * nn + j) * 4 + (i & 3)] = (uint8_t)(int8_t)v;
        q->csum[j] += v;
      }
    if (q->amx) { /* after B and the 32 rows of A the last row tiles read past it (a8 < a16's bytes) */
      q->wb = q->b8 + q->ka * nn * 2 + 64 + 32 * (kk + 3);
      mi__blis_qa_gemm_pack(q->b8, nn, q->kq, q->wb);
    }
    s->run = run_qgemm;
    return MI_OK;
  }
  for (i = 0; i < kk; i++) /* row i is half i & 1 of pair i / 2; an odd k's last half stays 0 */
    for (j = 0; j < nn; j++)
      q->b[((i >> 1) * nn + j) * 2 + (i & 1)] = (int16_t)mi__blis_qwval(src, w, tb ? j * kk + i : i * nn + j, j);
  s->run = run_qgemm;
  return MI_OK;
}
