/* ap_plugin.c - a test plugin with ABI 1.3's asynchronous pair whose enqueued kernels run only
 * at device_sync, so a host that reads, writes or frees device data without waiting first gets
 * stale bytes, and it counts every such call. Relu and Add on host memory; each AP_* define
 * makes one case: a kernel that fails at the sync (AP_FAIL_NODE), a 1.2-sized table
 * (AP_ABI12), half the pair (AP_HALF). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_plugin.h"

#ifndef AP_NAME
#define AP_NAME "async-test"
#endif

#ifdef AP_HALF
#pragma GCC diagnostic ignored "-Wunused-function" /* device_sync is left out on purpose */
#endif

enum { AP_MAX_PENDING = 256 };

struct mi_buffer {
  uint64_t size;
  unsigned char *data;
};
struct mi_kernel {
  int op; /* 0 Relu, 1 Add */
  int64_t count;
  char node[64];
};

typedef struct ap_work {
  mi_kernel_t *k;
  mi_buffer_t *in[2], *out;
} ap_work_t;

struct mi_plugin_ctx {
  ap_work_t pend[AP_MAX_PENDING];
  int npend;
  /* counters: kernels enqueued, run with kernel_run, syncs, calls made with work in flight */
  double enqueued, ran, syncs, violations;
};

static const char *const k_ops[2] = {"Relu", "Add"};

/* A serialized call the contract says comes only after device_sync. */
static int in_flight(mi_plugin_ctx_t *c) {
  if (c->npend == 0) return 0;
  c->violations++;
  return 1;
}

static int32_t create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  (void)host;
  *out = calloc(1, sizeof **out);
  return *out ? MI_OK : mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "async-test: out of memory");
}

static void destroy(mi_plugin_ctx_t *c) { free(c); }

static int32_t device_count(mi_plugin_ctx_t *c, uint32_t *n, mi_error_t *err) {
  (void)c;
  (void)err;
  *n = 1;
  return MI_OK;
}

static int32_t device_info(mi_plugin_ctx_t *c, uint32_t dev, mi_device_desc_t *out,
                           mi_error_t *err) {
  mi_device_desc_t d;
  (void)c;
  if (dev != 0) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: no such device");
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kind = MI_DEVICE_OTHER;
  snprintf(d.name, sizeof d.name, "deferred host memory");
  d.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  d.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  d.channel_alignment = 1;
  return mi_sdk_fill(out, &d, sizeof d);
}

static int32_t zero_count(mi_plugin_ctx_t *c, uint32_t dev, uint32_t *n, mi_error_t *err) {
  (void)c;
  (void)dev;
  (void)err;
  *n = 0;
  return MI_OK;
}

static int32_t knob_desc(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_knob_desc_t *out,
                         mi_error_t *err) {
  (void)c;
  (void)dev;
  (void)i;
  (void)out;
  return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: no knobs");
}

static int32_t variant_count(mi_plugin_ctx_t *c, uint32_t dev, uint32_t *n, mi_error_t *err) {
  (void)c;
  (void)dev;
  (void)err;
  *n = 2;
  return MI_OK;
}

static int32_t variant_desc(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_variant_desc_t *out,
                            mi_error_t *err) {
  mi_variant_desc_t v;
  (void)c;
  (void)dev;
  if (i >= 2) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: no such variant");
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  snprintf(v.id, sizeof v.id, "%s", i ? "add.deferred" : "relu.deferred");
  snprintf(v.op_type, sizeof v.op_type, "%s", k_ops[i]);
  v.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  v.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  return mi_sdk_fill(out, &v, sizeof v);
}

static int32_t buffer_alloc(mi_plugin_ctx_t *c, uint32_t dev, uint64_t bytes, mi_buffer_t **out,
                            mi_error_t *err) {
  mi_buffer_t *b;
  (void)c;
  (void)dev;
  *out = NULL;
  b = calloc(1, sizeof *b);
  if (!b || !(b->data = calloc(1, bytes ? bytes : 1))) {
    free(b);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "async-test: out of memory");
  }
  b->size = bytes;
  *out = b;
  return MI_OK;
}

static int32_t buffer_write(mi_plugin_ctx_t *c, mi_buffer_t *b, uint64_t off, const void *src,
                            uint64_t n, mi_error_t *err) {
  if (in_flight(c))
    return mi_sdk_error(err, MI_ERR_INTERNAL, "async-test: buffer_write with kernels in flight");
  if (off > b->size || n > b->size - off)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: write past the buffer end");
  memcpy(b->data + off, src, n);
  return MI_OK;
}

static int32_t buffer_read(mi_plugin_ctx_t *c, mi_buffer_t *b, uint64_t off, void *dst,
                           uint64_t n, mi_error_t *err) {
  /* Read anyway: the stale bytes are what a host that did not wait would get. */
  int late = in_flight(c);
  if (off > b->size || n > b->size - off)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: read past the buffer end");
  memcpy(dst, b->data + off, n);
  (void)late;
  return MI_OK;
}

static void buffer_free(mi_plugin_ctx_t *c, mi_buffer_t *b) {
  (void)in_flight(c);
  if (!b) return;
  free(b->data);
  free(b);
}

static int32_t kernel_prepare(mi_plugin_ctx_t *c, uint32_t dev, const mi_kernel_desc_t *d,
                              mi_kernel_t **out, mi_error_t *err) {
  mi_kernel_t *k;
  int op = -1;
  (void)c;
  (void)dev;
  *out = NULL;
  if (d->node_count != 1)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "async-test: fused groups are not supported");
  for (int i = 0; i < 2; i++)
    if (!strcmp(d->nodes[0]->op_type, k_ops[i])) op = i;
  if (op < 0) return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "async-test: only Relu and Add");
  if (d->input_count != (op ? 2 : 1) || d->output_count != 1)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "async-test: unexpected inputs");
  if (op == 1 && mi_sdk_numel(d->tensors[d->inputs[0]]) != mi_sdk_numel(d->tensors[d->inputs[1]]))
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "async-test: Add without broadcasting only");
  k = calloc(1, sizeof *k);
  if (!k) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "async-test: out of memory");
  k->op = op;
  k->count = mi_sdk_numel(d->tensors[d->outputs[0]]);
  if (d->nodes[0]->name) snprintf(k->node, sizeof k->node, "%s", d->nodes[0]->name);
  *out = k;
  return MI_OK;
}

/* Runs one kernel; the one prepared for node AP_FAIL_NODE fails as a device would. */
static int32_t compute(const ap_work_t *w, mi_error_t *err) {
  const mi_kernel_t *k = w->k;
  const float *a = (const float *)w->in[0]->data, *b = k->op ? (const float *)w->in[1]->data : 0;
  float *y = (float *)w->out->data;
#ifdef AP_FAIL_NODE
  if (!strcmp(k->node, AP_FAIL_NODE)) {
    char m[MI_ERROR_MESSAGE_SIZE];
    snprintf(m, sizeof m, "kernel of node '%s': simulated device fault", k->node);
    return mi_sdk_error(err, MI_ERR_DEVICE, m);
  }
#else
  (void)err;
#endif
  for (int64_t i = 0; i < k->count; i++) y[i] = k->op ? a[i] + b[i] : (a[i] > 0 ? a[i] : 0.0f);
  return MI_OK;
}

static int32_t take(mi_kernel_t *k, mi_buffer_t *const *in, int32_t nin, mi_buffer_t *const *out,
                    int32_t nout, ap_work_t *w, mi_error_t *err) {
  if (!k || nin != (k->op ? 2 : 1) || nout != 1 || !in || !out)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: wrong number of buffers");
  if (out[0]->size < (uint64_t)k->count * 4 || in[0]->size < (uint64_t)k->count * 4 ||
      (k->op && in[1]->size < (uint64_t)k->count * 4))
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: buffer too small");
  w->k = k;
  w->in[0] = in[0];
  w->in[1] = k->op ? in[1] : NULL;
  w->out = out[0];
  return MI_OK;
}

static void fill_stats(mi_run_stats_t *stats, uint64_t ns) {
  if (stats && MI_HAS_FIELD(stats, mi_run_stats_t, device_time_ns)) {
    stats->has_device_time = 1;
    stats->device_time_ns = ns;
  }
}

static int32_t kernel_run(mi_plugin_ctx_t *c, mi_kernel_t *k, mi_buffer_t *const *in, int32_t nin,
                          mi_buffer_t *const *out, int32_t nout, mi_run_stats_t *stats,
                          mi_error_t *err) {
  ap_work_t w;
  int32_t rc;
  if (in_flight(c))
    return mi_sdk_error(err, MI_ERR_INTERNAL, "async-test: kernel_run with kernels in flight");
  if ((rc = take(k, in, nin, out, nout, &w, err)) != MI_OK || (rc = compute(&w, err)) != MI_OK)
    return rc;
  c->ran++;
  fill_stats(stats, 1000); /* a fixed "device time" per kernel: sums are checkable */
  return MI_OK;
}

static int32_t kernel_enqueue(mi_plugin_ctx_t *c, mi_kernel_t *k, mi_buffer_t *const *in,
                              int32_t nin, mi_buffer_t *const *out, int32_t nout,
                              mi_error_t *err) {
  ap_work_t w;
  int32_t rc;
  if ((rc = take(k, in, nin, out, nout, &w, err)) != MI_OK) return rc;
  if (c->npend == AP_MAX_PENDING)
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "async-test: queue full");
  c->pend[c->npend++] = w;
  c->enqueued++;
  return MI_OK;
}

static int32_t device_sync(mi_plugin_ctx_t *c, uint32_t dev, mi_run_stats_t *stats,
                           mi_error_t *err) {
  int32_t rc = MI_OK;
  int i, n = c->npend;
  (void)dev;
  c->syncs++;
  for (i = 0; i < n && rc == MI_OK; i++) rc = compute(&c->pend[i], err);
  c->npend = 0; /* after a failure the rest is dropped: nothing stays in flight */
  if (rc == MI_OK) fill_stats(stats, 1000 * (uint64_t)n);
  return rc;
}

static void kernel_release(mi_plugin_ctx_t *c, mi_kernel_t *k) {
  (void)in_flight(c);
  free(k);
}

static int32_t counter_count(mi_plugin_ctx_t *c, uint32_t dev, uint32_t *n, mi_error_t *err) {
  (void)c;
  (void)dev;
  (void)err;
  *n = 4;
  return MI_OK;
}

static int32_t counter_desc(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_counter_desc_t *out,
                            mi_error_t *err) {
  static const char *const names[4] = {"enqueued", "ran", "syncs", "violations"};
  mi_counter_desc_t d;
  (void)c;
  (void)dev;
  if (i >= 4) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: no such counter");
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  snprintf(d.name, sizeof d.name, "%s", names[i]);
  d.kind = MI_COUNTER_OTHER;
  d.resolution = 1;
  return mi_sdk_fill(out, &d, sizeof d);
}

static int32_t counter_read(mi_plugin_ctx_t *c, uint32_t dev, uint32_t i, mi_counter_sample_t *out,
                            mi_error_t *err) {
  mi_counter_sample_t s;
  const double v[4] = {c->enqueued, c->ran, c->syncs, c->violations};
  (void)dev;
  if (i >= 4) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "async-test: no such counter");
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.has_value = 1;
  s.value = v[i];
  return mi_sdk_fill(out, &s, sizeof s);
}

#ifdef AP_ABI12
/* A 1.2 table: its size ends before the pair, whose slots hold functions all the same; a host
 * that read past the declared size would enqueue. */
#define AP_TABLE_SIZE offsetof(mi_plugin_api_t, kernel_enqueue)
#define AP_MINOR 2
#else
#define AP_TABLE_SIZE sizeof(mi_plugin_api_t)
#define AP_MINOR MI_ABI_VERSION_MINOR
#endif

#ifdef AP_HALF
#define AP_SYNC NULL
#else
#define AP_SYNC device_sync
#endif

static const mi_plugin_api_t k_api = {
    .struct_size = (uint32_t)AP_TABLE_SIZE,
    .abi_major = MI_ABI_VERSION_MAJOR,
    .abi_minor = AP_MINOR,
    .name = AP_NAME,
    .version = "1.0.0",
    .create = create,
    .destroy = destroy,
    .device_count = device_count,
    .device_info = device_info,
    .knob_count = zero_count,
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
    .kernel_enqueue = kernel_enqueue,
    .device_sync = AP_SYNC,
};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host,
                                                        mi_error_t *err) {
  if (!host || host->abi_major != MI_ABI_VERSION_MAJOR) {
    mi_sdk_error(err, MI_ERR_ABI, "async-test: wrong ABI major");
    return NULL;
  }
  return &k_api;
}
