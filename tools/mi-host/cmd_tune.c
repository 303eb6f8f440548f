/* cmd_tune.c - mi-host tune RECIPE: the command line of the tuner library (mi_tune_run,
 * metainfer/mi_tuner.h): its options, the terminal's progress, and the deployment table, Pareto
 * fronts as JSON and SVG, and the offline HTML report written from its runs. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_farm.h"
#include "tune.h"

/* Says which of the recipe's paths lead outside the recipe's folder (absolute, or through
 * ".."), so a recipe cannot point at surprising places without the user seeing where. */
static void show_outside_paths(const mi_recipe_t *r) {
  char dir[PATH_MAX], p[PATH_MAX];
  const char *what[64], *path[64];
  int n = 0;
  size_t dl;
  if (!realpath(r->dir, dir)) return;
  dl = strlen(dir);
  for (int32_t i = 0; i < r->model_count && n < 62; i++, n++) {
    what[n] = "model";
    path[n] = r->models[i].path;
  }
  if (r->calibration) {
    what[n] = "calibration";
    path[n++] = r->calibration;
  }
  if (r->history && !mi_history_is_url(r->history)) {
    what[n] = "history";
    path[n++] = r->history;
  }
  for (int i = 0; i < n; i++) {
    char parent[PATH_MAX];
    const char *slash = strrchr(path[i], '/');
    /* the history file may not exist yet: resolve its folder then */
    if (!realpath(path[i], p)) {
      snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - path[i]) : 1, slash ? path[i] : ".");
      if (!realpath(parent, p)) continue;
    }
    if (strncmp(p, dir, dl) != 0 || (p[dl] != '/' && p[dl] != '\0'))
      fprintf(stderr, "mi-host: note: %s: %s '%s' is outside the recipe's folder (%s)\n", r->path,
              what[i], path[i], p);
  }
}

enum { O_SEED = 256,
       O_VERIFY,
       O_JOBS,
       O_JSON,
       O_AGENTS,
       O_TIMEOUT,
       O_NO_LTASKS,
       O_FALLBACK };
static const mi_cli_opt_t k_tune_opts[] = {
    {"out", 'o', "DIR",
     "where deployment.yaml, pareto.json and report.html go\n"
     "(default: RECIPE_DIR/tune-out)"},
    {"seed", O_SEED, "S", "the search's seed (default: the recipe's)"},
    {"verify", O_VERIFY, "N",
     "re-measure every configuration of the table N times and check\n"
     "its bounds; a violation makes the exit status 1"},
    {"jobs", O_JOBS, "N", "tune up to N devices at once, each with its own workers"},
    {"timeout", O_TIMEOUT, "S",
     "seconds one measurement may take before its worker is killed\n"
     "(default: the recipe's measure.timeout_s, else 120)"},
    {"json", O_JSON, NULL, "print one JSON object instead of text"},
    {"agents", O_AGENTS, NULL, "measure through the farm's agents (docs/scale-out.md)"},
    {"fallback", O_FALLBACK, "DEV",
     "where the nodes a device refuses run in the measurements:\n"
     "PLUGIN:INDEX, or 'ref' (the reference interpreter). Default:\n"
     "the first CPU plugin's device (blis-cpu:0) for a device of\n"
     "another plugin; with --agents each agent's own --fallback"},
    {"no-layer-tasks", O_NO_LTASKS, NULL,
     "search every node's kernel choice in the joint space\n"
     "instead of tuning layer tasks first"},
    {NULL, 0, NULL, NULL},
};

int mi_host_cmd_tune(mi_host_t *h, int argc, char **argv) {
  const char *recipe_path = NULL, *out = NULL;
  mi_recipe_t *r = NULL;
  mi_error_t err;
  mi_tune_result_t *res = NULL;
  mi_tune_options_t to;
  mi_tune_callbacks_t cb;
  mi_tune_progress_t progress;
  int32_t rc = MI_HOST_FAIL;
  char outbuf[4096];
  long long seed = -1;
  char histbuf[4200];
  double timeout = 0;
  mi_history_t *check = NULL;
  mi_cli_t cli;
  memset(&progress, 0, sizeof progress);
  mi_tune_options_default(&to);
  mi_host_cli(h, &cli, "tune", k_tune_opts);
  mi_cli_begin(&cli, argc, argv);
  for (int k; (k = mi_cli_next(&cli)) != MI_CLI_END;) {
    long long v = 0;
    if (k == MI_CLI_EXIT) return MI_HOST_OK;
    if (k == MI_CLI_ERROR) return MI_HOST_USAGE;
    if (k == 'o') out = cli.value;
    else if (k == O_SEED || k == O_VERIFY || k == O_JOBS) {
      if (mi_cli_int(&cli, 0, 1000000, &v)) return MI_HOST_USAGE;
      if (k == O_SEED) seed = v;
      else if (k == O_VERIFY)
        to.verify = (int32_t)v;
      else
        to.jobs = v < 1 ? 1 : (int32_t)v;
    } else if (k == O_TIMEOUT) {
      if (mi_cli_double(&cli, 1e-3, 86400, &timeout)) return MI_HOST_USAGE;
    } else if (k == O_JSON)
      h->json = 1;
    else if (k == O_AGENTS)
      to.agents = 1;
    else if (k == O_NO_LTASKS)
      to.no_layer_tasks = 1;
    else if (k == O_FALLBACK)
      to.fallback = cli.value;
    else if (!recipe_path)
      recipe_path = cli.value;
    else
      return mi_cli_error(&cli, "one recipe at a time");
  }
  if (!recipe_path) return mi_cli_error(&cli, "needs a recipe: mi-host tune RECIPE.yaml");
  /* No plugin code runs in this process: each plugin is described in a sacrificial worker, and
   * probes, check_config and measurements run in the device's worker (docs/security.md). */
  h->described_only = 1;
  if (!(to.registry = mi_host_registry(h))) return MI_HOST_FAIL;
  if (mi_host_check_fallback(h, "tune", to.fallback)) return MI_HOST_USAGE;
  if (mi_recipe_load(recipe_path, to.registry, &r, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    return MI_HOST_USAGE;
  }
  to.timeout_s = timeout;
  if (to.agents && !mi_history_is_url(r->history)) {
    fprintf(stderr, "mi-host: tune --agents needs a postgresql:// history in the recipe\n");
    goto done;
  }
  if (seed >= 0) r->seed = (uint64_t)seed;
  if (!out) {
    snprintf(outbuf, sizeof outbuf, "%s/tune-out", r->dir);
    out = outbuf;
  }
  if (mi_cli_make_dirs(out, &err) != MI_OK) {
    fprintf(stderr, "mi-host: tune: --out: %s\n", err.message);
    goto done;
  }
  /* Without a history key the history lives in the output folder, never next to a recipe that
   * may sit in a read-only folder or a source tree; rerunning with the same --out resumes. */
  if (!r->history_given && !r->history) {
    snprintf(histbuf, sizeof histbuf, "%s/history.db", out);
    r->history = strdup(histbuf);
  }
  show_outside_paths(r);
  /* A history that cannot be opened is an error now, not measurements silently not kept. */
  if (r->history && mi_history_open(r->history, &check, &err) != MI_OK) {
    fprintf(stderr, "mi-host: tune: history %s: %s\n", r->history, err.message);
    goto done;
  }
  mi_history_close(check);
  if (!(to.plugin_path = mi_host_plugin_path(h))) goto done;
  mi_tune_stop_install();
  if (mi_tune_progress_init(&progress, r->device_count, h->json) != MI_OK) goto done;
  mi_tune_progress_callbacks(&progress, &cb);
  if (mi_tune_run(r, &to, &cb, &res, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    goto done;
  }
  if (res->stopped) {
    rc = mi_tune_finish(r, r->history, res->runs, res->count, h->json);
    goto done;
  }
  if ((rc = mi_tune_write(r, out, res->runs, res->count, h->json)) != MI_HOST_OK) goto done;
  rc = mi_tune_finish(r, r->history, res->runs, res->count, h->json);
  for (int32_t i = 0; i < res->count; i++) {
    const mi_tune_run_t *run = &res->runs[i];
    for (int32_t k = 0; run->verify_bad && k < run->front_n; k++)
      if (run->verify_bad[k] || run->verify_failed[k]) {
        if (!h->json)
          fprintf(stderr, "tune: %s on %s: front configuration %d broke a bound in %d and failed in %d of %d re-measurements\n",
                  run->model, run->spec, (int)k, (int)run->verify_bad[k], (int)run->verify_failed[k], (int)run->verify_n);
        rc = MI_HOST_FAIL;
      }
  }
done:
  mi_tune_result_destroy(res);
  mi_tune_progress_free(&progress);
  mi_recipe_destroy(r);
  return rc;
}
