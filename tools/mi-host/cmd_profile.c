/* cmd_profile.c - `mi-host profile`: measures a model on devices in crash-isolated workers,
 * prints per-layer and end-to-end figures and records every measurement in the history. */
/* open_memstream and readlink are POSIX 2008. */
#define _GNU_SOURCE 1
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mi_host.h"

#define MAX_DEVICES 16
#define MAX_WORKERS_PER_FIGURE 15

typedef struct prof_args {
  const char *model, *db, *devices[MAX_DEVICES];
  const char *fallback; /* --fallback: 'ref' or PLUGIN:INDEX; NULL: the default */
  int ndev, rounds, check, fingerprint;
  int workers; /* fresh worker processes per figure (--workers) */
  mi_measure_options_t mo;
  double timeout_s;
  int nknob;
  char knob_names[16][64];
  const char *knob_dev[16]; /* NULL: every device */
  mi_knob_value_t knobs[16];
  int nshape, ninput, nvalue;
  /* --shape NAME=DIMS, --input NAME=FILE.npy, --value NAME=V0,V1 */
  const char *shapes[MI_HOST_MAX_INPUT_ARGS], *inputs[MI_HOST_MAX_INPUT_ARGS], *values[MI_HOST_MAX_INPUT_ARGS];
} prof_args_t;

typedef struct task_info {
  char hash[17];
  const char *name;
  char *features;
  mi_model_features_t f;
  char inputs[MI_HOST_INPUTS_TEXT]; /* "NAME:D0xD1;..." for the workers when --shape/--input gave shapes */
  char fixed[MI_HOST_FIXED_TEXT];   /* the --input files "NAME=/ABS/FILE.npy;..." for the workers */
  mi_graph_t *g;                    /* shapes inferred: the per-layer table's shapes and FLOPs */
} task_info_t;

#define OPTIONS(X)                                                                                 \
  MI_CLI_OPT_MODEL(X)                                                                              \
  X(O_DEVICE, "device", "PLUGIN:INDEX", "a device to measure on (repeatable, at most 16)")         \
  MI_CLI_OPT_FALLBACK(X)                                                                           \
  MI_CLI_OPTS_MODEL_INPUT(X)                                                                       \
  MI_CLI_OPT_VALUE(X)                                                                              \
  X(O_DB, "db", "FILE|URL", "the history the measurements go to (default history.db)")             \
  X(O_REPEAT, "repeat", "N", "at least N timed repeats per figure")                                \
  X(O_WARMUP, "warmup", "N", "warm-up runs before timing")                                         \
  X(O_ROUNDS, "rounds", "N", "profile N times per device (default 1)")                             \
  X(O_KNOB, "knob", "NAME=INT[@DEV]", "set a knob (on one device with @PLUGIN:INDEX; repeatable)") \
  X(O_CHECK, "check", NULL, "compare one more run's outputs with the reference interpreter")       \
  X(O_FLUSH, "flush", NULL, "write over the cache between repeats (CPU devices)")                  \
  X(O_MIN_WARMUP, "min-warmup-ms", "X", "warm up for at least X ms (default 100; 0: off)")         \
  X(O_MEDIAN_CI, "median-ci", "X",                                                                 \
    "repeat until the median is known to +-X, a share (default\n"                                  \
    "0.01; 0: off)")                                                                               \
  X(O_MIN_SAMPLE, "min-sample-ms", "X",                                                            \
    "each sample the mean of back-to-back runs of at least X ms\n"                                 \
    "(default 0: off)")                                                                            \
  X(O_WORKERS, "workers", "K",                                                                     \
    "measure each figure in K fresh worker processes and keep the\n"                               \
    "median one (default 3, at most 15)")                                                          \
  MI_CLI_OPT_WORKER_TIMEOUT(X)                                                                     \
  X(O_NO_FP, "no-fingerprint", NULL, "skip the device fingerprint's micro-benchmarks")             \
  MI_CLI_OPT_JSON(X)
MI_CLI_TABLE(OPTIONS, k_opts);

static int parse(mi_host_t *h, int argc, char **argv, prof_args_t *a) {
  mi_cli_t c;
  int k, st;
  mi_measure_options_default(&a->mo);
  /* Profiling one model is where a tenth of a second of warm-up and a median known to +-1% are
   * worth their time (docs/measurement.md). */
  a->mo.min_warmup_s = 0.1;
  a->mo.median_ci = 0.01;
  a->db = "history.db";
  a->rounds = 1;
  a->fingerprint = 1;
  /* One figure from three processes, one after another: on a shared virtual machine a process
   * runs a few percent faster or slower than the next, and the machine's speed moves over
   * seconds; more repeats inside one process average out neither (docs/measurement.md,
   * "Reproducibility"). */
  a->workers = 3;
  a->timeout_s = 60;
  mi_host_cli_begin(h, &c, "profile", k_opts, NULL, argc, argv);
  while ((k = mi_host_cli_next(&c, &st))) {
    const char *o = c.opt, *v = c.value;
    char *end = NULL;
    if (k == O_JSON) {
      h->json = 1;
      continue;
    }
    if (k == O_CHECK) {
      a->check = 1;
      continue;
    }
    if (k == O_FLUSH) {
      a->mo.flush_cache = 1;
      continue;
    }
    if (k == O_NO_FP) {
      a->fingerprint = 0;
      continue;
    }
    if (k == O_KNOB) {
      const char *eq = strchr(v, '=');
      long kv;
      if (!eq || eq == v || (size_t)(eq - v) >= sizeof a->knob_names[0] || a->nknob == 16)
        return mi_host_usage_error("profile: --knob wants NAME=INT, got '%s'", v);
      kv = strtol(eq + 1, &end, 10);
      if ((*end && *end != '@') || end == eq + 1 || (*end == '@' && !end[1]))
        return mi_host_usage_error("profile: --knob wants NAME=INT[@DEVICE], got '%s'", v);
      a->knob_dev[a->nknob] = *end == '@' ? end + 1 : NULL;
      memcpy(a->knob_names[a->nknob], v, (size_t)(eq - v));
      a->knob_names[a->nknob][eq - v] = '\0';
      a->knobs[a->nknob].name = a->knob_names[a->nknob];
      a->knobs[a->nknob].i = kv;
      a->nknob++;
    } else if (k == O_SHAPE || k == O_INPUT || k == O_VALUE) {
      int *n = k == O_SHAPE ? &a->nshape : k == O_INPUT ? &a->ninput
                                                        : &a->nvalue;
      if (*n == MI_HOST_MAX_INPUT_ARGS)
        return mi_host_usage_error("profile: at most %d %s options", MI_HOST_MAX_INPUT_ARGS, o);
      (k == O_SHAPE ? a->shapes : k == O_INPUT ? a->inputs
                                               : a->values)[(*n)++] = v;
    } else if (k == O_MODEL)
      a->model = v;
    else if (k == O_DB)
      a->db = v;
    else if (k == O_FALLBACK)
      a->fallback = v;
    else if (k == O_DEVICE) {
      if (a->ndev == MAX_DEVICES) return mi_host_usage_error("profile: at most %d devices", MAX_DEVICES);
      a->devices[a->ndev++] = v;
    } else if (k == O_TIMEOUT) {
      a->timeout_s = strtod(v, &end);
      if (*end || a->timeout_s <= 0) return mi_host_usage_error("profile: bad --timeout '%s'", v);
    } else if (k == O_MIN_SAMPLE || k == O_MEDIAN_CI || k == O_MIN_WARMUP) {
      double x = strtod(v, &end);
      if (*end || !(x >= 0 && x <= 100000))
        return mi_host_usage_error("profile: bad %s '%s'", o, v);
      if (k == O_MIN_SAMPLE) a->mo.min_sample_s = x * 1e-3;
      else if (k == O_MIN_WARMUP)
        a->mo.min_warmup_s = x * 1e-3;
      else
        a->mo.median_ci = x;
    } else {
      long n = strtol(v, &end, 10);
      if (*end || n < 0 || n > 100000) return mi_host_usage_error("profile: bad %s '%s'", o, v);
      if (k == O_REPEAT) {
        a->mo.min_repeats = (int32_t)n;
        if (a->mo.max_repeats < n) a->mo.max_repeats = (int32_t)n;
      } else if (k == O_WARMUP)
        a->mo.warmup = (int32_t)n;
      else if (k == O_ROUNDS)
        a->rounds = (int)n;
      else if (k == O_WORKERS) {
        if (n < 1 || n > MAX_WORKERS_PER_FIGURE)
          return mi_host_usage_error("profile: --workers wants 1..%d, got '%s'",
                                     MAX_WORKERS_PER_FIGURE, v);
        a->workers = (int)n;
      }
    }
  }
  if (st != MI_HOST_OK) return st;
  if (!a->model || a->ndev == 0)
    return mi_host_usage_error("profile needs --model M.onnx and --device PLUGIN:INDEX");
  return MI_HOST_OK;
}

/* The model's hash and features, with --shape/--input applied (mi-run's and accuracy's rules);
 * an input left with a dynamic dimension is an error naming the option that fixes it. */
static int32_t load_task(const char *path, const prof_args_t *a, task_info_t *t, mi_error_t *err) {
  mi_graph_t *g = NULL;
  int32_t rc;
  const char *slash = strrchr(path, '/');
  t->name = slash ? slash + 1 : path;
  if ((rc = mi_file_hash(path, t->hash, err))) return rc;
  if ((rc = mi_onnx_load(path, &g, err))) return rc;
  rc = mi_cli_check_values(a->values, a->nvalue, a->inputs, a->ninput, a->shapes, a->nshape, err);
  if (!rc) rc = mi_graph_input_args(g, a->inputs, a->ninput, a->shapes, a->nshape, NULL, err);
  if (!rc) rc = mi_graph_input_values(g, a->values, a->nvalue, err);
  for (int32_t i = 0; i < g->input_count && !rc; i++) {
    const mi_tensor_t *x = &g->tensors[g->inputs[i]];
    int32_t dyn = mi_tensor_dynamic_dim(x);
    if (dyn >= 0)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' has dynamic dim %d%s%s%s: give --shape %s=D0xD1x... "
                     "or --input %s=FILE.npy",
                     x->name, (int)dyn, x->dim_names[dyn] ? " ('" : "",
                     x->dim_names[dyn] ? x->dim_names[dyn] : "", x->dim_names[dyn] ? "')" : "", x->name, x->name);
  }
  if (!rc && a->nshape + a->ninput + a->nvalue > 0)
    rc = mi_host_inputs_text(g, a->values, a->nvalue, t->inputs, sizeof t->inputs, err);
  if (!rc) rc = mi_host_fixed_inputs(a->inputs, a->ninput, t->fixed, sizeof t->fixed, err);
  /* the workers' graph: an If fixed values decide is its branch, constants folded
   * (mi_graph_make_static), so the features are the tuner's */
  if (!rc && !(rc = mi_graph_make_static(g, NULL, err)) && !(rc = mi_model_features(g, &t->f, NULL, NULL, err)))
    t->features = mi_model_features_json(&t->f);
  if (rc) mi_graph_destroy(g);
  else
    t->g = g;
  return rc;
}

/* The framework's per-layer table (the one mi-run --profile prints) from the worker's per-node
 * medians: device time where the kernel had a timer, else wall time. The worker's session is
 * gone, so a fused kernel shows under the node that carried its time (the branch rows the
 * worker made with its nested sessions show their fused kernels). */
static void layer_table(FILE *f, const mi_graph_t *g, const mi_profile_t *p, int json) {
  double *ms = g ? malloc(((size_t)g->node_count + 1) * sizeof *ms) : NULL;
  mi_layer_row_t *rows = NULL;
  int32_t n = 0;
  for (int32_t i = 0; ms && i < g->node_count; i++) ms[i] = -1;
  for (int32_t i = 0; ms && i < p->layer_count; i++) {
    const mi_layer_profile_t *l = &p->layers[i];
    if (l->where == 2 || l->node < 0 || l->node >= g->node_count) continue;
    ms[l->node] = (l->has_device_time ? l->device.median : l->wall.median) * 1e3;
  }
  if (ms && mi_layer_rows(g, NULL, NULL, ms, &rows, &n, NULL) == MI_OK) {
    for (int32_t r = 0; r < n; r++)
      for (int32_t i = 0; i < p->layer_count; i++)
        if (p->layers[i].node == rows[r].node && p->layers[i].where == 1) {
          rows[r].where = 1;
          snprintf(rows[r].variant, sizeof rows[r].variant, "host");
        } else if (p->layers[i].node == rows[r].node && p->layers[i].where == 3) {
          rows[r].where = 2; /* as mi-run --profile shows a node its fallback device ran */
          snprintf(rows[r].variant, sizeof rows[r].variant, "fallback %.54s", p->fallback_device);
        }
    /* The steps of the If branches that ran as nested sessions, named <If>/<branch>/<step>
     * as mi-run --profile names them; the If's row keeps its own time. Out of memory, the
     * table stays without them. */
    mi_profile_nest_rows(p, &rows, &n, NULL);
    mi_layer_rows_print(f, rows, n, json);
  } else if (json) {
    fputs("[]", f);
  }
  free(rows);
  free(ms);
}

static void print_profile(FILE *f, const char *spec, const mi_profile_t *p, const mi_graph_t *g) {
  const mi_stats_t *s = &p->latency.stats;
  fprintf(f,
          "%s (%s): median %.4f ms  trimmed %.4f  p10 %.4f  p90 %.4f  cv %.2f%%  n %d  "
          "rounds %d  discarded %d  [%s clock]\n",
          spec, p->desc.name, s->median * 1e3, s->trimmed_mean * 1e3, s->p10 * 1e3,
          s->p90 * 1e3, s->cv * 100, (int)s->n, (int)p->latency.rounds,
          (int)p->latency.discarded, p->clock == MI_CLOCK_DEVICE ? "device" : "wall");
  fprintf(f, "  median known to +-%.2f%% (95%%)  %d run(s) per sample\n",
          p->latency.median_ci * 100, (int)p->latency.batch);
  fprintf(f, "  prepare %.3f ms (apart from run time)", p->prepare_s * 1e3);
  if (p->has_energy)
    fprintf(f, "  energy %.6g J/run (%s)", p->energy_j, p->energy_modeled ? "modeled" : "measured");
  else
    fprintf(f, "  energy: no counter");
  if (p->peak_memory_source)
    fprintf(f, "  peak memory %.1f MiB (%s)", (double)p->peak_memory_bytes / 1048576.0,
            p->peak_memory_source == 1 ? "device counter" : "worker RSS");
  if (p->planned_memory_bytes)
    fprintf(f, "\n  tensor memory %.1f MiB planned (one buffer per tensor: %.1f MiB)",
            (double)p->planned_memory_bytes / 1048576.0, (double)p->unplanned_memory_bytes / 1048576.0);
  fputc('\n', f);
  if (p->fallback_count) { /* as mi-run's summary line says it */
    int32_t on = p->fallback_on_device, ref = p->fallback_count - on;
    fputs("  fallback nodes: ", f);
    if (on) fprintf(f, "%d on %s", (int)on, p->fallback_device);
    if (ref) fprintf(f, "%s%d on the reference", on ? ", " : "", (int)ref);
    fputc('\n', f);
  }
  layer_table(f, g, p, 0);
}

static void json_profile(FILE *f, const char *spec, const mi_profile_t *p, const char *fail,
                         const double *medians, int nmed, const mi_graph_t *g) {
  int first = 1;
  fputc('{', f);
  mi_json_key(f, &first, "device");
  mi_json_string(f, spec);
  mi_json_key(f, &first, "ok");
  fputs(p ? "true" : "false", f);
  if (!p) {
    mi_json_key(f, &first, "failure");
    mi_json_string(f, fail);
    fputc('}', f);
    return;
  }
  {
    char *layers = mi_profile_layers_json(p);
    const mi_stats_t *s = &p->latency.stats;
    mi_json_key(f, &first, "device_name");
    mi_json_string(f, p->desc.name);
    mi_json_key(f, &first, "fallback_device");
    if (p->fallback_device[0]) mi_json_string(f, p->fallback_device);
    else
      fputs("null", f);
    fprintf(f, ",\"fallback_on_device\":%d,\"fallback_on_reference\":%d", (int)p->fallback_on_device,
            (int)(p->fallback_count - p->fallback_on_device));
    mi_json_key(f, &first, "clock");
    mi_json_string(f, p->clock == MI_CLOCK_DEVICE ? "device" : "wall");
    fprintf(f, ",\"latency_ms\":{\"median\":");
    mi_json_double(f, s->median * 1e3);
    fprintf(f, ",\"trimmed_mean\":");
    mi_json_double(f, s->trimmed_mean * 1e3);
    fprintf(f, ",\"p10\":");
    mi_json_double(f, s->p10 * 1e3);
    fprintf(f, ",\"p90\":");
    mi_json_double(f, s->p90 * 1e3);
    fprintf(f, ",\"cv\":");
    mi_json_double(f, s->cv);
    fprintf(f, ",\"n\":%d,\"rounds\":%d,\"discarded\":%d", (int)s->n, (int)p->latency.rounds,
            (int)p->latency.discarded);
    fprintf(f, ",\"batch\":%d,\"median_ci\":", (int)p->latency.batch);
    mi_json_double(f, p->latency.median_ci);
    fprintf(f, ",\"workers\":%d,\"worker_medians\":[", nmed);
    for (int i = 0; i < nmed; i++) {
      if (i) fputc(',', f);
      mi_json_double(f, medians[i] * 1e3);
    }
    fprintf(f, "]}");
    fprintf(f, ",\"prepare_ms\":");
    mi_json_double(f, p->prepare_s * 1e3);
    fprintf(f, ",\"energy_j\":");
    if (p->has_energy) mi_json_double(f, p->energy_j);
    else
      fputs("null", f);
    fprintf(f, ",\"energy_source\":%s", !p->has_energy ? "null" : p->energy_modeled ? "\"modeled\""
                                                                                    : "\"measured\"");
    fprintf(f, ",\"peak_memory_bytes\":%llu,\"planned_memory_bytes\":%llu,\"unplanned_memory_bytes\":%llu",
            (unsigned long long)p->peak_memory_bytes, (unsigned long long)p->planned_memory_bytes,
            (unsigned long long)p->unplanned_memory_bytes);
    fprintf(f, ",\"layers\":%s,\"table\":", layers ? layers : "[]");
    layer_table(f, g, p, 1);
    fputc('}', f);
    free(layers);
  }
}

static int by_latency(const void *x, const void *y) {
  double a = (*(mi_profile_t *const *)x)->latency.stats.median;
  double b = (*(mi_profile_t *const *)y)->latency.stats.median;
  return a < b ? -1 : a > b;
}

/* Measures one figure in `k` worker processes one after another (each after the first in a
 * fresh one) and returns the measurement whose end-to-end median is the median of the k (the
 * lower middle one for even k), with every worker's median in `medians` (seconds, in the order
 * measured). The first failure ends it: NULL, err says why. */
static mi_profile_t *measure_in_workers(mi_worker_pool_t *pool, const char *spec, const char *model,
                                        const char *inputs, const char *fixed,
                                        const mi_session_options_t *so,
                                        const mi_measure_options_t *mo, int check, int k,
                                        double *medians, mi_error_t *err) {
  mi_profile_t *got[MAX_WORKERS_PER_FIGURE] = {0}, *chosen = NULL;
  int n = 0;
  for (; n < k; n++) {
    if (n > 0) mi_worker_retire(pool, spec);
    if (inputs[0]) {
      /* Input shapes and values travel with a configuration job; the plain profile job has none
       * (the values of --input reach the worker as files: a bool or int64 input cannot be
       * drawn at random). */
      mi_worker_config_t wc;
      memset(&wc, 0, sizeof wc);
      wc.struct_size = sizeof wc;
      wc.model = model;
      wc.inputs = inputs;
      wc.fixed_inputs = fixed[0] ? fixed : NULL;
      wc.so = so;
      if (mi_worker_profile_config(pool, spec, &wc, mo, check, &got[n], NULL, err) != MI_OK) break;
    } else if (mi_worker_profile(pool, spec, model, so, mo, check, &got[n], err) != MI_OK) {
      break;
    }
    medians[n] = got[n]->latency.stats.median;
  }
  if (n == k) {
    qsort(got, (size_t)k, sizeof got[0], by_latency);
    chosen = got[(k - 1) / 2];
    got[(k - 1) / 2] = NULL;
  }
  for (int i = 0; i < n; i++) mi_profile_destroy(got[i]);
  return chosen;
}

/* Builds the history record of one measurement (p == NULL: a failure with its reason). */
static int32_t record(mi_history_t *hist, int64_t run, const task_info_t *t, const char *spec,
                      const mi_device_fingerprint_t *fp, const char *canon, const mi_profile_t *p,
                      const char *failure, mi_error_t *err) {
  mi_record_t r;
  char stack[512], shash[17], dhash[17], *fpj = NULL, *layers = NULL, *samples = NULL;
  char fbstack[768], fbhash[17];
  const mi_device_desc_t *desc = p ? &p->desc : fp && fp->hash[0] ? &fp->desc
                                                                  : NULL;
  int32_t rc;
  memset(&r, 0, sizeof r);
  r.model_hash = t->hash;
  r.model_name = t->name;
  r.model_features_json = t->features;
  r.batch = t->f.batch;
  r.input_shapes = t->f.input_shapes;
  r.device_spec = spec;
  if (desc) {
    mi_device_hash(desc, dhash);
    r.device_name = desc->name;
    mi_stack_describe(p ? p->plugin_name : NULL, p ? p->plugin_version : NULL, desc, stack,
                      sizeof stack, shash);
  } else {
    /* Nothing came back from the device: name it by its spec and say the stack is unknown. */
    mi_hash64_hex(mi_hash64(spec, strlen(spec), MI_HASH64_SEED), dhash);
    r.device_name = spec;
    snprintf(stack, sizeof stack, "unknown;device=%s", spec);
    mi_hash64_hex(mi_hash64(stack, strlen(stack), MI_HASH64_SEED), shash);
  }
  if (fp && fp->hash[0]) fpj = mi_device_fingerprint_json(fp);
  r.device_hash = dhash;
  r.device_json = fpj;
  r.config_canonical = canon;
  r.stack = stack;
  r.stack_hash = shash;
  r.run_id = run;
  r.ok = p != NULL;
  r.failure = failure;
  if (p) {
    size_t n = 0, cap = (size_t)p->latency.sample_count * 24 + 4;
    samples = malloc(cap);
    if (samples) {
      n += (size_t)snprintf(samples, cap, "[");
      for (int32_t i = 0; i < p->latency.sample_count; i++)
        n += (size_t)snprintf(samples + n, cap - n, "%s%.9g", i ? "," : "", p->latency.samples[i]);
      snprintf(samples + n, cap - n, "]");
    }
    layers = mi_record_set_profile(&r, p);
    mi_record_set_fallback_stack(&r, p, fbstack, sizeof fbstack, fbhash);
    r.samples_json = samples;
  }
  rc = mi_history_put(hist, &r, NULL, err);
  free(fpj);
  free(layers);
  free(samples);
  return rc;
}

int mi_host_cmd_profile(mi_host_t *h, int argc, char **argv) {
  prof_args_t a;
  task_info_t task;
  mi_history_t *hist = NULL;
  mi_worker_pool_t *pool = NULL;
  mi_worker_options_t wo;
  mi_device_fingerprint_t fps[MAX_DEVICES];
  mi_error_t err, rerr;
  char *jbuf = NULL;
  size_t jlen = 0;
  FILE *js = NULL;
  long first_ok = -1;
  mi_session_options_t so;
  char *canon = NULL;
  int64_t run = 0;
  int rc, failed = 0, printed = 0;
  memset(&a, 0, sizeof a);
  memset(&task, 0, sizeof task);
  memset(fps, 0, sizeof fps);
  memset(&so, 0, sizeof so);
  if ((rc = parse(h, argc, argv, &a)) != MI_HOST_OK) return rc == MI_HOST_DONE ? MI_HOST_OK : rc;
  mi_error_clear(&err);
  if (load_task(a.model, &a, &task, &err) || mi_history_open(a.db, &hist, &err) ||
      mi_history_begin_run(hist, "mi-host profile", a.model, &run, &err)) {
    fprintf(stderr, "mi-host: profile: %s\n", err.message);
    rc = MI_HOST_USAGE;
    goto done;
  }
  mi_worker_options_default(&wo);
  if (!(wo.plugin_dirs = mi_host_plugin_path(h))) {
    rc = MI_HOST_FAIL;
    goto done;
  }
  wo.timeout_s = a.timeout_s;
  wo.fallback = a.fallback;
  if (mi_host_check_fallback(h, "profile", a.fallback)) {
    rc = MI_HOST_USAGE;
    goto done;
  }
  if (mi_worker_pool_create(&wo, &pool, &err)) {
    fprintf(stderr, "mi-host: profile: %s\n", err.message);
    rc = MI_HOST_FAIL;
    goto done;
  }
  if (h->json && !(js = open_memstream(&jbuf, &jlen))) {
    fprintf(stderr, "mi-host: profile: out of memory\n");
    rc = MI_HOST_FAIL;
    goto done;
  }
  for (int r = 0; r < a.rounds; r++) {
    for (int d = 0; d < a.ndev; d++) {
      const char *spec = a.devices[d];
      mi_profile_t *p = NULL;
      mi_knob_value_t kv[16];
      double medians[MAX_WORKERS_PER_FIGURE] = {0};
      mi_error_clear(&err);
      /* The knobs meant for this device: unbound ones, and those bound to it with @DEVICE. */
      memset(&so, 0, sizeof so);
      so.struct_size = (uint32_t)sizeof so;
      so.device_knobs = kv;
      /* As mi-run: a node the device refuses (an If among them: its branch still runs on the
       * device, as a nested session) runs on the host and shows as a host row. */
      so.allow_host_fallback = 1;
      for (int k = 0; k < a.nknob; k++)
        if (!a.knob_dev[k] || !strcmp(a.knob_dev[k], spec))
          kv[so.device_knob_count++] = a.knobs[k];
      free(canon);
      canon = mi_config_canonical(&so);
      if (mi_worker_quarantined(pool, spec)) continue;
      if (r == 0 && a.fingerprint && mi_worker_fingerprint(pool, spec, &fps[d], &err) == MI_OK)
        mi_error_clear(&err);
      if (!err.message[0] || err.code == MI_OK)
        p = measure_in_workers(pool, spec, a.model, task.inputs, task.fixed, &so, &a.mo, a.check, a.workers, medians, &err);
      if (!p) failed++;
      if (record(hist, run, &task, spec, &fps[d], canon, p, p ? NULL : err.message, &rerr)) {
        fprintf(stderr, "mi-host: profile: cannot record: %s\n", rerr.message);
        failed++;
      }
      if (js) {
        long at = ftell(js);
        if (printed++) fputc(',', js);
        json_profile(js, spec, p, err.message, medians, a.workers, task.g);
        if (p && first_ok < 0) first_ok = at + (printed > 1);
      } else if (p) {
        print_profile(stdout, spec, p, task.g);
        if (a.workers > 1) {
          printf("  one figure from %d fresh workers, their medians (ms):", a.workers);
          for (int w = 0; w < a.workers; w++) printf(" %.4f", medians[w] * 1e3);
          printf("; the median one is shown\n");
        }
      } else {
        printf("%s: FAILED: %s%s\n", spec, err.message,
               mi_worker_quarantined(pool, spec) ? " (device quarantined)" : "");
      }
      fflush(stdout);
      mi_profile_destroy(p);
    }
  }
  if (js) {
    fclose(js);
    js = NULL;
    /* The first good result's fields also sit at the top level, for the one-device case. */
    printf("{\"model\":");
    mi_json_string(stdout, a.model);
    printf(",\"failed\":%d,\"results\":[%s]", failed, jbuf ? jbuf : "");
    if (first_ok >= 0 && jbuf) {
      int depth = 0;
      size_t end = (size_t)first_ok;
      /* find the end of that object */
      for (int in_str = 0; jbuf[end]; end++) {
        char c = jbuf[end];
        if (in_str) {
          if (c == '\\') end++;
          else if (c == '"')
            in_str = 0;
        } else if (c == '"')
          in_str = 1;
        else if (c == '{')
          depth++;
        else if (c == '}' && --depth == 0)
          break;
      }
      printf(",%.*s", (int)(end - (size_t)first_ok - 1), jbuf + first_ok + 1);
    }
    printf("}\n");
  }
  rc = failed ? MI_HOST_FAIL : MI_HOST_OK;
done:
  if (js) fclose(js);
  free(jbuf);
  mi_worker_pool_destroy(pool);
  mi_history_close(hist);
  free(task.features);
  mi_graph_destroy(task.g);
  free(canon);
  return rc;
}
