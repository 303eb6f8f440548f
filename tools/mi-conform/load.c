/* load.c - mi-conform's own plugin loading: like the host loader, but with the negotiation
 * parameters under the rule's control, so rules can probe older and newer hosts. The services
 * handed to the plugin are the host's own (plugin/plugin.h), so a call with a forged handle is
 * refused and counted as in mi-host, not followed. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "plugin/plugin.h"

/* R13 captures the process's stdout and stderr: the plugin's log lines, which the host itself
 * prints, must not count as the plugin's own writes there. */
static void quiet_log(void *host_ctx, int32_t level, const char *plugin, const char *message) {
  (void)host_ctx;
  (void)level;
  (void)plugin;
  (void)message;
}

int32_t conform_load(conform_ctx_t *c, uint32_t major, uint32_t minor) {
  const mi_plugin_api_t *table;
  mi_error_t err = {0};
  size_t need = offsetof(mi_plugin_api_t, kernel_release) + sizeof(void *);
  size_t n;

  c->loaded = 0;
  c->load_error[0] = '\0';
  c->dl = dlopen(c->so_path, RTLD_NOW | RTLD_LOCAL);
  if (!c->dl) {
    snprintf(c->load_error, sizeof c->load_error, "dlopen failed: %s", dlerror());
    return MI_ERR_ABI;
  }
  *(void **)(&c->entry) = dlsym(c->dl, MI_PLUGIN_ENTRY_NAME);
  if (!c->entry) {
    snprintf(c->load_error, sizeof c->load_error, "missing entry symbol %s", MI_PLUGIN_ENTRY_NAME);
    return MI_ERR_ABI;
  }
  if (!c->host_entry) {
    mi__plugin_entry_t *e = calloc(1, sizeof *e);
    if (!e) {
      snprintf(c->load_error, sizeof c->load_error, "out of memory");
      return MI_ERR_OUT_OF_MEMORY;
    }
    if (mi__host_api_init(e) != MI_OK) {
      free(e);
      snprintf(c->load_error, sizeof c->load_error, "out of memory");
      return MI_ERR_OUT_OF_MEMORY;
    }
    c->host_entry = e;
  }
  c->host = *((mi__plugin_entry_t *)c->host_entry)->host;
  c->host.abi_major = major;
  c->host.abi_minor = minor;
  if (c->quiet_log) c->host.log = quiet_log;
  table = c->entry(&c->host, &err);
  if (!table) {
    snprintf(c->load_error, sizeof c->load_error, "negotiation refused: %s", err.message);
    return MI_ERR_ABI;
  }
  if (table->struct_size < need) {
    snprintf(c->load_error, sizeof c->load_error,
             "function table too small (%u bytes, ABI v1 needs at least %zu)",
             table->struct_size, need);
    return MI_ERR_ABI;
  }
  if (table->abi_major != major) {
    snprintf(c->load_error, sizeof c->load_error, "plugin speaks ABI major %u, host %u",
             table->abi_major, major);
    return MI_ERR_ABI;
  }
  memset(&c->plugin.api, 0, sizeof c->plugin.api);
  n = table->struct_size < sizeof c->plugin.api ? table->struct_size : sizeof c->plugin.api;
  memcpy(&c->plugin.api, table, n);
  c->plugin.declared_size = table->struct_size;
  c->plugin.abi_major = table->abi_major;
  c->plugin.abi_minor = table->abi_minor;
  c->plugin.name = (char *)(table->name ? table->name : "");
  c->plugin.version = (char *)(table->version ? table->version : "");
  c->plugin.path = (char *)c->so_path;
  c->plugin.dl = c->dl;
  {
    const mi_plugin_api_t *a = &c->plugin.api;
    if (!a->create || !a->destroy || !a->device_count || !a->device_info || !a->knob_count ||
        !a->knob_desc || !a->variant_count || !a->variant_desc || !a->buffer_alloc ||
        !a->buffer_write || !a->buffer_read || !a->buffer_free || !a->kernel_prepare ||
        !a->kernel_run || !a->kernel_release) {
      snprintf(c->load_error, sizeof c->load_error, "a required function is NULL");
      return MI_ERR_ABI;
    }
    if (!a->kernel_enqueue != !a->device_sync) {
      snprintf(c->load_error, sizeof c->load_error,
               "%s without %s: kernel_enqueue and device_sync come as a pair (ABI 1.3)",
               a->kernel_enqueue ? "kernel_enqueue" : "device_sync",
               a->kernel_enqueue ? "device_sync" : "kernel_enqueue");
      return MI_ERR_ABI;
    }
  }
  return conform_recreate(c);
}

int32_t conform_recreate(conform_ctx_t *c) {
  mi_error_t err = {0};
  int32_t rc;
  c->loaded = 0;
  if (c->plugin.ctx) c->plugin.api.destroy(c->plugin.ctx);
  c->plugin.ctx = NULL;
  rc = c->plugin.api.create(&c->host, &c->plugin.ctx, &err);
  if (rc != MI_OK || !c->plugin.ctx) {
    snprintf(c->load_error, sizeof c->load_error, "create failed: %s", err.message);
    c->plugin.ctx = NULL;
    return rc != MI_OK ? rc : MI_ERR_INTERNAL;
  }
  rc = c->plugin.api.device_count(c->plugin.ctx, &c->plugin.device_count, &err);
  if (rc != MI_OK) {
    snprintf(c->load_error, sizeof c->load_error, "device_count failed: %s", err.message);
    return rc;
  }
  c->loaded = 1;
  return MI_OK;
}

void conform_unload(conform_ctx_t *c) {
  if (c->plugin.ctx && c->plugin.api.destroy) c->plugin.api.destroy(c->plugin.ctx);
  c->plugin.ctx = NULL;
  if (c->dl) dlclose(c->dl);
  c->dl = NULL;
  c->entry = NULL;
  c->loaded = 0;
  if (c->host_entry) {
    mi__host_api_release(c->host_entry);
    free(c->host_entry);
    c->host_entry = NULL;
  }
}
