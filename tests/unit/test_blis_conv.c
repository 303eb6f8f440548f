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

/* naive_conv, its output kept for the next call of the same shape: conv_case fills x, w and
 * bias the same way every time, and the packed cases run each shape 44 times (11 epilogues, 4
 * SIMD levels), where the naive loops were 93% of the test's time (26 s, 281 s under ASan). */
static cshape_t kept_shape;
static float *kept; /* freed by teardown */
static int64_t kept_n;
static void naive_conv_kept(const cshape_t *s, const float *x, const float *w, const float *bias, float *y,
                            int64_t yn) {
  if (kept && kept_n == yn && memcmp(&kept_shape, s, sizeof kept_shape) == 0) {
    memcpy(y, kept, (size_t)yn * sizeof *y);
    return;
  }
  naive_conv(s, x, w, bias, y);
  free(kept);
  kept = malloc((size_t)yn * sizeof *kept);
  kept_n = kept ? yn : 0;
  if (kept) memcpy(kept, y, (size_t)yn * sizeof *y);
  kept_shape = *s;
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
  naive_conv_kept(&s, x, w, bias, ref, yn);
  ins[0] = x;
  ins[1] = res;
  if (fused) {
    /* Conv -> BN -> the chain of fused mode `fused` (R Relu, S Sigmoid, A residual Add, C Clip 0..6,
     * L LeakyRelu 0.2, X Max(x, -0.05) as tf2onnx writes a clamp, H HardSigmoid 0.2/0.5, K Mul by 1.5):
     * L, X, H and K run in the SIMD kernels' registers; after a Sigmoid they run on the stored rows. */
    static const char *const chains[] = {"", "RA", "SA", "AR", "C", "R", "A", "LX", "HK", "KLA", "SK"};
    static const float xmax = -0.05f, kmul = 1.5f;
    static const int64_t one = 1;
    const char *ch = chains[fused], *o;
    int g = tb_tensor(&b, 1, &md, bn), be = tb_tensor(&b, 1, &md, bn + s.m), mu = tb_tensor(&b, 1, &md, bn + 2 * s.m),
        va = tb_tensor(&b, 1, &md, bn + 3 * s.m), tr = -1, cur;
    int bnin[5] = {ty, g, be, mu, va};
    t1 = tb_tensor(&b, 4, yd, NULL);
    tb_node(&b, "BatchNormalization", 15, 5, bnin, t1);
    cur = t1;
    for (o = ch; *o; o++) {
      int nx = tb_tensor(&b, 4, yd, NULL), nd;
      if (*o == 'A') {
        int ai[2];
        tr = tb_tensor(&b, 4, yd, NULL);
        ai[0] = tr;
        ai[1] = cur;
        tb_node(&b, "Add", 14, 2, ai, nx);
      } else if (*o == 'X' || *o == 'K') {
        int ai[2] = {cur, tb_tensor(&b, 1, &one, *o == 'X' ? &xmax : &kmul)};
        tb_node(&b, *o == 'X' ? "Max" : "Mul", 13, 2, ai, nx);
      } else if (*o == 'L' || *o == 'H') {
        nd = tb_node(&b, *o == 'L' ? "LeakyRelu" : "HardSigmoid", 6, 1, &cur, nx);
        tb_attr_f(&b, nd, "alpha", 0.2f);
        if (*o == 'H') tb_attr_f(&b, nd, "beta", 0.5f);
      } else {
        nd = tb_node(&b, *o == 'R' ? "Relu" : *o == 'S' ? "Sigmoid"
                                                        : "Clip",
                     *o == 'C' ? 6 : 14, 1, &cur, nx);
        if (*o == 'C') {
          tb_attr_f(&b, nd, "min", 0.f);
          tb_attr_f(&b, nd, "max", 6.f);
        }
      }
      cur = nx;
    }
    (void)t2;
    (void)t3;
    tb_finish(&b, cur);
    for (i = 0; i < yn; i++) {
      int64_t m = (i / (oh * ow)) % s.m;
      float v = (ref[i] - bn[2 * s.m + m]) / sqrtf(bn[3 * s.m + m] + 1e-5f) * bn[m] + bn[s.m + m];
      for (o = ch; *o; o++)
        v = *o == 'A'   ? v + res[i]
            : *o == 'R' ? (v > 0.f ? v : 0.f)
            : *o == 'S' ? 1.f / (1.f + expf(-v))
            : *o == 'L' ? (v >= 0.f ? v : 0.2f * v)
            : *o == 'X' ? (v > xmax ? v : xmax)
            : *o == 'H' ? fminf(fmaxf(0.2f * v + 0.5f, 0.f), 1.f)
            : *o == 'K' ? v * kmul
                        : (v < 0.f ? 0.f : v > 6.f ? 6.f
                                                   : v);
      ref[i] = v;
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
  free(x);
  free(w);
  free(bias);
  free(bn);
  free(res);
  free(ref);
  free(got);
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

/* conv.packed_gemm (pixels in the lanes for planes of 16+ pixels, channels in the lanes below)
 * and the depthwise kernels, on every SIMD code path this CPU runs (knob `simd`), plain and with
 * each fused chain after BN: Relu+Add, Sigmoid+Add (the scalar tail), Add+Relu, Clip, Relu, Add
 * (the last four have specialised AVX-512 GEMM epilogues). */
static void packed_cases(tb_plugin_t *p) {
  /* n c h w m kh kw sh sw dh dw pt pl pb pr g */
  static const struct {
    const char *name, *variant;
    cshape_t s;
    int64_t block;
  } cases[] = {
      {"packed dense 2 images, 30-pixel planes", "conv.packed_gemm", {2, 5, 11, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 1}, 0},
      {"packed 40x37, 19 rows", "conv.packed_gemm", {1, 3, 40, 37, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"packed 40x37 chunks of 256", "conv.packed_gemm", {1, 3, 40, 37, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 256},
      {"packed pointwise 35 pixels", "conv.packed_gemm", {2, 8, 7, 5, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed pointwise 64 pixels, 70 rows", "conv.packed_gemm", {1, 24, 8, 8, 70, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed pointwise stride 2", "conv.packed_gemm", {1, 16, 8, 8, 12, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed 3x3 plane, 40 rows (channels in lanes)", "conv.packed_gemm", {1, 16, 3, 3, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"packed 2x2 plane, 70 rows, 2 images", "conv.packed_gemm", {2, 20, 4, 4, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"packed 7-pixel 1-row plane", "conv.packed_gemm", {1, 6, 1, 7, 33, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1}, 0},
      /* 81 pixels: channels in the lanes through the pixel table, in two passes of tiles */
      {"packed 9x9 plane, 40 rows", "conv.packed_gemm", {1, 12, 9, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      /* 16x16 rows as whole 16-pixel segments; 20-wide rows as 16 + 4 */
      {"packed 16x16 plane, 2 images", "conv.packed_gemm", {2, 5, 16, 16, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"packed 20x12 plane stride 2", "conv.packed_gemm", {1, 4, 24, 40, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, 0},
      /* strides 3 and 4 with padding: the stride-phase copy's row and column phases counted
       * along the rows (pad_part) */
      {"packed 3x3 strides 3x4 padded", "conv.packed_gemm", {1, 5, 23, 29, 7, 3, 3, 3, 4, 1, 1, 2, 1, 1, 2, 1}, 0},
      {"packed 1x3 stride 4 padded, 1 row", "conv.packed_gemm", {2, 9, 1, 37, 6, 1, 3, 1, 4, 1, 1, 0, 3, 0, 1, 1}, 0},
      /* narrow rows (5 of 16 lanes as segments): the flat run with junk columns and compaction */
      {"packed 30x5 plane", "conv.packed_gemm", {1, 4, 30, 5, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"packed dilated grouped", "conv.packed_gemm", {1, 6, 13, 10, 4, 3, 2, 1, 2, 2, 3, 2, 1, 0, 2, 2}, 0},
      /* stride 1 without padding: the tiles read the input planes in place (no padded copy),
       * through row segments (3x1 on 26x32, 2 images; grouped 3x3 on 20x18), the flat run with
       * its junk columns (30x5), the pixel table (3x1 on 10x2) and several k blocks (1x3, 150
       * channels) */
      {"packed unpadded 3x1 26x32, 2 images", "conv.packed_gemm", {2, 7, 26, 32, 13, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed unpadded 3x3 grouped 20x18", "conv.packed_gemm", {1, 6, 20, 18, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 2}, 0},
      {"packed unpadded 3x3 30x5 plane", "conv.packed_gemm", {1, 4, 30, 5, 9, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed unpadded 3x1 10x2 plane, 2 images", "conv.packed_gemm", {2, 20, 10, 2, 21, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed unpadded 1x3 150 channels 6x40", "conv.packed_gemm", {1, 150, 6, 40, 11, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      /* kernels one column wide: the flat run has no junk columns and is stored in place with
       * the epilogue (row padding on 8- and 20-wide rows, stride 2, 150 channels) */
      {"packed 3x1 row pads 30x8", "conv.packed_gemm", {1, 9, 30, 8, 13, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1}, 0},
      {"packed 3x1 row pads 2/0 12x20, 150 channels, 2 images", "conv.packed_gemm", {2, 150, 12, 20, 11, 3, 1, 1, 1, 1, 1, 2, 0, 0, 0, 1}, 0},
      {"packed 3x1 stride 2 on 40x40", "conv.packed_gemm", {1, 5, 40, 40, 7, 3, 1, 2, 2, 1, 1, 1, 0, 1, 0, 1}, 0},
      {"packed pointwise stride 2 on 24x40", "conv.packed_gemm", {1, 16, 24, 40, 9, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1}, 0},
      /* stride 1 with column padding only (the padded copy; where a tile reads the input in
       * place instead, these are its border cases): edge and middle 16-column blocks, a last
       * block of 8, dilation 2 with 150 channels (k blocks that start mid kw) */
      {"packed 1x3 column pads 26x32, 2 images", "conv.packed_gemm", {2, 7, 26, 32, 13, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1}, 0},
      {"packed 3x3 column pads 2/0 20x64 grouped", "conv.packed_gemm", {1, 6, 20, 64, 10, 3, 3, 1, 1, 1, 1, 0, 2, 0, 0, 2}, 0},
      {"packed 1x3 dilation 2 column pads 150 channels 6x40", "conv.packed_gemm", {1, 150, 6, 40, 11, 1, 3, 1, 1, 1, 2, 0, 2, 0, 2, 1}, 0},
      /* the register tiles over several k blocks of 128: a 1-D conv of a long kernel and wide
       * stride (5 pixels: channels in the lanes, rows 16 + 16 + 5), and a pointwise conv of 72
       * pixels (pixels in the lanes: full 16-pixel blocks, prefetched, and a tail of 8) */
      {"packed 1-D kernel 100 stride 20, 3 channels, 5 pixels", "conv.packed_gemm", {1, 3, 1, 180, 37, 1, 100, 1, 20, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed pointwise 150 channels, 72 pixels", "conv.packed_gemm", {1, 150, 9, 8, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      /* 1-D convs over planes of 1-4 pixels (channels in the lanes, one tile; the AVX-512 tile
       * holds its weights in registers): 3 k blocks through the row offsets and the pixel table,
       * stride 2 (stride-phase copies of 1-2 elements), one pixel, 70 and 33 rows (partial last
       * panels of 32 and 16), a pointwise conv over 4 pixels at a fixed B stride (2 k blocks) and
       * 13 pixels in tiles of 6 + 6 + 1 */
      {"packed 1-D 129 channels k3, 3 pixels, 70 rows", "conv.packed_gemm", {1, 129, 1, 3, 70, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1}, 0},
      {"packed 1-D stride 2, 128 channels, 2 pixels", "conv.packed_gemm", {1, 128, 1, 3, 40, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1}, 0},
      {"packed 1-D stride 2, 1 pixel, 33 rows", "conv.packed_gemm", {1, 64, 1, 2, 33, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1}, 0},
      {"packed 1-D 1 pixel, pads 1/1, 70 rows", "conv.packed_gemm", {1, 64, 1, 1, 70, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1}, 0},
      {"packed pointwise 150 channels, 4 pixels", "conv.packed_gemm", {1, 150, 2, 2, 45, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed 1-D 13 pixels, 40 channels", "conv.packed_gemm", {2, 40, 1, 13, 35, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1}, 0},
      {"packed 1-D kernel 256 stride 128, 3 pixels, 258 rows", "conv.packed_gemm", {1, 1, 1, 576, 258, 1, 256, 1, 128, 1, 1, 0, 0, 0, 0, 1}, 0},
      /* B rows a multiple of 2 KiB apart (planes of 512 and 1024 pixels, im2col chunks of 1024)
       * with several row panels: the AVX2 tile reads each 16-pixel block from a packed copy */
      {"packed pointwise 32x32 plane, 20 rows", "conv.packed_gemm", {1, 24, 32, 32, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed pointwise 16x32 plane, 2 images", "conv.packed_gemm", {2, 9, 16, 32, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed 40x37 chunks of 1024", "conv.packed_gemm", {1, 3, 40, 37, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1024},
      /* the AVX-512 tile's packed 32-pixel blocks (three or more row panels of 8), 2 images, a
       * partial last panel */
      {"packed pointwise 64x32 plane, 27 rows, 2 images", "conv.packed_gemm", {2, 30, 64, 32, 27, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      /* the AVX2 tile's runs of adjacent 16-pixel blocks per row panel (8 blocks for K <= 64,
       * 512 / K above): a partial last run ending in a half block, in place; packed runs of 5
       * blocks (K 100) with a last run of 2 */
      {"packed pointwise 20x30 plane, 20 rows, 2 images", "conv.packed_gemm", {2, 24, 20, 30, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"packed pointwise 16x32 plane, 100 channels, 13 rows", "conv.packed_gemm", {1, 100, 16, 32, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"depthwise 3x3 stride 2, 21 wide", "conv.depthwise_direct", {1, 8, 13, 21, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8}, 0},
      {"depthwise 5x5 stride 2, 37 wide", "conv.depthwise_direct", {2, 3, 11, 37, 3, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 3}, 0},
      {"depthwise 3x3 stride 2 pad 0, 3x3 plane", "conv.depthwise_direct", {1, 4, 6, 6, 4, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 4}, 0},
      /* 16 channels and a tail of 4 in the lanes; 5x5 taps; narrow rows of a taller plane */
      {"depthwise 20 channels, 5x5, 6x6 plane", "conv.depthwise_direct", {2, 20, 6, 6, 20, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 20}, 0},
      {"depthwise 25x5 plane", "conv.depthwise_direct", {1, 17, 25, 5, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17}, 0},
      /* the AVX2 channel-lane blocks (blis_dw256cl.c: two halves of 8 channels per block of 16):
       * 27 channels (16 + 8 + 3), 13 (8 + 5), 6 (one partial half); 5x5 on 2-row planes (PP-OCR's),
       * strides 2/1, a 7x7 filter, dilation 2, pads that differ per side */
      {"depthwise 5x5, 27 channels, 2x30 plane", "conv.depthwise_direct", {1, 27, 2, 30, 27, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 27}, 0},
      {"depthwise 5x5 strides 2/1, 13 channels, 6x21", "conv.depthwise_direct", {2, 13, 6, 21, 13, 5, 5, 2, 1, 1, 1, 2, 2, 2, 2, 13}, 0},
      {"depthwise 7x7, 6 channels, pads 3/1/2/0, 9x11", "conv.depthwise_direct", {1, 6, 9, 11, 6, 7, 7, 1, 1, 1, 1, 3, 1, 2, 0, 6}, 0},
      {"depthwise 3x3 dilation 2, 11 channels, 8x9", "conv.depthwise_direct", {1, 11, 8, 9, 11, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 11}, 0},
      /* planes too large for the channel-lane path (padded plane over 1024 pixels; with stride 2
       * over 100 outputs): the masked-load stride-2 and the flat stride-1 planes */
      {"depthwise 3x3 stride 2, 41x45 plane", "conv.depthwise_direct", {1, 3, 41, 45, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3}, 0},
      {"depthwise 3x3 stride 1, 40x40 plane", "conv.depthwise_direct", {1, 2, 40, 40, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 0},
      /* the 3x3 row kernels (each input row loaded once for the output rows it feeds): no or
       * asymmetric padding, heights that leave a partial group of rows, narrow tall planes */
      {"depthwise 3x3 stride 1 pad 0, 37x35 plane", "conv.depthwise_direct", {1, 3, 37, 35, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 3}, 0},
      {"depthwise 3x3 stride 1, pads 2/0, 41x33", "conv.depthwise_direct", {1, 2, 41, 33, 2, 3, 3, 1, 1, 1, 1, 2, 0, 0, 2, 2}, 0},
      /* interior groups of 4 rows in 16-column blocks (AVX2), 8-column blocks at the edges and
       * in the rows next to the padding; a right pad of 2 */
      {"depthwise 3x3 stride 1, pads 1/0/1/2, 23x45", "conv.depthwise_direct", {1, 3, 23, 45, 3, 3, 3, 1, 1, 1, 1, 1, 0, 1, 2, 3}, 0},
      {"depthwise 3x3 stride 1, 300x3 plane", "conv.depthwise_direct", {1, 2, 300, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 0},
      {"depthwise 3x3 stride 2 pad 0, 43x34 plane", "conv.depthwise_direct", {1, 2, 43, 34, 2, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 2}, 0},
      {"depthwise 3x3 stride 2, pads 0/1, 30x33", "conv.depthwise_direct", {1, 3, 30, 33, 3, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 3}, 0},
      {"depthwise 3x3 stride 1, multiplier 2, 20x30", "conv.depthwise_direct", {2, 2, 20, 30, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 0},
      {"depthwise 3x3 stride 2, multiplier 2, 25x40", "conv.depthwise_direct", {1, 2, 25, 40, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2}, 0},
      /* padded planes over the SIMD path's stack buffer: strips of output rows (AVX2, C) */
      {"depthwise 3x3 stride 1, 130x131 plane", "conv.depthwise_direct", {1, 2, 130, 131, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 0},
      {"depthwise 5x5 stride 2, 153x140 plane", "conv.depthwise_direct", {1, 2, 153, 140, 2, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 2}, 0},
      {"depthwise 3x3 dilation 2, pads 3/0, 150x129", "conv.depthwise_direct", {1, 2, 150, 129, 2, 3, 3, 1, 1, 2, 2, 3, 0, 0, 3, 2}, 0},
      /* the register-blocked planes (4 vectors of the flat stride-1 run, 4 output rows with
       * stride 2): runs that end mid block, heights that leave 1-3 rows of the last block */
      {"depthwise 5x5 stride 1, 24x96 plane", "conv.depthwise_direct", {1, 3, 24, 96, 3, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 3}, 0},
      {"depthwise 5x5 stride 1, 13x7 plane", "conv.depthwise_direct", {1, 2, 13, 7, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 2}, 0},
      {"depthwise 5x5 stride 1 pad 0, 33x41", "conv.depthwise_direct", {1, 2, 33, 41, 2, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0, 2}, 0},
      {"depthwise 5x5 stride 2, 23x61 plane", "conv.depthwise_direct", {1, 2, 23, 61, 2, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 2}, 0},
      {"depthwise 5x5 strides 2/1, 21x33", "conv.depthwise_direct", {1, 2, 21, 33, 2, 5, 5, 2, 1, 1, 1, 2, 2, 2, 2, 2}, 0},
      {"depthwise 7x7 stride 2, pads 3/1, 19x50", "conv.depthwise_direct", {1, 2, 19, 50, 2, 7, 7, 2, 2, 1, 1, 3, 1, 1, 3, 2}, 0},
      {"depthwise 3x3 stride 1, 7x130 plane", "conv.depthwise_direct", {1, 2, 7, 130, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 0},
      {"depthwise 3x3 strides 1/2, 27x53", "conv.depthwise_direct", {1, 2, 27, 53, 2, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 2}, 0},
      /* Winograd F(4x4,3x3): planes that leave partial 4x4 tiles, no / asymmetric padding, one
       * output row, rows of more than 16 tiles (two transform steps, the edge copy on the right),
       * planes of several tile-row blocks, channel counts off the vector width */
      {"winograd 11x9, 2 images", "conv.winograd", {2, 5, 11, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"winograd pad 0, 10x13", "conv.winograd", {1, 3, 10, 13, 5, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"winograd pads 2/0, 0/2, 23x30", "conv.winograd", {1, 17, 23, 30, 19, 3, 3, 1, 1, 1, 1, 2, 0, 0, 2, 1}, 0},
      {"winograd 1x9 plane", "conv.winograd", {1, 3, 1, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"winograd 7x150 plane", "conv.winograd", {1, 4, 7, 150, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"winograd 70x66, 4 blocks", "conv.winograd", {1, 9, 70, 66, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      /* F(6x6,3x3) at AVX2 (blis_wino6.c; 32+ channels, 24+ rows and columns): partial 6x6 tiles
       * on both edges, rows of 8+ tiles (two transform steps, the masked last store), no / uneven
       * padding, 2 images, several blocks, channel counts off the GEMM panels */
      {"winograd 32->33 on 25x26, 2 images", "conv.winograd", {2, 32, 25, 26, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
      {"winograd 40->32 pad 0, 30x59", "conv.winograd", {1, 40, 30, 59, 32, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0},
      {"winograd 35->37 pads 2/0, 0/2, 46x52", "conv.winograd", {1, 35, 46, 52, 37, 3, 3, 1, 1, 1, 1, 2, 0, 0, 2, 1}, 0},
      {"default dilation 2 on 48x48, 32 channels", NULL, {1, 32, 48, 48, 32, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, 0},
      /* dilated 3x3 as a mosaic of sub-grids (blis_wino_dil.c); sizes not divisible by the
       * dilation take conv.packed_gemm by default */
      {"winograd dilation 2, 16x20", "conv.winograd", {1, 8, 16, 20, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, 0},
      {"winograd dilation 3, 2 images 21x18", "conv.winograd", {2, 5, 21, 18, 7, 3, 3, 1, 1, 3, 3, 3, 3, 3, 3, 1}, 0},
      {"winograd dilation 5, 80x80", "conv.winograd", {1, 16, 80, 80, 17, 3, 3, 1, 1, 5, 5, 5, 5, 5, 5, 1}, 0},
      {"default dilation 5, 80x80", NULL, {1, 16, 80, 80, 16, 3, 3, 1, 1, 5, 5, 5, 5, 5, 5, 1}, 0},
      {"default dilation 5, 80x82", NULL, {1, 8, 80, 82, 8, 3, 3, 1, 1, 5, 5, 5, 5, 5, 5, 1}, 0},
      {"default dilation 2, 81x80", NULL, {1, 8, 81, 80, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, 0},
  };
  int64_t ns = simd_choices(p), si;
  size_t i;
  CHECK(ns >= 2, "knob simd has %lld values (want auto and at least c)", (long long)ns);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[160];
    int fused;
    for (fused = 0; fused <= 10; fused++) {
      mi_knob_value_t kb[1] = {{"im2col_block", cases[i].block, 0.}};
      snprintf(name, sizeof name, "%s (auto, fused %d)", cases[i].name, fused);
      conv_case(p, name, cases[i].s, cases[i].variant, fused, kb, cases[i].block ? 1 : 0);
      for (si = 1; si < ns; si++) {
        mi_knob_value_t kv[2] = {{"simd", si, 0.}, {"im2col_block", cases[i].block, 0.}};
        snprintf(name, sizeof name, "%s (simd %lld, fused %d)", cases[i].name, (long long)si, fused);
        conv_case(p, name, cases[i].s, cases[i].variant, fused, kv, cases[i].block ? 2 : 1);
      }
    }
  }
}

static tb_plugin_t p;
/* n c h w m kh kw sh sw dh dw pt pl pb pr g */
static cshape_t dense = {2, 5, 11, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 1};
static cshape_t dilated = {1, 6, 13, 10, 4, 3, 2, 1, 2, 2, 3, 2, 1, 0, 2, 2};
static cshape_t pw = {2, 8, 7, 5, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1};
static cshape_t tall = {1, 3, 40, 37, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static cshape_t tall2 = {1, 3, 60, 45, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
static cshape_t dw = {1, 6, 9, 11, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 6};
static cshape_t dw2 = {2, 3, 8, 8, 6, 5, 5, 1, 2, 2, 1, 4, 2, 0, 3, 3};
/* Rows of 37 and 18 outputs: full 16-wide SIMD blocks plus a partial one. */
static cshape_t dwwide = {1, 4, 6, 37, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4};
static cshape_t dwwide2 = {1, 4, 7, 37, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4};
/* A 130x130 plane does not fit the SIMD path's stack buffer: the plain loops run. */
static cshape_t dwbig = {1, 2, 130, 130, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2};
static mi_knob_value_t k1[2] = {{"threads", 1, 0.}, {"im2col_block", 256, 0.}};
static mi_knob_value_t ob[1] = {{"oc_block", 8, 0.}};
static mi_knob_value_t k256[1] = {{"im2col_block", 256, 0.}}; /* chunks that start mid output row */
static mi_knob_value_t arch[1] = {{"arch", 1, 0.}};           /* "blis": BLIS's own detection */

static void setup(void) {
  REQUIRE(tb_load(&p));
  {
    mi_device_desc_t d;
    mi_error_t err = {0, ""};
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    if (p.api->device_info(p.ctx, 0, &d, &err) == MI_OK) g_cores = d.compute_units;
  }
}

static void teardown(void) {
  tb_unload(&p);
  free(kept);
}

static void conv(void) {
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
  conv_case(&p, "fused dw large plane+bn+leaky+max", dwbig, "conv.depthwise_direct", 7, NULL, 0);
  conv_case(&p, "fused 1x1+bn+hsigmoid+mul", pw, "conv.1x1_gemm", 8, NULL, 0);
}

static void packed(void) {
  packed_cases(&p);
}

static void refusals_all(void) {
  refusals(&p);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(conv),
    TU_CASE(packed),
    TU_CASE(refusals_all),
};

TU_MAIN(setup, teardown)
