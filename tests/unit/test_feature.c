/* test_feature.c - model and layer features of a known graph, the software-stack hash, and a
 * device fingerprint measured on the simulated NPU. */
#include <math.h>

#include "test_measure_util.h"

static void test_model(void) {
  mi_graph_t *g = tm_conv_relu();
  mi_model_features_t f;
  mi_layer_features_t *l = NULL;
  int32_t n = 0;
  mi_error_t err;
  char *js;
  CHECK(g && mi_model_features(g, &f, &l, &n, &err) == MI_OK, "%s", err.message);
  if (!l) return;
  CHECK(f.layer_count == 2 && n == 2 && f.op_kinds == 2, "layers %d kinds %d", f.layer_count,
        f.op_kinds);
  CHECK(!strcmp(f.op_names[0], "Conv") && f.op_counts[0] == 1 && !strcmp(f.op_names[1], "Relu"),
        "histogram");
  /* Conv: 2 * out(16*8*8) * Cin*kh*kw(8*9); Relu: one per output */
  CHECK(fabs(f.flops - (2.0 * 1024 * 72 + 1024)) < 0.5, "flops %g", f.flops);
  CHECK(f.params == 16 * 8 * 9 && f.max_width == 16 && f.input_scale == 512 && f.batch == 1,
        "params %lld width %lld scale %lld", (long long)f.params, (long long)f.max_width,
        (long long)f.input_scale);
  CHECK(!strcmp(f.input_shapes, "x:1x8x8x8"), "shapes %s", f.input_shapes);
  CHECK(!strcmp(l[0].op_type, "Conv") && !l[0].fusable && l[0].alignment == 16 &&
            !strcmp(l[0].out_shape, "1x16x8x8"),
        "conv layer %s %d %d", l[0].out_shape, l[0].fusable, l[0].alignment);
  /* bytes: x 512*4 + w 1152*4 + y 1024*4 */
  CHECK(fabs(l[0].bytes - 4.0 * (512 + 1152 + 1024)) < 0.5 &&
            fabs(l[0].intensity - l[0].flops / l[0].bytes) < 1e-9,
        "bytes %g", l[0].bytes);
  CHECK(l[1].fusable == 1 && l[1].intensity < 1, "relu fuses into the conv");
  js = mi_model_features_json(&f);
  CHECK(js && strstr(js, "\"Conv\":1") && strstr(js, "\"params\":1152"), "json %s", js);
  free(js);
  free(l);
  mi_graph_destroy(g);
}

static void test_stack(void) {
  mi_device_desc_t d;
  char a[512], b[512], ha[17], hb[17], hc[17];
  memset(&d, 0, sizeof d);
  snprintf(d.driver_version, sizeof d.driver_version, "blis-0.9.0");
  mi_stack_describe("blis-cpu", "1.0", &d, a, sizeof a, ha);
  mi_stack_describe("blis-cpu", "1.0", &d, b, sizeof b, hb);
  CHECK(!strcmp(a, b) && !strcmp(ha, hb), "stable");
  CHECK(strstr(a, "compiler=") && strstr(a, "plugin=blis-cpu 1.0") && strstr(a, "blis-0.9.0") &&
            strstr(a, mi_version()),
        "text %s", a);
  mi_stack_describe("blis-cpu", "1.1", &d, b, sizeof b, hc);
  CHECK(strcmp(ha, hc) != 0, "a plugin upgrade is another stack");
}

static void test_device(void) {
  const char *build = getenv("MI_BUILD");
  char h[17], *js;
  mi_registry_t *r = mi_registry_create();
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_device_fingerprint_t fp;
  mi_error_t err;
  if (!build) {
    CHECK(0, "MI_BUILD is not set");
    return;
  }
  CHECK(tu_scan_plugins(r, &err) == MI_OK, "%s", err.message);
  CHECK(mi_registry_device(r, "npu-stub:0", &p, &dev, &err) == MI_OK, "%s", err.message);
  if (p) {
    CHECK(mi_device_fingerprint(p, dev, &fp, &err) == MI_OK, "%s", err.message);
    CHECK(fp.gemm_gflops > 0 && fp.add_gbs > 0, "gemm %g add %g", fp.gemm_gflops, fp.add_gbs);
    for (int i = 0; i < MI_PROBE_COUNT; i++)
      CHECK(fp.probe_us[i] > 0 && isfinite(fp.vector[4 + i]), "probe %s", mi_probe_name(i));
    mi_device_hash(&fp.desc, h);
    CHECK(!strcmp(h, fp.hash) && strlen(h) == 16, "hash of the declared features");
    js = mi_device_fingerprint_json(&fp);
    CHECK(js && strstr(js, "\"vector\":[") && strstr(js, mi_probe_name(0)), "json %s", js);
    free(js);
  }
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_model),
    TU_CASE(test_stack),
    TU_CASE(test_device),
};

TU_MAIN(NULL, NULL)
