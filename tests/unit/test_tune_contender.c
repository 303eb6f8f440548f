/* test_tune_contender.c - when the search chose the default itself (its single median was the
 * lowest, which on a loaded machine can be the load rather than the configuration), the end of
 * the tune pits the fastest other successful trial within the bounds against it in paired
 * rounds; mi_tune_contender picks that trial: not the default, not a failure, not one over a
 * bound, not one without a latency. mi_tune_other_device adds the fastest such trial on device-level
 * settings the check does not have yet. */
#include <math.h>
#include <string.h>

#include "metainfer/mi_tuner.h"
#include "tune/tune_internal.h"

#include "test_util.h"

static mi_trial_t trial(uint64_t hash, int32_t status, double latency, double drop) {
  mi_trial_t t;
  memset(&t, 0, sizeof t);
  t.hash = hash;
  t.status = status;
  for (int i = 0; i < MI_OBJ_COUNT; i++) t.objectives[i] = NAN;
  t.objectives[MI_OBJ_LATENCY] = latency;
  t.objectives[MI_OBJ_ACCURACY] = drop;
  return t;
}

static void picks_fastest_feasible_other(void) {
  mi_bound_t b = {MI_OBJ_ACCURACY, 0.01};
  mi_trial_t t[7];
  mi_search_result_t r;
  t[0] = trial(11, MI_OK, 0.261, 0);                 /* the default, lowest median */
  t[1] = trial(12, MI_OK, 0.435, 0);                 /* held point, measured under load */
  t[2] = trial(13, MI_OK, 0.359, 0.005);             /* the contender */
  t[3] = trial(14, MI_OK, 0.300, 0.05);              /* over the accuracy bound */
  t[4] = trial(15, MI_ERR_INVALID_CONFIG, 0.100, 0); /* failed */
  t[5] = trial(16, MI_OK, NAN, 0);                   /* no latency */
  t[6] = trial(11, MI_OK, 0.250, 0);                 /* the default again (replayed) */
  memset(&r, 0, sizeof r);
  r.trials = t;
  r.count = 7;
  CHECK(mi_tune_contender(&r, 11, &b, 1) == 2, "contender %d, want 2", (int)mi_tune_contender(&r, 11, &b, 1));
  /* without the bound the faster trial over it competes */
  CHECK(mi_tune_contender(&r, 11, NULL, 0) == 3, "unbounded contender %d, want 3",
        (int)mi_tune_contender(&r, 11, NULL, 0));
  /* only the default and failures: none */
  r.count = 1;
  CHECK(mi_tune_contender(&r, 11, &b, 1) == -1, "contender of the default alone");
  CHECK(mi_tune_contender(NULL, 11, &b, 1) == -1, "contender of no result");
}

static void next_fastest_for_the_paired_check(void) {
  /* The paired check also takes the next fastest feasible trials: fastest first, one per
   * configuration (a replayed point counts once, at its fastest), never the default, the choice
   * or the runner-up (skip), a failure or one over a bound. */
  mi_bound_t b = {MI_OBJ_ACCURACY, 0.01};
  mi_trial_t t[9];
  mi_search_result_t r;
  uint64_t skip[2] = {20, 21};
  int32_t out[3] = {-1, -1, -1}, n;
  t[0] = trial(11, MI_OK, 0.300, 0);                 /* the default */
  t[1] = trial(20, MI_OK, 0.200, 0);                 /* the choice (skipped) */
  t[2] = trial(21, MI_OK, 0.210, 0);                 /* the runner-up (skipped) */
  t[3] = trial(30, MI_OK, 0.260, 0);                 /* third */
  t[4] = trial(31, MI_OK, 0.240, 0.002);             /* second */
  t[5] = trial(32, MI_OK, 0.150, 0.5);               /* over the bound */
  t[6] = trial(33, MI_ERR_INVALID_CONFIG, 0.100, 0); /* failed */
  t[7] = trial(30, MI_OK, 0.230, 0);                 /* 30 again, faster: now first */
  t[8] = trial(34, MI_OK, 0.290, 0);                 /* fourth: past the cap */
  memset(&r, 0, sizeof r);
  r.trials = t;
  r.count = 9;
  n = mi_tune_contenders(&r, 11, &b, 1, skip, 2, out, 3);
  CHECK(n == 3 && out[0] == 7 && out[1] == 4 && out[2] == 8, "got %d: %d %d %d, want 3: 7 4 8",
        (int)n, (int)out[0], (int)out[1], (int)out[2]);
  n = mi_tune_contenders(&r, 11, &b, 1, skip, 2, out, 1);
  CHECK(n == 1 && out[0] == 7, "cap 1: %d, %d", (int)n, (int)out[0]);
}

/* What displaces the default: significantly faster, its whole interval at least
 * MI__TUNE_MIN_GAIN faster; a significant 1.6% (blazeface_front's check, then 1.9% slower a
 * minute later) does not, nor 3.8% whose interval reaches 1.4% (blazeface_back's, then 8%
 * slower). */
static void gain_must_pay(void) {
  mi_compare_ratio_t v;
  memset(&v, 0, sizeof v);
  v.verdict = MI_COMPARE_FASTER;
  v.ratio = 1 / 1.016;
  v.lo = 1 / 1.021;
  v.hi = 1 / 1.004;
  CHECK(!mi__tune_pays(&v), "a significant 1.6%% gain pays");
  v.ratio = 1 / 1.038;
  v.lo = 1 / 1.043;
  v.hi = 1 / 1.014;
  CHECK(!mi__tune_pays(&v), "a 3.8%% gain whose interval reaches 1.4%% pays");
  v.ratio = 1 / 1.035;
  v.lo = 1 / 1.045;
  v.hi = 1 / 1.025;
  CHECK(mi__tune_pays(&v), "a 3.5%% gain whose interval clears 2.5%% does not pay");
  v.hi = 1 / MI__TUNE_MIN_GAIN;
  CHECK(mi__tune_pays(&v), "an interval ending exactly at the minimum gain does not pay");
  v.verdict = MI_COMPARE_TIED;
  v.ratio = 0.8;
  CHECK(!mi__tune_pays(&v), "a gain whose interval spans 1 pays");
  v.verdict = MI_COMPARE_SLOWER;
  v.ratio = 1.1;
  CHECK(!mi__tune_pays(&v), "slower pays");
}

/* The paired check's extra on other device-level settings: points of 3 dimensions, dimension 0
 * the device's threads (1 or 2). The choice and the extras ran on one thread (measured in a minute
 * when two threads were slow); the fastest feasible two-thread trial other than the default joins. */
static void other_device_settings(void) {
  mi_bound_t b = {MI_OBJ_ACCURACY, 0.01};
  int32_t pts[7][3] = {{2, 0, 0}, {1, 1, 0}, {1, 1, 1}, {2, 1, 1}, {2, 0, 1}, {2, 1, 0}, {1, 0, 1}};
  const int32_t dev[1] = {0};
  mi_trial_t t[7];
  mi_search_result_t r;
  int32_t taken[2] = {1, 2}, alt;
  t[0] = trial(21, MI_OK, 0.80, 0);                 /* the default, two threads */
  t[1] = trial(22, MI_OK, 0.46, 0);                 /* the choice, one thread */
  t[2] = trial(23, MI_OK, 0.52, 0);                 /* an extra, one thread */
  t[3] = trial(24, MI_OK, 0.60, 0.05);              /* two threads, over the bound */
  t[4] = trial(25, MI_OK, 0.72, 0);                 /* two threads: the one that joins */
  t[5] = trial(26, MI_ERR_INVALID_CONFIG, 0.30, 0); /* two threads, failed */
  t[6] = trial(27, MI_OK, 0.74, 0);                 /* one thread */
  for (int i = 0; i < 7; i++) t[i].point = pts[i];
  memset(&r, 0, sizeof r);
  r.trials = t;
  r.count = 7;
  alt = mi_tune_other_device(&r, dev, 1, 21, &b, 1, taken, 2);
  CHECK(alt == 4, "other device settings: trial %d, want 4", (int)alt);
  /* a two-thread trial among the taken ones: every setting is in the check already */
  taken[1] = 4;
  alt = mi_tune_other_device(&r, dev, 1, 21, &b, 1, taken, 2);
  CHECK(alt == -1, "both thread counts taken: trial %d, want none", (int)alt);
  /* no device-level dimension: nothing to add */
  CHECK(mi_tune_other_device(&r, dev, 0, 21, &b, 1, taken, 1) == -1, "no device dimension");
}

static const tu_case_t tu_cases[] = {TU_CASE(picks_fastest_feasible_other),
                                     TU_CASE(next_fastest_for_the_paired_check), TU_CASE(gain_must_pay),
                                     TU_CASE(other_device_settings)};
TU_MAIN(NULL, NULL)
