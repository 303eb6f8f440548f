/* ocl_plugin.c - the OpenCL plugin's entry point and function table: instances, descriptions,
 * buffers, counters and configuration checks. */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#define OCL_PLUGIN_VERSION "0.1.0"

/* counters: device time summed since create (TIMER counters are cumulative by the ABI), then the
 * program cache's debug counters; counter_read answers in this order. */
static const mi_sdk_counter_t k_counters[] = {
    {"kernel_time", MI_COUNTER_TIMER, "ns", 1.0, 0},
    {"compile_ns", MI_COUNTER_OTHER, "ns", 1.0, 0},
    {"programs_built", MI_COUNTER_OTHER, "", 1.0, 0},
    {"program_disk_hits", MI_COUNTER_OTHER, "", 1.0, 0},
    {"program_disk_corrupt", MI_COUNTER_OTHER, "", 1.0, 0},
    {"program_memory_hits", MI_COUNTER_OTHER, "", 1.0, 0},
    {"buffer_bytes", MI_COUNTER_MEMORY, "bytes", 1.0, 0},
};
#define N_COUNTERS (sizeof k_counters / sizeof k_counters[0])

static int32_t constraint_of(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                             mi_constraint_desc_t *out) {
  return mi__ocl_constraint_desc(&ctx->devs[device], index, out);
}

/* A device's tables: the plugin's knobs and variants, its counters with the device's timer. */
static void describe(ocl_device_t *d) {
  d->tables = mi__ocl_tables;
  mi_sdk_tables_set_counters(&d->tables, d->counters, k_counters, (uint32_t)N_COUNTERS, d->timer_res_ns);
  d->tables.constraint_count = mi__ocl_constraint_count();
  d->tables.constraint = constraint_of;
}

static const mi_sdk_tables_t *tables_of(const mi_plugin_ctx_t *ctx, uint32_t device) {
  return &ctx->devs[device].tables;
}

static int32_t p_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  mi_plugin_ctx_t *ctx;
  int32_t st;
  uint32_t i;
  if (!out) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "create: out is NULL");
  *out = NULL;
  ctx = calloc(1, sizeof *ctx);
  if (!ctx) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  ctx->sdk.name = OCL_PLUGIN_NAME;
  ctx->sdk.tables_of = tables_of;
  ctx->host = host;
  mi__ocl_cache_dir_init(ctx);
  st = mi__ocl_devices_open(ctx, err);
  if (st != MI_OK) {
    mi__ocl_devices_close(ctx);
    free(ctx);
    return st;
  }
  for (i = 0; i < ctx->sdk.device_count; i++) describe(&ctx->devs[i]);
  *out = ctx;
  return MI_OK;
}

static void p_destroy(mi_plugin_ctx_t *ctx) {
  if (!ctx) return;
  mi__ocl_devices_close(ctx);
  free(ctx);
}

static int32_t p_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                             mi_error_t *err) {
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  return mi_sdk_fill(out, &ctx->devs[device].desc, sizeof ctx->devs[device].desc);
}

static int32_t p_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                              mi_buffer_t **out, mi_error_t *err) {
  mi_buffer_t *b;
  cl_int rc;
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  *out = NULL;
  if (bytes > ctx->devs[device].desc.max_buffer_bytes && ctx->devs[device].desc.max_buffer_bytes)
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "buffer_alloc: %llu bytes exceed "
                          "CL_DEVICE_MAX_MEM_ALLOC_SIZE", (unsigned long long)bytes);
  b = calloc(1, sizeof *b);
  if (!b) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  b->mem = clCreateBuffer(ctx->devs[device].ctx, CL_MEM_READ_WRITE, bytes ? (size_t)bytes : 4, NULL, &rc);
  if (!b->mem) {
    free(b);
    return mi__ocl_fail(err, "clCreateBuffer", rc);
  }
  b->bytes = bytes;
  b->device = device;
  ctx->devs[device].bytes_allocated += bytes;
  *out = b;
  return MI_OK;
}

static int32_t buf_check(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *p,
                         uint64_t bytes, mi_error_t *err) {
  if (!ctx || !b || (!p && bytes)) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "opencl: NULL argument");
  if (off > b->bytes || bytes > b->bytes - off)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "opencl: range %llu+%llu outside a buffer of %llu bytes",
                          (unsigned long long)off, (unsigned long long)bytes, (unsigned long long)b->bytes);
  return MI_OK;
}

static int32_t p_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *src,
                              uint64_t bytes, mi_error_t *err) {
  cl_int rc;
  int32_t st = buf_check(ctx, b, off, src, bytes, err);
  if (st != MI_OK || bytes == 0) return st;
  rc = clEnqueueWriteBuffer(ctx->devs[b->device].queue, b->mem, CL_TRUE, (size_t)off, (size_t)bytes,
                            src, 0, NULL, NULL);
  return rc == CL_SUCCESS ? MI_OK : mi__ocl_fail(err, "clEnqueueWriteBuffer", rc);
}

static int32_t p_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, void *dst,
                             uint64_t bytes, mi_error_t *err) {
  cl_int rc;
  int32_t st = buf_check(ctx, b, off, dst, bytes, err);
  if (st != MI_OK || bytes == 0) return st;
  rc = clEnqueueReadBuffer(ctx->devs[b->device].queue, b->mem, CL_TRUE, (size_t)off, (size_t)bytes,
                           dst, 0, NULL, NULL);
  return rc == CL_SUCCESS ? MI_OK : mi__ocl_fail(err, "clEnqueueReadBuffer", rc);
}

static void p_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b) {
  if (!b) return;
  if (ctx && b->device < ctx->sdk.device_count) ctx->devs[b->device].bytes_allocated -= b->bytes;
  clReleaseMemObject(b->mem);
  free(b);
}

static int32_t p_check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                              const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  const ocl_variant_t *v;
  ocl_knobs_t kn;
  int32_t st = mi_sdk_check_device(ctx, device, ctx, err);
  if (st != MI_OK) return st;
  if (knob_count > 0 && !knobs) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "check_config: knobs is NULL");
  if (!variant_id || !(v = mi__ocl_variant_find(variant_id)))
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "opencl: unknown variant '%s'",
                          variant_id ? variant_id : "(null)");
  return mi__ocl_knobs_resolve(&ctx->devs[device], v, knobs, knob_count, &kn, err);
}

static int32_t p_counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  const ocl_device_t *d;
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (index >= N_COUNTERS) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "opencl: no counter %u", index);
  d = &ctx->devs[device];
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.has_value = 1;
  switch (index) {
  case 0: s.has_value = d->has_run; s.value = (double)d->run_ns_total; break;
  case 1: s.value = (double)d->compile_ns; break;
  case 2: s.value = (double)d->built_from_source; break;
  case 3: s.value = (double)d->disk_hits; break;
  case 4: s.value = (double)d->disk_corrupt; break;
  case 5: s.value = (double)d->mem_hits; break;
  default: s.value = (double)d->bytes_allocated; break;
  }
  return mi_sdk_fill(out, &s, sizeof s);
}

static const mi_plugin_api_t k_api = {
    sizeof(mi_plugin_api_t), MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR, OCL_PLUGIN_NAME,
    OCL_PLUGIN_VERSION, p_create, p_destroy, mi_sdk_device_count, p_device_info,
    mi_sdk_knob_count, mi_sdk_knob_desc, mi_sdk_variant_count, mi_sdk_variant_desc,
    p_buffer_alloc, p_buffer_write, p_buffer_read, p_buffer_free, mi__ocl_kernel_prepare,
    mi__ocl_kernel_run, mi__ocl_kernel_release, mi_sdk_constraint_count, mi_sdk_constraint_desc,
    p_check_config, mi_sdk_counter_count, mi_sdk_counter_desc, p_counter_read, NULL};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host, mi_error_t *err) {
  if (!host || host->abi_major != MI_ABI_VERSION_MAJOR) {
    mi_sdk_error(err, MI_ERR_ABI, "opencl: speaks ABI major 1 only");
    return NULL;
  }
  return &k_api;
}
