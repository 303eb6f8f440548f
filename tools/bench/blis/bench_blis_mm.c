/* bench_blis_mm.c - one MatMul shape with a constant B (-> Add of a bias over the columns, as a linear
 * layer) on blis-cpu, kernel_run only: the default (FP32, matmul.blis's packed tiles) and
 * matmul.packed_bf16 prepared once each, then R interleaved rounds (the order alternating) of `reps`
 * runs of each; per round each variant's min; prints the median over rounds of those mins per
 * variant and the ratio FP32 / BF16 per round (median and range). One thread: process CPU time (a
 * loaded machine steals wall time, not CPU time); threads=N: wall time.
 * Usage: bench_blis_mm BUILD M K N [rounds [reps]] [threads=N] [cold] [nobias]
 * "cold": a 64 MiB write between runs, so B comes from memory as in a model whose other layers
 * pushed it out (a decoder's per-token weights). */
#include <time.h>

#include "bench_util.h"
#include "drive_blis.h"

#define FLUSH_FLOATS (16 * 1024 * 1024)
#define MAXR 64

static int64_t g_threads = 1;

static double now_s(void) {
  struct timespec t;
  if (g_threads <= 1) return bench_cpu_s();
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct prepared {
  mi_kernel_t *k;
  mi_buffer_t *ib, *ob;
} prepared_t;

static int32_t prepare(tb_plugin_t *p, tb_t *b, const char *variant, const float *x, prepared_t *out) {
  mi_error_t err = {0, ""};
  mi_kernel_desc_t d;
  mi_knob_value_t kv[1] = {{"threads", 1, 0.}};
  uint64_t ib_bytes = (uint64_t)mi_sdk_numel(&b->t[b->kin[0]]) * 4u;
  uint64_t ob_bytes = (uint64_t)mi_sdk_numel(&b->t[b->kout[0]]) * 4u;
  int32_t rc;
  kv[0].i = g_threads;
  memset(out, 0, sizeof *out);
  tb_desc(b, &d, variant, kv, 1);
  rc = p->api->kernel_prepare(p->ctx, 0, &d, &out->k, &err);
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, ib_bytes, &out->ib, &err);
  if (rc == MI_OK) rc = p->api->buffer_write(p->ctx, out->ib, 0, x, ib_bytes, &err);
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, ob_bytes, &out->ob, &err);
  if (rc == MI_OK) rc = p->api->kernel_run(p->ctx, out->k, &out->ib, 1, &out->ob, 1, NULL, &err);
  if (rc != MI_OK) fprintf(stderr, "bench_blis_mm: %s: %s\n", variant ? variant : "default", err.message);
  return rc;
}

/* The min of reps timed runs. */
static double timed(tb_plugin_t *p, prepared_t *k, int reps, float *flush) {
  mi_error_t err = {0, ""};
  double best = 1e30;
  int64_t i;
  int r;
  for (r = 0; r < reps; r++) {
    double t;
    if (flush)
      for (i = 0; i < FLUSH_FLOATS; i += 16) flush[i] += 1.f;
    t = now_s();
    p->api->kernel_run(p->ctx, k->k, &k->ib, 1, &k->ob, 1, NULL, &err);
    t = now_s() - t;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  tb_plugin_t p;
  tb_t b;
  prepared_t k[2];
  int64_t m, kk, n, i, ad[2], bd[2], yd[2], nd[1];
  int rounds = 11, reps = 20, r, cold = 0, bias = 1, pos = 0, in[2], ty;
  double t[2][MAXR], ratio[MAXR];
  float *x, *w, *bv, *flush = NULL;
  if (argc < 5) {
    fprintf(stderr, "usage: bench_blis_mm BUILD M K N [rounds [reps]] [threads=N] [cold] [nobias]\n");
    return 2;
  }
  setenv("MI_BUILD", argv[1], 1);
  m = strtoll(argv[2], NULL, 10);
  kk = strtoll(argv[3], NULL, 10);
  n = strtoll(argv[4], NULL, 10);
  for (i = 5; i < argc; i++) {
    if (!strncmp(argv[i], "threads=", 8)) g_threads = strtoll(argv[i] + 8, NULL, 10);
    else if (!strcmp(argv[i], "cold"))
      cold = 1;
    else if (!strcmp(argv[i], "nobias"))
      bias = 0;
    else if (pos++ == 0)
      rounds = (int)strtol(argv[i], NULL, 10);
    else
      reps = (int)strtol(argv[i], NULL, 10);
  }
  if (m < 1 || kk < 1 || n < 1 || rounds < 1 || rounds > MAXR || reps < 1 || g_threads < 1) {
    fprintf(stderr, "bench_blis_mm: bad arguments\n");
    return 2;
  }
  if (!tb_load(&p)) return 1;
  x = malloc((size_t)(m * kk) * 4);
  w = malloc((size_t)(kk * n) * 4);
  bv = malloc((size_t)n * 4);
  if (cold) flush = calloc(FLUSH_FLOATS, sizeof *flush);
  if (!x || !w || !bv || (cold && !flush)) return 1;
  tb_fill(x, m * kk, 3);
  tb_fill(w, kk * n, 4);
  tb_fill(bv, n, 5);
  memset(&b, 0, sizeof b);
  ad[0] = m, ad[1] = kk, bd[0] = kk, bd[1] = n, yd[0] = m, yd[1] = n, nd[0] = n;
  in[0] = tb_tensor(&b, 2, ad, NULL);
  in[1] = tb_tensor(&b, 2, bd, w);
  ty = tb_tensor(&b, 2, yd, NULL);
  tb_node(&b, "MatMul", 13, 2, in, ty);
  if (bias) {
    int add[2] = {ty, tb_tensor(&b, 1, nd, bv)};
    ty = tb_tensor(&b, 2, yd, NULL);
    tb_node(&b, "Add", 14, 2, add, ty);
  }
  tb_finish(&b, ty);
  if (prepare(&p, &b, NULL, x, &k[0]) != MI_OK || prepare(&p, &b, "matmul.packed_bf16", x, &k[1]) != MI_OK) return 1;
  for (r = 0; r < rounds; r++) {
    int first = r & 1;
    t[first][r] = timed(&p, &k[first], reps, flush);
    t[1 - first][r] = timed(&p, &k[1 - first], reps, flush);
    ratio[r] = t[0][r] / t[1][r];
  }
  qsort(t[0], (size_t)rounds, sizeof(double), bench_cmp_double);
  qsort(t[1], (size_t)rounds, sizeof(double), bench_cmp_double);
  qsort(ratio, (size_t)rounds, sizeof(double), bench_cmp_double);
  printf(
      "matmul %lldx%lld by %lldx%lld%s, %lld thread(s)%s, %d rounds x %d runs: fp32 %.4f ms  bf16 %.4f ms  "
      "fp32/bf16 %.2f [%.2f-%.2f]  bf16 %.1f GFLOP/s\n",
      (long long)m, (long long)kk, (long long)kk, (long long)n, bias ? " + bias" : "", (long long)g_threads,
      cold ? ", cold" : "", rounds, reps, t[0][rounds / 2] * 1e3, t[1][rounds / 2] * 1e3, ratio[rounds / 2], ratio[0],
      ratio[rounds - 1], 2. * m * kk * n / t[1][rounds / 2] * 1e-9);
  for (i = 0; i < 2; i++) {
    p.api->buffer_free(p.ctx, k[i].ib);
    p.api->buffer_free(p.ctx, k[i].ob);
    p.api->kernel_release(p.ctx, k[i].k);
  }
  free(x);
  free(w);
  free(bv);
  free(flush);
  tb_unload(&p);
  return 0;
}
