/* test_blis_gnorm.c - blis-cpu's GroupNormalization (opsets 18, 21), MeanVarianceNormalization,
 * LpNormalization, ReduceL1/ReduceSumSquare/ReduceLogSum, CastLike, GatherND, ScatterElements,
 * Hardmax and OneHot (blis_gnorm.c, blis_pick.c, blis_nn.c): each one-node graph runs in a session
 * on blis-cpu:0 with host fallback off and is compared with mi_ref_run; the normalisations and
 * reductions at each SIMD level (MI_BLIS_MAX_SIMD caps it as the plugin loads). Forms blis-cpu does not run are
 * refused by it with MI_ERR_UNSUPPORTED (the host runs them in a session that allows fallback);
 * an index out of range at run time is a one-line error naming the node. */
#include <math.h>

#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

static float rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* A test graph: its inputs' values are given by the case (ins[]), not drawn by the runner. */
typedef struct tcase {
  mi_graph_t *g;
  mi_array_t *in[4];
  int32_t nin;
  uint64_t seed;
} tcase_t;

static void tc_init(tcase_t *c, int64_t opset) {
  memset(c, 0, sizeof *c);
  REQUIRE((c->g = mi_graph_create("t")));
  c->g->opset = opset;
  c->seed = 7;
}

/* A FLOAT32 graph input of random values in [-1, 1) times scale plus shift. */
static int32_t tc_float(tcase_t *c, const char *name, int rank, const int64_t *dims, float scale, float shift) {
  int32_t t = mi_graph_add_tensor(c->g, name, MI_DTYPE_FLOAT32, rank, dims);
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, rank, dims);
  int64_t i, n = 1;
  REQUIRE(a && t >= 0 && c->nin < 4);
  for (i = 0; i < rank; i++) n *= dims[i];
  for (i = 0; i < n; i++) ((float *)a->data)[i] = rnd(&c->seed) * scale + shift;
  mi_graph_add_input(c->g, t);
  c->in[c->nin++] = a;
  return t;
}

/* An INT64 graph input holding vals. */
static int32_t tc_index(tcase_t *c, const char *name, int rank, const int64_t *dims, const int64_t *vals) {
  int32_t t = mi_graph_add_tensor(c->g, name, MI_DTYPE_INT64, rank, dims);
  mi_array_t *a = mi_array_create(MI_DTYPE_INT64, rank, dims);
  int64_t i, n = 1;
  REQUIRE(a && t >= 0 && c->nin < 4);
  for (i = 0; i < rank; i++) n *= dims[i];
  for (i = 0; i < n; i++) ((int64_t *)a->data)[i] = vals[i];
  mi_graph_add_input(c->g, t);
  c->in[c->nin++] = a;
  return t;
}

static int32_t tc_node(tcase_t *c, const char *op, int nin, const int32_t *ins) {
  int32_t y = mi_graph_add_tensor(c->g, "y", MI_DTYPE_UNDEFINED, -1, NULL), node;
  node = mi_graph_add_node(c->g, op, "n0", nin, ins, 1, &y);
  mi_graph_add_output(c->g, y);
  return node;
}

/* Runs the case on blis-cpu:0 (no host fallback) and on the reference: MI_OK and *e = rel L2,
 * *mx = max abs difference, or the first failing status (err filled). Frees the case. */
static int32_t tc_run(tcase_t *c, double *e, double *mx, mi_error_t *err) {
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *out_d = NULL, *out_r = NULL;
  int32_t i, rc = mi_graph_infer_shapes(c->g, err);
  *e = *mx = INFINITY;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0;
  if (rc == MI_OK) rc = mi_session_create(c->g, g_blis, 0, &o, &s, err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)c->in, c->nin, &out_d, 1, err);
  if (rc == MI_OK && mi_session_fallback_count(s) != 0) {
    snprintf(err->message, sizeof err->message, "%d node(s) ran on the host", mi_session_fallback_count(s));
    rc = MI_ERR_INTERNAL;
  }
  if (rc == MI_OK) rc = mi_ref_run(c->g, (const mi_array_t *const *)c->in, c->nin, &out_r, 1, err);
  if (rc == MI_OK) {
    int64_t k, n = mi_array_numel(out_r);
    *e = tu_rel_l2_arrays(out_d, out_r);
    *mx = mi_array_numel(out_d) == n ? 0 : INFINITY;
    for (k = 0; k < n && !isinf(*mx); k++) {
      double d = fabs((double)((float *)out_d->data)[k] - ((float *)out_r->data)[k]);
      if (d != d) { /* NaN on one side */
        *mx = INFINITY;
        break;
      }
      if (d > *mx) *mx = d;
    }
  }
  mi_session_destroy(s);
  for (i = 0; i < c->nin; i++) mi_array_destroy(c->in[i]);
  mi_array_destroy(out_d);
  mi_array_destroy(out_r);
  mi_graph_destroy(c->g);
  return rc;
}

/* rel L2 within limit (0: the reference's bits). */
static void expect_within(tcase_t *c, const char *name, double limit) {
  mi_error_t err = {0, ""};
  double e, mx;
  int32_t rc = tc_run(c, &e, &mx, &err);
  CHECK(rc == MI_OK, "%s: %s", name, err.message);
  if (rc == MI_OK) CHECK(limit > 0 ? e <= limit : mx == 0, "%s: rel L2 %g, max abs %g (limit %g)", name, e, mx, limit);
}

static void expect_refused(tcase_t *c, const char *name) {
  mi_error_t err = {0, ""};
  double e, mx;
  int32_t rc = tc_run(c, &e, &mx, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "blis-cpu"), "%s: status %d (%s), expected blis-cpu's refusal",
        name, rc, err.message);
}

/* ---- normalisations */

static void gn_case(int64_t opset, int rank, const int64_t *xd, int64_t groups, float eps) {
  tcase_t c;
  int32_t in[3], node;
  int64_t C = xd[1], k = opset >= 21 ? C : groups;
  char name[96];
  tc_init(&c, opset);
  in[0] = tc_float(&c, "x", rank, xd, 2.f, 0.5f);
  in[1] = tc_float(&c, "s", 1, &k, 1.f, 0.f);
  in[2] = tc_float(&c, "b", 1, &k, 1.f, 0.f);
  node = tc_node(&c, "GroupNormalization", 3, in);
  mi_node_set_int(c.g, node, "num_groups", groups);
  if (eps > 0) mi_node_set_float(c.g, node, "epsilon", eps);
  snprintf(name, sizeof name, "GroupNormalization-%lld rank %d C %lld G %lld", (long long)opset, rank, (long long)C,
           (long long)groups);
  expect_within(&c, name, 1e-6);
}

static void mvn_case(int64_t opset, int rank, const int64_t *xd, int na, const int64_t *axes) {
  tcase_t c;
  int32_t x, node;
  char name[96];
  tc_init(&c, opset);
  x = tc_float(&c, "x", rank, xd, 3.f, 1.f);
  node = tc_node(&c, "MeanVarianceNormalization", 1, &x);
  if (axes) mi_node_set_ints(c.g, node, "axes", na, axes);
  snprintf(name, sizeof name, "MeanVarianceNormalization-%lld rank %d, %d axes from %lld", (long long)opset, rank,
           axes ? na : 3, (long long)(axes ? axes[0] : 0));
  expect_within(&c, name, 1e-6);
}

static void lp_case(int rank, const int64_t *xd, int64_t axis, int64_t p) {
  tcase_t c;
  int32_t x, node;
  char name[96];
  tc_init(&c, 13);
  x = tc_float(&c, "x", rank, xd, 1.f, 0.f);
  if (axis == -1) /* a zero line stays zero */
    memset(c.in[0]->data, 0, (size_t)xd[rank - 1] * sizeof(float));
  node = tc_node(&c, "LpNormalization", 1, &x);
  mi_node_set_int(c.g, node, "axis", axis);
  mi_node_set_int(c.g, node, "p", p);
  snprintf(name, sizeof name, "LpNormalization p %lld axis %lld of rank %d", (long long)p, (long long)axis, rank);
  expect_within(&c, name, 1e-6);
}

static void reductions(void);

/* The normalisations' shapes: bodies of 8 and tails, strided and contiguous runs. */
static void norms_at_level(void) {
  static const int64_t g4[4] = {2, 8, 5, 7}, g32[4] = {1, 32, 16, 16}, g3[3] = {3, 6, 10}, g2[2] = {4, 6};
  static const int64_t m4[4] = {2, 3, 4, 5}, m1[4] = {1, 4, 6, 7}, m3[3] = {3, 5, 40}, ms[3] = {2, 6, 9};
  static const int64_t l3[3] = {3, 4, 37}, lw[3] = {2, 5, 130};
  static const int64_t a23[2] = {2, 3}, alast[1] = {-1}, a1[1] = {1}, aall[4] = {0, 1, 2, 3}, a0[1] = {0};
  for (int64_t opset = 18; opset <= 21; opset += 3) {
    gn_case(opset, 4, g4, 4, 0);
    gn_case(opset, 4, g4, 8, 1e-3f);
    gn_case(opset, 4, g4, 1, 0);
    gn_case(opset, 4, g32, 8, 0);
    gn_case(opset, 3, g3, 3, 0);
    gn_case(opset, 2, g2, 2, 0);
  }
  mvn_case(13, 4, m4, 0, NULL);
  mvn_case(9, 4, m1, 0, NULL);
  mvn_case(13, 4, m1, 2, a23);
  mvn_case(13, 3, m3, 1, alast);
  mvn_case(13, 3, ms, 1, a1);
  mvn_case(13, 4, m4, 4, aall);
  mvn_case(13, 3, m3, 1, a0);
  for (int64_t p = 1; p <= 2; p++) {
    lp_case(3, l3, -1, p);
    lp_case(3, l3, 1, p);
    lp_case(3, lw, 1, p);
    lp_case(3, l3, 0, p);
  }
}

static void norms(void) {
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
    norms_at_level();
    reductions(); /* the row path's three bodies */
    mi_registry_destroy(r);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
  r = keep_r;
  g_blis = keep;
}

static void norm_refusals(void) {
  static const int64_t g4[4] = {2, 8, 5, 7}, k8 = 8;
  tcase_t c;
  int32_t in[3], node;
  tc_init(&c, 21);
  in[0] = tc_float(&c, "x", 4, g4, 1.f, 0.f);
  in[1] = tc_float(&c, "s", 1, &k8, 1.f, 0.f);
  in[2] = tc_float(&c, "b", 1, &k8, 1.f, 0.f);
  node = tc_node(&c, "GroupNormalization", 3, in);
  mi_node_set_int(c.g, node, "num_groups", 4);
  mi_node_set_int(c.g, node, "stash_type", 0);
  expect_refused(&c, "GroupNormalization stash_type 0");
  tc_init(&c, 18);
  in[0] = tc_float(&c, "x", 4, g4, 1.f, 0.f);
  node = tc_node(&c, "ReduceSumSquare", 1, in);
  mi_node_set_int(c.g, node, "noop_with_empty_axes", 1);
  expect_refused(&c, "ReduceSumSquare noop_with_empty_axes");
}

/* ---- reductions */

static void reduce_case(const char *op, int64_t opset, int na, const int64_t *axes, int keepdims) {
  static const int64_t xd[4] = {2, 3, 5, 7};
  tcase_t c;
  int32_t in[2], node, nin = 1;
  char name[96];
  tc_init(&c, opset);
  /* ReduceLogSum takes the log of the sum: positive values */
  in[0] = tc_float(&c, "x", 4, xd, strcmp(op, "ReduceLogSum") ? 2.f : 0.5f, strcmp(op, "ReduceLogSum") ? 0.f : 1.f);
  if (opset >= 18 && na > 0) in[nin++] = mi_graph_add_const_i64(c.g, "axes", na, axes);
  node = tc_node(&c, op, nin, in);
  if (opset < 18 && na > 0) mi_node_set_ints(c.g, node, "axes", na, axes);
  mi_node_set_int(c.g, node, "keepdims", keepdims);
  snprintf(name, sizeof name, "%s-%lld, %d axes, keepdims %d", op, (long long)opset, na, keepdims);
  expect_within(&c, name, 1e-6);
}

static void reductions(void) {
  static const char *const ops[3] = {"ReduceL1", "ReduceSumSquare", "ReduceLogSum"};
  static const int64_t a1[1] = {1}, a23[2] = {-1, 2}, a03[2] = {0, 3}, a123[3] = {1, 2, 3};
  for (int i = 0; i < 3; i++) {
    reduce_case(ops[i], 13, 1, a1, 1);   /* a middle axis: the serial loop */
    reduce_case(ops[i], 13, 2, a23, 0);  /* trailing axes: rows on the pool */
    reduce_case(ops[i], 18, 2, a03, 1);  /* the serial loop */
    reduce_case(ops[i], 18, 0, NULL, 0); /* all: one row */
    reduce_case(ops[i], 18, 3, a123, 1); /* trailing, keepdims */
  }
}

/* ---- data movement */

static void castlike(void) {
  static const int64_t xd[2] = {3, 50}, one = 1;
  tcase_t c;
  int32_t in[2];
  tc_init(&c, 15);
  in[0] = tc_float(&c, "x", 2, xd, 4.f, 0.f);
  in[1] = tc_float(&c, "like", 1, &one, 1.f, 0.f);
  tc_node(&c, "CastLike", 2, in);
  expect_within(&c, "CastLike FLOAT32 like FLOAT32", 0);
}

static void hardmax_case(int64_t opset, int64_t axis) {
  static const int64_t xd[3] = {3, 4, 5};
  tcase_t c;
  int32_t x, node, i;
  char name[64];
  tc_init(&c, opset);
  x = tc_float(&c, "x", 3, xd, 1.f, 0.f);
  for (i = 0; i < 60; i++) /* three values only: ties, the first maximum wins */
    ((float *)c.in[0]->data)[i] = roundf(((float *)c.in[0]->data)[i]);
  node = tc_node(&c, "Hardmax", 1, &x);
  mi_node_set_int(c.g, node, "axis", axis);
  snprintf(name, sizeof name, "Hardmax-%lld axis %lld", (long long)opset, (long long)axis);
  expect_within(&c, name, 0);
}

static void onehot_case(int64_t axis) {
  static const int64_t id[2] = {3, 4}, iv[12] = {0, 1, 2, 3, -1, -4, 4, -5, 9, 2, 0, 3}, two = 2;
  static const int64_t depth = 4;
  static const float vals[2] = {-1.f, 3.f};
  tcase_t c;
  int32_t in[3], node;
  char name[64];
  tc_init(&c, 11);
  in[0] = tc_index(&c, "i", 2, id, iv);
  in[1] = mi_graph_add_const_i64(c.g, "depth", 1, &depth);
  in[2] = mi_graph_add_const_f32(c.g, "vals", 1, &two, vals);
  node = tc_node(&c, "OneHot", 3, in);
  mi_node_set_int(c.g, node, "axis", axis);
  snprintf(name, sizeof name, "OneHot axis %lld", (long long)axis);
  expect_within(&c, name, 0);
}

static void gather_nd_case(int64_t b, int rank, const int64_t *idims, const int64_t *iv, int bad) {
  static const int64_t xd[3] = {2, 3, 4};
  tcase_t c;
  int32_t in[2], node;
  char name[64];
  tc_init(&c, 13);
  in[0] = tc_float(&c, "x", 3, xd, 1.f, 0.f);
  in[1] = tc_index(&c, "i", rank, idims, iv);
  node = tc_node(&c, "GatherND", 2, in);
  mi_node_set_int(c.g, node, "batch_dims", b);
  snprintf(name, sizeof name, "GatherND batch_dims %lld, k %lld", (long long)b, (long long)idims[rank - 1]);
  if (!bad) {
    expect_within(&c, name, 0);
  } else {
    mi_error_t err = {0, ""};
    double e, mx;
    int32_t rc = tc_run(&c, &e, &mx, &err);
    CHECK(rc == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "blis-cpu: GatherND 'n0': index 7 is out of range"),
          "%s with index 7: status %d (%s)", name, rc, err.message);
  }
}

static void gather_nd(void) {
  static const int64_t d22[2] = {2, 2}, v22[4] = {0, 1, 1, -1}, d231[3] = {2, 3, 1}, v231[6] = {2, 0, 1, 1, 2, -3};
  static const int64_t d13[2] = {1, 3}, v13[3] = {1, 2, 3}, d11[2] = {2, 1}, v11[2] = {1, 0}, vbad[4] = {0, 1, 7, 0};
  gather_nd_case(0, 2, d22, v22, 0);
  gather_nd_case(1, 3, d231, v231, 0);
  gather_nd_case(0, 2, d13, v13, 0);
  gather_nd_case(0, 2, d11, v11, 0);
  gather_nd_case(0, 2, d22, vbad, 1);
  {
    /* INT64 data: runtime INT64 tensors other than indices stay on the host */
    static const int64_t xd[2] = {3, 4}, xv[12] = {5, -2, 7, 0, 1, 9, -4, 3, 8, 2, 6, -1};
    tcase_t c;
    int32_t in[2];
    tc_init(&c, 13);
    in[0] = tc_index(&c, "x", 2, xd, xv);
    in[1] = tc_index(&c, "i", 2, d11, v11);
    tc_node(&c, "GatherND", 2, in);
    expect_refused(&c, "GatherND on INT64 data");
  }
}

static void scatter_case(int64_t opset, const char *red, int64_t axis) {
  static const int64_t xd[2] = {4, 5}, i0[2] = {2, 5}, i1[2] = {4, 2};
  static const int64_t v0[10] = {0, 1, 2, 3, 0, 3, 1, 2, 3, 0}, v1[8] = {0, -1, 4, 4, 2, 1, -5, 3};
  tcase_t c;
  int32_t in[3], node;
  char name[80];
  tc_init(&c, opset);
  in[0] = tc_float(&c, "x", 2, xd, 1.f, 0.f);
  in[1] = tc_index(&c, "i", 2, axis ? i1 : i0, axis ? v1 : v0);
  in[2] = tc_float(&c, "u", 2, axis ? i1 : i0, 2.f, 0.f);
  node = tc_node(&c, "ScatterElements", 3, in);
  mi_node_set_int(c.g, node, "axis", axis);
  if (red) mi_node_set_string(c.g, node, "reduction", red);
  snprintf(name, sizeof name, "ScatterElements-%lld %s axis %lld", (long long)opset, red ? red : "-", (long long)axis);
  expect_within(&c, name, 0);
}

static void scatter_elements(void) {
  scatter_case(11, NULL, 0);
  scatter_case(13, NULL, 1);
  scatter_case(13, NULL, -1);
  scatter_case(16, "add", 0);
  scatter_case(16, "mul", 1);
  scatter_case(18, "max", 0);
  scatter_case(18, "min", 1);
  {
    /* an index out of range at run time: blis-cpu's one-line error naming the node */
    static const int64_t xd[2] = {4, 5}, id[2] = {1, 5}, iv[5] = {0, 1, 4, 3, 2};
    mi_error_t err = {0, ""};
    double e, mx;
    tcase_t c;
    int32_t in[3], rc;
    tc_init(&c, 13);
    in[0] = tc_float(&c, "x", 2, xd, 1.f, 0.f);
    in[1] = tc_index(&c, "i", 2, id, iv);
    in[2] = tc_float(&c, "u", 2, id, 1.f, 0.f);
    tc_node(&c, "ScatterElements", 3, in);
    rc = tc_run(&c, &e, &mx, &err);
    CHECK(rc == MI_ERR_INVALID_ARGUMENT &&
              strstr(err.message, "blis-cpu: ScatterElements 'n0': index 4 is out of range for axis 0 of size 4"),
          "ScatterElements with index 4: status %d (%s)", rc, err.message);
  }
}

static void picks(void) {
  castlike();
  hardmax_case(11, 1);
  hardmax_case(13, 1);
  hardmax_case(13, -1);
  hardmax_case(13, 0);
  onehot_case(-1);
  onehot_case(0);
  onehot_case(1);
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
    TU_CASE(norms),
    TU_CASE(norm_refusals),
    TU_CASE(picks),
    TU_CASE(gather_nd),
    TU_CASE(scatter_elements),
};

TU_MAIN(setup, teardown)
