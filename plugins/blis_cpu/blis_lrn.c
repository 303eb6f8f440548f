/* blis_lrn.c - blis-cpu's LRN (local response normalisation across channels, AlexNet, GoogLeNet
 * and the other classic CNNs): per image and channel, the squares of the `size` channels around
 * it summed along a contiguous spatial row, so each pass is a stream the compiler vectorises. */
#include <math.h>

#include "blis_conv.h" /* the SIMD levels */

typedef struct lrn_state {
  int32_t x, y, simd;
  int64_t planes, C, S, lo, hi;
  float k, beta, bias; /* k = alpha / size */
} lrn_state_t;

/* Spatial positions per block: the window's sums of one block stay in L1 (16 KiB). */
#define LRN_BLOCK 4096

/* Items are (image, channel) planes. beta = 0.75, every classic network's value, is
 * t^-0.75 = 1 / (sqrt(t) * sqrt(sqrt(t))): three square roots the vector unit does instead of a
 * scalar pow per element. */
static inline __attribute__((always_inline)) void lrn_body(const mi__blis_task_t *tk, int64_t p0, int64_t p1) {
  const lrn_state_t *st = tk->state;
  const float *x = tk->t[st->x];
  float *y = tk->t[st->y];
  float sq[LRN_BLOCK];
  int three_quarters = st->beta == 0.75f;
  for (int64_t pl = p0; pl < p1; pl++) {
    int64_t n = pl / st->C, ch = pl % st->C;
    int64_t c0 = ch - st->lo < 0 ? 0 : ch - st->lo, c1 = ch + st->hi >= st->C ? st->C - 1 : ch + st->hi;
    const float *img = x + n * st->C * st->S;
    for (int64_t s0 = 0; s0 < st->S; s0 += LRN_BLOCK) {
      int64_t len = st->S - s0 < LRN_BLOCK ? st->S - s0 : LRN_BLOCK, j;
      for (j = 0; j < len; j++) sq[j] = 0.0f;
      for (int64_t k = c0; k <= c1; k++) {
        const float *r = img + k * st->S + s0;
        for (j = 0; j < len; j++) sq[j] += r[j] * r[j];
      }
      const float *xr = img + ch * st->S + s0;
      float *yr = y + pl * st->S + s0;
      if (three_quarters) {
        for (j = 0; j < len; j++) {
          float t = st->bias + st->k * sq[j], r = sqrtf(t);
          yr[j] = xr[j] / (r * sqrtf(r));
        }
      } else {
        for (j = 0; j < len; j++) yr[j] = xr[j] * powf(st->bias + st->k * sq[j], -st->beta);
      }
    }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void lrn_avx512(void *arg, int64_t p0, int64_t p1) {
  lrn_body(arg, p0, p1);
}
__attribute__((target("avx2,fma"))) static void lrn_avx2(void *arg, int64_t p0, int64_t p1) {
  lrn_body(arg, p0, p1);
}
static void lrn_c(void *arg, int64_t p0, int64_t p1) { lrn_body(arg, p0, p1); }

static int32_t run_lrn(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const lrn_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->planes, 1, st->S * (st->hi + st->lo + 4),
                            st->simd == MI__SIMD_AVX512 ? lrn_avx512 : st->simd == MI__SIMD_AVX2 ? lrn_avx2
                                                                                                 : lrn_c);
}

int32_t mi__blis_prep_lrn(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t size = mi_sdk_attr_int(n, "size", 0);
  lrn_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank < 3)
    return mi__blis_unsupported(err, n, "X must be FLOAT32 [N, C, D1, ...]");
  if (size < 1) return mi__blis_unsupported(err, n, "size must be >= 1");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->C = x->dims[1];
  st->planes = x->dims[0] * st->C;
  st->S = x->dims[0] * st->C > 0 ? mi_sdk_numel(x) / (x->dims[0] * st->C) : 0;
  st->lo = (size - 1) / 2;
  st->hi = size - 1 - st->lo;
  st->k = mi_sdk_attr_float(n, "alpha", 1e-4f) / (float)size;
  st->beta = mi_sdk_attr_float(n, "beta", 0.75f);
  st->bias = mi_sdk_attr_float(n, "bias", 1.0f);
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->run = run_lrn;
  return MI_OK;
}
