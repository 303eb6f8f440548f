/* prof_blis_zoo.c - where the time of one mi-zoo model goes on blis-cpu:0: per device kernel, its
 * kernel_run time (the plugin's timer) and its wall time in the executor, against the whole
 * mi_session_run. Fused graph (BN folded, chains grouped), default variants, arch=auto.
 * Usage: prof_blis_zoo BUILD_DIR FAMILY [THREADS] [REPEAT]. Prints a table, slowest kernel first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "zoo.h"
#include "zoo_bench.h"

typedef struct row {
  int32_t node;
  double dev_us, wall_us;
} row_t;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int by_dev(const void *a, const void *b) {
  double x = ((const row_t *)a)->dev_us, y = ((const row_t *)b)->dev_us;
  return x < y ? 1 : x > y ? -1
                           : 0;
}

/* "Conv 32x16x16 -> 64x8x8 k3 s2 g1" style label of a node's shapes. */
static void label(const mi_graph_t *g, const mi_node_t *n, char *buf, size_t cap) {
  const mi_tensor_t *x = n->input_count ? &g->tensors[n->inputs[0]] : NULL;
  const mi_tensor_t *y = n->output_count ? &g->tensors[n->outputs[0]] : NULL;
  size_t o = (size_t)snprintf(buf, cap, "%-10s", n->op_type);
  int32_t d;
  for (d = 1; x && d < x->rank && o < cap; d++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", d > 1 ? "x" : " ", (long long)x->dims[d]);
  if (o < cap) o += (size_t)snprintf(buf + o, cap - o, " ->");
  for (d = 1; y && d < y->rank && o < cap; d++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", d > 1 ? "x" : " ", (long long)y->dims[d]);
  if (strcmp(n->op_type, "Conv") == 0 && n->input_count > 1 && o < cap) {
    const mi_tensor_t *w = &g->tensors[n->inputs[1]];
    int64_t grp = 1, st = 1;
    int32_t a;
    for (a = 0; a < n->attr_count; a++) {
      if (strcmp(n->attrs[a].name, "group") == 0) grp = n->attrs[a].i;
      if (strcmp(n->attrs[a].name, "strides") == 0 && n->attrs[a].count) st = n->attrs[a].ints[0];
    }
    snprintf(buf + o, cap - o, " k%lld s%lld g%lld", (long long)w->dims[w->rank - 1], (long long)st, (long long)grp);
  }
}

int main(int argc, char **argv) {
  mi_registry_t *r = mi_registry_create();
  mi_plugin_t *p = NULL;
  mi_graph_t *g = NULL, *fg = NULL;
  mi_array_t *in = NULL;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  mi_zoo_options_t opt;
  uint32_t dev = 0;
  char path[1024];
  int32_t threads, reps, i, k, nk, rc = 1;
  row_t *rows = NULL;
  double *tot = NULL, *smp = NULL, dev_sum = 0., wall_sum = 0.;
  if (argc < 3) {
    fprintf(stderr, "usage: prof_blis_zoo BUILD_DIR FAMILY [THREADS] [REPEAT]\n");
    return 2;
  }
  threads = argc > 3 ? (int32_t)strtol(argv[3], NULL, 10) : 1;
  reps = zb_repeats(argc, argv, 4, 50, INT32_MAX);
  snprintf(path, sizeof path, "%s/plugins", argv[1]);
  mi_zoo_options_default(&opt);
  if (!r || mi_registry_scan(r, path, &err) != MI_OK ||
      mi_registry_device(r, "blis-cpu:0", &p, &dev, &err) != MI_OK ||
      mi_zoo_build(argv[2], &opt, &g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK)
    goto fail;
  if (zb_fuse(g, p, dev, &fg, &err) != MI_OK) goto fail;
  {
    const mi_tensor_t *t = &fg->tensors[fg->inputs[0]];
    mi_knob_value_t kv = {"threads", threads, 0.};
    mi_session_options_t o;
    in = mi_array_create(t->dtype, t->rank, t->dims);
    if (!in) goto fail;
    mi_array_fill_random(in, 1);
    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.device_knob_count = 1;
    o.device_knobs = &kv;
    if (mi_session_create(fg, p, dev, &o, &s, &err) != MI_OK) goto fail;
  }
  nk = mi_session_kernel_count(s);
  rows = calloc((size_t)fg->node_count + 1, sizeof *rows);
  tot = calloc((size_t)reps + 1, sizeof *tot);
  /* per node and run: wall, then kernel_run time; medians per node below */
  smp = calloc((size_t)fg->node_count * 2 * (size_t)reps + 1, sizeof *smp);
  if (!rows || !tot || !smp) goto fail;
  for (i = 0; i < fg->node_count; i++) rows[i].node = i;
  for (k = -3; k < reps; k++) {
    mi_array_t *out = NULL;
    double t0 = now_us();
    if (mi_session_run(s, (const mi_array_t *const *)&in, 1, &out, 1, &err) != MI_OK) goto fail;
    if (k >= 0) tot[k] = now_us() - t0;
    mi_array_destroy(out);
    for (i = 0; i < fg->node_count && k >= 0; i++) {
      uint64_t w = 0, d = 0;
      if (mi_session_node_time(s, i, &w, &d)) {
        smp[((size_t)i * 2) * (size_t)reps + (size_t)k] = (double)w * 1e-3;
        smp[((size_t)i * 2 + 1) * (size_t)reps + (size_t)k] = (double)d * 1e-3;
      }
    }
  }
  for (i = 0; i < fg->node_count; i++) {
    double *sw = smp + (size_t)i * 2 * (size_t)reps, *sd = sw + reps;
    qsort(sw, (size_t)reps, sizeof *sw, zb_cmp_double);
    qsort(sd, (size_t)reps, sizeof *sd, zb_cmp_double);
    rows[i].wall_us = sw[reps / 2];
    rows[i].dev_us = sd[reps / 2];
    dev_sum += rows[i].dev_us;
    wall_sum += rows[i].wall_us;
  }
  qsort(tot, (size_t)reps, sizeof *tot, zb_cmp_double);
  qsort(rows, (size_t)fg->node_count, sizeof *rows, by_dev);
  printf(
      "%s: %d kernels, threads=%d, %d runs: session median %.1f us, sum of node wall medians %.1f us, "
      "sum of kernel_run medians %.1f us\n",
      argv[2], nk, threads, reps, tot[reps / 2], wall_sum, dev_sum);
  printf("%9s %9s %6s  %s\n", "run us", "wall us", "%run", "first node of the kernel");
  for (i = 0; i < fg->node_count; i++) {
    char lb[160];
    if (rows[i].wall_us <= 0.) continue;
    label(fg, &fg->nodes[rows[i].node], lb, sizeof lb);
    printf("%9.2f %9.2f %5.1f%%  %s\n", rows[i].dev_us, rows[i].wall_us,
           dev_sum > 0. ? 100. * rows[i].dev_us / dev_sum : 0., lb);
  }
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "prof_blis_zoo: %s\n", err.message);
done:
  free(rows);
  free(tot);
  free(smp);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(fg);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
  return rc;
}
