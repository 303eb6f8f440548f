/* blis_seqops.c - blis-cpu's TopK, Compress and ReverseSequence: ops that pick or reorder whole
 * elements (detector tails' top-k scores, masks of kept rows, sequence models' reversed steps),
 * in the reference's order (framework/src/ref/ref_select.c, ref_pick.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blis_internal.h"

static int is_data(const mi_tensor_desc_t *t) {
  return t && (t->dtype == MI_DTYPE_FLOAT32 || t->dtype == MI_DTYPE_INT64);
}

/* ---- TopK: per line along axis, the k largest (or smallest), NaN above every number, equal
 * values by lower index first; sorted 0 gives them in input order, as the reference does. */

typedef struct topk_state {
  int32_t x, vals, idxs, largest, sorted;
  int64_t outer, len, inner, k;
} topk_state_t;

typedef struct topk_run {
  const topk_state_t *st;
  void *const *t;
  int failed; /* a part's line buffer could not be allocated */
} topk_run_t;

typedef struct pick {
  float v;
  int64_t i;
} pick_t;

static int cmp_largest(const void *pa, const void *pb) {
  const pick_t *a = pa, *b = pb;
  int an = a->v != a->v, bn = b->v != b->v;
  if (an != bn) return an ? -1 : 1;
  if (!an && a->v != b->v) return a->v > b->v ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

static int cmp_smallest(const void *pa, const void *pb) {
  const pick_t *a = pa, *b = pb;
  int an = a->v != a->v, bn = b->v != b->v;
  if (an != bn) return an ? 1 : -1;
  if (!an && a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

static int cmp_index(const void *pa, const void *pb) {
  const pick_t *a = pa, *b = pb;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* Whether a ranks before b in the order cmp gives (largest: NaN, then larger, then lower index). */
static inline int ranks_before(const pick_t *a, const pick_t *b, int largest) {
  return (largest ? cmp_largest(a, b) : cmp_smallest(a, b)) < 0;
}

/* The k best of a line kept in a heap whose root is the worst of them: an element enters only
 * where it ranks before the root, so a line of n costs about n compares and k log k moves, where
 * sorting it all cost n log n (TopK 300 of 8400 anchors). */
static void worst_down(pick_t *h, int64_t n, int64_t i, int largest) {
  pick_t v = h[i];
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && ranks_before(&h[c], &h[c + 1], largest)) c++;
    if (!ranks_before(&v, &h[c], largest)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
}

/* Items are lines (outer x inner). */
static void topk_part(void *arg, int64_t l0, int64_t l1) {
  topk_run_t *tk = arg;
  const topk_state_t *st = tk->st;
  const float *x = tk->t[st->x];
  float *v = tk->t[st->vals];
  int64_t *ix = st->idxs >= 0 ? tk->t[st->idxs] : NULL;
  pick_t *row = malloc((size_t)(st->k ? st->k : 1) * sizeof *row);
  if (!row) {
    tk->failed = 1;
    return;
  }
  for (int64_t l = l0; l < l1; l++) {
    int64_t o = l / st->inner, i = l % st->inner;
    int64_t base = o * st->len * st->inner + i, obase = o * st->k * st->inner + i;
    int64_t kk = st->k;
    for (int64_t j = 0; j < kk; j++) row[j].v = x[base + j * st->inner], row[j].i = j;
    for (int64_t j = kk / 2 - 1; j >= 0; j--) worst_down(row, kk, j, st->largest);
    for (int64_t j = kk; j < st->len && kk > 0; j++) {
      pick_t p = {x[base + j * st->inner], j};
      if (!ranks_before(&p, &row[0], st->largest)) continue;
      row[0] = p;
      worst_down(row, kk, 0, st->largest);
    }
    qsort(row, (size_t)kk, sizeof *row, !st->sorted ? cmp_index : st->largest ? cmp_largest
                                                                              : cmp_smallest);
    for (int64_t j = 0; j < st->k; j++) {
      v[obase + j * st->inner] = x[base + row[j].i * st->inner];
      if (ix) ix[obase + j * st->inner] = row[j].i;
    }
  }
  free(row);
}

static int32_t run_topk(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const topk_state_t *st = s->state;
  topk_run_t run = {st, t, 0};
  mi__blis_parallel(env, st->outer * st->inner, 1, st->len * 4 + st->k * 40, topk_part, &run);
  if (run.failed) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: TopK: out of memory");
  return MI_OK;
}

int32_t mi__blis_prep_topk(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *vals = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_tensor_desc_t *idx = mi__blis_tensor(p, mi__blis_out(n, 1));
  int64_t axis = mi_sdk_attr_int(n, "axis", -1), k;
  topk_state_t *st;
  if (!x || x->dtype != MI_DTYPE_FLOAT32 || !vals || vals->dtype != MI_DTYPE_FLOAT32 || (idx && idx->dtype != MI_DTYPE_INT64))
    return mi__blis_unsupported(err, n, "X must be FLOAT32 (indices INT64)");
  if (n->opset >= 10) {
    if (mi__blis_const_ints(p, mi__blis_in(n, 1), &k, 1) != 1) return mi__blis_unsupported(err, n, "K must be one constant");
  } else {
    k = mi_sdk_attr_int(n, "k", -1);
  }
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner) || k < 0 || k > st->len)
    return mi__blis_unsupported(err, n, "axis out of range or K outside [0, the axis' length]");
  st->k = k;
  st->largest = n->opset < 11 || mi_sdk_attr_int(n, "largest", 1) != 0;
  st->sorted = n->opset < 11 || mi_sdk_attr_int(n, "sorted", 1) != 0;
  st->x = mi__blis_in(n, 0);
  st->vals = mi__blis_out(n, 0);
  st->idxs = idx ? mi__blis_out(n, 1) : -1;
  s->run = run_topk;
  return MI_OK;
}

/* ---- Compress: the slices along axis (without one, the elements of the flattened input) whose
 * condition is true. A runtime condition makes the kept count data: along the first axis (or
 * flattened) the rows written are reported to the host (mi_run_stats_t.has_rows). */

typedef struct compress_state {
  int32_t x, cond, y, es;
  int64_t outer, len, inner, clen, room;
  char name[64];
} compress_state_t;

static int32_t run_compress(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const compress_state_t *st = s->state;
  const uint8_t *c = t[st->cond];
  const char *x = t[st->x];
  char *dst = t[st->y];
  size_t row = (size_t)st->inner * (size_t)st->es;
  int64_t kept = 0;
  for (int64_t k = 0; k < st->clen; k++) kept += c[k] != 0;
  if (kept > st->room || (kept != st->room && (st->outer != 1 || !env->rows_ok)))
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "blis-cpu: Compress '%s': the condition keeps %lld slices, the output was prepared for %lld "
                         "(shapes that depend on input values are fixed when the session is created)",
                         st->name, (long long)kept, (long long)st->room);
  for (int64_t o = 0; o < st->outer; o++)
    for (int64_t k = 0; k < st->clen; k++)
      if (c[k]) {
        memcpy(dst, x + (size_t)(o * st->len + k) * row, row);
        dst += row;
      }
  if (kept != st->room) {
    *env->rows_tensor = st->y;
    *env->rows = kept;
  }
  return MI_OK;
}

int32_t mi__blis_prep_compress(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *c = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  compress_state_t *st;
  int has_axis = mi_sdk_attr(n, "axis") != NULL;
  int64_t axis = mi_sdk_attr_int(n, "axis", 0);
  if (!is_data(x) || !y || y->dtype != x->dtype || !c || c->dtype != MI_DTYPE_BOOL || c->rank != 1)
    return mi__blis_unsupported(err, n, "input must be FLOAT32 or INT64 and the condition 1-D BOOL");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!has_axis) {
    st->outer = st->inner = 1;
    st->len = mi_sdk_numel(x);
  } else if (!mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner)) {
    return mi__blis_unsupported(err, n, "axis out of range");
  }
  st->clen = c->dims[0];
  if (st->clen > st->len) return mi__blis_unsupported(err, n, "the condition is longer than the axis");
  st->room = has_axis ? y->dims[axis] : y->dims[0];
  st->x = mi__blis_in(n, 0);
  st->cond = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->es = x->dtype == MI_DTYPE_INT64 ? 8 : 4;
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  s->run = run_compress;
  return MI_OK;
}

/* ---- ReverseSequence: per batch b the first sequence_lens[b] steps along time_axis reversed,
 * the rest copied; time and batch axes 0 and 1 either way round. */

typedef struct revseq_state {
  int32_t x, lens, y, es, time_major;
  int64_t B, T, inner;
  char name[64];
} revseq_state_t;

static int32_t run_revseq(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const revseq_state_t *st = s->state;
  const int64_t *lens = t[st->lens];
  const char *x = t[st->x];
  char *y = t[st->y];
  size_t row = (size_t)st->inner * (size_t)st->es;
  (void)env;
  for (int64_t b = 0; b < st->B; b++) {
    int64_t L = lens[b];
    if (L < 0 || L > st->T)
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: ReverseSequence '%s': sequence_lens[%lld] = %lld is outside 0..%lld",
                           st->name, (long long)b, (long long)L, (long long)st->T);
    for (int64_t tt = 0; tt < st->T; tt++) {
      int64_t src = tt < L ? L - 1 - tt : tt;
      int64_t yo = st->time_major ? tt * st->B + b : b * st->T + tt, xo = st->time_major ? src * st->B + b : b * st->T + src;
      memcpy(y + (size_t)yo * row, x + (size_t)xo * row, row);
    }
  }
  return MI_OK;
}

int32_t mi__blis_prep_reverse_sequence(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *l = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t ta = mi_sdk_attr_int(n, "time_axis", 0), ba = mi_sdk_attr_int(n, "batch_axis", 1);
  revseq_state_t *st;
  if (!is_data(x) || !y || y->dtype != x->dtype || x->rank < 2 || !l || l->dtype != MI_DTYPE_INT64 || l->rank != 1)
    return mi__blis_unsupported(err, n, "input must be FLOAT32 or INT64 of rank >= 2 and sequence_lens 1-D INT64");
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0))) return mi__blis_unsupported(err, n, "time_axis and batch_axis must be 0 and 1");
  if (l->dims[0] != x->dims[ba]) return mi__blis_unsupported(err, n, "sequence_lens must hold one value per batch");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->B = x->dims[ba];
  st->T = x->dims[ta];
  st->inner = 1;
  for (int32_t d = 2; d < x->rank; d++) st->inner *= x->dims[d];
  st->time_major = ta == 0;
  st->x = mi__blis_in(n, 0);
  st->lens = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->es = x->dtype == MI_DTYPE_INT64 ? 8 : 4;
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  s->run = run_revseq;
  return MI_OK;
}
