/* bench_lomo.h - leave one model out (bench_lomo.c): the search benchmark's per-layer case. */
#ifndef BENCH_LOMO_H
#define BENCH_LOMO_H

#include "bench_search.h"

/* Prints the leave-one-model-out tables (prediction with 10 target measurements; the search
 * outcome with and without the per-layer model unless MI_BENCH_LOMO_SEARCH=0) for every
 * exhaustive task with a per-layer table, medians over `seeds`. */
void bs_lomo_tables(bs_task_t *tasks, int32_t n, int32_t seeds);

#endif
