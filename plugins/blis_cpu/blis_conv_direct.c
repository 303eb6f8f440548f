/* blis_conv_direct.c - direct convolutions: depthwise (NCHW) and oc-blocked NHWC. */
#include <string.h>

#include "blis_conv.h"

/* Depthwise: channel m reads input channel m / (M / C); one pass per output row. */
static void run_dw(const mi__blis_conv_t *c, void *const *t) {
  const float *x = t[c->x], *w = t[c->w];
  float *y = t[c->y];
  int64_t n, m, oh, ow, kh, kw, mult = c->M / c->C, ohw = c->OH * c->OW;
  for (n = 0; n < c->N; n++)
    for (m = 0; m < c->M; m++) {
      const float *xc = x + (n * c->C + m / mult) * c->H * c->W, *wm = w + m * c->KH * c->KW;
      float *row = y + (n * c->M + m) * ohw;
      for (oh = 0; oh < c->OH; oh++) {
        float *yr = row + oh * c->OW;
        for (ow = 0; ow < c->OW; ow++) yr[ow] = 0.f;
        for (kh = 0; kh < c->KH; kh++) {
          int64_t ih = oh * c->sh - c->pt + kh * c->dh;
          const float *xr;
          if (ih < 0 || ih >= c->H) continue;
          xr = xc + ih * c->W;
          for (kw = 0; kw < c->KW; kw++) {
            float wv = wm[kh * c->KW + kw];
            int64_t off = kw * c->dw - c->pl, lo = 0, hi = c->OW;
            /* valid ow: 0 <= ow*sw + off < W */
            while (lo < hi && lo * c->sw + off < 0) lo++;
            while (hi > lo && (hi - 1) * c->sw + off >= c->W) hi--;
            if (c->sw == 1)
              for (ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow + off];
            else
              for (ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * c->sw + off];
          }
        }
      }
      if (c->affine || c->epi_n) mi__blis_epi_row(c, t, n, m, row);
    }
}

/* Repacks OIHW weights to [G][KH][KW][C/G][M/G] so the inner loop runs over output channels. */
int32_t mi__blis_conv_pack_nhwc(mi__blis_conv_t *c, const float *w) {
  int64_t g, o, i, kh, kw, cg = c->C / c->G, mg = c->M / c->G;
  for (g = 0; g < c->G; g++)
    for (o = 0; o < mg; o++)
      for (i = 0; i < cg; i++)
        for (kh = 0; kh < c->KH; kh++)
          for (kw = 0; kw < c->KW; kw++)
            c->packed[(((g * c->KH + kh) * c->KW + kw) * cg + i) * mg + o] =
                w[(((g * mg + o) * cg + i) * c->KH + kh) * c->KW + kw];
  return MI_OK;
}

/* Epilogue on one output pixel's M channels (NHWC output). */
static void epi_pixel(const mi__blis_conv_t *c, void *const *t, int64_t pix, float *v) {
  int64_t m;
  int32_t e;
  if (c->affine)
    for (m = 0; m < c->M; m++) v[m] = v[m] * c->scale[m] + c->shift[m];
  for (e = 0; e < c->epi_n; e++) {
    if (c->epi[e].act == MI__ACT_NONE) {
      const float *r = (const float *)t[c->epi[e].tensor] + pix * c->M;
      for (m = 0; m < c->M; m++) v[m] += r[m];
    } else {
      mi__blis_act_apply(c->epi[e].act, c->epi[e].a, c->epi[e].b, v, c->M);
    }
  }
}

static void run_nhwc(const mi__blis_conv_t *c, void *const *t) {
  const float *x = t[c->x];
  float *y = t[c->y], acc[64];
  int64_t n, oh, ow, g, ob, o, kh, kw, i, cg = c->C / c->G, mg = c->M / c->G;
  int64_t ohw = c->OH * c->OW, hw = c->H * c->W, bs = c->block > 64 ? 64 : c->block;
  if (!c->nhwc_in) {
    /* NCHW -> NHWC once per run; the layout change is part of this variant's cost. */
    float *xs = c->scratch;
    for (n = 0; n < c->N; n++)
      for (i = 0; i < c->C; i++)
        for (o = 0; o < hw; o++) xs[(n * hw + o) * c->C + i] = x[(n * c->C + i) * hw + o];
    x = xs;
  }
  for (n = 0; n < c->N; n++) {
    for (oh = 0; oh < c->OH; oh++)
      for (ow = 0; ow < c->OW; ow++) {
        float *yp = c->nhwc_out ? y + ((n * c->OH + oh) * c->OW + ow) * c->M : NULL;
        for (g = 0; g < c->G; g++)
          for (ob = 0; ob < mg; ob += bs) {
            int64_t nb = mg - ob < bs ? mg - ob : bs;
            for (o = 0; o < nb; o++) acc[o] = 0.f;
            for (kh = 0; kh < c->KH; kh++) {
              int64_t ih = oh * c->sh - c->pt + kh * c->dh;
              if (ih < 0 || ih >= c->H) continue;
              for (kw = 0; kw < c->KW; kw++) {
                int64_t iw = ow * c->sw - c->pl + kw * c->dw;
                const float *xp, *wp;
                if (iw < 0 || iw >= c->W) continue;
                xp = x + ((n * c->H + ih) * c->W + iw) * c->C + g * cg;
                wp = c->packed + ((g * c->KH + kh) * c->KW + kw) * cg * mg + ob;
                for (i = 0; i < cg; i++) {
                  float xv = xp[i];
                  const float *wr = wp + i * mg;
                  for (o = 0; o < nb; o++) acc[o] += xv * wr[o];
                }
              }
            }
            if (yp)
              memcpy(yp + g * mg + ob, acc, (size_t)nb * sizeof(float));
            else
              for (o = 0; o < nb; o++) y[(n * c->M + g * mg + ob + o) * ohw + oh * c->OW + ow] = acc[o];
          }
        if (yp && (c->affine || c->epi_n)) epi_pixel(c, t, (n * c->OH + oh) * c->OW + ow, yp);
      }
    if (!c->nhwc_out && (c->affine || c->epi_n))
      for (o = 0; o < c->M; o++) mi__blis_epi_row(c, t, n, o, y + (n * c->M + o) * ohw);
  }
}

int32_t mi__blis_conv_run_direct(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                                 mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  if (c->variant == MI__CONV_DW) run_dw(c, t);
  else run_nhwc(c, t);
  return MI_OK;
}
