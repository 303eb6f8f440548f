/* test_ref_qop_ms.c - the reference's com.microsoft QOperator ops beyond QLinearAdd / Mul /
 * GlobalAveragePool (QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool, QLinearConcat,
 * QLinearWhere, QLinearSoftmax, QGemm) and the standard ops such models run on codes (MaxPool,
 * nearest Resize), against hand-derived codes: saturation, ties (half to even), broadcasting,
 * per-column and float-output QGemm; shape inference checked on every case (case_run), and
 * bad attributes and dtypes refused with the node named. */
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

static void expect_codes(const char *what, const mi_array_t *y, int32_t dt, const void *want, int64_t n) {
  CHECK(y && y->dtype == dt && mi_array_numel(y) == n, "%s: dtype/size wrong", what);
  if (!y || y->dtype != dt || mi_array_numel(y) != n) return;
  for (int64_t i = 0; i < n; i++) {
    int64_t g = dt == MI_DTYPE_INT8 ? ((const int8_t *)y->data)[i] : ((const uint8_t *)y->data)[i];
    int64_t w = dt == MI_DTYPE_INT8 ? ((const int8_t *)want)[i] : ((const uint8_t *)want)[i];
    CHECK(g == w, "%s: element %lld is %lld, want %lld", what, (long long)i, (long long)g, (long long)w);
  }
}

/* A run that must fail with `code`, its message naming the node's op and `part`. */
static void run_refused(op_case_t *k, int32_t code, const char *part) {
  const char *op = k->g->nodes[k->node].op_type;
  mi_array_t *outs[4] = {NULL};
  mi_error_t err = {0};
  int32_t rc = mi_ref_run(k->g, (const mi_array_t *const *)k->rt, k->nrt, outs, k->g->output_count, &err);
  CHECK(rc == code, "%s: run gave %d, want %d (%s)", op, (int)rc, (int)code, err.message);
  CHECK(strstr(err.message, op) && strstr(err.message, part), "%s: message '%s' lacks '%s'", op, err.message, part);
  CHECK(!strchr(err.message, '\n'), "%s: message is one line", op);
  free_all(outs, 4);
  mi_graph_destroy(k->g);
  k->g = NULL;
}

/* QLinearSigmoid (uint8, Y_scale 1/256): x 0 -> 0.5 -> 128; 12.7 -> 255.999 -> 256 saturates at
 * 255; -12.8 -> 0; 1.0 -> 0.731059 * 256 = 187.15 -> 187. QLinearLeakyRelu (int8, alpha 0.25,
 * scales 1): -2 -> -0.5 -> 0 and -10 -> -2.5 -> -2 (half to even), -6 -> -1.5 -> -2; then uint8
 * with the default alpha 0.01 and zero points 100: 200 -> 100 / 0.5 + 100 = 300 saturates, 0 ->
 * -1 / 0.5 + 100 = 98. */
static void qlinear_act(void) {
  static const uint8_t xs[4] = {128, 255, 0, 138}, ws[4] = {128, 255, 0, 187};
  int64_t four = 4, six = 6, two = 2;
  mi_array_t *in[5] = {arr(MI_DTYPE_UINT8, 1, &four, xs), f32s(0.1f), u8s(128), f32s(1.0f / 256.0f), u8s(0)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QLinearSigmoid", 13, 5, in, 0x1e, 1);
  set_ms(&k);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearSigmoid: %s", err.message);
  expect_codes("QLinearSigmoid", out[0], MI_DTYPE_UINT8, ws, 4);
  free_all(out, 1);
  free_all(in, 5);

  static const int8_t xl[6] = {-2, -6, -10, 127, -128, 3}, wl[6] = {0, -2, -2, 127, -32, 3};
  mi_array_t *il[5] = {arr(MI_DTYPE_INT8, 1, &six, xl), f32s(1.0f), i8s(0), f32s(1.0f), NULL};
  case_begin(&k, "QLinearLeakyRelu", 13, 5, il, 0xe, 1);
  set_ms(&k);
  mi_node_set_float(k.g, k.node, "alpha", 0.25f);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearLeakyRelu: %s", err.message);
  expect_codes("QLinearLeakyRelu int8", out[0], MI_DTYPE_INT8, wl, 6);
  free_all(out, 1);
  free_all(il, 5);

  static const uint8_t xu[2] = {200, 0}, wu[2] = {255, 98};
  mi_array_t *iu[5] = {arr(MI_DTYPE_UINT8, 1, &two, xu), f32s(1.0f), u8s(100), f32s(0.5f), u8s(100)};
  case_begin(&k, "QLinearLeakyRelu", 13, 5, iu, 0x1e, 1);
  set_ms(&k);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearLeakyRelu uint8: %s", err.message);
  expect_codes("QLinearLeakyRelu uint8", out[0], MI_DTYPE_UINT8, wu, 2);
  free_all(out, 1);
  /* An X_zero_point of another dtype than X is refused. */
  mi_array_t *bad[5] = {iu[0], iu[1], i8s(0), iu[3], iu[4]};
  case_begin(&k, "QLinearLeakyRelu", 13, 5, bad, 0x1e, 1);
  set_ms(&k);
  run_refused(&k, MI_ERR_INVALID_ARGUMENT, "X_zero_point");
  mi_array_destroy(bad[2]);
  free_all(iu, 5);
}

/* QLinearAveragePool on a 3x3 plane (scales 1, zero points 0) {3,2,3; 4,5,6; 7,8,11}: a 2x2
 * window, stride 1: 14/4 = 3.5 -> 4, 16/4 = 4, 24/4 = 6, 30/4 = 7.5 -> 8; stride 2 with pads 1:
 * corner windows hold 1 or 2 values: without count_include_pad 3, 5/2 -> 2, 11/2 -> 6, 8; with it
 * (divided by 4) 0.75 -> 1, 1.25 -> 1, 2.75 -> 3, 8; NHWC (channels_last) the same; the whole
 * plane (the global pool's path) 49/9 = 5.44 -> 5. */
static void qlinear_avgpool(void) {
  static const uint8_t x[9] = {3, 2, 3, 4, 5, 6, 7, 8, 11};
  static const uint8_t w1[4] = {4, 4, 6, 8}, wex[4] = {3, 2, 6, 8}, win[4] = {1, 1, 3, 8}, wg[1] = {5};
  static const int64_t k2[2] = {2, 2}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  for (int cfg = 0; cfg < 5; cfg++) {
    int last = cfg == 3;
    int64_t d[4] = {1, 1, 3, 3}, dl[4] = {1, 3, 3, 1};
    mi_array_t *in[5] = {arr(MI_DTYPE_UINT8, 4, last ? dl : d, x), f32s(1.0f), u8s(0), f32s(1.0f), u8s(0)},
               *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "QLinearAveragePool", 13, 5, in, 0x1e, 1);
    set_ms(&k);
    mi_node_set_ints(k.g, k.node, "kernel_shape", 2, cfg == 4 ? k3 : k2);
    if (cfg >= 1 && cfg <= 3) {
      mi_node_set_ints(k.g, k.node, "strides", 2, s2);
      mi_node_set_ints(k.g, k.node, "pads", 4, p1);
    }
    if (cfg == 2) mi_node_set_int(k.g, k.node, "count_include_pad", 1);
    if (last) mi_node_set_int(k.g, k.node, "channels_last", 1);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearAveragePool %d: %s", cfg, err.message);
    const uint8_t *want = cfg == 0 ? w1 : cfg == 2 ? win
                                      : cfg == 4   ? wg
                                                   : wex;
    expect_codes("QLinearAveragePool", out[0], MI_DTYPE_UINT8, want, cfg == 4 ? 1 : 4);
    if (last && out[0]) CHECK(out[0]->dims[1] == 2 && out[0]->dims[3] == 1, "channels_last output shape");
    free_all(out, 1);
    free_all(in, 5);
  }
  /* Dilations are refused by name. */
  static const int64_t dil[2] = {2, 2};
  int64_t d[4] = {1, 1, 3, 3};
  mi_array_t *in[5] = {arr(MI_DTYPE_UINT8, 4, d, x), f32s(1.0f), u8s(0), f32s(1.0f), u8s(0)};
  op_case_t k;
  case_begin(&k, "QLinearAveragePool", 13, 5, in, 0x1e, 1);
  set_ms(&k);
  mi_node_set_ints(k.g, k.node, "kernel_shape", 2, k2);
  mi_node_set_ints(k.g, k.node, "dilations", 2, dil);
  run_refused(&k, MI_ERR_UNSUPPORTED, "dilations");
  free_all(in, 5);
}

/* QLinearConcat on axis -1 into Y (scale 0.5, zero point 10): X0 has Y's parameters (copied),
 * X1 (scale 0.25) code 5 = 1.25 -> 2.5 -> 2 (half to even) + 10, X2 (scale 1) 255 -> 510 + 10
 * saturates, 0 -> 10. */
static void qlinear_concat(void) {
  static const uint8_t a[2] = {10, 20}, b[1] = {5}, c2[2] = {255, 0}, want[5] = {10, 20, 12, 255, 10};
  int64_t d2[2] = {1, 2}, d1[2] = {1, 1};
  mi_array_t *in[11] = {f32s(0.5f), u8s(10), arr(MI_DTYPE_UINT8, 2, d2, a), f32s(0.5f), u8s(10),
                        arr(MI_DTYPE_UINT8, 2, d1, b), f32s(0.25f), u8s(0), arr(MI_DTYPE_UINT8, 2, d2, c2),
                        f32s(1.0f), u8s(0)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QLinearConcat", 13, 11, in, 0x6db, 1);
  set_ms(&k);
  mi_node_set_int(k.g, k.node, "axis", -1);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearConcat: %s", err.message);
  expect_codes("QLinearConcat", out[0], MI_DTYPE_UINT8, want, 5);
  free_all(out, 1);
  /* Without axis: refused by both the run and shape inference. */
  case_begin(&k, "QLinearConcat", 13, 11, in, 0x6db, 1);
  set_ms(&k);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "axis") != NULL, "QLinearConcat without axis: %s", err.message);
  free_all(in, 11);
}

/* QLinearWhere: condition [2,1] {true, false}, X [1,3] codes {1,2,3} at scale 0.5, Y a scalar
 * code 7 at scale 2, zero point 1; Z at scale 1: row 0 is X requantized (0.5 -> 0, 1, 1.5 -> 2),
 * row 1 Y's (7 - 1) * 2 = 12, broadcast. */
static void qlinear_where(void) {
  static const uint8_t cond[2] = {1, 0}, x[3] = {1, 2, 3}, yv = 7, want[6] = {0, 1, 2, 12, 12, 12};
  int64_t dc[2] = {2, 1}, dx[2] = {1, 3};
  mi_array_t *in[9] = {arr(MI_DTYPE_BOOL, 2, dc, cond), arr(MI_DTYPE_UINT8, 2, dx, x), f32s(0.5f), u8s(0),
                       arr(MI_DTYPE_UINT8, 0, NULL, &yv), f32s(2.0f), u8s(1), f32s(1.0f), u8s(0)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QLinearWhere", 13, 9, in, 0x1ec, 1);
  set_ms(&k);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearWhere: %s", err.message);
  expect_codes("QLinearWhere", out[0], MI_DTYPE_UINT8, want, 6);
  if (out[0]) CHECK(out[0]->rank == 2 && out[0]->dims[0] == 2 && out[0]->dims[1] == 3, "QLinearWhere shape");
  free_all(out, 1);
  free_all(in, 9);
}

/* QLinearSoftmax (uint8, y_scale 1/256): opset 13 on the last axis, rows {0,0,0} -> 256/3 =
 * 85.3 -> 85 and {10,0,0} at X_scale 1 -> 0.99991 * 256 = 255.98 -> 256 saturates at 255, the
 * others 0.0116 -> 0; all-zero [2,3] on axis 0: opset 13 normalizes columns (128 each), opset 12
 * the flattened 6 (42.7 -> 43). Without the opset attribute it is refused. */
static void qlinear_softmax(void) {
  static const uint8_t x[6] = {0, 0, 0, 10, 0, 0}, want[6] = {85, 85, 85, 255, 0, 0}, z[6] = {0};
  static const uint8_t w13[6] = {128, 128, 128, 128, 128, 128}, w12[6] = {43, 43, 43, 43, 43, 43};
  int64_t d[2] = {2, 3};
  for (int cfg = 0; cfg < 3; cfg++) {
    mi_array_t *in[5] = {arr(MI_DTYPE_UINT8, 2, d, cfg ? z : x), f32s(1.0f), u8s(0), f32s(1.0f / 256.0f), u8s(0)},
               *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "QLinearSoftmax", 13, 5, in, 0x1e, 1);
    set_ms(&k);
    mi_node_set_int(k.g, k.node, "opset", cfg == 2 ? 12 : 13);
    mi_node_set_int(k.g, k.node, "axis", cfg ? 0 : -1);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "QLinearSoftmax %d: %s", cfg, err.message);
    expect_codes("QLinearSoftmax", out[0], MI_DTYPE_UINT8, cfg == 0 ? want : cfg == 1 ? w13
                                                                                      : w12,
                 6);
    free_all(out, 1);
    free_all(in, 5);
  }
  mi_array_t *in[5] = {arr(MI_DTYPE_UINT8, 2, d, x), f32s(1.0f), u8s(0), f32s(1.0f / 256.0f), u8s(0)};
  op_case_t k;
  case_begin(&k, "QLinearSoftmax", 13, 5, in, 0x1e, 1);
  set_ms(&k);
  run_refused(&k, MI_ERR_INVALID_ARGUMENT, "opset");
  free_all(in, 5);
}

/* QGemm. uint8 A [2,3] (scale 0.5, zero point 1: centered 0..5), B [3,2] {1,0; 0,1; 1,1}, C
 * {1, -1}: sums {2+1, 3-1; 8+1, 9-1} = {3, 2; 9, 8} * 0.5 = {1.5 -> 2, 1, 4.5 -> 4, 4}. int8 A
 * {2, -3} with transB, per-column B (scales {0.5, 0.25}, zero points {0, 1}) and alpha 2: sums
 * {-1, 8}; without y_scale float {-1, 4}; at y_scale 0.01 codes {-100, 400 -> 127}. */
static void qgemm(void) {
  static const uint8_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, want[4] = {2, 1, 4, 4};
  static const int32_t cb[2] = {1, -1};
  int64_t da[2] = {2, 3}, db[2] = {3, 2}, two = 2;
  mi_array_t *in[9] = {arr(MI_DTYPE_UINT8, 2, da, a), f32s(0.5f), u8s(1), arr(MI_DTYPE_UINT8, 2, db, b), f32s(1.0f),
                       u8s(0), arr(MI_DTYPE_INT32, 1, &two, cb), f32s(1.0f), u8s(0)},
             *out[1] = {0};
  op_case_t k;
  mi_error_t err = {0};
  case_begin(&k, "QGemm", 13, 9, in, 0x1fe, 1);
  set_ms(&k);
  CHECK(case_run(&k, out, 0, &err) == MI_OK, "QGemm: %s", err.message);
  expect_codes("QGemm uint8", out[0], MI_DTYPE_UINT8, want, 4);
  free_all(out, 1);
  free_all(in, 9);

  static const int8_t ai[2] = {2, -3}, bi[4] = {1, 1, 2, -1}, zb[2] = {0, 1}, wi[2] = {-100, 127};
  static const float sb[2] = {0.5f, 0.25f};
  int64_t dai[2] = {1, 2}, dbi[2] = {2, 2};
  for (int coded = 0; coded < 2; coded++) {
    mi_array_t *ii[9] = {arr(MI_DTYPE_INT8, 2, dai, ai), f32s(1.0f), i8s(0), arr(MI_DTYPE_INT8, 2, dbi, bi),
                         arr(MI_DTYPE_FLOAT32, 1, &two, sb), arr(MI_DTYPE_INT8, 1, &two, zb), NULL,
                         coded ? f32s(0.01f) : NULL, coded ? i8s(0) : NULL};
    case_begin(&k, "QGemm", 13, coded ? 9 : 6, ii, 0x1be, 1);
    set_ms(&k);
    mi_node_set_int(k.g, k.node, "transB", 1);
    mi_node_set_float(k.g, k.node, "alpha", 2.0f);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "QGemm int8 %d: %s", coded, err.message);
    if (coded) expect_codes("QGemm per-column codes", out[0], MI_DTYPE_INT8, wi, 2);
    else {
      CHECK(out[0] && out[0]->dtype == MI_DTYPE_FLOAT32 && mi_array_numel(out[0]) == 2, "QGemm float output");
      if (out[0] && out[0]->dtype == MI_DTYPE_FLOAT32)
        CHECK(((float *)out[0]->data)[0] == -1.0f && ((float *)out[0]->data)[1] == 4.0f, "QGemm float: %g %g",
              (double)((float *)out[0]->data)[0], (double)((float *)out[0]->data)[1]);
    }
    free_all(out, 1);
    free_all(ii, 9);
  }
  /* Refused: an INT8 A with a UINT8 B; y_scale without y_zero_point; transA = 2. */
  for (int bad = 0; bad < 3; bad++) {
    mi_array_t *ib[9] = {bad == 0 ? arr(MI_DTYPE_INT8, 2, dai, ai) : arr(MI_DTYPE_UINT8, 2, dai, ai), f32s(1.0f),
                         bad == 0 ? i8s(0) : u8s(0), arr(MI_DTYPE_UINT8, 2, dbi, bi), f32s(1.0f), u8s(0), NULL,
                         f32s(1.0f), bad == 1 ? NULL : u8s(0)};
    case_begin(&k, "QGemm", 13, 9, ib, 0x1be, 1);
    set_ms(&k);
    if (bad == 2) mi_node_set_int(k.g, k.node, "transA", 2);
    run_refused(&k, bad == 0 ? MI_ERR_UNSUPPORTED : MI_ERR_INVALID_ARGUMENT,
                bad == 0 ? "INT8 B" : bad == 1 ? "y_zero_point"
                                               : "transA");
    free_all(ib, 9);
  }
}

/* Standard ops QOperator models run on codes: MaxPool (opset 12) on uint8 and int8 picks the
 * largest code; a nearest Resize repeats codes; a linear Resize of codes is refused. */
static void direct_8bit(void) {
  static const uint8_t xu[4] = {7, 200, 3, 9}, wu[1] = {200};
  static const int8_t xs[4] = {-5, 3, -128, 2}, ws[1] = {3};
  static const int64_t k2[2] = {2, 2};
  int64_t d[4] = {1, 1, 2, 2};
  for (int s8 = 0; s8 < 2; s8++) {
    mi_array_t *in[1] = {arr(s8 ? MI_DTYPE_INT8 : MI_DTYPE_UINT8, 4, d, s8 ? (const void *)xs : (const void *)xu)},
               *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "MaxPool", 13, 1, in, 0, 1);
    mi_node_set_ints(k.g, k.node, "kernel_shape", 2, k2);
    CHECK(case_run(&k, out, 0, &err) == MI_OK, "MaxPool 8-bit: %s", err.message);
    expect_codes("MaxPool 8-bit", out[0], s8 ? MI_DTYPE_INT8 : MI_DTYPE_UINT8, s8 ? (const void *)ws : (const void *)wu,
                 1);
    free_all(out, 1);
    free_all(in, 1);
  }
  static const uint8_t xr[2] = {7, 200}, wr[4] = {7, 7, 200, 200};
  static const float sc[4] = {1, 1, 1, 2};
  int64_t dr[4] = {1, 1, 1, 2}, four = 4;
  for (int linear = 0; linear < 2; linear++) {
    mi_array_t *in[3] = {arr(MI_DTYPE_UINT8, 4, dr, xr), NULL, arr(MI_DTYPE_FLOAT32, 1, &four, sc)}, *out[1] = {0};
    op_case_t k;
    mi_error_t err = {0};
    case_begin(&k, "Resize", 13, 3, in, 0x4, 1);
    if (linear) {
      mi_node_set_string(k.g, k.node, "mode", "linear");
      run_refused(&k, MI_ERR_UNSUPPORTED, "linear");
    } else {
      mi_node_set_string(k.g, k.node, "nearest_mode", "floor");
      mi_node_set_string(k.g, k.node, "coordinate_transformation_mode", "asymmetric");
      CHECK(case_run(&k, out, 0, &err) == MI_OK, "Resize uint8: %s", err.message);
      expect_codes("Resize nearest uint8", out[0], MI_DTYPE_UINT8, wr, 4);
    }
    free_all(out, 1);
    free_all(in, 3);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(qlinear_act),
    TU_CASE(qlinear_avgpool),
    TU_CASE(qlinear_concat),
    TU_CASE(qlinear_where),
    TU_CASE(qlinear_softmax),
    TU_CASE(qgemm),
    TU_CASE(direct_8bit),
};

TU_MAIN(NULL, NULL)
