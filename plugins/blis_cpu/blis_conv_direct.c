/* blis_conv_direct.c - direct convolutions: depthwise (NCHW) and oc-blocked NHWC. */
#include <string.h>

#include "blis_conv.h"

typedef struct direct_task {
  const mi__blis_conv_t *c;
  void *const *t;
  const float *x;
  float *y;
} direct_task_t;

/* Depthwise: channel m reads input channel m / (M / C); one pass per output row. Items are
 * (image, channel) planes. */
static void dw_part(void *arg, int64_t p0, int64_t p1) {
  const direct_task_t *dt = arg;
  const mi__blis_conv_t *c = dt->c;
  void *const *t = dt->t;
  const float *x = t[c->x], *w = t[c->w];
  float *y = t[c->y];
  int64_t p, n, m, oh, ow, kh, kw, mult = c->M / c->C, ohw = c->OH * c->OW;
  for (p = p0; p < p1; p++) {
    n = p / c->M;
    m = p % c->M;
    {
      const float *xc = x + (n * c->C + m / mult) * c->H * c->W, *wm = w + m * c->KH * c->KW;
      float *row = y + (n * c->M + m) * ohw;
      if (c->simd == MI__SIMD_AVX512 && mi__blis_dw512_plane(c, t, n, m, xc, wm, row)) continue;
      if (c->simd == MI__SIMD_AVX2 && mi__blis_dw256_plane(c, t, n, m, xc, wm, row)) continue;
      if (mi__blis_dw_plane(c, xc, wm, row)) {
        if (c->affine || c->epi_n) mi__blis_epi_row(c, t, n, m, row);
        continue;
      }
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
}

/* Items are (image, block of 16 channels). */
static void dw_cl_part(void *arg, int64_t p0, int64_t p1) {
  const direct_task_t *dt = arg;
  int64_t p, blocks = (dt->c->M + 15) / 16;
  for (p = p0; p < p1; p++)
    if (dt->c->simd == MI__SIMD_AVX2) mi__blis_dw256_cl_block(dt->c, dt->t, p / blocks, p % blocks);
    else
      mi__blis_dw_cl_block(dt->c, dt->t, p / blocks, p % blocks);
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

/* Items are (image, channel) planes: NCHW -> NHWC copy of the input. */
static void to_nhwc_part(void *arg, int64_t p0, int64_t p1) {
  const direct_task_t *dt = arg;
  const mi__blis_conv_t *c = dt->c;
  int64_t p, o, hw = c->H * c->W;
  for (p = p0; p < p1; p++) {
    int64_t n = p / c->C, i = p % c->C;
    for (o = 0; o < hw; o++) c->scratch[(n * hw + o) * c->C + i] = dt->x[p * hw + o];
  }
}

/* Items are (image, output row) pairs. */
static void nhwc_part(void *arg, int64_t r0, int64_t r1) {
  const direct_task_t *dt = arg;
  const mi__blis_conv_t *c = dt->c;
  void *const *t = dt->t;
  const float *x = dt->x;
  float *y = dt->y, acc[64];
  int64_t r, n, oh, ow, g, ob, o, kh, kw, i, cg = c->C / c->G, mg = c->M / c->G;
  int64_t ohw = c->OH * c->OW, bs = c->block > 64 ? 64 : c->block;
  for (r = r0; r < r1; r++) {
    n = r / c->OH;
    oh = r % c->OH;
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
  }
}

/* Items are (image, channel) rows of an NCHW output. */
static void nchw_epi_part(void *arg, int64_t p0, int64_t p1) {
  const direct_task_t *dt = arg;
  const mi__blis_conv_t *c = dt->c;
  int64_t p, ohw = c->OH * c->OW;
  for (p = p0; p < p1; p++) mi__blis_epi_row(c, dt->t, p / c->M, p % c->M, dt->y + p * ohw);
}

static void run_nhwc(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env) {
  direct_task_t dt;
  dt.c = c;
  dt.t = t;
  dt.x = t[c->x];
  dt.y = t[c->y];
  if (!c->nhwc_in) {
    /* NCHW -> NHWC once per run; the layout change is part of this variant's cost. */
    mi__blis_parallel(env, c->N * c->C, 1, c->H * c->W, to_nhwc_part, &dt);
    dt.x = c->scratch;
  }
  mi__blis_parallel(env, c->N * c->OH, 1, c->OW * c->KH * c->KW * (c->C / c->G) * c->M, nhwc_part, &dt);
  if (!c->nhwc_out && (c->affine || c->epi_n)) mi__blis_parallel(env, c->N * c->M, 1, c->OH * c->OW * (1 + c->epi_n), nchw_epi_part, &dt);
}

int32_t mi__blis_conv_run_direct(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                                 mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  (void)err;
  if (c->variant == MI__CONV_DW && c->dw_cl) {
    direct_task_t dt;
    dt.c = c;
    dt.t = t;
    mi__blis_parallel(env, c->N * ((c->M + 15) / 16), 1, 16 * c->OH * c->OW * (c->KH * c->KW + 2), dw_cl_part, &dt);
  } else if (c->variant == MI__CONV_DW) {
    direct_task_t dt;
    dt.c = c;
    dt.t = t;
    mi__blis_parallel(env, c->N * c->M, 1, c->OH * c->OW * (c->KH * c->KW + 1 + c->epi_n), dw_part, &dt);
  } else {
    run_nhwc(c, t, env);
  }
  return MI_OK;
}
