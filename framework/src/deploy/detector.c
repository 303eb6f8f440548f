/* detector.c - the drift detector: a one-sided CUSUM on the log ratio of a running median of
 * the live latencies to the tuned latency (docs/runtime.md, "Drift monitor"). */
#include <math.h>
#include <string.h>

#include "deploy/deploy_internal.h"

void mi_drift_init(mi_drift_detector_t *d, double reference, int32_t window, double delta,
                   double lambda) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  if (window <= 0) window = 5;
  if (window < 3) window = 3;
  if (window > 31) window = 31;
  d->window = window | 1; /* odd, so the median is one sample */
  if (d->window > 31) d->window = 31;
  d->delta = delta > 0 ? delta : 0.05;
  d->lambda = lambda > 0 ? lambda : 0.25;
  d->reference = reference > 0 ? reference : 1.0;
  d->median = NAN;
}

static double median_of(const double *v, int32_t n) {
  double s[31];
  memcpy(s, v, (size_t)n * sizeof *v);
  for (int32_t i = 1; i < n; i++) /* insertion sort: n <= 31 */
    for (int32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
      double x = s[j];
      s[j] = s[j - 1];
      s[j - 1] = x;
    }
  return s[n / 2];
}

int mi_drift_add(mi_drift_detector_t *d, double latency) {
  double x, dev[31], sigma, allowance;
  if (!d || !(latency > 0) || !isfinite(latency)) return 0; /* no figure, no evidence */
  d->ring[d->count % d->window] = latency;
  d->count++;
  if (d->count < d->window) return 0;
  d->median = median_of(d->ring, d->window);
  /* MAD of the window's logs, as a sigma (x1.4826), smoothed: one window is a small sample. */
  for (int32_t i = 0; i < d->window; i++) dev[i] = fabs(log(d->ring[i] / d->median));
  sigma = 1.4826 * median_of(dev, d->window);
  d->noise = d->count == d->window ? sigma : 0.95 * d->noise + 0.05 * sigma;
  /* Three standard errors of a median (1.2533 sigma / sqrt(n)) on top of delta. */
  allowance = d->delta + 3.0 * 1.2533 * d->noise / sqrt((double)d->window);
  /* Log ratio: a 2x slowdown weighs the same on a 0.1 ms model as on a 100 ms one. */
  x = log(d->median / d->reference) - allowance;
  d->sum = d->sum + x > 0 ? d->sum + x : 0;
  return d->sum > d->lambda;
}
