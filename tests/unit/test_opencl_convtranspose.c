/* test_opencl_convtranspose.c - ConvTranspose on opencl:0 (variant convtranspose.direct, loaded
 * through the host registry, no host fallback) against the reference interpreter: the 2x2
 * stride-2 upsampling of PP-OCR's detector, odd sizes with pads, output_padding, dilations and
 * groups, without bias, followed by Relu, and with pads from auto_pad or output_shape. A 1-D
 * ConvTranspose, which the variant does not implement, is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_util.h"

typedef struct ct_case {
  const char *what;
  int64_t n, c, h, w, oc, kh, kw, sh, sw, pads[4], dil[2], outpad[2], group;
  int bias, relu;
  const char *auto_pad; /* NULL: NOTSET */
  int64_t oshape[2];    /* output_shape when oshape[0] > 0 */
} ct_case_t;

static float frand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* x -> ConvTranspose (-> Relu) -> y, with constant random weights (and bias); rank 3 (1-D)
 * when one_d. */
static mi_graph_t *build(const ct_case_t *k, int one_d) {
  mi_graph_t *g = mi_graph_create("ct");
  int64_t dx[4] = {k->n, k->c, k->h, k->w}, dw[4] = {k->c, k->oc / k->group, k->kh, k->kw};
  int64_t db[1] = {k->oc}, nw = dw[0] * dw[1] * dw[2] * dw[3];
  float *wv = malloc((size_t)nw * sizeof *wv), bv[64];
  uint32_t seed = 7;
  int32_t in[3], y, node;
  for (int64_t i = 0; i < nw; i++) wv[i] = frand(&seed);
  for (int64_t i = 0; i < k->oc; i++) bv[i] = frand(&seed);
  if (one_d) dx[2] = k->w, dw[2] = k->kw;
  in[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, one_d ? 3 : 4, dx);
  mi_graph_add_input(g, in[0]);
  in[1] = mi_graph_add_const_f32(g, "w", one_d ? 3 : 4, dw, wv);
  in[2] = k->bias ? mi_graph_add_const_f32(g, "b", 1, db, bv) : -1;
  free(wv);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  node = mi_graph_add_node(g, "ConvTranspose", "ct", k->bias ? 3 : 2, in, 1, &y);
  mi_node_set_int(g, node, "group", k->group);
  if (one_d) {
    mi_node_set_ints(g, node, "strides", 1, &k->sw);
  } else {
    mi_node_set_ints(g, node, "kernel_shape", 2, (int64_t[]){k->kh, k->kw});
    mi_node_set_ints(g, node, "strides", 2, (int64_t[]){k->sh, k->sw});
    mi_node_set_ints(g, node, "dilations", 2, k->dil);
    mi_node_set_ints(g, node, "output_padding", 2, k->outpad);
    if (k->auto_pad)
      mi_node_set_string(g, node, "auto_pad", k->auto_pad);
    else
      mi_node_set_ints(g, node, "pads", 4, k->pads);
    if (k->oshape[0] > 0) mi_node_set_ints(g, node, "output_shape", 2, k->oshape);
  }
  if (k->relu) {
    int32_t r = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, -1, NULL);
    mi_graph_add_node(g, "Relu", "relu", 1, &y, 1, &r);
    y = r;
  }
  mi_graph_add_output(g, y);
  return g;
}

/* Runs the case on the device without fallback and on the reference; compares. */
static void check(const ct_case_t *k, mi_plugin_t *p, uint32_t dev) {
  mi_graph_t *g = build(k, 0);
  mi_array_t *in = NULL, *want = NULL, *got = NULL;
  mi_session_t *s = NULL;
  mi_session_options_t o;
  mi_error_t err = {0};
  int32_t rc = mi_graph_infer_shapes(g, &err);
  CHECK(rc == MI_OK, "%s: shapes: %s", k->what, err.message);
  if (rc != MI_OK) goto done;
  const mi_tensor_t *t = &g->tensors[g->inputs[0]];
  in = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
  mi_array_fill_random(in, 11);
  rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, &want, 1, &err);
  CHECK(rc == MI_OK, "%s: reference: %s", k->what, err.message);
  if (rc != MI_OK) goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  rc = mi_session_create(g, p, dev, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session (no fallback): %s", k->what, err.message);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, &got, 1, &err);
  CHECK(rc == MI_OK, "%s: run: %s", k->what, err.message);
  if (rc != MI_OK) goto done;
  CHECK(got->nbytes == want->nbytes && got->rank == 4, "%s: output size", k->what);
  if (got->nbytes != want->nbytes) goto done;
  const float *a = got->data, *r = want->data;
  double num = 0., den = 0.;
  int64_t n = mi_array_numel(want);
  for (int64_t i = 0; i < n; i++) {
    num += ((double)a[i] - r[i]) * ((double)a[i] - r[i]);
    den += (double)r[i] * r[i];
  }
  double e = sqrt(num / (den > 0 ? den : 1));
  fprintf(stderr, "  %-44s [%lld,%lld,%lld,%lld] rel L2 %.3g\n", k->what, (long long)got->dims[0],
          (long long)got->dims[1], (long long)got->dims[2], (long long)got->dims[3], e);
  CHECK(den > 0, "%s: the reference output is all zeros", k->what);
  CHECK(e < 1e-4, "%s: rel L2 %.3g above 1e-4", k->what, e);
done:
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_array_destroy(want);
  mi_array_destroy(got);
  mi_graph_destroy(g);
}

/* 1-D is not implemented on the device: the session without fallback must say so. */
static void refused(const ct_case_t *k, mi_plugin_t *p, uint32_t dev) {
  mi_graph_t *g = build(k, 1);
  mi_session_t *s = NULL;
  mi_session_options_t o;
  mi_error_t err = {0};
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "1-D shapes: %s", err.message);
  int32_t rc = mi_session_create(g, p, dev, &o, &s, &err);
  CHECK(rc != MI_OK && strstr(err.message, "ConvTranspose") && strstr(err.message, "2-D"),
        "1-D ConvTranspose refused naming the op, got %d: %s", (int)rc, err.message);
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* n c h w oc, kernel kh x kw, stride sh x sw, pads (top, left, bottom, right), dilations,
 * output_padding, group */
#define CT(N_, C_, H_, W_, OC_, KH_, KW_, SH_, SW_) \
  .n = N_, .c = C_, .h = H_, .w = W_, .oc = OC_, .kh = KH_, .kw = KW_, .sh = SH_, .sw = SW_
static const ct_case_t cases[] = {
    {"2x2 stride 2, bias (PP-OCR det)", CT(1, 8, 5, 7, 4, 2, 2, 2, 2), .dil = {1, 1},
     .group = 1, .bias = 1},
    {"3x3 stride 2, pads 1, output_padding 1", CT(2, 3, 4, 5, 5, 3, 3, 2, 2),
     .pads = {1, 1, 1, 1}, .dil = {1, 1}, .outpad = {1, 1}, .group = 1, .bias = 1},
    {"3x2 stride 3x1, uneven pads, dilation 2x1", CT(1, 4, 3, 6, 6, 3, 2, 3, 1),
     .pads = {2, 0, 1, 1}, .dil = {2, 1}, .group = 1},
    {"groups 2, stride 2, no bias, Relu", CT(2, 6, 4, 4, 4, 3, 3, 2, 2), .pads = {1, 1, 0, 0},
     .dil = {1, 1}, .outpad = {1, 0}, .group = 2, .relu = 1},
    {"depthwise groups 4, 4x4 stride 2 pads 1", CT(1, 4, 6, 5, 4, 4, 4, 2, 2),
     .pads = {1, 1, 1, 1}, .dil = {1, 1}, .group = 4, .bias = 1},
    {"auto_pad SAME_UPPER, 3x3 stride 2", CT(1, 3, 5, 4, 2, 3, 3, 2, 2), .dil = {1, 1},
     .group = 1, .bias = 1, .auto_pad = "SAME_UPPER"},
    {"auto_pad SAME_LOWER, 4x3 stride 3x2, dil 1x2", CT(1, 3, 3, 4, 2, 4, 3, 3, 2),
     .dil = {1, 2}, .group = 1, .bias = 1, .auto_pad = "SAME_LOWER"},
    {"auto_pad VALID, 3x3 stride 2", CT(1, 2, 3, 3, 3, 3, 3, 2, 2), .dil = {1, 1}, .group = 1,
     .bias = 1, .auto_pad = "VALID"},
    {"output_shape 9x6, 3x3 stride 2", CT(1, 2, 4, 3, 2, 3, 3, 2, 2), .dil = {1, 1},
     .group = 1, .bias = 1, .oshape = {9, 6}},
};
#undef CT
static mi_registry_t *r;
static mi_plugin_t *p;
static uint32_t dev;

static void setup(void) {
  const char *build_dir = getenv("MI_BUILD");
  char dir[1024];
  mi_error_t err = {0};
  REQUIRE(build_dir, "MI_BUILD is not set");
  snprintf(dir, sizeof dir, "%s/tests/pocl-cache", build_dir);
  drive_pocl_cache(dir);
  snprintf(dir, sizeof dir, "%s/tests/mi-cache", build_dir);
  mkdir(dir, 0755);
  setenv("MI_CACHE_DIR", dir, 0);
  r = mi_registry_create();
  snprintf(dir, sizeof dir, "%s/plugins", build_dir);
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK, "scan %s: %s", dir, err.message);
  tu_device_or_skip(r, "opencl", "opencl:0", &p, &dev);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void shapes(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i], p, dev);
}

static void refusals(void) {
  refused(&cases[0], p, dev);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(shapes),
    TU_CASE(refusals),
};

TU_MAIN(setup, teardown)
