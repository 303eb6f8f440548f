/* main.c - mi-run: runs an ONNX model on the reference interpreter or a plugin device, writes
 * its outputs as .npy and reports latency. Bad input is one line on stderr and exit code 2. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mi_cli.h"
#include "mi_run.h"

/* Exit status for a failure: 2 when the input was at fault, 1 when the device or host failed. */
static int exit_code(int32_t rc) {
  switch (rc) {
  case MI_ERR_DEVICE:
  case MI_ERR_OUT_OF_MEMORY:
  case MI_ERR_INTERNAL:
  case MI_ERR_CRASHED:
  case MI_ERR_TIMEOUT:
    return 1;
  default:
    return 2;
  }
}

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The device knob "threads", when the plugin declares one; else a warning. */
static int32_t threads_knob(const mi_plugin_t *p, uint32_t device, int threads,
                            mi_knob_value_t *kv, int *count, mi_error_t *err) {
  mi_knob_desc_t *knobs = NULL;
  uint32_t n = 0;
  int32_t rc;
  *count = 0;
  if (!p) {
    fprintf(stderr, "mi-run: warning: --threads is ignored on the reference interpreter\n");
    return MI_OK;
  }
  if ((rc = mi_plugin_knobs(p, device, &knobs, &n, err))) return rc;
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(knobs[i].name, "threads") == 0 && knobs[i].scope == MI_KNOB_SCOPE_DEVICE) {
      kv->name = "threads";
      kv->i = threads;
      *count = 1;
    }
  free(knobs);
  if (!*count)
    fprintf(stderr,
            "mi-run: warning: plugin '%s' has no device knob 'threads'; --threads ignored\n",
            p->name);
  return MI_OK;
}

/* Every op must be one the reference interpreter implements when it runs the whole model. */
static int32_t check_ref_ops(const mi_graph_t *g, mi_error_t *err) {
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    if (!mi_ref_supports(n->op_type, g->opset))
      return mi_errorf(err, MI_ERR_UNSUPPORTED,
                       "node '%s' (%s, opset %lld): not supported by the reference interpreter",
                       n->name ? n->name : "", n->op_type, (long long)g->opset);
  }
  return MI_OK;
}

static void free_outputs(mi_array_t **outs, int32_t n) {
  for (int32_t i = 0; outs && i < n; i++) {
    mi_array_destroy(outs[i]);
    outs[i] = NULL;
  }
}

/* A device time the wall clock contradicts (0, or more than the call took) is a lie the
 * tuner would fail the measurement for (mi_device_time_check): here it ends the run, so that
 * such a figure is never reported. */
static int32_t check_device_time(const mi_session_t *s, const char *spec, double wall_ms,
                                 mi_error_t *err) {
  uint64_t ns = 0;
  mi_error_t e;
  if (!mi_session_device_time(s, &ns) || mi_device_time_check(ns, wall_ms * 1e-3, &e) == MI_OK)
    return MI_OK;
  return mi_errorf(err, MI_ERR_DEVICE, "device '%s': %s", spec, e.message);
}

/* --check: the last run's outputs against the reference interpreter's on the same inputs,
 * with the tolerance tuning uses (MI_OUTPUT_TOLERANCE). */
static int32_t check_outputs(const mi_graph_t *g, mi_array_t **inputs, mi_array_t **outs,
                             const char *spec, run_summary_t *sum, mi_error_t *err) {
  mi_array_t **ref = calloc((size_t)g->output_count + 1, sizeof *ref);
  mi_error_t e;
  int32_t rc;
  if (!ref) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  mi_error_clear(&e);
  rc = mi_ref_run(g, (const mi_array_t *const *)inputs, g->input_count, ref, g->output_count, &e);
  if (rc) {
    rc = mi_errorf(err, rc, "--check: the reference interpreter cannot run the model: %s",
                   e.message);
  } else {
    sum->checked = 1;
    if (!mi_outputs_check_graph(g, (const mi_array_t *const *)outs, (const mi_array_t *const *)ref,
                                g->output_count, &sum->check_error, &sum->check_flipped))
      rc = mi_errorf(err, MI_ERR_DEVICE,
                     "device '%s': wrong results: relative L2 error %.3g against the "
                     "reference interpreter (tolerance %.2g)",
                     spec, sum->check_error, MI_OUTPUT_TOLERANCE);
  }
  for (int32_t i = 0; i < g->output_count; i++) mi_array_destroy(ref[i]);
  free(ref);
  return rc;
}

/* Sleeps ms milliseconds (signals do not cut it short). */
static void idle_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - 1e3 * (double)(time_t)(ms / 1e3)) * 1e6)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Warm-up runs, then timed runs, each after --gap's idle time; the last run's outputs stay in
 * `outs`. Every run's device time, warm-up included, is checked against its wall time. */
static int32_t run_timed(mi_session_t *s, const mi_graph_t *g, mi_array_t **inputs,
                         mi_array_t **outs, int warmup, int repeat, double gap_ms,
                         run_summary_t *sum,
                         run_prof_t *prof, const char *spec, mi_guard_t *guard,
                         mi_error_t *err) {
  double *lat = calloc((size_t)repeat, sizeof *lat), *dev = calloc((size_t)repeat, sizeof *dev);
  double *cpu = calloc((size_t)repeat, sizeof *cpu);
  int have_dev = 1;
  int32_t rc = MI_OK;
  double timed0 = 0;
  if (!lat || !dev || !cpu) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < warmup + repeat && rc == MI_OK; i++) {
    double t0, t1, c0, c1;
    uint64_t ns = 0;
    free_outputs(outs, g->output_count);
    if (gap_ms > 0) idle_ms(gap_ms);
    mi_guard_stage(guard, NULL, "run"); /* each run its own deadline */
    if (i == warmup) timed0 = mi_now_s() * 1e3;
    c0 = cpu_ms();
    t0 = mi_now_s() * 1e3;
    rc = mi_session_run(s, (const mi_array_t *const *)inputs, g->input_count, outs,
                        g->output_count, err);
    t1 = mi_now_s() * 1e3;
    c1 = cpu_ms();
    if (rc == MI_OK) rc = check_device_time(s, spec, t1 - t0, err);
    if (rc || i < warmup) continue;
    lat[i - warmup] = t1 - t0;
    cpu[i - warmup] = c1 - c0;
    if (prof) run_prof_take(prof, s);
    if (mi_session_device_time(s, &ns)) dev[i - warmup] = (double)ns / 1e6;
    else
      have_dev = 0;
  }
  if (rc == MI_OK) {
    sum->avx512_timed = run_avx512_within(mi_now_s() * 1e3 - timed0);
    run_stats_compute(lat, repeat, &sum->latency);
    run_stats_compute(cpu, repeat, &sum->cpu_time);
    sum->has_device_time = have_dev;
    if (have_dev) run_stats_compute(dev, repeat, &sum->device_time);
  }
  free(lat);
  free(dev);
  free(cpu);
  return rc;
}

int main(int argc, char **argv) {
  if (mi_run_wants_deployment(argc, argv)) return mi_run_deployment_main(argc, argv);
  run_opts_t o;
  mi_error_t err = {0};
  mi_graph_t *g = NULL;
  mi_array_t **inputs = NULL, **outs = NULL;
  mi_registry_t *reg = NULL;
  mi_plugin_t *plugin = NULL;
  mi_session_t *s = NULL;
  mi_knob_value_t kv = {0};
  mi_session_options_t opts;
  run_summary_t sum = {0};
  run_xf_t xf;
  run_prof_t prof = {0};
  uint32_t device = 0;
  char fb_name[160] = "";
  int32_t folded = 0;
  int warmup, repeat, status = 0;
  int32_t rc;
  mi_guard_t *guard = NULL;
  FILE *out = stdout;

  if (!run_parse_args(argc, argv, &o, &status)) {
    run_free_args(&o);
    return status;
  }
  /* Plugin code runs in a guarded child: its crash, hang or exit is one line here. */
  if (strcmp(o.device, "ref") != 0) {
    if (!run_guard(o.timeout_s, &guard, &status)) {
      run_free_args(&o);
      return status;
    }
    out = run_own_stdout();
    mi_guard_stage(guard, NULL, "model");
  }
  if ((rc = mi_onnx_load(o.model, &g, &err))) goto done;
  if ((rc = mi_graph_toposort(g, &err))) goto done;
  if ((rc = run_fix_values(g, &o, &err))) goto done;
  if ((rc = run_prepare_inputs(g, &o, &inputs, &err))) goto done;
  if ((rc = mi_graph_infer_shapes(g, &err))) goto done;
  /* With the input shapes fixed, shape subgraphs fold away: the executed graph is static; an If
   * whose condition is then known is replaced by its branch, whose own constants fold next. */
  if ((rc = mi_graph_fold_constants(g, &folded, &err))) goto done;
  {
    int32_t inlined = 0, again = 0;
    if ((rc = mi_graph_inline_ifs(g, &inlined, &err))) goto done;
    if (inlined && (rc = mi_graph_fold_constants(g, &again, &err))) goto done;
    folded += again;
  }
  memset(&opts, 0, sizeof opts);
  opts.struct_size = (uint32_t)sizeof opts;
  opts.allow_host_fallback = 1;
  opts.per_node_timing = o.profile; /* a per-layer table needs each kernel's own time */
  if (strcmp(o.device, "ref") != 0) {
    if (!(reg = mi_registry_create())) {
      rc = mi_errorf(&err, MI_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    if ((rc = run_load_plugins(reg, o.plugins_dir, o.device, guard, &plugin, &device, &err)))
      goto done;
    if ((rc = run_load_fallback(reg, o.plugins_dir, o.fallback, plugin, device, guard,
                                &opts.fallback_plugin, &opts.fallback_device, &err)))
      goto done;
    if (opts.fallback_plugin)
      snprintf(fb_name, sizeof fb_name, "%s:%u", opts.fallback_plugin->name,
               opts.fallback_device);
    mi_guard_stage(guard, NULL, "describe");
  } else if (o.fallback) {
    fprintf(stderr, "mi-run: warning: --fallback is ignored on the reference interpreter\n");
  }
  if (o.config) {
    int32_t again = 0;
    if ((rc = run_apply_config(&g, &o, plugin, device, &xf, &err))) goto done;
    if ((rc = mi_graph_fold_constants(g, &again, &err))) goto done;
    folded += again;
  }
  if (!plugin && (rc = check_ref_ops(g, &err))) goto done;
  if (o.threads > 0) {
    if ((rc = threads_knob(plugin, device, o.threads, &kv, &opts.device_knob_count, &err)))
      goto done;
    opts.device_knobs = &kv;
  }
  mi_guard_stage(guard, NULL, "prepare");
  mi_process_reset_peak();
  sum.rss_before_create = mi_process_memory_bytes("VmRSS");
  if ((rc = mi_session_create(g, plugin, device, &opts, &s, &err))) goto done;
  outs = calloc((size_t)g->output_count + 1, sizeof *outs);
  if (!outs) {
    rc = mi_errorf(&err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  repeat = o.repeat > 0 ? o.repeat : o.profile ? 20
                                               : 1;
  warmup = o.warmup >= 0 ? o.warmup : o.repeat > 0 || o.profile ? 2
                                                                : 0;
  if (o.profile && (rc = run_prof_init(&prof, g, repeat, &err))) goto done;
  if ((rc = run_timed(s, g, inputs, outs, warmup, repeat, o.gap_ms, &sum, o.profile ? &prof : NULL,
                      o.device, guard, &err)))
    goto done;
  sum.rss_peak = mi_process_memory_bytes("VmHWM");
  if (o.check && plugin) {
    mi_guard_stage(guard, NULL, "check");
    if ((rc = check_outputs(g, inputs, outs, o.device, &sum, &err))) goto done;
  } else if (o.check) {
    fprintf(stderr, "mi-run: warning: --check is ignored on the reference interpreter\n");
  }
  mi_guard_stage(guard, NULL, "output");
  if (o.output_dir && (rc = run_write_outputs(g, o.output_dir, outs, &err))) goto done;
  sum.opts = &o;
  sum.g = g;
  sum.outputs = outs;
  sum.session = s;
  sum.warmup = warmup;
  sum.folded = folded;
  sum.fallback = fb_name[0] ? fb_name : NULL;
  sum.xf = o.config ? &xf : NULL;
  sum.prof = o.profile ? &prof : NULL;
  if (o.json) rc = run_print_json(out, &sum, &err);
  else
    rc = run_print_summary(out, &sum, &err);
  if (rc) goto done;
  rc = run_close_stdout(out, &err);
  out = NULL;
done:
  if (rc) {
    /* One line, whatever the message carried. */
    for (char *c = err.message; *c; c++)
      if (*c == '\n' || *c == '\r') *c = ' ';
    fprintf(stderr, "mi-run: %s\n", err.message[0] ? err.message : mi_status_message(rc));
    status = exit_code(rc);
  }
  if (out && out != stdout) fclose(out);
  mi_guard_stage(guard, NULL, "release");
  if (g) {
    free_outputs(outs, g->output_count);
    for (int32_t i = 0; inputs && i < g->input_count; i++) mi_array_destroy(inputs[i]);
  }
  free(outs);
  free(inputs);
  run_prof_free(&prof);
  mi_session_destroy(s);
  mi_registry_destroy(reg);
  mi_graph_destroy(g);
  run_free_args(&o);
  mi_guard_end(guard);
  return status;
}
