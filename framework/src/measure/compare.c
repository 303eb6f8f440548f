/* compare.c - paired comparison of configurations: rounds in fresh workers, each running all of
 * them in turn, the ratio of each to the first with a bootstrap confidence interval
 * (docs/measurement.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of n values, sorting them in place. */
static double median_inplace(double *v, int32_t n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return mi_stats_quantile(v, n, 0.5);
}

MI_API int32_t mi_compare_ratio(const double *a, const double *b, int32_t n, double confidence,
                                int32_t resamples, uint64_t seed, mi_compare_ratio_t *out,
                                mi_error_t *err) {
  double *lr, *tmp, *boot;
  mi_rng_t rng;
  if (!out || !a || !b || n < 1 || !(confidence > 0 && confidence < 1) || resamples < 1)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "mi_compare_ratio: needs n >= 1 rounds, 0 < confidence < 1, resamples >= 1");
  memset(out, 0, sizeof *out);
  for (int32_t k = 0; k < n; k++)
    if (!(a[k] > 0) || !(b[k] > 0) || !isfinite(a[k]) || !isfinite(b[k]))
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "mi_compare_ratio: round %d has a latency that is not a positive number",
                       (int)k);
  lr = malloc((size_t)n * sizeof *lr);
  tmp = malloc((size_t)n * sizeof *tmp);
  boot = malloc((size_t)resamples * sizeof *boot);
  if (!lr || !tmp || !boot) {
    free(lr);
    free(tmp);
    free(boot);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_compare_ratio: out of memory");
  }
  mi_rng_seed(&rng, seed);
  /* Logs, so that a ratio and its inverse get mirror-image intervals. */
  for (int32_t k = 0; k < n; k++) lr[k] = log(b[k] / a[k]);
  memcpy(tmp, lr, (size_t)n * sizeof *tmp);
  out->ratio = exp(median_inplace(tmp, n));
  /* Whole rounds are resampled: the pairing is what cancels the machine's drift. The median,
   * not the mean: one round that met a burst of other work must not move the answer. */
  for (int32_t r = 0; r < resamples; r++) {
    for (int32_t k = 0; k < n; k++) tmp[k] = lr[mi_rng_below(&rng, (uint32_t)n)];
    boot[r] = median_inplace(tmp, n);
  }
  qsort(boot, (size_t)resamples, sizeof *boot, cmp_double);
  out->lo = exp(mi_stats_quantile(boot, resamples, (1 - confidence) / 2));
  out->hi = exp(mi_stats_quantile(boot, resamples, 1 - (1 - confidence) / 2));
  out->half_width = (out->hi - out->lo) / 2 / out->ratio;
  out->verdict = n < MI_COMPARE_VERDICT_ROUNDS ? MI_COMPARE_TIED
                 : out->hi < 1                 ? MI_COMPARE_FASTER
                 : out->lo > 1                 ? MI_COMPARE_SLOWER
                                               : MI_COMPARE_TIED;
  free(lr);
  free(tmp);
  free(boot);
  return MI_OK;
}

MI_API void mi_compare_options_default(mi_compare_options_t *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = (uint32_t)sizeof *o;
  o->target = 0.02;
  o->budget_s = 120;
  o->min_rounds = 5;
  o->max_rounds = 30;
  o->confidence = 0.95;
  o->resamples = 2000;
  o->seed = 1;
  o->load_limit = 1.0;
}

/* Summarises the complete rounds into out: medians and the ratios against config 0. */
static int32_t summarise(const mi_compare_options_t *o, mi_compare_result_t *out,
                         mi_error_t *err) {
  double a[MI_COMPARE_MAX_ROUNDS], b[MI_COMPARE_MAX_ROUNDS];
  int32_t n = out->rounds, rc;
  for (int32_t c = 0; c < out->count; c++) {
    for (int32_t k = 0; k < n; k++) a[k] = out->sample_s[k][c];
    out->median_s[c] = median_inplace(a, n);
  }
  for (int32_t c = 0; c < out->count; c++) {
    for (int32_t k = 0; k < n; k++) {
      a[k] = out->sample_s[k][0];
      b[k] = out->sample_s[k][c];
    }
    /* Every pair gets its own stream, so adding a configuration leaves the others' intervals. */
    if ((rc = mi_compare_ratio(a, b, n, o->confidence, o->resamples,
                               o->seed * 7919u + (uint64_t)c, &out->vs_first[c], err)))
      return rc;
  }
  return MI_OK;
}

void mi__compare_order(mi_rng_t *rng, int8_t *ord, int32_t count) {
  for (int32_t c = 0; c < count; c++) ord[c] = (int8_t)c;
  for (int32_t c = count - 1; c > 0; c--) {
    int32_t j = (int32_t)mi_rng_below(rng, (uint32_t)c + 1);
    int8_t t = ord[c];
    ord[c] = ord[j];
    ord[j] = t;
  }
}

/* One round: every configuration measured once, ord the order drawn for the round; med[c] the
 * median of config c and load[c] the 1-minute load when its measurement began. A failure sets
 * *failed to the configuration it was about, when it was about one. */
typedef int32_t (*round_fn)(void *user, const int8_t *ord, int32_t count, int32_t round,
                            double *med, double *load, int32_t *failed, mi_error_t *err);

static int32_t run_rounds(int32_t count, round_fn measure_round, void *user,
                          const mi_compare_options_t *opts, mi_compare_result_t *out,
                          mi_error_t *err) {
  mi_compare_options_t o;
  mi_rng_t rng;
  double t0 = mi__now_s(), round_s = 0;
  int32_t rc = MI_OK;
  memset(out, 0, sizeof *out);
  out->failed = -1;
  if (count < 2 || count > MI_COMPARE_MAX_CONFIGS)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "mi_compare_run: %d configurations; 2 to %d can be compared", (int)count,
                     MI_COMPARE_MAX_CONFIGS);
  if (opts) o = *opts;
  else
    mi_compare_options_default(&o);
  if (o.max_rounds < 1 || o.max_rounds > MI_COMPARE_MAX_ROUNDS) o.max_rounds = MI_COMPARE_MAX_ROUNDS;
  if (o.min_rounds < 2) o.min_rounds = 2;
  if (o.min_rounds > o.max_rounds) o.min_rounds = o.max_rounds;
  if (!(o.confidence > 0 && o.confidence < 1)) o.confidence = 0.95;
  if (o.resamples < 100) o.resamples = 100;
  out->count = count;
  mi__load1(&out->cpus);
  mi_rng_seed(&rng, o.seed);
  while (out->rounds < o.max_rounds) {
    int32_t k = out->rounds;
    int8_t *ord = out->order[k];
    double med[MI_COMPARE_MAX_CONFIGS], start = mi__now_s();
    /* The budget counts the round it would start: a round is not begun when one as long as the
     * longest since the first (which also checks outputs) would end past it. Each tune ends with
     * such a comparison, whose last round used to overrun a 60 s budget by 15-45 s on real
     * models (issue 21). Two rounds are the least that say anything, so they always run. */
    if (k >= 2 && o.budget_s > 0 && start - t0 + round_s > o.budget_s) break;
    /* A fresh order each round (Fisher-Yates), so no configuration always goes first or
     * always follows a particular one. */
    mi__compare_order(&rng, ord, count);
    for (int32_t c = 0; c < count; c++) med[c] = NAN;
    if ((rc = measure_round(user, ord, count, k, med, out->load[k], &out->failed, err)) != MI_OK)
      goto end;
    for (int32_t c = 0; c < count; c++) {
      if (out->load[k][c] > o.load_limit * out->cpus) out->loaded++;
      if (!(med[c] > 0) || !isfinite(med[c])) {
        out->failed = c;
        rc = mi_errorf(err, MI_ERR_INTERNAL, "compare: configuration %d measured %g s", (int)c,
                       med[c]);
        goto end;
      }
      out->sample_s[k][c] = med[c];
    }
    if (k >= 1) round_s = fmax(round_s, mi__now_s() - start);
    out->rounds++;
    if ((rc = summarise(&o, out, err)) != MI_OK) goto end;
    if (out->rounds >= o.min_rounds) {
      int met = 1;
      for (int32_t c = 1; c < count; c++) met &= out->vs_first[c].half_width <= o.target;
      if (met) {
        out->target_met = 1;
        break;
      }
    }
    /* Not before the two rounds that always run (a budget already spent would stop at one,
     * and one round says nothing: a tune at the end of its seconds deployed its default so). */
    if (out->rounds >= 2 && o.budget_s > 0 && mi__now_s() - t0 >= o.budget_s) break;
  }
end:
  out->seconds = mi__now_s() - t0;
  /* A failure keeps what the complete rounds said. */
  if (rc != MI_OK && out->rounds > 0) {
    mi_error_t e2;
    summarise(&o, out, &e2);
  }
  return rc;
}

/* mi_compare_run's rounds: the caller's measurer, one configuration at a time. */
typedef struct one_by_one {
  mi_compare_measure_fn measure;
  void *user;
} one_by_one_t;

static int32_t each_config(void *user, const int8_t *ord, int32_t count, int32_t round,
                           double *med, double *load, int32_t *failed, mi_error_t *err) {
  one_by_one_t *m = user;
  (void)round;
  for (int32_t i = 0; i < count; i++) {
    int32_t c = ord[i], rc;
    load[c] = mi__load1(NULL);
    if ((rc = m->measure(m->user, c, &med[c], err)) != MI_OK) {
      *failed = c;
      return rc;
    }
  }
  return MI_OK;
}

MI_API int32_t mi_compare_run(int32_t count, mi_compare_measure_fn measure, void *user,
                              const mi_compare_options_t *opts, mi_compare_result_t *out,
                              mi_error_t *err) {
  one_by_one_t m;
  if (!out || !measure)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_compare_run: out and measure are needed");
  m.measure = measure;
  m.user = user;
  return run_rounds(count, each_config, &m, opts, out, err);
}

/* mi_worker_compare's rounds: all configurations in one fresh worker, run in turn
 * (mi__worker_interleave), prepared in the round's order. */
typedef struct worker_measure {
  mi_worker_pool_t *pool;
  const char *spec;
  const mi_worker_config_t *configs;
  const mi_measure_options_t *mo;
  uint64_t seed;
  int check; /* the first round checks outputs */
} worker_measure_t;

/* The worker names a configuration of the job it failed on as "configuration N: why" (N its
 * place in the job, in the round's order): the comparison's own number for it, and the why. */
static void which_config(const int8_t *ord, int32_t count, int32_t *failed, mi_error_t *err) {
  int n = -1, at = 0;
  if (sscanf(err->message, "configuration %d: %n", &n, &at) == 1 && at > 0 && n >= 0 &&
      n < count) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message + at);
    memcpy(err->message, why, sizeof why);
    *failed = ord[n];
  }
}

/* The first round also checks each configuration's outputs against the reference (the worker
 * fails it with "wrong results: ..."), as the tuner checks every configuration it measures: a
 * configuration that computes something else has no speed worth comparing. Once is enough to
 * catch a wrong kernel, and costs one reference run per configuration, not one per round. The
 * worker checks every run's device time against its wall time in every round. */
static int32_t interleaved_round(void *user, const int8_t *ord, int32_t count, int32_t round,
                                 double *med, double *load, int32_t *failed, mi_error_t *err) {
  worker_measure_t *w = user;
  mi_worker_config_t in_order[MI_COMPARE_MAX_CONFIGS];
  mi__interleave_reply_t rep;
  double l = mi__load1(NULL);
  int32_t rc;
  for (int32_t i = 0; i < count; i++) {
    in_order[i] = w->configs[ord[i]];
    load[i] = l;
  }
  mi_worker_retire(w->pool, w->spec);
  rc = mi__worker_interleave(w->pool, w->spec, in_order, count, w->mo,
                             w->seed * 1000003u + (uint64_t)round, w->check && round == 0, &rep, err);
  if (rc != MI_OK) which_config(ord, count, failed, err);
  if (rc == MI_OK && (rep.count != count || rep.cycles < 1))
    rc = mi_errorf(err, MI_ERR_INTERNAL, "compare: the worker ran %d of %d configurations",
                   (int)rep.count, (int)count);
  for (int32_t i = 0; rc == MI_OK && i < count; i++) med[ord[i]] = rep.median_s[i];
  return rc;
}

MI_API int32_t mi_worker_compare(mi_worker_pool_t *p, const char *spec,
                                 const mi_worker_config_t *configs, int32_t count,
                                 const mi_measure_options_t *mo, const mi_compare_options_t *o,
                                 mi_compare_result_t *out, mi_error_t *err) {
  worker_measure_t w;
  if (!p || !spec || !configs || !out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_compare: pool, spec and configs are needed");
  w.pool = p;
  w.spec = spec;
  w.configs = configs;
  w.mo = mo;
  w.seed = o ? o->seed : 1;
  w.check = !(o && MI_HAS_FIELD(o, mi_compare_options_t, no_check) && o->no_check);
  return run_rounds(count, interleaved_round, &w, o, out, err);
}
