/* bench_blis_q4.c - one mi-zoo model quantized with INT8 and with INT4 weights (per channel, INT8
 * activations, BN folded) on blis-cpu:0 through mi_session: the plugin's peak_alloc_bytes after
 * the session is prepared (a fresh plugin instance per form, so the counter starts at 0), the
 * median run time, and the relative L2 error against the reference running the same QDQ graph.
 * Usage: bench_blis_q4 BUILD_DIR FAMILY THREADS [REPEAT]. Prints one line per form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "zoo.h"
#include "zoo_bench.h"

/* The plugin's peak_alloc_bytes counter; -1 when it has none. */
static double peak_bytes(const mi_plugin_t *p, uint32_t dev) {
  mi_counter_desc_t *cd = NULL;
  mi_counter_sample_t cs;
  mi_error_t err = {0};
  uint32_t n = 0, i;
  double v = -1.;
  if (mi_plugin_counters(p, dev, &cd, &n, &err) != MI_OK) return -1.;
  for (i = 0; i < n; i++)
    if (strcmp(cd[i].name, "peak_alloc_bytes") == 0) {
      memset(&cs, 0, sizeof cs);
      cs.struct_size = sizeof cs;
      if (p->api.counter_read(p->ctx, dev, i, &cs, &err) == MI_OK && cs.has_value) v = cs.value;
    }
  free(cd);
  return v;
}

static double rel_l2(const mi_array_t *a, const mi_array_t *b) {
  const float *x = a->data, *y = b->data;
  size_t i, n = a->nbytes / sizeof(float);
  double num = 0., den = 0.;
  for (i = 0; i < n; i++) {
    num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    den += (double)y[i] * y[i];
  }
  return den > 0. ? sqrt(num / den) : sqrt(num);
}

/* Quantizes g (weights `wq`), runs it `reps` times on a fresh blis-cpu instance; prints a line. */
static int bench_form(const char *build, const char *family, mi_graph_t *g, const mi_array_t *in,
                      int32_t wq, int32_t threads, int32_t reps) {
  mi_registry_t *r = mi_registry_create();
  mi_plugin_t *p = NULL;
  mi_xf_config_t *xc = mi_xf_config_create();
  mi_xf_apply_opts_t ao;
  mi_xf_samples_t *cal = NULL;
  mi_graph_t *gq = NULL;
  mi_session_t *s = NULL;
  mi_session_options_t o;
  mi_knob_value_t th = {"threads", threads, 0.};
  mi_array_t *want = NULL, *got = NULL;
  mi_error_t err = {0};
  char path[1024];
  double t[256], peak_prep = -1., peak_run = -1.;
  uint32_t dev = 0;
  int32_t i, rc = r && xc ? MI_OK : MI_ERR_OUT_OF_MEMORY;
  snprintf(path, sizeof path, "%s/plugins", build);
  if (rc == MI_OK) rc = mi_registry_scan(r, path, &err);
  if (rc == MI_OK) rc = mi_registry_device(r, "blis-cpu:0", &p, &dev, &err);
  if (rc == MI_OK) rc = mi_xf_samples_random(g, 2, 5, &cal, &err);
  if (rc == MI_OK) {
    memset(&ao, 0, sizeof ao);
    xc->fold_bn = 1;
    xc->defaults.weights = wq;
    xc->defaults.scales = MI_XF_PER_CHANNEL;
    xc->defaults.activations = MI_XF_INT8;
    ao.calib = cal;
    rc = mi_xf_apply(g, xc, &ao, &gq, NULL, &err);
  }
  if (rc == MI_OK) rc = mi_ref_run(gq, (const mi_array_t *const *)&in, 1, &want, 1, &err);
  if (rc == MI_OK) {
    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.allow_host_fallback = 1;
    o.device_knob_count = 1;
    o.device_knobs = &th;
    rc = mi_session_create(gq, p, dev, &o, &s, &err);
  }
  if (rc == MI_OK) peak_prep = peak_bytes(p, dev);
  for (i = -3; i < reps && rc == MI_OK; i++) {
    double t0 = 1e3 * mi_now_s();
    mi_array_destroy(got);
    got = NULL;
    rc = mi_session_run(s, &in, 1, &got, 1, &err);
    if (i >= 0) t[i] = 1e3 * mi_now_s() - t0;
  }
  if (rc == MI_OK) {
    peak_run = peak_bytes(p, dev);
    qsort(t, (size_t)reps, sizeof t[0], zb_cmp_double);
    printf(
        "%s %s weights: peak_alloc_bytes prepared %.0f, after runs %.0f; median %.1f us "
        "(p10 %.1f, p90 %.1f, %d runs, threads %d); host fallbacks %d; rel_l2 vs reference %.3g\n",
        family, wq == MI_XF_INT4 ? "int4" : "int8", peak_prep, peak_run, t[reps / 2] * 1e3,
        t[reps / 10] * 1e3, t[reps * 9 / 10] * 1e3, reps, threads, mi_session_fallback_count(s),
        got->nbytes == want->nbytes ? rel_l2(got, want) : -1.);
  } else {
    fprintf(stderr, "bench_blis_q4 %s: %s\n", family, err.message);
  }
  mi_array_destroy(got);
  mi_array_destroy(want);
  mi_session_destroy(s);
  mi_graph_destroy(gq);
  mi_xf_samples_destroy(cal);
  mi_xf_config_destroy(xc);
  mi_registry_destroy(r);
  return rc == MI_OK;
}

int main(int argc, char **argv) {
  mi_graph_t *g = NULL;
  mi_array_t *in = NULL;
  mi_error_t err = {0};
  mi_zoo_options_t opt;
  int32_t threads, reps;
  int ok = 0;
  if (argc < 4) {
    fprintf(stderr, "usage: bench_blis_q4 BUILD_DIR FAMILY THREADS [REPEAT]\n");
    return 2;
  }
  threads = (int32_t)strtol(argv[3], NULL, 10);
  reps = zb_repeats(argc, argv, 4, 20, 256);
  mi_zoo_options_default(&opt);
  if (mi_zoo_build(argv[2], &opt, &g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "bench_blis_q4: %s\n", err.message);
    mi_graph_destroy(g);
    return 1;
  }
  {
    const mi_tensor_t *t = &g->tensors[g->inputs[0]];
    in = mi_array_create(t->dtype, t->rank, t->dims);
  }
  if (in) {
    mi_array_fill_random(in, 1);
    ok = bench_form(argv[1], argv[2], g, in, MI_XF_INT8, threads, reps) &&
         bench_form(argv[1], argv[2], g, in, MI_XF_INT4, threads, reps);
  }
  mi_array_destroy(in);
  mi_graph_destroy(g);
  return ok ? 0 : 1;
}
