/* pareto_sort.c - NSGA-II fast non-dominated sort with constraint domination, crowding, picks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_tune.h"

int mi_pareto_dominates(const double *a, const double *b, int32_t m) {
  int better = 0;
  for (int32_t j = 0; j < m; j++) {
    if (a[j] > b[j]) return 0;
    if (a[j] < b[j]) better = 1;
  }
  return better;
}

/* Deb's constraint domination: feasible beats infeasible, less violation beats more, and
 * between feasible points plain Pareto domination decides. */
static int cdom(const double *obj, int32_t m, const double *viol, int32_t i, int32_t k) {
  double vi = viol ? viol[i] : 0, vk = viol ? viol[k] : 0;
  if (vi > 0 || vk > 0) return vi < vk;
  return mi_pareto_dominates(obj + (size_t)i * m, obj + (size_t)k * m, m);
}

static void crowding(const double *obj, int32_t m, const int32_t *front, int32_t n,
                     double *crowd, int32_t *tmp) {
  for (int32_t i = 0; i < n; i++) crowd[front[i]] = 0;
  if (n <= 2) {
    for (int32_t i = 0; i < n; i++) crowd[front[i]] = INFINITY;
    return;
  }
  for (int32_t j = 0; j < m; j++) {
    double lo, hi;
    memcpy(tmp, front, (size_t)n * sizeof *tmp);
    for (int32_t a = 1; a < n; a++) { /* insertion sort by objective j: fronts are small */
      int32_t x = tmp[a], b = a;
      while (b > 0 && obj[(size_t)tmp[b - 1] * m + j] > obj[(size_t)x * m + j]) {
        tmp[b] = tmp[b - 1];
        b--;
      }
      tmp[b] = x;
    }
    lo = obj[(size_t)tmp[0] * m + j];
    hi = obj[(size_t)tmp[n - 1] * m + j];
    crowd[tmp[0]] = crowd[tmp[n - 1]] = INFINITY;
    if (!(hi > lo)) continue;
    for (int32_t a = 1; a + 1 < n; a++)
      crowd[tmp[a]] += (obj[(size_t)tmp[a + 1] * m + j] - obj[(size_t)tmp[a - 1] * m + j]) / (hi - lo);
  }
}

int32_t mi_pareto_sort(const double *obj, int32_t n, int32_t m, const double *violation,
                       int32_t *rank, double *crowd) {
  int32_t *count = NULL, *dom = NULL, *domn = NULL, *front = NULL, *next = NULL, *tmp = NULL;
  int32_t fronts = 0, fn = 0;
  if (n <= 0) return 0;
  if (!obj || !rank || m <= 0) return -1;
  count = calloc((size_t)n, sizeof *count);
  domn = calloc((size_t)n, sizeof *domn);
  dom = malloc((size_t)n * (size_t)n * sizeof *dom);
  front = malloc((size_t)n * sizeof *front);
  next = malloc((size_t)n * sizeof *next);
  tmp = malloc((size_t)n * sizeof *tmp);
  if (!count || !domn || !dom || !front || !next || !tmp) {
    fronts = -1;
    goto done;
  }
  for (int32_t i = 0; i < n; i++) {
    for (int32_t k = 0; k < n; k++) {
      if (i == k) continue;
      if (cdom(obj, m, violation, i, k))
        dom[(size_t)i * n + domn[i]++] = k;
      else if (cdom(obj, m, violation, k, i))
        count[i]++;
    }
    if (count[i] == 0) front[fn++] = i;
  }
  while (fn > 0) {
    int32_t nn = 0;
    for (int32_t a = 0; a < fn; a++) rank[front[a]] = fronts;
    if (crowd) crowding(obj, m, front, fn, crowd, tmp);
    for (int32_t a = 0; a < fn; a++) {
      int32_t i = front[a];
      for (int32_t b = 0; b < domn[i]; b++)
        if (--count[dom[(size_t)i * n + b]] == 0) next[nn++] = dom[(size_t)i * n + b];
    }
    memcpy(front, next, (size_t)nn * sizeof *front);
    fn = nn;
    fronts++;
  }
done:
  free(count);
  free(domn);
  free(dom);
  free(front);
  free(next);
  free(tmp);
  return fronts;
}

int32_t mi_pareto_front(const double *obj, int32_t n, int32_t m, const double *violation,
                        int32_t *idx) {
  int32_t c = 0;
  for (int32_t i = 0; i < n; i++) {
    int dominated = 0;
    if (violation && violation[i] > 0) continue;
    for (int32_t j = 0; j < m; j++)
      if (isnan(obj[(size_t)i * m + j])) dominated = 1;
    for (int32_t k = 0; k < n && !dominated; k++) {
      if (k == i || (violation && violation[k] > 0)) continue;
      if (mi_pareto_dominates(obj + (size_t)k * m, obj + (size_t)i * m, m)) dominated = 1;
      /* Of identical points keep the first, so a front has no duplicates. */
      else if (k < i && !memcmp(obj + (size_t)k * m, obj + (size_t)i * m, (size_t)m * sizeof *obj))
        dominated = 1;
    }
    if (!dominated) idx[c++] = i;
  }
  for (int32_t a = 1; a < c; a++) {
    int32_t x = idx[a], b = a;
    while (b > 0 && obj[(size_t)idx[b - 1] * m] > obj[(size_t)x * m]) {
      idx[b] = idx[b - 1];
      b--;
    }
    idx[b] = x;
  }
  return c;
}

void mi_pareto_violation(const double *obj, int32_t n, int32_t m, const mi_bound_t *b,
                         int32_t bound_count, double *violation) {
  for (int32_t i = 0; i < n; i++) {
    double v = 0;
    for (int32_t k = 0; k < bound_count; k++) {
      double x;
      if (b[k].objective < 0 || b[k].objective >= m) continue;
      x = obj[(size_t)i * m + b[k].objective];
      if (isnan(x))
        v += 1; /* not measured: cannot be shown to meet the bound */
      else if (x > b[k].max)
        v += (x - b[k].max) / (fabs(b[k].max) > 0 ? fabs(b[k].max) : 1);
    }
    violation[i] = v;
  }
}

int32_t mi_pareto_pick(const double *obj, int32_t n, int32_t m, const double *violation,
                       const int32_t *order, int32_t order_count) {
  int32_t best = -1;
  for (int32_t i = 0; i < n; i++) {
    int better = 0, nan = 0;
    if (violation && violation[i] > 0) continue;
    for (int32_t k = 0; k < order_count; k++)
      if (order[k] >= 0 && order[k] < m && isnan(obj[(size_t)i * m + order[k]])) nan = 1;
    if (nan) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    for (int32_t k = 0; k < order_count; k++) {
      double a = obj[(size_t)i * m + order[k]], c = obj[(size_t)best * m + order[k]];
      if (a < c) {
        better = 1;
        break;
      }
      if (a > c) break;
    }
    if (better) best = i;
  }
  return best;
}
