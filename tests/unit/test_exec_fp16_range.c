/* test_exec_fp16_range.c - a device that computes FLOAT32 in FP16 (npu-stub) leaves the nodes
 * fed by a constant beyond FP16's range, and what follows them up to a range-compressing op, to
 * the host (exec/fp16_range.c): log(x * 2^20 + 1), Silero VAD v4's spectrogram scaling. */
#include <math.h>

#include "test_exec_util.h"

static void log_of_fp16_overflow_runs_on_host(void) {
  mi_registry_t *r = open_plugins();
  mi_plugin_t *npu = NULL;
  uint32_t dev = 0;
  tu_device_or_skip(r, "npu-stub", "npu-stub:0", &npu, &dev);
  mi_graph_t *g = mi_graph_create("fp16_range");
  REQUIRE(g);
  g->opset = 13;
  int64_t d[2] = {1, 64};
  float big = 1048576.0f, one = 1.0f;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, d);
  int32_t cb = mi_graph_add_const_f32(g, "big", 0, NULL, &big), c1 = mi_graph_add_const_f32(g, "one", 0, NULL, &one);
  int32_t t1 = mi_graph_add_tensor(g, "scaled", MI_DTYPE_FLOAT32, 2, d), t2 = mi_graph_add_tensor(g, "plus1", MI_DTYPE_FLOAT32, 2, d);
  int32_t t3 = mi_graph_add_tensor(g, "log", MI_DTYPE_FLOAT32, 2, d), y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 2, d);
  int32_t i1[2] = {x, cb}, i2[2] = {t1, c1}, i4[2] = {t3, t3};
  REQUIRE(x >= 0 && cb >= 0 && c1 >= 0 && t1 >= 0 && t2 >= 0 && t3 >= 0 && y >= 0);
  REQUIRE(mi_graph_add_input(g, x) == MI_OK && mi_graph_add_output(g, y) == MI_OK);
  REQUIRE(mi_graph_add_node(g, "Mul", "scale", 2, i1, 1, &t1) >= 0);
  REQUIRE(mi_graph_add_node(g, "Add", "plus", 2, i2, 1, &t2) >= 0);
  REQUIRE(mi_graph_add_node(g, "Log", "log", 1, &t2, 1, &t3) >= 0);
  REQUIRE(mi_graph_add_node(g, "Add", "double", 2, i4, 1, &y) >= 0); /* back in range: device */
  mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 2, d), *want[1] = {0}, *got[1] = {0};
  REQUIRE(in);
  for (int i = 0; i < 64; i++) ((float *)in->data)[i] = 0.01f + 0.5f * (float)i; /* up to 3.3e7 scaled */
  ref(g, in, want);
  mi_session_t *s = session(g, npu);
  run(s, g, in, got);
  double e = tu_rel_l2_arrays(got[0], want[0]);
  int finite = 1;
  for (int i = 0; i < 64; i++) finite &= isfinite(((float *)got[0]->data)[i]) != 0;
  CHECK(finite, "npu-stub output has inf/NaN (the constant 2^20 rounded to FP16 infinity)");
  CHECK(e < 1e-2, "npu-stub vs reference: rel L2 %g (limit 1e-2)", e);
  /* Mul, Add and Log on the host; the last Add, back in FP16's range, on the device. */
  CHECK(mi_session_fallback_count(s) == 3, "host nodes: %d, expected 3", (int)mi_session_fallback_count(s));
  CHECK(mi_session_kernel_count(s) == 1, "device kernels: %d, expected 1", (int)mi_session_kernel_count(s));
  printf("npu-stub log(x * 2^20 + 1) * 2: rel L2 %.3g, %d host nodes\n", e, (int)mi_session_fallback_count(s));
  mi_array_destroy(in);
  mi_array_destroy(want[0]);
  mi_array_destroy(got[0]);
  mi_session_destroy(s);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(log_of_fp16_overflow_runs_on_host),
};

TU_MAIN(NULL, NULL)
