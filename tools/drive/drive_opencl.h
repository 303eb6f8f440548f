/* drive_opencl.h - driving the OpenCL plugin with no host library: dlopen it from
 * $MI_BUILD/plugins, the host services it gets, an instance, its counters (the unit tests,
 * tools/bench/opencl). Plugin SDK only. */
#ifndef MI_DRIVE_OPENCL_H
#define MI_DRIVE_OPENCL_H

#include <dlfcn.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drive_env.h"
#include "drive_tensor.h"
#include "metainfer/mi_plugin.h"

typedef struct ocl_t {
  void *lib;
  const mi_plugin_api_t *api;
  mi_plugin_ctx_t *ctx;
  mi_host_api_t host;
  char cache_dir[256];
  char last_log[1024];
  const char *local_mem_limit; /* MI_OPENCL_LOCAL_MEM_LIMIT setting, NULL = unset */
} ocl_t;

static inline void t_log(void *hc, int32_t level, const char *plugin, const char *msg) {
  ocl_t *o = hc;
  snprintf(o->last_log, sizeof o->last_log, "%s", msg);
  if (level <= MI_LOG_WARN) fprintf(stderr, "[%s] %s\n", plugin, msg);
}
static inline void *t_alloc(void *hc, size_t n) {
  (void)hc;
  return malloc(n);
}
static inline void t_free(void *hc, void *p) {
  (void)hc;
  free(p);
}
static inline const char *t_setting(void *hc, const char *key) {
  ocl_t *o = hc;
  return strcmp(key, "MI_OPENCL_LOCAL_MEM_LIMIT") == 0 ? o->local_mem_limit : NULL;
}

/* Sets MI_CACHE_DIR to a fresh temporary directory and PoCL's cache to a writable one
 * (drive_pocl_cache: the suites' shared one, else the build's). */
static inline void ocl_env(ocl_t *o) {
  const char *b = getenv("MI_BUILD");
  char pocl[512];
  snprintf(o->cache_dir, sizeof o->cache_dir, "/tmp/mi-ocl-test-XXXXXX");
  DRIVE_REQUIRE(mkdtemp(o->cache_dir) != NULL);
  setenv("MI_CACHE_DIR", o->cache_dir, 1);
  if (b) snprintf(pocl, sizeof pocl, "%s/tests/pocl-cache", b);
  else
    snprintf(pocl, sizeof pocl, "%s/pocl", o->cache_dir);
  drive_pocl_cache(pocl);
}

static inline void ocl_rm_cache(ocl_t *o) { drive_rmtree(o->cache_dir); }

/* Loads the plugin and creates an instance; returns 0 when there is no OpenCL device. */
static inline int ocl_open(ocl_t *o) {
  char path[512];
  mi_error_t err = {0, ""};
  mi_plugin_entry_fn entry;
  uint32_t n = 0;
  drive_build_path(path, sizeof path, "plugins/libmi_opencl.so");
  /* As the host loader does under MI_LOADER_NODELETE (make test-asan): the plugin and the ICD
   * loader it pulls in stay mapped, so LeakSanitizer sees their globals (ocl-icd's platforms). */
  {
    const char *nd = getenv("MI_LOADER_NODELETE");
    o->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | (nd && nd[0] == '1' ? RTLD_NODELETE : 0));
  }
  if (!o->lib) fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
  DRIVE_REQUIRE(o->lib);
  *(void **)&entry = dlsym(o->lib, MI_PLUGIN_ENTRY_NAME);
  DRIVE_REQUIRE(entry);
  memset(&o->host, 0, sizeof o->host);
  o->host.struct_size = sizeof o->host;
  o->host.abi_major = MI_ABI_VERSION_MAJOR;
  o->host.abi_minor = MI_ABI_VERSION_MINOR;
  o->host.host_ctx = o;
  o->host.log = t_log;
  o->host.alloc = t_alloc;
  o->host.free = t_free;
  o->host.get_setting = t_setting;
  o->api = entry(&o->host, &err);
  if (!o->api) fprintf(stderr, "%s refused the host: %s\n", path, err.message);
  DRIVE_REQUIRE(o->api);
  if (o->api->create(&o->host, &o->ctx, &err) != MI_OK) fprintf(stderr, "create: %s\n", err.message);
  DRIVE_REQUIRE(o->ctx);
  DRIVE_REQUIRE(o->api->device_count(o->ctx, &n, &err) == MI_OK);
  return n > 0;
}

static inline void ocl_close(ocl_t *o) {
  if (o->ctx) o->api->destroy(o->ctx);
  o->ctx = NULL;
  if (o->lib) dlclose(o->lib);
  o->lib = NULL;
}

static inline double ocl_counter(ocl_t *o, const char *name) {
  uint32_t n = 0, i;
  DRIVE_REQUIRE(o->api->counter_count(o->ctx, 0, &n, NULL) == MI_OK);
  for (i = 0; i < n; i++) {
    mi_counter_desc_t d;
    mi_counter_sample_t s;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    DRIVE_REQUIRE(o->api->counter_desc(o->ctx, 0, i, &d, NULL) == MI_OK);
    if (strcmp(d.name, name) != 0) continue;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    DRIVE_REQUIRE(o->api->counter_read(o->ctx, 0, i, &s, NULL) == MI_OK);
    return s.has_value ? s.value : -1.0;
  }
  DRIVE_REQUIRE(!"counter not found");
  return -1.0;
}

/* ---------------------------------------------------------------- kernel descriptions */

#define KD_MAX 16
typedef struct kd {
  mi_tensor_desc_t t[KD_MAX];
  const mi_tensor_desc_t *tp[KD_MAX];
  int nt;
  mi_node_desc_t nodes[6];
  const mi_node_desc_t *np[6];
  int32_t io[6][2][6];
  mi_attr_t attrs[6][6];
  int nn;
  int32_t ins[KD_MAX], outs[4];
  int nin, nout;
  mi_knob_value_t knobs[8];
  int nk;
  mi_kernel_desc_t d;
} kd_t;

static inline int kd_tensor(kd_t *k, int rank, const int64_t *dims, const float *data) {
  drive_f32_desc(&k->t[k->nt], rank, dims, data);
  k->tp[k->nt] = &k->t[k->nt];
  return k->nt++;
}

static inline mi_node_desc_t *kd_node(kd_t *k, const char *op, int nin, const int *in, int out) {
  mi_node_desc_t *n = &k->nodes[k->nn];
  drive_node_desc(n, op, 17, nin, in, k->io[k->nn][0], out, k->io[k->nn][1], k->attrs[k->nn]);
  k->np[k->nn++] = n;
  return n;
}

static inline mi_attr_t *kd_attr(kd_t *k, mi_node_desc_t *n, const char *name, int type) {
  return drive_attr(&k->attrs[n - k->nodes][n->attr_count++], name, type);
}

static inline void kd_attr_ints(kd_t *k, mi_node_desc_t *n, const char *name, int cnt,
                                const int64_t *v) {
  mi_attr_t *a = kd_attr(k, n, name, MI_ATTR_INTS);
  a->count = cnt;
  a->ints = v;
}

static inline void kd_attr_int(kd_t *k, mi_node_desc_t *n, const char *name, int64_t v) {
  kd_attr(k, n, name, MI_ATTR_INT)->i = v;
}

static inline void kd_attr_float(kd_t *k, mi_node_desc_t *n, const char *name, float v) {
  kd_attr(k, n, name, MI_ATTR_FLOAT)->f = v;
}

static inline void kd_knob(kd_t *k, const char *name, int64_t v) {
  k->knobs[k->nk].name = name;
  k->knobs[k->nk].i = v;
  k->knobs[k->nk].f = 0;
  k->nk++;
}

static inline const mi_kernel_desc_t *kd_finish(kd_t *k, const char *variant) {
  drive_kernel_desc(&k->d, k->np, k->nn, k->tp, k->nt, k->ins, k->nin, k->outs, k->nout, variant,
                    k->knobs, k->nk);
  return &k->d;
}

static inline void fill(float *v, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

#endif
