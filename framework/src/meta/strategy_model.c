/* strategy_model.c - the surrogate-guided strategy's models: sources mapped into the target
 * space, the target's own model, RGPE weights and the weighted prediction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"

double mi__meta_logobj(const mi__meta_t *st, const mi_trial_t *t, int32_t j) {
  double v;
  if (t->status != MI_OK) return NAN;
  v = t->objectives[st->so->objectives[j]];
  if (!isfinite(v)) return NAN;
  return log(v > 1e-12 ? v : 1e-12); /* costs span orders of magnitude: model their log */
}

static int32_t fit_one(const double *X, const double *y, int32_t n, int32_t F, int32_t kind,
                       uint64_t seed, mi_surrogate_t **out, mi_error_t *err) {
  mi_surrogate_options_t o;
  mi_surrogate_options_default(&o);
  o.kind = kind;
  o.seed = seed;
  return mi_surrogate_fit(X, y, n, F, &o, out, err);
}

static void standardise(double *y, int32_t n, double *mu, double *sd) {
  double a = 0, q = 0;
  for (int32_t i = 0; i < n; i++) a += y[i];
  a /= n;
  for (int32_t i = 0; i < n; i++) q += (y[i] - a) * (y[i] - a);
  q = n > 1 ? sqrt(q / (n - 1)) : 0;
  if (!(q > 1e-12)) q = 1;
  for (int32_t i = 0; i < n; i++) y[i] = (y[i] - a) / q;
  *mu = a;
  *sd = q;
}

int32_t mi__meta_sources(mi__meta_t *st, mi_error_t *err) {
  const mi_meta_options_t *mo = &st->mo;
  int32_t k = mo->max_sources > 0 ? mo->max_sources : 4, idx[64], c, rc = MI_OK;
  int32_t *pt = NULL;
  double *y = NULL;
  if (!mo->sources || mo->source_count <= 0) return MI_OK;
  if (k > 64) k = 64;
  c = mi_meta_retrieve(mo->desc, mo->stack_hash, mo->sources, mo->source_count, k, mo->any_stack, idx, NULL);
  if (c <= 0) return MI_OK;
  st->src = calloc((size_t)c, sizeof *st->src);
  pt = malloc((size_t)st->D * sizeof *pt + 1);
  if (!st->src || !pt) {
    free(pt);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  }
  st->source_count = c;
  for (int32_t i = 0; i < c && rc == MI_OK; i++) {
    const mi_meta_task_t *t = &mo->sources[idx[i]];
    mi__source_t *sc = &st->src[i];
    int32_t sd = mi_space_dim_count(t->space), n = 0;
    sc->task = idx[i];
    sc->X = malloc((size_t)t->count * st->F * sizeof *sc->X + 1);
    sc->Y = malloc((size_t)t->count * st->m * sizeof *sc->Y + 1);
    y = realloc(y, (size_t)t->count * sizeof *y + 1);
    if (!sc->X || !sc->Y || !y) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
      break;
    }
    for (int32_t p = 0; p < t->count; p++) {
      if (mi_meta_map_point(t->space, t->graph, t->points + (size_t)p * sd, st->s, mo->graph, pt, NULL) != MI_OK)
        continue;
      if (mi__meta_fix(st, pt) != MI_OK) continue;
      mi_meta_encode(st->s, pt, sc->X + (size_t)n * st->F);
      for (int32_t j = 0; j < st->m; j++) {
        double v = t->objectives[(size_t)p * MI_OBJ_COUNT + st->so->objectives[j]];
        sc->Y[(size_t)n * st->m + j] = isfinite(v) ? log(v > 1e-12 ? v : 1e-12) : NAN;
      }
      n++;
    }
    sc->count = n;
    for (int32_t j = 0; j < st->m && rc == MI_OK; j++) {
      int32_t q = 0;
      double mu, s;
      double *Xj = malloc((size_t)(n ? n : 1) * st->F * sizeof *Xj);
      if (!Xj) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
        break;
      }
      for (int32_t p = 0; p < n; p++)
        if (isfinite(sc->Y[(size_t)p * st->m + j])) {
          memcpy(Xj + (size_t)q * st->F, sc->X + (size_t)p * st->F, (size_t)st->F * sizeof *Xj);
          y[q++] = sc->Y[(size_t)p * st->m + j];
        }
      if (q >= 3) {
        standardise(y, q, &mu, &s);
        sc->ysd[j] = s;
        rc = fit_one(Xj, y, q, st->F, MI_SURROGATE_AUTO, st->so->seed + 7u * (uint64_t)i, &sc->model[j], err);
      }
      free(Xj);
    }
  }
  free(pt);
  free(y);
  /* The per-layer base model from the sources that carry per-layer times (none: no change). */
  if (rc == MI_OK) rc = mi__meta_layer_build(st, err);
  return rc;
}

void mi__meta_sources_free(mi__meta_t *st) {
  mi__meta_layer_free(st);
  for (int32_t i = 0; i < st->source_count; i++) {
    free(st->src[i].X);
    free(st->src[i].Y);
    for (int32_t j = 0; j < MI_OBJ_COUNT; j++) mi_surrogate_destroy(st->src[i].model[j]);
  }
  free(st->src);
  st->src = NULL;
  st->source_count = 0;
}

/* Leave-one-out-like predictions of the target model at its own points (k-fold refits on a
 * GP), so the target competes with the sources on data it has not seen. */
static int32_t target_cv(mi__meta_t *st, const double *X, const double *y, int32_t n,
                         double *mean, double *sd, mi_error_t *err) {
  int32_t folds = n < 5 ? n : 5, rc = MI_OK;
  double *Xf = malloc((size_t)n * st->F * sizeof *Xf), *yf = malloc((size_t)n * sizeof *yf);
  if (!Xf || !yf) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  for (int32_t f = 0; f < folds && rc == MI_OK; f++) {
    int32_t q = 0;
    mi_surrogate_t *m = NULL;
    for (int32_t i = 0; i < n; i++)
      if (i % folds != f) {
        memcpy(Xf + (size_t)q * st->F, X + (size_t)i * st->F, (size_t)st->F * sizeof *Xf);
        yf[q++] = y[i];
      }
    if ((rc = fit_one(Xf, yf, q, st->F, MI_SURROGATE_GP, st->so->seed, &m, err)) != MI_OK) break;
    for (int32_t i = f; i < n && rc == MI_OK; i += folds)
      rc = mi_surrogate_predict(m, X + (size_t)i * st->F, 1, mean + i, sd + i, err);
    mi_surrogate_destroy(m);
  }
  free(Xf);
  free(yf);
  return rc;
}

int32_t mi__meta_fit(mi__meta_t *st, int32_t round, mi_error_t *err) {
  /* M: the sources, the per-layer base model when there is one, the target's own model. */
  int32_t N = st->r->count, rc = MI_OK, M = st->source_count + 1 + (st->lmodel != NULL);
  double *X = malloc((size_t)(N ? N : 1) * st->F * sizeof *X), *y = malloc((size_t)(N ? N : 1) * sizeof *y);
  double *pm = malloc((size_t)M * (N ? N : 1) * sizeof *pm), *ps = malloc((size_t)M * (N ? N : 1) * sizeof *ps);
  double w[66];
  int32_t *ti = malloc((size_t)(N ? N : 1) * sizeof *ti);
  if (!X || !y || !pm || !ps || !ti) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
    goto done;
  }
  for (int32_t j = 0; j < st->m && rc == MI_OK; j++) {
    int32_t n = 0, L = mi__meta_layer_active(st, j), S = st->source_count;
    M = S + 1 + L; /* the per-layer model, when it takes part, sits between sources and target */
    if (j == 0) st->lweight = 0;
    mi_surrogate_destroy(st->model[j]);
    st->model[j] = NULL;
    for (int32_t i = 0; i < N; i++) {
      double v = mi__meta_logobj(st, &st->r->trials[i], j);
      if (!isfinite(v) || mi__meta_excluded(st, i)) continue;
      mi_meta_encode(st->s, st->r->trials[i].point, X + (size_t)n * st->F);
      ti[n] = i;
      y[n++] = v;
    }
    st->target_weight[j] = 1;
    if (n == 0) continue;
    standardise(y, n, &st->ymu[j], &st->ysd[j]);
    if (n >= 2 && (rc = fit_one(X, y, n, st->F, st->mo.learner, st->so->seed + (uint64_t)round, &st->model[j], err)) != MI_OK)
      break;
    if (st->source_count == 0 || st->sources_off) continue;
    /* RGPE: every model ranks the target's own measurements; weight by who ranks best. */
    for (int32_t k = 0; k < st->source_count && rc == MI_OK; k++) {
      if (!st->src[k].model[j]) {
        for (int32_t i = 0; i < n; i++) {
          pm[(size_t)k * n + i] = 0;
          ps[(size_t)k * n + i] = 1e3; /* no model: a random ranker */
        }
        continue;
      }
      rc = mi_surrogate_predict(st->src[k].model[j], X, n, pm + (size_t)k * n, ps + (size_t)k * n, err);
    }
    if (rc != MI_OK) break;
    if (L) {
      /* The per-layer model ranks the target's measurements out of sample (it was fitted on the
       * sources' layers only); its calibration is monotone, so it cannot buy a better rank. */
      if (n >= 3) {
        if ((rc = mi__meta_layer_calibrate(st, ti, y, n, pm + (size_t)S * n, ps + (size_t)S * n, err)) != MI_OK) break;
      } else {
        for (int32_t i = 0; i < n; i++) {
          pm[(size_t)S * n + i] = 0;
          ps[(size_t)S * n + i] = 1e3;
        }
      }
    }
    if (n >= 3) {
      if ((rc = target_cv(st, X, y, n, pm + (size_t)(M - 1) * n, ps + (size_t)(M - 1) * n, err)) != MI_OK) break;
    } else {
      for (int32_t i = 0; i < n; i++) {
        pm[(size_t)(M - 1) * n + i] = 0;
        ps[(size_t)(M - 1) * n + i] = 1;
      }
    }
    mi_meta_rgpe_weights(pm, ps, M, y, n, 128, st->so->seed * 31u + (uint64_t)round, w);
    if (n >= 5) {
      /* Rank check on top of the draws: a source whose mean prediction orders the target's own
       * measurements no better than weakly (Spearman below 0.2) gets weight 0 at once, so a
       * misleading history stops steering the search after the cold design. */
      double tot = 0;
      for (int32_t k = 0; k < S + L; k++) {
        if (mi_metric_spearman(pm + (size_t)k * n, y, n) < MI_META_RANK_MIN) w[k] = 0;
        tot += w[k];
      }
      tot += w[M - 1];
      if (tot <= 0) w[M - 1] = tot = 1;
      for (int32_t k = 0; k < M; k++) w[k] /= tot;
    }
    for (int32_t k = 0; k < st->source_count; k++) st->src[k].weight[j] = w[k];
    if (L) st->lweight = st->lcal ? w[S] : 0; /* uncalibrated (inverted or too few): no say */
    st->target_weight[j] = w[M - 1];
  }
done:
  free(X);
  free(y);
  free(pm);
  free(ps);
  free(ti);
  return rc;
}

int32_t mi__meta_predict(mi__meta_t *st, const double *X, const int32_t *pts, int32_t n, double *mean, double *sd,
                         mi_error_t *err) {
  double *a = malloc((size_t)n * sizeof *a + 1), *b = malloc((size_t)n * sizeof *b + 1);
  int32_t rc = MI_OK;
  if (!a || !b) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  for (int32_t j = 0; j < st->m && rc == MI_OK; j++) {
    double wsum = 0;
    for (int32_t i = 0; i < n; i++) {
      mean[(size_t)i * st->m + j] = 0;
      sd[(size_t)i * st->m + j] = 0;
    }
    for (int32_t k = -1; k < st->source_count && rc == MI_OK; k++) {
      mi_surrogate_t *m = k < 0 ? st->model[j] : st->src[k].model[j];
      double w = k < 0 ? st->target_weight[j] : st->src[k].weight[j];
      if (!st->model[j] && k >= 0) w = 1; /* no target model yet: the sources alone */
      if (k >= 0 && st->sources_off) w = 0;
      if (!m || w <= 0) continue;
      if ((rc = mi_surrogate_predict(m, X, n, a, b, err)) != MI_OK) break;
      wsum += w;
      for (int32_t i = 0; i < n; i++) {
        mean[(size_t)i * st->m + j] += w * a[i];
        sd[(size_t)i * st->m + j] += w * w * b[i] * b[i];
      }
    }
    if (rc == MI_OK && pts && st->model[j] && mi__meta_layer_active(st, j) && st->lcal && st->lweight > 0) {
      /* The per-layer base model, on the target's scale, with its calibration's spread. */
      double w = st->lweight;
      if ((rc = mi__meta_layer_predict(st, pts, n, a, err)) != MI_OK) break;
      wsum += w;
      for (int32_t i = 0; i < n; i++) {
        mean[(size_t)i * st->m + j] += w * a[i];
        sd[(size_t)i * st->m + j] += w * w * st->lsd * st->lsd;
      }
    }
    for (int32_t i = 0; i < n; i++) {
      if (wsum > 0) {
        mean[(size_t)i * st->m + j] /= wsum;
        sd[(size_t)i * st->m + j] = sqrt(sd[(size_t)i * st->m + j]) / wsum;
      } else {
        sd[(size_t)i * st->m + j] = 1; /* nothing known: flat prior */
      }
    }
  }
  free(a);
  free(b);
  return rc;
}
