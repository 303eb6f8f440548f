/* run_deployment.c - mi-run --deployment: runs a model through the deployment runtime (the
 * table's chosen configuration, the drift monitor, fallbacks, re-adaptation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mi_cli.h"
#include "mi_run.h"

/* --input options: one per model input (a merged transformer decoder has 27). */
#define DEP_MAX_INPUTS 256

typedef struct dep_opts {
  const char *table, *plugins, *model, *device, *output, *log;
  const char *inputs[DEP_MAX_INPUTS];
  int input_count, repeat, json, readapt, monitor, timeout_s, profile;
  int32_t policy;
} dep_opts_t;

int mi_run_wants_deployment(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--deployment") == 0 || strncmp(argv[i], "--deployment=", 13) == 0) return 1;
  return 0;
}

#define OPTIONS(X)                                                                            \
  X(O_DEPLOYMENT, "deployment", "FILE", "the deployment table (tune's DIR/deployment.yaml)")  \
  MI_CLI_OPT_PLUGINS(X)                                                                       \
  X(O_MODEL, "model", "NAME", "the table's entry for this model (default: the assigned one)") \
  X(O_DEVICE, "device", "DEV",                                                                \
    "the table's entry for this device, PLUGIN:INDEX (default: the\n"                         \
    "assigned one)")                                                                          \
  X(O_INPUT, "input", "NAME=FILE",                                                            \
    "a model input from a .npy file (repeatable, at most 256);\n"                             \
    "other inputs get deterministic random data")                                             \
  X(O_REPEAT, "repeat", "N",                                                                  \
    "runs (default 1; 20 with --profile); the summary gives\n"                                \
    "their median")                                                                           \
  X(O_PROFILE, "profile", NULL,                                                               \
    "per-layer table of the chosen configuration after the summary, as\n"                     \
    "mi-run --profile prints it (the drift monitor is off: one\n"                             \
    "configuration runs throughout)")                                                         \
  MI_CLI_OPTS_OUTPUT_DIR(X)                                                                   \
  MI_CLI_OPT_JSON_SUMMARY(X)                                                                  \
  X(O_POLICY, "stack-policy", "POLICY",                                                       \
    "use | revalidate | refuse a table tuned on another software\n"                           \
    "stack")                                                                                  \
  X(O_READAPT, "readapt", NULL,                                                               \
    "first measure a few neighbours of the chosen configuration,\n"                           \
    "adopt the best and rewrite the table")                                                   \
  X(O_NO_MONITOR, "no-monitor", NULL, "do not watch latency for drift")                       \
  X(O_LOG, "log", "FILE", "the decision log (default: TABLE_DIR/decisions.jsonl)")            \
  X(O_TIMEOUT, "timeout", "S",                                                                \
    "give up on the plugin (it runs in a child of mi-run) when one\n"                         \
    "step takes more than S seconds (default 60; 0: never)")
MI_CLI_TABLE(OPTIONS, k_opts);

/* 1 to run; 0 to exit with *status (0 after --help or --version, 2 after a message). */
static int parse(int argc, char **argv, dep_opts_t *o, int *status) {
  mi_cli_t c = {0};
  int k, st = MI_CLI_GO_ON, rc = 0;
  c.prog = "mi-run";
  c.usage =
      "mi-run --deployment DIR/deployment.yaml [--plugins DIR]... [--model NAME] [--device DEV]\n"
      "  [--input NAME=FILE.npy ...] [--repeat N] [--profile] [--output-dir DIR] [--json]\n"
      "  [--stack-policy use|revalidate|refuse] [--readapt] [--no-monitor] [--log FILE]";
  c.about =
      "Runs the table's chosen configuration for the model on the device, watches latency for\n"
      "drift and falls back along the stored front (docs/runtime.md).";
  c.opts = k_opts;
  c.flags = MI_CLI_VERSION_OPT | MI_CLI_NO_ARGS;
  memset(o, 0, sizeof *o);
  o->repeat = 0;
  o->monitor = 1;
  o->timeout_s = RUN_DEFAULT_TIMEOUT_S;
  *status = 0;
  mi_cli_begin(&c, argc, argv);
  while (rc == 0 && (k = mi_cli_step(&c, &st))) {
    switch (k) {
    case O_DEPLOYMENT: o->table = c.value; break;
    case O_PLUGINS: o->plugins = mi_cli_add_plugin_dir(o->plugins, c.value); break;
    case O_MODEL: o->model = c.value; break;
    case O_DEVICE: o->device = c.value; break;
    case O_OUTPUT_DIR:
    case O_OUTPUT: o->output = c.value; break;
    case O_LOG: o->log = c.value; break;
    case O_JSON: o->json = 1; break;
    case O_READAPT: o->readapt = 1; break;
    case O_PROFILE: o->profile = 1; break;
    case O_NO_MONITOR: o->monitor = 0; break;
    case O_POLICY:
      if ((o->policy = mi_stack_policy_find(c.value)) < 0)
        rc = mi_cli_error(&c, "--stack-policy must be use, revalidate or refuse, not '%s'", c.value);
      break;
    case O_TIMEOUT: rc = mi_cli_int_to(&c, 0, 1000000, &o->timeout_s); break;
    case O_REPEAT: rc = mi_cli_int_to(&c, 1, 1000000, &o->repeat); break;
    case O_INPUT:
      if (o->input_count == DEP_MAX_INPUTS || !strchr(c.value, '='))
        rc = mi_cli_error(&c, "--input takes NAME=FILE.npy (at most %d), not '%s'", DEP_MAX_INPUTS, c.value);
      else
        o->inputs[o->input_count++] = c.value;
      break;
    default: rc = mi_cli_error(&c, "%s is not handled here", c.opt); break;
    }
  }
  if (st == 0) return 0; /* --help or --version */
  if (st == MI_CLI_USAGE) rc = st;
  if (rc == 0 && (!o->table || !o->table[0])) rc = mi_cli_error(&c, "--deployment needs a file");
  if (rc == 0 && o->profile && o->readapt)
    rc = mi_cli_error(&c, "--profile and --readapt: profile the table's configuration, or re-adapt it, not both");
  if (o->repeat == 0) o->repeat = o->profile ? 20 : 1;
  if (o->profile) o->monitor = 0;
  if (rc) *status = 2;
  return rc == 0;
}

/* An --input for an input the deployment fixed to a value (no longer one of the graph's inputs)
 * must give that value: the tuned graph computes only the branch it decides. */
static int32_t check_fixed(const mi_graph_t *g, const dep_opts_t *o, const char *spec, mi_error_t *err) {
  for (int k = 0; k < o->input_count; k++) {
    size_t n = (size_t)(strchr(o->inputs[k], '=') - o->inputs[k]);
    char name[256];
    mi_array_t *a = NULL;
    int32_t rc, known = 0;
    for (int32_t i = 0; i < g->input_count && !known; i++) {
      const char *nm = g->tensors[g->inputs[i]].name;
      known = strlen(nm) == n && strncmp(o->inputs[k], nm, n) == 0;
    }
    if (known || n >= sizeof name) continue;
    snprintf(name, sizeof name, "%.*s", (int)n, o->inputs[k]);
    if ((rc = mi_npy_load(o->inputs[k] + n + 1, &a, err))) return rc;
    rc = mi_input_value_check(spec, o->table, name, a, err);
    mi_array_destroy(a);
    if (rc) return rc;
  }
  return MI_OK;
}

/* One array per graph input: --input NAME=FILE.npy, else deterministic random data. */
static int32_t inputs_for(const mi_graph_t *g, const dep_opts_t *o, mi_array_t **in, mi_error_t *err) {
  for (int32_t i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    int32_t rc;
    for (int k = 0; k < o->input_count && !in[i]; k++) {
      size_t n = (size_t)(strchr(o->inputs[k], '=') - o->inputs[k]);
      if (strlen(t->name) == n && strncmp(o->inputs[k], t->name, n) == 0 &&
          (rc = mi_npy_load(o->inputs[k] + n + 1, &in[i], err)))
        return rc;
    }
    if (in[i]) {
      if (in[i]->rank != t->rank || memcmp(in[i]->dims, t->dims, (size_t)t->rank * sizeof *t->dims))
        return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s': shape differs from the model's", t->name);
      continue;
    }
    if (!(in[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims)))
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s': cannot make an array of its shape", t->name);
    mi_array_fill_random(in[i], 1 + (uint64_t)i);
  }
  return MI_OK;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Each long step of the runtime (a configuration prepared or measured, a device instance opened) is a
 * step of the guard with its own deadline: a drift reaction inside one run (fallbacks, then a
 * re-adaptation measuring several neighbours) took minutes on OpenCL and Vulkan and was killed
 * as a hang of the run after --timeout seconds. */
static void guard_step(void *guard, const char *device, const char *step) {
  char who[128];
  /* The plugin of the table's device, not the last one loaded. */
  snprintf(who, sizeof who, "%.*s", (int)strcspn(device, ":"), device);
  mi_guard_stage(guard, who[0] ? who : NULL, step);
}

int mi_run_deployment_main(int argc, char **argv) {
  dep_opts_t o;
  mi_registry_t *reg = NULL;
  mi_runtime_t *rt = NULL;
  mi_runtime_options_t ro;
  mi_runtime_info_t info;
  mi_error_t err = {0};
  mi_array_t *in[64] = {0}, *out[64] = {0};
  double *lat = NULL;
  const mi_graph_t *g;
  int status = 2;
  int32_t rc = MI_OK;
  mi_guard_t *guard = NULL;
  run_prof_t prof;
  run_summary_t sum;
  FILE *f;
  memset(&prof, 0, sizeof prof);
  if (!parse(argc, argv, &o, &status)) return status;
  /* Plugin code runs in a guarded child: its crash, hang or exit is one line here. */
  if (!run_guard(o.timeout_s, &guard, &status)) return status;
  f = run_own_stdout();
  if (!(reg = mi_registry_create())) {
    status = 1;
    goto done;
  }
  if ((rc = run_load_plugins(reg, o.plugins, NULL, guard, NULL, NULL, &err))) goto fail;
  mi_guard_stage(guard, NULL, "open");
  mi_runtime_options_default(&ro);
  ro.model = o.model;
  ro.device = o.device;
  ro.stack_policy = o.policy;
  ro.monitor = o.monitor;
  ro.log_path = o.log;
  ro.on_step = guard_step;
  ro.step_user = guard;
  ro.per_node_timing = o.profile;
  if ((rc = mi_runtime_open(o.table, reg, &ro, &rt, &err))) goto fail;
  mi_runtime_info(rt, &info);
  {
    char who[128];
    snprintf(who, sizeof who, "%.*s", (int)strcspn(info.device, ":"), info.device);
    mi_guard_stage(guard, who[0] ? who : NULL, o.readapt ? "readapt" : "run");
  }
  g = mi_runtime_graph(rt);
  if (g->input_count > 64 || g->output_count > 64) {
    rc = mi_errorf(&err, MI_ERR_UNSUPPORTED, "more than 64 inputs or outputs");
    goto fail;
  }
  if ((rc = check_fixed(g, &o, mi_runtime_inputs(rt), &err)) || (rc = inputs_for(g, &o, in, &err))) goto fail;
  if (o.readapt && (rc = mi_runtime_readapt(rt, &err))) goto fail;
  if (!(lat = calloc((size_t)o.repeat, sizeof *lat))) goto fail;
  if (o.profile) {
    const mi_graph_t *sg = NULL;
    mi_runtime_session(rt, &sg);
    if (!sg) {
      rc = mi_errorf(&err, MI_ERR_INTERNAL, "--profile: no configuration is running");
      goto fail;
    }
    if ((rc = run_prof_init(&prof, sg, o.repeat, &err))) goto fail;
  }
  for (int r = 0; r < o.repeat; r++) {
    for (int32_t k = 0; k < g->output_count; k++) {
      mi_array_destroy(out[k]);
      out[k] = NULL;
    }
    mi_guard_stage(guard, NULL, "run");
    if ((rc = mi_runtime_run(rt, (const mi_array_t *const *)in, g->input_count, out, g->output_count, &err)))
      goto fail;
    mi_runtime_info(rt, &info);
    lat[r] = info.last_ms;
    if (o.profile) run_prof_take(&prof, mi_runtime_session(rt, NULL));
  }
  mi_guard_stage(guard, NULL, "output");
  if (o.output && (rc = run_write_outputs(g, o.output, out, &err))) goto fail;
  mi_runtime_info(rt, &info);
  qsort(lat, (size_t)o.repeat, sizeof *lat, cmp_d);
  memset(&sum, 0, sizeof sum);
  sum.session = mi_runtime_session(rt, NULL);
  sum.latency.median = lat[o.repeat / 2];
  sum.latency.count = o.repeat;
  if (o.json) {
    /* names come from the table and the command line: escaped, like every string we print */
    fputs("{\"deployment\":", f);
    run_json_string(f, o.table);
    fputs(",\"model\":", f);
    run_json_string(f, info.model);
    fputs(",\"device\":", f);
    run_json_string(f, info.device);
    fprintf(f,
            ",\"config_id\":\"%s\",\"runs\":%d,"
            "\"latency_ms\":{\"median\":%.9g,\"min\":%.9g,\"max\":%.9g},\"clock\":\"%s\","
            "\"reference_ms\":%.9g,\"alarms\":%d,\"switches\":%d,\"readaptations\":%d,"
            "\"stack_mismatch\":%s",
            info.config_id, info.runs, lat[o.repeat / 2], lat[0],
            lat[o.repeat - 1], info.device_clock ? "device" : "wall",
            isfinite(info.reference_ms) ? info.reference_ms : -1.0, info.alarms, info.switches,
            info.readaptations, info.stack_mismatch ? "true" : "false");
    if (o.profile && (rc = run_prof_print(f, &prof, &sum, 1, &err))) goto fail;
    fputs("}\n", f);
  } else {
    fprintf(f, "deployment %s: %s on %s, configuration %s%s\n", o.table, info.model, info.device,
            info.config_id, info.stack_mismatch ? " (tuned on another software stack)" : "");
    fprintf(f, "%d runs: median %.4f ms (%s clock), tuned %.4f ms; %d drift alarms, %d switches, %d re-adaptations\n",
            info.runs, lat[o.repeat / 2], info.device_clock ? "device" : "wall", info.reference_ms,
            info.alarms, info.switches, info.readaptations);
    if (o.profile && (rc = run_prof_print(f, &prof, &sum, 0, &err))) goto fail;
  }
  if ((rc = run_close_stdout(f, &err)) != MI_OK) {
    f = NULL;
    goto fail;
  }
  f = NULL;
  status = 0;
  goto done;
fail:
  fprintf(stderr, "mi-run: %s\n", err.message[0] ? err.message : mi_status_message(rc));
  status = rc == MI_ERR_DEVICE || rc == MI_ERR_CRASHED || rc == MI_ERR_INTERNAL || rc == MI_OK ? 1 : 2;
done:
  if (f && f != stdout) fclose(f);
  mi_guard_stage(guard, NULL, "release");
  for (int k = 0; k < 64; k++) {
    mi_array_destroy(in[k]);
    mi_array_destroy(out[k]);
  }
  free(lat);
  run_prof_free(&prof);
  mi_runtime_close(rt);
  mi_registry_destroy(reg);
  mi_guard_end(guard);
  return status;
}
