/* test_exec_util.h - helpers of the executor tests: plugins from $MI_BUILD/plugins, zoo models,
 * transform configurations, sessions and their comparison with the reference interpreter. */
#ifndef TEST_EXEC_UTIL_H
#define TEST_EXEC_UTIL_H

#include "test_util.h"
#include "zoo.h"

static inline void die(const char *what, const mi_error_t *err) {
  fprintf(stderr, "FAIL %s: %s\n", what, err ? err->message : "");
  exit(1);
}

static inline mi_registry_t *open_plugins(void) {
  mi_registry_t *r = mi_registry_create();
  mi_error_t err = {0};
  if (!getenv("MI_BUILD") || !r) die("MI_BUILD is not set", NULL);
  if (tu_scan_plugins(r, &err) != MI_OK) die("scan", &err);
  return r;
}

static inline mi_graph_t *zoo(const char *family, double width, int32_t depth, int32_t res) {
  mi_zoo_options_t o;
  mi_graph_t *g = NULL;
  mi_error_t err = {0};
  mi_zoo_options_default(&o);
  o.width = width;
  o.depth = depth;
  o.resolution = res;
  o.seed = 5;
  if (mi_zoo_build(family, &o, &g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK)
    die(family, &err);
  return g;
}

/* Applies YAML configuration text to g; fusion for p's variants when p is given. */
static inline mi_graph_t *transform(const mi_graph_t *g, const char *yaml, const mi_plugin_t *p) {
  mi_xf_config_t *c = NULL;
  mi_xf_samples_t *calib = NULL;
  mi_variant_desc_t *vars = NULL;
  uint32_t nv = 0;
  mi_xf_apply_opts_t o;
  mi_graph_t *x = NULL;
  mi_error_t err = {0};
  memset(&o, 0, sizeof o);
  if (mi_xf_config_parse(yaml, strlen(yaml), "test", &c, &err) != MI_OK) die("config", &err);
  if (p && mi_plugin_variants(p, 0, &vars, &nv, &err) != MI_OK) die("variants", &err);
  if (mi_xf_samples_random(g, 4, 9, &calib, &err) != MI_OK) die("samples", &err);
  o.calib = calib;
  o.variants = vars;
  o.variant_count = nv;
  if (mi_xf_apply(g, c, &o, &x, NULL, &err) != MI_OK) die("mi_xf_apply", &err);
  free(vars);
  mi_xf_samples_destroy(calib);
  mi_xf_config_destroy(c);
  return x;
}

static inline mi_array_t *input_for(const mi_graph_t *g, uint64_t seed) {
  const mi_tensor_t *t = &g->tensors[g->inputs[0]];
  mi_array_t *a = mi_array_create(t->dtype, t->rank, t->dims);
  if (!a) die("input", NULL);
  mi_array_fill_random(a, seed);
  return a;
}

/* A session with host fallback (session_opts: the options o holds besides); no_auto_fuse: without the session's own fused groups (one kernel
 * per node unless the graph's groups say otherwise); no_memory_plan: one device buffer per
 * tensor (mi_session_options_t). */
static inline mi_session_t *session_opts(const mi_graph_t *g, mi_plugin_t *p, mi_session_options_t o) {
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  if (mi_session_create(g, p, 0, &o, &s, &err) != MI_OK) die("mi_session_create", &err);
  return s;
}

static inline mi_session_t *session_with(const mi_graph_t *g, mi_plugin_t *p, int no_auto_fuse,
                                         int no_memory_plan) {
  mi_session_options_t o;
  memset(&o, 0, sizeof o);
  o.no_auto_fuse = no_auto_fuse;
  o.no_memory_plan = no_memory_plan;
  return session_opts(g, p, o);
}

static inline mi_session_t *session(const mi_graph_t *g, mi_plugin_t *p) { return session_with(g, p, 0, 0); }

static inline mi_session_t *session_plain(const mi_graph_t *g, mi_plugin_t *p) { return session_with(g, p, 1, 0); }

/* Calls fn on opencl, vulkan and npu-stub where they load; one this build made that the loader
 * refused is a failure. */
static inline void other_plugins(mi_registry_t *r, void (*fn)(mi_plugin_t *)) {
  static const char *const names[] = {"opencl", "vulkan", "npu-stub"};
  for (size_t i = 0; i < 3; i++) {
    mi_plugin_t *p = mi_registry_find(r, names[i]);
    if (p) fn(p);
    else if (!tu_plugin_built(names[i]))
      printf("%s: not built here, skipped\n", names[i]);
    else
      CHECK(0, "%s was built but the loader refused it", names[i]);
  }
}

/* v[0..n) in [-0.5, 0.5), deterministic from seed (a 64-bit LCG's high bits). */
static inline void fill_halves(float *v, int n, uint64_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((seed >> 40) & 0xffff) / 65536.0f - 0.5f;
  }
}

/* Calls fn on blis-cpu, which every build has: failing when the loader refused it. */
static inline void on_blis_cpu(mi_registry_t *r, void (*fn)(mi_plugin_t *)) {
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  CHECK(p != NULL, "blis-cpu is loaded");
  if (p) fn(p);
}

/* Calls fn on blis-cpu at each SIMD cap: its own choice, capped at AVX2, then plain C (a fresh
 * registry each time: the plugin reads MI_BLIS_MAX_SIMD when it loads). */
static inline void on_blis_cpu_each_simd(void (*fn)(mi_plugin_t *)) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  for (int lv = 0; lv < 3; lv++) {
    mi_registry_t *reg;
    if (caps[lv]) setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    reg = open_plugins();
    printf("simd cap %s\n", caps[lv] ? caps[lv] : "none");
    on_blis_cpu(reg, fn);
    mi_registry_destroy(reg);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
}

/* Runs s on x; outs gets g->output_count new arrays. */
static inline void run(mi_session_t *s, const mi_graph_t *g, const mi_array_t *x, mi_array_t **outs) {
  mi_error_t err = {0};
  if (mi_session_run(s, &x, 1, outs, g->output_count, &err) != MI_OK) die("mi_session_run", &err);
}

static inline void ref(const mi_graph_t *g, const mi_array_t *x, mi_array_t **outs) {
  mi_error_t err = {0};
  if (mi_ref_run(g, &x, 1, outs, g->output_count, &err) != MI_OK) die("mi_ref_run", &err);
}

/* Runs g on p (a session with host fallback) and on the reference, on one seeded input; got and
 * want get the outputs (destroy_outs frees them). Returns the session's steps: kernels plus
 * host nodes. */
static inline int32_t run_both(const mi_graph_t *g, mi_plugin_t *p, uint64_t seed, mi_array_t **got,
                               mi_array_t **want) {
  mi_array_t *x = input_for(g, seed);
  mi_session_t *s = session(g, p);
  int32_t steps = mi_session_kernel_count(s) + mi_session_fallback_count(s);
  run(s, g, x, got);
  ref(g, x, want);
  mi_session_destroy(s);
  mi_array_destroy(x);
  return steps;
}

/* Frees the outputs run() and ref() filled (up to 4 each). */
static inline void destroy_outs(mi_array_t **got, mi_array_t **want) {
  for (int i = 0; i < 4; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(want[i]);
    got[i] = want[i] = NULL;
  }
}

/* Kernels of s that run more than one graph node. */
static inline int32_t multi_node_kernels(const mi_session_t *s) {
  int32_t n = 0;
  for (int32_t k = 0; k < mi_session_kernel_count(s); k++) {
    const int32_t *nodes;
    n += mi_session_kernel_nodes(s, k, &nodes) > 1;
  }
  return n;
}

#endif
