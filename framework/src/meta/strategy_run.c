/* strategy_run.c - mi_meta_search_run: the rounds of the surrogate-guided search and the
 * per-round report of prediction error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "meta/meta_internal.h"

/* The trust region follows TuRBO: two successes in a row double it, three failures halve
 * it, and a region smaller than one dimension restarts wide. */
static void adapt(mi__meta_t *st, int improved, int32_t *succ, int32_t *fail) {
  if (improved) {
    (*succ)++;
    *fail = 0;
  } else {
    (*fail)++;
    *succ = 0;
  }
  if (*succ >= 2) {
    st->radius = st->radius * 2 > 1 ? 1 : st->radius * 2;
    *succ = 0;
  }
  if (*fail >= 3) {
    st->radius /= 2;
    *fail = 0;
    if (st->radius * st->D < 1) st->radius = 1;
  }
}

static int32_t round_report(mi__meta_t *st, int32_t round, const int32_t *batch, int32_t n,
                            const int32_t *tidx, mi_error_t *err) {
  mi_meta_report_t *rep = st->mo.report;
  double *X = malloc((size_t)(n ? n : 1) * st->F * sizeof *X), *mu = malloc((size_t)(n ? n : 1) * st->m * sizeof *mu);
  double *sd = malloc((size_t)(n ? n : 1) * st->m * sizeof *sd), pred[64], truth[64], sw = 0;
  int32_t c = 0, rc = MI_OK;
  if (!X || !mu || !sd) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  for (int32_t i = 0; i < n && rc == MI_OK; i++) mi_meta_encode(st->s, batch + (size_t)i * st->D, X + (size_t)i * st->F);
  if (rc == MI_OK) rc = mi__meta_predict(st, X, batch, n, mu, sd, err);
  for (int32_t i = 0; i < n && rc == MI_OK && c < 64; i++) {
    double v = tidx[i] >= 0 ? mi__meta_logobj(st, &st->r->trials[tidx[i]], 0) : NAN;
    if (!isfinite(v)) continue;
    pred[c] = exp(st->ymu[0] + st->ysd[0] * mu[(size_t)i * st->m]);
    truth[c++] = exp(v);
  }
  if (rc == MI_OK && round < MI_META_MAX_ROUNDS) {
    for (int32_t k = 0; k < st->source_count; k++) sw += st->sources_off ? 0 : st->src[k].weight[0];
    rep->spearman[round] = mi_metric_spearman(pred, truth, c);
    rep->mape[round] = mi_metric_mape(pred, truth, c);
    rep->within10[round] = mi_metric_within(pred, truth, c, 0.1);
    rep->source_weight[round] = sw;
  }
  free(X);
  free(mu);
  free(sd);
  return rc;
}

/* Writes a random configuration not measured yet and not among batch[0..k-1] into batch[k]:
 * 1, or 0 when 64 draws found none (batch[k] is then left as it was). */
static int32_t random_untried(mi__meta_t *st, int32_t *batch, int32_t k, int32_t *pt) {
  for (int32_t tries = 0; tries < 64; tries++) {
    uint64_t h;
    int seen = 0;
    if (mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK || mi__meta_fix(st, pt) != MI_OK) continue;
    h = mi_space_hash(st->s, pt);
    for (int32_t i = 0; i < st->r->count && !seen; i++) seen = st->r->trials[i].hash == h;
    for (int32_t i = 0; i < k && !seen; i++) seen = mi_space_hash(st->s, batch + (size_t)i * st->D) == h;
    if (seen) continue;
    if (mi__meta_acc_screened(st, pt)) {
      /* Random per-layer precisions break the accuracy bound almost surely: explore the rest
       * of the point with the centre's model side instead, else the default's (every layer at
       * its default, which the predictor never screens). */
      for (int32_t d = 0; d < st->D; d++)
        if (mi_space_dim_kind(st->s, d) == MI_DIM_MODEL && mi_space_dim_node(st->s, d) >= 0)
          pt[d] = tries % 2 ? 0 : st->center[d];
      if (mi__meta_fix(st, pt) != MI_OK || mi__meta_acc_screened(st, pt)) continue;
      h = mi_space_hash(st->s, pt);
      for (int32_t i = 0; i < st->r->count && !seen; i++) seen = st->r->trials[i].hash == h;
      for (int32_t i = 0; i < k && !seen; i++) seen = mi_space_hash(st->s, batch + (size_t)i * st->D) == h;
      if (seen) continue;
    }
    memcpy(batch + (size_t)k * st->D, pt, (size_t)st->D * sizeof *pt);
    return 1;
  }
  return 0;
}

/* The unit of the ensemble's standardised predictions in log objective (first objective): each
 * member predicts in its own training data's units (a source's model in the spread of that
 * source's measurements, the target's in the spread of the target's), so the weighted mean of
 * their spreads. The target's own measurements cluster around what the search found good; its
 * spread alone made unexplored configurations look close to the best. */
static double ensemble_unit(const mi__meta_t *st) {
  double w = st->target_weight[0] + (st->lmodel && st->lcal ? st->lweight : 0), u = w * st->ysd[0];
  for (int32_t k = 0; k < st->source_count && !st->sources_off; k++)
    if (st->src[k].model[0] && st->src[k].weight[0] > 0) {
      w += st->src[k].weight[0];
      u += st->src[k].weight[0] * st->src[k].ysd[0];
    }
  return w > 0 ? u / w : st->ysd[0];
}

/* The warm start's saving, the two halves (mi_meta_report_t): where the run came within 5% of
 * its final best, and how many measurements a random cold search would need for that, from
 * the share of random configurations the final surrogate predicts to be that good: predicted
 * (mean) no further above its prediction for the best configuration than 5%, in the
 * ensemble's own unit (ensemble_unit). */
static int32_t saving_report(mi__meta_t *st, mi_error_t *err) {
  enum { SAMPLES = 4096 };
  mi_meta_report_t *rep = st->mo.report;
  int32_t b = mi__meta_best(st), rc = MI_OK, n = 0;
  double best, goal, p = 0, *X = NULL, *mu = NULL, *sd = NULL;
  int32_t *pt = NULL, *pts = NULL;
  rep->best_within5_at = 0;
  rep->cold_estimate = NAN;
  if (b < 0) return MI_OK;
  best = mi__meta_logobj(st, &st->r->trials[b], 0);
  goal = best + log(1.05);
  for (int32_t i = 0; i < st->r->count; i++) {
    double v = mi__meta_logobj(st, &st->r->trials[i], 0);
    if (isfinite(v) && v <= goal) {
      rep->best_within5_at = i + 1;
      break;
    }
  }
  if (!st->model[0]) return MI_OK;
  /* Row SAMPLES is the best configuration itself. */
  X = malloc((size_t)(SAMPLES + 1) * st->F * sizeof *X);
  mu = malloc((size_t)(SAMPLES + 1) * st->m * sizeof *mu);
  sd = malloc((size_t)(SAMPLES + 1) * st->m * sizeof *sd);
  pt = malloc((size_t)st->D * sizeof *pt + 1);
  pts = malloc((size_t)(SAMPLES + 1) * st->D * sizeof *pts + 1);
  if (!X || !mu || !sd || !pt || !pts) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta search: out of memory");
    goto done;
  }
  for (int32_t tries = 0; n < SAMPLES && tries < 4 * SAMPLES; tries++) {
    if (mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK || mi__meta_fix(st, pt) != MI_OK) continue;
    mi_meta_encode(st->s, pt, X + (size_t)n * st->F);
    memcpy(pts + (size_t)n * st->D, pt, (size_t)st->D * sizeof *pt);
    n++;
  }
  mi_meta_encode(st->s, st->r->trials[b].point, X + (size_t)n * st->F);
  memcpy(pts + (size_t)n * st->D, st->r->trials[b].point, (size_t)st->D * sizeof *pt);
  /* The model (refitted on every measurement, sources as the run last weighted them). */
  if (n > 0 && (rc = mi__meta_fit(st, MI_META_MAX_ROUNDS, err)) == MI_OK &&
      (rc = mi__meta_predict(st, X, pts, n + 1, mu, sd, err)) == MI_OK) {
    double at = mu[(size_t)n * st->m], margin = log(1.05) / ensemble_unit(st);
    for (int32_t i = 0; i < n; i++) p += mu[(size_t)i * st->m] <= at + margin;
    p /= n;
    rep->cold_estimate = p > 0 ? 1.0 / p : INFINITY; /* INFINITY: more than SAMPLES */
  }
done:
  free(X);
  free(mu);
  free(sd);
  free(pt);
  free(pts);
  return rc;
}

int32_t mi_meta_search_run(const mi_space_t *s, const mi_search_options_t *so,
                           const mi_meta_options_t *mo, mi_search_result_t **out,
                           mi_error_t *err) {
  mi__meta_t st;
  int32_t rc = MI_OK, *pt = NULL, *batch = NULL, tidx[64], round = 0, succ = 0, fail = 0, low = 0;
  double fit_s = 0, fit_t0 = 0;
  int32_t stale = 0, init;
  int fresh;
  if (out) *out = NULL;
  if (!s || !so || !out || !so->evaluate || so->objective_count <= 0 || so->objective_count > MI_OBJ_COUNT)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "meta search: a space, an evaluator and 1..%d objectives are required", MI_OBJ_COUNT);
  memset(&st, 0, sizeof st);
  if (mo) st.mo = *mo;
  else
    mi_meta_options_default(&st.mo);
  if (!st.mo.frozen) st.mo.frozen = so->frozen;
  if (st.mo.batch < 1) st.mo.batch = 8;
  if (st.mo.batch > 64) st.mo.batch = 64;
  if (st.mo.report) {
    memset(st.mo.report, 0, sizeof *st.mo.report);
    st.mo.report->greedy_best = -1;
  }
  init = st.mo.init_points > 0 ? st.mo.init_points : 10;
  st.s = s;
  st.so = so;
  st.D = mi_space_dim_count(s);
  st.F = mi_meta_feature_count(s);
  st.m = so->objective_count;
  st.budget = so->max_measurements > 0 ? so->max_measurements : 40;
  st.t0 = mi__now_s();
  mi_rng_seed(&st.rng, so->seed);
  st.r = calloc(1, sizeof *st.r);
  pt = malloc((size_t)st.D * sizeof *pt + 1);
  batch = malloc((size_t)st.mo.batch * st.D * sizeof *batch + 1);
  st.center = malloc((size_t)st.D * sizeof *st.center + 1);
  if (!st.r || !pt || !batch || !st.center) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta search: out of memory");
    goto done;
  }
  /* The trust region's centre moves to the best trial once there is one; until then (every
   * measurement so far failed) it is the default point, never uninitialised memory. */
  mi_space_default(s, st.center);
  if ((rc = mi__meta_sources(&st, err)) != MI_OK) goto done;
  {
    int trusted = 0;
    if ((rc = mi__meta_warm_design(&st, init, pt, &trusted, err)) != MI_OK) goto done;
    /* Priors that passed the check start the trust region narrower; priors caught
     * misleading, new hardware or no priors start wide. */
    st.radius = trusted ? 0.5 : 1.0;
  }
  while (mi__meta_has_budget(&st)) {
    int32_t want = st.mo.batch, got, b0 = mi__meta_best(&st), b1;
    double before = b0 >= 0 ? mi__meta_logobj(&st, &st.r->trials[b0], 0) : INFINITY;
    /* Split moves first (strategy_acc.c): blocks of layers at a lossy precision that was
     * faster model-wide, until the blocks that carry the loss are known. */
    while (mi__meta_has_budget(&st) && mi__meta_split_move(&st, pt))
      if (mi__meta_eval(&st, pt, &fresh) < 0) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta search: out of memory");
        goto done;
      }
    if (!mi__meta_has_budget(&st)) break;
    if (st.r->count > 0) {
      mi__meta_acc_fit(&st);
      /* The per-layer precision greedy: each step measured, the predictor refitted on it. */
      while (mi__meta_has_budget(&st) && mi__meta_greedy_move(&st, pt)) {
        int32_t gi = mi__meta_eval(&st, pt, &fresh);
        if (gi < 0) {
          rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta search: out of memory");
          goto done;
        }
        mi__meta_greedy_measured(&st, gi);
        mi__meta_acc_fit(&st);
      }
      /* Then the best point's device-level knobs, one at a time (strategy_design.c). */
      while (mi__meta_has_budget(&st) && mi__meta_polish_move(&st, pt))
        if (mi__meta_eval(&st, pt, &fresh) < 0) {
          rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta search: out of memory");
          goto done;
        }
      if (!mi__meta_has_budget(&st)) break;
    }
    if (want > st.budget - st.r->measured) want = (int32_t)(st.budget - st.r->measured);
    /* The fit and the screen take seconds on a real model's space (8 s at load 20 on a 10^26
     * model side): no round is begun when the last one's would leave no time to measure what it
     * proposes, so a time budget is not spent on proposals nobody measures. */
    if (st.so->max_seconds > 0 && mi__now_s() - st.t0 + fit_s >= st.so->max_seconds) {
      if (st.mo.report) st.mo.report->stopped_on_time = 1;
      break;
    }
    fit_t0 = mi__now_s();
    if ((rc = mi__meta_fit(&st, round, err)) != MI_OK) break;
    mi__meta_acc_fit(&st);
    /* The weight the fit gave the per-layer model (0 once the history is dropped). */
    if (st.mo.report && round < MI_META_MAX_ROUNDS) st.mo.report->layer_weight[round] = st.lmodel ? st.lweight : NAN;
    if (st.source_count > 0 && !st.sources_off) {
      /* Cold-start fallback: sources that keep losing the ranking contest are dropped. */
      double sw = 0;
      for (int32_t k = 0; k < st.source_count; k++) sw += st.src[k].weight[0];
      /* The per-layer base model is history too: its weight counts with the sources'. */
      sw += st.lweight;
      low = sw < 0.05 ? low + 1 : 0;
      /* Sources that get no weight in the first round after the design were already caught by
       * the rank check (mi__meta_fit): fall back at once; later, after two rounds. */
      if (low >= 2 || (low >= 1 && round == 0)) {
        st.sources_off = 1;
        st.radius = 1;
        if (st.mo.report) st.mo.report->cold_fallback = 1;
        /* Priors that had passed the check shortened the cold design; without them the
         * search needs the full design (the short one left after such a drop cost a
         * benchmark seed dearly: the figures are in docs/meta.md, step 6). Then refit. */
        int32_t before_n = st.r->measured;
        if ((rc = mi__meta_design_complete(&st, init, pt, err)) != MI_OK) break;
        if (st.r->measured > before_n) continue;
      }
    }
    if (b0 >= 0) memcpy(st.center, st.r->trials[b0].point, (size_t)st.D * sizeof *st.center);
    got = mi__meta_screen(&st, want, batch, err);
    fit_s = mi__now_s() - fit_t0;
    if (got < 0) {
      rc = err ? err->code : MI_ERR_INTERNAL;
      break;
    }
    if (st.mo.report && round < MI_META_MAX_ROUNDS) {
      st.mo.report->measured[round] = st.r->measured;
      st.mo.report->trust_radius[round] = st.radius;
    }
    if (got == 0) {
      /* The screen found nothing new: fall back to a random point not tried yet, so the
       * budget is used. */
      got = random_untried(&st, batch, 0, pt);
    } else if (got == want) {
      /* Exploration (explore_share of the batch, rounded down): the last members are random
       * untried points of the whole space, so a round whose model sees one good region still
       * looks elsewhere (AutoTVM's epsilon-greedy; docs/meta.md, "Exploration in the batch"). */
      int32_t nr = (int32_t)floor(want * st.mo.explore_share + 1e-9);
      for (int32_t q = 0; q < nr && q < got - 1; q++) random_untried(&st, batch, got - 1 - q, pt);
    }
    {
      int32_t nfresh = 0;
      /* A member left unmeasured when the budget ends mid-batch has no trial: round_report
       * reads every member's index (an unset one crashed a budget-4 tune now and then). */
      for (int32_t i = 0; i < got; i++) tidx[i] = -1;
      for (int32_t i = 0; i < got && mi__meta_has_budget(&st); i++) {
        tidx[i] = mi__meta_eval(&st, batch + (size_t)i * st.D, &fresh);
        if (tidx[i] < 0) {
          rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta search: out of memory");
          goto done;
        }
        nfresh += fresh;
      }
      /* A space smaller than the budget (or one the screen cannot leave) runs out of new
       * points: three rounds without one end the search instead of looping forever. */
      stale = nfresh ? 0 : stale + 1;
      if (stale >= 3) break;
    }
    if (st.mo.report && round < MI_META_MAX_ROUNDS) {
      st.mo.report->learner[round] = mi_surrogate_kind_used(st.model[0]);
      if ((rc = round_report(&st, round, batch, got, tidx, err)) != MI_OK) break;
      st.mo.report->rounds = round + 1;
    }
    b1 = mi__meta_best(&st);
    adapt(&st, b1 >= 0 && mi__meta_logobj(&st, &st.r->trials[b1], 0) < before - 1e-3, &succ, &fail);
    round++;
  }
  if (st.mo.report) {
    st.mo.report->design_points = st.design_count;
    st.mo.report->acc_screened = st.acc_screened;
    st.mo.report->split_moves = mi__meta_split_count(&st);
    st.mo.report->greedy_moves = mi__meta_greedy_count(&st);
    st.mo.report->greedy_best = mi__meta_greedy_best(&st);
    st.mo.report->device_moves = st.polish_count;
  }
  if (rc == MI_OK && st.mo.report) rc = saving_report(&st, err);
done:
  for (int32_t j = 0; j < MI_OBJ_COUNT; j++) mi_surrogate_destroy(st.model[j]);
  mi__meta_sources_free(&st);
  mi__meta_acc_free(st.acc);
  mi__meta_greedy_free(st.greedy);
  free(pt);
  free(batch);
  free(st.center);
  if (st.r) st.r->seconds = mi__now_s() - st.t0;
  if (st.mo.report && so->max_seconds > 0 && mi__now_s() - st.t0 >= so->max_seconds) st.mo.report->stopped_on_time = 1;
  if (rc != MI_OK) {
    mi_search_result_destroy(st.r);
    return rc;
  }
  *out = st.r;
  return MI_OK;
}
