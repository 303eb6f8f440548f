/* clock.c - the clocks, written once: the monotonic one every timer reads and the UTC wall-clock
 * stamp every stored record carries. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "core/core.h"
#include "metainfer/mi_core.h"

MI_API double mi_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double mi__now_s(void) { return mi_now_s(); }

void mi__now_iso(char out[32]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
