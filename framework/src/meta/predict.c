/* predict.c - the surrogate-guided strategy's predictor (target model plus RGPE-weighted
 * sources) fitted on given measurements, for benchmarks that judge it apart from a search. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"

int32_t mi_meta_predict_points(const mi_space_t *s, const mi_search_options_t *so,
                               const mi_meta_options_t *mo, const int32_t *pts,
                               const double *obj, int32_t n, const int32_t *query,
                               int32_t q, double *pred, mi_error_t *err) {
  mi__meta_t st;
  int32_t rc = MI_OK;
  double *X = NULL, *mu = NULL, *sd = NULL, cal_a = 1, cal_b = 0;
  if (!s || !so || !pts || !obj || !query || !pred || n < 1 || q < 1 || so->objective_count < 1)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "meta predict: points, queries and an objective are required");
  memset(&st, 0, sizeof st);
  if (mo) st.mo = *mo;
  else
    mi_meta_options_default(&st.mo);
  st.s = s;
  st.so = so;
  st.D = mi_space_dim_count(s);
  st.F = mi_meta_feature_count(s);
  st.m = so->objective_count;
  mi_rng_seed(&st.rng, so->seed);
  st.r = calloc(1, sizeof *st.r);
  if (st.r) st.r->trials = calloc((size_t)n, sizeof *st.r->trials);
  X = malloc((size_t)q * st.F * sizeof *X);
  mu = malloc((size_t)q * st.m * sizeof *mu);
  sd = malloc((size_t)q * st.m * sizeof *sd);
  if (!st.r || !st.r->trials || !X || !mu || !sd) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta predict: out of memory");
    goto done;
  }
  for (int32_t i = 0; i < n; i++) {
    mi_trial_t *t = &st.r->trials[i];
    t->point = (int32_t *)(pts + (size_t)i * st.D); /* borrowed: not freed below */
    t->status = MI_OK;
    memcpy(t->objectives, obj + (size_t)i * MI_OBJ_COUNT, sizeof t->objectives);
  }
  st.r->count = n;
  if ((rc = mi__meta_sources(&st, err)) != MI_OK) goto done;
  if ((rc = mi__meta_fit(&st, 0, err)) != MI_OK) goto done;
  if (st.mo.report) {
    /* What the per-layer base model got (mi_meta_sources built it; no report memset here). */
    st.mo.report->layer_model = st.lmodel != NULL;
    st.mo.report->layer_rows = st.lrows;
    st.mo.report->layer_sources = st.lsources;
    st.mo.report->layer_weight[0] = st.lmodel ? st.lweight : NAN;
  }
  {
    /* Calibration on the target's own measurements (as for the per-layer composition): the
     * weighted mix ranks well but sources carry their own scale, so the log prediction is
     * mapped by least squares onto the measured log values (a <= 0 or too few: left as is). */
    double *pm = malloc((size_t)n * st.m * sizeof *pm), *ps = malloc((size_t)n * st.m * sizeof *ps);
    double *xs = malloc((size_t)n * sizeof *xs), *ys = malloc((size_t)n * sizeof *ys);
    int32_t c = 0;
    if (!pm || !ps || !xs || !ys || !(X = realloc(X, (size_t)(q > n ? q : n) * st.F * sizeof *X))) {
      free(pm);
      free(ps);
      free(xs);
      free(ys);
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta predict: out of memory");
      goto done;
    }
    for (int32_t i = 0; i < n; i++) mi_meta_encode(s, pts + (size_t)i * st.D, X + (size_t)i * st.F);
    rc = mi__meta_predict(&st, X, pts, n, pm, ps, err);
    for (int32_t i = 0; i < n && rc == MI_OK; i++) {
      double v = mi__meta_logobj(&st, &st.r->trials[i], 0);
      if (!isfinite(v)) continue;
      xs[c] = pm[(size_t)i * st.m];
      ys[c++] = (v - st.ymu[0]) / st.ysd[0];
    }
    if (rc == MI_OK && c >= 5) {
      mi_calibration_fit(xs, ys, c, &cal_a, &cal_b);
      if (!(cal_a > 0)) {
        cal_a = 1;
        cal_b = 0;
      }
    }
    free(pm);
    free(ps);
    free(xs);
    free(ys);
    if (rc != MI_OK) goto done;
  }
  for (int32_t i = 0; i < q; i++) mi_meta_encode(s, query + (size_t)i * st.D, X + (size_t)i * st.F);
  if ((rc = mi__meta_predict(&st, X, query, q, mu, sd, err)) != MI_OK) goto done;
  for (int32_t i = 0; i < q; i++) pred[i] = exp(st.ymu[0] + st.ysd[0] * (cal_a * mu[(size_t)i * st.m] + cal_b));
done:
  for (int32_t j = 0; j < MI_OBJ_COUNT; j++) mi_surrogate_destroy(st.model[j]);
  mi__meta_sources_free(&st);
  if (st.r) free(st.r->trials);
  free(st.r);
  free(X);
  free(mu);
  free(sd);
  return rc;
}
