/* mi_plugin.h - the Meta Infer backend ABI, version 1.4: everything a device plugin needs.
 *
 * This header is self-contained: a plugin includes it and nothing else from Meta Infer.
 * docs/abi.md is the contract in prose; the rules in short:
 *
 *  - One exported symbol, MI_PLUGIN_ENTRY_NAME ("mi_plugin_entry"). The host calls it once,
 *    with the ABI version it speaks and a table of host services; the plugin answers with a
 *    pointer to its own static function table (or NULL and a message to refuse).
 *  - Every struct that crosses the boundary and may grow starts with `uint32_t struct_size`.
 *    Within a major version structs only grow at the end. Each side reads only the bytes the
 *    other side declared and accepts a size larger than it knows. Never compare sizes or
 *    minor versions for equality.
 *  - Structs the host hands over for filling ("out" structs) arrive zeroed with struct_size
 *    set to the host's size; the plugin writes at most that many bytes (mi_sdk_fill() does it)
 *    and sets struct_size to the number of bytes it wrote.
 *  - Arrays of size-prefixed structs are passed as arrays of pointers, so each element's size
 *    is read on its own.
 *  - Optional functions may be NULL; the host checks before calling. Making an optional
 *    function required is a major bump.
 *  - Errors are values: a function returns mi_status_code and, when `err` is not NULL, writes
 *    a one-line message into it. A plugin never exits, aborts or writes to stdout.
 *  - Memory: the plugin owns device buffers behind opaque handles; whoever creates an object
 *    frees it; pointers passed into a call are borrowed for that call only.
 *
 * Thread safety is stated per function: "any thread" means the function may be called
 * concurrently with any other; "serialized per device" means the host never calls it
 * concurrently with another serialized call on the same device.
 */
#ifndef METAINFER_MI_PLUGIN_H
#define METAINFER_MI_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MI_ABI_VERSION_MAJOR 1
#define MI_ABI_VERSION_MINOR 4

/** Name of the one symbol a plugin exports. */
#define MI_PLUGIN_ENTRY_NAME "mi_plugin_entry"

#if defined(_WIN32)
#define MI_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MI_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/** Maximum tensor rank that crosses the ABI. */
#define MI_MAX_RANK 8
/** Size of the message buffer in mi_error_t. */
#define MI_ERROR_MESSAGE_SIZE 256

/* ---------------------------------------------------------------- status and errors */

/** Status codes shared by host and plugins. Codes are only appended. */
typedef enum mi_status_code {
  MI_OK = 0,
  MI_ERR_INVALID_ARGUMENT = 1, /* a parameter is wrong (NULL, out of range) */
  MI_ERR_UNSUPPORTED = 2,      /* the op, dtype, layout or attribute is not supported */
  MI_ERR_OUT_OF_MEMORY = 3,    /* host or device allocation failed */
  MI_ERR_DEVICE = 4,           /* the device or its driver failed */
  MI_ERR_INVALID_CONFIG = 5,   /* a knob combination breaks a constraint */
  MI_ERR_ABI = 6,              /* version negotiation refused, table malformed */
  MI_ERR_IO = 7,               /* a file could not be read or written */
  MI_ERR_PARSE = 8,            /* malformed input (model, recipe, .npy, manifest) */
  MI_ERR_NOT_FOUND = 9,        /* a named thing does not exist */
  MI_ERR_TIMEOUT = 10,         /* a deadline passed */
  MI_ERR_INTERNAL = 11,        /* a bug: an invariant broke */
  MI_ERR_CRASHED = 12,         /* a plugin or worker died */
  MI_ERR_CONSTRAINT = 13       /* a result breaks a user constraint */
} mi_status_code;

/** An error value: a code and a one-line message. Frozen in v1 (never grows). */
typedef struct mi_error {
  int32_t code;
  char message[MI_ERROR_MESSAGE_SIZE];
} mi_error_t;

/* ---------------------------------------------------------------- data types and layouts */

/** Element types. Values are ABI: only appended. */
typedef enum mi_dtype {
  MI_DTYPE_UNDEFINED = 0,
  MI_DTYPE_FLOAT32 = 1,
  MI_DTYPE_FLOAT16 = 2,
  MI_DTYPE_INT8 = 3,
  MI_DTYPE_UINT8 = 4,
  MI_DTYPE_INT4 = 5, /* weights only: two values per byte, low nibble first */
  MI_DTYPE_INT32 = 6,
  MI_DTYPE_INT64 = 7,
  MI_DTYPE_BOOL = 8,
  /* bfloat16 (8-bit significand, FP32's exponent). So far a compute dtype only: a variant that
   * rounds its operands to BF16 and sums in FP32 declares it in dtype_mask; no tensor has it. */
  MI_DTYPE_BFLOAT16 = 9,
  /* The rest of ONNX's integer types, held exactly (two's-complement wrap-around). A plugin
   * that does not compute in them refuses their tensors; the host runs those nodes. */
  MI_DTYPE_INT16 = 10,
  MI_DTYPE_UINT16 = 11,
  MI_DTYPE_UINT32 = 12,
  MI_DTYPE_UINT64 = 13
} mi_dtype;

/** Bit for `dtype` in a dtype mask. */
#define MI_DTYPE_BIT(dtype) (1u << (unsigned)(dtype))

/** Memory layouts of 4-D activations. Values are ABI: only appended. */
typedef enum mi_layout {
  MI_LAYOUT_ANY = 0, /* not 4-D, or layout-agnostic */
  MI_LAYOUT_NCHW = 1,
  MI_LAYOUT_NHWC = 2,
  MI_LAYOUT_NCHWC = 3 /* blocked: N, C/b, H, W, b with block b = mi_tensor_desc_t.block */
} mi_layout;

#define MI_LAYOUT_BIT(layout) (1u << (unsigned)(layout))

/* ---------------------------------------------------------------- host services */

typedef enum mi_log_level {
  MI_LOG_ERROR = 0,
  MI_LOG_WARN = 1,
  MI_LOG_INFO = 2,
  MI_LOG_DEBUG = 3
} mi_log_level;

/** Services the host offers a plugin. All functions may be called from any thread. */
typedef struct mi_host_api {
  uint32_t struct_size;
  uint32_t abi_major; /* the host's MI_ABI_VERSION_MAJOR */
  uint32_t abi_minor; /* the host's MI_ABI_VERSION_MINOR */
  void *host_ctx;     /* pass back as the first argument of every service */
  /** Log one line (no trailing newline needed). */
  void (*log)(void *host_ctx, int32_t level, const char *plugin, const char *message);
  /** Host allocator for plugin bookkeeping (optional to use). */
  void *(*alloc)(void *host_ctx, size_t size);
  void (*free)(void *host_ctx, void *ptr);
  /** Value of a host setting (from the recipe or the environment); NULL when unset. */
  const char *(*get_setting)(void *host_ctx, const char *key);
} mi_host_api_t;

/* ---------------------------------------------------------------- descriptions */

typedef enum mi_device_kind {
  MI_DEVICE_CPU = 0,
  MI_DEVICE_GPU = 1,
  MI_DEVICE_NPU = 2,
  MI_DEVICE_OTHER = 3
} mi_device_kind;

/** A device the plugin drives. Filled by device_info. */
typedef struct mi_device_desc {
  uint32_t struct_size;
  int32_t kind;   /* mi_device_kind */
  char name[128]; /* e.g. "pthread-Intel(R) Xeon(R)" */
  char vendor[64];
  char driver_version[64];      /* driver/runtime version string, part of the stack fingerprint */
  char isa[64];                 /* e.g. "x86_64-avx512", "spirv-1.5", "npu-gen1" */
  uint64_t global_memory_bytes; /* 0 when unknown */
  uint64_t local_memory_bytes;  /* shared/local/SRAM per compute unit; 0 when unknown */
  uint64_t cache_bytes;         /* last-level cache; 0 when unknown */
  uint32_t compute_units;       /* cores, CUs, SMs */
  uint32_t max_threads;         /* max work-group size or threads; 0 when unknown */
  uint32_t dtype_mask;          /* MI_DTYPE_BIT of each dtype it computes in */
  uint32_t layout_mask;         /* MI_LAYOUT_BIT of each layout it accepts */
  uint32_t channel_alignment;   /* preferred channel multiple (1 = none) */
  uint32_t buffer_alignment;    /* byte alignment of buffers; 0 = none required */
  uint64_t max_buffer_bytes;    /* largest single buffer; 0 = no limit known */
  double peak_gflops;           /* declared or estimated FP32 peak; 0 when unknown */
  double peak_bandwidth_gbs;    /* declared or estimated memory bandwidth; 0 when unknown */
} mi_device_desc_t;

typedef enum mi_knob_scope {
  MI_KNOB_SCOPE_DEVICE = 0, /* one value for the whole device (DVFS level, threads) */
  MI_KNOB_SCOPE_OP = 1,     /* chosen per op or fused group */
  MI_KNOB_SCOPE_VARIANT = 2 /* only meaningful for the variants that list it */
} mi_knob_scope;

typedef enum mi_knob_type {
  MI_KNOB_INT = 0,   /* integer; domain is [min,max] step, or the `values` list */
  MI_KNOB_FLOAT = 1, /* real in [min,max] */
  MI_KNOB_BOOL = 2,
  MI_KNOB_ENUM = 3 /* one of `choices` (a '|' separated list of names) */
} mi_knob_type;

typedef enum mi_knob_mutability {
  MI_KNOB_AT_PREPARE = 0, /* fixed when a kernel is prepared */
  MI_KNOB_AT_RUN = 1,     /* may change between runs of a prepared kernel */
  MI_KNOB_AT_INIT = 2     /* device-wide; changing it costs a re-initialisation */
} mi_knob_mutability;

#define MI_KNOB_MAX_VALUES 32

/** A tunable knob. Filled by knob_desc. */
typedef struct mi_knob_desc {
  uint32_t struct_size;
  char name[64]; /* stable id, e.g. "threads", "tile_m", "dvfs_level" */
  char description[128];
  char unit[16];          /* "", "threads", "MHz", "bytes", ... */
  int32_t scope;          /* mi_knob_scope */
  int32_t type;           /* mi_knob_type */
  int32_t mutability;     /* mi_knob_mutability */
  int64_t min, max, step; /* INT domain when value_count == 0 (step >= 1) */
  uint32_t value_count;   /* INT: explicit values (e.g. powers of two) */
  int64_t values[MI_KNOB_MAX_VALUES];
  double fmin, fmax;    /* FLOAT domain */
  char choices[256];    /* ENUM: "a|b|c" */
  int64_t default_int;  /* INT, BOOL, ENUM (index into choices) */
  double default_float; /* FLOAT */
  char applies_to[128]; /* comma-separated variant ids (scope VARIANT); "" = all */
} mi_knob_desc_t;

typedef enum mi_constraint_kind {
  MI_CONSTRAINT_DIVIDES = 0,    /* knob a divides knob b (or `value` when b is "") */
  MI_CONSTRAINT_LESS_EQUAL = 1, /* a <= b (or a <= value) */
  MI_CONSTRAINT_PRODUCT_LE = 2, /* a * b <= value */
  MI_CONSTRAINT_IMPLIES = 3,    /* a == value implies b == value2 */
  MI_CONSTRAINT_CUSTOM = 4      /* checked only by check_config; `reason` says what */
} mi_constraint_kind;

/** A declarative constraint between knobs. Filled by constraint_desc. */
typedef struct mi_constraint_desc {
  uint32_t struct_size;
  int32_t kind; /* mi_constraint_kind */
  char a[64];
  char b[64];
  int64_t value;
  int64_t value2;
  char applies_to[128]; /* comma-separated variant ids; "" = all */
  char reason[160];     /* human text shown when it is broken */
} mi_constraint_desc_t;

/** Fused-pattern bits a variant can execute as one kernel. Values are ABI: only appended. */
typedef enum mi_fuse_bits {
  MI_FUSE_BIAS = 1u << 0, /* op + bias */
  MI_FUSE_BN = 1u << 1,   /* op + BatchNormalization (folded or not) */
  MI_FUSE_RELU = 1u << 2, /* + Relu / Clip(0,6) */
  MI_FUSE_ACT = 1u << 3,  /* + other activations (Sigmoid, HardSwish, LeakyRelu, ...) */
  /* + residual Add. On a Softmax variant: the Muls / Divs by a constant scalar and the Adds of
   * masks that alone feed a last-axis Softmax, before it (docs/abi.md, "A softmax's scale and
   * additive masks") */
  MI_FUSE_ADD = 1u << 4,
  /* depthwise Conv [+ its chain] + a pointwise Conv (1x1, stride 1, no pads, group 1) reading
   * it, with the pointwise conv's own chain after it: one pass, the intermediate kept in cache.
   * On a Mul variant: a Mul by a per-channel runtime gate + the group-1 Conv that alone reads the
   * product, with that conv's chain (the Mul first; docs/abi.md, "A per-channel gate") */
  MI_FUSE_CONV = 1u << 5,
  /* ABI 1.1. Not a pattern but a promise about the patterns above: a group this variant anchors
   * runs each member that has a choice of its own (mi_kernel_desc_t.member_choices) with that
   * variant and those knobs, or the plugin refuses the group (MI_ERR_UNSUPPORTED with the
   * reason). Without it the host keeps such a member out of the group (prepared on its own). */
  MI_FUSE_MEMBER_CHOICES = 1u << 6,
  /* ABI 1.1, appended: + LayerNormalization over the last axis (Y only, constant scale and bias)
   * of the op's chain, then its own activation (with MI_FUSE_RELU / MI_FUSE_ACT): a Gemm/MatMul's
   * rows normalised in the same kernel */
  MI_FUSE_NORM = 1u << 7,
  /* ABI 1.2, appended: on a MatMul variant, the Transpose (any perm) and the Muls by a constant
   * scalar that alone feed its runtime operands (a Transpose on B only), the members first in
   * node order and the MatMul last: attention's Q * K^T read through strides, the scales folded
   * into the product (docs/abi.md, "A MatMul's transposed and scaled operands") */
  MI_FUSE_TRANSPOSE = 1u << 8,
  /* ABI 1.3, appended: on a MatMul or Gemm variant, the DequantizeLinear of constant INT8/UINT8
   * codes (per tensor, or per output column) whose float value only that op reads, as its B:
   * weight-only quantization. The group (DequantizeLinear, op) arrives as one description, the
   * float weights internal, so the kernel may compute on the codes; refused, the host folds the
   * DequantizeLinear to FLOAT32 as for any other device (docs/abi.md, "Weight-only quantized
   * MatMul") */
  MI_FUSE_DQ = 1u << 9
} mi_fuse_bits;

/** A kernel variant for one op type. Filled by variant_desc. */
typedef struct mi_variant_desc {
  uint32_t struct_size;
  char id[64];      /* stable id, e.g. "conv.im2col_gemm"; never reused for other code */
  char op_type[32]; /* ONNX op type it implements: "Conv", "MatMul", "Relu", ... */
  char description[128];
  uint32_t dtype_mask;  /* MI_DTYPE_BIT of compute dtypes */
  uint32_t layout_mask; /* MI_LAYOUT_BIT of accepted activation layouts */
  uint32_t fuse_mask;   /* mi_fuse_bits it can absorb after the op */
  char knobs[256];      /* comma-separated knob names this variant reads */
} mi_variant_desc_t;

/** Counter kinds. TIMER and ENERGY counters are cumulative since create() (device time or
 * energy spent so far): a reading never decreases. The others are instantaneous readings.
 * Units: TIMER ns|us|ms|s, MEMORY bytes, ENERGY J|mJ|uJ, POWER W|mW, FREQUENCY Hz|kHz|MHz|GHz,
 * TEMPERATURE C. */
typedef enum mi_counter_kind {
  MI_COUNTER_TIMER = 0,  /* cumulative device time */
  MI_COUNTER_MEMORY = 1, /* bytes in use / peak */
  MI_COUNTER_ENERGY = 2,
  MI_COUNTER_POWER = 3,
  MI_COUNTER_FREQUENCY = 4,
  MI_COUNTER_TEMPERATURE = 5,
  MI_COUNTER_OTHER = 6
} mi_counter_kind;

/** A profiling counter. Filled by counter_desc. */
typedef struct mi_counter_desc {
  uint32_t struct_size;
  char name[64];
  int32_t kind;      /* mi_counter_kind */
  char unit[16];     /* "ns", "bytes", "J", "W", "MHz", "C" */
  double resolution; /* smallest step, in `unit` */
  int32_t modeled;   /* 1 when the figure comes from a model, not a sensor */
} mi_counter_desc_t;

/** One counter reading. A counter with no sample sets has_value = 0; it never reports 0. */
typedef struct mi_counter_sample {
  uint32_t struct_size;
  int32_t has_value;
  double value;
  uint64_t timestamp_ns; /* host monotonic clock when taken; 0 when unknown */
} mi_counter_sample_t;

/* ---------------------------------------------------------------- kernels */

typedef enum mi_attr_type {
  MI_ATTR_INT = 0,
  MI_ATTR_FLOAT = 1,
  MI_ATTR_INTS = 2,
  MI_ATTR_FLOATS = 3,
  MI_ATTR_STRING = 4
} mi_attr_type;

/** An op attribute (ONNX semantics). Frozen in v1 (never grows). */
typedef struct mi_attr {
  const char *name;
  int32_t type;  /* mi_attr_type */
  int32_t count; /* INTS/FLOATS element count */
  int64_t i;
  float f;
  const int64_t *ints;
  const float *floats;
  const char *s;
} mi_attr_t;

/** A tensor in a kernel description. */
typedef struct mi_tensor_desc {
  uint32_t struct_size;
  int32_t dtype;  /* mi_dtype */
  int32_t layout; /* mi_layout of the stored data */
  int32_t block;  /* channel block for MI_LAYOUT_NCHWC */
  int32_t rank;
  int64_t dims[MI_MAX_RANK]; /* logical dims in ONNX order (N, C, H, W for 4-D) */
  /* Quantization: per-tensor when channel_count == 0, else per channel along channel_axis. */
  float scale;
  int32_t zero_point;
  int32_t channel_axis;
  uint32_t channel_count;
  const float *channel_scales;
  /* Constant data (weights), borrowed for the duration of kernel_prepare; NULL for runtime
   * tensors. Stored in `dtype` and `layout`, densely packed. */
  const void *data;
  uint64_t data_bytes;
} mi_tensor_desc_t;

/** One op of a kernel. `inputs`/`outputs` index mi_kernel_desc_t.tensors; -1 = absent. */
typedef struct mi_node_desc {
  uint32_t struct_size;
  const char *op_type;
  const char *name;
  int32_t opset;
  int32_t input_count;
  const int32_t *inputs;
  int32_t output_count;
  const int32_t *outputs;
  int32_t attr_count;
  const mi_attr_t *attrs;
} mi_node_desc_t;

/** A knob value chosen for a kernel. Frozen in v1 (never grows). */
typedef struct mi_knob_value {
  const char *name;
  int64_t i; /* INT, BOOL, ENUM index */
  double f;  /* FLOAT */
} mi_knob_value_t;

/** A fused group member's own kernel choice (ABI 1.1), for a member the group runs as an op
 * of its own (the pointwise Conv of MI_FUSE_CONV): its variant and knobs, in place of the
 * kernel's variant_id and knobs, which stay the anchor's (nodes[0]). */
typedef struct mi_member_choice {
  uint32_t struct_size;
  const char *variant_id; /* NULL or "" = plugin's choice for this member */
  int32_t knob_count;
  const mi_knob_value_t *knobs; /* missing knobs take their defaults */
} mi_member_choice_t;

/** What to prepare: one op or a fused group, a variant and its knob values. */
typedef struct mi_kernel_desc {
  uint32_t struct_size;
  int32_t node_count;
  const mi_node_desc_t *const *nodes; /* in execution order */
  int32_t tensor_count;
  const mi_tensor_desc_t *const *tensors;
  int32_t input_count; /* runtime inputs, in kernel_run order */
  const int32_t *inputs;
  int32_t output_count; /* outputs, in kernel_run order */
  const int32_t *outputs;
  const char *variant_id; /* NULL or "" = plugin's choice */
  int32_t knob_count;
  const mi_knob_value_t *knobs; /* missing knobs take their defaults */
  /* ABI 1.1 (read it only when struct_size covers it). NULL, or node_count entries in `nodes`
   * order: entry i non-NULL when member i has a choice of its own (see mi_member_choice_t);
   * entry 0 is always NULL. A plugin whose anchoring variant declares MI_FUSE_MEMBER_CHOICES
   * honours each entry or refuses the kernel; others may ignore the field (the host then sends
   * no member with a choice of its own in a group). */
  const mi_member_choice_t *const *member_choices;
} mi_kernel_desc_t;

/** Statistics of one kernel_run, filled when the caller passes a non-NULL pointer. */
typedef struct mi_run_stats {
  uint32_t struct_size;
  int32_t has_device_time; /* 1 when device_time_ns came from a device timer */
  uint64_t device_time_ns;
  int32_t has_energy;     /* 1 when energy_j is known */
  int32_t energy_modeled; /* 1 when energy_j is modeled, not measured */
  double energy_j;
  /* Appended within ABI 1.3 (read and write them only when struct_size covers them). An output
   * whose first dim is data (NonMaxSuppression's selected boxes): the kernel wrote `rows` rows
   * of output `rows_output`, at most the dims[0] it was prepared with; has_rows 0: every output
   * is as prepared. */
  int32_t has_rows;
  int32_t rows_output;
  int64_t rows;
} mi_run_stats_t;

/* ---------------------------------------------------------------- opaque handles */

typedef struct mi_plugin_ctx mi_plugin_ctx_t; /* a plugin instance */
typedef struct mi_buffer mi_buffer_t;         /* device memory */
typedef struct mi_kernel mi_kernel_t;         /* a prepared kernel */

/* ---------------------------------------------------------------- the plugin's table */

/** The plugin's function table, returned by the entry point. Grows only at the end. */
typedef struct mi_plugin_api {
  uint32_t struct_size;
  uint32_t abi_major;  /* must equal the host's major */
  uint32_t abi_minor;  /* the minor the plugin was built with; any value is accepted */
  const char *name;    /* plugin name, e.g. "blis-cpu" */
  const char *version; /* plugin version, e.g. "1.2.0" */

  /* Required. Instance lifetime. create: any thread; destroy: once, after all other calls. */
  int32_t (*create)(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err);
  void (*destroy)(mi_plugin_ctx_t *ctx);

  /* Required. Descriptions; any thread. Indices run from 0 to count-1. */
  int32_t (*device_count)(mi_plugin_ctx_t *ctx, uint32_t *count, mi_error_t *err);
  int32_t (*device_info)(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                         mi_error_t *err);
  int32_t (*knob_count)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err);
  int32_t (*knob_desc)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                       mi_knob_desc_t *out, mi_error_t *err);
  int32_t (*variant_count)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                           mi_error_t *err);
  int32_t (*variant_desc)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_variant_desc_t *out, mi_error_t *err);

  /* Required. Device memory; serialized per device. Sizes and offsets in bytes. A new buffer's
   * contents are undefined (need not be zeroed): the host reuses buffers across tensors whose
   * lifetimes do not overlap and writes a tensor before any kernel reads it, so a kernel writes
   * every byte of its outputs. A buffer may be larger than the tensor passed in it (offset 0). */
  int32_t (*buffer_alloc)(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                          mi_buffer_t **out, mi_error_t *err);
  int32_t (*buffer_write)(mi_plugin_ctx_t *ctx, mi_buffer_t *buf, uint64_t offset,
                          const void *src, uint64_t bytes, mi_error_t *err);
  int32_t (*buffer_read)(mi_plugin_ctx_t *ctx, mi_buffer_t *buf, uint64_t offset, void *dst,
                         uint64_t bytes, mi_error_t *err);
  void (*buffer_free)(mi_plugin_ctx_t *ctx, mi_buffer_t *buf);

  /* Required. Kernels; serialized per device. kernel_prepare returns MI_ERR_UNSUPPORTED or
   * MI_ERR_INVALID_CONFIG with the reason for anything it cannot run. kernel_run is
   * synchronous: outputs are complete when it returns. A plugin with kernel_enqueue (ABI 1.3,
   * below) sees device_sync from the host before any kernel_run that follows enqueues. */
  int32_t (*kernel_prepare)(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *desc,
                            mi_kernel_t **out, mi_error_t *err);
  int32_t (*kernel_run)(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel, mi_buffer_t *const *inputs,
                        int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                        mi_run_stats_t *stats, mi_error_t *err);
  void (*kernel_release)(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel);

  /* Optional (may be NULL). Declarative constraints between knobs; any thread. */
  int32_t (*constraint_count)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                              mi_error_t *err);
  int32_t (*constraint_desc)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                             mi_constraint_desc_t *out, mi_error_t *err);
  /* Optional. Validates a knob assignment for a variant without preparing; any thread.
   * MI_OK or MI_ERR_INVALID_CONFIG with the broken rule in err. variant_id NULL is "auto"
   * (no variant named: the plugin picks, as kernel_prepare does) with device-level knobs only;
   * refusing it makes the host move the node to an explicit variant. */
  int32_t (*check_config)(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                          const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err);

  /* Optional. Profiling counters; counter_read is serialized per device. */
  int32_t (*counter_count)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                           mi_error_t *err);
  int32_t (*counter_desc)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_counter_desc_t *out, mi_error_t *err);
  int32_t (*counter_read)(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_counter_sample_t *out, mi_error_t *err);

  /* Optional. Device-scope knobs (threads, DVFS level) applied before the next run;
   * serialized per device. */
  int32_t (*set_device_knobs)(mi_plugin_ctx_t *ctx, uint32_t device,
                              const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err);

  /* Optional (ABI 1.2; read it only when struct_size covers it). A view: a handle for `bytes`
   * bytes of `parent` from byte `offset`, accepted wherever a buffer is (kernel_run,
   * buffer_write, buffer_read) and reading and writing the parent's memory, so a kernel writes a
   * tensor straight into its slice of a larger one (the host's concat elimination, docs/abi.md
   * §4). The plugin accepts every in-range offset that is a multiple of its device's
   * buffer_alignment (the host asks for no other) and fails only for bad arguments or memory
   * for the handle. buffer_free releases a view, never the parent's memory; the host frees
   * every view of a buffer before the buffer. Kernels may be given a view and a buffer (or two
   * views) that overlap as inputs, never an output that overlaps another input or output.
   * Serialized per device. NULL: the host copies instead. */
  int32_t (*buffer_view)(mi_plugin_ctx_t *ctx, mi_buffer_t *parent, uint64_t offset,
                         uint64_t bytes, mi_buffer_t **out, mi_error_t *err);

  /* Optional pair (ABI 1.3; read them only when struct_size covers them): asynchronous kernel
   * submission, so a run pays one submit and one wait instead of one per kernel. Both present,
   * or both NULL (kernel_run alone, synchronous); a table with only one of the two is refused
   * at load (docs/abi.md, "Asynchronous kernels"). Serialized per device.
   *
   * kernel_enqueue takes kernel_run's arguments less the stats and may return before the
   * kernel completes. Kernels enqueued on one device run in the order enqueued, each seeing
   * the writes of the ones before. It checks its arguments at once (MI_ERR_INVALID_ARGUMENT);
   * a failure of the kernel itself may be reported here or by the next device_sync.
   *
   * device_sync waits until everything enqueued on `device` has completed. It returns the
   * first failure of an enqueued kernel (naming the kernel, the node it was prepared for, when
   * the plugin can) and then has nothing left in flight either way. `stats` (may be NULL) gets
   * the device time summed over the kernels enqueued since the last sync, has_device_time set
   * only when each of them was timed; nothing enqueued since then is MI_OK with 0 ns.
   *
   * The contract: after kernel_enqueue on a device, the host calls device_sync before any
   * kernel_run, buffer_read, buffer_write, buffer_free, buffer_view, kernel_release,
   * set_device_knobs or counter_read on that device, and before the end of every inference, so
   * the plugin never has to order those calls against work in flight, and buffers and kernels
   * stay alive while enqueued work uses them. */
  int32_t (*kernel_enqueue)(mi_plugin_ctx_t *ctx, mi_kernel_t *kernel, mi_buffer_t *const *inputs,
                            int32_t input_count, mi_buffer_t *const *outputs,
                            int32_t output_count, mi_error_t *err);
  int32_t (*device_sync)(mi_plugin_ctx_t *ctx, uint32_t device, mi_run_stats_t *stats,
                         mi_error_t *err);

  /* Optional (ABI 1.4; read it only when struct_size covers it). A buffer over `bytes` bytes of
   * host memory at `host`, which the host owns and keeps alive, unchanged by anyone else, until
   * it frees the buffer: kernels read and write that memory itself, so a run's inputs are not
   * uploaded and its outputs not read back (docs/abi.md, "Host memory as buffers"). Accepted
   * wherever a buffer is (kernel_run, kernel_enqueue, buffer_write, buffer_read, buffer_view);
   * buffer_free releases the handle, never the memory. The host asks only for addresses that are
   * multiples of the device's buffer_alignment. A device whose kernels cannot address host memory
   * leaves it NULL, or refuses (MI_ERR_UNSUPPORTED) where it cannot: the host then copies.
   * Serialized per device. */
  int32_t (*buffer_wrap)(mi_plugin_ctx_t *ctx, uint32_t device, void *host, uint64_t bytes,
                         mi_buffer_t **out, mi_error_t *err);
} mi_plugin_api_t;

/** The entry point's type. Called once per load, from one thread. The plugin returns its
 * table if it speaks host->abi_major, or NULL and a reason in `err`. */
typedef const mi_plugin_api_t *(*mi_plugin_entry_fn)(const mi_host_api_t *host, mi_error_t *err);

/* ---------------------------------------------------------------- SDK helpers */

/** Writes a formatted-free message into err (safe with err == NULL); returns code. */
static inline int32_t mi_sdk_error(mi_error_t *err, int32_t code, const char *message) {
  if (err) {
    size_t n = 0;
    err->code = code;
    if (message) {
      while (message[n] && n + 1 < MI_ERROR_MESSAGE_SIZE) {
        err->message[n] = message[n];
        n++;
      }
    }
    err->message[n] = '\0';
  }
  return code;
}

/** Copies a filled description into the host's out struct: at most out->struct_size bytes,
 * never the size field itself, then records how many bytes were written. `src_size` is the
 * plugin's sizeof. Returns MI_ERR_ABI when the host's struct is too small to hold the size. */
static inline int32_t mi_sdk_fill(void *out, const void *src, size_t src_size) {
  uint32_t host_size;
  size_t n;
  if (!out || !src) return MI_ERR_INVALID_ARGUMENT;
  memcpy(&host_size, out, sizeof host_size);
  if (host_size < sizeof(uint32_t)) return MI_ERR_ABI;
  n = host_size < src_size ? host_size : src_size;
  memcpy((char *)out + sizeof(uint32_t), (const char *)src + sizeof(uint32_t),
         n - sizeof(uint32_t));
  host_size = (uint32_t)n;
  memcpy(out, &host_size, sizeof host_size);
  return MI_OK;
}

/** True when a size-prefixed struct of declared size `s` contains `field` of `type`. */
#define MI_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/** Looks up an attribute by name in a node; NULL when absent. */
static inline const mi_attr_t *mi_sdk_attr(const mi_node_desc_t *node, const char *name) {
  int32_t i;
  for (i = 0; i < node->attr_count; i++)
    if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
  return NULL;
}

/** Integer attribute with a default. */
static inline int64_t mi_sdk_attr_int(const mi_node_desc_t *node, const char *name,
                                      int64_t dflt) {
  const mi_attr_t *a = mi_sdk_attr(node, name);
  return a && a->type == MI_ATTR_INT ? a->i : dflt;
}

/** Float attribute with a default. */
static inline float mi_sdk_attr_float(const mi_node_desc_t *node, const char *name, float dflt) {
  const mi_attr_t *a = mi_sdk_attr(node, name);
  return a && a->type == MI_ATTR_FLOAT ? a->f : dflt;
}

/** Knob value by name from a kernel description; `dflt` when not given. */
static inline int64_t mi_sdk_knob_int(const mi_kernel_desc_t *desc, const char *name,
                                      int64_t dflt) {
  int32_t i;
  for (i = 0; i < desc->knob_count; i++)
    if (desc->knobs[i].name && strcmp(desc->knobs[i].name, name) == 0) return desc->knobs[i].i;
  return dflt;
}

/** Number of elements of a tensor description. */
static inline int64_t mi_sdk_numel(const mi_tensor_desc_t *t) {
  int64_t n = 1;
  int32_t i;
  for (i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

/** Bytes one element of `dtype` takes (INT4: 1, the byte two values share); 0 when unknown. */
static inline size_t mi_sdk_dtype_size(int32_t dtype) {
  switch (dtype) {
  case MI_DTYPE_FLOAT32:
  case MI_DTYPE_INT32:
  case MI_DTYPE_UINT32: return 4;
  case MI_DTYPE_INT64:
  case MI_DTYPE_UINT64: return 8;
  case MI_DTYPE_FLOAT16:
  case MI_DTYPE_BFLOAT16:
  case MI_DTYPE_INT16:
  case MI_DTYPE_UINT16: return 2;
  case MI_DTYPE_INT8:
  case MI_DTYPE_UINT8:
  case MI_DTYPE_BOOL:
  case MI_DTYPE_INT4: return 1;
  default: return 0;
  }
}

/** Bytes of a tensor's data, INT4 packed two values per byte; 0 for an unknown dtype. */
static inline uint64_t mi_sdk_tensor_bytes(const mi_tensor_desc_t *t) {
  uint64_t n = (uint64_t)mi_sdk_numel(t);
  return t->dtype == MI_DTYPE_INT4 ? (n + 1) / 2 : n * mi_sdk_dtype_size(t->dtype);
}

/** Row-major strides of a tensor, in elements: st[rank - 1] = 1. */
static inline void mi_sdk_strides(const mi_tensor_desc_t *t, int64_t *st) {
  int64_t s = 1;
  int32_t d;
  for (d = t->rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= t->dims[d];
  }
}

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_PLUGIN_H */
