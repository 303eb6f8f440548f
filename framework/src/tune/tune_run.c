/* tune_run.c - mi_tune_run: every model of a recipe on every device of its pool, each device
 * in turn or `jobs` at once in threads with their own workers and history connections; per
 * (model, device) the joint space, the layer tasks, the search, the front and the check against
 * the default. What it does goes to the caller's callbacks (tune_call.c). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "space/space.h"
#include "tune/tune_farm.h"
#include "tune/tune_internal.h"

/* The recipe's input shapes, then 1 for every dimension still dynamic (a batch 'N'), with a
 * note: nothing may be probed or measured with an unresolved shape. */
static int32_t set_inputs(mi_graph_t *g, const mi_recipe_t *r, const char *model,
                          const mi_tune_callbacks_t *cb, mi_error_t *err) {
  int defaulted = 0;
  int32_t rc;
  for (int32_t i = 0; i < r->input_count; i++) {
    int32_t t = mi_graph_find_tensor(g, r->inputs[i].name);
    if (t < 0) return mi_errorf(err, MI_ERR_NOT_FOUND, "%s: the model has no input '%s'", r->path, r->inputs[i].name);
    g->tensors[t].rank = r->inputs[i].rank;
    memcpy(g->tensors[t].dims, r->inputs[i].dims, sizeof r->inputs[i].dims);
  }
  for (int32_t i = 0; i < g->input_count; i++) {
    mi_tensor_t *t = &g->tensors[g->inputs[i]];
    char dyn[160] = "";
    size_t at = 0;
    if (t->rank < 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "%s: input '%s' of %s has no declared shape: give it under "
                       "inputs: in the recipe",
                       r->path, t->name, model);
    for (int32_t d = 0; d < t->rank; d++)
      if (t->dims[d] < 0) {
        if (at < sizeof dyn)
          at += (size_t)snprintf(dyn + at, sizeof dyn - at, "%s%s", at ? ", " : "", t->dim_names[d] ? t->dim_names[d] : "?");
        t->dims[d] = 1;
      }
    defaulted |= dyn[0] != '\0';
    if (dyn[0]) {
      char shape[256];
      size_t k = 0;
      for (int32_t d = 0; d < t->rank && k < sizeof shape; d++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, d ? "x%lld" : "%lld", (long long)t->dims[d]);
      mi__tune_log(cb, MI_TUNE_LOG_NOTE, "note: %s: input '%s' has dynamic dimension(s) %s, taken as 1: %s (set inputs: in the recipe to choose)",
                   model, t->name, dyn, shape);
    }
  }
  if ((rc = mi_graph_infer_shapes(g, err)) != MI_OK && defaulted) {
    char why[MI_ERROR_MESSAGE_SIZE];
    snprintf(why, sizeof why, "%s", err->message);
    mi_errorf(err, rc, "%s (dynamic dimensions were taken as 1: give the inputs' shapes under inputs: in the recipe)", why);
  }
  return rc;
}

/* What every (model, device) of one tune shares. */
typedef struct tune_ctx {
  const mi_tune_options_t *o;
  const mi_tune_callbacks_t *cb;
  const mi_recipe_t *r;
  mi_registry_t *reg;
  int32_t verify;
  int32_t jobs;
  int agents;          /* measurements go to the farm (tune_farm.c) */
  int no_ltasks;       /* search the whole cross product */
  const char *history; /* the recipe's history, or NULL */
  double timeout_s;    /* per measurement: the option, else measure.timeout_s */
  pthread_mutex_t next_lock;
  int32_t next; /* next device of the current model (parallel devices) */
  int32_t model;
  const mi_graph_t *graph;
  const char *inputs;
  char model_hash[17];
  char *features;
  mi_model_features_t mf; /* the current model's features (task descriptor) */
  mi_tune_run_t *runs;    /* this model's row of runs */
} tune_ctx_t;

static void shapes_text(const mi_graph_t *g, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int32_t i = 0; i < g->input_count && at < cap; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    at += (size_t)snprintf(buf + at, cap - at, "%s%s:", i ? ";" : "", t->name);
    for (int32_t d = 0; d < t->rank && at < cap; d++)
      at += (size_t)snprintf(buf + at, cap - at, d ? "x%lld" : "%lld", (long long)t->dims[d]);
  }
}

/* Re-measures every configuration of the front `n` times; counts those that break a bound. */
static void verify_front(mi_tune_task_t *task, mi_tune_run_t *run, const mi_search_options_t *o, int32_t n) {
  run->verify_bad = calloc((size_t)run->front_n + 1, sizeof *run->verify_bad);
  run->verify_failed = calloc((size_t)run->front_n + 1, sizeof *run->verify_failed);
  if (!run->verify_bad || !run->verify_failed) return;
  run->verify_n = n;
  for (int32_t k = 0; k < run->front_n; k++)
    for (int32_t i = 0; i < n; i++) {
      double obj[MI_OBJ_COUNT], viol = 0;
      mi_error_t e;
      for (int j = 0; j < MI_OBJ_COUNT; j++) obj[j] = NAN;
      if (mi_tune_evaluate(task, run->space, run->res->trials[run->front[k]].point, obj, &e) != MI_OK) {
        run->verify_failed[k]++;
        continue;
      }
      /* Only bounds on what was measured the first time: a figure the device never reports
       * is no violation now either. */
      for (int32_t b = 0; b < o->bound_count; b++) {
        int32_t col = o->bounds[b].objective;
        if (isfinite(run->res->trials[run->front[k]].objectives[col]) && !(obj[col] <= o->bounds[b].max)) viol = 1;
      }
      run->verify_bad[k] += viol > 0;
      mi__tune_progress(task, 0, "%-14s verifying %d/%d of %d front configurations",
                        task->spec, (int)(k * n + i + 1), (int)(run->front_n * n), (int)run->front_n);
    }
}

/* The measurement (1-based, among those made in this run) that found the best feasible value
 * of the first objective; 0 when none was feasible. */
static int32_t best_at(const mi_search_result_t *res, const mi_search_options_t *o) {
  int32_t at = 0, k = 0;
  double best = INFINITY;
  for (int32_t i = 0; i < res->count; i++) {
    const mi_trial_t *t = &res->trials[i];
    double v = 0, y = t->objectives[o->objectives[0]];
    if (t->from_history) continue;
    k++;
    mi_pareto_violation(t->objectives, 1, MI_OBJ_COUNT, o->bounds, o->bound_count, &v);
    if (t->status == MI_OK && v == 0 && y < best) {
      best = y;
      at = k;
    }
  }
  return at;
}

/* The surrogate-guided search, its priors loaded from the history's other tasks. */
static int32_t run_meta(tune_ctx_t *c, mi_tune_task_t *task, mi_tune_run_t *run,
                        const mi_search_options_t *o, const uint8_t *frozen, const int32_t *fixed,
                        mi_error_t *err) {
  mi_tune_sources_t src;
  mi_meta_options_t mo;
  mi_meta_report_t *rep = calloc(1, sizeof *rep);
  int32_t rc;
  if (!rep) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  if ((rc = mi_tune_sources_load_graph(task, run->space, &c->mf, c->graph, &src, err)) != MI_OK) {
    free(rep);
    return rc;
  }
  mi_meta_options_default(&mo);
  mo.graph = c->graph;
  mo.report = rep;
  mo.frozen = frozen;
  mo.fixed = fixed;
  mo.sources = src.tasks;
  mo.source_count = src.count;
  memcpy(mo.desc, src.desc, sizeof mo.desc);
  mo.stack_hash = strtoull(run->stack_hash, NULL, 16);
  /* Small budgets (the demo's 6) still get a few model-guided rounds. */
  if (o->max_measurements > 0 && o->max_measurements < 24) {
    mo.batch = o->max_measurements < 10 ? 2 : 4;
    mo.init_points = o->max_measurements < 10 ? 2 : 4;
    mo.warm_points = o->max_measurements < 10 ? 2 : 4;
    /* Room for one model-wide move per precision label after the default (measured plain and
     * with the layer tasks' kernels): the split moves and the per-layer greedy need them. */
    if (o->max_measurements >= 10) {
      int32_t labels = 0;
      for (int32_t d = 0; d < mi_space_dim_count(run->space); d++)
        if (mi__space_is_precision(run->space, d) && mi_space_dim_size(run->space, d) > labels)
          labels = mi_space_dim_size(run->space, d);
      if (labels + 1 > mo.init_points) mo.init_points = labels + 1;
    }
  }
  if (c->r->budget_measurements <= 64) mo.screen = 20000; /* 10^5 costs seconds per round */
  run->meta = 1;
  run->sources = src.count < mo.max_sources ? src.count : mo.max_sources;
  run->source_rows = src.rows;
  rc = mi_meta_search_run(run->space, o, &mo, &run->res, err);
  if (rc == MI_OK) {
    run->warm_points = rep->warm_points;
    run->cold_fallback = rep->cold_fallback;
    run->best_at = best_at(run->res, o);
    run->last_spearman = rep->rounds > 0 ? rep->spearman[rep->rounds - 1] : NAN;
    run->within5_at = rep->best_within5_at;
    run->cold_estimate = rep->cold_estimate;
    run->warm_trusted = rep->warm_trusted;
    run->layer_model = rep->layer_model;
    run->layer_rows = rep->layer_rows;
    run->layer_configs = src.layer_rows;
    run->layer_trials = rep->layer_trials;
    run->layer_weight = rep->rounds > 0 ? rep->layer_weight[rep->rounds - 1] : NAN;
    run->acc_screened = rep->acc_screened;
    run->split_moves = rep->split_moves;
    run->greedy_moves = rep->greedy_moves;
    run->greedy_trial = rep->greedy_best;
    run->device_moves = rep->device_moves;
    run->sens = task->sens; /* the run owns them from here */
    run->sens_count = task->sens_n;
    task->sens = NULL;
    task->sens_n = task->sens_cap = 0;
    task->search_on_time = rep->stopped_on_time;
  }
  mi_tune_sources_free(&src);
  free(rep);
  return rc;
}

/* Whether the device runs a depthwise conv and the pointwise conv reading it as one unit (a
 * Conv variant declares MI_FUSE_CONV): the layer tasks then take the pair as one task. */
static int fuses_conv(const mi_plugin_t *p, uint32_t dev) {
  mi_variant_desc_t *v = NULL;
  uint32_t n = 0, mask = 0;
  if (mi_plugin_variants(p, dev, &v, &n, NULL) != MI_OK) return 0;
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(v[i].op_type, "Conv", sizeof v[i].op_type) == 0) mask |= v[i].fuse_mask;
  free(v);
  return (mask & MI_FUSE_CONV) != 0;
}

static void tune_one(tune_ctx_t *c, int32_t d, mi_worker_pool_t *pool, mi_history_t *hist) {
  const mi_recipe_t *r = c->r;
  mi_tune_run_t *run = &c->runs[d];
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_space_options_t so;
  mi_search_options_t o;
  mi_tune_task_t task;
  mi_bound_t bounds[MI_OBJ_COUNT];
  int32_t objs[MI_OBJ_COUNT];
  mi_error_t err;
  mi_device_desc_t desc;
  mi_record_t base;
  char dhash[17], shapes[1024], fb_hash[17];
  uint8_t *frozen = NULL;
  int32_t *fixed = NULL;
  double search_t0;
  memset(&task, 0, sizeof task);
  memset(&base, 0, sizeof base);
  mi_error_clear(&err);
  task.cb = c->cb;
  task.line = d;
  /* The recipe's seconds hold for the whole (model, device) tune: the space's probes, the layer
   * tasks, the search and the paired check each take a share (mi__tune_share_search). */
  task.t_begin = mi_now_s();
  /* The end keeps 3% of the budget (at most 10 s) for what follows a measurement stopped there:
   * the worker's exit, the paired check's two rounds, the front, the history's and the outputs'
   * writes; and the process loaded the model before (isnet_quint8 ended at 300.4 s of 300 with
   * 2% and 5 s; then, its paired check without the reference run, the tune at 298.8 s and the
   * process at 300.35 s, 2026-12-06). */
  task.deadline =
      r->budget_seconds > 0 ? task.t_begin + r->budget_seconds - fmin(0.03 * r->budget_seconds, 10) : 0;
  run->time_budget_s = r->budget_seconds;
  /* A measurement in flight at the budget's end is stopped (the paired check, after, is not). */
  mi_worker_pool_set_deadline(pool, task.deadline);
  if (!(p = mi_registry_find(c->reg, r->pool[d].plugin)) || (uint32_t)r->pool[d].device >= p->device_count) {
    const char *why = mi_registry_refusal(c->reg, r->pool[d].plugin);
    /* A long refusal is cut: the line only has to say which device and why. */
    if (snprintf(run->message, sizeof run->message, "no device %s%s%.200s", run->spec,
                 why ? ": plugin refused at load: " : "", why ? why : "") >= (int)sizeof run->message)
      run->message[sizeof run->message - 2] = '.';
    goto done;
  }
  dev = (uint32_t)r->pool[d].device;
  mi_space_options_default(&so);
  so.model_dims = r->model_dims;
  /* kernel_prepare probes run in the device's worker: a plugin that crashes there fails this
   * device with the reason, not the whole tune. */
  so.probe_pool = pool;
  so.probe_spec = run->spec;
  so.probe_model = r->models[c->model].path;
  so.probe_inputs = c->inputs;
  mi__tune_progress(&task, 1, "%-14s building the joint space", run->spec);
  if (mi_plugin_device_info(p, dev, &desc, &err) != MI_OK) goto done;
  run->capacity = desc.global_memory_bytes;
  if (mi_space_create(c->graph, p, dev, &so, &run->space, &err) != MI_OK) goto done;
  run->pruned = mi_space_pruned_variants(run->space, &run->probes);
  mi_stack_describe(p->name, p->version, &desc, run->stack, sizeof run->stack, run->stack_hash);
  {
    /* The workers' fallback device (mi_registry_load_fallback: the option's, else the default
     * pick): rows whose sessions ran nodes there carry the stack with it, read back on resume. */
    mi_plugin_t *fbp = NULL;
    uint32_t fbd = 0;
    char fbtext[192], fbstack[768];
    const char *spec = c->o->fallback;
    mi_error_t ferr = {0};
    if (spec ? strcmp(spec, "ref") && mi_registry_device(c->reg, spec, &fbp, &fbd, &ferr) == MI_OK
             : mi_registry_cpu_fallback(c->reg, p, dev, &fbp, &fbd)) {
      mi_stack_fallback_describe(fbp, fbd, fbtext, sizeof fbtext);
      mi_stack_with_fallback(run->stack, fbtext, fbstack, sizeof fbstack, fb_hash);
      task.fb_stack_hash = fb_hash;
      snprintf(run->fallback, sizeof run->fallback, "%s:%u", fbp->name, (unsigned)fbd);
    } else
      snprintf(run->fallback, sizeof run->fallback, "ref");
  }
  mi_space_size_text(run->space, run->size, sizeof run->size);
  mi_device_hash(&desc, dhash);
  /* the workers' text: fixed values included, so rows at other values are other rows */
  snprintf(shapes, sizeof shapes, "%s", c->inputs);
  base.model_hash = c->model_hash;
  base.model_name = r->models[c->model].written;
  base.model_features_json = c->features;
  base.batch = c->graph->input_count ? c->graph->tensors[c->graph->inputs[0]].dims[0] : 1;
  base.input_shapes = shapes;
  base.device_spec = run->spec;
  base.device_name = desc.name;
  base.device_hash = dhash;
  base.stack = run->stack;
  base.stack_hash = run->stack_hash;
  task.recipe = r;
  task.model_path = r->models[c->model].path;
  task.inputs = c->inputs;
  task.spec = run->spec;
  task.graph = c->graph;
  task.pool = pool;
  task.repeats = r->repeats;
  task.warmup = r->warmup;
  task.history = hist;
  task.base = &base;
  task.best = INFINITY;
  if (hist && (mi_history_begin_run(hist, "mi-host tune", r->path, &task.run_id, &err) != MI_OK ||
               mi_tune_load_known(&task, &err) != MI_OK))
    goto done;
  mi__tune_log(c->cb, MI_TUNE_LOG_INFO, "%s: %s: joint space of %s configurations (%d variant(s) pruned after %d prepare probes)%s",
               run->model, run->spec, run->size, (int)run->pruned, (int)run->probes,
               task.known_count ? "; resuming from the history" : "");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.strategy = r->strategy ? mi_strategy_find(r->strategy) : MI_STRATEGY_META;
  o.seed = r->seed;
  o.max_measurements = r->budget_measurements;
  o.max_seconds = r->budget_seconds;
  o.population = r->population;
  /* An objective the device cannot report (energy without an energy counter) is dropped for
   * that device rather than making every configuration infeasible. */
  {
    mi_counter_desc_t *cs = NULL;
    uint32_t cn = 0;
    int energy = 0;
    if (mi_plugin_counters(p, dev, &cs, &cn, NULL) == MI_OK)
      for (uint32_t i = 0; i < cn; i++) energy |= cs[i].kind == MI_COUNTER_ENERGY;
    free(cs);
    for (int32_t j = 0; j < r->objective_count; j++)
      if (r->objectives[j] != MI_OBJ_ENERGY || energy) objs[o.objective_count++] = r->objectives[j];
    if (o.objective_count == 0) objs[o.objective_count++] = MI_OBJ_LATENCY;
  }
  o.objectives = objs;
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (r->has_bound[k]) {
      bounds[o.bound_count].objective = k;
      bounds[o.bound_count++].max = r->bound[k];
    }
  o.bounds = bounds;
  o.evaluate = c->agents ? mi_tune_farm_evaluate : mi_tune_evaluate;
  o.evaluate_ctx = &task;
  o.lookup_point = mi_tune_lookup;
  o.lookup_ctx = &task;
  o.layer_times = mi_tune_layer_times; /* per-layer times of each measurement, for the surrogate */
  o.layer_times_ctx = &task;
  o.drops = mi_tune_drops; /* each block's own drop, for the precision greedy's order */
  o.drops_ctx = &task;
  o.progress = mi__tune_progress_trial;
  o.progress_ctx = &task;
  task.first_objective = objs[0];
  task.objective_count = o.objective_count;
  task.bounds = bounds;
  task.bound_count = o.bound_count;
  task.budget = r->budget_measurements;
  task.search = &o;
  if (r->budget_measurements == 0 || mi_tune_stop_search(&task)) goto done;
  if (!c->agents) mi__tune_reference(&task, run->space); /* once, before any measurement */
  if (o.strategy == MI_STRATEGY_META && !c->agents && !c->no_ltasks) {
    /* Layer tasks first: each distinct workload's kernel choice from per-layer times (or the
     * history), then the joint search over model-side choices x device-level knobs. */
    if (mi_tune_ltasks(&task, run, c->graph, dhash, 0, fuses_conv(p, dev), &frozen, &fixed, &err) != MI_OK) goto done;
    if (fixed) {
      /* The rounds' measurements are in the history: the default replays from there. */
      if (mi_tune_reload_known(&task, &err) != MI_OK) goto done;
      if (run->ltask_rounds > 0 && o.max_measurements > run->ltask_rounds) o.max_measurements -= run->ltask_rounds - 1;
      mi__tune_log(c->cb, MI_TUNE_LOG_INFO,
                   "%s: %s: space: model-side 10^%.0f x device-level 10^%.0f, %d layer tasks on %d nodes "
                   "(their kernel choices, 10^%.0f as a cross product, tuned per task): %d from the history, %d measured "
                   "(%d warm-started from the nearest measured tasks, %d of them on the choice their neighbours agreed on; "
                   "%d cold) with %d layer measurements in %d whole-model runs (%d of them for the warm-started), "
                   "against %d layer measurements for a run with no history; %d tasks run better than by default "
                   "(the knob stage: %d rounds, %d layer measurements, %d tasks faster)",
                   run->model, run->spec, run->ltask_log10_model, run->ltask_log10_device, (int)run->ltasks,
                   (int)run->ltask_nodes, run->ltask_log10_kernel, (int)run->ltask_reused, (int)run->ltask_measured,
                   (int)run->ltask_warm, (int)run->ltask_agreed, (int)run->ltask_cold,
                   (int)run->ltask_layer_measurements, (int)run->ltask_rounds, (int)run->ltask_warm_layer_measurements,
                   (int)run->ltask_cold_run_layer_measurements, (int)run->ltask_improved,
                   (int)run->ltask_knob_rounds, (int)run->ltask_knob_measurements, (int)run->ltask_knob_improved);
    }
  }
  mi__tune_share_search(&task, &o);
  search_t0 = mi_now_s();
  if (o.strategy == MI_STRATEGY_META) {
    if (run_meta(c, &task, run, &o, frozen, fixed, &err) != MI_OK) goto done;
  } else if (mi_search_run(run->space, &o, &run->res, &err) != MI_OK) {
    goto done;
  }
  /* Measurements the search's seconds left out of its count (not when it ended for other reasons:
   * a caller's stop also ends it by spending its seconds, mi_tune_stop_search). */
  if (task.deadline > 0 && o.max_measurements > 0 && !mi__tune_stopping(c->cb) &&
      (task.search_on_time || mi_now_s() - search_t0 >= o.max_seconds) &&
      run->res->measured + run->res->replayed < o.max_measurements)
    run->cut_search = (int32_t)(o.max_measurements - run->res->measured - run->res->replayed);
  run->front = malloc(((size_t)run->res->count + 1) * sizeof *run->front);
  if (!run->front) goto done;
  run->front_n = mi_search_front(run->res, &o, r->preference, r->preference_count, run->front);
  if (r->objective_count <= 3 && run->front_n > 0) {
    /* Reference point: the worst value of each objective over the successful trials, +10%. */
    double ref[MI_OBJ_COUNT], *pts = malloc((size_t)run->front_n * MI_OBJ_COUNT * sizeof *pts);
    for (int32_t j = 0; j < o.objective_count; j++) {
      ref[j] = 0;
      for (int32_t i = 0; i < run->res->count; i++)
        if (run->res->trials[i].status == MI_OK && isfinite(run->res->trials[i].objectives[objs[j]]))
          ref[j] = fmax(ref[j], run->res->trials[i].objectives[objs[j]] * 1.1);
    }
    if (pts) {
      for (int32_t i = 0; i < run->front_n; i++)
        for (int32_t j = 0; j < o.objective_count; j++)
          pts[i * o.objective_count + j] = run->res->trials[run->front[i]].objectives[objs[j]];
      run->hv = mi_pareto_hypervolume(pts, run->front_n, o.objective_count, ref, 1, 0);
      free(pts);
    }
  }
  if (run->meta && (run->layer_model || run->layer_trials > 0))
    mi__tune_log(c->cb, MI_TUNE_LOG_INFO,
                 "%s: %s: per-layer model: %s %d layer rows from %d configurations of this model on other devices; "
                 "%d of this run's measurements came with per-layer times; its weight in the last round %.2f",
                 run->model, run->spec, run->layer_model ? "built on" : "not built (no per-layer history):", (int)run->layer_rows,
                 (int)run->layer_configs, (int)run->layer_trials, isnan(run->layer_weight) ? 0.0 : run->layer_weight);
  if (run->meta && (run->acc_screened > 0 || run->split_moves > 0 || run->greedy_moves > 0))
    mi__tune_log(c->cb, MI_TUNE_LOG_INFO,
                 "%s: %s: accuracy screen: %d candidate scorings predicted over the accuracy bound were not "
                 "measured; %d split moves (blocks of layers at the fastest lossy precision) and %d per-layer "
                 "precision greedy steps measured",
                 run->model, run->spec, (int)run->acc_screened, (int)run->split_moves, (int)run->greedy_moves);
  if (run->meta && run->device_moves > 0)
    mi__tune_log(c->cb, MI_TUNE_LOG_INFO, "%s: %s: %d device-level moves measured on the best point (its global knobs one at a time)",
                 run->model, run->spec, (int)run->device_moves);
  if (run->meta) {
    if (run->warm_points > 0) {
      /* The saving as docs/meta.md defines it: a cold random search's expected count to come
       * within 5% of this run's best (estimated on the surrogate) minus this run's count. */
      char saved[320] = "saving unknown (no surrogate fitted)";
      int32_t budget = r->budget_measurements, k = run->within5_at;
      if (!run->warm_trusted) {
        snprintf(saved, sizeof saved,
                 "warm start saved nothing (its configurations measured worse than the cold design's, so "
                 "the history was dropped as misleading and the search went on cold)");
      } else if (k > 0 && budget > 0 && !(run->cold_estimate <= budget)) {
        /* Beyond the budget the estimate is a bound, not a count (NAN excluded below). */
        if (!isnan(run->cold_estimate))
          snprintf(saved, sizeof saved,
                   "warm start saved at least %d measurements (a cold random search needs more than "
                   "the budget of %d to come within 5%% of this best, estimated on the surrogate; this run took %d)",
                   (int)(budget - k), (int)budget, (int)k);
      } else if (k > 0 && isfinite(run->cold_estimate)) {
        double sv = run->cold_estimate - k;
        char amount[64] = "nothing measurable";
        if (sv >= 0.5) snprintf(amount, sizeof amount, "about %.0f measurements", sv);
        snprintf(saved, sizeof saved,
                 "warm start saved %s (a cold random search needs about %.0f to come within 5%% of this best, "
                 "estimated on the surrogate: 1-3x the truth on the search benchmark; this run took %d)",
                 amount, run->cold_estimate, (int)k);
      }
      mi__tune_log(c->cb, MI_TUNE_LOG_INFO,
                   "%s: %s: warm start: %d of %d measurements were configurations of %d similar past task(s) "
                   "in the history (%d configurations offered)%s; best %s found at measurement %d; %s",
                   run->model, run->spec, (int)run->warm_points, (int)run->res->measured, (int)run->sources,
                   (int)run->source_rows, run->cold_fallback ? ", later dropped as misleading (cold fallback)" : "",
                   mi_objective_name(objs[0], NULL), (int)run->best_at, saved);
    } else
      mi__tune_log(c->cb, MI_TUNE_LOG_INFO, "%s: %s: cold start (no similar task on this software stack in the history); best %s found at measurement %d of %d",
                   run->model, run->spec, mi_objective_name(objs[0], NULL), (int)run->best_at, (int)run->res->measured);
  }
  if (task.paired_n > 0) {
    run->paired = task.paired_n;
    run->paired_first_ms = task.anchor_ref_s * 1e3;
    run->paired_min_ms = task.paired_min_s * 1e3;
    run->paired_max_ms = task.paired_max_s * 1e3;
    mi__tune_log(c->cb, MI_TUNE_LOG_INFO,
                 "%s: %s: paired trials: the default read %.4g-%.4g ms beside the %d measurements (%.2fx apart; "
                 "%.4g ms at the first paired record, which every trial's latency is scaled to)",
                 run->model, run->spec, run->paired_min_ms, run->paired_max_ms, (int)run->paired,
                 run->paired_max_ms / run->paired_min_ms, run->paired_first_ms);
  }
  if (task.retaken > 0) {
    run->retaken = task.retaken;
    run->retakes = task.retakes;
    run->retake_s = task.retake_s;
    mi__tune_log(c->cb, MI_TUNE_LOG_INFO,
                 "%s: %s: slow phases: %d measurements taken again (%d more takes, %.1f s) because the default "
                 "beside them ran over %gx its fastest of the last %g s, or to find that floor at the first; "
                 "each kept its take beside the fastest default",
                 run->model, run->spec, (int)run->retaken, (int)run->retakes, run->retake_s, MI__TUNE_PHASE_RATIO,
                 MI__TUNE_PHASE_WINDOW_S);
  }
  /* The choice against the default and the runner-up in paired rounds (farm measurements ran
   * elsewhere: not here). */
  mi_worker_pool_set_deadline(pool, 0);
  if (!c->agents && run->front_n > 0 && !mi__tune_stopping(c->cb)) {
    char line[640];
    mi_tune_confirm(&task, run, r->preference_count ? r->preference[0] : r->objectives[0], 0);
    mi_tune_confirm_text(run, line, sizeof line);
    if (line[0]) mi__tune_log(c->cb, MI_TUNE_LOG_INFO, "%s: %s: %s", run->model, run->spec, line);
  }
  if (c->verify > 0 && run->front_n > 0 && !mi__tune_stopping(c->cb)) verify_front(&task, run, &o, c->verify);
  run->time_used_s = mi_now_s() - task.t_begin;
  mi__tune_time_note(c->cb, run);
  run->energy_modeled = task.energy_modeled;
  run->ok = 1;
  mi__tune_progress(&task, 1, "%-14s done: %d measured, %d from the history, front of %d%s",
                    run->spec, (int)run->res->measured, (int)run->res->replayed, (int)run->front_n,
                    mi_worker_quarantined(pool, run->spec) ? " (device quarantined)" : "");
done:
  mi_worker_pool_set_deadline(pool, 0);
  mi_space_detach_pool(run->space);                  /* the space outlives this thread's workers */
  if (run->ok && mi_space_ask_failure(run->space)) { /* its plugin failed on a question */
    run->ok = 0;
    snprintf(run->message, sizeof run->message, "%s", mi_space_ask_failure(run->space));
  }
  run->recorded = task.recorded;
  if (!run->ok) {
    if (!run->message[0]) snprintf(run->message, sizeof run->message, "%s", err.message);
    mi__tune_progress(&task, 1, "%-14s failed: %s", run->spec, run->message);
  } else if (mi_tune_succeeded(run) == 0 && run->res && run->res->count > 0) {
    mi__tune_progress(&task, 1, "%-14s every measurement failed (%d)%s", run->spec,
                      (int)run->res->count, mi_worker_quarantined(pool, run->spec) ? "; device quarantined" : "");
  }
  mi__tune_reference_drop(&task);
  mi_tune_free_known(&task);
  free(frozen);
  free(fixed);
}

/* One thread: takes the next device of the current model until none is left. Each thread has
 * its own workers and its own connection to the history (SQLite in WAL mode). */
static void *device_thread(void *arg) {
  tune_ctx_t *c = arg;
  mi_worker_options_t wo;
  mi_worker_pool_t *pool = NULL;
  mi_history_t *hist = NULL;
  mi_error_t err;
  mi_error_clear(&err);
  mi_worker_options_default(&wo);
  /* The workers load plugins from exactly where the caller's registry did (mi_plugin_path). */
  wo.plugin_dirs = c->o->plugin_path;
  wo.timeout_s = c->timeout_s;
  wo.fallback = c->o->fallback;
  if (mi_worker_pool_create(&wo, &pool, &err) != MI_OK ||
      (c->history && mi_history_open(c->history, &hist, &err) != MI_OK)) {
    /* Every device this thread would have taken fails with the reason. */
    pthread_mutex_lock(&c->next_lock);
    while (c->next < c->r->device_count)
      snprintf(c->runs[c->next++].message, sizeof c->runs[0].message, "%s", err.message);
    pthread_mutex_unlock(&c->next_lock);
    mi_worker_pool_destroy(pool);
    return NULL;
  }
  for (;;) {
    int32_t d;
    pthread_mutex_lock(&c->next_lock);
    d = c->next < c->r->device_count && !mi__tune_stopping(c->cb) ? c->next++ : -1;
    pthread_mutex_unlock(&c->next_lock);
    if (d < 0) break;
    tune_one(c, d, pool, hist);
  }
  mi_history_close(hist);
  mi_worker_pool_destroy(pool);
  return NULL;
}

static void tune_model(tune_ctx_t *c) {
  pthread_t th[16];
  int32_t n = c->jobs < c->r->device_count ? c->jobs : c->r->device_count, started = 0;
  c->next = 0;
  if (n > 16) n = 16;
  for (int32_t i = 1; i < n; i++)
    if (pthread_create(&th[started], NULL, device_thread, c) == 0) started++;
  device_thread(c);
  for (int32_t i = 0; i < started; i++) pthread_join(th[i], NULL);
}

MI_API void mi_tune_options_default(mi_tune_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->jobs = 1;
}

MI_API void mi_tune_result_destroy(mi_tune_result_t *res) {
  if (!res) return;
  for (int32_t i = 0; res->runs && i < res->count; i++) {
    mi_space_destroy(res->runs[i].space);
    mi_search_result_destroy(res->runs[i].res);
    free(res->runs[i].front);
    free(res->runs[i].verify_bad);
    free(res->runs[i].verify_failed);
    free(res->runs[i].sens);
  }
  free(res->runs);
  for (int32_t m = 0; res->graphs && m < res->model_count; m++) mi_graph_destroy(res->graphs[m]);
  free(res->graphs);
  free(res);
}

static void waiting(const mi_tune_callbacks_t *cb, int32_t line, const char *spec) {
  char text[160];
  if (!cb || !cb->progress) return;
  snprintf(text, sizeof text, "%-14s waiting", spec);
  cb->progress(cb->user, line, 0, text);
}

MI_API int32_t mi_tune_run(const mi_recipe_t *r, const mi_tune_options_t *opts,
                           const mi_tune_callbacks_t *cb, mi_tune_result_t **out, mi_error_t *err) {
  mi_tune_options_t o;
  mi_tune_callbacks_t cbs;
  mi_tune_result_t *res = NULL;
  tune_ctx_t c;
  int32_t rc = MI_OK, n = 0;
  if (out) *out = NULL;
  if (!r || !opts || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_tune_run: NULL argument");
  /* Each side reads only what the other declared (docs/abi.md's rule, kept here too). */
  mi_tune_options_default(&o);
  memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
  memset(&cbs, 0, sizeof cbs);
  if (cb) memcpy(&cbs, cb, cb->struct_size < sizeof cbs ? cb->struct_size : sizeof cbs);
  if (!o.registry) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_tune_run: no plugin registry");
  if (o.agents && !mi_history_is_url(r->history))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "tune with agents needs a postgresql:// history in the recipe");
  memset(&c, 0, sizeof c);
  c.o = &o;
  c.cb = &cbs;
  c.r = r;
  c.reg = o.registry;
  c.verify = o.verify;
  c.jobs = o.jobs < 1 ? 1 : o.jobs;
  c.agents = o.agents;
  c.no_ltasks = o.no_layer_tasks;
  c.history = r->history;
  c.timeout_s = o.timeout_s > 0 ? o.timeout_s : r->timeout_s;
  if (!(res = calloc(1, sizeof *res)) ||
      !(res->runs = calloc((size_t)r->model_count * (size_t)r->device_count + 1, sizeof *res->runs)) ||
      !(res->graphs = calloc((size_t)r->model_count + 1, sizeof *res->graphs))) {
    mi_tune_result_destroy(res);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  }
  res->model_count = r->model_count;
  pthread_mutex_init(&c.next_lock, NULL);
  for (int32_t m = 0; m < r->model_count; m++) {
    char inputs[2048] = "";
    mi_model_features_t f;
    mi_graph_t **g = &res->graphs[m];
    if ((rc = mi_onnx_load(r->models[m].path, g, err)) != MI_OK ||
        (rc = set_inputs(*g, r, r->models[m].written, &cbs, err)) != MI_OK ||
        (rc = mi_graph_toposort(*g, err)) != MI_OK || (rc = mi_file_hash(r->models[m].path, c.model_hash, err)) != MI_OK)
      break;
    /* The workers get every input's concrete shape, the defaulted dynamic ones included, and
     * the recipe's fixed values ("sr={16000}"): the inputs become constants, and an If they
     * decide is replaced by its branch here as in every worker (mi_graph_inline_ifs), so the
     * space spans the branch's nodes; then the constants are folded (mi_graph_make_static, as
     * every worker and mi-run prepare the model): a weight computed from constants is an
     * initializer, so its layer gets precision choices, and nodes computed before run time get
     * no dimension. */
    shapes_text(*g, inputs, sizeof inputs);
    {
      char vals[2048] = "";
      size_t at = 0, end = strlen(inputs);
      int32_t inlined = 0;
      mi_recipe_values_text(r, vals, sizeof vals, &at);
      mi_recipe_values_text(r, inputs, sizeof inputs, &end);
      if ((vals[0] && ((rc = mi_graph_set_input_shapes(*g, vals, "values", err)) != MI_OK ||
                       (rc = mi_graph_infer_shapes(*g, err)) != MI_OK)) ||
          (rc = mi_graph_inline_ifs(*g, &inlined, err)) != MI_OK ||
          (rc = mi_graph_fold_constants(*g, NULL, err)) != MI_OK)
        break;
      if (inlined)
        mi__tune_log(&cbs, MI_TUNE_LOG_NOTE, "note: %s: %d If node(s) replaced by the branch their condition takes%s%s", r->models[m].written,
                     (int)inlined, vals[0] ? " with the values " : "", vals);
    }
    free(c.features);
    memset(&f, 0, sizeof f);
    c.features = mi_model_features(*g, &f, NULL, NULL, NULL) == MI_OK ? mi_model_features_json(&f) : NULL;
    c.mf = f;
    c.model = m;
    c.graph = *g;
    c.inputs = inputs;
    c.runs = &res->runs[n];
    for (int32_t d = 0; d < r->device_count; d++) {
      mi_tune_run_t *run = &res->runs[n++];
      run->model = r->models[m].written;
      run->graph = *g;
      run->model_index = m;
      run->greedy_trial = -1;
      snprintf(run->spec, sizeof run->spec, "%s:%d", r->pool[d].plugin, (int)r->pool[d].device);
      waiting(&cbs, d, run->spec);
    }
    res->count = n;
    if (cbs.model) cbs.model(cbs.user, m, r->model_count, r->models[m].written, r->device_count);
    tune_model(&c);
    if ((res->stopped = mi__tune_stopping(&cbs))) break;
  }
  pthread_mutex_destroy(&c.next_lock);
  free(c.features);
  if (rc != MI_OK) {
    mi_tune_result_destroy(res);
    return rc;
  }
  if (!res->stopped) mi_tune_assign(r, res->runs, res->count);
  *out = res;
  return MI_OK;
}
