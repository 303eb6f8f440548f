/* test_blis_wino1d.c - blis-cpu's conv.winograd1d (1-D convs of any stride as Winograd on a
 * polyphase split) against a naive convolution written here: strides 1-4 and 64, kernels 1-9 and
 * long ones, symmetric and asymmetric padding, channel counts off the vector width, rows shorter
 * than a tile, several images, 2-D convs with a 1xK kernel, fused epilogues, 1 and 2 threads, on
 * every SIMD level (MI_BLIS_MAX_SIMD caps the plugin loaded for it); the default's choice on the
 * same shapes; and the refusals. */
#include <stdlib.h>

#include "test_blis_util.h"

typedef struct w1_case {
  const char *name;
  int64_t n, c, h, w, m, k, s, pl, pr; /* h 0: a rank-3 (1-D) conv, else 2-D with a 1xK kernel */
  const char *chain;                   /* after the conv (with bias): R Relu, T Tanh, G Gelu, A residual Add */
  int64_t rs;                          /* 2-D: the row stride (0: 1) */
} w1_case_t;

static int64_t rows_in(const w1_case_t *q) { return q->h ? q->h : 1; }
static int64_t rows_out(const w1_case_t *q) { return q->h ? (q->h - 1) / (q->rs ? q->rs : 1) + 1 : 1; }

static int64_t out_len(const w1_case_t *q) { return (q->w + q->pl + q->pr - q->k) / q->s + 1; }

static float gelu(float v) { return 0.5f * v * (1.f + erff(v / sqrtf(2.f))); }

/* Naive conv + bias + chain in double, rows of image n, row h independent. */
static void naive(const w1_case_t *q, const float *x, const float *w, const float *bias, const float *res, float *y) {
  int64_t H = rows_in(q), OH = rows_out(q), rs = q->rs ? q->rs : 1, ow = out_len(q), n, m, h, o, c, k;
  for (n = 0; n < q->n; n++)
    for (m = 0; m < q->m; m++)
      for (h = 0; h < OH; h++)
        for (o = 0; o < ow; o++) {
          double acc = bias[m];
          int64_t yi = ((n * q->m + m) * OH + h) * ow + o;
          const char *e;
          float v;
          for (c = 0; c < q->c; c++)
            for (k = 0; k < q->k; k++) {
              int64_t i = o * q->s + k - q->pl;
              if (i >= 0 && i < q->w) acc += (double)x[((n * q->c + c) * H + h * rs) * q->w + i] * w[(m * q->c + c) * q->k + k];
            }
          v = (float)acc;
          for (e = q->chain; *e; e++)
            v = *e == 'R' ? (v > 0.f ? v : 0.f) : *e == 'T' ? tanhf(v)
                                              : *e == 'G'   ? gelu(v)
                                                            : v + res[yi];
          y[yi] = v;
        }
}

/* Runs case q with `variant` (NULL: the default) and `threads` (0: the plugin's), compares with
 * the naive result; *out gets the output (yn floats) when not NULL. */
static void run_case(tb_plugin_t *p, const w1_case_t *q, const char *variant, int64_t threads, const char *cap,
                     float *out) {
  int rank = q->h ? 4 : 3;
  int64_t H = rows_in(q), OH = rows_out(q), ow = out_len(q), md = q->m;
  int64_t xd[4], wd[4], yd[4], ks[2] = {1, q->k}, st[2] = {q->rs ? q->rs : 1, q->s}, pads[4] = {0, q->pl, 0, q->pr};
  int64_t k1[1] = {q->k}, s1[1] = {q->s}, p1[2] = {q->pl, q->pr};
  int64_t xn = q->n * q->c * H * q->w, wn = q->m * q->c * q->k, yn = q->n * q->m * OH * ow;
  float *x = malloc((size_t)xn * 4), *w = malloc((size_t)wn * 4), *bias = malloc((size_t)q->m * 4);
  float *res = malloc((size_t)yn * 4), *ref = malloc((size_t)yn * 4), *got = malloc((size_t)yn * 4);
  const float *ins[2];
  mi_knob_value_t kv[1] = {{"threads", threads, 0.}};
  mi_error_t err = {0, ""};
  const char *e;
  tb_t b;
  int tx, tw, tbias, ty, node, cur;
  int32_t rc;
  if (rank == 4) {
    int64_t x4[4] = {q->n, q->c, H, q->w}, w4[4] = {q->m, q->c, 1, q->k}, y4[4] = {q->n, q->m, OH, ow};
    memcpy(xd, x4, sizeof x4);
    memcpy(wd, w4, sizeof w4);
    memcpy(yd, y4, sizeof y4);
  } else {
    int64_t x3[3] = {q->n, q->c, q->w}, w3[3] = {q->m, q->c, q->k}, y3[3] = {q->n, q->m, ow};
    memcpy(xd, x3, sizeof x3);
    memcpy(wd, w3, sizeof w3);
    memcpy(yd, y3, sizeof y3);
  }
  tb_fill(x, xn, 1);
  tb_fill(w, wn, 2);
  tb_fill(bias, q->m, 3);
  tb_fill(res, yn, 4);
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, rank, xd, NULL);
  tw = tb_tensor(&b, rank, wd, w);
  tbias = tb_tensor(&b, 1, &md, bias);
  ty = tb_tensor(&b, rank, yd, NULL);
  {
    int in3[3] = {tx, tw, tbias};
    node = tb_node(&b, "Conv", 17, 3, in3, ty);
  }
  tb_attr_is(&b, node, "kernel_shape", rank - 2, rank == 4 ? ks : k1);
  tb_attr_is(&b, node, "strides", rank - 2, rank == 4 ? st : s1);
  tb_attr_is(&b, node, "pads", 2 * (rank - 2), rank == 4 ? pads : p1);
  cur = ty;
  for (e = q->chain; *e; e++) {
    int nx = tb_tensor(&b, rank, yd, NULL);
    if (*e == 'A') {
      int ai[2] = {cur, tb_tensor(&b, rank, yd, NULL)};
      tb_node(&b, "Add", 14, 2, ai, nx);
    } else {
      tb_node(&b, *e == 'R' ? "Relu" : *e == 'T' ? "Tanh"
                                                 : "Gelu",
              *e == 'G' ? 20 : 14, 1, &cur, nx);
    }
    cur = nx;
  }
  tb_finish(&b, cur);
  naive(q, x, w, bias, res, ref);
  ins[0] = x;
  ins[1] = res;
  rc = tb_run(p, &b, variant, kv, threads ? 1 : 0, ins, got, &err);
  CHECK(rc == MI_OK, "%s (%s, cap %s, threads %lld): run failed: %s", q->name, variant ? variant : "default",
        cap, (long long)threads, err.message);
  if (rc == MI_OK) {
    double l2 = tu_rel_l2(got, ref, yn);
    CHECK(l2 < 1e-5, "%s (%s, cap %s, threads %lld): rel L2 %g", q->name, variant ? variant : "default", cap,
          (long long)threads, l2);
    if (out) memcpy(out, got, (size_t)yn * 4);
  }
  free(x);
  free(w);
  free(bias);
  free(res);
  free(ref);
  free(got);
}

/* name n c h w m k s pl pr chain */
static const w1_case_t cases[] = {
    {"k3 s1 pad 1", 1, 5, 0, 37, 7, 3, 1, 1, 1, "", 0},
    {"k2 s1 pad 0", 1, 3, 0, 40, 9, 2, 1, 0, 0, "R", 0},
    {"k4 s1 pads 2/1", 2, 6, 0, 51, 5, 4, 1, 2, 1, "", 0},
    {"k5 s1 pads 0/3", 1, 4, 0, 29, 17, 5, 1, 0, 3, "T", 0},
    {"k6 s1", 1, 3, 0, 70, 4, 6, 1, 3, 2, "", 0},
    {"k7 s1 (two chunks)", 1, 5, 0, 66, 6, 7, 1, 3, 3, "", 0},
    {"k9 s1 (three chunks)", 1, 3, 0, 45, 5, 9, 1, 4, 4, "A", 0},
    {"k2 s2", 1, 7, 0, 64, 10, 2, 2, 0, 0, "", 0},
    {"k3 s2 pad 0", 1, 9, 0, 415, 19, 3, 2, 0, 0, "G", 0},
    {"k3 s2 pads 1/0", 2, 5, 0, 24, 6, 3, 2, 1, 0, "", 0},
    {"k4 s2 pads 1/1", 1, 3, 0, 33, 8, 4, 2, 1, 1, "RA", 0},
    {"k5 s2", 1, 6, 0, 100, 5, 5, 2, 2, 2, "", 0},
    {"k7 s3 pad 0 (Moonshine's conv2 shape, fewer channels)", 1, 12, 0, 1249, 20, 7, 3, 0, 0, "G", 0},
    {"k7 s3 pads 3/2", 1, 5, 0, 50, 7, 7, 3, 3, 2, "", 0},
    {"k8 s3", 2, 4, 0, 61, 3, 8, 3, 1, 4, "T", 0},
    {"k3 s3", 1, 5, 0, 31, 6, 3, 3, 0, 0, "", 0},
    {"k4 s4", 1, 3, 0, 40, 5, 4, 4, 0, 0, "", 0},
    {"k9 s4 pads 4/4", 1, 5, 0, 77, 9, 9, 4, 4, 4, "A", 0},
    {"k6 s4 pads 0/2", 1, 4, 0, 43, 6, 6, 4, 0, 2, "", 0},
    {"k1 s2 (no taps to share)", 1, 6, 0, 30, 5, 1, 2, 0, 0, "", 0},
    {"k31 s1 (long, chunks)", 1, 3, 0, 90, 5, 31, 1, 15, 15, "", 0},
    {"k127 s64 (Moonshine's conv1 shape)", 1, 1, 0, 2000, 18, 127, 64, 0, 0, "T", 0},
    {"row shorter than a tile", 1, 5, 0, 4, 6, 3, 1, 0, 0, "", 0},
    {"one output, k3 s2", 1, 5, 0, 3, 4, 3, 2, 0, 0, "", 0},
    {"many tiles, blocks", 1, 17, 0, 3000, 11, 3, 1, 1, 1, "R", 0},
    {"two images of two blocks", 2, 5, 0, 1100, 7, 3, 2, 1, 1, "T", 0},
    {"2-D 1x3 stride 1x2, 5 rows", 2, 6, 5, 40, 7, 3, 2, 1, 1, "A", 0},
    {"2-D 1x5 stride 1x1, 3 rows", 1, 4, 3, 33, 9, 5, 1, 2, 2, "", 0},
    {"2-D 1x4 stride 2x3, 7 rows", 1, 5, 7, 50, 6, 4, 3, 1, 2, "A", 2},
    {"2-D 1x7 stride 3x3 on one row", 1, 8, 1, 200, 9, 7, 3, 0, 0, "", 3},
    {"k13 s2 (phases of tap chunks)", 1, 5, 0, 90, 7, 13, 2, 6, 6, "", 0},
    {"k20 s3 pads 2/7 (chunks of 3 phases)", 2, 3, 0, 121, 5, 20, 3, 2, 7, "R", 0},
    {"k2 s5 (fewer taps than the stride)", 1, 4, 0, 57, 6, 2, 5, 1, 0, "", 0},
    {"k9 s1 pads 8/8 on a 3-sample row", 1, 2, 0, 3, 3, 9, 1, 8, 8, "", 0},
    {"k1 s1 on one sample", 1, 3, 0, 1, 4, 1, 1, 0, 0, "", 0},
    {"k5 s1 on one sample, pads 2/2", 1, 3, 0, 1, 4, 5, 1, 2, 2, "", 0},
    {"2-D 1x3 stride 1, 9 rows of several blocks", 1, 3, 9, 800, 5, 3, 1, 1, 1, "T", 0},
    {"2-D 1x11 stride 1x2, 4 rows of 2 images", 2, 3, 4, 300, 5, 11, 2, 5, 5, "A", 0},
};

static void all_levels(void) {
  static const char *caps[3] = {NULL, "avx2", "c"};
  int lv;
  for (lv = 0; lv < 3; lv++) {
    tb_plugin_t p;
    size_t i;
    const char *cap = caps[lv] ? caps[lv] : "none";
    if (caps[lv]) setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    else
      unsetenv("MI_BLIS_MAX_SIMD");
    REQUIRE(tb_load(&p));
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      const w1_case_t *q = &cases[i];
      int64_t yn = q->n * q->m * rows_out(q) * out_len(q);
      float *one = malloc((size_t)yn * 4), *two = malloc((size_t)yn * 4);
      memset(one, 0, (size_t)yn * 4);
      memset(two, 0xff, (size_t)yn * 4);
      run_case(&p, q, "conv.winograd1d", 1, cap, one);
      run_case(&p, q, "conv.winograd1d", 2, cap, two);
      /* blocks are planned for the device's cores: the bits do not depend on the threads */
      CHECK(memcmp(one, two, (size_t)yn * 4) == 0, "%s (cap %s): threads 1 and 2 differ", q->name, cap);
      run_case(&p, q, NULL, 0, cap, NULL);
      free(one);
      free(two);
    }
    tb_unload(&p);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
}

/* A grouped conv is refused with a message; the default takes it another way. */
static void refusals(void) {
  tb_plugin_t p;
  int64_t xd[3] = {1, 4, 20}, wd[3] = {4, 2, 3}, yd[3] = {1, 4, 18}, grp = 2;
  float w[24] = {0}, x[80] = {0}, y[72];
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int tx, tw, ty, node;
  REQUIRE(tb_load(&p));
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, 3, xd, NULL);
  tw = tb_tensor(&b, 3, wd, w);
  ty = tb_tensor(&b, 3, yd, NULL);
  {
    int in2[2] = {tx, tw};
    node = tb_node(&b, "Conv", 17, 2, in2, ty);
  }
  tb_attr_i(&b, node, "group", grp);
  tb_finish(&b, ty);
  CHECK(tb_run(&p, &b, "conv.winograd1d", NULL, 0, ins, y, &err) == MI_ERR_INVALID_CONFIG &&
            strstr(err.message, "winograd1d"),
        "grouped conv: %s", err.message);
  CHECK(tb_run(&p, &b, NULL, NULL, 0, ins, y, &err) == MI_OK, "grouped conv, default: %s", err.message);
  tb_unload(&p);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_levels),
    TU_CASE(refusals),
};

TU_MAIN(NULL, NULL)
