/* blis_col2im.c - blis-cpu's Col2Im (2-D, FLOAT32, constant image_shape and block_shape): each
 * (image, channel) plane summed from its KH x KW column rows, one output row segment at a time. */
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

typedef struct c2i_state {
  int32_t x, y, simd;
  int64_t planes, H, W, KH, KW, LH, LW, sh, sw, dh, dw, pt, pl;
} c2i_state_t;

/* Items are planes; for each tap and block row, the block columns whose image column is inside
 * the row are a contiguous range, added at stride sw. */
static inline __attribute__((always_inline)) void c2i_body(const mi__blis_task_t *tk, int64_t p0, int64_t p1) {
  const c2i_state_t *st = tk->state;
  const float *x = tk->t[st->x];
  float *y = tk->t[st->y];
  int64_t L = st->LH * st->LW;
  for (int64_t pl = p0; pl < p1; pl++) {
    float *yp = y + pl * st->H * st->W;
    memset(yp, 0, (size_t)(st->H * st->W) * sizeof(float));
    for (int64_t kh = 0; kh < st->KH; kh++)
      for (int64_t kw = 0; kw < st->KW; kw++) {
        const float *row = x + (pl * st->KH * st->KW + kh * st->KW + kw) * L;
        int64_t c0 = kw * st->dw - st->pl, lo = 0, hi = st->LW; /* image column of block column 0 */
        while (lo < hi && c0 + lo * st->sw < 0) lo++;
        while (hi > lo && c0 + (hi - 1) * st->sw >= st->W) hi--;
        for (int64_t lh = 0; lh < st->LH; lh++) {
          int64_t r = lh * st->sh - st->pt + kh * st->dh;
          if (r < 0 || r >= st->H) continue;
          const float *src = row + lh * st->LW;
          float *dst = yp + r * st->W;
          if (st->sw == 1)
            for (int64_t l = lo; l < hi; l++) dst[c0 + l] += src[l];
          else
            for (int64_t l = lo; l < hi; l++) dst[c0 + l * st->sw] += src[l];
        }
      }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void c2i_avx512(void *arg, int64_t p0, int64_t p1) {
  c2i_body(arg, p0, p1);
}
__attribute__((target("avx2,fma"))) static void c2i_avx2(void *arg, int64_t p0, int64_t p1) { c2i_body(arg, p0, p1); }
static void c2i_c(void *arg, int64_t p0, int64_t p1) { c2i_body(arg, p0, p1); }

static int32_t run_c2i(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const c2i_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->planes, 1, st->H * st->W + st->KH * st->KW * st->LH * st->LW,
                            st->simd == MI__SIMD_AVX512 ? c2i_avx512 : st->simd == MI__SIMD_AVX2 ? c2i_avx2
                                                                                                 : c2i_c);
}

int32_t mi__blis_prep_col2im(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t img[2], blk[2], ss[2], dd[2], pp[4], L[2];
  c2i_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank != 3 || y->rank != 4)
    return mi__blis_unsupported(err, n, "2-D Col2Im on FLOAT32 only");
  if (mi__blis_const_ints(p, mi__blis_in(n, 1), img, 2) != 2 || mi__blis_const_ints(p, mi__blis_in(n, 2), blk, 2) != 2)
    return mi__blis_unsupported(err, n, "image_shape and block_shape must be constants of 2 values");
  if (!mi_sdk_attr_ints(n, "strides", ss, 2, 1) || !mi_sdk_attr_ints(n, "dilations", dd, 2, 1) ||
      !mi_sdk_attr_ints(n, "pads", pp, 4, 0))
    return mi__blis_unsupported(err, n, "strides, dilations or pads do not fit a 2-D image");
  for (int d = 0; d < 2; d++) {
    if (img[d] < 1 || blk[d] < 1 || ss[d] < 1 || dd[d] < 1 || pp[d] < 0 || pp[2 + d] < 0 || img[d] > INT32_MAX ||
        blk[d] > INT32_MAX || ss[d] > INT32_MAX || dd[d] > INT32_MAX || pp[d] > INT32_MAX || pp[2 + d] > INT32_MAX)
      return mi__blis_unsupported(err, n, "image_shape, block_shape, strides, dilations, pads out of range");
    int64_t span = img[d] + pp[d] + pp[2 + d] - (dd[d] * (blk[d] - 1) + 1);
    if (span < 0) return mi__blis_unsupported(err, n, "the block does not fit the padded image");
    L[d] = span / ss[d] + 1;
  }
  if (x->dims[1] % (blk[0] * blk[1]) || x->dims[2] != L[0] * L[1] || y->dims[0] != x->dims[0] ||
      y->dims[1] != x->dims[1] / (blk[0] * blk[1]) || y->dims[2] != img[0] || y->dims[3] != img[1])
    return mi__blis_unsupported(err, n, "the input's shape does not fit image_shape and block_shape");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0), st->y = mi__blis_out(n, 0);
  st->planes = y->dims[0] * y->dims[1], st->H = img[0], st->W = img[1], st->KH = blk[0], st->KW = blk[1];
  st->LH = L[0], st->LW = L[1], st->sh = ss[0], st->sw = ss[1], st->dh = dd[0], st->dw = dd[1];
  st->pt = pp[0], st->pl = pp[1];
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  s->run = run_c2i;
  return MI_OK;
}
