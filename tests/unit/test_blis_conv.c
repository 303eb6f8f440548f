/* test_blis_conv.c - blis-cpu convolutions (every variant, odd shapes, fused epilogues) vs a
 * naive convolution written here. */
#include "test_blis_util.h"

static int64_t g_cores = 1; /* device compute units, for the threads-invariance runs */

typedef struct cshape {
  int64_t n, c, h, w, m, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, g;
} cshape_t;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
}

static void naive_conv(const cshape_t *s, const float *x, const float *w, const float *bias, float *y) {
  int64_t oh = out_dim(s->h, s->kh, s->sh, s->dh, s->pt, s->pb), ow = out_dim(s->w, s->kw, s->sw, s->dw, s->pl, s->pr);
  int64_t cg = s->c / s->g, mg = s->m / s->g, n, m, i, j, c, a, b;
  for (n = 0; n < s->n; n++)
    for (m = 0; m < s->m; m++)
      for (i = 0; i < oh; i++)
        for (j = 0; j < ow; j++) {
          double acc = bias ? bias[m] : 0.;
          int64_t g = m / mg;
          for (c = 0; c < cg; c++)
            for (a = 0; a < s->kh; a++)
              for (b = 0; b < s->kw; b++) {
                int64_t ih = i * s->sh - s->pt + a * s->dh, iw = j * s->sw - s->pl + b * s->dw;
                if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w) continue;
                acc += (double)x[((n * s->c + g * cg + c) * s->h + ih) * s->w + iw] *
                       w[((m * cg + c) * s->kh + a) * s->kw + b];
              }
          y[((n * s->m + m) * oh + i) * ow + j] = (float)acc;
        }
}

/* Runs one conv (optionally + BN + Relu + residual Add) and compares with the naive sequence. */
static void conv_case(tb_plugin_t *p, const char *name, cshape_t s, const char *variant, int fused,
                      const mi_knob_value_t *knobs, int nk) {
  int64_t oh = out_dim(s.h, s.kh, s.sh, s.dh, s.pt, s.pb), ow = out_dim(s.w, s.kw, s.sw, s.dw, s.pl, s.pr);
  int64_t xd[4] = {s.n, s.c, s.h, s.w}, wd[4] = {s.m, s.c / s.g, s.kh, s.kw}, yd[4] = {s.n, s.m, oh, ow}, md = s.m;
  int64_t xn = s.n * s.c * s.h * s.w, wn = wd[0] * wd[1] * s.kh * s.kw, yn = s.n * s.m * oh * ow, i;
  int64_t strides[2] = {s.sh, s.sw}, dil[2] = {s.dh, s.dw}, pads[4] = {s.pt, s.pl, s.pb, s.pr};
  float *x = malloc((size_t)xn * 4), *w = malloc((size_t)wn * 4), *bias = malloc((size_t)s.m * 4);
  float *bn = malloc((size_t)s.m * 16), *res = malloc((size_t)yn * 4), *ref = malloc((size_t)yn * 4);
  float *got = malloc((size_t)yn * 4);
  const float *ins[2];
  tb_t b;
  int tx, tw, tb_, ty, node, t1, t2, t3;
  mi_error_t err = {0, ""};
  int32_t rc;
  double e;
  tb_fill(x, xn, 1);
  tb_fill(w, wn, 2);
  tb_fill(bias, s.m, 3);
  tb_fill(bn, 4 * s.m, 4);
  for (i = 0; i < s.m; i++) bn[3 * s.m + i] = fabsf(bn[3 * s.m + i]) + 0.5f; /* variance > 0 */
  tb_fill(res, yn, 5);
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, 4, xd, NULL);
  tw = tb_tensor(&b, 4, wd, w);
  tb_ = tb_tensor(&b, 1, &md, bias);
  ty = tb_tensor(&b, 4, yd, NULL);
  {
    int in3[3] = {tx, tw, tb_};
    node = tb_node(&b, "Conv", 17, 3, in3, ty);
  }
  tb_attr_is(&b, node, "kernel_shape", 2, wd + 2);
  tb_attr_is(&b, node, "strides", 2, strides);
  tb_attr_is(&b, node, "dilations", 2, dil);
  tb_attr_is(&b, node, "pads", 4, pads);
  tb_attr_i(&b, node, "group", s.g);
  naive_conv(&s, x, w, bias, ref);
  ins[0] = x;
  ins[1] = res;
  if (fused) {
    int g = tb_tensor(&b, 1, &md, bn), be = tb_tensor(&b, 1, &md, bn + s.m), mu = tb_tensor(&b, 1, &md, bn + 2 * s.m),
        va = tb_tensor(&b, 1, &md, bn + 3 * s.m), tr;
    int bnin[5] = {ty, g, be, mu, va}, ai[2];
    t1 = tb_tensor(&b, 4, yd, NULL);
    tb_node(&b, "BatchNormalization", 15, 5, bnin, t1);
    t2 = tb_tensor(&b, 4, yd, NULL);
    tb_node(&b, "Relu", 14, 1, &t1, t2);
    tr = tb_tensor(&b, 4, yd, NULL);
    t3 = tb_tensor(&b, 4, yd, NULL);
    ai[0] = tr;
    ai[1] = t2;
    tb_node(&b, "Add", 14, 2, ai, t3);
    tb_finish(&b, t3);
    for (i = 0; i < yn; i++) {
      int64_t m = (i / (oh * ow)) % s.m;
      float v = (ref[i] - bn[2 * s.m + m]) / sqrtf(bn[3 * s.m + m] + 1e-5f) * bn[m] + bn[s.m + m];
      ref[i] = (v > 0.f ? v : 0.f) + res[i];
    }
  } else {
    tb_finish(&b, ty);
  }
  rc = tb_run(p, &b, variant, knobs, nk, ins, got, &err);
  CHECK(rc == MI_OK, "%s: run failed: %s", name, err.message);
  if (rc == MI_OK) {
    e = tu_rel_l2(got, ref, yn);
    CHECK(e < 1e-5, "%s: rel L2 %g", name, e);
  }
  if (rc == MI_OK && nk == 0) {
    /* The plugin's own loops split work per item: 1 and N threads give the same bits. */
    mi_knob_value_t th = {"threads", 1, 0.};
    float *one = malloc((size_t)yn * 4);
    rc = tb_run(p, &b, variant, &th, 1, ins, one, &err);
    th.i = g_cores > 4 ? 4 : g_cores;
    if (rc == MI_OK) rc = tb_run(p, &b, variant, &th, 1, ins, got, &err);
    CHECK(rc == MI_OK && memcmp(one, got, (size_t)yn * 4) == 0, "%s: threads=1 and threads=%lld differ (%s)",
          name, (long long)th.i, err.message);
    free(one);
  }
  free(x); free(w); free(bias); free(bn); free(res); free(ref); free(got);
}

/* A variant that cannot take the conv, or a bad knob, is refused with a message. */
static void refusals(tb_plugin_t *p) {
  int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {4, 4, 3, 3}, yd[4] = {1, 4, 3, 3};
  float w[144] = {0}, x[100] = {0}, y[36];
  const float *ins[1] = {x};
  mi_knob_value_t bad_threads = {"threads", 0, 0.}, bad_block = {"im2col_block", 7, 0.};
  mi_error_t err = {0, ""};
  tb_t b;
  int tx, tw, ty;
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, 4, xd, NULL);
  tw = tb_tensor(&b, 4, wd, w);
  ty = tb_tensor(&b, 4, yd, NULL);
  {
    int in2[2] = {tx, tw};
    tb_node(&b, "Conv", 17, 2, in2, ty);
  }
  tb_finish(&b, ty);
  CHECK(tb_run(p, &b, "conv.1x1_gemm", NULL, 0, ins, y, &err) == MI_ERR_INVALID_CONFIG && err.message[0],
        "1x1 variant on a 3x3 conv: %s", err.message);
  CHECK(tb_run(p, &b, "conv.depthwise_direct", NULL, 0, ins, y, &err) == MI_ERR_INVALID_CONFIG, "dw on dense");
  CHECK(tb_run(p, &b, "conv.nope", NULL, 0, ins, y, &err) == MI_ERR_INVALID_CONFIG, "unknown variant");
  CHECK(tb_run(p, &b, "gemm.blis", NULL, 0, ins, y, &err) == MI_ERR_INVALID_CONFIG, "variant of another op");
  err.message[0] = '\0';
  CHECK(tb_run(p, &b, NULL, &bad_threads, 1, ins, y, &err) == MI_ERR_INVALID_CONFIG && strstr(err.message, "threads"),
        "threads=0: %s", err.message);
  CHECK(tb_run(p, &b, NULL, &bad_block, 1, ins, y, &err) == MI_ERR_INVALID_CONFIG, "im2col_block=7");
  CHECK(tb_run(p, &b, "conv.im2col_gemm", NULL, 0, ins, y, &err) == MI_OK, "valid run: %s", err.message);
}

int main(void) {
  tb_plugin_t p;
  /* n c h w m kh kw sh sw dh dw pt pl pb pr g */
  cshape_t dense = {2, 5, 11, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 1};
  cshape_t dilated = {1, 6, 13, 10, 4, 3, 2, 1, 2, 2, 3, 2, 1, 0, 2, 2};
  cshape_t pw = {2, 8, 7, 5, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1};
  cshape_t tall = {1, 3, 40, 37, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  cshape_t tall2 = {1, 3, 60, 45, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  cshape_t dw = {1, 6, 9, 11, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 6};
  cshape_t dw2 = {2, 3, 8, 8, 6, 5, 5, 1, 2, 2, 1, 4, 2, 0, 3, 3};
  /* Rows of 37 and 18 outputs: full 16-wide SIMD blocks plus a partial one. */
  cshape_t dwwide = {1, 4, 6, 37, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4};
  cshape_t dwwide2 = {1, 4, 7, 37, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4};
  /* A 130x130 plane does not fit the SIMD path's stack buffer: the plain loops run. */
  cshape_t dwbig = {1, 2, 130, 130, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2};
  mi_knob_value_t k1[2] = {{"threads", 1, 0.}, {"im2col_block", 256, 0.}};
  mi_knob_value_t ob[1] = {{"oc_block", 8, 0.}};
  mi_knob_value_t k256[1] = {{"im2col_block", 256, 0.}}; /* chunks that start mid output row */
  mi_knob_value_t arch[1] = {{"arch", 1, 0.}}; /* "blis": BLIS's own detection */
  if (!tb_load(&p)) return 1;
  {
    mi_device_desc_t d;
    mi_error_t err = {0, ""};
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    if (p.api->device_info(p.ctx, 0, &d, &err) == MI_OK) g_cores = d.compute_units;
  }
  conv_case(&p, "im2col dense", dense, "conv.im2col_gemm", 0, NULL, 0);
  conv_case(&p, "im2col dense chunked 1 thread", dense, "conv.im2col_gemm", 0, k1, 2);
  conv_case(&p, "im2col dense arch=blis", dense, "conv.im2col_gemm", 0, arch, 1);
  conv_case(&p, "im2col 40x37 chunks of 256", tall, "conv.im2col_gemm", 0, k256, 1);
  conv_case(&p, "im2col strided 30x23 chunks of 256", tall2, "conv.im2col_gemm", 1, k256, 1);
  conv_case(&p, "im2col dilated grouped", dilated, "conv.im2col_gemm", 0, NULL, 0);
  conv_case(&p, "direct_nhwc dense", dense, "conv.direct_nhwc", 0, ob, 1);
  conv_case(&p, "direct_nhwc dilated grouped", dilated, "conv.direct_nhwc", 0, NULL, 0);
  conv_case(&p, "1x1 gemm", pw, "conv.1x1_gemm", 0, NULL, 0);
  conv_case(&p, "1x1 default", pw, NULL, 0, NULL, 0);
  conv_case(&p, "depthwise", dw, "conv.depthwise_direct", 0, NULL, 0);
  conv_case(&p, "depthwise multiplier 2", dw2, "conv.depthwise_direct", 0, NULL, 0);
  conv_case(&p, "depthwise via im2col", dw, "conv.im2col_gemm", 0, NULL, 0);
  conv_case(&p, "depthwise wide rows", dwwide, "conv.depthwise_direct", 0, NULL, 0);
  conv_case(&p, "depthwise wide rows stride 2", dwwide2, "conv.depthwise_direct", 1, NULL, 0);
  conv_case(&p, "depthwise large plane", dwbig, "conv.depthwise_direct", 1, NULL, 0);
  conv_case(&p, "fused im2col+bn+relu+add", dense, "conv.im2col_gemm", 1, NULL, 0);
  conv_case(&p, "fused 1x1+bn+relu+add", pw, "conv.1x1_gemm", 1, NULL, 0);
  conv_case(&p, "fused dw+bn+relu+add", dw, "conv.depthwise_direct", 1, NULL, 0);
  conv_case(&p, "fused nhwc+bn+relu+add", dilated, "conv.direct_nhwc", 1, NULL, 0);
  refusals(&p);
  tb_unload(&p);
  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
