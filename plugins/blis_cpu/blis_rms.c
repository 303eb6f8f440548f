/* blis_rms.c - blis-cpu's RMSNormalization (ONNX opset 23; also ONNX Runtime's
 * SimplifiedLayerNormalization and SkipSimplifiedLayerNormalization, which the loader lowers onto
 * it): one pass per row for the mean of squares, one for the scaled output, as LayerNormalization
 * in blis_nn.c; AVX-512, AVX2 and C builds of one body. */
#include <math.h>
#include <string.h>

#include "blis_conv.h"

typedef struct rms_state {
  int32_t x, y, scale;
  int32_t simd;
  int32_t scalar_scale; /* a one-value scale broadcast over the row */
  int64_t outer, len;
  float eps;
} rms_state_t;

/* The sum of squares in double over eight interleaved partial sums (a fixed order: the result does
 * not depend on the thread split), combined pairwise. */
static inline __attribute__((always_inline)) void rms_body(const mi__blis_task_t *nt, int64_t o0, int64_t o1) {
  const rms_state_t *st = nt->state;
  const float *x = nt->t[st->x], *g = nt->t[st->scale];
  float *y = nt->t[st->y];
  int64_t len = st->len, body = len / 8 * 8, j, l;
  for (int64_t o = o0; o < o1; o++) {
    const float *xr = x + o * len;
    float *yr = y + o * len;
    double ps[8] = {0};
    for (j = 0; j < body; j += 8)
      for (l = 0; l < 8; l++) ps[l] += (double)xr[j + l] * xr[j + l];
    for (l = 0; j + l < len; l++) ps[l] += (double)xr[j + l] * xr[j + l];
    double ss = ((ps[0] + ps[4]) + (ps[2] + ps[6])) + ((ps[1] + ps[5]) + (ps[3] + ps[7]));
    float inv = (float)(1.0 / sqrt(ss / (double)len + st->eps));
    if (st->scalar_scale) {
      float s = g[0] * inv;
      for (j = 0; j < len; j++) yr[j] = xr[j] * s;
    } else {
      for (j = 0; j < len; j++) yr[j] = xr[j] * inv * g[j];
    }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void rms_avx512(void *arg, int64_t o0, int64_t o1) {
  rms_body(arg, o0, o1);
}
__attribute__((target("avx2,fma"))) static void rms_avx2(void *arg, int64_t o0, int64_t o1) { rms_body(arg, o0, o1); }
static void rms_c(void *arg, int64_t o0, int64_t o1) { rms_body(arg, o0, o1); }

static int32_t run_rms(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const rms_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer, 1, st->len * 8,
                            st->simd == MI__SIMD_AVX512 ? rms_avx512
                            : st->simd == MI__SIMD_AVX2 ? rms_avx2
                                                        : rms_c);
}

int32_t mi__blis_prep_rms(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", -1), inner;
  if (!x || mi__blis_in(n, 1) < 0) return mi__blis_unsupported(err, n, "missing input");
  if (mi_sdk_attr_int(n, "stash_type", 1) != 1) return mi__blis_unsupported(err, n, "stash_type");
  rms_state_t *st = mi__blis_state_new(p, s, sizeof *st, err);
  if (!st) return MI_ERR_OUT_OF_MEMORY;
  if (x->rank < 1 || !mi__blis_axis_split(x, &axis, &st->outer, &st->len, &inner))
    return mi__blis_unsupported(err, n, "axis out of range");
  st->len *= inner; /* normalised over the axis and all after it */
  st->x = mi__blis_in(n, 0);
  st->scale = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->eps = mi_sdk_attr_float(n, "epsilon", 1e-5f);
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  int64_t ns = mi_sdk_numel(mi__blis_tensor(p, st->scale));
  /* a scale broadcast over part of the row (e.g. [1, H] under axis -2) runs on the host */
  if (ns != st->len && ns != 1) return mi__blis_unsupported(err, n, "scale must cover the normalized dims or be one value");
  st->scalar_scale = ns == 1 && st->len != 1;
  s->run = run_rms;
  return MI_OK;
}
