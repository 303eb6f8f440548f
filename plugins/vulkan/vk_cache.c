/* vk_cache.c - the VkPipelineCache persisted on disk, one file per (vendor, device, driver
 * version, pipelineCacheUUID), written atomically; a file that does not match is ignored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vk.h"

static const char *setting(mi_plugin_ctx_t *ctx, const char *key) {
  const char *v = NULL;
  if (ctx->host && MI_HAS_FIELD(ctx->host, mi_host_api_t, get_setting) && ctx->host->get_setting)
    v = ctx->host->get_setting(ctx->host->host_ctx, key);
  if (!v) v = getenv(key);
  return v && v[0] ? v : NULL;
}

/* mkdir -p; returns 0 on success. */
static int make_dirs(char *path) {
  char *s;
  for (s = path + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
      *s = '/';
      return -1;
    }
    *s = '/';
  }
  return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static void cache_path(mi_plugin_ctx_t *ctx, vk_device_t *d) {
  char dir[512];
  const char *v;
  int i, n;
  d->cache_path[0] = '\0';
  if ((v = setting(ctx, "MI_CACHE_DIR")))
    n = snprintf(dir, sizeof dir, "%s/vulkan", v);
  else if ((v = setting(ctx, "XDG_CACHE_HOME")))
    n = snprintf(dir, sizeof dir, "%s/metainfer/vulkan", v);
  else if ((v = setting(ctx, "HOME")))
    n = snprintf(dir, sizeof dir, "%s/.cache/metainfer/vulkan", v);
  else
    return;
  if (n < 0 || (size_t)n >= sizeof dir || make_dirs(dir) != 0) {
    mi__vk_log(ctx, MI_LOG_WARN, "pipeline cache directory '%s' unusable; cache off", dir);
    return;
  }
  n = snprintf(d->cache_path, sizeof d->cache_path, "%s/%04x-%04x-%08x-", dir,
               d->props.vendorID, d->props.deviceID, d->props.driverVersion);
  for (i = 0; i < (int)VK_UUID_SIZE && n > 0 && (size_t)n + 2 < sizeof d->cache_path; i++)
    n += snprintf(d->cache_path + n, sizeof d->cache_path - (size_t)n, "%02x",
                  d->props.pipelineCacheUUID[i]);
  if (n > 0 && (size_t)n + 5 < sizeof d->cache_path)
    memcpy(d->cache_path + n, ".bin", 5);
  else
    d->cache_path[0] = '\0';
}

/* The header every VkPipelineCache blob starts with must name this very device. */
static int header_matches(const vk_device_t *d, const unsigned char *b, size_t n) {
  uint32_t w[4];
  if (n < 32) return 0;
  memcpy(w, b, sizeof w);
  return w[0] >= 32 && w[0] <= n && w[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         w[2] == d->props.vendorID && w[3] == d->props.deviceID &&
         memcmp(b + 16, d->props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long n;
  *size = 0;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && n < (64l << 20) &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL) {
    if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
      *size = (size_t)n;
    } else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

int32_t mi__vk_cache_open(mi_plugin_ctx_t *ctx, vk_device_t *d, mi_error_t *err) {
  VkPipelineCacheCreateInfo ci;
  unsigned char *blob = NULL;
  size_t n = 0;
  VkResult r;
  cache_path(ctx, d);
  if (d->cache_path[0]) blob = read_file(d->cache_path, &n);
  if (blob && !header_matches(d, blob, n)) {
    mi__vk_log(ctx, MI_LOG_WARN, "pipeline cache %s does not match this device; ignored",
               d->cache_path);
    free(blob);
    blob = NULL;
    n = 0;
  }
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  ci.initialDataSize = n;
  ci.pInitialData = blob;
  r = vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache);
  if (r != VK_SUCCESS && blob) {
    /* A driver that rejects the blob gets an empty cache; the file is rewritten at close. */
    ci.initialDataSize = 0;
    ci.pInitialData = NULL;
    n = 0;
    r = vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache);
  }
  free(blob);
  if (r != VK_SUCCESS) return mi__vk_fail(err, "vkCreatePipelineCache", r);
  d->cache_loaded_bytes = n;
  if (n) mi__vk_log(ctx, MI_LOG_DEBUG, "pipeline cache %s: %zu bytes loaded", d->cache_path, n);
  return MI_OK;
}

void mi__vk_cache_save(mi_plugin_ctx_t *ctx, vk_device_t *d) {
  char tmp[700];
  size_t n = 0;
  void *blob;
  FILE *f;
  int ok;
  if (!d->cache_path[0] || !d->cache) return;
  if (vkGetPipelineCacheData(d->dev, d->cache, &n, NULL) != VK_SUCCESS || n == 0) return;
  if (!(blob = malloc(n))) return;
  if (vkGetPipelineCacheData(d->dev, d->cache, &n, blob) != VK_SUCCESS) {
    free(blob);
    return;
  }
  /* Unique per process and object so concurrent writers never share a temp file. */
  snprintf(tmp, sizeof tmp, "%s.%ld.%p.tmp", d->cache_path, (long)getpid(), (void *)d);
  f = fopen(tmp, "wb");
  ok = f && fwrite(blob, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, d->cache_path) != 0) ok = 0;
  if (!ok) {
    remove(tmp);
    mi__vk_log(ctx, MI_LOG_WARN, "pipeline cache %s not written", d->cache_path);
  }
  free(blob);
}
