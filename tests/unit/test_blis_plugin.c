/* test_blis_plugin.c - blis-cpu entry, descriptions, knobs, counters, threads-invariance and
 * large uploads/downloads. */
#include <dlfcn.h>

#include "test_blis_util.h"

static void entry_refuses_other_major(void) {
  char path[1024];
  void *dl;
  mi_plugin_entry_fn entry;
  mi_host_api_t host;
  mi_error_t err = {0, ""};
  tu_build_path(path, sizeof path, "plugins/libmi_blis_cpu.so");
  dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(dl != NULL, "dlopen %s", path);
  if (!dl) return;
  *(void **)&entry = dlsym(dl, MI_PLUGIN_ENTRY_NAME);
  memset(&host, 0, sizeof host);
  host.struct_size = sizeof host;
  host.abi_major = 2;
  CHECK(entry && entry(&host, &err) == NULL && err.code == MI_ERR_ABI && strstr(err.message, "ABI"),
        "major 2 accepted: %s", err.message);
  CHECK(dlsym(dl, "bli_sgemm") == NULL, "BLIS symbols leak out of the plugin");
  dlclose(dl);
}

static void descriptions(tb_plugin_t *p) {
  mi_device_desc_t d;
  mi_knob_desc_t k;
  mi_variant_desc_t v;
  mi_counter_desc_t c;
  uint32_t n, i, found = 0;
  mi_error_t err = {0, ""};
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  CHECK(p->api->device_info(p->ctx, 0, &d, &err) == MI_OK, "device_info: %s", err.message);
  CHECK(d.kind == MI_DEVICE_CPU && d.compute_units >= 1 && d.global_memory_bytes > 0 && d.name[0],
        "device desc %s", d.name);
  CHECK(p->api->device_info(p->ctx, 1, &d, &err) == MI_ERR_NOT_FOUND, "device 1 exists");
  CHECK(p->api->knob_count(p->ctx, 0, &n, &err) == MI_OK && n >= 2, "knob count");
  for (i = 0; i < n; i++) {
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    CHECK(p->api->knob_desc(p->ctx, 0, i, &k, &err) == MI_OK, "knob %u", i);
    if (strcmp(k.name, "threads") == 0) {
      found |= 1;
      CHECK(k.min == 1 && k.max == d.compute_units && k.default_int == d.compute_units, "threads domain");
    }
    if (strcmp(k.name, "arch") == 0) {
      found |= 2;
      CHECK(k.type == MI_KNOB_ENUM && strncmp(k.choices, "auto|blis", 9) == 0 && strstr(k.choices, "generic"),
            "arch choices %s", k.choices);
    }
  }
  CHECK(found == 3, "threads and arch knobs present");
  found = 0;
  CHECK(p->api->variant_count(p->ctx, 0, &n, &err) == MI_OK, "variant count");
  for (i = 0; i < n; i++) {
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    CHECK(p->api->variant_desc(p->ctx, 0, i, &v, &err) == MI_OK, "variant %u", i);
    if (strcmp(v.op_type, "Conv") == 0) {
      found++;
      CHECK((v.fuse_mask & (MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ADD)) == (MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ADD),
            "conv variant %s fuse mask", v.id);
    }
  }
  /* seven FP32 conv variants, conv.packed_gemm_fp16 where the CPU has F16C and
   * conv.packed_gemm_bf16 where it has AVX512_BF16 (the plugin's isa text does not name it) */
  CHECK(found == 7u + (strstr(d.isa, "-f16c") != NULL) + (unsigned)tu_cpu_avx512_bf16(), "conv variants: got %u (isa %s)",
        found, d.isa);
  CHECK(p->api->counter_count(p->ctx, 0, &n, &err) == MI_OK && n == 3, "three counters");
  for (i = 0; i < n; i++) {
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    CHECK(p->api->counter_desc(p->ctx, 0, i, &c, &err) == MI_OK, "counter desc");
    CHECK(c.kind != MI_COUNTER_ENERGY && c.kind != MI_COUNTER_POWER, "energy counter declared");
    CHECK(c.resolution > 0., "resolution");
  }
}

/* Runs a 96x80x72 Gemm with threads=1 and threads=max; results match exactly the naive sum. */
static void threads_and_counters(tb_plugin_t *p) {
  int64_t ad[2] = {96, 72}, bd[2] = {72, 80}, yd[2] = {96, 80}, i, j, k;
  float *a = malloc(96 * 72 * 4), *bm = malloc(72 * 80 * 4), *y1 = malloc(96 * 80 * 4), *y2 = malloc(96 * 80 * 4);
  float *ref = malloc(96 * 80 * 4);
  const float *ins[1] = {a};
  mi_knob_value_t t1 = {"threads", 1, 0.}, tn = {"threads", 1, 0.}, bad = {"threads", 0, 0.};
  mi_counter_sample_t s;
  double t_before;
  mi_device_desc_t d;
  mi_error_t err = {0, ""};
  tb_t b;
  int x0, x1, x2;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  p->api->device_info(p->ctx, 0, &d, &err);
  tn.i = d.compute_units;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  /* TIMER is cumulative since create: it reads, and never goes down. */
  CHECK(p->api->counter_read(p->ctx, 0, 0, &s, &err) == MI_OK && s.has_value == 1 && s.value >= 0.,
        "timer before these runs");
  t_before = s.value;
  tb_fill(a, 96 * 72, 60);
  tb_fill(bm, 72 * 80, 61);
  memset(&b, 0, sizeof b);
  x0 = tb_tensor(&b, 2, ad, NULL);
  x1 = tb_tensor(&b, 2, bd, bm);
  x2 = tb_tensor(&b, 2, yd, NULL);
  {
    int in[2] = {x0, x1};
    tb_node(&b, "Gemm", 13, 2, in, x2);
  }
  tb_finish(&b, x2);
  CHECK(tb_run(p, &b, "gemm.blis", &t1, 1, ins, y1, &err) == MI_OK, "threads=1: %s", err.message);
  CHECK(tb_run(p, &b, "gemm.blis", &tn, 1, ins, y2, &err) == MI_OK, "threads=N: %s", err.message);
  for (i = 0; i < 96; i++)
    for (j = 0; j < 80; j++) {
      double acc = 0.;
      for (k = 0; k < 72; k++) acc += (double)a[i * 72 + k] * bm[k * 80 + j];
      ref[i * 80 + j] = (float)acc;
    }
  CHECK(tu_rel_l2(y1, ref, 96 * 80) < 1e-5 && tu_rel_l2(y2, y1, 96 * 80) < 1e-6, "threads change results");
  CHECK(p->api->counter_read(p->ctx, 0, 0, &s, &err) == MI_OK && s.has_value == 1 && s.value > t_before,
        "timer grows: %g -> %g", t_before, s.value);
  CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK && s.has_value == 1 && s.value >= 96. * 80 * 4,
        "peak bytes %g", s.value);
  {
    /* The peak is that of the interval since the last reading: a 64 MiB buffer freed before one
     * reading is in it and not in the next (a worker's later measurements used to report it). */
    mi_buffer_t *big = NULL;
    CHECK(p->api->buffer_alloc(p->ctx, 0, 64u << 20, &big, &err) == MI_OK, "alloc: %s", err.message);
    p->api->buffer_free(p->ctx, big);
    CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK && s.value >= (double)(64u << 20),
          "peak with the freed buffer %g", s.value);
    CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK && s.has_value == 1 && s.value < (double)(64u << 20),
          "the next interval's peak %g", s.value);
  }
  CHECK(p->api->set_device_knobs(p->ctx, 0, &bad, 1, &err) == MI_ERR_INVALID_CONFIG, "set threads=0");
  CHECK(p->api->check_config(p->ctx, 0, "conv.nope", NULL, 0, &err) == MI_ERR_INVALID_CONFIG, "check_config");
  CHECK(p->api->check_config(p->ctx, 0, "conv.1x1_gemm", &t1, 1, &err) == MI_OK, "check_config ok");
  free(a);
  free(bm);
  free(y1);
  free(y2);
  free(ref);
}

/* An upload or download of 1 MiB and more copies on the instance's threads (a model's input image
 * was one memcpy on the calling thread): at threads=2 the first one starts the worker, and an odd
 * size at an odd offset comes back byte for byte. */
static void large_copies(void) {
  uint64_t n = (1u << 20) + 13, i;
  unsigned char *src = malloc(n), *back = malloc(n);
  mi_knob_value_t two = {"threads", 2, 0.};
  mi_buffer_t *buf = NULL;
  mi_error_t err = {0, ""};
  tb_plugin_t q;
  int before;
  REQUIRE(src && back);
  if (!tb_load(&q)) TU_SKIP("blis-cpu not built");
  for (i = 0; i < n; i++) src[i] = (unsigned char)(i * 131 + 7);
  CHECK(q.api->set_device_knobs(q.ctx, 0, &two, 1, &err) == MI_OK, "threads=2: %s", err.message);
  CHECK(q.api->buffer_alloc(q.ctx, 0, n + 3, &buf, &err) == MI_OK, "alloc: %s", err.message);
  before = threads_now();
  CHECK(q.api->buffer_write(q.ctx, buf, 3, src, n, &err) == MI_OK, "write: %s", err.message);
  CHECK(threads_now() - before == 1, "the 1 MiB upload started no worker");
  memset(back, 0, n);
  CHECK(q.api->buffer_read(q.ctx, buf, 3, back, n, &err) == MI_OK, "read: %s", err.message);
  CHECK(memcmp(src, back, n) == 0, "the copy differs");
  q.api->buffer_free(q.ctx, buf);
  tb_unload(&q);
  free(src);
  free(back);
}

/* The memory counter counts what a kernel really holds: a Conv -> Relu group runs as one step (the
 * activation in the conv's output stage), so the conv's own output is never written and gets no
 * memory; the peak of prepare + run stays below the tensors that exist (input, output, weights)
 * plus a small allowance for the kernel's state, where it used to count the 2 MiB intermediate
 * too. Then Conv -> Relu -> Conv: the Relu's output, made by the first step and read by the
 * second, does get memory (a result equal to the naive one says so), at every SIMD level. */
#define C 8
#define H 256
#define W 256
#define HW (H * W)
static void counter_skips_fused_intermediates(tb_plugin_t *p) {
  int64_t xd[4] = {1, C, H, W}, wd[4] = {C, C, 1, 1};
  float *x = malloc(sizeof(float) * C * HW), *y = malloc(sizeof(float) * C * HW);
  float *ref = malloc(sizeof(float) * C * HW), *mid = malloc(sizeof(float) * C * HW);
  float w1[C * C], w2[C * C];
  const float *ins[1] = {x};
  const double tensors = 2. * sizeof(float) * C * HW + 2. * sizeof w1, allowance = 256. * 1024;
  mi_counter_sample_t s;
  mi_error_t err = {0, ""};
  int64_t si, ns = 1, i, c, m;
  uint32_t kn, q;
  tb_fill(x, (int64_t)C * HW, 70);
  tb_fill(w1, C * C, 71);
  tb_fill(w2, C * C, 72);
  /* the naive results: relu(w1 x) and w2 relu(w1 x) */
  for (m = 0; m < C; m++)
    for (i = 0; i < HW; i++) {
      double acc = 0.;
      for (c = 0; c < C; c++) acc += (double)w1[m * C + c] * x[c * HW + i];
      mid[m * HW + i] = acc > 0. ? (float)acc : 0.f;
    }
  for (m = 0; m < C; m++)
    for (i = 0; i < HW; i++) {
      double acc = 0.;
      for (c = 0; c < C; c++) acc += (double)w2[m * C + c] * mid[c * HW + i];
      ref[m * HW + i] = (float)acc;
    }
  CHECK(p->api->knob_count(p->ctx, 0, &kn, &err) == MI_OK, "knob count");
  for (q = 0; q < kn; q++) {
    mi_knob_desc_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    if (p->api->knob_desc(p->ctx, 0, q, &k, &err) == MI_OK && strcmp(k.name, "simd") == 0) {
      const char *bar = k.choices; /* auto|avx512|avx2|c: each a value */
      for (ns = 1; (bar = strchr(bar, '|')); bar++) ns++;
    }
  }
  for (si = 0; si < ns; si++) {
    mi_knob_value_t kv[1] = {{"simd", si, 0.}};
    int chain;
    for (chain = 0; chain < 2; chain++) {
      tb_t b;
      int tx, tw1, t1, t2, tw2, ty;
      double peak;
      memset(&b, 0, sizeof b);
      tx = tb_tensor(&b, 4, xd, NULL);
      tw1 = tb_tensor(&b, 4, wd, w1);
      t1 = tb_tensor(&b, 4, xd, NULL);
      t2 = tb_tensor(&b, 4, xd, NULL);
      {
        int in[2] = {tx, tw1};
        tb_node(&b, "Conv", 11, 2, in, t1);
        tb_node(&b, "Relu", 14, 1, &t1, t2);
      }
      ty = t2;
      if (chain) {
        int in[2] = {t2, 0};
        tw2 = tb_tensor(&b, 4, wd, w2);
        ty = tb_tensor(&b, 4, xd, NULL);
        in[1] = tw2;
        tb_node(&b, "Conv", 11, 2, in, ty);
      }
      tb_finish(&b, ty);
      memset(&s, 0, sizeof s);
      s.struct_size = sizeof s;
      CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK, "drain: %s", err.message);
      CHECK(tb_run(p, &b, NULL, kv, 1, ins, y, &err) == MI_OK, "simd %lld chain %d: %s", (long long)si, chain,
            err.message);
      CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK && s.has_value == 1, "peak: %s", err.message);
      peak = s.value;
      CHECK(tu_rel_l2(y, chain ? ref : mid, (int64_t)C * HW) < 1e-5, "simd %lld chain %d: results differ",
            (long long)si, chain);
      /* the chain holds one intermediate more, the Relu's output */
      CHECK(peak < tensors + chain * sizeof(float) * C * HW + allowance,
            "simd %lld chain %d: peak %.0f bytes, the tensors that exist %.0f (+%.0f allowed)", (long long)si,
            chain, peak, tensors + chain * sizeof(float) * C * HW, allowance);
      CHECK(peak >= tensors + chain * sizeof(float) * C * HW,
            "simd %lld chain %d: peak %.0f bytes below the tensors that exist %.0f", (long long)si, chain, peak,
            tensors + chain * sizeof(float) * C * HW);
    }
  }
  free(x);
  free(y);
  free(ref);
  free(mid);
}
#undef C
#undef H
#undef W
#undef HW

/* A GEMM of two runtime matrices (constant weights are prepacked by the plugin instead) large enough
 * for BLIS's packed path checks its packing blocks out of BLIS's pools, which
 * BLIS allocates inside the library and keeps: the interval in which it ran counts them (a block
 * of B alone is KC x NC floats, megabytes on every x86 context), the next interval, with no GEMM,
 * does not. Before they were counted the reading was the tensors alone (3 MiB here). */
static void counter_counts_blis_pools(tb_plugin_t *p) {
  enum { N = 512 };
  int64_t dims[2] = {N, N};
  float *a = malloc(sizeof(float) * N * N), *bm = malloc(sizeof(float) * N * N), *y = malloc(sizeof(float) * N * N);
  const float *ins[2] = {a, bm};
  const double tensors = 3. * sizeof(float) * N * N;
  mi_counter_sample_t s;
  mi_error_t err = {0, ""};
  tb_t b;
  int x0, x1, x2;
  REQUIRE(a && bm && y);
  tb_fill(a, N * N, 80);
  tb_fill(bm, N * N, 81);
  memset(&b, 0, sizeof b);
  x0 = tb_tensor(&b, 2, dims, NULL);
  x1 = tb_tensor(&b, 2, dims, NULL);
  x2 = tb_tensor(&b, 2, dims, NULL);
  {
    int in[2] = {x0, x1};
    tb_node(&b, "Gemm", 13, 2, in, x2);
  }
  tb_finish(&b, x2);
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK, "drain: %s", err.message);
  CHECK(tb_run(p, &b, "gemm.blis", NULL, 0, ins, y, &err) == MI_OK, "gemm: %s", err.message);
  CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK && s.has_value == 1, "peak: %s", err.message);
  CHECK(s.value >= tensors + (double)(4u << 20), "peak %.0f bytes: the tensors (%.0f) without BLIS's pools",
        s.value, tensors);
  CHECK(p->api->counter_read(p->ctx, 0, 1, &s, &err) == MI_OK && s.value < (double)(1u << 20),
        "the next interval, no GEMM: %.0f bytes", s.value);
  free(a);
  free(bm);
  free(y);
}

static tb_plugin_t p;

static void setup(void) {
  REQUIRE(tb_load(&p));
}

static void teardown(void) {
  tb_unload(&p);
}

static void descriptions_all(void) {
  descriptions(&p);
}

static void threads_and_counters_all(void) {
  threads_and_counters(&p);
}

static void counter_skips_fused_intermediates_all(void) {
  counter_skips_fused_intermediates(&p);
}

static void counter_counts_blis_pools_all(void) {
  counter_counts_blis_pools(&p);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(entry_refuses_other_major),
    TU_CASE(descriptions_all),
    TU_CASE(threads_and_counters_all),
    TU_CASE(large_copies),
    TU_CASE(counter_skips_fused_intermediates_all),
    TU_CASE(counter_counts_blis_pools_all),
};

TU_MAIN(setup, teardown)
