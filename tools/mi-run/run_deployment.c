/* run_deployment.c - mi-run --deployment: runs a model through the deployment runtime (the
 * table's chosen configuration, the drift monitor, fallbacks, re-adaptation). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mi_run.h"

typedef struct dep_opts {
  const char *table, *plugins, *model, *device, *output, *log;
  const char *inputs[16];
  int input_count, repeat, json, readapt, monitor;
  int32_t policy;
} dep_opts_t;

int mi_run_wants_deployment(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--deployment") == 0 || strncmp(argv[i], "--deployment=", 13) == 0) return 1;
  return 0;
}

static void usage(FILE *f) {
  fputs("usage: mi-run --deployment DIR/deployment.yaml [--plugins DIR] [--model NAME] [--device DEV]\n"
        "              [--input NAME=FILE.npy ...] [--repeat N] [--output DIR] [--json]\n"
        "              [--stack-policy use|revalidate|refuse] [--readapt] [--no-monitor] [--log FILE]\n"
        "Runs the table's chosen configuration for the model on the device, watches latency for\n"
        "drift and falls back along the stored front (docs/runtime.md).\n",
        f);
}

static int parse(int argc, char **argv, dep_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->repeat = 1;
  o->monitor = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (strncmp(a, "--deployment=", 13) == 0) {
      o->table = a + 13;
      takes = 0;
    } else if (strcmp(a, "--json") == 0) {
      o->json = 1;
      takes = 0;
    } else if (strcmp(a, "--readapt") == 0) {
      o->readapt = 1;
      takes = 0;
    } else if (strcmp(a, "--no-monitor") == 0) {
      o->monitor = 0;
      takes = 0;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (!v) {
      fprintf(stderr, "mi-run: %s needs a value (or is unknown)\n", a);
      return 0;
    } else if (strcmp(a, "--deployment") == 0) o->table = v;
    else if (strcmp(a, "--plugins") == 0) o->plugins = v;
    else if (strcmp(a, "--model") == 0) o->model = v;
    else if (strcmp(a, "--device") == 0) o->device = v;
    else if (strcmp(a, "--output") == 0) o->output = v;
    else if (strcmp(a, "--log") == 0) o->log = v;
    else if (strcmp(a, "--stack-policy") == 0) {
      if ((o->policy = mi_stack_policy_find(v)) < 0) {
        fprintf(stderr, "mi-run: --stack-policy must be use, revalidate or refuse, not '%s'\n", v);
        return 0;
      }
    } else if (strcmp(a, "--repeat") == 0) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || n < 1 || n > 1000000) {
        fprintf(stderr, "mi-run: --repeat must be an integer in 1..1000000, not '%s'\n", v);
        return 0;
      }
      o->repeat = (int)n;
    } else if (strcmp(a, "--input") == 0) {
      if (o->input_count == 16 || !strchr(v, '=')) {
        fprintf(stderr, "mi-run: --input takes NAME=FILE.npy (at most 16)\n");
        return 0;
      }
      o->inputs[o->input_count++] = v;
    } else {
      fprintf(stderr, "mi-run: unknown option '%s' with --deployment\n", a);
      return 0;
    }
    i += takes;
  }
  if (!o->table) {
    fprintf(stderr, "mi-run: --deployment needs a file\n");
    return 0;
  }
  return 1;
}

static int32_t scan(mi_registry_t *r, const char *dir, mi_error_t *err) {
  char exe[PATH_MAX], path[PATH_MAX + 16];
  ssize_t n;
  const char *env = getenv("MI_PLUGIN_PATH");
  if (dir) return mi_registry_scan(r, dir, err);
  if (env && env[0]) return mi_registry_scan_env(r, err);
  if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
    return mi_errorf(err, MI_ERR_NOT_FOUND, "cannot locate the plugin folder: use --plugins");
  exe[n] = '\0';
  if (strrchr(exe, '/')) *strrchr(exe, '/') = '\0';
  snprintf(path, sizeof path, "%s/../plugins", exe);
  return mi_registry_scan(r, path, err);
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
  if (!parse(argc, argv, &o)) {
    usage(stderr);
    return 2;
  }
  if (!(reg = mi_registry_create())) return 1;
  if ((rc = scan(reg, o.plugins, &err))) goto fail;
  mi_runtime_options_default(&ro);
  ro.model = o.model;
  ro.device = o.device;
  ro.stack_policy = o.policy;
  ro.monitor = o.monitor;
  ro.log_path = o.log;
  if ((rc = mi_runtime_open(o.table, reg, &ro, &rt, &err))) goto fail;
  g = mi_runtime_graph(rt);
  if (g->input_count > 64 || g->output_count > 64) {
    rc = mi_errorf(&err, MI_ERR_UNSUPPORTED, "more than 64 inputs or outputs");
    goto fail;
  }
  if ((rc = inputs_for(g, &o, in, &err))) goto fail;
  if (o.readapt && (rc = mi_runtime_readapt(rt, &err))) goto fail;
  if (!(lat = calloc((size_t)o.repeat, sizeof *lat))) goto fail;
  for (int r = 0; r < o.repeat; r++) {
    for (int32_t k = 0; k < g->output_count; k++) {
      mi_array_destroy(out[k]);
      out[k] = NULL;
    }
    if ((rc = mi_runtime_run(rt, (const mi_array_t *const *)in, g->input_count, out, g->output_count, &err)))
      goto fail;
    mi_runtime_info(rt, &info);
    lat[r] = info.last_ms;
  }
  if (o.output && (rc = run_write_outputs(g, o.output, out, &err))) goto fail;
  mi_runtime_info(rt, &info);
  qsort(lat, (size_t)o.repeat, sizeof *lat, cmp_d);
  if (o.json) {
    printf("{\"deployment\":\"%s\",\"model\":\"%s\",\"device\":\"%s\",\"config_id\":\"%s\",\"runs\":%d,"
           "\"latency_ms\":{\"median\":%.9g,\"min\":%.9g,\"max\":%.9g},\"clock\":\"%s\","
           "\"reference_ms\":%.9g,\"alarms\":%d,\"switches\":%d,\"readaptations\":%d,"
           "\"stack_mismatch\":%s}\n",
           o.table, info.model, info.device, info.config_id, info.runs, lat[o.repeat / 2], lat[0],
           lat[o.repeat - 1], info.device_clock ? "device" : "wall",
           isfinite(info.reference_ms) ? info.reference_ms : -1.0, info.alarms, info.switches,
           info.readaptations, info.stack_mismatch ? "true" : "false");
  } else {
    printf("deployment %s: %s on %s, configuration %s%s\n", o.table, info.model, info.device,
           info.config_id, info.stack_mismatch ? " (tuned on another software stack)" : "");
    printf("%d runs: median %.4f ms (%s clock), tuned %.4f ms; %d drift alarms, %d switches, %d re-adaptations\n",
           info.runs, lat[o.repeat / 2], info.device_clock ? "device" : "wall", info.reference_ms,
           info.alarms, info.switches, info.readaptations);
  }
  status = 0;
  goto done;
fail:
  fprintf(stderr, "mi-run: %s\n", err.message[0] ? err.message : mi_status_message(rc));
  status = rc == MI_ERR_DEVICE || rc == MI_ERR_CRASHED || rc == MI_ERR_INTERNAL || rc == MI_OK ? 1 : 2;
done:
  for (int k = 0; k < 64; k++) {
    mi_array_destroy(in[k]);
    mi_array_destroy(out[k]);
  }
  free(lat);
  mi_runtime_close(rt);
  mi_registry_destroy(reg);
  return status;
}
