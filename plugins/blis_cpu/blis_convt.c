/* blis_convt.c - ConvTranspose as BLIS sgemm (W^T x X) followed by col2im, bias and the conv epilogue. */
#include <string.h>

#include "blis_conv.h"

typedef struct convt_task {
  const mi__blis_conv_t *c;
  void *const *t;
  int64_t n, g;
} convt_task_t;

/* Output plane m of group g from its kk rows of col: col[(m,kh,kw), (ih,iw)] lands on output pixel
 * (ih*sh - pt + kh*dh, iw*sw - pl + kw*dw). A 2x2 stride-2 ConvTranspose (a detector's upsampling:
 * each output pixel from exactly one tap) writes its rows directly, the two taps of a row
 * interleaved; any other form sums its taps into the zeroed plane, each row's valid input
 * columns found once rather than tested per element. The plane's bias and chain follow while it is
 * in cache (as the convs' epilogue). ppocr_v4_det's 24 -> 24 one at 80x80: 0.89 ms as a serial
 * element-by-element scatter with a bounds test per element and a second pass for the epilogue. */
static void plane_part(void *arg, int64_t m0, int64_t m1) {
  const convt_task_t *k = arg;
  const mi__blis_conv_t *c = k->c;
  const float *col = c->scratch;
  int64_t hw = c->H * c->W, ohw = c->OH * c->OW, mg = c->M / c->G, kk = c->KH * c->KW, m, ih, iw, kh, kw;
  int direct = c->KH == 2 && c->KW == 2 && c->sh == 2 && c->sw == 2 && c->dh == 1 && c->dw == 1 && c->pt == 0 &&
               c->pl == 0 && c->OH == 2 * c->H && c->OW == 2 * c->W;
  for (m = m0; m < m1; m++) {
    int64_t mo = k->g * mg + m;
    float *yc = (float *)k->t[c->y] + (k->n * c->M + mo) * ohw;
    const float *cm = col + m * kk * hw;
    if (direct) {
      for (ih = 0; ih < c->H; ih++)
        for (kh = 0; kh < 2; kh++) {
          const float *a = cm + (kh * 2) * hw + ih * c->W, *b = a + hw;
          float *row = yc + (2 * ih + kh) * c->OW;
          for (iw = 0; iw < c->W; iw++) {
            row[2 * iw] = a[iw];
            row[2 * iw + 1] = b[iw];
          }
        }
    } else {
      memset(yc, 0, (size_t)ohw * sizeof *yc);
      for (kh = 0; kh < c->KH; kh++)
        for (kw = 0; kw < c->KW; kw++) {
          const float *cr = cm + (kh * c->KW + kw) * hw;
          int64_t off = kw * c->dw - c->pl, i0, i1;
          /* iw with 0 <= iw*sw + off < OW */
          i0 = off >= 0 ? 0 : (-off + c->sw - 1) / c->sw;
          i1 = c->OW - 1 - off >= 0 ? (c->OW - 1 - off) / c->sw + 1 : 0;
          if (i1 > c->W) i1 = c->W;
          for (ih = 0; ih < c->H; ih++) {
            int64_t oh = ih * c->sh - c->pt + kh * c->dh;
            float *row;
            if (oh < 0 || oh >= c->OH) continue;
            row = yc + oh * c->OW;
            for (iw = i0; iw < i1; iw++) row[iw * c->sw + off] += cr[ih * c->W + iw];
          }
        }
    }
    if (c->affine || c->epi_n) mi__blis_epi_row(c, k->t, k->n, mo, yc);
  }
}

static int32_t run_convt(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  const float *x = t[c->x], *w = t[c->w];
  int64_t n, g, hw = c->H * c->W, ohw = c->OH * c->OW, cg = c->C / c->G, mg = c->M / c->G;
  int64_t kk = c->KH * c->KW;
  (void)err;
  for (n = 0; n < c->N; n++)
    for (g = 0; g < c->G; g++) {
      convt_task_t k = {c, t, n, g};
      /* col[(m,kh,kw), (ih,iw)] = sum_c W[c, m, kh, kw] * X[c, ih, iw] */
      mi__blis_sgemm(env, mg * kk, hw, cg, 1.f, w + g * cg * mg * kk, 1, mg * kk, x + (n * c->C + g * cg) * hw, hw,
                     1, 0.f, c->scratch, hw, 1);
      mi__blis_parallel(env, mg, 1, ohw * (2 + c->epi_n), plane_part, &k);
    }
  return MI_OK;
}

int32_t mi__blis_prep_convt(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int64_t st[2], d[2], pads[4], g;
  int32_t bias = mi__blis_in(n, 2);
  mi__blis_conv_t *c;
  if (!x || !w || !y || x->rank != 4 || w->rank != 4 || y->rank != 4 || !w->data)
    return mi__blis_unsupported(err, n, "only 2-D with constant weights");
  if (x->layout == MI_LAYOUT_NHWC || y->layout == MI_LAYOUT_NHWC) return mi__blis_unsupported(err, n, "NHWC");
  if (ap && ap->type == MI_ATTR_STRING && ap->s && strcmp(ap->s, "NOTSET") != 0 && strcmp(ap->s, "VALID") != 0)
    return mi__blis_unsupported(err, n, "auto_pad SAME");
  if (p->variant && strcmp(p->variant, "convtranspose.gemm_col2im") != 0)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "blis-cpu: variant does not implement ConvTranspose");
  if (!mi_sdk_attr_ints(n, "strides", st, 2, 1) || !mi_sdk_attr_ints(n, "dilations", d, 2, 1) || !mi_sdk_attr_ints(n, "pads", pads, 4, 0))
    return mi__blis_unsupported(err, n, "malformed strides/dilations/pads");
  g = mi_sdk_attr_int(n, "group", 1);
  if (!(c = mi__blis_conv_new(p, s, n, y->dims[1], err))) return MI_ERR_OUT_OF_MEMORY;
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa); /* the epilogue's vector path (blis_simd.c) */
  c->N = x->dims[0];
  c->C = x->dims[1];
  c->H = x->dims[2];
  c->W = x->dims[3];
  c->M = y->dims[1];
  c->OH = y->dims[2];
  c->OW = y->dims[3];
  c->G = g;
  c->KH = w->dims[2];
  c->KW = w->dims[3];
  c->sh = st[0];
  c->sw = st[1];
  c->dh = d[0];
  c->dw = d[1];
  c->pt = ap && ap->s && strcmp(ap->s, "VALID") == 0 ? 0 : pads[0];
  c->pl = ap && ap->s && strcmp(ap->s, "VALID") == 0 ? 0 : pads[1];
  if (g < 1 || c->C % g || w->dims[0] != c->C || w->dims[1] * g != c->M)
    return mi__blis_unsupported(err, n, "channel counts do not match group/weights");
  if (bias >= 0) {
    const mi_tensor_desc_t *b = mi__blis_tensor(p, bias);
    if (!b || !b->data || mi_sdk_numel(b) != c->M) return mi__blis_unsupported(err, n, "bias must be constant");
  }
  /* the bias, then the group's chain (a bias written as an Add, BN, activations, a residual) on each
   * finished plane, as the convs' epilogue */
  mi__blis_conv_epilogue(p, c, n);
  s->aux = mi__blis_alloc(p->ctx, (uint64_t)(c->M / g * c->KH * c->KW * c->H * c->W) * sizeof(float) + 4);
  if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  c->scratch = s->aux;
  s->run = run_convt;
  return MI_OK;
}

mi__blis_conv_t *mi__blis_conv_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n, int64_t m,
                                   mi_error_t *err) {
  mi__blis_conv_t *c = mi__blis_state_new(p, s, sizeof *c + (uint64_t)m * 2 * sizeof(float), err);
  if (!c) return NULL;
  c->scale = (float *)(c + 1);
  c->shift = c->scale + m;
  c->x = mi__blis_in(n, 0);
  c->w = mi__blis_in(n, 1);
  c->y = mi__blis_out(n, 0);
  return c;
}
