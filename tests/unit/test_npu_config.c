/* test_npu_config.c - npu-stub descriptions, knob checks with reasons, refused ops, SRAM tile
 * fit, and strict device-file parsing (file:line on errors). */
#include "test_npu_util.h"

#include <sys/stat.h>

static char g_dir[256];

static const char *write_file(const char *name, const char *text) {
  static char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  f = fopen(path, "w");
  REQUIRE(f != NULL);
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_descriptions(npu_t *p) {
  uint32_t n = 0, i;
  mi_error_t err;
  mi_device_desc_t d;
  mi_knob_desc_t k;
  mi_constraint_desc_t c;
  const char *names[6] = {"cores", "dvfs_level", "dataflow", "sram_tile", "dma_overlap", "batch"};
  REQUIRE(p->api->device_count(p->ctx, &n, &err) == MI_OK);
  REQUIRE(n == 2);
  for (i = 0; i < 2; i++) {
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    REQUIRE(p->api->device_info(p->ctx, i, &d, &err) == MI_OK);
    REQUIRE(d.kind == MI_DEVICE_NPU && d.channel_alignment == 16);
    REQUIRE(d.dtype_mask & MI_DTYPE_BIT(MI_DTYPE_INT8));
    REQUIRE(strstr(d.name, i == 0 ? "npu-gen1" : "npu-gen2") != NULL);
    printf("device %u: %s, %.0f GFLOP/s fp16, %.1f GB/s\n", i, d.name, d.peak_gflops,
           d.peak_bandwidth_gbs);
  }
  REQUIRE(p->api->knob_count(p->ctx, 0, &n, &err) == MI_OK && n == 6);
  for (i = 0; i < n; i++) {
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    REQUIRE(p->api->knob_desc(p->ctx, 0, i, &k, &err) == MI_OK);
    REQUIRE(strcmp(k.name, names[i]) == 0);
  }
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  REQUIRE(p->api->knob_desc(p->ctx, 0, 1, &k, &err) == MI_OK);
  REQUIRE(strcmp(k.unit, "level") == 0 && k.scope == MI_KNOB_SCOPE_DEVICE && k.max == 4);
  REQUIRE(p->api->knob_desc(p->ctx, 0, 2, &k, &err) == MI_OK);
  REQUIRE(k.type == MI_KNOB_ENUM && strcmp(k.choices, "weight_stationary|output_stationary") == 0);
  REQUIRE(p->api->constraint_count(p->ctx, 0, &n, &err) == MI_OK && n >= 3);
  for (i = 0; i < n; i++) {
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    REQUIRE(p->api->constraint_desc(p->ctx, 0, i, &c, &err) == MI_OK);
    REQUIRE(c.reason[0] != '\0');
  }
  REQUIRE(p->api->variant_count(p->ctx, 0, &n, &err) == MI_OK && n >= 17);
}

static int32_t check(npu_t *p, const char *variant, const char *k1, int64_t v1, const char *k2,
                     int64_t v2, mi_error_t *err) {
  mi_knob_value_t kv[2];
  kv[0].name = k1;
  kv[0].i = v1;
  kv[0].f = 0;
  kv[1].name = k2;
  kv[1].i = v2;
  kv[1].f = 0;
  memset(err, 0, sizeof *err);
  return p->api->check_config(p->ctx, 0, variant, kv, k2 ? 2 : 1, err);
}

static void test_knob_checks(npu_t *p) {
  mi_error_t err;
  mi_knob_value_t kv = {"dataflow", 1, 0};
  REQUIRE(check(p, "npu.conv", "cores", 2, "dvfs_level", 3, &err) == MI_OK);
  REQUIRE(check(p, "npu.conv", "cores", 5, NULL, 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "cores") && strstr(err.message, "4"));
  REQUIRE(check(p, NULL, "dvfs_level", 7, NULL, 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "dvfs_level"));
  REQUIRE(check(p, NULL, "dataflow", 1, "dma_overlap", 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "dma_overlap"));
  REQUIRE(check(p, NULL, "sram_tile", 48, NULL, 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(check(p, NULL, "warp_size", 1, NULL, 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "warp_size"));
  REQUIRE(check(p, "conv.winograd", "cores", 1, NULL, 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(p->api->set_device_knobs(p->ctx, 0, &kv, 1, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "op knob"));
}

/* Conv 512->256 3x3 on 8x8: a 256-channel tile needs > 1 MiB of SRAM per core. */
static void test_tile_fit(npu_t *p) {
  static int8_t w[256 * 512 * 9];
  int64_t xd[4] = {1, 512, 8, 8}, wd[4] = {256, 512, 3, 3}, yd[4] = {1, 256, 6, 6};
  int tile, xt, wt, yt;
  int32_t ins[2], rc;
  kb_t k;
  mi_kernel_t *kern;
  mi_error_t err;
  for (tile = 256; tile >= 64; tile /= 2) {
    memset(&k, 0, sizeof k);
    xt = kb_tensor(&k, MI_DTYPE_INT8, 4, xd, NULL, 0);
    kb_quant(&k, xt, 0.1f, 0);
    wt = kb_tensor(&k, MI_DTYPE_INT8, 4, wd, w, sizeof w);
    kb_quant(&k, wt, 0.01f, 0);
    yt = kb_tensor(&k, MI_DTYPE_INT8, 4, yd, NULL, 0);
    kb_quant(&k, yt, 0.1f, 0);
    ins[0] = xt;
    ins[1] = wt;
    kb_node(&k, "Conv", ins, 2, yt);
    kb_knob(&k, "sram_tile", tile);
    kern = NULL;
    rc = p->api->kernel_prepare(p->ctx, 0, kb_finish(&k, yt), &kern, &err);
    if (tile > 64) {
      printf("gen1 tile %d: %s\n", tile, err.message);
      REQUIRE(rc == MI_ERR_INVALID_CONFIG && kern == NULL && strstr(err.message, "SRAM"));
    } else {
      REQUIRE(rc == MI_OK && kern != NULL);
      p->api->kernel_release(p->ctx, kern);
    }
  }
  /* gen2 has 2 MiB per core: a 128-channel tile fits there */
  k.knobs[0].i = 128;
  rc = p->api->kernel_prepare(p->ctx, 1, &k.d, &kern, &err);
  REQUIRE(rc == MI_OK);
  p->api->kernel_release(p->ctx, kern);
}

static void test_unsupported(npu_t *p) {
  int64_t d2[2] = {4, 10}, dyn[2] = {-1, 10};
  int xt, yt;
  int32_t ins[1];
  kb_t k;
  mi_kernel_t *kern = NULL;
  mi_error_t err;
  const char *ops[] = {"Softmax", "Resize", "LayerNormalization", "Gelu", "Gather", "Where"};
  size_t i;
  for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    memset(&k, 0, sizeof k);
    xt = kb_tensor(&k, MI_DTYPE_FLOAT32, 2, d2, NULL, 0);
    yt = kb_tensor(&k, MI_DTYPE_FLOAT32, 2, d2, NULL, 0);
    ins[0] = xt;
    kb_node(&k, ops[i], ins, 1, yt);
    REQUIRE(p->api->kernel_prepare(p->ctx, 0, kb_finish(&k, yt), &kern, &err) == MI_ERR_UNSUPPORTED);
    REQUIRE(kern == NULL && strstr(err.message, ops[i]));
  }
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_FLOAT32, 2, dyn, NULL, 0);
  yt = kb_tensor(&k, MI_DTYPE_FLOAT32, 2, dyn, NULL, 0);
  ins[0] = xt;
  kb_node(&k, "Relu", ins, 1, yt);
  REQUIRE(p->api->kernel_prepare(p->ctx, 0, kb_finish(&k, yt), &kern, &err) == MI_ERR_UNSUPPORTED);
  REQUIRE(strstr(err.message, "static"));
  /* a variant that does not implement the op is a config error, not an unsupported op */
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_FLOAT32, 2, d2, NULL, 0);
  yt = kb_tensor(&k, MI_DTYPE_FLOAT32, 2, d2, NULL, 0);
  ins[0] = xt;
  kb_node(&k, "Relu", ins, 1, yt);
  kb_finish(&k, yt);
  k.d.variant_id = "npu.conv";
  REQUIRE(p->api->kernel_prepare(p->ctx, 0, &k.d, &kern, &err) == MI_ERR_INVALID_CONFIG);
  k.d.variant_id = "npu.relu";
  REQUIRE(p->api->kernel_prepare(p->ctx, 0, &k.d, &kern, &err) == MI_OK);
  p->api->kernel_release(p->ctx, kern);
}

static void expect_bad_file(const char *name, const char *text, const char *where) {
  npu_t p;
  mi_error_t err;
  const char *path = write_file(name, text);
  int32_t rc = npu_open(&p, path, &err);
  printf("%s -> %s\n", name, err.message);
  REQUIRE(rc == MI_ERR_PARSE); /* the loader keeps create()'s status in its reason */
  REQUIRE(p.ctx == NULL);
  REQUIRE(strstr(err.message, where) != NULL);
  npu_close(&p);
}

static void test_device_files(void) {
  npu_t p;
  mi_error_t err;
  uint32_t n = 0;
  char sub[300];
  expect_bad_file("npu-a.conf", "# ok\ncores = 2\nwarp = 32\n", "npu-a.conf:3: unknown key 'warp'");
  expect_bad_file("npu-b.conf", "cores = -1\n", "npu-b.conf:1: bad value '-1' for 'cores'");
  expect_bad_file("npu-c.conf", "\n\ndvfs = 400:0.7, 200:0.6\n", "npu-c.conf:3:");
  expect_bad_file("npu-d.conf", "noise 0.1\n", "npu-d.conf:1: expected 'key = value'");
  expect_bad_file("npu-e.conf", "cores = 2\ncores = 3\n", "npu-e.conf:2: duplicate key");
  /* MI_NPU_DEVICES names a directory; each npu-*.conf in it is one device */
  snprintf(sub, sizeof sub, "%s/devs", g_dir);
  REQUIRE(mkdir(sub, 0700) == 0);
  {
    char path[400];
    FILE *f;
    snprintf(path, sizeof path, "%s/npu-x.conf", sub);
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("name = npu-x\ncores = 2\ndvfs = 100:0.5, 300:0.8\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/readme.txt", sub);
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("not a device\n", f);
    fclose(f);
  }
  setenv("MI_NPU_DEVICES", sub, 1);
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK);
  REQUIRE(p.api->device_count(p.ctx, &n, &err) == MI_OK && n == 1);
  {
    mi_knob_desc_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    REQUIRE(p.api->knob_desc(p.ctx, 0, 0, &k, &err) == MI_OK && k.max == 2);
    REQUIRE(p.api->knob_desc(p.ctx, 0, 1, &k, &err) == MI_OK && k.max == 1);
  }
  npu_close(&p);
  unsetenv("MI_NPU_DEVICES");
}

static npu_t p;
static int p_open;

static void setup(void) {
  mi_error_t err;
  snprintf(g_dir, sizeof g_dir, "/tmp/test_npu_config.XXXXXX");
  REQUIRE(mkdtemp(g_dir) != NULL);
  unsetenv("MI_NPU_DEVICES");
  unsetenv("MI_NPU_FAULT");
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK, "create: %s", err.message);
  p_open = 1;
}

static void teardown(void) {
  if (p_open) npu_close(&p);
  REQUIRE(tu_rmtree(g_dir) == 0);
}

static void descriptions_case(void) { test_descriptions(&p); }
static void knob_checks_case(void) { test_knob_checks(&p); }
static void tile_fit_case(void) { test_tile_fit(&p); }
static void unsupported_case(void) { test_unsupported(&p); }

static const tu_case_t tu_cases[] = {
    {"descriptions", descriptions_case},
    {"knob_checks", knob_checks_case},
    {"tile_fit", tile_fit_case},
    {"unsupported", unsupported_case},
    {"device_files", test_device_files},
};

TU_MAIN(setup, teardown)
