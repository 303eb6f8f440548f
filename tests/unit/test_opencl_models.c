/* test_opencl_models.c - every mi-zoo family, exported to ONNX by the mi-zoo program, runs on
 * opencl:0 through the host loader and a session and matches the reference within 1e-4 rel L2. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_util.h"

typedef struct config {
  const char *family;
  const char *args; /* mi-zoo size options: small, so PoCL and the reference stay quick */
} config_t;

static const config_t configs[] = {
    {"mobilenetv2", "--width 0.5 --depth 3 --resolution 32 --batch 2"},
    {"mobilenetv3", "--width 0.5 --depth 4 --resolution 32 --batch 1"},
    {"resnet", "--width 0.5 --depth 4 --resolution 32 --batch 2"},
    {"transformer", "--width 0.5 --depth 2 --resolution 7 --batch 2"},
    {"mlp", "--width 0.5 --depth 3 --resolution 12 --batch 3"},
    {"kws", "--width 0.5 --depth 2 --resolution 31 --batch 2"},
};

static double norm(const mi_array_t *a) {
  const float *v = a->data;
  double s = 0.;
  int64_t i, n = mi_array_numel(a);
  for (i = 0; i < n; i++) s += (double)v[i] * v[i];
  return sqrt(s);
}

/* Sets every graph input's shape (the given one for input 0 when rank > 0, dynamic dims 1)
 * and makes random inputs; returns the count made, or -1. */
static int32_t make_inputs(mi_graph_t *g, int32_t rank, const int64_t *dims, mi_array_t **in,
                           int32_t max) {
  int32_t i, d;
  if (g->input_count > max) return -1;
  for (i = 0; i < g->input_count; i++) {
    mi_tensor_t *t = &g->tensors[g->inputs[i]];
    if (i == 0 && rank > 0) {
      t->rank = rank;
      for (d = 0; d < rank; d++) t->dims[d] = dims[d];
    }
    for (d = 0; d < t->rank; d++)
      if (t->dims[d] < 0) t->dims[d] = 1;
    in[i] = mi_array_create(t->dtype, t->rank, t->dims);
    if (!in[i]) return -1;
    mi_array_fill_random(in[i], 11 + (uint64_t)i);
  }
  return g->input_count;
}

#define MAX_IO 8

/* Loads `path`, runs it on the reference and on the device (host fallback allowed), and
 * compares every float output. */
static void run_model(const char *name, const char *path, int32_t rank, const int64_t *dims,
                      mi_plugin_t *p, uint32_t dev) {
  mi_graph_t *g = NULL;
  mi_array_t *in[MAX_IO] = {0}, *want[MAX_IO] = {0}, *got[MAX_IO] = {0};
  mi_session_t *s = NULL;
  mi_session_options_t o;
  mi_error_t err = {0};
  uint64_t ns = 0;
  int32_t rc, i, nin = 0, nout = 0, nodes;
  int timed;
  rc = mi_onnx_load(path, &g, &err);
  if (rc == MI_OK) rc = mi_graph_toposort(g, &err);
  CHECK(rc == MI_OK, "%s: load: %s", name, err.message);
  if (rc != MI_OK) goto done;
  nin = make_inputs(g, rank, dims, in, MAX_IO);
  nout = g->output_count;
  CHECK(nin >= 0 && nout <= MAX_IO, "%s: inputs", name);
  if (nin < 0 || nout > MAX_IO) goto done;
  rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, want, nout, &err);
  CHECK(rc == MI_OK, "%s: reference: %s", name, err.message);
  if (rc != MI_OK) goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1;
  rc = mi_session_create(g, p, dev, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session: %s", name, err.message);
  if (rc != MI_OK) goto done;
  nodes = (int32_t)g->node_count;
  for (i = 0; i < mi_session_fallback_count(s); i++)
    fprintf(stderr, "  %s: host fallback for node '%s'\n", name, mi_session_fallback_node(s, i));
  /* fallback is allowed, but a model that never reaches the device proves nothing */
  CHECK(mi_session_fallback_count(s) < nodes, "%s: every node fell back", name);
  rc = mi_session_run(s, (const mi_array_t *const *)in, nin, got, nout, &err);
  CHECK(rc == MI_OK, "%s: run: %s", name, err.message);
  if (rc != MI_OK) goto done;
  timed = mi_session_device_time(s, &ns);
  for (i = 0; i < nout; i++) {
    double e;
    if (want[i]->dtype != MI_DTYPE_FLOAT32) continue;
    CHECK(got[i]->nbytes == want[i]->nbytes, "%s: output %d size %zu vs %zu", name, (int)i,
          got[i]->nbytes, want[i]->nbytes);
    e = got[i]->nbytes == want[i]->nbytes ? tu_rel_l2_arrays(got[i], want[i]) : 1.;
    fprintf(stderr, "  %-14s out%d nodes=%d fallback=%d |ref|=%.3g rel_l2=%.3g device_time=%s%.3f ms\n",
            name, (int)i, nodes, mi_session_fallback_count(s), norm(want[i]), e,
            timed ? "" : "(not every kernel timed) ", (double)ns / 1e6);
    CHECK(e < 1e-4, "%s: output %d rel L2 %.3g >= 1e-4", name, (int)i, e);
    CHECK(norm(want[i]) > 0., "%s: output %d is all zeros, which proves nothing", name, (int)i);
  }
done:
  mi_session_destroy(s);
  for (i = 0; i < MAX_IO; i++) {
    mi_array_destroy(in[i]);
    mi_array_destroy(want[i]);
    mi_array_destroy(got[i]);
  }
  mi_graph_destroy(g);
}

static void run_family(const config_t *c, const char *build, const char *tmp, mi_plugin_t *p,
                       uint32_t dev) {
  char cmd[1400], path[600];
  snprintf(path, sizeof path, "%s/%s.onnx", tmp, c->family);
  snprintf(cmd, sizeof cmd, "'%s/bin/mi-zoo' %s --out '%s' %s --seed 7 >/dev/null", build,
           c->family, path, c->args);
  if (system(cmd) != 0) {
    CHECK(0, "%s: %s failed", c->family, cmd);
    return;
  }
  run_model(c->family, path, 0, NULL, p, dev);
  remove(path);
}

/* Real exported models (tools/models/fetch.sh), when the cache holds them; shapes as in
 * tests/onnx/real_models.sh. Silero VAD needs If, which the host does not run. */
static void run_real(mi_plugin_t *p, uint32_t dev) {
  static const struct {
    const char *file;
    int32_t rank;
    int64_t dims[4];
  } models[] = {
      {"oww_hello_deepa.onnx", 0, {0}},
      {"ppocr_v2_cls.onnx", 4, {1, 3, 48, 192}},
      {"ppocr_v4_det.onnx", 4, {1, 3, 64, 96}},
      {"ppocr_v4_rec.onnx", 4, {1, 3, 48, 96}},
  };
  const char *dir = getenv("MI_MODEL_DIR"), *home = getenv("HOME");
  char base[512], path[700];
  size_t i;
  if (dir) snprintf(base, sizeof base, "%s", dir);
  else
    snprintf(base, sizeof base, "%s/.cache/metainfer/models", home ? home : "/nonexistent");
  for (i = 0; i < sizeof models / sizeof models[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", base, models[i].file);
    if (access(path, R_OK) != 0) {
      fprintf(stderr, "  %s: not in %s (tools/models/fetch.sh), skipped\n", models[i].file, base);
      continue;
    }
    run_model(models[i].file, path, models[i].rank, models[i].dims, p, dev);
  }
}

static const char *build;
static char tmp[64] = "/tmp/mi-ocl-models-XXXXXX";
static mi_registry_t *r;
static mi_plugin_t *p;
static uint32_t dev;

/* One case per zoo family: configs[i] run on the device against the reference. */
#define FAMILY(i, name) \
  static void name(void) { run_family(&configs[i], build, tmp, p, dev); }
FAMILY(0, mobilenetv2)
FAMILY(1, mobilenetv3)
FAMILY(2, resnet)
FAMILY(3, transformer)
FAMILY(4, mlp)
FAMILY(5, kws)
#undef FAMILY

static void real(void) { run_real(p, dev); }

static void setup(void) {
  build = getenv("MI_BUILD");
  mi_error_t err = {0};
  char dir[1024], cache[1100];
  REQUIRE(build, "MI_BUILD is not set");
  /* PoCL's kernel cache and ours live in the build tree, so a second run skips compilation */
  snprintf(cache, sizeof cache, "%s/tests/pocl-cache", build);
  drive_pocl_cache(cache);
  snprintf(cache, sizeof cache, "%s/tests/mi-cache", build);
  mkdir(cache, 0755);
  setenv("MI_CACHE_DIR", cache, 0);
  r = mi_registry_create();
  snprintf(dir, sizeof dir, "%s/plugins", build);
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK, "scan %s: %s", dir, err.message);
  tu_device_or_skip(r, "opencl", "opencl:0", &p, &dev);
  REQUIRE(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
}

static void teardown(void) {
  mi_registry_destroy(r);
  rmdir(tmp);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(mobilenetv2),
    TU_CASE(mobilenetv3),
    TU_CASE(resnet),
    TU_CASE(transformer),
    TU_CASE(mlp),
    TU_CASE(kws),
    TU_CASE(real),
};

TU_MAIN(setup, teardown)
