/* test_ref_qdq.c - the reference's QDQ layers (ref_qdq.c): DequantizeLinear -> Conv | MatMul | Gemm
 * [-> Relu] -> QuantizeLinear gives the codes of the integer layer (exact int32 sums, one
 * requantization acc * sx * sw / sy + b / sy in double, half to even), as an INT8 kernel and ONNX
 * Runtime's fused QLinearConv compute them, and not the float path's (dequantize, sum in float32,
 * quantize), which lands some codes one step away; a layer whose activation the quantization does
 * not imply still runs node by node. */
#include <math.h>

#include "test_ref_common.h"

static uint32_t g_rng = 7u;
static int32_t rnd(int32_t lo, int32_t hi) {
  g_rng = g_rng * 1103515245u + 12345u;
  return lo + (int32_t)((g_rng >> 8) % (uint32_t)(hi - lo + 1));
}

static int32_t cst(mi_graph_t *g, const char *name, int32_t dt, int32_t rank, const int64_t *dims, const void *v,
                   size_t nbytes) {
  int32_t t = mi_graph_add_tensor(g, name, dt, rank, dims);
  REQUIRE(t >= 0 && mi_graph_set_data(g, t, v, nbytes) == MI_OK);
  return t;
}

/* Codes of saturate(round_half_even(acc * mult + bias) + zy), UINT8. */
static uint8_t want_code(int64_t acc, double mult, double bias, int32_t zy) {
  double r = nearbyint((double)acc * mult + bias) + zy;
  return (uint8_t)(r < 0 ? 0 : r > 255 ? 255
                                       : r);
}

enum { C = 32,
       H = 12,
       W = 12,
       M = 24,
       K = 3 };

typedef struct conv_data {
  uint8_t x[C * H * W];
  int8_t w[M * C * K * K];
  float sw[M], b[M], sx, sy;
  int ibias; /* the bias as ONNX Runtime's quantizer writes it: DQ(bq INT32, bs = sx * sw, zero points 0) */
  int32_t bq[M];
  float bs[M];
} conv_data_t;

/* x_q [1,C,H,W] -> DQ -> Conv(DQ(w_q) per channel, b, pads 1) [-> Relu] -> Q (sy, zy) -> y_q. With
 * float_path the Conv's float output is a graph output too, so the layer runs node by node. */
static mi_graph_t *conv_graph(const conv_data_t *d, int relu, int32_t zy, int float_path) {
  mi_graph_t *g = mi_graph_create("qdq_conv");
  int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, K, K}, m = M, pads[4] = {1, 1, 1, 1};
  float sx = d->sx, sy = d->sy;
  uint8_t zx = 117, zyc = (uint8_t)zy;
  int32_t x = tin(g, "x_q", MI_DTYPE_UINT8, 4, xd), n;
  int32_t dqx[3] = {x, cst(g, "sx", MI_DTYPE_FLOAT32, 0, NULL, &sx, 4), cst(g, "zx", MI_DTYPE_UINT8, 0, NULL, &zx, 1)};
  int32_t dqw[3] = {cst(g, "w_q", MI_DTYPE_INT8, 4, wd, d->w, sizeof d->w),
                    cst(g, "sw", MI_DTYPE_FLOAT32, 1, &m, d->sw, sizeof d->sw), -1};
  int32_t conv[3] = {node1(g, "DequantizeLinear", "dqx", 3, dqx, NULL), node1(g, "DequantizeLinear", "dqw", 2, dqw, &n),
                     -1};
  int32_t c, q[3];
  REQUIRE(mi_node_set_int(g, n, "axis", 0) == MI_OK);
  if (d->ibias) {
    static const int32_t zeros[M];
    int32_t dqb[3] = {cst(g, "b_q", MI_DTYPE_INT32, 1, &m, d->bq, sizeof d->bq),
                      cst(g, "bs", MI_DTYPE_FLOAT32, 1, &m, d->bs, sizeof d->bs),
                      cst(g, "bz", MI_DTYPE_INT32, 1, &m, zeros, sizeof zeros)};
    conv[2] = node1(g, "DequantizeLinear", "dqb", 3, dqb, &n);
    REQUIRE(mi_node_set_int(g, n, "axis", 0) == MI_OK);
  } else {
    conv[2] = cst(g, "b", MI_DTYPE_FLOAT32, 1, &m, d->b, sizeof d->b);
  }
  c = node1(g, "Conv", "conv", 3, conv, &n);
  REQUIRE(mi_node_set_ints(g, n, "pads", 4, pads) == MI_OK);
  if (float_path) mi_graph_add_output(g, c);
  if (relu) c = node1(g, "Relu", "relu", 1, &c, NULL);
  q[0] = c;
  q[1] = cst(g, "sy", MI_DTYPE_FLOAT32, 0, NULL, &sy, 4);
  q[2] = cst(g, "zy", MI_DTYPE_UINT8, 0, NULL, &zyc, 1);
  mi_graph_add_output(g, node1(g, "QuantizeLinear", "q", 3, q, NULL));
  return g;
}

/* The integer layer's codes, computed here. */
static void conv_want(const conv_data_t *d, int32_t zy, uint8_t *y) {
  for (int64_t mo = 0; mo < M; mo++)
    for (int64_t oh = 0; oh < H; oh++)
      for (int64_t ow = 0; ow < W; ow++) {
        int64_t acc = 0;
        for (int64_t ci = 0; ci < C; ci++)
          for (int64_t kh = 0; kh < K; kh++)
            for (int64_t kw = 0; kw < K; kw++) {
              int64_t ih = oh - 1 + kh, iw = ow - 1 + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              acc += (int64_t)(d->x[(ci * H + ih) * W + iw] - 117) * d->w[((mo * C + ci) * K + kh) * K + kw];
            }
        y[(mo * H + oh) * W + ow] =
            want_code(acc, (double)d->sx * (double)d->sw[mo] / (double)d->sy, (double)d->b[mo] / (double)d->sy, zy);
      }
}

/* Random codes and scales; with ties, a layer whose exact values sit just above half a code:
 * scales 1, 1 and 2 make acc * mult land on .5 for every odd sum, and each bias is 2n + 2^-22, so
 * the exact value is a tie plus 2^-23 (it rounds up), while the float path's sum + b drops the
 * 2^-22 (under half a unit of the sum's last place) and rounds the tie to even instead. */
static void conv_fill(conv_data_t *d, int ties) {
  for (int i = 0; i < C * H * W; i++) d->x[i] = (uint8_t)(ties ? 117 + rnd(-3, 3) : rnd(0, 255));
  for (int i = 0; i < M * C * K * K; i++) d->w[i] = (int8_t)(ties ? rnd(-1, 1) : rnd(-127, 127));
  d->ibias = 0;
  d->sx = ties ? 1.0f : 0.0173f;
  d->sy = ties ? 2.0f : 0.0911f;
  for (int i = 0; i < M; i++) {
    d->sw[i] = ties ? 1.0f : 0.0007f + 0.0001f * (float)rnd(0, 30);
    d->b[i] = ties ? 2.0f * (float)rnd(-5, 5) + 0x1p-22f : 0.01f * (float)rnd(-100, 100);
  }
}

/* Runs g on x, returns its last output's codes (a new array). */
static mi_array_t *run_codes(mi_graph_t *g, const conv_data_t *d) {
  int64_t xd[4] = {1, C, H, W};
  mi_array_t *in = mi_array_create(MI_DTYPE_UINT8, 4, xd), *out[2] = {0};
  mi_error_t err = {0};
  REQUIRE(in);
  memcpy(in->data, d->x, sizeof d->x);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)&in, 1, out, g->output_count, &err) == MI_OK, "run: %s", err.message);
  mi_array_destroy(in);
  if (g->output_count == 2) {
    mi_array_destroy(out[0]);
    out[0] = out[1];
  }
  return out[0];
}

static int64_t count_diff(const mi_array_t *y, const uint8_t *want, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) k += ((const uint8_t *)y->data)[i] != want[i];
  return k;
}

/* The QDQ conv's codes are the integer layer's, bit for bit (with and without a Relu the
 * quantization implies), on random layers and on layers of ties, where the float path's codes
 * differ. */
static void conv_integer_codes(void) {
  static conv_data_t d;
  static uint8_t want[M * H * W];
  int64_t n = M * H * W, flips = 0;
  for (int relu = 0; relu <= 1; relu++)
    for (int trial = 0; trial < 4; trial++) {
      mi_graph_t *g, *gf;
      mi_array_t *y, *yf;
      conv_fill(&d, trial >= 2);
      conv_want(&d, relu ? 0 : 128, want);
      g = conv_graph(&d, relu, relu ? 0 : 128, 0);
      gf = conv_graph(&d, relu, relu ? 0 : 128, 1);
      y = run_codes(g, &d);
      yf = run_codes(gf, &d);
      REQUIRE(y && yf && mi_array_numel(y) == n && y->dtype == MI_DTYPE_UINT8);
      CHECK(count_diff(y, want, n) == 0, "relu %d trial %d: %lld of %lld codes differ from the integer layer's", relu,
            trial, (long long)count_diff(y, want, n), (long long)n);
      if (trial >= 2) flips += count_diff(yf, want, n);
      mi_array_destroy(y);
      mi_array_destroy(yf);
      mi_graph_destroy(g);
      mi_graph_destroy(gf);
    }
  printf(
      "QDQ conv: %lld codes in 8 layers, equal; in the 4 layers of ties the float path gives %lld of %lld one step "
      "away\n",
      (long long)(8 * n), (long long)flips, (long long)(4 * n));
  CHECK(flips > 0, "the float path gave the integer codes everywhere: the case does not show the difference");
}

/* The bias as an INT32 constant through a DequantizeLinear (zero points 0), as ONNX Runtime's
 * quantize_static and tools/mi-quantize write it: the layer is still evaluated as the integer
 * layer, with the bias the DequantizeLinear gives (on the layer of ties, with scale 2^-22 so that
 * the bias is exactly 2n + 2^-22: the float path would put codes one step away). */
static void conv_int32_bias(void) {
  static conv_data_t d;
  static uint8_t want[M * H * W];
  mi_graph_t *g;
  mi_array_t *y;
  conv_fill(&d, 1);
  d.ibias = 1;
  for (int m = 0; m < M; m++) {
    d.bs[m] = 0x1p-22f;
    d.bq[m] = (int32_t)lrint((double)d.b[m] / (double)d.bs[m]);
    d.b[m] = (float)((double)d.bq[m] * (double)d.bs[m]);
  }
  conv_want(&d, 128, want);
  g = conv_graph(&d, 0, 128, 0);
  y = run_codes(g, &d);
  REQUIRE(y && mi_array_numel(y) == M * H * W);
  CHECK(count_diff(y, want, M * H * W) == 0, "INT32 bias: %lld codes differ", (long long)count_diff(y, want, M * H * W));
  mi_array_destroy(y);
  mi_graph_destroy(g);
}

/* A Relu the quantization does not imply (zero point 10, not the lowest code) is applied: the layer
 * runs node by node, and no code is under the zero point. */
static void relu_not_implied(void) {
  static conv_data_t d;
  mi_graph_t *g;
  mi_array_t *y;
  int64_t low = 0, at_zp = 0;
  conv_fill(&d, 0);
  g = conv_graph(&d, 1, 10, 0);
  y = run_codes(g, &d);
  REQUIRE(y);
  for (int64_t i = 0; i < mi_array_numel(y); i++) {
    low += ((const uint8_t *)y->data)[i] < 10;
    at_zp += ((const uint8_t *)y->data)[i] == 10;
  }
  CHECK(low == 0 && at_zp > 0, "Relu with zero point 10: %lld codes under it, %lld at it", (long long)low,
        (long long)at_zp);
  mi_array_destroy(y);
  mi_graph_destroy(g);
}

/* MatMul [2,3,KK] x [KK,N] with per-column weight scales, and Gemm (transB, alpha, beta, bias). */
static void matmul_gemm_codes(void) {
  enum { KK = 40,
         N = 6,
         R = 6 };
  static int8_t w[KK * N];
  uint8_t x[R * KK], zx = 3, zy = 100;
  float sx = 0.031f, sy = 0.057f, sw[N], b[N], alpha = 0.5f, beta = 2.0f;
  for (int i = 0; i < R * KK; i++) x[i] = (uint8_t)rnd(0, 255);
  for (int i = 0; i < KK * N; i++) w[i] = (int8_t)rnd(-127, 127);
  for (int i = 0; i < N; i++) {
    sw[i] = 0.001f * (float)rnd(1, 9);
    b[i] = 0.1f * (float)rnd(-9, 9);
  }
  for (int gemm = 0; gemm <= 1; gemm++) {
    mi_graph_t *g = mi_graph_create("qdq_mm");
    int64_t xd3[3] = {2, 3, KK}, xd2[2] = {R, KK}, wd[2] = {gemm ? N : KK, gemm ? KK : N}, nn = N;
    int32_t xin = tin(g, "x_q", MI_DTYPE_UINT8, gemm ? 2 : 3, gemm ? xd2 : xd3), n;
    int32_t dqx[3] = {xin, cst(g, "sx", MI_DTYPE_FLOAT32, 0, NULL, &sx, 4), cst(g, "zx", MI_DTYPE_UINT8, 0, NULL, &zx, 1)};
    int8_t wt[KK * N];
    int32_t dqw[2], op[3], q[3];
    mi_array_t *in, *out[1] = {0};
    mi_error_t err = {0};
    for (int k = 0; k < KK; k++)
      for (int j = 0; j < N; j++) wt[gemm ? j * KK + k : k * N + j] = w[k * N + j];
    dqw[0] = cst(g, "w_q", MI_DTYPE_INT8, 2, wd, wt, sizeof wt);
    dqw[1] = cst(g, "sw", MI_DTYPE_FLOAT32, 1, &nn, sw, sizeof sw);
    op[0] = node1(g, "DequantizeLinear", "dqx", 3, dqx, NULL);
    op[1] = node1(g, "DequantizeLinear", "dqw", 2, dqw, &n);
    REQUIRE(mi_node_set_int(g, n, "axis", gemm ? 0 : 1) == MI_OK);
    op[2] = cst(g, "b", MI_DTYPE_FLOAT32, 1, &nn, b, sizeof b);
    q[0] = node1(g, gemm ? "Gemm" : "MatMul", "op", gemm ? 3 : 2, op, &n);
    if (gemm) {
      REQUIRE(mi_node_set_int(g, n, "transB", 1) == MI_OK);
      REQUIRE(mi_node_set_float(g, n, "alpha", alpha) == MI_OK);
      REQUIRE(mi_node_set_float(g, n, "beta", beta) == MI_OK);
    }
    q[1] = cst(g, "sy", MI_DTYPE_FLOAT32, 0, NULL, &sy, 4);
    q[2] = cst(g, "zy", MI_DTYPE_UINT8, 0, NULL, &zy, 1);
    mi_graph_add_output(g, node1(g, "QuantizeLinear", "q", 3, q, NULL));
    in = mi_array_create(MI_DTYPE_UINT8, gemm ? 2 : 3, gemm ? xd2 : xd3);
    REQUIRE(in);
    memcpy(in->data, x, sizeof x);
    CHECK(mi_ref_run(g, (const mi_array_t *const *)&in, 1, out, 1, &err) == MI_OK, "run: %s", err.message);
    REQUIRE(out[0] && mi_array_numel(out[0]) == R * N);
    CHECK(out[0]->rank == (gemm ? 2 : 3) && out[0]->dims[out[0]->rank - 1] == N, "output shape");
    for (int r = 0; r < R; r++)
      for (int j = 0; j < N; j++) {
        int64_t acc = 0;
        double a = gemm ? alpha : 1.0, bb = gemm ? beta * (double)b[j] / (double)sy : 0.0;
        for (int k = 0; k < KK; k++) acc += (int64_t)(x[r * KK + k] - zx) * w[k * N + j];
        uint8_t want = want_code(acc, a * (double)sx * (double)sw[j] / (double)sy, bb, zy);
        CHECK(((const uint8_t *)out[0]->data)[r * N + j] == want, "%s [%d][%d]: %d, want %d", gemm ? "Gemm" : "MatMul",
              r, j, ((const uint8_t *)out[0]->data)[r * N + j], want);
      }
    mi_array_destroy(out[0]);
    mi_array_destroy(in);
    mi_graph_destroy(g);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(conv_integer_codes),
    TU_CASE(conv_int32_bias),
    TU_CASE(relu_not_implied),
    TU_CASE(matmul_gemm_codes),
};

TU_MAIN(NULL, NULL)
