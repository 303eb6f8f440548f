/* test_blis_qamx.c - blis-cpu's INT8 byte core on AMX tiles (int8_dot amx_u8, blis_qamx.c) against
 * the VNNI byte core (avx512_u8): the int32 sums of ConvInteger and MatMulInteger must be equal
 * word for word, and equal to the sums computed here, on random shapes whose output channels,
 * pixels and reduction end off the tiles (16 rows, 16 columns, 64 bytes of k), at 1 and 2
 * threads. Skipped where the CPU (or the kernel) gives no AMX. */
#include "test_blis_util.h"

static tb_plugin_t p;
static int64_t g_amx = -1, g_vnni = -1; /* knob int8_dot's values of the two cores */

static uint32_t g_rng = 2024u;
static int32_t rnd(int32_t lo, int32_t hi) {
  g_rng = g_rng * 1103515245u + 12345u;
  return lo + (int32_t)((g_rng >> 8) % (uint32_t)(hi - lo + 1));
}

/* Prepares and runs one kernel (one input: x) with knob int8_dot = dot; the int32 output to y. */
static int32_t run_dot(tb_t *b, int64_t dot, int threads, const void *x, uint64_t xb, int32_t *y, uint64_t yn,
                       mi_error_t *err) {
  mi_kernel_desc_t d;
  mi_kernel_t *k = NULL;
  mi_buffer_t *ib = NULL, *ob = NULL;
  mi_knob_value_t kv[2] = {{"threads", threads, 0.}, {"int8_dot", dot, 0.}};
  int32_t rc;
  tb_desc(b, &d, NULL, kv, 2);
  rc = p.api->kernel_prepare(p.ctx, 0, &d, &k, err);
  if (rc != MI_OK) return rc;
  rc = p.api->buffer_alloc(p.ctx, 0, xb, &ib, err);
  if (rc == MI_OK) rc = p.api->buffer_write(p.ctx, ib, 0, x, xb, err);
  if (rc == MI_OK) rc = p.api->buffer_alloc(p.ctx, 0, yn * 4u, &ob, err);
  if (rc == MI_OK) rc = p.api->kernel_run(p.ctx, k, &ib, 1, &ob, 1, NULL, err);
  if (rc == MI_OK) rc = p.api->buffer_read(p.ctx, ob, 0, y, yn * 4u, err);
  p.api->buffer_free(p.ctx, ib);
  p.api->buffer_free(p.ctx, ob);
  p.api->kernel_release(p.ctx, k);
  return rc;
}

/* Runs b on both cores at 1 and 2 threads; every output must equal want. */
static void compare(tb_t *b, const char *name, const void *x, uint64_t xb, const int32_t *want, int64_t yn) {
  int32_t *y = malloc((size_t)yn * 4u);
  mi_error_t err = {0, ""};
  int64_t dots[2] = {g_amx, g_vnni};
  REQUIRE(y);
  for (int d = 0; d < 2; d++)
    for (int th = 1; th <= 2; th++) {
      int32_t rc = run_dot(b, dots[d], th, x, xb, y, (uint64_t)yn, &err);
      int64_t diff = 0;
      CHECK(rc == MI_OK, "%s (%s, %d threads): %s", name, d ? "vnni" : "amx", th, err.message);
      for (int64_t i = 0; rc == MI_OK && i < yn; i++) diff += y[i] != want[i];
      CHECK(diff == 0, "%s (%s, %d threads): %lld of %lld sums differ", name, d ? "vnni" : "amx", th, (long long)diff,
            (long long)yn);
    }
  free(y);
}

/* A one-code constant of dtype dt (a zero point). */
static int code_const(tb_t *b, int32_t dt, const uint8_t *v) {
  int i = tb_tensor(b, 0, NULL, NULL);
  b->t[i].dtype = dt;
  b->t[i].data = v;
  b->t[i].data_bytes = 1;
  return i;
}

/* ConvInteger of n x c x h x w codes (UINT8 or INT8) by m x c/g x k x k weights (INT8, or UINT8
 * with zero point zw: the cores' weight shift), stride s, pads pad, groups g. */
static void conv_case(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t s, int64_t pad,
                      int64_t g, int x_u8, int w_u8, uint8_t zw) {
  int64_t oh = (h + 2 * pad - k) / s + 1, ow = (w + 2 * pad - k) / s + 1, cg = c / g, mg = m / g;
  int64_t xn = n * c * h * w, wn = m * cg * k * k, yn = n * m * oh * ow, i, b0, mo, y0, x0, ci, a, bb;
  int64_t xd[4] = {n, c, h, w}, wd[4] = {m, cg, k, k}, yd[4] = {n, m, oh, ow};
  int64_t st[2] = {s, s}, pads[4] = {pad, pad, pad, pad};
  uint8_t *x = malloc((size_t)xn), *wt = malloc((size_t)wn), zx = (uint8_t)(x_u8 ? rnd(0, 255) : rnd(-128, 127));
  int32_t *want = malloc((size_t)yn * 4u);
  char name[160];
  tb_t b;
  REQUIRE(x && wt && want);
  for (i = 0; i < xn; i++) x[i] = (uint8_t)rnd(0, 255);
  /* UINT8 weights span at most 256 values from zw's side: a shift applies; INT8 at both ends */
  for (i = 0; i < wn; i++) wt[i] = (uint8_t)(w_u8 ? rnd(0, 255) : rnd(0, 15) ? rnd(-127, 127)
                                                              : rnd(0, 1)    ? 127
                                                                             : -128);
  memset(&b, 0, sizeof b);
  {
    int tx = tb_tensor(&b, 4, xd, NULL), tw = tb_tensor(&b, 4, wd, NULL), ty, in[4], node;
    b.t[tx].dtype = x_u8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
    b.t[tw].dtype = w_u8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
    b.t[tw].data = wt;
    b.t[tw].data_bytes = (uint64_t)wn;
    in[0] = tx;
    in[1] = tw;
    in[2] = code_const(&b, b.t[tx].dtype, &zx);
    in[3] = code_const(&b, b.t[tw].dtype, &zw);
    ty = tb_tensor(&b, 4, yd, NULL);
    b.t[ty].dtype = MI_DTYPE_INT32;
    node = tb_node(&b, "ConvInteger", 10, w_u8 ? 4 : 3, in, ty);
    tb_attr_is(&b, node, "strides", 2, st);
    tb_attr_is(&b, node, "pads", 4, pads);
    tb_attr_i(&b, node, "group", g);
    tb_finish(&b, ty);
  }
  for (b0 = 0; b0 < n; b0++)
    for (mo = 0; mo < m; mo++)
      for (y0 = 0; y0 < oh; y0++)
        for (x0 = 0; x0 < ow; x0++) {
          int64_t acc = 0;
          for (ci = 0; ci < cg; ci++)
            for (a = 0; a < k; a++)
              for (bb = 0; bb < k; bb++) {
                int64_t ih = y0 * s - pad + a, iw = x0 * s - pad + bb, xi = ((b0 * c + mo / mg * cg + ci) * h + ih) * w + iw;
                int32_t wv = w_u8 ? wt[((mo * cg + ci) * k + a) * k + bb] - zw : (int8_t)wt[((mo * cg + ci) * k + a) * k + bb];
                int32_t xv = ih < 0 || ih >= h || iw < 0 || iw >= w ? 0 : x_u8 ? x[xi] - zx
                                                                               : (int8_t)x[xi] - (int8_t)zx;
                acc += (int64_t)xv * wv;
              }
          want[((b0 * m + mo) * oh + y0) * ow + x0] = (int32_t)acc;
        }
  snprintf(name, sizeof name, "ConvInteger %s x, %s w (zw %d), %lldx%lldx%lldx%lld -> %lld, k %lld s %lld pad %lld g %lld",
           x_u8 ? "u8" : "s8", w_u8 ? "u8" : "s8", (int)zw, (long long)n, (long long)c, (long long)h, (long long)w,
           (long long)m, (long long)k, (long long)s, (long long)pad, (long long)g);
  compare(&b, name, x, (uint64_t)xn, want, yn);
  free(x);
  free(wt);
  free(want);
}

/* MatMulInteger of an m x kk code matrix (UINT8 or INT8) by a constant kk x nn INT8 matrix. */
static void matmul_case(int64_t m, int64_t kk, int64_t nn, int x_u8) {
  int64_t ad[2] = {m, kk}, bd[2] = {kk, nn}, yd[2] = {m, nn}, i, j, e;
  uint8_t *a = malloc((size_t)(m * kk)), *bw = malloc((size_t)(kk * nn)), za = (uint8_t)rnd(0, 255);
  int32_t *want = malloc((size_t)(m * nn) * 4u);
  char name[96];
  tb_t b;
  REQUIRE(a && bw && want);
  for (i = 0; i < m * kk; i++) a[i] = (uint8_t)rnd(0, 255);
  for (i = 0; i < kk * nn; i++) bw[i] = (uint8_t)rnd(-128, 127);
  memset(&b, 0, sizeof b);
  {
    int ta = tb_tensor(&b, 2, ad, NULL), tw = tb_tensor(&b, 2, bd, NULL), ty, in[3];
    b.t[ta].dtype = x_u8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
    b.t[tw].dtype = MI_DTYPE_INT8;
    b.t[tw].data = bw;
    b.t[tw].data_bytes = (uint64_t)(kk * nn);
    in[0] = ta;
    in[1] = tw;
    in[2] = code_const(&b, b.t[ta].dtype, &za);
    ty = tb_tensor(&b, 2, yd, NULL);
    b.t[ty].dtype = MI_DTYPE_INT32;
    tb_node(&b, "MatMulInteger", 10, 3, in, ty);
    tb_finish(&b, ty);
  }
  for (i = 0; i < m; i++)
    for (j = 0; j < nn; j++) {
      int64_t acc = 0;
      for (e = 0; e < kk; e++)
        acc += (int64_t)(x_u8 ? a[i * kk + e] - za : (int8_t)a[i * kk + e] - (int8_t)za) * (int8_t)bw[e * nn + j];
      want[i * nn + j] = (int32_t)acc;
    }
  snprintf(name, sizeof name, "MatMulInteger %s, %lld x %lld x %lld", x_u8 ? "u8" : "s8", (long long)m, (long long)kk,
           (long long)nn);
  compare(&b, name, a, (uint64_t)(m * kk), want, m * nn);
  free(a);
  free(bw);
  free(want);
}

static void setup(void) {
  uint32_t nk = 0, ki;
  mi_error_t err = {0, ""};
  REQUIRE(tb_load(&p));
  if (p.api->knob_count(p.ctx, 0, &nk, &err) == MI_OK)
    for (ki = 0; ki < nk; ki++) {
      mi_knob_desc_t kd;
      memset(&kd, 0, sizeof kd);
      kd.struct_size = sizeof kd;
      if (p.api->knob_desc(p.ctx, 0, ki, &kd, &err) == MI_OK && strcmp(kd.name, "int8_dot") == 0) {
        const char *c = kd.choices; /* "auto|amx_u8|avx512_u8|...": the index of each name */
        for (int64_t v = 0; c; v++) {
          if (!strncmp(c, "amx_u8", 6) && (c[6] == '|' || !c[6])) g_amx = v;
          if (!strncmp(c, "avx512_u8", 9) && (c[9] == '|' || !c[9])) g_vnni = v;
          c = strchr(c, '|');
          c = c ? c + 1 : NULL;
        }
      }
    }
  if (g_amx < 0 || g_vnni < 0) {
    tb_unload(&p);
    TU_SKIP("this CPU (or its kernel) gives blis-cpu no AMX INT8 tiles (knob int8_dot has no amx_u8)");
  }
}

static void teardown(void) { tb_unload(&p); }

/* Rows of tiles: 37 channels (16 + 16 + 5) and 8; reductions of 63 (one 16-quad block less a
 * byte), 45 (12 quads: a short block), 171 (43 quads: the last block overlaps the one before);
 * 1x1s (those under 256 channels run the VNNI core on both values: still compared); pixels off
 * the 16-column tiles; groups; strides; batch 2. */
static void convs(void) {
  conv_case(1, 7, 9, 11, 37, 3, 1, 1, 1, 1, 0, 0);
  conv_case(2, 5, 13, 7, 8, 3, 2, 1, 1, 0, 0, 0);
  conv_case(1, 19, 10, 10, 21, 3, 1, 1, 1, 1, 0, 0);
  conv_case(1, 24, 17, 19, 40, 1, 1, 0, 1, 1, 0, 0);
  conv_case(1, 16, 8, 6, 33, 1, 1, 0, 1, 0, 0, 0);
  conv_case(1, 36, 9, 9, 48, 3, 1, 1, 2, 1, 0, 0);
  conv_case(1, 64, 12, 13, 64, 3, 1, 1, 1, 1, 0, 0);
  conv_case(1, 3, 33, 31, 16, 5, 2, 2, 1, 1, 0, 0);
  /* UINT8 weights with a zero point: the weight shift's pixel sums come from the AMX pass */
  conv_case(1, 13, 9, 10, 17, 3, 1, 1, 1, 1, 1, 128);
  conv_case(1, 20, 6, 9, 32, 1, 1, 0, 1, 1, 1, 255);
  conv_case(1, 300, 6, 9, 32, 1, 1, 0, 1, 1, 1, 255);
  conv_case(1, 260, 6, 7, 40, 1, 1, 0, 1, 0, 0, 0);
  /* the direct form (C/G * KH * KW >= 512, blis_qdirect.c): taps of blocks of quads; 60 and 21
   * channels (a partial last quad, 15 and 6 quads: one short block), 72 (18 quads: the second
   * block overlaps the first), strides 2 and 3, groups, INT8 codes, UINT8 weights (the shift) */
  conv_case(1, 60, 11, 23, 37, 3, 1, 1, 1, 1, 0, 0);
  conv_case(2, 21, 15, 19, 17, 5, 2, 2, 1, 0, 0, 0);
  conv_case(1, 72, 30, 40, 24, 3, 3, 1, 1, 1, 0, 0);
  conv_case(1, 128, 7, 9, 34, 3, 1, 1, 2, 0, 0, 0);
  conv_case(1, 57, 8, 21, 16, 3, 1, 1, 1, 0, 1, 128);
  conv_case(1, 64, 6, 40, 20, 3, 2, 1, 1, 1, 1, 255);
}

/* Rows 45 (16 + 16 + 13), columns 53 (three tiles and 5), reductions 83, 300 and 16. */
static void matmuls(void) {
  matmul_case(45, 83, 53, 1);
  matmul_case(16, 16, 32, 0);
  matmul_case(100, 300, 17, 1);
  matmul_case(33, 200, 64, 0);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(convs),
    TU_CASE(matmuls),
};

TU_MAIN(setup, teardown)
