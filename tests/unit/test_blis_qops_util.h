/* test_blis_qops_util.h - the harness of the quantized-op tests (test_blis_qops.c,
 * test_blis_qjoin.c): graphs built node by node, filled inputs, and run_case, which runs a graph
 * on blis-cpu:0 without host fallback and on the reference and wants every output byte equal. */
#ifndef TEST_BLIS_QOPS_UTIL_H
#define TEST_BLIS_QOPS_UTIL_H

#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

static mi_plugin_t *g_blis;
static int32_t g_kernels;    /* when > 0: the session must run the graph as this many kernels */
static const float *g_x0;    /* when set: the first input's values (g_x0n of them), not fill()'s */
static const uint8_t *g_x0b; /* when set: the first input's bytes (1-byte codes, g_x0n of them) */
static int64_t g_x0n;
static int32_t g_runs = 1; /* session runs of run_case, each compared with the reference */
/* when > 0: FLOAT32 outputs within this relative L2 of the reference instead of byte for byte (a
 * fused activation the plugin computes with its own vector erf or exp) */
static double g_tol;

static uint64_t g_seed = 12345;
static inline uint32_t rnd32(void) {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_seed >> 33);
}

/* Fills an array of any dtype deterministically (floats in [-4, 4), codes over their range,
 * int32 in [-1000, 1000), BOOL 0 or 1). */
static inline void fill(mi_array_t *a) {
  int64_t n = mi_array_numel(a);
  for (int64_t i = 0; i < n; i++) {
    uint32_t r = rnd32();
    switch (a->dtype) {
    case MI_DTYPE_FLOAT32: ((float *)a->data)[i] = (float)(r % 65536) / 8192.0f - 4.0f; break;
    case MI_DTYPE_UINT8: ((uint8_t *)a->data)[i] = (uint8_t)r; break;
    case MI_DTYPE_INT8: ((int8_t *)a->data)[i] = (int8_t)(uint8_t)r; break;
    case MI_DTYPE_INT32: ((int32_t *)a->data)[i] = (int32_t)(r % 2000) - 1000; break;
    case MI_DTYPE_BOOL: ((uint8_t *)a->data)[i] = (uint8_t)(r >> 7 & 1); break;
    default: break;
    }
  }
}

static inline int32_t input(mi_graph_t *g, const char *name, int32_t dt, int rank, const int64_t *dims) {
  int32_t t = mi_graph_add_tensor(g, name, dt, rank, dims);
  mi_graph_add_input(g, t);
  return t;
}

/* A constant of the given dtype and shape, filled by fill() (or from vals when not NULL). */
static inline int32_t constant(mi_graph_t *g, const char *name, int32_t dt, int rank, const int64_t *dims, const void *vals) {
  mi_array_t *a = mi_array_create(dt, rank, dims);
  REQUIRE(a);
  if (vals) memcpy(a->data, vals, a->nbytes);
  else
    fill(a);
  int32_t t = mi_graph_add_tensor(g, name, dt, rank, dims);
  mi_graph_set_data(g, t, a->data, a->nbytes);
  mi_array_destroy(a);
  return t;
}

static inline int32_t f32c(mi_graph_t *g, const char *name, float v) { return constant(g, name, MI_DTYPE_FLOAT32, 0, NULL, &v); }
static inline int32_t codec(mi_graph_t *g, const char *name, int32_t dt, int32_t v) {
  uint8_t b = (uint8_t)v;
  return constant(g, name, dt, 0, NULL, &b);
}

static inline int32_t out(mi_graph_t *g, const char *name) {
  int32_t t = mi_graph_add_tensor(g, name, MI_DTYPE_UNDEFINED, -1, NULL);
  mi_graph_add_output(g, t);
  return t;
}

static inline int32_t node(mi_graph_t *g, const char *op, int nin, const int32_t *ins, int nout, const int32_t *outs,
                           int ms) {
  int32_t n = mi_graph_add_node(g, op, op, nin, ins, nout, outs);
  if (ms) {
    free(g->nodes[n].domain);
    g->nodes[n].domain = strdup("com.microsoft");
  }
  return n;
}

/* Runs g on blis-cpu:0 without host fallback and on the reference with the same (filled)
 * inputs; every output must match byte for byte. want_refusal: blis-cpu must refuse instead. */
static int32_t g_threads; /* when > 0: blis-cpu's threads knob for run_case's sessions */
static inline void run_case(mi_graph_t *g, const char *name, int want_refusal) {
  mi_knob_value_t th = {"threads", g_threads, 0.};
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in[8] = {0}, *od[4] = {0}, *orf[4] = {0};
  mi_error_t err = {0, ""};
  int32_t nin = g->input_count, nout = g->output_count, rc = mi_graph_infer_shapes(g, &err);
  CHECK(rc == MI_OK, "%s: shapes: %s", name, err.message);
  for (int32_t i = 0; i < nin && rc == MI_OK; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    in[i] = mi_array_create(t->dtype, t->rank, t->dims);
    fill(in[i]);
    if (i == 0 && g_x0 && in[i]->nbytes == (size_t)g_x0n * sizeof(float)) memcpy(in[i]->data, g_x0, in[i]->nbytes);
    if (i == 0 && g_x0b && in[i]->nbytes == (size_t)g_x0n) memcpy(in[i]->data, g_x0b, in[i]->nbytes);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0;
  if (g_threads > 0) {
    o.device_knob_count = 1;
    o.device_knobs = &th;
  }
  if (rc == MI_OK) rc = mi_session_create(g, g_blis, 0, &o, &s, &err);
  if (want_refusal) {
    CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "blis-cpu"), "%s: status %d (%s), expected blis-cpu's refusal",
          name, (int)rc, err.message);
  } else {
    CHECK(rc == MI_OK, "%s: session: %s", name, err.message);
    if (rc == MI_OK && g_kernels > 0)
      CHECK(mi_session_kernel_count(s) == g_kernels, "%s: %d kernels, expected %d", name,
            (int)mi_session_kernel_count(s), (int)g_kernels);
    if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, orf, nout, &err);
    CHECK(rc == MI_OK, "%s: reference: %s", name, err.message);
    for (int32_t run = 0; rc == MI_OK && run < g_runs; run++) {
      for (int32_t k = 0; k < 4; k++) mi_array_destroy(od[k]), od[k] = NULL;
      rc = mi_session_run(s, (const mi_array_t *const *)in, nin, od, nout, &err);
      CHECK(rc == MI_OK, "%s: run: %s", name, err.message);
      for (int32_t k = 0; rc == MI_OK && k < nout; k++) {
        CHECK(od[k]->dtype == orf[k]->dtype && od[k]->nbytes == orf[k]->nbytes, "%s: output %d dtype/size", name, (int)k);
        if (g_tol > 0 && od[k]->dtype == MI_DTYPE_FLOAT32 && od[k]->nbytes == orf[k]->nbytes) {
          const float *a = od[k]->data, *r = orf[k]->data;
          double d2 = 0, r2 = 0;
          for (size_t e = 0; e < od[k]->nbytes / 4; e++) {
            d2 += ((double)a[e] - r[e]) * ((double)a[e] - r[e]);
            r2 += (double)r[e] * r[e];
          }
          CHECK(sqrt(d2) <= g_tol * sqrt(r2), "%s: run %d, output %d: relative L2 %.3g over %.3g", name, (int)run,
                (int)k, sqrt(d2 / (r2 > 0 ? r2 : 1)), g_tol);
        } else if (od[k]->nbytes == orf[k]->nbytes) {
          size_t diff = 0;
          for (size_t b = 0; b < od[k]->nbytes; b++) diff += ((uint8_t *)od[k]->data)[b] != ((uint8_t *)orf[k]->data)[b];
          CHECK(diff == 0, "%s: run %d, output %d: %zu of %zu bytes differ from the reference", name, (int)run, (int)k,
                diff, od[k]->nbytes);
        }
      }
    }
  }
  mi_session_destroy(s);
  for (int32_t i = 0; i < 8; i++) mi_array_destroy(in[i]);
  for (int32_t k = 0; k < 4; k++) mi_array_destroy(od[k]), mi_array_destroy(orf[k]);
  mi_graph_destroy(g);
}

static inline mi_graph_t *graph(int64_t opset) {
  mi_graph_t *g = mi_graph_create("q");
  REQUIRE(g);
  g->opset = opset;
  return g;
}

/* The float input x (shape xd) through a DynamicQuantizeLinear into q (codes, scale, zero
 * point), the graph's first node, and n intermediate tensors t[0..n). */
static inline void dynq_front(mi_graph_t *g, const int64_t *xd, int32_t q[3], int32_t *t, int n) {
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  static const char *const qn[3] = {"xq", "xs", "xz"};
  for (int i = 0; i < 3; i++) q[i] = mi_graph_add_tensor(g, qn[i], MI_DTYPE_UNDEFINED, -1, NULL);
  for (int i = 0; i < n; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "t%d", i);
    t[i] = mi_graph_add_tensor(g, nm, MI_DTYPE_UNDEFINED, -1, NULL);
  }
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
}

/* y, a graph output, also quantized by a DynamicQuantizeLinear whose outputs are graph outputs. */
static inline void dynq_back(mi_graph_t *g, int32_t y) {
  int32_t qo[3] = {out(g, "yq"), out(g, "ys"), out(g, "yz")};
  node(g, "DynamicQuantizeLinear", 1, &y, 3, qo, 0);
}

static mi_registry_t *r;
static mi_error_t err = {0, ""};

static inline void setup(void) {
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  {
    uint32_t dev = 0;
    tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
  }
}

static inline void teardown(void) {
  mi_registry_destroy(r);
}

/* blis-cpu's count of DynamicQuantizeLinear ranges taken from the kernel that wrote the floats. */
static inline double ranges_reused(void) {
  mi_counter_sample_t smp;
  mi_error_t e = {0, ""};
  memset(&smp, 0, sizeof smp);
  smp.struct_size = sizeof smp;
  CHECK(g_blis->api.counter_read(g_blis->ctx, 0, 2, &smp, &e) == MI_OK && smp.has_value, "ranges_reused: %s", e.message);
  return smp.value;
}

/* A registry whose blis-cpu:0 (now g_blis) runs at most SIMD level cap (MI_BLIS_MAX_SIMD; NULL:
 * the CPU's widest). */
static inline mi_registry_t *open_capped(const char *cap) {
  mi_registry_t *reg = mi_registry_create();
  uint32_t dev = 0;
  mi_error_t e = {0, ""};
  if (cap) setenv("MI_BLIS_MAX_SIMD", cap, 1);
  else
    unsetenv("MI_BLIS_MAX_SIMD");
  REQUIRE(reg && tu_scan_plugins(reg, &e) == MI_OK && mi_registry_device(reg, "blis-cpu:0", &g_blis, &dev, &e) == MI_OK);
  return reg;
}

#endif
