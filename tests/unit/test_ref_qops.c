/* test_ref_qops.c - the reference's integer ops of quantized models (DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, com.microsoft QLinearAdd, QLinearMul,
 * QLinearGlobalAveragePool) against ONNX's node-test values and hand-derived ones, with shape
 * inference checked on every case (case_run) and the refusals' messages. */
#include "test_ref_common.h"

static mi_array_t *arr(int32_t dtype, int32_t rank, const int64_t *dims, const void *vals) {
  mi_array_t *a = mi_array_create(dtype, rank, dims);
  if (a && vals) memcpy(a->data, vals, a->nbytes);
  return a;
}
static mi_array_t *u8s(uint8_t v) { return arr(MI_DTYPE_UINT8, 0, NULL, &v); }
static mi_array_t *i8s(int8_t v) { return arr(MI_DTYPE_INT8, 0, NULL, &v); }
static mi_array_t *f32s(float v) { return arr(MI_DTYPE_FLOAT32, 0, NULL, &v); }

static void free_all(mi_array_t **a, int32_t n) {
  for (int32_t i = 0; i < n; i++) mi_array_destroy(a[i]);
}

static void set_ms(op_case_t *k) {
  free(k->g->nodes[k->node].domain);
  k->g->nodes[k->node].domain = strdup("com.microsoft");
}

/* Output equal to `want` (n codes of dtype dt). */
static void expect_codes(const char *what, const mi_array_t *y, int32_t dt, const void *want, int64_t n) {
  CHECK(y && y->dtype == dt && mi_array_numel(y) == n, "%s: dtype/size wrong", what);
  if (!y || y->dtype != dt || mi_array_numel(y) != n) return;
  for (int64_t i = 0; i < n; i++) {
    int64_t g = dt == MI_DTYPE_INT32  ? ((const int32_t *)y->data)[i]
                : dt == MI_DTYPE_INT8 ? ((const int8_t *)y->data)[i]
                                      : ((const uint8_t *)y->data)[i];
    int64_t w = dt == MI_DTYPE_INT32  ? ((const int32_t *)want)[i]
                : dt == MI_DTYPE_INT8 ? ((const int8_t *)want)[i]
                                      : ((const uint8_t *)want)[i];
    CHECK(g == w, "%s: element %lld is %lld, want %lld", what, (long long)i, (long long)g, (long long)w);
  }
}

/* ONNX's three DynamicQuantizeLinear node tests (range with both signs, all negative, all
 * positive), and an all-zero input (scale 1, as ONNX Runtime). */
static void dynamic_quantize(void) {
  static const float x1[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f}, x2[6] = {-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f};
  static const float x3[12] = {1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f};
  static const uint8_t y1[6] = {153, 255, 0, 26, 221, 179}, y2[6] = {191, 121, 172, 96, 42, 0};
  static const uint8_t y3[12] = {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149};
  static const float zeros[4] = {0};
  const float *xs[4] = {x1, x2, x3, zeros};
  const uint8_t *ys[3] = {y1, y2, y3};
  const int64_t n[4] = {6, 6, 12, 4};
  const float scale[4] = {5.0f / 255.0f, 4.0f / 255.0f, 4.0f / 255.0f, 1.0f};
  const uint8_t zp[4] = {153, 255, 0, 0};
  for (int c = 0; c < 4; c++) {
    int64_t dims[2] = {c == 2 ? 3 : 1, c == 2 ? 4 : n[c]};
    mi_array_t *in[1] = {arr(MI_DTYPE_FLOAT32, 2, dims, xs[c])}, *out[3] = {NULL};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "DynamicQuantizeLinear", 11, 1, in, 0, 3);
    int32_t rc = case_run(&k, out, 0, &err);
    CHECK(rc == MI_OK, "DynamicQuantizeLinear %d: %s", c, err.message);
    if (rc == MI_OK) {
      static const uint8_t none[4] = {0};
      expect_codes("DynamicQuantizeLinear y", out[0], MI_DTYPE_UINT8, c < 3 ? ys[c] : none, n[c]);
      CHECK(out[1]->rank == 0 && *(float *)out[1]->data == scale[c], "case %d: scale %.9g, want %.9g",
            c, (double)*(float *)out[1]->data, (double)scale[c]);
      expect_codes("DynamicQuantizeLinear zero point", out[2], MI_DTYPE_UINT8, &zp[c], 1);
    }
    free_all(out, 3);
    free_all(in, 1);
  }
}

/* ONNX's MatMulInteger node test (per-tensor zero point 12 on A), then per-row A and
 * per-column B zero points with int8 B and a batch of 2 broadcast against a 2-D B. */
static void matmul_integer(void) {
  static const uint8_t a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, b[6] = {1, 4, 2, 5, 3, 6};
  static const int32_t want[8] = {-38, -83, -44, -98, -50, -113, -56, -128};
  int64_t ad[2] = {4, 3}, bd[2] = {3, 2};
  mi_array_t *in[4] = {arr(MI_DTYPE_UINT8, 2, ad, a), arr(MI_DTYPE_UINT8, 2, bd, b), u8s(12), u8s(0)}, *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "MatMulInteger", 10, 4, in, 0x2, 1);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "MatMulInteger: %s", err.message);
  expect_codes("MatMulInteger (ONNX test)", out[0], MI_DTYPE_INT32, want, 8);
  free_all(out, 1);
  free_all(in, 4);
  /* A [2,2,2] uint8 with row zero points {1, 2}; B [2,2] int8 with column zero points {0, -1}. */
  static const uint8_t a2[8] = {1, 3, 2, 2, 5, 1, 0, 4};
  static const int8_t b2[4] = {2, -1, -3, 0}, zb[2] = {0, -1};
  static const uint8_t za[2] = {1, 2};
  /* centered A: [[0,2],[0,0]], [[4,0],[-2,2]]; centered B: [[2,0],[-3,1]] */
  static const int32_t want2[8] = {-6, 2, 0, 0, 8, 0, -10, 2};
  int64_t a2d[3] = {2, 2, 2}, b2d[2] = {2, 2}, two = 2;
  mi_array_t *in2[4] = {arr(MI_DTYPE_UINT8, 3, a2d, a2), arr(MI_DTYPE_INT8, 2, b2d, b2),
                        arr(MI_DTYPE_UINT8, 1, &two, za), arr(MI_DTYPE_INT8, 1, &two, zb)};
  case_begin(&k, "MatMulInteger", 10, 4, in2, 0xe, 1);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "MatMulInteger per row/column: %s", err.message);
  expect_codes("MatMulInteger per row/column", out[0], MI_DTYPE_INT32, want2, 8);
  free_all(out, 1);
  free_all(in2, 4);
}

/* MatMulInteger on random shapes against the i-j-k loop the interpreter used to run (int64 sums
 * truncated to int32): a batch of A against a 2-D B, odd sizes, uint8 A and int8 B with zero
 * points; then K = 70000 products of 255 * -128, whose int32 sum wraps (ONNX accumulates in int32). */
static void matmul_integer_random(void) {
  static const int64_t cfg[][4] = {{2, 3, 37, 19}, {1, 17, 5, 33}, {3, 1, 70, 1}, {1, 1, 70000, 2}}; /* batch, M, K, N */
  uint32_t rng = 777;
  for (size_t q = 0; q < sizeof cfg / sizeof cfg[0]; q++) {
    int64_t NB = cfg[q][0], M = cfg[q][1], K = cfg[q][2], N = cfg[q][3], wrap = K == 70000;
    int64_t ad[3] = {NB, M, K}, bd[2] = {K, N};
    uint8_t *a = malloc((size_t)(NB * M * K)), za = wrap ? 0 : 131;
    int8_t *b = malloc((size_t)(K * N)), zb = wrap ? 0 : -5;
    int32_t *want = malloc((size_t)(NB * M * N) * sizeof *want);
    for (int64_t i = 0; i < NB * M * K; i++) a[i] = wrap ? 255 : (uint8_t)((rng = rng * 1103515245u + 12345u) >> 24);
    for (int64_t i = 0; i < K * N; i++) b[i] = wrap ? -128 : (int8_t)((rng = rng * 1103515245u + 12345u) >> 24);
    for (int64_t bi = 0; bi < NB; bi++)
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          int64_t acc = 0;
          for (int64_t k = 0; k < K; k++) acc += (int64_t)(a[(bi * M + i) * K + k] - za) * (b[k * N + j] - zb);
          want[(bi * M + i) * N + j] = (int32_t)(uint32_t)(uint64_t)acc;
        }
    if (wrap) CHECK(want[0] == (int32_t)(uint32_t)(uint64_t)(70000ll * 255 * -128), "the wrap case wraps");
    mi_array_t *in[4] = {arr(MI_DTYPE_UINT8, 3, ad, a), arr(MI_DTYPE_INT8, 2, bd, b), u8s(za), i8s(zb)}, *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "MatMulInteger", 10, 4, in, 0xA, 1);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "MatMulInteger case %d: %s", (int)q, err.message);
    if (out[0]) {
      char what[48];
      snprintf(what, sizeof what, "MatMulInteger random case %d", (int)q);
      expect_codes(what, out[0], MI_DTYPE_INT32, want, NB * M * N);
    }
    free_all(out, 1);
    free_all(in, 4);
    free(a);
    free(b);
    free(want);
  }
}

/* ONNX's ConvInteger node tests, without and with padding. */
static void conv_integer(void) {
  static const uint8_t x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w[4] = {1, 1, 1, 1};
  static const int32_t want[4] = {12, 16, 24, 28};
  static const int32_t want_pad[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
  int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2};
  for (int pad = 0; pad < 2; pad++) {
    mi_array_t *in[3] = {arr(MI_DTYPE_UINT8, 4, xd, x), arr(MI_DTYPE_UINT8, 4, wd, w), u8s(1)}, *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "ConvInteger", 10, 3, in, 0x2, 1);
    if (pad) {
      int64_t p[4] = {1, 1, 1, 1};
      mi_node_set_ints(k.g, k.node, "pads", 4, p);
    }
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "ConvInteger: %s", err.message);
    expect_codes(pad ? "ConvInteger padded" : "ConvInteger", out[0], MI_DTYPE_INT32, pad ? want_pad : want,
                 pad ? 16 : 4);
    free_all(out, 1);
    free_all(in, 3);
  }
}

/* ConvInteger on random shapes against the direct loop (bounds checked per product) the
 * interpreter used to run: strides, pads, dilations, groups, 1x1 to 3x5 kernels, uint8 with a
 * zero point and int8 weights with one; every int32 exactly equal. */
static void conv_integer_random(void) {
  static const int64_t cfg[][10] = {
      /* C, M, group, H, W, KH, KW, stride, pad, dil */
      {3, 4, 1, 7, 9, 3, 3, 1, 1, 1},
      {4, 4, 4, 8, 8, 3, 3, 2, 1, 1},
      {6, 4, 2, 9, 7, 3, 5, 2, 2, 1},
      {5, 3, 1, 6, 11, 1, 1, 1, 0, 1},
      {2, 2, 1, 10, 10, 3, 3, 1, 2, 2},
      {4, 6, 2, 5, 13, 2, 3, 3, 1, 2},
  };
  uint32_t rng = 12345;
  for (size_t q = 0; q < sizeof cfg / sizeof cfg[0]; q++) {
    const int64_t *f = cfg[q];
    int64_t C = f[0], M = f[1], G = f[2], H = f[3], W = f[4], KH = f[5], KW = f[6], st = f[7], pd = f[8], dl = f[9];
    int64_t OH = (H + 2 * pd - dl * (KH - 1) - 1) / st + 1, OW = (W + 2 * pd - dl * (KW - 1) - 1) / st + 1;
    int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C / G, KH, KW}, nx = C * H * W, nw = M * (C / G) * KH * KW;
    uint8_t *x = malloc((size_t)nx), zx = 7;
    int8_t *wv = malloc((size_t)nw), zw = -3;
    int32_t *want = malloc((size_t)(M * OH * OW) * sizeof *want);
    for (int64_t i = 0; i < nx; i++) x[i] = (uint8_t)((rng = rng * 1103515245u + 12345u) >> 24);
    for (int64_t i = 0; i < nw; i++) wv[i] = (int8_t)((rng = rng * 1103515245u + 12345u) >> 24);
    for (int64_t m = 0; m < M; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t acc = 0, g = m / (M / G);
          for (int64_t ci = 0; ci < C / G; ci++)
            for (int64_t kh = 0; kh < KH; kh++)
              for (int64_t kw = 0; kw < KW; kw++) {
                int64_t ih = oh * st - pd + kh * dl, iw = ow * st - pd + kw * dl;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += (int64_t)(x[((g * (C / G) + ci) * H + ih) * W + iw] - zx) *
                       (wv[((m * (C / G) + ci) * KH + kh) * KW + kw] - zw);
              }
          want[(m * OH + oh) * OW + ow] = (int32_t)acc;
        }
    {
      mi_array_t *in[4] = {arr(MI_DTYPE_UINT8, 4, xd, x), arr(MI_DTYPE_INT8, 4, wd, wv), u8s(zx), i8s(zw)};
      mi_array_t *out[1] = {0};
      int64_t p[4] = {pd, pd, pd, pd}, sv[2] = {st, st}, dv[2] = {dl, dl};
      op_case_t k;
      mi_error_t err = {0};
      case_begin(&k, "ConvInteger", 10, 4, in, 0xA, 1);
      mi_node_set_ints(k.g, k.node, "pads", 4, p);
      mi_node_set_ints(k.g, k.node, "strides", 2, sv);
      mi_node_set_ints(k.g, k.node, "dilations", 2, dv);
      mi_node_set_int(k.g, k.node, "group", G);
      CHECK(case_run(&k, out, 0, &err) == MI_OK, "ConvInteger case %d: %s", (int)q, err.message);
      if (out[0]) {
        char what[48];
        snprintf(what, sizeof what, "ConvInteger random case %d", (int)q);
        expect_codes(what, out[0], MI_DTYPE_INT32, want, M * OH * OW);
      }
      free_all(out, 1);
      free_all(in, 4);
    }
    free(x);
    free(wv);
    free(want);
  }
}

/* ONNX's QLinearMatMul node test (2-D, uint8), and the int8 form of the output saturating. */
static void qlinear_matmul(void) {
  static const uint8_t a[8] = {208, 236, 0, 238, 3, 214, 255, 29};
  static const uint8_t b[12] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
  static const uint8_t want[6] = {168, 115, 255, 1, 66, 151};
  int64_t ad[2] = {2, 4}, bd[2] = {4, 3};
  mi_array_t *in[8] = {arr(MI_DTYPE_UINT8, 2, ad, a), f32s(0.0066f), u8s(113), arr(MI_DTYPE_UINT8, 2, bd, b),
                       f32s(0.00705f), u8s(114), f32s(0.0107f), u8s(118)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QLinearMatMul", 10, 8, in, 0xfe, 1);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearMatMul: %s", err.message);
  expect_codes("QLinearMatMul (ONNX test)", out[0], MI_DTYPE_UINT8, want, 6);
  free_all(out, 1);
  free_all(in, 8);
  /* int8: a [1,2] = {100, -100} (scale 1, zp 0), b [2,2] = {{2, 1}, {0, 1}} per-column scales
   * {1, 0.5}; y scale 1, zp 0: acc {200, 0} * {1, 0.5} = {200 -> 127, 0}. */
  static const int8_t a8[2] = {100, -100}, b8[4] = {2, 1, 0, 1}, want8[2] = {127, 0};
  static const float bs[2] = {1.0f, 0.5f};
  int64_t a8d[2] = {1, 2}, b8d[2] = {2, 2}, two = 2;
  mi_array_t *in8[8] = {arr(MI_DTYPE_INT8, 2, a8d, a8), f32s(1), i8s(0), arr(MI_DTYPE_INT8, 2, b8d, b8),
                        arr(MI_DTYPE_FLOAT32, 1, &two, bs), NULL, f32s(1), i8s(0)};
  in8[5] = arr(MI_DTYPE_INT8, 1, &two, NULL);
  case_begin(&k, "QLinearMatMul", 10, 8, in8, 0xfe, 1);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearMatMul int8: %s", err.message);
  expect_codes("QLinearMatMul int8 saturating", out[0], MI_DTYPE_INT8, want8, 2);
  free_all(out, 1);
  free_all(in8, 8);
}

/* Hand-derived QLinearConv: centered input 0..8 (3x3), two 2x2 filters with per-channel scales
 * {1, 0.5}, int32 bias {4, -1}; channel 1 lands on exact halves 1.5 and 2.5 (both -> 2: round
 * half to even; half-up would give 3). Then a wrong per-channel count is refused. */
static void qlinear_conv(void) {
  static const uint8_t x[9] = {100, 101, 102, 103, 104, 105, 106, 107, 108};
  static const int8_t w[8] = {1, 1, 1, 1, 1, -1, 2, 0};
  static const float ws[2] = {1.0f, 0.5f};
  static const int32_t bias[2] = {4, -1};
  static const uint8_t want[8] = {134, 136, 140, 142, 129, 130, 130, 131};
  int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {2, 1, 2, 2}, two = 2;
  mi_array_t *in[9] = {arr(MI_DTYPE_UINT8, 4, xd, x), f32s(0.25f), u8s(100), arr(MI_DTYPE_INT8, 4, wd, w),
                       arr(MI_DTYPE_FLOAT32, 1, &two, ws), arr(MI_DTYPE_INT8, 1, &two, NULL), f32s(0.5f),
                       u8s(128), arr(MI_DTYPE_INT32, 1, &two, bias)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QLinearConv", 10, 9, in, 0x1fe, 1);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearConv: %s", err.message);
  expect_codes("QLinearConv", out[0], MI_DTYPE_UINT8, want, 8);
  free_all(out, 1);
  /* Three weight scales for two output channels. */
  int64_t three = 3;
  mi_array_destroy(in[4]);
  in[4] = arr(MI_DTYPE_FLOAT32, 1, &three, NULL);
  case_begin(&k, "QLinearConv", 10, 9, in, 0x1fe, 1);
  mi_graph_t *g = k.g;
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)k.rt, k.nrt, out, 1, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "w_scale has 3 values") &&
            strstr(err.message, "QLinearConv"),
        "bad scale count: %d %s", (int)rc, err.message);
  mi_graph_destroy(g);
  free_all(in, 9);
}

/* com.microsoft QLinearAdd (uint8, B broadcast, saturating at 255) and QLinearMul (int8, tie). */
static void qlinear_add_mul(void) {
  static const uint8_t a[3] = {0, 128, 255}, b = 130, want[3] = {1, 129, 255};
  int64_t three = 3;
  mi_array_t *in[8] = {arr(MI_DTYPE_UINT8, 1, &three, a), f32s(0.5f), u8s(128), arr(MI_DTYPE_UINT8, 0, NULL, &b),
                       f32s(0.25f), u8s(128), f32s(0.5f), u8s(128)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QLinearAdd", 13, 8, in, 0xf6, 1);
  set_ms(&k);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearAdd: %s", err.message);
  expect_codes("QLinearAdd", out[0], MI_DTYPE_UINT8, want, 3);
  free_all(out, 1);
  free_all(in, 8);
  /* (a * 0.5) * 2 / 4 = a / 4: {-4, 3, 10} -> {-1, 0.75 -> 1, 2.5 -> 2} + zc -1. */
  static const int8_t ai[3] = {-4, 3, 10}, bi = 2, wanti[3] = {-2, 0, 1};
  mi_array_t *im[8] = {arr(MI_DTYPE_INT8, 1, &three, ai), f32s(0.5f), i8s(0), arr(MI_DTYPE_INT8, 0, NULL, &bi),
                       f32s(1.0f), NULL, f32s(4.0f), i8s(-1)};
  case_begin(&k, "QLinearMul", 13, 8, im, 0xd6, 1);
  set_ms(&k);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearMul: %s", err.message);
  expect_codes("QLinearMul", out[0], MI_DTYPE_INT8, wanti, 3);
  free_all(out, 1);
  free_all(im, 8);
}

/* com.microsoft QLinearGlobalAveragePool, NCHW and channels_last: means 2.5 and 10.25 at output
 * scale 0.5 are 5 and 20.5 -> 20 (half to even). */
static void qlinear_gap(void) {
  static const uint8_t nchw[8] = {1, 2, 3, 4, 10, 10, 10, 11}, nhwc[8] = {1, 10, 2, 10, 3, 10, 4, 11};
  static const uint8_t want[2] = {5, 20};
  for (int last = 0; last < 2; last++) {
    int64_t d[4] = {1, 2, 2, 2}, dl[4] = {1, 2, 2, 2};
    mi_array_t *in[5] = {arr(MI_DTYPE_UINT8, 4, last ? dl : d, last ? nhwc : nchw), f32s(1.0f), u8s(0),
                         f32s(0.5f), u8s(0)},
               *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "QLinearGlobalAveragePool", 13, 5, in, 0x1e, 1);
    set_ms(&k);
    mi_node_set_int(k.g, k.node, "channels_last", last);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearGlobalAveragePool: %s", err.message);
    expect_codes(last ? "QLinearGlobalAveragePool NHWC" : "QLinearGlobalAveragePool", out[0],
                 MI_DTYPE_UINT8, want, 2);
    if (out[0]) CHECK(last ? out[0]->dims[3] == 2 && out[0]->dims[1] == 1 : out[0]->dims[1] == 2,
                      "output shape of channels_last=%d", last);
    free_all(out, 1);
    free_all(in, 5);
  }
}

/* A com.microsoft op outside the quantized set stays refused, by name. */
static void unknown_ms_op(void) {
  int64_t three = 3;
  mi_array_t *in[1] = {arr(MI_DTYPE_FLOAT32, 1, &three, NULL)}, *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "FusedGelu", 13, 1, in, 0, 1);
  set_ms(&k);
  int32_t rc = mi_ref_run(k.g, (const mi_array_t *const *)k.rt, k.nrt, out, 1, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "com.microsoft"), "FusedGelu: %s", err.message);
  mi_graph_destroy(k.g);
  free_all(in, 1);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(dynamic_quantize),
    TU_CASE(matmul_integer),
    TU_CASE(matmul_integer_random),
    TU_CASE(conv_integer),
    TU_CASE(conv_integer_random),
    TU_CASE(qlinear_matmul),
    TU_CASE(qlinear_conv),
    TU_CASE(qlinear_add_mul),
    TU_CASE(qlinear_gap),
    TU_CASE(unknown_ms_op),
};

TU_MAIN(NULL, NULL)
