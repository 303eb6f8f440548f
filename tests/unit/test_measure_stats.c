/* test_measure_stats.c - robust statistics on known samples, and the protocol with synthetic
 * sample sources: re-measure on a wide spread, more repeats, discarded samples, failures. */
#include <math.h>
#include <time.h>

#include "measure/measure_internal.h"
#include "test_measure_util.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (1 + fabs(b)); }

static void test_stats(void) {
  const double s[10] = {5, 1, 4, 2, 3, 10, 6, 8, 7, 9};
  const double one = 3.5;
  mi_stats_t st;
  mi_error_t err;
  CHECK(mi_stats_compute(s, 10, 0.1, &st, &err) == MI_OK, "%s", err.message);
  CHECK(st.n == 10 && near(st.min, 1) && near(st.max, 10), "n/min/max");
  CHECK(near(st.mean, 5.5), "mean %g", st.mean);
  CHECK(near(st.median, 5.5), "median %g", st.median);
  /* 10% of 10 = 1 cut per end: mean of 2..9 */
  CHECK(near(st.trimmed_mean, 5.5), "trimmed %g", st.trimmed_mean);
  CHECK(near(st.p10, 1.9) && near(st.p90, 9.1), "p10 %g p90 %g", st.p10, st.p90);
  CHECK(near(st.stddev, sqrt(82.5 / 9)), "stddev %g", st.stddev);
  CHECK(near(st.cv, sqrt(82.5 / 9) / 5.5), "cv %g", st.cv);
  {
    const double skew[5] = {1, 1, 1, 1, 100};
    CHECK(mi_stats_compute(skew, 5, 0.2, &st, NULL) == MI_OK, "skew");
    CHECK(near(st.median, 1) && near(st.trimmed_mean, 1) && st.mean > 20, "robust %g %g",
          st.median, st.trimmed_mean);
  }
  CHECK(mi_stats_compute(&one, 1, 0, &st, NULL) == MI_OK && st.cv == 0 && st.median == 3.5,
        "single sample");
  CHECK(mi_stats_compute(s, 0, 0, &st, &err) == MI_ERR_INVALID_ARGUMENT, "no samples");
  CHECK(mi_stats_compute(s, 3, 0.5, &st, &err) == MI_ERR_INVALID_ARGUMENT, "bad trim");
}

/* A source whose first `noisy` samples alternate 1 and 3, then 2 +- a tiny jitter. */
typedef struct synth {
  int calls, noisy, rounds, betweens, change_every;
} synth_t;

static int32_t synth_run(void *u, double *sec, int *changed, mi_error_t *err) {
  synth_t *s = u;
  (void)err;
  s->calls++;
  *changed = s->change_every && s->calls % s->change_every == 0;
  if (s->calls <= s->noisy) *sec = s->calls % 2 ? 1.0 : 3.0;
  else
    *sec = 2.0 + 1e-4 * (s->calls % 3);
  return MI_OK;
}
static void synth_round(void *u) { ((synth_t *)u)->rounds++; }
static void synth_between(void *u) { ((synth_t *)u)->betweens++; }

static int32_t fail_run(void *u, double *sec, int *changed, mi_error_t *err) {
  (void)u;
  (void)sec;
  (void)changed;
  return mi_errorf(err, MI_ERR_DEVICE, "synthetic failure");
}

static void test_protocol(void) {
  mi_measure_options_t o;
  mi_measure_result_t r;
  mi_sample_source_t src = {0};
  synth_t s = {0};
  mi_error_t err;
  mi_measure_options_default(&o);
  o.warmup = 2;
  o.max_repeats = 8;
  src.user = &s;
  src.run = synth_run;
  src.begin_round = synth_round;
  src.between = synth_between;
  /* Steady source: one round of exactly min_repeats after the warm-up. */
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK, "%s", err.message);
  CHECK(r.rounds == 1 && r.stats.n == 5 && r.runs == 7 && r.settled, "steady: rounds %d n %d",
        r.rounds, r.stats.n);
  CHECK(fabs(r.stats.median - 2.0) < 1e-3, "median %g", r.stats.median);
  CHECK(s.betweens == 5, "between called per repeat: %d", s.betweens);
  /* Noisy first 12 calls (2 warm-up + 8 repeats + 2): the first round ends unsettled at
   * max_repeats and the protocol re-measures; the second round settles. */
  memset(&s, 0, sizeof s);
  s.noisy = 12;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK, "%s", err.message);
  CHECK(r.rounds >= 2 && s.rounds == r.rounds, "re-measured: rounds %d", r.rounds);
  CHECK(r.settled && r.stats.cv <= o.cv_threshold, "settled cv %g", r.stats.cv);
  CHECK(fabs(r.stats.median - 2.0) < 1e-3, "median after re-measure %g", r.stats.median);
  /* Always noisy: ends unsettled, within the caps. */
  memset(&s, 0, sizeof s);
  s.noisy = 1000;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK, "%s", err.message);
  CHECK(!r.settled && r.rounds == 1 + o.max_remeasure && r.stats.n == o.max_repeats,
        "unsettled: rounds %d n %d", r.rounds, r.stats.n);
  /* Every third sample taken while the device state moved: dropped, not used. */
  memset(&s, 0, sizeof s);
  s.change_every = 3;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK, "%s", err.message);
  CHECK(r.discarded > 0 && r.stats.n == 5 && r.runs == 2 + 5 + r.discarded,
        "discarded %d n %d runs %d", r.discarded, r.stats.n, r.runs);
  /* Every sample changed: a failure that says why. */
  memset(&s, 0, sizeof s);
  s.change_every = 1;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_ERR_DEVICE && strstr(err.message, "state"),
        "all discarded: %s", err.message);
  /* min_repeats below five is raised to five. */
  memset(&s, 0, sizeof s);
  o.min_repeats = 2;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && r.stats.n == 5, "floor of five %d",
        r.stats.n);
  src.run = fail_run;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_ERR_DEVICE && strstr(err.message, "synthetic"),
        "failure passes through: %s", err.message);
}

static void stop_slow(void) {
  /* stop_above_s: two samples both over it end the timing (stopped_slow, two samples, no
   * re-measure); one under it, or none given, keeps the full protocol. The synthetic source's
   * steady samples are 2.0 s, no clock involved. */
  mi_measure_options_t o;
  mi_measure_result_t r;
  mi_sample_source_t src = {0};
  synth_t s = {0};
  mi_error_t err;
  mi_measure_options_default(&o);
  o.warmup = 2;
  o.max_repeats = 8;
  src.user = &s;
  src.run = synth_run;
  o.stop_above_s = 1.5;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK, "%s", err.message);
  CHECK(r.stopped_slow && r.stats.n == 2 && r.rounds == 1 && r.runs == 4 &&
            fabs(r.stats.median - 2.0) < 1e-3,
        "stopped: slow %d n %d rounds %d runs %d", r.stopped_slow, r.stats.n, r.rounds, r.runs);
  /* Noisy (1 s, 3 s...): the first two timed samples are 1 and 3, the faster under 1.5 s, so
   * the round goes on (unsettled, to max_repeats; no re-measure round here). */
  memset(&s, 0, sizeof s);
  s.noisy = 4;
  o.max_remeasure = 0;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && !r.stopped_slow && r.stats.n == 8,
        "one fast sample: slow %d n %d", r.stopped_slow, r.stats.n);
  memset(&s, 0, sizeof s);
  o.stop_above_s = 2.5;
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && !r.stopped_slow && r.stats.n == 5,
        "under the bound: slow %d n %d", r.stopped_slow, r.stats.n);
}

/* A source that takes real time: each run sleeps about 1 ms; its samples cycle through one low,
 * six middle and one high value (CV 2.5%; the two warm-up runs are middle ones, the first five
 * samples hold the low and the high), and it counts the batch it is given. */
typedef struct slow {
  int calls, batch;
} slow_t;

static int32_t slow_run(void *u, double *sec, int *changed, mi_error_t *err) {
  static const double cycle[8] = {2, 2, 1.9, 2, 2, 2, 2.1, 2};
  slow_t *s = u;
  struct timespec ts = {0, 1000000};
  (void)err;
  nanosleep(&ts, NULL);
  *changed = 0;
  *sec = cycle[s->calls++ % 8] * 1e-4;
  return MI_OK;
}
static void slow_batch(void *u, int32_t runs) { ((slow_t *)u)->batch = runs; }

static void test_short_runs(void) {
  mi_measure_options_t o;
  mi_measure_result_t r;
  mi_sample_source_t src = {0};
  slow_t s = {0};
  mi_error_t err;
  double t0;
  src.user = &s;
  src.run = slow_run;
  mi_measure_options_default(&o);
  CHECK(o.min_warmup_s == 0 && o.median_ci == 0 && o.min_sample_s == 0, "defaults: off");
  o.warmup = 2;
  o.min_warmup_s = 0.03;
  o.median_ci = 0;
  /* Warm-up lasts min_warmup_s, not only two runs. */
  t0 = mi__now_s();
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK, "%s", err.message);
  /* Ignoring the time rule, 2 warm-up and 5 timed runs of ~1 ms end well before 30 ms; the run
   * count alone is not asserted (on a loaded machine two 1 ms sleeps can take 30 ms). */
  CHECK(r.runs - r.stats.n >= 2 && mi__now_s() - t0 >= 0.03, "time-based warm-up: %d runs",
        (int)(r.runs - r.stats.n));
  /* ... but never more than half the budget. */
  memset(&s, 0, sizeof s);
  o.min_warmup_s = 10;
  o.budget_s = 0.04;
  t0 = mi__now_s();
  /* uncapped, the warm-up alone would take 10 s; 5 leaves room for a descheduled process */
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && mi__now_s() - t0 < 5, "warm-up capped");
  /* Without the confidence-interval rule a CV of 2.5% stops at five repeats; with it, repeats go
   * on until the median is known to +-1%, here well before max_repeats. */
  o.min_warmup_s = 0;
  o.budget_s = 20;
  o.max_repeats = 60;
  memset(&s, 0, sizeof s);
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && r.stats.n == 5 && r.settled,
        "no CI rule: n %d", r.stats.n);
  CHECK(r.median_ci > 0.01, "five samples leave the median to +-%g", r.median_ci);
  o.median_ci = 0.01;
  memset(&s, 0, sizeof s);
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && r.stats.n > 5 && r.stats.n < 60 &&
            r.median_ci <= 0.01 && fabs(r.stats.median - 2e-4) < 1e-12,
        "CI rule: n %d ci %g", r.stats.n, r.median_ci);
  /* Batching: never for a source that cannot; 2e-4 s runs under a 1.9 ms floor: 10 per sample. */
  o.min_sample_s = 0.0019;
  memset(&s, 0, sizeof s);
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && r.batch == 1 && s.batch == 0,
        "no set_batch: batch %d", r.batch);
  src.set_batch = slow_batch;
  memset(&s, 0, sizeof s);
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && r.batch == 10 && s.batch == 10 &&
            r.runs == 2 + 10 * r.stats.n,
        "batch %d (source %d), runs %d of n %d", r.batch, s.batch, r.runs, r.stats.n);
  o.min_sample_s = 1e-5; /* runs longer than the floor stay single */
  memset(&s, 0, sizeof s);
  CHECK(mi_measure_run(&src, &o, &r, &err) == MI_OK && r.batch == 1 && s.batch == 0,
        "long runs: batch %d", r.batch);
}

static void test_hash_and_config(void) {
  char a[17], b[17], *c1, *c2;
  mi_knob_value_t dk[2] = {{"threads", 2, 0}, {"dvfs_level", 3, 0}};
  mi_knob_value_t nk[1] = {{"tile", 8, 0}};
  mi_node_choice_t ch[2] = {{"zeta", "conv.direct", 1, nk}, {"alpha", NULL, 0, NULL}};
  mi_node_choice_t ch2[2] = {{"alpha", NULL, 0, NULL}, {"zeta", "conv.direct", 1, nk}};
  mi_knob_value_t dk2[2] = {{"dvfs_level", 3, 0}, {"threads", 2, 0}};
  mi_session_options_t o = {sizeof o, 2, dk, 2, ch, 0, 0, 0, NULL, 0, 0},
                       o2 = {sizeof o2, 2, dk2, 2, ch2, 0, 0, 0, NULL, 0, 0};
  mi_hash64_hex(mi_hash64("abc", 3, MI_HASH64_SEED), a);
  mi_hash64_hex(mi_hash64("abd", 3, MI_HASH64_SEED), b);
  CHECK(strlen(a) == 16 && strcmp(a, b) != 0, "hash %s %s", a, b);
  c1 = mi_config_canonical(&o);
  c2 = mi_config_canonical(&o2);
  CHECK(c1 && c2 && strcmp(c1, c2) == 0, "order-independent: %s vs %s", c1, c2);
  CHECK(c1 && strcmp(c1, "device{dvfs_level=3,threads=2};alpha:default{};zeta:conv.direct{tile=8}") == 0,
        "canonical %s", c1);
  free(c1);
  free(c2);
  c1 = mi_config_canonical(NULL);
  CHECK(c1 && strcmp(c1, "default") == 0, "default %s", c1);
  free(c1);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(stop_slow),
    TU_CASE(test_stats),
    TU_CASE(test_protocol),
    TU_CASE(test_short_runs),
    TU_CASE(test_hash_and_config),
};

TU_MAIN(NULL, NULL)
