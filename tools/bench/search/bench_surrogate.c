/* bench_surrogate.c - GP against the XGBoost ensembles by training-set size: rank correlation,
 * error, 2-sigma coverage and fit+predict time on a fixed synthetic cost function, median of
 * seeds. Decides MI_SURROGATE_AUTO's threshold (docs/meta.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "metainfer/mi.h"

enum { D = 8,
       M = 500,
       SEEDS = 5 };

/* A latency-like function: a product of per-dimension factors with one interaction. */
static double f_true(const double *x) {
  double f = 1;
  for (int k = 0; k < D; k++) f *= 1 + 0.6 * x[k] * x[k] * (k % 3 + 1) / 3;
  return f * (1 + 0.5 * sin(4 * x[0] * x[1]));
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(void) {
  static const int sizes[] = {10, 20, 40, 80, 160, 320};
  static const int kinds[] = {MI_SURROGATE_GP, MI_SURROGATE_GP_ARD, MI_SURROGATE_XGB, MI_SURROGATE_XGB_RANK};
  static const char *names[] = {"", "gp", "xgb", "xgb-rank", "gp-ard"};
  printf("| n | learner | Spearman | Kendall | MAPE | within 10%% | 2-sd coverage | fit+predict ms |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
    for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
      double sp[SEEDS], kt[SEEDS], mp[SEEDS], wi[SEEDS], cv[SEEDS], ms[SEEDS];
      int n = sizes[si];
      for (int s = 0; s < SEEDS; s++) {
        double *X = malloc(sizeof(double) * (size_t)(n + M) * D), *y = malloc(sizeof(double) * (size_t)(n + M));
        double mean[M], sd[M], p[M], t[M], t0, cover = 0;
        mi_surrogate_options_t o;
        mi_surrogate_t *m = NULL;
        mi_rng_t r;
        mi_rng_seed(&r, (uint64_t)s + 1);
        for (int i = 0; i < n + M; i++) {
          for (int k = 0; k < D; k++) X[i * D + k] = mi_rng_uniform(&r);
          y[i] = log(f_true(X + i * D) * (1 + 0.02 * (mi_rng_uniform(&r) - 0.5)));
        }
        mi_surrogate_options_default(&o);
        o.kind = kinds[ki];
        o.seed = (uint64_t)s;
        t0 = now();
        if (mi_surrogate_fit(X, y, n, D, &o, &m, NULL) != MI_OK ||
            mi_surrogate_predict(m, X + n * D, M, mean, sd, NULL) != MI_OK)
          return 1;
        ms[s] = 1e3 * (now() - t0);
        for (int i = 0; i < M; i++) {
          p[i] = exp(mean[i]);
          t[i] = exp(y[n + i]);
          cover += fabs(mean[i] - y[n + i]) <= 2 * sd[i];
        }
        sp[s] = mi_metric_spearman(p, t, M);
        kt[s] = mi_metric_kendall(p, t, M);
        mp[s] = mi_metric_mape(p, t, M);
        wi[s] = mi_metric_within(p, t, M, 0.1);
        cv[s] = cover / M;
        mi_surrogate_destroy(m);
        free(X);
        free(y);
      }
      printf("| %d | %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.1f |\n", n, names[kinds[ki]], median(sp, SEEDS),
             median(kt, SEEDS), median(mp, SEEDS), median(wi, SEEDS), median(cv, SEEDS), median(ms, SEEDS));
      fflush(stdout);
    }
  return 0;
}
