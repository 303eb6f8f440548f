/* device_features.c - device fingerprints as JSON and the software-stack fingerprint. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "metainfer/mi_measure.h"

MI_API char *mi_device_fingerprint_json(const mi_device_fingerprint_t *f) {
  static const char *const kinds[] = {"cpu", "gpu", "npu", "other"};
  const mi_device_desc_t *d;
  mi__sbuf_t b = {0};
  if (!f) return NULL;
  d = &f->desc;
  mi__sbuf_printf(&b, "{\"hash\":\"%s\",\"name\":", f->hash);
  mi__sbuf_json_string(&b, d->name);
  mi__sbuf_printf(&b, ",\"vendor\":");
  mi__sbuf_json_string(&b, d->vendor);
  mi__sbuf_printf(&b, ",\"kind\":\"%s\",\"driver\":", kinds[d->kind >= 0 && d->kind <= 3 ? d->kind : 3]);
  mi__sbuf_json_string(&b, d->driver_version);
  mi__sbuf_printf(&b, ",\"isa\":");
  mi__sbuf_json_string(&b, d->isa);
  mi__sbuf_printf(&b,
                  ",\"compute_units\":%u,\"global_memory_bytes\":%llu,\"cache_bytes\":%llu,"
                  "\"gemm_gflops\":",
                  d->compute_units,
                  (unsigned long long)d->global_memory_bytes, (unsigned long long)d->cache_bytes);
  mi__sbuf_json_double(&b, f->gemm_gflops);
  mi__sbuf_printf(&b, ",\"add_gbs\":");
  mi__sbuf_json_double(&b, f->add_gbs);
  mi__sbuf_printf(&b, ",\"probes_us\":{");
  for (int32_t i = 0; i < MI_PROBE_COUNT; i++) {
    mi__sbuf_printf(&b, "%s\"%s\":", i ? "," : "", mi_probe_name(i));
    mi__sbuf_json_double(&b, f->probe_us[i]);
  }
  mi__sbuf_printf(&b, "},\"vector\":[");
  for (size_t i = 0; i < sizeof f->vector / sizeof f->vector[0]; i++) {
    mi__sbuf_printf(&b, "%s", i ? "," : "");
    mi__sbuf_json_double(&b, f->vector[i]);
  }
  mi__sbuf_printf(&b, "]}");
  return mi__sbuf_take(&b);
}

MI_API void mi_stack_describe(const char *plugin_name, const char *plugin_version,
                              const mi_device_desc_t *desc, char *out, size_t cap,
                              char hash[17]) {
#if defined(__clang__)
  const char *compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  const char *compiler = "gcc " __VERSION__;
#else
  const char *compiler = "unknown";
#endif
  /* The driver string carries what the plugin links (BLIS, OpenCL platform, Vulkan driver). */
  snprintf(out, cap, "compiler=%s;framework=%s;abi=%d.%d;plugin=%s %s;driver=%s", compiler,
           mi_version(), MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR,
           plugin_name ? plugin_name : "?", plugin_version ? plugin_version : "?",
           desc ? desc->driver_version : "?");
  mi_hash64_hex(mi_hash64(out, strlen(out), MI_HASH64_SEED), hash);
}

MI_API void mi_stack_fallback_describe(mi_plugin_t *plugin, uint32_t device, char *out, size_t cap) {
  mi_device_desc_t desc;
  mi_error_t err = {0};
  if (!out || !cap) return;
  out[0] = 0;
  if (!plugin) return;
  memset(&desc, 0, sizeof desc);
  if (mi_plugin_device_info(plugin, device, &desc, &err) != MI_OK) {
    snprintf(out, cap, "fallback=%s %s (device %u)", plugin->name, plugin->version, device);
    return;
  }
  snprintf(out, cap, "fallback=%s %s (%s, driver %s)", plugin->name, plugin->version, desc.name,
           desc.driver_version);
}

MI_API void mi_stack_with_fallback(const char *stack, const char *fallback, char *out, size_t cap,
                                   char hash[17]) {
  snprintf(out, cap, "%s%s%s", stack ? stack : "", fallback && fallback[0] ? ";" : "",
           fallback ? fallback : "");
  mi_hash64_hex(mi_hash64(out, strlen(out), MI_HASH64_SEED), hash);
}
