/* vk_device.c - one plugin device per shared VkDevice (vk_shared.c): its description and the
 * per-instance objects every kernel shares (command pool, fence, layouts, pipelines). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

static void describe(vk_device_t *d) {
  VkPhysicalDeviceDriverProperties drv;
  VkPhysicalDeviceSubgroupProperties sg;
  VkPhysicalDeviceProperties2 p2;
  mi_device_desc_t *o = &d->desc;
  uint64_t heap = 0;
  uint32_t i, v = d->props.apiVersion;
  memset(&drv, 0, sizeof drv);
  drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  memset(&sg, 0, sizeof sg);
  sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  /* VkPhysicalDeviceDriverProperties is core only from 1.2. */
  sg.pNext = VK_API_VERSION_MINOR(v) >= 2 ? (void *)&drv : NULL;
  memset(&p2, 0, sizeof p2);
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &sg;
  vkGetPhysicalDeviceProperties2(d->phys, &p2);
  d->subgroup_size = sg.subgroupSize;
  snprintf(d->driver_name, sizeof d->driver_name, "%s", drv.driverName);
  snprintf(d->driver_info, sizeof d->driver_info, "%s", drv.driverInfo);
  d->has_fp16 = d->shared->has_fp16;
  vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
  for (i = 0; i < d->mem.memoryHeapCount; i++)
    if (d->mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      heap += d->mem.memoryHeaps[i].size;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->kind = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? MI_DEVICE_CPU : MI_DEVICE_GPU;
  snprintf(o->name, sizeof o->name, "%.127s", d->props.deviceName);
  snprintf(o->vendor, sizeof o->vendor, "vendor 0x%04x", d->props.vendorID);
  snprintf(o->driver_version, sizeof o->driver_version, "%.16s %.12s (0x%x, Vulkan %u.%u.%u)",
           d->driver_name[0] ? d->driver_name : "driver", d->driver_info,
           d->props.driverVersion, VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
           VK_API_VERSION_PATCH(v));
  snprintf(o->isa, sizeof o->isa, "spirv-vulkan%u.%u-sg%u", VK_API_VERSION_MAJOR(v),
           VK_API_VERSION_MINOR(v), d->subgroup_size);
  o->global_memory_bytes = heap;
  o->local_memory_bytes = d->props.limits.maxComputeSharedMemorySize;
  o->max_threads = d->props.limits.maxComputeWorkGroupInvocations;
  o->dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  o->layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  o->channel_alignment = 1;
  o->buffer_alignment = (uint32_t)d->props.limits.minStorageBufferOffsetAlignment;
  o->max_buffer_bytes = d->props.limits.maxStorageBufferRange;
}

static int32_t open_device(mi_plugin_ctx_t *ctx, vk_device_t *d, mi_error_t *err) {
  VkCommandPoolCreateInfo pi;
  VkFenceCreateInfo fi;
  VkResult r;
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = d->qfamily;
  if ((r = vkCreateCommandPool(d->dev, &pi, NULL, &d->cmd_pool)) != VK_SUCCESS)
    return mi__vk_fail(err, "vkCreateCommandPool", r);
  memset(&fi, 0, sizeof fi);
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if ((r = vkCreateFence(d->dev, &fi, NULL, &d->fence)) != VK_SUCCESS)
    return mi__vk_fail(err, "vkCreateFence", r);
  d->dsl = d->shared->dsl;
  d->layout = d->shared->layout;
  if (mi__vk_cache_open(ctx, d, err) != MI_OK) return err ? err->code : MI_ERR_DEVICE;
  {
    int32_t rc = mi__vk_buffer_alloc(ctx, (uint32_t)(d - ctx->devs), 64, &d->dummy, err);
    if (rc != MI_OK) return rc;
  }
  memset(d->dummy->map, 0, 64); /* bound to unused slots: reads there see zeros */
  return MI_OK;
}

int32_t mi__vk_devices_open(mi_plugin_ctx_t *ctx, mi_error_t *err) {
  mi__vk_shared_dev_t *sh;
  uint32_t n, i;
  int32_t rc;
  if ((rc = mi__vk_shared_get(ctx, &sh, &n, err)) != MI_OK) return rc;
  if (n == 0) return MI_OK;
  if (!(ctx->devs = calloc(n, sizeof *ctx->devs)))
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  for (i = 0; i < n; i++) {
    vk_device_t *d = &ctx->devs[i];
    d->shared = &sh[i]; /* outlives every instance */
    d->phys = sh[i].phys;
    d->dev = sh[i].dev;
    d->queue = sh[i].queue;
    d->qfamily = sh[i].qfamily;
    d->ts_mask = sh[i].ts_mask;
    vkGetPhysicalDeviceProperties(d->phys, &d->props);
    d->has_timer = d->ts_mask != 0 && d->props.limits.timestampComputeAndGraphics;
    d->ts_period = d->props.limits.timestampPeriod;
    describe(d);
    ctx->sdk.device_count++;
    if ((rc = open_device(ctx, d, err)) != MI_OK) return rc;
  }
  return MI_OK;
}

void mi__vk_devices_close(mi_plugin_ctx_t *ctx) {
  uint32_t i;
  for (i = 0; i < ctx->sdk.device_count; i++) {
    vk_device_t *d = &ctx->devs[i];
    if (!d->dev) continue;
    /* Work enqueued and never synced (the host syncs first) is submitted and waited for. */
    (void)mi__vk_flush(d, NULL);
    free(d->pend);
    free(d->pend_cmd);
    d->pend = NULL;
    d->pend_cmd = NULL;
    /* Otherwise only a timed-out run can still be on the queue. */
    pthread_mutex_lock(&d->shared->queue_lock);
    vkQueueWaitIdle(d->queue);
    pthread_mutex_unlock(&d->shared->queue_lock);
    mi__vk_buffer_free(ctx, d->dummy);
    if (d->cache) {
      mi__vk_cache_save(ctx, d);
      vkDestroyPipelineCache(d->dev, d->cache, NULL);
    }
    if (d->fence) vkDestroyFence(d->dev, d->fence, NULL);
    if (d->cmd_pool) vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
  }
  free(ctx->devs);
  ctx->devs = NULL;
  ctx->sdk.device_count = 0;
}
