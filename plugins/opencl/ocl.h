/* ocl.h - internal declarations shared by the files of the OpenCL plugin. */
#ifndef MI_OCL_H
#define MI_OCL_H

#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "metainfer/mi_sdk.h"

#define OCL_PLUGIN_NAME "opencl"
#define OCL_MAX_ARGS 28
#define OCL_MAX_LAUNCHES 40
#define OCL_MAX_BUFS 24
#define OCL_MAX_IO 32

/* ---------------------------------------------------------------- instance and devices */

typedef struct ocl_prog {
  char key[33];
  cl_program prog;
} ocl_prog_t;

typedef struct ocl_device {
  cl_platform_id platform;
  cl_device_id id;
  cl_context ctx;
  cl_command_queue queue;
  mi_device_desc_t desc;
  char platform_version[128];
  int has_fp16;
  size_t max_wg;
  uint64_t local_mem;
  double timer_res_ns;
  ocl_prog_t *progs; /* in-memory program cache, keyed like the disk cache */
  int nprogs, cap_progs;
  cl_mem dummy; /* bound to pointer arguments a kernel does not read */
  uint64_t seq; /* makes temporary cache file names unique within the process */
  /* debug counters, read through counter_read */
  uint64_t compile_ns, built_from_source, disk_hits, disk_corrupt, mem_hits, bytes_allocated;
  uint64_t run_ns_total; /* device time summed over every run since create (TIMER is cumulative) */
  int has_run;
  /* ABI 1.3: launches kernel_enqueue left on the in-order queue for device_sync, with the
   * kernel each belongs to (alive until the sync: the host's contract) for a failure's name. */
  cl_event *pend_ev;
  const struct mi_kernel **pend_k;
  int npend, cap_pend;
  mi_sdk_tables_t tables;       /* what the SDK helper describes for this device */
  mi_sdk_counter_t counters[8]; /* the counter table with this device's timer resolution */
} ocl_device_t;

struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk; /* first: the SDK helper answers the description calls from it */
  const mi_host_api_t *host;
  ocl_device_t *devs;
  char cache_dir[512]; /* "" when the disk cache is off */
};

struct mi_buffer {
  cl_mem mem;
  uint64_t bytes;
  uint32_t device;
};

/* ---------------------------------------------------------------- prepared kernels */

enum { ARG_IN,
       ARG_OUT,
       ARG_BUF,
       ARG_DUMMY,
       ARG_RAW,
       ARG_LOCAL };

typedef struct ocl_arg {
  int kind;
  int index;   /* ARG_IN/ARG_OUT: slot; ARG_BUF: owned buffer */
  size_t size; /* ARG_RAW: bytes of v; ARG_LOCAL: bytes of local memory */
  union {
    cl_int i;
    cl_float f;
    cl_int2 i2;
    cl_int4 i4;
    cl_int8 i8;
    cl_float4 f4;
  } v;
} ocl_arg_t;

typedef struct ocl_launch {
  cl_kernel k; /* NULL for a buffer copy */
  int nargs;
  ocl_arg_t args[OCL_MAX_ARGS];
  cl_uint dim;
  size_t gws[3], lws[3];
  int has_lws;
  /* copy: args[0] source, args[1] destination */
  size_t copy_bytes, src_off, dst_off;
} ocl_launch_t;

struct mi_kernel {
  ocl_device_t *dev;
  uint32_t device;
  char node[64]; /* the node it was prepared for: a failure found at device_sync names it */
  int nl;
  ocl_launch_t launches[OCL_MAX_LAUNCHES];
  int nb;
  cl_mem bufs[OCL_MAX_BUFS];
  int n_in, n_out;
  uint64_t in_bytes[OCL_MAX_IO], out_bytes[OCL_MAX_IO];
};

/* ---------------------------------------------------------------- errors (ocl_errors.c) */

const char *mi__ocl_code_name(cl_int code);
/* "call: CL_CODE_NAME" into err; returns MI_ERR_DEVICE (MI_ERR_OUT_OF_MEMORY for allocation). */
int32_t mi__ocl_fail(mi_error_t *err, const char *call, cl_int code);
void mi__ocl_log(const mi_plugin_ctx_t *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------- devices (ocl_device.c) */

int32_t mi__ocl_devices_open(mi_plugin_ctx_t *ctx, mi_error_t *err);
void mi__ocl_devices_close(mi_plugin_ctx_t *ctx);

/* ---------------------------------------------------------------- programs (ocl_cache.c) */

void mi__ocl_cache_dir_init(mi_plugin_ctx_t *ctx);
/* Built program for (source, options) on dev: memory cache, then disk, then source. The
 * program stays owned by the device's cache. */
int32_t mi__ocl_program(mi_plugin_ctx_t *ctx, ocl_device_t *dev, const char *source,
                        const char *options, cl_program *out, mi_error_t *err);

/* ---------------------------------------------------------------- sources */

extern const char mi__ocl_src_prelude[];
extern const char mi__ocl_src_ew[];
extern const char mi__ocl_src_conv[];
extern const char mi__ocl_src_gemm[];
extern const char mi__ocl_src_shape[];
extern const char mi__ocl_src_direct[];

/* ---------------------------------------------------------------- knobs (ocl_knobs.c) */

enum {
  K_WG_X,
  K_WG_Y,
  K_TILE_M,
  K_TILE_N,
  K_TILE_K,
  K_VW,
  K_LOCAL,
  K_UNROLL,
  K_OCB,
  K_OWB,
  K_OHB,
  K_COUNT
};

typedef struct ocl_knobs {
  int64_t v[K_COUNT];
} ocl_knobs_t;

typedef struct ocl_variant {
  mi_sdk_variant_t v; /* id, op type, fuse mask, knob_mask (bit per K_* it reads) */
  int64_t dflt[K_COUNT];
} ocl_variant_t;

/* The knob and variant tables; each device adds its counters (ocl_plugin.c). */
extern const mi_sdk_tables_t mi__ocl_tables;
const ocl_variant_t *mi__ocl_variant_find(const char *id);
/* Default variant for an op; NULL when the plugin has none. */
const ocl_variant_t *mi__ocl_variant_default(const char *op);
int32_t mi__ocl_constraint_desc(const ocl_device_t *dev, uint32_t i, mi_constraint_desc_t *out);
/* Effective knob values of `v` from an assignment; MI_ERR_INVALID_CONFIG with the broken rule. */
int32_t mi__ocl_knobs_resolve(const ocl_device_t *dev, const ocl_variant_t *v,
                              const mi_knob_value_t *knobs, int32_t count, ocl_knobs_t *out,
                              mi_error_t *err);

/* ---------------------------------------------------------------- epilogues (ocl_epi.c) */

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
  ACT_IDENTITY,
  ACT_ELU,
  ACT_SOFTPLUS,
  ACT_FLOOR,
  ACT_CEIL
};

typedef struct ocl_epi {
  int flags; /* 1: per-channel affine, 2: residual add */
  int act0, act1;
  float p[4];
  int nchan;     /* channels of the affine */
  int chan_axis; /* output axis of the channels (a constant Add along it folds); -1 none */
  float *scale, *shift;
  int res_tensor; /* tensor index of the residual operand */
  int out_tensor; /* tensor the group finally writes */
  uint32_t fuse;  /* mi_fuse_bits used */
} ocl_epi_t;

/* Activation code of a node (0 when it is not a unary activation); params into p, q. */
int mi__ocl_act_of(const mi_kernel_desc_t *desc, const mi_node_desc_t *node, int *code,
                   float *p, float *q, mi_error_t *err);
/* Parses nodes[first..] as an epilogue of the op writing `t_out` with `nchan` channels. */
int32_t mi__ocl_epi_parse(const mi_kernel_desc_t *desc, int first, int t_out, int nchan,
                          ocl_epi_t *epi, mi_error_t *err);
void mi__ocl_epi_free(ocl_epi_t *epi);

/* ---------------------------------------------------------------- preparing (ocl_prepare*.c) */

typedef struct ocl_prep {
  mi_plugin_ctx_t *ctx;
  ocl_device_t *dev;
  const mi_kernel_desc_t *desc;
  const ocl_variant_t *var;
  ocl_knobs_t kn;
  mi_kernel_t *k;
  mi_error_t *err;
} ocl_prep_t;

const mi_tensor_desc_t *mi__ocl_tensor(const mi_kernel_desc_t *desc, int t);
/* Binds tensor t as an argument: runtime input, output, or uploaded constant. */
int32_t mi__ocl_bind(ocl_prep_t *p, int t, ocl_arg_t *out);
int32_t mi__ocl_upload(ocl_prep_t *p, const void *data, size_t bytes, ocl_arg_t *out);
ocl_launch_t *mi__ocl_launch_new(ocl_prep_t *p, const char *source, const char *options,
                                 const char *name, int32_t *rc);
void mi__ocl_arg_int(ocl_launch_t *l, cl_int v);
/* n int arguments in a row, v[0] first (a kernel's scalar sizes). */
void mi__ocl_arg_intv(ocl_launch_t *l, const cl_int *v, int n);
void mi__ocl_arg_float(ocl_launch_t *l, cl_float v);
void mi__ocl_arg_raw(ocl_launch_t *l, const void *v, size_t size);
void mi__ocl_arg(ocl_launch_t *l, ocl_arg_t a);
/* A launch of `name` from program `src` with tensors t_in (none when < 0) and t_out bound as its
 * first arguments. */
ocl_launch_t *mi__ocl_launch_io(ocl_prep_t *p, const char *src, const char *name, int t_in,
                                int t_out, int32_t *st);
/* Uploads n ints (at least one word) and binds them as the next argument. */
int32_t mi__ocl_arg_ints(ocl_prep_t *p, ocl_launch_t *l, const cl_int *v, int n);
/* Appends the epilogue's arguments (scale, shift, residual, ints, floats, channel split). */
int32_t mi__ocl_arg_epi(ocl_prep_t *p, ocl_launch_t *l, const ocl_epi_t *e, int chan_inner);
void mi__ocl_grid1(ocl_launch_t *l, size_t n, size_t wg);
/* Checks the launch's work-group against the kernel's CL_KERNEL_WORK_GROUP_SIZE. */
int32_t mi__ocl_check_wg(ocl_prep_t *p, ocl_launch_t *l);

int32_t mi__ocl_prepare_conv(ocl_prep_t *p);
int32_t mi__ocl_prepare_gemm(ocl_prep_t *p);
/* conv.tiled / conv.dw_tiled for the Conv with geometry g (mi__ocl_prepare_conv's), N images,
 * filter w, bound input and output, epilogue e (ocl_prepare_direct.c). */
int32_t mi__ocl_conv_tiled(ocl_prep_t *p, const cl_int *g, int N, const mi_tensor_desc_t *w,
                           ocl_arg_t ax, ocl_arg_t ay, const ocl_epi_t *e);
int32_t mi__ocl_prepare_op(ocl_prep_t *p);
/* t_out (dims, out strides, from out_base) gets t_in read at in_base with in strides: one
 * strided_copy launch (ocl_prepare_ops.c). */
int32_t mi__ocl_strided_copy(ocl_prep_t *p, int t_in, int t_out, int rank, const int64_t *dims,
                             const int64_t *sin, int64_t in_base, const int64_t *sout,
                             int64_t out_base);
/* Slice, Split, Pad, Gather, Resize (ocl_prepare_shape.c) */
int32_t mi__ocl_prepare_shape(ocl_prep_t *p);

/* ---------------------------------------------------------------- api (ocl_run.c) */

int32_t mi__ocl_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *desc,
                               mi_kernel_t **out, mi_error_t *err);
int32_t mi__ocl_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel, mi_buffer_t *const *inputs,
                           int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                           mi_run_stats_t *stats, mi_error_t *err);
/* ABI 1.3: the launches without clFinish (the queue is in order), and the wait for them with
 * their events' errors and device times summed. */
int32_t mi__ocl_kernel_enqueue(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel,
                               mi_buffer_t *const *inputs, int32_t input_count,
                               mi_buffer_t *const *outputs, int32_t output_count, mi_error_t *err);
int32_t mi__ocl_device_sync(mi_plugin_ctx_t *ctx, uint32_t device, mi_run_stats_t *stats,
                            mi_error_t *err);
/* Waits for and drops whatever is still enqueued on d (instance teardown). */
void mi__ocl_pending_drop(ocl_device_t *d);
void mi__ocl_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel);

#endif
