/* test_qdq_graph.h - what the QDQ graph tests on blis-cpu share: small graph builders (a tensor,
 * a FLOAT32 scalar, one code, a value of inferred shape, a one-output node) and the blis-cpu
 * device they run on (setup / teardown for TU_MAIN, skipping where the plugin was not built). */
#ifndef TEST_QDQ_GRAPH_H
#define TEST_QDQ_GRAPH_H

#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

static int32_t tensor(mi_graph_t *g, const char *name, int32_t dt, int rank, const int64_t *dims, const void *vals,
                      size_t nbytes) {
  int32_t t = mi_graph_add_tensor(g, name, dt, rank, dims);
  REQUIRE(t >= 0);
  if (vals) REQUIRE(mi_graph_set_data(g, t, vals, nbytes) == MI_OK);
  return t;
}

static int32_t f32(mi_graph_t *g, const char *name, float v) { return tensor(g, name, MI_DTYPE_FLOAT32, 0, NULL, &v, 4); }
static int32_t code(mi_graph_t *g, const char *name, int32_t dt, int32_t v) {
  uint8_t b = (uint8_t)v;
  return tensor(g, name, dt, 0, NULL, &b, 1);
}
static int32_t val(mi_graph_t *g, const char *name) { return tensor(g, name, MI_DTYPE_UNDEFINED, -1, NULL, NULL, 0); }

static int32_t op(mi_graph_t *g, const char *type, int nin, const int32_t *ins, int32_t y) {
  int32_t n = mi_graph_add_node(g, type, NULL, nin, ins, 1, &y);
  REQUIRE(n >= 0);
  return n;
}

static void setup(void) {
  mi_error_t err = {0, ""};
  uint32_t dev = 0;
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
}

static void teardown(void) { mi_registry_destroy(r); }

#endif
