/* test_opencl_shape.c - Slice, Gather and Resize on opencl:0 (loaded through the host registry,
 * no host fallback) against the reference interpreter, on odd shapes; a Concat past the launch
 * limit refused by name. Pad and Split, which the reference lacks, are in test_opencl_pad.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_util.h"

typedef struct gb {
  mi_graph_t *g;
  int32_t x;
} gb_t;

static gb_t start(int32_t rank, const int64_t *dims) {
  gb_t b;
  b.g = mi_graph_create("t");
  b.x = mi_graph_add_tensor(b.g, "x", MI_DTYPE_FLOAT32, rank, dims);
  mi_graph_add_input(b.g, b.x);
  return b;
}

static int32_t out_tensor(gb_t *b, const char *name) {
  int32_t t = mi_graph_add_tensor(b->g, name, MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_output(b->g, t);
  return t;
}

/* Runs b.g on the device without fallback and on the reference; compares every output. */
static void check(const char *what, gb_t *b, mi_plugin_t *p, uint32_t dev) {
  mi_array_t *in = NULL, *want[4] = {0}, *got[4] = {0};
  mi_session_t *s = NULL;
  mi_session_options_t o;
  mi_error_t err = {0};
  int32_t rc, i, nout = b->g->output_count;
  const mi_tensor_t *t = &b->g->tensors[b->x];
  rc = mi_graph_infer_shapes(b->g, &err);
  CHECK(rc == MI_OK, "%s: shapes: %s", what, err.message);
  if (rc != MI_OK) goto done;
  in = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
  mi_array_fill_random(in, 5);
  rc = mi_ref_run(b->g, (const mi_array_t *const *)&in, 1, want, nout, &err);
  CHECK(rc == MI_OK, "%s: reference: %s", what, err.message);
  if (rc != MI_OK) goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  rc = mi_session_create(b->g, p, dev, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session (no fallback): %s", what, err.message);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, nout, &err);
  CHECK(rc == MI_OK, "%s: run: %s", what, err.message);
  if (rc != MI_OK) goto done;
  for (i = 0; i < nout; i++) {
    const float *a = got[i]->data, *r = want[i]->data;
    double num = 0., den = 0.;
    int64_t k, n = mi_array_numel(want[i]);
    CHECK(got[i]->nbytes == want[i]->nbytes && n > 0, "%s: output %d size", what, (int)i);
    if (got[i]->nbytes != want[i]->nbytes) continue;
    for (k = 0; k < n; k++) {
      num += ((double)a[k] - r[k]) * ((double)a[k] - r[k]);
      den += (double)r[k] * r[k];
    }
    fprintf(stderr, "  %-34s out%d %lld values, rel L2 %.3g\n", what, (int)i, (long long)n,
            sqrt(num / (den > 0 ? den : 1)));
    CHECK(sqrt(num / (den > 0 ? den : 1)) < 1e-6, "%s: output %d differs", what, (int)i);
  }
done:
  mi_session_destroy(s);
  mi_array_destroy(in);
  for (i = 0; i < 4; i++) {
    mi_array_destroy(want[i]);
    mi_array_destroy(got[i]);
  }
  mi_graph_destroy(b->g);
}

static void slices(mi_plugin_t *p, uint32_t dev) {
  int64_t d[4] = {2, 3, 7, 9};
  int64_t s1[2] = {1, -7}, e1[2] = {3, 100}, a1[2] = {1, 3}, p1[2] = {1, 2};
  int64_t s2[1] = {-1}, e2[1] = {-100}, a2[1] = {2}, p2[1] = {-2};
  gb_t b = start(4, d);
  int32_t in[5], y = out_tensor(&b, "y");
  in[0] = b.x;
  in[1] = mi_graph_add_const_i64(b.g, "s", 2, s1);
  in[2] = mi_graph_add_const_i64(b.g, "e", 2, e1);
  in[3] = mi_graph_add_const_i64(b.g, "a", 2, a1);
  in[4] = mi_graph_add_const_i64(b.g, "p", 2, p1);
  mi_graph_add_node(b.g, "Slice", "sl", 5, in, 1, &y);
  check("Slice axes 1,3 step 2", &b, p, dev);
  b = start(4, d);
  y = out_tensor(&b, "y");
  in[0] = b.x;
  in[1] = mi_graph_add_const_i64(b.g, "s", 1, s2);
  in[2] = mi_graph_add_const_i64(b.g, "e", 1, e2);
  in[3] = mi_graph_add_const_i64(b.g, "a", 1, a2);
  in[4] = mi_graph_add_const_i64(b.g, "p", 1, p2);
  mi_graph_add_node(b.g, "Slice", "sl", 5, in, 1, &y);
  check("Slice backwards step -2", &b, p, dev);
}

static void gathers(mi_plugin_t *p, uint32_t dev) {
  int64_t d[3] = {3, 5, 4}, idx[4] = {4, -1, 0, 2};
  gb_t b = start(3, d);
  int32_t in[2], y = out_tensor(&b, "y");
  in[0] = b.x;
  in[1] = mi_graph_add_const_i64(b.g, "i", 4, idx);
  mi_node_set_int(b.g, mi_graph_add_node(b.g, "Gather", "ga", 2, in, 1, &y), "axis", 1);
  check("Gather axis 1, negative index", &b, p, dev);
}

static void resizes(mi_plugin_t *p, uint32_t dev) {
  static const struct {
    const char *mode, *ct, *nm;
    int use_sizes;
    int64_t h, w;
  } cases[] = {
      {"linear", "half_pixel", NULL, 0, 10, 12},
      {"linear", "align_corners", NULL, 1, 3, 4},
      {"linear", "pytorch_half_pixel", NULL, 1, 7, 1},
      {"nearest", "asymmetric", "floor", 1, 11, 9},
      {"nearest", "half_pixel", NULL, 0, 10, 12},
      {"nearest", "align_corners", "round_prefer_ceil", 1, 9, 4},
  };
  int64_t d[4] = {1, 2, 5, 6}, four[1] = {4};
  size_t i;
  char what[96];
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gb_t b = start(4, d);
    int32_t in[4], y = out_tensor(&b, "y"), n;
    int64_t sz[4] = {1, 2, cases[i].h, cases[i].w};
    float sc[4] = {1.f, 1.f, (float)cases[i].h / 5.f, (float)cases[i].w / 6.f};
    in[0] = b.x;
    in[1] = -1;
    if (cases[i].use_sizes) {
      in[2] = -1;
      in[3] = mi_graph_add_const_i64(b.g, "sizes", 4, sz);
    } else {
      in[2] = mi_graph_add_const_f32(b.g, "scales", 1, four, sc);
      in[3] = -1;
    }
    n = mi_graph_add_node(b.g, "Resize", "rs", cases[i].use_sizes ? 4 : 3, in, 1, &y);
    mi_node_set_string(b.g, n, "mode", cases[i].mode);
    mi_node_set_string(b.g, n, "coordinate_transformation_mode", cases[i].ct);
    if (cases[i].nm) mi_node_set_string(b.g, n, "nearest_mode", cases[i].nm);
    snprintf(what, sizeof what, "Resize %s %s to %lldx%lld", cases[i].mode, cases[i].ct,
             (long long)cases[i].h, (long long)cases[i].w);
    check(what, &b, p, dev);
  }
}

/* A Concat of one image's channels from more inputs than a kernel has launches (one buffer copy
 * each): opencl refuses it, and without host fallback the error names the plugin and its limit
 * (it said "too many launches" alone). */
static void concat_many(mi_plugin_t *p, uint32_t dev) {
  int64_t d[4] = {1, 1, 2, 3};
  int32_t in[41], y;
  mi_session_t *s = NULL;
  mi_session_options_t o;
  mi_error_t err = {0};
  int32_t rc;
  gb_t b = start(4, d);
  y = out_tensor(&b, "y");
  for (int i = 0; i < 41; i++) in[i] = b.x;
  mi_node_set_int(b.g, mi_graph_add_node(b.g, "Concat", "cat", 41, in, 1, &y), "axis", 1);
  rc = mi_graph_infer_shapes(b.g, &err);
  CHECK(rc == MI_OK, "Concat of 41: shapes: %s", err.message);
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  if (rc == MI_OK) rc = mi_session_create(b.g, p, dev, &o, &s, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "opencl") && strstr(err.message, "40 launches"),
        "Concat of 41 inputs without fallback: status %d, message \"%s\" (want opencl's launch limit named)",
        (int)rc, err.message);
  mi_session_destroy(s);
  mi_graph_destroy(b.g);
}

static const char *build;
static mi_registry_t *r;
static mi_plugin_t *p;
static uint32_t dev;

static void slices_case(void) { slices(p, dev); }
static void gathers_case(void) { gathers(p, dev); }
static void resizes_case(void) { resizes(p, dev); }
static void concat_many_case(void) { concat_many(p, dev); }

static void setup(void) {
  build = getenv("MI_BUILD");
  mi_error_t err = {0};
  char dir[1024], cache[1100];
  REQUIRE(build, "MI_BUILD is not set");
  snprintf(cache, sizeof cache, "%s/tests/pocl-cache", build);
  drive_pocl_cache(cache);
  snprintf(cache, sizeof cache, "%s/tests/mi-cache", build);
  mkdir(cache, 0755);
  setenv("MI_CACHE_DIR", cache, 0);
  r = mi_registry_create();
  snprintf(dir, sizeof dir, "%s/plugins", build);
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK, "scan %s: %s", dir, err.message);
  tu_device_or_skip(r, "opencl", "opencl:0", &p, &dev);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(slices_case),
    TU_CASE(gathers_case),
    TU_CASE(resizes_case),
    TU_CASE(concat_many_case),
};

TU_MAIN(setup, teardown)
