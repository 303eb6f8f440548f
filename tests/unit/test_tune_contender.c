/* test_tune_contender.c - when the search chose the default itself (its single median was the
 * lowest, which on a loaded machine can be the load rather than the configuration), the end of
 * the tune pits the fastest other successful trial within the bounds against it in paired
 * rounds; mi_tune_contender picks that trial: not the default, not a failure, not one over a
 * bound, not one without a latency. */
#include <math.h>
#include <string.h>

#include "metainfer/mi_tuner.h"

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

static const tu_case_t tu_cases[] = {TU_CASE(picks_fastest_feasible_other)};
TU_MAIN(NULL, NULL)
