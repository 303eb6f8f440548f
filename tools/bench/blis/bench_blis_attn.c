/* bench_blis_attn.c - attention's steps on blis-cpu, kernel_run only, by process CPU time (a shared,
 * loaded machine steals wall time, not CPU time): min and median us and GFLOP/s of one step.
 * Usage: bench_blis_attn [build dir] STEP [H M N K [reps [threads=N]]]
 *   qk:      Q [H, M, K] by K [H, N, K] through a Transpose (perm 0,2,1): the session's fold unit
 *   qk-plain: Q [H, M, K] by K^T [H, K, N] given (no Transpose)
 *   pv:      P [H, M, N] by V [H, N, K]
 *   softmax: Softmax over the last axis of [H, M, N]
 * Defaults: Moonshine tiny's encoder heads, H 8, M = N 207, K 36; reps 300. threads=N (N > 1): N
 * threads, by wall time (read the min on a loaded machine). Compare builds by running both in
 * turn, several times (MI_BUILD or the build dir argument picks the plugin). */
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "drive_blis.h"

static int64_t g_threads = 1;

static double now_s(void) {
  struct timespec t;
  if (g_threads <= 1) return bench_cpu_s();
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  static const int64_t perm3[3] = {0, 2, 1};
  tb_plugin_t p;
  tb_t b;
  mi_kernel_desc_t d;
  mi_kernel_t *k = NULL;
  mi_buffer_t *ib[2] = {0}, *ob = NULL;
  mi_run_stats_t st;
  mi_error_t err = {0, ""};
  mi_knob_value_t kv[1] = {{"threads", 1, 0.}};
  const char *step;
  int64_t h = 8, m = 207, n = 207, kd = 36, reps = 300, i;
  int a = 1, ty, in[2];
  double *s, flops;
  if (argc > 1 && strcmp(argv[1], "qk") && strcmp(argv[1], "qk-plain") && strcmp(argv[1], "pv") &&
      strcmp(argv[1], "softmax"))
    setenv("MI_BUILD", argv[a++], 1); /* the build dir */
  if (a >= argc) {
    fprintf(stderr, "usage: bench_blis_attn [build dir] qk|qk-plain|pv|softmax [H M N K [reps [threads=N]]]\n");
    return 2;
  }
  step = argv[a++];
  if (a + 3 < argc) {
    h = strtoll(argv[a], NULL, 10);
    m = strtoll(argv[a + 1], NULL, 10);
    n = strtoll(argv[a + 2], NULL, 10);
    kd = strtoll(argv[a + 3], NULL, 10);
    a += 4;
  }
  if (a < argc && strncmp(argv[a], "threads=", 8)) reps = strtoll(argv[a++], NULL, 10);
  if (a < argc && !strncmp(argv[a], "threads=", 8)) g_threads = strtoll(argv[a] + 8, NULL, 10);
  if (h < 1 || m < 1 || n < 1 || kd < 1 || reps < 1 || g_threads < 1 || h * m * n > (1 << 26)) {
    fprintf(stderr, "bench_blis_attn: sizes, reps and threads must be positive (H*M*N up to 2^26)\n");
    return 2;
  }
  if (strcmp(step, "qk") && strcmp(step, "qk-plain") && strcmp(step, "pv") && strcmp(step, "softmax")) {
    fprintf(stderr, "bench_blis_attn: unknown step '%s'\n", step);
    return 2; /* before the plugin loads: nothing to release */
  }
  kv[0].i = g_threads;
  BENCH_REQUIRE(tb_load(&p));
  memset(&b, 0, sizeof b);
  {
    int64_t qd[3] = {h, m, kd}, kn[3] = {h, n, kd}, kt[3] = {h, kd, n}, sd[3] = {h, m, n}, od[3] = {h, m, kd};
    if (!strcmp(step, "qk") || !strcmp(step, "qk-plain")) {
      int tk, tkt;
      in[0] = tb_tensor(&b, 3, qd, NULL);
      if (!strcmp(step, "qk")) {
        tk = tb_tensor(&b, 3, kn, NULL);
        tkt = tb_tensor(&b, 3, kt, NULL);
        tb_attr_is(&b, tb_node(&b, "Transpose", 13, 1, &tk, tkt), "perm", 3, perm3);
      } else {
        tkt = tb_tensor(&b, 3, kt, NULL);
      }
      in[1] = tkt;
      ty = tb_tensor(&b, 3, sd, NULL);
      tb_node(&b, "MatMul", 13, 2, in, ty);
      flops = 2.0 * (double)(h * m * n * kd);
    } else if (!strcmp(step, "pv")) {
      in[0] = tb_tensor(&b, 3, sd, NULL);
      in[1] = tb_tensor(&b, 3, kn, NULL);
      ty = tb_tensor(&b, 3, od, NULL);
      tb_node(&b, "MatMul", 13, 2, in, ty);
      flops = 2.0 * (double)(h * m * n * kd);
    } else { /* softmax */
      in[0] = tb_tensor(&b, 3, sd, NULL);
      ty = tb_tensor(&b, 3, sd, NULL);
      tb_node(&b, "Softmax", 13, 1, in, ty);
      flops = 0;
    }
  }
  tb_finish(&b, ty);
  tb_desc(&b, &d, NULL, kv, 1);
  if (p.api->kernel_prepare(p.ctx, 0, &d, &k, &err) != MI_OK) {
    fprintf(stderr, "bench_blis_attn: %s\n", err.message);
    tb_unload(&p);
    return 1;
  }
  for (i = 0; i < b.nkin; i++) {
    uint64_t bytes = (uint64_t)mi_sdk_numel(&b.t[b.kin[i]]) * 4u;
    float *x = malloc(bytes);
    BENCH_REQUIRE(x);
    tb_fill(x, (int64_t)(bytes / 4u), 3u + (unsigned)i);
    BENCH_REQUIRE(p.api->buffer_alloc(p.ctx, 0, bytes, &ib[i], &err) == MI_OK);
    BENCH_REQUIRE(p.api->buffer_write(p.ctx, ib[i], 0, x, bytes, &err) == MI_OK);
    free(x);
  }
  BENCH_REQUIRE(p.api->buffer_alloc(p.ctx, 0, (uint64_t)mi_sdk_numel(&b.t[ty]) * 4u, &ob, &err) == MI_OK);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  s = malloc((size_t)reps * sizeof *s);
  BENCH_REQUIRE(s);
  for (i = 0; i < 10; i++) BENCH_REQUIRE(p.api->kernel_run(p.ctx, k, ib, b.nkin, &ob, 1, &st, &err) == MI_OK);
  for (i = 0; i < reps; i++) {
    double t0 = now_s();
    BENCH_REQUIRE(p.api->kernel_run(p.ctx, k, ib, b.nkin, &ob, 1, &st, &err) == MI_OK);
    s[i] = now_s() - t0;
  }
  qsort(s, (size_t)reps, sizeof *s, bench_cmp_double);
  printf("%s H %lld M %lld N %lld K %lld threads %lld: min %.1f us, median %.1f us", step, (long long)h, (long long)m,
         (long long)n, (long long)kd, (long long)g_threads, s[0] * 1e6, s[reps / 2] * 1e6);
  if (flops > 0) printf(", %.1f GFLOP/s at the min", flops / s[0] * 1e-9);
  printf("\n");
  free(s);
  for (i = 0; i < b.nkin; i++) p.api->buffer_free(p.ctx, ib[i]);
  p.api->buffer_free(p.ctx, ob);
  p.api->kernel_release(p.ctx, k);
  tb_unload(&p);
  return 0;
}
