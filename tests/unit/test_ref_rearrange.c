/* test_ref_rearrange.c - Split (all three opset forms), Trilu, CumSum, DepthToSpace (DCR and
 * CRD), SpaceToDepth, PRelu, Mod, IsNaN/IsInf and InstanceNormalization against values worked
 * out by hand, with inferred output shapes checked against the run. */
#include "test_ref_common.h"

static const int64_t D23[2] = {2, 3};
static const float V6[6] = {1, 2, 3, 4, 5, 6};

static void test_split(void) {
  int64_t d21[2] = {2, 1}, d22[2] = {2, 2}, two = 2, five = 5, three = 3, two1[2] = {2, 1};
  mi_array_t *in[2] = {arr_f32(2, D23, V6), arr_i64(1, &two, two1)}, *y[3] = {NULL};
  mi_error_t err = {0};
  op_case_t k;

  case_begin(&k, "Split", 11, 1, in, 0, 2); /* opset 11: the split attribute */
  mi_node_set_int(k.g, k.node, "axis", 1);
  mi_node_set_ints(k.g, k.node, "split", 2, (int64_t[]){1, 2});
  CHECK(case_run(&k, y, 0, &err) == MI_OK, "Split 11: %s", err.message);
  expect_f32("Split 11 part 0", y[0], 2, d21, (float[]){1, 4}, 0);
  expect_f32("Split 11 part 1", y[1], 2, d22, (float[]){2, 3, 5, 6}, 0);
  mi_array_destroy(y[0]), mi_array_destroy(y[1]);

  case_begin(&k, "Split", 13, 2, in, 2u, 2); /* opset 13: split as an input */
  mi_node_set_int(k.g, k.node, "axis", -1);
  CHECK(case_run(&k, y, 0, &err) == MI_OK, "Split 13: %s", err.message);
  expect_f32("Split 13 part 0", y[0], 2, d22, (float[]){1, 2, 4, 5}, 0);
  expect_f32("Split 13 part 1", y[1], 2, d21, (float[]){3, 6}, 0);
  mi_array_destroy(y[0]), mi_array_destroy(y[1]);

  case_begin(&k, "Split", 13, 1, in, 0, 3); /* no split: equal parts */
  mi_node_set_int(k.g, k.node, "axis", 1);
  CHECK(case_run(&k, y, 0, &err) == MI_OK, "Split equal: %s", err.message);
  for (int i = 0; i < 3; i++) {
    expect_f32("Split equal", y[i], 2, d21, (float[]){(float)(i + 1), (float)(i + 4)}, 0);
    mi_array_destroy(y[i]);
  }

  mi_array_t *x5 = arr_f32(1, &five, (float[]){1, 2, 3, 4, 5});
  case_begin(&k, "Split", 18, 1, &x5, 0, 2); /* num_outputs: parts of ceil(5/2), last smaller */
  mi_node_set_int(k.g, k.node, "num_outputs", 2);
  CHECK(case_run(&k, y, 0, &err) == MI_OK, "Split 18: %s", err.message);
  expect_f32("Split 18 part 0", y[0], 1, &three, (float[]){1, 2, 3}, 0);
  expect_f32("Split 18 part 1", y[1], 1, &two, (float[]){4, 5}, 0);
  mi_array_destroy(y[0]), mi_array_destroy(y[1]);

  case_begin(&k, "Split", 13, 1, &x5, 0, 2); /* 5 in 2 equal parts before opset 18: no */
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x5), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static void test_trilu(void) {
  int64_t d33[2] = {3, 3}, one = 1;
  float xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  struct {
    int upper;
    int64_t k;
    int with_k;
    float want[9];
  } cases[] = {
      {1, 0, 0, {1, 2, 3, 0, 5, 6, 0, 0, 9}},
      {1, 1, 1, {0, 2, 3, 0, 0, 6, 0, 0, 0}},
      {0, 0, 0, {1, 0, 0, 4, 5, 0, 7, 8, 9}},
      {0, -1, 1, {0, 0, 0, 4, 0, 0, 7, 8, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mi_array_t *in[2] = {arr_f32(2, d33, xv), arr_i64(0, &one, &cases[i].k)}, *y = NULL;
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, "Trilu", 14, cases[i].with_k ? 2 : 1, in, 2u, 1);
    if (!cases[i].upper) mi_node_set_int(k.g, k.node, "upper", 0);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Trilu: %s", err.message);
    char what[64];
    snprintf(what, sizeof what, "Trilu upper=%d k=%lld", cases[i].upper, (long long)cases[i].k);
    expect_f32(what, y, 2, d33, cases[i].want, 0);
    mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  }
}

static void test_cumsum(void) {
  int64_t one = 1, axis1 = 1, axis0 = 0;
  struct {
    int excl, rev;
    float want[6];
  } cases[] = {
      {0, 0, {1, 3, 6, 4, 9, 15}},
      {1, 0, {0, 1, 3, 0, 4, 9}},
      {0, 1, {6, 5, 3, 15, 11, 6}},
      {1, 1, {5, 3, 0, 11, 6, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mi_array_t *in[2] = {arr_f32(2, D23, V6), arr_i64(0, &one, &axis1)}, *y = NULL;
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, "CumSum", 14, 2, in, 2u, 1);
    mi_node_set_int(k.g, k.node, "exclusive", cases[i].excl);
    mi_node_set_int(k.g, k.node, "reverse", cases[i].rev);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "CumSum: %s", err.message);
    char what[64];
    snprintf(what, sizeof what, "CumSum exclusive=%d reverse=%d", cases[i].excl, cases[i].rev);
    expect_f32(what, y, 2, D23, cases[i].want, 0);
    mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  }
  mi_array_t *in[2] = {arr_i64(2, D23, (int64_t[]){1, 2, 3, 4, 5, 6}), arr_i64(0, &one, &axis0)};
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "CumSum", 14, 2, in, 0, 1); /* axis at run time */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "CumSum int64: %s", err.message);
  expect_i64("CumSum int64 axis 0", y, 2, D23, (int64_t[]){1, 2, 3, 5, 7, 9});
  mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static mi_array_t *depth_space(const char *op, const char *mode, mi_array_t *x) {
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, op, 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "blocksize", 2);
  if (mode) mi_node_set_string(k.g, k.node, "mode", mode);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", op, err.message);
  return y;
}

static void test_depth_space(void) {
  int64_t d8[4] = {1, 8, 1, 1}, d2[4] = {1, 2, 2, 2}, d4[4] = {1, 4, 1, 2}, ds[4] = {1, 1, 2, 4};
  float v8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  mi_array_t *x = arr_f32(4, d8, v8), *y;
  /* DCR: y[c][i][j] = x[(i*2 + j)*2 + c]; CRD: y[c][i][j] = x[c*4 + i*2 + j]. */
  y = depth_space("DepthToSpace", NULL, x);
  expect_f32("DepthToSpace DCR", y, 4, d2, (float[]){0, 2, 4, 6, 1, 3, 5, 7}, 0);
  mi_array_destroy(y);
  y = depth_space("DepthToSpace", "CRD", x);
  expect_f32("DepthToSpace CRD", y, 4, d2, v8, 0);
  mi_array_destroy(y), mi_array_destroy(x);
  /* Spatial: x[c][0][w] = 2c + w; block row i takes channels 2i, 2i+1 interleaved by w. */
  float sp[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  x = arr_f32(4, d4, v8);
  y = depth_space("DepthToSpace", "DCR", x);
  expect_f32("DepthToSpace DCR spatial", y, 4, ds, sp, 0);
  mi_array_destroy(y), mi_array_destroy(x);
  x = arr_f32(4, ds, sp); /* and back */
  y = depth_space("SpaceToDepth", NULL, x);
  expect_f32("SpaceToDepth", y, 4, d4, v8, 0);
  mi_array_destroy(y), mi_array_destroy(x);
  /* H = 1 does not divide by the block: refused on both paths. */
  mi_error_t err = {0};
  op_case_t k;
  x = arr_f32(4, d4, v8);
  case_begin(&k, "SpaceToDepth", 13, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "blocksize", 2);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(x);
}

static void test_prelu(void) {
  int64_t xd[3] = {1, 2, 2}, sd[2] = {2, 1}, one = 1, three = 3;
  float xv[4] = {-1, 2, -3, 4};
  struct {
    int32_t rank;
    const int64_t *dims;
    float s[2];
    float want[4];
  } cases[] = {
      {2, sd, {0.5f, 0.25f}, {-0.5f, 2, -0.75f, 4}}, /* one slope per row */
      {1, &one, {0.1f, 0}, {-0.1f, 2, -0.3f, 4}},
  };
  for (size_t i = 0; i < 2; i++) {
    mi_array_t *in[2] = {arr_f32(3, xd, xv), arr_f32(cases[i].rank, cases[i].dims, cases[i].s)};
    mi_array_t *y = NULL;
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, "PRelu", 16, 2, in, 2u, 1);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "PRelu: %s", err.message);
    expect_f32("PRelu", y, 3, xd, cases[i].want, 1e-7f);
    mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  }
  mi_array_t *in[2] = {arr_f32(3, xd, xv), arr_f32(1, &three, (float[]){1, 2, 3})};
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "PRelu", 16, 2, in, 2u, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static void test_mod(void) {
  int64_t five = 5, two = 2, d1[1] = {2}, d21[2] = {2, 1}, d22[2] = {2, 2};
  int64_t a[5] = {5, -5, 5, -5, 7}, b[5] = {3, 3, -3, -3, 7};
  int64_t py[5] = {2, 1, -1, -2, 0}, c[5] = {2, -2, 2, -2, 0};
  for (int fm = 0; fm <= 1; fm++) {
    mi_array_t *in[2] = {arr_i64(1, &five, a), arr_i64(1, &five, b)}, *y = NULL;
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, "Mod", 13, 2, in, 0, 1);
    mi_node_set_int(k.g, k.node, "fmod", fm);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Mod: %s", err.message);
    expect_i64(fm ? "Mod fmod=1" : "Mod fmod=0", y, 1, &five, fm ? c : py);
    mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  }
  /* Broadcast [2,1] against [2], divisor sign decides (fmod = 0). */
  mi_array_t *in[2] = {arr_i64(2, d21, (int64_t[]){7, -7}), arr_i64(1, d1, (int64_t[]){4, -4})};
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "Mod", 13, 2, in, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "Mod broadcast: %s", err.message);
  expect_i64("Mod broadcast", y, 2, d22, (int64_t[]){3, -1, 1, -3});
  mi_array_destroy(y), mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  /* Floats: C fmod, and fmod = 0 is refused as the spec requires. */
  in[0] = arr_f32(1, &two, (float[]){5.5f, -5.5f});
  in[1] = arr_f32(1, &two, (float[]){2, 2});
  for (int fm = 1; fm >= 0; fm--) {
    case_begin(&k, "Mod", 13, 2, in, 0, 1);
    mi_node_set_int(k.g, k.node, "fmod", fm);
    int32_t rc = case_run(&k, &y, 0, &err);
    if (fm) {
      CHECK(rc == MI_OK, "Mod float: %s", err.message);
      expect_f32("Mod float fmod=1", y, 1, &two, (float[]){1.5f, -1.5f}, 0);
      mi_array_destroy(y);
    } else {
      CHECK(rc == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "fmod"),
            "Mod float fmod=0 refused: %s", err.message);
    }
  }
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
}

static void test_isnan_isinf(void) {
  int64_t four = 4;
  float xv[4] = {1, NAN, INFINITY, -INFINITY};
  struct {
    const char *op;
    const char *attr;
    uint8_t want[4];
  } cases[] = {
      {"IsNaN", NULL, {0, 1, 0, 0}},
      {"IsInf", NULL, {0, 0, 1, 1}},
      {"IsInf", "detect_negative", {0, 0, 1, 0}},
      {"IsInf", "detect_positive", {0, 0, 0, 1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mi_array_t *x = arr_f32(1, &four, xv), *y = NULL;
    mi_error_t err = {0};
    op_case_t k;
    case_begin(&k, cases[i].op, 20, 1, &x, 0, 1);
    if (cases[i].attr) mi_node_set_int(k.g, k.node, cases[i].attr, 0);
    CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", cases[i].op, err.message);
    CHECK(y && y->dtype == MI_DTYPE_BOOL && same_shape(y, 1, &four), "%s shape/dtype", cases[i].op);
    for (int e = 0; y && e < 4; e++)
      CHECK(((uint8_t *)y->data)[e] == cases[i].want[e], "%s %s element %d", cases[i].op,
            cases[i].attr ? cases[i].attr : "", e);
    mi_array_destroy(x), mi_array_destroy(y);
  }
}

static void test_instancenorm(void) {
  int64_t xd[3] = {1, 2, 2}, two = 2;
  /* Channel 0: {1,3}, mean 2, variance 1 -> {-1,1} * 2 + 1. Channel 1: {5,5}, variance 0 ->
   * 0 * 3 + 0.5 (the default epsilon 1e-5 moves channel 0 by about 1e-5). */
  mi_array_t *in[3] = {arr_f32(3, xd, (float[]){1, 3, 5, 5}), arr_f32(1, &two, (float[]){2, 3}),
                       arr_f32(1, &two, (float[]){1, 0.5f})};
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "InstanceNormalization", 13, 3, in, 6u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "InstanceNormalization: %s", err.message);
  expect_f32("InstanceNormalization", y, 3, xd, (float[]){-1, 3, 0.5f, 0.5f}, 1e-5f);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
}

/* Split of a known shape vector keeps the values, so a Reshape fed by one part gets a static
 * shape from inference alone. */
static void test_split_values(void) {
  mi_graph_t *g = mi_graph_create("split_values");
  int64_t six = 6;
  int32_t s = mi_graph_add_const_i64(g, "s", 4, (int64_t[]){2, 3, 4, 6});
  int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 1, &six);
  int32_t parts[2] = {tval(g, "a"), tval(g, "b")}, y = tval(g, "y");
  mi_graph_add_node(g, "Split", "split", 1, &s, 2, parts);
  mi_graph_add_node(g, "Reshape", "reshape", 2, (int32_t[]){x, parts[0]}, 1, &y);
  mi_graph_add_output(g, y);
  mi_graph_add_output(g, parts[1]);
  mi_error_t err = {0};
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  const mi_tensor_t *t = &g->tensors[y];
  CHECK(t->rank == 2 && t->dims[0] == 2 && t->dims[1] == 3, "Reshape by a Split part: rank %d",
        (int)t->rank);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_split),
    TU_CASE(test_split_values),
    TU_CASE(test_trilu),
    TU_CASE(test_cumsum),
    TU_CASE(test_depth_space),
    TU_CASE(test_prelu),
    TU_CASE(test_mod),
    TU_CASE(test_isnan_isinf),
    TU_CASE(test_instancenorm),
};

TU_MAIN(NULL, NULL)
