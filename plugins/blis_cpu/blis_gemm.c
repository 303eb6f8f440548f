/* blis_gemm.c - Gemm and batched, broadcasting MatMul: the packed tiles of blis_mmpack.c for a
 * constant B (and small runtime ones), BLIS sgemm otherwise. */
#include <stdio.h>
#include <string.h>

#include "blis_mmpack.h"
#include "blis_mmv.h"
#include "blis_qgemm.h"

/* What Gemm and MatMul share, at the head of their states: A, B, Y and the product's sizes
 * (Y [m, n] = A [m, k] B [k, n]). */
typedef struct mm_head {
  int32_t a, b, y;
  int32_t res; /* a fused residual Add's other operand, -1: none */
  int64_t m, n, k;
  mi__blis_mmp_t pk; /* B packed at prepare (pk.pb set), else BLIS */
} mm_head_t;

static int32_t run_packed(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mm_head_t *h = s->state;
  (void)err;
  mi__blis_mmp_run(env, &h->pk, t[h->a], h->m, t[h->y], h->res >= 0 ? t[h->res] : NULL);
  return MI_OK;
}

/* The code path of the packed tiles: the widest this CPU runs, or the `simd` knob's. */
static int32_t simd_of(const mi__blis_prep_t *p) {
  int64_t si = mi_sdk_knob_int(p->desc, "simd", 0);
  return si > 0 && si < p->ctx->simd_n ? p->ctx->simd_ids[si] : mi__blis_simd_level(p->ctx->cpu.isa);
}

/* Takes the packed path when B is a constant (weights): BLIS packs both operands on every call,
 * which on a transformer's shapes (rows 40-128, K 120-1536) cost half its time (see blis-cpu.md).
 * B [k][n] at rsb / csb, scaled by alpha; tensor c (-1: none) a bias over the columns, scaled by beta.
 * 1 when taken (s->run set), 0 to stay on BLIS, -1 out of memory. */
static int packed_b(mi__blis_prep_t *p, mi__blis_step_t *s, mm_head_t *h, int64_t rsb, int64_t csb, float alpha,
                    int32_t c, int64_t ccs, float beta) {
  int32_t simd = simd_of(p);
  if (!mi__blis_is_const(p, h->b) || !p->k->ptr[h->b] || h->k < 1 || h->n < 1 || h->m < 1) return 0;
  if (c >= 0 && (!mi__blis_is_const(p, c) || !p->k->ptr[c])) return 0;
  s->aux = mi__blis_alloc(p->ctx, mi__blis_mmp_bytes(simd, h->k, h->n, c >= 0));
  if (!s->aux) return -1;
  mi__blis_mmp_pack(&h->pk, s->aux, simd, p->k->ptr[h->b], rsb, csb, h->k, h->n, alpha,
                    c >= 0 ? p->k->ptr[c] : NULL, ccs, beta);
  /* The panels are all the step reads: drop the constant copy when nothing else does. */
  mi__blis_drop_const(p, h->b);
  s->run = run_packed;
  return 1;
}

static int32_t run_packed_bf16(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mm_head_t *h = s->state;
  (void)err;
  mi__blis_mmpb_run(env, &h->pk, t[h->a], t[h->y], h->res >= 0 ? t[h->res] : NULL);
  return MI_OK;
}

/* matmul.packed_bf16 / gemm.packed_bf16 (blis_mmpack_bf16.c): 1 when node n names `id` and this
 * CPU runs it. Where the CPU (or MI_BLIS_MAX_SIMD) lacks AVX512_BF16 the variant is not listed, but
 * a configuration made on another CPU may name it: the layer runs the FP32 path (0), and the log
 * says so, as conv.packed_gemm_bf16 does. */
static int bf16_named(const mi__blis_prep_t *p, const mi_node_desc_t *n, const char *id, const char *fp32) {
  if (!p->variant || strcmp(p->variant, id)) return 0;
  if ((p->ctx->cpu.isa & MI__ISA_AVX512BF16) && (p->ctx->cpu.isa & MI__ISA_AVX512DQBWVL)) return 1;
  mi_sdk_logf(p->ctx->host, MI_LOG_WARN, "blis-cpu",
              "%s '%s': %s needs AVX512_BF16, which this CPU (or MI_BLIS_MAX_SIMD) lacks: the layer runs %s in FP32",
              n->op_type, n->name ? n->name : "", id, fp32);
  return 0;
}

/* The refusal of a BF16 variant: "<id>: why". */
static int32_t bf16_refuse(mi_error_t *err, const mi_node_desc_t *n, const char *id, const char *why) {
  char msg[256];
  snprintf(msg, sizeof msg, "%s %s", id, why);
  return mi__blis_unsupported(err, n, msg);
}

/* BF16 compute on the constant B: packed once as BF16 pairs (h->pk.pw), A at (rsa, csa) rounded
 * per run into the block's scratch; tensor c (-1: none) the bias over the columns, scaled by beta.
 * MI_OK with s->run set, else the error. */
static int32_t packed_bf16(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n, mm_head_t *h,
                           const char *id, int64_t rsa, int64_t csa, int64_t rsb, int64_t csb, float alpha, int32_t c,
                           int64_t ccs, float beta, mi_error_t *err) {
  if (!mi__blis_is_const(p, h->b) || !p->k->ptr[h->b])
    return bf16_refuse(err, n, id, "needs a constant B (weights); a runtime B runs in FP32");
  if (h->k < 1 || h->n < 1 || h->m < 1) return bf16_refuse(err, n, id, "an empty product");
  s->aux = mi__blis_alloc(p->ctx, mi__blis_mmpb_bytes(h->m, h->k, h->n, c >= 0));
  if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  mi__blis_mmpb_pack(&h->pk, s->aux, p->k->ptr[h->b], rsb, csb, h->m, h->k, h->n, alpha,
                     c >= 0 ? p->k->ptr[c] : NULL, ccs, beta);
  h->pk.rsa = rsa;
  h->pk.csa = csa;
  mi__blis_drop_const(p, h->b);
  s->run = run_packed_bf16;
  return MI_OK;
}

/* A value out of the activations' range: linear_tail's x * Sigmoid(x). */
#define MI__ACT_SILU_GATE (-2)

/* The host's group MatMul/Gemm -> Add of a constant bias along the last dim (or a Gemm's own C,
 * `has_c`) [-> activation, or x * Sigmoid(x)] [-> residual Add] (the executor's linear chains,
 * docs/abi.md): the bias starts the packed tiles' accumulators, the activation and the residual
 * run on each panel's finished rows while they are in cache, and the step writes the last member's
 * output; a LayerNormalization after them is the group's next step (blis_nn.c). *bias the bias
 * tensor (-1: no Add to take), *used the nodes absorbed, *res the residual operand (-1: none). */
static void linear_tail(const mi__blis_prep_t *p, const mm_head_t *h, int has_c, int32_t *bias, int32_t *used,
                        int32_t *y, int32_t *act, float *aa, float *ab, int32_t *res) {
  const mi_node_desc_t *m = mi__blis_node(p, 1), *f;
  const mi_tensor_desc_t *tb;
  int32_t prod = h->y, c;
  *bias = -1;
  *used = 1;
  *act = 0;
  *res = -1;
  if (!has_c) {
    if (!m || strcmp(m->op_type, "Add") || m->input_count != 2 || m->output_count != 1 ||
        mi__blis_is_kernel_output(p, prod) || mi__blis_consumers(p, prod) != 1)
      return;
    c = m->inputs[0] == prod ? m->inputs[1] : m->inputs[1] == prod ? m->inputs[0]
                                                                   : -1;
    if (c < 0 || c == prod || !mi__blis_is_const(p, c) || !p->k->ptr[c] || !(tb = mi__blis_tensor(p, c)) ||
        tb->dtype != MI_DTYPE_FLOAT32 || tb->rank < 1 || mi_sdk_numel(tb) != h->n || tb->dims[tb->rank - 1] != h->n)
      return;
    if (!mi__blis_tensor(p, prod) || tb->rank > mi__blis_tensor(p, prod)->rank) return;
    *bias = c;
    *used = 2;
    *y = m->outputs[0];
  }
  f = mi__blis_node(p, *used);
  if (f && f->input_count >= 1 && f->inputs[0] == *y && f->output_count == 1 && !mi__blis_is_kernel_output(p, *y) &&
      mi__blis_consumers(p, *y) == 1 && mi__blis_act_of(p, f, act, aa, ab) && *act != MI__ACT_NONE) {
    *used += 1;
    *y = f->outputs[0];
  } else if (f && !strcmp(f->op_type, "Sigmoid") && f->input_count == 1 && f->inputs[0] == *y &&
             f->output_count == 1 && (m = mi__blis_node(p, *used + 1)) && !strcmp(m->op_type, "Mul") &&
             m->input_count == 2 && m->output_count == 1 &&
             ((m->inputs[0] == *y && m->inputs[1] == f->outputs[0]) ||
              (m->inputs[1] == *y && m->inputs[0] == f->outputs[0])) &&
             !mi__blis_is_kernel_output(p, *y) && mi__blis_consumers(p, *y) == 2 &&
             !mi__blis_is_kernel_output(p, f->outputs[0]) && mi__blis_consumers(p, f->outputs[0]) == 1) {
    /* x * Sigmoid(x) written out: the gate on the same rows */
    *act = MI__ACT_SILU_GATE;
    *used += 2;
    *y = m->outputs[0];
  } else {
    *act = 0;
  }
  /* then a residual Add of a runtime tensor of the output's shape, on the finished rows too */
  *res = -1;
  if ((f = mi__blis_node(p, *used)) && !strcmp(f->op_type, "Add") && f->input_count == 2 && f->output_count == 1 &&
      !mi__blis_is_kernel_output(p, *y) && mi__blis_consumers(p, *y) == 1) {
    const mi_tensor_desc_t *tr, *ty = mi__blis_tensor(p, *y);
    int32_t r = f->inputs[0] == *y ? f->inputs[1] : f->inputs[1] == *y ? f->inputs[0]
                                                                       : -1,
            d;
    if (r < 0 || r == *y || mi__blis_is_const(p, r) || !(tr = mi__blis_tensor(p, r)) || !ty ||
        tr->dtype != MI_DTYPE_FLOAT32 || tr->rank != ty->rank)
      return;
    for (d = 0; d < tr->rank; d++)
      if (tr->dims[d] != ty->dims[d]) return;
    *res = r;
    *used += 1;
    *y = f->outputs[0];
  }
}

/* Commits linear_tail's find once B is packed (with the bias): MI_OK. */
static int32_t take_tail(mi__blis_prep_t *p, mm_head_t *h, int32_t used, int32_t y, int32_t act, float aa, float ab,
                         int32_t res) {
  h->y = y;
  h->res = res;
  h->pk.gate = act == MI__ACT_SILU_GATE;
  h->pk.act = h->pk.gate ? MI__ACT_SIGMOID : act;
  h->pk.act_a = aa;
  h->pk.act_b = ab;
  p->nodes_used = used;
  return MI_OK;
}

typedef struct gemm_state {
  mm_head_t h;
  int32_t c;
  int64_t rsa, csa, rsb, csb;
  float alpha, beta;
  int64_t crs, ccs; /* broadcast strides of C over [m, n] */
  int32_t post_c;   /* gemm.packed_bf16: beta * C added to Y after the product (C not a constant bias) */
} gemm_state_t;

static int32_t run_gemm(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  const gemm_state_t *g = s->state;
  float *y = t[g->h.y];
  int64_t i, j;
  /* beta 0 and beta * C added after: with beta != 0, BLIS's small-matrix edge kernels
   * (sgemmsup haswell 6x2 / 4x2) read a float past C's end when the last rows end the buffer
   * (valgrind, seen on DeformConv's GEMM): harmless in the arena, a fault at a page's end. */
  mi__blis_sgemm(env, g->h.m, g->h.n, g->h.k, g->alpha, t[g->h.a], g->rsa, g->csa, t[g->h.b], g->rsb, g->csb,
                 0.f, y, g->h.n, 1);
  if (g->c >= 0 && g->beta != 0.f) {
    const float *c = t[g->c];
    for (i = 0; i < g->h.m; i++)
      for (j = 0; j < g->h.n; j++) y[i * g->h.n + j] += g->beta * c[i * g->crs + j * g->ccs];
  }
  return MI_OK;
}

/* gemm.packed_bf16 with a C that is not a constant bias over the columns: the BF16 product, then
 * beta * C in FP32. */
static int32_t run_gemm_bf16_c(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const gemm_state_t *g = s->state;
  const float *c = t[g->c];
  float *y = t[g->h.y];
  int64_t i, j;
  (void)err;
  mi__blis_mmpb_run(env, &g->h.pk, t[g->h.a], y, NULL);
  for (i = 0; i < g->h.m; i++)
    for (j = 0; j < g->h.n; j++) y[i * g->h.n + j] += g->beta * c[i * g->crs + j * g->ccs];
  return MI_OK;
}

/* The opening Gemm and MatMul share, after their shape checks: A and B FP32 (else unsupported),
 * then the zeroed state of `size` bytes, which starts with an mm_head_t, with A, B and Y set.
 * NULL with *rc the error. */
static void *mm_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n, const mi_tensor_desc_t *a,
                    const mi_tensor_desc_t *b, uint64_t size, int32_t *rc, mi_error_t *err) {
  mm_head_t *h;
  if (a->dtype != MI_DTYPE_FLOAT32 || b->dtype != MI_DTYPE_FLOAT32) {
    *rc = mi__blis_unsupported(err, n, "A and B must be FLOAT32");
    return NULL;
  }
  if (!(h = mi__blis_state_new(p, s, size, err))) {
    *rc = MI_ERR_OUT_OF_MEMORY;
    return NULL;
  }
  h->a = mi__blis_in(n, 0);
  h->b = mi__blis_in(n, 1);
  h->y = mi__blis_out(n, 0);
  h->res = -1;
  return h;
}

int32_t mi__blis_prep_gemm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, mi__blis_in(n, 0)), *b = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *c = mi__blis_tensor(p, mi__blis_in(n, 2));
  int64_t ta = mi_sdk_attr_int(n, "transA", 0), tb = mi_sdk_attr_int(n, "transB", 0);
  gemm_state_t *g;
  int32_t rc;
  int bf = bf16_named(p, n, "gemm.packed_bf16", "gemm.blis");
  if (mi__blis_is_q8(a))
    return bf ? bf16_refuse(err, n, "gemm.packed_bf16", "runs FLOAT32 layers, not INT8 codes") : mi__blis_prep_qgemm(p, s, err);
  if (!a || !b || a->rank != 2 || b->rank != 2) return mi__blis_unsupported(err, n, "A and B must be 2-D");
  if (!(g = mm_new(p, s, n, a, b, sizeof *g, &rc, err))) return rc;
  g->c = mi__blis_in(n, 2);
  g->h.m = ta ? a->dims[1] : a->dims[0];
  g->h.k = ta ? a->dims[0] : a->dims[1];
  g->h.n = tb ? b->dims[0] : b->dims[1];
  if ((tb ? b->dims[1] : b->dims[0]) != g->h.k) return mi__blis_unsupported(err, n, "inner dims differ");
  /* Transposes are expressed as strides: BLIS reads any row/column stride. */
  g->rsa = ta ? 1 : a->dims[1];
  g->csa = ta ? a->dims[1] : 1;
  g->rsb = tb ? 1 : b->dims[1];
  g->csb = tb ? b->dims[1] : 1;
  g->alpha = mi_sdk_attr_float(n, "alpha", 1.f);
  g->beta = mi_sdk_attr_float(n, "beta", 1.f);
  if (c) {
    int64_t cm = c->rank == 2 ? c->dims[0] : 1, cn = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    if (c->rank > 2 || (cm != 1 && cm != g->h.m) || (cn != 1 && cn != g->h.n))
      return mi__blis_unsupported(err, n, "C does not broadcast to [M, N]");
    g->crs = cm == 1 ? 0 : cn;
    g->ccs = cn == 1 ? 0 : 1;
  }
  /* BF16 compute: transA as A's strides when it is rounded; C a constant bias over the columns as
   * the FP32 path takes it (then the linear tail too), any other C added after in FP32 */
  if (bf) {
    int cb = c && g->beta != 0.f && g->crs == 0 && mi__blis_is_const(p, g->c) && p->k->ptr[g->c];
    int32_t bias = -1, used = 1, y = g->h.y, act = 0, res = -1;
    float aa = 0.f, ab = 0.f;
    g->post_c = c && g->beta != 0.f && !cb;
    if (!g->post_c) linear_tail(p, &g->h, c && g->beta != 0.f, &bias, &used, &y, &act, &aa, &ab, &res);
    rc = bias >= 0 ? packed_bf16(p, s, n, &g->h, "gemm.packed_bf16", g->rsa, g->csa, g->rsb, g->csb, g->alpha, bias, 1,
                                 1.f, err)
                   : packed_bf16(p, s, n, &g->h, "gemm.packed_bf16", g->rsa, g->csa, g->rsb, g->csb, g->alpha,
                                 cb ? g->c : -1, g->ccs, g->beta, err);
    if (rc != MI_OK) return rc;
    if (g->post_c) {
      s->run = run_gemm_bf16_c;
      return MI_OK;
    }
    return take_tail(p, &g->h, used, y, act, aa, ab, res);
  }
  /* transA stays on BLIS (A read in place by rows); C only as a constant bias over the columns. */
  if (!ta && (!c || g->beta == 0.f || g->crs == 0)) {
    int32_t bias = -1, used = 1, y = g->h.y, act = 0, res = -1, r;
    float aa = 0.f, ab = 0.f;
    linear_tail(p, &g->h, c && g->beta != 0.f, &bias, &used, &y, &act, &aa, &ab, &res);
    r = bias >= 0 ? packed_b(p, s, &g->h, g->rsb, g->csb, g->alpha, bias, 1, 1.f)
                  : packed_b(p, s, &g->h, g->rsb, g->csb, g->alpha, c && g->beta != 0.f ? g->c : -1, g->ccs, g->beta);
    if (r < 0) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    if (r) return take_tail(p, &g->h, used, y, act, aa, ab, res);
  }
  s->run = run_gemm;
  return MI_OK;
}

/* ---- MatMul: numpy matmul semantics, batch dims broadcast. */

typedef struct matmul_state {
  mm_head_t h;
  int32_t brank;
  int64_t bdims[MI_MAX_RANK], sa[MI_MAX_RANK], sb[MI_MAX_RANK];
  int64_t batches;
  int64_t rsb, csb;  /* B's element [kk][j] at kk * rsb + j * csb: a folded Transpose is strides */
  float alpha;       /* folded scalar Muls of the operands */
  mi__blis_mmb_t mb; /* runtime B on the packed tiles (mb.m set), else BLIS */
  int32_t mmv_simd;  /* a few rows by a runtime B, streamed (blis_mmv.c): its SIMD level */
} matmul_state_t;

/* Batches i0..i1 of a MatMul on mi__blis_mmv. */
static void mmv_part(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *task = arg;
  const matmul_state_t *mm = task->state;
  const float *a = task->t[mm->h.a], *b = task->t[mm->h.b];
  float *y = task->t[mm->h.y];
  for (int64_t bi = i0; bi < i1; bi++) {
    int64_t oa = 0, ob = 0, rest = bi;
    for (int32_t d = mm->brank - 1; d >= 0; d--) {
      int64_t i = rest % mm->bdims[d];
      rest /= mm->bdims[d];
      oa += i * mm->sa[d];
      ob += i * mm->sb[d];
    }
    mi__blis_mmv(mm->mmv_simd, mm->h.m, mm->h.k, mm->h.n, mm->alpha, a + oa, b + ob, mm->rsb, mm->csb,
                 y + bi * mm->h.m * mm->h.n);
  }
}

static int32_t run_matmul_mmv(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                              mi_error_t *err) {
  const matmul_state_t *mm = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, mm->batches, 1, mm->h.m * mm->h.k * mm->h.n, mmv_part);
}

static int32_t run_matmul_mmb(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                              mi_error_t *err) {
  const matmul_state_t *mm = s->state;
  (void)err;
  mi__blis_mmb_run(env, &mm->mb, t[mm->h.a], t[mm->h.b], t[mm->h.y]);
  return MI_OK;
}

/* Runtime B (attention's QK^T and PV: per head 128x64 by 64x128 ran at about 100 GFLOP/s through
 * BLIS): each (batch, panel) item packs its panel of B and runs the packed tiles on it while it
 * is in L1, where the packing is a small part: 16 rows or more, at most MI__AUTO_SMALL_MACS
 * multiply-adds a batch (larger GEMMs stay on BLIS, measured only up to there), B 2-D or more
 * (b2d). 1 when taken, 0 to stay on BLIS, -1 out of memory. */
static int runtime_b(mi__blis_prep_t *p, mi__blis_step_t *s, matmul_state_t *mm, int b2d) {
  int64_t idx[MI_MAX_RANK] = {0}, bi;
  int32_t d, simd = simd_of(p);
  if (!b2d || mm->h.m < 16 || mm->h.k < 1 || mm->h.n < 1 || mm->batches > 4096 ||
      mm->h.m * mm->h.k * mm->h.n > MI__AUTO_SMALL_MACS)
    return 0;
  if (!(s->aux = mi__blis_alloc(p->ctx, mi__blis_mmb_bytes(simd, mm->h.k, mm->h.n, mm->batches)))) return -1;
  mi__blis_mmb_init(&mm->mb, s->aux, simd, mm->h.m, mm->h.k, mm->h.n, mm->batches);
  mm->mb.rsb = mm->rsb;
  mm->mb.csb = mm->csb;
  mm->mb.alpha = mm->alpha;
  for (bi = 0; bi < mm->batches; bi++) {
    mm->mb.oa[bi] = mm->mb.ob[bi] = 0;
    for (d = 0; d < mm->brank; d++) {
      mm->mb.oa[bi] += idx[d] * mm->sa[d];
      mm->mb.ob[bi] += idx[d] * mm->sb[d];
    }
    mi__blis_next_index(mm->brank, mm->bdims, NULL, idx, NULL);
  }
  s->run = run_matmul_mmb;
  return 1;
}

static int32_t run_matmul(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  const matmul_state_t *mm = s->state;
  const float *a = t[mm->h.a], *b = t[mm->h.b];
  float *y = t[mm->h.y];
  int64_t idx[MI_MAX_RANK] = {0}, bi;
  int32_t d;
  for (bi = 0; bi < mm->batches; bi++) {
    int64_t oa = 0, ob = 0;
    for (d = 0; d < mm->brank; d++) {
      oa += idx[d] * mm->sa[d];
      ob += idx[d] * mm->sb[d];
    }
    mi__blis_sgemm(env, mm->h.m, mm->h.n, mm->h.k, mm->alpha, a + oa, mm->h.k, 1, b + ob, mm->rsb, mm->csb, 0.f,
                   y + bi * mm->h.m * mm->h.n, mm->h.n, 1);
    for (d = mm->brank - 1; d >= 0; d--) {
      if (++idx[d] < mm->bdims[d]) break;
      idx[d] = 0;
    }
  }
  return MI_OK;
}

/* Element strides over the broadcast batch (brank dims) of an operand of rank `rank` whose dims
 * and element strides are dims / st, its batch the rank - 2 leading dims (tbr of them, aligned
 * to the right): 0 where it has 1. */
static void batch_strides(const int64_t *dims, const int64_t *st, int32_t brank, int32_t tbr, int64_t *out) {
  int32_t d;
  for (d = brank - 1; d >= 0; d--) {
    int32_t dt = d - (brank - tbr);
    out[d] = dt < 0 || dims[dt] == 1 ? 0 : st[dt];
  }
}

/* MatMul node n of A (tensor ia, desc a) by B (tensor ib) whose logical dims bd (rank br) sit at
 * element strides bs in ib (a folded Transpose: any strides), times alpha. */
static int32_t prep_mm(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n, int32_t ia,
                       const mi_tensor_desc_t *a, int32_t ib, const mi_tensor_desc_t *b, const int64_t *bd,
                       const int64_t *bs, int32_t br, float alpha, int folded, mi_error_t *err) {
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  matmul_state_t *mm;
  int64_t ast[MI_MAX_RANK];
  int32_t d, abr, bbr, rc;
  int bf = bf16_named(p, n, "matmul.packed_bf16", "matmul.blis");
  if (!a || !b || !y || a->rank < 1 || br < 1) return mi__blis_unsupported(err, n, "missing operand");
  if (!(mm = mm_new(p, s, n, a, b, sizeof *mm, &rc, err))) return rc;
  mm->h.a = ia;
  mm->h.b = ib;
  mm->alpha = alpha;
  mm->h.m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
  mm->h.k = a->dims[a->rank - 1];
  mm->h.n = br == 1 ? 1 : bd[br - 1];
  mm->rsb = br == 1 ? bs[0] : bs[br - 2];
  mm->csb = br == 1 ? 1 : bs[br - 1];
  if ((br == 1 ? bd[0] : bd[br - 2]) != mm->h.k) return mi__blis_unsupported(err, n, "inner dims differ");
  abr = a->rank > 2 ? a->rank - 2 : 0;
  bbr = br > 2 ? br - 2 : 0;
  mm->brank = abr > bbr ? abr : bbr;
  mm->batches = 1;
  for (d = 0; d < mm->brank; d++) {
    int32_t da = d - (mm->brank - abr), db = d - (mm->brank - bbr);
    int64_t ea = da >= 0 ? a->dims[da] : 1, eb = db >= 0 ? bd[db] : 1;
    if (ea != eb && ea != 1 && eb != 1) return mi__blis_unsupported(err, n, "batch dims do not broadcast");
    mm->bdims[d] = ea > eb ? ea : eb;
    mm->batches *= mm->bdims[d];
  }
  if (mm->batches * mm->h.m * mm->h.n != mi_sdk_numel(y))
    return mi__blis_unsupported(err, n, "output shape does not match");
  mi_sdk_strides(a, ast);
  batch_strides(a->dims, ast, mm->brank, abr, mm->sa);
  batch_strides(bd, bs, mm->brank, bbr, mm->sb);
  /* A's batches are contiguous and B is shared: one tall GEMM instead of many small ones. */
  {
    int shared_b = 1, full_a = 1;
    for (d = 0; d < mm->brank; d++) {
      shared_b &= mm->sb[d] == 0;
      full_a &= mm->sa[d] != 0 || mm->bdims[d] == 1;
    }
    if (mm->brank && shared_b && full_a) {
      mm->h.m *= mm->batches;
      mm->batches = 1;
      mm->brank = 0;
    }
  }
  /* BF16 compute: one GEMM on the constant B (A's rows, batches included, rounded per run) */
  if (bf) {
    int32_t bias = -1, used = 1, yt = mm->h.y, act = 0, res = -1;
    float aa = 0.f, ab = 0.f;
    if (!mi__blis_is_const(p, mm->h.b) || !p->k->ptr[mm->h.b])
      return bf16_refuse(err, n, "matmul.packed_bf16", "needs a constant B (weights); a runtime B runs in FP32");
    if (mm->batches != 1)
      return bf16_refuse(err, n, "matmul.packed_bf16", "runs one GEMM on a 2-D B: B has batch dims of more than 1");
    if (!folded) linear_tail(p, &mm->h, 0, &bias, &used, &yt, &act, &aa, &ab, &res);
    rc = packed_bf16(p, s, n, &mm->h, "matmul.packed_bf16", mm->h.k, 1, mm->rsb, mm->csb, alpha, bias, 1, 1.f, err);
    if (rc != MI_OK || folded) return rc;
    return take_tail(p, &mm->h, used, yt, act, aa, ab, res);
  }
  /* One GEMM with a constant B: the packed path (B's batch dims, if any, are all 1 then); the
   * Linear chain after it only without folded operands (its nodes follow the MatMul). */
  if (mm->batches == 1) {
    int32_t bias = -1, used = 1, yt = mm->h.y, act = 0, res = -1, r;
    float aa = 0.f, ab = 0.f;
    if (!folded) linear_tail(p, &mm->h, 0, &bias, &used, &yt, &act, &aa, &ab, &res);
    r = packed_b(p, s, &mm->h, mm->rsb, mm->csb, alpha, bias, 1, 1.f);
    if (r < 0) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    if (r && folded) return MI_OK;
    if (r) return take_tail(p, &mm->h, used, yt, act, aa, ab, res);
  }
  {
    int r = runtime_b(p, s, mm, br >= 2);
    if (r < 0) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    if (r) return MI_OK;
  }
  if (mm->h.m <= MI__MMV_MAX_M && (mm->csb == 1 || mm->rsb == 1)) {
    mm->mmv_simd = simd_of(p);
    s->run = run_matmul_mmv;
    return MI_OK;
  }
  s->run = run_matmul;
  return MI_OK;
}

int32_t mi__blis_prep_matmul(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, mi__blis_in(n, 0)), *b = mi__blis_tensor(p, mi__blis_in(n, 1));
  int64_t bs[MI_MAX_RANK];
  if (mi__blis_is_q8(a))
    return p->variant && !strcmp(p->variant, "matmul.packed_bf16")
               ? mi__blis_unsupported(err, n, "matmul.packed_bf16 runs FLOAT32 layers, not INT8 codes")
               : mi__blis_prep_qgemm(p, s, err);
  if (!a || !b || b->rank < 1) return mi__blis_unsupported(err, n, "missing operand");
  mi_sdk_strides(b, bs);
  return prep_mm(p, s, n, mi__blis_in(n, 0), a, mi__blis_in(n, 1), b, b->dims, bs, b->rank, 1.f, 0, err);
}

/* The constant scalar factor of Mul node m, its other operand in *x; 0 when m is not such a Mul. */
static int scalar_mul(const mi__blis_prep_t *p, const mi_node_desc_t *m, int32_t *x, float *f) {
  int32_t i;
  if (strcmp(m->op_type, "Mul") || m->input_count != 2 || m->output_count != 1) return 0;
  for (i = 0; i < 2; i++) {
    int32_t c = m->inputs[i], o = m->inputs[1 - i];
    const mi_tensor_desc_t *tc = mi__blis_tensor(p, c), *to = mi__blis_tensor(p, o),
                           *ty = mi__blis_tensor(p, m->outputs[0]);
    /* the product of the operand's shape (the scalar's rank no larger) */
    if (c >= 0 && o >= 0 && c != o && mi__blis_is_const(p, c) && p->k->ptr[c] && tc &&
        tc->dtype == MI_DTYPE_FLOAT32 && mi_sdk_numel(tc) == 1 && !mi__blis_is_const(p, o) && to &&
        to->dtype == MI_DTYPE_FLOAT32 && ty && ty->rank == to->rank && mi_sdk_numel(ty) == mi_sdk_numel(to)) {
      *x = o;
      *f = *(const float *)p->k->ptr[c];
      return 1;
    }
  }
  return 0;
}

/* The host's MatMul fold (MI_FUSE_TRANSPOSE, docs/abi.md): Muls by a constant scalar and one
 * Transpose on B, each read by the next alone, then the MatMul. Traces each operand back through
 * the members: the scales multiply into alpha (applied as B's panels are packed, or as BLIS's
 * alpha), the Transpose becomes B's strides. *taken 0 when the nodes are not such a unit (they
 * are then prepared one by one). */
int32_t mi__blis_prep_mm_fold(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err) {
  const mi_node_desc_t *n, *m;
  const mi_tensor_desc_t *a, *b;
  int32_t count = 0, i, j, op[2], seen = 0, br = 0;
  int64_t bd[MI_MAX_RANK], bs[MI_MAX_RANK], st[MI_MAX_RANK];
  float alpha = 1.f;
  *taken = 0;
  while ((m = mi__blis_node(p, count)) && (!strcmp(m->op_type, "Mul") || !strcmp(m->op_type, "Transpose"))) {
    if (m->output_count != 1 || m->input_count < 1 || mi__blis_is_kernel_output(p, m->outputs[0]) ||
        mi__blis_consumers(p, m->outputs[0]) != 1)
      return MI_OK;
    count++;
  }
  if (!(n = mi__blis_node(p, count)) || strcmp(n->op_type, "MatMul") || n->input_count != 2 || n->output_count != 1)
    return MI_OK;
  for (j = 0; j < 2; j++) {
    int32_t t = n->inputs[j], transposed = 0;
    for (;;) {
      int32_t x;
      float f;
      for (i = 0; i < count; i++)
        if (mi__blis_node(p, i)->outputs[0] == t) break;
      if (i == count) break;
      m = mi__blis_node(p, i);
      seen++;
      if (scalar_mul(p, m, &x, &f)) {
        alpha *= f;
        t = x;
        continue;
      }
      if (strcmp(m->op_type, "Transpose") || j == 0 || transposed || m->input_count != 1) return MI_OK;
      {
        const mi_tensor_desc_t *x0 = mi__blis_tensor(p, m->inputs[0]);
        const mi_attr_t *pa = mi_sdk_attr(m, "perm");
        int32_t d;
        if (!x0 || x0->rank < 1 || (pa && (pa->type != MI_ATTR_INTS || pa->count != x0->rank))) return MI_OK;
        mi_sdk_strides(x0, st);
        br = x0->rank;
        for (d = 0; d < br; d++) {
          int64_t src = pa ? pa->ints[d] : br - 1 - d;
          if (src < 0 || src >= br) return MI_OK;
          bd[d] = x0->dims[src];
          bs[d] = st[src];
        }
      }
      transposed = 1;
      t = m->inputs[0];
    }
    op[j] = t;
  }
  /* every member on an operand's path, each once */
  if (seen != count || op[0] < 0 || op[1] < 0) return MI_OK;
  a = mi__blis_tensor(p, op[0]);
  b = mi__blis_tensor(p, op[1]);
  if (!a || !b || a->dtype != MI_DTYPE_FLOAT32 || b->dtype != MI_DTYPE_FLOAT32 || a->rank < 1) return MI_OK;
  if (!br) {
    br = b->rank;
    memcpy(bd, b->dims, sizeof(int64_t) * (size_t)br);
    mi_sdk_strides(b, bs);
  }
  /* a Mul or Div of the product by a constant scalar after it: the same alpha, the step writes
   * its output (the product itself is never written) */
  {
    const mi_node_desc_t *r = mi__blis_node(p, count + 1);
    const mi_tensor_desc_t *ty = r && r->output_count == 1 ? mi__blis_tensor(p, r->outputs[0]) : NULL;
    int32_t x, y = n->outputs[0], yr = -1, rc;
    float f;
    if (ty && ty->dtype == MI_DTYPE_FLOAT32 && !mi__blis_is_kernel_output(p, y) && mi__blis_consumers(p, y) == 1) {
      if (scalar_mul(p, r, &x, &f) && x == y) {
        alpha *= f;
        yr = r->outputs[0];
      } else if (!strcmp(r->op_type, "Div") && r->input_count == 2 && r->inputs[0] == y && r->inputs[1] >= 0 &&
                 mi__blis_is_const(p, r->inputs[1]) && p->k->ptr[r->inputs[1]] &&
                 mi__blis_tensor(p, r->inputs[1])->dtype == MI_DTYPE_FLOAT32 &&
                 mi_sdk_numel(mi__blis_tensor(p, r->inputs[1])) == 1 &&
                 mi_sdk_numel(ty) == mi_sdk_numel(mi__blis_tensor(p, y))) {
        alpha /= *(const float *)p->k->ptr[r->inputs[1]];
        yr = r->outputs[0];
      }
    }
    if (yr >= 0) {
      *taken = 1;
      p->nodes_used = count + 2;
      if ((rc = prep_mm(p, s, n, op[0], a, op[1], b, bd, bs, br, alpha, 1, err)) == MI_OK)
        ((mm_head_t *)s->state)->y = yr;
      return rc;
    }
  }
  if (!count) return MI_OK; /* a MatMul alone: the plain prepare */
  *taken = 1;
  p->nodes_used = count + 1;
  return prep_mm(p, s, n, op[0], a, op[1], b, bd, bs, br, alpha, 1, err);
}
