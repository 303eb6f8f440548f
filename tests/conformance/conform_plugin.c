/* conform_plugin.c - a small correct plugin (Relu and Add on host memory) that, built with
 * -DBREAK=N, breaks exactly conformance rule N; the conformance tests prove each rule catches
 * its break and no other rule does. Built with -DFULL_RANGE_KNOB=1 it also declares a valid
 * knob spanning all of int64, which mi-conform's own arithmetic must survive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi_plugin.h"

#ifndef BREAK
#define BREAK 0
#endif
/* Built with -DZERO_DEVICES=1, the plugin loads but offers no device: every rule must still
 * pass or skip, never crash. */
#ifndef ZERO_DEVICES
#define ZERO_DEVICES 0
#endif
static const uint32_t k_device_count = ZERO_DEVICES ? 0u : 1u;
#ifndef FULL_RANGE_KNOB
#define FULL_RANGE_KNOB 0
#endif

#if BREAK == 1 /* R1: a second exported symbol */
MI_PLUGIN_EXPORT int conform_leaked_symbol = 1;
#endif

struct mi_plugin_ctx {
  uint64_t busy_ns; /* cumulative kernel time: the timer counter */
  const mi_host_api_t *host;
};
struct mi_buffer {
  uint64_t size;
  unsigned char *data;
};
struct mi_kernel {
  int op; /* 0 Relu, 1 Add */
  int64_t count;
  int64_t unroll;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int32_t bad_device(uint32_t device, mi_error_t *err) {
#if BREAK == 4 /* R4: every device index accepted */
  (void)device;
  (void)err;
  return MI_OK;
#else
  if (device >= k_device_count)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: no such device");
  return MI_OK;
#endif
}

static int32_t create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  mi_plugin_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "conform-test: out of memory");
  c->host = host;
#if BREAK == 11 /* R11: leaks on every instance */
  {
    void *volatile lost = malloc(64 * 1024);
    if (lost) memset(lost, 1, 64 * 1024);
  }
#endif
  *out = c;
  return MI_OK;
}

static void destroy(mi_plugin_ctx_t *c) { free(c); }

static int32_t device_count(mi_plugin_ctx_t *c, uint32_t *n, mi_error_t *err) {
  (void)c;
  (void)err;
  *n = k_device_count;
  return MI_OK;
}

static int32_t device_info(mi_plugin_ctx_t *c, uint32_t dev, mi_device_desc_t *out, mi_error_t *err) {
  mi_device_desc_t d;
  (void)c;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kind = MI_DEVICE_CPU;
  strncpy(d.name, "conform-test host memory", sizeof d.name - 1);
  strncpy(d.vendor, "Meta Infer tests", sizeof d.vendor - 1);
  d.compute_units = 1;
  d.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  d.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  d.channel_alignment = 1;
#if BREAK == 3 /* R3: ignores the caller's struct size */
  memcpy((char *)out + 4, (char *)&d + 4, sizeof d - 4);
  return MI_OK;
#else
  return mi_sdk_fill(out, &d, sizeof d);
#endif
}

static int32_t knob_count(mi_plugin_ctx_t *c, uint32_t dev, uint32_t *n, mi_error_t *err) {
  (void)c;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  *n = 1 + FULL_RANGE_KNOB;
  return MI_OK;
}

static int32_t knob_desc(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_knob_desc_t *out,
                         mi_error_t *err) {
  mi_knob_desc_t k;
  (void)c;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  if (i > (uint32_t)FULL_RANGE_KNOB)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: no such knob");
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  if (i == 1) { /* FULL_RANGE_KNOB: every int64 is valid, read and ignored */
    strncpy(k.name, "seed", sizeof k.name - 1);
    strncpy(k.description, "any int64 at all", sizeof k.description - 1);
    k.scope = MI_KNOB_SCOPE_OP;
    k.type = MI_KNOB_INT;
    k.min = INT64_MIN;
    k.max = INT64_MAX;
    k.step = 1;
    return mi_sdk_fill(out, &k, sizeof k);
  }
  strncpy(k.name, "unroll", sizeof k.name - 1);
  strncpy(k.description, "elements per loop iteration", sizeof k.description - 1);
  k.scope = MI_KNOB_SCOPE_OP;
  k.type = MI_KNOB_INT;
  k.min = 1;
  k.max = 4;
  k.step = 1;
#if BREAK == 5 /* R5: default outside the domain */
  k.default_int = 9;
#else
  k.default_int = 1;
#endif
  return mi_sdk_fill(out, &k, sizeof k);
}

static const char *const k_ops[2] = {"Relu", "Add"};

static int32_t variant_count(mi_plugin_ctx_t *c, uint32_t dev, uint32_t *n, mi_error_t *err) {
  (void)c;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  *n = 2;
  return MI_OK;
}

static int32_t variant_desc(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_variant_desc_t *out,
                            mi_error_t *err) {
  mi_variant_desc_t v;
  (void)c;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  if (i >= 2) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: no such variant");
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  strncpy(v.id, i ? "add.loop" : "relu.loop", sizeof v.id - 1);
  strncpy(v.op_type, k_ops[i], sizeof v.op_type - 1);
  v.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  v.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  strncpy(v.knobs, FULL_RANGE_KNOB ? "unroll,seed" : "unroll", sizeof v.knobs - 1);
  return mi_sdk_fill(out, &v, sizeof v);
}

static int32_t buffer_alloc(mi_plugin_ctx_t *c, uint32_t dev, uint64_t bytes, mi_buffer_t **out,
                            mi_error_t *err) {
  mi_buffer_t *b;
  (void)c;
  *out = NULL;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  b = calloc(1, sizeof *b);
  if (!b || !(b->data = calloc(1, bytes ? bytes : 1))) {
    free(b);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "conform-test: out of memory");
  }
  b->size = bytes;
  *out = b;
  return MI_OK;
}

static int out_of_range(const mi_buffer_t *b, uint64_t off, uint64_t n) {
  return off > b->size || n > b->size - off;
}

static int32_t buffer_write(mi_plugin_ctx_t *c, mi_buffer_t *b, uint64_t off, const void *src,
                            uint64_t n, mi_error_t *err) {
  (void)c;
  if (out_of_range(b, off, n))
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: write past the buffer end");
  memcpy(b->data + off, src, n);
  return MI_OK;
}

static int32_t buffer_read(mi_plugin_ctx_t *c, mi_buffer_t *b, uint64_t off, void *dst,
                           uint64_t n, mi_error_t *err) {
  (void)c;
  if (out_of_range(b, off, n)) {
#if BREAK == 9 /* R9: a read past the end "succeeds" (clamped, nothing copied) */
    (void)err;
    return MI_OK;
#else
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: read past the buffer end");
#endif
  }
  memcpy(dst, b->data + off, n);
  return MI_OK;
}

static void buffer_free(mi_plugin_ctx_t *c, mi_buffer_t *b) {
  (void)c;
  if (!b) return;
  free(b->data);
  free(b);
}

static int32_t kernel_prepare(mi_plugin_ctx_t *c, uint32_t dev, const mi_kernel_desc_t *d,
                              mi_kernel_t **out, mi_error_t *err) {
  mi_kernel_t *k;
  int op = -1;
  int64_t unroll;
  (void)c;
  *out = NULL;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  if (d->node_count != 1)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "conform-test: fused groups are not supported");
  for (int i = 0; i < 2; i++)
    if (!strcmp(d->nodes[0]->op_type, k_ops[i])) op = i;
#if BREAK == 10 /* R10: unknown ops are accepted (and do nothing) */
  if (op < 0) op = 0;
#else
  if (op < 0) return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "conform-test: only Relu and Add");
#endif
  if (d->variant_id && d->variant_id[0] && strcmp(d->variant_id, op ? "add.loop" : "relu.loop"))
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "conform-test: unknown variant for this op");
  unroll = mi_sdk_knob_int(d, "unroll", 1);
#if BREAK != 6 /* R6: out-of-domain knob values go unchecked */
  if (unroll < 1 || unroll > 4)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "conform-test: unroll must be in 1..4");
#endif
  if (d->input_count != (op ? 2 : 1) || d->output_count != 1)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "conform-test: unexpected inputs");
  for (int32_t i = 0; i < d->tensor_count; i++)
    if (d->tensors[i]->dtype != MI_DTYPE_FLOAT32)
      return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "conform-test: FP32 only");
  if (op == 1 && mi_sdk_numel(d->tensors[d->inputs[0]]) != mi_sdk_numel(d->tensors[d->inputs[1]]))
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "conform-test: Add without broadcasting only");
  k = calloc(1, sizeof *k);
  if (!k) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "conform-test: out of memory");
  k->op = op;
  k->count = mi_sdk_numel(d->tensors[d->outputs[0]]);
  k->unroll = unroll;
  *out = k;
  return MI_OK;
}

static int32_t kernel_run(mi_plugin_ctx_t *c, mi_kernel_t *k, mi_buffer_t *const *in, int32_t nin,
                          mi_buffer_t *const *out, int32_t nout, mi_run_stats_t *stats,
                          mi_error_t *err) {
  uint64_t t0 = now_ns(), t1;
  const float *a, *b;
  float *y;
  if (nin != (k->op ? 2 : 1) || nout != 1 || !in || !out)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: wrong number of buffers");
  if (out[0]->size < (uint64_t)k->count * 4 || in[0]->size < (uint64_t)k->count * 4 ||
      (k->op && in[1]->size < (uint64_t)k->count * 4))
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: buffer too small");
  a = (const float *)in[0]->data;
  b = k->op ? (const float *)in[1]->data : NULL;
  y = (float *)out[0]->data;
  for (int64_t i = 0; i < k->count; i++) {
#if BREAK == 7 /* R7: a wrong answer */
    y[i] = k->op ? a[i] - b[i] : (a[i] > 0 ? a[i] : 0.5f * a[i]);
#else
    y[i] = k->op ? a[i] + b[i] : (a[i] > 0 ? a[i] : 0.0f);
#endif
  }
  t1 = now_ns();
  c->busy_ns += t1 - t0 + 1;
  if (stats && MI_HAS_FIELD(stats, mi_run_stats_t, device_time_ns)) {
    stats->has_device_time = 1;
#if BREAK == 15 /* R15: claims 10 s for a run of microseconds */
    stats->device_time_ns = 10000000000ull;
#else
    stats->device_time_ns = t1 - t0 + 1;
#endif
  }
#if BREAK == 13 /* R13: chatters on the host's stderr */
  fputs("conform-test: kernel ran\n", stderr);
#endif
#if BREAK == 14 /* R14: calls a host service with a handle it made up */
  if (c->host && c->host->free) c->host->free((void *)(uintptr_t)0x40, NULL);
#endif
  return MI_OK;
}

static void kernel_release(mi_plugin_ctx_t *c, mi_kernel_t *k) {
  (void)c;
  free(k);
}

static int32_t counter_count(mi_plugin_ctx_t *c, uint32_t dev, uint32_t *n, mi_error_t *err) {
  (void)c;
  if (bad_device(dev, err)) return MI_ERR_INVALID_ARGUMENT;
  *n = 1;
  return MI_OK;
}

static int32_t counter_desc(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_counter_desc_t *out,
                            mi_error_t *err) {
  mi_counter_desc_t d;
  (void)c;
  if (bad_device(dev, err) || i != 0) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: no such counter");
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  strncpy(d.name, "busy_time", sizeof d.name - 1);
  d.kind = MI_COUNTER_TIMER;
  strncpy(d.unit, "ns", sizeof d.unit - 1);
  d.resolution = 1;
  return mi_sdk_fill(out, &d, sizeof d);
}

static int32_t counter_read(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_counter_sample_t *out,
                            mi_error_t *err) {
  mi_counter_sample_t s;
  if (bad_device(dev, err) || i != 0) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "conform-test: no such counter");
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.has_value = 1;
#if BREAK == 8 /* R8: a cumulative timer that runs backwards */
  s.value = 1e12 - (double)c->busy_ns;
#else
  s.value = (double)c->busy_ns;
#endif
  s.timestamp_ns = now_ns();
  return mi_sdk_fill(out, &s, sizeof s);
}

static const mi_plugin_api_t k_api = {
    .struct_size = sizeof(mi_plugin_api_t),
    .abi_major = MI_ABI_VERSION_MAJOR,
    .abi_minor = MI_ABI_VERSION_MINOR,
#if BREAK == 12 /* R12: calls itself another name than its manifest, which mi-host refuses */
    .name = "conform-test-renamed",
#else
    .name = "conform-test",
#endif
    .version = "1.0.0",
    .create = create,
    .destroy = destroy,
    .device_count = device_count,
    .device_info = device_info,
    .knob_count = knob_count,
    .knob_desc = knob_desc,
    .variant_count = variant_count,
    .variant_desc = variant_desc,
    .buffer_alloc = buffer_alloc,
    .buffer_write = buffer_write,
    .buffer_read = buffer_read,
    .buffer_free = buffer_free,
    .kernel_prepare = kernel_prepare,
    .kernel_run = kernel_run,
    .kernel_release = kernel_release,
    .counter_count = counter_count,
    .counter_desc = counter_desc,
    .counter_read = counter_read,
};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host, mi_error_t *err) {
#if BREAK == 2 /* R2: claims to speak any major */
  (void)host;
  (void)err;
  return &k_api;
#else
  if (!host || host->abi_major != MI_ABI_VERSION_MAJOR) {
    mi_sdk_error(err, MI_ERR_ABI, "conform-test speaks ABI major 1 only");
    return NULL;
  }
  return &k_api;
#endif
}
