/* blis-cpu's LpPool and GlobalLpPool (FLOAT32, 1-D and 2-D NCHW): per plane, |x|^p once per
 * element into a zero-padded copy, the window sums as a row pass then a column pass (KH + KW adds
 * an output instead of KH x KW powers), the p-th root at the end. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

typedef struct lp_state {
  int32_t x, y, simd;
  int64_t planes, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  int64_t HP, WP; /* the padded copy: every window of every output lies inside it */
  float p;
  int32_t global;
} lp_state_t;

static inline __attribute__((always_inline)) float lp_pow(float v, float p) {
  v = fabsf(v);
  return p == 2.0f ? v * v : p == 1.0f ? v
                                       : powf(v, p);
}

static inline __attribute__((always_inline)) float lp_root(float s, float p) {
  return p == 2.0f ? sqrtf(s) : p == 1.0f ? s
                                          : powf(s, 1.0f / p);
}

typedef struct lp_task {
  const lp_state_t *state;
  void *const *t;
  atomic_int failed; /* a part found no memory for its plane */
} lp_task_t;

/* Items are (image, channel) planes; each part holds one padded plane and its row sums. */
static inline __attribute__((always_inline)) void lp_body(lp_task_t *tk, int64_t p0, int64_t p1) {
  const lp_state_t *st = tk->state;
  const float *x = tk->t[st->x];
  float *y = tk->t[st->y];
  const float p = st->p;
  if (st->global) {
    int64_t S = st->H * st->W;
    for (int64_t pl = p0; pl < p1; pl++) {
      const float *xp = x + pl * S;
      float s = 0.0f;
      if (p == 2.0f)
        for (int64_t i = 0; i < S; i++) s += xp[i] * xp[i];
      else
        for (int64_t i = 0; i < S; i++) s += lp_pow(xp[i], p);
      y[pl] = lp_root(s, p);
    }
    return;
  }
  float *pad = malloc((size_t)(st->HP * st->WP + st->HP * st->OW) * sizeof(float));
  if (!pad) {
    atomic_store(&tk->failed, 1);
    return;
  }
  float *rows = pad + st->HP * st->WP;
  memset(pad, 0, (size_t)(st->HP * st->WP) * sizeof(float));
  for (int64_t pl = p0; pl < p1; pl++) {
    const float *xp = x + pl * st->H * st->W;
    for (int64_t h = 0; h < st->H; h++) {
      const float *xr = xp + h * st->W;
      float *pr = pad + (h + st->pt) * st->WP + st->pl;
      if (p == 2.0f)
        for (int64_t w = 0; w < st->W; w++) pr[w] = xr[w] * xr[w];
      else if (p == 1.0f)
        for (int64_t w = 0; w < st->W; w++) pr[w] = fabsf(xr[w]);
      else
        for (int64_t w = 0; w < st->W; w++) pr[w] = lp_pow(xr[w], p);
    }
    for (int64_t h = 0; h < st->HP; h++) {
      const float *pr = pad + h * st->WP;
      float *rr = rows + h * st->OW;
      for (int64_t ow = 0; ow < st->OW; ow++) rr[ow] = 0.0f;
      for (int64_t kw = 0; kw < st->KW; kw++) {
        const float *src = pr + kw * st->dw;
        if (st->sw == 1)
          for (int64_t ow = 0; ow < st->OW; ow++) rr[ow] += src[ow];
        else
          for (int64_t ow = 0; ow < st->OW; ow++) rr[ow] += src[ow * st->sw];
      }
    }
    float *yp = y + pl * st->OH * st->OW;
    for (int64_t oh = 0; oh < st->OH; oh++) {
      float *yr = yp + oh * st->OW;
      for (int64_t ow = 0; ow < st->OW; ow++) yr[ow] = 0.0f;
      for (int64_t kh = 0; kh < st->KH; kh++) {
        const float *rr = rows + (oh * st->sh + kh * st->dh) * st->OW;
        for (int64_t ow = 0; ow < st->OW; ow++) yr[ow] += rr[ow];
      }
      if (p == 2.0f)
        for (int64_t ow = 0; ow < st->OW; ow++) yr[ow] = sqrtf(yr[ow]);
      else if (p != 1.0f)
        for (int64_t ow = 0; ow < st->OW; ow++) yr[ow] = lp_root(yr[ow], p);
    }
  }
  free(pad);
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void lp_avx512(void *arg, int64_t p0, int64_t p1) {
  lp_body(arg, p0, p1);
}
__attribute__((target("avx2,fma"))) static void lp_avx2(void *arg, int64_t p0, int64_t p1) { lp_body(arg, p0, p1); }
static void lp_c(void *arg, int64_t p0, int64_t p1) { lp_body(arg, p0, p1); }

static int32_t run_lp(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const lp_state_t *st = s->state;
  lp_task_t task;
  int64_t work = st->global ? st->H * st->W * 2 : st->HP * st->WP * 2 + st->HP * st->OW * st->KW + st->OH * st->OW * st->KH;
  task.state = st;
  task.t = t;
  atomic_init(&task.failed, 0);
  mi__blis_parallel(env, st->planes, 1, work,
                    st->simd == MI__SIMD_AVX512 ? lp_avx512 : st->simd == MI__SIMD_AVX2 ? lp_avx2
                                                                                        : lp_c,
                    &task);
  if (atomic_load(&task.failed))
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "LpPool: no memory for a padded %lld x %lld plane",
                         (long long)st->HP, (long long)st->WP);
  return MI_OK;
}

int32_t mi__blis_prep_lppool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_attr_t *pa = mi_sdk_attr(n, "p");
  int global = !strcmp(n->op_type, "GlobalLpPool");
  float pv = !pa ? 2.0f : pa->type == MI_ATTR_FLOAT ? pa->f
                      : pa->type == MI_ATTR_INT     ? (float)pa->i
                                                    : -1.0f;
  int64_t k[2] = {1, 1}, st_[2] = {1, 1}, dl[2] = {1, 1}, pads[4] = {0, 0, 0, 0}, in[2], out[2];
  lp_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || y->rank != x->rank ||
      (!global && x->rank != 3 && x->rank != 4) || (global && x->rank < 3))
    return mi__blis_unsupported(err, n, "X must be FLOAT32 [N, C, W] or [N, C, H, W]");
  if (!(pv > 0.0f) || pv > 1e6f) return mi__blis_unsupported(err, n, "p must be a positive number");
  int32_t nsp = x->rank - 2, off = 2 - nsp;
  in[0] = nsp == 2 ? x->dims[2] : 1;
  in[1] = x->dims[x->rank - 1];
  if (global) {
    in[0] = 1;
    in[1] = x->dims[0] * x->dims[1] > 0 ? mi_sdk_numel(x) / (x->dims[0] * x->dims[1]) : 0;
  } else {
    int ap = mi_sdk_auto_pad_from_name(mi_sdk_attr_string(n, "auto_pad", "NOTSET"));
    int ceil_mode = (int)mi_sdk_attr_int(n, "ceil_mode", 0);
    int64_t kk[2], ss[2], dd[2], pp[4];
    if (!mi_sdk_attr_ints(n, "kernel_shape", kk, nsp, 1) || !mi_sdk_attr(n, "kernel_shape") ||
        !mi_sdk_attr_ints(n, "strides", ss, nsp, 1) || !mi_sdk_attr_ints(n, "dilations", dd, nsp, 1) ||
        !mi_sdk_attr_ints(n, "pads", pp, 2 * nsp, 0) || ap < 0)
      return mi__blis_unsupported(err, n, "kernel_shape, strides, dilations, pads or auto_pad do not fit the input");
    for (int32_t i = 0; i < nsp; i++) {
      k[off + i] = kk[i], st_[off + i] = ss[i], dl[off + i] = dd[i];
      pads[off + i] = pp[i], pads[2 + off + i] = pp[nsp + i];
    }
    for (int32_t d = 0; d < 2; d++) {
      if (k[d] < 1 || st_[d] < 1 || dl[d] < 1 || pads[d] < 0 || pads[2 + d] < 0 || k[d] > 1 << 20 ||
          st_[d] > 1 << 20 || dl[d] > 1 << 20 || pads[d] > 1 << 20 || pads[2 + d] > 1 << 20)
        return mi__blis_unsupported(err, n, "kernel, strides, dilations must be >= 1 and pads >= 0");
      if (ap == MI_SDK_AUTO_PAD_VALID) pads[d] = pads[2 + d] = 0;
      out[d] = mi_sdk_window_out(ap, in[d], k[d], st_[d], dl[d], pads[d], pads[2 + d], ceil_mode);
      if (ap == MI_SDK_AUTO_PAD_SAME_UPPER || ap == MI_SDK_AUTO_PAD_SAME_LOWER)
        mi_sdk_same_pads(ap, (out[d] - 1) * st_[d] + (k[d] - 1) * dl[d] + 1 - in[d], &pads[d], &pads[2 + d]);
    }
    if (out[0] < 1 || out[1] < 1 || (nsp == 2 && y->dims[2] != out[0]) || y->dims[y->rank - 1] != out[1])
      return mi__blis_unsupported(err, n, "the output's shape is not the window's");
  }
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->planes = x->dims[0] * x->dims[1];
  st->H = in[0], st->W = in[1], st->p = pv, st->global = global;
  if (!global) {
    st->KH = k[0], st->KW = k[1], st->sh = st_[0], st->sw = st_[1], st->dh = dl[0], st->dw = dl[1];
    st->pt = pads[0], st->pl = pads[1], st->OH = out[0], st->OW = out[1];
    /* rows and columns up to the last window's end (ceil_mode may reach past the end pad) */
    st->HP = (out[0] - 1) * st_[0] + (k[0] - 1) * dl[0] + 1;
    st->WP = (out[1] - 1) * st_[1] + (k[1] - 1) * dl[1] + 1;
    if (st->HP < st->pt + st->H) st->HP = st->pt + st->H;
    if (st->WP < st->pl + st->W) st->WP = st->pl + st->W;
  }
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  s->run = run_lp;
  return MI_OK;
}
