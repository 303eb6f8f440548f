/* test_blis_qmove.c - blis-cpu's kernels for the data-movement ops of quantized models on INT8 /
 * UINT8 codes: MaxPool (blis_qpool.c: pads, strides, dilations, ceil_mode, auto_pad, 1-D, the
 * 2-wide stride-2 byte path), nearest Resize and Upsample (blis_qresize.c: every coordinate mode,
 * nearest modes, up and down, sizes, several axes) and com.microsoft QLinearWhere (blis_qwhere.c:
 * broadcast runtime and constant conditions, requantized and copied operands). Each graph runs in a
 * session on blis-cpu:0 with host fallback off, and every output must equal mi_ref_run's byte for
 * byte; a MaxPool with an Indices output and a linear Resize of codes are refused by blis-cpu. */
#include "test_blis_qops_util.h"

static const char *dtn(int32_t dt) { return dt == MI_DTYPE_UINT8 ? "u8" : "s8"; }

/* MaxPool cfg: 0 3x3 stride 2 pads 1; 1 2x2 stride 2 (the byte path); 2 3x3 stride 2 dilations 2
 * pads 1,0,2,1 ceil_mode; 3 SAME_UPPER 3x3 stride 2; 4 1-D kernel 3 stride 2 pads 1 ceil_mode;
 * 5 1x2 stride 1x2; 6 2x2 stride 2 over an odd plane with ceil_mode; 7 with Indices (refused). */
static void maxpool(int32_t dt, int cfg) {
  mi_graph_t *g = graph(13);
  static const int64_t dims[8][4] = {{1, 3, 9, 11}, {2, 3, 16, 70}, {1, 4, 13, 12}, {1, 2, 10, 9}, {2, 5, 23, 0}, {1, 6, 8, 40}, {1, 3, 7, 9}, {1, 2, 4, 4}};
  int32_t rank = cfg == 4 ? 3 : 4, x = input(g, "x", dt, rank, dims[cfg]), y[2] = {out(g, "y"), -1};
  if (cfg == 7) y[1] = out(g, "idx");
  int32_t n = node(g, "MaxPool", 1, &x, cfg == 7 ? 2 : 1, y, 0);
  static const int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, k12[2] = {1, 2}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  static const int64_t d2[2] = {2, 2}, pa[4] = {1, 0, 2, 1}, k1[1] = {3}, s1[1] = {2}, p11[2] = {1, 1};
  switch (cfg) {
  case 0: mi_node_set_ints(g, n, "kernel_shape", 2, k3), mi_node_set_ints(g, n, "strides", 2, s2), mi_node_set_ints(g, n, "pads", 4, p1); break;
  case 1:
  case 7: mi_node_set_ints(g, n, "kernel_shape", 2, k2), mi_node_set_ints(g, n, "strides", 2, s2); break;
  case 2:
    mi_node_set_ints(g, n, "kernel_shape", 2, k3), mi_node_set_ints(g, n, "strides", 2, s2);
    mi_node_set_ints(g, n, "dilations", 2, d2), mi_node_set_ints(g, n, "pads", 4, pa), mi_node_set_int(g, n, "ceil_mode", 1);
    break;
  case 3:
    mi_node_set_ints(g, n, "kernel_shape", 2, k3), mi_node_set_ints(g, n, "strides", 2, s2);
    mi_node_set_string(g, n, "auto_pad", "SAME_UPPER");
    break;
  case 4:
    mi_node_set_ints(g, n, "kernel_shape", 1, k1), mi_node_set_ints(g, n, "strides", 1, s1), mi_node_set_ints(g, n, "pads", 2, p11);
    mi_node_set_int(g, n, "ceil_mode", 1);
    break;
  case 5: mi_node_set_ints(g, n, "kernel_shape", 2, k12), mi_node_set_ints(g, n, "strides", 2, k12); break;
  case 6:
    mi_node_set_ints(g, n, "kernel_shape", 2, k2), mi_node_set_ints(g, n, "strides", 2, s2), mi_node_set_int(g, n, "ceil_mode", 1);
    break;
  }
  char name[64];
  snprintf(name, sizeof name, "MaxPool %s case %d", dtn(dt), cfg);
  run_case(g, name, cfg == 7);
}

/* Resize (opset 13 unless said) of codes x [1,3,5,7] (cfg 6: [2,3,4,6]): cfg 0 scales 1,1,2,2
 * asymmetric floor; 1 sizes 1,3,8,13 half_pixel round_prefer_floor (the default); 2 scales
 * 1,1,0.5,0.6 align_corners round_prefer_ceil; 3 scales 1,1,3,1.5 tf_half_pixel_for_nn ceil; 4
 * pytorch_half_pixel round_prefer_ceil scales 1,1,2,3; 5 Upsample-9 scales 1,1,2,2; 6 sizes
 * 4,3,8,6 (three axes, no fused rows); 7 a 1-D resize of the last axis of [2,3,9] by 1.5; 8 linear
 * (refused). */
static void resize(int32_t dt, int cfg) {
  mi_graph_t *g = graph(cfg == 5 ? 9 : 13);
  static const int64_t xd[4] = {1, 3, 5, 7}, xd6[4] = {2, 3, 4, 6}, xd7[3] = {2, 3, 9}, four = 4, three = 3;
  static const float sc[9][4] = {{1, 1, 2, 2}, {0}, {1, 1, 0.5f, 0.6f}, {1, 1, 3, 1.5f}, {1, 1, 2, 3}, {1, 1, 2, 2}, {0}, {1, 1, 1.5f}, {1, 1, 2, 2}};
  static const int64_t sz1[4] = {1, 3, 8, 13}, sz6[4] = {4, 3, 8, 6};
  int32_t x = input(g, "x", dt, cfg == 7 ? 3 : 4, cfg == 6 ? xd6 : cfg == 7 ? xd7
                                                                            : xd),
          y = out(g, "y"), n;
  if (cfg == 5) {
    int32_t in[2] = {x, constant(g, "scales", MI_DTYPE_FLOAT32, 1, &four, sc[cfg])};
    n = node(g, "Upsample", 2, in, 1, &y, 0);
  } else {
    int32_t in[4] = {x, -1, -1, -1};
    if (cfg == 1 || cfg == 6) in[3] = constant(g, "sizes", MI_DTYPE_INT64, 1, &four, cfg == 1 ? sz1 : sz6);
    else
      in[2] = constant(g, "scales", MI_DTYPE_FLOAT32, 1, cfg == 7 ? &three : &four, sc[cfg]);
    n = node(g, "Resize", 4, in, 1, &y, 0);
  }
  static const char *const ct[9] = {"asymmetric", NULL, "align_corners", "tf_half_pixel_for_nn", "pytorch_half_pixel",
                                    NULL, "half_pixel", "asymmetric", "asymmetric"};
  static const char *const nm[9] = {"floor", NULL, "round_prefer_ceil", "ceil", "round_prefer_ceil", NULL, "floor", "round_prefer_floor", NULL};
  if (ct[cfg]) mi_node_set_string(g, n, "coordinate_transformation_mode", ct[cfg]);
  if (nm[cfg]) mi_node_set_string(g, n, "nearest_mode", nm[cfg]);
  if (cfg == 8) mi_node_set_string(g, n, "mode", "linear");
  char name[64];
  snprintf(name, sizeof name, "Resize %s case %d", dtn(dt), cfg);
  run_case(g, name, cfg == 8);
}

/* QLinearWhere: cfg 0 condition [2,1,33] (runtime), X [3,33], Y [2,3,1], requantized; 1 a constant
 * condition [4], X and Y [5,4] with Z's parameters (copied); 2 X a scalar, Y [6,70]. */
static void qwhere(int32_t dt, int cfg) {
  mi_graph_t *g = graph(13);
  static const int64_t cd[3][3] = {{2, 1, 33}, {4}, {6, 70}}, xd[3][2] = {{3, 33}, {5, 4}, {0}}, yd[3][3] = {{2, 3, 1}, {5, 4}, {6, 70}};
  static const int32_t cr[3] = {3, 1, 2}, xr[3] = {2, 2, 0}, yr[3] = {3, 2, 2};
  int32_t z0 = dt == MI_DTYPE_UINT8 ? 0 : -128;
  int32_t x = input(g, "x", dt, xr[cfg], xd[cfg]);
  int32_t c = cfg == 1 ? constant(g, "c", MI_DTYPE_BOOL, 1, cd[1], (const uint8_t[4]){1, 0, 0, 1})
                       : input(g, "c", MI_DTYPE_BOOL, cr[cfg], cd[cfg]);
  int32_t in[9] = {c, x, f32c(g, "xs", cfg == 1 ? 0.05f : 0.031f), codec(g, "xz", dt, z0 + (cfg == 1 ? 128 : 100)),
                   input(g, "y", dt, yr[cfg], yd[cfg]), f32c(g, "ys", cfg == 1 ? 0.05f : 0.07f),
                   codec(g, "yz", dt, z0 + (cfg == 1 ? 128 : 20)), f32c(g, "zs", 0.05f), codec(g, "zz", dt, z0 + 128)};
  int32_t z = out(g, "z");
  node(g, "QLinearWhere", 9, in, 1, &z, 1);
  char name[64];
  snprintf(name, sizeof name, "QLinearWhere %s case %d", dtn(dt), cfg);
  run_case(g, name, 0);
}

static void maxpool_cases(void) {
  for (int cfg = 0; cfg < 8; cfg++) {
    maxpool(MI_DTYPE_UINT8, cfg);
    maxpool(MI_DTYPE_INT8, cfg);
  }
  g_threads = 2; /* planes split across two threads */
  maxpool(MI_DTYPE_INT8, 1);
  g_threads = 0;
}

static void resize_cases(void) {
  for (int cfg = 0; cfg < 9; cfg++) {
    resize(MI_DTYPE_UINT8, cfg);
    resize(MI_DTYPE_INT8, cfg);
  }
}

static void where_cases(void) {
  for (int cfg = 0; cfg < 3; cfg++) {
    qwhere(MI_DTYPE_UINT8, cfg);
    qwhere(MI_DTYPE_INT8, cfg);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(maxpool_cases),
    TU_CASE(resize_cases),
    TU_CASE(where_cases),
};

TU_MAIN(setup, teardown)
