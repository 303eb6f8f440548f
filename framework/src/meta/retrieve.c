/* retrieve.c - similar-task retrieval and RGPE-style source weighting by ranking loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_meta.h"

int32_t mi_meta_retrieve(const double desc[MI_META_DESC_SIZE], uint64_t stack_hash,
                         const mi_meta_task_t *tasks, int32_t task_count, int32_t k,
                         int any_stack, int32_t *idx, double *dist) {
  double mean[MI_META_DESC_SIZE] = {0}, sd[MI_META_DESC_SIZE] = {0};
  double *dd;
  int32_t *ord, c = 0;
  if (!desc || !tasks || task_count <= 0 || k <= 0 || !idx) return 0;
  dd = malloc((size_t)task_count * sizeof *dd);
  ord = malloc((size_t)task_count * sizeof *ord);
  if (!dd || !ord) {
    free(dd);
    free(ord);
    return 0;
  }
  /* Standardise each descriptor entry over the tasks and the target, so FLOPs in the tens
   * do not drown an op-mix share: every entry counts by how much tasks differ in it. */
  for (int j = 0; j < MI_META_DESC_SIZE; j++) {
    double s = desc[j], q = 0;
    for (int32_t t = 0; t < task_count; t++) s += tasks[t].desc[j];
    mean[j] = s / (task_count + 1);
    q = (desc[j] - mean[j]) * (desc[j] - mean[j]);
    for (int32_t t = 0; t < task_count; t++) q += (tasks[t].desc[j] - mean[j]) * (tasks[t].desc[j] - mean[j]);
    sd[j] = sqrt(q / (task_count + 1));
  }
  for (int32_t t = 0; t < task_count; t++) {
    double s = 0;
    if (!any_stack && tasks[t].stack_hash != stack_hash) continue;
    if (tasks[t].count <= 0) continue;
    for (int j = 0; j < MI_META_DESC_SIZE; j++)
      if (sd[j] > 1e-9) s += ((tasks[t].desc[j] - desc[j]) / sd[j]) * ((tasks[t].desc[j] - desc[j]) / sd[j]);
    dd[c] = sqrt(s);
    ord[c++] = t;
  }
  /* Insertion sort: the history holds tens of tasks, not millions. */
  for (int32_t i = 1; i < c; i++)
    for (int32_t j = i; j > 0 && dd[j] < dd[j - 1]; j--) {
      double tv = dd[j];
      int32_t ti = ord[j];
      dd[j] = dd[j - 1];
      ord[j] = ord[j - 1];
      dd[j - 1] = tv;
      ord[j - 1] = ti;
    }
  if (c > k) c = k;
  for (int32_t i = 0; i < c; i++) {
    idx[i] = ord[i];
    if (dist) dist[i] = dd[i];
  }
  free(dd);
  free(ord);
  return c;
}

static double gauss(mi_rng_t *r) {
  double u = mi_rng_uniform(r), v = mi_rng_uniform(r);
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1
                            : 0;
}

void mi_meta_rgpe_weights(const double *pred_mean, const double *pred_std, int32_t model_count,
                          const double *y, int32_t n, int32_t sample_count, uint64_t seed,
                          double *weights) {
  int32_t M = model_count, S = sample_count > 0 ? sample_count : 64, target = M - 1;
  double *loss = malloc((size_t)M * S * sizeof *loss), *draw = malloc((size_t)(n > 0 ? n : 1) * sizeof *draw);
  double *tmp = malloc((size_t)S * sizeof *tmp), total = 0;
  mi_rng_t r;
  if (M <= 0) goto done;
  for (int32_t k = 0; k < M; k++) weights[k] = 0;
  if (!loss || !draw || !tmp || n < 2) {
    /* No pairs to judge by yet: trust the sources equally (the target model has no data). */
    for (int32_t k = 0; k < M; k++) weights[k] = 1.0 / M;
    goto done;
  }
  mi_rng_seed(&r, seed);
  for (int32_t k = 0; k < M; k++)
    for (int32_t s = 0; s < S; s++) {
      for (int32_t i = 0; i < n; i++)
        draw[i] = pred_mean[(size_t)k * n + i] + (pred_std ? pred_std[(size_t)k * n + i] : 0) * gauss(&r);
      loss[(size_t)k * S + s] = mi_metric_rank_loss(draw, y, n);
    }
  for (int32_t s = 0; s < S; s++) {
    /* Ties go to the target's own model: a source must rank strictly better to earn weight. */
    int32_t best = target;
    for (int32_t k = 0; k < M; k++)
      if (loss[(size_t)k * S + s] < loss[(size_t)best * S + s]) best = k;
    weights[best] += 1;
  }
  /* Prune sources whose median loss is worse than the target's 95th percentile. */
  for (int32_t s = 0; s < S; s++) tmp[s] = loss[(size_t)target * S + s];
  qsort(tmp, (size_t)S, sizeof *tmp, cmp_double);
  {
    double p95 = mi_stats_quantile(tmp, S, 0.95);
    for (int32_t k = 0; k < target; k++) {
      for (int32_t s = 0; s < S; s++) tmp[s] = loss[(size_t)k * S + s];
      qsort(tmp, (size_t)S, sizeof *tmp, cmp_double);
      if (mi_stats_quantile(tmp, S, 0.5) > p95) weights[k] = 0;
    }
  }
  for (int32_t k = 0; k < M; k++) total += weights[k];
  if (total <= 0) weights[target] = total = 1;
  for (int32_t k = 0; k < M; k++) weights[k] /= total;
done:
  free(loss);
  free(draw);
  free(tmp);
}
