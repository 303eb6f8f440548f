/* tune_assign.c - puts each model of a recipe on one device of the pool, subject to each
 * device's capacity: a greedy pass, documented in docs/tuning.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune_internal.h"

/* Memory a model needs on a device: its chosen configuration's peak memory when measured,
 * else nothing known (0). */
static double need_mb(const mi_tune_run_t *run) {
  const mi_trial_t *t = &run->res->trials[run->front[0]];
  return isfinite(t->objectives[MI_OBJ_MEMORY]) ? t->objectives[MI_OBJ_MEMORY] : 0;
}

MI_API void mi_tune_assign(const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n) {
  int32_t models = r->model_count, devs = r->device_count;
  int32_t *order = malloc((size_t)models * sizeof *order + 1);
  double *left = malloc((size_t)devs * sizeof *left + 1), *need = calloc((size_t)models + 1, sizeof *need);
  int32_t pick0 = r->preference_count ? r->preference[0] : r->objectives[0];
  if (!order || !left || !need || n != models * devs) goto done;
  for (int32_t d = 0; d < devs; d++) {
    uint64_t cap = runs[d].capacity;
    left[d] = cap ? (double)cap / 1048576.0 : INFINITY;
  }
  for (int32_t m = 0; m < models; m++) {
    order[m] = m;
    for (int32_t d = 0; d < devs; d++) {
      const mi_tune_run_t *run = &runs[m * devs + d];
      if (run->ok && run->front_n > 0) need[m] = fmax(need[m], need_mb(run));
    }
  }
  /* The largest models first: they have the fewest places to go. */
  for (int32_t i = 1; i < models; i++)
    for (int32_t j = i; j > 0 && need[order[j]] > need[order[j - 1]]; j--) {
      int32_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  /* Each model goes to the device whose chosen configuration is best on the first preferred
   * objective among those with room left for it; its memory is then taken from that device. */
  for (int32_t i = 0; i < models; i++) {
    int32_t m = order[i], best = -1;
    double bv = INFINITY;
    for (int32_t d = 0; d < devs; d++) {
      const mi_tune_run_t *run = &runs[m * devs + d];
      double v;
      if (!run->ok || run->front_n == 0 || need_mb(run) > left[d]) continue;
      v = run->res->trials[run->front[0]].objectives[pick0];
      if (best < 0 || v < bv) {
        best = d;
        bv = v;
      }
    }
    if (best >= 0) {
      runs[m * devs + best].assigned = 1;
      left[best] -= need_mb(&runs[m * devs + best]);
    }
  }
done:
  free(order);
  free(left);
  free(need);
}
