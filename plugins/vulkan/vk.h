/* vk.h - internal declarations shared by the files of the Vulkan compute plugin. */
#ifndef MI_VK_H
#define MI_VK_H

#include <pthread.h>
#include <vulkan/vulkan.h>

#include "metainfer/mi_sdk.h"

#define VK_PLUGIN_NAME "vulkan"
#define VK_NBIND 6       /* storage-buffer bindings of the one descriptor-set layout */
#define VK_PUSH_WORDS 32 /* 128 bytes: the guaranteed minimum maxPushConstantsSize */
#define VK_NSPEC 8       /* spec constants: the 6 knobs, then 2 shape constants (K_STRIDE, K_KSIZE) */
#define VK_MAX_DISP 24
#define VK_MAX_OWN 24
#define VK_MAX_IO 32
#define VK_MAX_DEVICES 16

typedef struct mi__vk_spirv {
  const char *name;
  const uint32_t *code;
  size_t words;
} mi__vk_spirv_t;
extern const mi__vk_spirv_t mi__vk_spirv[];

/* ---------------------------------------------------------------- devices */

typedef struct vk_pipe {
  char shader[16];
  uint32_t spec[VK_NSPEC];
  VkPipeline pipe;
} vk_pipe_t;

/* A VkDevice and its compiled pipelines, shared by every plugin instance of the loaded
 * library (vk_shared.c). */
typedef struct mi__vk_shared_dev {
  VkPhysicalDevice phys;
  VkDevice dev;
  VkQueue queue;
  uint32_t qfamily;
  uint64_t ts_mask;           /* valid timestamp bits */
  int has_fp16;               /* shaderFloat16 + storageBuffer16BitAccess, enabled */
  int has_feedback;           /* VK_EXT_pipeline_creation_feedback enabled: cache hits visible */
  pthread_mutex_t queue_lock; /* vkQueueSubmit/vkQueueWaitIdle need the queue to themselves */
  VkDescriptorSetLayout dsl;  /* one layout for every shader */
  VkPipelineLayout layout;
  pthread_mutex_t pipe_lock;  /* guards modules and pipes */
  int locks;                  /* the two mutexes are initialised */
  VkShaderModule modules[16]; /* per entry of mi__vk_spirv, created on first use */
  vk_pipe_t *pipes;
  int npipes, cap_pipes;
} mi__vk_shared_dev_t;

/* The library's instance and devices, created on the first call; *ndev is 0 without a driver. */
int32_t mi__vk_shared_get(mi_plugin_ctx_t *ctx, mi__vk_shared_dev_t **devs, uint32_t *ndev,
                          mi_error_t *err);

typedef struct vk_device {
  mi__vk_shared_dev_t *shared; /* owner of dev and queue */
  VkPhysicalDevice phys;
  VkDevice dev;
  VkQueue queue;
  uint32_t qfamily;
  VkCommandPool cmd_pool;
  VkFence fence;
  VkDescriptorSetLayout dsl;
  VkPipelineLayout layout;
  VkPipelineCache cache; /* this instance's, persisted on disk */
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceMemoryProperties mem;
  char driver_name[VK_MAX_DRIVER_NAME_SIZE];
  char driver_info[VK_MAX_DRIVER_INFO_SIZE];
  uint32_t subgroup_size;
  int has_fp16;
  int has_timer;
  double ts_period; /* ns per timestamp tick */
  uint64_t ts_mask; /* valid timestamp bits */
  mi_device_desc_t desc;
  char cache_path[640]; /* "" when the disk cache is off */
  uint64_t cache_loaded_bytes;
  /* cumulative counters */
  uint64_t device_ns, pipeline_ns, first_run_ns, bytes_allocated;
  uint64_t pipelines_created, pipeline_cache_hits; /* hits as the driver's feedback reports */
  struct mi_buffer *dummy;
  /* ABI 1.3: the command buffers of the kernels kernel_enqueue took since the last device_sync,
   * submitted together by it (vk_submit.c); device time of batches an enqueue had to submit
   * early (a kernel enqueued twice), reported by the next sync. */
  struct mi_kernel **pend;
  VkCommandBuffer *pend_cmd;
  int npend, cap_pend;
  uint64_t pend_ns;
  mi_sdk_tables_t tables;       /* what the SDK helper describes for this device */
  mi_sdk_counter_t counters[7]; /* the counter table with this device's timer resolution */
} vk_device_t;

struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk; /* first: the SDK helper answers the description calls from it */
  const mi_host_api_t *host;
  vk_device_t *devs;
};

struct mi_buffer {
  VkBuffer buf;
  VkDeviceMemory mem;
  void *map;
  uint64_t bytes;
  uint64_t alloc_bytes;
  uint32_t device;
  uint64_t serial; /* unique to this allocation: a recorded command buffer knows its buffers by it */
};

/* ---------------------------------------------------------------- prepared kernels */

enum { REF_NONE = MI_SDK_IO_NONE,
       REF_IN = MI_SDK_IO_INPUT,
       REF_OUT = MI_SDK_IO_OUTPUT,
       REF_OWN };

typedef struct vk_ref {
  int kind;
  int32_t index;
} vk_ref_t;

typedef struct vk_disp {
  VkPipeline pipe; /* NULL: a buffer copy from bind[0] to bind[2] */
  vk_ref_t bind[VK_NBIND];
  uint32_t push[VK_PUSH_WORDS];
  uint32_t groups[3];
  uint64_t copy_bytes;
  uint64_t src_off, dst_off; /* of a buffer copy, in bytes */
} vk_disp_t;

struct mi_kernel {
  vk_device_t *dev;
  uint32_t device;
  char node[64];   /* the node it was prepared for, named when its batch fails */
  int pending;     /* in dev->pend: enqueued, not yet submitted */
  uint64_t enq_ns; /* when it was enqueued (its first run's latency counter) */
  int nd;
  vk_disp_t disp[VK_MAX_DISP];
  int nown;
  struct mi_buffer *own[VK_MAX_OWN];
  int n_in, n_out;
  uint64_t in_bytes[VK_MAX_IO], out_bytes[VK_MAX_IO];
  VkDescriptorPool dpool;
  VkDescriptorSet sets[VK_MAX_DISP];
  VkCommandBuffer cmd;
  VkQueryPool qpool;
  int ran;
  /* The command buffer as recorded for these buffers (serials of the inputs, then the outputs):
   * a run with the same buffers submits it again without recording or descriptor updates. */
  int recorded;
  uint64_t rec_serial[2 * VK_MAX_IO];
};

/* ---------------------------------------------------------------- errors (vk_errors.c) */

const char *mi__vk_result_name(VkResult r);
/* "call: VK_NAME" into err; MI_ERR_OUT_OF_MEMORY for memory errors, else MI_ERR_DEVICE. */
int32_t mi__vk_fail(mi_error_t *err, const char *call, VkResult r);
void mi__vk_log(const mi_plugin_ctx_t *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint64_t mi__vk_now_ns(void);

/* ---------------------------------------------------------------- devices, cache, buffers */

int32_t mi__vk_devices_open(mi_plugin_ctx_t *ctx, mi_error_t *err);
void mi__vk_devices_close(mi_plugin_ctx_t *ctx);
/* Opens the device's VkPipelineCache from disk (a bad file is ignored). */
int32_t mi__vk_cache_open(mi_plugin_ctx_t *ctx, vk_device_t *d, mi_error_t *err);
/* Writes the cache atomically (temp file + rename); failures are logged, not fatal. */
void mi__vk_cache_save(mi_plugin_ctx_t *ctx, vk_device_t *d);
/* A pipeline for (shader, spec constants), created once per shared device and kept until the
 * library unloads (vk_shared.c). */
int32_t mi__vk_pipeline(mi_plugin_ctx_t *ctx, vk_device_t *d, const char *shader,
                        const uint32_t *spec, VkPipeline *out, mi_error_t *err);

int32_t mi__vk_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                            mi_buffer_t **out, mi_error_t *err);
int32_t mi__vk_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *src,
                            uint64_t bytes, mi_error_t *err);
int32_t mi__vk_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, void *dst,
                           uint64_t bytes, mi_error_t *err);
void mi__vk_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b);

/* ---------------------------------------------------------------- knobs (vk_knobs.c) */

enum { K_LOCAL_X,
       K_LOCAL_Y,
       K_TILE_K,
       K_UNROLL,
       K_REG_M,
       K_REG_N,
       K_COUNT };
/* Spec constants after the knobs: shapes a pipeline is compiled for (conv.dw_vec's stride and
 * kernel size, so its loops unroll into registers); 1 where a shader does not read them. */
enum { K_STRIDE = K_COUNT,
       K_KSIZE };
enum { SH_1D,
       SH_CONV,
       SH_GEMM_NAIVE,
       SH_GEMM_TILED,
       SH_VEC };

typedef struct vk_variant {
  mi_sdk_variant_t v; /* id, op type, dtype (FP16 for the fp16 ones), knob_mask (bit per K_*) */
  int shape;          /* SH_*: which constraints apply */
  int64_t dflt[K_COUNT];
  int fp16; /* FP16 weights and products: listed only on devices with FP16 */
} vk_variant_t;

/* Variants listed on device d: the FP16 ones come last and only when the device has FP16. */
const mi_sdk_tables_t *mi__vk_tables(const vk_device_t *d);
/* Every variant the plugin knows, fp16 ones included (check_config names what a device lacks). */
const mi_sdk_tables_t *mi__vk_tables_all(void);
const vk_variant_t *mi__vk_variant_default(const char *op);
/* What an "auto" kernel runs: the op's default, except on a CPU device (below, vk_knobs.c). */
const vk_variant_t *mi__vk_variant_auto(const vk_device_t *dev, const mi_kernel_desc_t *desc);
int32_t mi__vk_constraint_desc(const vk_device_t *d, uint32_t i, mi_constraint_desc_t *out);
/* Effective knob values (spec constants) of `v`; MI_ERR_INVALID_CONFIG names the broken rule. */
int32_t mi__vk_knobs_resolve(const vk_device_t *d, const vk_variant_t *v,
                             const mi_knob_value_t *knobs, int32_t count, uint32_t *spec,
                             mi_error_t *err);

/* ---------------------------------------------------------------- preparing */

enum {
  ACT_NONE = 0,
  ACT_RELU,
  ACT_CLIP,
  ACT_LEAKY,
  ACT_SIGMOID,
  ACT_TANH,
  ACT_HSIGMOID,
  ACT_HSWISH,
  ACT_GELU,
  ACT_ERF,
  ACT_GELU_TANH,
  ACT_EXP,
  ACT_LOG,
  ACT_SQRT,
  ACT_NEG,
  ACT_ABS,
  ACT_RECIP,
  ACT_ELU,
  ACT_SOFTPLUS,
  ACT_FLOOR,
  ACT_CEIL
};

typedef struct vk_epi {
  int flags; /* 1: per-channel affine, 2: residual add */
  int act0, act1;
  float p[4];
  int nchan, cinner;
  float *scale, *shift; /* owned, nchan each */
  int res_tensor;
  int out_tensor; /* tensor the group finally writes */
} vk_epi_t;

typedef struct vk_prep {
  mi_plugin_ctx_t *ctx;
  vk_device_t *dev;
  const mi_kernel_desc_t *desc;
  const vk_variant_t *var;
  uint32_t spec[VK_NSPEC];
  mi_kernel_t *k;
  mi_error_t *err;
} vk_prep_t;

const mi_tensor_desc_t *mi__vk_tensor(const mi_kernel_desc_t *desc, int t);
/* Reference to tensor t: runtime input, output, or an uploaded FP32 constant. */
int32_t mi__vk_bind(vk_prep_t *p, int t, vk_ref_t *out);
int32_t mi__vk_upload(vk_prep_t *p, const void *data, size_t bytes, vk_ref_t *out);
/* A new dispatch of `shader` with the kernel's spec constants; 1-D grid over n items. */
vk_disp_t *mi__vk_disp_new(vk_prep_t *p, const char *shader, int32_t *rc);
void mi__vk_grid1(vk_prep_t *p, vk_disp_t *d, uint64_t n);
int mi__vk_act_of(const mi_kernel_desc_t *desc, const mi_node_desc_t *node, int *code, float *a,
                  float *b);
int32_t mi__vk_epi_parse(const mi_kernel_desc_t *desc, int first, int t_out, int nchan,
                         int cinner, vk_epi_t *e, mi_error_t *err);
/* Writes the epilogue words at push[at..at+8] and binds scale/shift/residual (bindings 3-5). */
int32_t mi__vk_epi_bind(vk_prep_t *p, vk_disp_t *d, const vk_epi_t *e, int at);
void mi__vk_epi_free(vk_epi_t *e);

int32_t mi__vk_prepare_conv(vk_prep_t *p);
/* conv.vec / conv.dw_vec (vk_prepare_vec.c): checks the shape, sets the shape constants, may
 * view a 1x1 conv as one row (v is the push block's first 16 words), and counts invocations. */
int32_t mi__vk_conv_vec_shape(vk_prep_t *p, int64_t *v, uint64_t *items);
/* The weights in the layout the variant reads, uploaded into a buffer of the kernel. */
int32_t mi__vk_conv_vec_weights(vk_prep_t *p, const int64_t *v, const float *w, vk_ref_t *out);
int32_t mi__vk_prepare_gemm(vk_prep_t *p);
int32_t mi__vk_prepare_op(vk_prep_t *p);

int32_t mi__vk_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *desc,
                              mi_kernel_t **out, mi_error_t *err);
int32_t mi__vk_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                          int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                          mi_run_stats_t *stats, mi_error_t *err);
void mi__vk_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *k);
/* Checks a run's buffers against k (kernel_run and kernel_enqueue say `call`). */
int32_t mi__vk_check_io(const mi_kernel_t *k, mi_buffer_t *const *inputs, int32_t input_count,
                        mi_buffer_t *const *outputs, int32_t output_count, const char *call,
                        mi_error_t *err);
/* Makes k->cmd hold k's dispatches on these buffers, recording only when a buffer changed. */
int32_t mi__vk_record_for(mi_kernel_t *k, mi_buffer_t *const *inputs, int32_t input_count,
                          mi_buffer_t *const *outputs, int32_t output_count, mi_error_t *err);
/* Submits n command buffers in one vkQueueSubmit and waits for them with the device's fence. */
int32_t mi__vk_submit_wait(vk_device_t *d, const VkCommandBuffer *cmds, uint32_t n,
                           mi_error_t *err);
/* A completed kernel's device time from its timestamps (0 without a timer), added to the
 * device's counter. */
int32_t mi__vk_kernel_time(mi_kernel_t *k, uint64_t *ns, mi_error_t *err);
/* ABI 1.3 (vk_submit.c): kernel_enqueue records and keeps the command buffer; device_sync submits
 * every kept one in one vkQueueSubmit and waits once. The pipeline barrier that ends each
 * dispatch orders it before everything later in submission order, across command buffers. */
int32_t mi__vk_kernel_enqueue(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                              int32_t input_count, mi_buffer_t *const *outputs,
                              int32_t output_count, mi_error_t *err);
int32_t mi__vk_device_sync(mi_plugin_ctx_t *ctx, uint32_t device, mi_run_stats_t *stats,
                           mi_error_t *err);
/* Submits whatever is pending on d and waits; its device time goes to d->pend_ns. */
int32_t mi__vk_flush(vk_device_t *d, mi_error_t *err);

#endif
