/* bench_opencl.c - GFLOP/s of the OpenCL plugin's GEMM and conv variants on zoo-like shapes:
 * every variant at its defaults, then a small sweep over the declared knob domains (combinations
 * check_config refuses are skipped), the tuned best against the untuned default. Device time
 * from the plugin's profiling events, median of repeats. Usage: bench_opencl [samples] [repeats]
 * [shape filter] with MI_BUILD set (the plugin is $MI_BUILD/plugins/libmi_opencl.so). */
#include <stdint.h>

#include "bench_util.h"
#include "drive_opencl.h"

typedef struct shape {
  const char *name;
  int conv;        /* 0: MatMul [M,K]x[K,N]; 1: Conv NCHW */
  int64_t m, k, n; /* MatMul */
  int64_t c, h, w, oc, ks, stride, pad, group;
} shape_t;

/* From the zoo at width 1: transformer FFN and attention projections, the MLP head, ResNet and
 * MobileNet convolutions (3x3, pointwise, depthwise, the 7x7 stem). */
static const shape_t k_shapes[] = {
    {"transformer ffn 32x64x256", 0, 32, 64, 256, 0, 0, 0, 0, 0, 0, 0, 0},
    {"mlp gemm 8x784x256", 0, 8, 784, 256, 0, 0, 0, 0, 0, 0, 0, 0},
    {"gemm 256x256x256", 0, 256, 256, 256, 0, 0, 0, 0, 0, 0, 0, 0},
    {"resnet 3x3 64->64 16x16", 1, 0, 0, 0, 64, 16, 16, 64, 3, 1, 1, 1},
    {"mbv2 1x1 32->96 24x24", 1, 0, 0, 0, 32, 24, 24, 96, 1, 1, 0, 1},
    {"mbv2 dw3x3 96 24x24 s2", 1, 0, 0, 0, 96, 24, 24, 96, 3, 2, 1, 96},
    {"resnet stem 7x7 3->32 64x64 s2", 1, 0, 0, 0, 3, 64, 64, 32, 7, 2, 3, 1},
    /* the face detector's (blazeface_front) heaviest layers */
    {"blazeface stem 5x5 3->24 128x128 s2", 1, 0, 0, 0, 3, 128, 128, 24, 5, 2, 2, 1},
    {"blazeface dw3x3 24 64x64", 1, 0, 0, 0, 24, 64, 64, 24, 3, 1, 1, 24},
    {"blazeface 1x1 24->28 64x64", 1, 0, 0, 0, 24, 64, 64, 28, 1, 1, 0, 1},
    {"blazeface dw3x3 88 16x16", 1, 0, 0, 0, 88, 16, 16, 88, 3, 1, 1, 88},
    {"blazeface 1x1 88->96 16x16", 1, 0, 0, 0, 88, 16, 16, 96, 1, 1, 0, 1},
};

#define NK 11
static const char *k_knob_names[NK] = {"wg_x", "wg_y", "tile_m",
                                       "tile_n", "tile_k", "vector_width",
                                       "use_local_memory", "unroll", "oc_per_item",
                                       "ow_per_item", "oh_per_item"};

typedef struct cfg {
  int64_t v[NK];
  uint32_t mask; /* knobs the variant reads */
} cfg_t;

static float *buf_rand(size_t n, unsigned seed) {
  float *v = malloc(n * sizeof *v);
  BENCH_REQUIRE(v);
  fill(v, n, seed);
  return v;
}

static double flops(const shape_t *s) {
  if (!s->conv) return 2.0 * (double)s->m * (double)s->k * (double)s->n;
  {
    int64_t oh = (s->h + 2 * s->pad - s->ks) / s->stride + 1, ow = (s->w + 2 * s->pad - s->ks) / s->stride + 1;
    return 2.0 * (double)s->oc * (double)oh * (double)ow * (double)(s->c / s->group) * (double)(s->ks * s->ks);
  }
}

/* Builds the kernel description of shape s for `variant` with knobs (NULL: defaults). */
static const mi_kernel_desc_t *describe(kd_t *k, const shape_t *s, const float *wts,
                                        const char *variant, const cfg_t *c) {
  int i;
  memset(k, 0, sizeof *k);
  if (!s->conv) {
    int64_t da[2] = {s->m, s->k}, db[2] = {s->k, s->n}, dy[2] = {s->m, s->n};
    int in[2];
    in[0] = kd_tensor(k, 2, da, NULL);
    in[1] = kd_tensor(k, 2, db, wts);
    k->outs[k->nout++] = kd_tensor(k, 2, dy, NULL);
    kd_node(k, "MatMul", 2, in, k->outs[0]);
    k->ins[k->nin++] = in[0];
  } else {
    static int64_t kern[2], str[2], pads[4];
    int64_t oh = (s->h + 2 * s->pad - s->ks) / s->stride + 1, ow = (s->w + 2 * s->pad - s->ks) / s->stride + 1;
    int64_t dx[4] = {1, s->c, s->h, s->w}, dw[4] = {s->oc, s->c / s->group, s->ks, s->ks};
    int64_t dy[4] = {1, s->oc, oh, ow};
    int in[2];
    mi_node_desc_t *n;
    kern[0] = kern[1] = s->ks;
    str[0] = str[1] = s->stride;
    pads[0] = pads[1] = pads[2] = pads[3] = s->pad;
    in[0] = kd_tensor(k, 4, dx, NULL);
    in[1] = kd_tensor(k, 4, dw, wts);
    k->outs[k->nout++] = kd_tensor(k, 4, dy, NULL);
    n = kd_node(k, "Conv", 2, in, k->outs[0]);
    kd_attr_ints(k, n, "kernel_shape", 2, kern);
    kd_attr_ints(k, n, "strides", 2, str);
    kd_attr_ints(k, n, "pads", 4, pads);
    kd_attr_int(k, n, "group", s->group);
    k->ins[k->nin++] = in[0];
  }
  if (c)
    for (i = 0; i < NK; i++)
      if (c->mask & (1u << i)) kd_knob(k, k_knob_names[i], c->v[i]);
  return kd_finish(k, variant);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Median device time (ns) of `repeats` runs after two warm-ups; 0 when prepare refuses. */
static uint64_t measure(ocl_t *o, const mi_kernel_desc_t *d, mi_buffer_t *bx, mi_buffer_t *by,
                        int repeats, char *why, size_t why_size) {
  mi_kernel_t *k = NULL;
  mi_error_t err = {0, ""};
  uint64_t t[64];
  int i, n = 0;
  if (o->api->kernel_prepare(o->ctx, 0, d, &k, &err) != MI_OK) {
    snprintf(why, why_size, "%s", err.message);
    return 0;
  }
  for (i = 0; i < repeats + 2 && n < 64; i++) {
    mi_run_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (o->api->kernel_run(o->ctx, k, &bx, 1, &by, 1, &st, &err) != MI_OK || !st.has_device_time) {
      snprintf(why, why_size, "run: %s", err.message);
      o->api->kernel_release(o->ctx, k);
      return 0;
    }
    if (i >= 2) t[n++] = st.device_time_ns;
  }
  o->api->kernel_release(o->ctx, k);
  qsort(t, (size_t)n, sizeof t[0], cmp_u64);
  return t[n / 2] ? t[n / 2] : 1;
}

/* The knobs a variant reads, from the plugin's own description. */
static uint32_t variant_mask(ocl_t *o, const char *id) {
  uint32_t nv = 0, i, j, mask = 0;
  BENCH_REQUIRE(o->api->variant_count(o->ctx, 0, &nv, NULL) == MI_OK);
  for (i = 0; i < nv; i++) {
    mi_variant_desc_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    BENCH_REQUIRE(o->api->variant_desc(o->ctx, 0, i, &v, NULL) == MI_OK);
    if (strcmp(v.id, id) != 0) continue;
    for (j = 0; j < NK; j++)
      if (strstr(v.knobs, k_knob_names[j])) mask |= 1u << j;
    return mask;
  }
  return 0;
}

/* Declared domains, capped so the sweep stays among settings a CPU device can take. */
typedef struct domain {
  int64_t v[NK][MI_KNOB_MAX_VALUES];
  int n[NK];
} domain_t;

static void load_domain(ocl_t *o, domain_t *d) {
  static const int64_t cap[NK] = {32, 32, 64, 64, 32, 8, 1, 8, 16, 16, 8};
  uint32_t nk = 0, j, i;
  memset(d, 0, sizeof *d);
  BENCH_REQUIRE(o->api->knob_count(o->ctx, 0, &nk, NULL) == MI_OK);
  for (j = 0; j < nk && j < NK; j++) {
    mi_knob_desc_t kd;
    memset(&kd, 0, sizeof kd);
    kd.struct_size = sizeof kd;
    BENCH_REQUIRE(o->api->knob_desc(o->ctx, 0, j, &kd, NULL) == MI_OK);
    BENCH_REQUIRE(strcmp(kd.name, k_knob_names[j]) == 0);
    if (kd.type == MI_KNOB_BOOL) {
      d->v[j][0] = 0, d->v[j][1] = 1, d->n[j] = 2;
      continue;
    }
    for (i = 0; i < kd.value_count && i < MI_KNOB_MAX_VALUES; i++)
      if (kd.values[i] <= cap[j] && kd.values[i] >= (j < 2 ? 2 : 1)) d->v[j][d->n[j]++] = kd.values[i];
  }
}

static unsigned lcg(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return (*seed >> 16) & 0x7fff;
}

static void sample(const domain_t *d, cfg_t *c, unsigned *seed) {
  int j;
  for (j = 0; j < NK; j++)
    if (d->n[j] > 0) c->v[j] = d->v[j][lcg(seed) % (unsigned)d->n[j]];
}

static void knob_str(const cfg_t *c, char *out, size_t size) {
  size_t w = 0;
  int i;
  out[0] = '\0';
  for (i = 0; i < NK && w < size; i++)
    if (c->mask & (1u << i))
      w += (size_t)snprintf(out + w, size - w, "%s%s=%lld", w ? " " : "", k_knob_names[i],
                            (long long)c->v[i]);
}

static int config_ok(ocl_t *o, const char *variant, const cfg_t *c) {
  mi_knob_value_t kv[NK];
  int i, n = 0;
  for (i = 0; i < NK; i++)
    if (c->mask & (1u << i)) {
      kv[n].name = k_knob_names[i];
      kv[n].i = c->v[i];
      kv[n].f = 0;
      n++;
    }
  return o->api->check_config(o->ctx, 0, variant, kv, n, NULL) == MI_OK;
}

static void bench_shape(ocl_t *o, const domain_t *dom, const shape_t *s, int samples, int repeats) {
  static const char *mm[] = {"matmul.naive", "matmul.tiled", "matmul.regblock"};
  static const char *cv[] = {"conv.im2col_gemm", "conv.implicit_gemm", "conv.im2col_regblock",
                             "conv.direct", "conv.tiled", "conv.depthwise",
                             "conv.dw_tiled"};
  const char *const *vars = s->conv ? cv : mm;
  size_t nx = s->conv ? (size_t)(s->c * s->h * s->w) : (size_t)(s->m * s->k);
  size_t nw = s->conv ? (size_t)(s->oc * (s->c / s->group) * s->ks * s->ks) : (size_t)(s->k * s->n);
  size_t ny = s->conv ? (size_t)(s->oc * s->h * s->w) : (size_t)(s->m * s->n);
  float *x = buf_rand(nx, 1), *wts = buf_rand(nw, 2);
  mi_buffer_t *bx = NULL, *by = NULL;
  double fl = flops(s), best = 0., dflt = 0.;
  char best_desc[200] = "", why[300], ks[160];
  unsigned seed = 12345;
  int vi, j;
  kd_t k;
  BENCH_REQUIRE(o->api->buffer_alloc(o->ctx, 0, nx * 4, &bx, NULL) == MI_OK);
  BENCH_REQUIRE(o->api->buffer_alloc(o->ctx, 0, ny * 4, &by, NULL) == MI_OK);
  BENCH_REQUIRE(o->api->buffer_write(o->ctx, bx, 0, x, nx * 4, NULL) == MI_OK);
  printf("\n%s: %.1f MFLOP\n", s->name, fl / 1e6);
  /* the untuned default: no variant, no knobs, as a session would prepare it */
  {
    uint64_t t = measure(o, describe(&k, s, wts, NULL, NULL), bx, by, repeats, why, sizeof why);
    dflt = t ? fl / (double)t : 0.;
    printf("  %-18s %-58s %9.1f us %7.2f GFLOP/s\n", "default", "(plugin's choice)", t / 1e3, dflt);
  }
  for (vi = 0; vi < (s->conv ? 7 : 3); vi++) {
    cfg_t c;
    uint32_t mask;
    /* the depthwise-only variants on depthwise shapes, conv.tiled on the others */
    if (s->conv && (vi >= 4) && (vi >= 5) != (s->group > 1 && s->group == s->c)) continue;
    if (!(mask = variant_mask(o, vars[vi]))) continue;
    for (j = 0; j <= samples; j++) {
      uint64_t t;
      double g;
      memset(&c, 0, sizeof c);
      if (j > 0) {
        int tries = 0;
        c.mask = mask;
        do sample(dom, &c, &seed);
        while (!config_ok(o, vars[vi], &c) && ++tries < 500);
        if (tries >= 500) break;
      }
      knob_str(&c, ks, sizeof ks);
      if (j == 0) snprintf(ks, sizeof ks, "(variant defaults)");
      t = measure(o, describe(&k, s, wts, vars[vi], j ? &c : NULL), bx, by, repeats, why, sizeof why);
      if (!t) {
        printf("  %-18s %-58s refused: %.60s\n", vars[vi], ks, why);
        continue;
      }
      g = fl / (double)t;
      printf("  %-18s %-58s %9.1f us %7.2f GFLOP/s\n", vars[vi], ks, t / 1e3, g);
      if (g > best) {
        best = g;
        snprintf(best_desc, sizeof best_desc, "%s %s", vars[vi], ks);
      }
    }
  }
  /* again after the sweep, keeping the better median: the first kernel of a shape can pay for
   * waking the device's threads, and that must not flatter the tuned figure */
  {
    uint64_t t = measure(o, describe(&k, s, wts, NULL, NULL), bx, by, repeats, why, sizeof why);
    if (t && fl / (double)t > dflt) dflt = fl / (double)t;
    printf("  %-18s %-58s %9.1f us %7.2f GFLOP/s (kept: %.2f)\n", "default", "(measured again)",
           t / 1e3, t ? fl / (double)t : 0., dflt);
  }
  printf("  => tuned best %.2f GFLOP/s (%s) vs default %.2f GFLOP/s: %.2fx\n", best, best_desc,
         dflt, dflt > 0 ? best / dflt : 0.);
  o->api->buffer_free(o->ctx, bx);
  o->api->buffer_free(o->ctx, by);
  free(x);
  free(wts);
}

int main(int argc, char **argv) {
  ocl_t o;
  const char *b = getenv("MI_BUILD");
  char dir[512];
  int samples = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 8;
  int repeats = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 7;
  size_t i;
  mi_device_desc_t dd;
  domain_t dom;
  memset(&o, 0, sizeof o);
  if (!b) {
    fprintf(stderr, "bench_opencl: set MI_BUILD to the build directory\n");
    return 2;
  }
  if (repeats < 1 || repeats > 60) repeats = 7;
  /* persistent caches: a second run skips the OpenCL compiles */
  snprintf(dir, sizeof dir, "%s/tests/pocl-cache", b);
  mkdir(dir, 0755);
  setenv("POCL_CACHE_DIR", dir, 0);
  snprintf(dir, sizeof dir, "%s/tests/mi-cache", b);
  mkdir(dir, 0755);
  setenv("MI_CACHE_DIR", dir, 0);
  if (!ocl_open(&o)) {
    fprintf(stderr, "bench_opencl: no OpenCL device\n");
    ocl_close(&o);
    return 0;
  }
  memset(&dd, 0, sizeof dd);
  dd.struct_size = sizeof dd;
  BENCH_REQUIRE(o.api->device_info(o.ctx, 0, &dd, NULL) == MI_OK);
  printf(
      "device: %s (%s, driver %s), %u compute units; %d sampled configs per variant, median "
      "of %d runs (device time from profiling events)\n",
      dd.name, dd.vendor,
      dd.driver_version, dd.compute_units, samples, repeats);
  load_domain(&o, &dom);
  for (i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
    if (argc < 4 || strstr(k_shapes[i].name, argv[3]))
      bench_shape(&o, &dom, &k_shapes[i], samples, repeats);
  ocl_close(&o);
  return 0;
}
