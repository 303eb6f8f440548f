/* search.c - the search loop: budgets, de-duplication, resume; random and exhaustive strategies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "metainfer/mi_meta.h"
#include "search/search_internal.h"
#include "space/space.h"

int mi__search_has_budget(mi__search_t *st) {
  /* Replayed trials count: a resumed run ends where the uninterrupted one would have. */
  if (st->r->measured + st->r->replayed >= st->budget) return 0;
  if (st->o->max_seconds > 0 && mi__now_s() - st->t0 >= st->o->max_seconds) return 0;
  return 1;
}

int32_t mi__search_eval(mi__search_t *st, const int32_t *pt, int *fresh) {
  mi_search_result_t *r = st->r;
  int32_t i;
  *fresh = 0;
  if (st->o->frozen && st->fixed) {
    /* A restricted space: frozen dimensions go back to their defaults before anything else. */
    memcpy(st->scratch, pt, (size_t)st->dims * sizeof *pt);
    for (int32_t d = 0; d < st->dims; d++)
      if (st->o->frozen[d]) st->scratch[d] = st->fixed[d];
    mi_space_repair(st->s, st->scratch, NULL, NULL);
    pt = st->scratch;
  }
  i = mi__trial_eval(st->s, st->o, r, &st->cap, pt, fresh);
  if (i >= 0 && *fresh && st->o->progress)
    st->o->progress(st->o->progress_ctx, &r->trials[i], r->measured, st->budget,
                    mi__now_s() - st->t0);
  return i;
}

void mi__search_matrix(const mi__search_t *st, const int32_t *idx, int32_t n, double *obj,
                       double *viol) {
  const mi_search_options_t *o = st->o;
  int32_t m = o->objective_count;
  for (int32_t i = 0; i < n; i++) {
    const mi_trial_t *t = &st->r->trials[idx[i]];
    double v = 0;
    for (int32_t j = 0; j < m; j++) obj[(size_t)i * m + j] = t->objectives[o->objectives[j]];
    mi_pareto_violation(t->objectives, 1, MI_OBJ_COUNT, o->bounds, o->bound_count, &v);
    /* A failed measurement, or a missing objective, ranks behind every real one. */
    if (t->status != MI_OK) v += 1e9;
    for (int32_t j = 0; j < m; j++)
      if (isnan(obj[(size_t)i * m + j])) {
        obj[(size_t)i * m + j] = INFINITY;
        v += 1e6;
      }
    viol[i] = v;
  }
}

static int32_t run_random(mi__search_t *st, mi_error_t *err) {
  int32_t *pt = malloc((size_t)st->dims * sizeof *pt + 1), dups = 0, rc = MI_OK;
  int fresh;
  if (!pt) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "search: out of memory");
  /* The plugin's defaults first: the baseline every other choice is compared with. */
  mi_space_default(st->s, pt);
  if (mi_space_repair(st->s, pt, NULL, NULL) == MI_OK && mi__search_eval(st, pt, &fresh) < 0)
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "search: out of memory");
  while (rc == MI_OK && mi__search_has_budget(st) && dups < 200) {
    if (mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK) {
      dups++;
      continue;
    }
    if (mi__search_eval(st, pt, &fresh) < 0) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "search: out of memory");
    dups = fresh ? 0 : dups + 1; /* many repeats in a row: the space is used up */
  }
  free(pt);
  return rc;
}

/* Every point in mixed-radix order; inactive dimensions only at their default, so each
 * distinct configuration comes once; points that break a rule are skipped unmeasured. */
static int32_t run_exhaustive(mi__search_t *st, mi_error_t *err) {
  int32_t n = st->dims, *pt = calloc((size_t)n + 1, sizeof *pt), *norm = calloc((size_t)n + 1, sizeof *norm);
  int32_t rc = MI_OK;
  int fresh;
  if (!pt || !norm) {
    free(pt);
    free(norm);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "search: out of memory");
  }
  for (int32_t d = 0; d < n && st->o->frozen; d++)
    if (st->o->frozen[d]) pt[d] = st->fixed[d];
  for (;;) {
    int canonical = 1;
    for (int32_t d = 0; d < n; d++) {
      norm[d] = pt[d];
      if (!(st->o->frozen && st->o->frozen[d]) && !mi_space_active(st->s, pt, d) && pt[d] != 0) canonical = 0;
    }
    if (canonical && mi_space_check(st->s, pt, NULL) == MI_OK) {
      if (!mi__search_has_budget(st)) break;
      if (mi__search_eval(st, pt, &fresh) < 0) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "search: out of memory");
        break;
      }
    }
    {
      int32_t d = 0;
      /* Frozen dimensions do not move: only the restricted space is enumerated. */
      while (d < n && (st->o->frozen && st->o->frozen[d] ? 1 : ++pt[d] == mi_space_dim_size(st->s, d)))
        pt[d] = st->o->frozen && st->o->frozen[d] ? st->fixed[d] : 0, d++;
      if (d == n) break;
    }
  }
  free(pt);
  free(norm);
  return rc;
}

int32_t mi_search_run(const mi_space_t *s, const mi_search_options_t *o, mi_search_result_t **out,
                      mi_error_t *err) {
  mi__search_t st;
  int32_t rc;
  if (out) *out = NULL;
  if (!s || !o || !out || !o->evaluate || o->objective_count <= 0 ||
      o->objective_count > MI_OBJ_COUNT)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "search: a space, an evaluator and 1..%d objectives are required", MI_OBJ_COUNT);
  for (int32_t j = 0; j < o->objective_count; j++)
    if (o->objectives[j] < 0 || o->objectives[j] >= MI_OBJ_COUNT)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "search: unknown objective %d", (int)o->objectives[j]);
  memset(&st, 0, sizeof st);
  st.s = s;
  st.o = o;
  st.dims = mi_space_dim_count(s);
  st.budget = o->max_measurements > 0 ? o->max_measurements : 40;
  st.t0 = mi__now_s();
  mi_rng_seed(&st.rng, o->seed);
  if (o->strategy == MI_STRATEGY_META) {
    mi_meta_options_t mo;
    mi_meta_options_default(&mo);
    mo.frozen = o->frozen;
    return mi_meta_search_run(s, o, &mo, out, err);
  }
  st.r = calloc(1, sizeof *st.r);
  st.fixed = malloc((size_t)st.dims * sizeof *st.fixed + 1);
  st.scratch = malloc((size_t)st.dims * sizeof *st.scratch + 1);
  if (!st.r || !st.fixed || !st.scratch) {
    free(st.r);
    free(st.fixed);
    free(st.scratch);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "search: out of memory");
  }
  mi_space_default(s, st.fixed);
  switch (o->strategy) {
  case MI_STRATEGY_RANDOM: rc = run_random(&st, err); break;
  case MI_STRATEGY_EXHAUSTIVE: rc = run_exhaustive(&st, err); break;
  case MI_STRATEGY_NSGA2: rc = mi__search_nsga2(&st, err); break;
  default: rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "search: unknown strategy %d", (int)o->strategy);
  }
  st.r->seconds = mi__now_s() - st.t0;
  free(st.fixed);
  free(st.scratch);
  if (rc != MI_OK) {
    mi_search_result_destroy(st.r);
    return rc;
  }
  *out = st.r;
  return MI_OK;
}

int32_t mi_search_front(const mi_search_result_t *r, const mi_search_options_t *o,
                        const int32_t *preference, int32_t preference_count, int32_t *idx) {
  mi__search_t st;
  int32_t n, m, *all, *front, c = 0;
  double *obj, *viol;
  if (!r || !o || !idx || r->count == 0) return 0;
  memset(&st, 0, sizeof st);
  st.o = o;
  st.r = (mi_search_result_t *)r;
  n = r->count;
  m = o->objective_count;
  all = malloc((size_t)n * sizeof *all);
  front = malloc((size_t)n * sizeof *front);
  obj = malloc((size_t)n * (size_t)m * sizeof *obj);
  viol = malloc((size_t)n * sizeof *viol);
  if (all && front && obj && viol) {
    for (int32_t i = 0; i < n; i++) all[i] = i;
    mi__search_matrix(&st, all, n, obj, viol);
    c = mi_pareto_front(obj, n, m, viol, front);
    /* Order the front by the preference: repeatedly pick the best of what is left. */
    for (int32_t k = 0; k < c; k++) {
      double *sub = malloc((size_t)(c - k) * MI_OBJ_COUNT * sizeof *sub);
      int32_t best;
      if (!sub) break;
      for (int32_t i = k; i < c; i++)
        memcpy(sub + (size_t)(i - k) * MI_OBJ_COUNT, r->trials[front[i]].objectives, sizeof r->trials[0].objectives);
      best = mi_pareto_pick(sub, c - k, MI_OBJ_COUNT, NULL, preference, preference_count);
      free(sub);
      if (best < 0) best = 0;
      {
        int32_t t = front[k];
        front[k] = front[k + best];
        front[k + best] = t;
      }
    }
    memcpy(idx, front, (size_t)c * sizeof *idx);
  }
  free(all);
  free(front);
  free(obj);
  free(viol);
  return c;
}
