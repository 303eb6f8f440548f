/* bench_blis_conv.c - one Conv shape on blis-cpu, kernel_run only, by process CPU time (a shared,
 * loaded machine steals wall time, not CPU time): min and median ms and GFLOP/s per SIMD level.
 * Usage: bench_blis_conv [build dir] C HxW M K[xKW] [stride [group [dilation [reps [cold] [VARIANT]
 * [threads=N] [pad=P] [auto]]]]]; K or KxKW: the kernel (KxKW: K rows of KW taps, e.g. 1x3 for a 1-D
 * conv on a 1xW plane); "cold": caches flushed before every timed run; VARIANT (conv.*): that
 * variant, else the default; threads=N (N > 1): N threads, by wall time (CPU time would count every
 * thread; on a loaded machine read the min: the runs where all N threads had a core); pad=P: P on
 * every side of the kernel's spatial axes of more than one tap (default: "same", (K-1)*dil/2); a
 * 1xKW kernel on a 1xW plane (a 1-D conv) is strided along the row only; "auto": the default SIMD
 * level alone (conv.packed_gemm_bf16 has no `simd` knob: every level runs its AVX-512 tiles). */
#include <time.h>

#include "bench_util.h"
#include "drive_blis.h"

static const char *g_variant; /* the VARIANT argument; NULL: the plugin's default */
static int64_t g_threads = 1; /* threads=N */
static int g_auto_only;       /* "auto": the default SIMD level alone */

static double now_s(void) {
  struct timespec t;
  if (g_threads <= 1) return bench_cpu_s();
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Floats written between timed runs with "cold" (64 MiB: past any last-level cache). */
#define FLUSH_FLOATS (16 * 1024 * 1024)

/* Prepared once, one warm-up run, then reps timed runs into s[] (seconds); the kernel's status. */
static int32_t time_conv(tb_plugin_t *p, tb_t *b, const mi_knob_value_t *kv, int nk, const float *x, int reps,
                         double *s, float *flush) {
  mi_error_t err = {0, ""};
  mi_kernel_desc_t d;
  mi_kernel_t *k = NULL;
  mi_buffer_t *ib = NULL, *ob = NULL;
  uint64_t ib_bytes = (uint64_t)mi_sdk_numel(&b->t[b->kin[0]]) * 4u;
  uint64_t ob_bytes = (uint64_t)mi_sdk_numel(&b->t[b->kout[0]]) * 4u;
  int32_t rc;
  int r;
  int64_t i;
  tb_desc(b, &d, g_variant, kv, nk);
  rc = p->api->kernel_prepare(p->ctx, 0, &d, &k, &err);
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, ib_bytes, &ib, &err);
  if (rc == MI_OK) rc = p->api->buffer_write(p->ctx, ib, 0, x, ib_bytes, &err);
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, ob_bytes, &ob, &err);
  if (rc == MI_OK) rc = p->api->kernel_run(p->ctx, k, &ib, 1, &ob, 1, NULL, &err);
  for (r = 0; r < reps && rc == MI_OK; r++) {
    double t;
    if (flush) /* what the layers before it leave in the caches: none of its data */
      for (i = 0; i < FLUSH_FLOATS; i += 16) flush[i] += 1.f;
    t = now_s();
    rc = p->api->kernel_run(p->ctx, k, &ib, 1, &ob, 1, NULL, &err);
    s[r] = now_s() - t;
  }
  if (rc != MI_OK) fprintf(stderr, "bench_blis_conv: %s\n", err.message);
  p->api->buffer_free(p->ctx, ib);
  p->api->buffer_free(p->ctx, ob);
  if (k) p->api->kernel_release(p->ctx, k);
  return rc;
}

int main(int argc, char **argv) {
  tb_plugin_t p;
  tb_t b;
  int64_t c, h, w, m, ks, kw, pad = -1, st = 1, g = 1, dil = 1, reps = 15, xd[4], wd[4], yd[4], pads[4], strides[2], dils[2], i;
  int in[2], y, node;
  float *x, *wt, *flush = NULL;
  double s[200];
  uint32_t nk = 0, ki, simd_knob = 0;
  char choices[256] = "", *save = NULL, *tok;
  mi_error_t err = {0, ""};
  int sv;
  if (argc < 6) {
    fprintf(stderr,
            "usage: bench_blis_conv BUILD C HxW M K[xKW] [stride [group [dilation [reps [cold] [VARIANT] "
            "[threads=N] [pad=P]]]]]\n");
    return 2;
  }
  setenv("MI_BUILD", argv[1], 1);
  c = strtoll(argv[2], NULL, 10);
  h = strtoll(argv[3], &tok, 10);
  w = *tok == 'x' ? strtoll(tok + 1, NULL, 10) : h;
  m = strtoll(argv[4], NULL, 10);
  ks = strtoll(argv[5], &tok, 10);
  kw = *tok == 'x' ? strtoll(tok + 1, NULL, 10) : ks;
  if (argc > 6) st = strtoll(argv[6], NULL, 10);
  if (argc > 7) g = strtoll(argv[7], NULL, 10);
  if (argc > 8) dil = strtoll(argv[8], NULL, 10);
  if (argc > 9) reps = strtoll(argv[9], NULL, 10);
  for (i = 10; i < argc; i++) {
    if (strcmp(argv[i], "cold") == 0 && !flush) flush = calloc(FLUSH_FLOATS, sizeof *flush);
    else if (strcmp(argv[i], "auto") == 0)
      g_auto_only = 1;
    else if (strncmp(argv[i], "conv.", 5) == 0)
      g_variant = argv[i];
    else if (strncmp(argv[i], "threads=", 8) == 0 && (g_threads = strtoll(argv[i] + 8, NULL, 10)) >= 1)
      continue;
    else if (strncmp(argv[i], "pad=", 4) == 0 && (pad = strtoll(argv[i] + 4, NULL, 10)) >= 0)
      continue;
    else {
      fprintf(stderr, "bench_blis_conv: argument %d '%s' is not 'cold', 'auto', a conv.* variant, threads=N or pad=P\n",
              (int)i, argv[i]);
      return 2;
    }
  }
  if (c < 1 || h < 1 || w < 1 || m < 1 || ks < 1 || kw < 1 || st < 1 || g < 1 || dil < 1 || c % g || m % g || reps < 1 ||
      reps > 200) {
    fprintf(stderr, "bench_blis_conv: bad shape arguments\n");
    return 2;
  }
  xd[0] = 1, xd[1] = c, xd[2] = h, xd[3] = w;
  wd[0] = m, wd[1] = c / g, wd[2] = ks, wd[3] = kw;
  for (i = 0; i < 4; i++) pads[i] = (wd[2 + i % 2] - 1) * dil / 2;
  for (i = 0; i < 4 && pad >= 0; i++) pads[i] = wd[2 + i % 2] > 1 ? pad : 0;
  /* a 1xKW kernel on a 1-row plane is a 1-D conv: the stride is on the row only */
  strides[0] = h == 1 && ks == 1 ? 1 : st;
  strides[1] = st;
  yd[0] = 1, yd[1] = m, yd[2] = (h + 2 * pads[0] - (ks - 1) * dil - 1) / strides[0] + 1;
  yd[3] = (w + 2 * pads[1] - (kw - 1) * dil - 1) / st + 1;
  if (yd[2] < 1 || yd[3] < 1) {
    fprintf(stderr, "bench_blis_conv: the kernel is larger than the padded plane\n");
    return 2;
  }
  if (!tb_load(&p)) return 1; /* after the argument checks: a refused argument leaves nothing loaded */
  dils[0] = dils[1] = dil;
  x = malloc((size_t)(c * h * w) * 4);
  wt = malloc((size_t)(m * c / g * ks * kw) * 4);
  if (!x || !wt) return 1;
  tb_fill(x, c * h * w, 3);
  tb_fill(wt, m * c / g * ks * kw, 4);
  memset(&b, 0, sizeof b);
  in[0] = tb_tensor(&b, 4, xd, NULL);
  in[1] = tb_tensor(&b, 4, wd, wt);
  y = tb_tensor(&b, 4, yd, NULL);
  node = tb_node(&b, "Conv", 17, 2, in, y);
  tb_attr_is(&b, node, "kernel_shape", 2, wd + 2);
  tb_attr_is(&b, node, "pads", 4, pads);
  tb_attr_is(&b, node, "strides", 2, strides);
  tb_attr_is(&b, node, "dilations", 2, dils);
  if (g != 1) tb_attr_i(&b, node, "group", g);
  tb_finish(&b, y);
  p.api->knob_count(p.ctx, 0, &nk, &err);
  for (ki = 0; ki < nk; ki++) {
    mi_knob_desc_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    if (p.api->knob_desc(p.ctx, 0, ki, &k, &err) == MI_OK && strcmp(k.name, "simd") == 0) {
      snprintf(choices, sizeof choices, "%s", k.choices);
      simd_knob = 1;
    }
  }
  printf("conv %lldx%lldx%lld -> %lldx%lldx%lld k%lldx%lld s%lld g%lld d%lld (%lld runs, %s)\n", (long long)c, (long long)h,
         (long long)w, (long long)m, (long long)yd[2], (long long)yd[3], (long long)ks, (long long)kw, (long long)st, (long long)g, (long long)dil, (long long)reps,
         g_threads > 1 ? "wall time" : "process CPU time");
  for (sv = 0, tok = simd_knob ? strtok_r(choices, "|", &save) : "auto"; tok; sv++, tok = strtok_r(NULL, "|", &save)) {
    mi_knob_value_t kv[2] = {{"threads", g_threads, 0.}, {"simd", sv, 0.}};
    double fl = 2. * m * yd[2] * yd[3] * (c / g) * ks * kw;
    if (strcmp(tok, "c") == 0) continue;
    if (time_conv(&p, &b, kv, simd_knob ? 2 : 1, x, (int)reps, s, flush) != MI_OK) return 1;
    qsort(s, (size_t)reps, sizeof s[0], bench_cmp_double);
    printf("  %-8s min %8.4f ms  median %8.4f ms  %7.1f GFLOP/s (min)\n", tok, s[0] * 1e3, s[reps / 2] * 1e3,
           fl / s[0] * 1e-9);
    if (!simd_knob || g_auto_only) break;
  }
  free(x);
  free(wt);
  free(flush);
  tb_unload(&p);
  return 0;
}
