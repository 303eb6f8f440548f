/* test_blis_detops.c - blis-cpu's detector and vision ops (blis_nms.c, blis_gridsample.c,
 * blis_roialign.c, blis_seqops.c, blis_select.c) in sessions on blis-cpu:0 with host fallback
 * off, against mi_ref_run to the bit: NonMaxSuppression (tied scores, everything suppressed, none
 * asked for, centre boxes, NaN and empty boxes, runtime thresholds; the rows reported, on the
 * session's device and as a fallback device's node, and, where a node reads them, refused when
 * they differ from the fixed ones), GridSample (every mode, padding and align_corners, grid points
 * outside and NaN) and RoiAlign (rois partly and wholly outside, inverted, runtime INT64/INT32
 * batch indices) at each SIMD level, TopK, ArgMax/ArgMin, Compress and ReverseSequence;
 * Conv -> GridSample -> Conv and a detector tail Conv -> Sigmoid -> Reshape -> NonMaxSuppression
 * with no host step; run-time index errors naming the node. */
#include <math.h>

#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

static float rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* A case: a graph and its inputs' values. */
typedef struct tcase {
  mi_graph_t *g;
  mi_array_t *in[6];
  int32_t nin;
  uint64_t seed;
  double tol; /* rel L2 allowed (graphs with Convs, whose sums blis-cpu orders its own way); 0: bits */
} tcase_t;

static void tc_init(tcase_t *c, int64_t opset) {
  memset(c, 0, sizeof *c);
  REQUIRE((c->g = mi_graph_create("t")));
  c->g->opset = opset;
  c->seed = 11;
}

/* A graph input of dtype dt; FLOAT32 gets random values in [-1, 1) * scale + shift, others vals. */
static int32_t tc_input(tcase_t *c, const char *name, int32_t dt, int rank, const int64_t *dims, float scale, float shift,
                        const void *vals) {
  int32_t t = mi_graph_add_tensor(c->g, name, dt, rank, dims);
  mi_array_t *a = mi_array_create(dt, rank, dims);
  int64_t i, n;
  REQUIRE(a && t >= 0 && c->nin < 6);
  n = mi_array_numel(a);
  if (vals) memcpy(a->data, vals, a->nbytes);
  else
    for (i = 0; i < n; i++) ((float *)a->data)[i] = rnd(&c->seed) * scale + shift;
  mi_graph_add_input(c->g, t);
  c->in[c->nin++] = a;
  return t;
}

static int32_t tc_f32(tcase_t *c, const char *name, int rank, const int64_t *dims, float scale, float shift) {
  return tc_input(c, name, MI_DTYPE_FLOAT32, rank, dims, scale, shift, NULL);
}

static int32_t tc_node(tcase_t *c, const char *op, int nin, const int32_t *ins, int nout, int32_t *outs) {
  static const char *const names[3] = {"y", "y1", "y2"};
  for (int i = 0; i < nout; i++) {
    outs[i] = mi_graph_add_tensor(c->g, names[i], MI_DTYPE_UNDEFINED, -1, NULL);
    mi_graph_add_output(c->g, outs[i]);
  }
  return mi_graph_add_node(c->g, op, "n0", nin, ins, nout, outs);
}

static int same_array(const mi_array_t *a, const mi_array_t *b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return 0;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return 0;
  if (a->dtype != MI_DTYPE_FLOAT32) return memcmp(a->data, b->data, a->nbytes) == 0;
  /* floats by value: fmaxf may keep either zero of -0 and +0; NaN where the reference has NaN */
  for (int64_t i = 0; i < mi_array_numel(a); i++) {
    float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
    if (!(x == y || (x != x && y != y))) return 0;
  }
  return 1;
}

/* Runs the case on blis-cpu:0 (no host step allowed) and on the reference; MI_OK when every
 * output has the reference's dtype, shape and bits (err names the first that does not), else the
 * first failing status. Frees the case. */
static int32_t tc_run(tcase_t *c, int32_t nout, mi_error_t *err) {
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *dv[3] = {0}, *rv[3] = {0};
  int32_t rc = mi_graph_infer_shapes(c->g, err);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0;
  if (rc == MI_OK) rc = mi_session_create(c->g, g_blis, 0, &o, &s, err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)c->in, c->nin, dv, nout, err);
  if (rc == MI_OK && mi_session_fallback_count(s) != 0) {
    snprintf(err->message, sizeof err->message, "%d node(s) ran on the host", mi_session_fallback_count(s));
    rc = MI_ERR_INTERNAL;
  }
  if (rc == MI_OK) rc = mi_ref_run(c->g, (const mi_array_t *const *)c->in, c->nin, rv, nout, err);
  for (int32_t i = 0; rc == MI_OK && i < nout; i++)
    if (c->tol > 0 ? !(tu_rel_l2_arrays(dv[i], rv[i]) <= c->tol) : !same_array(dv[i], rv[i])) {
      snprintf(err->message, sizeof err->message, "output %d: blis-cpu's is not the reference's (rank %d, %lld values)", (int)i,
               dv[i] ? (int)dv[i]->rank : -1, dv[i] ? (long long)mi_array_numel(dv[i]) : -1ll);
      rc = MI_ERR_INTERNAL;
    }
  mi_session_destroy(s);
  for (int32_t i = 0; i < c->nin; i++) mi_array_destroy(c->in[i]);
  for (int32_t i = 0; i < 3; i++) mi_array_destroy(dv[i]), mi_array_destroy(rv[i]);
  mi_graph_destroy(c->g);
  return rc;
}

static void expect_same(tcase_t *c, int32_t nout, const char *name) {
  mi_error_t err = {0, ""};
  int32_t rc = tc_run(c, nout, &err);
  CHECK(rc == MI_OK, "%s: %s", name, err.message);
}

static void expect_error(tcase_t *c, const char *name, const char *what) {
  mi_error_t err = {0, ""};
  int32_t rc = tc_run(c, 1, &err);
  CHECK(rc != MI_OK && strstr(err.message, what) && strstr(err.message, "n0"), "%s: status %d (%s), expected '%s' naming n0",
        name, rc, err.message, what);
}

/* ---- NonMaxSuppression */

/* boxes [B, S, 4] as corners (or centres), scores [B, K, S]: `tie` rounds scores to quarters. */
static void nms_case(int64_t B, int64_t K, int64_t S, int center, int tie, int64_t max_out, float iou, float sthr, int runtime) {
  tcase_t c;
  int64_t bd[3] = {B, S, 4}, sd[3] = {B, K, S}, one = 1;
  int32_t in[5], y;
  char name[96];
  tc_init(&c, 11);
  in[0] = tc_f32(&c, "boxes", 3, bd, 4.f, 5.f);
  in[1] = tc_f32(&c, "scores", 3, sd, 0.5f, 0.5f);
  if (S > 5) { /* a box of NaN corners and one of no height: never suppressed, suppressing nothing */
    float *bx = c.in[0]->data;
    bx[3 * 4] = bx[3 * 4 + 2] = NAN;
    bx[4 * 4 + 2] = bx[4 * 4];
  }
  if (tie)
    for (int64_t i = 0; i < B * K * S; i++) ((float *)c.in[1]->data)[i] = floorf(((float *)c.in[1]->data)[i] * 4.f) / 4.f;
  if (runtime) {
    in[2] = tc_input(&c, "mo", MI_DTYPE_INT64, 1, &one, 0, 0, &max_out);
    in[3] = tc_input(&c, "iou", MI_DTYPE_FLOAT32, 1, &one, 0, 0, &iou);
    in[4] = tc_input(&c, "st", MI_DTYPE_FLOAT32, 1, &one, 0, 0, &sthr);
  } else {
    in[2] = mi_graph_add_const_i64(c.g, "mo", 1, &max_out);
    in[3] = mi_graph_add_const_f32(c.g, "iou", 1, &one, &iou);
    in[4] = mi_graph_add_const_f32(c.g, "st", 1, &one, &sthr);
  }
  int32_t node = tc_node(&c, "NonMaxSuppression", 5, in, 1, &y);
  if (center) mi_node_set_int(c.g, node, "center_point_box", 1);
  snprintf(name, sizeof name, "NMS B%lld K%lld S%lld centre %d ties %d max %lld iou %g thr %g runtime %d", (long long)B,
           (long long)K, (long long)S, center, tie, (long long)max_out, iou, sthr, runtime);
  expect_same(&c, 1, name);
}

static void nms(void) {
  nms_case(2, 3, 50, 0, 0, 10, 0.4f, 0.2f, 0);
  nms_case(2, 3, 50, 1, 0, 10, 0.4f, 0.2f, 0);
  nms_case(1, 4, 64, 0, 1, 64, 0.5f, 0.0f, 0);      /* tied scores: lower box index first */
  nms_case(1, 2, 40, 0, 0, 5, 0.0f, -2.0f, 1);      /* iou 0: any overlap suppresses; runtime inputs */
  nms_case(2, 2, 30, 0, 0, 8, 0.6f, 5.0f, 0);       /* every score under the threshold: no rows */
  nms_case(1, 3, 20, 0, 0, 0, 0.5f, 0.1f, 1);       /* max_output 0: no rows */
  nms_case(1, 2, 20, 0, 0, -3, 0.5f, 0.1f, 0);      /* negative max_output: none */
  nms_case(1, 80, 200, 0, 0, 100, 0.45f, 0.25f, 0); /* a YOLO-like tail, on the pool */
}

/* NMS -> Identity: the Identity was prepared for the probe's rows (zero inputs: none); a run
 * selecting others is refused with the session's message, as a host step's is. */
static void nms_read_by_node(void) {
  tcase_t c;
  int64_t bd[3] = {1, 16, 4}, sd[3] = {1, 1, 16}, mo = 4, one = 1;
  float st = 0.1f;
  int32_t in[5], mid, y;
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *out = NULL;
  mi_error_t err = {0, ""};
  tc_init(&c, 11);
  in[0] = tc_f32(&c, "boxes", 3, bd, 4.f, 5.f);
  in[1] = tc_f32(&c, "scores", 3, sd, 0.4f, 0.5f);
  in[2] = mi_graph_add_const_i64(c.g, "mo", 1, &mo);
  in[3] = -1;
  in[4] = mi_graph_add_const_f32(c.g, "st", 1, &one, &st);
  mid = mi_graph_add_tensor(c.g, "mid", MI_DTYPE_UNDEFINED, -1, NULL);
  y = mi_graph_add_tensor(c.g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  REQUIRE(mi_graph_add_node(c.g, "NonMaxSuppression", "n0", 5, in, 1, &mid) >= 0);
  REQUIRE(mi_graph_add_node(c.g, "Identity", "copy", 1, &mid, 1, &y) >= 0);
  mi_graph_add_output(c.g, y);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  int32_t rc = mi_graph_infer_shapes(c.g, &err);
  if (rc == MI_OK) rc = mi_session_create(c.g, g_blis, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "create: %s", err.message);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)c.in, c.nin, &out, 1, &err);
  CHECK(rc == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "n0") && strstr(err.message, "fixed"),
        "NMS read by a node, other rows than the probe's: status %d (%s)", rc, err.message);
  mi_array_destroy(out);
  mi_session_destroy(s);
  for (int32_t i = 0; i < c.nin; i++) mi_array_destroy(c.in[i]);
  mi_graph_destroy(c.g);
}

/* NMS on the fallback device of a session whose device refuses it (npu-stub): the single-node
 * fallback kernel reports its rows too (exec/fallback.c), fewer than the room the session gave. */
static void nms_on_fallback_device(void) {
  tcase_t c;
  int64_t bd[3] = {1, 40, 4}, sd[3] = {1, 3, 40}, mo = 6, one = 1;
  float iou = 0.5f, st = 0.9f; /* a tenth of the boxes pass: fewer than 6 a class */
  int32_t in[5], y;
  mi_plugin_t *npu = NULL;
  uint32_t dev = 0;
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *got = NULL, *want = NULL;
  mi_error_t err = {0, ""};
  if (mi_registry_device(r, "npu-stub:0", &npu, &dev, &err) != MI_OK) {
    printf("npu-stub:0 is not here: the fallback case is not run\n");
    return;
  }
  tc_init(&c, 11);
  in[0] = tc_f32(&c, "boxes", 3, bd, 4.f, 5.f);
  in[1] = tc_f32(&c, "scores", 3, sd, 0.5f, 0.5f);
  in[2] = mi_graph_add_const_i64(c.g, "mo", 1, &mo);
  in[3] = mi_graph_add_const_f32(c.g, "iou", 1, &one, &iou);
  in[4] = mi_graph_add_const_f32(c.g, "st", 1, &one, &st);
  tc_node(&c, "NonMaxSuppression", 5, in, 1, &y);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  o.fallback_plugin = g_blis;
  int32_t rc = mi_graph_infer_shapes(c.g, &err);
  if (rc == MI_OK) rc = mi_session_create(c.g, npu, dev, &o, &s, &err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)c.in, c.nin, &got, 1, &err);
  if (rc == MI_OK) rc = mi_ref_run(c.g, (const mi_array_t *const *)c.in, c.nin, &want, 1, &err);
  CHECK(rc == MI_OK, "NMS on npu-stub with blis-cpu fallback: %s", err.message);
  if (rc == MI_OK) {
    CHECK(mi_session_fallback_device_count(s) == 1, "NMS ran on the fallback device (%d there)",
          (int)mi_session_fallback_device_count(s));
    CHECK(same_array(got, want) && got->dims[0] < 18, "NMS on the fallback device: %lld rows, the reference's %lld (room 18)",
          (long long)got->dims[0], (long long)want->dims[0]);
  }
  mi_array_destroy(got);
  mi_array_destroy(want);
  mi_session_destroy(s);
  for (int32_t i = 0; i < c.nin; i++) mi_array_destroy(c.in[i]);
  mi_graph_destroy(c.g);
}

/* ---- GridSample and RoiAlign at each SIMD level */

static void gs_case(int64_t opset, const char *mode, const char *pad, int64_t align) {
  tcase_t c;
  int64_t xd[4] = {2, 3, 7, 9}, gd[4] = {2, 5, 11, 2};
  int32_t in[2], y, node;
  char name[96];
  tc_init(&c, opset);
  in[0] = tc_f32(&c, "x", 4, xd, 2.f, 0.f);
  in[1] = tc_f32(&c, "g", 4, gd, 1.4f, 0.f); /* a fifth of the points outside [-1, 1] */
  ((float *)c.in[1]->data)[6] = NAN;         /* one NaN coordinate: held at -2^23 as the reference does */
  ((float *)c.in[1]->data)[9] = 1e9f;        /* far outside: held at 2^23 */
  node = tc_node(&c, "GridSample", 2, in, 1, &y);
  mi_node_set_string(c.g, node, "mode", mode);
  mi_node_set_string(c.g, node, "padding_mode", pad);
  mi_node_set_int(c.g, node, "align_corners", align);
  snprintf(name, sizeof name, "GridSample-%lld %s %s align %lld", (long long)opset, mode, pad, (long long)align);
  expect_same(&c, 1, name);
}

static void ra_case(int64_t opset, const char *mode, const char *ct, int64_t ratio, float scale, int32_t bdt) {
  tcase_t c;
  int64_t xd[4] = {2, 19, 12, 10}, rd[2] = {6, 4}, bd[1] = {6};
  /* inside, partly outside, wholly outside, inverted, a point, a wide one */
  static const float rois[24] = {1, 1, 6, 7, -3, -2, 4, 5, 20, 20, 30, 28, 7, 8, 2, 3, 5, 5, 5, 5, -1, 0, 11, 13};
  static const int64_t b64[6] = {0, 1, 1, 0, 1, 0};
  static const int32_t b32[6] = {0, 1, 1, 0, 1, 0};
  int32_t in[3], y, node;
  char name[96];
  tc_init(&c, opset);
  in[0] = tc_f32(&c, "x", 4, xd, 2.f, 0.f);
  in[1] = tc_input(&c, "rois", MI_DTYPE_FLOAT32, 2, rd, 0, 0, rois);
  in[2] = tc_input(&c, "bi", bdt, 1, bd, 0, 0, bdt == MI_DTYPE_INT64 ? (const void *)b64 : (const void *)b32);
  node = tc_node(&c, "RoiAlign", 3, in, 1, &y);
  mi_node_set_int(c.g, node, "output_height", 3);
  mi_node_set_int(c.g, node, "output_width", 4);
  mi_node_set_string(c.g, node, "mode", mode);
  if (ct) mi_node_set_string(c.g, node, "coordinate_transformation_mode", ct);
  if (ratio) mi_node_set_int(c.g, node, "sampling_ratio", ratio);
  mi_node_set_float(c.g, node, "spatial_scale", scale);
  snprintf(name, sizeof name, "RoiAlign-%lld %s %s ratio %lld scale %g", (long long)opset, mode, ct ? ct : "-", (long long)ratio,
           scale);
  expect_same(&c, 1, name);
}

static void vision_at_level(void) {
  static const char *const m16[3] = {"bilinear", "nearest", "bicubic"}, *const m20[3] = {"linear", "nearest", "cubic"};
  static const char *const pads[3] = {"zeros", "border", "reflection"};
  for (int m = 0; m < 3; m++)
    for (int pd = 0; pd < 3; pd++)
      for (int64_t a = 0; a < 2; a++) {
        gs_case(16, m16[m], pads[pd], a);
        gs_case(20, m20[m], pads[pd], a);
      }
  ra_case(10, "avg", NULL, 0, 1.0f, MI_DTYPE_INT64);
  ra_case(10, "max", NULL, 2, 0.5f, MI_DTYPE_INT32);
  ra_case(16, "avg", "half_pixel", 0, 1.0f, MI_DTYPE_INT64);
  ra_case(16, "max", "half_pixel", 0, 1.0f, MI_DTYPE_INT64);
  ra_case(16, "avg", "output_half_pixel", 3, 0.8f, MI_DTYPE_INT32);
}

static void vision(void) {
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
    vision_at_level();
    mi_registry_destroy(r);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
  r = keep_r;
  g_blis = keep;
}

/* A batch index past N at run time: a one-line error naming the node. */
static void roialign_bad_index(void) {
  tcase_t c;
  int64_t xd[4] = {1, 2, 5, 5}, rd[2] = {1, 4}, bd[1] = {1}, b = 3;
  static const float roi[4] = {0, 0, 3, 3};
  int32_t in[3], y;
  tc_init(&c, 16);
  in[0] = tc_f32(&c, "x", 4, xd, 1.f, 0.f);
  in[1] = tc_input(&c, "rois", MI_DTYPE_FLOAT32, 2, rd, 0, 0, roi);
  in[2] = tc_input(&c, "bi", MI_DTYPE_INT64, 1, bd, 0, 0, &b);
  tc_node(&c, "RoiAlign", 3, in, 1, &y);
  expect_error(&c, "RoiAlign batch index 3 of 1", "batch index");
}

/* ---- TopK, Compress, ReverseSequence */

static void seqops(void) {
  tcase_t c;
  int32_t in[2], y[2], node;
  int64_t xd[3] = {3, 17, 4}, k = 3, kd[1] = {1}, cd[1] = {3}, ld[1] = {17}, fd[1] = {30};
  static const uint8_t keep[3] = {1, 0, 1};
  uint8_t flat[30];
  int64_t lens[17];
  for (int i = 0; i < 30; i++) flat[i] = (uint8_t)(i % 3 != 1);
  for (int i = 0; i < 17; i++) lens[i] = i % 4;
  for (int64_t axis = -1; axis >= -2; axis--)
    for (int64_t largest = 0; largest < 2; largest++) {
      tc_init(&c, 11);
      in[0] = tc_f32(&c, "x", 3, xd, 2.f, 0.f);
      for (int i = 0; i < 20; i++) ((float *)c.in[0]->data)[i * 3] = 0.25f; /* ties */
      in[1] = mi_graph_add_tensor(c.g, "k", MI_DTYPE_INT64, 1, kd);
      mi_graph_set_data(c.g, in[1], &k, sizeof k);
      node = tc_node(&c, "TopK", 2, in, 2, y);
      mi_node_set_int(c.g, node, "axis", axis);
      mi_node_set_int(c.g, node, "largest", largest);
      expect_same(&c, 2, axis == -1 ? "TopK k 3 of 4" : "TopK k 3 of 17");
    }
  for (int m = 0; m < 2; m++) /* a class map over channels, ties (the first or the last index) */
    for (int64_t last = 0; last < 2; last++) {
      int64_t sd[4] = {1, 21, 7, 300};
      tc_init(&c, 13);
      in[0] = tc_f32(&c, "x", 4, sd, 1.f, 0.f);
      for (int64_t i = 0; i < 21 * 2100; i++) ((float *)c.in[0]->data)[i] = floorf(((float *)c.in[0]->data)[i] * 3.f);
      node = tc_node(&c, m ? "ArgMin" : "ArgMax", 1, in, 1, y);
      mi_node_set_int(c.g, node, "axis", 1);
      mi_node_set_int(c.g, node, "select_last_index", last);
      expect_same(&c, 1, m ? "ArgMin over 21 channels" : "ArgMax over 21 channels");
    }
  tc_init(&c, 11); /* runtime condition along axis 0: the kept rows reported */
  in[0] = tc_f32(&c, "x", 3, xd, 1.f, 0.f);
  in[1] = tc_input(&c, "c", MI_DTYPE_BOOL, 1, cd, 0, 0, keep);
  mi_node_set_int(c.g, tc_node(&c, "Compress", 2, in, 1, y), "axis", 0);
  expect_same(&c, 1, "Compress runtime condition axis 0");
  tc_init(&c, 11); /* flattened */
  in[0] = tc_f32(&c, "x", 3, xd, 1.f, 0.f);
  in[1] = tc_input(&c, "c", MI_DTYPE_BOOL, 1, fd, 0, 0, flat);
  tc_node(&c, "Compress", 2, in, 1, y);
  expect_same(&c, 1, "Compress runtime condition flattened");
  tc_init(&c, 10); /* batch-major, runtime lengths */
  in[0] = tc_f32(&c, "x", 3, xd, 1.f, 0.f);
  int64_t l3[3] = {17, 0, 5};
  in[1] = tc_input(&c, "l", MI_DTYPE_INT64, 1, cd, 0, 0, l3);
  node = tc_node(&c, "ReverseSequence", 2, in, 1, y);
  mi_node_set_int(c.g, node, "batch_axis", 0);
  mi_node_set_int(c.g, node, "time_axis", 1);
  expect_same(&c, 1, "ReverseSequence batch-major");
  tc_init(&c, 10); /* time-major: [T 3, B 17, 4] */
  in[0] = tc_f32(&c, "x", 3, xd, 1.f, 0.f);
  in[1] = tc_input(&c, "l", MI_DTYPE_INT64, 1, ld, 0, 0, lens);
  tc_node(&c, "ReverseSequence", 2, in, 1, y);
  expect_same(&c, 1, "ReverseSequence time-major");
  tc_init(&c, 10); /* a length past T at run time */
  in[0] = tc_f32(&c, "x", 3, xd, 1.f, 0.f);
  lens[5] = 9;
  in[1] = tc_input(&c, "l", MI_DTYPE_INT64, 1, ld, 0, 0, lens);
  tc_node(&c, "ReverseSequence", 2, in, 1, y);
  expect_error(&c, "ReverseSequence length 9 of 3", "sequence_lens");
}

/* ---- small graphs with no host step */

static int32_t conv(tcase_t *c, const char *name, int32_t x, int64_t cin, int64_t cout) {
  int64_t wd[4] = {cout, cin, 3, 3}, pads[4] = {1, 1, 1, 1};
  float *w = malloc((size_t)(cout * cin * 9) * sizeof *w);
  REQUIRE(w);
  for (int64_t i = 0; i < cout * cin * 9; i++) w[i] = rnd(&c->seed) * 0.3f;
  char out[32];
  snprintf(out, sizeof out, "%s_out", name);
  int32_t wt = mi_graph_add_const_f32(c->g, name, 4, wd, w), y = mi_graph_add_tensor(c->g, out, MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t in[2] = {x, wt}, node = mi_graph_add_node(c->g, "Conv", name, 2, in, 1, &y);
  free(w);
  mi_node_set_ints(c->g, node, "pads", 4, pads);
  return y;
}

static void graphs(void) {
  tcase_t c;
  int64_t xd[4] = {1, 3, 16, 20}, gd[4] = {1, 12, 14, 2}, bd[3] = {1, 320, 4}, shp[3] = {1, 4, 320}, mo = 20, one = 1;
  float iou = 0.5f, st = 0.3f;
  int32_t in[5], y, t;
  tc_init(&c, 16);
  in[0] = tc_f32(&c, "x", 4, xd, 1.f, 0.f);
  in[1] = tc_f32(&c, "g", 4, gd, 1.1f, 0.f);
  in[0] = conv(&c, "c1", in[0], 3, 8);
  t = mi_graph_add_tensor(c.g, "warped", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(c.g, "GridSample", "n0", 2, in, 1, &t);
  y = conv(&c, "c2", t, 8, 4);
  mi_graph_add_output(c.g, y);
  c.tol = 1e-6;
  expect_same(&c, 1, "Conv -> GridSample -> Conv");
  tc_init(&c, 11); /* scores from a Conv head, boxes an input: Conv -> Sigmoid -> Reshape -> NMS */
  in[0] = tc_f32(&c, "feat", 4, (int64_t[]){1, 6, 16, 20}, 1.f, 0.f);
  in[0] = conv(&c, "head", in[0], 6, 4);
  t = mi_graph_add_tensor(c.g, "prob", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(c.g, "Sigmoid", "sig", 1, in, 1, &t);
  in[1] = mi_graph_add_const_i64(c.g, "shape", 3, shp);
  in[0] = t;
  t = mi_graph_add_tensor(c.g, "scores", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_node(c.g, "Reshape", "flat", 2, in, 1, &t);
  in[0] = tc_f32(&c, "boxes", 3, bd, 6.f, 8.f);
  in[1] = t;
  in[2] = mi_graph_add_const_i64(c.g, "mo", 1, &mo);
  in[3] = mi_graph_add_const_f32(c.g, "iou", 1, &one, &iou);
  in[4] = mi_graph_add_const_f32(c.g, "st", 1, &one, &st);
  tc_node(&c, "NonMaxSuppression", 5, in, 1, &y);
  expect_same(&c, 1, "Conv -> Sigmoid -> Reshape -> NonMaxSuppression");
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
    TU_CASE(nms),
    TU_CASE(nms_read_by_node),
    TU_CASE(nms_on_fallback_device),
    TU_CASE(vision),
    TU_CASE(roialign_bad_index),
    TU_CASE(seqops),
    TU_CASE(graphs),
};

TU_MAIN(setup, teardown)
