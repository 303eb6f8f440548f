/* blis_pool.c - MaxPool, AveragePool (pads, strides, dilations, ceil_mode) and global pools. */
#include <math.h>
#include <string.h>

#include "blis_internal.h"

typedef struct pool_state {
  int32_t x, y, is_max, include_pad;
  int64_t NC, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} pool_state_t;

typedef struct pool_task {
  const pool_state_t *q;
  const float *x;
  float *y;
} pool_task_t;

/* Items are (image, channel) planes. */
static void pool_part(void *arg, int64_t c0, int64_t c1) {
  const pool_task_t *pt = arg;
  const pool_state_t *q = pt->q;
  const float *x = pt->x;
  float *y = pt->y;
  int64_t c, oh, ow, kh, kw;
  for (c = c0; c < c1; c++) {
    const float *xc = x + c * q->H * q->W;
    for (oh = 0; oh < q->OH; oh++)
      for (ow = 0; ow < q->OW; ow++) {
        float acc = q->is_max ? -INFINITY : 0.f;
        int64_t cnt = 0, h0 = oh * q->sh - q->pt, w0 = ow * q->sw - q->pl, padded;
        for (kh = 0; kh < q->KH; kh++) {
          int64_t ih = h0 + kh * q->dh;
          if (ih < 0 || ih >= q->H) continue;
          for (kw = 0; kw < q->KW; kw++) {
            int64_t iw = w0 + kw * q->dw;
            if (iw < 0 || iw >= q->W) continue;
            float v = xc[ih * q->W + iw];
            /* fmaxf without the libm call: acc starts at -inf and never becomes NaN, and a
             * NaN v leaves acc as fmaxf does */
            acc = q->is_max ? (v > acc ? v : acc) : acc + v;
            cnt++;
          }
        }
        if (!q->is_max) {
          if (q->include_pad) {
            /* The window counts pads but not the ceil_mode overhang past them. */
            int64_t he = h0 + (q->KH - 1) * q->dh + 1, we = w0 + (q->KW - 1) * q->dw + 1;
            if (he > q->H + q->pb) he = q->H + q->pb;
            if (we > q->W + q->pr) we = q->W + q->pr;
            padded = ((he - h0 + q->dh - 1) / q->dh) * ((we - w0 + q->dw - 1) / q->dw);
            cnt = padded;
          }
          acc = cnt ? acc / (float)cnt : 0.f;
        }
        y[(c * q->OH + oh) * q->OW + ow] = acc;
      }
  }
}

static int32_t run_pool(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  pool_task_t pt;
  pt.q = s->state;
  pt.x = t[pt.q->x];
  pt.y = t[pt.q->y];
  (void)err;
  mi__blis_parallel(env, pt.q->NC, 1, pt.q->OH * pt.q->OW * pt.q->KH * pt.q->KW, pool_part, &pt);
  return MI_OK;
}

static int ints2(const mi_node_desc_t *n, const char *name, int64_t *out, int32_t want, int64_t dflt) {
  const mi_attr_t *a = mi_sdk_attr(n, name);
  int32_t i;
  for (i = 0; i < want; i++) out[i] = dflt;
  if (!a) return 1;
  if (a->type != MI_ATTR_INTS || a->count != want) return 0;
  for (i = 0; i < want; i++) out[i] = a->ints[i];
  return 1;
}

int32_t mi__blis_prep_pool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int global = strncmp(n->op_type, "Global", 6) == 0;
  int64_t k[2] = {1, 1}, st[2] = {1, 1}, d[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  pool_state_t *q;
  if (!x || !y || x->rank != 4 || y->rank != 4 || x->layout == MI_LAYOUT_NHWC)
    return mi__blis_unsupported(err, n, "only 2-D NCHW pooling");
  if (mi__blis_out(n, 1) >= 0) return mi__blis_unsupported(err, n, "MaxPool Indices output");
  if (mi_sdk_attr_int(n, "storage_order", 0) != 0) return mi__blis_unsupported(err, n, "storage_order");
  q = mi__blis_calloc(p->ctx, sizeof *q);
  if (!q) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  s->state = q;
  if (global) {
    k[0] = x->dims[2];
    k[1] = x->dims[3];
  } else if (!ints2(n, "kernel_shape", k, 2, 1) || !ints2(n, "strides", st, 2, 1) ||
             !ints2(n, "dilations", d, 2, 1) || !ints2(n, "pads", pads, 4, 0)) {
    return mi__blis_unsupported(err, n, "malformed kernel_shape/strides/dilations/pads");
  }
  q->x = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->is_max = strstr(n->op_type, "Max") != NULL;
  q->include_pad = (int32_t)mi_sdk_attr_int(n, "count_include_pad", 0);
  q->NC = x->dims[0] * x->dims[1];
  q->H = x->dims[2];
  q->W = x->dims[3];
  q->OH = y->dims[2];
  q->OW = y->dims[3];
  q->KH = k[0]; q->KW = k[1]; q->sh = st[0]; q->sw = st[1]; q->dh = d[0]; q->dw = d[1];
  q->pt = pads[0]; q->pl = pads[1]; q->pb = pads[2]; q->pr = pads[3];
  if (ap && ap->type == MI_ATTR_STRING && ap->s && strncmp(ap->s, "SAME", 4) == 0) {
    int64_t th = (q->OH - 1) * q->sh + (q->KH - 1) * q->dh + 1 - q->H;
    int64_t tw = (q->OW - 1) * q->sw + (q->KW - 1) * q->dw + 1 - q->W;
    th = th > 0 ? th : 0;
    tw = tw > 0 ? tw : 0;
    q->pt = ap->s[5] == 'U' ? th / 2 : th - th / 2;
    q->pl = ap->s[5] == 'U' ? tw / 2 : tw - tw / 2;
    q->pb = th - q->pt;
    q->pr = tw - q->pl;
  }
  s->run = run_pool;
  return MI_OK;
}
