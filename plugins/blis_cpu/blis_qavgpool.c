/* blis_qavgpool.c - com.microsoft QLinearAveragePool (1-D and 2-D, NCHW or channels_last) with
 * the reference's arithmetic (framework/src/ref/ref_qlinear.c, ONNX Runtime's): codes dequantized
 * in float, summed in float over the window clipped to the input in row order, divided by the
 * kernel size (count_include_pad) or the clipped window's, quantized as nearbyint(v / y_scale +
 * y_zp) in float and saturated; a window covering the whole unpadded input takes the global
 * pool's exact integer sum scaled once in double. Planes (or images, NHWC) split across threads. */
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

typedef struct qap {
  int32_t x, y, s8, last, incl, global, zx, zy;
  int64_t N, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw; /* 1-D: H = OH = kh = sh = 1, ph = 0 */
  float sx, sy;
  double mult; /* global: sx / (sy * H * W) */
} qap_t;

static inline int32_t code(const void *x, int s8, int64_t i) {
  return s8 ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i];
}

/* Planes [b, e): plane p is (n, c) = (p / C, p % C). */
static void qap_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *t = arg;
  const qap_t *q = t->state;
  const void *x = t->t[q->x];
  uint8_t *y = t->t[q->y];
  float lo = q->s8 ? -128.0f : 0.0f, hi = q->s8 ? 127.0f : 255.0f;
  for (int64_t p = b; p < e; p++) {
    int64_t n = p / q->C, ch = p % q->C;
    /* element (h, w) of plane p, and output element (oh, ow) */
    int64_t xs = q->last ? q->C : 1, xb = q->last ? n * q->H * q->W * q->C + ch : p * q->H * q->W;
    int64_t yb = q->last ? n * q->OH * q->OW * q->C + ch : p * q->OH * q->OW;
    if (q->global) {
      int64_t sum = 0;
      for (int64_t i = 0; i < q->H * q->W; i++) sum += code(x, q->s8, xb + i * xs) - q->zx;
      double r = rint((double)sum * q->mult) + q->zy;
      r = r < lo ? lo : r > hi ? hi
                               : r;
      y[yb] = (uint8_t)(int32_t)r;
      continue;
    }
    for (int64_t oh = 0; oh < q->OH; oh++)
      for (int64_t ow = 0; ow < q->OW; ow++) {
        int64_t h0 = oh * q->sh - q->ph, w0 = ow * q->sw - q->pw;
        int64_t h1 = h0 + q->kh < q->H ? h0 + q->kh : q->H, w1 = w0 + q->kw < q->W ? w0 + q->kw : q->W;
        h0 = h0 > 0 ? h0 : 0;
        w0 = w0 > 0 ? w0 : 0;
        float sum = 0.0f;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) sum += q->sx * (float)(code(x, q->s8, xb + (ih * q->W + iw) * xs) - q->zx);
        int64_t cnt = q->incl ? q->kh * q->kw : (h1 - h0) * (w1 - w0);
        float v = cnt > 0 ? sum / (float)cnt : 0.0f;
        v = nearbyintf(v / q->sy + (float)q->zy);
        v = v < lo ? lo : v > hi ? hi
                                 : v;
        y[yb + (oh * q->OW + ow) * xs] = (uint8_t)(int32_t)v;
      }
  }
}

static int32_t run_qap(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qap_t *q = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, q->N * q->C, 1, q->OH * q->OW * q->kh * q->kw + q->H * q->W, qap_part);
}

int32_t mi__blis_prep_qavgpool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const char *ap = mi_sdk_attr_string(n, "auto_pad", "NOTSET");
  int64_t last = mi_sdk_attr_int(n, "channels_last", 0);
  qap_t *q;
  if (p->desc->node_count != 1) return mi__blis_unsupported(err, n, "runs alone, not in a fused group");
  if (!x || !y || !mi__blis_is_q8(x) || y->dtype != x->dtype || x->data || (x->rank != 3 && x->rank != 4) ||
      y->rank != x->rank)
    return mi__blis_unsupported(err, n, "needs runtime INT8/UINT8 codes of rank 3 or 4 in and out");
  if ((last != 0 && last != 1) || (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")))
    return mi__blis_unsupported(err, n, "channels_last 0/1 and auto_pad NOTSET or VALID only");
  int32_t sp = x->rank - 2, valid = !strcmp(ap, "VALID");
  for (int32_t i = 0; i < sp; i++)
    if (mi_sdk_attr_ints_at(n, "dilations", i, 1) != 1) return mi__blis_unsupported(err, n, "dilations other than 1");
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  s->run = run_qap;
  if (!mi__blis_qpair_f(p, n, 1, 2, x->dtype, &q->sx, &q->zx) || !mi__blis_qpair_f(p, n, 3, 4, x->dtype, &q->sy, &q->zy))
    return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
  /* NCHW view: C and the spatial dims of x and y */
  int64_t xd[4], yd[4];
  for (int32_t i = 0; i < x->rank; i++) {
    int32_t src = !last ? i : i == 0 ? 0
                          : i == 1   ? x->rank - 1
                                     : i - 1;
    xd[i] = x->dims[src];
    yd[i] = y->dims[src];
  }
  q->N = xd[0];
  q->C = xd[1];
  q->H = sp == 2 ? xd[2] : 1;
  q->W = xd[x->rank - 1];
  q->OH = sp == 2 ? yd[2] : 1;
  q->OW = yd[x->rank - 1];
  q->kh = sp == 2 ? mi_sdk_attr_ints_at(n, "kernel_shape", 0, -1) : 1;
  q->kw = mi_sdk_attr_ints_at(n, "kernel_shape", sp - 1, -1);
  q->sh = sp == 2 ? mi_sdk_attr_ints_at(n, "strides", 0, 1) : 1;
  q->sw = mi_sdk_attr_ints_at(n, "strides", sp - 1, 1);
  q->ph = sp == 2 && !valid ? mi_sdk_attr_ints_at(n, "pads", 0, 0) : 0;
  q->pw = valid ? 0 : mi_sdk_attr_ints_at(n, "pads", sp - 1, 0);
  int64_t ph_end = sp == 2 && !valid ? mi_sdk_attr_ints_at(n, "pads", 2, 0) : 0;
  int64_t pw_end = valid ? 0 : mi_sdk_attr_ints_at(n, "pads", 2 * sp - 1, 0);
  if (q->kh < 1 || q->kw < 1 || q->sh < 1 || q->sw < 1 || q->ph < 0 || q->pw < 0 || yd[1] != q->C || yd[0] != q->N)
    return mi__blis_unsupported(err, n, "bad kernel_shape, strides or pads");
  q->x = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->s8 = x->dtype == MI_DTYPE_INT8;
  q->last = (int32_t)last;
  q->incl = mi_sdk_attr_int(n, "count_include_pad", 0) != 0;
  q->global = q->kh == q->H && q->kw == q->W && !q->ph && !q->pw && !ph_end && !pw_end;
  if (q->global && (q->OH != 1 || q->OW != 1)) return mi__blis_unsupported(err, n, "a whole-input window gives 1x1");
  q->mult = (double)q->sx / ((double)q->sy * (double)(q->H * q->W));
  return MI_OK;
}
