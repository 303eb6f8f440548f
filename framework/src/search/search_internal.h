/* search_internal.h - the bookkeeping a strategy shares with the search loop. */
#ifndef MI_SEARCH_INTERNAL_H
#define MI_SEARCH_INTERNAL_H

#include "metainfer/mi_tune.h"

typedef struct mi__search {
  const mi_space_t *s;
  const mi_search_options_t *o;
  mi_search_result_t *r;
  int32_t cap;
  int64_t budget;
  double t0;
  mi_rng_t rng;
  int32_t dims;
  int32_t *fixed; /* scratch for frozen dimensions: the default point, then a copy */
  int32_t *scratch;
} mi__search_t;

/* 1 while measurements and seconds remain. */
int mi__search_has_budget(mi__search_t *st);
/* Evaluates `pt` unless its hash was seen (returns the existing trial index, *fresh = 0) or the
 * lookup knows it (replayed, free). Returns the trial index, or -1 when out of memory. */
int32_t mi__search_eval(mi__search_t *st, const int32_t *pt, int *fresh);
/* Objectives (the options' columns) and violations of trials idx[0..n). obj is n x m. */
void mi__search_matrix(const mi__search_t *st, const int32_t *idx, int32_t n, double *obj,
                       double *viol);
int32_t mi__search_nsga2(mi__search_t *st, mi_error_t *err);

#endif
