/* util.c - small helpers of the measure family: statistics written as JSON, the machine's load. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "measure/measure_internal.h"

double mi__load1(int32_t *cpus) {
  FILE *f = fopen("/proc/loadavg", "r");
  double v = NAN;
  if (cpus) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *cpus = n > 0 ? (int32_t)n : 1;
  }
  if (!f) return NAN;
  if (fscanf(f, "%lf", &v) != 1) v = NAN;
  fclose(f);
  return v;
}

void mi__sbuf_json_stats(mi__sbuf_t *b, const mi_stats_t *st, double scale) {
  mi__sbuf_printf(b, "{\"n\":%d,\"median\":", (int)st->n);
  mi__sbuf_json_double(b, st->median * scale);
  mi__sbuf_printf(b, ",\"trimmed_mean\":");
  mi__sbuf_json_double(b, st->trimmed_mean * scale);
  mi__sbuf_printf(b, ",\"p10\":");
  mi__sbuf_json_double(b, st->p10 * scale);
  mi__sbuf_printf(b, ",\"p90\":");
  mi__sbuf_json_double(b, st->p90 * scale);
  mi__sbuf_printf(b, ",\"cv\":");
  mi__sbuf_json_double(b, st->cv);
  mi__sbuf_printf(b, "}");
}
