/* tune.h - what mi-host tune's files share: one (model, device) task and the evaluator. */
#ifndef MI_HOST_TUNE_H
#define MI_HOST_TUNE_H

#include "metainfer/mi_transform.h"
#include "mi_host.h"

/** One (model, device) being tuned. */
typedef struct mi_tune_task {
  const mi_graph_t *graph;
  mi_plugin_t *plugin;
  uint32_t device;
  mi_variant_desc_t *variants;  /* for fusion */
  uint32_t variant_count;
  mi_xf_samples_t *samples;     /* accuracy and calibration inputs */
  int32_t repeats, warmup;
  int energy_modeled;           /* 1 once an energy figure came from a model */
} mi_tune_task_t;

/** mi_evaluate_fn for a mi_tune_task_t. */
int32_t mi_tune_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                         mi_error_t *err);

/* The result of one (model, device). */
typedef struct mi_tune_run {
  const char *model;
  char spec[96];
  char stack[512], stack_hash[17];
  char size[32];
  int32_t ok;
  char message[MI_ERROR_MESSAGE_SIZE];
  mi_space_t *space;
  mi_search_result_t *res;
  int32_t front_n;
  int32_t *front;
  double hv;
  int energy_modeled;
} mi_tune_run_t;

/** Writes deployment.yaml, pareto.json, one SVG per run and report.html into `out`; with
 * `json`, also one JSON summary on stdout. MI_HOST_OK or MI_HOST_FAIL. */
int mi_tune_write(const mi_recipe_t *r, const char *out, mi_tune_run_t *runs, int32_t n, int json);

#endif
