/* tune_table.c - tune's results as a deployment table, saved by mi_deploy_write: escaped by
 * libyaml's emitter, read back and checked (every config_id against its configuration) before
 * it replaces the file, so tune never leaves a table that mi-run would refuse. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "tune/tune_internal.h"

/* The front entry's configuration: the space's canonical "key=value" lines. */
static int32_t fill_config(const mi_tune_run_t *run, int32_t k, mi_deploy_config_t *c,
                           mi_error_t *err) {
  const mi_trial_t *t = &run->res->trials[run->front[k]];
  snprintf(c->id, sizeof c->id, "%016llx", (unsigned long long)t->hash);
  if (run->verify_n > 0) {
    snprintf(c->verified, sizeof c->verified, "%s",
             run->verify_bad[k] || run->verify_failed[k] ? "VIOLATED" : "ok");
    c->verify_runs = run->verify_n;
    c->verify_violations = run->verify_bad[k];
    c->verify_failures = run->verify_failed[k];
  }
  for (int32_t o = 0; o < MI_OBJ_COUNT; o++)
    c->measured[o] = isfinite(t->objectives[o]) ? t->objectives[o] : NAN;
  c->energy_modeled = run->energy_modeled;
  return mi__deploy_config_from_point(run->space, t->point, 1, c, err);
}

static int32_t fill_entry(const mi_tune_run_t *run, mi_deploy_entry_t *e, mi_error_t *err) {
  int32_t rc;
  e->model = strdup(run->model);
  e->device = strdup(run->spec);
  if (!e->model || !e->device) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  if (!run->ok || run->front_n == 0) {
    e->status = strdup(run->ok ? "no configuration met the constraints" : run->message);
    return e->status ? MI_OK : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  }
  e->assigned = run->assigned;
  e->stack = strdup(run->stack);
  e->stack_hash = strdup(run->stack_hash);
  if (run->fallback[0] && !(e->fallback = strdup(run->fallback)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  if (run->confirm) {
    /* default latency / chosen latency, so > 1 is faster (docs/measurement.md) */
    const mi_compare_ratio_t *v = &run->vs_default;
    e->has_vs_default = 1;
    e->vs_default = 1 / v->ratio;
    e->vs_default_lo = 1 / v->hi;
    e->vs_default_hi = 1 / v->lo;
    e->vs_default_rounds = run->confirm_rounds;
    snprintf(e->vs_default_verdict, sizeof e->vs_default_verdict, "%s",
             run->confirm == 2                 ? "is default"
             : run->deployed_default           ? (v->verdict == MI_COMPARE_SLOWER   ? "default deployed: tuned was slower"
                                                  : v->verdict == MI_COMPARE_FASTER ? "default deployed: tuned not " MI__TUNE_MIN_GAIN_TEXT " faster over its interval"
                                                                                    : "default deployed: no significant difference")
             : v->verdict == MI_COMPARE_FASTER ? "faster"
             : v->verdict == MI_COMPARE_SLOWER ? "slower"
                                               : "no significant difference");
  }
  e->configs = calloc((size_t)run->front_n, sizeof *e->configs);
  if (!e->stack || !e->stack_hash || !e->configs)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  for (int32_t k = 0; k < run->front_n; k++) {
    e->config_count = k + 1; /* counted first, so that mi_deploy_destroy frees a part-filled one */
    if ((rc = fill_config(run, k, &e->configs[k], err)) != MI_OK) return rc;
  }
  return MI_OK;
}

/* The input shapes the models were tuned at as the runtime reads them ("x:1x3x48x192;..."): the
 * recipe's, else the one model's; NULL for several models without inputs: in the recipe. The
 * recipe's fixed values follow ("sr={16000}"). */
static char *recipe_inputs(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n) {
  char buf[2048];
  size_t at = 0;
  buf[0] = '\0';
  if (r->input_count <= 0 && !(r->model_count != 1 && r->value_count > 0)) {
    /* One model: the shapes it was tuned at, its dynamic dimensions taken as 1 (cmd_tune.c). */
    const mi_graph_t *g = n > 0 ? runs[0].graph : NULL;
    if (r->model_count != 1 || !g) return NULL;
    for (int32_t i = 0; i < g->input_count && at < sizeof buf; i++) {
      const mi_tensor_t *t = &g->tensors[g->inputs[i]];
      at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s:", i ? ";" : "", t->name);
      for (int32_t d = 0; d < t->rank && at < sizeof buf; d++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, d ? "x%lld" : "%lld", (long long)t->dims[d]);
    }
    /* the inputs fixed to values are constants of the tuned graph: the runtime fixes them too */
    mi_recipe_values_text(r, buf, sizeof buf, &at);
    return strdup(buf);
  }
  mi_recipe_inputs_text(r, buf, sizeof buf);
  return strdup(buf);
}

MI_API int32_t mi_tune_write_table(const mi_recipe_t *r, const char *dir, const mi_tune_run_t *runs,
                                   int32_t n, mi_error_t *err) {
  mi_deploy_table_t *t = calloc(1, sizeof *t);
  char path[4200], *abs = realpath(r->path, NULL);
  int32_t rc = MI_OK;
  snprintf(path, sizeof path, "%s/deployment.yaml", dir);
  /* The recipe by its absolute path and the input shapes in the table itself: mi-run
   * --deployment runs from any folder, where a path relative to mi-host's folder means nothing,
   * and without the shapes a model's dynamic dimensions stay unresolved (no variant prepares). */
  if (t) t->inputs = recipe_inputs(r, runs, n); /* NULL (none, or out of memory): the recipe's */
  if (!t || !(t->recipe = abs ? abs : strdup(r->path)) ||
      !(t->entries = calloc((size_t)n + 1, sizeof *t->entries)) ||
      !(t->assign_model = calloc((size_t)n + 1, sizeof *t->assign_model)) ||
      !(t->assign_device = calloc((size_t)n + 1, sizeof *t->assign_device))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
    goto done;
  }
  t->version = 1;
  for (int32_t i = 0; i < n && rc == MI_OK; i++) {
    t->entry_count = i + 1;
    rc = fill_entry(&runs[i], &t->entries[i], err);
  }
  for (int32_t i = 0; i < n && rc == MI_OK; i++) {
    if (!runs[i].assigned) continue;
    int32_t a = t->assignment_count++;
    t->assign_model[a] = strdup(runs[i].model);
    t->assign_device[a] = strdup(runs[i].spec);
    if (!t->assign_model[a] || !t->assign_device[a])
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  }
  if (rc == MI_OK) rc = mi_deploy_write(t, path, err);
done:
  if (!t || t->recipe != abs) free(abs);
  if (t && !t->entries) t->entry_count = 0;
  mi_deploy_destroy(t);
  return rc;
}
