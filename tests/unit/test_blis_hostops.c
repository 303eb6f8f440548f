/* test_blis_hostops.c - the ops blis-cpu took over from the host (blis_elems.c, blis_bitwise.c,
 * blis_detroi.c, 5-D GridSample, N-D Col2Im) in sessions on blis-cpu:0 with host fallback off,
 * against mi_ref_run to the bit: GatherElements (the last, first and a middle axis, indices
 * smaller than the data off the axis, negative indices, INT64 / INT32 indices, FLOAT32, INT64 and
 * UINT8 data), ScatterElements on INT64, INT32, UINT8 data, CenterCropPad (crop and pad together, axes, INT64), EyeLike (every k side and
 * output type), BitwiseAnd/Or/Xor/Not on INT8, UINT8, INT32, INT64 with broadcasting, BitShift
 * (shifts past the width), Det (singular, pivoting, a 20 x 20), MaxRoiPool, 5-D GridSample (linear
 * and nearest, every padding, align_corners, NaN and far points) at each SIMD level, 1-D and 3-D
 * Col2Im; a TopK -> GatherElements detector tail with no host step; run-time index errors naming
 * the node; INT64 and BOOL masks moved (Unsqueeze, Reshape, Flatten, Squeeze, Identity) and Cast
 * to FLOAT. */
#include <math.h>

#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 16;
}

static float rnd(uint64_t *s) {
  return (float)(next(s) & 0xffff) / 32768.0f - 1.0f;
}

typedef struct tcase {
  mi_graph_t *g;
  mi_array_t *in[6];
  int32_t nin;
  uint64_t seed;
} tcase_t;

static void tc_init(tcase_t *c, int64_t opset) {
  memset(c, 0, sizeof *c);
  REQUIRE((c->g = mi_graph_create("t")));
  c->g->opset = opset;
  c->seed = 7;
}

/* A graph input of dtype dt: vals, else random (FLOAT32 in [-1, 1) * scale; integers: raw bits, or
 * in [lo, hi] where lo < hi). */
static int32_t tc_input(tcase_t *c, const char *name, int32_t dt, int rank, const int64_t *dims, float scale, int64_t lo,
                        int64_t hi, const void *vals) {
  int32_t t = mi_graph_add_tensor(c->g, name, dt, rank, dims);
  mi_array_t *a = mi_array_create(dt, rank, dims);
  REQUIRE(a && t >= 0 && c->nin < 6);
  if (vals) memcpy(a->data, vals, a->nbytes);
  else
    for (int64_t i = 0; i < mi_array_numel(a); i++) {
      uint64_t b = next(&c->seed);
      int64_t v = lo < hi ? lo + (int64_t)(b % (uint64_t)(hi - lo + 1)) : (int64_t)(b ^ (b << 40));
      switch (dt) {
      case MI_DTYPE_FLOAT32: ((float *)a->data)[i] = rnd(&c->seed) * scale; break;
      case MI_DTYPE_INT64: ((int64_t *)a->data)[i] = v; break;
      case MI_DTYPE_INT32: ((int32_t *)a->data)[i] = (int32_t)v; break;
      default: ((uint8_t *)a->data)[i] = (uint8_t)v;
      }
    }
  mi_graph_add_input(c->g, t);
  c->in[c->nin++] = a;
  return t;
}

static int32_t tc_f32(tcase_t *c, const char *name, int rank, const int64_t *dims, float scale) {
  return tc_input(c, name, MI_DTYPE_FLOAT32, rank, dims, scale, 0, 0, NULL);
}

static int32_t tc_node(tcase_t *c, const char *op, int nin, const int32_t *ins, int32_t *y) {
  *y = mi_graph_add_tensor(c->g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_output(c->g, *y);
  return mi_graph_add_node(c->g, op, "n0", nin, ins, 1, y);
}

static int same_array(const mi_array_t *a, const mi_array_t *b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return 0;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return 0;
  if (a->dtype != MI_DTYPE_FLOAT32) return memcmp(a->data, b->data, a->nbytes) == 0;
  for (int64_t i = 0; i < mi_array_numel(a); i++) { /* -0 and +0 alike; NaN where the reference has NaN */
    float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
    if (!(x == y || (x != x && y != y))) return 0;
  }
  return 1;
}

/* Runs the case on blis-cpu:0 (no host step allowed) and on the reference: MI_OK when the output
 * has the reference's dtype, shape and bits. Frees the case. */
static int32_t tc_run(tcase_t *c, mi_error_t *err) {
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *dv = NULL, *rv = NULL;
  int32_t rc = mi_graph_infer_shapes(c->g, err);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0;
  if (rc == MI_OK) rc = mi_session_create(c->g, g_blis, 0, &o, &s, err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)c->in, c->nin, &dv, 1, err);
  if (rc == MI_OK && mi_session_fallback_count(s) != 0) {
    snprintf(err->message, sizeof err->message, "%d node(s) ran on the host", mi_session_fallback_count(s));
    rc = MI_ERR_INTERNAL;
  }
  if (rc == MI_OK) rc = mi_ref_run(c->g, (const mi_array_t *const *)c->in, c->nin, &rv, 1, err);
  if (rc == MI_OK && !same_array(dv, rv)) {
    snprintf(err->message, sizeof err->message, "blis-cpu's output is not the reference's (rank %d, %lld values)",
             dv ? (int)dv->rank : -1, dv ? (long long)mi_array_numel(dv) : -1ll);
    rc = MI_ERR_INTERNAL;
  }
  mi_session_destroy(s);
  for (int32_t i = 0; i < c->nin; i++) mi_array_destroy(c->in[i]);
  mi_array_destroy(dv);
  mi_array_destroy(rv);
  mi_graph_destroy(c->g);
  return rc;
}

static void expect_same(tcase_t *c, const char *name) {
  mi_error_t err = {0, ""};
  int32_t rc = tc_run(c, &err);
  CHECK(rc == MI_OK, "%s: %s", name, err.message);
}

static void expect_error(tcase_t *c, const char *name, const char *what) {
  mi_error_t err = {0, ""};
  int32_t rc = tc_run(c, &err);
  CHECK(rc != MI_OK && strstr(err.message, what) && strstr(err.message, "n0"), "%s: status %d (%s), expected '%s' naming n0",
        name, rc, err.message, what);
}

/* ---- GatherElements */

static void ge_case(const char *name, int32_t dt, int rank, const int64_t *xd, const int64_t *id, int64_t axis, int32_t idt) {
  tcase_t c;
  int32_t in[2], y;
  int64_t len = xd[axis < 0 ? axis + rank : axis];
  tc_init(&c, 13);
  in[0] = tc_input(&c, "x", dt, rank, xd, 3.f, 0, 0, NULL);
  in[1] = tc_input(&c, "i", idt, rank, id, 0, -len, len - 1, NULL); /* negative ones too */
  mi_node_set_int(c.g, tc_node(&c, "GatherElements", 2, in, &y), "axis", axis);
  expect_same(&c, name);
}

static void gather_elements(void) {
  ge_case("GatherElements last axis", MI_DTYPE_FLOAT32, 3, (int64_t[]){3, 5, 40}, (int64_t[]){3, 5, 1100}, -1, MI_DTYPE_INT64);
  ge_case("GatherElements axis 0", MI_DTYPE_FLOAT32, 2, (int64_t[]){6, 33}, (int64_t[]){4, 33}, 0, MI_DTYPE_INT64);
  ge_case("GatherElements middle axis, smaller off the axis", MI_DTYPE_FLOAT32, 4, (int64_t[]){2, 7, 5, 9},
          (int64_t[]){2, 3, 4, 6}, 1, MI_DTYPE_INT32);
  ge_case("GatherElements INT64 data", MI_DTYPE_INT64, 3, (int64_t[]){2, 4, 30}, (int64_t[]){2, 4, 30}, 2, MI_DTYPE_INT64);
  ge_case("GatherElements UINT8 data axis 1", MI_DTYPE_UINT8, 3, (int64_t[]){2, 9, 70}, (int64_t[]){2, 5, 70}, 1,
          MI_DTYPE_INT64);
  ge_case("GatherElements rank 1", MI_DTYPE_FLOAT32, 1, (int64_t[]){50}, (int64_t[]){20}, 0, MI_DTYPE_INT32);
  /* an index past the axis at run time: a one-line error naming the node */
  tcase_t c;
  int64_t xd[2] = {2, 4}, bad[4] = {0, 1, 2, 4};
  int32_t in[2], y;
  tc_init(&c, 13);
  in[0] = tc_f32(&c, "x", 2, xd, 1.f);
  in[1] = tc_input(&c, "i", MI_DTYPE_INT64, 2, (int64_t[]){1, 4}, 0, 0, 0, bad);
  mi_node_set_int(c.g, tc_node(&c, "GatherElements", 2, in, &y), "axis", 1);
  expect_error(&c, "GatherElements index 4 of 4", "out of range");
}

/* ScatterElements on integer data: INT64 add and INT32 max with repeated indices, UINT8 replaced
 * (the last of repeated ones wins), axis 1. */
static void scatter_int(void) {
  static const int32_t dts[3] = {MI_DTYPE_INT64, MI_DTYPE_INT32, MI_DTYPE_UINT8};
  static const char *const reds[3] = {"add", "max", "none"};
  for (int k = 0; k < 3; k++) {
    tcase_t c;
    int32_t in[3], y, node;
    char name[64];
    tc_init(&c, 18);
    in[0] = tc_input(&c, "x", dts[k], 2, (int64_t[]){5, 40}, 0, -100, 100, NULL);
    in[1] = tc_input(&c, "i", MI_DTYPE_INT64, 2, (int64_t[]){5, 30}, 0, -40, 39, NULL);
    in[2] = tc_input(&c, "u", dts[k], 2, (int64_t[]){5, 30}, 0, -100, 100, NULL);
    node = tc_node(&c, "ScatterElements", 3, in, &y);
    mi_node_set_int(c.g, node, "axis", 1);
    mi_node_set_string(c.g, node, "reduction", reds[k]);
    snprintf(name, sizeof name, "ScatterElements dtype %d reduction %s", (int)dts[k], reds[k]);
    expect_same(&c, name);
  }
}

/* ---- CenterCropPad, EyeLike */

static void ccp_case(const char *name, int32_t dt, const int64_t *shape, int32_t ns, const int64_t *axes) {
  tcase_t c;
  int64_t xd[4] = {2, 3, 7, 6};
  int32_t in[2], y, node;
  tc_init(&c, 18);
  in[0] = tc_input(&c, "x", dt, 4, xd, 2.f, 0, 0, NULL);
  in[1] = mi_graph_add_const_i64(c.g, "s", ns, shape);
  node = tc_node(&c, "CenterCropPad", 2, in, &y);
  if (axes) mi_node_set_ints(c.g, node, "axes", ns, axes);
  expect_same(&c, name);
}

static void crop_eye(void) {
  ccp_case("CenterCropPad crop and pad", MI_DTYPE_FLOAT32, (int64_t[]){2, 3, 4, 9}, 4, NULL);
  ccp_case("CenterCropPad odd axes", MI_DTYPE_FLOAT32, (int64_t[]){5, 3}, 2, (int64_t[]){2, 3});
  ccp_case("CenterCropPad INT64 pad all", MI_DTYPE_INT64, (int64_t[]){3, 5, 10, 11}, 4, NULL);
  ccp_case("CenterCropPad UINT8 channel crop", MI_DTYPE_UINT8, (int64_t[]){1}, 1, (int64_t[]){-3});
  static const int64_t onnx[6] = {1, 7, 6, 2, 3, 9}; /* FLOAT, INT64, INT32, UINT8, INT8, BOOL */
  static const int64_t ks[5] = {0, 2, -1, -7, 9};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 5; j++) {
      tcase_t c;
      int32_t in, y, node;
      char name[64];
      tc_init(&c, 22);
      in = tc_f32(&c, "x", 2, (int64_t[]){5, 7}, 1.f);
      node = tc_node(&c, "EyeLike", 1, &in, &y);
      mi_node_set_int(c.g, node, "dtype", onnx[i]);
      mi_node_set_int(c.g, node, "k", ks[j]);
      snprintf(name, sizeof name, "EyeLike dtype %lld k %lld", (long long)onnx[i], (long long)ks[j]);
      expect_same(&c, name);
    }
}

/* ---- the bitwise ops and BitShift */

static void bitwise(void) {
  static const char *const ops[3] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
  static const int32_t dts[4] = {MI_DTYPE_INT8, MI_DTYPE_UINT8, MI_DTYPE_INT32, MI_DTYPE_INT64};
  for (int t = 0; t < 4; t++) {
    for (int o = 0; o < 3; o++)
      for (int b = 0; b < 3; b++) { /* same shape; [3, 1, 5] x [4, 5]; a scalar against a row */
        static const int64_t ad[3][3] = {{3, 4, 50}, {3, 1, 5}, {1, 1, 1}}, bd[3][3] = {{3, 4, 50}, {1, 4, 5}, {1, 1, 77}};
        tcase_t c;
        int32_t in[2], y;
        char name[64];
        tc_init(&c, 18);
        in[0] = tc_input(&c, "a", dts[t], 3, ad[b], 0, 0, 0, NULL);
        in[1] = tc_input(&c, "b", dts[t], b == 1 ? 2 : 3, b == 1 ? bd[b] + 1 : bd[b], 0, 0, 0, NULL);
        tc_node(&c, ops[o], 2, in, &y);
        snprintf(name, sizeof name, "%s dtype %d form %d", ops[o], (int)dts[t], b);
        expect_same(&c, name);
      }
    tcase_t c;
    int32_t in, y;
    tc_init(&c, 18);
    in = tc_input(&c, "a", dts[t], 2, (int64_t[]){7, 300}, 0, 0, 0, NULL);
    tc_node(&c, "BitwiseNot", 1, &in, &y);
    expect_same(&c, "BitwiseNot");
  }
  for (int d = 0; d < 2; d++)
    for (int b = 0; b < 2; b++) { /* shifts 0..12 (past the width: 0), broadcast along rows or not */
      tcase_t c;
      int32_t in[2], y;
      tc_init(&c, 11);
      in[0] = tc_input(&c, "a", MI_DTYPE_UINT8, 2, (int64_t[]){6, 130}, 0, 0, 0, NULL);
      in[1] = tc_input(&c, "s", MI_DTYPE_UINT8, b ? 1 : 2, b ? (int64_t[]){130} : (int64_t[]){6, 130}, 0, 0, 12, NULL);
      mi_node_set_string(c.g, tc_node(&c, "BitShift", 2, in, &y), "direction", d ? "RIGHT" : "LEFT");
      expect_same(&c, d ? "BitShift RIGHT" : "BitShift LEFT");
    }
}

/* ---- Det, MaxRoiPool, Col2Im */

static void det_roi_col2im(void) {
  tcase_t c;
  int32_t in[3], y, node;
  static const int64_t ns[3] = {3, 5, 20};
  for (int k = 0; k < 3; k++) {
    tc_init(&c, 11);
    in[0] = tc_f32(&c, "x", 3, (int64_t[]){4, ns[k], ns[k]}, 2.f);
    float *m = c.in[0]->data;
    for (int64_t j = 0; j < ns[k]; j++) m[ns[k] + j] = 2 * m[j]; /* the first matrix singular */
    tc_node(&c, "Det", 1, in, &y);
    expect_same(&c, "Det");
  }
  static const float rois[25] = {0, 1.2f, 0.7f, 7.6f, 8.1f, 1, 0, 0, 11, 9, 1, 3.5f, 2.5f, 4.4f, 3.3f, 0, -2, -1, 4, 5, 1, 6, 4, 30, 20};
  for (int k = 0; k < 2; k++) {
    tc_init(&c, 7);
    in[0] = tc_f32(&c, "x", 4, (int64_t[]){2, 3, 10, 12}, 2.f);
    in[1] = tc_input(&c, "r", MI_DTYPE_FLOAT32, 2, (int64_t[]){5, 5}, 0, 0, 0, rois);
    node = tc_node(&c, "MaxRoiPool", 2, in, &y);
    mi_node_set_ints(c.g, node, "pooled_shape", 2, k ? (int64_t[]){3, 4} : (int64_t[]){2, 2});
    if (k) mi_node_set_float(c.g, node, "spatial_scale", 0.5f);
    expect_same(&c, "MaxRoiPool");
  }
  static const float bad[5] = {2, 0, 0, 3, 3};
  tc_init(&c, 7);
  in[0] = tc_f32(&c, "x", 4, (int64_t[]){2, 3, 10, 12}, 2.f);
  in[1] = tc_input(&c, "r", MI_DTYPE_FLOAT32, 2, (int64_t[]){1, 5}, 0, 0, 0, bad);
  mi_node_set_ints(c.g, tc_node(&c, "MaxRoiPool", 2, in, &y), "pooled_shape", 2, (int64_t[]){2, 2});
  expect_error(&c, "MaxRoiPool batch index 2 of 2", "batch index");
  /* 1-D; 3-D with strides, pads and dilations (the column rows' count L worked out by hand) */
  tc_init(&c, 18);
  in[0] = tc_f32(&c, "x", 3, (int64_t[]){2, 6, 9}, 1.f); /* img 11, blk 3, stride 1, pads 0: L 9 */
  in[1] = mi_graph_add_const_i64(c.g, "i", 1, (int64_t[]){11});
  in[2] = mi_graph_add_const_i64(c.g, "b", 1, (int64_t[]){3});
  tc_node(&c, "Col2Im", 3, in, &y);
  expect_same(&c, "Col2Im 1-D");
  tc_init(&c, 18);
  /* img 5x6x4, blk 2x3x2, strides 1,2,1, pads 1,0,1 / 0,1,0, dilations 2,1,1:
   * L = (5+1-3)/1+1 = 4, (6+1-3)/2+1 = 3, (4+1-2)/1+1 = 4: 48 */
  in[0] = tc_f32(&c, "x", 3, (int64_t[]){2, 2 * 12, 48}, 1.f);
  in[1] = mi_graph_add_const_i64(c.g, "i", 3, (int64_t[]){5, 6, 4});
  in[2] = mi_graph_add_const_i64(c.g, "b", 3, (int64_t[]){2, 3, 2});
  node = tc_node(&c, "Col2Im", 3, in, &y);
  mi_node_set_ints(c.g, node, "strides", 3, (int64_t[]){1, 2, 1});
  mi_node_set_ints(c.g, node, "pads", 6, (int64_t[]){1, 0, 1, 0, 1, 0});
  mi_node_set_ints(c.g, node, "dilations", 3, (int64_t[]){2, 1, 1});
  expect_same(&c, "Col2Im 3-D");
}

/* ---- 5-D GridSample at each SIMD level */

static void gs5_at_level(void) {
  static const char *const modes[2] = {"linear", "nearest"}, *const pads[3] = {"zeros", "border", "reflection"};
  for (int m = 0; m < 2; m++)
    for (int pd = 0; pd < 3; pd++)
      for (int64_t a = 0; a < 2; a++) {
        tcase_t c;
        int32_t in[2], y, node;
        char name[96];
        tc_init(&c, 20);
        in[0] = tc_f32(&c, "x", 5, (int64_t[]){2, 3, 4, 5, 6}, 2.f);
        in[1] = tc_f32(&c, "g", 5, (int64_t[]){2, 3, 7, 11, 3}, 1.3f);
        ((float *)c.in[1]->data)[7] = NAN;
        ((float *)c.in[1]->data)[11] = 1e9f;
        node = tc_node(&c, "GridSample", 2, in, &y);
        mi_node_set_string(c.g, node, "mode", modes[m]);
        mi_node_set_string(c.g, node, "padding_mode", pads[pd]);
        mi_node_set_int(c.g, node, "align_corners", a);
        snprintf(name, sizeof name, "5-D GridSample %s %s align %lld", modes[m], pads[pd], (long long)a);
        expect_same(&c, name);
      }
}

static void gridsample5d(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  mi_plugin_t *keep = g_blis;
  mi_registry_t *keep_r = r;
  mi_error_t err = {0, ""};
  for (int lv = 0; lv < 3; lv++) {
    uint32_t dev = 0;
    if (caps[lv]) setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    else
      unsetenv("MI_BLIS_MAX_SIMD");
    r = mi_registry_create();
    REQUIRE(r && tu_scan_plugins(r, &err) == MI_OK && mi_registry_device(r, "blis-cpu:0", &g_blis, &dev, &err) == MI_OK);
    gs5_at_level();
    mi_registry_destroy(r);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
  r = keep_r;
  g_blis = keep;
}

/* ---- a detector tail: TopK's indices pick each kept box's coordinates with GatherElements */

static void detector_tail(void) {
  tcase_t c;
  int32_t in[2], t[2], y, node;
  int64_t k = 50;
  tc_init(&c, 13);
  in[0] = tc_f32(&c, "scores", 2, (int64_t[]){1, 800}, 1.f);
  in[1] = mi_graph_add_const_i64(c.g, "k", 1, &k);
  t[0] = mi_graph_add_tensor(c.g, "top", MI_DTYPE_UNDEFINED, -1, NULL);
  t[1] = mi_graph_add_tensor(c.g, "idx", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(c.g, "TopK", "topk", 2, in, 2, t);
  in[0] = tc_f32(&c, "boxes", 2, (int64_t[]){1, 800}, 9.f);
  in[1] = t[1];
  node = tc_node(&c, "GatherElements", 2, in, &y);
  mi_node_set_int(c.g, node, "axis", 1);
  expect_same(&c, "TopK -> GatherElements");
}

/* An integer or bool mask moved and Cast to FLOAT on the device, as a BERT export writes its
 * attention mask (blis_shape.c mi__blis_int_move_tensor, blis_misc.c): INT64 [2, 9] of 0/1 ->
 * Unsqueeze(1) -> Unsqueeze(2) -> Cast -> Sub from 1 -> Mul by the float minimum; INT64 values
 * past 2^24 (rounded by the Cast as the reference rounds them) through Reshape and Flatten; a BOOL
 * mask through Squeeze and Identity. */
static int32_t i_node(tcase_t *c, const char *op, const char *name, int nin, const int32_t *ins) {
  int32_t y = mi_graph_add_tensor(c->g, name, MI_DTYPE_UNDEFINED, -1, NULL);
  REQUIRE(mi_graph_add_node(c->g, op, name, nin, ins, 1, &y) >= 0);
  return y;
}

static void int_mask(void) {
  static const int64_t one = 1, two = 2, shape[3] = {2, 1, 9};
  static const float fone = 1.0f, fmin = -3.4028234663852886e38f;
  tcase_t c;
  int32_t in[2], t, y, node;
  int64_t d2[2] = {2, 9};
  tc_init(&c, 14);
  t = tc_input(&c, "mask", MI_DTYPE_INT64, 2, d2, 0, 0, 1, NULL);
  t = i_node(&c, "Unsqueeze", "u1", 2, (int32_t[]){t, mi_graph_add_const_i64(c.g, "a1", 1, &one)});
  t = i_node(&c, "Unsqueeze", "u2", 2, (int32_t[]){t, mi_graph_add_const_i64(c.g, "a2", 1, &two)});
  in[1] = mi_graph_add_tensor(c.g, "m", MI_DTYPE_UNDEFINED, -1, NULL);
  node = mi_graph_add_node(c.g, "Cast", "cast", 1, &t, 1, &in[1]);
  mi_node_set_int(c.g, node, "to", MI_DTYPE_FLOAT32);
  in[0] = mi_graph_add_const_f32(c.g, "one", 0, NULL, &fone);
  t = i_node(&c, "Sub", "sub", 2, in);
  in[0] = t;
  in[1] = mi_graph_add_const_f32(c.g, "fmin", 0, NULL, &fmin);
  tc_node(&c, "Mul", 2, in, &y);
  expect_same(&c, "INT64 mask -> Unsqueeze x2 -> Cast -> Sub -> Mul");

  tc_init(&c, 14);
  t = tc_input(&c, "ids", MI_DTYPE_INT64, 2, d2, 0, -(1ll << 40), 1ll << 40, NULL);
  t = i_node(&c, "Reshape", "r", 2, (int32_t[]){t, mi_graph_add_const_i64(c.g, "s", 3, shape)});
  t = i_node(&c, "Flatten", "f", 1, &t);
  node = tc_node(&c, "Cast", 1, &t, &y);
  mi_node_set_int(c.g, node, "to", MI_DTYPE_FLOAT32);
  expect_same(&c, "INT64 past 2^24 -> Reshape -> Flatten -> Cast");

  tc_init(&c, 14);
  t = tc_input(&c, "b", MI_DTYPE_BOOL, 3, shape, 0, 0, 1, NULL);
  t = i_node(&c, "Squeeze", "sq", 2, (int32_t[]){t, mi_graph_add_const_i64(c.g, "a", 1, &one)});
  t = i_node(&c, "Identity", "id", 1, &t);
  node = tc_node(&c, "Cast", 1, &t, &y);
  mi_node_set_int(c.g, node, "to", MI_DTYPE_FLOAT32);
  expect_same(&c, "BOOL -> Squeeze -> Identity -> Cast");
}

static void setup(void) {
  mi_error_t err = {0, ""};
  uint32_t dev = 0;
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(gather_elements),
    TU_CASE(scatter_int),
    TU_CASE(crop_eye),
    TU_CASE(bitwise),
    TU_CASE(det_roi_col2im),
    TU_CASE(gridsample5d),
    TU_CASE(detector_tail),
    TU_CASE(int_mask),
};

TU_MAIN(setup, teardown)
