/* cmd_tune.c - mi-host tune RECIPE: the joint search per (model, device) of a recipe, with a
 * deployment table, Pareto fronts as JSON and SVG, and an offline HTML report. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tune.h"


typedef struct {
  int tty, json;
  const char *spec;
} progress_t;

static void progress(void *ctx, const mi_trial_t *t, int32_t used, int64_t budget, double el) {
  progress_t *p = ctx;
  double eta = used > 0 ? el / used * (double)(budget - used) : 0;
  if (p->json) return;
  if (p->tty)
    fprintf(stderr, "\r%-24s %3d/%-3lld  last %8.3f ms  eta %5.0f s ", p->spec, used, (long long)budget,
            t->objectives[MI_OBJ_LATENCY], eta);
  else
    fprintf(stderr, "tune: %s: %d/%lld %s%s %s\n", p->spec, used, (long long)budget,
            t->status == MI_OK ? "ok" : "failed", t->from_history ? " (history)" : "",
            t->status == MI_OK ? "" : t->message);
}

static int32_t set_inputs(mi_graph_t *g, const mi_recipe_t *r, mi_error_t *err) {
  for (int32_t i = 0; i < r->input_count; i++) {
    int32_t t = mi_graph_find_tensor(g, r->inputs[i].name);
    if (t < 0) return mi_errorf(err, MI_ERR_NOT_FOUND, "%s: the model has no input '%s'", r->path, r->inputs[i].name);
    g->tensors[t].rank = r->inputs[i].rank;
    memcpy(g->tensors[t].dims, r->inputs[i].dims, sizeof r->inputs[i].dims);
  }
  return mi_graph_infer_shapes(g, err);
}

static void tune_one(mi_host_t *h, const mi_recipe_t *r, const mi_graph_t *g, mi_plugin_t *p,
                     uint32_t dev, mi_tune_run_t *run) {
  mi_space_options_t so;
  mi_search_options_t o;
  mi_tune_task_t task;
  mi_bound_t bounds[MI_OBJ_COUNT];
  int32_t objs[MI_OBJ_COUNT];
  progress_t pr = {isatty(2), h->json, run->spec};
  mi_error_t err;
  mi_device_desc_t desc;
  memset(&task, 0, sizeof task);
  mi_error_clear(&err);
  mi_space_options_default(&so);
  so.model_dims = r->model_dims;
  if (mi_plugin_device_info(p, dev, &desc, &err) != MI_OK ||
      mi_space_create(g, p, dev, &so, &run->space, &err) != MI_OK ||
      mi_plugin_variants(p, dev, &task.variants, &task.variant_count, &err) != MI_OK ||
      mi_xf_samples_random(g, 2, r->seed, &task.samples, &err) != MI_OK)
    goto done;
  mi_stack_describe(p->name, p->version, &desc, run->stack, sizeof run->stack, run->stack_hash);
  mi_space_size_text(run->space, run->size, sizeof run->size);
  if (!h->json) fprintf(stderr, "tune: %s: %s: joint space of %s configurations\n", run->model, run->spec, run->size);
  task.graph = g;
  task.plugin = p;
  task.device = dev;
  task.repeats = r->repeats;
  task.warmup = r->warmup;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.strategy = r->strategy ? mi_strategy_find(r->strategy) : MI_STRATEGY_NSGA2;
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
      else if (!h->json) fprintf(stderr, "tune: %s: no energy counter: energy is not an objective here\n", run->spec);
    if (o.objective_count == 0) objs[o.objective_count++] = MI_OBJ_LATENCY;
  }
  o.objectives = objs;
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (r->has_bound[k]) {
      bounds[o.bound_count].objective = k;
      bounds[o.bound_count++].max = r->bound[k];
    }
  o.bounds = bounds;
  o.evaluate = mi_tune_evaluate;
  o.evaluate_ctx = &task;
  o.progress = progress;
  o.progress_ctx = &pr;
  if (r->budget_measurements == 0 || mi_search_run(run->space, &o, &run->res, &err) != MI_OK) goto done;
  if (pr.tty && !h->json) fputc('\n', stderr);
  run->front = malloc(((size_t)run->res->count + 1) * sizeof *run->front);
  if (!run->front) goto done;
  run->front_n = mi_search_front(run->res, &o, r->preference, r->preference_count, run->front);
  run->energy_modeled = task.energy_modeled;
  if (r->objective_count <= 3 && run->front_n > 0) {
    /* Reference point: the worst value of each objective over the successful trials, +10%. */
    double ref[MI_OBJ_COUNT], *pts = malloc((size_t)run->front_n * MI_OBJ_COUNT * sizeof *pts);
    for (int32_t j = 0; j < r->objective_count; j++) {
      ref[j] = 0;
      for (int32_t i = 0; i < run->res->count; i++)
        if (run->res->trials[i].status == MI_OK && isfinite(run->res->trials[i].objectives[r->objectives[j]]))
          ref[j] = fmax(ref[j], run->res->trials[i].objectives[r->objectives[j]] * 1.1);
    }
    if (pts) {
      for (int32_t i = 0; i < run->front_n; i++)
        for (int32_t j = 0; j < r->objective_count; j++)
          pts[i * r->objective_count + j] = run->res->trials[run->front[i]].objectives[r->objectives[j]];
      run->hv = mi_pareto_hypervolume(pts, run->front_n, r->objective_count, ref, 1, 0);
      free(pts);
    }
  }
  run->ok = 1;
done:
  if (!run->ok) snprintf(run->message, sizeof run->message, "%s", err.message);
  free(task.variants);
  mi_xf_samples_destroy(task.samples);
}

int mi_host_cmd_tune(mi_host_t *h, int argc, char **argv) {
  const char *recipe_path = NULL, *out = NULL;
  mi_registry_t *reg;
  mi_recipe_t *r = NULL;
  mi_error_t err;
  mi_tune_run_t *runs = NULL;
  mi_graph_t **graphs = NULL;
  int32_t n = 0, rc = MI_HOST_FAIL;
  char outbuf[4096];
  long long seed = -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
      char *end;
      seed = strtoll(argv[++i], &end, 10);
      if (*end || seed < 0) return mi_host_usage_error("--seed needs a non-negative integer");
    } else if (!strcmp(argv[i], "--json")) h->json = 1;
    else if (argv[i][0] == '-') return mi_host_usage_error("tune: unknown option '%s'", argv[i]);
    else if (!recipe_path) recipe_path = argv[i];
    else return mi_host_usage_error("tune: one recipe at a time");
  }
  if (!recipe_path) return mi_host_usage_error("tune needs a recipe: mi-host tune RECIPE [--out DIR] [--seed S]");
  if (!(reg = mi_host_registry(h))) return MI_HOST_FAIL;
  if (mi_recipe_load(recipe_path, reg, &r, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    return MI_HOST_USAGE;
  }
  if (seed >= 0) r->seed = (uint64_t)seed;
  if (!out) {
    snprintf(outbuf, sizeof outbuf, "%s/tune-out", r->dir);
    out = outbuf;
  }
  if (mkdir(out, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "mi-host: cannot create %s: %s\n", out, strerror(errno));
    goto done;
  }
  runs = calloc((size_t)r->model_count * (size_t)r->device_count + 1, sizeof *runs);
  if (!runs) goto done;
  graphs = calloc((size_t)r->model_count + 1, sizeof *graphs);
  if (!graphs) goto done;
  for (int32_t m = 0; m < r->model_count; m++) {
    if (mi_onnx_load(r->models[m].path, &graphs[m], &err) != MI_OK || set_inputs(graphs[m], r, &err) != MI_OK) {
      fprintf(stderr, "mi-host: %s\n", err.message);
      goto done;
    }
    for (int32_t d = 0; d < r->device_count; d++) {
      mi_tune_run_t *run = &runs[n++];
      mi_plugin_t *p = mi_registry_find(reg, r->pool[d].plugin);
      run->model = r->models[m].written;
      snprintf(run->spec, sizeof run->spec, "%s:%d", r->pool[d].plugin, (int)r->pool[d].device);
      if (!p || (uint32_t)r->pool[d].device >= p->device_count) {
        snprintf(run->message, sizeof run->message, "no device %s", run->spec);
        continue;
      }
      tune_one(h, r, graphs[m], p, (uint32_t)r->pool[d].device, run);
      if (!run->ok && !h->json) fprintf(stderr, "tune: %s: %s: %s\n", run->model, run->spec, run->message);
    }
  }
  if ((rc = mi_tune_write(r, out, runs, n, h->json)) != MI_HOST_OK) goto done;
  rc = MI_HOST_OK;
done:
  for (int32_t i = 0; runs && i < n; i++) {
    mi_space_destroy(runs[i].space);
    mi_search_result_destroy(runs[i].res);
    free(runs[i].front);
  }
  free(runs);
  for (int32_t m = 0; graphs && m < r->model_count; m++) mi_graph_destroy(graphs[m]);
  free(graphs);
  mi_recipe_destroy(r);
  return rc;
}
