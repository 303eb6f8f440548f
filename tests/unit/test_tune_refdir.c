/* test_tune_refdir.c - the accuracy reference of a tune computed once and kept in a folder
 * (mi_worker_config_t.ref_dir): a fresh worker reads the outputs there instead of running the
 * reference interpreter again, and with ref_device the configuration's own device outputs become
 * the reference (the tuner's fallback when the reference interpreter is too slow for a model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "test_util.h"

static char dir[64], model[128], g_dirs[512];
static mi_measure_options_t mo;
static mi_error_t err;

/* x[1,4,6,6] -> Conv 3x3 (6 filters, no padding) -> y[1,6,4,4]: one prunable layer. */
static mi_graph_t *one_conv(void) {
  mi_graph_t *g = mi_graph_create("one_conv");
  int64_t xd[4] = {1, 4, 6, 6}, wd[4] = {6, 4, 3, 3}, k[2] = {3, 3};
  float w[6 * 4 * 9];
  int32_t x, wt, y, in[2], n;
  for (int i = 0; i < 6 * 4 * 9; i++) w[i] = (float)((i * 29) % 17 - 8) * 0.07f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  wt = mi_graph_add_const_f32(g, "w", 4, wd, w);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_input(g, x);
  in[0] = x;
  in[1] = wt;
  n = mi_graph_add_node(g, "Conv", "conv", 2, in, 1, &y);
  mi_node_set_ints(g, n, "kernel_shape", 2, k);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, NULL) || mi_graph_infer_shapes(g, NULL)) {
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

static void setup(void) {
  const char *build = getenv("MI_BUILD");
  mi_graph_t *g = one_conv();
  REQUIRE(build && g && tu_tempdir(dir, sizeof dir, "refdir"), "MI_BUILD unset or setup failed");
  snprintf(g_dirs, sizeof g_dirs, "%s/plugins", build);
  snprintf(model, sizeof model, "%s/conv.onnx", dir);
  REQUIRE(mi_onnx_save(g, model, &err) == MI_OK, "%s", err.message);
  mi_graph_destroy(g);
  mi_measure_options_default(&mo);
  mo.warmup = 1;
  mo.max_repeats = 5;
  mo.max_remeasure = 0;
}

static void teardown(void) {
  if (dir[0]) tu_rmtree(dir);
}

/* One accuracy job in a fresh pool (so a fresh worker: nothing cached in its process). */
static int32_t measure(const char *refs, int device, const mi_xf_config_t *xc, double *drop) {
  mi_worker_options_t o;
  mi_worker_pool_t *p = NULL;
  mi_session_options_t so;
  mi_worker_config_t wc;
  mi_worker_config_result_t res;
  mi_profile_t *pr = NULL;
  int32_t rc;
  mi_worker_options_default(&o);
  o.plugin_dirs = g_dirs;
  o.timeout_s = 60;
  if ((rc = mi_worker_pool_create(&o, &p, &err)) != MI_OK) return rc;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  memset(&wc, 0, sizeof wc);
  wc.struct_size = sizeof wc;
  wc.model = model;
  wc.so = &so;
  wc.xf = xc;
  wc.accuracy = 1;
  wc.ref_dir = refs;
  wc.ref_device = device;
  memset(&res, 0, sizeof res);
  rc = mi_worker_profile_config(p, "blis-cpu:0", &wc, &mo, 0, &pr, &res, &err);
  *drop = res.has_accuracy ? res.rel_l2 : -1;
  mi_profile_destroy(pr);
  mi_worker_pool_destroy(p);
  return rc;
}

static int exists(const char *folder, const char *name) {
  char p[256];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", folder, name);
  return stat(p, &st) == 0;
}

/* Doubles the kept outputs of both samples in folder `refs`. */
static void double_refs(const char *refs) {
  char p[256];
  mi_array_t *a = NULL;
  for (int k = 0; k < 2; k++) {
    snprintf(p, sizeof p, "%s/s%d_o0.npy", refs, k);
    REQUIRE(mi_npy_load(p, &a, &err) == MI_OK, "%s", err.message);
    for (int64_t i = 0; i < mi_array_numel(a); i++) ((float *)a->data)[i] *= 2;
    REQUIRE(mi_npy_save(p, a, &err) == MI_OK, "%s", err.message);
    mi_array_destroy(a);
  }
}

static void shared_folder(void) {
  char refs[128];
  double drop = -1;
  snprintf(refs, sizeof refs, "%s/interp", dir);
  REQUIRE(mkdir(refs, 0700) == 0, "mkdir %s", refs);
  CHECK(measure(refs, 0, NULL, &drop) == MI_OK && drop >= 0 && drop < 1e-5, "first: %s, drop %g",
        err.message, drop);
  CHECK(exists(refs, "s0_o0.npy") && exists(refs, "s1_o0.npy") && !exists(refs, "device"),
        "the reference outputs of both samples kept in the folder, not marked as a device's");
  /* The kept outputs doubled: a fresh worker that reads them sees ||y - 2y|| / ||2y|| = 0.5; one
   * that ran the reference interpreter again would see 0. */
  double_refs(refs);
  CHECK(measure(refs, 0, NULL, &drop) == MI_OK && drop > 0.49 && drop < 0.51,
        "second worker's drop %g, want 0.5 (read from the folder): %s", drop, err.message);
}

static void device_reference(void) {
  /* INT8 weights, measured with ref_device: its own device outputs are the reference, so its drop
   * is exactly 0 (against the reference interpreter it is not), and the folder is marked. */
  static const char text[] = "version: 1\ndefaults: {weights: int8}\n";
  char refs[128];
  double drop = -1, lossy = -1;
  mi_xf_config_t *xc = NULL;
  snprintf(refs, sizeof refs, "%s/device", dir);
  REQUIRE(mkdir(refs, 0700) == 0, "mkdir %s", refs);
  REQUIRE(mi_xf_config_parse(text, strlen(text), "int8", &xc, &err) == MI_OK, "%s", err.message);
  CHECK(measure(NULL, 0, xc, &lossy) == MI_OK && lossy > 1e-4, "INT8 weights: drop %g", lossy);
  CHECK(measure(refs, 1, xc, &drop) == MI_OK && drop == 0, "device reference: %s, drop %g",
        err.message, drop);
  CHECK(exists(refs, "s0_o0.npy") && exists(refs, "device"), "the device's outputs kept, marked");
  /* Doubled as above: with the mark the outputs 50% off fail as wrong results without the
   * reference check (which found the model right in shared_folder). */
  double_refs(refs);
  CHECK(measure(refs, 0, NULL, &drop) == MI_ERR_CONSTRAINT && strstr(err.message, "wrong"),
        "against the marked reference: %s (drop %g)", err.message, drop);
  mi_xf_config_destroy(xc);
}

static const tu_case_t tu_cases[] = {TU_CASE(shared_folder), TU_CASE(device_reference)};
TU_MAIN(setup, teardown)
