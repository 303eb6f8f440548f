/* test_tune_run.c - the tuner as a library call: mi_tune_run on a zoo ResNet with blis-cpu
 * gives a successful run with a non-empty front whose first trial is the default point (what
 * mi-run does without a configuration), reports through its callbacks (progress lines, a trial
 * per measurement, the log's space line) and records its measurements in the history; the
 * deployment table written from it opens in mi-run's loader (mi_runtime_open) from another
 * folder on the configuration the tune chose. */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metainfer/mi.h"
#include "metainfer/mi_tuner.h"

#include "test_util.h"

typedef struct {
  int32_t progress, progress_logged, trials, models, logs, space_lines;
  int32_t first_status;
} seen_t;

static void on_progress(void *user, int32_t line, int log, const char *text) {
  seen_t *s = user;
  CHECK(line == 0 && text && text[0], "progress line %d '%s'", (int)line, text ? text : "(null)");
  s->progress++;
  s->progress_logged += log != 0;
}

static void on_trial(void *user, const char *spec, const mi_trial_t *t) {
  seen_t *s = user;
  CHECK(strcmp(spec, "blis-cpu:0") == 0, "trial of %s", spec);
  if (s->trials++ == 0) s->first_status = t->status;
}

static void on_model(void *user, int32_t index, int32_t count, const char *name, int32_t devices) {
  seen_t *s = user;
  CHECK(index == 0 && count == 1 && devices == 1 && strcmp(name, "net.onnx") == 0, "model %d/%d %s on %d",
        (int)index, (int)count, name, (int)devices);
  s->models++;
}

static void on_log(void *user, int kind, const char *text) {
  seen_t *s = user;
  (void)kind;
  s->logs++;
  s->space_lines += strstr(text, "net.onnx: blis-cpu:0: joint space of ") == text;
}

/* A temporary folder with a zoo ResNet (net.onnx) and a recipe of `yaml` for it, loaded into *r,
 * the plugins scanned into *reg (the test skipped without blis-cpu), tune options on them, and
 * callbacks counting trials into *seen. */
static void tune_setup(const char *tag, const char *yaml, char *dir, size_t cap, mi_registry_t **reg,
                       mi_recipe_t **r, mi_tune_options_t *o, char *plugins, size_t pcap, mi_tune_callbacks_t *cb,
                       seen_t *seen) {
  char cmd[1024], path[512];
  mi_error_t err = {0, ""};
  mi_plugin_t *p;
  uint32_t dev;
  FILE *f;
  *reg = mi_registry_create();
  REQUIRE(*reg && tu_tempdir(dir, cap, tag));
  REQUIRE(tu_scan_plugins(*reg, &err) == MI_OK, "%s", err.message);
  tu_device_or_skip(*reg, "blis-cpu", "blis-cpu:0", &p, &dev);
  snprintf(path, sizeof path, "%s/net.onnx", dir);
  REQUIRE(tu_mi_zoo(cmd, sizeof cmd, "resnet", path, "--width 0.25 --depth 1 --resolution 16") == 0, "%s", cmd);
  snprintf(path, sizeof path, "%s/recipe.yaml", dir);
  REQUIRE((f = fopen(path, "w")));
  fputs(yaml, f);
  fclose(f);
  REQUIRE(mi_recipe_load(path, *reg, r, &err) == MI_OK, "%s", err.message);
  mi_tune_options_default(o);
  o->registry = *reg;
  o->plugin_path = tu_build_path(plugins, pcap, "plugins");
  memset(seen, 0, sizeof *seen);
  memset(cb, 0, sizeof *cb);
  cb->struct_size = sizeof *cb;
  cb->user = seen;
  cb->trial = on_trial;
}

static void library_call(void) {
  char dir[128], cmd[1024], plugins[1024], table[600], cwd[1024];
  mi_registry_t *reg = NULL;
  mi_recipe_t *r = NULL;
  mi_tune_options_t o;
  mi_tune_callbacks_t cb;
  mi_tune_result_t *res = NULL;
  mi_runtime_t *rt = NULL;
  mi_runtime_info_t info;
  mi_error_t err = {0, ""};
  seen_t seen;
  int32_t *def;
  tune_setup("tune-run",
             "version: 1\nmodel: net.onnx\npool: [ {plugin: blis-cpu} ]\nconstraints: { accuracy_drop: 0.05 }\n"
             "objectives: [latency]\nbudget: { measurements: 8, seconds: 120 }\nsearch: { seed: 2 }\n"
             "measure: { repeats: 5, warmup: 1 }\nhistory: hist.db\n",
             dir, sizeof dir, &reg, &r, &o, plugins, sizeof plugins, &cb, &seen);
  cb.progress = on_progress;
  cb.model = on_model;
  cb.log = on_log;
  REQUIRE(mi_tune_run(r, &o, &cb, &res, &err) == MI_OK, "%s", err.message);
  REQUIRE(res && res->count == 1 && res->model_count == 1 && !res->stopped);
  const mi_tune_run_t *run = &res->runs[0];
  REQUIRE(run->ok, "run failed: %s", run->message);
  CHECK(strcmp(run->spec, "blis-cpu:0") == 0, "%s", run->spec);
  REQUIRE(run->res && run->res->count > 0 && run->front_n > 0, "front of %d", (int)run->front_n);
  CHECK(run->res->count <= 8, "%d trials for a budget of 8", (int)run->res->count);
  /* The default point is the first trial (measured in the layer tasks' round 0 and replayed
   * from there as the search's first). */
  REQUIRE((def = calloc((size_t)mi_space_dim_count(run->space), sizeof *def)));
  mi_space_default(run->space, def);
  CHECK(memcmp(def, run->res->trials[0].point, (size_t)mi_space_dim_count(run->space) * sizeof *def) == 0,
        "the first trial is not the default point");
  free(def);
  CHECK(run->res->trials[0].status == MI_OK && isfinite(run->res->trials[0].objectives[MI_OBJ_LATENCY]),
        "default: %s", run->res->trials[0].message);
  CHECK(run->confirm == 1 || run->confirm == 2, "the end-of-tune check did not run (%s)", run->confirm_note);
  CHECK(run->ltasks > 0 && run->ltask_reused == 0, "layer tasks %d, from history %d", (int)run->ltasks,
        (int)run->ltask_reused);
  CHECK(run->recorded >= run->res->measured && run->recorded > 0, "recorded %d of %d", (int)run->recorded,
        (int)run->res->measured);
  /* Callbacks: one model line, a trial per search trial, progress, the space line. */
  CHECK(seen.models == 1, "%d model calls", (int)seen.models);
  CHECK(seen.trials == run->res->count, "%d trial calls for %d trials", (int)seen.trials, (int)run->res->count);
  CHECK(seen.first_status == MI_OK, "first trial %d", (int)seen.first_status);
  CHECK(seen.progress > seen.trials && seen.progress_logged > 0, "%d progress calls", (int)seen.progress);
  CHECK(seen.space_lines == 1 && seen.logs >= 3, "%d logs, %d space lines", (int)seen.logs, (int)seen.space_lines);
  /* The table opens in mi-run's loader, from another folder, on the chosen configuration. */
  snprintf(table, sizeof table, "%s/out", dir);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", table);
  REQUIRE(system(cmd) == 0);
  REQUIRE(mi_tune_write_table(r, table, res->runs, res->count, &err) == MI_OK, "%s", err.message);
  snprintf(table, sizeof table, "%s/out/deployment.yaml", dir);
  REQUIRE(getcwd(cwd, sizeof cwd) && chdir("/") == 0);
  mi_runtime_options_t ro;
  mi_runtime_options_default(&ro);
  ro.write_table = 0;
  ro.log_path = "";
  int32_t rc = mi_runtime_open(table, reg, &ro, &rt, &err);
  CHECK(chdir(cwd) == 0);
  REQUIRE(rc == MI_OK, "mi_runtime_open: %s", err.message);
  mi_runtime_info(rt, &info);
  snprintf(cmd, sizeof cmd, "%016llx", (unsigned long long)run->res->trials[run->front[0]].hash);
  CHECK(strcmp(info.config_id, cmd) == 0, "runtime runs %s, the tune chose %s", info.config_id, cmd);
  mi_runtime_close(rt);
  mi_tune_result_destroy(res);
  mi_recipe_destroy(r);
  mi_registry_destroy(reg);
  tu_rmtree(dir);
}

/* Stops the tune at its second search trial (as a Ctrl-C would). */
static int stop_at_two(void *user) { return ((seen_t *)user)->trials >= 2; }

/* A tune the caller stopped mid-search: the measurements it did not take are the stop's, not
 * the recipe's seconds' (run->cut_search counts what budget.seconds cut; it counted these, and
 * the log said the 120 s budget cut them in a tune of a few seconds). */
static void stopped_by_caller(void) {
  char dir[128], plugins[1024];
  mi_registry_t *reg = NULL;
  mi_recipe_t *r = NULL;
  mi_tune_options_t o;
  mi_tune_callbacks_t cb;
  mi_tune_result_t *res = NULL;
  mi_error_t err = {0, ""};
  seen_t seen;
  tune_setup("tune-stop",
             "version: 1\nmodel: net.onnx\npool: [ {plugin: blis-cpu} ]\nobjectives: [latency]\n"
             "budget: { measurements: 12, seconds: 120 }\nsearch: { seed: 2 }\nmeasure: { repeats: 5, warmup: 1 }\n",
             dir, sizeof dir, &reg, &r, &o, plugins, sizeof plugins, &cb, &seen);
  cb.stop = stop_at_two;
  REQUIRE(mi_tune_run(r, &o, &cb, &res, &err) == MI_OK, "%s", err.message);
  REQUIRE(res && res->stopped, "the tune was not stopped (%d trials)", (int)seen.trials);
  for (int32_t i = 0; i < res->count; i++)
    CHECK(res->runs[i].cut_search == 0 && res->runs[i].time_used_s < 120,
          "stopped by the caller after %d trials in %.1f s: %d search measurements counted as cut by the time budget",
          (int)seen.trials, res->runs[i].time_used_s, (int)res->runs[i].cut_search);
  mi_tune_result_destroy(res);
  mi_recipe_destroy(r);
  mi_registry_destroy(reg);
  tu_rmtree(dir);
}

static const tu_case_t tu_cases[] = {TU_CASE(library_call), TU_CASE(stopped_by_caller)};
TU_MAIN(NULL, NULL)
