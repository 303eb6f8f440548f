/* test_blis_smallops.c - blis-cpu's LpPool / GlobalLpPool (blis_lppool.c), DeformConv
 * (blis_deform.c) and Col2Im (blis_col2im.c) on every code path of knob simd against the
 * formulas in double: a node blis-cpu takes (no host fallback in tb_run), p 1, 2 and 3, pads,
 * strides, dilations, ceil_mode and auto_pad; offsets that move taps off the image, with and
 * without a mask and bias, groups and offset groups, an image in two pixel chunks; Col2Im with strides, pads and dilations. */
#include <math.h>

#include "test_blis_util.h"

static tb_plugin_t p;

static void setup(void) { REQUIRE(tb_load(&p)); }
static void teardown(void) { tb_unload(&p); }

static int close_to(double got, double want) { return fabs(got - want) <= 2e-5 * fabs(want) + 2e-5; }

typedef struct lp {
  const char *name;
  int64_t H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, p;
  int ceil_mode;
  const char *auto_pad; /* NULL: the pads */
} lp_t;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int ceil_mode) {
  int64_t span = in + pb + pe - (k - 1) * d - 1, o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  return ceil_mode && (o - 1) * s >= in + pb ? o - 1 : o;
}

static void lp_case(const lp_t *c, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  enum { PL = 6 };
  int64_t pt = c->pt, pl = c->pl, pb = c->pb, pr = c->pr, OH, OW;
  if (c->auto_pad) { /* SAME_UPPER: ceil(in / s), the odd pad at the end */
    OH = (c->H + c->sh - 1) / c->sh, OW = (c->W + c->sw - 1) / c->sw;
    int64_t th = (OH - 1) * c->sh + (c->KH - 1) * c->dh + 1 - c->H, tw = (OW - 1) * c->sw + (c->KW - 1) * c->dw + 1 - c->W;
    pt = th / 2, pb = th - pt, pl = tw / 2, pr = tw - pl;
  } else {
    OH = out_size(c->H, c->KH, c->sh, c->dh, pt, pb, c->ceil_mode);
    OW = out_size(c->W, c->KW, c->sw, c->dw, pl, pr, c->ceil_mode);
  }
  int64_t dx[4] = {2, 3, c->H, c->W}, dy[4] = {2, 3, OH, OW}, i;
  int64_t ks[2] = {c->KH, c->KW}, ss[2] = {c->sh, c->sw}, ds[2] = {c->dh, c->dw}, ps[4] = {c->pt, c->pl, c->pb, c->pr};
  float *x = malloc((size_t)(PL * c->H * c->W) * sizeof(float)), *got = malloc((size_t)(PL * OH * OW) * sizeof(float));
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int bad = 0;
  tb_fill(x, PL * c->H * c->W, 7);
  memset(&b, 0, sizeof b);
  int t0 = tb_tensor(&b, 4, dx, NULL), t1 = tb_tensor(&b, 4, dy, NULL), node = tb_node(&b, "LpPool", 18, 1, &t0, t1);
  tb_attr_is(&b, node, "kernel_shape", 2, ks);
  tb_attr_is(&b, node, "strides", 2, ss);
  tb_attr_is(&b, node, "dilations", 2, ds);
  if (c->auto_pad) tb_attr_s(&b, node, "auto_pad", c->auto_pad);
  else
    tb_attr_is(&b, node, "pads", 4, ps);
  tb_attr_i(&b, node, "ceil_mode", c->ceil_mode);
  tb_attr_i(&b, node, "p", c->p);
  tb_finish(&b, t1);
  int32_t rc = tb_run(&p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "LpPool %s: %s", c->name, err.message);
  for (i = 0; rc == MI_OK && i < PL * OH * OW; i++) {
    int64_t pl_ = i / (OH * OW), oh = (i / OW) % OH, ow = i % OW;
    double s = 0;
    for (int64_t kh = 0; kh < c->KH; kh++)
      for (int64_t kw = 0; kw < c->KW; kw++) {
        int64_t ih = oh * c->sh - pt + kh * c->dh, iw = ow * c->sw - pl + kw * c->dw;
        if (ih >= 0 && ih < c->H && iw >= 0 && iw < c->W) s += pow(fabs(x[(pl_ * c->H + ih) * c->W + iw]), (double)c->p);
      }
    double want = pow(s, 1.0 / (double)c->p);
    if (!close_to(got[i], want) && bad++ < 3)
      CHECK(0, "LpPool %s simd %lld: element %lld got %.9g want %.9g", c->name, (long long)simd, (long long)i, got[i],
            want);
  }
  free(x);
  free(got);
}

static void lppool(void) {
  static const lp_t cs[] = {
      {"k3 p2", 9, 37, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0, NULL},
      {"k2 s2 p1 pads", 9, 10, 2, 3, 2, 2, 1, 1, 1, 0, 1, 2, 1, 0, NULL},
      {"k3 dil2 p3", 11, 13, 3, 2, 1, 2, 2, 3, 0, 1, 0, 1, 3, 0, NULL},
      {"ceil", 10, 11, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 2, 1, NULL},
      {"same_upper", 7, 9, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 2, 0, "SAME_UPPER"},
      {"1-row kernel", 4, 40, 1, 5, 1, 3, 1, 1, 0, 2, 0, 2, 4, 0, NULL},
  };
  int64_t si, n = simd_choices(&p);
  CHECK(n >= 2, "knob simd has %lld values", (long long)n);
  for (si = 0; si < n; si++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) lp_case(&cs[i], si);
  /* GlobalLpPool p 3 over 5 x 7 planes */
  int64_t dx[4] = {2, 3, 5, 7}, dy[4] = {2, 3, 1, 1};
  float x[210], got[6];
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  tb_fill(x, 210, 3);
  memset(&b, 0, sizeof b);
  int t0 = tb_tensor(&b, 4, dx, NULL), t1 = tb_tensor(&b, 4, dy, NULL), node = tb_node(&b, "GlobalLpPool", 2, 1, &t0, t1);
  tb_attr_i(&b, node, "p", 3);
  tb_finish(&b, t1);
  CHECK(tb_run(&p, &b, NULL, NULL, 0, ins, got, &err) == MI_OK, "GlobalLpPool: %s", err.message);
  for (int pl = 0; pl < 6; pl++) {
    double s = 0;
    for (int j = 0; j < 35; j++) s += pow(fabs(x[pl * 35 + j]), 3);
    CHECK(close_to(got[pl], cbrt(s)), "GlobalLpPool plane %d: got %.9g want %.9g", pl, got[pl], cbrt(s));
  }
}

static double bilinear(const float *pl, int64_t H, int64_t W, double h, double w) {
  if (!(h > -1 && h < H && w > -1 && w < W)) return 0;
  int64_t h0 = (int64_t)floor(h), w0 = (int64_t)floor(w);
  double lh = h - (double)h0, lw = w - (double)w0, v = 0;
  for (int dy = 0; dy < 2; dy++)
    for (int dx = 0; dx < 2; dx++) {
      int64_t yy = h0 + dy, xx = w0 + dx;
      if (yy >= 0 && yy < H && xx >= 0 && xx < W) v += (dy ? lh : 1 - lh) * (dx ? lw : 1 - lw) * pl[yy * W + xx];
    }
  return v;
}

typedef struct dc {
  const char *name;
  int64_t C, M, H, W, KH, KW, G, OG, sh, sw, dh, dw, pt, pl, pb, pr;
  int bias, mask;
} dc_t;

static void dc_case(const dc_t *c, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  int64_t N = 2, K = c->KH * c->KW, OH = (c->H + c->pt + c->pb - (c->KH - 1) * c->dh - 1) / c->sh + 1;
  int64_t OW = (c->W + c->pl + c->pr - (c->KW - 1) * c->dw - 1) / c->sw + 1, P = OH * OW, Cg = c->C / c->G;
  int64_t dx[4] = {N, c->C, c->H, c->W}, dw_[4] = {c->M, Cg, c->KH, c->KW}, doff[4] = {N, c->OG * 2 * K, OH, OW};
  int64_t dm[4] = {N, c->OG * K, OH, OW}, db[1] = {c->M}, dy[4] = {N, c->M, OH, OW};
  int64_t ss[2] = {c->sh, c->sw}, ds[2] = {c->dh, c->dw}, ps[4] = {c->pt, c->pl, c->pb, c->pr};
  float *x = malloc((size_t)(N * c->C * c->H * c->W) * 4), *w = malloc((size_t)(c->M * Cg * K) * 4);
  float *off = malloc((size_t)(N * c->OG * 2 * K * P) * 4), *m = malloc((size_t)(N * c->OG * K * P) * 4);
  float *bias = malloc((size_t)c->M * 4), *got = malloc((size_t)(N * c->M * P) * 4);
  tb_fill(x, N * c->C * c->H * c->W, 1);
  tb_fill(w, c->M * Cg * K, 2);
  tb_fill(off, N * c->OG * 2 * K * P, 3);
  tb_fill(m, N * c->OG * K * P, 4);
  tb_fill(bias, c->M, 5);
  for (int64_t i = 0; i < N * c->OG * 2 * K * P; i++) off[i] *= 2.5f; /* some taps leave the image */
  for (int64_t i = 0; i < N * c->OG * K * P; i++) m[i] = 0.5f + 0.5f * m[i];
  const float *ins[3] = {x, off, m};
  mi_error_t err = {0, ""};
  tb_t b;
  int bad = 0, in[5];
  memset(&b, 0, sizeof b);
  in[0] = tb_tensor(&b, 4, dx, NULL);
  in[1] = tb_tensor(&b, 4, dw_, w);
  in[2] = tb_tensor(&b, 4, doff, NULL);
  in[3] = c->bias ? tb_tensor(&b, 1, db, bias) : -1;
  in[4] = c->mask ? tb_tensor(&b, 4, dm, NULL) : -1;
  int ty = tb_tensor(&b, 4, dy, NULL), node = tb_node(&b, "DeformConv", 19, c->mask ? 5 : c->bias ? 4
                                                                                                  : 3,
                                                      in, ty);
  tb_attr_is(&b, node, "strides", 2, ss);
  tb_attr_is(&b, node, "dilations", 2, ds);
  tb_attr_is(&b, node, "pads", 4, ps);
  tb_attr_i(&b, node, "group", c->G);
  tb_attr_i(&b, node, "offset_group", c->OG);
  tb_finish(&b, ty);
  int32_t rc = tb_run(&p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "DeformConv %s: %s", c->name, err.message);
  for (int64_t i = 0; rc == MI_OK && i < N * c->M * P; i++) {
    int64_t n = i / (c->M * P), mo = (i / P) % c->M, oh = (i % P) / OW, ow = i % OW, g = mo / (c->M / c->G);
    double acc = c->bias ? bias[mo] : 0;
    for (int64_t ci = 0; ci < Cg; ci++) {
      int64_t ch = g * Cg + ci, og = ch / (c->C / c->OG);
      for (int64_t k = 0; k < K; k++) {
        const float *o = off + ((n * c->OG + og) * 2 * K + 2 * k) * P + oh * OW + ow;
        double h = (double)(oh * c->sh - c->pt + (k / c->KW) * c->dh) + o[0];
        double ww = (double)(ow * c->sw - c->pl + (k % c->KW) * c->dw) + o[P];
        double v = bilinear(x + (n * c->C + ch) * c->H * c->W, c->H, c->W, h, ww);
        if (c->mask) v *= m[((n * c->OG + og) * K + k) * P + oh * OW + ow];
        acc += v * w[(mo * Cg + ci) * K + k];
      }
    }
    if (!close_to(got[i], acc) && bad++ < 3)
      CHECK(0, "DeformConv %s simd %lld: element %lld got %.9g want %.9g", c->name, (long long)simd, (long long)i,
            got[i], acc);
  }
  free(x), free(w), free(off), free(m), free(bias), free(got);
}

static void deform_conv(void) {
  static const dc_t cs[] = {
      {"plain 3x3", 4, 6, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
      {"bias mask pads", 5, 3, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {"groups offset groups", 4, 6, 6, 7, 3, 2, 2, 4, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1},
      {"stride dilation", 3, 4, 11, 10, 3, 3, 1, 3, 2, 2, 2, 1, 1, 2, 2, 1, 0, 1},
      {"1x1 wide", 8, 16, 9, 13, 1, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0},
      /* 64 x 9 column rows: chunks of 192 pixels, so 256 pixels take a whole and a partial one */
      {"two chunks", 64, 8, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  int64_t si, n = simd_choices(&p);
  for (si = 0; si < n; si++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) dc_case(&cs[i], si);
}

typedef struct c2i {
  const char *name;
  int64_t H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} c2i_t;

static void c2i_case(const c2i_t *c, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  int64_t N = 2, C = 3, K = c->KH * c->KW;
  int64_t LH = (c->H + c->pt + c->pb - (c->KH - 1) * c->dh - 1) / c->sh + 1;
  int64_t LW = (c->W + c->pl + c->pr - (c->KW - 1) * c->dw - 1) / c->sw + 1;
  int64_t dx[3] = {N, C * K, LH * LW}, dy[4] = {N, C, c->H, c->W}, img[2] = {c->H, c->W}, blk[2] = {c->KH, c->KW};
  int64_t ss[2] = {c->sh, c->sw}, ds[2] = {c->dh, c->dw}, ps[4] = {c->pt, c->pl, c->pb, c->pr};
  float *x = malloc((size_t)(N * C * K * LH * LW) * 4), *got = malloc((size_t)(N * C * c->H * c->W) * 4);
  double *want = calloc((size_t)(N * C * c->H * c->W), sizeof(double));
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int in[3], bad = 0;
  tb_fill(x, N * C * K * LH * LW, 9);
  memset(&b, 0, sizeof b);
  in[0] = tb_tensor(&b, 3, dx, NULL);
  in[1] = tb_ints_tensor(&b, 2, img);
  in[2] = tb_ints_tensor(&b, 2, blk);
  int ty = tb_tensor(&b, 4, dy, NULL), node = tb_node(&b, "Col2Im", 18, 3, in, ty);
  tb_attr_is(&b, node, "strides", 2, ss);
  tb_attr_is(&b, node, "dilations", 2, ds);
  tb_attr_is(&b, node, "pads", 4, ps);
  tb_finish(&b, ty);
  int32_t rc = tb_run(&p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "Col2Im %s: %s", c->name, err.message);
  for (int64_t nc = 0; nc < N * C; nc++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t l = 0; l < LH * LW; l++) {
        int64_t r = (l / LW) * c->sh - c->pt + (k / c->KW) * c->dh, q = (l % LW) * c->sw - c->pl + (k % c->KW) * c->dw;
        if (r >= 0 && r < c->H && q >= 0 && q < c->W) want[(nc * c->H + r) * c->W + q] += x[(nc * K + k) * LH * LW + l];
      }
  for (int64_t i = 0; rc == MI_OK && i < N * C * c->H * c->W; i++)
    if (!close_to(got[i], want[i]) && bad++ < 3)
      CHECK(0, "Col2Im %s simd %lld: element %lld got %.9g want %.9g", c->name, (long long)simd, (long long)i, got[i],
            want[i]);
  free(x), free(got), free(want);
}

static void col2im(void) {
  static const c2i_t cs[] = {
      {"3x3", 6, 7, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},
      {"strides pads dilations", 9, 11, 2, 3, 2, 3, 2, 1, 1, 2, 0, 1},
      {"wide pads", 5, 5, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2},
  };
  int64_t si, n = simd_choices(&p);
  for (si = 0; si < n; si++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) c2i_case(&cs[i], si);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(lppool),
    TU_CASE(deform_conv),
    TU_CASE(col2im),
};

TU_MAIN(setup, teardown)
