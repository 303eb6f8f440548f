/* bench_blis_wq.c - weight-only quantized MatMul on blis-cpu:0 through mi_session: x [M, K] times
 * DequantizeLinear(UINT8 codes [K, N], one scale, a zero point), run on the codes (the session's
 * DequantizeLinear + MatMul kernel, MI_FUSE_DQ) and on the folded FLOAT32 weights (the same graph
 * with no_auto_fuse: the DequantizeLinear folded at create, matmul.blis's packed tiles), in
 * interleaved rounds so both see the same load: min and median us a run, the ratio of medians,
 * and GB/s of weight bytes (codes, or floats). Usage:
 *   bench_blis_wq BUILD [THREADS [ROUNDS [REPEAT [MxKxN ...]]]]
 * Defaults: 1 thread, 7 rounds of 50 runs; Moonshine tiny's decoder head (1x288x32768), an MLP's
 * down projection (1x1152x288) and a few rows of a wider layer (4x768x3072). A shape written
 * bBS:MxKxN holds 4-bit codes (0..15) with scales and zero points per block of BS rows of K
 * (opset 21's block_size, what MatMulNBits lowers to): blis_wq4.c's nibble panels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static mi_graph_t *graph(int64_t m, int64_t k, int64_t n, int64_t bs) {
  mi_graph_t *g = mi_graph_create("wq");
  int64_t xd[2] = {m, k}, wd[2] = {k, n};
  uint8_t *codes = malloc((size_t)(k * n)), zp = 128;
  float sc = 0.01f;
  uint64_t s = 42;
  int32_t x, w, st, z, wf, y;
  mi_error_t err = {0};
  if (!g || !codes) return NULL;
  g->opset = 13;
  for (int64_t i = 0; i < k * n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    codes[i] = (uint8_t)(bs ? s >> 60 : s >> 56);
  }
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd);
  mi_graph_add_input(g, x);
  w = mi_graph_add_tensor(g, "w_q", MI_DTYPE_UINT8, 2, wd);
  mi_graph_set_data(g, w, codes, (size_t)(k * n));
  free(codes);
  if (bs) { /* a scale and zero point per block of bs rows and column */
    int64_t kb = (k + bs - 1) / bs, bd[2] = {kb, n};
    float *bsc = malloc(sizeof *bsc * (size_t)(kb * n));
    uint8_t *bz = malloc((size_t)(kb * n));
    if (!bsc || !bz) return NULL;
    for (int64_t i = 0; i < kb * n; i++) {
      bsc[i] = 0.01f + 0.0001f * (float)(i % 37);
      bz[i] = (uint8_t)(7 + i % 3);
    }
    st = mi_graph_add_const_f32(g, "w_scale", 2, bd, bsc);
    z = mi_graph_add_tensor(g, "w_zp", MI_DTYPE_UINT8, 2, bd);
    mi_graph_set_data(g, z, bz, (size_t)(kb * n));
    free(bsc);
    free(bz);
  } else {
    st = mi_graph_add_const_f32(g, "w_scale", 0, NULL, &sc);
    z = mi_graph_add_tensor(g, "w_zp", MI_DTYPE_UINT8, 0, NULL);
    mi_graph_set_data(g, z, &zp, 1);
  }
  wf = mi_graph_add_tensor(g, "w", MI_DTYPE_FLOAT32, -1, NULL);
  int32_t dq = mi_graph_add_node(g, "DequantizeLinear", "w_dq", 3, (int32_t[]){w, st, z}, 1, (int32_t[]){wf});
  if (bs) {
    mi_node_set_int(g, dq, "axis", 0);
    mi_node_set_int(g, dq, "block_size", bs);
    g->opset = 21;
  }
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "MatMul", "mm", 2, (int32_t[]){x, wf}, 1, (int32_t[]){y});
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) {
    fprintf(stderr, "bench_blis_wq: %s\n", err.message);
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

static mi_session_t *open_session(const mi_graph_t *g, mi_plugin_t *p, uint32_t dev, int folded, int64_t threads) {
  mi_session_options_t o;
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.no_auto_fuse = folded;
  o.device_knob_count = 1;
  o.device_knobs = &th;
  if (mi_session_create(g, p, dev, &o, &s, &err) != MI_OK) fprintf(stderr, "bench_blis_wq: %s\n", err.message);
  return s;
}

int main(int argc, char **argv) {
  static const int64_t dflt[3][3] = {{1, 288, 32768}, {1, 1152, 288}, {4, 768, 3072}};
  int64_t threads = argc > 2 ? strtoll(argv[2], NULL, 10) : 1, rounds = argc > 3 ? strtoll(argv[3], NULL, 10) : 7;
  int64_t repeat = argc > 4 ? strtoll(argv[4], NULL, 10) : 50;
  int nshape = argc > 5 ? argc - 5 : 3;
  char path[4096];
  mi_registry_t *r;
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_error_t err = {0};
  if (argc < 2 || threads < 1 || rounds < 1 || repeat < 1) {
    fprintf(stderr, "usage: bench_blis_wq BUILD [THREADS [ROUNDS [REPEAT [MxKxN ...]]]]\n");
    return 2;
  }
  snprintf(path, sizeof path, "%s/plugins", argv[1]);
  if (!(r = mi_registry_create()) || mi_registry_scan(r, path, &err) != MI_OK ||
      mi_registry_device(r, "blis-cpu:0", &p, &dev, &err) != MI_OK) {
    fprintf(stderr, "bench_blis_wq: %s\n", err.message);
    mi_registry_destroy(r);
    return 1;
  }
  printf("threads %lld, %lld rounds of %lld runs each (codes and folded interleaved)\n", (long long)threads,
         (long long)rounds, (long long)repeat);
  printf("%-16s %10s %10s %10s %10s %7s %9s %9s\n", "shape (MxKxN)", "codes min", "codes med", "float min",
         "float med", "ratio", "codes GB/s", "float GB/s");
  for (int si = 0; si < nshape; si++) {
    int64_t d[3], bs = 0;
    mi_graph_t *g;
    mi_session_t *s[2];
    mi_array_t *x, *out = NULL;
    double *t[2];
    if (argc > 5) {
      const char *spec = argv[5 + si];
      if (spec[0] == 'b') { /* bBS:MxKxN */
        char *end;
        bs = strtoll(spec + 1, &end, 10);
        spec = *end == ':' ? end + 1 : spec;
      }
      if (sscanf(spec, "%lldx%lldx%lld", (long long *)&d[0], (long long *)&d[1], (long long *)&d[2]) != 3) {
        fprintf(stderr, "bench_blis_wq: shape '%s' is not MxKxN\n", argv[5 + si]);
        continue;
      }
    } else {
      memcpy(d, dflt[si], sizeof d);
    }
    if (!(g = graph(d[0], d[1], d[2], bs))) continue;
    s[0] = open_session(g, p, dev, 0, threads);
    s[1] = open_session(g, p, dev, 1, threads);
    x = mi_array_create(MI_DTYPE_FLOAT32, 2, (int64_t[]){d[0], d[1]});
    t[0] = calloc((size_t)(rounds * repeat), sizeof(double));
    t[1] = calloc((size_t)(rounds * repeat), sizeof(double));
    if (!s[0] || !s[1] || !x || !t[0] || !t[1]) return 1;
    mi_array_fill_random(x, 3);
    for (int64_t rd = 0; rd < rounds; rd++)
      for (int f0 = 0; f0 < 2; f0++) {
        int f = (int)((f0 + rd) & 1); /* alternate which form goes first */
        const mi_array_t *in = x;
        for (int w = 0; w < 3; w++) { /* warm: the weights back in cache as far as they fit */
          mi_session_run(s[f], &in, 1, &out, 1, &err);
          mi_array_destroy(out);
          out = NULL;
        }
        for (int64_t i = 0; i < repeat; i++) {
          double t0 = now_s();
          mi_session_run(s[f], &in, 1, &out, 1, &err);
          t[f][rd * repeat + i] = now_s() - t0;
          mi_array_destroy(out);
          out = NULL;
        }
      }
    qsort(t[0], (size_t)(rounds * repeat), sizeof(double), cmp_d);
    qsort(t[1], (size_t)(rounds * repeat), sizeof(double), cmp_d);
    {
      double mc = t[0][rounds * repeat / 2], mf = t[1][rounds * repeat / 2], kn = (double)(d[1] * d[2]);
      char lb[48];
      snprintf(lb, sizeof lb, "%s%lldx%lldx%lld", bs ? "b:" : "", (long long)d[0], (long long)d[1], (long long)d[2]);
      /* codes GB/s: bytes of the codes as the kernel reads them (4-bit: half a byte a weight) */
      printf("%-16s %10.1f %10.1f %10.1f %10.1f %7.2f %9.1f %9.1f\n", lb, t[0][0] * 1e6, mc * 1e6, t[1][0] * 1e6,
             mf * 1e6, mf / mc, (bs ? 0.5 : 1.0) * kn / mc * 1e-9, 4 * kn / mf * 1e-9);
    }
    free(t[0]);
    free(t[1]);
    mi_array_destroy(x);
    mi_session_destroy(s[0]);
    mi_session_destroy(s[1]);
    mi_graph_destroy(g);
  }
  mi_registry_destroy(r);
  return 0;
}
