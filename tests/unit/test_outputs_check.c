/* test_outputs_check.c - mi_outputs_check, the check of a device's outputs against the
 * reference that tuning, compare and mi-run --check share: the error is relative to the
 * reference's range, a NaN anywhere is the worst error (not forgotten by a later value), and a
 * wrong dtype or size never passes; mi_outputs_check_graph sets aside a few moved elements of an
 * output computed through a comparison, and only there. */
#include <math.h>
#include <string.h>

#include "metainfer/mi.h"
#include "test_util.h"

static mi_array_t *vec(const float *v, int64_t n) {
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, 1, &n);
  if (a) memcpy(a->data, v, (size_t)n * sizeof *v);
  return a;
}

static double check(const float *d, const float *r, int64_t n, int *ok) {
  mi_array_t *dev = vec(d, n), *ref = vec(r, n);
  double e = -1;
  REQUIRE(dev && ref);
  *ok = mi_outputs_check((const mi_array_t *const *)&dev, (const mi_array_t *const *)&ref, 1, &e);
  mi_array_destroy(dev);
  mi_array_destroy(ref);
  return e;
}

static void relative_l2(void) {
  const float ref[4] = {-2, 1, 4, 0.5f}, same[4] = {-2, 1, 4, 0.5f};
  const float near[4] = {-2, 1.1f, 4, 0.5f}, zero[4] = {0, 0, 0, 0};
  int ok = -1;
  double e = check(same, ref, 4, &ok);
  CHECK(e == 0 && ok == 1, "identical: %g ok %d", e, ok);
  e = check(near, ref, 4, &ok);
  CHECK(fabs(e - 0.1 / sqrt(21.25)) < 1e-6 && ok == 1, "0.1 off, ||ref|| = sqrt(21.25): %g ok %d",
        e, ok);
  e = check(zero, ref, 4, &ok);
  CHECK(e == 1 && ok == 0, "zero-filled: %g ok %d", e, ok);
  CHECK(MI_OUTPUT_TOLERANCE == 0.05, "the tuner's tolerance");
}

static void nan_is_worst(void) {
  const float ref[3] = {1, 2, 3};
  const float nan_first[3] = {NAN, 2, 3}, nan_last[3] = {1, 2, NAN};
  int ok = -1;
  double e = check(nan_first, ref, 3, &ok);
  CHECK(isinf(e) && ok == 0, "NaN then right values: %g ok %d", e, ok);
  e = check(nan_last, ref, 3, &ok);
  CHECK(isinf(e) && ok == 0, "NaN last: %g ok %d", e, ok);
}

static void shape_and_dtype(void) {
  const float v[4] = {1, 2, 3, 4};
  mi_array_t *dev = vec(v, 3), *ref = vec(v, 4), *i8;
  int64_t n = 4;
  double e = 0;
  REQUIRE(dev && ref);
  CHECK(mi_outputs_check((const mi_array_t *const *)&dev, (const mi_array_t *const *)&ref, 1, &e) == 0 &&
            isinf(e),
        "3 values against 4: %g", e);
  mi_array_destroy(dev);
  REQUIRE((i8 = mi_array_create(MI_DTYPE_INT8, 1, &n)) != NULL);
  CHECK(mi_outputs_check((const mi_array_t *const *)&i8, (const mi_array_t *const *)&ref, 1, &e) == 0 &&
            isinf(e),
        "INT8 against FP32: %g", e);
  mi_array_destroy(i8);
  mi_array_destroy(ref);
}

/* smooth = Sigmoid(x); peaks = smooth * Cast(Greater(smooth, 0.5)): a discrete output and a
 * smooth one, both [400]. */
static mi_graph_t *peak_graph(void) {
  mi_graph_t *g = mi_graph_create("peaks");
  int64_t n = 400, one = 1;
  float half = 0.5f;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, &n), c, s, gt, m, p, ins[2];
  mi_graph_add_input(g, x);
  c = mi_graph_add_const_f32(g, "c", 1, &one, &half);
  s = mi_graph_add_tensor(g, "smooth", MI_DTYPE_FLOAT32, 1, &n);
  gt = mi_graph_add_tensor(g, "gt", MI_DTYPE_BOOL, 1, &n);
  m = mi_graph_add_tensor(g, "mask", MI_DTYPE_FLOAT32, 1, &n);
  p = mi_graph_add_tensor(g, "peaks", MI_DTYPE_FLOAT32, 1, &n);
  mi_graph_add_node(g, "Sigmoid", "sig", 1, &x, 1, &s);
  ins[0] = s;
  ins[1] = c;
  mi_graph_add_node(g, "Greater", "gt", 2, ins, 1, &gt);
  mi_graph_add_node(g, "Cast", "cast", 1, &gt, 1, &m);
  mi_node_set_int(g, g->node_count - 1, "to", MI_DTYPE_FLOAT32);
  ins[1] = m;
  mi_graph_add_node(g, "Mul", "mul", 2, ins, 1, &p);
  mi_graph_add_output(g, s);
  mi_graph_add_output(g, p);
  REQUIRE(mi_graph_toposort(g, NULL) == MI_OK);
  return g;
}

/* One moved element of the peak map is set aside (mi_outputs_check fails it); the same element
 * of the smooth output, or 5% of the peak map, still fails; with no graph the check is the
 * plain one. */
static void discrete_outputs(void) {
  mi_graph_t *g = peak_graph();
  int64_t n = 400, flipped = -1;
  mi_array_t *ref[2] = {mi_array_create(MI_DTYPE_FLOAT32, 1, &n), mi_array_create(MI_DTYPE_FLOAT32, 1, &n)};
  mi_array_t *dev[2] = {mi_array_create(MI_DTYPE_FLOAT32, 1, &n), mi_array_create(MI_DTYPE_FLOAT32, 1, &n)};
  double e = -1;
  REQUIRE(ref[0] && ref[1] && dev[0] && dev[1]);
  for (int64_t j = 0; j < n; j++) {
    float s = 1.0f / (1.0f + expf(-(float)(j % 20 - 10) * 0.3f));
    ((float *)ref[0]->data)[j] = ((float *)dev[0]->data)[j] = s;
    ((float *)ref[1]->data)[j] = s > 0.5f ? s : 0.0f;
    ((float *)dev[1]->data)[j] = ((float *)ref[1]->data)[j] * (1.0f + 1e-6f);
  }
  ((float *)dev[1]->data)[10] = 1.5f; /* a peak the reference has not */
  CHECK(mi_outputs_check((const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e) == 0,
        "the plain check passed a moved peak: %g", e);
  CHECK(mi_outputs_check_graph(g, (const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e,
                               &flipped) == 1 &&
            e < 1e-5 && flipped == 1,
        "one moved peak: error %g, %lld set aside", e, (long long)flipped);
  ((float *)dev[0]->data)[10] = 5.0f; /* the same element of the smooth output */
  CHECK(mi_outputs_check_graph(g, (const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e,
                               NULL) == 0,
        "a wrong smooth value passed: %g", e);
  ((float *)dev[0]->data)[10] = ((float *)ref[0]->data)[10];
  for (int64_t j = 0; j < 20; j++) ((float *)dev[1]->data)[j * 20 + 11] = 0.95f; /* 5% of the map */
  CHECK(mi_outputs_check_graph(g, (const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e,
                               &flipped) == 0 &&
            e > MI_OUTPUT_TOLERANCE,
        "5%% of the peak map moved passed: %g", e);
  CHECK(mi_outputs_check_graph(NULL, (const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e,
                               NULL) == 0,
        "without a graph: the plain check");
  /* A sparse map (3 peaks of 400, under 1%) the device returns as zeros moved all its peaks. */
  for (int64_t j = 0; j < n; j++) ((float *)ref[1]->data)[j] = ((float *)dev[1]->data)[j] = 0.0f;
  ((float *)ref[1]->data)[5] = ((float *)ref[1]->data)[205] = ((float *)ref[1]->data)[305] = 0.9f;
  CHECK(mi_outputs_check_graph(g, (const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e,
                               NULL) == 0,
        "a zero copy of a sparse peak map passed: %g", e);
  ((float *)dev[1]->data)[5] = ((float *)dev[1]->data)[205] = ((float *)dev[1]->data)[305] = 0.9f;
  CHECK(mi_outputs_check_graph(g, (const mi_array_t *const *)dev, (const mi_array_t *const *)ref, 2, &e,
                               NULL) == 1 &&
            e == 0,
        "the same sparse map failed: %g", e);
  for (int i = 0; i < 2; i++) {
    mi_array_destroy(ref[i]);
    mi_array_destroy(dev[i]);
  }
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(relative_l2),
    TU_CASE(nan_is_worst),
    TU_CASE(shape_and_dtype),
    TU_CASE(discrete_outputs),
};
TU_MAIN(NULL, NULL)
