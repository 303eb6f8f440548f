/* template_plugin.c - a minimal Meta Infer plugin: Relu and Add (FP32) on host memory.
 *
 * Copy this folder to start a plugin. It builds against the installed SDK alone and shows
 * every part of the contract: the entry point, one device, one knob, one variant per op, a
 * timer counter, buffers (the SDK's host-memory ones), and kernels that refuse what they cannot
 * run. The knob, variants and counter are tables that the SDK's helper library
 * (metainfer/mi_sdk.h) describes. */
/* clock_gettime and sysconf are POSIX, outside strict C11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The device is the host CPU: the SDK's host-memory buffers (and their calls) serve. */
#define MI_SDK_HOST_BUFFERS
#include <metainfer/mi_sdk.h>

#define TEMPLATE_NAME "template"

/* One instance per create(); no global mutable state, so two hosts may load it at once. The
 * SDK helper's head comes first: it answers the count/describe calls from its tables. */
struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk;
  mi_sdk_counter_t counters[1]; /* with this clock's resolution */
  mi_sdk_tables_t tables;
  const mi_host_api_t *host;
  uint64_t last_run_ns; /* timer counter: the last kernel_run's duration */
  int has_last_run;
};

enum { OP_RELU,
       OP_ADD };

struct mi_kernel {
  int op;
  int64_t numel;
  int64_t chunk; /* the "chunk" knob: elements per inner loop */
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* The descriptions as data. Bit 0 of a variant's knob_mask is knob 0 ("chunk"). */
static const mi_sdk_knob_t k_knobs[] = {
    {.name = "chunk", .description = "elements processed per inner loop", .unit = "elements", .scope = MI_KNOB_SCOPE_OP, .type = MI_KNOB_INT, .mutability = MI_KNOB_AT_PREPARE, .value_count = 4, .values = {64, 256, 1024, 4096}, .default_int = 1024, .applies_to = ""},
};

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define LAYOUTS (MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW))
static const mi_sdk_variant_t k_variants[] = {
    {"relu.scalar", "Relu", "max(x, 0), element by element", F32, LAYOUTS, 0, 1u << 0, NULL},
    {"add.scalar", "Add", "a + b, same shapes only", F32, LAYOUTS, 0, 1u << 0, NULL},
};

static const mi_sdk_counter_t k_counters[] = {
    {"last_run_time (host monotonic clock)", MI_COUNTER_TIMER, "ns", 1.0, 0},
};

static int32_t t_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  mi_plugin_ctx_t *ctx = calloc(1, sizeof *ctx);
  struct timespec res;
  *out = NULL;
  if (!ctx) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "template: out of memory");
  memcpy(ctx->counters, k_counters, sizeof k_counters);
  if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
    ctx->counters[0].resolution = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
  ctx->tables = (mi_sdk_tables_t){.knobs = k_knobs, .knob_count = 1, .variants = k_variants, .variant_count = 2, .counters = ctx->counters, .counter_count = 1};
  ctx->sdk.name = TEMPLATE_NAME;
  ctx->sdk.device_count = 1;
  ctx->sdk.tables = &ctx->tables;
  ctx->host = host;
  *out = ctx;
  return MI_OK;
}

static void t_destroy(mi_plugin_ctx_t *ctx) { free(ctx); }

static int32_t t_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                             mi_error_t *err) {
  mi_device_desc_t d;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (mi_sdk_check_device(ctx, device, out, err) != MI_OK) return MI_ERR_INVALID_ARGUMENT;
  /* Fill a full local struct, then let mi_sdk_fill copy what the host has room for. */
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kind = MI_DEVICE_CPU;
  copy_str(d.name, sizeof d.name, "template-cpu (host memory, 1 thread)");
  copy_str(d.vendor, sizeof d.vendor, "Meta Infer SDK template");
  copy_str(d.driver_version, sizeof d.driver_version, "template-1.0");
  copy_str(d.isa, sizeof d.isa, "c11-scalar");
  d.global_memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  d.compute_units = 1;
  d.max_threads = 1;
  d.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  d.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  d.channel_alignment = 1;
  return mi_sdk_fill(out, &d, sizeof d);
}

static int same_shape(const mi_tensor_desc_t *a, const mi_tensor_desc_t *b) {
  int32_t i;
  if (a->rank != b->rank) return 0;
  for (i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static int32_t t_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device,
                                const mi_kernel_desc_t *desc, mi_kernel_t **out,
                                mi_error_t *err) {
  const mi_node_desc_t *node;
  const mi_tensor_desc_t *t0;
  mi_kernel_t *k;
  int op, i, want_inputs;
  int64_t chunk;
  (void)ctx;
  *out = NULL;
  if (mi_sdk_check_device(ctx, device, out, err) != MI_OK) return MI_ERR_INVALID_ARGUMENT;
  if (desc->node_count != 1)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "template: fused groups are not supported");
  node = desc->nodes[0];
  if (strcmp(node->op_type, "Relu") == 0)
    op = OP_RELU;
  else if (strcmp(node->op_type, "Add") == 0)
    op = OP_ADD;
  else
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "template: only Relu and Add are implemented");
  if (desc->variant_id && desc->variant_id[0] &&
      strcmp(desc->variant_id, k_variants[op].id) != 0)
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "template: variant '%s' does not run %s",
                         desc->variant_id, node->op_type);
  chunk = mi_sdk_knob_int(desc, "chunk", k_knobs[0].default_int);
  if (!mi_sdk_knob_allows(&k_knobs[0], chunk))
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                         "template: knob 'chunk' = %lld is not one of 64, 256, 1024, 4096",
                         (long long)chunk);
  want_inputs = op == OP_RELU ? 1 : 2;
  if (desc->input_count != want_inputs || desc->output_count != 1 ||
      node->input_count != want_inputs)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED,
                        "template: constant operands are not supported (inputs must be runtime)");
  t0 = desc->tensors[desc->outputs[0]];
  for (i = 0; i < want_inputs; i++) {
    const mi_tensor_desc_t *t = desc->tensors[desc->inputs[i]];
    if (t->dtype != MI_DTYPE_FLOAT32)
      return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "template: only FLOAT32 is supported");
    if (!same_shape(t, t0))
      return mi_sdk_error(err, MI_ERR_UNSUPPORTED,
                          "template: Add needs inputs of the output's shape (no broadcasting)");
  }
  if (t0->dtype != MI_DTYPE_FLOAT32)
    return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "template: only FLOAT32 is supported");
  k = calloc(1, sizeof *k);
  if (!k) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "template: out of memory");
  k->op = op;
  k->numel = mi_sdk_numel(t0);
  k->chunk = chunk;
  *out = k;
  return MI_OK;
}

static int32_t t_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                            int32_t input_count, mi_buffer_t *const *outputs,
                            int32_t output_count, mi_run_stats_t *stats, mi_error_t *err) {
  uint64_t bytes = (uint64_t)k->numel * sizeof(float), t0;
  const float *a, *b;
  float *y;
  int64_t i, j;
  int32_t want = k->op == OP_RELU ? 1 : 2;
  if (input_count != want || output_count != 1)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "template: wrong number of buffers");
  for (i = 0; i < want; i++)
    if (inputs[i]->bytes < bytes)
      return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "template: input buffer too small");
  if (outputs[0]->bytes < bytes)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "template: output buffer too small");
  a = (const float *)inputs[0]->data;
  b = want == 2 ? (const float *)inputs[1]->data : NULL;
  y = (float *)outputs[0]->data;
  t0 = now_ns();
  for (i = 0; i < k->numel; i += k->chunk) {
    int64_t end = i + k->chunk < k->numel ? i + k->chunk : k->numel;
    if (k->op == OP_RELU)
      for (j = i; j < end; j++) y[j] = a[j] > 0.0f ? a[j] : 0.0f;
    else
      for (j = i; j < end; j++) y[j] = a[j] + b[j];
  }
  ctx->last_run_ns = now_ns() - t0;
  ctx->has_last_run = 1;
  if (stats) {
    /* The device is the host CPU, so the host monotonic clock is its timer. */
    mi_run_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.has_device_time = 1;
    s.device_time_ns = ctx->last_run_ns;
    mi_sdk_fill(stats, &s, sizeof s);
  }
  return MI_OK;
}

static void t_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *k) {
  (void)ctx;
  free(k);
}

static int32_t t_counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  int32_t st = mi_sdk_counter_sample(ctx, device, index, out, &s, err);
  if (st != MI_OK) return st;
  /* Before the first run there is no sample: say so instead of reporting 0. */
  s.has_value = ctx->has_last_run;
  s.value = ctx->has_last_run ? (double)ctx->last_run_ns : 0.0;
  s.timestamp_ns = now_ns();
  return mi_sdk_fill(out, &s, sizeof s);
}

static const mi_plugin_api_t k_api = {
    .struct_size = sizeof(mi_plugin_api_t),
    .abi_major = MI_ABI_VERSION_MAJOR,
    .abi_minor = MI_ABI_VERSION_MINOR,
    .name = TEMPLATE_NAME,
    .version = "1.0.0",
    .create = t_create,
    .destroy = t_destroy,
    .device_count = mi_sdk_device_count,
    .device_info = t_device_info,
    .knob_count = mi_sdk_knob_count,
    .knob_desc = mi_sdk_knob_desc,
    .variant_count = mi_sdk_variant_count,
    .variant_desc = mi_sdk_variant_desc,
    .buffer_alloc = mi_sdk_host_buffer_alloc,
    .buffer_write = mi_sdk_host_buffer_write,
    .buffer_read = mi_sdk_host_buffer_read,
    .buffer_free = mi_sdk_host_buffer_free,
    .kernel_prepare = t_kernel_prepare,
    .kernel_run = t_kernel_run,
    .kernel_release = t_kernel_release,
    /* No constraints, no config check, no device knobs: those optional entries stay NULL. */
    .counter_count = mi_sdk_counter_count,
    .counter_desc = mi_sdk_counter_desc,
    .counter_read = t_counter_read,
};

/* The one exported symbol. */
MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host,
                                                        mi_error_t *err) {
  return mi_sdk_entry(host, &k_api, err);
}
