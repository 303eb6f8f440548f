/* runtime.c - the deployment runtime: open a table for one (model, device), run inferences while
 * the drift monitor watches their latency, release. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "deploy/deploy_internal.h"

void mi_runtime_options_default(mi_runtime_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->stack_policy = MI_STACK_USE;
  o->monitor = 1;
  o->adapt_budget = 4;
  o->adapt_repeats = 5;
  o->write_table = 1;
  o->seed = 1;
}

int32_t mi_stack_policy_find(const char *name) {
  static const char *const names[] = {"use", "revalidate", "refuse"};
  for (int32_t i = 0; name && i < 3; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

void mi__rt_step(const mi_runtime_t *rt, const char *step) {
  if (rt->o.on_step) rt->o.on_step(rt->o.step_user, rt->spec, step);
}

void mi__rt_log(mi_runtime_t *rt, const char *event, const char *fmt, ...) {
  struct timespec ts;
  va_list ap;
  FILE *f;
  if (!rt->log_path) return;
  if (!(f = fopen(rt->log_path, "a"))) return;
  clock_gettime(CLOCK_REALTIME, &ts);
  fprintf(f,
          "{\"ts\":%.3f,\"event\":\"%s\",\"model\":\"%s\",\"device\":\"%s\",\"run\":%d,"
          "\"config_id\":\"%s\"",
          (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9, event, rt->info.model, rt->info.device,
          (int)rt->info.runs, rt->info.config_id);
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputs("}\n", f);
  fclose(f);
}

static char *path_join(const char *dir, const char *p) {
  size_t n;
  char *out;
  if (p[0] == '/') return strdup(p);
  n = strlen(dir) + strlen(p) + 2;
  if ((out = malloc(n))) snprintf(out, n, "%s/%s", dir, p);
  return out;
}

static int exists(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0;
}

/* Model file, inputs, calibration and bounds: from the recipe when one can be read, else from
 * the table's own keys (a table rewritten by the runtime carries them). */
static int32_t resolve_task(mi_runtime_t *rt, mi_error_t *err) {
  const mi_deploy_table_t *t = rt->table;
  const mi_deploy_entry_t *e = &t->entries[rt->entry];
  const char *rp = rt->o.recipe ? rt->o.recipe : t->recipe;
  mi_recipe_t *r = NULL;
  int32_t rc = MI_OK;
  char *cand = NULL;
  rt->model_dims = MI_SPACE_MODEL_ALL;
  rt->calib_seed = 1;
  if (rp) {
    /* A recipe path as written at tuning time is relative to where mi-host ran; try the
     * table's folder too. */
    cand = exists(rp) ? strdup(rp) : path_join(t->dir, rp);
    if (cand && exists(cand) && (rc = mi_recipe_load(cand, NULL, &r, err))) goto done;
    if (!r && rt->o.recipe) {
      rc = mi_errorf(err, MI_ERR_NOT_FOUND, "runtime: recipe %s not found", rp);
      goto done;
    }
  }
  if (r) {
    for (int32_t i = 0; i < r->model_count && !rt->model_path; i++)
      if (strcmp(r->models[i].written, e->model) == 0) rt->model_path = strdup(r->models[i].path);
    if (r->calibration) rt->calibration = strdup(r->calibration);
    rt->calib_seed = r->seed;
    rt->model_dims = r->model_dims;
    for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
      rt->has_bound[k] = r->has_bound[k];
      rt->bound[k] = r->bound[k];
    }
    if (r->input_count > 0 || r->value_count > 0) {
      char buf[2048];
      mi_recipe_inputs_text(r, buf, sizeof buf); /* shapes, then fixed values */
      rt->inputs = strdup(buf);
    }
  }
  /* The table's own keys win over the recipe: they are what the runtime last decided. */
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (t->has_bound[k]) {
      rt->has_bound[k] = 1;
      rt->bound[k] = t->bound[k];
    }
  if (t->inputs) {
    free(rt->inputs);
    rt->inputs = strdup(t->inputs);
  }
  if (!rt->model_path) rt->model_path = path_join(t->dir, e->model);
  if (!rt->model_path) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
done:
  free(cand);
  mi_recipe_destroy(r);
  return rc;
}

static int32_t load_model(mi_runtime_t *rt, mi_error_t *err) {
  int32_t rc;
  if ((rc = mi_onnx_load(rt->model_path, &rt->graph, err))) return rc;
  if (rt->inputs && (rc = mi_graph_set_input_shapes(rt->graph, rt->inputs, "table inputs", err)))
    return rc;
  /* A dynamic dimension left open would let no variant prepare and fail later as an unknown
   * configuration key: say here where the shapes were looked for. */
  for (int32_t i = 0; i < rt->graph->input_count; i++) {
    const mi_tensor_t *t = &rt->graph->tensors[rt->graph->inputs[i]];
    if (mi_tensor_dynamic_dim(t) >= 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "runtime: %s: input '%s' has a dynamic dimension and %s gives no input "
                       "shapes (its recipe %s%s); add them to the table as inputs: \"NAME:1x3x32x32\"",
                       rt->model_path, t->name, rt->table_path,
                       rt->table->recipe ? rt->table->recipe : "is not named",
                       rt->table->recipe ? " was not found from here or the table's folder" : "");
  }
  /* Fixed values ("sr={16000}" in the inputs) made constants: their Ifs become the branch the
   * tuner's space had and constants are folded as there (mi_graph_make_static, tune_run.c), so
   * the configuration's node choices fit and the run is the one the tuner measured. */
  if ((rc = mi_graph_make_static(rt->graph, NULL, err))) return rc;
  /* Same samples as the tuner's worker: the recipe's folder, or 2 seeded random ones. */
  return rt->calibration ? mi_xf_samples_load_dir(rt->graph, rt->calibration, &rt->samples, err)
                         : mi_xf_samples_random(rt->graph, 2, rt->calib_seed, &rt->samples, err);
}

/* A table is a contract: a configuration that names a key or a value this space does not have
 * (an unknown knob, a value out of its domain, written by hand with its config_id recomputed)
 * is not something tune measured here. Running a fallback or the defaults under the table's
 * name would run something else than it says: the table is refused, naming the configuration
 * and the key. A configuration that parses but cannot be instantiated still falls back. */
static int32_t check_configs(mi_runtime_t *rt, const mi_deploy_entry_t *e, mi_error_t *err) {
  int32_t *pt = calloc((size_t)mi_space_dim_count(rt->space) + 1, sizeof *pt), rc = MI_OK;
  if (!pt) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
  for (int32_t k = 0; k < e->config_count && rc == MI_OK; k++) {
    char *text = mi_deploy_config_text(&e->configs[k]);
    mi_error_t e2;
    mi_error_clear(&e2);
    if (!text) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    else if (mi_space_parse(rt->space, text, pt, &e2) != MI_OK)
      rc = mi_errorf(err, MI_ERR_PARSE,
                     "%s: %s configuration %s of %s on %s is not in this "
                     "space: %s",
                     rt->table_path, k ? "fallback" : "the chosen",
                     e->configs[k].id, e->model, e->device, e2.message);
    free(text);
  }
  free(pt);
  return rc;
}

/* The chosen configuration, else the fallbacks in order (each failure logged). */
static int32_t start(mi_runtime_t *rt, mi_error_t *err) {
  const mi_deploy_entry_t *e = &rt->table->entries[rt->entry];
  int32_t rc = check_configs(rt, e, err);
  if (rc) return rc;
  rc = MI_ERR_NOT_FOUND;
  for (int32_t k = 0; k < e->config_count; k++) {
    mi_error_t e2;
    mi_error_clear(&e2);
    if ((rc = mi__rt_instantiate(rt, &e->configs[k], k, &e2)) == MI_OK) return MI_OK;
    mi__rt_log(rt, "instantiate_failed", ",\"index\":%d,\"id\":\"%s\",\"code\":%d", (int)k,
               e->configs[k].id, (int)rc);
    if (err) *err = e2;
  }
  return rc;
}

int32_t mi_runtime_open(const char *path, const mi_registry_t *registry,
                        const mi_runtime_options_t *o, mi_runtime_t **out, mi_error_t *err) {
  mi_runtime_t *rt;
  mi_plugin_t *pl = NULL;
  mi_device_desc_t desc;
  const mi_deploy_entry_t *e;
  int32_t rc;
  if (out) *out = NULL;
  if (!path || !registry || !out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_runtime_open: NULL argument");
  if (!(rt = calloc(1, sizeof *rt))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
  mi_runtime_options_default(&rt->o);
  if (o) memcpy(&rt->o, o, o->struct_size < sizeof rt->o ? o->struct_size : sizeof rt->o);
  rt->o.struct_size = sizeof rt->o;
  rt->current_index = -1;
  rt->info.median_ms = NAN;
  if (!(rt->table_path = strdup(path))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    goto fail;
  }
  if ((rc = mi_deploy_load(path, &rt->table, err))) goto fail;
  if ((rt->entry = mi_deploy_find(rt->table, rt->o.model, rt->o.device)) < 0) {
    rc = mi_errorf(err, MI_ERR_NOT_FOUND, "%s: no deployment with a configuration for model %s on %s",
                   path, rt->o.model ? rt->o.model : "(any)", rt->o.device ? rt->o.device : "(any)");
    goto fail;
  }
  e = &rt->table->entries[rt->entry];
  snprintf(rt->info.model, sizeof rt->info.model, "%s", e->model);
  snprintf(rt->info.device, sizeof rt->info.device, "%s", e->device);
  snprintf(rt->spec, sizeof rt->spec, "%s", e->device);
  if (rt->o.log_path) rt->log_path = rt->o.log_path[0] ? strdup(rt->o.log_path) : NULL;
  else
    rt->log_path = path_join(rt->table->dir, "decisions.jsonl");
  if ((rc = resolve_task(rt, err))) goto fail;
  if ((rc = mi_registry_device(registry, e->device, &pl, &rt->device, err))) goto fail;
  snprintf(rt->manifest, sizeof rt->manifest, "%s", pl->manifest);
  {
    /* Refused nodes run where the tuner's workers ran them: the entry's `fallback`, else (a
     * table from before it was recorded) the default pick, which is what those workers took. */
    mi_plugin_t *fb = NULL;
    if (e->fallback && strcmp(e->fallback, "ref") != 0) {
      if (mi_registry_device(registry, e->fallback, &fb, &rt->fb_device, NULL) != MI_OK) {
        rc = mi_errorf(err, MI_ERR_NOT_FOUND,
                       "%s:%d: fallback device '%s' (where the tuned figures ran the nodes %s refuses) is not loaded",
                       rt->table_path, (int)e->line, e->fallback, e->device);
        goto fail;
      }
    } else if (!e->fallback && !mi_registry_cpu_fallback(registry, pl, rt->device, &fb, &rt->fb_device))
      fb = NULL;
    if (fb && fb->manifest) {
      snprintf(rt->fb_manifest, sizeof rt->fb_manifest, "%s", fb->manifest);
      snprintf(rt->fb_spec, sizeof rt->fb_spec, "%s:%u", fb->name, (unsigned)rt->fb_device);
    } else {
      snprintf(rt->fb_spec, sizeof rt->fb_spec, "ref");
    }
  }
  if ((rc = load_model(rt, err))) goto fail;
  if ((rc = mi__rt_open_device(rt, err))) goto fail;
  if ((rc = mi_plugin_device_info(&rt->plugin->pub, rt->device, &desc, err))) goto fail;
  mi_stack_describe(rt->plugin->pub.name, rt->plugin->pub.version, &desc, rt->stack,
                    sizeof rt->stack, rt->stack_hash);
  if ((rc = start(rt, err))) goto fail;
  mi__rt_log(rt, "open", ",\"table\":\"%s\",\"reference_ms\":%.9g,\"stack_hash\":\"%s\",\"fallback\":\"%s\"", path,
             rt->info.reference_ms, rt->stack_hash, rt->fb_spec);
  if ((rc = mi__rt_check_stack(rt, err))) goto fail;
  *out = rt;
  return MI_OK;
fail:
  mi_runtime_close(rt);
  return rc;
}

int32_t mi_runtime_run(mi_runtime_t *rt, const mi_array_t *const *inputs, int32_t input_count,
                       mi_array_t **outputs, int32_t output_count, mi_error_t *err) {
  uint64_t ns = 0;
  double t0, ms;
  int32_t rc;
  if (!rt || !rt->session) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_runtime_run: no session");
  t0 = mi__now_s();
  if ((rc = mi_session_run(rt->session, inputs, input_count, outputs, output_count, err))) return rc;
  ms = (mi__now_s() - t0) * 1e3;
  /* The tuner measured on the device clock when every kernel reports one: compare like with like. */
  rt->info.device_clock = mi_session_device_time(rt->session, &ns);
  if (rt->info.device_clock) {
    /* A time the wall clock contradicts is a lie (mi_device_time_check): never a figure the
     * monitor or the report takes. */
    mi_error_t e2;
    if (mi_device_time_check(ns, ms * 1e-3, &e2) != MI_OK)
      return mi_errorf(err, MI_ERR_DEVICE, "device '%s': %s", rt->spec, e2.message);
    ms = (double)ns / 1e6;
  }
  rt->info.runs++;
  rt->info.last_ms = ms;
  if (!rt->o.monitor) return MI_OK;
  if (rt->ref_pending) {
    /* No tuned figure: the first window's median becomes the reference. */
    mi_drift_add(&rt->det, ms);
    if (isfinite(rt->det.median)) {
      double ref = rt->det.median;
      mi_drift_init(&rt->det, ref, rt->o.window, rt->o.delta, rt->o.lambda);
      rt->info.reference_ms = ref;
      rt->ref_pending = 0;
      mi__rt_log(rt, "reference", ",\"reference_ms\":%.9g", ref);
    }
    return MI_OK;
  }
  if (mi_drift_add(&rt->det, ms)) {
    mi_error_t e2;
    rt->info.alarms++;
    mi__rt_log(rt, "drift",
               ",\"reference_ms\":%.9g,\"median_ms\":%.9g,\"last_ms\":%.9g,"
               "\"statistic\":%.6g,\"delta\":%.6g,\"lambda\":%.6g,\"window\":%d,\"clock\":\"%s\"",
               rt->det.reference, rt->det.median, ms, rt->det.sum, rt->det.delta, rt->det.lambda,
               (int)rt->det.window, rt->info.device_clock ? "device" : "wall");
    mi_error_clear(&e2);
    /* The inference succeeded; a failed reaction is logged and the runtime carries on. */
    if (mi__rt_on_drift(rt, &e2) != MI_OK)
      mi__rt_log(rt, "reaction_failed", ",\"error\":\"%.200s\"", e2.message);
  }
  rt->info.median_ms = rt->det.median;
  rt->info.statistic = rt->det.sum;
  return MI_OK;
}

const char *mi_runtime_inputs(const mi_runtime_t *rt) { return rt ? rt->inputs : NULL; }

const mi_graph_t *mi_runtime_graph(const mi_runtime_t *rt) {
  return rt ? rt->graph : NULL;
}

const mi_session_t *mi_runtime_session(const mi_runtime_t *rt, const mi_graph_t **graph) {
  if (graph) *graph = rt && rt->session ? rt->xgraph : NULL; /* the transform always runs (rt_config.c) */
  return rt ? rt->session : NULL;
}

void mi_runtime_info(const mi_runtime_t *rt, mi_runtime_info_t *out) {
  if (!out) return;
  if (!rt) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = rt->info;
  out->median_ms = rt->det.median;
  out->statistic = rt->det.sum;
}

void mi_runtime_close(mi_runtime_t *rt) {
  if (!rt) return;
  if (rt->info.runs || rt->session) mi__rt_log(rt, "close", ",\"runs\":%d,\"switches\":%d",
                                               (int)rt->info.runs, (int)rt->info.switches);
  mi_session_destroy(rt->session);
  mi_graph_destroy(rt->xgraph);
  mi_space_destroy(rt->space);
  mi__plugin_unload(rt->plugin);
  mi__plugin_unload(rt->fb_plugin);
  mi_xf_samples_destroy(rt->samples);
  mi_graph_destroy(rt->graph);
  mi__deploy_config_clear(&rt->current);
  mi_deploy_destroy(rt->table);
  free(rt->tried);
  free(rt->table_path);
  free(rt->log_path);
  free(rt->model_path);
  free(rt->calibration);
  free(rt->inputs);
  free(rt);
}
