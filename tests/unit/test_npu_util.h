/* test_npu_util.h - shared helpers of the npu-stub tests: load the plugin through the host
 * loader, build kernel descriptions, run kernels and read counters. */
#ifndef TEST_NPU_UTIL_H
#define TEST_NPU_UTIL_H

#include <sys/wait.h>

#include "metainfer/mi_transform.h"
#include "test_util.h"

/* The plugin as the host loaded it: `api` and `ctx` point into the registry's entry. */
typedef struct npu {
  mi_registry_t *reg;
  mi_plugin_t *plugin;
  const mi_plugin_api_t *api;
  mi_plugin_ctx_t *ctx;
} npu_t;

/* The host hands plugins settings from MI_SETTING_<KEY>; "npu_stub.devices" becomes this. */
#define NPU_DEVICES_SETTING_ENV "MI_SETTING_NPU_STUB_DEVICES"

/* The status a rejection reason "create failed (<status message>): ..." names. */
static inline int32_t npu_status_of(const char *reason) {
  int32_t c;
  char want[96];
  for (c = 1; c <= MI_ERR_CONSTRAINT; c++) {
    snprintf(want, sizeof want, "create failed (%s)", mi_status_message(c));
    if (strstr(reason, want)) return c;
  }
  return MI_ERR_ABI;
}

/* Loads every plugin of $MI_BUILD/plugins with the host loader (mi_registry_scan) and picks
 * npu-stub. `devices` (or NULL) is passed as the host setting npu_stub.devices. Returns MI_OK,
 * or the status of the plugin's failed create() with the loader's reason in err. */
static inline int32_t npu_open(npu_t *p, const char *devices, mi_error_t *err) {
  char dir[1024];
  int32_t i;
  memset(p, 0, sizeof *p);
  memset(err, 0, sizeof *err);
  if (devices) setenv(NPU_DEVICES_SETTING_ENV, devices, 1);
  else
    unsetenv(NPU_DEVICES_SETTING_ENV);
  tu_build_path(dir, sizeof dir, "plugins");
  p->reg = mi_registry_create();
  REQUIRE(p->reg != NULL);
  if (tu_scan_plugins(p->reg, err) != MI_OK) {
    fprintf(stderr, "scan %s: %s\n", dir, err->message);
    exit(1);
  }
  unsetenv(NPU_DEVICES_SETTING_ENV);
  p->plugin = mi_registry_find(p->reg, "npu-stub");
  if (!p->plugin) {
    for (i = 0; i < mi_registry_rejected_count(p->reg); i++) {
      const char *path = NULL, *why = mi_registry_rejected(p->reg, i, &path);
      const char *base = path ? strrchr(path, '/') : NULL;
      base = base ? base + 1 : path;
      if (base && why && (strstr(base, "npu-stub") || strstr(base, "npu_stub"))) {
        snprintf(err->message, sizeof err->message, "%s", why);
        err->code = npu_status_of(why);
        return err->code;
      }
    }
    fprintf(stderr, "npu-stub is neither loaded nor rejected in %s\n", dir);
    exit(1);
  }
  REQUIRE(strcmp(p->plugin->name, "npu-stub") == 0);
  p->api = &p->plugin->api;
  p->ctx = p->plugin->ctx;
  return MI_OK;
}

/* Writes zoo model `family` (extra mi-zoo options in args) as <dir>/<family>.onnx with the mi-zoo
 * program and loads it, shapes inferred; exits on failure. */
static inline mi_graph_t *npu_zoo_model(const char *dir, const char *family, const char *args) {
  char cmd[1024], path[512];
  mi_graph_t *g = NULL;
  mi_error_t err = {0};
  int rc;
  snprintf(path, sizeof path, "%s/%s.onnx", dir, family);
  rc = tu_mi_zoo(cmd, sizeof cmd, family, path, args);
  REQUIRE(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  if (mi_onnx_load(path, &g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "%s: %s\n", family, err.message);
    exit(1);
  }
  return g;
}

/* The host quantizer's INT8 form an INT8 NPU deployment uses (and the tuner's int8_act asks
 * for): BN folded, INT8 per-channel weights, INT8 (asymmetric uint8) activations calibrated on
 * 4 random samples (seed 3); a QuantizeLinear on the float graph input, a DequantizeLinear at
 * the end and around float ops. Exits on failure. */
static inline mi_graph_t *npu_quantize_int8(const mi_graph_t *g) {
  mi_xf_config_t *c = mi_xf_config_create();
  mi_xf_samples_t *calib = NULL;
  mi_xf_apply_opts_t o;
  mi_graph_t *q = NULL;
  mi_error_t err = {0};
  REQUIRE(c != NULL);
  c->fold_bn = 1;
  c->defaults.set = MI_XF_SET_WEIGHTS | MI_XF_SET_SCALES | MI_XF_SET_ACTS;
  c->defaults.weights = MI_XF_INT8;
  c->defaults.scales = MI_XF_PER_CHANNEL;
  c->defaults.activations = MI_XF_INT8;
  memset(&o, 0, sizeof o);
  if (mi_xf_samples_random(g, 4, 3, &calib, &err) != MI_OK) {
    fprintf(stderr, "calibration samples: %s\n", err.message);
    exit(1);
  }
  o.calib = calib;
  if (mi_xf_apply(g, c, &o, &q, NULL, &err) != MI_OK) {
    fprintf(stderr, "mi_xf_apply: %s\n", err.message);
    exit(1);
  }
  mi_xf_samples_destroy(calib);
  mi_xf_config_destroy(c);
  return q;
}

/* Destroys the instance and unloads every plugin; safe on a failed open. */
static inline void npu_close(npu_t *p) {
  mi_registry_destroy(p->reg);
  memset(p, 0, sizeof *p);
}

static inline void npu_set(npu_t *p, uint32_t dev, const char *knob, int64_t v) {
  mi_error_t err;
  mi_knob_value_t kv;
  kv.name = knob;
  kv.i = v;
  kv.f = 0;
  if (p->api->set_device_knobs(p->ctx, dev, &kv, 1, &err) != MI_OK) {
    fprintf(stderr, "set %s=%lld: %s\n", knob, (long long)v, err.message);
    exit(1);
  }
}

static inline int npu_counter(npu_t *p, uint32_t dev, const char *name, double *value) {
  uint32_t n = 0, i;
  mi_error_t err;
  REQUIRE(p->api->counter_count(p->ctx, dev, &n, &err) == MI_OK);
  for (i = 0; i < n; i++) {
    mi_counter_desc_t d;
    mi_counter_sample_t s;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    REQUIRE(p->api->counter_desc(p->ctx, dev, i, &d, &err) == MI_OK);
    if (strcmp(d.name, name) != 0) continue;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    REQUIRE(p->api->counter_read(p->ctx, dev, i, &s, &err) == MI_OK);
    *value = s.value;
    return s.has_value;
  }
  fprintf(stderr, "no counter %s\n", name);
  exit(1);
}

/* ---------------------------------------------------------------- kernel descriptions */

#define KB_T 24
#define KB_N 8
#define KB_A 8

typedef struct kb {
  mi_tensor_desc_t t[KB_T];
  const mi_tensor_desc_t *tp[KB_T];
  int nt;
  mi_node_desc_t n[KB_N];
  const mi_node_desc_t *np[KB_N];
  int nn;
  int32_t nin[KB_N][8], nout[KB_N][2];
  mi_attr_t attrs[KB_N][KB_A];
  int64_t ints[KB_N][KB_A][4];
  int32_t inputs[KB_T], outputs[KB_T];
  mi_knob_value_t knobs[8];
  int nk;
  mi_kernel_desc_t d;
} kb_t;

static inline int kb_tensor(kb_t *k, int32_t dtype, int rank, const int64_t *dims,
                            const void *data, uint64_t bytes) {
  mi_tensor_desc_t *t = &k->t[k->nt];
  int i;
  REQUIRE(k->nt < KB_T);
  memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->dtype = dtype;
  t->layout = rank == 4 ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
  t->rank = rank;
  for (i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->data = data;
  t->data_bytes = bytes;
  t->scale = 1.0f;
  k->tp[k->nt] = t;
  return k->nt++;
}

static inline void kb_quant(kb_t *k, int idx, float scale, int32_t zp) {
  k->t[idx].scale = scale;
  k->t[idx].zero_point = zp;
}

static inline int kb_node(kb_t *k, const char *op, const int32_t *ins, int nin, int32_t out) {
  mi_node_desc_t *n = &k->n[k->nn];
  REQUIRE(k->nn < KB_N);
  memset(n, 0, sizeof *n);
  n->struct_size = sizeof *n;
  n->op_type = op;
  n->name = op;
  n->opset = 17;
  memcpy(k->nin[k->nn], ins, sizeof(int32_t) * (size_t)nin);
  k->nout[k->nn][0] = out;
  n->input_count = nin;
  n->inputs = k->nin[k->nn];
  n->output_count = 1;
  n->outputs = k->nout[k->nn];
  n->attrs = k->attrs[k->nn];
  k->np[k->nn] = n;
  return k->nn++;
}

static inline void kb_ints(kb_t *k, int node, const char *name, const int64_t *v, int count) {
  mi_node_desc_t *n = &k->n[node];
  mi_attr_t *a = &k->attrs[node][n->attr_count];
  memset(a, 0, sizeof *a);
  memcpy(k->ints[node][n->attr_count], v, sizeof(int64_t) * (size_t)count);
  a->name = name;
  a->type = MI_ATTR_INTS;
  a->count = count;
  a->ints = k->ints[node][n->attr_count];
  n->attr_count++;
}

static inline void kb_int(kb_t *k, int node, const char *name, int64_t v) {
  mi_node_desc_t *n = &k->n[node];
  mi_attr_t *a = &k->attrs[node][n->attr_count];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->type = MI_ATTR_INT;
  a->i = v;
  n->attr_count++;
}

static inline void kb_knob(kb_t *k, const char *name, int64_t v) {
  k->knobs[k->nk].name = name;
  k->knobs[k->nk].i = v;
  k->knobs[k->nk].f = 0;
  k->nk++;
}

/* Runtime inputs: non-constant tensors no node produces, in order of first use. */
static inline mi_kernel_desc_t *kb_finish(kb_t *k, int out) {
  int i, j, c, ni = 0;
  for (i = 0; i < k->nn; i++)
    for (j = 0; j < k->n[i].input_count; j++) {
      int32_t t = k->nin[i][j], produced = 0, seen = 0;
      if (t < 0 || k->t[t].data) continue;
      for (c = 0; c < k->nn; c++) produced |= k->nout[c][0] == t;
      for (c = 0; c < ni; c++) seen |= k->inputs[c] == t;
      if (!produced && !seen) k->inputs[ni++] = t;
    }
  k->outputs[0] = out;
  memset(&k->d, 0, sizeof k->d);
  k->d.struct_size = sizeof k->d;
  k->d.node_count = k->nn;
  k->d.nodes = k->np;
  k->d.tensor_count = k->nt;
  k->d.tensors = k->tp;
  k->d.input_count = ni;
  k->d.inputs = k->inputs;
  k->d.output_count = 1;
  k->d.outputs = k->outputs;
  k->d.knob_count = k->nk;
  k->d.knobs = k->knobs;
  return &k->d;
}

static inline uint64_t kb_bytes(const mi_tensor_desc_t *t) {
  uint64_t n = 1;
  int i;
  for (i = 0; i < t->rank; i++) n *= (uint64_t)t->dims[i];
  return n * (t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8 ? 1u
              : t->dtype == MI_DTYPE_FLOAT16                          ? 2u
                                                                      : 4u);
}

/* A prepared kernel with its buffers. */
typedef struct kr {
  npu_t *p;
  uint32_t dev;
  mi_kernel_t *kernel;
  mi_buffer_t *in[8], *out;
  int nin;
  uint64_t out_bytes;
} kr_t;

static inline int32_t kr_prepare(kr_t *r, npu_t *p, uint32_t dev, kb_t *k, int out,
                                 const void *const *inputs, mi_error_t *err) {
  mi_kernel_desc_t *d = kb_finish(k, out);
  int i;
  int32_t rc;
  memset(r, 0, sizeof *r);
  r->p = p;
  r->dev = dev;
  rc = p->api->kernel_prepare(p->ctx, dev, d, &r->kernel, err);
  if (rc != MI_OK) return rc;
  r->nin = d->input_count;
  for (i = 0; i < r->nin; i++) {
    uint64_t b = kb_bytes(&k->t[d->inputs[i]]);
    REQUIRE(p->api->buffer_alloc(p->ctx, dev, b, &r->in[i], err) == MI_OK);
    REQUIRE(p->api->buffer_write(p->ctx, r->in[i], 0, inputs[i], b, err) == MI_OK);
  }
  r->out_bytes = kb_bytes(&k->t[out]);
  REQUIRE(p->api->buffer_alloc(p->ctx, dev, r->out_bytes, &r->out, err) == MI_OK);
  return MI_OK;
}

static inline void kr_run(kr_t *r, void *out, mi_run_stats_t *st) {
  mi_error_t err;
  mi_run_stats_t local;
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  st->struct_size = sizeof *st;
  if (r->p->api->kernel_run(r->p->ctx, r->kernel, r->in, r->nin, &r->out, 1, st, &err) != MI_OK) {
    fprintf(stderr, "kernel_run: %s\n", err.message);
    exit(1);
  }
  REQUIRE(st->has_device_time == 1 && st->has_energy == 1 && st->energy_modeled == 1);
  if (out) REQUIRE(r->p->api->buffer_read(r->p->ctx, r->out, 0, out, r->out_bytes, &err) == MI_OK);
}

static inline void kr_release(kr_t *r) {
  int i;
  for (i = 0; i < r->nin; i++) r->p->api->buffer_free(r->p->ctx, r->in[i]);
  r->p->api->buffer_free(r->p->ctx, r->out);
  r->p->api->kernel_release(r->p->ctx, r->kernel);
}

/* Median device time (ns) and median energy (J) over `reps` runs. */
static inline void kr_measure(kr_t *r, int reps, double *time_ns, double *energy_j) {
  double t[16], e[16];
  int i, j;
  REQUIRE(reps <= 16);
  for (i = 0; i < reps; i++) {
    mi_run_stats_t st;
    kr_run(r, NULL, &st);
    t[i] = (double)st.device_time_ns;
    e[i] = st.energy_j;
  }
  for (i = 0; i < reps; i++)
    for (j = i + 1; j < reps; j++) {
      if (t[j] < t[i]) {
        double x = t[i];
        t[i] = t[j];
        t[j] = x;
      }
      if (e[j] < e[i]) {
        double x = e[i];
        e[i] = e[j];
        e[j] = x;
      }
    }
  if (time_ns) *time_ns = t[reps / 2];
  if (energy_j) *energy_j = e[reps / 2];
}

/* Deterministic test data. */
static inline uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}
static inline void fill_i8(int8_t *v, size_t n, int lo, int hi, uint32_t seed) {
  size_t i;
  for (i = 0; i < n; i++) v[i] = (int8_t)(lo + (int)(lcg(&seed) % (uint32_t)(hi - lo + 1)));
}
static inline void fill_f32(float *v, size_t n, float lo, float hi, uint32_t seed) {
  size_t i;
  for (i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(lcg(&seed) % 100000u) / 100000.0f;
}

#endif
