/* strategy_layer.c - the surrogate-guided search's per-layer base model: one model of layer
 * times over the sources' per-layer rows (layer.c), summed over the target's layers, calibrated
 * on the target's own end-to-end measurements and weighted in the ensemble exactly like a source
 * (by how well it ranks those measurements), so it earns weight only where it ranks well. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"

/* Sources whose rows train it (nearest first) and configurations per source (rows come best
 * first from mi-host tune's history): bounds the fit's cost. */
enum { LAYER_SOURCES = 8,
       LAYER_ROWS_PER_SOURCE = 128 };

/* The least spread of its draws for the RGPE weights (standardised log scale): the residual of
 * an in-sample calibration is optimistic. */
#define LAYER_SD_MIN 0.05

int mi__meta_layer_active(const mi__meta_t *st, int32_t j) {
  return st->lmodel != NULL && j == 0 && !st->sources_off;
}

int32_t mi__meta_layer_build(mi__meta_t *st, mi_error_t *err) {
  const mi_meta_options_t *mo = &st->mo;
  mi_meta_layer_task_t lt[LAYER_SOURCES];
  mi_surrogate_options_t so;
  int32_t idx[64], c, n = 0, rc, k;
  if (mo->no_layer_model || !mo->graph || !mo->sources || mo->source_count <= 0 || st->source_count == 0) return MI_OK;
  /* Layer times add up to latency, not to memory, energy or accuracy. */
  if (st->so->objectives[0] != MI_OBJ_LATENCY) return MI_OK;
  k = mo->source_count < 64 ? mo->source_count : 64;
  c = mi_meta_retrieve(mo->desc, mo->stack_hash, mo->sources, mo->source_count, k, mo->any_stack, idx, NULL);
  for (int32_t i = 0; i < c && n < LAYER_SOURCES; i++) {
    const mi_meta_task_t *t = &mo->sources[idx[i]];
    if (!t->layer_latency || !t->graph || !t->space || !t->points || t->count <= 0) continue;
    memset(&lt[n], 0, sizeof lt[n]);
    lt[n].space = t->space;
    lt[n].graph = t->graph;
    memcpy(lt[n].desc, t->desc, sizeof lt[n].desc);
    lt[n].count = t->count < LAYER_ROWS_PER_SOURCE ? t->count : LAYER_ROWS_PER_SOURCE;
    lt[n].points = t->points;
    lt[n].layer_latency = t->layer_latency;
    n++;
  }
  if (n == 0) return MI_OK; /* no per-layer rows: the search is exactly as without them */
  mi_surrogate_options_default(&so);
  so.seed = st->so->seed;
  /* XGBoost whatever the row count: a screen predicts every layer of 10^4-10^5 candidates per
   * round, which a GP over a few hundred rows makes seconds; one member, as only its mean is used
   * (the spread comes from the calibration). */
  so.kind = MI_SURROGATE_XGB;
  so.ensemble = 1;
  rc = mi__layer_model_fit(st->s, lt, n, &so, &st->lmodel, &st->lrows, err);
  if (rc == MI_ERR_INVALID_ARGUMENT) return MI_OK; /* too few timed layers to fit: no model */
  if (rc != MI_OK) return rc;
  st->lsources = n;
  if (!(st->luse = calloc((size_t)mo->graph->node_count + 1, 1)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  if (mo->report) {
    mo->report->layer_model = 1;
    mo->report->layer_rows = st->lrows;
    mo->report->layer_sources = n;
  }
  return MI_OK;
}

void mi__meta_layer_free(mi__meta_t *st) {
  mi__layer_model_free(st->lmodel);
  st->lmodel = NULL;
  free(st->luse);
  st->luse = NULL;
  free(st->tls);
  st->tls = NULL;
  st->tls_cap = 0;
}

void mi__meta_layer_fetch(mi__meta_t *st, int32_t i) {
  int32_t N, got;
  const mi_trial_t *t = &st->r->trials[i];
  /* A replayed trial's layers are its stored ones where the evaluator keeps them (mi-host tune:
   * the default is replayed from the layer-task rounds, and the precision greedy needs its
   * per-layer times); an evaluator that has none returns none. */
  if (!st->so->layer_times || !st->mo.graph || t->status != MI_OK) return;
  N = st->mo.graph->node_count;
  if (N <= 0) return;
  if (i >= st->tls_cap) {
    int32_t nc = st->tls_cap ? st->tls_cap : 64;
    double *nt;
    while (nc <= i) nc *= 2;
    if (!(nt = realloc(st->tls, (size_t)nc * N * sizeof *nt))) return; /* layers are optional */
    for (size_t q = (size_t)st->tls_cap * N; q < (size_t)nc * N; q++) nt[q] = NAN;
    st->tls = nt;
    st->tls_cap = nc;
  }
  got = st->so->layer_times(st->so->layer_times_ctx, st->tls + (size_t)i * N, N);
  if (got > 0) st->ltrials++;
  if (st->mo.report) st->mo.report->layer_trials = st->ltrials;
}

/* The target layers to sum: those its own measurements timed; before any, those the sources of
 * the same model timed; else every layer with static features (folded ones then count too, and
 * the calibration's offset absorbs them). */
static void layer_use(mi__meta_t *st) {
  int32_t N = st->mo.graph->node_count, any = 0;
  memset(st->luse, 0, (size_t)N);
  for (int32_t i = 0; st->tls && i < st->r->count && i < st->tls_cap; i++)
    for (int32_t nd = 0; nd < N; nd++) {
      double v = st->tls[(size_t)i * N + nd];
      if (isfinite(v) && v > 0) st->luse[nd] = any = 1;
    }
  for (int32_t k = 0; !any && k < st->mo.source_count; k++) {
    const mi_meta_task_t *t = &st->mo.sources[k];
    if (t->graph != st->mo.graph || !t->layer_latency) continue;
    for (int32_t i = 0; i < t->count && i < LAYER_ROWS_PER_SOURCE; i++)
      for (int32_t nd = 0; nd < N; nd++) {
        double v = t->layer_latency[(size_t)i * N + nd];
        if (isfinite(v) && v > 0) st->luse[nd] = any = 1;
      }
  }
  if (!any) memset(st->luse, 1, (size_t)N);
}

/* The calibrated prediction on the target's standardised log scale of summed layer times z:
 * a * z + b on the measured scale (an end-to-end overhead is an offset there, not in logs, as in
 * mi_meta_layer_predict), floored at a tenth of the fastest measured. */
static double on_scale(const mi__meta_t *st, double z) {
  double v = st->la * z + st->lb;
  if (!(v >= st->lfloor)) v = st->lfloor;
  return (log(v) - st->ymu[0]) / st->ysd[0];
}

int32_t mi__meta_layer_calibrate(mi__meta_t *st, const int32_t *trial, const double *y, int32_t n, double *pm,
                                 double *ps, mi_error_t *err) {
  int32_t *pts = malloc((size_t)(n ? n : 1) * st->D * sizeof *pts), rc;
  double *meas = malloc((size_t)(n ? n : 1) * sizeof *meas), a = 0, b = 0, r = 0, zm = 0, zs = 0, lo = INFINITY;
  st->lcal = 0;
  if (!pts || !meas) {
    free(pts);
    free(meas);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  }
  for (int32_t i = 0; i < n; i++) memcpy(pts + (size_t)i * st->D, st->r->trials[trial[i]].point, (size_t)st->D * sizeof *pts);
  layer_use(st);
  rc = mi__layer_model_sum(st->lmodel, st->s, st->mo.graph, st->mo.desc, st->luse, pts, n, pm, err);
  free(pts);
  for (int32_t i = 0; i < n; i++) {
    meas[i] = exp(st->ymu[0] + st->ysd[0] * y[i]);
    if (meas[i] < lo) lo = meas[i];
  }
  if (rc == MI_OK && n >= 3) mi_calibration_fit(pm, meas, n, &a, &b);
  free(meas);
  if (rc != MI_OK) return rc;
  if (n >= 3 && a > 0) {
    /* measured ~ a * summed + b: keeps its order, fixes its scale and the end-to-end offset. */
    st->la = a;
    st->lb = b;
    st->lfloor = 0.1 * lo;
    for (int32_t i = 0; i < n; i++) {
      pm[i] = on_scale(st, pm[i]);
      r += (y[i] - pm[i]) * (y[i] - pm[i]);
    }
    st->lsd = sqrt(r / (n > 3 ? n - 2 : 1));
    if (!(st->lsd >= LAYER_SD_MIN)) st->lsd = LAYER_SD_MIN;
    st->lcal = 1;
    for (int32_t i = 0; i < n; i++) ps[i] = st->lsd;
    return MI_OK;
  }
  /* Too few points, or an order opposite to the target's: it competes with its raw order
   * (standardised log), so the draws and the rank check judge it, and it predicts nothing. */
  for (int32_t i = 0; i < n; i++) pm[i] = log(pm[i] > 1e-30 ? pm[i] : 1e-30);
  for (int32_t i = 0; i < n; i++) zm += pm[i] / n;
  for (int32_t i = 0; i < n; i++) zs += (pm[i] - zm) * (pm[i] - zm);
  zs = n > 1 && zs > 0 ? sqrt(zs / (n - 1)) : 1;
  for (int32_t i = 0; i < n; i++) {
    pm[i] = (pm[i] - zm) / zs;
    ps[i] = 1;
  }
  return MI_OK;
}

int32_t mi__meta_layer_predict(mi__meta_t *st, const int32_t *pts, int32_t n, double *mean, mi_error_t *err) {
  int32_t rc = mi__layer_model_sum(st->lmodel, st->s, st->mo.graph, st->mo.desc, st->luse, pts, n, mean, err);
  for (int32_t i = 0; i < n && rc == MI_OK; i++) mean[i] = on_scale(st, mean[i]);
  return rc;
}
