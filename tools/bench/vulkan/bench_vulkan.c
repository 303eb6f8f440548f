/* bench_vulkan.c - GFLOP/s of the Vulkan plugin's GEMM and conv variants on zoo-like shapes:
 * each variant with its default knobs, then tuned by a coordinate sweep over its declared knob
 * domains (settings check_config refuses are skipped), against the untuned default (default
 * variant, default knobs). Time is the timestamp-query device time of kernel_run, median of
 * repeats after one warm-up. Usage: bench_vulkan [-v] [-r REPEATS] [-n ROUNDS] [build dir]. */
#include <time.h>

#include "bench_util.h"
#include "drive_vulkan.h"

/* The helpers count check failures; the benchmark makes no checks. */

typedef struct bench {
  mi_plugin_t *p;
  int reps, rounds, verbose;
} bench_t;

/* Median GFLOP/s over b->reps device-timed runs; -1 when the setting is refused or fails. */
static double measure(bench_t *b, mi_graph_t *g, double flops, const char *variant,
                      const mi_knob_value_t *kv, int nk) {
  const mi_plugin_api_t *api = &b->p->api;
  mi_error_t err = {0, ""};
  tv_desc_t f;
  mi_kernel_t *k = NULL;
  mi_buffer_t *in[2] = {0}, *out = NULL;
  double t[64], res = -1;
  int32_t i, rc = MI_OK, nin = g->input_count;
  tv_desc_build(g, variant, &f);
  f.k.knobs = kv;
  f.k.knob_count = nk;
  if (api->kernel_prepare(b->p->ctx, 0, &f.k, &k, &err) != MI_OK) return -1;
  for (i = 0; i < nin && rc == MI_OK; i++) {
    const mi_tensor_t *x = &g->tensors[g->inputs[i]];
    int64_t n = 1;
    for (int d = 0; d < x->rank; d++) n *= x->dims[d];
    rc = api->buffer_alloc(b->p->ctx, 0, (uint64_t)n * 4, &in[i], &err);
  }
  if (rc == MI_OK) {
    const mi_tensor_t *y = &g->tensors[g->outputs[0]];
    int64_t n = 1;
    for (int d = 0; d < y->rank; d++) n *= y->dims[d];
    rc = api->buffer_alloc(b->p->ctx, 0, (uint64_t)n * 4, &out, &err);
  }
  for (i = -1; i < b->reps && rc == MI_OK; i++) { /* run -1 is the warm-up (first dispatch) */
    mi_run_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    rc = api->kernel_run(b->p->ctx, k, in, nin, &out, 1, &st, &err);
    if (rc == MI_OK && !st.has_device_time) rc = MI_ERR_UNSUPPORTED;
    if (rc == MI_OK && i >= 0) t[i] = (double)st.device_time_ns;
  }
  if (rc == MI_OK) {
    qsort(t, (size_t)b->reps, sizeof t[0], bench_cmp_double);
    res = t[b->reps / 2] > 0 ? flops / t[b->reps / 2] : -1; /* flop/ns = GFLOP/s */
  } else {
    fprintf(stderr, "bench_vulkan: %s: %s\n", variant ? variant : "default", err.message);
  }
  api->kernel_release(b->p->ctx, k);
  for (i = 0; i < nin; i++) api->buffer_free(b->p->ctx, in[i]);
  api->buffer_free(b->p->ctx, out);
  return res;
}

static void knob_string(const mi_knob_value_t *kv, int nk, char *s, size_t size) {
  size_t n = 0;
  s[0] = '\0';
  for (int i = 0; i < nk && n < size; i++)
    n += (size_t)snprintf(s + n, size - n, "%s%s=%lld", i ? "," : "", kv[i].name, (long long)kv[i].i);
}

/* Coordinate sweep: each knob the variant reads in turn over its whole declared domain, the
 * others held at the best so far; b->rounds passes. Returns the best GFLOP/s, knobs in kv. */
static double tune(bench_t *b, mi_graph_t *g, double flops, const mi_variant_desc_t *v, double start,
                   mi_knob_value_t *kv, int *nk_out, char names[][64]) {
  const mi_plugin_api_t *api = &b->p->api;
  mi_knob_desc_t kd[16];
  int nk = 0, tried = 0;
  uint32_t count = 0;
  double best = start; /* the variant's defaults, measured by the caller */
  api->knob_count(b->p->ctx, 0, &count, NULL);
  for (uint32_t i = 0; i < count && nk < 16; i++) {
    mi_knob_desc_t d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    if (api->knob_desc(b->p->ctx, 0, i, &d, NULL) != MI_OK) continue;
    /* variant_desc.knobs is the comma-separated list of knobs the variant reads */
    char list[sizeof v->knobs + 2];
    char key[sizeof d.name + 2];
    snprintf(list, sizeof list, ",%s,", v->knobs);
    snprintf(key, sizeof key, ",%s,", d.name);
    if (!strstr(list, key)) continue;
    kd[nk] = d;
    snprintf(names[nk], 64, "%s", d.name);
    kv[nk].name = names[nk];
    kv[nk].i = d.default_int;
    nk++;
  }
  for (int r = 0; r < b->rounds; r++)
    for (int k = 0; k < nk; k++) {
      int64_t keep = kv[k].i;
      for (uint32_t j = 0; j < kd[k].value_count; j++) {
        double gf;
        char ks[160];
        if (kd[k].values[j] == keep) continue;
        kv[k].i = kd[k].values[j];
        if (api->check_config && api->check_config(b->p->ctx, 0, v->id, kv, nk, NULL) != MI_OK) continue;
        gf = measure(b, g, flops, v->id, kv, nk);
        tried++;
        if (b->verbose) {
          knob_string(kv, nk, ks, sizeof ks);
          printf("    %-16s %-60s %8.3f GFLOP/s\n", v->id, ks, gf);
        }
        if (gf > best) best = gf, keep = kv[k].i;
      }
      kv[k].i = keep;
    }
  *nk_out = nk;
  if (b->verbose) printf("    %s: %d settings measured\n", v->id, tried);
  return best;
}

/* Every variant of g's op: default knobs and tuned; then the summary line for the shape. */
static void bench_shape(bench_t *b, const char *what, mi_graph_t *g, double flops) {
  const mi_plugin_api_t *api = &b->p->api;
  mi_error_t err = {0, ""};
  const char *op = g->nodes[0].op_type;
  uint32_t nv = 0;
  double base, best_all = -1;
  char best_id[64] = "", best_knobs[160] = "";
  if (mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "bench_vulkan: %s: %s\n", what, err.message);
    return;
  }
  base = measure(b, g, flops, NULL, NULL, 0);
  printf("%s (%s, %.1f MFLOP): untuned default %.3f GFLOP/s\n", what, op, flops * 1e-6, base);
  api->variant_count(b->p->ctx, 0, &nv, NULL);
  for (uint32_t i = 0; i < nv; i++) {
    mi_variant_desc_t v;
    mi_knob_value_t kv[16];
    char names[16][64], ks[160];
    int nk = 0;
    double dflt, tuned;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (api->variant_desc(b->p->ctx, 0, i, &v, NULL) != MI_OK || strcmp(v.op_type, op) != 0) continue;
    dflt = measure(b, g, flops, v.id, NULL, 0);
    if (dflt < 0) {
      printf("  %-16s refused for this shape\n", v.id);
      continue;
    }
    tuned = tune(b, g, flops, &v, dflt, kv, &nk, names);
    knob_string(kv, nk, ks, sizeof ks);
    printf("  %-16s default %8.3f  tuned %8.3f GFLOP/s  (x%.2f)  %s\n", v.id, dflt, tuned,
           tuned / dflt, ks);
    if (tuned > best_all) {
      best_all = tuned;
      snprintf(best_id, sizeof best_id, "%s", v.id);
      snprintf(best_knobs, sizeof best_knobs, "%s", ks);
    }
  }
  printf("  => tuned best %.3f GFLOP/s (%s %s) vs untuned default %.3f: x%.2f\n\n", best_all,
         best_id, best_knobs, base, base > 0 ? best_all / base : 0.0);
  mi_graph_destroy(g);
}

static mi_graph_t *gemm(int64_t M, int64_t K, int64_t N, const char *op) {
  mi_graph_t *g = mi_graph_create(op);
  int64_t ad[2] = {M, K}, bd[2] = {K, N};
  int32_t in[2], y;
  in[0] = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, 2, ad);
  mi_graph_add_input(g, in[0]);
  in[1] = tv_const(g, "b", 2, bd, 1);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, op, "n", 2, in, 1, &y);
  mi_graph_add_output(g, y);
  return g;
}

static mi_graph_t *conv(int64_t C, int64_t K, int64_t HW, int64_t ks, int64_t group, int64_t stride) {
  mi_graph_t *g = mi_graph_create("Conv");
  int64_t xd[4] = {1, C, HW, HW}, wd[4] = {K, C / group, ks, ks}, bd[1] = {K};
  int64_t p = ks / 2, pads[4] = {p, p, p, p}, st[2] = {stride, stride};
  int32_t in[3], y, n;
  in[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, in[0]);
  in[1] = tv_const(g, "w", 4, wd, 2);
  in[2] = tv_const(g, "b", 1, bd, 3);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "Conv", "n", 3, in, 1, &y);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_int(g, n, "group", group);
  mi_graph_add_output(g, y);
  return g;
}

static double conv_flops(int64_t C, int64_t K, int64_t HW, int64_t ks, int64_t group, int64_t stride) {
  int64_t o = (HW + 2 * (ks / 2) - ks) / stride + 1;
  return 2.0 * (double)(K * o * o) * (double)(C / group * ks * ks);
}

int main(int argc, char **argv) {
  bench_t b = {NULL, 5, 1, 0};
  mi_registry_t *r;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-v")) b.verbose = 1;
    else if (!strcmp(argv[i], "-r") && i + 1 < argc)
      b.reps = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "-n") && i + 1 < argc)
      b.rounds = (int)strtol(argv[++i], NULL, 10);
    else
      setenv("MI_BUILD", argv[i], 1);
  }
  if (b.reps < 1 || b.reps > 64) b.reps = 5;
  if (!(r = tv_load(&b.p, NULL)) || !b.p) {
    fprintf(stderr, "bench_vulkan: no vulkan plugin or device (set MI_BUILD or pass the build dir)\n");
    mi_registry_destroy(r);
    return 1;
  }
  {
    mi_device_desc_t d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    b.p->api.device_info(b.p->ctx, 0, &d, NULL);
    printf("device: %s, %s; median of %d device-timed runs; %d sweep round(s)\n\n", d.name,
           d.driver_version, b.reps, b.rounds);
  }
  /* transformer (seq 64, d 128, ffn 512), mlp (batch 64), resnet/mobilenet-like convs */
  bench_shape(&b, "transformer FFN up 64x128x512", gemm(64, 128, 512, "MatMul"), 2.0 * 64 * 128 * 512);
  bench_shape(&b, "transformer FFN down 64x512x128", gemm(64, 512, 128, "MatMul"), 2.0 * 64 * 512 * 128);
  bench_shape(&b, "mlp fc1 batch 64 64x784x256", gemm(64, 784, 256, "Gemm"), 2.0 * 64 * 784 * 256);
  bench_shape(&b, "square 256x256x256", gemm(256, 256, 256, "Gemm"), 2.0 * 256 * 256 * 256);
  bench_shape(&b, "resnet conv3x3 32->32 @16", conv(32, 32, 16, 3, 1, 1), conv_flops(32, 32, 16, 3, 1, 1));
  bench_shape(&b, "mobilenet pw 32->64 @16", conv(32, 64, 16, 1, 1, 1), conv_flops(32, 64, 16, 1, 1, 1));
  bench_shape(&b, "mobilenet dw3x3 64 @16 s2", conv(64, 64, 16, 3, 64, 2), conv_flops(64, 64, 16, 3, 64, 2));
  mi_registry_destroy(r);
  return 0;
}
