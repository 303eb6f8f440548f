/* blis_smask.c - attention's masked softmax as one step: the host's Softmax group (MI_FUSE_ADD on
 * softmax.direct; exec/sm_fold.c) of Muls / Divs by a constant scalar and Adds of masks that
 * broadcast to the scores ([B, 1, 1, T], [B, 1, S, T], [S, T], a causal constant ...), then the
 * Softmax over the last axis. Each row of scores is read once: the members applied to it in
 * node order into the output row, its max found in the same pass (the softmax's first pass), and
 * the softmax's other two passes run on that row in L1: no pass per node over the B x H x S x T
 * scores, no intermediate written. Each member rounds as its own node does, and the max and the
 * last passes are the standalone row's, so the probabilities are the unfused kernels'. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_conv.h"

#define SMASK_MAX 8 /* members before the Softmax */
#define AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define AVX2_FN __attribute__((target("avx2,fma")))

enum { OP_ADD = 0,
       OP_MUL,
       OP_DIV };

typedef struct smask_op {
  int32_t kind; /* OP_* */
  float c;      /* Mul / Div: the constant scalar */
  int32_t t;    /* Add: the mask tensor (a kernel input or constant), else -1 */
  int32_t unit; /* Add: 1 when the mask runs along the row, 0 when it holds one value a row */
  int64_t st[MI_MAX_RANK];
} smask_op_t;

typedef struct smask_state {
  int32_t x, y, simd, nops, lead; /* lead: the axes before the softmax's */
  int64_t dims[MI_MAX_RANK], rows, len;
  smask_op_t op[SMASK_MAX];
} smask_state_t;

/* One member on a vector: v (op) w. */
#define SMASK_OP(kind, v, w, add, mul, div) ((kind) == OP_ADD ? add(v, w) : (kind) == OP_MUL ? mul(v, w) \
                                                                                             : div(v, w))

/* Row y = the members applied to a in node order (member o reads m[o], or c[o] where m[o] is
 * NULL), one rounding each; returns the row's max, found as the Softmax's own max pass finds it
 * (blis_vmath.c), so that the probabilities are the standalone row's. */
static inline __attribute__((always_inline)) AVX512_FN __m512 ops512(int32_t nops, const int32_t *kind,
                                                                     const float *const *m, const float *c,
                                                                     __mmask16 k, int64_t i, __m512 v) {
  for (int32_t o = 0; o < nops; o++) {
    __m512 w = m[o] ? _mm512_maskz_loadu_ps(k, m[o] + i) : _mm512_set1_ps(c[o]);
    v = SMASK_OP(kind[o], v, w, _mm512_add_ps, _mm512_mul_ps, _mm512_div_ps);
  }
  return v;
}

/* The row body; inlined with constant nops and kinds for the usual chains, whose members then
 * cost an add or a multiply each in the loop. */
static inline __attribute__((always_inline)) AVX512_FN float pre512_body(int32_t nops, const int32_t *kind,
                                                                         const float *a, const float *const *m,
                                                                         const float *c, float *y, int64_t n) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) { /* whole vectors, stored unmasked: the softmax reads them next */
    __m512 v = ops512(nops, kind, m, c, 0xffff, i, _mm512_loadu_ps(a + i));
    mx = _mm512_max_ps(mx, v);
    _mm512_storeu_ps(y + i, v);
  }
  if (i < n) {
    __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
    __m512 v = ops512(nops, kind, m, c, k, i, _mm512_maskz_loadu_ps(k, a + i));
    mx = _mm512_mask_max_ps(mx, k, mx, v);
    _mm512_mask_storeu_ps(y + i, k, v);
  }
  return _mm512_reduce_max_ps(mx);
}

AVX512_FN static float pre_avx512(const smask_state_t *st, const float *a, const float *const *m, const float *c,
                                  float *y, int64_t n) {
  static const int32_t add1[1] = {OP_ADD}, mul_add[2] = {OP_MUL, OP_ADD}, div_add[2] = {OP_DIV, OP_ADD},
                       add2[2] = {OP_ADD, OP_ADD};
  int32_t kind[SMASK_MAX];
  for (int32_t o = 0; o < st->nops; o++) kind[o] = st->op[o].kind;
  if (st->nops == 1 && kind[0] == OP_ADD) return pre512_body(1, add1, a, m, c, y, n);
  if (st->nops == 2 && kind[1] == OP_ADD && kind[0] == OP_MUL) return pre512_body(2, mul_add, a, m, c, y, n);
  if (st->nops == 2 && kind[1] == OP_ADD && kind[0] == OP_DIV) return pre512_body(2, div_add, a, m, c, y, n);
  if (st->nops == 2 && kind[1] == OP_ADD && kind[0] == OP_ADD) return pre512_body(2, add2, a, m, c, y, n);
  return pre512_body(st->nops, kind, a, m, c, y, n);
}

AVX2_FN static float pre_avx2(const smask_state_t *st, const float *a, const float *const *m, const float *c, float *y,
                              int64_t n) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  float tmp[8];
  int64_t i, j;
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(a + i);
    for (int32_t o = 0; o < st->nops; o++) {
      __m256 w = m[o] ? _mm256_loadu_ps(m[o] + i) : _mm256_set1_ps(c[o]);
      v = SMASK_OP(st->op[o].kind, v, w, _mm256_add_ps, _mm256_mul_ps, _mm256_div_ps);
    }
    mx = _mm256_max_ps(mx, v);
    _mm256_storeu_ps(y + i, v);
  }
  for (j = 0; j < 8; j++) { /* the tail as the softmax row takes it: -inf past the end */
    float v = -INFINITY;
    if (i + j < n) {
      v = a[i + j];
      for (int32_t o = 0; o < st->nops; o++) {
        float w = m[o] ? m[o][i + j] : c[o];
        v = st->op[o].kind == OP_ADD ? v + w : st->op[o].kind == OP_MUL ? v * w
                                                                        : v / w;
      }
      y[i + j] = v;
    }
    tmp[j] = v;
  }
  mx = _mm256_max_ps(mx, _mm256_loadu_ps(tmp));
  mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
  mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, 0x4e));
  mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, 0xb1));
  return _mm256_cvtss_f32(mx);
}

/* The C level: the members, then blis_nn.c's plain softmax row. */
static void row_c(const smask_state_t *st, const float *a, const float *const *m, const float *c, float *y,
                  int64_t n) {
  float mx = -INFINITY, sum = 0.f;
  int64_t j;
  for (j = 0; j < n; j++) {
    float v = a[j];
    for (int32_t o = 0; o < st->nops; o++) {
      float w = m[o] ? m[o][j] : c[o];
      v = st->op[o].kind == OP_ADD ? v + w : st->op[o].kind == OP_MUL ? v * w
                                                                      : v / w;
    }
    y[j] = v;
  }
  for (j = 0; j < n; j++) mx = fmaxf(mx, y[j]);
  for (j = 0; j < n; j++) sum += (y[j] = expf(y[j] - mx));
  for (j = 0; j < n; j++) y[j] /= sum;
}

/* Items are rows of the last axis; row r's mask rows are found from its index over the leading
 * axes, advanced row by row. */
static void smask_part(void *arg, int64_t r0, int64_t r1) {
  const mi__blis_task_t *nt = arg;
  const smask_state_t *st = nt->state;
  const float *x = nt->t[st->x];
  float *y = nt->t[st->y];
  int64_t idx[MI_MAX_RANK] = {0}, off[SMASK_MAX] = {0}, rem = r0, len = st->len;
  int32_t d, o;
  for (d = st->lead - 1; d >= 0; d--) {
    idx[d] = rem % st->dims[d];
    rem /= st->dims[d];
  }
  for (o = 0; o < st->nops; o++)
    for (d = 0; d < st->lead; d++) off[o] += idx[d] * st->op[o].st[d];
  for (int64_t r = r0; r < r1; r++) {
    const float *m[SMASK_MAX];
    float c[SMASK_MAX], *yr = y + r * len;
    for (o = 0; o < st->nops; o++) {
      const smask_op_t *op = &st->op[o];
      m[o] = op->t >= 0 ? (const float *)nt->t[op->t] + off[o] : NULL;
      c[o] = op->c;
      if (m[o] && !op->unit) { /* one mask value for the whole row */
        c[o] = m[o][0];
        m[o] = NULL;
      }
    }
    if (st->simd == MI__SIMD_AVX512)
      mi__blis_softmax_from_simd(st->simd, yr, yr, len, pre_avx512(st, x + r * len, m, c, yr, len));
    else if (st->simd == MI__SIMD_AVX2)
      mi__blis_softmax_from_simd(st->simd, yr, yr, len, pre_avx2(st, x + r * len, m, c, yr, len));
    else
      row_c(st, x + r * len, m, c, yr, len);
    for (d = st->lead - 1; d >= 0; d--) {
      for (o = 0; o < st->nops; o++) off[o] += st->op[o].st[d];
      if (++idx[d] < st->dims[d]) break;
      for (o = 0; o < st->nops; o++) off[o] -= st->op[o].st[d] * st->dims[d];
      idx[d] = 0;
    }
  }
}

static int32_t run_smask(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const smask_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->rows, 1, st->len * (8 + st->nops), smask_part);
}

/* 1 when tensor t is a FLOAT32 of exactly the dims of x. */
static int same_shape(const mi_tensor_desc_t *t, const mi_tensor_desc_t *x) {
  return t && t->dtype == MI_DTYPE_FLOAT32 && t->rank == x->rank &&
         !memcmp(t->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
}

/* Member m of the chain reading the chain's value `cur` (shape x) as *op; 0 when it is not one
 * the step takes. */
static int member_op(const mi__blis_prep_t *p, const mi_node_desc_t *m, int32_t cur, const mi_tensor_desc_t *x,
                     smask_op_t *op) {
  int32_t other, mr, d;
  const mi_tensor_desc_t *to;
  int64_t ms[MI_MAX_RANK];
  if (m->input_count != 2 || m->output_count != 1 || (m->inputs[0] == cur) == (m->inputs[1] == cur) ||
      !same_shape(mi__blis_tensor(p, m->outputs[0]), x))
    return 0;
  other = m->inputs[m->inputs[0] == cur ? 1 : 0];
  if (!(to = mi__blis_tensor(p, other)) || to->dtype != MI_DTYPE_FLOAT32 || to->rank > x->rank) return 0;
  memset(op, 0, sizeof *op);
  op->t = -1;
  if (!strcmp(m->op_type, "Mul") || !strcmp(m->op_type, "Div")) {
    /* by a constant scalar; a Div's divisor */
    if (!mi__blis_is_const(p, other) || !p->k->ptr[other] || mi_sdk_numel(to) != 1 ||
        (!strcmp(m->op_type, "Div") && m->inputs[1] != other))
      return 0;
    op->kind = strcmp(m->op_type, "Mul") ? OP_DIV : OP_MUL;
    op->c = *(const float *)p->k->ptr[other];
    if (op->kind == OP_DIV) { /* by 2^e: times 2^-e, both the one rounding of x / c, a divide cheaper */
      int e;
      float f = frexpf(op->c, &e);
      if ((f == 0.5f || f == -0.5f) && e > -120 && e < 120) {
        op->kind = OP_MUL;
        op->c = 1.f / op->c;
      }
    }
    return 1;
  }
  if (strcmp(m->op_type, "Add")) return 0;
  /* a mask broadcasting to the scores (numpy rules, aligned on the last axis) */
  op->kind = OP_ADD;
  op->t = other;
  mr = to->rank;
  mi_sdk_strides(to, ms);
  for (d = 0; d < x->rank; d++) {
    int32_t od = d - (x->rank - mr);
    int64_t md = od >= 0 ? to->dims[od] : 1;
    if (md != 1 && md != x->dims[d]) return 0;
    if (d < x->rank - 1) op->st[d] = md == 1 ? 0 : ms[od];
    else
      op->unit = md != 1;
  }
  return 1;
}

int32_t mi__blis_prep_smask(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err) {
  const mi_node_desc_t *m, *sm;
  const mi_tensor_desc_t *x, *ty;
  smask_op_t ops[SMASK_MAX];
  smask_state_t *st;
  int32_t count = 0, cur, first, i;
  int64_t axis, outer, len, inner;
  *taken = 0;
  while ((m = mi__blis_node(p, count)) &&
         (!strcmp(m->op_type, "Add") || !strcmp(m->op_type, "Mul") || !strcmp(m->op_type, "Div"))) {
    if (count == SMASK_MAX || m->output_count != 1 || mi__blis_is_kernel_output(p, m->outputs[0]) ||
        mi__blis_consumers(p, m->outputs[0]) != 1)
      return MI_OK;
    count++;
  }
  if (!count || !(sm = mi__blis_node(p, count)) || strcmp(sm->op_type, "Softmax") || sm->input_count != 1 ||
      sm->output_count != 1 || sm->inputs[0] != mi__blis_node(p, count - 1)->outputs[0])
    return MI_OK;
  /* the chain's first value: the first member's operand of the output's shape (the scores) */
  m = mi__blis_node(p, 0);
  ty = mi__blis_tensor(p, sm->outputs[0]);
  if (!ty || ty->dtype != MI_DTYPE_FLOAT32 || ty->rank < 1 || m->input_count != 2) return MI_OK;
  cur = same_shape(mi__blis_tensor(p, m->inputs[0]), ty) && !mi__blis_is_const(p, m->inputs[0]) ? m->inputs[0]
                                                                                                : m->inputs[1];
  if (!(x = mi__blis_tensor(p, cur)) || !same_shape(x, ty) || mi__blis_is_const(p, cur)) return MI_OK;
  first = cur;
  for (i = 0; i < count; i++) {
    m = mi__blis_node(p, i);
    if (!member_op(p, m, cur, ty, &ops[i])) return MI_OK;
    cur = m->outputs[0];
  }
  axis = mi_sdk_attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1);
  if (!mi__blis_axis_split(ty, &axis, &outer, &len, &inner) || axis != ty->rank - 1) return MI_OK;
  *taken = 1;
  p->nodes_used = count + 1;
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = first;
  st->y = sm->outputs[0];
  st->nops = count;
  memcpy(st->op, ops, sizeof ops[0] * (size_t)count);
  st->lead = ty->rank - 1;
  memcpy(st->dims, ty->dims, sizeof(int64_t) * (size_t)ty->rank);
  st->rows = outer;
  st->len = len;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  s->run = run_smask;
  return MI_OK;
}
