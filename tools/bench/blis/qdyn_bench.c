/* qdyn_bench.c - the shared part of bench_blis_qmm and bench_blis_qconv (qdyn_bench.h). */
#include "qdyn_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zoo_bench.h"

#define MAX_REPS 200

static uint64_t g_seed = 2024;
uint32_t qb_rnd32(void) {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_seed >> 33);
}

int8_t qb_weight(void) {
  uint32_t r = qb_rnd32();
  if (r % 512 == 0) return (int8_t)((r >> 9) & 1 ? 100 + (int)((r >> 10) % 28) : -100 - (int)((r >> 10) % 29));
  return (int8_t)((int)(qb_rnd32() % 41) + (int)(qb_rnd32() % 41) + (int)(qb_rnd32() % 41) - 60);
}

static int32_t tensor(mi_graph_t *g, const char *name) { return mi_graph_add_tensor(g, name, MI_DTYPE_UNDEFINED, -1, NULL); }

mi_graph_t *qb_graph(const char *name, int xrank, const int64_t *xd, int wdtype, int wrank, const int64_t *wd,
                     const char *op, const int64_t *pads) {
  mi_graph_t *g = mi_graph_create(name);
  int64_t nw = 1, i;
  for (int r = 0; r < wrank; r++) nw *= wd[r];
  uint8_t *b = malloc((size_t)nw), bz = wdtype == MI_DTYPE_UINT8 ? 128 : 0;
  float ws = 0.0123f;
  int32_t x, q[3], bt, bzt, wst, acc, f, sc, y, ins[4], mm[2], n;
  if (!g || !b) {
    free(b);
    mi_graph_destroy(g);
    return NULL;
  }
  g->opset = 13;
  for (i = 0; i < nw; i++) b[i] = (uint8_t)(qb_weight() + (wdtype == MI_DTYPE_UINT8 ? 128 : 0));
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, xrank, xd);
  mi_graph_add_input(g, x);
  q[0] = tensor(g, "xq");
  q[1] = tensor(g, "xs");
  q[2] = tensor(g, "xz");
  bt = mi_graph_add_tensor(g, "b", wdtype, wrank, wd);
  mi_graph_set_data(g, bt, b, (size_t)nw);
  bzt = mi_graph_add_tensor(g, "bz", wdtype, 0, NULL);
  mi_graph_set_data(g, bzt, &bz, 1);
  wst = mi_graph_add_tensor(g, "ws", MI_DTYPE_FLOAT32, 0, NULL);
  mi_graph_set_data(g, wst, &ws, sizeof ws);
  acc = tensor(g, "acc");
  f = tensor(g, "f");
  sc = tensor(g, "sc");
  y = tensor(g, "y");
  mi_graph_add_output(g, y);
  mi_graph_add_node(g, "DynamicQuantizeLinear", "dq", 1, &x, 3, q);
  mm[0] = q[1];
  mm[1] = wst;
  mi_graph_add_node(g, "Mul", "sc", 2, mm, 1, &sc);
  ins[0] = q[0];
  ins[1] = bt;
  ins[2] = q[2];
  ins[3] = bzt;
  n = mi_graph_add_node(g, op, "op", 4, ins, 1, &acc);
  if (pads) mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, mi_graph_add_node(g, "Cast", "cast", 1, &acc, 1, &f), "to", 1);
  mm[0] = f;
  mm[1] = sc;
  mi_graph_add_node(g, "Mul", "mul", 2, mm, 1, &y);
  free(b);
  return g;
}

mi_array_t *qb_input(int rank, const int64_t *dims) {
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, rank, dims);
  int64_t n = 1;
  if (!a) return NULL;
  for (int r = 0; r < rank; r++) n *= dims[r];
  for (int64_t e = 0; e < n; e++) ((float *)a->data)[e] = (float)(qb_rnd32() % 65536) / 8192.f - 3.f;
  return a;
}

typedef struct form {
  mi_registry_t *r;
  mi_session_t *s[QB_MAX_SHAPES];
  double t[QB_MAX_SHAPES][MAX_REPS];
  int32_t nt[QB_MAX_SHAPES];
} form_t;

static int open_form(form_t *fm, const char *build, mi_graph_t **g, int ns, int32_t threads, mi_error_t *err) {
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_session_options_t o;
  mi_knob_value_t th = {"threads", threads, 0.};
  char path[1024];
  memset(fm, 0, sizeof *fm);
  snprintf(path, sizeof path, "%s/plugins", build);
  if (!(fm->r = mi_registry_create())) return 0;
  if (mi_registry_scan(fm->r, path, err) != MI_OK || mi_registry_device(fm->r, "blis-cpu:0", &p, &dev, err) != MI_OK)
    return 0;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 0;
  o.device_knob_count = 1;
  o.device_knobs = &th;
  for (int i = 0; i < ns; i++)
    if (mi_session_create(g[i], p, dev, &o, &fm->s[i], err) != MI_OK) return 0;
  return 1;
}

static void close_form(form_t *fm) {
  for (int i = 0; i < QB_MAX_SHAPES; i++) mi_session_destroy(fm->s[i]);
  mi_registry_destroy(fm->r);
}

/* The process's CPU time (a loaded machine steals wall time, not CPU time) or the wall clock. */
static int g_cpu_clock;
static double now_s(void) {
  struct timespec ts;
  if (!g_cpu_clock) return mi_now_s();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* reps runs of shape i (after one warm-up), times appended to fm. */
static int time_runs(form_t *fm, int i, const mi_array_t *in, int32_t reps, mi_error_t *err) {
  mi_array_t *out = NULL;
  for (int32_t r = -1; r < reps; r++) {
    double t0 = now_s();
    if (mi_session_run(fm->s[i], &in, 1, &out, 1, err) != MI_OK) return 0;
    if (r >= 0 && fm->nt[i] < MAX_REPS) fm->t[i][fm->nt[i]++] = now_s() - t0;
    mi_array_destroy(out);
    out = NULL;
  }
  return 1;
}

static double median(double *t, int32_t n) {
  qsort(t, (size_t)n, sizeof t[0], zb_cmp_double);
  return n ? t[n / 2] : 0.;
}

int qb_main(const qb_spec_t *spec, int argc, char **argv) {
  int64_t dims[QB_MAX_SHAPES][QB_MAX_DIMS];
  int ns = spec->nshapes, nf, i, f, round;
  const char *builds[2];
  int32_t threads = argc > 3 ? (int32_t)strtol(argv[3], NULL, 10) : 1;
  int32_t rounds = argc > 4 ? (int32_t)strtol(argv[4], NULL, 10) : 5;
  int32_t reps = argc > 5 ? (int32_t)strtol(argv[5], NULL, 10) : spec->reps;
  mi_graph_t *g[QB_MAX_SHAPES] = {0};
  mi_array_t *in[QB_MAX_SHAPES] = {0};
  static form_t fm[2];
  mi_error_t err = {0, ""};
  memcpy(dims, spec->shapes, sizeof dims);
  if (argc < 2) {
    fprintf(stderr, "usage: %s\n", spec->usage);
    return 2;
  }
  if (argc > 6) {
    for (ns = 0; ns + 6 < argc && ns < QB_MAX_SHAPES; ns++) {
      long long v[QB_MAX_DIMS] = {0};
      if (sscanf(argv[ns + 6], spec->shape_fmt, &v[0], &v[1], &v[2], &v[3], &v[4]) != spec->ndims) {
        fprintf(stderr, "%s: bad shape '%s'\n", spec->prog, argv[ns + 6]);
        return 2;
      }
      for (int d = 0; d < QB_MAX_DIMS; d++) dims[ns][d] = v[d];
    }
  }
  if (rounds < 1 || reps < 1 || rounds * reps > MAX_REPS) {
    fprintf(stderr, "%s: ROUNDS x REPEAT must be within 1..%d\n", spec->prog, MAX_REPS);
    return 2;
  }
  g_cpu_clock = spec->cpu_clock_1t && threads == 1;
  builds[0] = argv[1];
  builds[1] = argc > 2 && strcmp(argv[2], "-") != 0 ? argv[2] : NULL;
  nf = builds[1] ? 2 : 1;
  for (i = 0; i < ns; i++)
    if (!(g[i] = spec->graph(dims[i], &in[i])) || !in[i]) return 1;
  for (f = 0; f < nf; f++)
    if (!open_form(&fm[f], builds[f], g, ns, threads, &err)) {
      fprintf(stderr, "%s %s: %s\n", spec->prog, builds[f], err.message);
      return 1;
    }
  for (round = 0; round < rounds; round++) /* base and new alternate shape by shape */
    for (i = 0; i < ns; i++)
      for (f = 0; f < nf; f++)
        if (!time_runs(&fm[(f + round) % nf], i, in[i], reps, &err)) {
          fprintf(stderr, "%s: %s\n", spec->prog, err.message);
          return 1;
        }
  printf("%-20s %7s  %s", spec->header, "threads", nf == 2 ? "base ms  base GOP/s  new ms  new GOP/s  base/new\n" : "ms  GOP/s\n");
  for (i = 0; i < ns; i++) {
    double ops = spec->ops(dims[i]), t0 = median(fm[0].t[i], fm[0].nt[i]);
    char sh[64];
    spec->label(dims[i], sh, sizeof sh);
    if (nf == 2) {
      double t1 = median(fm[1].t[i], fm[1].nt[i]);
      printf("%-20s %7d  %7.3f  %10.1f  %6.3f  %9.1f  %8.2f\n", sh, threads, t1 * 1e3, ops / t1 * 1e-9, t0 * 1e3,
             ops / t0 * 1e-9, t1 / t0);
    } else {
      printf("%-20s %7d  %.3f  %.1f\n", sh, threads, t0 * 1e3, ops / t0 * 1e-9);
    }
  }
  for (f = 0; f < nf; f++) close_form(&fm[f]);
  for (i = 0; i < ns; i++) {
    mi_graph_destroy(g[i]);
    mi_array_destroy(in[i]);
  }
  return 0;
}
