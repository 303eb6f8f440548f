/* test_profile_memory.c - a profile's peak memory is its own session's: two profiles on one
 * blis-cpu instance (as a measurement worker runs one configuration after another), a large model
 * first, then a small one; the small one's peak must not be the large one's. */
#include <stdio.h>
#include <string.h>

#include "metainfer/mi.h"
#include "test_util.h"

/* x [1,16,H,H] -> Relu -> Relu -> y */
static mi_graph_t *relu2(int64_t h) {
  mi_graph_t *g = mi_graph_create("relu2");
  const int64_t dims[4] = {1, 16, h, h};
  int32_t t[3], n = 0;
  const char *names[3] = {"x", "a", "y"};
  if (!g) return NULL;
  for (int i = 0; i < 3; i++) t[i] = mi_graph_add_tensor(g, names[i], MI_DTYPE_FLOAT32, 4, dims);
  mi_graph_add_input(g, t[0]);
  mi_graph_add_output(g, t[2]);
  for (int i = 0; i < 2; i++) n += mi_graph_add_node(g, "Relu", names[i + 1], 1, &t[i], 1, &t[i + 1]) >= 0;
  return n == 2 ? g : (mi_graph_destroy(g), NULL);
}

static mi_registry_t *r;
static mi_plugin_t *p;

static void setup(void) {
  mi_error_t err;
  r = mi_registry_create();
  REQUIRE(r && tu_scan_plugins(r, &err) == MI_OK);
  REQUIRE((p = mi_registry_find(r, "blis-cpu")) != NULL);
}

static void teardown(void) { mi_registry_destroy(r); }

static double peak_of(int64_t h) {
  mi_graph_t *g = relu2(h);
  mi_profile_t *prof = NULL;
  mi_measure_options_t mo;
  mi_error_t err;
  double mb = -1;
  REQUIRE(g && mi_graph_infer_shapes(g, &err) == MI_OK);
  mi_measure_options_default(&mo);
  mo.min_repeats = 5;
  mo.max_repeats = 5;
  CHECK(mi_profile_run(g, p, 0, NULL, &mo, 0, &prof, &err) == MI_OK, "%s", err.message);
  if (prof) {
    CHECK(prof->peak_memory_source == 1, "blis-cpu's memory counter (source %d)", prof->peak_memory_source);
    mb = (double)prof->peak_memory_bytes / 1048576.0;
  }
  mi_profile_destroy(prof);
  mi_graph_destroy(g);
  return mb;
}

static void small_after_large(void) {
  /* 16 x 512 x 512 floats = 16 MiB a tensor; 16 x 8 x 8 = 4 KiB. */
  double large = peak_of(512), small = peak_of(8);
  printf("peak memory: large %.2f MB, then small %.2f MB\n", large, small);
  CHECK(large >= 16, "the large model's tensors (%.2f MB)", large);
  CHECK(small >= 0 && small < 1, "the small model's own peak, not the large one's (%.2f MB)", small);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(small_after_large),
};

TU_MAIN(setup, teardown)
