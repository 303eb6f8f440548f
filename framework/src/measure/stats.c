/* stats.c - robust statistics of repeat samples: median, trimmed mean, percentiles, CV. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

MI_API double mi_stats_quantile(const double *sorted, int32_t n, double q) {
  double pos, frac;
  int32_t lo;
  if (!sorted || n <= 0) return NAN;
  if (q <= 0) return sorted[0];
  if (q >= 1) return sorted[n - 1];
  pos = q * (double)(n - 1);
  lo = (int32_t)floor(pos);
  frac = pos - (double)lo;
  if (lo + 1 >= n) return sorted[n - 1];
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

MI_API int32_t mi_stats_compute(const double *samples, int32_t n, double trim, mi_stats_t *out,
                                mi_error_t *err) {
  double *s, sum = 0, ss = 0, tsum = 0;
  int32_t cut, kept;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_stats_compute: out is NULL");
  memset(out, 0, sizeof *out);
  if (!samples || n <= 0)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_stats_compute: no samples");
  if (!(trim >= 0 && trim < 0.5))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_stats_compute: trim %g not in [0, 0.5)",
                     trim);
  s = malloc((size_t)n * sizeof *s);
  if (!s) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_stats_compute: out of memory");
  memcpy(s, samples, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  for (int32_t i = 0; i < n; i++) sum += s[i];
  out->n = n;
  out->min = s[0];
  out->max = s[n - 1];
  out->mean = sum / n;
  for (int32_t i = 0; i < n; i++) ss += (s[i] - out->mean) * (s[i] - out->mean);
  /* Sample standard deviation: the repeats are a sample of the device's behaviour. */
  out->stddev = n > 1 ? sqrt(ss / (n - 1)) : 0;
  out->cv = out->mean != 0 ? out->stddev / fabs(out->mean) : 0;
  out->median = mi_stats_quantile(s, n, 0.5);
  out->p10 = mi_stats_quantile(s, n, 0.1);
  out->p90 = mi_stats_quantile(s, n, 0.9);
  cut = (int32_t)floor(trim * n);
  kept = n - 2 * cut;
  for (int32_t i = cut; i < n - cut; i++) tsum += s[i];
  out->trimmed_mean = tsum / kept;
  free(s);
  return MI_OK;
}

double mi__median_ci(const double *samples, int32_t n) {
  double *s, half, med, r;
  int32_t lo, hi;
  if (!samples || n < 2 || !(s = malloc((size_t)n * sizeof *s))) return INFINITY;
  memcpy(s, samples, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  half = 0.98 * sqrt((double)n);
  /* 1-based ranks of the interval's ends, widened to whole ranks. */
  lo = (int32_t)floor(0.5 * n - half);
  hi = (int32_t)ceil(0.5 * n + 1 + half);
  if (lo < 1) lo = 1;
  if (hi > n) hi = n;
  med = mi_stats_quantile(s, n, 0.5);
  r = med > 0 ? (s[hi - 1] - s[lo - 1]) / 2 / med : INFINITY;
  free(s);
  return r;
}
