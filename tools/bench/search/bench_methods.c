/* bench_methods.c - the search benchmark's methods on the cached table: random, NSGA-II, an
 * AutoTVM-like baseline (XGBoost rank:pairwise + simulated annealing on the model), ours cold,
 * ours warm-started from the other tasks, ours with a deliberately misleading history, and
 * model-then-hardware tuning (NSGA-II or ours cold in two phases). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"

const char *const bs_method_names[BS_METHODS] = {"random", "nsga2", "autotvm-like", "ours cold",
                                                 "ours warm", "ours misleading",
                                                 "model-then-hw nsga2", "model-then-hw ours cold"};

int32_t bs_find(const bs_task_t *t, uint64_t hash) {
  for (int32_t i = 0; i < t->n; i++)
    if (t->rows[i].hash == hash) return i;
  return -1;
}

void bs_sources_build(bs_task_t *tasks, int32_t ntask, int32_t target, int exclude_device,
                      int mislead, uint64_t seed, int32_t per_source, bs_sources_t *out) {
  mi_rng_t rng;
  memset(out, 0, sizeof *out);
  mi_rng_seed(&rng, seed * 977u + 13u);
  for (int32_t k = 0; k < ntask; k++) {
    bs_task_t *t = &tasks[k];
    mi_meta_task_t *mt;
    int32_t c = 0;
    if (k == target || t->stack != tasks[target].stack || t->n == 0) continue;
    if (exclude_device && !strcmp(t->spec, tasks[target].spec)) continue;
    mt = &out->tasks[out->count];
    out->pts[out->count] = malloc((size_t)per_source * t->D * sizeof(int32_t) + 1);
    out->obj[out->count] = malloc((size_t)per_source * MI_OBJ_COUNT * sizeof(double) + 1);
    if (!out->pts[out->count] || !out->obj[out->count]) break;
    /* A past tuning measured a sample of its space, not all of it. */
    for (int32_t i = 0; i < per_source; i++) {
      const bs_row_t *r = &t->rows[mi_rng_below(&rng, (uint32_t)t->n)];
      if (!r->ok) continue;
      memcpy(out->pts[out->count] + (size_t)c * t->D, r->pt, (size_t)t->D * sizeof(int32_t));
      memcpy(out->obj[out->count] + (size_t)c * MI_OBJ_COUNT, r->obj, sizeof r->obj);
      if (mislead) {
        /* The history ranks the opposite way: fast where this task is slow. */
        double *o = out->obj[out->count] + (size_t)c * MI_OBJ_COUNT;
        o[MI_OBJ_LATENCY] = t->ref * t->ref * 4 / o[MI_OBJ_LATENCY];
      }
      c++;
    }
    mt->name = t->name;
    mt->space = t->space;
    mt->graph = t->graph;
    memcpy(mt->desc, t->desc, sizeof mt->desc);
    mt->stack_hash = t->stack;
    mt->count = c;
    mt->points = out->pts[out->count];
    mt->objectives = out->obj[out->count];
    out->count++;
  }
}

void bs_sources_free(bs_sources_t *s) {
  for (int32_t i = 0; i < s->count; i++) {
    free(s->pts[i]);
    free(s->obj[i]);
  }
  s->count = 0;
}

/* ---------------------------------------------------------------- AutoTVM-like */

static void freeze(const bs_task_t *t, const int32_t *dflt, int32_t *pt) {
  for (int32_t d = 0; d < t->D; d++)
    if (t->frozen[d]) pt[d] = dflt[d];
  mi_space_repair(t->space, pt, NULL, NULL);
}

/* Predicted log latency of m points (higher = slower) by the ranker ensemble. */
static void score(const mi_surrogate_t *m, const mi_space_t *s, const int32_t *pts, int32_t n,
                  int32_t D, int32_t F, double *out) {
  double *X = malloc((size_t)n * F * sizeof *X + 1);
  if (!X) return;
  for (int32_t i = 0; i < n; i++) mi_meta_encode(s, pts + (size_t)i * D, X + (size_t)i * F);
  mi_surrogate_predict(m, X, n, out, NULL, NULL);
  free(X);
}

/* AutoTVM's loop: a cold start of random points, then rounds of: fit XGBoost (rank:pairwise),
 * simulated annealing of parallel chains on the model, the best unmeasured points of the
 * annealing's end points as the next batch (random points top it up; no epsilon-greedy). */
static int32_t run_autotvm(bs_task_t *t, uint64_t seed, int32_t budget, mi_search_result_t **out,
                           mi_error_t *err) {
  enum { CHAINS = 64,
         STEPS = 40,
         BATCH = 8 };
  int32_t D = t->D, F = mi_meta_feature_count(t->space), rc = MI_OK;
  int32_t *dflt = malloc((size_t)D * sizeof *dflt), *cur = malloc((size_t)CHAINS * D * sizeof *cur);
  int32_t *nxt = malloc((size_t)CHAINS * D * sizeof *nxt), *pick = malloc((size_t)BATCH * D * sizeof *pick);
  double *cs = malloc(CHAINS * sizeof *cs), *ns = malloc(CHAINS * sizeof *ns);
  mi_search_result_t *r = calloc(1, sizeof *r);
  mi_rng_t rng;
  if (!dflt || !cur || !nxt || !pick || !cs || !ns || !r || !(r->trials = calloc((size_t)budget + 1, sizeof *r->trials))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "autotvm: out of memory");
    goto done;
  }
  mi_rng_seed(&rng, seed);
  mi_space_default(t->space, dflt);
  while (r->count < budget) {
    int32_t want = budget - r->count < BATCH ? budget - r->count : BATCH, got = 0;
    mi_surrogate_t *m = NULL;
    if (r->count >= BATCH) {
      mi_surrogate_options_t so;
      double *X = malloc((size_t)r->count * F * sizeof *X), *y = malloc((size_t)r->count * sizeof *y);
      int32_t n = 0;
      for (int32_t i = 0; X && y && i < r->count; i++)
        if (r->trials[i].status == MI_OK) {
          mi_meta_encode(t->space, r->trials[i].point, X + (size_t)n * F);
          y[n++] = log(r->trials[i].objectives[MI_OBJ_LATENCY]);
        }
      mi_surrogate_options_default(&so);
      so.kind = MI_SURROGATE_XGB_RANK;
      so.seed = seed + (uint64_t)r->count;
      if (n >= 4) mi_surrogate_fit(X, y, n, F, &so, &m, NULL);
      free(X);
      free(y);
    }
    if (m) {
      /* Annealing: temperature from 1 to 0 over the steps; the visits' best go to the batch. */
      for (int32_t c = 0; c < CHAINS; c++) {
        mi_space_sample(t->space, &rng, cur + (size_t)c * D, NULL);
        freeze(t, dflt, cur + (size_t)c * D);
      }
      score(m, t->space, cur, CHAINS, D, F, cs);
      for (int32_t step = 0; step < STEPS; step++) {
        double temp = 1.0 - (double)step / STEPS;
        memcpy(nxt, cur, (size_t)CHAINS * D * sizeof *nxt);
        for (int32_t c = 0; c < CHAINS; c++) {
          mi_space_mutate(t->space, &rng, 0, nxt + (size_t)c * D, NULL);
          freeze(t, dflt, nxt + (size_t)c * D);
        }
        score(m, t->space, nxt, CHAINS, D, F, ns);
        for (int32_t c = 0; c < CHAINS; c++)
          if (ns[c] < cs[c] || mi_rng_uniform(&rng) < exp(-(ns[c] - cs[c]) / (temp * 0.2 + 1e-9))) {
            memcpy(cur + (size_t)c * D, nxt + (size_t)c * D, (size_t)D * sizeof *cur);
            cs[c] = ns[c];
          }
      }
      /* The chains' end points, best first, unmeasured and distinct. */
      for (int32_t k = 0; k < want && got < want; k++) {
        int32_t b = -1;
        for (int32_t c = 0; c < CHAINS; c++) {
          uint64_t h = mi_space_hash(t->space, cur + (size_t)c * D);
          int seen = 0;
          for (int32_t i = 0; i < r->count && !seen; i++) seen = r->trials[i].hash == h;
          for (int32_t i = 0; i < got && !seen; i++) seen = mi_space_hash(t->space, pick + (size_t)i * D) == h;
          if (!seen && isfinite(cs[c]) && (b < 0 || cs[c] < cs[b])) b = c;
        }
        if (b < 0) break;
        memcpy(pick + (size_t)got++ * D, cur + (size_t)b * D, (size_t)D * sizeof *pick);
        cs[b] = INFINITY;
      }
      mi_surrogate_destroy(m);
    }
    for (int32_t tries = 0; got < want && tries < 200; tries++) {
      /* Cold start and top-up: random points. */
      uint64_t h;
      int seen = 0;
      mi_space_sample(t->space, &rng, pick + (size_t)got * D, NULL);
      freeze(t, dflt, pick + (size_t)got * D);
      h = mi_space_hash(t->space, pick + (size_t)got * D);
      for (int32_t i = 0; i < r->count && !seen; i++) seen = r->trials[i].hash == h;
      if (!seen) got++;
    }
    if (got == 0) break;
    for (int32_t i = 0; i < got && r->count < budget; i++) {
      mi_trial_t *tr = &r->trials[r->count];
      mi_error_t e;
      memset(tr, 0, sizeof *tr);
      if (!(tr->point = malloc((size_t)D * sizeof *tr->point))) break;
      memcpy(tr->point, pick + (size_t)i * D, (size_t)D * sizeof *tr->point);
      tr->hash = mi_space_hash(t->space, tr->point);
      tr->status = bs_evaluate(t, t->space, tr->point, tr->objectives, &e);
      r->count++;
      r->measured++;
    }
  }
done:
  free(dflt);
  free(cur);
  free(nxt);
  free(pick);
  free(cs);
  free(ns);
  if (rc != MI_OK) {
    mi_search_result_destroy(r);
    r = NULL;
  }
  *out = r;
  return rc;
}

/* One run of random, NSGA-II or ours on the task's space with `frozen` held at the defaults
 * and `ev`/`ctx` as the evaluator. */
static int32_t run_search(bs_task_t *tasks, int32_t ntask, int32_t target, int method,
                          uint64_t seed, int32_t budget, const uint8_t *frozen, mi_evaluate_fn ev,
                          void *ctx, mi_search_result_t **out, mi_meta_report_t *rep,
                          mi_error_t *err) {
  bs_task_t *t = &tasks[target];
  mi_search_options_t o;
  int32_t objs[2] = {MI_OBJ_LATENCY, MI_OBJ_MEMORY}, rc;
  bs_search_options(&o, seed, budget, 2, objs, ev, ctx, frozen);
  o.population = 8;
  if (method == BS_RANDOM || method == BS_NSGA2 || method == BS_EXHAUSTIVE) {
    o.strategy = method == BS_RANDOM ? MI_STRATEGY_RANDOM : method == BS_NSGA2 ? MI_STRATEGY_NSGA2
                                                                               : MI_STRATEGY_EXHAUSTIVE;
    return mi_search_run(t->space, &o, out, err);
  }
  {
    mi_meta_options_t mo;
    bs_sources_t src;
    bs_meta_options(t, &mo);
    mo.frozen = frozen;
    mo.screen = 4000; /* the restricted spaces hold hundreds of points, not 10^5 */
    mo.report = rep;
    {
      /* Experiment knobs (docs/benchmarks.md): MI_BENCH_LEARNER (mi_surrogate_kind),
       * MI_BENCH_KAPPA, MI_BENCH_BATCH, MI_BENCH_INIT, MI_BENCH_SCREEN, MI_BENCH_PRIMARY. */
      const char *e;
      if ((e = getenv("MI_BENCH_LEARNER"))) mo.learner = (int32_t)strtol(e, NULL, 10);
      if ((e = getenv("MI_BENCH_KAPPA"))) mo.kappa = strtod(e, NULL);
      if ((e = getenv("MI_BENCH_BATCH"))) mo.batch = (int32_t)strtol(e, NULL, 10);
      if ((e = getenv("MI_BENCH_INIT"))) mo.init_points = (int32_t)strtol(e, NULL, 10);
      if ((e = getenv("MI_BENCH_SCREEN"))) mo.screen = (int32_t)strtol(e, NULL, 10);
      if ((e = getenv("MI_BENCH_PRIMARY"))) mo.primary_share = strtod(e, NULL);
      if ((e = getenv("MI_BENCH_EXPLORE"))) mo.explore_share = strtod(e, NULL);
    }
    memset(&src, 0, sizeof src);
    if (method != BS_OURS_COLD) bs_sources_build(tasks, ntask, target, 0, method == BS_OURS_MISLEAD, seed, 64, &src);
    mo.sources = src.tasks;
    mo.source_count = src.count;
    rc = mi_meta_search_run(t->space, &o, &mo, out, err);
    bs_sources_free(&src);
    return rc;
  }
}

/* ---------------------------------------------------------------- model-then-hardware */

/* Phase 2's evaluator: the searched point with its model-side dimensions replaced by the
 * choice phase 1 fixed, repaired, then measured like any other (the table). */
typedef struct mth_ctx {
  bs_task_t *t;
  const int32_t *fix;   /* phase 1's best point */
  const uint8_t *model; /* 1: a model-side dimension (MI_DIM_MODEL) */
} mth_ctx_t;

static int32_t mth_map(const mth_ctx_t *c, const int32_t *pt, int32_t *q, mi_error_t *err) {
  memcpy(q, pt, (size_t)c->t->D * sizeof *q);
  for (int32_t d = 0; d < c->t->D; d++)
    if (c->model[d]) q[d] = c->fix[d];
  return mi_space_repair(c->t->space, q, NULL, err);
}

static int32_t mth_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                            mi_error_t *err) {
  mth_ctx_t *c = ctx;
  int32_t *q = malloc((size_t)c->t->D * sizeof *q), rc;
  if (!q) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "model-then-hw: out of memory");
  rc = mth_map(c, pt, q, err);
  if (rc == MI_OK) rc = bs_evaluate(c->t, s, q, obj, err);
  free(q);
  return rc;
}

/* Model-then-hardware tuning with the same engine (`base`: NSGA-II or ours cold) and the same
 * total budget: phase 1 searches the model-side dimensions only, the hardware side at the
 * plugin's defaults, with half the budget (less when its space runs out first); phase 2 fixes
 * phase 1's fastest feasible model side and searches the hardware-side dimensions (variants,
 * knobs, device knobs) with the rest. The result holds both phases' trials in order, phase 2's
 * with the configuration actually measured. */
static int32_t run_model_then_hw(bs_task_t *tasks, int32_t ntask, int32_t target, int base,
                                 uint64_t seed, int32_t budget, mi_search_result_t **out,
                                 mi_error_t *err) {
  bs_task_t *t = &tasks[target];
  int32_t D = t->D, rc, best = -1;
  uint8_t *fz1 = malloc((size_t)D), *fz2 = malloc((size_t)D), *model = malloc((size_t)D);
  int32_t *fix = malloc((size_t)D * sizeof *fix);
  mi_search_result_t *r1 = NULL, *r2 = NULL, *r = NULL;
  mth_ctx_t c;
  *out = NULL;
  if (!fz1 || !fz2 || !model || !fix) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "model-then-hw: out of memory");
    goto done;
  }
  for (int32_t d = 0; d < D; d++) {
    model[d] = mi_space_dim_kind(t->space, d) == MI_DIM_MODEL;
    fz1[d] = t->frozen[d] || !model[d];
    fz2[d] = t->frozen[d] || model[d];
  }
  t->hw_bounds_off = 1;
  rc = run_search(tasks, ntask, target, base, seed, budget / 2, fz1, bs_evaluate, t, &r1, NULL, err);
  t->hw_bounds_off = 0;
  if (rc != MI_OK) goto done;
  mi_space_default(t->space, fix);
  /* The fastest model side that met the energy bound at the hardware defaults, else (none did)
   * the fastest one: phase 2 then looks for hardware that meets it. */
  for (int pass = 0; pass < 2 && best < 0; pass++)
    for (int32_t i = 0; i < r1->count; i++)
      if (r1->trials[i].status == MI_OK &&
          (pass || !(t->energy_bound > 0) || r1->trials[i].objectives[MI_OBJ_ENERGY] <= t->energy_bound) &&
          (best < 0 || r1->trials[i].objectives[MI_OBJ_LATENCY] < r1->trials[best].objectives[MI_OBJ_LATENCY]))
        best = i;
  if (best >= 0) memcpy(fix, r1->trials[best].point, (size_t)D * sizeof *fix);
  c.t = t;
  c.fix = fix;
  c.model = model;
  rc = run_search(tasks, ntask, target, base, seed * 31u + 7u, budget - r1->count, fz2, mth_evaluate, &c,
                  &r2, NULL, err);
  if (rc != MI_OK) goto done;
  if (!(r = calloc(1, sizeof *r)) ||
      !(r->trials = calloc((size_t)(r1->count + r2->count) + 1, sizeof *r->trials))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "model-then-hw: out of memory");
    goto done;
  }
  memcpy(r->trials, r1->trials, (size_t)r1->count * sizeof *r->trials);
  memcpy(r->trials + r1->count, r2->trials, (size_t)r2->count * sizeof *r->trials);
  r->count = r1->count + r2->count;
  r->measured = r1->measured + r2->measured;
  r->seconds = r1->seconds + r2->seconds;
  for (int32_t i = r1->count; i < r->count; i++) {
    /* The point phase 2 measured (model side fixed), not the one its search held. */
    int32_t *q = malloc((size_t)D * sizeof *q);
    if (q && mth_map(&c, r->trials[i].point, q, NULL) == MI_OK) {
      memcpy(r->trials[i].point, q, (size_t)D * sizeof *q);
      r->trials[i].hash = mi_space_hash(t->space, q);
    }
    free(q);
  }
  for (int32_t i = 0; i < r1->count; i++)
    /* Phase 1 ran without the energy bound: what broke it counts as infeasible, as anywhere. */
    if (r->trials[i].status == MI_OK && t->energy_bound > 0 &&
        !(r->trials[i].objectives[MI_OBJ_ENERGY] <= t->energy_bound))
      r->trials[i].status = MI_ERR_INVALID_CONFIG;
  r1->count = r2->count = 0; /* the points moved to r */
done:
  mi_search_result_destroy(r1);
  mi_search_result_destroy(r2);
  if (rc != MI_OK) {
    mi_search_result_destroy(r);
    r = NULL;
  }
  *out = r;
  free(fz1);
  free(fz2);
  free(model);
  free(fix);
  return rc;
}

double bs_model_then_hw_oracle(bs_task_t *tasks, int32_t ntask, int32_t target) {
  mi_search_result_t *r = NULL;
  double best = INFINITY;
  /* Each phase enumerated: the budget only has to exceed the table. */
  if (run_model_then_hw(tasks, ntask, target, BS_EXHAUSTIVE, 1, 2 * tasks[target].n + 2, &r, NULL) != MI_OK) return NAN;
  for (int32_t i = 0; i < r->count; i++)
    if (r->trials[i].status == MI_OK && r->trials[i].objectives[MI_OBJ_LATENCY] < best)
      best = r->trials[i].objectives[MI_OBJ_LATENCY];
  mi_search_result_destroy(r);
  return best;
}

int32_t bs_run_method(bs_task_t *tasks, int32_t ntask, int32_t target, int method,
                      uint64_t seed, int32_t budget, mi_search_result_t **out,
                      mi_meta_report_t *rep, mi_error_t *err) {
  bs_task_t *t = &tasks[target];
  if (method == BS_AUTOTVM) return run_autotvm(t, seed, budget, out, err);
  if (method == BS_MTH_NSGA2) return run_model_then_hw(tasks, ntask, target, BS_NSGA2, seed, budget, out, err);
  if (method == BS_MTH_COLD) return run_model_then_hw(tasks, ntask, target, BS_OURS_COLD, seed, budget, out, err);
  return run_search(tasks, ntask, target, method, seed, budget, t->frozen, bs_evaluate, t, out, rep, err);
}
