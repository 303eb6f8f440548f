/* bench_blis.c - blis-cpu GFLOP/s for Gemm (per arch and thread count) and Conv (per variant),
 * against the FMA peak measured in the same run (kernel_run only: prepared once, median of
 * repeats), and FP16 weight storage against FP32. Usage: bench_blis [build dir] [fp16]. */
#include <immintrin.h>
#include <time.h>

#include "bench_util.h"
#include "drive_blis.h"
#include "metainfer/mi_core.h"

/* The helpers count check failures; the benchmark makes no checks. */

/* Single-core FP32 FMA peak: 10 independent 8-wide FMA chains in registers hide the latency. */
static double fma_peak(void) {
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  double best = 0.;
  long it, r, n = 20000000;
  for (r = 0; r < 5; r++) {
    __m256 c0 = _mm256_set1_ps(0.f), c1 = _mm256_set1_ps(1.f), c2 = _mm256_set1_ps(2.f), c3 = _mm256_set1_ps(3.f),
           c4 = _mm256_set1_ps(4.f), c5 = _mm256_set1_ps(5.f), c6 = _mm256_set1_ps(6.f), c7 = _mm256_set1_ps(7.f),
           c8 = _mm256_set1_ps(8.f), c9 = _mm256_set1_ps(9.f);
    double t = mi_now_s();
    for (it = 0; it < n; it++) {
      c0 = _mm256_fmadd_ps(c0, m, a);
      c1 = _mm256_fmadd_ps(c1, m, a);
      c2 = _mm256_fmadd_ps(c2, m, a);
      c3 = _mm256_fmadd_ps(c3, m, a);
      c4 = _mm256_fmadd_ps(c4, m, a);
      c5 = _mm256_fmadd_ps(c5, m, a);
      c6 = _mm256_fmadd_ps(c6, m, a);
      c7 = _mm256_fmadd_ps(c7, m, a);
      c8 = _mm256_fmadd_ps(c8, m, a);
      c9 = _mm256_fmadd_ps(c9, m, a);
    }
    t = mi_now_s() - t;
    c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                       _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(_mm256_add_ps(c6, c7), _mm256_add_ps(c8, c9))));
    if (_mm256_cvtss_f32(c0) == 12345.f) puts(""); /* keeps the chains live */
    if (2. * 8 * 10 * n / t * 1e-9 > best) best = 2. * 8 * 10 * n / t * 1e-9;
  }
  return best;
}

/* The same with 16-wide AVX-512 FMAs, on CPUs that have them (0 otherwise). */
/* 24 independent chains: enough to cover the FMA latency on two (or more) pipes; with 10 chains
 * the loop was latency-bound, below what the packed conv reached (docs/benchmarks.md). */
__attribute__((target("avx512f"))) static double fma_peak512_impl(void) {
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  double best = 0.;
  long it, r, n = 10000000;
  int j;
  for (r = 0; r < 5; r++) {
    __m512 c[24], sum = _mm512_setzero_ps();
    double t;
    for (j = 0; j < 24; j++) c[j] = _mm512_set1_ps((float)j);
    t = mi_now_s();
    for (it = 0; it < n; it++) {
#pragma GCC unroll 24
      for (j = 0; j < 24; j++) c[j] = _mm512_fmadd_ps(c[j], m, a);
    }
    t = mi_now_s() - t;
    for (j = 0; j < 24; j++) sum = _mm512_add_ps(sum, c[j]);
    if (_mm512_reduce_add_ps(sum) == 12345.f) puts("");
    if (2. * 16 * 24 * n / t * 1e-9 > best) best = 2. * 16 * 24 * n / t * 1e-9;
  }
  return best;
}
static double fma_peak512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") ? fma_peak512_impl() : 0.;
}

/* Kernel time only: prepare and buffers once, one warm-up run, then `reps` timed kernel_run
 * calls; returns the median GFLOP/s (-1 when the variant is refused). */
static double time_kernel(tb_plugin_t *p, tb_t *b, const char *variant, const mi_knob_value_t *kv, int nk,
                          const float *const *ins, float *out, double flops, int reps) {
  double s[16];
  int r, i;
  mi_error_t err = {0, ""};
  mi_kernel_desc_t d;
  mi_kernel_t *k = NULL;
  mi_buffer_t *ib[TB_MAXT] = {0}, *ob = NULL;
  int32_t rc;
  uint64_t obytes = (uint64_t)mi_sdk_numel(&b->t[b->kout[0]]) * 4u;
  (void)out;
  tb_desc(b, &d, variant, kv, nk);
  rc = p->api->kernel_prepare(p->ctx, 0, &d, &k, &err);
  for (i = 0; i < b->nkin && rc == MI_OK; i++) {
    uint64_t bytes = (uint64_t)mi_sdk_numel(&b->t[b->kin[i]]) * 4u;
    rc = p->api->buffer_alloc(p->ctx, 0, bytes, &ib[i], &err);
    if (rc == MI_OK) rc = p->api->buffer_write(p->ctx, ib[i], 0, ins[i], bytes, &err);
  }
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, obytes, &ob, &err);
  if (rc == MI_OK) rc = p->api->kernel_run(p->ctx, k, ib, b->nkin, &ob, 1, NULL, &err);
  for (r = 0; r < reps && rc == MI_OK; r++) {
    double t = mi_now_s();
    rc = p->api->kernel_run(p->ctx, k, ib, b->nkin, &ob, 1, NULL, &err);
    s[r] = flops / (mi_now_s() - t) * 1e-9;
  }
  for (i = 0; i < b->nkin; i++) p->api->buffer_free(p->ctx, ib[i]);
  p->api->buffer_free(p->ctx, ob);
  p->api->kernel_release(p->ctx, k);
  if (rc != MI_OK) {
    fprintf(stderr, "  %s: %s\n", variant ? variant : "default", err.message);
    return -1.;
  }
  qsort(s, (size_t)reps, sizeof s[0], bench_cmp_double);
  return s[reps / 2];
}

/* Bytes one prepared kernel keeps (packed weights, scratch, constants it still needs): with the
 * plugin's peak_alloc_bytes counter (index 1) on a fresh instance, the peak after preparing the
 * kernel twice minus the peak after once (the second prepare's transient copies sit on top of the
 * first kernel's kept bytes). -1 when refused. */
static double kernel_bytes(tb_plugin_t *p, tb_t *b, const char *variant) {
  mi_plugin_ctx_t *ctx = NULL;
  mi_kernel_desc_t d;
  mi_kernel_t *k[2] = {NULL, NULL};
  mi_counter_sample_t cs;
  mi_error_t err = {0, ""};
  double peak[2] = {-1., -1.};
  int i;
  if (p->api->create(NULL, &ctx, &err) != MI_OK) return -1.;
  tb_desc(b, &d, variant, NULL, 0);
  for (i = 0; i < 2; i++) {
    memset(&cs, 0, sizeof cs);
    cs.struct_size = sizeof cs;
    if (p->api->kernel_prepare(ctx, 0, &d, &k[i], &err) == MI_OK &&
        p->api->counter_read(ctx, 0, 1, &cs, &err) == MI_OK && cs.has_value)
      peak[i] = cs.value;
  }
  for (i = 0; i < 2; i++)
    if (k[i]) p->api->kernel_release(ctx, k[i]);
  p->api->destroy(ctx);
  return peak[0] >= 0. && peak[1] >= 0. ? peak[1] - peak[0] : -1.;
}

/* FP16 weight storage (conv.packed_gemm_fp16) against FP32 (conv.packed_gemm): kernel GFLOP/s per
 * thread count and SIMD path, and the bytes the prepared kernel holds. */
/* A Conv kernel over input x (xd, fed at run time), weights w (wd) and output y (yd), square
 * kernel, `pads` on every side, `group` groups (the attribute is left out for 1). */
static void conv_desc(tb_t *b, const int64_t *xd, const int64_t *wd, const float *w,
                      const int64_t *yd, const int64_t *pads, int64_t group) {
  int in[2], y, node;
  memset(b, 0, sizeof *b);
  in[0] = tb_tensor(b, 4, xd, NULL);
  in[1] = tb_tensor(b, 4, wd, w);
  y = tb_tensor(b, 4, yd, NULL);
  node = tb_node(b, "Conv", 17, 2, in, y);
  tb_attr_is(b, node, "kernel_shape", 2, wd + 2);
  tb_attr_is(b, node, "pads", 4, pads);
  if (group != 1) tb_attr_i(b, node, "group", group);
  tb_finish(b, y);
}

static void fp16_section(tb_plugin_t *p, int nthreads, const char *const *simd, int nsimd) {
  /* c, hw, m, k: ResNet/MobileNet-like layers, the last two with weights larger than L2 */
  static const int64_t shapes[][4] = {{64, 56, 64, 3}, {128, 28, 256, 1}, {256, 14, 256, 3}, {512, 7, 512, 3}, {256, 4, 256, 3}};
  size_t s;
  printf("\n%-22s %-8s %-7s %10s %10s %7s %12s %12s\n", "conv (FP16 storage)", "simd", "threads", "fp32 GF/s",
         "fp16 GF/s", "ratio", "fp32 kept B", "fp16 kept B");
  for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t c = shapes[s][0], hw = shapes[s][1], m = shapes[s][2], ks = shapes[s][3];
    int64_t xd[4] = {1, c, hw, hw}, wd[4] = {m, c, ks, ks}, yd[4] = {1, m, hw, hw}, pads[4];
    int64_t xn = c * hw * hw, wn = m * c * ks * ks, i;
    float *x = malloc((size_t)xn * 4), *w = malloc((size_t)wn * 4), *y = malloc((size_t)(m * hw * hw) * 4);
    const float *ins[1] = {x};
    double flops = 2. * m * hw * hw * c * ks * ks, b32, b16;
    tb_t b;
    int th, sv;
    char name[40];
    for (i = 0; i < 4; i++) pads[i] = ks / 2;
    tb_fill(x, xn, 3);
    tb_fill(w, wn, 4);
    conv_desc(&b, xd, wd, w, yd, pads, 1);
    snprintf(name, sizeof name, "%lldx%lld %lld->%lld k%lld", (long long)hw, (long long)hw, (long long)c,
             (long long)m, (long long)ks);
    b32 = kernel_bytes(p, &b, "conv.packed_gemm");
    b16 = kernel_bytes(p, &b, "conv.packed_gemm_fp16");
    for (sv = 1; sv < nsimd; sv++) {
      if (strcmp(simd[sv], "c") == 0) continue; /* the plain C tiles: slow either way */
      for (th = 1; th <= nthreads; th++) {
        mi_knob_value_t kv[2] = {{"threads", th, 0.}, {"simd", sv, 0.}};
        double g32 = time_kernel(p, &b, "conv.packed_gemm", kv, 2, ins, y, flops, 9);
        double g16 = time_kernel(p, &b, "conv.packed_gemm_fp16", kv, 2, ins, y, flops, 9);
        if (g32 > 0 && g16 > 0)
          printf("%-22s %-8s %-7d %10.1f %10.1f %7.2f %12.0f %12.0f\n", name, simd[sv], th, g32, g16, g16 / g32, b32,
                 b16);
      }
    }
    free(x);
    free(w);
    free(y);
  }
}

int main(int argc, char **argv) {
  tb_plugin_t p;
  mi_knob_desc_t k;
  mi_error_t err = {0, ""};
  double peak;
  int64_t sizes[2] = {512, 1024};
  int si, a, th, nthreads, v;
  char choices[256], *save = NULL, *tok;
  const char *arch[16], *simd[8];
  char simd_choices[256] = "";
  int narch = 0, nsimd = 0;
  int only_fp16 = argc > 2 && strcmp(argv[2], "fp16") == 0; /* the FP16 storage table alone */
  if (argc > 1) setenv("MI_BUILD", argv[1], 1);
  if (!tb_load(&p)) return 1;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  p.api->knob_desc(p.ctx, 0, 0, &k, &err);
  nthreads = (int)k.max;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  p.api->knob_desc(p.ctx, 0, 1, &k, &err);
  snprintf(choices, sizeof choices, "%s", k.choices);
  for (tok = strtok_r(choices, "|", &save); tok && narch < 16; tok = strtok_r(NULL, "|", &save)) arch[narch++] = tok;
  { /* knob `simd` (packed GEMM and depthwise code paths): its values after auto */
    uint32_t nk = 0, ki;
    p.api->knob_count(p.ctx, 0, &nk, &err);
    for (ki = 0; ki < nk; ki++) {
      memset(&k, 0, sizeof k);
      k.struct_size = sizeof k;
      if (p.api->knob_desc(p.ctx, 0, ki, &k, &err) == MI_OK && strcmp(k.name, "simd") == 0) {
        snprintf(simd_choices, sizeof simd_choices, "%s", k.choices);
        save = NULL;
        for (tok = strtok_r(simd_choices, "|", &save); tok && nsimd < 8; tok = strtok_r(NULL, "|", &save))
          simd[nsimd++] = tok;
      }
    }
  }
  peak = fma_peak();
  printf("FMA peak (1 core, AVX2 8-wide FMA loop): %.1f GFLOP/s\n", peak);
  {
    double p512 = fma_peak512();
    if (p512 > 0.) printf("FMA peak (1 core, AVX-512 16-wide FMA loop): %.1f GFLOP/s\n", p512);
    else
      printf("FMA peak AVX-512: the CPU has no AVX-512F\n");
    if (p512 > peak) peak = p512;
    printf("%%peak1 below is against the larger of the two, one core\n\n");
  }
  printf("%-8s %-8s %-7s %10s %8s\n", "op", "arch", "threads", "GFLOP/s", "%peak1");
  for (si = only_fp16 ? 2 : 0; si < 2; si++) {
    int64_t n = sizes[si], d[2] = {n, n};
    float *A = malloc((size_t)(n * n) * 4), *B = malloc((size_t)(n * n) * 4), *C = malloc((size_t)(n * n) * 4);
    const float *ins[1] = {A};
    tb_t b;
    int x0, x1, x2;
    tb_fill(A, n * n, 1);
    tb_fill(B, n * n, 2);
    memset(&b, 0, sizeof b);
    x0 = tb_tensor(&b, 2, d, NULL);
    x1 = tb_tensor(&b, 2, d, B);
    x2 = tb_tensor(&b, 2, d, NULL);
    {
      int in[2] = {x0, x1};
      tb_node(&b, "Gemm", 13, 2, in, x2);
    }
    tb_finish(&b, x2);
    for (a = 0; a < narch; a++)
      for (th = 1; th <= nthreads; th++) {
        mi_knob_value_t kv[2] = {{"arch", a, 0.}, {"threads", th, 0.}};
        double g = time_kernel(&p, &b, "gemm.blis", kv, 2, ins, C, 2. * n * n * n, n > 512 ? 5 : 9);
        char op[16];
        snprintf(op, sizeof op, "sgemm%lld", (long long)n);
        printf("%-8s %-8s %-7d %10.1f %7.0f%%\n", op, arch[a], th, g, 100. * g / peak);
      }
    free(A);
    free(B);
    free(C);
  }
  if (!only_fp16) {
    /* A ResNet-ish 3x3 conv (64->64, 56x56) and a depthwise 3x3 (128ch, 28x28). */
    static const char *const vars[5] = {"conv.im2col_gemm", "conv.direct_nhwc", "conv.depthwise_direct", "conv.1x1_gemm",
                                        "conv.packed_gemm"};
    int64_t shapes[3][4] = {{64, 56, 64, 1}, {128, 28, 128, 128}, {128, 28, 256, 0}};
    int s;
    printf("\n%-22s %-22s %-7s %10s\n", "conv", "variant", "threads", "GFLOP/s");
    for (s = 0; s < 3; s++) {
      int64_t c = shapes[s][0], hw = shapes[s][1], m = shapes[s][2], g = s == 1 ? c : 1, ks = s == 2 ? 1 : 3;
      int64_t xd[4] = {1, c, hw, hw}, wd[4] = {m, c / g, ks, ks}, yd[4] = {1, m, hw, hw}, pads[4];
      int64_t xn = c * hw * hw, wn = m * (c / g) * ks * ks;
      float *x = malloc((size_t)xn * 4), *w = malloc((size_t)wn * 4), *y = malloc((size_t)(m * hw * hw) * 4);
      const float *ins[1] = {x};
      double flops = 2. * m * hw * hw * (c / g) * ks * ks;
      tb_t b;
      int i;
      char name[32];
      for (i = 0; i < 4; i++) pads[i] = ks / 2;
      tb_fill(x, xn, 3);
      tb_fill(w, wn, 4);
      conv_desc(&b, xd, wd, w, yd, pads, g);
      snprintf(name, sizeof name, "%lldx%lld %lld->%lld k%lld%s", (long long)hw, (long long)hw, (long long)c,
               (long long)m, (long long)ks, g > 1 ? " dw" : "");
      for (v = 0; v < 5; v++)
        for (th = 1; th <= nthreads; th++) {
          int sv, sn = v == 2 || v == 4 ? nsimd : 1; /* packed GEMM and depthwise: each simd path */
          if ((v == 2) != (g > 1) && v != 1 && v != 0 && v != 4) continue;
          if (v == 3 && ks != 1) continue;
          for (sv = sn > 1 ? 1 : 0; sv < sn; sv++) {
            mi_knob_value_t kv[2] = {{"threads", th, 0.}, {"simd", sv, 0.}};
            char vn[40];
            double gf = time_kernel(&p, &b, vars[v], kv, sn > 1 ? 2 : 1, ins, y, flops, 7);
            snprintf(vn, sizeof vn, "%s%s%s", vars[v] + 5, sn > 1 ? "/" : "", sn > 1 ? simd[sv] : "");
            if (gf > 0) printf("%-22s %-22s %-7d %10.1f\n", name, vn, th, gf);
          }
        }
      free(x);
      free(w);
      free(y);
    }
  }
  fp16_section(&p, nthreads, simd, nsimd);
  tb_unload(&p);
  return 0;
}
