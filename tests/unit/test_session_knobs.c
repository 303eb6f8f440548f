/* test_session_knobs.c - device knobs are device state: sessions that share a plugin each run at
 * their own (a session created without knobs at the device's defaults), whatever the session that
 * ran or was created before it set. The simulated NPU's timer is exact (noise 0), so the DVFS
 * level a run used shows in its device time. */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"

#include "test_util.h"

static char dir[] = "/tmp/mi_knobsXXXXXX";
static char plugins[600];

/* x [1, 16, 16, 16] -> Conv 3x3, 32 output channels, pads 1 -> y: compute-bound, so the clock
 * shows in its time. */
static mi_graph_t *conv_graph(void) {
  static const int64_t xd[4] = {1, 16, 16, 16}, wd[4] = {32, 16, 3, 3};
  static float w[32 * 16 * 9];
  mi_graph_t *g = mi_graph_create("conv");
  int32_t x, wt, y, in[2], node;
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  wt = mi_graph_add_const_f32(g, "w", 4, wd, w);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  in[0] = x;
  in[1] = wt;
  mi_graph_add_input(g, x);
  node = mi_graph_add_node(g, "Conv", "conv", 2, in, 1, &y);
  REQUIRE(node >= 0);
  REQUIRE(mi_node_set_ints(g, node, "kernel_shape", 2, (const int64_t[]){3, 3}) == MI_OK);
  REQUIRE(mi_node_set_ints(g, node, "pads", 4, (const int64_t[]){1, 1, 1, 1}) == MI_OK);
  mi_graph_add_output(g, y);
  return g;
}

/* A session on the NPU with `level` as its dvfs_level knob, or no knobs when level < 0. */
static mi_session_t *session(const mi_graph_t *g, mi_plugin_t *p, int level) {
  mi_session_options_t o;
  mi_knob_value_t k = {"dvfs_level", level, 0};
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  if (level >= 0) {
    o.device_knobs = &k;
    o.device_knob_count = 1;
  }
  REQUIRE(mi_session_create(g, p, 0, &o, &s, &err) == MI_OK, "%s", err.message);
  return s;
}

/* One run's device time in ns. */
static uint64_t run_ns(mi_session_t *s, const mi_array_t *x) {
  mi_array_t *y = NULL;
  mi_error_t err = {0};
  uint64_t ns = 0;
  REQUIRE(mi_session_run(s, &x, 1, &y, 1, &err) == MI_OK, "%s", err.message);
  REQUIRE(mi_session_device_time(s, &ns) && ns > 0);
  mi_array_destroy(y);
  return ns;
}

static void test_switch(void) {
  mi_registry_t *r = mi_registry_create();
  mi_error_t err = {0};
  mi_plugin_t *p;
  mi_graph_t *g = conv_graph();
  mi_array_t *x;
  mi_session_t *lo, *hi, *def;
  uint64_t t_lo, t_hi, t_def;
  REQUIRE(r && mi_registry_scan(r, plugins, &err) == MI_OK, "%s", err.message);
  REQUIRE((p = mi_registry_find(r, "npu-stub")));
  x = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[0]].dims);
  mi_array_fill_random(x, 7);
  lo = session(g, p, 0);
  t_lo = run_ns(lo, x);
  hi = session(g, p, 2); /* created after lo's run, and sets its own level */
  t_hi = run_ns(hi, x);
  printf("dvfs_level 0: %.1f us, 2: %.1f us\n", (double)t_lo / 1e3, (double)t_hi / 1e3);
  REQUIRE(t_hi < t_lo); /* the higher clock: a real difference to tell the levels apart */
  /* lo again after hi set level 2: lo's own level, to the nanosecond */
  REQUIRE(run_ns(lo, x) == t_lo, "the second session's device knobs leaked into the first's run");
  REQUIRE(run_ns(hi, x) == t_hi);
  REQUIRE(run_ns(hi, x) == t_hi);
  /* no knobs: the device's defaults (dvfs_level's default is the top level), not lo's 0 */
  REQUIRE(run_ns(lo, x) == t_lo);
  def = session(g, p, -1);
  t_def = run_ns(def, x);
  REQUIRE(t_def < t_lo, "a session without knobs ran at the level the session before it set");
  REQUIRE(run_ns(lo, x) == t_lo);
  REQUIRE(run_ns(def, x) == t_def);
  mi_session_destroy(def);
  mi_session_destroy(hi);
  /* a destroyed session's knobs stay on the device: the next session still sets its own */
  REQUIRE(run_ns(lo, x) == t_lo);
  mi_session_destroy(lo);
  mi_array_destroy(x);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

static void setup(void) {
  const char *b = getenv("MI_BUILD");
  char path[700];
  FILE *f;
  b = b && b[0] ? b : ".";
  REQUIRE(mkdtemp(dir));
  snprintf(plugins, sizeof plugins, "%s/plugins", b);
  snprintf(path, sizeof path, "%s/npu.conf", dir);
  REQUIRE((f = fopen(path, "w")));
  fprintf(f, "name = npu-gen1\nnoise = 0\n");
  fclose(f);
  setenv("MI_NPU_DEVICES", path, 1);
}

static void teardown(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  REQUIRE(system(cmd) == 0);
}

static void sw(void) { test_switch(); }

static const tu_case_t tu_cases[] = {
    TU_CASE(sw),
};

TU_MAIN(setup, teardown)
