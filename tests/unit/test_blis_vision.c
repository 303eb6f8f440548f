/* test_blis_vision.c - blis-cpu's trigonometric and hyperbolic functions (blis_act2.c) and LRN
 * (blis_lrn.c) on every code path of knob simd, against the formulas in double: a node blis-cpu
 * takes (no host fallback in tb_run), a tail after the full vectors, LRN windows cut at both
 * channel edges, even and odd sizes, beta 0.75 (the square-root path) and another. */
#include <math.h>

#include "test_blis_util.h"

static tb_plugin_t p;

static void setup(void) { REQUIRE(tb_load(&p)); }
static void teardown(void) { tb_unload(&p); }

typedef struct trig {
  const char *op;
  int64_t opset;
  double lo, hi; /* the inputs, within the function's domain */
  double (*fn)(double);
} trig_t;

static void trig_case(const trig_t *f, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  enum { N = 1037 };
  int64_t d[2] = {17, 61}, i;
  float x[N], got[N];
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int t0, t1, bad = 0;
  for (i = 0; i < N; i++) x[i] = (float)(f->lo + (f->hi - f->lo) * (double)i / (N - 1));
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, d, NULL);
  t1 = tb_tensor(&b, 2, d, NULL);
  tb_node(&b, f->op, (int)f->opset, 1, &t0, t1);
  tb_finish(&b, t1);
  int32_t rc = tb_run(&p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "%s: %s", f->op, err.message);
  for (i = 0; rc == MI_OK && i < N; i++) {
    double want = f->fn(x[i]);
    if (!(fabs((double)got[i] - want) <= 2e-6 * fabs(want) + 1e-6) && bad++ < 3)
      CHECK(0, "%s simd %lld: x=%g got %.9g want %.9g", f->op, (long long)simd, x[i], got[i], want);
  }
}

static void trigonometric(void) {
  static const trig_t fs[] = {
      {"Cos", 7, -10, 10, cos},
      {"Sin", 7, -10, 10, sin},
      {"Tan", 7, -1.5, 1.5, tan},
      {"Asin", 7, -1, 1, asin},
      {"Acos", 7, -1, 1, acos},
      {"Atan", 7, -20, 20, atan},
      {"Sinh", 9, -8, 8, sinh},
      {"Cosh", 9, -8, 8, cosh},
      {"Asinh", 9, -50, 50, asinh},
      {"Acosh", 9, 1, 50, acosh},
      {"Atanh", 9, -0.99, 0.99, atanh},
  };
  int64_t si, n = simd_choices(&p);
  CHECK(n >= 2, "knob simd has %lld values", (long long)n);
  for (si = 0; si < n; si++)
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) trig_case(&fs[i], si);
}

static void lrn_case(int64_t size, float alpha, float beta, float bias, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  enum { NB = 2,
         C = 7,
         S = 45 }; /* S = 5 x 9: not a whole number of vectors */
  int64_t d[4] = {NB, C, 5, 9}, i;
  float x[NB * C * S], got[NB * C * S];
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int t0, t1, node, bad = 0;
  for (i = 0; i < NB * C * S; i++) x[i] = (float)(3.0 * sin(0.37 * (double)i) + 0.5 * cos(1.3 * (double)i));
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, d, NULL);
  t1 = tb_tensor(&b, 4, d, NULL);
  node = tb_node(&b, "LRN", 13, 1, &t0, t1);
  tb_attr_i(&b, node, "size", size);
  tb_attr_f(&b, node, "alpha", alpha);
  tb_attr_f(&b, node, "beta", beta);
  tb_attr_f(&b, node, "bias", bias);
  tb_finish(&b, t1);
  int32_t rc = tb_run(&p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "LRN size %lld: %s", (long long)size, err.message);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (i = 0; rc == MI_OK && i < NB * C * S; i++) {
    int64_t n = i / (C * S), c = (i / S) % C, s = i % S;
    double sq = 0;
    for (int64_t k = c - lo; k <= c + hi; k++)
      if (k >= 0 && k < C) sq += (double)x[(n * C + k) * S + s] * x[(n * C + k) * S + s];
    double want = x[i] / pow(bias + alpha / (double)size * sq, beta);
    if (!(fabs((double)got[i] - want) <= 2e-6 * fabs(want) + 1e-6) && bad++ < 3)
      CHECK(0, "LRN size %lld beta %g simd %lld: element %lld got %.9g want %.9g", (long long)size, beta,
            (long long)simd, (long long)i, got[i], want);
  }
}

static void lrn(void) {
  int64_t si, n = simd_choices(&p);
  for (si = 0; si < n; si++) {
    lrn_case(5, 0.5f, 0.75f, 1.0f, si); /* AlexNet's shape of window, alpha raised to matter */
    lrn_case(4, 0.3f, 0.75f, 2.0f, si);
    lrn_case(3, 0.2f, 0.6f, 1.5f, si);
    lrn_case(1, 1.0f, 1.0f, 1.0f, si);
    lrn_case(9, 0.1f, 0.75f, 1.0f, si); /* wider than the 7 channels */
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(trigonometric),
    TU_CASE(lrn),
};

TU_MAIN(setup, teardown)
