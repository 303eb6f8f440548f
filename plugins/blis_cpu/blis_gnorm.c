/* blis_gnorm.c - GroupNormalization (opsets 18 and 21), MeanVarianceNormalization, LpNormalization and row reductions (L1, SumSquare, LogSum). */
#include <math.h>
#include <string.h>

#include "blis_conv.h"

/* Each op's part function is one always-inline body compiled three times (AVX-512, AVX2, plain C),
 * as blis_nn.c does for LayerNormalization: the statistics loops below vectorise at the widest
 * the part's target allows, and the knob-free choice follows the device's SIMD level (after
 * MI_BLIS_MAX_SIMD's cap), so a test can run each path. */
#define T512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define T256 __attribute__((target("avx2,fma")))
#define THREE_TARGETS(name, body)                                                  \
  T512 static void name##_avx512(void *a, int64_t b, int64_t e) { body(a, b, e); } \
  T256 static void name##_avx2(void *a, int64_t b, int64_t e) { body(a, b, e); }   \
  static void name##_c(void *a, int64_t b, int64_t e) { body(a, b, e); }

#define PICK(simd, name)                                                             \
  ((simd) == MI__SIMD_AVX512 ? name##_avx512 : (simd) == MI__SIMD_AVX2 ? name##_avx2 \
                                                                       : name##_c)

/* Sums of x[0..n) into eight interleaved double partials (a fixed order: the result does not
 * depend on the thread split); sq8: of (x - m)^2 instead; abs8: of |x|. */
static inline __attribute__((always_inline)) void sum8(const float *x, int64_t n, double *ps) {
  int64_t j, l, body = n / 8 * 8;
  for (j = 0; j < body; j += 8)
    for (l = 0; l < 8; l++) ps[l] += x[j + l];
  for (l = 0; j + l < n; l++) ps[l] += x[j + l];
}

static inline __attribute__((always_inline)) void sq8(const float *x, int64_t n, double m, double *ps) {
  int64_t j, l, body = n / 8 * 8;
  for (j = 0; j < body; j += 8)
    for (l = 0; l < 8; l++) ps[l] += (x[j + l] - m) * (x[j + l] - m);
  for (l = 0; j + l < n; l++) ps[l] += (x[j + l] - m) * (x[j + l] - m);
}

static inline __attribute__((always_inline)) void abs8(const float *x, int64_t n, double *ps) {
  int64_t j, l, body = n / 8 * 8;
  for (j = 0; j < body; j += 8)
    for (l = 0; l < 8; l++) ps[l] += fabs((double)x[j + l]);
  for (l = 0; j + l < n; l++) ps[l] += fabs((double)x[j + l]);
}

static inline double fold8(const double *ps) {
  return ((ps[0] + ps[4]) + (ps[2] + ps[6])) + ((ps[1] + ps[5]) + (ps[3] + ps[7]));
}

static inline __attribute__((always_inline)) void affine_row(const float *x, float *y, int64_t n, float m, float k,
                                                             float b) {
  int64_t j;
  for (j = 0; j < n; j++) y[j] = (x[j] - m) * k + b;
}

/* ---- GroupNormalization: groups of cg channels of S values each, contiguous in NCHW */

typedef struct gn_state {
  int32_t x, y, scale, bias;
  int64_t G, cg, S; /* groups per image, channels per group, values per channel */
  int64_t items;    /* images times G */
  int32_t per_channel, simd;
  float eps;
} gn_state_t;

/* Items are (image, group) pairs; mean and biased variance in double as the reference. */
static inline __attribute__((always_inline)) void gn_body(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *nt = arg;
  const gn_state_t *st = nt->state;
  const float *x = nt->t[st->x], *sc = nt->t[st->scale], *bi = nt->t[st->bias];
  float *y = nt->t[st->y];
  int64_t it, c, len = st->cg * st->S;
  for (it = i0; it < i1; it++) {
    const float *xg = x + it * len;
    float *yg = y + it * len;
    int64_t g = it % st->G;
    double ps[8] = {0}, pv[8] = {0}, mean = 0, var = 0, inv;
    sum8(xg, len, ps);
    if (len) mean = fold8(ps) / (double)len;
    sq8(xg, len, mean, pv);
    if (len) var = fold8(pv) / (double)len;
    inv = 1.0 / sqrt(var + (double)st->eps);
    for (c = 0; c < st->cg; c++) {
      int64_t k = st->per_channel ? g * st->cg + c : g;
      affine_row(xg + c * st->S, yg + c * st->S, st->S, (float)mean, (float)(sc[k] * inv), bi[k]);
    }
  }
}
THREE_TARGETS(gn_part, gn_body)

static int32_t run_gn(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const gn_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->items, 1, st->cg * st->S * 6, PICK(st->simd, gn_part));
}

int32_t mi__blis_prep_groupnorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_tensor_desc_t *sc = mi__blis_tensor(p, mi__blis_in(n, 1)), *bi = mi__blis_tensor(p, mi__blis_in(n, 2));
  int64_t G = mi_sdk_attr_int(n, "num_groups", 0), C, S = 1, want;
  int32_t d, per_channel = n->opset >= 21;
  gn_state_t *g;
  if (n->opset < 18) return mi__blis_unsupported(err, n, "the op exists from opset 18 on");
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank < 2)
    return mi__blis_unsupported(err, n, "X and Y must be FLOAT32 of rank >= 2");
  C = x->dims[1];
  for (d = 2; d < x->rank; d++) S *= x->dims[d];
  if (G <= 0 || C % G != 0) return mi__blis_unsupported(err, n, "num_groups must be positive and divide the channels");
  if (per_channel && mi_sdk_attr_int(n, "stash_type", 1) != 1) return mi__blis_unsupported(err, n, "stash_type");
  want = per_channel ? C : G;
  if (!sc || !bi || sc->dtype != MI_DTYPE_FLOAT32 || bi->dtype != MI_DTYPE_FLOAT32 || sc->rank != 1 || bi->rank != 1 ||
      sc->dims[0] != want || bi->dims[0] != want)
    return mi__blis_unsupported(err, n,
                                per_channel ? "scale and bias must be FLOAT32 with one value per channel"
                                            : "scale and bias must be FLOAT32 with one value per group");
  if (mi_sdk_numel(y) != mi_sdk_numel(x)) return mi__blis_unsupported(err, n, "output shape");
  if (!(g = mi__blis_state_new(p, s, sizeof *g, err))) return MI_ERR_OUT_OF_MEMORY;
  g->x = mi__blis_in(n, 0);
  g->scale = mi__blis_in(n, 1);
  g->bias = mi__blis_in(n, 2);
  g->y = mi__blis_out(n, 0);
  g->G = G;
  g->cg = C / G;
  g->S = S;
  g->per_channel = per_channel;
  g->eps = mi_sdk_attr_float(n, "epsilon", 1e-5f);
  g->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  g->items = x->dims[0] * G;
  s->run = run_gn;
  return MI_OK;
}

/* ---- MeanVarianceNormalization over any set of axes: y = (x - mean) / (sqrt(var) + 1e-9), as
 * ONNX's function body for the op (and the reference) computes it.
 *
 * At prepare the dims of size 1 are dropped and neighbours of the same kind (reduced or kept)
 * merged: each output slot (a kept index) then reads R runs of `run` contiguous values (run > 1
 * when the innermost merged dim is reduced: the default axes 0, 2, 3 on one image, or the last
 * axis of an audio feature map), at the offsets roff[] (aux) from the slot's base. */

typedef struct mvn_state {
  int32_t x, y, simd, nk;
  int64_t slots, R, run;
  int64_t kd[MI_MAX_RANK], ks[MI_MAX_RANK]; /* kept merged dims and their strides, innermost last */
  const int64_t *roff;                      /* R offsets (in aux) */
} mvn_state_t;

static inline int64_t mvn_base(const mvn_state_t *st, int64_t slot) {
  int64_t b = 0;
  int32_t d;
  for (d = st->nk - 1; d >= 0; d--) {
    b += (slot % st->kd[d]) * st->ks[d];
    slot /= st->kd[d];
  }
  return b;
}

static inline __attribute__((always_inline)) void mvn_body(void *arg, int64_t s0, int64_t s1) {
  const mi__blis_task_t *nt = arg;
  const mvn_state_t *st = nt->state;
  const float *x = nt->t[st->x];
  float *y = nt->t[st->y];
  int64_t sl, r, cnt = st->R * st->run;
  for (sl = s0; sl < s1; sl++) {
    int64_t base = mvn_base(st, sl);
    double ps[8] = {0}, pv[8] = {0}, mean, k;
    for (r = 0; r < st->R; r++) sum8(x + base + st->roff[r], st->run, ps);
    mean = fold8(ps) / (double)cnt;
    for (r = 0; r < st->R; r++) sq8(x + base + st->roff[r], st->run, mean, pv);
    k = 1.0 / (sqrt(fold8(pv) / (double)cnt) + 1e-9);
    for (r = 0; r < st->R; r++)
      affine_row(x + base + st->roff[r], y + base + st->roff[r], st->run, (float)mean, (float)k, 0.f);
  }
}
THREE_TARGETS(mvn_part, mvn_body)

static int32_t run_mvn(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mvn_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->slots, 1, st->R * st->run * 6, PICK(st->simd, mvn_part));
}

int32_t mi__blis_prep_mvn(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_attr_t *aa = mi_sdk_attr(n, "axes");
  int64_t axes[MI_MAX_RANK] = {0, 2, 3}, md[MI_MAX_RANK], ms[MI_MAX_RANK], rd[MI_MAX_RANK], rs[MI_MAX_RANK];
  int64_t idx[MI_MAX_RANK] = {0}, stride = 1, *roff, off = 0, r;
  int32_t na = 3, i, d, m = 0, nr = 0, red[MI_MAX_RANK] = {0}, mr[MI_MAX_RANK];
  mvn_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(x) != mi_sdk_numel(y))
    return mi__blis_unsupported(err, n, "X and Y must be FLOAT32 of one shape");
  if (aa) {
    if (aa->type != MI_ATTR_INTS || aa->count > MI_MAX_RANK) return mi__blis_unsupported(err, n, "axes");
    na = aa->count;
    for (i = 0; i < na; i++) axes[i] = aa->ints[i];
  }
  for (i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
    if (a < 0 || a >= x->rank) return mi__blis_unsupported(err, n, "axis out of range");
    red[a] = 1;
  }
  /* merge: drop dims of size 1, join neighbours of one kind */
  for (d = 0; d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    if (m > 0 && mr[m - 1] == red[d]) {
      md[m - 1] *= x->dims[d];
    } else {
      md[m] = x->dims[d];
      mr[m++] = red[d];
    }
  }
  for (d = m - 1; d >= 0; d--) {
    ms[d] = stride;
    stride *= md[d];
  }
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  st->run = 1;
  if (m > 0 && mr[m - 1]) st->run = md[--m]; /* the innermost reduced dim: contiguous runs */
  st->slots = 1;
  st->R = 1;
  for (d = 0; d < m; d++) {
    if (mr[d]) {
      rd[nr] = md[d];
      rs[nr++] = ms[d];
      st->R *= md[d];
    } else {
      st->kd[st->nk] = md[d];
      st->ks[st->nk++] = ms[d];
      st->slots *= md[d];
    }
  }
  if (mi_sdk_numel(x) == 0) st->slots = 0;
  if (!(roff = s->aux = mi__blis_alloc(p->ctx, (uint64_t)(st->R ? st->R : 1) * sizeof(int64_t))))
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  for (r = 0; r < st->R; r++) {
    roff[r] = off;
    if (nr) mi__blis_next_index(nr, rd, rs, idx, &off);
  }
  st->roff = roff;
  s->run = run_mvn;
  return MI_OK;
}

/* ---- LpNormalization (p 1 or 2) along one axis: y = x / ||x||_p, an all-zero line stays zero */

enum { LP_COLS = 64 }; /* columns of a strided axis normalised together (their sums in registers) */

typedef struct lp_state {
  int32_t x, y, simd, p;
  int64_t outer, len, inner, nb; /* nb: blocks of LP_COLS columns per outer slice (inner > 1) */
} lp_state_t;

static inline float lp_inv(double norm, int32_t p) {
  if (p == 2) norm = sqrt(norm);
  return norm > 0 ? (float)(1.0 / norm) : 0.f;
}

/* inner == 1: items are rows; else (outer, block of columns) pairs, the norms of a block's
 * columns accumulated side by side (a row of the block is contiguous). */
static inline __attribute__((always_inline)) void lp_body(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *nt = arg;
  const lp_state_t *st = nt->state;
  const float *x = nt->t[st->x];
  float *y = nt->t[st->y];
  int64_t it, j, k, len = st->len;
  for (it = i0; it < i1; it++) {
    if (st->inner == 1) {
      const float *xr = x + it * len;
      float *yr = y + it * len;
      double ps[8] = {0};
      float inv;
      if (st->p == 1) abs8(xr, len, ps);
      else
        sq8(xr, len, 0.0, ps);
      inv = lp_inv(fold8(ps), st->p);
      for (j = 0; j < len; j++) yr[j] = xr[j] * inv;
    } else {
      int64_t o = it / st->nb, c0 = it % st->nb * LP_COLS, w = st->inner - c0 < LP_COLS ? st->inner - c0 : LP_COLS;
      const float *xb = x + o * len * st->inner + c0;
      float *yb = y + o * len * st->inner + c0;
      double acc[LP_COLS] = {0};
      float inv[LP_COLS];
      for (k = 0; k < len; k++) {
        const float *xr = xb + k * st->inner;
        if (st->p == 1)
          for (j = 0; j < w; j++) acc[j] += fabs((double)xr[j]);
        else
          for (j = 0; j < w; j++) acc[j] += (double)xr[j] * xr[j];
      }
      for (j = 0; j < w; j++) inv[j] = lp_inv(acc[j], st->p);
      for (k = 0; k < len; k++)
        for (j = 0; j < w; j++) yb[k * st->inner + j] = xb[k * st->inner + j] * inv[j];
    }
  }
}
THREE_TARGETS(lp_part, lp_body)

static int32_t run_lp(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const lp_state_t *st = s->state;
  (void)err;
  if (st->inner == 1) return mi__blis_run_parts(s, t, env, st->outer, 1, st->len * 4, PICK(st->simd, lp_part));
  return mi__blis_run_parts(s, t, env, st->outer * st->nb, 1, st->len * LP_COLS * 4, PICK(st->simd, lp_part));
}

int32_t mi__blis_prep_lpnorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", -1), pp = mi_sdk_attr_int(n, "p", 2);
  lp_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(x) != mi_sdk_numel(y))
    return mi__blis_unsupported(err, n, "input and output must be FLOAT32 of one shape");
  if (pp != 1 && pp != 2) return mi__blis_unsupported(err, n, "p must be 1 or 2");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner))
    return mi__blis_unsupported(err, n, "axis out of range");
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->p = (int32_t)pp;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  st->nb = (st->inner + LP_COLS - 1) / LP_COLS;
  s->run = run_lp;
  return MI_OK;
}

/* ---- ReduceL1 / ReduceSumSquare / ReduceLogSum over trailing axes: one row per output */

typedef struct rows_state {
  int32_t x, y, simd, kind;
  int64_t rows, len;
} rows_state_t;

static inline __attribute__((always_inline)) void rows_body(void *arg, int64_t r0, int64_t r1) {
  const mi__blis_task_t *nt = arg;
  const rows_state_t *st = nt->state;
  const float *x = nt->t[st->x];
  float *y = nt->t[st->y];
  int64_t r;
  for (r = r0; r < r1; r++) {
    double ps[8] = {0}, v;
    if (st->kind == 0) abs8(x + r * st->len, st->len, ps);
    else if (st->kind == 1)
      sq8(x + r * st->len, st->len, 0.0, ps);
    else
      sum8(x + r * st->len, st->len, ps);
    v = fold8(ps);
    y[r] = (float)(st->kind == 2 ? log(v) : v);
  }
}
THREE_TARGETS(rows_part, rows_body)

static int32_t run_rows(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const rows_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->rows, 1, st->len * 2, PICK(st->simd, rows_part));
}

int32_t mi__blis_prep_reduce_rows(mi__blis_prep_t *p, mi__blis_step_t *s, int32_t kind, int64_t rows, int64_t len,
                                  int32_t x, int32_t y, mi_error_t *err) {
  rows_state_t *st = mi__blis_state_new(p, s, sizeof *st, err);
  if (!st) return MI_ERR_OUT_OF_MEMORY;
  st->x = x;
  st->y = y;
  st->kind = kind;
  st->rows = rows;
  st->len = len;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->run = run_rows;
  return MI_OK;
}
