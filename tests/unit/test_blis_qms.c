/* test_blis_qms.c - blis-cpu's kernels for the com.microsoft QOperator ops QLinearSigmoid,
 * QLinearLeakyRelu, QLinearConcat, QLinearSoftmax (blis_qms.c), QGemm (blis_qgemm_op.c) and
 * QLinearAveragePool (blis_qavgpool.c: pads, count_include_pad, ceil_mode, NHWC, global, 1-D): each
 * graph runs in a session on blis-cpu:0 with host fallback off, and every output must equal
 * mi_ref_run's byte for byte (UINT8 and INT8, concat of inputs with their own and the output's
 * parameters, softmax by opset 12's flattening and opset 13's single axis, QGemm per tensor and per
 * column, transposed B, C of N or M values, codes and float out); a QGemm with a runtime B is
 * refused by blis-cpu (the host runs it). */
#include "test_blis_qops_util.h"

static void lut(const char *op, int32_t dt) {
  mi_graph_t *g = graph(13);
  int64_t d[3] = {2, 7, 301}; /* 4214 codes: parts of 4096 and a tail */
  int32_t z0 = dt == MI_DTYPE_UINT8 ? 0 : -128;
  int32_t in[5] = {input(g, "x", dt, 3, d), f32c(g, "xs", 0.0625f), codec(g, "xz", dt, z0 + 120),
                   f32c(g, "ys", dt == MI_DTYPE_UINT8 ? 1.0f / 256.0f : 0.03f), codec(g, "yz", dt, z0 + 5)};
  int32_t y = out(g, "y"), n = node(g, op, 5, in, 1, &y, 1);
  if (!strcmp(op, "QLinearLeakyRelu")) mi_node_set_float(g, n, "alpha", 0.2f);
  char name[64];
  snprintf(name, sizeof name, "%s %s", op, dt == MI_DTYPE_UINT8 ? "u8" : "s8");
  run_case(g, name, 0);
}

static void concat(int32_t dt) {
  mi_graph_t *g = graph(13);
  int64_t da[3] = {2, 3, 5}, db[3] = {2, 4, 5}, dc[3] = {2, 1, 5};
  int32_t z0 = dt == MI_DTYPE_UINT8 ? 0 : -128;
  int32_t in[11] = {f32c(g, "ys", 0.05f), codec(g, "yz", dt, z0 + 128), input(g, "a", dt, 3, da), f32c(g, "as", 0.05f),
                    codec(g, "az", dt, z0 + 128), /* the output's parameters: copied */
                    input(g, "b", dt, 3, db), f32c(g, "bs", 0.025f), codec(g, "bz", dt, z0 + 7), input(g, "c", dt, 3, dc),
                    f32c(g, "cs", 0.2f), codec(g, "cz", dt, z0 + 200)};
  int32_t y = out(g, "y");
  mi_node_set_int(g, node(g, "QLinearConcat", 11, in, 1, &y, 1), "axis", -2);
  run_case(g, dt == MI_DTYPE_UINT8 ? "QLinearConcat u8" : "QLinearConcat s8", 0);
}

static void softmax(int32_t dt, int64_t opset, int64_t axis) {
  mi_graph_t *g = graph(13);
  int64_t d[3] = {3, 5, 16};
  int32_t z0 = dt == MI_DTYPE_UINT8 ? 0 : -128;
  int32_t in[5] = {input(g, "x", dt, 3, d), f32c(g, "xs", 0.04f), codec(g, "xz", dt, z0 + 100), f32c(g, "ys", 1.0f / 256.0f),
                   codec(g, "yz", dt, z0)};
  int32_t y = out(g, "y"), n = node(g, "QLinearSoftmax", 5, in, 1, &y, 1);
  mi_node_set_int(g, n, "opset", opset);
  mi_node_set_int(g, n, "axis", axis);
  char name[64];
  snprintf(name, sizeof name, "QLinearSoftmax %s opset %lld axis %lld", dt == MI_DTYPE_UINT8 ? "u8" : "s8",
           (long long)opset, (long long)axis);
  run_case(g, name, 0);
}

/* QGemm [M,K] x [K,N] (or B [N,K] with transB); per_col: B's scales and zero points per column;
 * c_rows: C of M values ([M,1]) instead of N; coded: y_scale / y_zero_point (else float out);
 * runtime_b: B a graph input (refused). */
static void qgemm(int32_t adt, int32_t bdt, int tb, int per_col, int c_rows, int coded, float alpha, int runtime_b) {
  mi_graph_t *g = graph(13);
  int64_t M = 5, K = 37, N = 11, ad[2] = {M, K}, bd[2] = {tb ? N : K, tb ? K : N}, cd[2] = {M, 1};
  float sb[11];
  uint8_t zb[11];
  for (int j = 0; j < N; j++) {
    sb[j] = 0.01f + 0.002f * (float)j;
    zb[j] = (uint8_t)(bdt == MI_DTYPE_UINT8 ? 120 + j : j - 5);
  }
  int32_t in[9] = {input(g, "a", adt, 2, ad), f32c(g, "as", 0.02f), codec(g, "az", adt, adt == MI_DTYPE_UINT8 ? 128 : 3),
                   runtime_b ? input(g, "b", bdt, 2, bd) : constant(g, "b", bdt, 2, bd, NULL),
                   per_col ? constant(g, "bs", MI_DTYPE_FLOAT32, 1, &N, sb) : f32c(g, "bs", 0.013f),
                   per_col ? constant(g, "bz", bdt, 1, &N, zb) : codec(g, "bz", bdt, bdt == MI_DTYPE_UINT8 ? 128 : 0),
                   c_rows ? constant(g, "c", MI_DTYPE_INT32, 2, cd, NULL) : constant(g, "c", MI_DTYPE_INT32, 1, &N, NULL),
                   coded ? f32c(g, "ys", 0.04f) : -1, coded ? codec(g, "yz", adt, adt == MI_DTYPE_UINT8 ? 100 : -20) : -1};
  int32_t y = out(g, "y"), n = node(g, "QGemm", coded ? 9 : 7, in, 1, &y, 1);
  mi_node_set_int(g, n, "transB", tb);
  if (alpha != 1.0f) mi_node_set_float(g, n, "alpha", alpha);
  char name[128];
  snprintf(name, sizeof name, "QGemm %s x %s%s%s%s%s alpha %g%s", adt == MI_DTYPE_UINT8 ? "u8" : "s8",
           bdt == MI_DTYPE_UINT8 ? "u8" : "s8", tb ? " transB" : "", per_col ? " per column" : "",
           c_rows ? " C [M,1]" : "", coded ? "" : " float out", (double)alpha, runtime_b ? " runtime B" : "");
  run_case(g, name, runtime_b);
}

/* QLinearAveragePool: cfg 0 3x3 stride 2 pads 1; 1 with count_include_pad and ceil_mode; 2 NHWC
 * 2x2 stride 2; 3 the whole input (global path); 4 1-D with pads. */
static void avgpool(int32_t dt, int cfg) {
  mi_graph_t *g = graph(13);
  static const int64_t dims[5][4] = {{1, 3, 9, 11}, {1, 3, 9, 11}, {1, 8, 10, 3}, {2, 4, 5, 6}, {1, 2, 17, 0}};
  int32_t z0 = dt == MI_DTYPE_UINT8 ? 0 : -128, rank = cfg == 4 ? 3 : 4;
  int32_t in[5] = {input(g, "x", dt, rank, dims[cfg]), f32c(g, "xs", 0.03f), codec(g, "xz", dt, z0 + 100), f32c(g, "ys", 0.02f),
                   codec(g, "yz", dt, z0 + 90)};
  int32_t y = out(g, "y"), n = node(g, "QLinearAveragePool", 5, in, 1, &y, 1);
  static const int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1}, p10[4] = {1, 1, 0, 0};
  static const int64_t kg[2] = {5, 6}, k1[1] = {3}, p11[2] = {1, 1};
  mi_node_set_ints(g, n, "kernel_shape", cfg == 4 ? 1 : 2, cfg <= 1 ? k3 : cfg == 2 ? k2
                                                                       : cfg == 3   ? kg
                                                                                    : k1);
  if (cfg <= 2) mi_node_set_ints(g, n, "strides", 2, s2);
  if (cfg == 0) mi_node_set_ints(g, n, "pads", 4, p1);
  if (cfg == 1) {
    mi_node_set_ints(g, n, "pads", 4, p10);
    mi_node_set_int(g, n, "count_include_pad", 1);
    mi_node_set_int(g, n, "ceil_mode", 1);
  }
  if (cfg == 2) mi_node_set_int(g, n, "channels_last", 1);
  if (cfg == 4) mi_node_set_ints(g, n, "pads", 2, p11);
  char name[64];
  snprintf(name, sizeof name, "QLinearAveragePool %s case %d", dt == MI_DTYPE_UINT8 ? "u8" : "s8", cfg);
  run_case(g, name, 0);
}

static void avgpool_cases(void) {
  for (int cfg = 0; cfg < 5; cfg++) {
    avgpool(MI_DTYPE_UINT8, cfg);
    avgpool(MI_DTYPE_INT8, cfg);
  }
}

static void lut_cases(void) {
  lut("QLinearSigmoid", MI_DTYPE_UINT8);
  lut("QLinearSigmoid", MI_DTYPE_INT8);
  lut("QLinearLeakyRelu", MI_DTYPE_UINT8);
  lut("QLinearLeakyRelu", MI_DTYPE_INT8);
}

static void concat_cases(void) {
  concat(MI_DTYPE_UINT8);
  concat(MI_DTYPE_INT8);
}

static void softmax_cases(void) {
  for (int32_t dt = 0; dt < 2; dt++) {
    int32_t t = dt ? MI_DTYPE_INT8 : MI_DTYPE_UINT8;
    softmax(t, 13, -1);
    softmax(t, 13, 1);
    softmax(t, 12, 1);
  }
}

static void qgemm_cases(void) {
  qgemm(MI_DTYPE_UINT8, MI_DTYPE_UINT8, 0, 0, 0, 1, 1.0f, 0);
  qgemm(MI_DTYPE_UINT8, MI_DTYPE_INT8, 1, 1, 0, 1, 1.0f, 0);
  qgemm(MI_DTYPE_UINT8, MI_DTYPE_INT8, 1, 1, 1, 0, 1.0f, 0);
  qgemm(MI_DTYPE_INT8, MI_DTYPE_INT8, 0, 0, 1, 1, 0.5f, 0);
  qgemm(MI_DTYPE_UINT8, MI_DTYPE_UINT8, 0, 0, 0, 1, 1.0f, 1);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(lut_cases),
    TU_CASE(concat_cases),
    TU_CASE(softmax_cases),
    TU_CASE(qgemm_cases),
    TU_CASE(avgpool_cases),
};

TU_MAIN(setup, teardown)
