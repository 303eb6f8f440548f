/* blis_nn.c - Softmax, LayerNormalization, pooling and reductions. */
#include <math.h>
#include <string.h>

#include "blis_conv.h"

typedef struct norm_state {
  int32_t x, y, scale, bias;
  int64_t outer, len, inner; /* softmax: reduce over len with stride inner */
  int32_t simd;              /* softmax: MI__SIMD_* level of the contiguous rows */
  int32_t is_log;            /* LogSoftmax */
  float eps;
  int32_t act; /* LayerNormalization: an activation after it in the group (MI__ACT_*), 0: none */
  float act_a, act_b;
} norm_state_t;

/* Items are outer slices; each normalises its inner columns alone. */
static void softmax_part(void *arg, int64_t o0, int64_t o1) {
  const mi__blis_task_t *nt = arg;
  const norm_state_t *st = nt->state;
  const float *x = nt->t[st->x];
  float *y = nt->t[st->y];
  int64_t o, i, j;
  for (o = o0; o < o1; o++)
    for (i = 0; i < st->inner; i++) {
      const float *xr = x + o * st->len * st->inner + i;
      float *yr = y + o * st->len * st->inner + i, mx = -INFINITY, sum = 0.f;
      if (st->is_log) {
        /* As the reference: the sum in double, y = (x - max) - log(sum). */
        double dsum = 0.0, lg;
        for (j = 0; j < st->len; j++) mx = fmaxf(mx, xr[j * st->inner]);
        for (j = 0; j < st->len; j++) dsum += exp((double)(xr[j * st->inner] - mx));
        lg = log(dsum);
        for (j = 0; j < st->len; j++) yr[j * st->inner] = (float)((xr[j * st->inner] - mx) - lg);
        continue;
      }
      if (st->inner == 1 && mi__blis_softmax_simd(st->simd, xr, yr, st->len)) continue;
      for (j = 0; j < st->len; j++) mx = fmaxf(mx, xr[j * st->inner]);
      for (j = 0; j < st->len; j++) sum += (yr[j * st->inner] = expf(xr[j * st->inner] - mx));
      for (j = 0; j < st->len; j++) yr[j * st->inner] /= sum;
    }
}

static int32_t run_softmax(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                           mi_error_t *err) {
  const norm_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer, 1, st->len * st->inner * 8, softmax_part);
}

int32_t mi__blis_prep_softmax(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  norm_state_t *st = mi__blis_state_new(p, s, sizeof *st, err);
  int64_t axis;
  if (!st) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->is_log = strcmp(n->op_type, "LogSoftmax") == 0;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  axis = mi_sdk_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
  if (!x || !mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner))
    return mi__blis_unsupported(err, n, "axis out of range");
  if (n->opset < 13) {
    /* Before opset 13 the input is flattened to 2-D at axis: one softmax per row. */
    st->len *= st->inner;
    st->inner = 1;
  }
  s->run = run_softmax;
  return MI_OK;
}

/* Mean and variance in double over eight interleaved partial sums (a fixed order, so the result
 * does not depend on the thread split), combined pairwise; one body for three targets. */
static inline __attribute__((always_inline)) void layernorm_body(const mi__blis_task_t *nt, int64_t o0, int64_t o1) {
  const norm_state_t *st = nt->state;
  void *const *t = nt->t;
  const float *x = t[st->x], *g = st->scale >= 0 ? t[st->scale] : NULL, *b = st->bias >= 0 ? t[st->bias] : NULL;
  float *y = t[st->y];
  int64_t o, j, l, len = st->len, body = len / 8 * 8;
  for (o = o0; o < o1; o++) {
    const float *xr = x + o * len;
    float *yr = y + o * len;
    double ps[8] = {0}, pv[8] = {0}, mean, var;
    float inv, mf;
    for (j = 0; j < body; j += 8)
      for (l = 0; l < 8; l++) ps[l] += xr[j + l];
    for (l = 0; j + l < len; l++) ps[l] += xr[j + l];
    mean = (((ps[0] + ps[4]) + (ps[2] + ps[6])) + ((ps[1] + ps[5]) + (ps[3] + ps[7]))) / (double)len;
    for (j = 0; j < body; j += 8)
      for (l = 0; l < 8; l++) pv[l] += (xr[j + l] - mean) * (xr[j + l] - mean);
    for (l = 0; j + l < len; l++) pv[l] += (xr[j + l] - mean) * (xr[j + l] - mean);
    var = (((pv[0] + pv[4]) + (pv[2] + pv[6])) + ((pv[1] + pv[5]) + (pv[3] + pv[7]))) / (double)len;
    inv = (float)(1.0 / sqrt(var + st->eps));
    mf = (float)mean;
    /* One loop per operand set: a NULL test inside the loop became a masked load from address
     * 0 with an empty mask, which AMD Zen 4 takes through a microcode assist each time (84% of a
     * scale-only LayerNormalization's time, 2.4 GB/s). */
    if (g && b)
      for (j = 0; j < len; j++) yr[j] = (xr[j] - mf) * inv * g[j] + b[j];
    else if (g)
      for (j = 0; j < len; j++) yr[j] = (xr[j] - mf) * inv * g[j];
    else if (b)
      for (j = 0; j < len; j++) yr[j] = (xr[j] - mf) * inv + b[j];
    else
      for (j = 0; j < len; j++) yr[j] = (xr[j] - mf) * inv;
    if (st->act) mi__blis_act_apply(st->act, st->act_a, st->act_b, yr, len); /* on the row in cache */
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void layernorm_avx512(void *arg, int64_t o0, int64_t o1) {
  layernorm_body(arg, o0, o1);
}
__attribute__((target("avx2,fma"))) static void layernorm_avx2(void *arg, int64_t o0, int64_t o1) {
  layernorm_body(arg, o0, o1);
}
static void layernorm_c(void *arg, int64_t o0, int64_t o1) { layernorm_body(arg, o0, o1); }

static int32_t run_layernorm(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                             mi_error_t *err) {
  const norm_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer, 1, st->len * st->inner * 8,
                            st->simd == MI__SIMD_AVX512 ? layernorm_avx512
                            : st->simd == MI__SIMD_AVX2 ? layernorm_avx2
                                                        : layernorm_c);
}

/* The state LayerNormalization and InstanceNormalization share: X, Scale, B, Y and epsilon, with
 * outer, len and inner split around `axis` (the first normalised one). */
static int32_t norm_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n,
                        const mi_tensor_desc_t *x, int64_t axis, norm_state_t **out, mi_error_t *err) {
  norm_state_t *st = *out = mi__blis_state_new(p, s, sizeof *st, err);
  if (!st) return MI_ERR_OUT_OF_MEMORY;
  if (x->rank < 1 || !mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner))
    return mi__blis_unsupported(err, n, "axis out of range");
  st->x = mi__blis_in(n, 0);
  st->scale = mi__blis_in(n, 1);
  st->bias = mi__blis_in(n, 2);
  st->y = mi__blis_out(n, 0);
  st->eps = mi_sdk_attr_float(n, "epsilon", 1e-5f);
  return MI_OK;
}

int32_t mi__blis_prep_layernorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  norm_state_t *st;
  int32_t rc;
  if (!x) return mi__blis_unsupported(err, n, "missing input");
  if (mi__blis_out(n, 1) >= 0 || mi__blis_out(n, 2) >= 0)
    return mi__blis_unsupported(err, n, "Mean/InvStdDev outputs");
  if (mi_sdk_attr_int(n, "stash_type", 1) != 1) return mi__blis_unsupported(err, n, "stash_type");
  if ((rc = norm_new(p, s, n, x, mi_sdk_attr_int(n, "axis", -1), &st, err)) != MI_OK) return rc;
  /* normalised over the axis and all after it */
  st->len *= st->inner;
  st->inner = 1;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  if ((st->scale >= 0 && mi_sdk_numel(mi__blis_tensor(p, st->scale)) != st->len) ||
      (st->bias >= 0 && mi_sdk_numel(mi__blis_tensor(p, st->bias)) != st->len))
    return mi__blis_unsupported(err, n, "scale/bias must cover the normalized dims exactly");
  {
    /* the activation that alone reads Y in the same group (a Linear's chain, plan.c) */
    const mi_node_desc_t *f = mi__blis_node(p, 1);
    if (f && f->input_count >= 1 && f->inputs[0] == st->y && f->output_count == 1 &&
        !mi__blis_is_kernel_output(p, st->y) && mi__blis_consumers(p, st->y) == 1 &&
        mi__blis_act_of(p, f, &st->act, &st->act_a, &st->act_b) && st->act != MI__ACT_NONE) {
      st->y = f->outputs[0];
      p->nodes_used = 2;
    } else {
      st->act = MI__ACT_NONE;
    }
  }
  s->run = run_layernorm;
  return MI_OK;
}

/* ---- reductions over any set of axes */

typedef struct reduce_state {
  int32_t x, y, op, rank;
  int64_t dims[MI_MAX_RANK], ostride[MI_MAX_RANK]; /* ostride 0 on reduced axes */
  int64_t n, on, count;
} reduce_state_t;

enum { R_MEAN,
       R_MAX,
       R_MIN,
       R_SUM,
       R_PROD,
       R_L2,
       R_LSE,
       R_L1,
       R_SSQ,
       R_LOGSUM };

/* ReduceProd, ReduceL2, ReduceLogSumExp, ReduceL1, ReduceSumSquare, ReduceLogSum: accumulated in
 * double as the reference does (LogSumExp as log(sum(exp(v - max))) + max); s->aux holds on
 * accumulators and on maxima. */
static int32_t run_reduce_d(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                            mi_error_t *err) {
  const reduce_state_t *r = s->state;
  const float *x = t[r->x];
  float *y = t[r->y];
  double *acc = s->aux, *mx = acc + r->on;
  int64_t idx[MI_MAX_RANK] = {0}, i, o = 0;
  int32_t pass;
  (void)env;
  (void)err;
  for (i = 0; i < r->on; i++) {
    acc[i] = r->op == R_PROD ? 1.0 : 0.0;
    mx[i] = -INFINITY;
  }
  /* LogSumExp walks the input twice: the maxima first. */
  for (pass = r->op == R_LSE ? 0 : 1; pass < 2; pass++) {
    for (i = 0; i < r->n; i++) {
      double v = x[i];
      if (pass == 0) {
        if (v > mx[o]) mx[o] = v;
      } else if (r->op == R_PROD) {
        acc[o] *= v;
      } else if (r->op == R_L2 || r->op == R_SSQ) {
        acc[o] += v * v;
      } else if (r->op == R_L1) {
        acc[o] += fabs(v);
      } else if (r->op == R_LOGSUM) {
        acc[o] += v;
      } else {
        acc[o] += isinf(mx[o]) ? exp(v) : exp(v - mx[o]);
      }
      mi__blis_next_index(r->rank, r->dims, r->ostride, idx, &o);
    }
  }
  for (i = 0; i < r->on; i++) {
    double v = acc[i];
    if (r->op == R_L2) v = sqrt(v);
    if (r->op == R_LOGSUM) v = log(v);
    if (r->op == R_LSE) v = isinf(mx[i]) ? log(v) : log(v) + mx[i];
    y[i] = (float)v;
  }
  return MI_OK;
}

static int32_t run_reduce(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  const reduce_state_t *r = s->state;
  const float *x = t[r->x];
  float *y = t[r->y];
  int64_t idx[MI_MAX_RANK] = {0}, i, o = 0;
  for (i = 0; i < r->on; i++) y[i] = r->op == R_MAX ? -INFINITY : r->op == R_MIN ? INFINITY
                                                                                 : 0.f;
  for (i = 0; i < r->n; i++) {
    float v = x[i];
    if (r->op == R_MAX) y[o] = fmaxf(y[o], v);
    else if (r->op == R_MIN)
      y[o] = fminf(y[o], v);
    else
      y[o] += v;
    mi__blis_next_index(r->rank, r->dims, r->ostride, idx, &o);
  }
  if (r->op == R_MEAN)
    for (i = 0; i < r->on; i++) y[i] /= (float)r->count;
  return MI_OK;
}

int32_t mi__blis_prep_reduce(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  reduce_state_t *r;
  int64_t axes[MI_MAX_RANK], stride = 1;
  int32_t na = 0, d, i, red[MI_MAX_RANK] = {0};
  const mi_attr_t *aa = mi_sdk_attr(n, "axes");
  const mi_tensor_desc_t *yt = mi__blis_tensor(p, mi__blis_out(n, 0));
  if (!x || x->rank < 1) return mi__blis_unsupported(err, n, "input rank < 1");
  /* the loops read and write floats: integer reductions stay on the host */
  if (x->dtype != MI_DTYPE_FLOAT32 || !yt || yt->dtype != MI_DTYPE_FLOAT32)
    return mi__blis_unsupported(err, n, "input and output must be FLOAT32");
  if (aa && aa->type == MI_ATTR_INTS && aa->count <= MI_MAX_RANK) {
    na = aa->count;
    for (i = 0; i < na; i++) axes[i] = aa->ints[i];
  } else if (mi__blis_in(n, 1) >= 0) {
    na = mi__blis_const_ints(p, mi__blis_in(n, 1), axes, MI_MAX_RANK);
    if (na < 0) return mi__blis_unsupported(err, n, "axes must be a constant");
  }
  if (na == 0 && mi_sdk_attr_int(n, "noop_with_empty_axes", 0))
    return mi__blis_unsupported(err, n, "noop_with_empty_axes");
  for (i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
    if (a < 0 || a >= x->rank) return mi__blis_unsupported(err, n, "axis out of range");
    red[a] = 1;
  }
  {
    /* ReduceL1/SumSquare/LogSum over trailing axes (dims of size 1 aside): contiguous rows, each
     * on the pool in eight double partials (blis_gnorm.c) instead of the serial loop below */
    int32_t kind = !strcmp(n->op_type, "ReduceL1") ? 0 : !strcmp(n->op_type, "ReduceSumSquare") ? 1
                                                     : !strcmp(n->op_type, "ReduceLogSum")      ? 2
                                                                                                : -1;
    int64_t rows = 1;
    int seen_red = 0, trailing = 1;
    for (d = 0; d < x->rank; d++) {
      int rd = na == 0 || red[d];
      if (x->dims[d] == 1) continue;
      if (rd) seen_red = 1;
      else if (seen_red)
        trailing = 0;
      else
        rows *= x->dims[d];
    }
    if (kind >= 0 && trailing && mi_sdk_numel(x) > 0 && mi_sdk_numel(yt) == rows)
      return mi__blis_prep_reduce_rows(p, s, kind, rows, mi_sdk_numel(x) / rows, mi__blis_in(n, 0), mi__blis_out(n, 0),
                                       err);
  }
  if (!(r = mi__blis_state_new(p, s, sizeof *r, err))) return MI_ERR_OUT_OF_MEMORY;
  r->op = strcmp(n->op_type, "ReduceMean") == 0 ? R_MEAN : strcmp(n->op_type, "ReduceMax") == 0     ? R_MAX
                                                       : strcmp(n->op_type, "ReduceMin") == 0       ? R_MIN
                                                       : strcmp(n->op_type, "ReduceProd") == 0      ? R_PROD
                                                       : strcmp(n->op_type, "ReduceL2") == 0        ? R_L2
                                                       : strcmp(n->op_type, "ReduceLogSumExp") == 0 ? R_LSE
                                                       : strcmp(n->op_type, "ReduceL1") == 0        ? R_L1
                                                       : strcmp(n->op_type, "ReduceSumSquare") == 0 ? R_SSQ
                                                       : strcmp(n->op_type, "ReduceLogSum") == 0    ? R_LOGSUM
                                                                                                    : R_SUM;
  r->x = mi__blis_in(n, 0);
  r->y = mi__blis_out(n, 0);
  r->rank = x->rank;
  r->count = 1;
  for (d = x->rank - 1; d >= 0; d--) {
    r->dims[d] = x->dims[d];
    if (na == 0 || red[d]) {
      r->ostride[d] = 0;
      r->count *= x->dims[d];
    } else {
      r->ostride[d] = stride;
      stride *= x->dims[d];
    }
  }
  r->n = mi_sdk_numel(x);
  r->on = stride;
  if (r->on != mi_sdk_numel(mi__blis_tensor(p, r->y))) return mi__blis_unsupported(err, n, "output size");
  s->run = run_reduce;
  if (r->op >= R_PROD) {
    if (!(s->aux = mi__blis_alloc(p->ctx, (uint64_t)(2 * r->on + 1) * sizeof(double))))
      return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    s->run = run_reduce_d;
  }
  return MI_OK;
}

/* ---- InstanceNormalization: each (n, c) plane by its own mean and biased variance, in double
 * as the reference computes them. */

/* Mean and variance in double over eight interleaved partial sums, as layernorm_body: a fixed
 * order the compiler vectorises (one running double sum per plane was a chain of dependent adds:
 * a one-group GroupNorm over 360K values, 3.7 GB/s); y in float from the float mean and factor. */
static inline __attribute__((always_inline)) void instnorm_body(const mi__blis_task_t *nt, int64_t p0, int64_t p1) {
  const norm_state_t *st = nt->state;
  const float *x = nt->t[st->x], *sc = nt->t[st->scale], *bi = nt->t[st->bias];
  float *y = nt->t[st->y];
  int64_t pl, j, l, n = st->inner, body = n / 8 * 8;
  for (pl = p0; pl < p1; pl++) {
    const float *xp = x + pl * n;
    float *yp = y + pl * n;
    int64_t ch = pl % st->len;
    double ps[8] = {0}, pv[8] = {0}, mean = 0, var = 0;
    float mf, kf, bf = bi[ch];
    for (j = 0; j < body; j += 8)
      for (l = 0; l < 8; l++) ps[l] += xp[j + l];
    for (l = 0; j + l < n; l++) ps[l] += xp[j + l];
    if (n) mean = (((ps[0] + ps[4]) + (ps[2] + ps[6])) + ((ps[1] + ps[5]) + (ps[3] + ps[7]))) / (double)n;
    for (j = 0; j < body; j += 8)
      for (l = 0; l < 8; l++) pv[l] += (xp[j + l] - mean) * (xp[j + l] - mean);
    for (l = 0; j + l < n; l++) pv[l] += (xp[j + l] - mean) * (xp[j + l] - mean);
    if (n) var = (((pv[0] + pv[4]) + (pv[2] + pv[6])) + ((pv[1] + pv[5]) + (pv[3] + pv[7]))) / (double)n;
    mf = (float)mean;
    kf = (float)(sc[ch] / sqrt(var + st->eps));
    for (j = 0; j < n; j++) yp[j] = (xp[j] - mf) * kf + bf;
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void instnorm_avx512(void *arg, int64_t p0, int64_t p1) {
  instnorm_body(arg, p0, p1);
}
__attribute__((target("avx2,fma"))) static void instnorm_avx2(void *arg, int64_t p0, int64_t p1) {
  instnorm_body(arg, p0, p1);
}
static void instnorm_c(void *arg, int64_t p0, int64_t p1) { instnorm_body(arg, p0, p1); }

static int32_t run_instnorm(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                            mi_error_t *err) {
  const norm_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer * st->len, 1, st->inner * 6,
                            st->simd == MI__SIMD_AVX512 ? instnorm_avx512
                            : st->simd == MI__SIMD_AVX2 ? instnorm_avx2
                                                        : instnorm_c);
}

int32_t mi__blis_prep_instancenorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  const mi_tensor_desc_t *sc = mi__blis_tensor(p, mi__blis_in(n, 1)), *bi = mi__blis_tensor(p, mi__blis_in(n, 2));
  norm_state_t *st;
  int32_t rc;
  if (!x || x->rank < 3 || x->dtype != MI_DTYPE_FLOAT32) return mi__blis_unsupported(err, n, "input must be FLOAT32 of rank >= 3");
  if (!sc || !bi || sc->dtype != MI_DTYPE_FLOAT32 || bi->dtype != MI_DTYPE_FLOAT32 ||
      mi_sdk_numel(sc) != x->dims[1] || mi_sdk_numel(bi) != x->dims[1])
    return mi__blis_unsupported(err, n, "scale and B must be FLOAT32 with C values");
  /* one mean per (image, channel) over the spatial dims */
  if ((rc = norm_new(p, s, n, x, 1, &st, err)) != MI_OK) return rc;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->run = run_instnorm;
  return MI_OK;
}
