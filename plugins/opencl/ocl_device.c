/* ocl_device.c - finds every OpenCL device through the ICD loader and describes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

static void info_str(cl_device_id d, cl_device_info what, char *out, size_t size) {
  size_t got = 0;
  out[0] = '\0';
  if (clGetDeviceInfo(d, what, size, out, &got) != CL_SUCCESS) {
    /* too long for our field: read it whole and cut */
    char *tmp;
    if (clGetDeviceInfo(d, what, 0, NULL, &got) != CL_SUCCESS || got == 0) return;
    tmp = malloc(got + 1);
    if (!tmp) return;
    if (clGetDeviceInfo(d, what, got, tmp, NULL) == CL_SUCCESS) {
      tmp[got] = '\0';
      snprintf(out, size, "%s", tmp);
    }
    free(tmp);
  }
  out[size - 1] = '\0';
}

static uint64_t info_u64(cl_device_id d, cl_device_info what) {
  cl_ulong v = 0;
  return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? (uint64_t)v : 0;
}

static uint32_t info_u32(cl_device_id d, cl_device_info what) {
  cl_uint v = 0;
  return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? (uint32_t)v : 0;
}

static int has_extension(cl_device_id d, const char *ext) {
  size_t got = 0;
  char *s;
  int found = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &got) != CL_SUCCESS || got == 0) return 0;
  s = malloc(got + 1);
  if (!s) return 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, got, s, NULL) == CL_SUCCESS) {
    const char *p = s;
    size_t n = strlen(ext);
    s[got] = '\0';
    while ((p = strstr(p, ext)) != NULL) {
      if ((p == s || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
        found = 1;
        break;
      }
      p += n;
    }
  }
  free(s);
  return found;
}

static void describe(ocl_device_t *d) {
  mi_device_desc_t *o = &d->desc;
  cl_device_type type = 0;
  size_t wg = 0;
  char cver[64];
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  o->kind = (type & CL_DEVICE_TYPE_GPU)           ? MI_DEVICE_GPU
            : (type & CL_DEVICE_TYPE_CPU)         ? MI_DEVICE_CPU
            : (type & CL_DEVICE_TYPE_ACCELERATOR) ? MI_DEVICE_NPU
                                                  : MI_DEVICE_OTHER;
  info_str(d->id, CL_DEVICE_NAME, o->name, sizeof o->name);
  info_str(d->id, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
  info_str(d->id, CL_DRIVER_VERSION, o->driver_version, sizeof o->driver_version);
  info_str(d->id, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
  snprintf(o->isa, sizeof o->isa, "%s", cver);
  clGetPlatformInfo(d->platform, CL_PLATFORM_VERSION, sizeof d->platform_version,
                    d->platform_version, NULL);
  d->platform_version[sizeof d->platform_version - 1] = '\0';
  o->global_memory_bytes = info_u64(d->id, CL_DEVICE_GLOBAL_MEM_SIZE);
  d->local_mem = info_u64(d->id, CL_DEVICE_LOCAL_MEM_SIZE);
  o->local_memory_bytes = d->local_mem;
  o->cache_bytes = info_u64(d->id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  o->compute_units = info_u32(d->id, CL_DEVICE_MAX_COMPUTE_UNITS);
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  d->max_wg = wg ? wg : 1;
  o->max_threads = (uint32_t)(d->max_wg > 0xffffffffu ? 0xffffffffu : d->max_wg);
  d->has_fp16 = has_extension(d->id, "cl_khr_fp16");
  /* FP16 is not declared even where cl_khr_fp16 exists: no variant computes in FP16 yet, and a
   * declared dtype that every kernel refuses would send the tuner searching a dead end */
  o->dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | MI_DTYPE_BIT(MI_DTYPE_INT64);
  o->layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  o->channel_alignment = 1;
  o->buffer_alignment = info_u32(d->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  o->max_buffer_bytes = info_u64(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  /* no peak figures: OpenCL declares neither FLOP rate nor bandwidth, and we do not guess */
  d->timer_res_ns = (double)info_u64(d->id, CL_DEVICE_PROFILING_TIMER_RESOLUTION);
  if (d->timer_res_ns <= 0) d->timer_res_ns = 1;
}

static int32_t open_one(mi_plugin_ctx_t *ctx, ocl_device_t *d, mi_error_t *err) {
  cl_int rc;
  d->ctx = clCreateContext(NULL, 1, &d->id, NULL, NULL, &rc);
  if (!d->ctx) return mi__ocl_fail(err, "clCreateContext", rc);
  d->queue = clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &rc);
  if (!d->queue) return mi__ocl_fail(err, "clCreateCommandQueue", rc);
  d->dummy = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, 16, NULL, &rc);
  if (!d->dummy) return mi__ocl_fail(err, "clCreateBuffer", rc);
  describe(d);
  /* a budget below the device's local memory: headroom, or a smaller target's limit */
  {
    const char *lim = NULL;
    if (ctx->host && ctx->host->get_setting)
      lim = ctx->host->get_setting(ctx->host->host_ctx, "MI_OPENCL_LOCAL_MEM_LIMIT");
    if (!lim) lim = getenv("MI_OPENCL_LOCAL_MEM_LIMIT");
    if (lim && *lim) {
      char *end = NULL;
      unsigned long long v = strtoull(lim, &end, 10);
      if (end && *end == '\0' && v > 0 && v < d->local_mem) d->local_mem = v;
    }
  }
  mi__ocl_log(ctx, MI_LOG_DEBUG, "device %s (%s, driver %s, %s, fp16 %s)", d->desc.name,
              d->desc.vendor, d->desc.driver_version, d->desc.isa, d->has_fp16 ? "yes" : "no");
  return MI_OK;
}

int32_t mi__ocl_devices_open(mi_plugin_ctx_t *ctx, mi_error_t *err) {
  cl_uint np = 0, i, total = 0;
  cl_platform_id *plats = NULL;
  cl_int rc = clGetPlatformIDs(0, NULL, &np);
  int32_t st = MI_OK;
  if (rc == CL_PLATFORM_NOT_FOUND_KHR || (rc == CL_SUCCESS && np == 0)) return MI_OK;
  if (rc != CL_SUCCESS) return mi__ocl_fail(err, "clGetPlatformIDs", rc);
  plats = calloc(np, sizeof *plats);
  if (!plats) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  rc = clGetPlatformIDs(np, plats, NULL);
  if (rc != CL_SUCCESS) {
    st = mi__ocl_fail(err, "clGetPlatformIDs", rc);
    goto done;
  }
  for (i = 0; i < np; i++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS) total += nd;
  }
  if (total == 0) goto done;
  ctx->devs = calloc(total, sizeof *ctx->devs);
  if (!ctx->devs) {
    st = mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    goto done;
  }
  for (i = 0; i < np; i++) {
    cl_uint nd = 0, j;
    cl_device_id ids[64];
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS) continue;
    for (j = 0; j < nd && j < 64 && ctx->sdk.device_count < total; j++) {
      ocl_device_t *d = &ctx->devs[ctx->sdk.device_count];
      mi_error_t e1;
      d->platform = plats[i];
      d->id = ids[j];
      if (open_one(ctx, d, &e1) != MI_OK) {
        /* a device that cannot take a context is left out, not fatal for the others */
        mi__ocl_log(ctx, MI_LOG_WARN, "skipping a device: %s", e1.message);
        if (d->dummy) clReleaseMemObject(d->dummy);
        if (d->queue) clReleaseCommandQueue(d->queue);
        if (d->ctx) clReleaseContext(d->ctx);
        memset(d, 0, sizeof *d);
        continue;
      }
      ctx->sdk.device_count++;
    }
  }
done:
  free(plats);
  return st;
}

void mi__ocl_devices_close(mi_plugin_ctx_t *ctx) {
  uint32_t i;
  int j;
  for (i = 0; i < ctx->sdk.device_count; i++) {
    ocl_device_t *d = &ctx->devs[i];
    mi__ocl_pending_drop(d);
    for (j = 0; j < d->nprogs; j++) clReleaseProgram(d->progs[j].prog);
    free(d->progs);
    if (d->dummy) clReleaseMemObject(d->dummy);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->ctx) clReleaseContext(d->ctx);
  }
  free(ctx->devs);
  ctx->devs = NULL;
  ctx->sdk.device_count = 0;
}
