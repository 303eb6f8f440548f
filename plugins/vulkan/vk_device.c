/* vk_device.c - the Vulkan instance, one plugin device per physical device with a compute
 * queue, its description, and the per-device objects every kernel shares (layouts, pipelines). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

static int32_t pick_queue(VkPhysicalDevice pd, uint32_t *family, uint64_t *ts_mask) {
  VkQueueFamilyProperties q[16];
  uint32_t n = 16, i, best = UINT32_MAX;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
  /* A compute-only family is usually the dedicated async-compute queue; otherwise any. */
  for (i = 0; i < n; i++)
    if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
      best = i;
      break;
    }
  for (i = 0; best == UINT32_MAX && i < n; i++)
    if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) best = i;
  if (best == UINT32_MAX) return 0;
  *family = best;
  *ts_mask = q[best].timestampValidBits >= 64 ? UINT64_MAX
             : q[best].timestampValidBits ? ((uint64_t)1 << q[best].timestampValidBits) - 1
                                          : 0;
  return 1;
}

static void describe(vk_device_t *d) {
  VkPhysicalDeviceDriverProperties drv;
  VkPhysicalDeviceSubgroupProperties sg;
  VkPhysicalDeviceProperties2 p2;
  VkPhysicalDeviceShaderFloat16Int8Features f16;
  VkPhysicalDevice16BitStorageFeatures s16;
  VkPhysicalDeviceFeatures2 f2;
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
  memset(&s16, 0, sizeof s16);
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  memset(&f16, 0, sizeof f16);
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16.pNext = &s16;
  memset(&f2, 0, sizeof f2);
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &f16;
  vkGetPhysicalDeviceFeatures2(d->phys, &f2);
  d->has_fp16 = f16.shaderFloat16 && s16.storageBuffer16BitAccess;
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
  /* FP16 kernels are not written yet: only FP32 is claimed, whatever the device supports. */
  o->dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  o->layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW);
  o->channel_alignment = 1;
  o->buffer_alignment = (uint32_t)d->props.limits.minStorageBufferOffsetAlignment;
  o->max_buffer_bytes = d->props.limits.maxStorageBufferRange;
}

static int32_t open_device(mi_plugin_ctx_t *ctx, vk_device_t *d, mi_error_t *err) {
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi;
  VkDeviceCreateInfo di;
  VkCommandPoolCreateInfo pi;
  VkFenceCreateInfo fi;
  VkDescriptorSetLayoutBinding b[VK_NBIND];
  VkDescriptorSetLayoutCreateInfo li;
  VkPushConstantRange pr;
  VkPipelineLayoutCreateInfo pli;
  VkResult r;
  uint32_t i;
  memset(&qi, 0, sizeof qi);
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = d->qfamily;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  memset(&di, 0, sizeof di);
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  if ((r = vkCreateDevice(d->phys, &di, NULL, &d->dev)) != VK_SUCCESS)
    return mi__vk_fail(err, "vkCreateDevice", r);
  vkGetDeviceQueue(d->dev, d->qfamily, 0, &d->queue);
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
  /* One layout for every shader: six storage buffers and a 128-byte push block. */
  memset(b, 0, sizeof b);
  for (i = 0; i < VK_NBIND; i++) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  memset(&li, 0, sizeof li);
  li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  li.bindingCount = VK_NBIND;
  li.pBindings = b;
  if ((r = vkCreateDescriptorSetLayout(d->dev, &li, NULL, &d->dsl)) != VK_SUCCESS)
    return mi__vk_fail(err, "vkCreateDescriptorSetLayout", r);
  pr.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  pr.offset = 0;
  pr.size = VK_PUSH_WORDS * 4;
  memset(&pli, 0, sizeof pli);
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &d->dsl;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pr;
  if ((r = vkCreatePipelineLayout(d->dev, &pli, NULL, &d->layout)) != VK_SUCCESS)
    return mi__vk_fail(err, "vkCreatePipelineLayout", r);
  if (mi__vk_cache_open(ctx, d, err) != MI_OK) return err ? err->code : MI_ERR_DEVICE;
  return mi__vk_buffer_alloc(ctx, (uint32_t)(d - ctx->devs), 64, &d->dummy, err);
}

int32_t mi__vk_devices_open(mi_plugin_ctx_t *ctx, mi_error_t *err) {
  VkApplicationInfo app;
  VkInstanceCreateInfo ii;
  VkPhysicalDevice pds[16];
  uint32_t n = 16, i;
  VkResult r;
  int32_t rc;
  memset(&app, 0, sizeof app);
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "metainfer";
  app.pEngineName = "metainfer-vulkan";
  app.apiVersion = VK_API_VERSION_1_1;
  memset(&ii, 0, sizeof ii);
  ii.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ii.pApplicationInfo = &app;
  r = vkCreateInstance(&ii, NULL, &ctx->instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    /* No Vulkan driver installed: a plugin with zero devices, not a failure. */
    ctx->instance = VK_NULL_HANDLE;
    mi__vk_log(ctx, MI_LOG_INFO, "vkCreateInstance: %s: no Vulkan device", mi__vk_result_name(r));
    return MI_OK;
  }
  if (r != VK_SUCCESS) return mi__vk_fail(err, "vkCreateInstance", r);
  r = vkEnumeratePhysicalDevices(ctx->instance, &n, pds);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return mi__vk_fail(err, "vkEnumeratePhysicalDevices", r);
  ctx->devs = calloc(n ? n : 1, sizeof *ctx->devs);
  if (!ctx->devs) return mi__vk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  for (i = 0; i < n; i++) {
    vk_device_t *d = &ctx->devs[ctx->ndev];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pds[i], &props);
    if (VK_API_VERSION_MINOR(props.apiVersion) < 1 && VK_API_VERSION_MAJOR(props.apiVersion) == 1)
      continue;
    if (!pick_queue(pds[i], &d->qfamily, &d->ts_mask)) continue;
    d->phys = pds[i];
    d->props = props;
    d->has_timer = d->ts_mask != 0 && props.limits.timestampComputeAndGraphics;
    d->ts_period = props.limits.timestampPeriod;
    describe(d);
    ctx->ndev++;
    if ((rc = open_device(ctx, d, err)) != MI_OK) return rc;
  }
  return MI_OK;
}

void mi__vk_devices_close(mi_plugin_ctx_t *ctx) {
  uint32_t i;
  int j;
  for (i = 0; i < ctx->ndev; i++) {
    vk_device_t *d = &ctx->devs[i];
    if (!d->dev) continue;
    vkDeviceWaitIdle(d->dev);
    mi__vk_buffer_free(ctx, d->dummy);
    for (j = 0; j < d->npipes; j++) vkDestroyPipeline(d->dev, d->pipes[j].pipe, NULL);
    free(d->pipes);
    for (j = 0; j < 16; j++)
      if (d->modules[j]) vkDestroyShaderModule(d->dev, d->modules[j], NULL);
    if (d->cache) {
      mi__vk_cache_save(ctx, d);
      vkDestroyPipelineCache(d->dev, d->cache, NULL);
    }
    if (d->layout) vkDestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->dsl) vkDestroyDescriptorSetLayout(d->dev, d->dsl, NULL);
    if (d->fence) vkDestroyFence(d->dev, d->fence, NULL);
    if (d->cmd_pool) vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
    vkDestroyDevice(d->dev, NULL);
  }
  free(ctx->devs);
  ctx->devs = NULL;
  ctx->ndev = 0;
  if (ctx->instance) vkDestroyInstance(ctx->instance, NULL);
  ctx->instance = VK_NULL_HANDLE;
}

int32_t mi__vk_pipeline(mi_plugin_ctx_t *ctx, vk_device_t *d, const char *shader,
                        const uint32_t *spec, VkPipeline *out, mi_error_t *err) {
  VkSpecializationMapEntry me[VK_NSPEC];
  VkSpecializationInfo si;
  VkComputePipelineCreateInfo ci;
  VkResult r;
  uint64_t t0;
  int i, m = -1;
  *out = VK_NULL_HANDLE;
  for (i = 0; i < d->npipes; i++)
    if (strcmp(d->pipes[i].shader, shader) == 0 &&
        memcmp(d->pipes[i].spec, spec, sizeof d->pipes[i].spec) == 0) {
      *out = d->pipes[i].pipe;
      return MI_OK;
    }
  for (i = 0; mi__vk_spirv[i].name; i++)
    if (strcmp(mi__vk_spirv[i].name, shader) == 0) m = i;
  if (m < 0 || m >= 16) return mi__vk_errorf(err, MI_ERR_INTERNAL, "vulkan: no shader '%s'", shader);
  if (!d->modules[m]) {
    VkShaderModuleCreateInfo smi;
    memset(&smi, 0, sizeof smi);
    smi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    smi.codeSize = mi__vk_spirv[m].words * 4;
    smi.pCode = mi__vk_spirv[m].code;
    if ((r = vkCreateShaderModule(d->dev, &smi, NULL, &d->modules[m])) != VK_SUCCESS)
      return mi__vk_fail(err, "vkCreateShaderModule", r);
  }
  if (d->npipes == d->cap_pipes) {
    int cap = d->cap_pipes ? d->cap_pipes * 2 : 16;
    vk_pipe_t *np = realloc(d->pipes, (size_t)cap * sizeof *np);
    if (!np) return mi__vk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    d->pipes = np;
    d->cap_pipes = cap;
  }
  for (i = 0; i < VK_NSPEC; i++) {
    me[i].constantID = (uint32_t)i;
    me[i].offset = (uint32_t)(i * 4);
    me[i].size = 4;
  }
  si.mapEntryCount = VK_NSPEC;
  si.pMapEntries = me;
  si.dataSize = VK_NSPEC * 4;
  si.pData = spec;
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = d->modules[m];
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = d->layout;
  t0 = mi__vk_now_ns();
  r = vkCreateComputePipelines(d->dev, d->cache, 1, &ci, NULL, out);
  d->pipeline_ns += mi__vk_now_ns() - t0;
  if (r != VK_SUCCESS) {
    *out = VK_NULL_HANDLE;
    return mi__vk_fail(err, "vkCreateComputePipelines", r);
  }
  mi__vk_log(ctx, MI_LOG_DEBUG, "pipeline %s [%u %u %u %u %u %u] created in %.3f ms", shader,
             spec[0], spec[1], spec[2], spec[3], spec[4], spec[5],
             (double)(mi__vk_now_ns() - t0) / 1e6);
  snprintf(d->pipes[d->npipes].shader, sizeof d->pipes[d->npipes].shader, "%s", shader);
  memcpy(d->pipes[d->npipes].spec, spec, sizeof d->pipes[d->npipes].spec);
  d->pipes[d->npipes++].pipe = *out;
  return MI_OK;
}
