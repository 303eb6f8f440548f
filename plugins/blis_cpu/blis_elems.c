/* blis_elems.c - blis-cpu's GatherElements, CenterCropPad and EyeLike: ops that move or make whole
 * elements of any element type (detector tails' per-box gathers, relative position gathers, image
 * crops), in the reference's results to the bit (framework/src/ref/ref_index.c, ref_extra.c,
 * ref_generate.c); and which runtime tensors other than FLOAT32 this file's, blis_bitwise.c's and
 * ScatterElements (blis_pick.c) take. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

/* Ops whose every tensor may be of any element type the plugin can copy (1, 2, 4 or 8 bytes; not
 * packed INT4): each prep checks the types it runs (the bitwise ops' operands are the integer
 * types the reference holds, ScatterElements' reductions FLOAT32, INT64, INT32). */
int mi__blis_elem_tensor(const mi_kernel_desc_t *d, int32_t t) {
  static const char *const ops[] = {"GatherElements", "CenterCropPad", "EyeLike", "BitwiseAnd", "BitwiseOr",
                                    "BitwiseXor", "BitwiseNot", "BitShift", "ScatterElements"};
  int32_t i, j, seen = 0;
  int32_t dt = d->tensors[t]->dtype;
  if (dt == MI_DTYPE_INT4 || mi_sdk_dtype_size(dt) == 0) return 0;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int touches = 0, known = 0;
    for (j = 0; j < n->input_count; j++) touches |= n->inputs[j] == t;
    for (j = 0; j < n->output_count; j++) touches |= n->outputs[j] == t;
    if (!touches) continue;
    for (j = 0; j < (int32_t)(sizeof ops / sizeof ops[0]); j++) known |= !strcmp(n->op_type, ops[j]);
    if (!known) return 0;
    seen = 1;
  }
  return seen;
}

static int index_dtype(const mi_tensor_desc_t *t) {
  return t && (t->dtype == MI_DTYPE_INT64 || t->dtype == MI_DTYPE_INT32);
}

/* Element size of t when the ops here can copy it: 1, 2, 4 or 8; else 0. */
static size_t elem_size(const mi_tensor_desc_t *t) {
  size_t es = t && t->dtype != MI_DTYPE_INT4 ? mi_sdk_dtype_size(t->dtype) : 0;
  return es == 1 || es == 2 || es == 4 || es == 8 ? es : 0;
}

/* ---- GatherElements: y[.., k, ..] = x[.., ind[.., k, ..], ..] along axis; y has the indices'
 * shape, which may be smaller than the data's on every other axis. Items are blocks of GE_BLOCK
 * output elements of one line along the last dim: each element's index picks along the axis (the
 * line itself when the axis is the last: a gather from one line of x). */

#define GE_BLOCK 1024

typedef struct ge_state {
  int32_t x, ind, y, idt, es, simd, axis, orank;
  int64_t len;                                 /* x's length along axis */
  int64_t lines, last;                         /* ind as [lines, last] */
  int64_t xs_pick, step;                       /* per index and per position along a line, in x */
  int64_t odims[MI_MAX_RANK], xs[MI_MAX_RANK]; /* ind's dims before the last, x's strides there (0 on the axis) */
  int64_t n;                                   /* indices */
  atomic_int *bad;                             /* set by a part that met an index out of range (the step's aux) */
  char name[64];
} ge_state_t;

/* x's offset of line o (a multi-index over ind's dims before the last, x's strides). */
static int64_t ge_base(const ge_state_t *st, int64_t o) {
  int64_t off = 0;
  for (int32_t d = st->orank - 1; d >= 0; d--) {
    off += (o % st->odims[d]) * st->xs[d];
    o /= st->odims[d];
  }
  return off;
}

/* One run of m indices (each already checked) picks from xb at stride xs: y[i] = xb[k_i * xs + i * step].
 * Written per element type and index type so that each is its own vectorised loop (gathers). */
/* One run of m indices picks from xb: y[i] = xb[k_i * xs + i * step]. An index out of range is
 * read as 0 and reported (the return value), so the indices are read once: checked in a pass of
 * their own first, they were read twice (6 MB for a 12 x 256 x 256 relative-position gather). Written
 * per element type and index type, each its own loop. */
#define GE_RUN(T, I)                                                                                          \
  static inline __attribute__((always_inline)) int ge_run_##T##_##I(const T *xb, const I *k, T *y, int64_t m, \
                                                                    int64_t len, int64_t xs, int64_t step) {  \
    int bad = 0;                                                                                              \
    for (int64_t i = 0; i < m; i++) {                                                                         \
      int64_t v = k[i];                                                                                       \
      v += v < 0 ? len : 0;                                                                                   \
      int ok = (uint64_t)v < (uint64_t)len;                                                                   \
      bad |= !ok;                                                                                             \
      y[i] = xb[(ok ? v : 0) * xs + i * step];                                                                \
    }                                                                                                         \
    return bad;                                                                                               \
  }
GE_RUN(uint8_t, int64_t)
GE_RUN(uint16_t, int64_t)
GE_RUN(uint32_t, int64_t)
GE_RUN(uint64_t, int64_t)
GE_RUN(uint8_t, int32_t)
GE_RUN(uint16_t, int32_t)
GE_RUN(uint32_t, int32_t)
GE_RUN(uint64_t, int32_t)

/* The axis last (step 0: the common case, a gather within one line) with x's stride 1 as a
 * constant; else the stride along the axis at run time. Scalar loads: AVX-512 gathers
 * (vpgatherqd, vpgatherdd) were slower on the Zen 5 this was measured on (relative positions
 * 12x256x511 -> 256: 1.6-2.7 ms against 1.3-1.6 for this loop, interleaved runs at load 6). */
#define GE_FORMS(T, I)                                             \
  do {                                                             \
    if (step == 0) bad = ge_run_##T##_##I(xb, k, y, m, len, 1, 0); \
    else                                                           \
      bad = ge_run_##T##_##I(xb, k, y, m, len, xs, 1);             \
  } while (0)

static inline __attribute__((always_inline)) int ge_dispatch(const ge_state_t *st, const void *xb, const void *k, void *y,
                                                             int64_t m, int64_t xs, int64_t step) {
  int64_t len = st->len;
  int bad;
  if (st->idt == MI_DTYPE_INT64) {
    switch (st->es) {
    case 1: GE_FORMS(uint8_t, int64_t); break;
    case 2: GE_FORMS(uint16_t, int64_t); break;
    case 4: GE_FORMS(uint32_t, int64_t); break;
    default: GE_FORMS(uint64_t, int64_t);
    }
  } else {
    switch (st->es) {
    case 1: GE_FORMS(uint8_t, int32_t); break;
    case 2: GE_FORMS(uint16_t, int32_t); break;
    case 4: GE_FORMS(uint32_t, int32_t); break;
    default: GE_FORMS(uint64_t, int32_t);
    }
  }
  return bad;
}

static inline __attribute__((always_inline)) void ge_body(const mi__blis_task_t *tk, int64_t i0, int64_t i1) {
  const ge_state_t *st = tk->state;
  const char *x = tk->t[st->x];
  const char *ind = tk->t[st->ind];
  char *y = tk->t[st->y];
  size_t es = (size_t)st->es, is = st->idt == MI_DTYPE_INT64 ? 8 : 4;
  int64_t blocks = (st->last + GE_BLOCK - 1) / GE_BLOCK;
  for (int64_t it = i0; it < i1; it++) {
    int64_t o = it / blocks, j0 = (it % blocks) * GE_BLOCK, m = st->last - j0 < GE_BLOCK ? st->last - j0 : GE_BLOCK;
    int64_t at = o * st->last + j0;
    if (ge_dispatch(st, x + (size_t)(ge_base(st, o) + j0 * st->step) * es, ind + (size_t)at * is, y + (size_t)at * es, m,
                    st->xs_pick, st->step))
      atomic_store_explicit(st->bad, 1, memory_order_relaxed);
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void ge_avx512(void *arg, int64_t i0, int64_t i1) {
  ge_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void ge_avx2(void *arg, int64_t i0, int64_t i1) {
  ge_body(arg, i0, i1);
}
static void ge_c(void *arg, int64_t i0, int64_t i1) { ge_body(arg, i0, i1); }

/* The first index outside [-len, len), or -1 (after a run that met one: the message's). */
static int64_t ge_bad(const void *ind, int32_t idt, int64_t n, int64_t len) {
  int64_t bad = 0, i;
  if (idt == MI_DTYPE_INT64) {
    const int64_t *k = ind;
    for (i = 0; i < n; i++) bad |= (k[i] < -len) | (k[i] >= len);
    if (bad)
      for (i = 0; i < n; i++)
        if (k[i] < -len || k[i] >= len) return i;
  } else {
    const int32_t *k = ind;
    for (i = 0; i < n; i++) bad |= (k[i] < -len) | (k[i] >= len);
    if (bad)
      for (i = 0; i < n; i++)
        if (k[i] < -len || k[i] >= len) return i;
  }
  return -1;
}

static int32_t run_gather_el(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const ge_state_t *st = s->state;
  int64_t bad, items = st->lines * ((st->last + GE_BLOCK - 1) / GE_BLOCK);
  int32_t rc;
  if (st->len == 0 && st->n > 0) bad = 0; /* every index is out of range, and x has nothing to read */
  else {
    atomic_store_explicit(st->bad, 0, memory_order_relaxed);
    rc = mi__blis_run_parts(s, t, env, items, 1, GE_BLOCK * 2,
                            st->simd == MI__SIMD_AVX512 ? ge_avx512 : st->simd == MI__SIMD_AVX2 ? ge_avx2
                                                                                                : ge_c);
    if (rc != MI_OK || !atomic_load_explicit(st->bad, memory_order_relaxed)) return rc;
    bad = ge_bad(t[st->ind], st->idt, st->n, st->len);
  }
  if (bad >= 0) {
    int64_t v = st->idt == MI_DTYPE_INT64 ? ((const int64_t *)t[st->ind])[bad] : ((const int32_t *)t[st->ind])[bad];
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "blis-cpu: GatherElements '%s': index %lld is out of range for axis %d of size %lld", st->name,
                         (long long)v, (int)st->axis, (long long)st->len);
  }
  return MI_OK;
}

int32_t mi__blis_prep_gather_elements(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *ind = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", 0), xs[MI_MAX_RANK];
  int32_t d;
  ge_state_t *st;
  if (!elem_size(x) || !y || y->dtype != x->dtype || !index_dtype(ind))
    return mi__blis_unsupported(err, n, "data must be of a 1, 2, 4 or 8-byte type, indices INT64 or INT32");
  if (axis < 0) axis += x->rank;
  if (x->rank < 1 || axis < 0 || axis >= x->rank) return mi__blis_unsupported(err, n, "axis out of range");
  if (ind->rank != x->rank || y->rank != ind->rank) return mi__blis_unsupported(err, n, "indices must have the data's rank");
  for (d = 0; d < x->rank; d++)
    if (y->dims[d] != ind->dims[d] || (d != axis && ind->dims[d] > x->dims[d]))
      return mi__blis_unsupported(err, n, "indices larger than the data off the axis, or the output not their shape");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  mi_sdk_strides(x, xs);
  st->x = mi__blis_in(n, 0);
  st->ind = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->idt = ind->dtype;
  st->es = (int32_t)elem_size(x);
  st->axis = (int32_t)axis;
  st->len = x->dims[axis];
  st->orank = x->rank - 1;
  st->lines = 1;
  for (d = 0; d < st->orank; d++) {
    st->odims[d] = ind->dims[d];
    st->xs[d] = d == axis ? 0 : xs[d];
    st->lines *= ind->dims[d];
  }
  st->last = ind->dims[x->rank - 1];
  /* the axis last: the indices pick within the line (x's stride 1), the line does not move;
   * else each position of the line moves one along x's last dim and its index picks along the axis */
  st->xs_pick = xs[axis];
  st->step = axis == x->rank - 1 ? 0 : 1;
  st->n = mi_sdk_numel(ind);
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->aux = mi__blis_alloc(p->ctx, sizeof(atomic_int));
  if (!(st->bad = s->aux)) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  s->run = run_gather_el;
  return MI_OK;
}

/* ---- CenterCropPad: every axis cropped about its centre or zero-padded around it; the output's
 * dims say which (the shape input was read into them by the host's shape inference). Items are the
 * output's rows (all dims but the last); a row is zeros where its source lies outside the input,
 * else zeros around one copied run. */

typedef struct ccp_state {
  int32_t x, y, rank, es;
  int64_t xd[MI_MAX_RANK], yd[MI_MAX_RANK], shift[MI_MAX_RANK], xs[MI_MAX_RANK];
  int64_t rows;
} ccp_state_t;

static void ccp_part(void *arg, int64_t r0, int64_t r1) {
  const mi__blis_task_t *tk = arg;
  const ccp_state_t *st = tk->state;
  const char *x = tk->t[st->x];
  char *y = tk->t[st->y];
  int32_t last = st->rank - 1;
  size_t es = (size_t)st->es;
  int64_t yw = st->yd[last], xw = st->xd[last], sh = st->shift[last];
  /* the run of the row that comes from the input: output columns [c0, c1) from input c0 - sh */
  int64_t c0 = sh > 0 ? sh : 0, c1 = xw + sh < yw ? xw + sh : yw;
  for (int64_t r = r0; r < r1; r++) {
    char *yr = y + (size_t)(r * yw) * es;
    int64_t rest = r, off = 0, inside = 1;
    for (int32_t d = last - 1; d >= 0; d--) {
      int64_t o = rest % st->yd[d], i = o - st->shift[d];
      rest /= st->yd[d];
      inside &= i >= 0 && i < st->xd[d];
      off += i * st->xs[d];
    }
    if (!inside || c1 <= c0) {
      memset(yr, 0, (size_t)yw * es);
      continue;
    }
    if (c0 > 0) memset(yr, 0, (size_t)c0 * es);
    memcpy(yr + (size_t)c0 * es, x + (size_t)(off + c0 - sh) * es, (size_t)(c1 - c0) * es);
    if (c1 < yw) memset(yr + (size_t)c1 * es, 0, (size_t)(yw - c1) * es);
  }
}

static int32_t run_ccp(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const ccp_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->rows, 1, st->yd[st->rank - 1] * st->es, ccp_part);
}

int32_t mi__blis_prep_center_crop_pad(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int32_t d;
  ccp_state_t *st;
  if (!elem_size(x) || !y || y->dtype != x->dtype || y->rank != x->rank || x->rank < 1)
    return mi__blis_unsupported(err, n, "input must be of a 1, 2, 4 or 8-byte type, rank >= 1, the output of its type and rank");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  mi_sdk_strides(x, st->xs);
  st->rows = 1;
  for (d = 0; d < x->rank; d++) {
    st->xd[d] = x->dims[d];
    st->yd[d] = y->dims[d];
    /* the reference's: a longer target pads (t - in) / 2 before, a shorter one keeps from (in - t) / 2 */
    st->shift[d] = y->dims[d] >= x->dims[d] ? (y->dims[d] - x->dims[d]) / 2 : -((x->dims[d] - y->dims[d]) / 2);
    if (d < x->rank - 1) st->rows *= y->dims[d];
  }
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->rank = x->rank;
  st->es = (int32_t)elem_size(x);
  s->run = run_ccp;
  return MI_OK;
}

/* ---- EyeLike: zeros of the input's 2-D shape with ones on the diagonal shifted by k, in the
 * output's type (the input is read for its shape only) */

typedef struct eye_state {
  int32_t y, dt, es;
  int64_t rows, cols, k;
} eye_state_t;

static int32_t run_eye(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const eye_state_t *st = s->state;
  char *y = t[st->y];
  (void)env;
  (void)err;
  memset(y, 0, (size_t)(st->rows * st->cols) * (size_t)st->es);
  if (st->k >= st->cols || st->k <= -st->rows) return MI_OK; /* no diagonal inside (and r + k cannot overflow below) */
  for (int64_t r = 0; r < st->rows; r++) {
    int64_t c = r + st->k;
    char *at;
    if (c < 0 || c >= st->cols) continue;
    at = y + (size_t)(r * st->cols + c) * (size_t)st->es;
    if (st->dt == MI_DTYPE_FLOAT32) *(float *)at = 1.0f;
    else if (st->es == 4)
      *(int32_t *)at = 1;
    else if (st->es == 8)
      *(int64_t *)at = 1;
    else
      *at = 1;
  }
  return MI_OK;
}

int32_t mi__blis_prep_eyelike(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  eye_state_t *st;
  /* the reference's output types: FLOAT32, INT32, INT64, and the 1-byte INT8, UINT8, BOOL */
  if (!x || !y || x->rank != 2 || y->rank != 2 || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] ||
      !(y->dtype == MI_DTYPE_FLOAT32 || y->dtype == MI_DTYPE_INT32 || y->dtype == MI_DTYPE_INT64 ||
        y->dtype == MI_DTYPE_INT8 || y->dtype == MI_DTYPE_UINT8 || y->dtype == MI_DTYPE_BOOL))
    return mi__blis_unsupported(err, n, "input must be 2-D and the output FLOAT32, INT32, INT64, INT8, UINT8 or BOOL of its shape");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->y = mi__blis_out(n, 0);
  st->dt = y->dtype;
  st->es = (int32_t)mi_sdk_dtype_size(y->dtype);
  st->rows = y->dims[0];
  st->cols = y->dims[1];
  st->k = mi_sdk_attr_int(n, "k", 0);
  s->run = run_eye;
  return MI_OK;
}
