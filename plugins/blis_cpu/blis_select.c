/* blis_select.c - blis-cpu's ArgMax/ArgMin (segmentation heads' class maps, classifiers' labels)
 * on FLOAT32, in the reference's order (framework/src/ref/ref_select.c). */
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

/* ---- ArgMax / ArgMin: per line along axis the first best index (the last with
 * select_last_index); a NaN is never better than what is held, as the reference compares. */

/* Positions along the inner dims one item keeps in registers or L1 while it walks the axis. */
#define ARG_BLOCK 256

typedef struct arg_state {
  int32_t x, y, is_max, last, simd;
  int64_t outer, len, inner;
} arg_state_t;

/* One step k of a block: the flags are constants where the bodies below inline it, so each of
 * the four forms is its own vectorised loop (compare, blend of values and of indices). */
static inline __attribute__((always_inline)) void arg_step(const float *r, float *bv, int32_t *bi, int64_t n, int32_t k,
                                                           int is_max, int last) {
  for (int64_t p = 0; p < n; p++) {
    float v = r[p];
    int better = is_max ? (last ? v >= bv[p] : v > bv[p]) : (last ? v <= bv[p] : v < bv[p]);
    bv[p] = better ? v : bv[p];
    bi[p] = better ? k : bi[p];
  }
}

/* Items are (outer index, block of ARG_BLOCK inner positions): the axis walked outermost, so a
 * channel map's planes are read as contiguous rows (ArgMax over the classes of [1, C, H, W]).
 * Indices are held as int32 (the axis is checked at prepare), widened when written. */
static inline __attribute__((always_inline)) void arg_body(const mi__blis_task_t *tk, int64_t i0, int64_t i1) {
  const arg_state_t *st = tk->state;
  const float *x = tk->t[st->x];
  int64_t *y = tk->t[st->y], blocks = (st->inner + ARG_BLOCK - 1) / ARG_BLOCK;
  float bv[ARG_BLOCK];
  int32_t bi[ARG_BLOCK];
  for (int64_t it = i0; it < i1; it++) {
    int64_t o = it / blocks, p0 = (it % blocks) * ARG_BLOCK, n = st->inner - p0 < ARG_BLOCK ? st->inner - p0 : ARG_BLOCK;
    const float *row = x + o * st->len * st->inner + p0;
    for (int64_t p = 0; p < n; p++) bv[p] = row[p], bi[p] = 0;
    for (int32_t k = 1; k < (int32_t)st->len; k++) {
      const float *r = row + k * st->inner;
      if (st->is_max && !st->last) arg_step(r, bv, bi, n, k, 1, 0);
      else if (st->is_max)
        arg_step(r, bv, bi, n, k, 1, 1);
      else if (!st->last)
        arg_step(r, bv, bi, n, k, 0, 0);
      else
        arg_step(r, bv, bi, n, k, 0, 1);
    }
    for (int64_t p = 0; p < n; p++) y[o * st->inner + p0 + p] = bi[p];
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void arg_avx512(void *arg, int64_t i0, int64_t i1) {
  arg_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void arg_avx2(void *arg, int64_t i0, int64_t i1) {
  arg_body(arg, i0, i1);
}
static void arg_c(void *arg, int64_t i0, int64_t i1) { arg_body(arg, i0, i1); }

static int32_t run_arg(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const arg_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer * ((st->inner + ARG_BLOCK - 1) / ARG_BLOCK), 1, st->len * ARG_BLOCK * 2,
                            st->simd == MI__SIMD_AVX512 ? arg_avx512 : st->simd == MI__SIMD_AVX2 ? arg_avx2
                                                                                                 : arg_c);
}

int32_t mi__blis_prep_argminmax(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", 0);
  arg_state_t *st;
  if (!x || x->dtype != MI_DTYPE_FLOAT32 || !y || y->dtype != MI_DTYPE_INT64)
    return mi__blis_unsupported(err, n, "X must be FLOAT32 (integer inputs run on the host)");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner) || st->len < 1 || st->len > INT32_MAX)
    return mi__blis_unsupported(err, n, "axis out of range, empty or over 2^31 long");
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->is_max = !strcmp(n->op_type, "ArgMax");
  st->last = n->opset >= 12 && mi_sdk_attr_int(n, "select_last_index", 0) != 0;
  s->run = run_arg;
  return MI_OK;
}
