/* mi_sdk.h - the SDK's helper library (libmetainfer_sdk.a): what every plugin would otherwise
 * write again. Optional: a plugin may use mi_plugin.h alone. Link MetaInferSDK::helpers (CMake)
 * or `pkg-config --libs metainfer-sdk`.
 *
 *  - mi_sdk_errorf: a printf-style mi_sdk_error; mi_sdk_entry: the entry's ABI check;
 *    mi_sdk_grow: a growable array.
 *  - Host-memory buffers: the buffer calls of a plugin whose device reads host memory.
 *  - Descriptor tables: the plugin declares its knobs, variants and counters as arrays; the
 *    helper answers the ABI's count/describe calls (mi_sdk_knob_desc and friends have the ABI's
 *    signatures and go straight into the plugin's mi_plugin_api_t). For that the plugin's
 *    `struct mi_plugin_ctx` starts with an mi_sdk_plugin_t.
 *  - ONNX semantics every backend needs, shared with the host's reference interpreter:
 *    broadcast shapes, Resize coordinate transforms and nearest rounding, Pad modes, window
 *    (Conv and pool) pads and output sizes, FLOAT16 conversions.
 *
 * Everything here is reentrant and may be called from any thread. */
#ifndef METAINFER_MI_SDK_H
#define METAINFER_MI_SDK_H

#include <stdarg.h>

#include "metainfer/mi_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MI_SDK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MI_SDK_PRINTF(f, a)
#endif

/* ---------------------------------------------------------------- errors and logging */

/** mi_sdk_error with a printf format; safe with err == NULL; returns code. Messages longer
 * than MI_ERROR_MESSAGE_SIZE - 1 are cut. */
int32_t mi_sdk_errorf(mi_error_t *err, int32_t code, const char *fmt, ...) MI_SDK_PRINTF(3, 4);
int32_t mi_sdk_verrorf(mi_error_t *err, int32_t code, const char *fmt, va_list ap);

/** The index of `name` in names[0..count), or -1 (also for name NULL). */
int mi_sdk_pick(const char *name, const char *const *names, int count);

/** A string attribute of a node, or `dflt` when absent or not a string. */
const char *mi_sdk_attr_string(const mi_node_desc_t *node, const char *name, const char *dflt);
/** Element i of an INTS attribute (strides, pads...), or `dflt` when absent, not INTS or shorter. */
int64_t mi_sdk_attr_ints_at(const mi_node_desc_t *node, const char *name, int32_t i, int64_t dflt);
/** Fills out[0..want) from an INTS attribute of exactly `want` values, or with `dflt` when the
 * attribute is absent: 1; 0 when it is there but not INTS of that length. */
int mi_sdk_attr_ints(const mi_node_desc_t *node, const char *name, int64_t *out, int32_t want,
                     int64_t dflt);

/** Logs one formatted line through the host's log service, if the host offers one. */
void mi_sdk_logf(const mi_host_api_t *host, int32_t level, const char *plugin, const char *fmt,
                 ...) MI_SDK_PRINTF(4, 5);
void mi_sdk_vlogf(const mi_host_api_t *host, int32_t level, const char *plugin, const char *fmt,
                  va_list ap);

/** The body of mi_plugin_entry: `api` when the host speaks the ABI major the plugin was built
 * for, else NULL with MI_ERR_ABI naming api->name and both majors. */
const mi_plugin_api_t *mi_sdk_entry(const mi_host_api_t *host, const mi_plugin_api_t *api,
                                    mi_error_t *err);

/** Doubles a growable array of `size`-byte elements from *cap (16 when *cap is 0): the new
 * block, with *cap updated, or NULL with `items` and *cap unchanged. A plugin calls it when its
 * count reaches *cap:
 *   if (n == cap) { T *g = mi_sdk_grow(items, &cap, sizeof *g); if (!g) ...; items = g; } */
void *mi_sdk_grow(void *items, int *cap, size_t size);

/* ---------------------------------------------------------------- descriptor tables */

/** A knob as data. Filled into mi_knob_desc_t with step 1; INT knobs with `values` take min and
 * max from the first and last value, BOOL knobs run 0..1, ENUM knobs with max 0 take max from
 * the number of `choices`. NULL strings read as "". */
typedef struct mi_sdk_knob {
  const char *name;
  const char *description;
  const char *unit;
  int32_t scope;      /* mi_knob_scope */
  int32_t type;       /* mi_knob_type */
  int32_t mutability; /* mi_knob_mutability */
  int64_t min, max;
  uint32_t value_count;
  int64_t values[MI_KNOB_MAX_VALUES];
  double fmin, fmax;
  const char *choices;
  int64_t default_int;
  double default_float;
  /* NULL: the ids of the variants whose knob_mask has this knob's bit ("" when they do not fit
   * the ABI's field, which means all); otherwise the list as given. */
  const char *applies_to;
} mi_sdk_knob_t;

/** A kernel variant as data. A plugin that keeps more per variant makes this the first member
 * of its own struct and sets mi_sdk_tables_t.variant_size. */
typedef struct mi_sdk_variant {
  const char *id;
  const char *op_type;
  const char *description;
  uint32_t dtype_mask;
  uint32_t layout_mask;
  uint32_t fuse_mask;
  uint32_t knob_mask; /* bit i: the variant reads knob i of the table */
  const char *knobs;  /* used when knob_mask is 0: the comma-separated names, NULL = none */
} mi_sdk_variant_t;

/** A profiling counter as data. */
typedef struct mi_sdk_counter {
  const char *name;
  int32_t kind; /* mi_counter_kind */
  const char *unit;
  double resolution;
  int32_t modeled;
} mi_sdk_counter_t;

/** The descriptions of one device. */
typedef struct mi_sdk_tables {
  const mi_sdk_knob_t *knobs;
  uint32_t knob_count;
  const void *variants; /* elements of variant_size bytes, each starting with mi_sdk_variant_t */
  uint32_t variant_count;
  size_t variant_size; /* 0 = sizeof(mi_sdk_variant_t) */
  const mi_sdk_counter_t *counters;
  uint32_t counter_count;
  /* Constraints carry the device's figures (limits in their values and reasons), so they are
   * answered by a function: it fills constraint `index` < constraint_count of `device`. */
  uint32_t constraint_count;
  int32_t (*constraint)(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                        mi_constraint_desc_t *out);
} mi_sdk_tables_t;

/** A device's counter table from the plugin's template: copies the n counters into `own` (an
 * array the device keeps, room for n), sets the first one's resolution to timer_resolution
 * when that is > 0 (a device's own timer), and points t->counters and t->counter_count at
 * them. */
void mi_sdk_tables_set_counters(mi_sdk_tables_t *t, mi_sdk_counter_t *own,
                                const mi_sdk_counter_t *tmpl, uint32_t n, double timer_resolution);

/** The head of a plugin's `struct mi_plugin_ctx` when it lets the helper answer descriptions. */
typedef struct mi_sdk_plugin {
  const char *name; /* the plugin's name, the first word of every message */
  uint32_t device_count;
  int32_t no_device_code;        /* the code for a device index out of range; 0 = INVALID_ARGUMENT */
  const mi_sdk_tables_t *tables; /* the same for every device, or NULL and tables_of */
  const mi_sdk_tables_t *(*tables_of)(const mi_plugin_ctx_t *ctx, uint32_t device);
  /* Or, with tables and tables_of NULL, each device's own tables in the plugin's array of
   * device structs: device d's at (const char *)device_tables + d * device_stride, that is
   * device_tables = &devs[0].tables and device_stride = sizeof devs[0]. */
  const mi_sdk_tables_t *device_tables;
  size_t device_stride;
  /* Each device's description in the same array (device_descs = &devs[0].desc), for
   * mi_sdk_device_info; NULL when the plugin answers device_info itself. */
  const mi_device_desc_t *device_descs;
} mi_sdk_plugin_t;

/** Points the helper at the plugin's array of device structs: device d's tables at
 * (const char *)tables + d * stride, its description (NULL: none) at (const char *)descs +
 * d * stride. Call it with &devs[0].tables, &devs[0].desc, sizeof devs[0]. */
void mi_sdk_set_devices(mi_sdk_plugin_t *p, const mi_sdk_tables_t *tables,
                        const mi_device_desc_t *descs, size_t stride);

/** MI_OK when ctx is not NULL, `out` is not NULL and `device` exists; else the error. */
int32_t mi_sdk_check_device(const mi_plugin_ctx_t *ctx, uint32_t device, const void *out,
                            mi_error_t *err);
/** The tables of a device (NULL when the device does not exist). */
const mi_sdk_tables_t *mi_sdk_tables(const mi_plugin_ctx_t *ctx, uint32_t device);

/* The ABI's description calls, answered from the tables (put them in mi_plugin_api_t). */
int32_t mi_sdk_device_count(mi_plugin_ctx_t *ctx, uint32_t *count, mi_error_t *err);
/* Answers from device_descs (MI_ERR_INTERNAL when the plugin set none). */
int32_t mi_sdk_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                           mi_error_t *err);
int32_t mi_sdk_knob_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err);
int32_t mi_sdk_knob_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                         mi_knob_desc_t *out, mi_error_t *err);
int32_t mi_sdk_variant_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                             mi_error_t *err);
int32_t mi_sdk_variant_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_variant_desc_t *out, mi_error_t *err);
int32_t mi_sdk_counter_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                             mi_error_t *err);
int32_t mi_sdk_counter_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_counter_desc_t *out, mi_error_t *err);
int32_t mi_sdk_constraint_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                                mi_error_t *err);
int32_t mi_sdk_constraint_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                               mi_constraint_desc_t *out, mi_error_t *err);

/** Fills one knob description (applies_to computed from `t`'s variants when the knob's is
 * NULL; `t` may be NULL otherwise). */
int32_t mi_sdk_knob_fill(const mi_sdk_knob_t *k, uint32_t index, const mi_sdk_tables_t *t,
                         mi_knob_desc_t *out);

/** Table lookups: the index-th variant, the variant with an id, the first variant of an op
 * (a plugin's default), the index of a knob by name (-1 when none). */
const mi_sdk_variant_t *mi_sdk_variant_at(const mi_sdk_tables_t *t, uint32_t index);
const mi_sdk_variant_t *mi_sdk_variant_find(const mi_sdk_tables_t *t, const char *id);
const mi_sdk_variant_t *mi_sdk_variant_first(const mi_sdk_tables_t *t, const char *op_type);
int32_t mi_sdk_knob_index(const mi_sdk_tables_t *t, const char *name);

/** One constraint description in one call: *d zeroed with its struct_size, then kind, knobs
 * `a` and `b` (NULL: none), the ids of the variants it applies to (NULL or "": all), `value`
 * and the reason from a printf format. Strings too long for their fields are cut. Hand the
 * result to the host with mi_sdk_fill(out, d, sizeof *d). */
void mi_sdk_constraint_set(mi_constraint_desc_t *d, int32_t kind, const char *a, const char *b,
                           const char *applies_to, int64_t value, const char *reason_fmt, ...)
    MI_SDK_PRINTF(7, 8);

/** The opening of a counter_read: checks the device, `out` and that `index` names one of the
 * device's counters ("NAME: no counter I (N counters)" otherwise), then sets *s to a zeroed
 * sample with its struct_size and has_value 1 for the plugin to fill. */
int32_t mi_sdk_counter_sample(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              const void *out, mi_counter_sample_t *s, mi_error_t *err);

/** The opening of a check_config: checks the device, that `knobs` is not NULL when knob_count
 * is > 0, and finds variant_id in `all` (NULL: the device's tables; a plugin whose devices list
 * fewer variants than it knows passes the full table, to say more than "unknown"). MI_OK with
 * *v set, else MI_ERR_INVALID_CONFIG "NAME: unknown variant 'ID'" or the argument's error.
 * A NULL or empty variant_id is "auto" (the plugin picks the kernel): MI_OK with *v NULL once
 * every knob is one of the table's and within its domain; the plugin then checks no more. */
int32_t mi_sdk_config_variant(const mi_plugin_ctx_t *ctx, uint32_t device,
                              const mi_sdk_tables_t *all, const char *variant_id,
                              const mi_knob_value_t *knobs, int32_t knob_count,
                              const mi_sdk_variant_t **v, mi_error_t *err);

/** The opening of a kernel_prepare: checks the device and that the description has a first
 * node with an op type; then, when desc->variant_id is given, finds it in `all` (NULL: the
 * device's tables) and checks that it implements that op. MI_OK with *v the variant, or NULL when
 * no id was given (the plugin picks its default); else MI_ERR_INVALID_CONFIG "NAME: unknown
 * variant 'ID'" or "NAME: variant ID implements A, not B", or the argument's error. */
int32_t mi_sdk_kernel_variant(const mi_plugin_ctx_t *ctx, uint32_t device,
                              const mi_sdk_tables_t *all, const mi_kernel_desc_t *desc,
                              const mi_sdk_variant_t **v, mi_error_t *err);

/** 1 when `value` is in the knob's domain (its values, its [min,max], 0/1 for BOOL, a choice
 * index for ENUM). */
int mi_sdk_knob_allows(const mi_sdk_knob_t *k, int64_t value);

/* ---------------------------------------------------------------- host-memory buffers */

#ifdef MI_SDK_HOST_BUFFERS
/** A plugin whose device reads host memory (a CPU plugin, a simulator) defines
 * MI_SDK_HOST_BUFFERS before including this header: its buffers are then these, and the
 * mi_sdk_host_buffer_* calls below are its buffer functions. */
struct mi_buffer {
  uint32_t device;
  uint64_t bytes;
  unsigned char *data; /* `bytes` bytes, zeroed when allocated */
};
#endif

/* The ABI's buffer calls for such buffers (put them in mi_plugin_api_t). alloc checks the device
 * and answers MI_ERR_OUT_OF_MEMORY when memory runs out; write and read refuse a range outside
 * the buffer with MI_ERR_INVALID_ARGUMENT. */
int32_t mi_sdk_host_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                                 mi_buffer_t **out, mi_error_t *err);
int32_t mi_sdk_host_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t offset,
                                 const void *src, uint64_t bytes, mi_error_t *err);
int32_t mi_sdk_host_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t offset, void *dst,
                                uint64_t bytes, mi_error_t *err);
void mi_sdk_host_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b);

/* ---------------------------------------------------------------- kernel descriptions */

/** The checks a plugin that runs FP32 activations makes of a kernel description before its
 * ops: at most max_io inputs and outputs (one output at least); every tensor present, of rank
 * 0..MI_MAX_RANK and at most max_numel elements, FLOAT32 or constant INT64 data, layout ANY or
 * NCHW. MI_OK, else MI_ERR_UNSUPPORTED (MI_ERR_INVALID_ARGUMENT for a NULL tensor) with a
 * message that starts with `plugin`. */
int32_t mi_sdk_check_fp32_kernel(const mi_kernel_desc_t *d, const char *plugin, int32_t max_io,
                                 int64_t max_numel, mi_error_t *err);

/** Where a kernel's tensor lives at run time. */
typedef enum mi_sdk_io {
  MI_SDK_IO_NONE = 0,  /* in no run buffer: constant data or an intermediate of the kernel */
  MI_SDK_IO_INPUT = 1, /* the run's input buffer *index */
  MI_SDK_IO_OUTPUT = 2 /* the run's output buffer *index */
} mi_sdk_io;

/** Whether tensor t is one of the kernel's inputs or outputs (an input first), with *index its
 * place in d->inputs or d->outputs (-1 for MI_SDK_IO_NONE; `index` may be NULL). */
int mi_sdk_kernel_io(const mi_kernel_desc_t *d, int32_t t, int32_t *index);

/* ---------------------------------------------------------------- ONNX semantics */

/** Multidirectional (numpy) broadcast of two shapes into `out` (rank max(ra, rb)). MI_OK, or
 * MI_ERR_INVALID_ARGUMENT when a pair of dims is neither equal nor 1, or a rank is above
 * MI_MAX_RANK. */
int32_t mi_sdk_broadcast_shape(int32_t ra, const int64_t *a, int32_t rb, const int64_t *b,
                               int32_t *rank, int64_t *out);

/** IEEE binary16 (FLOAT16) from float, rounded to nearest even: overflow to infinity,
 * subnormals kept, NaN stays NaN. */
uint16_t mi_sdk_float_to_half(float f);
/** Float from IEEE binary16, exactly (NaN payloads kept). */
float mi_sdk_half_to_float(uint16_t h);
/** BFLOAT16 (FP32's upper 16 bits) from float, rounded to nearest even as ONNX's Cast: overflow
 * to infinity, subnormals rounded like any value, NaN stays a quiet NaN. */
uint16_t mi_sdk_float_to_bf16(float f);
/** Float from BFLOAT16, exactly. */
float mi_sdk_bf16_to_float(uint16_t b);

/** Resize coordinate_transformation_mode values. */
typedef enum mi_sdk_resize_ct {
  MI_SDK_CT_HALF_PIXEL = 0,
  MI_SDK_CT_PYTORCH_HALF_PIXEL = 1,
  MI_SDK_CT_ALIGN_CORNERS = 2,
  MI_SDK_CT_ASYMMETRIC = 3,
  MI_SDK_CT_TF_HALF_PIXEL_FOR_NN = 4,
  MI_SDK_CT_HALF_PIXEL_SYMMETRIC = 5 /* opset 19 */
} mi_sdk_resize_ct;

/** Resize nearest_mode values; SIMPLE is Upsample's and Resize-10's rule (floor when
 * upsampling, ceil when downsampling, as ONNX Runtime runs them). */
typedef enum mi_sdk_resize_nearest {
  MI_SDK_NEAREST_ROUND_PREFER_FLOOR = 0,
  MI_SDK_NEAREST_ROUND_PREFER_CEIL = 1,
  MI_SDK_NEAREST_FLOOR = 2,
  MI_SDK_NEAREST_CEIL = 3,
  MI_SDK_NEAREST_SIMPLE = 4
} mi_sdk_resize_nearest;

/** The mode named `name`, or -1 when unknown. */
int mi_sdk_resize_ct_from_name(const char *name);
int mi_sdk_resize_nearest_from_name(const char *name);

/** Output coordinate x of an axis (in -> out elements, scale out/in) mapped into the input, in
 * float like ONNX Runtime so that ties round alike. */
float mi_sdk_resize_coord(int ct, float x, float scale, int64_t in, int64_t out);
/** The input index nearest to coordinate x (before clamping). */
int64_t mi_sdk_resize_nearest_index(int nearest, float x, float scale);
/** Output position j of an axis blends inputs *i0 and *i1 with weight *w on *i1 (w = 0 and
 * i0 == i1 for nearest); indices are clamped into [0, in). Not an identity for out == in and
 * scale 1 (tf_half_pixel_for_nn shifts by half a pixel): callers skip such axes themselves. */
void mi_sdk_resize_tap(int linear, int ct, int nearest, float scale, int64_t in, int64_t out,
                       int64_t j, int64_t *i0, int64_t *i1, float *w);

/** Pad modes. */
typedef enum mi_sdk_pad_mode {
  MI_SDK_PAD_CONSTANT = 0,
  MI_SDK_PAD_EDGE = 1,
  MI_SDK_PAD_REFLECT = 2
} mi_sdk_pad_mode;

/** The pad mode named `name` (NULL = constant), or -1 when unknown. */
int mi_sdk_pad_mode_from_name(const char *name);
/** Source index along one axis of n elements for output index o with `begin` leading pads, or
 * -1 for the constant. Reflect folds as often as the pad needs. */
int64_t mi_sdk_pad_source(int mode, int64_t o, int64_t begin, int64_t n);

/** auto_pad values of Conv, ConvTranspose and the pools. */
typedef enum mi_sdk_auto_pad {
  MI_SDK_AUTO_PAD_NOTSET = 0,
  MI_SDK_AUTO_PAD_SAME_UPPER = 1,
  MI_SDK_AUTO_PAD_SAME_LOWER = 2,
  MI_SDK_AUTO_PAD_VALID = 3
} mi_sdk_auto_pad;

/** The auto_pad named `name` (NULL = NOTSET), or -1 when unknown. */
int mi_sdk_auto_pad_from_name(const char *name);
/** Splits a total pad between begin and end: SAME_UPPER puts the odd one at the end,
 * SAME_LOWER at the beginning. A negative total counts as 0. */
void mi_sdk_same_pads(int auto_pad, int64_t total, int64_t *begin, int64_t *end);
/** Output size of a window (kernel k, dilation, stride) along one axis of `in` elements.
 * NOTSET uses the pads given (ceil_mode rounds up, dropping a window that would start in the
 * end pad); SAME gives ceil(in / stride); VALID no pads. 0 when no window fits. */
int64_t mi_sdk_window_out(int auto_pad, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, int ceil_mode);
/** Det: the determinant of the n x n matrix a (row-major, double), by LU with partial pivoting
 * in place (a is overwritten); 0 for a singular matrix. */
double mi_sdk_det(double *a, int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_SDK_H */
