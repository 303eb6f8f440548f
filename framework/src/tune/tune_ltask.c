/* tune_ltask.c - mi-host tune's layer-task phase: the model's layer tasks on the device, each
 * task's kernel choice tuned with per-layer times from whole-model measurements in the device's
 * worker (tasks in the history cost nothing), and the joint search then held to those choices
 * so that it spans model-side choices x device-level knobs (docs/tuning.md, "Layer tasks"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_ltask.h"
#include "tune/tune_internal.h"

typedef struct {
  mi_tune_task_t *task;
  const mi_space_t *space;
  int32_t nodes;
} measure_ctx_t;

/* One whole-model measurement through the tuner's evaluator (recorded in the history like any
 * trial), read back per node. */
static int32_t measure(void *ctx, const int32_t *pt, double *node_s, mi_error_t *err) {
  measure_ctx_t *m = ctx;
  double obj[MI_OBJ_COUNT];
  int32_t rc = mi_tune_evaluate(m->task, m->space, pt, obj, err);
  if (rc != MI_OK) return rc;
  /* A kernel choice that costs accuracy (an FP16 variant) must not become a task's best when
   * the whole model then breaks the recipe's accuracy bound: the round counts as failed. */
  for (int32_t b = 0; b < m->task->bound_count; b++)
    if (m->task->bounds[b].objective == MI_OBJ_ACCURACY && isfinite(obj[MI_OBJ_ACCURACY]) &&
        obj[MI_OBJ_ACCURACY] > m->task->bounds[b].max)
      return mi_errorf(err, MI_ERR_INVALID_CONFIG, "accuracy drop %.3g over the bound %.3g",
                       obj[MI_OBJ_ACCURACY], m->task->bounds[b].max);
  mi_tune_layer_times(m->task, node_s, m->nodes);
  return MI_OK;
}

/* log10 of the number of values of the dimensions `pick` selects. */
static double log10_of(const mi_space_t *s, const uint8_t *frozen, int which) {
  double l = 0;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    int32_t kind = mi_space_dim_kind(s, d), node = mi_space_dim_node(s, d);
    int model = kind == MI_DIM_MODEL, device = kind == MI_DIM_KNOB && node < 0;
    int kernel = !model && !device;
    if ((which == 0 && model) || (which == 1 && device) || (which == 2 && kernel && frozen[d]) ||
        (which == 3 && kernel && !frozen[d]))
      l += log10((double)mi_space_dim_size(s, d));
  }
  return l;
}

int32_t mi_tune_ltasks(mi_tune_task_t *task, mi_tune_run_t *run, const mi_graph_t *g,
                       const char *device_hash, int quiet, int fuse_conv, uint8_t **frozen_out,
                       int32_t **fixed_out, mi_error_t *err) {
  const mi_space_t *s = run->space;
  int32_t D = mi_space_dim_count(s), rc, *base = malloc((size_t)D * sizeof *base + 1);
  uint8_t *frozen = calloc((size_t)D + 1, 1);
  mi_ltasks_t *t = NULL;
  mi_ltask_options_t lo;
  mi_ltask_result_t res;
  measure_ctx_t m = {task, s, g->node_count};
  *frozen_out = NULL;
  *fixed_out = NULL;
  memset(&res, 0, sizeof res);
  if (!base || !frozen) {
    free(base);
    free(frozen);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  }
  mi_space_default(s, base);
  mi_space_repair(s, base, NULL, NULL);
  if ((rc = mi_ltasks_extract_fused(g, s, base, fuse_conv, &t, err)) != MI_OK) goto done;
  run->ltask_nodes = 0;
  for (int32_t i = 0; i < t->count; i++) run->ltask_nodes += t->tasks[i].node_count;
  run->ltasks = t->count;
  if (t->count == 0) goto done;
  mi_ltasks_frozen(s, t, frozen);
  mi_ltask_options_default(&lo);
  /* The rounds come out of the recipe's budget, keeping at least half for the joint search. */
  if (task->budget > 0 && lo.max_candidates > task->budget / 2) lo.max_candidates = (int32_t)(task->budget / 2);
  if (lo.max_candidates < 1) lo.max_candidates = 1;
  /* Then the knob stage: the rest of that half of the budget, and at most a quarter of the
   * search's seconds (compiling a kernel per step is what a round costs on OpenCL and Vulkan). */
  lo.knob_rounds = task->budget > 0 ? (int32_t)(task->budget / 2) - lo.max_candidates : 8;
  if (lo.knob_rounds < 0) lo.knob_rounds = 0;
  lo.knob_seconds = task->search && task->search->max_seconds > 0 ? task->search->max_seconds / 4 : 0;
  /* The whole phase, from the start of the tune (the space's probes count), within its share of
   * the recipe's seconds; what that leaves out is counted and said (mi__tune_time_note). */
  if (task->deadline > 0)
    lo.max_seconds = fmax(MI__TUNE_LTASK_SHARE * task->recipe->budget_seconds - (mi_now_s() - task->t_begin), 1e-9);
  {
    /* What the joint search has left once the kernel choices are the tasks': model-side x
     * device-level x kernel dimensions no task covers. When it can measure all of that in
     * fewer runs than half the budget (opencl and vulkan on blazeface_front: 2 points; the
     * 40% share cut 9-12 knob rounds there while 50-130 s of 300 went unused), the phase keeps
     * only what those runs need, at its own rounds' pace, and may use the rest of the
     * measurements and seconds (the paired check's share stays apart). */
    double rest = log10_of(s, frozen, 0) + log10_of(s, frozen, 1) + log10_of(s, frozen, 3);
    if (task->budget > 0 && rest < log10((double)task->budget / 2)) {
      int32_t runs = (int32_t)ceil(pow(10, rest) - 1e-9);
      lo.reserve_runs = runs;
      lo.knob_rounds = (int32_t)task->budget - lo.max_candidates - runs - 1;
      if (lo.knob_rounds < 0) lo.knob_rounds = 0;
      lo.knob_seconds = 0;
      if (task->deadline > 0)
        lo.hard_seconds = fmax(mi__tune_left(task) - mi__tune_confirm_keep(task), 1e-9);
    }
  }
  lo.history = task->history;
  lo.device_hash = device_hash;
  lo.stack_hash = run->stack_hash;
  lo.measure = measure;
  lo.measure_ctx = &m;
  if (!quiet)
    mi__tune_progress(task, 1, "%-14s tuning %d layer tasks", task->spec, (int)t->count);
  if ((rc = mi_ltasks_tune(g, s, t, base, &lo, &res, err)) != MI_OK) goto done;
  run->ltask_reused = res.reused;
  run->ltask_warm = res.warm;
  run->ltask_measured = res.measured_tasks;
  run->ltask_layer_measurements = res.layer_measurements;
  run->ltask_rounds = res.rounds;
  run->ltask_improved = res.improved;
  run->ltask_knob_rounds = res.knob_rounds;
  run->ltask_knob_measurements = res.knob_measurements;
  run->ltask_knob_improved = res.knob_improved;
  run->cut_variant_rounds = res.variant_rounds_cut;
  run->cut_knob_rounds = res.knob_rounds_cut;
  run->ltask_agreed = res.agreed;
  run->ltask_cold = res.cold;
  run->ltask_warm_layer_measurements = res.warm_layer_measurements;
  run->ltask_cold_run_layer_measurements = res.cold_run_layer_measurements;
  run->ltask_log10_model = log10_of(s, frozen, 0);
  run->ltask_log10_device = log10_of(s, frozen, 1);
  run->ltask_log10_kernel = log10_of(s, frozen, 2);
  *frozen_out = frozen;
  *fixed_out = res.point;
  res.point = NULL;
  frozen = NULL;
done:
  mi_ltask_result_free(&res);
  mi_ltasks_destroy(t);
  free(base);
  free(frozen);
  return rc;
}
