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

/* Cumulative since create: device time from timestamp queries, host time spent creating
 * pipelines (the driver's compile), and the host wall time of each kernel's first run; then the
 * pipeline cache's: pipelines this instance created, how many of them the driver found in the
 * VkPipelineCache (no sample without creation feedback), and the bytes loaded from disk.
 * counter_read answers in this order. */
static const mi_sdk_counter_t k_counters[] = {
    {"device_time", MI_COUNTER_TIMER, "ns", 1.0, 0},
    {"pipeline_create_time", MI_COUNTER_TIMER, "ns", 1.0, 0},
    {"first_run_time", MI_COUNTER_TIMER, "ns", 1.0, 0},
    {"buffer_bytes", MI_COUNTER_MEMORY, "bytes", 1.0, 0},
    {"pipelines_created", MI_COUNTER_OTHER, "", 1.0, 0},
    {"pipeline_cache_hits", MI_COUNTER_OTHER, "", 1.0, 0},
    {"pipeline_cache_loaded", MI_COUNTER_OTHER, "bytes", 1.0, 0},
};
#define N_COUNTERS (sizeof k_counters / sizeof k_counters[0])

static int32_t p_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  vk_ctx_host_t *c;
  int32_t st;
  uint32_t i;
  if (!out) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: create: out is NULL");
  *out = NULL;
  if (!(c = calloc(1, sizeof *c))) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  if (host && host->struct_size >= sizeof(uint32_t)) {
    size_t n = host->struct_size < sizeof c->host ? host->struct_size : sizeof c->host;
    memcpy(&c->host, host, n);
    c->host.struct_size = (uint32_t)n;
    c->ctx.host = &c->host;
  }
  c->ctx.sdk.name = VK_PLUGIN_NAME;
  st = mi__vk_devices_open(&c->ctx, err);
  if (st != MI_OK) {
    mi__vk_devices_close(&c->ctx);
    free(c);
    return st;
  }
  /* Each device: the variants it can run, its own counters and timer. */
  for (i = 0; i < c->ctx.sdk.device_count; i++) {
    vk_device_t *d = &c->ctx.devs[i];
    d->tables = *mi__vk_tables(d);
    mi_sdk_tables_set_counters(&d->tables, d->counters, k_counters, (uint32_t)N_COUNTERS, d->ts_period);
  }
  if (c->ctx.devs)
    mi_sdk_set_devices(&c->ctx.sdk, &c->ctx.devs[0].tables, &c->ctx.devs[0].desc, sizeof c->ctx.devs[0]);
  *out = &c->ctx;
  return MI_OK;
}

static void p_destroy(mi_plugin_ctx_t *ctx) {
  if (!ctx) return;
  mi__vk_devices_close(ctx);
  free(ctx); /* ctx is the first member of vk_ctx_host_t */
}

static int32_t p_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                              mi_buffer_t **out, mi_error_t *err) {
  return mi__vk_buffer_alloc(ctx, device, bytes, out, err);
}

static int32_t p_check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                              const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  const mi_sdk_variant_t *sv = NULL;
  const vk_variant_t *v;
  uint32_t spec[VK_NSPEC];
  int32_t st = mi_sdk_config_variant(ctx, device, mi__vk_tables_all(), variant_id, knobs,
                                     knob_count, &sv, err);
  if (st != MI_OK || !sv) return st; /* no variant: auto, the plugin picks */
  v = (const vk_variant_t *)sv;
  if (v->fp16 && !ctx->devs[device].has_fp16)
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                         "vulkan: %s needs shaderFloat16 and "
                         "storageBuffer16BitAccess, which %s lacks",
                         v->v.id, ctx->devs[device].props.deviceName);
  return mi__vk_knobs_resolve(&ctx->devs[device], v, knobs, knob_count, spec, err);
}

static int32_t p_counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  const vk_device_t *d;
  int32_t st = mi_sdk_counter_sample(ctx, device, index, out, &s, err);
  if (st != MI_OK) return st;
  d = &ctx->devs[device];
  s.timestamp_ns = mi__vk_now_ns();
  switch (index) {
  case 0:
    s.has_value = d->has_timer;
    s.value = (double)d->device_ns;
    break;
  case 1: s.value = (double)d->pipeline_ns; break;
  case 2: s.value = (double)d->first_run_ns; break;
  case 3: s.value = (double)d->bytes_allocated; break;
  case 4: s.value = (double)d->pipelines_created; break;
  case 5:
    s.has_value = d->shared->has_feedback;
    s.value = (double)d->pipeline_cache_hits;
    break;
  default: s.value = (double)d->cache_loaded_bytes; break;
  }
  return mi_sdk_fill(out, &s, sizeof s);
}

static const mi_plugin_api_t k_api = {
    sizeof(mi_plugin_api_t), MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR, VK_PLUGIN_NAME,
    VK_PLUGIN_VERSION, p_create, p_destroy, mi_sdk_device_count, mi_sdk_device_info,
    mi_sdk_knob_count, mi_sdk_knob_desc, mi_sdk_variant_count, mi_sdk_variant_desc,
    p_buffer_alloc, mi__vk_buffer_write, mi__vk_buffer_read, mi__vk_buffer_free,
    mi__vk_kernel_prepare, mi__vk_kernel_run, mi__vk_kernel_release, mi_sdk_constraint_count,
    mi_sdk_constraint_desc, p_check_config, mi_sdk_counter_count, mi_sdk_counter_desc, p_counter_read,
    NULL, NULL /* buffer_view: no views (VkBuffer offsets not threaded through); its Concats copy */,
    mi__vk_kernel_enqueue, mi__vk_device_sync,
    NULL /* buffer_wrap: device memory is the driver's; transfers copy */};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host, mi_error_t *err) {
  return mi_sdk_entry(host, &k_api, err);
}
