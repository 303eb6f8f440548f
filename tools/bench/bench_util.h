/* bench_util.h - what the plugin benchmarks share: the plugin drivers' environment (tools/drive:
 * $MI_BUILD, paths) and BENCH_REQUIRE, a check that says where it failed and exits 1. A
 * benchmark measures, it does not test: it stops on what it cannot go on without, and never
 * counts failures or skips like the unit tests (tests/unit/test_util.h), whose headers it does
 * not include. */
#ifndef MI_BENCH_UTIL_H
#define MI_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "drive_env.h"

#define BENCH_REQUIRE(cond) DRIVE_REQUIRE(cond)

/* Seconds of CPU time this process has used: on a shared, loaded machine other processes steal
 * wall time, not CPU time. (Wall time: mi_now_s.) */
static inline double bench_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* qsort's order of doubles, for medians and minimums of timed runs. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#endif
