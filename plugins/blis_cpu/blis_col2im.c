/* blis_col2im.c - blis-cpu's Col2Im (FLOAT32, any number of spatial dims, constant image_shape and
 * block_shape): each (image, channel) plane summed from its column rows, one output line segment
 * at a time, in the reference's order (framework/src/ref/ref_col2im.c). */
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

#define C2I_MAX (MI_MAX_RANK - 2)

typedef struct c2i_state {
  int32_t x, y, simd, ni; /* ni: spatial dims */
  int64_t planes, plane, kprod, lprod;
  int64_t img[C2I_MAX], blk[C2I_MAX], cnt[C2I_MAX], str[C2I_MAX], dil[C2I_MAX], pad[C2I_MAX]; /* pad: the leading ones */
} c2i_state_t;

/* Items are planes. For each block position (the column rows in order, so each output value sums
 * its terms in the reference's order) and each line of blocks along the last spatial dim, the
 * block columns whose image position is inside the line are a contiguous range, added at the
 * last dim's stride. */
static inline __attribute__((always_inline)) void c2i_body(const mi__blis_task_t *tk, int64_t p0, int64_t p1) {
  const c2i_state_t *st = tk->state;
  const float *x = tk->t[st->x];
  float *y = tk->t[st->y];
  int32_t last = st->ni - 1;
  int64_t W = st->img[last], LW = st->cnt[last], sw = st->str[last], lines = st->lprod / LW;
  for (int64_t pl = p0; pl < p1; pl++) {
    float *yp = y + pl * st->plane;
    int64_t bi[C2I_MAX] = {0};
    memset(yp, 0, (size_t)st->plane * sizeof(float));
    for (int64_t k = 0; k < st->kprod; k++) {
      const float *row = x + (pl * st->kprod + k) * st->lprod;
      int64_t c0 = bi[last] * st->dil[last] - st->pad[last], lo = 0, hi = LW; /* image position of block column 0 */
      int64_t li[C2I_MAX] = {0};
      while (lo < hi && c0 + lo * sw < 0) lo++;
      while (hi > lo && c0 + (hi - 1) * sw >= W) hi--;
      for (int64_t ln = 0; ln < lines; ln++) {
        int64_t at = 0, inside = 1;
        for (int32_t d = 0; d < last; d++) {
          int64_t q = li[d] * st->str[d] - st->pad[d] + bi[d] * st->dil[d];
          inside &= q >= 0 && q < st->img[d];
          at = at * st->img[d] + q;
        }
        for (int32_t d = last - 1; d >= 0 && ++li[d] == st->cnt[d]; d--) li[d] = 0;
        if (!inside) continue;
        const float *src = row + ln * LW;
        float *dst = yp + at * W;
        if (sw == 1)
          for (int64_t l = lo; l < hi; l++) dst[c0 + l] += src[l];
        else
          for (int64_t l = lo; l < hi; l++) dst[c0 + l * sw] += src[l];
      }
      for (int32_t d = last; d >= 0 && ++bi[d] == st->blk[d]; d--) bi[d] = 0;
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
  return mi__blis_run_parts(s, t, env, st->planes, 1, st->plane + st->kprod * st->lprod,
                            st->simd == MI__SIMD_AVX512 ? c2i_avx512 : st->simd == MI__SIMD_AVX2 ? c2i_avx2
                                                                                                 : c2i_c);
}

int32_t mi__blis_prep_col2im(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t img[C2I_MAX], blk[C2I_MAX], ss[C2I_MAX], dd[C2I_MAX], pp[2 * C2I_MAX], L[C2I_MAX], kprod = 1, lprod = 1;
  int32_t ni, nb, d;
  c2i_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank != 3)
    return mi__blis_unsupported(err, n, "input must be FLOAT32 [N, C x block, L]");
  ni = mi__blis_const_ints(p, mi__blis_in(n, 1), img, C2I_MAX);
  nb = mi__blis_const_ints(p, mi__blis_in(n, 2), blk, C2I_MAX);
  if (ni < 1 || ni != nb || y->rank != 2 + ni)
    return mi__blis_unsupported(err, n, "image_shape and block_shape must be constants of one length, 1 to 6 values");
  if (!mi_sdk_attr_ints(n, "strides", ss, ni, 1) || !mi_sdk_attr_ints(n, "dilations", dd, ni, 1) ||
      !mi_sdk_attr_ints(n, "pads", pp, 2 * ni, 0))
    return mi__blis_unsupported(err, n, "strides, dilations or pads do not fit the image's dims");
  for (d = 0; d < ni; d++) {
    if (img[d] < 1 || blk[d] < 1 || ss[d] < 1 || dd[d] < 1 || pp[d] < 0 || pp[ni + d] < 0 || img[d] > INT32_MAX ||
        blk[d] > INT32_MAX || ss[d] > INT32_MAX || dd[d] > INT32_MAX || pp[d] > INT32_MAX || pp[ni + d] > INT32_MAX)
      return mi__blis_unsupported(err, n, "image_shape, block_shape, strides, dilations, pads out of range");
    int64_t span = img[d] + pp[d] + pp[ni + d] - (dd[d] * (blk[d] - 1) + 1);
    if (span < 0) return mi__blis_unsupported(err, n, "the block does not fit the padded image");
    L[d] = span / ss[d] + 1;
    kprod *= blk[d];
    lprod *= L[d];
    if (kprod > x->dims[1] || lprod > x->dims[2]) break; /* refused below, before any overflow */
  }
  if (d < ni || x->dims[1] % kprod || x->dims[2] != lprod || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] / kprod)
    return mi__blis_unsupported(err, n, "the input's shape does not fit image_shape and block_shape");
  for (d = 0; d < ni; d++)
    if (y->dims[2 + d] != img[d]) return mi__blis_unsupported(err, n, "the output's shape is not image_shape");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0), st->y = mi__blis_out(n, 0);
  st->ni = ni;
  st->planes = y->dims[0] * y->dims[1];
  st->plane = 1;
  for (d = 0; d < ni; d++) {
    st->img[d] = img[d], st->blk[d] = blk[d], st->cnt[d] = L[d], st->str[d] = ss[d], st->dil[d] = dd[d], st->pad[d] = pp[d];
    st->plane *= img[d];
  }
  st->kprod = kprod;
  st->lprod = lprod;
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  s->run = run_c2i;
  return MI_OK;
}
