/* vk_shared.c - the VkInstance and one VkDevice per physical device, shared by every plugin
 * instance of this loaded library: created on first use, destroyed when the library unloads. */
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NODELETE */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

/* The one deliberate piece of library-wide state. Creating and destroying a VkInstance and its
 * VkDevices per plugin instance makes the loader re-dlopen the ICD and lavapipe start and join
 * its threads every cycle, which leaves a few KiB of heap behind each time (measured without the
 * plugin: +144 B per instance with tcache off, +4.2 KB per instance + device with glibc's
 * defaults). The driver objects live as long as the library; each plugin instance still owns
 * its command pool, fence, layouts, pipelines and buffers. */
static struct {
  pthread_mutex_t lock; /* guards everything below */
  int opened;           /* 1 once the instance and devices exist (or no driver was found) */
  int at_exit;          /* 1 once vk_shared_at_exit is registered */
  VkInstance instance;
  uint32_t ndev;
  mi__vk_shared_dev_t devs[VK_MAX_DEVICES];
} g_vk = {PTHREAD_MUTEX_INITIALIZER, 0, 0, VK_NULL_HANDLE, 0, {{0}}};

static void close_all(void);

/* At exit the driver objects must go while the driver still works. exit() runs the atexit
 * handlers, last registered first, and only then every library's destructors, in reverse load
 * order: the ICD, loaded after this library, is finalised before vk_shared_fini runs, and the
 * host loads plugins RTLD_NODELETE, so that destructor runs at exit, not at unload. NVIDIA's
 * driver crashed there (every mi-run on vulkan:0 of an H200 ended in SIGSEGV; lavapipe does not
 * mind). So a handler registered once the devices exist, after the ICD's own, closes them first. */
static void vk_shared_at_exit(void) {
  pthread_mutex_lock(&g_vk.lock);
  close_all();
  pthread_mutex_unlock(&g_vk.lock);
}

static int pick_queue(VkPhysicalDevice pd, uint32_t *family, uint64_t *ts_mask) {
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
             : q[best].timestampValidBits     ? ((uint64_t)1 << q[best].timestampValidBits) - 1
                                              : 0;
  return 1;
}

/* 16-bit storage and FP16 arithmetic are enabled when the device has both (FP16 variants). */
static int query_fp16(VkPhysicalDevice pd) {
  VkPhysicalDeviceShaderFloat16Int8Features f16;
  VkPhysicalDevice16BitStorageFeatures s16;
  VkPhysicalDeviceFeatures2 f2;
  memset(&s16, 0, sizeof s16);
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  memset(&f16, 0, sizeof f16);
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16.pNext = &s16;
  memset(&f2, 0, sizeof f2);
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &f16;
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  return f16.shaderFloat16 && s16.storageBuffer16BitAccess;
}

/* Whether the device lists extension `name` (a failed query reads as absent). */
static int has_extension(VkPhysicalDevice pd, const char *name) {
  VkExtensionProperties *e;
  uint32_t n = 0, i;
  int found = 0;
  if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
  if (!(e = calloc(n, sizeof *e))) return 0;
  if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
    for (i = 0; i < n && !found; i++) found = strcmp(e[i].extensionName, name) == 0;
  free(e);
  return found;
}

/* One layout for every shader: six storage buffers and a 128-byte push block. */
static VkResult make_layouts(mi__vk_shared_dev_t *s) {
  VkDescriptorSetLayoutBinding b[VK_NBIND];
  VkDescriptorSetLayoutCreateInfo li;
  VkPushConstantRange pr;
  VkPipelineLayoutCreateInfo pli;
  VkResult r;
  uint32_t i;
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
  if ((r = vkCreateDescriptorSetLayout(s->dev, &li, NULL, &s->dsl)) != VK_SUCCESS) return r;
  pr.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  pr.offset = 0;
  pr.size = VK_PUSH_WORDS * 4;
  memset(&pli, 0, sizeof pli);
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &s->dsl;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pr;
  return vkCreatePipelineLayout(s->dev, &pli, NULL, &s->layout);
}

static VkResult open_one(mi__vk_shared_dev_t *s) {
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi;
  VkDeviceCreateInfo di;
  VkPhysicalDeviceShaderFloat16Int8Features f16;
  VkPhysicalDevice16BitStorageFeatures s16;
  const char *ext[1] = {VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME};
  VkResult r;
  memset(&qi, 0, sizeof qi);
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = s->qfamily;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  memset(&di, 0, sizeof di);
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  if (s->has_feedback) {
    di.enabledExtensionCount = 1;
    di.ppEnabledExtensionNames = ext;
  }
  if (s->has_fp16) {
    memset(&s16, 0, sizeof s16);
    s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    s16.storageBuffer16BitAccess = VK_TRUE;
    memset(&f16, 0, sizeof f16);
    f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    f16.shaderFloat16 = VK_TRUE;
    f16.pNext = &s16;
    di.pNext = &f16;
  }
  if ((r = vkCreateDevice(s->phys, &di, NULL, &s->dev)) != VK_SUCCESS) return r;
  vkGetDeviceQueue(s->dev, s->qfamily, 0, &s->queue);
  pthread_mutex_init(&s->queue_lock, NULL);
  pthread_mutex_init(&s->pipe_lock, NULL);
  s->locks = 1;
  return make_layouts(s);
}

static void close_all(void) {
  uint32_t i;
  for (i = 0; i < g_vk.ndev; i++) {
    mi__vk_shared_dev_t *s = &g_vk.devs[i];
    int j;
    if (!s->dev) continue;
    vkDeviceWaitIdle(s->dev);
    for (j = 0; j < s->npipes; j++) vkDestroyPipeline(s->dev, s->pipes[j].pipe, NULL);
    free(s->pipes);
    for (j = 0; j < 16; j++)
      if (s->modules[j]) vkDestroyShaderModule(s->dev, s->modules[j], NULL);
    if (s->layout) vkDestroyPipelineLayout(s->dev, s->layout, NULL);
    if (s->dsl) vkDestroyDescriptorSetLayout(s->dev, s->dsl, NULL);
    vkDestroyDevice(s->dev, NULL);
    if (s->locks) {
      pthread_mutex_destroy(&s->queue_lock);
      pthread_mutex_destroy(&s->pipe_lock);
    }
  }
  memset(g_vk.devs, 0, sizeof g_vk.devs);
  g_vk.ndev = 0;
  if (g_vk.instance) vkDestroyInstance(g_vk.instance, NULL);
  g_vk.instance = VK_NULL_HANDLE;
  g_vk.opened = 0;
}

/* The shared objects loaded in this process, by name (dl_iterate_phdr); past VK_MAX_LOADED (a
 * test process under ASan maps over 64) the rest are not listed, and an ICD among them is not pinned. */
#define VK_MAX_LOADED 512
typedef struct {
  int n;
  char names[VK_MAX_LOADED][256];
} loaded_t;

static int add_loaded(struct dl_phdr_info *info, size_t size, void *data) {
  loaded_t *l = data;
  (void)size;
  if (info->dlpi_name && info->dlpi_name[0] && l->n < VK_MAX_LOADED)
    snprintf(l->names[l->n++], sizeof l->names[0], "%s", info->dlpi_name);
  return 0;
}

/* Every object loaded since `before` (the ICD the loader opened for the instance, and what it
 * needs) stays mapped for the life of the process, as the host keeps its plugins: destroying the
 * instance at exit (vk_shared_at_exit) must not unmap a driver whose threads or one-time tables
 * outlive it. lavapipe keeps a table from a pthread_once for the process's life: unmapped, it
 * became a leak of an unnamed module at exit. Returns how many were pinned. */
static int pin_new_objects(const loaded_t *before) {
  loaded_t *now = malloc(sizeof *now);
  int pinned = 0;
  if (!now) return 0;
  now->n = 0;
  dl_iterate_phdr(add_loaded, now);
  for (int i = 0; i < now->n; i++) {
    int seen = 0;
    for (int j = 0; j < before->n && !seen; j++) seen = strcmp(now->names[i], before->names[j]) == 0;
    void *h = seen ? NULL : dlopen(now->names[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (h) {
      dlclose(h); /* the reference this call took; RTLD_NODELETE stays */
      pinned++;
    }
  }
  free(now);
  return pinned;
}

static int32_t open_all(mi_plugin_ctx_t *ctx, mi_error_t *err) {
  VkApplicationInfo app;
  VkInstanceCreateInfo ii;
  VkPhysicalDevice pds[VK_MAX_DEVICES];
  uint32_t n = VK_MAX_DEVICES, i;
  VkResult r;
  memset(&app, 0, sizeof app);
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "metainfer";
  app.pEngineName = "metainfer-vulkan";
  app.apiVersion = VK_API_VERSION_1_1;
  memset(&ii, 0, sizeof ii);
  ii.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ii.pApplicationInfo = &app;
  loaded_t *before = malloc(sizeof *before);
  if (before) {
    before->n = 0;
    dl_iterate_phdr(add_loaded, before);
  }
  r = vkCreateInstance(&ii, NULL, &g_vk.instance);
  if (r == VK_SUCCESS && before)
    mi__vk_log(ctx, MI_LOG_DEBUG, "vkCreateInstance: %d driver object(s) kept mapped", pin_new_objects(before));
  free(before);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    /* No Vulkan driver installed: a plugin with zero devices, not a failure. */
    g_vk.instance = VK_NULL_HANDLE;
    g_vk.opened = 1;
    mi__vk_log(ctx, MI_LOG_INFO, "vkCreateInstance: %s: no Vulkan device", mi__vk_result_name(r));
    return MI_OK;
  }
  if (r != VK_SUCCESS) {
    g_vk.instance = VK_NULL_HANDLE;
    return mi__vk_fail(err, "vkCreateInstance", r);
  }
  r = vkEnumeratePhysicalDevices(g_vk.instance, &n, pds);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    close_all();
    return mi__vk_fail(err, "vkEnumeratePhysicalDevices", r);
  }
  for (i = 0; i < n; i++) {
    mi__vk_shared_dev_t *s = &g_vk.devs[g_vk.ndev];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pds[i], &props);
    if (VK_API_VERSION_MINOR(props.apiVersion) < 1 && VK_API_VERSION_MAJOR(props.apiVersion) == 1)
      continue;
    if (!pick_queue(pds[i], &s->qfamily, &s->ts_mask)) continue;
    s->phys = pds[i];
    s->has_fp16 = query_fp16(pds[i]);
    /* Creation feedback says whether a pipeline came from the VkPipelineCache (counters). */
    s->has_feedback = has_extension(pds[i], VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    g_vk.ndev++;
    if ((r = open_one(s)) != VK_SUCCESS) {
      close_all();
      return mi__vk_fail(err, "vkCreateDevice", r);
    }
  }
  g_vk.opened = 1;
  if (!g_vk.at_exit) g_vk.at_exit = atexit(vk_shared_at_exit) == 0;
  return MI_OK;
}

int32_t mi__vk_shared_get(mi_plugin_ctx_t *ctx, mi__vk_shared_dev_t **devs, uint32_t *ndev,
                          mi_error_t *err) {
  int32_t rc = MI_OK;
  pthread_mutex_lock(&g_vk.lock);
  if (!g_vk.opened) rc = open_all(ctx, err);
  *devs = g_vk.devs;
  *ndev = rc == MI_OK ? g_vk.ndev : 0;
  pthread_mutex_unlock(&g_vk.lock);
  return rc;
}

/* Looks up or compiles; the caller holds s->pipe_lock. Compile time counts for instance d. */
static int32_t pipeline_locked(mi_plugin_ctx_t *ctx, vk_device_t *d, mi__vk_shared_dev_t *s,
                               const char *shader, const uint32_t *spec, VkPipeline *out,
                               mi_error_t *err) {
  VkSpecializationMapEntry me[VK_NSPEC];
  VkSpecializationInfo si;
  VkComputePipelineCreateInfo ci;
  VkPipelineCreationFeedbackEXT fb, fb_stage;
  VkPipelineCreationFeedbackCreateInfoEXT fbi;
  VkResult r;
  uint64_t t0;
  int i, m = -1;
  *out = VK_NULL_HANDLE;
  for (i = 0; i < s->npipes; i++)
    if (strcmp(s->pipes[i].shader, shader) == 0 &&
        memcmp(s->pipes[i].spec, spec, sizeof s->pipes[i].spec) == 0) {
      *out = s->pipes[i].pipe;
      return MI_OK;
    }
  for (i = 0; mi__vk_spirv[i].name; i++)
    if (strcmp(mi__vk_spirv[i].name, shader) == 0) m = i;
  if (m < 0 || m >= 16) return mi_sdk_errorf(err, MI_ERR_INTERNAL, "vulkan: no shader '%s'", shader);
  if (!s->modules[m]) {
    VkShaderModuleCreateInfo smi;
    memset(&smi, 0, sizeof smi);
    smi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    smi.codeSize = mi__vk_spirv[m].words * 4;
    smi.pCode = mi__vk_spirv[m].code;
    if ((r = vkCreateShaderModule(d->dev, &smi, NULL, &s->modules[m])) != VK_SUCCESS)
      return mi__vk_fail(err, "vkCreateShaderModule", r);
  }
  if (s->npipes == s->cap_pipes) {
    vk_pipe_t *np = mi_sdk_grow(s->pipes, &s->cap_pipes, sizeof *np);
    if (!np) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    s->pipes = np;
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
  ci.stage.module = s->modules[m];
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = s->layout;
  memset(&fb, 0, sizeof fb);
  memset(&fb_stage, 0, sizeof fb_stage);
  if (s->has_feedback) {
    memset(&fbi, 0, sizeof fbi);
    fbi.sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO_EXT;
    fbi.pPipelineCreationFeedback = &fb;
    fbi.pipelineStageCreationFeedbackCount = 1;
    fbi.pPipelineStageCreationFeedbacks = &fb_stage;
    ci.pNext = &fbi;
  }
  t0 = mi__vk_now_ns();
  r = vkCreateComputePipelines(d->dev, d->cache, 1, &ci, NULL, out);
  d->pipeline_ns += mi__vk_now_ns() - t0;
  if (r != VK_SUCCESS) {
    *out = VK_NULL_HANDLE;
    return mi__vk_fail(err, "vkCreateComputePipelines", r);
  }
  d->pipelines_created++;
  if ((fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT_EXT) &&
      (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT))
    d->pipeline_cache_hits++;
  mi__vk_log(ctx, MI_LOG_DEBUG, "pipeline %s [%u %u %u %u %u %u] %s in %.3f ms", shader,
             spec[0], spec[1], spec[2], spec[3], spec[4], spec[5],
             (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT)
                 ? "found in the pipeline cache"
                 : "created",
             (double)(mi__vk_now_ns() - t0) / 1e6);
  snprintf(s->pipes[s->npipes].shader, sizeof s->pipes[s->npipes].shader, "%s", shader);
  memcpy(s->pipes[s->npipes].spec, spec, sizeof s->pipes[s->npipes].spec);
  s->pipes[s->npipes++].pipe = *out;
  return MI_OK;
}

int32_t mi__vk_pipeline(mi_plugin_ctx_t *ctx, vk_device_t *d, const char *shader,
                        const uint32_t *spec, VkPipeline *out, mi_error_t *err) {
  int32_t rc;
  pthread_mutex_lock(&d->shared->pipe_lock);
  rc = pipeline_locked(ctx, d, d->shared, shader, spec, out, err);
  pthread_mutex_unlock(&d->shared->pipe_lock);
  return rc;
}

/* Runs at dlclose in a host that unloads plugins (after vk_shared_at_exit, which then already
 * closed everything), else at exit: every plugin instance is gone by then, so nothing else uses
 * these objects. */
__attribute__((destructor)) static void vk_shared_fini(void) {
  pthread_mutex_lock(&g_vk.lock);
  close_all();
  pthread_mutex_unlock(&g_vk.lock);
}
