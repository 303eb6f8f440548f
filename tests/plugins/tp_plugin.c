/* tp_plugin.c - purpose-built test plugins for the loader: each TP_* define makes one case.
 *
 * One small, well-behaved base plugin (one device, one knob, one variant, one constraint,
 * one counter) that each case bends in exactly one way: an older or newer table, larger or
 * smaller description structs, missing optional functions, a refused negotiation, ... */
#include <stdlib.h>
#include <string.h>

#include <metainfer/mi_plugin.h>

/* Each case leaves some of the functions below out of its table on purpose. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-const-variable"

#ifndef TP_NAME
#define TP_NAME "test-plugin"
#endif
#ifndef TP_ABI_MAJOR
#define TP_ABI_MAJOR MI_ABI_VERSION_MAJOR
#endif
#ifndef TP_ABI_MINOR
#define TP_ABI_MINOR MI_ABI_VERSION_MINOR
#endif
#ifndef TP_KNOB_DEFAULT
#define TP_KNOB_DEFAULT 16
#endif
#ifndef TP_COUNTER_KIND
#define TP_COUNTER_KIND MI_COUNTER_TIMER
#endif

struct mi_plugin_ctx {
  int unused;
};
struct mi_buffer {
  uint64_t bytes;
  unsigned char *data;
};
struct mi_kernel {
  int unused;
};

static void put(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src) < cap - 1 ? strlen(src) : cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static int32_t tp_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  (void)host;
  *out = NULL;
#ifdef TP_CREATE_FAIL
  return mi_sdk_error(err, MI_ERR_DEVICE, "test: no device present");
#else
  *out = calloc(1, sizeof **out);
  return *out ? MI_OK : mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "test: out of memory");
#endif
}

static void tp_destroy(mi_plugin_ctx_t *ctx) { free(ctx); }

static int32_t tp_device_count(mi_plugin_ctx_t *ctx, uint32_t *count, mi_error_t *err) {
  (void)ctx;
  (void)err;
  *count = 1;
  return MI_OK;
}

#ifdef TP_DEVICE_BIG
/* A newer plugin's device struct: the host's fields, then fields the host does not know. */
typedef struct big_device_desc {
  mi_device_desc_t base;
  uint64_t future[16];
} big_device_desc_t;
#endif

static int32_t tp_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                              mi_error_t *err) {
  mi_device_desc_t d;
  size_t size = sizeof d;
  (void)ctx;
  if (device != 0) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "test: no such device");
  memset(&d, 0, sizeof d);
  d.kind = MI_DEVICE_OTHER;
  put(d.name, sizeof d.name, TP_NAME " device");
  put(d.vendor, sizeof d.vendor, "test");
  d.global_memory_bytes = 1u << 20;
  d.compute_units = 3;
  /* Fields after compute_units: an older plugin (TP_DEVICE_SMALL) does not know them. */
  d.max_threads = 7;
  d.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  d.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY);
  d.peak_gflops = 1.5;
#if defined(TP_DEVICE_BIG)
  {
    big_device_desc_t big;
    int i;
    memset(&big, 0, sizeof big);
    big.base = d;
    for (i = 0; i < 16; i++) big.future[i] = 0x5A5A5A5A5A5A5A5Aull;
    big.base.struct_size = sizeof big;
    return mi_sdk_fill(out, &big, sizeof big);
  }
#elif defined(TP_DEVICE_SMALL)
  size = offsetof(mi_device_desc_t, max_threads);
#endif
  d.struct_size = (uint32_t)size;
  return mi_sdk_fill(out, &d, size);
}

static int32_t tp_knob_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                             mi_error_t *err) {
  (void)ctx;
  (void)device;
  (void)err;
  *count = 1;
  return MI_OK;
}

static int32_t tp_knob_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_knob_desc_t *out, mi_error_t *err) {
  mi_knob_desc_t k;
  (void)ctx;
  (void)device;
  if (index != 0) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "test: no such knob");
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  put(k.name, sizeof k.name, "tile");
  put(k.unit, sizeof k.unit, "elements");
  k.scope = MI_KNOB_SCOPE_OP;
  k.type = MI_KNOB_INT;
  k.min = 1;
  k.max = 64;
  k.step = 1;
  k.default_int = TP_KNOB_DEFAULT;
  return mi_sdk_fill(out, &k, sizeof k);
}

static int32_t tp_variant_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                                mi_error_t *err) {
  (void)ctx;
  (void)device;
  (void)err;
  *count = 1;
  return MI_OK;
}

static int32_t tp_variant_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                               mi_variant_desc_t *out, mi_error_t *err) {
  mi_variant_desc_t v;
  (void)ctx;
  (void)device;
  if (index != 0) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "test: no such variant");
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  put(v.id, sizeof v.id, "relu.test");
  put(v.op_type, sizeof v.op_type, "Relu");
  v.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  put(v.knobs, sizeof v.knobs, "tile");
  return mi_sdk_fill(out, &v, sizeof v);
}

static int32_t tp_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                               mi_buffer_t **out, mi_error_t *err) {
  (void)ctx;
  (void)device;
  (void)bytes;
  *out = NULL;
  return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "test: no memory");
}

static int32_t tp_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *buf, uint64_t offset,
                               const void *src, uint64_t bytes, mi_error_t *err) {
  (void)ctx, (void)buf, (void)offset, (void)src, (void)bytes;
  return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "test: no memory");
}

static int32_t tp_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *buf, uint64_t offset, void *dst,
                              uint64_t bytes, mi_error_t *err) {
  (void)ctx, (void)buf, (void)offset, (void)dst, (void)bytes;
  return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "test: no memory");
}

static void tp_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *buf) {
  (void)ctx;
  (void)buf;
}

static int32_t tp_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device,
                                 const mi_kernel_desc_t *desc, mi_kernel_t **out,
                                 mi_error_t *err) {
  (void)ctx, (void)device, (void)desc;
  *out = NULL;
  return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "test: runs nothing");
}

static int32_t tp_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel, mi_buffer_t *const *in,
                             int32_t nin, mi_buffer_t *const *out, int32_t nout,
                             mi_run_stats_t *stats, mi_error_t *err) {
  (void)ctx, (void)kernel, (void)in, (void)nin, (void)out, (void)nout, (void)stats;
  return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "test: runs nothing");
}

static void tp_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel) {
  (void)ctx;
  (void)kernel;
}

static int32_t tp_one(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err) {
  (void)ctx;
  (void)device;
  (void)err;
  *count = 1;
  return MI_OK;
}

static int32_t tp_constraint_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                                  mi_constraint_desc_t *out, mi_error_t *err) {
  mi_constraint_desc_t c;
  (void)ctx;
  (void)device;
  (void)index;
  (void)err;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.kind = MI_CONSTRAINT_LESS_EQUAL;
  put(c.a, sizeof c.a, "tile");
  c.value = 32;
  put(c.reason, sizeof c.reason, "tile beyond 32 spills");
  return mi_sdk_fill(out, &c, sizeof c);
}

static int32_t tp_counter_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                               mi_counter_desc_t *out, mi_error_t *err) {
  mi_counter_desc_t c;
  (void)ctx;
  (void)device;
  (void)index;
  (void)err;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  put(c.name, sizeof c.name, "fake_energy");
  c.kind = TP_COUNTER_KIND;
  put(c.unit, sizeof c.unit, "J");
  c.resolution = 0.001;
  c.modeled = 1;
  return mi_sdk_fill(out, &c, sizeof c);
}

static int32_t tp_counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                               mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  (void)ctx, (void)device, (void)index, (void)err;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.has_value = 0; /* never sampled: says so */
  return mi_sdk_fill(out, &s, sizeof s);
}

/* The table. Sizes that lie on purpose (older, too small) still point at a full struct, so
 * a host that read past the declared size would see the optional functions. */
#if defined(TP_OLDER)
#define TP_TABLE_SIZE offsetof(mi_plugin_api_t, constraint_count)
#elif defined(TP_TOO_SMALL)
#define TP_TABLE_SIZE offsetof(mi_plugin_api_t, kernel_release)
#elif defined(TP_NEWER)
#define TP_TABLE_SIZE sizeof(struct newer_api)
#else
#define TP_TABLE_SIZE sizeof(mi_plugin_api_t)
#endif

#ifdef TP_NULL_REQUIRED
#define TP_KERNEL_RUN NULL
#else
#define TP_KERNEL_RUN tp_kernel_run
#endif

#define TP_TABLE_FIELDS                                                                      \
  .struct_size = (uint32_t)TP_TABLE_SIZE, .abi_major = TP_ABI_MAJOR,                         \
  .abi_minor = TP_ABI_MINOR, .name = TP_NAME, .version = "0.0.1-test", .create = tp_create,  \
  .destroy = tp_destroy, .device_count = tp_device_count, .device_info = tp_device_info,     \
  .knob_count = tp_knob_count, .knob_desc = tp_knob_desc, .variant_count = tp_variant_count, \
  .variant_desc = tp_variant_desc, .buffer_alloc = tp_buffer_alloc,                          \
  .buffer_write = tp_buffer_write, .buffer_read = tp_buffer_read,                            \
  .buffer_free = tp_buffer_free, .kernel_prepare = tp_kernel_prepare,                        \
  .kernel_run = TP_KERNEL_RUN, .kernel_release = tp_kernel_release

#ifdef TP_NO_OPTIONAL
#define TP_OPTIONAL_FIELDS
#else
#define TP_OPTIONAL_FIELDS                                             \
  , .constraint_count = tp_one, .constraint_desc = tp_constraint_desc, \
    .counter_count = tp_one, .counter_desc = tp_counter_desc, .counter_read = tp_counter_read
#endif

#ifdef TP_NEWER
/* A table from a later minor: the v1.0 table, then functions this host has never seen. */
typedef struct newer_api {
  mi_plugin_api_t base;
  int32_t (*future_fn)(mi_plugin_ctx_t *ctx);
  uint64_t future_flags;
} newer_api_t;
static const newer_api_t k_table = {
    .base = {TP_TABLE_FIELDS TP_OPTIONAL_FIELDS},
    .future_fn = NULL,
    .future_flags = ~0ull,
};
#define TP_TABLE_PTR (&k_table.base)
#else
static const mi_plugin_api_t k_table = {TP_TABLE_FIELDS TP_OPTIONAL_FIELDS};
#define TP_TABLE_PTR (&k_table)
#endif

#ifndef TP_NO_ENTRY
MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host,
                                                        mi_error_t *err) {
#ifdef TP_REFUSE
  (void)host;
  mi_sdk_error(err, MI_ERR_ABI, "test plugin needs ABI 9.0 features");
  return NULL;
#else
  (void)host;
  (void)err;
  return TP_TABLE_PTR;
#endif
}
#else
/* No entry point: a library that is not a plugin. Keep one function so it is not empty. */
const mi_plugin_api_t *tp_not_the_entry(void) { return TP_TABLE_PTR; }
#endif
