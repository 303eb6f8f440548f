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

static int32_t p_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  mi_plugin_ctx_t *ctx;
  int32_t st;
  uint32_t i;
  if (!out) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "create: out is NULL");
  *out = NULL;
  ctx = calloc(1, sizeof *ctx);
  if (!ctx) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  ctx->sdk.name = OCL_PLUGIN_NAME;
  ctx->host = host;
  mi__ocl_cache_dir_init(ctx);
  st = mi__ocl_devices_open(ctx, err);
  if (st != MI_OK) {
    mi__ocl_devices_close(ctx);
    free(ctx);
    return st;
  }
  /* Each device: the plugin's tables with its own counters and timer. */
  for (i = 0; i < ctx->sdk.device_count; i++) {
    ocl_device_t *d = &ctx->devs[i];
    d->tables = mi__ocl_tables;
    mi_sdk_tables_set_counters(&d->tables, d->counters, k_counters, (uint32_t)N_COUNTERS, d->timer_res_ns);
  }
  if (ctx->devs) mi_sdk_set_devices(&ctx->sdk, &ctx->devs[0].tables, &ctx->devs[0].desc, sizeof ctx->devs[0]);
  *out = ctx;
  return MI_OK;
}

static void p_destroy(mi_plugin_ctx_t *ctx) {
  if (!ctx) return;
  mi__ocl_devices_close(ctx);
  free(ctx);
}

static int32_t p_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                              mi_buffer_t **out, mi_error_t *err) {
  mi_buffer_t *b;
  cl_int rc;
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  *out = NULL;
  if (bytes > ctx->devs[device].desc.max_buffer_bytes && ctx->devs[device].desc.max_buffer_bytes)
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY,
                         "buffer_alloc: %llu bytes exceed "
                         "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                         (unsigned long long)bytes);
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

/* A blocking copy into the buffer from src, or out of it into dst (the other one NULL). */
static int32_t transfer(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *src,
                        void *dst, uint64_t bytes, mi_error_t *err) {
  cl_int rc;
  int32_t st = buf_check(ctx, b, off, src ? src : dst, bytes, err);
  if (st != MI_OK || bytes == 0) return st;
  if (src)
    rc = clEnqueueWriteBuffer(ctx->devs[b->device].queue, b->mem, CL_TRUE, (size_t)off,
                              (size_t)bytes, src, 0, NULL, NULL);
  else
    rc = clEnqueueReadBuffer(ctx->devs[b->device].queue, b->mem, CL_TRUE, (size_t)off,
                             (size_t)bytes, dst, 0, NULL, NULL);
  if (rc == CL_SUCCESS) return MI_OK;
  return mi__ocl_fail(err, src ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", rc);
}

static int32_t p_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *src,
                              uint64_t bytes, mi_error_t *err) {
  return transfer(ctx, b, off, src, NULL, bytes, err);
}

static int32_t p_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, void *dst,
                             uint64_t bytes, mi_error_t *err) {
  return transfer(ctx, b, off, NULL, dst, bytes, err);
}

static void p_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b) {
  if (!b) return;
  if (ctx && b->device < ctx->sdk.device_count) ctx->devs[b->device].bytes_allocated -= b->bytes;
  clReleaseMemObject(b->mem);
  free(b);
}

static int32_t p_check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                              const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  const mi_sdk_variant_t *v = NULL;
  ocl_knobs_t kn;
  int32_t st = mi_sdk_config_variant(ctx, device, NULL, variant_id, knobs, knob_count, &v, err);
  if (st != MI_OK || !v) return st; /* no variant: auto, the plugin picks (default_variant) */
  return mi__ocl_knobs_resolve(&ctx->devs[device], (const ocl_variant_t *)v, knobs, knob_count, &kn, err);
}

static int32_t p_counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  const ocl_device_t *d;
  int32_t st = mi_sdk_counter_sample(ctx, device, index, out, &s, err);
  if (st != MI_OK) return st;
  d = &ctx->devs[device];
  switch (index) {
  case 0:
    s.has_value = d->has_run;
    s.value = (double)d->run_ns_total;
    break;
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
    OCL_PLUGIN_VERSION, p_create, p_destroy, mi_sdk_device_count, mi_sdk_device_info,
    mi_sdk_knob_count, mi_sdk_knob_desc, mi_sdk_variant_count, mi_sdk_variant_desc,
    p_buffer_alloc, p_buffer_write, p_buffer_read, p_buffer_free, mi__ocl_kernel_prepare,
    mi__ocl_kernel_run, mi__ocl_kernel_release, mi_sdk_constraint_count, mi_sdk_constraint_desc,
    p_check_config, mi_sdk_counter_count, mi_sdk_counter_desc, p_counter_read, NULL,
    NULL /* buffer_view: sub-buffers would need cl_mem regions; its Concats copy */,
    mi__ocl_kernel_enqueue, mi__ocl_device_sync,
    NULL /* buffer_wrap: a device's memory is not the host's in general; transfers copy */};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host, mi_error_t *err) {
  return mi_sdk_entry(host, &k_api, err);
}
