/* blis_smask.c - attention's masked softmax as one step: the host's Softmax group (MI_FUSE_ADD on
 * softmax.direct; exec/sm_fold.c) of Muls / Divs by a constant scalar and Adds of masks that
 * broadcast to the scores ([B, 1, 1, T], [B, 1, S, T], [S, T], a causal constant ...), then the
 * Softmax over the last axis. Each row of scores is read once, the members applied to it in
 * node order into the output row (in L1), and the softmax finished there: no pass per node over
 * the B x H x S x T scores, no intermediate written. Each member rounds as its own node does, and
 * the softmax is the standalone kernel's row, so the probabilities are the unfused kernels'. */
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

/* y = a (op) m, or a (op) c where m is NULL, over n floats (y may be a). */
AVX512_FN static void row_avx512(int32_t kind, const float *a, const float *m, float c, float *y, int64_t n) {
  __m512 vc = _mm512_set1_ps(c);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(k, a + i), w = m ? _mm512_maskz_loadu_ps(k, m + i) : vc;
    v = kind == OP_ADD ? _mm512_add_ps(v, w) : kind == OP_MUL ? _mm512_mul_ps(v, w)
                                                              : _mm512_div_ps(v, w);
    _mm512_mask_storeu_ps(y + i, k, v);
  }
}

AVX2_FN static void row_avx2(int32_t kind, const float *a, const float *m, float c, float *y, int64_t n) {
  __m256 vc = _mm256_set1_ps(c);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(a + i), w = m ? _mm256_loadu_ps(m + i) : vc;
    v = kind == OP_ADD ? _mm256_add_ps(v, w) : kind == OP_MUL ? _mm256_mul_ps(v, w)
                                                              : _mm256_div_ps(v, w);
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; i++) {
    float w = m ? m[i] : c;
    y[i] = kind == OP_ADD ? a[i] + w : kind == OP_MUL ? a[i] * w
                                                      : a[i] / w;
  }
}

static void row_c(int32_t kind, const float *a, const float *m, float c, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float w = m ? m[i] : c;
    y[i] = kind == OP_ADD ? a[i] + w : kind == OP_MUL ? a[i] * w
                                                      : a[i] / w;
  }
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
    const float *a = x + r * len;
    float *yr = y + r * len;
    for (o = 0; o < st->nops; o++, a = yr) {
      const smask_op_t *op = &st->op[o];
      const float *m = op->t >= 0 ? (const float *)nt->t[op->t] + off[o] : NULL;
      float c = op->c;
      if (m && !op->unit) { /* one mask value for the whole row */
        c = m[0];
        m = NULL;
      }
      if (st->simd == MI__SIMD_AVX512) row_avx512(op->kind, a, m, c, yr, len);
      else if (st->simd == MI__SIMD_AVX2)
        row_avx2(op->kind, a, m, c, yr, len);
      else
        row_c(op->kind, a, m, c, yr, len);
    }
    /* the standalone Softmax's row (blis_nn.c), in place */
    if (!mi__blis_softmax_simd(st->simd, yr, yr, len)) {
      float mx = -INFINITY, sum = 0.f;
      int64_t j;
      for (j = 0; j < len; j++) mx = fmaxf(mx, yr[j]);
      for (j = 0; j < len; j++) sum += (yr[j] = expf(yr[j] - mx));
      for (j = 0; j < len; j++) yr[j] /= sum;
    }
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
