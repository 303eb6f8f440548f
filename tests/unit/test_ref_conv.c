/* test_ref_conv.c - reference Conv, ConvTranspose and the pools against independent sums. */
#include <time.h>

#include "test_ref_common.h"

typedef struct conv_case {
  int64_t n, c, h, w, m, group, kh, kw;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
} conv_case_t;

/* The test's own conv: build the zero-padded input explicitly, then sum over the window. */
static void naive_conv(const conv_case_t *k, const float *x, const float *wt, const float *b,
                       float *y, int64_t *oh_out, int64_t *ow_out) {
  int64_t ph = k->h + k->pt + k->pb, pw = k->w + k->pl + k->pr;
  int64_t oh = (ph - (k->dh * (k->kh - 1) + 1)) / k->sh + 1;
  int64_t ow = (pw - (k->dw * (k->kw - 1) + 1)) / k->sw + 1;
  float *pad = calloc((size_t)(k->n * k->c * ph * pw), sizeof *pad);
  for (int64_t i = 0; i < k->n * k->c; i++)
    for (int64_t r = 0; r < k->h; r++)
      for (int64_t s = 0; s < k->w; s++)
        pad[(i * ph + r + k->pt) * pw + s + k->pl] = x[(i * k->h + r) * k->w + s];
  int64_t cg = k->c / k->group, mg = k->m / k->group;
  for (int64_t n = 0; n < k->n; n++)
    for (int64_t m = 0; m < k->m; m++)
      for (int64_t r = 0; r < oh; r++)
        for (int64_t s = 0; s < ow; s++) {
          double acc = b ? b[m] : 0.0;
          int64_t g = m / mg;
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t a = 0; a < k->kh; a++)
              for (int64_t e = 0; e < k->kw; e++)
                acc += (double)pad[((n * k->c + g * cg + ci) * ph + r * k->sh + a * k->dh) * pw +
                                   s * k->sw + e * k->dw] *
                       wt[((m * cg + ci) * k->kh + a) * k->kw + e];
          y[((n * k->m + m) * oh + r) * ow + s] = (float)acc;
        }
  free(pad);
  *oh_out = oh;
  *ow_out = ow;
}

static void fill(float *p, int64_t n, int seed) {
  for (int64_t i = 0; i < n; i++) p[i] = (float)(((i * 7 + seed * 13) % 17) - 8) / 8.0f;
}

/* Runs one Conv built from `k` (explicit pads) and compares with naive_conv. */
static void check_conv(const char *what, const conv_case_t *k, int with_bias) {
  int64_t xd[4] = {k->n, k->c, k->h, k->w}, wd[4] = {k->m, k->c / k->group, k->kh, k->kw};
  int64_t nx = k->n * k->c * k->h * k->w, nw = wd[0] * wd[1] * wd[2] * wd[3];
  float *x = malloc((size_t)nx * 4), *wt = malloc((size_t)nw * 4), b[64];
  float *want = malloc((size_t)(k->n * k->m * (k->h + 4) * (k->w + 4)) * 4);
  int64_t oh, ow;
  fill(x, nx, 1);
  fill(wt, nw, 2);
  fill(b, k->m, 3);
  naive_conv(k, x, wt, with_bias ? b : NULL, want, &oh, &ow);

  mi_graph_t *g = mi_graph_create("conv");
  int32_t ins[3] = {tin(g, "x", MI_DTYPE_FLOAT32, 4, xd), mi_graph_add_const_f32(g, "w", 4, wd, wt),
                    with_bias ? mi_graph_add_const_f32(g, "b", 1, &k->m, b) : -1};
  int32_t n, y = node1(g, "Conv", "conv", with_bias ? 3 : 2, ins, &n);
  int64_t strides[2] = {k->sh, k->sw}, dil[2] = {k->dh, k->dw}, pads[4] = {k->pt, k->pl, k->pb, k->pr};
  mi_node_set_ints(g, n, "strides", 2, strides);
  mi_node_set_ints(g, n, "dilations", 2, dil);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, n, "group", k->group);
  mi_graph_add_output(g, y);
  mi_array_t *in = arr_f32(4, xd, x), *out = NULL;
  mi_error_t err;
  CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s: %s", what, err.message);
  int64_t yd[4] = {k->n, k->m, oh, ow};
  expect_f32(what, out, 4, yd, want, 1e-5f);
  mi_array_destroy(in);
  mi_array_destroy(out);
  mi_graph_destroy(g);
  free(x);
  free(wt);
  free(want);
}

static void test_conv(void) {
  /* Hand case: w = [[1,0],[0,-1]] on 1..9 gives x[i][j] - x[i+1][j+1] = -4, plus bias 0.5. */
  {
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2}, one = 1, yd[4] = {1, 1, 2, 2};
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 0, 0, -1}, b = 0.5f;
    float want[4] = {-3.5f, -3.5f, -3.5f, -3.5f};
    mi_graph_t *g = mi_graph_create("conv2x2");
    int32_t ins[3] = {tin(g, "x", MI_DTYPE_FLOAT32, 4, xd),
                      mi_graph_add_const_f32(g, "w", 4, wd, w), mi_graph_add_const_f32(g, "b", 1, &one, &b)};
    mi_graph_add_output(g, node1(g, "Conv", "c", 3, ins, NULL));
    mi_array_t *in = arr_f32(4, xd, x), *out = NULL;
    mi_error_t err;
    CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s", err.message);
    expect_f32("Conv 2x2 hand", out, 4, yd, want, 0);
    mi_array_destroy(in);
    mi_array_destroy(out);
    mi_graph_destroy(g);
  }
  conv_case_t grouped = {2, 4, 7, 6, 6, 2, 3, 2, 2, 1, 1, 2, 1, 0, 2, 1};
  check_conv("Conv grouped/strided/dilated/padded", &grouped, 1);
  conv_case_t depthwise = {1, 3, 5, 5, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  check_conv("Conv depthwise", &depthwise, 0);
  conv_case_t pointwise = {1, 5, 4, 3, 7, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  check_conv("Conv 1x1", &pointwise, 1);
}

/* SAME_UPPER puts the odd padding at the end, SAME_LOWER at the start. */
static void test_auto_pad(void) {
  int64_t xd[4] = {1, 1, 4, 4}, wd[4] = {1, 1, 2, 2};
  float x[16], w[4] = {1, 2, 3, 4};
  fill(x, 16, 5);
  for (int lower = 0; lower < 2; lower++) {
    conv_case_t k = {1, 1, 4, 4, 1, 1, 2, 2, 1, 1, 1, 1, lower, lower, !lower, !lower};
    float want[16];
    int64_t oh, ow;
    naive_conv(&k, x, w, NULL, want, &oh, &ow);
    mi_graph_t *g = mi_graph_create("same");
    int32_t ins[2] = {tin(g, "x", MI_DTYPE_FLOAT32, 4, xd), mi_graph_add_const_f32(g, "w", 4, wd, w)};
    int32_t n, y = node1(g, "Conv", "c", 2, ins, &n);
    mi_node_set_string(g, n, "auto_pad", lower ? "SAME_LOWER" : "SAME_UPPER");
    mi_graph_add_output(g, y);
    mi_array_t *in = arr_f32(4, xd, x), *out = NULL;
    mi_error_t err;
    CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s", err.message);
    expect_f32(lower ? "SAME_LOWER" : "SAME_UPPER", out, 4, xd, want, 1e-6f);
    mi_array_destroy(in);
    mi_array_destroy(out);
    mi_graph_destroy(g);
  }
}

static mi_array_t *run_conv_transpose(int64_t stride, int64_t pad) {
  int64_t xd[4] = {1, 1, 2, 2}, wd[4] = {1, 1, 2, 2};
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1};
  mi_graph_t *g = mi_graph_create("convt");
  int32_t ins[2] = {tin(g, "x", MI_DTYPE_FLOAT32, 4, xd), mi_graph_add_const_f32(g, "w", 4, wd, w)};
  int32_t n, y = node1(g, "ConvTranspose", "ct", 2, ins, &n);
  int64_t s[2] = {stride, stride}, p[4] = {pad, pad, pad, pad};
  mi_node_set_ints(g, n, "strides", 2, s);
  mi_node_set_ints(g, n, "pads", 4, p);
  mi_graph_add_output(g, y);
  mi_array_t *in = arr_f32(4, xd, x), *out = NULL;
  mi_error_t err;
  CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s", err.message);
  mi_array_destroy(in);
  mi_graph_destroy(g);
  return out;
}

static void test_conv_transpose(void) {
  /* Stride 2 with a 2x2 kernel of ones: each input value fills its own 2x2 block. */
  int64_t d4[4] = {1, 1, 4, 4}, d3[4] = {1, 1, 3, 3}, d1[4] = {1, 1, 1, 1};
  float blocks[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  float sums[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4}, centre = 10;
  mi_array_t *y = run_conv_transpose(2, 0);
  expect_f32("ConvTranspose stride 2", y, 4, d4, blocks, 0);
  mi_array_destroy(y);
  y = run_conv_transpose(1, 0);
  expect_f32("ConvTranspose stride 1", y, 4, d3, sums, 0);
  mi_array_destroy(y);
  y = run_conv_transpose(1, 1);
  expect_f32("ConvTranspose pads 1", y, 4, d1, &centre, 0);
  mi_array_destroy(y);
}

static mi_array_t *run_pool(const char *op, int64_t side, const float *x, int64_t k, int64_t s,
                            int64_t pad, int ceil_mode, int include_pad) {
  int64_t xd[4] = {1, 1, side, side};
  mi_graph_t *g = mi_graph_create("pool");
  int32_t in_t = tin(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  int32_t n, y = node1(g, op, "pool", 1, &in_t, &n);
  int64_t ks[2] = {k, k}, st[2] = {s, s}, p[4] = {pad, pad, pad, pad};
  mi_node_set_ints(g, n, "kernel_shape", 2, ks);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_ints(g, n, "pads", 4, p);
  mi_node_set_int(g, n, "ceil_mode", ceil_mode);
  if (include_pad) mi_node_set_int(g, n, "count_include_pad", 1);
  mi_graph_add_output(g, y);
  mi_array_t *in = arr_f32(4, xd, x), *out = NULL;
  mi_error_t err;
  CHECK(run1(g, 1, &in, &out, &err) == MI_OK, "%s: %s", op, err.message);
  mi_array_destroy(in);
  mi_graph_destroy(g);
  return out;
}

static void test_pools(void) {
  float x[25], want[16];
  for (int i = 0; i < 25; i++) x[i] = (float)i;
  /* 5x5, kernel 2, stride 2, ceil_mode: the last window holds one row/column; its max is the
   * bottom-right element it covers. */
  int64_t d3[4] = {1, 1, 3, 3}, d2[4] = {1, 1, 2, 2}, d4[4] = {1, 1, 4, 4};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) want[i * 3 + j] = (float)(5 * (2 * i + 1 > 4 ? 4 : 2 * i + 1) + (2 * j + 1 > 4 ? 4 : 2 * j + 1));
  mi_array_t *y = run_pool("MaxPool", 5, x, 2, 2, 0, 1, 0);
  expect_f32("MaxPool ceil_mode", y, 4, d3, want, 0);
  mi_array_destroy(y);
  float floor_want[4] = {6, 8, 16, 18};
  y = run_pool("MaxPool", 5, x, 2, 2, 0, 0, 0);
  expect_f32("MaxPool floor", y, 4, d2, floor_want, 0);
  mi_array_destroy(y);

  /* 3x3 input 1..9, kernel 2, stride 1, pads 1: corners see one real value. */
  float v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int inc = 0; inc < 2; inc++) {
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        float sum = 0;
        int cnt = 0;
        for (int a = i - 1; a <= i; a++)
          for (int b = j - 1; b <= j; b++)
            if (a >= 0 && a < 3 && b >= 0 && b < 3) {
              sum += v[a * 3 + b];
              cnt++;
            }
        want[i * 4 + j] = sum / (inc ? 4.0f : (float)cnt);
      }
    y = run_pool("AveragePool", 3, v, 2, 1, 1, 0, inc);
    expect_f32(inc ? "AveragePool count_include_pad" : "AveragePool", y, 4, d4, want, 1e-6f);
    mi_array_destroy(y);
  }

  /* GlobalAveragePool: the mean of each channel. */
  int64_t xd[4] = {1, 2, 2, 3}, yd[4] = {1, 2, 1, 1};
  float gx[12] = {1, 2, 3, 4, 5, 6, -1, -2, -3, 0, 0, 12}, gw[2] = {3.5f, 1.0f};
  mi_graph_t *g = mi_graph_create("gap");
  int32_t in_t = tin(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_output(g, node1(g, "GlobalAveragePool", "gap", 1, &in_t, NULL));
  mi_array_t *in = arr_f32(4, xd, gx);
  mi_error_t err;
  CHECK(run1(g, 1, &in, &y, &err) == MI_OK, "%s", err.message);
  expect_f32("GlobalAveragePool", y, 4, yd, gw, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

/* A MobileNet-sized stack (stem, depthwise and pointwise blocks at 96x96); the time is printed,
 * never asserted (tools/bench is the place for speed). */
static void test_mobilenet_sized(void) {
  static const int64_t chans[] = {32, 64, 128, 128, 256};
  mi_graph_t *g = mi_graph_create("mbv1");
  int64_t xd[4] = {1, 3, 96, 96};
  int32_t cur = tin(g, "x", MI_DTYPE_FLOAT32, 4, xd), n;
  int64_t c = 3, stride2[2] = {2, 2}, pad1[4] = {1, 1, 1, 1};
  char name[32];
  float *w = malloc(256 * 256 * 9 * sizeof *w);
  fill(w, 256 * 256 * 9, 4);
  for (int i = 0; i < 5; i++) {
    int64_t m = chans[i];
    int64_t wd[4] = {i == 0 ? m : c, i == 0 ? 3 : 1, 3, 3};
    snprintf(name, sizeof name, "w%d", i);
    int32_t ins[2] = {cur, mi_graph_add_const_f32(g, name, 4, wd, w)};
    snprintf(name, sizeof name, "conv%d", i);
    cur = node1(g, "Conv", name, 2, ins, &n); /* stem, then depthwise 3x3 */
    mi_node_set_ints(g, n, "pads", 4, pad1);
    if (i != 2 && i != 4) mi_node_set_ints(g, n, "strides", 2, stride2);
    if (i > 0) mi_node_set_int(g, n, "group", c);
    if (i == 0) c = m;
    snprintf(name, sizeof name, "relu%d", i);
    cur = node1(g, "Relu", name, 1, &cur, NULL);
    if (i > 0) { /* pointwise c -> m */
      int64_t pd[4] = {m, c, 1, 1};
      snprintf(name, sizeof name, "pw%d", i);
      int32_t pins[2] = {cur, mi_graph_add_const_f32(g, name, 4, pd, w)};
      snprintf(name, sizeof name, "pwconv%d", i);
      cur = node1(g, "Conv", name, 2, pins, NULL);
      c = m;
    }
  }
  mi_graph_add_output(g, node1(g, "GlobalAveragePool", "gap", 1, &cur, NULL));
  mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 4, xd), *y = NULL;
  mi_array_fill_random(in, 7);
  mi_error_t err;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(run1(g, 1, &in, &y, &err) == MI_OK, "%s", err.message);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int64_t yd[4] = {1, 256, 1, 1};
  CHECK(same_shape(y, 4, yd), "MobileNet-sized output shape");
  for (int i = 0; y && i < 256; i++) CHECK(isfinite(((float *)y->data)[i]), "non-finite output");
  printf("MobileNet-sized stack at 96x96: %.1f ms\n",
         (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
  mi_array_destroy(y);
  mi_array_destroy(in);
  mi_graph_destroy(g);
  free(w);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_conv),
    TU_CASE(test_auto_pad),
    TU_CASE(test_conv_transpose),
    TU_CASE(test_pools),
    TU_CASE(test_mobilenet_sized),
};

TU_MAIN(NULL, NULL)
