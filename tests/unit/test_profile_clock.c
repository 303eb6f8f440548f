/* test_profile_clock.c - end-to-end latency on a device's own clock counts the nodes the
 * device refused: they run on the host, on the run's critical path. Without them a configuration
 * that leaves work on the host would look faster than it is. */
#include <stdio.h>
#include <string.h>

#include "metainfer/mi.h"
#include "test_util.h"

/* x [1,16,128,128] -> Relu (npu-stub) -> Exp (npu-stub refuses it: host) -> Relu -> y */
static mi_graph_t *relu_exp_relu(void) {
  mi_graph_t *g = mi_graph_create("relu_exp_relu");
  const int64_t dims[4] = {1, 16, 128, 128};
  int32_t t[4], n = 0;
  const char *names[4] = {"x", "a", "b", "y"}, *ops[3] = {"Relu", "Exp", "Relu"};
  if (!g) return NULL;
  for (int i = 0; i < 4; i++) t[i] = mi_graph_add_tensor(g, names[i], MI_DTYPE_FLOAT32, 4, dims);
  mi_graph_add_input(g, t[0]);
  mi_graph_add_output(g, t[3]);
  for (int i = 0; i < 3; i++) n += mi_graph_add_node(g, ops[i], ops[i], 1, &t[i], 1, &t[i + 1]) >= 0;
  return n == 3 ? g : (mi_graph_destroy(g), NULL);
}

static mi_registry_t *r;
static mi_graph_t *g;
static mi_plugin_t *p;

static void setup(void) {
  mi_error_t err;
  r = mi_registry_create();
  g = relu_exp_relu();
  REQUIRE(r && g && tu_scan_plugins(r, &err) == MI_OK);
  REQUIRE((p = mi_registry_find(r, "npu-stub")) != NULL);
  REQUIRE(mi_graph_infer_shapes(g, &err) == MI_OK);
}

static void teardown(void) {
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

static void device_clock_with_host_node(void) {
  mi_profile_t *prof = NULL;
  mi_session_options_t so;
  mi_measure_options_t mo;
  mi_error_t err;
  double host = 0, dev = 0;
  int hosted = 0;
  memset(&so, 0, sizeof so);
  so.struct_size = (uint32_t)sizeof so;
  so.allow_host_fallback = 1;
  mi_measure_options_default(&mo);
  CHECK(mi_profile_run(g, p, 0, &so, &mo, 0, &prof, &err) == MI_OK, "%s", err.message);
  if (prof) {
    for (int32_t i = 0; i < prof->layer_count; i++) {
      const mi_layer_profile_t *l = &prof->layers[i];
      if (l->where == 1) {
        hosted++;
        host += l->wall.median;
      } else if (l->where == 0 && l->has_device_time) {
        dev += l->device.median;
      }
    }
    printf("latency %.1f us on the %s clock; device kernels %.1f us, host Exp %.1f us\n",
           prof->latency.stats.median * 1e6, prof->clock == MI_CLOCK_DEVICE ? "device" : "wall",
           dev * 1e6, host * 1e6);
    CHECK(prof->clock == MI_CLOCK_DEVICE, "npu-stub times its kernels on its own clock");
    CHECK(hosted == 1, "Exp ran on the host (%d host nodes)", hosted);
    /* Each sample is its kernels' device time plus the host node's wall time, so the median
     * of the sums is at least the median of the host part; the device part alone is far less. */
    CHECK(host > 2 * dev, "the host node dominates this model (host %.1f us, device %.1f us)",
          host * 1e6, dev * 1e6);
    CHECK(prof->latency.stats.median >= 0.9 * (host + dev),
          "end to end %.1f us counts the host node (%.1f us) and the kernels (%.1f us)",
          prof->latency.stats.median * 1e6, host * 1e6, dev * 1e6);
  }
  mi_profile_destroy(prof);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(device_clock_with_host_node),
};

TU_MAIN(setup, teardown)
