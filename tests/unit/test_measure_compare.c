/* test_measure_compare.c - the paired comparison's statistics on synthetic samples: a known
 * ratio under drift, an interval that spans 1, determinism given the seed, and the rounds of
 * mi_compare_run with a synthetic measurer (no clocks involved), and its wall-time budget with one
 * that sleeps. */
#include <math.h>
#include <time.h>

#include "measure/measure_internal.h"
#include "test_util.h"

/* Deterministic noise in [-1, 1). */
static double noise(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) / 4503599627370496.0 - 1.0;
}

/* B is 1.25x A, the machine drifts by 40% over the rounds and each measurement carries +-1%
 * of its own noise: the paired ratio is found to within 1% and its interval holds 1.25. */
static void test_known_ratio(void) {
  double a[30], b[30];
  uint64_t s = 7;
  mi_compare_ratio_t r, r2;
  mi_error_t err;
  for (int k = 0; k < 30; k++) {
    double drift = 1.0 + 0.4 * k / 29.0;
    a[k] = 0.010 * drift * (1 + 0.01 * noise(&s));
    b[k] = 0.0125 * drift * (1 + 0.01 * noise(&s));
  }
  CHECK(mi_compare_ratio(a, b, 30, 0.95, 2000, 42, &r, &err) == MI_OK, "%s", err.message);
  CHECK(fabs(r.ratio - 1.25) < 0.0125, "ratio %.4f, want 1.25", r.ratio);
  CHECK(r.lo <= 1.25 && r.hi >= 1.25 && r.lo < r.ratio && r.hi > r.ratio,
        "interval %.4f-%.4f around %.4f should hold 1.25", r.lo, r.hi, r.ratio);
  CHECK(r.half_width > 0 && r.half_width < 0.02, "half-width %.4f", r.half_width);
  CHECK(r.verdict == MI_COMPARE_SLOWER, "b is slower: verdict %d", (int)r.verdict);
  /* Same samples and seed: the same interval, to the bit. */
  CHECK(mi_compare_ratio(a, b, 30, 0.95, 2000, 42, &r2, &err) == MI_OK && r2.lo == r.lo &&
            r2.hi == r.hi && r2.ratio == r.ratio,
        "not deterministic: %.17g-%.17g vs %.17g-%.17g", r.lo, r.hi, r2.lo, r2.hi);
  /* The other way round: the inverse ratio, faster, and a mirror-image interval. */
  CHECK(mi_compare_ratio(b, a, 30, 0.95, 2000, 42, &r2, &err) == MI_OK, "%s", err.message);
  CHECK(fabs(r2.ratio * r.ratio - 1) < 1e-12 && r2.verdict == MI_COMPARE_FASTER,
        "inverse %.6f x %.6f, verdict %d", r2.ratio, r.ratio, (int)r2.verdict);
  /* Unpaired medians would see the drift; one round hit by a burst moves nothing. */
  b[3] *= 3;
  CHECK(mi_compare_ratio(a, b, 30, 0.95, 2000, 42, &r2, &err) == MI_OK &&
            fabs(r2.ratio - r.ratio) < 0.005,
        "one burst moved the ratio from %.4f to %.4f", r.ratio, r2.ratio);
}

/* Two configurations of equal speed with +-5% noise: the interval spans 1. */
static void test_spans_one(void) {
  double a[12], b[12];
  uint64_t s = 99;
  mi_compare_ratio_t r;
  mi_error_t err;
  for (int k = 0; k < 12; k++) {
    a[k] = 1.0 + 0.05 * noise(&s);
    b[k] = 1.0 + 0.05 * noise(&s);
  }
  CHECK(mi_compare_ratio(a, b, 12, 0.95, 2000, 3, &r, &err) == MI_OK, "%s", err.message);
  CHECK(r.lo < 1 && r.hi > 1 && r.verdict == MI_COMPARE_TIED,
        "equal speeds: interval %.4f-%.4f, verdict %d", r.lo, r.hi, (int)r.verdict);
  /* One round: the ratio itself, a zero-width interval. */
  CHECK(mi_compare_ratio(a, b, 1, 0.95, 100, 3, &r, &err) == MI_OK && r.lo == r.hi &&
            fabs(r.ratio - b[0] / a[0]) < 1e-12,
        "one round: %.6f %.6f-%.6f", r.ratio, r.lo, r.hi);
  CHECK(mi_compare_ratio(a, b, 0, 0.95, 100, 3, &r, &err) == MI_ERR_INVALID_ARGUMENT, "n = 0");
  a[2] = 0;
  CHECK(mi_compare_ratio(a, b, 12, 0.95, 100, 3, &r, &err) == MI_ERR_INVALID_ARGUMENT,
        "a zero latency is refused");
}

/* A synthetic measurer: config c runs at speed[c] x the machine's drift, which moves with
 * every measurement made; it records the order it was asked in. */
typedef struct synth {
  double speed[3];
  int calls, fail_at;
  int asked[200];
  uint64_t s;
} synth_t;

static int32_t synth_measure(void *user, int32_t c, double *median_s, mi_error_t *err) {
  synth_t *y = user;
  double drift = 1.0 + 0.002 * y->calls;
  if (y->fail_at && y->calls == y->fail_at)
    return mi_errorf(err, MI_ERR_CRASHED, "crashed: signal 11 (synthetic)");
  y->asked[y->calls++ % 200] = c;
  *median_s = y->speed[c] * drift * (1 + 0.002 * noise(&y->s));
  return MI_OK;
}

static void test_rounds(void) {
  synth_t y = {{1.0, 0.8, 1.0}, 0, 0, {0}, 5};
  mi_compare_options_t o;
  mi_compare_result_t res;
  mi_error_t err;
  int first[3] = {0, 0, 0};
  mi_compare_options_default(&o);
  o.budget_s = 0; /* rounds only: the test does not depend on how fast it runs */
  o.max_rounds = 40;
  CHECK(mi_compare_run(3, synth_measure, &y, &o, &res, &err) == MI_OK, "%s", err.message);
  CHECK(res.target_met && res.rounds >= o.min_rounds && res.rounds < 40,
        "target met after %d rounds (%d)", (int)res.rounds, (int)res.target_met);
  CHECK(y.calls == 3 * res.rounds, "%d measurements for %d rounds", y.calls, (int)res.rounds);
  CHECK(fabs(res.vs_first[1].ratio - 0.8) < 0.01 && res.vs_first[1].verdict == MI_COMPARE_FASTER,
        "config 1: %.4f verdict %d", res.vs_first[1].ratio, (int)res.vs_first[1].verdict);
  CHECK(res.vs_first[2].verdict == MI_COMPARE_TIED && res.vs_first[2].lo < 1 &&
            res.vs_first[2].hi > 1,
        "config 2 ties: %.4f-%.4f", res.vs_first[2].lo, res.vs_first[2].hi);
  CHECK(res.vs_first[0].ratio == 1 && res.vs_first[0].half_width == 0, "config 0 against itself");
  CHECK(res.failed == -1, "no configuration failed: %d", (int)res.failed);
  /* Every round measures each once, in an order that changes from round to round. */
  for (int k = 0; k < res.rounds; k++) {
    int seen = 0;
    for (int i = 0; i < 3; i++) seen |= 1 << y.asked[3 * k + i];
    CHECK(seen == 7, "round %d measured %x", k, seen);
    CHECK(res.order[k][0] == y.asked[3 * k], "order of round %d recorded", k);
    first[y.asked[3 * k]]++;
  }
  CHECK(first[0] && first[1] + first[2], "the first place rotates: %d %d %d", first[0], first[1],
        first[2]);
  CHECK(res.cpus >= 1 && res.loaded >= 0 && res.loaded <= 3 * res.rounds, "load flags");
  /* A failure ends it with the error, and the complete rounds stay summarised. */
  y.calls = 0;
  y.fail_at = 8;
  CHECK(mi_compare_run(3, synth_measure, &y, &o, &res, &err) == MI_ERR_CRASHED &&
            strstr(err.message, "crashed"),
        "failure: %s", err.message);
  CHECK(res.rounds == 2 && res.median_s[1] > 0, "two complete rounds kept: %d", (int)res.rounds);
  /* The ninth measurement is the third of round 2: the result names its configuration. */
  CHECK(res.failed == res.order[2][2], "failed configuration %d, want %d", (int)res.failed,
        (int)res.order[2][2]);
  CHECK(mi_compare_run(1, synth_measure, &y, &o, &res, &err) == MI_ERR_INVALID_ARGUMENT,
        "one configuration is refused");
}

/* Measurements that take `sleep_s` each, with the start of each round's first one kept. */
typedef struct slow {
  double sleep_s, start[64];
  int calls, count;
} slow_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int32_t slow_measure(void *user, int32_t c, double *median_s, mi_error_t *err) {
  slow_t *y = user;
  struct timespec ts = {0, (long)(y->sleep_s * 1e9)};
  (void)err;
  if (y->calls % y->count == 0 && y->calls / y->count < 64) y->start[y->calls / y->count] = now_s();
  y->calls++;
  nanosleep(&ts, NULL);
  *median_s = 1e-3 * (1 + c);
  return MI_OK;
}

/* The budget counts the round in progress: no round is begun that a round as long as the longest
 * since the first would carry past it. Rounds of 2 x 50 ms under a 0.35 s budget: the old rule
 * (stop once the budget is spent) began a fourth round at 0.3 s and ended at 0.4 s. */
static void test_budget_counts_round(void) {
  slow_t y = {0.05, {0}, 0, 2};
  mi_compare_options_t o;
  mi_compare_result_t res;
  mi_error_t err;
  double t0 = now_s(), longest = 0;
  mi_compare_options_default(&o);
  o.budget_s = 0.35;
  o.target = 1e-9; /* never met: only the budget stops it */
  o.max_rounds = 40;
  CHECK(mi_compare_run(2, slow_measure, &y, &o, &res, &err) == MI_OK, "%s", err.message);
  CHECK(res.rounds >= 2, "two rounds at least: %d", (int)res.rounds);
  for (int k = 1; k + 1 < res.rounds; k++)
    if (y.start[k + 1] - y.start[k] > longest) longest = y.start[k + 1] - y.start[k];
  /* The last round was begun only when one as long as the longest before it fitted (a 5 ms
   * allowance for the loop's own work between rounds). */
  CHECK(res.rounds == 2 || y.start[res.rounds - 1] - t0 + longest <= o.budget_s + 0.005,
        "round %d begun at %.3f s with rounds of %.3f s, budget %.2f s", (int)res.rounds,
        y.start[res.rounds - 1] - t0, longest, o.budget_s);
}

/* A budget already spent when the comparison starts (a tune at the end of its seconds) still
 * gets the two rounds that say anything; the end-of-round check used to stop it after one. */
static void test_spent_budget_two_rounds(void) {
  slow_t y = {0.02, {0}, 0, 2};
  mi_compare_options_t o;
  mi_compare_result_t res;
  mi_error_t err;
  mi_compare_options_default(&o);
  o.budget_s = 1e-3;
  o.target = 1e-9;
  o.max_rounds = 40;
  CHECK(mi_compare_run(2, slow_measure, &y, &o, &res, &err) == MI_OK, "%s", err.message);
  CHECK(res.rounds == 2, "a spent budget runs exactly two rounds: %d", (int)res.rounds);
}

/* Rounds all on one side of 1 put every bootstrap resample there: under
 * MI_COMPARE_VERDICT_ROUNDS rounds no verdict, however far the ratio. */
static void test_few_rounds_no_verdict(void) {
  double a[8], b[8];
  mi_compare_ratio_t r;
  mi_error_t err;
  for (int k = 0; k < 8; k++) {
    a[k] = 1.0;
    b[k] = 0.7 + 0.01 * k; /* 1.3-1.4x faster every round */
  }
  for (int n = 1; n <= 6; n++) {
    CHECK(mi_compare_ratio(a, b, n, 0.95, 500, 5, &r, &err) == MI_OK, "%s", err.message);
    CHECK(r.hi < 1, "%d rounds: interval %.4f-%.4f", n, r.lo, r.hi);
    CHECK(r.verdict == (n < MI_COMPARE_VERDICT_ROUNDS ? MI_COMPARE_TIED : MI_COMPARE_FASTER), "%d rounds: verdict %d",
          n, (int)r.verdict);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_few_rounds_no_verdict),
    TU_CASE(test_known_ratio),
    TU_CASE(test_spans_one),
    TU_CASE(test_rounds),
    TU_CASE(test_budget_counts_round),
    TU_CASE(test_spent_budget_two_rounds),
};

TU_MAIN(NULL, NULL)
