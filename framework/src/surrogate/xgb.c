/* xgb.c - a bootstrap ensemble of XGBoost models (regressors or pairwise rankers) through
 * XGBoost's C API: the spread of the members is the uncertainty. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#include "surrogate/surrogate_internal.h"

struct mi__xgb {
  int32_t count, d;
  BoosterHandle *boosters;
  double *a, *b; /* per member: y = a * raw + b (rankers are mapped back to y's scale) */
  double mu, sd;
};

static int32_t xgb_fail(mi_error_t *err, const char *what) {
  return mi_errorf(err, MI_ERR_INTERNAL, "surrogate xgboost: %s: %s", what, XGBGetLastError());
}

static int32_t make_matrix(const double *X, const int32_t *rows, int32_t n, int32_t d,
                           DMatrixHandle *dm, mi_error_t *err) {
  float *f = malloc((size_t)n * d * sizeof *f + 1);
  int r;
  if (!f) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate xgboost: out of memory");
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = 0; k < d; k++)
      f[(size_t)i * d + k] = (float)X[(size_t)(rows ? rows[i] : i) * d + k];
  r = XGDMatrixCreateFromMat(f, (bst_ulong)n, (bst_ulong)d, NAN, dm);
  free(f);
  return r == 0 ? MI_OK : xgb_fail(err, "matrix");
}

static int32_t raw_predict(BoosterHandle b, DMatrixHandle dm, int32_t m, double *out,
                           mi_error_t *err) {
  bst_ulong len = 0;
  const float *res = NULL;
  if (XGBoosterPredict(b, dm, 0, 0, 0, &len, &res) != 0) return xgb_fail(err, "predict");
  if ((int64_t)len != m) return mi_errorf(err, MI_ERR_INTERNAL, "surrogate xgboost: %llu predictions for %d rows", (unsigned long long)len, (int)m);
  for (int32_t i = 0; i < m; i++) out[i] = res[i];
  return MI_OK;
}

int32_t mi__xgb_fit(const double *X, const double *y, int32_t n, int32_t d,
                    const mi_surrogate_options_t *o, int rank, mi__xgb_t **out,
                    mi_error_t *err) {
  mi__xgb_t *x = calloc(1, sizeof *x);
  int32_t *rows = malloc((size_t)n * sizeof *rows), rc = MI_OK;
  float *lab = malloc((size_t)n * sizeof *lab);
  double *raw = malloc((size_t)n * sizeof *raw);
  DMatrixHandle all = NULL;
  mi_rng_t rs = {o->seed ^ 0x5eedull}; /* the state as it is, not mi_rng_seed's mix */
  char buf[32];
  *out = x; /* the caller's from here on, also when the fit fails (surrogate_internal.h) */
  if (!x || !rows || !lab || !raw) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate xgboost: out of memory");
    goto done;
  }
  x->d = d;
  x->count = o->ensemble > 0 ? o->ensemble : 8;
  x->boosters = calloc((size_t)x->count, sizeof *x->boosters);
  x->a = calloc((size_t)x->count, sizeof *x->a);
  x->b = calloc((size_t)x->count, sizeof *x->b);
  if (!x->boosters || !x->a || !x->b) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate xgboost: out of memory");
    goto done;
  }
  for (int32_t i = 0; i < n; i++) x->mu += y[i];
  x->mu /= n;
  for (int32_t i = 0; i < n; i++) x->sd += (y[i] - x->mu) * (y[i] - x->mu);
  x->sd = n > 1 ? sqrt(x->sd / (n - 1)) : 0;
  if (!(x->sd > 1e-12)) x->sd = 1;
  if ((rc = make_matrix(X, NULL, n, d, &all, err)) != MI_OK) goto done;
  for (int32_t e = 0; e < x->count && rc == MI_OK; e++) {
    DMatrixHandle dm = NULL;
    BoosterHandle b = NULL;
    unsigned group = (unsigned)n;
    /* Member 0 sees all the data; the others a bootstrap resample. */
    for (int32_t i = 0; i < n; i++) rows[i] = e == 0 ? i : (int32_t)(mi_rng_next(&rs) % (uint64_t)n);
    for (int32_t i = 0; i < n; i++) {
      double ys = (y[rows[i]] - x->mu) / x->sd;
      lab[i] = (float)(rank ? -ys : ys); /* rankers: a higher label is a better (faster) row */
    }
    if ((rc = make_matrix(X, rows, n, d, &dm, err)) != MI_OK) break;
    if (XGDMatrixSetFloatInfo(dm, "label", lab, (bst_ulong)n) != 0 ||
        (rank && XGDMatrixSetGroup(dm, &group, 1) != 0) ||
        XGBoosterCreate(&dm, 1, &b) != 0) {
      rc = xgb_fail(err, "setup");
      XGDMatrixFree(dm);
      break;
    }
    x->boosters[e] = b;
    XGBoosterSetParam(b, "objective", rank ? "rank:pairwise" : "reg:squarederror");
    XGBoosterSetParam(b, "nthread", "1");
    XGBoosterSetParam(b, "verbosity", "0");
    XGBoosterSetParam(b, "base_score", "0");
    XGBoosterSetParam(b, "min_child_weight", "1");
    snprintf(buf, sizeof buf, "%d", (int)(o->max_depth > 0 ? o->max_depth : 5));
    XGBoosterSetParam(b, "max_depth", buf);
    snprintf(buf, sizeof buf, "%g", o->eta > 0 ? o->eta : 0.2);
    XGBoosterSetParam(b, "eta", buf);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)((o->seed + (uint64_t)e) & 0x7fffffff));
    XGBoosterSetParam(b, "seed", buf);
    for (int32_t it = 0; it < (o->rounds > 0 ? o->rounds : 60); it++)
      if (XGBoosterUpdateOneIter(b, it, dm) != 0) {
        rc = xgb_fail(err, "train");
        break;
      }
    XGDMatrixFree(dm);
    if (rc != MI_OK) break;
    /* Map the member's raw output onto y by least squares on all rows. */
    if ((rc = raw_predict(b, all, n, raw, err)) != MI_OK) break;
    {
      double ys[1], a = 1, c = 0;
      double *yv = malloc((size_t)n * sizeof *yv);
      (void)ys;
      if (!yv) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate xgboost: out of memory");
        break;
      }
      for (int32_t i = 0; i < n; i++) yv[i] = (y[i] - x->mu) / x->sd;
      if (rank) mi_calibration_fit(raw, yv, n, &a, &c);
      x->a[e] = a;
      x->b[e] = c;
      free(yv);
    }
  }
done:
  XGDMatrixFree(all);
  free(rows);
  free(lab);
  free(raw);
  return rc;
}

int32_t mi__xgb_predict(const mi__xgb_t *x, const double *X, int32_t m, double *mean,
                        double *std, mi_error_t *err) {
  DMatrixHandle dm = NULL;
  double *raw = malloc((size_t)m * sizeof *raw + 1), *s2 = calloc((size_t)m + 1, sizeof *s2);
  int32_t rc;
  if (!raw || !s2) {
    free(raw);
    free(s2);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate xgboost: out of memory");
  }
  rc = make_matrix(X, NULL, m, x->d, &dm, err);
  for (int32_t i = 0; i < m; i++) mean[i] = 0;
  for (int32_t e = 0; e < x->count && rc == MI_OK; e++) {
    if ((rc = raw_predict(x->boosters[e], dm, m, raw, err)) != MI_OK) break;
    for (int32_t i = 0; i < m; i++) {
      double v = x->a[e] * raw[i] + x->b[e];
      mean[i] += v;
      s2[i] += v * v;
    }
  }
  if (rc == MI_OK)
    for (int32_t i = 0; i < m; i++) {
      double mu = mean[i] / x->count, var = s2[i] / x->count - mu * mu;
      mean[i] = x->mu + x->sd * mu;
      if (std) std[i] = x->sd * sqrt(var > 0 ? var : 0);
    }
  XGDMatrixFree(dm);
  free(raw);
  free(s2);
  return rc;
}

void mi__xgb_destroy(mi__xgb_t *x) {
  if (!x) return;
  for (int32_t e = 0; e < x->count; e++)
    if (x->boosters && x->boosters[e]) XGBoosterFree(x->boosters[e]);
  free(x->boosters);
  free(x->a);
  free(x->b);
  free(x);
}
