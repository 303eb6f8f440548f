/* bench_blis_qconv.c - the dynamically quantized conv of ONNX Runtime's quantizer
 * (DynamicQuantizeLinear -> ConvInteger (UINT8 codes, UINT8 weights with zero point 128) -> Cast
 * -> Mul by the scale product) on blis-cpu:0 through mi_session, for a few C x H x W -> M shapes of
 * K x K kernels (stride 1, "same" pads): the median run time and the GOP/s (2 M C K K H W
 * operations) of one or two builds, in interleaved rounds so both see the same load; at 1 thread
 * by the process's CPU time (a shared machine steals wall time), at more by wall time.
 * Usage: bench_blis_qconv BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [CxHxW:MxK ...]]]];
 * MI_BLIS_MAX_SIMD caps both plugins as usual (e.g. avx2). Default shapes: IS-Net's heaviest
 * 3x3 convs at 1024x1024 (docs/benchmarks.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi.h"
#include "zoo_bench.h"

#define MAX_SHAPES 8
#define MAX_REPS 200

static uint64_t g_seed = 2024;
static uint32_t rnd32(void) {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_seed >> 33);
}

static int32_t tensor(mi_graph_t *g, const char *name) { return mi_graph_add_tensor(g, name, MI_DTYPE_UNDEFINED, -1, NULL); }

/* A weight as trained ones look: about normal (three uniforms, spread 20), one in 512 out at
 * 100..127 in magnitude, so a few pairs in ten thousand reach past vpmaddubsw's int16 range. */
static int8_t weight(void) {
  uint32_t r = rnd32();
  if (r % 512 == 0) return (int8_t)((r >> 9) & 1 ? 100 + (int)((r >> 10) % 28) : -100 - (int)((r >> 10) % 29));
  return (int8_t)((int)(rnd32() % 41) + (int)(rnd32() % 41) + (int)(rnd32() % 41) - 60);
}

/* The graph for a C x H x W input, M outputs, K x K kernel (d: C, H, W, M, K). */
static mi_graph_t *qconv_graph(const int64_t *d) {
  mi_graph_t *g = mi_graph_create("qconv");
  int64_t xd[4] = {1, d[0], d[1], d[2]}, bd[4] = {d[3], d[0], d[4], d[4]}, i, k = d[0] * d[4] * d[4], n = d[3];
  int64_t pads[4] = {d[4] / 2, d[4] / 2, d[4] / 2, d[4] / 2};
  uint8_t *b = malloc((size_t)(k * n)), bz = 128;
  float ws = 0.0123f;
  int32_t x, q[3], bt, bzt, wst, acc, f, sc, y, ins[4], mm[2];
  if (!g || !b) {
    free(b);
    mi_graph_destroy(g);
    return NULL;
  }
  g->opset = 13;
  for (i = 0; i < k * n; i++) b[i] = (uint8_t)(weight() + 128);
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  q[0] = tensor(g, "xq");
  q[1] = tensor(g, "xs");
  q[2] = tensor(g, "xz");
  bt = mi_graph_add_tensor(g, "b", MI_DTYPE_UINT8, 4, bd);
  mi_graph_set_data(g, bt, b, (size_t)(k * n));
  bzt = mi_graph_add_tensor(g, "bz", MI_DTYPE_UINT8, 0, NULL);
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
  mi_node_set_ints(g, mi_graph_add_node(g, "ConvInteger", "conv", 4, ins, 1, &acc), "pads", 4, pads);
  mi_node_set_int(g, mi_graph_add_node(g, "Cast", "cast", 1, &acc, 1, &f), "to", 1);
  mm[0] = f;
  mm[1] = sc;
  mi_graph_add_node(g, "Mul", "mul", 2, mm, 1, &y);
  free(b);
  return g;
}

typedef struct form {
  mi_registry_t *r;
  mi_session_t *s[MAX_SHAPES];
  double t[MAX_SHAPES][MAX_REPS];
  int32_t nt[MAX_SHAPES];
} form_t;

static int open_form(form_t *fm, const char *build, mi_graph_t **g, int ns, int32_t threads, mi_error_t *err) {
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_session_options_t o;
  mi_knob_value_t th = {"threads", threads, 0.};
  char path[1024];
  int i;
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
  for (i = 0; i < ns; i++)
    if (mi_session_create(g[i], p, dev, &o, &fm->s[i], err) != MI_OK) return 0;
  return 1;
}

static void close_form(form_t *fm) {
  for (int i = 0; i < MAX_SHAPES; i++) mi_session_destroy(fm->s[i]);
  mi_registry_destroy(fm->r);
}

/* 1 thread: the process's CPU time (a loaded machine steals wall time, not CPU time); else wall. */
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

int main(int argc, char **argv) {
  int64_t dims[MAX_SHAPES][5] = {{64, 512, 512, 64, 3}, {128, 512, 512, 64, 3}, {256, 256, 256, 64, 3}, {64, 256, 256, 128, 3}, {32, 512, 512, 64, 3}, {512, 32, 32, 512, 3}};
  int ns = 6, nf, i, f, round;
  const char *builds[2];
  int32_t threads = argc > 3 ? (int32_t)strtol(argv[3], NULL, 10) : 1;
  int32_t rounds = argc > 4 ? (int32_t)strtol(argv[4], NULL, 10) : 5;
  int32_t reps = argc > 5 ? (int32_t)strtol(argv[5], NULL, 10) : 3;
  mi_graph_t *g[MAX_SHAPES] = {0};
  mi_array_t *in[MAX_SHAPES] = {0};
  static form_t fm[2];
  mi_error_t err = {0, ""};
  g_cpu_clock = threads == 1;
  if (argc < 2) {
    fprintf(stderr, "usage: bench_blis_qconv BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [CxHxW:MxK ...]]]]\n");
    return 2;
  }
  if (argc > 6) {
    for (ns = 0; ns + 6 < argc && ns < MAX_SHAPES; ns++)
      if (sscanf(argv[ns + 6], "%lldx%lldx%lld:%lldx%lld", (long long *)&dims[ns][0], (long long *)&dims[ns][1],
                 (long long *)&dims[ns][2], (long long *)&dims[ns][3], (long long *)&dims[ns][4]) != 5)
        return 2;
  }
  if (rounds < 1 || reps < 1 || rounds * reps > MAX_REPS) {
    fprintf(stderr, "bench_blis_qconv: ROUNDS x REPEAT must be within 1..%d\n", MAX_REPS);
    return 2;
  }
  builds[0] = argv[1];
  builds[1] = argc > 2 && strcmp(argv[2], "-") != 0 ? argv[2] : NULL;
  nf = builds[1] ? 2 : 1;
  for (i = 0; i < ns; i++) {
    int64_t xd[4] = {1, dims[i][0], dims[i][1], dims[i][2]};
    if (!(g[i] = qconv_graph(dims[i])) || !(in[i] = mi_array_create(MI_DTYPE_FLOAT32, 4, xd))) return 1;
    for (int64_t e = 0; e < xd[1] * xd[2] * xd[3]; e++) ((float *)in[i]->data)[e] = (float)(rnd32() % 65536) / 8192.f - 3.f;
  }
  for (f = 0; f < nf; f++)
    if (!open_form(&fm[f], builds[f], g, ns, threads, &err)) {
      fprintf(stderr, "bench_blis_qconv %s: %s\n", builds[f], err.message);
      return 1;
    }
  for (round = 0; round < rounds; round++) /* base and new alternate shape by shape */
    for (i = 0; i < ns; i++)
      for (f = 0; f < nf; f++)
        if (!time_runs(&fm[(f + round) % nf], i, in[i], reps, &err)) {
          fprintf(stderr, "bench_blis_qconv: %s\n", err.message);
          return 1;
        }
  printf("shape (CxHxW:MxK)    threads  %s", nf == 2 ? "base ms  base GOP/s  new ms  new GOP/s  base/new\n" : "ms  GOP/s\n");
  for (i = 0; i < ns; i++) {
    double ops = 2. * (double)(dims[i][0] * dims[i][1] * dims[i][2] * dims[i][3] * dims[i][4] * dims[i][4]),
           t0 = median(fm[0].t[i], fm[0].nt[i]);
    char sh[64];
    snprintf(sh, sizeof sh, "%lldx%lldx%lld:%lldx%lld", (long long)dims[i][0], (long long)dims[i][1],
             (long long)dims[i][2], (long long)dims[i][3], (long long)dims[i][4]);
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
