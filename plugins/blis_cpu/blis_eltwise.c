/* blis_eltwise.c - activations, unary math, BatchNormalization and broadcasting binary ops. */
#include <math.h>
#include <string.h>

#include "blis_conv.h"
#include "blis_qgemm.h" /* lowered QDQ Add/Mul */

static float const_scalar(const mi__blis_prep_t *p, int32_t idx, float dflt, int *ok) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
  if (idx < 0) return dflt;
  if (!t || !t->data || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1) {
    *ok = 0;
    return dflt;
  }
  return *(const float *)t->data;
}

int mi__blis_act_of(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t *kind, float *a,
                    float *b) {
  static const struct {
    const char *op;
    int32_t kind;
  } simple[] = {{"Relu", MI__ACT_RELU}, {"Sigmoid", MI__ACT_SIGMOID}, {"Tanh", MI__ACT_TANH}, {"Erf", MI__ACT_ERF}, {"Sqrt", MI__ACT_SQRT}, {"Log", MI__ACT_LOG}, {"Exp", MI__ACT_EXP}, {"Neg", MI__ACT_NEG}, {"Abs", MI__ACT_ABS}, {"Reciprocal", MI__ACT_RECIP}, {"Softplus", MI__ACT_SOFTPLUS}, {"Floor", MI__ACT_FLOOR}, {"Ceil", MI__ACT_CEIL}, {"HardSwish", MI__ACT_HSWISH}};
  size_t i;
  int ok = 1;
  *a = 0.f;
  *b = 0.f;
  for (i = 0; i < sizeof simple / sizeof simple[0]; i++)
    if (strcmp(n->op_type, simple[i].op) == 0) {
      *kind = simple[i].kind;
      return 1;
    }
  if (strcmp(n->op_type, "LeakyRelu") == 0) {
    *kind = MI__ACT_LEAKY;
    *a = mi_sdk_attr_float(n, "alpha", 0.01f);
  } else if (strcmp(n->op_type, "Elu") == 0) {
    *kind = MI__ACT_ELU;
    *a = mi_sdk_attr_float(n, "alpha", 1.0f);
  } else if (strcmp(n->op_type, "HardSigmoid") == 0) {
    *kind = MI__ACT_HSIGMOID;
    *a = mi_sdk_attr_float(n, "alpha", 0.2f);
    *b = mi_sdk_attr_float(n, "beta", 0.5f);
  } else if (strcmp(n->op_type, "Gelu") == 0) {
    const mi_attr_t *ap = mi_sdk_attr(n, "approximate");
    *kind = ap && ap->type == MI_ATTR_STRING && ap->s && strcmp(ap->s, "tanh") == 0 ? MI__ACT_GELU_TANH
                                                                                    : MI__ACT_GELU;
  } else if (strcmp(n->op_type, "Clip") == 0) {
    *kind = MI__ACT_CLIP;
    if (n->opset < 11) {
      *a = mi_sdk_attr_float(n, "min", -INFINITY);
      *b = mi_sdk_attr_float(n, "max", INFINITY);
    } else {
      /* min/max must be constants to be folded into the kernel. */
      *a = const_scalar(p, mi__blis_in(n, 1), -INFINITY, &ok);
      *b = const_scalar(p, mi__blis_in(n, 2), INFINITY, &ok);
    }
  } else if (strcmp(n->op_type, "Identity") == 0 || strcmp(n->op_type, "Dropout") == 0) {
    *kind = MI__ACT_IDENTITY;
  } else if ((strcmp(n->op_type, "Max") == 0 || strcmp(n->op_type, "Min") == 0) &&
             n->input_count == 2 && mi__blis_in(n, 1) >= 0) {
    /* A clamp against a constant scalar (tf2onnx writes Relu6 and leaky clamps so); only the
     * conv epilogue asks, the standalone ops keep their broadcasting kernels. */
    float c = const_scalar(p, mi__blis_in(n, 1), 0.f, &ok);
    *kind = MI__ACT_CLIP;
    *a = n->op_type[1] == 'a' ? c : -INFINITY;
    *b = n->op_type[1] == 'a' ? INFINITY : c;
  } else {
    return 0;
  }
  return ok;
}

void mi__blis_act_apply(int32_t kind, float a, float b, float *x, int64_t n) {
  int64_t i;
  if (mi__blis_act_lanes(kind, a, b, x, n)) return;
  switch (kind) {
  case MI__ACT_SIGMOID: /* 0 below -87, no subnormal quotient, as the vector paths (blis_vmath.c) */
    for (i = 0; i < n; i++) x[i] = x[i] < -87.f ? 0.f : 1.f / (1.f + expf(-x[i]));
    break;
  case MI__ACT_TANH:
    for (i = 0; i < n; i++) x[i] = tanhf(x[i]);
    break;
  case MI__ACT_ERF:
    for (i = 0; i < n; i++) x[i] = erff(x[i]);
    break;
  case MI__ACT_GELU:
    for (i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.f + erff(x[i] * 0.70710678118654752f));
    break;
  case MI__ACT_GELU_TANH:
    for (i = 0; i < n; i++)
      x[i] = 0.5f * x[i] * (1.f + tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
    break;
  case MI__ACT_SQRT:
    for (i = 0; i < n; i++) x[i] = sqrtf(x[i]);
    break;
  case MI__ACT_LOG:
    for (i = 0; i < n; i++) x[i] = logf(x[i]);
    break;
  case MI__ACT_EXP:
    for (i = 0; i < n; i++) x[i] = expf(x[i]);
    break;
  case MI__ACT_NEG:
    for (i = 0; i < n; i++) x[i] = -x[i];
    break;
  case MI__ACT_ABS:
    for (i = 0; i < n; i++) x[i] = fabsf(x[i]);
    break;
  case MI__ACT_RECIP:
    for (i = 0; i < n; i++) x[i] = 1.f / x[i];
    break;
  case MI__ACT_ELU:
    for (i = 0; i < n; i++) x[i] = x[i] >= 0.f ? x[i] : a * (expf(x[i]) - 1.f);
    break;
  case MI__ACT_SOFTPLUS:
    for (i = 0; i < n; i++) x[i] = log1pf(expf(x[i]));
    break;
  case MI__ACT_FLOOR:
    for (i = 0; i < n; i++) x[i] = floorf(x[i]);
    break;
  case MI__ACT_CEIL:
    for (i = 0; i < n; i++) x[i] = ceilf(x[i]);
    break;
  case MI__ACT_ROUND:
    for (i = 0; i < n; i++) x[i] = nearbyintf(x[i]);
    break; /* halves to even */
  case MI__ACT_SIGN:
    for (i = 0; i < n; i++) x[i] = x[i] > 0 ? 1.0f : x[i] < 0 ? -1.0f
                                                              : x[i];
    break;
  default: mi__blis_act2_apply(kind, a, b, x, n); break;
  }
}

typedef struct unary_state {
  int32_t in, out, kind, simd;
  int32_t ta, tb; /* Clip: runtime scalar min/max tensors, -1 when a/b hold constants */
  float a, b;
  int64_t n;
} unary_state_t;

static void unary_part(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *ut = arg;
  const unary_state_t *u = ut->state;
  const float *x = ut->t[u->in];
  float *y = ut->t[u->out];
  /* Clip's bounds: constants, or scalars read at run time. */
  float a = u->ta >= 0 ? *(const float *)ut->t[u->ta] : u->a;
  float b = u->tb >= 0 ? *(const float *)ut->t[u->tb] : u->b;
  if (y != x) memcpy(y + i0, x + i0, (size_t)(i1 - i0) * sizeof(float));
  if (!mi__blis_act_simd(u->simd, u->kind, y + i0, i1 - i0)) mi__blis_act_apply(u->kind, a, b, y + i0, i1 - i0);
}

static int32_t run_unary(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  const unary_state_t *u = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, u->n, 4096, 4, unary_part);
}

int32_t mi__blis_prep_unary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  unary_state_t *u;
  int32_t kind, ta = -1, tb = -1;
  float a, b;
  if (strcmp(n->op_type, "Round") == 0 || strcmp(n->op_type, "Sign") == 0) {
    kind = n->op_type[0] == 'R' ? MI__ACT_ROUND : MI__ACT_SIGN;
    a = b = 0.0f;
  } else if (mi__blis_act2_of(n, &kind, &a, &b)) {
    /* Selu, Celu, Softsign, Mish, ThresholdedRelu, Shrink: standalone only */
  } else if (!mi__blis_act_of(p, n, &kind, &a, &b)) {
    /* Clip-11+ may take its min/max as runtime FLOAT32 scalars, read at each run. */
    int32_t i;
    if (strcmp(n->op_type, "Clip") != 0 || n->opset < 11)
      return mi__blis_unsupported(err, n, "activation parameters must be constant scalars");
    kind = MI__ACT_CLIP;
    a = -INFINITY;
    b = INFINITY;
    for (i = 1; i <= 2; i++) {
      int32_t idx = mi__blis_in(n, i);
      const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
      if (idx < 0) continue;
      if (!t || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1)
        return mi__blis_unsupported(err, n, "min/max must be FLOAT32 scalars");
      if (t->data) *(i == 1 ? &a : &b) = *(const float *)t->data;
      else
        *(i == 1 ? &ta : &tb) = idx;
    }
  }
  if (!(u = mi__blis_state_new(p, s, sizeof *u, err))) return MI_ERR_OUT_OF_MEMORY;
  u->ta = ta;
  u->tb = tb;
  u->in = mi__blis_in(n, 0);
  u->out = mi__blis_out(n, 0);
  u->kind = kind;
  u->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) u->simd = p->ctx->simd_ids[si];
  }
  u->a = a;
  u->b = b;
  u->n = mi_sdk_numel(mi__blis_tensor(p, u->out));
  s->run = run_unary;
  return MI_OK;
}

/* ---- BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + bias */

typedef struct bn_state {
  int32_t in, out;
  int64_t n, c, inner;
  float *ab; /* c scales then c shifts, in s->aux */
} bn_state_t;

typedef struct bn_task {
  const bn_state_t *b;
  const float *x, *sc, *sh;
  float *y;
} bn_task_t;

/* Items are (image, channel) planes. */
static void bn_part(void *arg, int64_t p0, int64_t p1) {
  const bn_task_t *bt = arg;
  int64_t p, k, inner = bt->b->inner;
  for (p = p0; p < p1; p++) {
    const float *xi = bt->x + p * inner;
    float *yi = bt->y + p * inner, sc = bt->sc[p % bt->b->c], sh = bt->sh[p % bt->b->c];
    for (k = 0; k < inner; k++) yi[k] = xi[k] * sc + sh;
  }
}

static int32_t run_bn(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                      mi_error_t *err) {
  bn_task_t bt;
  bt.b = s->state;
  bt.x = t[bt.b->in];
  bt.sc = s->aux;
  bt.sh = (const float *)s->aux + bt.b->c;
  bt.y = t[bt.b->out];
  (void)err;
  mi__blis_parallel(env, bt.b->n * bt.b->c, 1, bt.b->inner, bn_part, &bt);
  return MI_OK;
}

/* Folds BN's four constant inputs into per-channel scale/shift; 0 if they are not constant. */
int mi__blis_bn_fold(const mi__blis_prep_t *p, const mi_node_desc_t *n, int64_t c, float *scale,
                     float *shift) {
  const mi_tensor_desc_t *g = mi__blis_tensor(p, mi__blis_in(n, 1)), *bb = mi__blis_tensor(p, mi__blis_in(n, 2));
  const mi_tensor_desc_t *m = mi__blis_tensor(p, mi__blis_in(n, 3)), *v = mi__blis_tensor(p, mi__blis_in(n, 4));
  float eps = mi_sdk_attr_float(n, "epsilon", 1e-5f);
  int64_t j;
  if (!g || !bb || !m || !v || !g->data || !bb->data || !m->data || !v->data) return 0;
  if (mi_sdk_numel(g) != c || mi_sdk_numel(bb) != c || mi_sdk_numel(m) != c || mi_sdk_numel(v) != c) return 0;
  if (mi_sdk_attr_int(n, "training_mode", 0) != 0) return 0;
  for (j = 0; j < c; j++) {
    float gs = ((const float *)g->data)[j] / sqrtf(((const float *)v->data)[j] + eps);
    scale[j] = gs;
    shift[j] = ((const float *)bb->data)[j] - ((const float *)m->data)[j] * gs;
  }
  return 1;
}

int32_t mi__blis_prep_bn(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  bn_state_t *b;
  int32_t i;
  if (!x || x->rank < 2) return mi__blis_unsupported(err, n, "input rank < 2");
  if (n->output_count > 1 && mi__blis_out(n, 1) >= 0)
    return mi__blis_unsupported(err, n, "training-mode outputs");
  if (!(b = mi__blis_state_new(p, s, sizeof *b, err))) return MI_ERR_OUT_OF_MEMORY;
  b->in = mi__blis_in(n, 0);
  b->out = mi__blis_out(n, 0);
  b->n = x->dims[0];
  b->c = x->dims[1];
  b->inner = 1;
  for (i = 2; i < x->rank; i++) b->inner *= x->dims[i];
  s->aux = mi__blis_alloc(p->ctx, (uint64_t)(2 * b->c) * sizeof(float));
  if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  if (!mi__blis_bn_fold(p, n, b->c, s->aux, (float *)s->aux + b->c))
    return mi__blis_unsupported(err, n, "scale/bias/mean/var must be constants of C elements");
  s->run = run_bn;
  return MI_OK;
}

/* ---- binary ops with numpy broadcasting */

enum { B_ADD,
       B_SUB,
       B_MUL,
       B_DIV,
       B_POW,
       B_MAX,
       B_MIN,
       B_PRELU,
       B_FMOD,
       B_MULADD_A,   /* A + A * B: a Mul and the Add of its result to its first input */
       B_MULADD_B }; /* B + A * B */

typedef struct bin_state {
  int32_t a, b, out, op, rank, simd;
  int32_t want_range; /* the output is the kernel's: its range found per piece, in L1 (blis_range.c) */
  int64_t dims[MI_MAX_RANK], sa[MI_MAX_RANK], sb[MI_MAX_RANK];
  int64_t n;
} bin_state_t;

static inline __attribute__((always_inline)) void bin_row(int32_t op, const float *a, int64_t sa,
                                                          const float *b, int64_t sb, float *y,
                                                          int64_t n) {
  int64_t i;
  /* The common stride patterns as their own loops, which the compiler vectorises: both operands
   * contiguous, or one of them a scalar broadcast over the row. */
  if (op <= B_DIV && sa == 1 && (sb == 1 || sb == 0)) {
    float bv = b[0];
    if (sb == 1) {
      switch (op) {
      case B_ADD:
        for (i = 0; i < n; i++) y[i] = a[i] + b[i];
        return;
      case B_SUB:
        for (i = 0; i < n; i++) y[i] = a[i] - b[i];
        return;
      case B_MUL:
        for (i = 0; i < n; i++) y[i] = a[i] * b[i];
        return;
      default:
        for (i = 0; i < n; i++) y[i] = a[i] / b[i];
        return;
      }
    }
    switch (op) {
    case B_ADD:
      for (i = 0; i < n; i++) y[i] = a[i] + bv;
      return;
    case B_SUB:
      for (i = 0; i < n; i++) y[i] = a[i] - bv;
      return;
    case B_MUL:
      for (i = 0; i < n; i++) y[i] = a[i] * bv;
      return;
    default:
      for (i = 0; i < n; i++) y[i] = a[i] / bv;
      return;
    }
  }
  if (op == B_MULADD_A || op == B_MULADD_B) {
    /* the product rounded, then the sum (no contraction in C11): the two ops' own roundings */
    if (op == B_MULADD_A && sa == 1 && sb == 0) {
      float bv = b[0];
      for (i = 0; i < n; i++) y[i] = a[i] + a[i] * bv;
    } else if (op == B_MULADD_B && sa == 0 && sb == 1) {
      float av = a[0];
      for (i = 0; i < n; i++) y[i] = b[i] + av * b[i];
    } else if (op == B_MULADD_A) {
      for (i = 0; i < n; i++) y[i] = a[i * sa] + a[i * sa] * b[i * sb];
    } else {
      for (i = 0; i < n; i++) y[i] = b[i * sb] + a[i * sa] * b[i * sb];
    }
    return;
  }
  if (op == B_POW && sb == 0 && b[0] == 2.0f) {
    /* x^2 (power spectra, variances): powf of 2 is the correctly rounded square, x * x's bits */
    for (i = 0; i < n; i++) y[i] = a[i * sa] * a[i * sa];
    return;
  }
  if (op <= B_DIV && sa == 0 && sb == 1) {
    float av = a[0];
    switch (op) {
    case B_ADD:
      for (i = 0; i < n; i++) y[i] = av + b[i];
      return;
    case B_SUB:
      for (i = 0; i < n; i++) y[i] = av - b[i];
      return;
    case B_MUL:
      for (i = 0; i < n; i++) y[i] = av * b[i];
      return;
    default:
      for (i = 0; i < n; i++) y[i] = av / b[i];
      return;
    }
  }
  switch (op) {
  case B_ADD:
    for (i = 0; i < n; i++) y[i] = a[i * sa] + b[i * sb];
    break;
  case B_SUB:
    for (i = 0; i < n; i++) y[i] = a[i * sa] - b[i * sb];
    break;
  case B_MUL:
    for (i = 0; i < n; i++) y[i] = a[i * sa] * b[i * sb];
    break;
  case B_DIV:
    for (i = 0; i < n; i++) y[i] = a[i * sa] / b[i * sb];
    break;
  case B_POW:
    for (i = 0; i < n; i++) y[i] = powf(a[i * sa], b[i * sb]);
    break;
  case B_MAX:
    for (i = 0; i < n; i++) y[i] = fmaxf(a[i * sa], b[i * sb]);
    break;
  case B_PRELU:
    for (i = 0; i < n; i++) y[i] = a[i * sa] < 0 ? a[i * sa] * b[i * sb] : a[i * sa];
    break;
  case B_FMOD:
    for (i = 0; i < n; i++) y[i] = fmodf(a[i * sa], b[i * sb]);
    break;
  default:
    for (i = 0; i < n; i++) y[i] = fminf(a[i * sa], b[i * sb]);
    break;
  }
}

typedef struct bin_task {
  const bin_state_t *st;
  const float *a, *b;
  float *y;
  int64_t piece, per;   /* items are pieces of `piece` values of a row, `per` a row */
  mi__blis_range_t *rg; /* the output's range, merged per part; NULL: not wanted */
} bin_task_t;

/* A row longer than this is split in pieces of BIN_PIECE values, so that a tensor whose dims
 * merge into one row (M-LSD's input scaling, [1,320,320,4] - scalar: 409600 values) still splits
 * over the threads instead of running on one. A multiple of 16: each piece starts on the same
 * vector boundary within the row as the unsplit loop's, so every value is computed alike. */
#define BIN_PIECE 4096

/* Items are pieces of output rows (last dim): `per` a row, one where the rows are short; the first
 * row's index is unravelled, then counted up. One body for three targets: the row loops vectorise
 * 8 or 16 wide where the CPU has it (an SE gate's [1,C,H,W] * [1,C,1,1] runs at memory speed, not
 * at SSE2's width). */
static inline __attribute__((always_inline)) void bin_body(void *arg, int64_t i0, int64_t i1) {
  const bin_task_t *bt = arg;
  const bin_state_t *st = bt->st;
  const float *a = bt->a, *b = bt->b;
  float *y = bt->y;
  int64_t idx[MI_MAX_RANK] = {0}, inner = st->dims[st->rank - 1], sa = st->sa[st->rank - 1];
  int64_t sb = st->sb[st->rank - 1], r = i0 / bt->per, rem = r, i;
  int32_t d;
  float lo = 0.f, hi = 0.f;
  for (d = st->rank - 2; d >= 0; d--) {
    idx[d] = rem % st->dims[d];
    rem /= st->dims[d];
  }
  for (i = i0; i < i1; r++, i = r * bt->per) {
    int64_t oa = 0, ob = 0, j0 = (i - r * bt->per) * bt->piece, j1 = (i1 - r * bt->per) * bt->piece;
    if (j1 > inner) j1 = inner;
    for (d = 0; d < st->rank - 1; d++) {
      oa += idx[d] * st->sa[d];
      ob += idx[d] * st->sb[d];
    }
    if (!bt->rg)
      bin_row(st->op, a + oa + j0 * sa, sa, b + ob + j0 * sb, sb, y + r * inner + j0, j1 - j0);
    else /* a piece at a time (a part's pieces of one row are one call otherwise), its range read
          * back while it is in L1; pieces start on BIN_PIECE boundaries, so the values are the same */
      for (int64_t j = j0, e; j < j1; j = e) {
        e = j1 - j > BIN_PIECE ? j + BIN_PIECE : j1;
        bin_row(st->op, a + oa + j * sa, sa, b + ob + j * sb, sb, y + r * inner + j, e - j);
        mi__blis_minmax(st->simd, y + r * inner + j, e - j, &lo, &hi);
      }
    mi__blis_next_index(st->rank - 1, st->dims, NULL, idx, NULL);
  }
  if (bt->rg) mi__blis_range_merge(bt->rg, lo, hi);
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void bin_avx512(void *arg, int64_t r0, int64_t r1) {
  bin_body(arg, r0, r1);
}
__attribute__((target("avx2"))) static void bin_avx2(void *arg, int64_t r0, int64_t r1) { bin_body(arg, r0, r1); }
static void bin_c(void *arg, int64_t r0, int64_t r1) { bin_body(arg, r0, r1); }

static int32_t run_binary(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  bin_task_t bt;
  int64_t inner;
  bt.st = s->state;
  bt.a = t[bt.st->a];
  bt.b = t[bt.st->b];
  bt.y = t[bt.st->out];
  bt.rg = bt.st->want_range && env->range[bt.st->out].asked ? &env->range[bt.st->out] : NULL;
  inner = bt.st->dims[bt.st->rank - 1];
  (void)err;
  if (inner <= 0) return MI_OK;
  bt.piece = inner > 2 * BIN_PIECE ? BIN_PIECE : inner;
  bt.per = (inner + bt.piece - 1) / bt.piece;
  mi__blis_parallel(env, bt.st->n / inner * bt.per, bt.per > 1 || inner >= 1024 ? 1 : 4096 / inner, bt.piece,
                    bt.st->simd == MI__SIMD_AVX512 ? bin_avx512 : bt.st->simd == MI__SIMD_AVX2 ? bin_avx2
                                                                                               : bin_c,
                    &bt);
  if (bt.rg) bt.rg->known = 1;
  return MI_OK;
}

/* Broadcast strides of `t` against output dims (right-aligned, 0 where the dim is 1). */
static void bcast_strides(const mi_tensor_desc_t *t, int32_t rank, const int64_t *dims, int64_t *st) {
  int64_t stride = 1;
  int32_t d, td;
  for (d = rank - 1; d >= 0; d--) {
    td = d - (rank - t->rank);
    if (td < 0 || t->dims[td] == 1) st[d] = 0;
    else {
      st[d] = stride;
      stride *= t->dims[td];
    }
    (void)dims;
  }
}

/* A Mul whose result only an Add of the kernel reads, the Add's other operand one of the Mul's
 * (an SE block's x + x * gate, the host's group): one pass writing the Add's output, instead of
 * the product written and read back. */
static void mul_add(mi__blis_prep_t *p, bin_state_t *st, const mi_tensor_desc_t *ty) {
  const mi_node_desc_t *n = mi__blis_node(p, 0), *m = mi__blis_node(p, 1);
  const mi_tensor_desc_t *tz;
  int32_t prod = mi__blis_out(n, 0), other, i;
  if (st->op != B_MUL || !m || strcmp(m->op_type, "Add") || m->input_count != 2 || m->output_count != 1 ||
      mi__blis_is_kernel_output(p, prod) || mi__blis_consumers(p, prod) != 1)
    return;
  if (m->inputs[0] == prod) other = m->inputs[1];
  else if (m->inputs[1] == prod)
    other = m->inputs[0];
  else
    return;
  if ((other != st->a && other != st->b) || other == prod || !(tz = mi__blis_tensor(p, m->outputs[0])) ||
      tz->dtype != MI_DTYPE_FLOAT32 || tz->rank != ty->rank)
    return;
  for (i = 0; i < ty->rank; i++)
    if (tz->dims[i] != ty->dims[i]) return;
  st->op = other == st->a ? B_MULADD_A : B_MULADD_B;
  st->out = m->outputs[0];
  p->nodes_used = 2;
}

int32_t mi__blis_prep_binary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu", "Mod"};
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *ta, *tb, *ty;
  bin_state_t *st;
  int32_t i;
  if (n->input_count != 2) return mi__blis_unsupported(err, n, "only two inputs are supported");
  ta = mi__blis_tensor(p, mi__blis_in(n, 0));
  tb = mi__blis_tensor(p, mi__blis_in(n, 1));
  ty = mi__blis_tensor(p, mi__blis_out(n, 0));
  if (!ta || !tb || !ty) return mi__blis_unsupported(err, n, "missing operand");
  if (mi__blis_is_q8(ta) || mi__blis_is_q8(tb)) return mi__blis_prep_qbinary(p, s, err); /* lowered QDQ */
  if (ta->dtype != MI_DTYPE_FLOAT32 || tb->dtype != MI_DTYPE_FLOAT32)
    return mi__blis_unsupported(err, n, "operands must be FLOAT32");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  for (i = 0; i < 9; i++)
    if (strcmp(n->op_type, names[i]) == 0) st->op = i;
  if (st->op == B_FMOD && mi_sdk_attr_int(n, "fmod", 0) == 0)
    return mi__blis_unsupported(err, n, "FLOAT32 Mod needs fmod=1");
  if (st->op == B_PRELU) {
    /* Unidirectional: the slope broadcasts to X, never the other way. */
    if (ta->rank != ty->rank) return mi__blis_unsupported(err, n, "slope does not broadcast to the input shape");
    for (i = 0; i < ta->rank; i++)
      if (ta->dims[i] != ty->dims[i]) return mi__blis_unsupported(err, n, "slope does not broadcast to the input shape");
  }
  st->a = mi__blis_in(n, 0);
  st->b = mi__blis_in(n, 1);
  st->out = mi__blis_out(n, 0);
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  st->rank = ty->rank > 0 ? ty->rank : 1;
  for (i = 0; i < st->rank; i++) st->dims[i] = ty->rank > 0 ? ty->dims[i] : 1;
  for (i = 0; i < ta->rank; i++)
    if (ta->dims[i] != 1 && ta->dims[i] != st->dims[i + st->rank - ta->rank])
      return mi__blis_unsupported(err, n, "shapes do not broadcast to the output");
  for (i = 0; i < tb->rank; i++)
    if (tb->dims[i] != 1 && tb->dims[i] != st->dims[i + st->rank - tb->rank])
      return mi__blis_unsupported(err, n, "shapes do not broadcast to the output");
  bcast_strides(ta, st->rank, st->dims, st->sa);
  bcast_strides(tb, st->rank, st->dims, st->sb);
  st->n = mi_sdk_numel(ty);
  mul_add(p, st, ty);
  /* Merge the last two dims while each operand walks them as one (contiguous or broadcast over
   * both): [1,C,H,W] * [1,C,1,1] runs as C rows of H*W instead of C*H rows of W. A last dim of 1
   * goes first: M-LSD's [1,160,160,1] * [1,160,160,1] ran as 25600 rows of one value, 0.13 ms. */
  while (st->rank > 1) {
    int32_t d = st->rank - 2;
    int64_t w = st->dims[d + 1];
    int ok_a = (st->sa[d] == 0 && st->sa[d + 1] == 0) || (st->sa[d + 1] != 0 && st->sa[d] == st->sa[d + 1] * w);
    int ok_b = (st->sb[d] == 0 && st->sb[d + 1] == 0) || (st->sb[d + 1] != 0 && st->sb[d] == st->sb[d + 1] * w);
    if (w == 1) { /* the row is one value: drop the dim, the rows keep their strides */
      st->rank--;
      continue;
    }
    if (!ok_a || !ok_b) break;
    st->dims[d] *= w;
    st->sa[d] = st->sa[d + 1];
    st->sb[d] = st->sb[d + 1];
    st->rank--;
  }
  st->want_range = mi__blis_is_kernel_output(p, st->out); /* after mul_add, which may move st->out */
  s->run = run_binary;
  return MI_OK;
}

/* ---- Sum / Mean of any number of inputs, folded left to right with broadcasting as the
 * reference does (Mean divides the sum by the input count at the end). */

typedef struct nary_state {
  int32_t out, count, rank, mean;
  int32_t in[16];
  int64_t dims[MI_MAX_RANK], st[16][MI_MAX_RANK];
  int64_t n;
} nary_state_t;

static int32_t run_nary(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  const nary_state_t *c = s->state;
  float *y = t[c->out];
  int32_t k;
  int64_t i;
  (void)env;
  (void)err;
  for (k = 0; k < c->count; k++) {
    const float *x = t[c->in[k]];
    int64_t idx[MI_MAX_RANK] = {0}, off = 0;
    for (i = 0; i < c->n; i++) {
      y[i] = k == 0 ? x[off] : y[i] + x[off];
      mi__blis_next_index(c->rank, c->dims, c->st[k], idx, &off);
    }
  }
  if (c->mean)
    for (i = 0; i < c->n; i++) y[i] /= (float)c->count;
  return MI_OK;
}

int32_t mi__blis_prep_nary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *ty = mi__blis_tensor(p, mi__blis_out(n, 0));
  nary_state_t *c;
  int32_t k, i;
  if (!ty || ty->dtype != MI_DTYPE_FLOAT32) return mi__blis_unsupported(err, n, "output must be FLOAT32");
  if (n->input_count < 1 || n->input_count > 16) return mi__blis_unsupported(err, n, "1..16 inputs");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->out = mi__blis_out(n, 0);
  c->mean = strcmp(n->op_type, "Mean") == 0;
  c->count = n->input_count;
  c->rank = ty->rank > 0 ? ty->rank : 1;
  for (i = 0; i < c->rank; i++) c->dims[i] = ty->rank > 0 ? ty->dims[i] : 1;
  c->n = mi_sdk_numel(ty);
  for (k = 0; k < n->input_count; k++) {
    const mi_tensor_desc_t *tx = mi__blis_tensor(p, mi__blis_in(n, k));
    if (!tx || tx->dtype != MI_DTYPE_FLOAT32 || tx->rank > c->rank) return mi__blis_unsupported(err, n, "inputs must be FLOAT32");
    for (i = 0; i < tx->rank; i++)
      if (tx->dims[i] != 1 && tx->dims[i] != c->dims[i + c->rank - tx->rank])
        return mi__blis_unsupported(err, n, "shapes do not broadcast to the output");
    c->in[k] = mi__blis_in(n, k);
    bcast_strides(tx, c->rank, c->dims, c->st[k]);
  }
  s->run = run_nary;
  return MI_OK;
}
