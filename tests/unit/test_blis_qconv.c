/* test_blis_qconv.c - blis-cpu's INT8 Conv / Gemm / MatMul (the lowered QDQ layers of
 * docs/abi.md) against an integer reference written here: output codes must be equal, bit for
 * bit, for UINT8/INT8 codes, per-tensor and per-channel scales, INT4 packed weights, groups,
 * strides and pads (TF's SAME at stride 2 too: one more at the end), and for 1 and 2 threads. */
#include <math.h>

#include "test_blis_util.h"

/* Same contract as the kernel: exact int32 sum, then round half to even of acc*mult + bias in
 * double (nearbyint, default rounding mode), plus the zero point, saturated. */
static int32_t ref_code(int64_t acc, double mult, double bias, int32_t zy, int u8) {
  double r = nearbyint((double)acc * mult + bias) + zy;
  int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  return r < lo ? lo : r > hi ? hi
                              : (int32_t)r;
}

static uint32_t g_rng = 12345u;
static int32_t rnd(int32_t lo, int32_t hi) {
  g_rng = g_rng * 1103515245u + 12345u;
  return lo + (int32_t)((g_rng >> 8) % (uint32_t)(hi - lo + 1));
}

/* Value of knob int8_dot for the runs (0 = auto); main runs every case under each value. */
static int64_t g_dot = 0;

/* Prepares and runs one kernel over byte buffers; returns the status. */
static int32_t run_bytes(tb_plugin_t *p, tb_t *b, int threads, const void *const *ins,
                         const uint64_t *in_bytes, void *out, uint64_t out_bytes, mi_error_t *err) {
  mi_kernel_desc_t d;
  mi_kernel_t *k = NULL;
  mi_buffer_t *ib[4] = {0}, *ob = NULL;
  mi_knob_value_t kv[2] = {{"threads", threads, 0.}, {"int8_dot", g_dot, 0.}};
  int32_t rc;
  int i;
  tb_desc(b, &d, NULL, kv, 2);
  rc = p->api->kernel_prepare(p->ctx, 0, &d, &k, err);
  if (rc != MI_OK) return rc;
  for (i = 0; i < b->nkin && rc == MI_OK; i++) {
    rc = p->api->buffer_alloc(p->ctx, 0, in_bytes[i], &ib[i], err);
    if (rc == MI_OK) rc = p->api->buffer_write(p->ctx, ib[i], 0, ins[i], in_bytes[i], err);
  }
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, out_bytes, &ob, err);
  if (rc == MI_OK) rc = p->api->kernel_run(p->ctx, k, ib, b->nkin, &ob, 1, NULL, err);
  if (rc == MI_OK) rc = p->api->buffer_read(p->ctx, ob, 0, out, out_bytes, err);
  for (i = 0; i < b->nkin; i++) p->api->buffer_free(p->ctx, ib[i]);
  p->api->buffer_free(p->ctx, ob);
  p->api->kernel_release(p->ctx, k);
  return rc;
}

static int32_t code_at(const void *x, int u8, int64_t i) {
  return u8 ? ((const uint8_t *)x)[i] : ((const int8_t *)x)[i];
}

typedef struct qcase {
  const char *name;
  int64_t n, c, h, w, m, k, s, pad, g;
  int x_u8, y_u8, per_channel, int4; /* int4: 1 packed MI_DTYPE_INT4, 2 INT8 values in -8..7 */
  int ties;                          /* dyadic scales: acc * mult + bias lands on .5 for every odd acc;
                                        2: 2^-47 off it (mult 1/2 - 2^-47, 1/2 in float) */
  int ext;                           /* zero points at the ends of the code range and a small output scale: both ends saturate */
  int pe;                            /* padding at the end of H and W beyond pad (TF's SAME at stride 2) */
} qcase_t;

/* Set for small_cases: weights as trained ones look (|w| <= 30) but for one pair (127, 127) that
 * vpmaddubsw saturates, in the first output channel: at AVX2 the byte core on byte columns and its
 * fix list, not the int16 core. */
static int g_small;

static void conv_case(tb_plugin_t *p, const qcase_t *q) {
  int64_t oh = (q->h + 2 * q->pad + q->pe - q->k) / q->s + 1, ow = (q->w + 2 * q->pad + q->pe - q->k) / q->s + 1;
  int64_t cg = q->c / q->g, mg = q->m / q->g, xn = q->n * q->c * q->h * q->w, wn = q->m * cg * q->k * q->k;
  int64_t yn = q->n * q->m * oh * ow, i, n, m, y0, x0, ci, a, bb;
  int64_t xd[4] = {q->n, q->c, q->h, q->w}, wd[4] = {q->m, cg, q->k, q->k}, bd = q->m, yd[4] = {q->n, q->m, oh, ow};
  int64_t strides[2] = {q->s, q->s}, pads[4] = {q->pad, q->pad, q->pad + q->pe, q->pad + q->pe};
  uint8_t *x = malloc((size_t)xn), *y1 = malloc((size_t)yn), *y2 = malloc((size_t)yn), *want = malloc((size_t)yn);
  int8_t *w8 = malloc((size_t)wn);
  uint8_t *w4 = calloc((size_t)(wn + 1) / 2, 1);
  float *bias = malloc((size_t)q->m * sizeof(float)), *cs = malloc((size_t)q->m * sizeof(float));
  float sx = 0.043f, sy = 0.117f;
  int32_t zx = q->x_u8 ? 131 : -5, zy = q->y_u8 ? 120 : 4, rc1, rc2;
  int64_t ties = 0, sat_lo = 0, sat_hi = 0;
  tb_t b;
  int tx, tw, tbias, ty, node;
  mi_error_t err = {0, ""};
  const void *ins[1];
  uint64_t inb[1] = {(uint64_t)xn};
  if (!x || !y1 || !y2 || !want || !w8 || !w4 || !bias || !cs) {
    CHECK(0, "%s: out of memory", q->name);
    goto done;
  }
  for (i = 0; i < xn; i++) x[i] = (uint8_t)(q->x_u8 ? rnd(0, 255) : rnd(-128, 127));
  for (i = 0; i < wn; i++) {
    /* ext: an eighth of the weights at the ends -128 or 127 (the byte core's signed operand) */
    int32_t end = q->ext && rnd(0, 7) == 0 ? (rnd(0, 1) ? -128 : 127) : 0;
    w8[i] = (int8_t)(q->int4 ? rnd(-8, 7) : end   ? end
                                        : g_small ? rnd(-30, 30)
                                                  : rnd(-127, 127));
    w4[i / 2] |= (uint8_t)((w8[i] & 15) << (i & 1 ? 4 : 0)); /* low nibble first */
  }
  if (g_small && wn / q->m >= 2) w8[0] = w8[1] = 127; /* channel 0's first pair */
  for (m = 0; m < q->m; m++) {
    bias[m] = q->ties ? (float)rnd(-8, 8) * 0.125f : (float)rnd(-300, 300) * 0.01f;
    cs[m] = q->ties ? 0.25f : (float)rnd(1, 40) * 0.0007f;
  }
  if (q->ext) { /* x - zx spans -255..0 (UINT8) or 0..255 (INT8); sums of either sign saturate */
    zx = q->x_u8 ? 255 : -128;
    zy = q->y_u8 ? 0 : 127;
    sy = 0.004f;
  }
  if (q->ties) {
    sx = 0.5f;
    sy = 0.25f; /* mult = 0.5 * 0.25 / 0.25 = 1/2: every odd acc + bias*8 is an exact half */
  }
  if (q->ties == 2) { /* (1/2 + 2^-24)(1/4 - 2^-25) / (1/4) = 1/2 - 2^-47: just below each half */
    sx = 0.5f + 0x1p-24f;
    for (m = 0; m < q->m; m++) cs[m] = 0.25f - 0x1p-25f;
  }
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, 4, xd, NULL);
  b.t[tx].dtype = q->x_u8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  b.t[tx].scale = sx;
  b.t[tx].zero_point = zx;
  tw = tb_tensor(&b, 4, wd, NULL);
  b.t[tw].dtype = q->int4 == 1 ? MI_DTYPE_INT4 : MI_DTYPE_INT8;
  b.t[tw].data = q->int4 == 1 ? (const void *)w4 : (const void *)w8;
  b.t[tw].data_bytes = q->int4 == 1 ? (uint64_t)(wn + 1) / 2 : (uint64_t)wn;
  b.t[tw].scale = q->per_channel ? 0.028f : cs[0];
  if (q->per_channel) {
    b.t[tw].channel_axis = 0;
    b.t[tw].channel_count = (uint32_t)q->m;
    b.t[tw].channel_scales = cs;
  }
  tbias = tb_tensor(&b, 1, &bd, bias);
  ty = tb_tensor(&b, 4, yd, NULL);
  b.t[ty].dtype = q->y_u8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  b.t[ty].scale = sy;
  b.t[ty].zero_point = zy;
  {
    int in[3] = {tx, tw, tbias};
    node = tb_node(&b, "Conv", 13, 3, in, ty);
    tb_attr_is(&b, node, "strides", 2, strides);
    tb_attr_is(&b, node, "pads", 4, pads);
    tb_attr_i(&b, node, "group", q->g);
  }
  tb_finish(&b, ty);
  for (n = 0; n < q->n; n++)
    for (m = 0; m < q->m; m++) {
      int64_t gi = m / mg;
      double sw = q->per_channel ? (double)cs[m] : (double)cs[0];
      double mult = (double)sx * sw / (double)sy, bo = (double)bias[m] / (double)sy;
      for (y0 = 0; y0 < oh; y0++)
        for (x0 = 0; x0 < ow; x0++) {
          int64_t acc = 0;
          for (ci = 0; ci < cg; ci++)
            for (a = 0; a < q->k; a++)
              for (bb = 0; bb < q->k; bb++) {
                int64_t ih = y0 * q->s - q->pad + a, iw = x0 * q->s - q->pad + bb;
                if (ih < 0 || ih >= q->h || iw < 0 || iw >= q->w) continue;
                acc += (int64_t)(code_at(x, q->x_u8, ((n * q->c + gi * cg + ci) * q->h + ih) * q->w + iw) - zx) *
                       w8[((m * cg + ci) * q->k + a) * q->k + bb];
              }
          i = ((n * q->m + m) * oh + y0) * ow + x0;
          want[i] = (uint8_t)ref_code(acc, mult, bo, zy, q->y_u8);
          sat_lo += ref_code(acc, mult, bo, zy, q->y_u8) == (q->y_u8 ? 0 : -128);
          sat_hi += ref_code(acc, mult, bo, zy, q->y_u8) == (q->y_u8 ? 255 : 127);
          {
            double v = (double)acc * mult + bo;
            /* a tie (or, ties 2, a near tie a float output stage would take for one) that is not saturated */
            ties += (q->ties == 2 ? fabs(v - floor(v) - 0.5) < 1e-9 : v - floor(v) == 0.5) && fabs(v + zy) < 100.;
          }
        }
    }
  ins[0] = x;
  rc1 = run_bytes(p, &b, 1, ins, inb, y1, (uint64_t)yn, &err);
  CHECK(rc1 == MI_OK, "%s (1 thread): %s", q->name, err.message);
  rc2 = run_bytes(p, &b, 2, ins, inb, y2, (uint64_t)yn, &err);
  CHECK(rc2 == MI_OK, "%s (2 threads): %s", q->name, err.message);
  if (rc1 == MI_OK && rc2 == MI_OK) {
    int64_t diff = 0;
    for (i = 0; i < yn; i++) diff += y1[i] != want[i];
    CHECK(diff == 0, "%s: %lld of %lld codes differ from the integer reference", q->name, (long long)diff, (long long)yn);
    CHECK(!q->ties || ties > 0, "%s: no exact tie occurred; the case tests nothing", q->name);
    CHECK(!q->ext || (sat_lo > 0 && sat_hi > 0), "%s: saturates %lld low, %lld high (want both)", q->name,
          (long long)sat_lo, (long long)sat_hi);
    CHECK(memcmp(y1, y2, (size_t)yn) == 0, "%s: 1 and 2 threads differ", q->name);
  }
done:
  free(x);
  free(y1);
  free(y2);
  free(want);
  free(w8);
  free(w4);
  free(bias);
  free(cs);
}

/* Gemm (transB 1, per-channel, alpha, beta, bias) or MatMul (batched A, per-tensor B); int4: B
 * in -8..7, packed two per byte (low nibble first, 1) or as INT8 (2, how a session hands an INT4
 * layer), 37 columns (a full 32- or 16-column block and a tail). */
static void gemm_case(tb_plugin_t *p, int matmul, int int4) {
  const char *name = matmul ? (int4 == 1 ? "int4 matmul" : int4 ? "int4-as-int8 matmul"
                                                                : "int8 matmul")
                            : (int4 == 1 ? "int4 gemm" : int4 ? "int4-as-int8 gemm"
                                                              : "int8 gemm");
  int64_t M = matmul ? 6 : 3, K = matmul ? 21 : 20, N = int4 ? 37 : 7, i, j, kk; /* odd K: a half pair */
  int64_t ad[3] = {2, 3, K}, a2[2] = {M, K}, bd[2] = {matmul ? K : N, matmul ? N : K}, cd = N;
  int64_t yd[3] = {2, 3, N}, y2d[2] = {M, N};
  uint8_t a[6 * 21], y1[6 * 37], y2[6 * 37], want[6 * 37], w4[(21 * 37 + 1) / 2] = {0};
  int8_t w[21 * 37];
  float cs[37], bias[37], sx = 0.02f, sy = 0.05f, alpha = matmul ? 1.f : 0.5f, beta = matmul ? 1.f : 2.f;
  int32_t zx = matmul ? 9 : 100, zy = matmul ? -3 : 77, rc1, rc2;
  int xu8 = !matmul, yu8 = !matmul;
  tb_t b;
  int ta, tw, tc, ty, node;
  mi_error_t err = {0, ""};
  const void *ins[1] = {a};
  uint64_t inb[1] = {(uint64_t)(M * K)};
  for (i = 0; i < M * K; i++) a[i] = (uint8_t)(xu8 ? rnd(0, 255) : rnd(-128, 127));
  for (i = 0; i < K * N; i++) {
    w[i] = (int8_t)(int4 ? rnd(-8, 7) : rnd(-127, 127));
    w4[i / 2] |= (uint8_t)((w[i] & 15) << (i & 1 ? 4 : 0)); /* low nibble first */
  }
  for (j = 0; j < N; j++) {
    cs[j] = (float)rnd(1, 30) * 0.001f;
    bias[j] = (float)rnd(-100, 100) * 0.01f;
  }
  memset(&b, 0, sizeof b);
  ta = matmul ? tb_tensor(&b, 3, ad, NULL) : tb_tensor(&b, 2, a2, NULL);
  b.t[ta].dtype = xu8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  b.t[ta].scale = sx;
  b.t[ta].zero_point = zx;
  tw = tb_tensor(&b, 2, bd, NULL);
  b.t[tw].dtype = int4 == 1 ? MI_DTYPE_INT4 : MI_DTYPE_INT8;
  b.t[tw].data = int4 == 1 ? (const void *)w4 : (const void *)w;
  b.t[tw].data_bytes = int4 == 1 ? (uint64_t)(K * N + 1) / 2 : (uint64_t)(K * N);
  b.t[tw].scale = matmul ? cs[0] : 0.03f;
  if (!matmul) {
    b.t[tw].channel_axis = 0; /* transB: rows are output channels */
    b.t[tw].channel_count = (uint32_t)N;
    b.t[tw].channel_scales = cs;
  }
  tc = tb_tensor(&b, 1, &cd, bias);
  ty = matmul ? tb_tensor(&b, 3, yd, NULL) : tb_tensor(&b, 2, y2d, NULL);
  b.t[ty].dtype = yu8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  b.t[ty].scale = sy;
  b.t[ty].zero_point = zy;
  {
    int in[3] = {ta, tw, tc};
    node = tb_node(&b, matmul ? "MatMul" : "Gemm", 13, matmul ? 2 : 3, in, ty);
    if (!matmul) {
      tb_attr_i(&b, node, "transB", 1);
      tb_attr_f(&b, node, "alpha", alpha);
      tb_attr_f(&b, node, "beta", beta);
    }
  }
  tb_finish(&b, ty);
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      int64_t acc = 0;
      double sw = matmul ? (double)cs[0] : (double)cs[j];
      for (kk = 0; kk < K; kk++)
        acc += (int64_t)(code_at(a, xu8, i * K + kk) - zx) * (matmul ? w[kk * N + j] : w[j * K + kk]);
      want[i * N + j] = (uint8_t)ref_code(acc, (double)alpha * (double)sx * sw / (double)sy,
                                          matmul ? 0. : (double)beta * (double)bias[j] / (double)sy, zy, yu8);
    }
  rc1 = run_bytes(p, &b, 1, ins, inb, y1, (uint64_t)(M * N), &err);
  CHECK(rc1 == MI_OK, "%s (1 thread): %s", name, err.message);
  rc2 = run_bytes(p, &b, 2, ins, inb, y2, (uint64_t)(M * N), &err);
  CHECK(rc2 == MI_OK, "%s (2 threads): %s", name, err.message);
  if (rc1 == MI_OK && rc2 == MI_OK) {
    CHECK(memcmp(y1, want, (size_t)(M * N)) == 0, "%s: codes differ from the integer reference", name);
    CHECK(memcmp(y1, y2, (size_t)(M * N)) == 0, "%s: 1 and 2 threads differ", name);
  }
}

static tb_plugin_t p;
/* name n c h w m k s pad g x_u8 y_u8 per_channel int4 ties ext pe */
static const qcase_t cases[] = {
    {"int8 conv 3x3 stride 2 per-channel u8", 2, 5, 9, 8, 6, 3, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int8 conv grouped s8 per-tensor", 1, 6, 7, 7, 4, 3, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0},
    {"int8 conv depthwise", 1, 8, 10, 11, 8, 3, 1, 1, 8, 0, 1, 1, 0, 0, 0, 0},
    {"int8 conv depthwise stride 2", 2, 4, 9, 9, 4, 3, 2, 1, 4, 1, 0, 1, 0, 0, 0, 0},
    {"int8 conv 1x1", 1, 16, 6, 5, 9, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int4 conv packed", 1, 5, 8, 8, 7, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
    {"int8 conv large (threads split rows)", 1, 16, 32, 32, 16, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    /* 298 int16 per column pixel x 40 columns: 21-row tiles of 512 KB, so 21 + 21 + 3 rows per
     * image, twice; odd K leaves the last pair's second half zero in every tile */
    {"int8 conv 3x3 odd K over three row tiles, batch 2", 2, 33, 45, 40, 8, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int4 conv exact ties (round half to even)", 1, 4, 6, 6, 5, 3, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0},
    {"int4 conv grouped 1x1 odd K", 2, 9, 7, 5, 9, 1, 1, 0, 3, 0, 0, 0, 1, 0, 0, 0},
    {"int4 conv depthwise", 1, 6, 7, 7, 6, 3, 1, 1, 6, 1, 1, 1, 1, 0, 0, 0},
    {"int4 conv given as int8 values", 1, 5, 6, 7, 11, 3, 1, 1, 1, 0, 1, 1, 2, 0, 0, 0},
    {"int4 conv 1x1 long odd K (widened at each use)", 1, 4099, 2, 3, 5, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0},
    /* 37 and 21 columns: a full 16- or 32-lane block and a tail in the columns and the output
     * stage; odd K; zero points at the code ends, both ends saturated */
    {"int8 conv 1x1 odd K, extreme zero points, saturating", 1, 7, 3, 37, 5, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0},
    {"int8 conv 3x3 s8 extreme zero points, saturating", 2, 3, 5, 21, 6, 3, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0},
    {"int8 conv 3x3 u8 in s8 out, extreme zero points", 1, 5, 4, 19, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0},
    {"int8 conv 3x3 stride 2 s8 in, 19 output columns, extreme zero points", 1, 3, 7, 37, 4, 3, 2, 1, 1, 0, 1, 1, 0, 0, 1, 0},
    /* the byte core (vpdpbusd, quads of k): 13 rows = two blocks of 6 and a row; 2500 columns =
     * two column blocks, the last ending in a partial 64-column block; K 75 and 5 end in a partial
     * quad; a grouped 1x1 reads spans of the planes (no column rows) */
    {"int8 conv 3x3 13 output channels, 2500 columns", 1, 16, 50, 50, 13, 3, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0},
    {"int8 conv 5x5 stride 2 pad 2 u8, K 75, 135 columns, extreme zero points", 1, 3, 18, 30, 7, 5, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0},
    {"int8 conv grouped 1x1 s8, K 5 per group, extreme zero points", 2, 15, 4, 9, 12, 1, 1, 0, 3, 0, 0, 1, 0, 0, 1, 0},
    /* column rows: 150 and 70 output columns (several 64- or 32-column masked chunks), stride 3 */
    {"int8 conv 3x3 150 columns a row, extreme zero points", 1, 3, 5, 150, 7, 3, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0},
    {"int8 conv 3x3 stride 2, 70 columns a row", 1, 3, 6, 140, 5, 3, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0},
    {"int8 conv 3x3 stride 3", 1, 4, 11, 14, 5, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    /* depthwise byte kernel (blis_qdw.c, AVX-512 VNNI + VBMI): 16 output columns a vector and a
     * tail, strides 1 and 2, 5x5 (two quads a kernel row), channel multiplier 2, planes in
     * several strips of output rows, the padding at both code ends */
    {"int8 depthwise 3x3 u8, 37 columns, batch 2", 2, 5, 9, 37, 5, 3, 1, 1, 5, 1, 1, 1, 0, 0, 0, 0},
    {"int8 depthwise 3x3 stride 2 s8, 41 columns, extreme zero points", 1, 6, 8, 81, 6, 3, 2, 1, 6, 0, 0, 1, 0, 0, 1, 0},
    {"int8 depthwise 3x3 u8 extreme zero points", 1, 4, 7, 19, 4, 3, 1, 1, 4, 1, 0, 0, 0, 0, 1, 0},
    {"int8 depthwise 5x5 stride 2 pad 2 u8, extreme zero points", 2, 3, 11, 35, 3, 5, 2, 2, 3, 1, 1, 1, 0, 0, 1, 0},
    {"int8 depthwise 5x5 pad 2 s8 in, 130 columns", 1, 3, 6, 130, 3, 5, 1, 2, 3, 0, 1, 0, 0, 0, 0, 0},
    {"int8 depthwise multiplier 2, no padding", 1, 3, 8, 20, 6, 3, 1, 0, 3, 1, 1, 1, 0, 0, 0, 0},
    {"int8 depthwise 3x3, 70x150 planes in strips", 1, 3, 70, 150, 3, 3, 1, 1, 3, 1, 1, 1, 0, 0, 0, 0},
    {"int4 depthwise exact ties", 1, 4, 6, 17, 4, 3, 1, 1, 4, 1, 0, 1, 1, 1, 0, 0},
    /* near ties through each output stage: the pointwise GEMM's rows, the depthwise kernel's
     * strips, the 3x3 column path; a float-only output stage rounds half of them the wrong way */
    {"int8 conv 1x1 near ties", 1, 6, 5, 37, 7, 1, 1, 0, 1, 1, 1, 0, 0, 2, 0, 0},
    {"int8 depthwise near ties", 1, 5, 9, 37, 5, 3, 1, 1, 5, 1, 0, 0, 0, 2, 0, 0},
    {"int8 conv 3x3 near ties, 2500 columns", 1, 4, 50, 50, 6, 3, 1, 1, 1, 0, 1, 0, 0, 2, 0, 0},
    /* the depthwise kernel's 3-tap rows: four output rows a step and three alone, one masked
     * vector a row (8 columns, as a detector's last planes); the output stage's 64-code steps */
    {"int8 depthwise near ties, 11 rows of 8 columns", 1, 16, 11, 8, 16, 3, 1, 1, 16, 1, 0, 0, 0, 2, 0, 0},
    {"int8 depthwise 3x3 s8 out, 11 rows of 70 columns, extreme zero points", 1, 3, 11, 70, 3, 3, 1, 1, 3, 1, 0, 1, 0, 0, 1, 0},
    /* the byte core without columns (blis_qdirect.c: K = C/G * KH * KW >= 512, groups of 16+
     * channels or whole quads): stride phases 2, 3 and 4, a partial last quad (21, 57 channels),
     * groups, 64 outputs over 130-pixel padded rows in three tiles of rows, code ends (its output
     * stage is the other paths', near ties included) */
    {"int8 direct 3x3 stride 2, 60 channels, 12 columns", 1, 60, 17, 23, 9, 3, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int8 direct 5x5 pad 2, 21 channels, batch 2", 2, 21, 9, 30, 7, 5, 1, 2, 1, 0, 1, 1, 0, 0, 0, 0},
    {"int8 direct 5x5 stride 2 pad 2, 21 channels, extreme zero points", 1, 21, 15, 19, 5, 5, 2, 2, 1, 0, 0, 1, 0, 0, 1, 0},
    {"int8 direct grouped 3x3, 64 channels a group", 1, 128, 10, 13, 6, 3, 1, 1, 2, 1, 0, 0, 0, 0, 0, 0},
    {"int8 direct 3x3 stride 3, no padding", 1, 60, 14, 20, 5, 3, 3, 0, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int8 direct 3x3 stride 4", 1, 64, 13, 29, 4, 3, 4, 1, 1, 0, 1, 1, 0, 0, 0, 0},
    {"int8 direct 3x3 64 outputs, 128 columns, row tiles", 1, 64, 20, 128, 64, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int8 direct 3x3 s8 57 channels, extreme zero points, saturating", 2, 57, 6, 21, 6, 3, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0},
    /* the AVX2 columns (blis_qcol256.c) in 256-pixel chunks: a 1x1 plane read as one 720-pixel
     * span, 300 output columns a row at strides 1 and 2 (16-code steps, the tail and the
     * padding of each chunk) */
    {"int8 conv 1x1 s8, 720-pixel planes, extreme zero points", 1, 6, 24, 30, 5, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0},
    {"int8 conv 3x3 u8, 300 columns a row, extreme zero points", 1, 3, 4, 300, 4, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0},
    {"int8 conv 3x3 stride 2 s8, 301 columns a row", 1, 3, 5, 601, 4, 3, 2, 1, 1, 0, 1, 1, 0, 0, 0, 0},
    /* the AVX2 int16 core's blocks of 6 rows over whole 16-column blocks: 17 outputs = two blocks
     * and 5 rows left to the 4-row body, 41 columns = two whole blocks and a 9-column tail */
    {"int8 conv 3x3 17 outputs, 41 columns, extreme zero points", 1, 7, 6, 41, 17, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0},
    /* TF's SAME padding at stride 2: one more row and column of padding at the end */
    {"int8 conv 5x5 stride 2 pads 1,1,2,2, 24 outputs", 1, 3, 64, 64, 24, 5, 2, 1, 1, 1, 1, 1, 0, 0, 0, 1},
    {"int8 depthwise 3x3 stride 2 pads 0,0,1,1", 1, 24, 32, 32, 24, 3, 2, 0, 24, 1, 1, 1, 0, 0, 0, 1},
    {"int8 conv 3x3 stride 2 pads 0,0,1,1", 1, 16, 20, 40, 8, 3, 2, 0, 1, 1, 1, 1, 0, 0, 0, 1},
};
/* With g_small (weights a trained layer's, one saturating pair): at AVX2 the byte core on byte
 * columns (blis_qcol256.c, blis_qgemm256.c) with the output stage's codes, per-tensor and
 * per-channel scales, 1x1, groups, strides 1 and 2, two images, row tiles, code ends, near ties. */
static const qcase_t small_cases[] = {
    {"int8 conv 3x3 trained-like weights, 37 outputs, batch 2", 2, 64, 13, 37, 37, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"int8 conv 3x3 stride 2 s8 trained-like weights, per-tensor", 1, 48, 17, 29, 19, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"int8 conv 1x1 trained-like weights, extreme zero points", 1, 61, 9, 21, 23, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0},
    {"int8 conv grouped 3x3 trained-like weights", 1, 64, 11, 23, 40, 3, 1, 1, 2, 1, 0, 1, 0, 0, 0, 0},
    {"int8 conv 3x3 trained-like weights, near ties, three row tiles", 1, 64, 60, 40, 20, 3, 1, 1, 1, 1, 1, 0, 0, 2, 0, 0},
    {"int8 conv 3x3 trained-like weights, s8 extreme zero points", 1, 48, 6, 41, 17, 3, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0},
    {"int8 conv 3x3 stride 2 pads 0,0,1,1, trained-like weights", 1, 32, 20, 40, 24, 3, 2, 0, 1, 1, 1, 1, 0, 0, 0, 1},
    /* three output channels (one panel of the byte core, as a side output's): at 2 threads
     * 4-row tiles of 400 pixels split over pixels in two parts of about two rows each */
    {"int8 conv 3x3 trained-like weights, 3 outputs, 100 columns", 1, 64, 9, 100, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
};
/* values of knob int8_dot: auto, then each pair-dot path this CPU runs (vpdpwssd, vpmaddwd, C) */
static int64_t ndot;

/* The plugin loaded with its SIMD level capped at cap (NULL: none; MI_BLIS_MAX_SIMD is read as
 * it loads), and the values of knob int8_dot at that level. */
static void load(const char *cap) {
  uint32_t nk = 0, ki;
  mi_error_t err = {0, ""};
  if (cap) setenv("MI_BLIS_MAX_SIMD", cap, 1);
  else
    unsetenv("MI_BLIS_MAX_SIMD");
  REQUIRE(tb_load(&p));
  ndot = 0;
  if (p.api->knob_count(p.ctx, 0, &nk, &err) == MI_OK)
    for (ki = 0; ki < nk; ki++) {
      mi_knob_desc_t kd;
      memset(&kd, 0, sizeof kd);
      kd.struct_size = sizeof kd;
      if (p.api->knob_desc(p.ctx, 0, ki, &kd, &err) == MI_OK && strcmp(kd.name, "int8_dot") == 0) ndot = kd.max + 1;
    }
  CHECK(ndot >= 2, "knob int8_dot has %lld values (want auto and at least c)", (long long)ndot);
}

static void setup(void) { load(NULL); }

static void teardown(void) {
  tb_unload(&p);
}

static void convs(void) {
  size_t i;
  for (g_dot = 0; g_dot < ndot; g_dot++) {
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_case(&p, &cases[i]);
    g_small = 1;
    for (i = 0; i < sizeof small_cases / sizeof small_cases[0]; i++) conv_case(&p, &small_cases[i]);
    g_small = 0;
  }
}

/* Capped at AVX2 (an AVX2-only CPU's paths: the int16 columns of blis_qcol256.c, vpmaddwd, and
 * for small_cases the byte columns and the byte core of blis_qgemm256.c);
 * where the CPU has no AVX2 the cap changes nothing and the cases run again as above. */
static void convs_avx2(void) {
  tb_unload(&p);
  load("avx2");
  convs();
  tb_unload(&p);
  load(NULL);
}

static void gemms(void) {
  for (g_dot = 0; g_dot < ndot; g_dot++) {
    gemm_case(&p, 0, 0);
    gemm_case(&p, 1, 0);
    gemm_case(&p, 0, 1);
    gemm_case(&p, 1, 1);
    gemm_case(&p, 0, 2);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(convs),
    TU_CASE(convs_avx2),
    TU_CASE(gemms),
};

TU_MAIN(setup, teardown)
