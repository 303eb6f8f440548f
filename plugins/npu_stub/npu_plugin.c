/* npu_plugin.c - entry point, instance lifetime, device discovery and the description calls. */
#define _GNU_SOURCE /* dladdr */
#include "npu_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPU_SETTING_DEVICES "npu_stub.devices"

/* npu_run.c */
int32_t npu__kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel, mi_buffer_t *const *inputs,
                        int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                        mi_run_stats_t *stats, mi_error_t *err);
int32_t npu__counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_counter_sample_t *out, mi_error_t *err);

static int is_desc_file(const char *name) {
  size_t n = strlen(name);
  return n > 9 && strncmp(name, "npu-", 4) == 0 && strcmp(name + n - 5, ".conf") == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void device_init(npu_device_t *d) {
  d->cores = d->spec.cores;
  d->level = d->spec.level_count - 1;
  d->batch = 1;
  d->temp_c = d->spec.ambient_c;
  d->rng = d->spec.seed ^ 0x9e3779b97f4a7c15ull;
}

static int32_t add_file(mi_plugin_ctx_t *c, const char *path, mi_error_t *err) {
  int32_t rc;
  if (c->sdk.device_count >= NPU_MAX_DEVICES) {
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: more than %d device files", NPU_MAX_DEVICES);
  }
  rc = npu__spec_load(path, &c->dev[c->sdk.device_count].spec, err);
  if (rc != MI_OK) return rc;
  device_init(&c->dev[c->sdk.device_count]);
  npu__describe(&c->dev[c->sdk.device_count]);
  c->sdk.device_count++;
  return MI_OK;
}

/* A directory contributes its npu-*.conf files in name order, so device indices are stable. */
static int32_t add_dir(mi_plugin_ctx_t *c, const char *dir, mi_error_t *err) {
  char *names[NPU_MAX_DEVICES * 4];
  char path[1024];
  int n = 0, i;
  int32_t rc = MI_OK;
  struct dirent *e;
  DIR *d = opendir(dir);
  if (!d) {
    return mi_sdk_errorf(err, MI_ERR_IO, "npu-stub: cannot open device directory %s", dir);
  }
  while ((e = readdir(d)) != NULL && n < (int)(sizeof names / sizeof names[0])) {
    if (!is_desc_file(e->d_name)) continue;
    names[n] = strdup(e->d_name);
    if (!names[n]) {
      rc = mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
      break;
    }
    n++;
  }
  closedir(d);
  if (rc == MI_OK) qsort(names, (size_t)n, sizeof names[0], cmp_str);
  for (i = 0; i < n; i++) {
    if (rc == MI_OK) {
      snprintf(path, sizeof path, "%s/%s", dir, names[i]);
      rc = add_file(c, path, err);
    }
    free(names[i]);
  }
  return rc;
}

/* "a:b:c": each entry a description file or a directory of npu-*.conf files. */
static int32_t add_list(mi_plugin_ctx_t *c, const char *list, mi_error_t *err) {
  char buf[2048], *save = NULL, *tok;
  int32_t rc = MI_OK;
  snprintf(buf, sizeof buf, "%s", list);
  for (tok = strtok_r(buf, ":", &save); tok && rc == MI_OK; tok = strtok_r(NULL, ":", &save)) {
    struct stat st;
    if (*tok == '\0') continue;
    if (stat(tok, &st) == 0 && S_ISDIR(st.st_mode))
      rc = add_dir(c, tok, err);
    else
      rc = add_file(c, tok, err);
  }
  return rc;
}

static int32_t npu_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  mi_plugin_ctx_t *c;
  const char *list = getenv("MI_NPU_DEVICES");
  const char *fault = getenv("MI_NPU_FAULT");
  char dir[1024];
  int32_t rc;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: create: out is NULL");
  *out = NULL;
  c = calloc(1, sizeof *c);
  if (!c) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
  c->sdk.name = "npu-stub";
  mi_sdk_set_devices(&c->sdk, &c->dev[0].tables, NULL, sizeof c->dev[0]);
  if (fault && fault[0]) {
    if (strcmp(fault, "crash") == 0) c->fault = NPU_FAULT_CRASH;
    else if (strcmp(fault, "hang") == 0)
      c->fault = NPU_FAULT_HANG;
    else if (strcmp(fault, "wrong") == 0)
      c->fault = NPU_FAULT_WRONG;
    else if (strcmp(fault, "drift") == 0)
      c->fault = NPU_FAULT_DRIFT;
    else {
      rc = mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: MI_NPU_FAULT='%.40s' is not one of crash|hang|wrong|drift", fault);
      goto fail;
    }
  }
  if ((!list || !list[0]) && host && MI_HAS_FIELD(host, mi_host_api_t, get_setting) &&
      host->get_setting)
    list = host->get_setting(host->host_ctx, NPU_SETTING_DEVICES);
  if (list && list[0]) {
    rc = add_list(c, list, err);
  } else {
    /* Default: the description files shipped next to this shared object. */
    Dl_info info;
    char *slash;
    if (!dladdr((void *)npu_create, &info) || !info.dli_fname) {
      rc = mi_sdk_error(err, MI_ERR_NOT_FOUND, "npu-stub: cannot locate the plugin directory");
      goto fail;
    }
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else
      snprintf(dir, sizeof dir, ".");
    rc = add_dir(c, dir, err);
    list = dir;
  }
  if (rc != MI_OK) goto fail;
  if (c->sdk.device_count == 0) {
    rc = mi_sdk_errorf(err, MI_ERR_NOT_FOUND, "npu-stub: no npu-*.conf device description in %.200s", list);
    goto fail;
  }
  *out = c;
  return MI_OK;
fail:
  free(c);
  return rc;
}

static void npu_destroy(mi_plugin_ctx_t *ctx) { free(ctx); }

static int32_t npu_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                               mi_error_t *err) {
  mi_device_desc_t d;
  const npu_spec_t *s;
  int32_t rc = mi_sdk_check_device(ctx, device, out, err);
  if (rc != MI_OK) return rc;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: out is NULL");
  s = &ctx->dev[device].spec;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kind = MI_DEVICE_NPU;
  snprintf(d.name, sizeof d.name, "%s (simulated, %dx%dx%d MAC)", s->name, s->cores, s->mac_rows,
           s->mac_cols);
  snprintf(d.vendor, sizeof d.vendor, "%s", s->vendor);
  snprintf(d.driver_version, sizeof d.driver_version, "npu-stub 1.0.0 simulator");
  snprintf(d.isa, sizeof d.isa, "%s", s->name);
  d.global_memory_bytes = (uint64_t)(s->dram_mib * 1048576.0);
  d.local_memory_bytes = (uint64_t)(s->sram_kib * 1024.0);
  d.compute_units = (uint32_t)s->cores;
  d.max_threads = (uint32_t)s->cores;
  /* compute dtypes; FLOAT32 tensors are accepted and executed in FP16 */
  d.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) |
                 MI_DTYPE_BIT(MI_DTYPE_INT4) | MI_DTYPE_BIT(MI_DTYPE_FLOAT16);
  d.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_NCHW) | MI_LAYOUT_BIT(MI_LAYOUT_ANY);
  d.channel_alignment = (uint32_t)s->channel_align;
  d.buffer_alignment = 64;
  /* FLOAT32 tensors execute in FP16: the declared float peak is the FP16 rate. */
  d.peak_gflops = 2.0 * s->mac_rows * s->mac_cols * s->cores *
                  s->levels[s->level_count - 1].mhz * 1e-3 / s->fp16_divisor;
  d.peak_bandwidth_gbs = s->dma_gbs;
  return mi_sdk_fill(out, &d, sizeof d);
}

static int32_t npu_check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                                const mi_knob_value_t *knobs, int32_t knob_count,
                                mi_error_t *err) {
  int64_t vals[NPU_KNOB_COUNT];
  uint32_t given;
  int32_t rc = mi_sdk_check_device(ctx, device, ctx, err);
  if (rc != MI_OK) return rc;
  if (knob_count > 0 && !knobs)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: knobs is NULL");
  return npu__check_knobs(&ctx->dev[device].spec, variant_id, knobs, knob_count, vals, &given,
                          err);
}

static int32_t npu_set_device_knobs(mi_plugin_ctx_t *ctx, uint32_t device,
                                    const mi_knob_value_t *knobs, int32_t knob_count,
                                    mi_error_t *err) {
  int64_t vals[NPU_KNOB_COUNT];
  uint32_t given;
  npu_device_t *d;
  int32_t rc = mi_sdk_check_device(ctx, device, ctx, err);
  if (rc != MI_OK) return rc;
  if (knob_count > 0 && !knobs)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: knobs is NULL");
  d = &ctx->dev[device];
  rc = npu__check_knobs(&d->spec, NULL, knobs, knob_count, vals, &given, err);
  if (rc != MI_OK) return rc;
  if (given & ((1u << NPU_KNOB_DATAFLOW) | (1u << NPU_KNOB_TILE) | (1u << NPU_KNOB_OVERLAP)))
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "npu-stub: dataflow, sram_tile and dma_overlap are op knobs: pass them "
                        "to kernel_prepare");
  if (given & (1u << NPU_KNOB_CORES)) d->cores = (int)vals[NPU_KNOB_CORES];
  if (given & (1u << NPU_KNOB_DVFS)) d->level = (int)vals[NPU_KNOB_DVFS];
  if (given & (1u << NPU_KNOB_BATCH)) d->batch = (int)vals[NPU_KNOB_BATCH];
  return MI_OK;
}

static int32_t npu_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device,
                                  const mi_kernel_desc_t *desc, mi_kernel_t **out,
                                  mi_error_t *err) {
  int32_t rc = mi_sdk_check_device(ctx, device, out, err);
  if (rc != MI_OK) return rc;
  if (!desc || !out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: NULL argument");
  *out = NULL;
  return npu__prepare(&ctx->dev[device], device, desc, out, err);
}

static void npu_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel) {
  (void)ctx;
  npu__kernel_free(kernel);
}

static const mi_plugin_api_t NPU_API = {
    sizeof(mi_plugin_api_t),
    MI_ABI_VERSION_MAJOR,
    MI_ABI_VERSION_MINOR,
    "npu-stub",
    "1.0.0",
    npu_create,
    npu_destroy,
    mi_sdk_device_count,
    npu_device_info,
    mi_sdk_knob_count,
    mi_sdk_knob_desc,
    mi_sdk_variant_count,
    mi_sdk_variant_desc,
    mi_sdk_host_buffer_alloc,
    mi_sdk_host_buffer_write,
    mi_sdk_host_buffer_read,
    mi_sdk_host_buffer_free,
    npu_kernel_prepare,
    npu__kernel_run,
    npu_kernel_release,
    mi_sdk_constraint_count,
    mi_sdk_constraint_desc,
    npu_check_config,
    mi_sdk_counter_count,
    mi_sdk_counter_desc,
    npu__counter_read,
    npu_set_device_knobs,
    NULL, /* buffer_view: no views, its Concats copy (simulated times stay those of the copy) */
    NULL, /* kernel_enqueue and device_sync: each kernel's simulated time is its own run's */
    NULL,
    NULL, /* buffer_wrap: the simulated device's memory is its own, transfers are DMA */
};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host,
                                                        mi_error_t *err) {
  return mi_sdk_entry(host, &NPU_API, err);
}
