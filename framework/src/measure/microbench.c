/* microbench.c - the measured half of a device fingerprint: a GEMM for compute, a large Add for
 * bandwidth and a fixed probe set of small layers, each through the plugin and the protocol. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"

enum { P_CONV,
       P_DWCONV,
       P_RELU,
       P_POOL,
       P_GEMM };

static const char *const k_probe_names[MI_PROBE_COUNT] = {
    "conv3x3_16c_32x32", "dwconv3x3_32c_32x32", "relu_64c_32x32", "maxpool2x2_32c_32x32",
    "matmul_64x128x64"};

MI_API const char *mi_probe_name(int32_t index) {
  return index >= 0 && index < MI_PROBE_COUNT ? k_probe_names[index] : NULL;
}

static int32_t add_weight(mi_graph_t *g, const char *name, int32_t rank, const int64_t *dims) {
  int64_t n = 1;
  float *w;
  int32_t t;
  for (int32_t i = 0; i < rank; i++) n *= dims[i];
  w = malloc((size_t)n * sizeof *w);
  if (!w) return -1;
  for (int64_t i = 0; i < n; i++) w[i] = (float)((i * 7919) % 201 - 100) * 0.001f;
  t = mi_graph_add_const_f32(g, name, rank, dims, w);
  free(w);
  return t;
}

/* One-node graphs; returns NULL when out of memory. */
static mi_graph_t *build(int kind, mi_error_t *err) {
  mi_graph_t *g = mi_graph_create("probe");
  int64_t x4[4] = {1, 16, 32, 32}, w4[4] = {16, 16, 3, 3};
  int64_t pads[4] = {1, 1, 1, 1}, k3[2] = {3, 3}, k2[2] = {2, 2};
  int32_t x, w, y, n = -1, ins[2];
  if (!g) return NULL;
  switch (kind) {
  case P_CONV:
  case P_DWCONV:
    if (kind == P_DWCONV) {
      x4[1] = 32;
      w4[0] = 32;
      w4[1] = 1;
    }
    x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, x4);
    w = add_weight(g, "w", 4, w4);
    y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
    ins[0] = x;
    ins[1] = w;
    n = mi_graph_add_node(g, "Conv", "probe", 2, ins, 1, &y);
    if (n >= 0) {
      mi_node_set_ints(g, n, "kernel_shape", 2, k3);
      mi_node_set_ints(g, n, "pads", 4, pads);
      if (kind == P_DWCONV) mi_node_set_int(g, n, "group", 32);
    }
    break;
  case P_RELU:
  case P_POOL:
    x4[1] = kind == P_RELU ? 64 : 32;
    x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, x4);
    y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
    n = mi_graph_add_node(g, kind == P_RELU ? "Relu" : "MaxPool", "probe", 1, &x, 1, &y);
    if (n >= 0 && kind == P_POOL) {
      mi_node_set_ints(g, n, "kernel_shape", 2, k2);
      mi_node_set_ints(g, n, "strides", 2, k2);
    }
    break;
  default: { /* MatMul [m,k] x [k,n] with m,k,n from the caller's kind encoding */
    int64_t m = kind == P_GEMM ? 64 : 256, k = kind == P_GEMM ? 128 : 256,
            nn = kind == P_GEMM ? 64 : 256;
    int64_t xd[2] = {m, k}, wd[2] = {k, nn};
    if (kind == 100) { /* the bandwidth probe: a large Add of two runtime inputs */
      int64_t ad[2] = {1, 1 << 22};
      x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, ad);
      w = mi_graph_add_tensor(g, "z", MI_DTYPE_FLOAT32, 2, ad);
      mi_graph_add_input(g, w);
    } else {
      x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd);
      w = add_weight(g, "w", 2, wd);
    }
    y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
    ins[0] = x;
    ins[1] = w;
    n = mi_graph_add_node(g, kind == 100 ? "Add" : "MatMul", "probe", 2, ins, 1, &y);
  }
  }
  if (n < 0 || x < 0 || y < 0 || mi_graph_add_input(g, x) || mi_graph_add_output(g, y) ||
      mi_graph_toposort(g, err) || mi_graph_infer_shapes(g, err)) {
    mi_graph_destroy(g);
    return NULL;
  }
  /* Inputs were added in an order that put "z" first for Add; the session does not care. */
  return g;
}

/* Median seconds of the probe node: its device time when the device reports one. */
static int32_t time_probe(mi_plugin_t *pl, uint32_t dev, int kind, double *sec, mi_error_t *err) {
  mi_measure_options_t mo;
  mi_profile_t *p = NULL;
  mi_graph_t *g = build(kind, err);
  int32_t rc;
  if (!g) return mi_errorf(err, MI_ERR_INTERNAL, "fingerprint: cannot build probe %d", kind);
  mi_measure_options_default(&mo);
  mo.warmup = 1;
  mo.max_repeats = 10;
  mo.max_remeasure = 0;
  mo.budget_s = 2;
  rc = mi_profile_run(g, pl, dev, NULL, &mo, 0, &p, err);
  if (!rc) {
    const mi_layer_profile_t *l = &p->layers[0];
    *sec = l->has_device_time ? l->device.median : l->wall.median;
    if (l->where == 2 || !(*sec > 0)) *sec = p->latency.stats.median;
  }
  mi_profile_destroy(p);
  mi_graph_destroy(g);
  return rc;
}

MI_API void mi_device_hash(const mi_device_desc_t *d, char out[17]) {
  uint64_t h = MI_HASH64_SEED;
  /* The device's identity only: what it is (name, vendor, driver, ISA, kind), never what a
   * driver reports of its state. PoCL derives its global memory from the memory free when the
   * process starts (6.54e9 bytes idle, 7.07e9 with 3 GB held by another process, 2.1e9 under
   * POCL_MEMORY_LIMIT=2, same machine), and compute units follow affinity and cgroup limits in
   * some drivers: hashing those put one device under two hashes in one history. Capacities stay
   * in the fingerprint's vector, where similarity, not identity, is asked. */
  h = mi_hash64(d->name, strnlen(d->name, sizeof d->name), h);
  h = mi_hash64(d->vendor, strnlen(d->vendor, sizeof d->vendor), h);
  h = mi_hash64(d->driver_version, strnlen(d->driver_version, sizeof d->driver_version), h);
  h = mi_hash64(d->isa, strnlen(d->isa, sizeof d->isa), h);
  h = mi_hash64(&d->kind, sizeof d->kind, h);
  mi_hash64_hex(h, out);
}

static double lg(double v) { return v > 0 ? log10(v) : 0; }

MI_API int32_t mi_device_fingerprint(mi_plugin_t *pl, uint32_t dev, mi_device_fingerprint_t *out,
                                     mi_error_t *err) {
  double s = 0;
  int32_t rc;
  if (!out || !pl) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_device_fingerprint: NULL");
  memset(out, 0, sizeof *out);
  if ((rc = mi_plugin_device_info(pl, dev, &out->desc, err))) return rc;
  if ((rc = time_probe(pl, dev, 99, &s, err))) return rc; /* 256^3 MatMul */
  out->gemm_gflops = 2.0 * 256 * 256 * 256 / s * 1e-9;
  if ((rc = time_probe(pl, dev, 100, &s, err))) return rc;
  out->add_gbs = 3.0 * 4.0 * (1 << 22) / s * 1e-9;
  for (int32_t i = 0; i < MI_PROBE_COUNT; i++) {
    if ((rc = time_probe(pl, dev, i, &s, err))) return rc;
    out->probe_us[i] = s * 1e6;
  }
  out->vector[0] = lg(out->gemm_gflops);
  out->vector[1] = lg(out->add_gbs);
  out->vector[2] = lg((double)out->desc.compute_units);
  out->vector[3] = lg((double)out->desc.global_memory_bytes / 1e9);
  for (int32_t i = 0; i < MI_PROBE_COUNT; i++) out->vector[4 + i] = lg(out->probe_us[i]);
  mi_device_hash(&out->desc, out->hash);
  return MI_OK;
}
