/* report.c - what mi-run reports: latency statistics, output files, text and JSON summaries. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mi_cli.h"
#include "mi_run.h"

/* ", each after N ms idle" for --gap, else "". */
static const char *gap_text(double gap_ms) {
  static char buf[64];
  if (!(gap_ms > 0)) return "";
  snprintf(buf, sizeof buf, ", each after %.6g ms idle", gap_ms);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Percentile with linear interpolation between the closest ranks (numpy's default). */
static double percentile(const double *sorted, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)pos;
  if (lo >= n - 1) return sorted[n - 1];
  return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

void run_stats_compute(const double *samples, int n, run_stats_t *out) {
  double *s, sum = 0, var = 0;
  memset(out, 0, sizeof *out);
  if (n <= 0 || !(s = malloc((size_t)n * sizeof *s))) return;
  memcpy(s, samples, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  for (int i = 0; i < n; i++) sum += s[i];
  out->mean = sum / n;
  for (int i = 0; i < n; i++) var += (s[i] - out->mean) * (s[i] - out->mean);
  /* Sample standard deviation over the mean; one run has no spread to speak of. */
  out->cv = n > 1 && out->mean > 0 ? sqrt(var / (n - 1)) / out->mean : 0;
  out->median = percentile(s, n, 0.5);
  out->p10 = percentile(s, n, 0.1);
  out->p90 = percentile(s, n, 0.9);
  out->count = n;
  free(s);
}

/* Replaces characters unsafe in file names by '_' ("." and ".." become "_"). */
static void safe_name(const char *name, char *out, size_t cap) {
  size_t n = 0;
  for (; name[n] && n + 1 < cap; n++) {
    char c = name[n];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '-' || c == '_';
    out[n] = ok ? c : '_';
  }
  out[n] = '\0';
  if (n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) snprintf(out, cap, "_");
}

int32_t run_write_outputs(const mi_graph_t *g, const char *dir, mi_array_t *const *outputs,
                          mi_error_t *err) {
  int32_t rc = mi_cli_make_dirs(dir, err);
  for (int32_t i = 0; i < g->output_count && rc == MI_OK; i++) {
    char safe[200], path[4400];
    safe_name(g->tensors[g->outputs[i]].name, safe, sizeof safe);
    snprintf(path, sizeof path, "%s/%s.npy", dir, safe);
    rc = mi_npy_save(path, outputs[i], err);
  }
  return rc;
}

static void print_dims(FILE *f, const mi_array_t *a) {
  fputc('[', f);
  for (int32_t d = 0; d < a->rank; d++) fprintf(f, "%s%lld", d ? "," : "", (long long)a->dims[d]);
  fputc(']', f);
}

/* The names of the fallback nodes that ran on the fallback device (on = 1) or the reference. */
static void fallback_names(FILE *f, const run_summary_t *s, int32_t nf, int on) {
  int k = 0;
  for (int32_t i = 0; i < nf; i++)
    if (mi_session_fallback_where(s->session, i, NULL, NULL) == on)
      fprintf(f, "%s%s", k++ ? ", " : "", mi_session_fallback_node(s->session, i));
}

/* "fallback nodes: 97 on blis-cpu:0 (a, b, ...), 3 on the reference (c, ...)", or "none". */
static void print_fallback(FILE *f, const run_summary_t *s, int32_t nf) {
  int32_t on = mi_session_fallback_device_count(s->session);
  fputs("fallback nodes: ", f);
  if (!nf) fputs("none", f);
  if (on) {
    fprintf(f, "%d on %s (", (int)on, s->fallback ? s->fallback : "the fallback device");
    fallback_names(f, s, nf, 1);
    fputc(')', f);
  }
  if (nf > on) {
    fprintf(f, "%s%d on the reference (", on ? ", " : "", (int)(nf - on));
    fallback_names(f, s, nf, 0);
    fputc(')', f);
  }
  fputc('\n', f);
}

int32_t run_print_summary(FILE *f, const run_summary_t *s, mi_error_t *err) {
  int32_t nf = mi_session_fallback_count(s->session);
  uint64_t planned = 0, unplanned = 0, live = 0, in = 0, out = 0;
  fprintf(f, "model: %s\ndevice: %s\n", s->opts->model, s->opts->device);
  fprintf(f, "constant folding: %d nodes folded\n", (int)s->folded);
  if (s->xf) run_print_passes(f, s->xf, 0);
  if (s->session && mi_session_kernel_count(s->session) >= 0)
    fprintf(f, "device kernels: %d\n", (int)mi_session_kernel_count(s->session));
  if (mi_session_memory(s->session, &planned, &unplanned, &live))
    fprintf(f, "tensor memory: %.1f MiB planned (one buffer per tensor: %.1f MiB; most live at one step: %.1f MiB)\n",
            (double)planned / 1048576.0, (double)unplanned / 1048576.0, (double)live / 1048576.0);
  if (mi_session_transfers(s->session, &in, &out))
    fprintf(f, "host-device copies: %.2f MiB to the device, %.2f MiB back per run\n", (double)in / 1048576.0,
            (double)out / 1048576.0);
  for (int32_t i = 0; i < mi_session_unfused_count(s->session); i++)
    fprintf(f, "not fused: %s\n", mi_session_unfused(s->session, i));
  print_fallback(f, s, nf);
  for (int32_t i = 0; i < s->g->output_count; i++) {
    fprintf(f, "output '%s': %s ", s->g->tensors[s->g->outputs[i]].name,
            mi_dtype_name(s->outputs[i]->dtype));
    print_dims(f, s->outputs[i]);
    if (s->opts->output_dir) {
      char safe[200];
      safe_name(s->g->tensors[s->g->outputs[i]].name, safe, sizeof safe);
      fprintf(f, " -> %s/%s.npy", s->opts->output_dir, safe);
    }
    fputc('\n', f);
  }
  fprintf(f,
          "latency (ms, host wall clock): median %.4f  p10 %.4f  p90 %.4f  cv %.2f%%  "
          "(%d runs after %d warm-up%s)\n",
          s->latency.median, s->latency.p10, s->latency.p90,
          s->latency.cv * 100.0, s->latency.count, s->warmup, gap_text(s->opts->gap_ms));
  if (s->has_device_time)
    fprintf(f,
            "device time (ms, device timer, device kernels only): median %.4f  p10 %.4f  "
            "p90 %.4f\n",
            s->device_time.median, s->device_time.p10, s->device_time.p90);
  if (s->checked) {
    fprintf(f, "check: outputs within %.3g (relative L2) of the reference interpreter's (tolerance %.2g)",
            s->check_error, MI_OUTPUT_TOLERANCE);
    if (s->check_flipped)
      fprintf(f, "; %lld element(s) of outputs computed through a comparison set aside (moved peaks or classes)",
              (long long)s->check_flipped);
    fputc('\n', f);
  }
  return s->prof ? run_prof_print(f, s->prof, s, 0, err) : MI_OK;
}

void run_json_string(FILE *f, const char *str) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void json_stats(FILE *f, const run_stats_t *st) {
  fprintf(f, "{\"median\": %.6g, \"p10\": %.6g, \"p90\": %.6g, \"cv\": %.6g, \"repeats\": %d}",
          st->median, st->p10, st->p90, st->cv, st->count);
}

int32_t run_print_json(FILE *f, const run_summary_t *s, mi_error_t *err) {
  int32_t rc = MI_OK;
  int32_t nf = mi_session_fallback_count(s->session);
  uint64_t planned = 0, unplanned = 0, live = 0, in = 0, out = 0;
  fputs("{\"model\": ", f);
  run_json_string(f, s->opts->model);
  fputs(", \"device\": ", f);
  run_json_string(f, s->opts->device);
  fputs(", \"outputs\": [", f);
  for (int32_t i = 0; i < s->g->output_count; i++) {
    if (i) fputs(", ", f);
    run_json_string(f, s->g->tensors[s->g->outputs[i]].name);
  }
  fputs("], \"output_shapes\": [", f);
  for (int32_t i = 0; i < s->g->output_count; i++) {
    fputs(i ? ", " : "", f);
    print_dims(f, s->outputs[i]);
  }
  fputs("], \"fallback_nodes\": [", f);
  for (int32_t i = 0; i < nf; i++) {
    if (i) fputs(", ", f);
    run_json_string(f, mi_session_fallback_node(s->session, i));
  }
  fputs("], \"fallback_device\": ", f);
  if (s->fallback) run_json_string(f, s->fallback);
  else
    fputs("null", f);
  fprintf(f, ", \"fallback_on_device\": %d, \"fallback_on_reference\": %d",
          (int)mi_session_fallback_device_count(s->session),
          (int)(nf - mi_session_fallback_device_count(s->session)));
  fputs(", \"latency_ms\": ", f);
  json_stats(f, &s->latency);
  fputs(", \"cpu_ms\": ", f);
  json_stats(f, &s->cpu_time);
  fprintf(f, ", \"warmup\": %d, \"gap_ms\": %.6g, \"folded_nodes\": %d", s->warmup, s->opts->gap_ms,
          (int)s->folded);
  /* the kernel's record: whether a thread ran AVX-512 code in the timed runs (null: no record) */
  fprintf(f, ", \"avx512_in_timed_runs\": %s",
          s->avx512_timed > 0 ? "true" : s->avx512_timed == 0 ? "false"
                                                              : "null");
  if (mi_session_kernel_count(s->session) >= 0)
    fprintf(f, ", \"device_kernels\": %d", (int)mi_session_kernel_count(s->session));
  if (mi_session_memory(s->session, &planned, &unplanned, &live))
    fprintf(f, ", \"tensor_memory\": {\"planned_bytes\": %llu, \"unplanned_bytes\": %llu, \"live_peak_bytes\": %llu}",
            (unsigned long long)planned, (unsigned long long)unplanned, (unsigned long long)live);
  if (mi_session_transfers(s->session, &in, &out))
    fprintf(f, ", \"transfers\": {\"to_device_bytes\": %llu, \"to_host_bytes\": %llu}", (unsigned long long)in,
            (unsigned long long)out);
  if (s->rss_peak)
    fprintf(f, ", \"rss\": {\"before_create_bytes\": %llu, \"peak_bytes\": %llu}",
            (unsigned long long)s->rss_before_create, (unsigned long long)s->rss_peak);
  if (s->xf) run_print_passes(f, s->xf, 1);
  if (s->has_device_time) {
    fputs(", \"device_time_ms\": ", f);
    json_stats(f, &s->device_time);
  }
  if (s->checked)
    fprintf(f, ", \"check_max_error\": %.6g, \"check_flipped\": %lld", s->check_error, (long long)s->check_flipped);
  if (s->opts->output_dir) {
    fputs(", \"output_dir\": ", f);
    run_json_string(f, s->opts->output_dir);
  }
  if (s->prof) rc = run_prof_print(f, s->prof, s, 1, err);
  fputs("}\n", f);
  return rc;
}
