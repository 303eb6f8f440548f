/* hypervolume.c - the volume a point set dominates: exact for 1-3 objectives, Monte Carlo beyond. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_core.h"

typedef struct {
  double x, y, z;
} p3_t;

static int cmp_x(const void *a, const void *b) {
  double d = ((const p3_t *)a)->x - ((const p3_t *)b)->x;
  return d < 0 ? -1 : d > 0;
}
static int cmp_z(const void *a, const void *b) {
  double d = ((const p3_t *)a)->z - ((const p3_t *)b)->z;
  return d < 0 ? -1 : d > 0;
}

/* 2-D sweep over points sorted by x: each adds the strip below the lowest y seen so far. */
static double hv2(p3_t *p, int32_t n, double rx, double ry) {
  double hv = 0, cur = ry;
  qsort(p, (size_t)n, sizeof *p, cmp_x);
  for (int32_t i = 0; i < n; i++)
    if (p[i].y < cur) {
      hv += (rx - p[i].x) * (cur - p[i].y);
      cur = p[i].y;
    }
  return hv;
}

/* 3-D by slicing along z: between consecutive z values the dominated area is the 2-D volume
 * of the points already passed. */
static double hv3(p3_t *p, int32_t n, const double *ref) {
  p3_t *tmp = malloc((size_t)n * sizeof *tmp);
  double hv = 0;
  if (!tmp) return -1;
  qsort(p, (size_t)n, sizeof *p, cmp_z);
  for (int32_t i = 0; i < n; i++) {
    double top = i + 1 < n ? p[i + 1].z : ref[2];
    if (top <= p[i].z) continue;
    memcpy(tmp, p, (size_t)(i + 1) * sizeof *tmp);
    hv += hv2(tmp, i + 1, ref[0], ref[1]) * (top - p[i].z);
  }
  free(tmp);
  return hv;
}

static double monte_carlo(const double *obj, int32_t n, int32_t m, const double *ref,
                          uint64_t seed, int32_t samples) {
  double *lo = malloc((size_t)m * sizeof *lo), box = 1, *x = malloc((size_t)m * sizeof *x);
  int64_t hit = 0;
  mi_rng_t rng;
  if (!lo || !x) {
    free(lo);
    free(x);
    return -1;
  }
  for (int32_t j = 0; j < m; j++) {
    lo[j] = ref[j];
    for (int32_t i = 0; i < n; i++)
      if (obj[(size_t)i * m + j] < lo[j]) lo[j] = obj[(size_t)i * m + j];
    box *= ref[j] - lo[j];
  }
  mi_rng_seed(&rng, seed);
  for (int32_t s = 0; s < samples; s++) {
    for (int32_t j = 0; j < m; j++) x[j] = lo[j] + (ref[j] - lo[j]) * mi_rng_uniform(&rng);
    for (int32_t i = 0; i < n; i++) {
      int32_t j;
      for (j = 0; j < m && obj[(size_t)i * m + j] <= x[j]; j++) {
      }
      if (j == m) {
        hit++;
        break;
      }
    }
  }
  free(lo);
  free(x);
  return samples > 0 ? box * (double)hit / samples : 0;
}

double mi_pareto_hypervolume(const double *obj, int32_t n, int32_t m, const double *ref,
                             uint64_t seed, int32_t samples) {
  double *kept, hv;
  int32_t k = 0;
  if (n < 0 || m <= 0 || !ref || (n > 0 && !obj)) return -1;
  kept = malloc(((size_t)n + 1) * (size_t)m * sizeof *kept);
  if (!kept) return -1;
  /* Only points strictly inside the reference box contribute. */
  for (int32_t i = 0; i < n; i++) {
    int32_t j;
    for (j = 0; j < m && obj[(size_t)i * m + j] < ref[j]; j++) {
    }
    if (j == m) memcpy(kept + (size_t)k++ * m, obj + (size_t)i * m, (size_t)m * sizeof *kept);
  }
  if (k == 0) {
    hv = 0;
  } else if (m == 1) {
    double best = kept[0];
    for (int32_t i = 1; i < k; i++) best = kept[i] < best ? kept[i] : best;
    hv = ref[0] - best;
  } else if (m <= 3) {
    p3_t *p = malloc((size_t)k * sizeof *p);
    if (!p) {
      free(kept);
      return -1;
    }
    for (int32_t i = 0; i < k; i++) {
      p[i].x = kept[(size_t)i * m];
      p[i].y = kept[(size_t)i * m + 1];
      p[i].z = m == 3 ? kept[(size_t)i * m + 2] : 0;
    }
    hv = m == 2 ? hv2(p, k, ref[0], ref[1]) : hv3(p, k, ref);
    free(p);
  } else {
    hv = monte_carlo(kept, k, m, ref, seed, samples > 0 ? samples : 100000);
  }
  free(kept);
  return hv;
}
