/* vk_plugin.c - the Vulkan plugin's entry point and function table: instances, descriptions,
 * buffers, counters and configuration checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

#define VK_PLUGIN_VERSION "0.1.0"

typedef struct vk_ctx_host {
  mi_plugin_ctx_t ctx;
  mi_host_api_t host; /* the host's table, copied up to the size it declared */
} vk_ctx_host_t;

static int32_t p_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  vk_ctx_host_t *c;
  int32_t st;
  if (!out) return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: create: out is NULL");
  *out = NULL;
  if (!(c = calloc(1, sizeof *c))) return mi__vk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  if (host && host->struct_size >= sizeof(uint32_t)) {
    size_t n = host->struct_size < sizeof c->host ? host->struct_size : sizeof c->host;
    memcpy(&c->host, host, n);
    c->host.struct_size = (uint32_t)n;
    c->ctx.host = &c->host;
  }
  st = mi__vk_devices_open(&c->ctx, err);
  if (st != MI_OK) {
    mi__vk_devices_close(&c->ctx);
    free(c);
    return st;
  }
  *out = &c->ctx;
  return MI_OK;
}

static void p_destroy(mi_plugin_ctx_t *ctx) {
  if (!ctx) return;
  mi__vk_devices_close(ctx);
  free(ctx); /* ctx is the first member of vk_ctx_host_t */
}

static int32_t dev_check(mi_plugin_ctx_t *ctx, uint32_t device, const void *out, mi_error_t *err) {
  if (!ctx || !out) return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: NULL argument");
  if (device >= ctx->ndev)
    return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: no device %u (%u devices)", device,
                         ctx->ndev);
  return MI_OK;
}

static int32_t p_device_count(mi_plugin_ctx_t *ctx, uint32_t *count, mi_error_t *err) {
  if (!ctx || !count) return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: NULL argument");
  *count = ctx->ndev;
  return MI_OK;
}

static int32_t p_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                             mi_error_t *err) {
  int32_t st = dev_check(ctx, device, out, err);
  if (st != MI_OK) return st;
  return mi_sdk_fill(out, &ctx->devs[device].desc, sizeof ctx->devs[device].desc);
}

static int32_t p_knob_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err) {
  int32_t st = dev_check(ctx, device, count, err);
  if (st == MI_OK) *count = mi__vk_knob_count();
  return st;
}

static int32_t p_knob_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                           mi_knob_desc_t *out, mi_error_t *err) {
  int32_t st = dev_check(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (index >= mi__vk_knob_count())
    return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: no knob %u (%u knobs)", index,
                         mi__vk_knob_count());
  return mi__vk_knob_desc(&ctx->devs[device], index, out);
}

static int32_t p_variant_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                               mi_error_t *err) {
  int32_t st = dev_check(ctx, device, count, err);
  if (st == MI_OK) *count = mi__vk_variant_count_on(&ctx->devs[device]);
  return st;
}

static int32_t p_variant_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_variant_desc_t *out, mi_error_t *err) {
  static const char *const names[K_COUNT] = {"local_x", "local_y", "tile_k", "unroll", "reg_m", "reg_n"};
  const vk_variant_t *v;
  mi_variant_desc_t d;
  size_t n = 0;
  int k;
  int32_t st = dev_check(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (index >= mi__vk_variant_count_on(&ctx->devs[device]) || !(v = mi__vk_variant(index)))
    return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: no variant %u", index);
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  snprintf(d.id, sizeof d.id, "%s", v->id);
  snprintf(d.op_type, sizeof d.op_type, "%s", v->op);
  snprintf(d.description, sizeof d.description, "%s", v->description);
  /* FP16 variants take FP32 buffers but compute in FP16: they declare the FP16 precision. */
  d.dtype_mask = MI_DTYPE_BIT(v->fp16 ? MI_DTYPE_FLOAT16 : MI_DTYPE_FLOAT32);
  d.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  d.fuse_mask = v->fuse;
  for (k = 0; k < K_COUNT; k++)
    if (v->knob_mask & (1u << k))
      n += (size_t)snprintf(d.knobs + n, sizeof d.knobs - n, "%s%s", n ? "," : "", names[k]);
  return mi_sdk_fill(out, &d, sizeof d);
}

static int32_t p_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                              mi_buffer_t **out, mi_error_t *err) {
  return mi__vk_buffer_alloc(ctx, device, bytes, out, err);
}

static int32_t p_constraint_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                                  mi_error_t *err) {
  int32_t st = dev_check(ctx, device, count, err);
  if (st == MI_OK) *count = mi__vk_constraint_count();
  return st;
}

static int32_t p_constraint_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                                 mi_constraint_desc_t *out, mi_error_t *err) {
  int32_t st = dev_check(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (index >= mi__vk_constraint_count())
    return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: no constraint %u", index);
  return mi__vk_constraint_desc(&ctx->devs[device], index, out);
}

static int32_t p_check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                              const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  const vk_variant_t *v;
  uint32_t spec[VK_NSPEC];
  int32_t st = dev_check(ctx, device, ctx, err);
  if (st != MI_OK) return st;
  if (knob_count > 0 && !knobs)
    return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: check_config: knobs is NULL");
  if (!variant_id || !(v = mi__vk_variant_find(variant_id)))
    return mi__vk_errorf(err, MI_ERR_INVALID_CONFIG, "vulkan: unknown variant '%s'",
                         variant_id ? variant_id : "(null)");
  if (v->fp16 && !ctx->devs[device].has_fp16)
    return mi__vk_errorf(err, MI_ERR_INVALID_CONFIG, "vulkan: %s needs shaderFloat16 and "
                         "storageBuffer16BitAccess, which %s lacks", v->id, ctx->devs[device].props.deviceName);
  return mi__vk_knobs_resolve(&ctx->devs[device], v, knobs, knob_count, spec, err);
}

/* Cumulative since create: device time from timestamp queries, host time spent creating
 * pipelines (the driver's compile), and the host wall time of each kernel's first run. */
static const struct {
  const char *name;
  int kind;
  const char *unit;
} k_counters[] = {
    {"device_time", MI_COUNTER_TIMER, "ns"},
    {"pipeline_create_time", MI_COUNTER_TIMER, "ns"},
    {"first_run_time", MI_COUNTER_TIMER, "ns"},
    {"buffer_bytes", MI_COUNTER_MEMORY, "bytes"},
};
#define N_COUNTERS (sizeof k_counters / sizeof k_counters[0])

static int32_t p_counter_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err) {
  int32_t st = dev_check(ctx, device, count, err);
  if (st == MI_OK) *count = (uint32_t)N_COUNTERS;
  return st;
}

static int32_t p_counter_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_counter_desc_t *out, mi_error_t *err) {
  mi_counter_desc_t d;
  int32_t st = dev_check(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (index >= N_COUNTERS) return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: no counter %u", index);
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  snprintf(d.name, sizeof d.name, "%s", k_counters[index].name);
  snprintf(d.unit, sizeof d.unit, "%s", k_counters[index].unit);
  d.kind = k_counters[index].kind;
  d.resolution = index == 0 && ctx->devs[device].ts_period > 0 ? ctx->devs[device].ts_period : 1.0;
  return mi_sdk_fill(out, &d, sizeof d);
}

static int32_t p_counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  const vk_device_t *d;
  int32_t st = dev_check(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (index >= N_COUNTERS) return mi__vk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: no counter %u", index);
  d = &ctx->devs[device];
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.has_value = 1;
  s.timestamp_ns = mi__vk_now_ns();
  switch (index) {
  case 0: s.has_value = d->has_timer; s.value = (double)d->device_ns; break;
  case 1: s.value = (double)d->pipeline_ns; break;
  case 2: s.value = (double)d->first_run_ns; break;
  default: s.value = (double)d->bytes_allocated; break;
  }
  return mi_sdk_fill(out, &s, sizeof s);
}

static const mi_plugin_api_t k_api = {
    sizeof(mi_plugin_api_t), MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR, VK_PLUGIN_NAME,
    VK_PLUGIN_VERSION, p_create, p_destroy, p_device_count, p_device_info, p_knob_count,
    p_knob_desc, p_variant_count, p_variant_desc, p_buffer_alloc, mi__vk_buffer_write,
    mi__vk_buffer_read, mi__vk_buffer_free, mi__vk_kernel_prepare, mi__vk_kernel_run,
    mi__vk_kernel_release, p_constraint_count, p_constraint_desc, p_check_config,
    p_counter_count, p_counter_desc, p_counter_read, NULL};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host, mi_error_t *err) {
  if (!host || host->abi_major != MI_ABI_VERSION_MAJOR) {
    mi_sdk_error(err, MI_ERR_ABI, "vulkan: speaks ABI major 1 only");
    return NULL;
  }
  return &k_api;
}
