/* test_blis_ops2.c - blis-cpu ops added for real exported models (Resize/Upsample, Cast, PRelu,
 * Pad, Split, Expand, Tile, Gather, ...): each graph runs in a session on blis-cpu:0 with host
 * fallback off and is compared with mi_ref_run; unsupported attribute values must be refused by
 * blis-cpu with MI_ERR_UNSUPPORTED. */
#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

static mi_plugin_t *g_blis;

static float rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* A graph of opset `opset` with one FLOAT32 input `x` of the given shape. */
static mi_graph_t *graph_x(int64_t opset, int rank, const int64_t *dims, int32_t *x) {
  mi_graph_t *g = mi_graph_create("t");
  REQUIRE(g);
  g->opset = opset;
  *x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, rank, dims);
  mi_graph_add_input(g, *x);
  return g;
}

static int32_t const_f32(mi_graph_t *g, const char *name, int rank, const int64_t *dims, uint64_t seed) {
  float v[4096];
  int64_t n = 1;
  int i;
  for (i = 0; i < rank; i++) n *= dims[i];
  REQUIRE(n <= 4096);
  for (i = 0; i < n; i++) v[i] = rnd(&seed);
  return mi_graph_add_const_f32(g, name, rank, dims, v);
}

/* Adds node `op` reading `ins`, writing a new output "y" (the graph output); returns the node. */
static int32_t node_y(mi_graph_t *g, const char *op, int nin, const int32_t *ins) {
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL), node;
  node = mi_graph_add_node(g, op, "n0", nin, ins, 1, &y);
  mi_graph_add_output(g, y);
  return node;
}

/* Runs g on blis-cpu:0 (no host fallback) and on the reference: MI_OK and *e = rel L2 of the
 * output, or the session's status (err filled). */
static int32_t compare(mi_graph_t *g, double *e, mi_error_t *err) {
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in[4] = {0}, *out_d = NULL, *out_r = NULL;
  int32_t i, nin = g->input_count, rc;
  *e = INFINITY;
  rc = mi_graph_infer_shapes(g, err);
  for (i = 0; i < nin && rc == MI_OK; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    in[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
    mi_array_fill_random(in[i], 17 + (uint64_t)i);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0;
  if (rc == MI_OK) rc = mi_session_create(g, g_blis, 0, &o, &s, err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)in, nin, &out_d, 1, err);
  if (rc == MI_OK && mi_session_fallback_count(s) != 0) {
    snprintf(err->message, sizeof err->message, "%d node(s) ran on the host", mi_session_fallback_count(s));
    rc = MI_ERR_INTERNAL;
  }
  if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, &out_r, 1, err);
  if (rc == MI_OK) *e = tu_rel_l2_arrays(out_d, out_r);
  mi_session_destroy(s);
  for (i = 0; i < nin; i++) mi_array_destroy(in[i]);
  mi_array_destroy(out_d);
  mi_array_destroy(out_r);
  return rc;
}

/* Runs and checks the match within `limit` relative L2; destroys g. */
static void expect_within(mi_graph_t *g, const char *name, double limit) {
  mi_error_t err = {0, ""};
  double e;
  int32_t rc = compare(g, &e, &err);
  CHECK(rc == MI_OK, "%s: %s", name, err.message);
  if (rc == MI_OK) CHECK(e <= limit, "%s: rel L2 %g (limit %g)", name, e, limit);
  mi_graph_destroy(g);
}

static void expect_match(mi_graph_t *g, const char *name) { expect_within(g, name, 1e-6); }

/* Runs and checks blis-cpu itself refuses it as unsupported; destroys g. */
static void expect_refused(mi_graph_t *g, const char *name) {
  mi_error_t err = {0, ""};
  double e;
  int32_t rc = compare(g, &e, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "blis-cpu"), "%s: status %d (%s), expected blis-cpu's refusal",
        name, rc, err.message);
  mi_graph_destroy(g);
}

/* ---- Resize / Upsample */

static void resize_case(int64_t opset, const char *mode, const char *ct, const char *nm,
                        const float *scales, const int64_t *sizes, const int64_t *xd) {
  int64_t four = 4;
  int32_t x, in[4], node;
  char name[160];
  mi_graph_t *g = graph_x(opset, 4, xd, &x);
  in[0] = x;
  in[1] = -1; /* roi */
  in[2] = scales ? mi_graph_add_const_f32(g, "scales", 1, &four, scales) : -1;
  in[3] = sizes ? mi_graph_add_const_i64(g, "sizes", 4, sizes) : -1;
  node = node_y(g, "Resize", sizes ? 4 : 3, in);
  mi_node_set_string(g, node, "mode", mode);
  if (ct) mi_node_set_string(g, node, "coordinate_transformation_mode", ct);
  if (nm) mi_node_set_string(g, node, "nearest_mode", nm);
  snprintf(name, sizeof name, "Resize-%lld %s %s %s %s", (long long)opset, mode, ct ? ct : "-",
           nm ? nm : "-", sizes ? "sizes" : "scales");
  expect_within(g, name, 0.0); /* same per-axis passes as the reference: the same bits */
}

static void resize_tests(void) {
  static const char *const cts[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const int64_t xd[4] = {1, 3, 5, 6};
  const float up[4] = {1.f, 1.f, 2.f, 1.5f}, down[4] = {1.f, 1.f, 0.6f, 0.5f};
  const int64_t sz[4] = {1, 3, 9, 4}, sz1[4] = {1, 3, 1, 7};
  int c, k;
  for (c = 0; c < 4; c++) {
    resize_case(13, "linear", cts[c], NULL, up, NULL, xd);
    resize_case(13, "linear", cts[c], NULL, down, NULL, xd);
    resize_case(13, "linear", cts[c], NULL, NULL, sz, xd);
    resize_case(13, "linear", cts[c], NULL, NULL, sz1, xd);
    for (k = 0; k < 4; k++) {
      resize_case(13, "nearest", cts[c], nms[k], up, NULL, xd);
      resize_case(13, "nearest", cts[c], nms[k], down, NULL, xd);
      resize_case(13, "nearest", cts[c], nms[k], NULL, sz, xd);
    }
  }
  resize_case(11, "nearest", NULL, NULL, up, NULL, xd); /* defaults: half_pixel, round_prefer_floor */
  {
    /* Three axes (channels too), and planes large enough to be split between threads; the last
     * two passes run fused (rows blended once, the innermost axis gathered into the output). */
    const int64_t big[4] = {1, 5, 37, 41};
    const float up3[4] = {1.f, 2.f, 2.f, 2.f}, mix[4] = {1.f, 1.f, 1.5f, 0.75f};
    resize_case(13, "nearest", "asymmetric", "floor", up3, NULL, big);
    resize_case(13, "linear", "half_pixel", NULL, up3, NULL, big);
    resize_case(13, "linear", "align_corners", NULL, mix, NULL, big);
    resize_case(13, "nearest", "half_pixel", "round_prefer_ceil", mix, NULL, big);
  }
  {
    /* Resize-10 and Upsample-9: scales as input 1, asymmetric with the simple nearest rule. */
    const char *ops[2] = {"Resize", "Upsample"};
    const int64_t opsets[2] = {10, 9};
    const char *modes[2] = {"nearest", "linear"};
    int o, m;
    for (o = 0; o < 2; o++)
      for (m = 0; m < 2; m++) {
        int64_t four = 4;
        int32_t x, in[2], node;
        char name[64];
        mi_graph_t *g = graph_x(opsets[o], 4, xd, &x);
        in[0] = x;
        in[1] = mi_graph_add_const_f32(g, "scales", 1, &four, m ? down : up);
        node = node_y(g, ops[o], 2, in);
        mi_node_set_string(g, node, "mode", modes[m]);
        snprintf(name, sizeof name, "%s-%lld %s", ops[o], (long long)opsets[o], modes[m]);
        expect_within(g, name, 0.0);
      }
  }
  {
    /* Upsample-7: scales as an attribute; "bilinear" is its name for linear. */
    int32_t x, node;
    mi_graph_t *g = graph_x(7, 4, xd, &x);
    node = node_y(g, "Upsample", 1, &x);
    mi_node_set_string(g, node, "mode", "bilinear");
    mi_node_set_floats(g, node, "scales", 4, up);
    expect_within(g, "Upsample-7 bilinear", 0.0);
  }
  {
    /* Refused: cubic mode. */
    int64_t four = 4;
    int32_t x, in[3], node;
    mi_graph_t *g = graph_x(13, 4, xd, &x);
    in[0] = x;
    in[1] = -1;
    in[2] = mi_graph_add_const_f32(g, "scales", 1, &four, up);
    node = node_y(g, "Resize", 3, in);
    mi_node_set_string(g, node, "mode", "cubic");
    expect_refused(g, "Resize cubic");
  }
}

/* ---- Cast and Clip with a runtime min (oww_melspectrogram's tail) */

static void cast_clip_test(void) {
  const int64_t xd[3] = {1, 5, 8};
  int32_t x, m, c, y, in[3], node;
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  m = mi_graph_add_tensor(g, "m", MI_DTYPE_FLOAT32, -1, NULL);
  node = mi_graph_add_node(g, "ReduceMax", "rmax", 1, &x, 1, &m);
  mi_node_set_int(g, node, "keepdims", 0);
  c = mi_graph_add_tensor(g, "c", MI_DTYPE_FLOAT32, -1, NULL);
  {
    /* min = max(x) - 0.5 */
    int64_t one = 1;
    float h = 0.5f;
    int32_t half = mi_graph_add_const_f32(g, "half", 0, &one, &h), sub = mi_graph_add_tensor(g, "s", MI_DTYPE_FLOAT32, -1, NULL);
    in[0] = m;
    in[1] = half;
    mi_graph_add_node(g, "Sub", "sub", 2, in, 1, &sub);
    node = mi_graph_add_node(g, "Cast", "cast", 1, &sub, 1, &c);
    mi_node_set_int(g, node, "to", 1);
  }
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  in[0] = x;
  in[1] = c;
  in[2] = -1;
  mi_graph_add_node(g, "Clip", "clip", 2, in, 1, &y);
  mi_graph_add_output(g, y);
  expect_match(g, "Cast + Clip(runtime min)");
  {
    int32_t xx;
    g = graph_x(13, 3, xd, &xx);
    node = node_y(g, "Cast", 1, &xx);
    mi_node_set_int(g, node, "to", 7);
    expect_refused(g, "Cast to INT64");
  }
}

/* ---- PRelu: slope per channel, scalar, full */

static void prelu_test(void) {
  const int64_t xd[4] = {2, 3, 4, 5}, sd[3][4] = {{3, 1, 1, 0}, {1, 0, 0, 0}, {2, 3, 4, 5}};
  const int sr[3] = {3, 1, 4};
  int k;
  for (k = 0; k < 3; k++) {
    int32_t x, in[2];
    char name[32];
    mi_graph_t *g = graph_x(13, 4, xd, &x);
    in[0] = x;
    in[1] = const_f32(g, "slope", sr[k], sd[k], 5 + (uint64_t)k);
    node_y(g, "PRelu", 2, in);
    snprintf(name, sizeof name, "PRelu slope rank %d", sr[k]);
    expect_match(g, name);
  }
}

/* ---- Pad */

static void pad_case(int64_t opset, const char *mode, const int64_t *pads, float value) {
  const int64_t xd[4] = {1, 2, 4, 5};
  int32_t x, in[3], node;
  char name[64];
  mi_graph_t *g = graph_x(opset, 4, xd, &x);
  in[0] = x;
  if (opset >= 11) {
    int64_t one = 1;
    in[1] = mi_graph_add_const_i64(g, "pads", 8, pads);
    in[2] = mi_graph_add_const_f32(g, "v", 0, &one, &value);
    node = node_y(g, "Pad", 3, in);
  } else {
    node = node_y(g, "Pad", 1, in);
    mi_node_set_ints(g, node, "pads", 8, pads);
    mi_node_set_float(g, node, "value", value);
  }
  mi_node_set_string(g, node, "mode", mode);
  snprintf(name, sizeof name, "Pad-%lld %s", (long long)opset, mode);
  expect_match(g, name);
}

static void pad_tests(void) {
  const int64_t pads[8] = {0, 1, 2, 3, 0, 0, 3, 1};
  const int64_t neg[8] = {0, 0, -1, 2, 0, 1, 0, -2};
  pad_case(13, "constant", pads, 1.5f);
  pad_case(13, "edge", pads, 0.f);
  pad_case(13, "reflect", pads, 0.f);
  pad_case(13, "constant", neg, 0.f);
  pad_case(2, "constant", pads, -2.f);
  pad_case(2, "reflect", pads, 0.f);
  {
    int32_t x, in[2], node;
    const int64_t xd[4] = {1, 2, 4, 5};
    mi_graph_t *g = graph_x(13, 4, xd, &x);
    in[0] = x;
    in[1] = mi_graph_add_const_i64(g, "pads", 8, pads);
    node = node_y(g, "Pad", 2, in);
    mi_node_set_string(g, node, "mode", "wrap");
    expect_refused(g, "Pad wrap");
  }
}

/* ---- Split (into three, joined again in another order by a Concat) */

static void split_test(int64_t opset) {
  const int64_t xd[3] = {2, 9, 3}, parts[3] = {2, 4, 3};
  int32_t x, o[3], in[2], y, node, i;
  mi_graph_t *g = graph_x(opset, 3, xd, &x);
  for (i = 0; i < 3; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "p%d", (int)i);
    o[i] = mi_graph_add_tensor(g, nm, MI_DTYPE_FLOAT32, -1, NULL);
  }
  in[0] = x;
  if (opset >= 13) {
    in[1] = mi_graph_add_const_i64(g, "split", 3, parts);
    node = mi_graph_add_node(g, "Split", "split", 2, in, 3, o);
  } else {
    node = mi_graph_add_node(g, "Split", "split", 1, in, 3, o);
    mi_node_set_ints(g, node, "split", 3, parts);
  }
  mi_node_set_int(g, node, "axis", 1);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t cin[3] = {o[2], o[0], o[1]};
    node = mi_graph_add_node(g, "Concat", "cat", 3, cin, 1, &y);
    mi_node_set_int(g, node, "axis", 1);
  }
  mi_graph_add_output(g, y);
  expect_match(g, opset >= 13 ? "Split-13 + Concat" : "Split-11 + Concat");
}

/* ---- Concat with constant inputs: a block of zeros (a BlazeBlock's channel padding: filled, not
 * read) and one of values, along axis 1 (one block per input; 86400 values, split across the
 * session's threads) and axis 2 (several blocks per input), the block of zeros twice; a copy, so
 * exact. */
static void concat_const_test(int64_t axis) {
  int64_t xd[4] = {1, 48, 40, 40}, zd[4] = {1, 4, 40, 40}, cd[4] = {1, 2, 40, 40};
  float *zeros;
  int32_t x, cin[4], y, node;
  mi_graph_t *g;
  if (axis == 2) {
    xd[1] = zd[1] = cd[1] = 3;
    zd[2] = 5;
    cd[2] = 7;
  }
  g = graph_x(13, 4, xd, &x);
  zeros = calloc((size_t)(zd[1] * zd[2] * zd[3]), sizeof(float));
  REQUIRE(zeros);
  cin[0] = x;
  cin[1] = mi_graph_add_const_f32(g, "zeros", 4, zd, zeros);
  cin[2] = const_f32(g, "c", 4, cd, 5);
  cin[3] = cin[1];
  free(zeros);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  node = mi_graph_add_node(g, "Concat", "cat", 4, cin, 1, &y);
  mi_node_set_int(g, node, "axis", axis);
  mi_graph_add_output(g, y);
  expect_within(g, axis == 1 ? "Concat axis 1, zeros and constants" : "Concat axis 2, zeros and constants", 0.);
}

static void concat_const(void) {
  concat_const_test(1);
  concat_const_test(2);
}

/* ---- Concat on a last axis of blocks of at most 8 floats (a rotary embedding's two halves
 * joined as [..., 16, 1] + [..., 16, 1] -> [..., 16, 2]): copied per outer row. Blocks of 1 (the
 * interleave), 2 (zeros: filled), 3 and 8 (x, twice); 2 x 700 rows, split across the session's
 * threads; a copy, so exact. */
static void concat_rows(void) {
  int64_t xd[3] = {2, 700, 3}, cd[3] = {2, 700, 1}, zd[3] = {2, 700, 2}, wd[3] = {2, 700, 8};
  float *zeros = calloc((size_t)(2 * 700 * 2), sizeof(float));
  int32_t x, cin[5], y, node, e;
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  REQUIRE(zeros);
  cin[0] = x;
  cin[1] = const_f32(g, "c", 3, cd, 7);
  cin[2] = mi_graph_add_const_f32(g, "zeros", 3, zd, zeros);
  free(zeros);
  /* a block of 8 floats: x's row repeated by an Expand-free Concat of x, x and two of c */
  {
    int32_t ein[4] = {x, x, cin[1], cin[1]};
    e = mi_graph_add_tensor(g, "w", MI_DTYPE_FLOAT32, 3, wd);
    node = mi_graph_add_node(g, "Concat", "cat8", 4, ein, 1, &e);
    mi_node_set_int(g, node, "axis", -1);
  }
  cin[3] = e;
  cin[4] = cin[1];
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  node = mi_graph_add_node(g, "Concat", "cat", 5, cin, 1, &y);
  mi_node_set_int(g, node, "axis", 2);
  mi_graph_add_output(g, y);
  expect_within(g, "Concat of blocks of 1 to 8 floats on the last axis", 0.);
}

/* ---- Concat of two blocks of one float on the last axis (the rotary interleave: [..., 16, 1] +
 * [..., 16, 1] -> [..., 16, 2]), interleaved four rows at a time: 3 x 1001 rows (a tail of one
 * row after the fours; parts that start off a multiple of four on the session's threads); exact. */
static void concat_pairs(void) {
  int64_t xd[3] = {3, 1001, 1};
  int32_t x, cin[2], y, node;
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  cin[0] = x;
  cin[1] = const_f32(g, "c", 3, xd, 11);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  node = mi_graph_add_node(g, "Concat", "cat", 2, cin, 1, &y);
  mi_node_set_int(g, node, "axis", -1);
  mi_graph_add_output(g, y);
  expect_within(g, "Concat of two blocks of one float on the last axis", 0.);
}

/* ---- Concat of blocks of up to 64 floats per outer row (a rotary embedding's rotated 32 of 36
 * joined to the other 4): blocks of 33 and 4, and of 64 and 65 (past the limit: concat_part); exact. */
static void concat_wide_rows_case(int64_t wa, int64_t wb) {
  int64_t xd[3] = {2, 29, wa}, cd[3] = {2, 29, wb};
  int32_t x, cin[2], y, node;
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  cin[0] = x;
  cin[1] = const_f32(g, "c", 3, cd, 5);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  node = mi_graph_add_node(g, "Concat", "cat", 2, cin, 1, &y);
  mi_node_set_int(g, node, "axis", 2);
  mi_graph_add_output(g, y);
  expect_within(g, wb > 64 ? "Concat of blocks of 64 and 65 floats" : "Concat of blocks of 33 and 4 floats", 0.);
}

static void concat_wide_rows(void) {
  concat_wide_rows_case(33, 4);
  concat_wide_rows_case(64, 65);
}

/* ---- Expand, Tile, Gather */

static void expand_tile_tests(void) {
  const int64_t xd[3] = {3, 1, 4}, shape[4] = {2, 3, 5, 4}, reps[3] = {2, 3, 1};
  int32_t x, in[2];
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  in[0] = x;
  in[1] = mi_graph_add_const_i64(g, "shape", 4, shape);
  node_y(g, "Expand", 2, in);
  expect_match(g, "Expand [3,1,4] -> [2,3,5,4]");
  g = graph_x(13, 3, xd, &x);
  in[0] = x;
  in[1] = mi_graph_add_const_i64(g, "reps", 3, reps);
  node_y(g, "Tile", 2, in);
  expect_match(g, "Tile [3,1,4] x [2,3,1]");
}

static void gather_case(int64_t axis, int scalar) {
  const int64_t xd[3] = {4, 5, 6}, idx[4] = {3, -1, 0, 3};
  int32_t x, in[2], node;
  char name[48];
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  in[0] = x;
  if (scalar) {
    int64_t v = -2;
    in[1] = mi_graph_add_tensor(g, "i", MI_DTYPE_INT64, 0, NULL);
    mi_graph_set_data(g, in[1], &v, sizeof v);
  } else {
    in[1] = mi_graph_add_const_i64(g, "i", 4, idx);
  }
  node = node_y(g, "Gather", 2, in);
  mi_node_set_int(g, node, "axis", axis);
  snprintf(name, sizeof name, "Gather axis %lld %s", (long long)axis, scalar ? "scalar" : "vector");
  expect_match(g, name);
}

/* ---- DepthToSpace / SpaceToDepth */

static void depth_space_tests(void) {
  const int64_t dd[4] = {2, 8, 3, 2}, sd[4] = {2, 3, 4, 6};
  const char *modes[2] = {"DCR", "CRD"};
  int32_t x, node;
  int k;
  for (k = 0; k < 2; k++) {
    char name[32];
    mi_graph_t *g = graph_x(13, 4, dd, &x);
    node = node_y(g, "DepthToSpace", 1, &x);
    mi_node_set_int(g, node, "blocksize", 2);
    mi_node_set_string(g, node, "mode", modes[k]);
    snprintf(name, sizeof name, "DepthToSpace %s", modes[k]);
    expect_match(g, name);
  }
  {
    mi_graph_t *g = graph_x(13, 4, sd, &x);
    node = node_y(g, "SpaceToDepth", 1, &x);
    mi_node_set_int(g, node, "blocksize", 2);
    expect_match(g, "SpaceToDepth");
  }
}

/* ---- LogSoftmax, InstanceNormalization, Sum / Mean */

static void logsoftmax_test(int64_t opset, int64_t axis) {
  const int64_t xd[3] = {3, 7, 5};
  int32_t x, node;
  char name[48];
  mi_graph_t *g = graph_x(opset, 3, xd, &x);
  node = node_y(g, "LogSoftmax", 1, &x);
  mi_node_set_int(g, node, "axis", axis);
  snprintf(name, sizeof name, "LogSoftmax-%lld axis %lld", (long long)opset, (long long)axis);
  expect_match(g, name);
}

static void instnorm_test(int rank) {
  const int64_t xd[4] = {2, 3, 6, 5}, c = 3;
  int32_t x, in[3], node;
  mi_graph_t *g = graph_x(13, rank, xd, &x);
  in[0] = x;
  in[1] = const_f32(g, "scale", 1, &c, 41);
  in[2] = const_f32(g, "bias", 1, &c, 42);
  node = node_y(g, "InstanceNormalization", 3, in);
  mi_node_set_float(g, node, "epsilon", 1e-3f);
  expect_match(g, rank == 4 ? "InstanceNormalization 4-D" : "InstanceNormalization 3-D");
}

static void nary_test(const char *op, int count) {
  const int64_t xd[3] = {2, 3, 4}, bd[2] = {3, 1}, cd[3] = {2, 1, 4};
  int32_t x, in[3];
  char name[32];
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  in[0] = x;
  in[1] = const_f32(g, "b", 2, bd, 51);
  in[2] = const_f32(g, "c", 3, cd, 52);
  node_y(g, op, count, in);
  snprintf(name, sizeof name, "%s of %d", op, count);
  expect_match(g, name);
}

/* ---- Round (halves to even) and Sign: t = Floor(x * 2.5) holds integers and zeros; Round reads
 * t + 0.5, exact halves, so ties to even are exercised; Sign reads t. */

static void round_sign_test(const char *op) {
  const int64_t xd[2] = {4, 8};
  int32_t x, t[4], in[2];
  int64_t one = 1;
  float k = 2.5f, h = 0.5f;
  mi_graph_t *g = graph_x(13, 2, xd, &x);
  int round = strcmp(op, "Round") == 0, i;
  for (i = 0; i < 4; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "t%d", i);
    t[i] = mi_graph_add_tensor(g, nm, MI_DTYPE_FLOAT32, -1, NULL);
  }
  in[0] = x;
  in[1] = mi_graph_add_const_f32(g, "k", 0, &one, &k);
  mi_graph_add_node(g, "Mul", "mul", 2, in, 1, &t[0]);
  mi_graph_add_node(g, "Floor", "floor", 1, &t[0], 1, &t[1]);
  in[0] = t[1];
  in[1] = mi_graph_add_const_f32(g, "h", 0, &one, &h);
  mi_graph_add_node(g, "Add", "add", 2, in, 1, &t[2]);
  mi_graph_add_node(g, op, "n0", 1, round ? &t[2] : &t[1], 1, &t[3]);
  mi_graph_add_output(g, t[3]);
  expect_match(g, op);
}

/* ---- ReduceProd, ReduceL2, ReduceLogSumExp */

static void reduce_test(const char *op, int64_t opset, int keepdims) {
  const int64_t xd[3] = {3, 5, 4}, axes[2] = {1, -1};
  int32_t x, node, in[2];
  char name[48];
  mi_graph_t *g = graph_x(opset, 3, xd, &x);
  in[0] = x;
  if (opset >= 18) {
    in[1] = mi_graph_add_const_i64(g, "axes", 2, axes);
    node = node_y(g, op, 2, in);
  } else {
    node = node_y(g, op, 1, in);
    mi_node_set_ints(g, node, "axes", 2, axes);
  }
  mi_node_set_int(g, node, "keepdims", keepdims);
  snprintf(name, sizeof name, "%s-%lld keepdims %d", op, (long long)opset, keepdims);
  expect_match(g, name);
}

/* ---- CumSum and Trilu */

static void cumsum_test(int exclusive, int reverse) {
  const int64_t xd[3] = {2, 6, 3};
  int32_t x, in[2], node;
  char name[48];
  mi_graph_t *g = graph_x(14, 3, xd, &x);
  in[0] = x;
  in[1] = mi_graph_add_tensor(g, "axis", MI_DTYPE_INT64, 0, NULL);
  {
    int64_t a = -2;
    mi_graph_set_data(g, in[1], &a, sizeof a);
  }
  node = node_y(g, "CumSum", 2, in);
  mi_node_set_int(g, node, "exclusive", exclusive);
  mi_node_set_int(g, node, "reverse", reverse);
  snprintf(name, sizeof name, "CumSum exclusive %d reverse %d", exclusive, reverse);
  expect_match(g, name);
}

static void trilu_test(int upper, int64_t k) {
  const int64_t xd[3] = {2, 4, 5};
  int32_t x, in[2], node;
  char name[48];
  mi_graph_t *g = graph_x(14, 3, xd, &x);
  in[0] = x;
  in[1] = mi_graph_add_tensor(g, "k", MI_DTYPE_INT64, 0, NULL);
  mi_graph_set_data(g, in[1], &k, sizeof k);
  node = node_y(g, "Trilu", 2, in);
  mi_node_set_int(g, node, "upper", upper);
  snprintf(name, sizeof name, "Trilu upper %d k %lld", upper, (long long)k);
  expect_match(g, name);
}

/* ---- Mod (fmod=1 on FLOAT32; fmod=0 is refused) */

static void mod_test(int fmod) {
  const int64_t xd[3] = {2, 3, 4}, dd[1] = {4};
  int32_t x, in[2], node;
  float dv[4] = {0.3f, -0.7f, 0.45f, 1.1f};
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  in[0] = x;
  in[1] = mi_graph_add_const_f32(g, "d", 1, dd, dv);
  node = node_y(g, "Mod", 2, in);
  mi_node_set_int(g, node, "fmod", fmod);
  if (fmod) expect_match(g, "Mod fmod=1");
  else
    expect_refused(g, "Mod fmod=0 on FLOAT32");
}

/* Pow by a constant exponent: 2 as a square (the bits of powf), others through powf. */
static void pow_test(float ev, int rank) {
  const int64_t xd[3] = {2, 3, 37}, one = 1;
  int32_t x, in[2];
  char name[64];
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  in[0] = x;
  in[1] = mi_graph_add_const_f32(g, "e", rank, &one, &ev);
  node_y(g, "Pow", 2, in);
  snprintf(name, sizeof name, "Pow x^%g (exponent rank %d)", ev, rank);
  expect_within(g, name, 0.0);
}

static mi_registry_t *r;
static mi_error_t err = {0, ""};

static void setup(void) {
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  {
    uint32_t dev = 0;
    tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
  }
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void split(void) {
  split_test(13);
  split_test(11);
}

static void gather(void) {
  gather_case(0, 0);
  gather_case(1, 0);
  gather_case(2, 1);
}

static void logsoftmax(void) {
  logsoftmax_test(13, 1);
  logsoftmax_test(13, -1);
  logsoftmax_test(11, 1);
}

/* One plane of 4099 values offset by 20 (a one-group GroupNorm, as Moonshine's encoder writes it
 * after its first conv): the eight partial sums, their tail, and a mean far from 0. */
static void instnorm_plane_test(void) {
  const int64_t xd[3] = {1, 1, 4099}, c = 1;
  int32_t x, in[3], node;
  mi_graph_t *g = graph_x(13, 3, xd, &x);
  float twenty = 20.0f;
  int32_t ain[2] = {x, mi_graph_add_const_f32(g, "twenty", 0, NULL, &twenty)};
  in[0] = mi_graph_add_tensor(g, "xs", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Add", "add", 2, ain, 1, &in[0]);
  in[1] = const_f32(g, "scale", 1, &c, 43);
  in[2] = const_f32(g, "bias", 1, &c, 44);
  node = node_y(g, "InstanceNormalization", 3, in);
  mi_node_set_float(g, node, "epsilon", 1e-5f);
  expect_match(g, "InstanceNormalization, one plane of 4099");
}

static void instnorm(void) {
  instnorm_test(4);
  instnorm_test(3);
  instnorm_plane_test();
}

static void nary(void) {
  nary_test("Sum", 3);
  nary_test("Sum", 1);
  nary_test("Mean", 3);
  nary_test("Mean", 2);
}

static void round_sign(void) {
  round_sign_test("Round");
  round_sign_test("Sign");
}

static void reduce(void) {
  reduce_test("ReduceProd", 13, 1);
  reduce_test("ReduceProd", 18, 0);
  reduce_test("ReduceL2", 13, 0);
  reduce_test("ReduceL2", 18, 1);
  reduce_test("ReduceLogSumExp", 13, 1);
  reduce_test("ReduceLogSumExp", 18, 0);
}

static void cumsum(void) {
  cumsum_test(0, 0);
  cumsum_test(1, 0);
  cumsum_test(0, 1);
  cumsum_test(1, 1);
}

static void trilu(void) {
  trilu_test(1, 0);
  trilu_test(1, 2);
  trilu_test(0, -1);
}

static void pow_const(void) {
  pow_test(2.f, 1);
  pow_test(2.f, 0);
  pow_test(3.f, 1);
  pow_test(3.f, 0);
}

static void mod(void) {
  mod_test(1);
  mod_test(0);
}

/* Resizes by factors other than 2 on the innermost axis (8 outputs a step gathered through the
 * index tables) and by 2 (the doubling run and its last pairs in masked lanes), at each SIMD level
 * (MI_BLIS_MAX_SIMD caps it as the plugin loads): 16 -> 1024 and 32 -> 1000 as a segmentation
 * model's side outputs, 13 -> 26 and 41 -> 82 columns (runs ending in 0 to 15 whole pairs), the
 * reference's bits at every level. */
static void resize_levels(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  mi_plugin_t *keep = g_blis;
  mi_registry_t *keep_r = r;
  for (int lv = 0; lv < 3; lv++) {
    uint32_t dev = 0;
    if (caps[lv]) setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    else
      unsetenv("MI_BLIS_MAX_SIMD");
    r = mi_registry_create();
    REQUIRE(r && tu_scan_plugins(r, &err) == MI_OK && mi_registry_device(r, "blis-cpu:0", &g_blis, &dev, &err) == MI_OK);
    {
      const int64_t x16[4] = {1, 1, 16, 16}, s16[4] = {1, 1, 64, 1024}, x32[4] = {1, 2, 8, 32}, s32[4] = {1, 2, 24, 1000};
      const int64_t x13[4] = {1, 2, 5, 13}, x41[4] = {1, 3, 4, 41};
      const float up2[4] = {1.f, 1.f, 2.f, 2.f};
      resize_case(13, "linear", "half_pixel", NULL, NULL, s16, x16);
      resize_case(13, "linear", "align_corners", NULL, NULL, s32, x32);
      resize_case(13, "nearest", "asymmetric", "floor", NULL, s16, x16);
      resize_case(13, "linear", "half_pixel", NULL, up2, NULL, x13);
      resize_case(13, "linear", "pytorch_half_pixel", NULL, up2, NULL, x41);
      resize_case(13, "nearest", "half_pixel", "round_prefer_ceil", up2, NULL, x41);
    }
    mi_registry_destroy(r);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
  r = keep_r;
  g_blis = keep;
}

static const tu_case_t tu_cases[] = {
    TU_CASE(resize_tests),
    TU_CASE(resize_levels),
    TU_CASE(cast_clip_test),
    TU_CASE(prelu_test),
    TU_CASE(pad_tests),
    TU_CASE(split),
    TU_CASE(concat_const),
    TU_CASE(concat_rows),
    TU_CASE(concat_pairs),
    TU_CASE(concat_wide_rows),
    TU_CASE(expand_tile_tests),
    TU_CASE(gather),
    TU_CASE(depth_space_tests),
    TU_CASE(logsoftmax),
    TU_CASE(instnorm),
    TU_CASE(nary),
    TU_CASE(round_sign),
    TU_CASE(reduce),
    TU_CASE(cumsum),
    TU_CASE(trilu),
    TU_CASE(mod),
    TU_CASE(pow_const),
};

TU_MAIN(setup, teardown)
