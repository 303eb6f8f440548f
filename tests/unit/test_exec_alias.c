/* test_exec_alias.c - a Flatten, Reshape or Squeeze between plain device tensors shares its input's
 * device buffer (no copy, no kernel run): outputs equal to the reference over repeated runs,
 * whether the aliased tensors are read by device kernels, the host or the caller. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_util.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

/* x [1,64,32,32] -> Relu -> a -> OP -> f -> Relu -> z (+ Equal(f, z) on the host when `host`);
 * outputs f and z (and s). With `first`, OP reads x itself (the graph input). */
static mi_graph_t *graph(const char *op, int first, int host, int32_t *op_node) {
  static const int64_t xd[4] = {1, 64, 32, 32}, shape[2] = {1, -1}, axes[1] = {0};
  mi_graph_t *g = mi_graph_create("alias");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  int32_t a = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, -1, NULL);
  int32_t f = mi_graph_add_tensor(g, "f", MI_DTYPE_FLOAT32, -1, NULL);
  int32_t z = mi_graph_add_tensor(g, "z", MI_DTYPE_FLOAT32, -1, NULL);
  int32_t s = mi_graph_add_tensor(g, "s", MI_DTYPE_BOOL, -1, NULL);
  int32_t in[2];
  mi_graph_add_input(g, x);
  if (!first) mi_graph_add_node(g, "Relu", "relu0", 1, &x, 1, &a);
  in[0] = first ? x : a;
  if (strcmp(op, "Reshape") == 0) {
    in[1] = mi_graph_add_const_i64(g, "shape", 2, shape);
    *op_node = mi_graph_add_node(g, op, "op", 2, in, 1, &f);
  } else if (strcmp(op, "Squeeze") == 0) {
    in[1] = mi_graph_add_const_i64(g, "axes", 1, axes);
    *op_node = mi_graph_add_node(g, op, "op", 2, in, 1, &f);
  } else {
    *op_node = mi_graph_add_node(g, op, "op", 1, in, 1, &f);
  }
  mi_graph_add_node(g, "Relu", "relu1", 1, &f, 1, &z);
  mi_graph_add_output(g, f);
  mi_graph_add_output(g, z);
  if (host) {
    in[0] = f;
    in[1] = z;
    mi_graph_add_node(g, "Equal", "eq", 2, in, 1, &s); /* not on blis-cpu: the host reads f */
    mi_graph_add_output(g, s);
  }
  return g;
}

static void check(const char *op, int first, int host) {
  int32_t node = -1, rc, nout = host ? 3 : 2, i, run;
  mi_graph_t *g = graph(op, first, host, &node);
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in = NULL, *want[3] = {0}, *got[3] = {0};
  mi_error_t err = {0};
  uint64_t wall = 0, dev = 0;
  char label[64];
  snprintf(label, sizeof label, "%s%s%s", op, first ? " on the input" : "", host ? " + host reader" : "");
  rc = mi_graph_infer_shapes(g, &err);
  CHECK(rc == MI_OK, "%s: shapes: %s", label, err.message);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  if (rc == MI_OK) rc = mi_session_create(g, g_blis, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: create: %s", label, err.message);
  if (rc == MI_OK)
    CHECK(mi_session_fallback_count(s) == host, "%s: %d node(s) on the host, want %d", label,
          mi_session_fallback_count(s), host);
  for (run = 0; run < 3 && rc == MI_OK; run++) {
    /* new input values every run: an alias that kept an older run's bytes would show */
    in = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[0]].dims);
    mi_array_fill_random(in, 40u + (unsigned)run);
    rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, want, nout, &err);
    CHECK(rc == MI_OK, "%s: ref: %s", label, err.message);
    if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, nout, &err);
    CHECK(rc == MI_OK, "%s: run %d: %s", label, run, err.message);
    for (i = 0; i < nout && rc == MI_OK; i++)
      CHECK(got[i] && want[i] && got[i]->nbytes == want[i]->nbytes &&
                memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0,
            "%s: run %d: output %d differs from the reference", label, run, i);
    for (i = 0; i < nout; i++) {
      mi_array_destroy(got[i]);
      mi_array_destroy(want[i]);
      got[i] = want[i] = NULL;
    }
    mi_array_destroy(in);
  }
  /* An alias runs no device kernel: the node has a wall time and no device time (a kernel, even
   * a copy, reports its device time: 2). */
  if (rc == MI_OK)
    CHECK(mi_session_node_time(s, node, &wall, &dev) == 1, "%s: the node ran a device kernel (%llu ns), not an alias",
          label, (unsigned long long)dev);
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

static void flatten(void) {
  check("Flatten", 0, 0);
  check("Flatten", 1, 0);
  check("Flatten", 0, 1);
}
static void reshape(void) {
  check("Reshape", 0, 0);
  check("Reshape", 1, 1);
}
static void squeeze(void) { check("Squeeze", 0, 1); }

/* A run whose only device step is an alias ran no kernel: no device time is claimed (a claimed 0
 * ns for a run that took wall time is what mi-run refuses as implausible: Silero VAD v5). */
static void alias_only(void) {
  static const int64_t xd[2] = {4, 1024};
  mi_graph_t *g = mi_graph_create("alias_only");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd);
  int32_t f = mi_graph_add_tensor(g, "f", MI_DTYPE_FLOAT32, -1, NULL);
  mi_session_t *s = NULL;
  mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 2, xd), *out = NULL;
  mi_error_t err = {0};
  uint64_t ns = 0;
  int32_t rc;
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "Flatten", "flat", 1, &x, 1, &f);
  mi_graph_add_output(g, f);
  mi_array_fill_random(in, 7);
  rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK) rc = mi_session_create(g, g_blis, 0, NULL, &s, &err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, &out, 1, &err);
  CHECK(rc == MI_OK, "alias only: %s", err.message);
  if (rc == MI_OK) {
    CHECK(out && out->nbytes == in->nbytes && memcmp(out->data, in->data, in->nbytes) == 0,
          "alias only: the output is not the input");
    CHECK(mi_session_device_time(s, &ns) == 0, "alias only: %llu ns of device time claimed",
          (unsigned long long)ns);
  }
  mi_array_destroy(in);
  mi_array_destroy(out);
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

static void setup(void) {
  mi_error_t err = {0};
  uint32_t dev = 0;
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
}

static void teardown(void) { mi_registry_destroy(r); }

static const tu_case_t tu_cases[] = {TU_CASE(flatten), TU_CASE(reshape), TU_CASE(squeeze), TU_CASE(alias_only)};
TU_MAIN(setup, teardown)
