/* protocol.c - the measurement protocol: warm-up, timed repeats until the spread settles,
 * re-measure rounds, samples dropped while the device state moved, short runs batched. */
#include <math.h>
#include <string.h>

#include "measure/measure_internal.h"

MI_API void mi_measure_options_default(mi_measure_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = (uint32_t)sizeof *o;
  o->warmup = 2;
  o->min_repeats = 5;
  o->max_repeats = 30;
  o->cv_threshold = 0.05;
  o->max_remeasure = 2;
  o->budget_s = 20;
  o->trim = 0.1;
  o->temp_tolerance_c = 2.0;
  o->flush_cache = 0;
  /* Off by default: callers that measure many configurations (the tuner, the runtime's
   * re-adaptation on a live device) choose what the extra time buys them; mi-host profile
   * turns the first two on. */
  o->min_warmup_s = 0;
  o->median_ci = 0;
  o->min_sample_s = 0;
}

/* Most runs one batched sample takes: a 2 ms floor over a 1 us run, no more. */
#define MAX_BATCH 2000

/* Enough to stop a round: the CV is under its threshold and the median is known closely. */
static int settled_enough(const mi_measure_result_t *r, const mi_measure_options_t *o) {
  if (r->stats.cv > o->cv_threshold) return 0;
  return o->median_ci <= 0 || mi__median_ci(r->samples, r->sample_count) <= o->median_ci;
}

/* One round: fresh samples until min_repeats are kept and the CV settles, or a cap is hit. */
static int32_t round_run(const mi_sample_source_t *src, const mi_measure_options_t *o,
                         double deadline, mi_measure_result_t *r, mi_error_t *err) {
  int32_t rc, attempts = 0;
  /* Discarded samples count against a cap too, so a device that never settles ends. */
  int32_t max_attempts = 2 * o->max_repeats + 10;
  r->sample_count = 0;
  if (src->begin_round) src->begin_round(src->user);
  for (;;) {
    double t = 0;
    int changed = 0;
    if (r->sample_count >= o->min_repeats) {
      if ((rc = mi_stats_compute(r->samples, r->sample_count, o->trim, &r->stats, err)))
        return rc;
      if (settled_enough(r, o) || r->sample_count >= o->max_repeats || mi__now_s() > deadline)
        return MI_OK;
    } else if (attempts > 0 && mi__now_s() > deadline && r->sample_count > 0) {
      /* Out of time before the minimum: report what was kept, it stays unsettled. */
      return mi_stats_compute(r->samples, r->sample_count, o->trim, &r->stats, err);
    }
    if (attempts++ >= max_attempts) break;
    if (src->between) src->between(src->user);
    if ((rc = src->run(src->user, &t, &changed, err))) return rc;
    r->runs += r->batch > 0 ? r->batch : 1;
    if (changed) {
      r->discarded++;
      continue;
    }
    if (r->sample_count < MI_MEASURE_MAX_SAMPLES) r->samples[r->sample_count++] = t;
    /* Two samples, both far slower than the caller can use: enough to say so (the minimum of
     * two, so one hiccup does not end it). */
    if (o->stop_above_s > 0 && r->sample_count == 2 &&
        fmin(r->samples[0], r->samples[1]) > o->stop_above_s) {
      r->stopped_slow = 1;
      return mi_stats_compute(r->samples, r->sample_count, o->trim, &r->stats, err);
    }
  }
  if (r->sample_count == 0)
    return mi_errorf(err, MI_ERR_DEVICE,
                     "measure: every one of %d samples was taken while the device state changed",
                     (int)r->discarded);
  return mi_stats_compute(r->samples, r->sample_count, o->trim, &r->stats, err);
}

MI_API int32_t mi_measure_run(const mi_sample_source_t *src, const mi_measure_options_t *opts,
                              mi_measure_result_t *out, mi_error_t *err) {
  mi_measure_options_t o;
  double deadline, fastest = 0;
  int32_t rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_measure_run: out is NULL");
  memset(out, 0, sizeof *out);
  if (!src || !src->run)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_measure_run: no sample source");
  mi_measure_options_default(&o);
  if (opts) memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  /* The protocol's floor: never fewer than five timed repeats. */
  if (o.min_repeats < 5) o.min_repeats = 5;
  if (o.min_repeats > MI_MEASURE_MAX_SAMPLES) o.min_repeats = MI_MEASURE_MAX_SAMPLES;
  if (o.max_repeats < o.min_repeats) o.max_repeats = o.min_repeats;
  if (o.max_repeats > MI_MEASURE_MAX_SAMPLES) o.max_repeats = MI_MEASURE_MAX_SAMPLES;
  if (o.max_remeasure < 0) o.max_remeasure = 0;
  deadline = mi__now_s() + (o.budget_s > 0 ? o.budget_s : 1e9);
  out->batch = 1;
  {
    /* At least `warmup` runs and min_warmup_s seconds: two runs of a 10 us model warm nothing. */
    double until = mi__now_s() + o.min_warmup_s, cap = deadline - 0.5 * (deadline - mi__now_s());
    if (until > cap) until = cap;
    for (int32_t i = 0; i < o.warmup || (o.warmup > 0 && mi__now_s() < until); i++) {
      double t;
      int changed;
      if ((rc = src->run(src->user, &t, &changed, err))) return rc;
      out->runs++;
      if (i == 0 || t < fastest) fastest = t;
    }
  }
  /* A run much shorter than the scheduler's and the clock's granularity is mostly their noise:
   * such runs are timed in batches, judged by the fastest warm-up run (a cold first run must
   * not shrink the batch). */
  if (src->set_batch && o.warmup > 0 && o.min_sample_s > 0 && fastest > 0 &&
      fastest < o.min_sample_s) {
    double k = ceil(o.min_sample_s / fastest);
    out->batch = k > MAX_BATCH ? MAX_BATCH : (int32_t)k;
    src->set_batch(src->user, out->batch);
  }
  for (;;) {
    out->rounds++;
    if ((rc = round_run(src, &o, deadline, out, err))) return rc;
    out->settled = out->stats.cv <= o.cv_threshold;
    if (out->settled || out->stopped_slow || out->rounds > o.max_remeasure ||
        mi__now_s() > deadline)
      break;
  }
  out->median_ci = mi__median_ci(out->samples, out->sample_count);
  return MI_OK;
}
