/* test_surrogate.c - the surrogate learners fit a known function with calibrated uncertainty,
 * and the ranking/error metrics give the known values on known vectors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

static double f_true(const double *x) { return sin(3 * x[0]) + x[1] * x[1] + 0.5 * x[2]; }

/* Approximately normal noise (sum of uniforms), so coverage has a known target. */
static double noise(mi_rng_t *r) {
  double s = 0;
  for (int i = 0; i < 12; i++) s += mi_rng_uniform(r);
  return s - 6;
}

static void make(mi_rng_t *r, int n, double sigma, double *X, double *y) {
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 3; k++) X[i * 3 + k] = mi_rng_uniform(r);
    y[i] = f_true(X + i * 3) + sigma * noise(r);
  }
}

static void check_learner(int kind, int n, double min_spearman, int check_coverage) {
  enum { M = 400 };
  double *X = malloc(sizeof(double) * 3 * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
  double Xt[M * 3], yt[M], mean[M], sd[M], cover = 0, rho;
  mi_surrogate_options_t o;
  mi_surrogate_t *s = NULL;
  mi_error_t e;
  mi_rng_t r;
  mi_rng_seed(&r, 42);
  make(&r, n, 0.05, X, y);
  make(&r, M, 0.05, Xt, yt);
  mi_surrogate_options_default(&o);
  o.kind = kind;
  REQUIRE(mi_surrogate_fit(X, y, n, 3, &o, &s, &e) == MI_OK);
  REQUIRE(mi_surrogate_kind_used(s) == kind);
  REQUIRE(mi_surrogate_predict(s, Xt, M, mean, sd, &e) == MI_OK);
  for (int i = 0; i < M; i++) {
    REQUIRE(isfinite(mean[i]) && sd[i] >= 0);
    if (fabs(mean[i] - yt[i]) <= 2 * sd[i]) cover++;
  }
  cover /= M;
  rho = mi_metric_spearman(mean, yt, M);
  printf("kind %d n %d: spearman %.3f kendall %.3f mape %.3f coverage(2sd) %.3f\n", kind, n, rho,
         mi_metric_kendall(mean, yt, M), mi_metric_mape(mean, yt, M), cover);
  REQUIRE(rho >= min_spearman);
  /* A calibrated 2-sigma band holds about 95% of fresh noisy observations. */
  if (check_coverage) REQUIRE(cover >= 0.85 && cover <= 1.0);
  mi_surrogate_destroy(s);
  free(X);
  free(y);
}

static void check_metrics(void) {
  double a[5] = {1, 2, 3, 4, 5}, rev[5] = {5, 4, 3, 2, 1}, sw[4] = {1, 3, 2, 4};
  double p1[2] = {110, 90}, t1[2] = {100, 100}, p2[2] = {105, 120}, ca, cb, r2;
  double sum[4] = {1, 2, 3, 4}, meas[4] = {3, 5, 7, 9};
  REQUIRE(fabs(mi_metric_spearman(a, a, 5) - 1) < 1e-12);
  REQUIRE(fabs(mi_metric_spearman(a, rev, 5) + 1) < 1e-12);
  REQUIRE(fabs(mi_metric_kendall(a, sw, 4) - 4.0 / 6.0) < 1e-12);
  /* Spearman of 1,2,3,4 vs 1,3,2,4: 1 - 6*2/(4*15) = 0.8 */
  REQUIRE(fabs(mi_metric_spearman(a, sw, 4) - 0.8) < 1e-12);
  REQUIRE(fabs(mi_metric_mape(p1, t1, 2) - 0.1) < 1e-12);
  REQUIRE(fabs(mi_metric_within(p2, t1, 2, 0.1) - 0.5) < 1e-12);
  REQUIRE(fabs(mi_metric_rank_loss(rev, a, 5) - 1) < 1e-12);
  REQUIRE(fabs(mi_metric_rank_loss(a, a, 5)) < 1e-12);
  r2 = mi_calibration_fit(sum, meas, 4, &ca, &cb);
  REQUIRE(fabs(ca - 2) < 1e-9 && fabs(cb - 1) < 1e-9 && fabs(r2 - 1) < 1e-9);
}

/* ARD on the landscape the search benchmark showed: 10 categorical choices of 4 values,
 * one-hot (40 features), where 2 choices decide the cost and 8 barely matter. With 30 points,
 * over 10 seeds, the GP with relevance weights must rank held-out points better than the
 * isotropic GP on most seeds and on average. */
static void check_ard(void) {
  enum { N = 30,
         M = 300,
         C = 10,
         V = 4,
         F = C * V };
  static double X[N * F], Xt[M * F], y[N], yt[M], m1[M], m2[M];
  double sum_iso = 0, sum_ard = 0;
  int wins = 0;
  for (uint64_t seed = 1; seed <= 10; seed++) {
    double eff[C][V];
    mi_rng_t r;
    mi_surrogate_options_t o;
    mi_surrogate_t *a = NULL, *b = NULL;
    double ri, ra;
    mi_rng_seed(&r, seed);
    for (int c = 0; c < C; c++)
      for (int v = 0; v < V; v++) eff[c][v] = (c < 2 ? 1.0 : 0.05) * mi_rng_uniform(&r);
    for (int i = 0; i < N + M; i++) {
      double *x = i < N ? X + (size_t)i * F : Xt + (size_t)(i - N) * F, f = 0;
      for (int k = 0; k < F; k++) x[k] = 0;
      for (int c = 0; c < C; c++) {
        int v = (int)mi_rng_below(&r, V);
        x[c * V + v] = 1;
        f += eff[c][v];
      }
      if (i < N) y[i] = f;
      else
        yt[i - N] = f;
    }
    mi_surrogate_options_default(&o);
    o.kind = MI_SURROGATE_GP;
    REQUIRE(mi_surrogate_fit(X, y, N, F, &o, &a, NULL) == MI_OK);
    o.kind = MI_SURROGATE_GP_ARD;
    REQUIRE(mi_surrogate_fit(X, y, N, F, &o, &b, NULL) == MI_OK);
    REQUIRE(mi_surrogate_kind_used(b) == MI_SURROGATE_GP_ARD);
    REQUIRE(mi_surrogate_predict(a, Xt, M, m1, NULL, NULL) == MI_OK);
    REQUIRE(mi_surrogate_predict(b, Xt, M, m2, NULL, NULL) == MI_OK);
    ri = mi_metric_spearman(m1, yt, M);
    ra = mi_metric_spearman(m2, yt, M);
    sum_iso += ri;
    sum_ard += ra;
    wins += ra > ri;
    mi_surrogate_destroy(a);
    mi_surrogate_destroy(b);
  }
  printf("ard: mean spearman %.3f (isotropic %.3f), better on %d/10 seeds\n", sum_ard / 10, sum_iso / 10, wins);
  REQUIRE(wins >= 7 && sum_ard > sum_iso);
}

static void learners(void) {
  check_learner(MI_SURROGATE_GP, 60, 0.9, 1);
  check_learner(MI_SURROGATE_XGB, 300, 0.85, 0);
  check_learner(MI_SURROGATE_XGB_RANK, 300, 0.85, 0);
}

/* AUTO: the GP (with ARD) below the threshold, XGBoost above it. */
static void auto_kind(void) {
  double X[3] = {0.1, 0.2, 0.3}, y[1] = {1};
  mi_surrogate_t *s = NULL;
  REQUIRE(mi_surrogate_fit(X, y, 1, 3, NULL, &s, NULL) == MI_OK);
  REQUIRE(mi_surrogate_kind_used(s) == MI_SURROGATE_GP_ARD);
  mi_surrogate_destroy(s);
  mi_surrogate_destroy(NULL);
  REQUIRE(mi_surrogate_fit(NULL, y, 1, 3, NULL, &s, NULL) == MI_ERR_INVALID_ARGUMENT && !s);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(check_metrics),
    TU_CASE(check_ard),
    TU_CASE(learners),
    TU_CASE(auto_kind),
};

TU_MAIN(NULL, NULL)
