/* test_blis_act2.c - blis-cpu's Elu, Selu, Celu, Softsign, Mish, ThresholdedRelu and Shrink
 * (blis_eltwise.c, blis_act2.c) on every code path of knob simd: 1037 values over [-30, 30] (full
 * vectors, a tail, Mish's large-x branch), each within 1e-5 relative (plus 1e-6) of the formula
 * in double, and a node blis-cpu takes (no host fallback in tb_run). */
#include <math.h>

#include "test_blis_util.h"

static tb_plugin_t p;

static void setup(void) { REQUIRE(tb_load(&p)); }
static void teardown(void) { tb_unload(&p); }

typedef struct act {
  const char *op;
  int64_t opset;
  const char *a1, *a2; /* attribute names set to v1, v2 (NULL: default) */
  float v1, v2;
} act_t;

static double formula(const act_t *a, double v) {
  double al, ga;
  if (!strcmp(a->op, "Elu")) return v >= 0 ? v : (a->a1 ? a->v1 : 1.0) * (exp(v) - 1);
  if (!strcmp(a->op, "Selu")) {
    al = a->a1 ? a->v1 : 1.67326319217681884765625;
    ga = a->a2 ? a->v2 : 1.05070102214813232421875;
    return ga * (v > 0 ? v : al * exp(v) - al);
  }
  if (!strcmp(a->op, "Celu")) {
    al = a->a1 ? a->v1 : 1.0;
    return fmax(0, v) + fmin(0, al * (exp(v / al) - 1));
  }
  if (!strcmp(a->op, "Softsign")) return v / (1 + fabs(v));
  if (!strcmp(a->op, "Mish")) return v * tanh(log1p(exp(v)));
  if (!strcmp(a->op, "ThresholdedRelu")) return v > (a->a1 ? a->v1 : 1.0) ? v : 0;
  /* Shrink: a1 lambd, a2 bias */
  al = a->a1 ? a->v1 : 0.5;
  ga = a->a2 ? a->v2 : 0.0;
  return v < -al ? v + ga : v > al ? v - ga
                                   : 0;
}

static void act_case(const act_t *a, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  enum { N = 1037 };
  int64_t d[2] = {17, 61}, i;
  float *x = malloc(N * 4), *got = malloc(N * 4);
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int t0, t1, node, bad = 0;
  int32_t rc;
  for (i = 0; i < N; i++) x[i] = (float)(-30. + 60. * (double)i / (N - 1));
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, d, NULL);
  t1 = tb_tensor(&b, 2, d, NULL);
  node = tb_node(&b, a->op, a->opset, 1, &t0, t1);
  if (a->a1) tb_attr_f(&b, node, a->a1, a->v1);
  if (a->a2) tb_attr_f(&b, node, a->a2, a->v2);
  tb_finish(&b, t1);
  rc = tb_run(&p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "%s: %s", a->op, err.message);
  for (i = 0; rc == MI_OK && i < N; i++) {
    double want = formula(a, x[i]);
    if (!(fabs((double)got[i] - want) <= 1e-5 * fabs(want) + 1e-6) && bad++ < 3)
      CHECK(0, "%s simd %lld: x=%g got %.9g want %.9g", a->op, (long long)simd, x[i], got[i], want);
  }
  free(x);
  free(got);
}

static void activations(void) {
  static const act_t acts[] = {
      {"Elu", 6, NULL, NULL, 0, 0},
      {"Elu", 6, "alpha", NULL, 0.3f, 0},
      {"Selu", 6, NULL, NULL, 0, 0},
      {"Selu", 6, "alpha", "gamma", 1.5f, 2.f},
      {"Celu", 12, NULL, NULL, 0, 0},
      {"Celu", 12, "alpha", NULL, 2.f, 0},
      {"Softsign", 1, NULL, NULL, 0, 0},
      {"Mish", 18, NULL, NULL, 0, 0},
      {"ThresholdedRelu", 10, NULL, NULL, 0, 0},
      {"ThresholdedRelu", 10, "alpha", NULL, -0.5f, 0},
      {"Shrink", 9, NULL, NULL, 0, 0},
      {"Shrink", 9, "lambd", "bias", 1.f, 0.5f},
  };
  int64_t si, n = simd_choices(&p);
  CHECK(n >= 2, "knob simd has %lld values", (long long)n);
  for (si = 0; si < n; si++)
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) act_case(&acts[i], si);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(activations),
};

TU_MAIN(setup, teardown)
