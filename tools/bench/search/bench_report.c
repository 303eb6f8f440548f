/* bench_report.c - the search benchmark's metrics over seeds: measurements to within 5% of the
 * reference optimum, hypervolume after 64 measurements, leave-one-device-out rank correlation
 * with 10 samples, and what a misleading history costs against a cold start. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"

#define BUDGET 64

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  if (n == 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double worst(const double *v, int n) {
  double w = NAN;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i]) && !(w >= v[i])) w = v[i];
  return w;
}

/* 1-based measurement at which the best-so-far latency came within 5% of ref; BUDGET+1 never. */
static double to_within(const mi_search_result_t *r, double ref) {
  double best = INFINITY;
  for (int32_t i = 0; i < r->count && i < BUDGET; i++) {
    if (r->trials[i].status == MI_OK && r->trials[i].objectives[MI_OBJ_LATENCY] < best)
      best = r->trials[i].objectives[MI_OBJ_LATENCY];
    if (best <= ref * 1.05) return i + 1;
  }
  return BUDGET + 1;
}

static double best_within(const mi_search_result_t *r, int32_t k) {
  double best = INFINITY;
  for (int32_t i = 0; i < r->count && i < k; i++)
    if (r->trials[i].status == MI_OK && r->trials[i].objectives[MI_OBJ_LATENCY] < best)
      best = r->trials[i].objectives[MI_OBJ_LATENCY];
  return best;
}

/* Hypervolume (latency, memory) of the first k trials over that of the whole table, with the
 * table's worst values +10% as reference point. */
static double hv_ratio(const bs_task_t *t, const mi_search_result_t *r, int32_t k) {
  double ref[2] = {0, 0}, *all = malloc((size_t)(t->n + 1) * 2 * sizeof *all), *pts = malloc((size_t)(k + 1) * 2 * sizeof *pts), a, b;
  int32_t n = 0, q = 0;
  if (!all || !pts) return NAN;
  for (int32_t i = 0; i < t->n; i++)
    if (t->rows[i].ok) {
      all[2 * n] = t->rows[i].obj[MI_OBJ_LATENCY];
      all[2 * n + 1] = isfinite(t->rows[i].obj[MI_OBJ_MEMORY]) ? t->rows[i].obj[MI_OBJ_MEMORY] : 1;
      ref[0] = fmax(ref[0], all[2 * n] * 1.1);
      ref[1] = fmax(ref[1], all[2 * n + 1] * 1.1);
      n++;
    }
  for (int32_t i = 0; i < r->count && i < k; i++)
    if (r->trials[i].status == MI_OK) {
      pts[2 * q] = r->trials[i].objectives[MI_OBJ_LATENCY];
      pts[2 * q + 1] = isfinite(r->trials[i].objectives[MI_OBJ_MEMORY]) ? r->trials[i].objectives[MI_OBJ_MEMORY] : 1;
      q++;
    }
  a = mi_pareto_hypervolume(pts, q, 2, ref, 1, 0);
  b = mi_pareto_hypervolume(all, n, 2, ref, 1, 0);
  free(all);
  free(pts);
  return b > 0 ? a / b : NAN;
}

/* Leave-one-device-out: 10 random measurements of the target, sources from the other
 * devices only (mislead: inverted), predictions of every other table entry. */
static void lodo(bs_task_t *tasks, int32_t n, int32_t k, uint64_t seed, int mislead, int use_sources,
                 double *rho, double *within) {
  bs_task_t *t = &tasks[k];
  bs_sources_t src;
  mi_meta_options_t mo;
  mi_search_options_t so;
  int32_t objs[1] = {MI_OBJ_LATENCY}, *pts = malloc((size_t)10 * t->D * sizeof *pts), q = 0, pick[10];
  int32_t *query = malloc((size_t)t->n * t->D * sizeof *query);
  double *obj = malloc(10 * MI_OBJ_COUNT * sizeof *obj), *pred = malloc((size_t)t->n * sizeof *pred), *truth = malloc((size_t)t->n * sizeof *truth);
  mi_rng_t rng;
  *rho = *within = NAN;
  if (!pts || !query || !obj || !pred || !truth || t->n < 20) goto done;
  mi_rng_seed(&rng, seed * 7919u + 1u);
  for (int32_t i = 0; i < 10; i++) {
    int dup;
    do {
      pick[i] = (int32_t)mi_rng_below(&rng, (uint32_t)t->n);
      dup = !t->rows[pick[i]].ok;
      for (int32_t j = 0; j < i; j++) dup |= pick[j] == pick[i];
    } while (dup);
    memcpy(pts + (size_t)i * t->D, t->rows[pick[i]].pt, (size_t)t->D * sizeof *pts);
    memcpy(obj + (size_t)i * MI_OBJ_COUNT, t->rows[pick[i]].obj, MI_OBJ_COUNT * sizeof *obj);
  }
  for (int32_t i = 0; i < t->n; i++) {
    int used = !t->rows[i].ok;
    for (int32_t j = 0; j < 10; j++) used |= pick[j] == i;
    if (used) continue;
    memcpy(query + (size_t)q * t->D, t->rows[i].pt, (size_t)t->D * sizeof *query);
    truth[q++] = t->rows[i].obj[MI_OBJ_LATENCY];
  }
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.seed = seed;
  so.objective_count = 1;
  so.objectives = objs;
  mi_meta_options_default(&mo);
  mo.graph = t->graph;
  mo.frozen = t->frozen;
  memcpy(mo.desc, t->desc, sizeof mo.desc);
  mo.stack_hash = t->stack;
  memset(&src, 0, sizeof src);
  if (use_sources) bs_sources_build(tasks, n, k, 1, mislead, seed, 64, &src);
  mo.sources = src.tasks;
  mo.source_count = src.count;
  if (mi_meta_predict_points(t->space, &so, &mo, pts, obj, 10, query, q, pred, NULL) == MI_OK) {
    *rho = mi_metric_spearman(pred, truth, q);
    *within = mi_metric_within(pred, truth, q, 0.1);
  }
  bs_sources_free(&src);
done:
  free(pts);
  free(query);
  free(obj);
  free(pred);
  free(truth);
}

/* MI_BENCH_METHODS (comma list of method names) runs only those: for quick experiments. */
static int wanted(int m) {
  const char *f = getenv("MI_BENCH_METHODS");
  return !f || !f[0] || strstr(f, bs_method_names[m]) != NULL;
}

int bs_report(bs_task_t *tasks, int32_t n, int32_t seeds) {
  double v[BS_METHODS][4][64], cold64[64], warm20[64], cold20[64];
  const char *lodo_env = getenv("MI_BENCH_LODO");
  for (int32_t s = 0; s < 64; s++) cold64[s] = cold20[s] = warm20[s] = v[BS_OURS_MISLEAD][3][s] = NAN;
  printf("\n| task | reference | method | meas. to 5%% (median) | reached in %d | HV ratio @64 | best @20 / ref |\n", BUDGET);
  printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    bs_task_t *t = &tasks[k];
    for (int m = 0; m < BS_METHODS; m++) {
      int32_t reached = 0;
      if (!wanted(m)) continue;
      for (int32_t s = 0; s < seeds; s++) {
        mi_search_result_t *r = NULL;
        mi_error_t e;
        v[m][0][s] = v[m][1][s] = v[m][2][s] = NAN;
        if (bs_run_method(tasks, n, k, m, (uint64_t)s + 1, BUDGET, &r, &e) != MI_OK) {
          fprintf(stderr, "bench_search: %s %s: %s\n", t->name, bs_method_names[m], e.message);
          continue;
        }
        v[m][0][s] = to_within(r, t->ref);
        reached += v[m][0][s] <= BUDGET;
        v[m][1][s] = hv_ratio(t, r, BUDGET);
        v[m][2][s] = best_within(r, 20) / t->ref;
        if (m == BS_OURS_COLD) cold64[s] = best_within(r, BUDGET), cold20[s] = best_within(r, 20);
        if (m == BS_OURS_MISLEAD) {
          warm20[s] = best_within(r, 20) / cold20[s];
          v[m][3][s] = best_within(r, BUDGET) / cold64[s];
        }
        mi_search_result_destroy(r);
      }
      {
        double a = median(v[m][0], seeds), b = median(v[m][1], seeds), c = median(v[m][2], seeds);
        char to[32];
        if (a > BUDGET) snprintf(to, sizeof to, ">%d", BUDGET);
        else snprintf(to, sizeof to, "%.1f", a);
        printf("| %s | %s %.4g ms | %s | %s | %d/%d | %.3f | %.3f |\n", t->name, t->exhaustive ? "exhaustive" : "pooled",
               t->ref, bs_method_names[m], to, (int)reached, (int)seeds, b, c);
        fflush(stdout);
      }
    }
    if (wanted(BS_OURS_COLD) && wanted(BS_OURS_MISLEAD)) {
      double w20 = worst(warm20, seeds), w64 = worst(v[BS_OURS_MISLEAD][3], seeds);
      printf("| %s | | misleading / cold, best latency, median (worst seed) | @20: %.3f (%.3f) | @64: %.3f (%.3f) | | |\n",
             t->name, median(warm20, seeds), w20, median(v[BS_OURS_MISLEAD][3], seeds), w64);
    }
  }
  if (lodo_env && !strcmp(lodo_env, "0")) return 0;
  printf("\n| task (held-out device) | 10 samples, no sources: Spearman / within 10%% | + other devices' history | + misleading history |\n");
  printf("| --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    double r[3][64], w[3][64];
    if (!tasks[k].exhaustive) continue;
    for (int32_t s = 0; s < seeds; s++)
      for (int c = 0; c < 3; c++) lodo(tasks, n, k, (uint64_t)s + 1, c == 2, c > 0, &r[c][s], &w[c][s]);
    printf("| %s |", tasks[k].name);
    for (int c = 0; c < 3; c++) printf(" %.3f / %.2f |", median(r[c], seeds), median(w[c], seeds));
    printf("\n");
    fflush(stdout);
  }
  return 0;
}
