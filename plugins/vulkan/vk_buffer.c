/* vk_buffer.c - device buffers: a VkBuffer bound to host-visible coherent memory (device-local
 * when the device offers such a type), capped at maxStorageBufferRange. */
#include <stdlib.h>
#include <string.h>

#include "vk.h"

/* Buffer serials (mi_buffer.serial): never reused, unlike a freed VkBuffer's handle value. */
static uint64_t g_serial;

static int find_memory(const vk_device_t *d, uint32_t type_bits, uint32_t *out) {
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t i, pass;
  /* Prefer memory that is both device-local and mappable (UMA devices, lavapipe, ReBAR). */
  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < d->mem.memoryTypeCount; i++) {
      VkMemoryPropertyFlags f = d->mem.memoryTypes[i].propertyFlags;
      if (!(type_bits & (1u << i)) || (f & want) != want) continue;
      if (pass == 0 && !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
      *out = i;
      return 1;
    }
  return 0;
}

int32_t mi__vk_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                            mi_buffer_t **out, mi_error_t *err) {
  vk_device_t *d;
  mi_buffer_t *b;
  VkBufferCreateInfo bi;
  VkMemoryRequirements req;
  VkMemoryAllocateInfo ai;
  VkResult r;
  uint32_t type;
  int32_t rc;
  if (out) *out = NULL;
  if (!ctx || !out) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: buffer_alloc: NULL argument");
  if (device >= ctx->sdk.device_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: buffer_alloc: no device %u (%u devices)",
                         device, ctx->sdk.device_count);
  d = &ctx->devs[device];
  if (bytes > d->props.limits.maxStorageBufferRange)
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                         "vulkan: buffer of %llu bytes exceeds maxStorageBufferRange (%u bytes) of %s",
                         (unsigned long long)bytes, d->props.limits.maxStorageBufferRange,
                         d->props.deviceName);
  if (!(b = calloc(1, sizeof *b))) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  b->bytes = bytes;
  b->device = device;
  b->serial = __atomic_add_fetch(&g_serial, 1, __ATOMIC_RELAXED);
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = bytes < 16 ? 16 : (bytes + 3) & ~(uint64_t)3; /* shaders read whole words */
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if ((r = vkCreateBuffer(d->dev, &bi, NULL, &b->buf)) != VK_SUCCESS) {
    rc = mi__vk_fail(err, "vkCreateBuffer", r);
    goto fail;
  }
  vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
  if (!find_memory(d, req.memoryTypeBits, &type)) {
    rc = mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "vulkan: %s has no host-visible coherent memory type",
                       d->props.deviceName);
    goto fail;
  }
  memset(&ai, 0, sizeof ai);
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  if ((r = vkAllocateMemory(d->dev, &ai, NULL, &b->mem)) != VK_SUCCESS) {
    rc = mi__vk_fail(err, "vkAllocateMemory", r);
    goto fail;
  }
  if ((r = vkBindBufferMemory(d->dev, b->buf, b->mem, 0)) != VK_SUCCESS) {
    rc = mi__vk_fail(err, "vkBindBufferMemory", r);
    goto fail;
  }
  if ((r = vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map)) != VK_SUCCESS) {
    rc = mi__vk_fail(err, "vkMapMemory", r);
    goto fail;
  }
  /* Only the word-rounding tail is zeroed: the host writes a tensor before it is read (its memory
   * plan reuses buffers), and zeroing the whole mapping made every page resident. */
  memset((char *)b->map + bytes, 0, (size_t)(bi.size - bytes));
  b->alloc_bytes = req.size;
  d->bytes_allocated += req.size;
  *out = b;
  return MI_OK;
fail:
  if (b->mem) vkFreeMemory(d->dev, b->mem, NULL);
  if (b->buf) vkDestroyBuffer(d->dev, b->buf, NULL);
  free(b);
  return rc;
}

static int32_t check_range(const mi_buffer_t *b, uint64_t off, uint64_t bytes, const char *what,
                           mi_error_t *err) {
  if (!b) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: %s: NULL buffer", what);
  if (off > b->bytes || bytes > b->bytes - off)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "vulkan: %s of %llu bytes at offset %llu past the end of a %llu-byte buffer",
                         what, (unsigned long long)bytes, (unsigned long long)off,
                         (unsigned long long)b->bytes);
  return MI_OK;
}

int32_t mi__vk_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *src,
                            uint64_t bytes, mi_error_t *err) {
  int32_t rc = check_range(b, off, bytes, "buffer_write", err);
  (void)ctx;
  if (rc != MI_OK) return rc;
  if (bytes && !src) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: buffer_write: NULL source");
  if (bytes) memcpy((char *)b->map + off, src, (size_t)bytes);
  return MI_OK;
}

int32_t mi__vk_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, void *dst,
                           uint64_t bytes, mi_error_t *err) {
  int32_t rc = check_range(b, off, bytes, "buffer_read", err);
  (void)ctx;
  if (rc != MI_OK) return rc;
  if (bytes && !dst) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: buffer_read: NULL destination");
  if (bytes) memcpy(dst, (const char *)b->map + off, (size_t)bytes);
  return MI_OK;
}

void mi__vk_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b) {
  vk_device_t *d;
  if (!ctx || !b || b->device >= ctx->sdk.device_count) return;
  d = &ctx->devs[b->device];
  if (b->map) vkUnmapMemory(d->dev, b->mem);
  vkDestroyBuffer(d->dev, b->buf, NULL);
  vkFreeMemory(d->dev, b->mem, NULL);
  d->bytes_allocated -= b->alloc_bytes;
  free(b);
}
