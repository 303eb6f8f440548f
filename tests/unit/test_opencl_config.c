/* test_opencl_config.c - the OpenCL plugin's descriptions (device, knobs, variants, declared
 * constraints, counters) and its refusal of broken knob combinations and unsupported ops. */
#include "test_opencl_common.h"

static ocl_t o;

static int32_t check(const char *variant, const char *const *names, const int64_t *vals, int n,
                     mi_error_t *err) {
  mi_knob_value_t kv[8];
  int i;
  for (i = 0; i < n; i++) {
    kv[i].name = names[i];
    kv[i].i = vals[i];
    kv[i].f = 0;
  }
  memset(err, 0, sizeof *err);
  return o.api->check_config(o.ctx, 0, variant, kv, n, err);
}

static void descriptions(void) {
  mi_device_desc_t d;
  uint32_t n = 0, i;
  int saw_conv = 0, saw_dw = 0, saw_local_rule = 0, saw_wg_rule = 0;
  uint32_t variant_dtypes = 0, dev_dtypes;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  REQUIRE(o.api->device_info(o.ctx, 0, &d, NULL) == MI_OK);
  fprintf(stderr, "device: %s / %s / driver %s / %s, %u CUs, wg %u, local %llu\n", d.name,
          d.vendor, d.driver_version, d.isa, d.compute_units, d.max_threads,
          (unsigned long long)d.local_memory_bytes);
  REQUIRE(d.name[0] && d.driver_version[0] && strstr(d.isa, "OpenCL C") != NULL);
  REQUIRE(d.compute_units > 0 && d.max_threads > 0 && d.global_memory_bytes > 0);
  REQUIRE(d.dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32));
  dev_dtypes = d.dtype_mask;
  /* small host struct: the plugin writes only what fits and says so */
  d.struct_size = 8;
  REQUIRE(o.api->device_info(o.ctx, 0, &d, NULL) == MI_OK && d.struct_size == 8);
  REQUIRE(o.api->variant_count(o.ctx, 0, &n, NULL) == MI_OK && n > 20);
  for (i = 0; i < n; i++) {
    mi_variant_desc_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    REQUIRE(o.api->variant_desc(o.ctx, 0, i, &v, NULL) == MI_OK);
    variant_dtypes |= v.dtype_mask;
    saw_conv |= strcmp(v.id, "conv.im2col_gemm") == 0 && strstr(v.knobs, "tile_k") &&
                (v.fuse_mask & MI_FUSE_BN);
    saw_dw |= strcmp(v.id, "conv.depthwise") == 0 && strcmp(v.op_type, "Conv") == 0;
  }
  REQUIRE(saw_conv && saw_dw);
  /* the device declares FP16 only when some variant computes in it (none does yet), whatever
   * cl_khr_fp16 says */
  REQUIRE(!(dev_dtypes & MI_DTYPE_BIT(MI_DTYPE_FLOAT16)) ||
          (variant_dtypes & MI_DTYPE_BIT(MI_DTYPE_FLOAT16)));
  REQUIRE(o.api->constraint_count(o.ctx, 0, &n, NULL) == MI_OK && n >= 4);
  for (i = 0; i < n; i++) {
    mi_constraint_desc_t c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    REQUIRE(o.api->constraint_desc(o.ctx, 0, i, &c, NULL) == MI_OK);
    saw_local_rule |= strstr(c.reason, "CL_DEVICE_LOCAL_MEM_SIZE") != NULL;
    saw_wg_rule |= c.kind == MI_CONSTRAINT_PRODUCT_LE && c.value == (int64_t)d.max_threads;
  }
  REQUIRE(saw_local_rule && saw_wg_rule);
  REQUIRE(ocl_counter(&o, "kernel_time") < 0); /* no run yet: no sample, not 0 */
}

static void refusals(void) {
  static const char *n3[] = {"wg_x", "wg_y", "tile_m"};
  static const char *n5[] = {"tile_m", "tile_n", "tile_k", "use_local_memory", "wg_y"};
  static const char *nv[] = {"wg_x", "tile_n", "vector_width"};
  static const char *nw[] = {"wg_x", "wg_y"};
  int64_t v3[] = {8, 16, 8}, v5[] = {64, 64, 64, 1, 8}, vv[] = {8, 16, 4}, vw[] = {1024, 64};
  mi_error_t err;
  /* tile not divisible by the work-group */
  REQUIRE(check("gemm.tiled", n3, v3, 3, &err) == MI_ERR_INVALID_CONFIG);
  fprintf(stderr, "refused: %s\n", err.message);
  REQUIRE(strstr(err.message, "wg_y must divide tile_m") != NULL);
  /* local memory: (64*64 + 64*64)*4 = 32 KiB, over the 16 KiB budget this test sets */
  REQUIRE(check("gemm.tiled", n5, v5, 5, &err) == MI_ERR_INVALID_CONFIG);
  fprintf(stderr, "refused: %s\n", err.message);
  REQUIRE(strstr(err.message, "CL_DEVICE_LOCAL_MEM_SIZE") != NULL);
  v5[3] = 0; /* the same tiles without local memory are fine */
  REQUIRE(check("gemm.tiled", n5, v5, 5, &err) == MI_OK);
  /* vector width must divide the columns per work-item: 16/8 = 2 columns, width 4 */
  REQUIRE(check("gemm.regblock", nv, vv, 3, &err) == MI_ERR_INVALID_CONFIG);
  fprintf(stderr, "refused: %s\n", err.message);
  REQUIRE(strstr(err.message, "vector_width must divide") != NULL);
  /* work-group larger than the device allows */
  REQUIRE(check("gemm.naive", nw, vw, 2, &err) == MI_ERR_INVALID_CONFIG);
  fprintf(stderr, "refused: %s\n", err.message);
  REQUIRE(strstr(err.message, "CL_DEVICE_MAX_WORK_GROUP_SIZE") != NULL);
  /* outside the domain, unknown knob, unknown variant */
  vv[2] = 3;
  REQUIRE(check("gemm.regblock", nv, vv, 3, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "vector_width=3") != NULL);
  {
    static const char *bad[] = {"warp_size"};
    int64_t one[] = {1};
    REQUIRE(check("gemm.naive", bad, one, 1, &err) == MI_ERR_INVALID_CONFIG);
    REQUIRE(strstr(err.message, "warp_size") != NULL);
  }
  REQUIRE(check("gemm.fastest", NULL, NULL, 0, &err) == MI_ERR_INVALID_CONFIG);
  REQUIRE(check("gemm.tiled", NULL, NULL, 0, &err) == MI_OK);
  /* No variant is "auto" (the plugin picks, as kernel_prepare does): the host asks it for every
   * auto node, and a refusal made its repair move the default point's nodes to explicit
   * variants (depthwise convs ran conv.im2col_gemm instead of conv.depthwise). Knobs it is
   * given must still be real ones in their domains. */
  REQUIRE(check(NULL, NULL, NULL, 0, &err) == MI_OK);
  REQUIRE(check("", NULL, NULL, 0, &err) == MI_OK);
  {
    static const char *bad[] = {"warp_size"}, *wg[] = {"wg_x"};
    int64_t one[] = {1}, three[] = {3};
    REQUIRE(check(NULL, bad, one, 1, &err) == MI_ERR_INVALID_CONFIG);
    REQUIRE(strstr(err.message, "warp_size") != NULL);
    REQUIRE(check(NULL, wg, three, 1, &err) == MI_ERR_INVALID_CONFIG);
    REQUIRE(strstr(err.message, "wg_x=3") != NULL);
  }
}

/* kernel_prepare refuses the same way, before building anything; and unsupported ops. */
static void prepare_refusals(void) {
  kd_t k;
  int64_t d[2] = {5, 7};
  int in[2];
  mi_kernel_t *kern = NULL;
  mi_error_t err = {0, ""};
  double built = ocl_counter(&o, "programs_built");
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 2, d, NULL);
  d[0] = 7;
  in[1] = kd_tensor(&k, 2, d, NULL);
  d[0] = 5;
  k.ins[k.nin++] = in[0];
  k.ins[k.nin++] = in[1];
  k.outs[k.nout++] = kd_tensor(&k, 2, d, NULL);
  kd_node(&k, "MatMul", 2, in, k.outs[0]);
  kd_knob(&k, "wg_x", 16);
  kd_knob(&k, "tile_n", 8);
  REQUIRE(o.api->kernel_prepare(o.ctx, 0, kd_finish(&k, "matmul.tiled"), &kern, &err) ==
          MI_ERR_INVALID_CONFIG);
  REQUIRE(kern == NULL && strstr(err.message, "wg_x must divide tile_n"));
  REQUIRE(o.api->kernel_prepare(o.ctx, 0, kd_finish(&k, "gemm.tiled"), &kern, &err) ==
          MI_ERR_INVALID_CONFIG);
  REQUIRE(strstr(err.message, "implements Gemm, not MatMul") != NULL);
  REQUIRE(ocl_counter(&o, "programs_built") == built);
  k.nk = 0;
  k.nodes[0].op_type = "NonMaxSuppression";
  REQUIRE(o.api->kernel_prepare(o.ctx, 0, kd_finish(&k, NULL), &kern, &err) == MI_ERR_UNSUPPORTED);
  REQUIRE(kern == NULL && strstr(err.message, "NonMaxSuppression"));
  k.nodes[0].op_type = "MatMul";
  k.t[0].dtype = MI_DTYPE_INT8;
  REQUIRE(o.api->kernel_prepare(o.ctx, 0, kd_finish(&k, NULL), &kern, &err) == MI_ERR_UNSUPPORTED);
  REQUIRE(kern == NULL);
}

static void setup(void) {
  memset(&o, 0, sizeof o);
  o.local_mem_limit = "16384";
  ocl_env(&o);
  ocl_open_or_skip(&o);
}

static void teardown(void) {
  ocl_close(&o);
  ocl_rm_cache(&o);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(descriptions),
    TU_CASE(refusals),
    TU_CASE(prepare_refusals),
};

TU_MAIN(setup, teardown)
