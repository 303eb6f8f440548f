/* mi_core.h - the core of libmetainfer's public API: errors, host arrays, .npy files, the
 * reference interpreter, the plugin registry and sessions. Included by mi.h and by the other
 * public headers that need it. */
#ifndef METAINFER_MI_CORE_H
#define METAINFER_MI_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi_graph.h"
#include "metainfer/mi_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- core */

/** The library version, "MAJOR.MINOR.PATCH". */
MI_API const char *mi_version(void);
/** The fixed message of a status code ("invalid argument", ...). Never NULL. */
MI_API const char *mi_status_message(int32_t code);

/** Sets err (when not NULL) to `code` and a printf-style message; returns code. */
MI_API int32_t mi_errorf(mi_error_t *err, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Clears err to MI_OK and an empty message. */
MI_API void mi_error_clear(mi_error_t *err);

/* ---------------------------------------------------------------- hashing */

/** FNV-1a 64-bit hash of `n` bytes, continuing from `h` (start with MI_HASH64_SEED). */
#define MI_HASH64_SEED 0xcbf29ce484222325ull
MI_API uint64_t mi_hash64(const void *data, size_t n, uint64_t h);
/** Writes a hash as 16 lower-case hex digits and a NUL into out[17]. */
MI_API void mi_hash64_hex(uint64_t h, char out[17]);

/* ---------------------------------------------------------------- deterministic randomness */

/** Seconds on the monotonic clock (the one clock the library and its programs time with). */
MI_API double mi_now_s(void);

/** A small random stream (splitmix64). Every operator takes one, so a seed fixes a search. */
typedef struct mi_rng {
  uint64_t state;
} mi_rng_t;

MI_API void mi_rng_seed(mi_rng_t *r, uint64_t seed);
MI_API uint64_t mi_rng_next(mi_rng_t *r);
/** Uniform in [0, 1). */
MI_API double mi_rng_uniform(mi_rng_t *r);
/** Uniform in [0, n); 0 when n is 0. */
MI_API uint32_t mi_rng_below(mi_rng_t *r, uint32_t n);

/* ---------------------------------------------------------------- host arrays */

/** A dense host tensor (row-major, ONNX dim order). */
typedef struct mi_array {
  int32_t dtype; /* mi_dtype */
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
  void *data; /* owned, 64-byte aligned */
  size_t nbytes;
} mi_array_t;

/** Allocates a zeroed array; NULL when out of memory or the shape is invalid. */
MI_API mi_array_t *mi_array_create(int32_t dtype, int32_t rank, const int64_t *dims);
/** Frees an array. NULL is a no-op. */
MI_API void mi_array_destroy(mi_array_t *a);
/** Number of elements. */
MI_API int64_t mi_array_numel(const mi_array_t *a);
/** Fills a float32 array with deterministic pseudo-random values in [-1, 1) from `seed`. */
MI_API void mi_array_fill_random(mi_array_t *a, uint64_t seed);
/** Replaces a float16 array by the float32 array of the same values (exact), as models exported
 * in half precision are loaded in float32 (docs/onnx.md); any other array is left as it is.
 * MI_OK, or MI_ERR_OUT_OF_MEMORY with *a unchanged. */
MI_API int32_t mi_array_widen_half(mi_array_t **a);

/** Reads a .npy file (v1-v3, little-endian float32/float16/int8/uint8/int16/uint16/int32/
 * uint32/int64/uint64/bool, C order; float64 is read as float32, rounded to nearest, as the
 * framework holds DOUBLE tensors). On failure *out is NULL and err names the file and the
 * problem. */
MI_API int32_t mi_npy_load(const char *path, mi_array_t **out, mi_error_t *err);
/** Model inputs as command lines give them (mi-host profile and accuracy): `files`
 * "NAME=FILE.npy" and `shapes` "NAME=D0,D1,..." or "NAME=D0xD1x...", each checked against the
 * declared dtype and shape and written into g's input tensors (run mi_graph_infer_shapes after).
 * `fixed` (optional, g->input_count slots) receives the loaded arrays. An input given twice is an
 * error. NAME:VALUE is read as NAME=VALUE too. */
MI_API int32_t mi_graph_input_args(mi_graph_t *g, const char *const *files, int32_t nfiles,
                                   const char *const *shapes, int32_t nshapes, mi_array_t **fixed,
                                   mi_error_t *err);
/** Gives g's inputs the shapes of `spec`, "NAME:D0xD1x...;NAME=D0,D1,..." (the form recipes,
 * deployment tables and the measurement worker carry), each checked against the declared shape
 * as mi_graph_input_args does, and the fixed values of its entries "NAME={V0,V1,...}" (as
 * mi_graph_input_values); `what` names the source in errors. Run mi_graph_infer_shapes after. */
MI_API int32_t mi_graph_set_input_shapes(mi_graph_t *g, const char *spec, const char *what,
                                         mi_error_t *err);
/** Fixes model inputs to values, `values` "NAME=V0,V1,..." (numbers, or true/false) as --value
 * gives them: each becomes a constant of its dtype and its shape (declared, or set before by
 * --shape; a 1-D input of unknown length takes the count given, one of unknown rank a scalar
 * for one value) and stops being a graph input, so that what depends on it folds and an If on
 * it is replaced by its branch (mi_graph_inline_ifs). The shape text of
 * mi_graph_set_input_shapes carries the same as an entry "NAME={V0,V1,...}". */
MI_API int32_t mi_graph_input_values(mi_graph_t *g, const char *const *values, int32_t n, mi_error_t *err);
/** MI_OK unless the shape text `spec` fixes input `name` ("NAME={...}") to values other than
 * the array's; then MI_ERR_INVALID_ARGUMENT with one line naming the input, both values and
 * `what` (where the fixed value comes from, e.g. "deployment.yaml"). */
MI_API int32_t mi_input_value_check(const char *spec, const char *what, const char *name, const mi_array_t *a,
                                    mi_error_t *err);
/** Parses a .npy image held in memory; `what` names it in errors. */
MI_API int32_t mi_npy_parse(const void *buf, size_t size, const char *what, mi_array_t **out,
                            mi_error_t *err);
/** Writes an array as a .npy v1 file, atomically (temporary file, then rename). */
MI_API int32_t mi_npy_save(const char *path, const mi_array_t *a, mi_error_t *err);

/* ---------------------------------------------------------------- reference interpreter */

/** Runs a graph on the FP32 reference interpreter. `inputs` are in graph input order;
 * on success `outputs[i]` (graph output order, output_count entries) are new arrays the caller
 * destroys. The graph must be topologically sorted. */
MI_API int32_t mi_ref_run(const mi_graph_t *g, const mi_array_t *const *inputs,
                          int32_t input_count, mi_array_t **outputs, int32_t output_count,
                          mi_error_t *err);
/** True when the reference interpreter implements `op_type` at `opset`. */
MI_API int mi_ref_supports(const char *op_type, int64_t opset);
/** Constant folding: evaluates on the reference interpreter every node whose inputs are all
 * constants, and every Shape/Size of a tensor whose shape is fully known, and replaces them by
 * initializers (chains such as Shape -> Gather -> Concat -> Reshape end as one constant
 * shape), then drops the tensors left unused. Run it after mi_graph_infer_shapes with the
 * concrete input shapes, so that the executed graph is static. Quantize/DequantizeLinear
 * stay (devices may compute on quantized weights); results larger than 64 MiB are not
 * materialised. *folded (may be NULL) gets the number of nodes removed. */
MI_API int32_t mi_graph_fold_constants(mi_graph_t *g, int32_t *folded, mi_error_t *err);
/** Folds, as mi_graph_fold_constants would, only the nodes that compute a layer's weight or
 * bias from constants (the second and third inputs of Conv, Gemm and MatMul): a
 * quantized export's Cast and Mul of INT8 codes by their scale, a Transpose of a weight. The
 * layer then holds its weight as an initializer, which the model-side transforms and the search
 * space act on; the rest of the graph stays as it was. *folded (may be NULL) gets the number of
 * nodes removed. */
MI_API int32_t mi_graph_fold_weights(mi_graph_t *g, int32_t *folded, mi_error_t *err);
/** The graph every tool measures, once its inputs' shapes and fixed values are set: sorted, its
 * shapes inferred, each If its condition then decides replaced by its branch
 * (mi_graph_inline_ifs), and its constants folded (mi_graph_fold_constants; a Pad's computed
 * amounts or a Clip's computed bounds become initializers, so the session's rewrites and fusions
 * see them). The tuner's space, its workers, `mi-host compare`, `mi-host accuracy` and the
 * deployment runtime all prepare the model so, as mi-run does; node indices agree among them.
 * *folded (may be NULL) gets the number of nodes folded. */
MI_API int32_t mi_graph_make_static(mi_graph_t *g, int32_t *folded, mi_error_t *err);
/** Replaces every If whose condition is known before run time (a constant, or one once the nodes
 * it depends on are folded as mi_graph_fold_constants would: from fixed input values or shapes)
 * by the nodes of the branch it takes, and so on for the Ifs those nodes hold, until none is
 * left to replace. Only the conditions' nodes are folded; a graph without If is unchanged.
 * Branch names the graph already uses get the If's name as a prefix ("If_0/x"). Run it after
 * mi_graph_infer_shapes; the graph is sorted and its shapes inferred again when an If went.
 * *inlined (may be NULL) gets the number of Ifs replaced. */
MI_API int32_t mi_graph_inline_ifs(mi_graph_t *g, int32_t *inlined, mi_error_t *err);

/* ---------------------------------------------------------------- plugins */

/** A loaded plugin. `api` is the host's copy of the plugin's table, zero-filled past the
 * size the plugin declared, so an optional function the plugin does not know reads NULL. */
typedef struct mi_plugin {
  char *name; /* from the plugin's table */
  char *version;
  char *path;     /* the .so that was loaded */
  char *manifest; /* the manifest that named it */
  uint32_t abi_major;
  uint32_t abi_minor;     /* the minor the plugin was built with */
  uint32_t declared_size; /* the plugin's sizeof(mi_plugin_api_t) */
  mi_plugin_api_t api;
  mi_plugin_ctx_t *ctx;
  uint32_t device_count;
  void *dl; /* dlopen handle */
  /* Which device knobs the plugin holds, as sessions see them: 0 its defaults, else the
   * identity of the last session's knobs set through set_device_knobs (exec/session.c). A
   * device knob is device state, not a session's: each session sets its own again before a run
   * when another session's are held. */
  uint64_t device_knobs_held;
} mi_plugin_t;

/** A plugin's manifest (the small YAML file next to its .so, docs/abi.md): what the loader reads
 * before any plugin code runs. Strings are owned; mi_manifest_clear frees them. */
typedef struct mi_manifest {
  char *name;
  char *library; /* the .so, relative to the manifest's folder */
  long abi_major;
} mi_manifest_t;

/** Reads and parses the manifest file at `path` as the loader does (size bound, unknown keys and
 * types refused, errors with line and column). On failure *m is left empty. */
MI_API int32_t mi_manifest_load(const char *path, mi_manifest_t *m, mi_error_t *err);
/** The same for a manifest image in memory; `what` names it in errors. */
MI_API int32_t mi_manifest_parse(const void *buf, size_t size, const char *what, mi_manifest_t *m,
                                 mi_error_t *err);
/** The loader's policy, checked before any plugin code runs: the manifest's ABI major is the
 * host's, its library path stays in the manifest's folder, and neither the library (followed
 * through links) nor its folders can be written by anyone but this user or root
 * (docs/security.md). On success *real_path (when not NULL) is the resolved library, malloc'd;
 * on failure it is NULL and err holds the host's one-line refusal. */
MI_API int32_t mi_manifest_check_files(const char *path, const mi_manifest_t *m, char **real_path,
                                       mi_error_t *err);
/** Frees the manifest's strings and empties it. NULL is a no-op. */
MI_API void mi_manifest_clear(mi_manifest_t *m);

/** The set of loaded plugins, and the ones that were refused with the reason. */
typedef struct mi_registry mi_registry_t;

/** Creates an empty registry. NULL when out of memory. */
MI_API mi_registry_t *mi_registry_create(void);
/** Destroys every plugin instance and unloads the libraries. NULL is a no-op. */
MI_API void mi_registry_destroy(mi_registry_t *r);
/** Loads every plugin whose manifest (*.mi-plugin) is in `dir`. A bad plugin is recorded as
 * rejected with its reason and never stops the others; only an unreadable `dir` is an error. */
MI_API int32_t mi_registry_scan(mi_registry_t *r, const char *dir, mi_error_t *err);
/** Scans each directory of MI_PLUGIN_PATH (colon-separated); ignored in setuid programs. */
MI_API int32_t mi_registry_scan_env(mi_registry_t *r, mi_error_t *err);
/** Where every tool and the measurement workers it starts look for plugins, as one
 * colon-separated list (malloc'd; NULL only when out of memory): `given` (the command line's
 * --plugins folders, colon-joined) when not NULL or empty, else the readable folders of
 * MI_PLUGIN_PATH (ignored in setuid programs), else <program folder>/../plugins (a build tree)
 * or <program folder>/../lib/metainfer/plugins (an installed prefix), the first that exists,
 * else "". */
MI_API char *mi_plugin_path(const char *given);
/** Scans each folder of a colon-separated list such as mi_plugin_path's; an unreadable folder
 * is an error. "" or NULL loads nothing. */
MI_API int32_t mi_registry_scan_path(mi_registry_t *r, const char *path, mi_error_t *err);
MI_API int32_t mi_registry_plugin_count(const mi_registry_t *r);
MI_API mi_plugin_t *mi_registry_plugin(const mi_registry_t *r, int32_t index);
/** The plugin named `name`, or NULL. */
MI_API mi_plugin_t *mi_registry_find(const mi_registry_t *r, const char *name);
/** Rejected plugins: count, and for each the path and the one-line reason. */
MI_API int32_t mi_registry_rejected_count(const mi_registry_t *r);
MI_API const char *mi_registry_rejected(const mi_registry_t *r, int32_t index,
                                        const char **path);
/** Why the plugin whose manifest names `name` was refused, or NULL when none was. */
MI_API const char *mi_registry_refusal(const mi_registry_t *r, const char *name);
/** A check run on each manifest before its plugin is loaded into this process (`name` is the
 * manifest's). MI_OK: load it; MI_ERR_NOT_FOUND: skip it silently; anything else: refuse it
 * with err's message as the reason. mi_worker_preflight (mi_measure.h) is one. */
typedef int32_t (*mi_registry_preflight_fn)(void *ctx, const char *manifest_path,
                                            const char *name, mi_error_t *err);
/** Sets the check every later scan runs before loading a plugin (NULL: none, the default). */
MI_API void mi_registry_set_preflight(mi_registry_t *r, mi_registry_preflight_fn fn, void *ctx);
/** Describes the plugin of a manifest without loading it into this process: loads it elsewhere
 * and returns its snapshot (*snapshot malloc'd, *size bytes). MI_ERR_NOT_FOUND: skip it
 * silently; another error: refuse it with err's message. mi_worker_describe is one. */
typedef int32_t (*mi_registry_describe_fn)(void *ctx, const char *manifest_path, const char *name,
                                           void **snapshot, size_t *size, mi_error_t *err);
/** Makes later scans describe each plugin through `fn` instead of loading it (NULL: load them,
 * the default): the registry then holds stand-ins that answer every description query and run
 * nothing (mi_session_create and the like are refused), so no plugin code runs here. */
MI_API void mi_registry_set_isolated(mi_registry_t *r, mi_registry_describe_fn fn, void *ctx);
/** The device that runs what `plugin`'s `device` refuses when the caller names none: the first
 * CPU device (mi_device_desc_t.kind MI_DEVICE_CPU) of the loaded plugin whose name sorts first
 * among those with one, unless that plugin is `plugin` itself (a CPU plugin runs its own
 * refusals on the reference; an OpenCL or Vulkan device on a CPU, PoCL or lavapipe, gets the
 * CPU plugin). Returns 1 with *fb_plugin and *fb_device set; else 0 (NULL and 0). */
MI_API int mi_registry_cpu_fallback(const mi_registry_t *r, const mi_plugin_t *plugin,
                                    uint32_t device, mi_plugin_t **fb_plugin,
                                    uint32_t *fb_device);
/** Loads the plugin of the device that runs what `primary`'s `device` refuses, scanning `path`
 * (colon-separated; NULL or "": MI_PLUGIN_PATH): `spec` "PLUGIN:INDEX" loads that plugin only;
 * "ref" loads nothing (the reference interpreter runs them); NULL loads only the plugins that
 * could be mi_registry_cpu_fallback's pick. The primary's plugin is never loaded again; each
 * candidate passes `preflight` (NULL: none) first. *fb is NULL when the reference runs them. A
 * spec naming no loaded device: MI_ERR_NOT_FOUND, one line naming it. */
MI_API int32_t mi_registry_load_fallback(mi_registry_t *r, const char *path, const char *spec,
                                         const mi_plugin_t *primary, uint32_t device,
                                         mi_registry_preflight_fn preflight, void *ctx,
                                         mi_plugin_t **fb, uint32_t *fb_device, mi_error_t *err);
/** Resolves a device spec "PLUGIN:INDEX" (INDEX defaults to 0). MI_ERR_NOT_FOUND with the
 * list of known plugins in err when there is no such plugin or device. */
MI_API int32_t mi_registry_device(const mi_registry_t *r, const char *spec, mi_plugin_t **plugin,
                                  uint32_t *device, mi_error_t *err);

/** Description queries through the plugin's table: they zero `out`, set its struct_size,
 * call the plugin, and check what came back (terminated strings, sane values). */
MI_API int32_t mi_plugin_device_info(const mi_plugin_t *p, uint32_t device, mi_device_desc_t *out,
                                     mi_error_t *err);
MI_API int32_t mi_plugin_knobs(const mi_plugin_t *p, uint32_t device, mi_knob_desc_t **out,
                               uint32_t *count, mi_error_t *err); /* free(*out) */
MI_API int32_t mi_plugin_variants(const mi_plugin_t *p, uint32_t device, mi_variant_desc_t **out,
                                  uint32_t *count, mi_error_t *err); /* free(*out) */
MI_API int32_t mi_plugin_counters(const mi_plugin_t *p, uint32_t device, mi_counter_desc_t **out,
                                  uint32_t *count, mi_error_t *err); /* free(*out) */
MI_API int32_t mi_plugin_constraints(const mi_plugin_t *p, uint32_t device,
                                     mi_constraint_desc_t **out, uint32_t *count,
                                     mi_error_t *err); /* free(*out) */

/* ---------------------------------------------------------------- sessions (graph execution) */

/** The variant and knob values chosen for one node (by node name). */
typedef struct mi_node_choice {
  const char *node;       /* node name */
  const char *variant_id; /* NULL = plugin default */
  int32_t knob_count;
  const mi_knob_value_t *knobs;
} mi_node_choice_t;

/** How to run a graph on a device. Zero-initialise, then set struct_size. */
typedef struct mi_session_options {
  uint32_t struct_size;
  int32_t device_knob_count; /* device-scope knobs (threads, DVFS level) */
  const mi_knob_value_t *device_knobs;
  int32_t choice_count; /* per-node choices; other nodes use defaults */
  const mi_node_choice_t *choices;
  int32_t allow_host_fallback; /* 1: ops the device refuses run on the reference path */
  /* 1: no fused groups of the session's own. By default, a graph that no fusion pass grouped
   * (mi_node_t.group all -1) has the elementwise chains after its convs (BatchNormalization,
   * activations, clamps, hard-swish, residual Add) run in the conv's kernel where the device's
   * conv variants declare those fuse bits. */
  int32_t no_auto_fuse;
  /* 1: one device buffer per runtime tensor, as before the memory plan (a baseline for
   * measuring it). By default tensors whose lifetimes do not overlap share buffers. */
  int32_t no_memory_plan;
  /* A second device for the nodes `device` refuses (with allow_host_fallback): each such node
   * that fallback_plugin's device fallback_device accepts runs there as a kernel of its own,
   * its inputs written from and its outputs read back into host copies; the nodes it refuses
   * too run on the reference interpreter. NULL (the default): every refused node runs on the
   * reference interpreter. mi_registry_cpu_fallback picks one. */
  mi_plugin_t *fallback_plugin;
  uint32_t fallback_device;
  /* Added. 1: every device kernel runs synchronously (kernel_run), so each has a time of its
   * own (mi_session_node_time; per-layer profiles). By default, on a plugin with the
   * asynchronous pair (ABI 1.3 kernel_enqueue and device_sync), a run enqueues its kernels and
   * waits once where the host needs device data; its device kernels then have no time of their
   * own, and the run's device time (mi_session_device_time) comes from the waits. */
  int32_t per_node_timing;
} mi_session_options_t;

/** A graph prepared for one device: kernels prepared, constants uploaded. */
typedef struct mi_session mi_session_t;

/** Prepares `g` (shapes inferred, topologically sorted) for `device` of `plugin`, or for the
 * reference interpreter when plugin is NULL. `opts` may be NULL. The graph must outlive the
 * session. On failure err names the node and the reason. */
MI_API int32_t mi_session_create(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                                 const mi_session_options_t *opts, mi_session_t **out,
                                 mi_error_t *err);
/** Runs one inference. Inputs in graph input order; outputs[i] are new arrays. Inputs have the
 * shapes the session was created for, except an input that only If nodes read (a merged
 * decoder's caches, one position longer at every token): its shape may change from run to run,
 * the If's branch being prepared again for it in its nested session (keeping every kernel and
 * folded value the new shapes do not reach), as long as the values the If hands to this
 * session's own kernels keep their shapes (else MI_ERR_INVALID_ARGUMENT naming the tensor). */
MI_API int32_t mi_session_run(mi_session_t *s, const mi_array_t *const *inputs,
                              int32_t input_count, mi_array_t **outputs, int32_t output_count,
                              mi_error_t *err);
/** Nodes that run on the host because the device refused them (count, and each name). */
MI_API int32_t mi_session_fallback_count(const mi_session_t *s);
MI_API const char *mi_session_fallback_node(const mi_session_t *s, int32_t index);
/** Where fallback node `index` runs: 1 on the session's fallback device
 * (mi_session_options_t.fallback_plugin, written into *plugin and *device when not NULL), 0 on
 * the reference interpreter (or for a bad index). */
MI_API int mi_session_fallback_where(const mi_session_t *s, int32_t index, mi_plugin_t **plugin,
                                     uint32_t *device);
/** Fallback nodes that run on the fallback device (the rest run on the reference). */
MI_API int32_t mi_session_fallback_device_count(const mi_session_t *s);
/** Device time of the last successful mi_session_run, summed over its device kernels. Returns 1
 * and sets *ns when every device kernel of that run reported a device timer; else 0 and *ns is
 * left alone (nothing was measured, so nothing is claimed). Always 0 on the reference path. */
MI_API int mi_session_device_time(const mi_session_t *s, uint64_t *ns);
/** Per-node timing of the last successful mi_session_run: wall time of graph node `node` and,
 * when its device kernel reported one, its device time. Returns 0 when the node did not run
 * (folded, or no run yet) or has no time of its own (a device kernel the run enqueued: see
 * mi_session_options_t.per_node_timing), 1 for wall time only, 2 for wall and device time. */
MI_API int mi_session_node_time(const mi_session_t *s, int32_t node, uint64_t *wall_ns,
                                uint64_t *device_ns);
/** Nested sessions: an If node whose branch runs on the device runs it as a session of its own,
 * made on first use. Returns how many the session holds (0 on the reference path or for NULL).
 * mi_session_nested gives session `index` when it ran in the last successful mi_session_run
 * (else NULL), with the If node of s's graph, the branch ("then" or "else") and the graph it
 * runs (the branch, its captures as inputs); mi_session_node_time on it gives its nodes' times.
 * Pointers stay valid until the next run or the session's destruction. */
MI_API int32_t mi_session_nested_count(const mi_session_t *s);
MI_API const mi_session_t *mi_session_nested(const mi_session_t *s, int32_t index, int32_t *node,
                                             const char **branch, const mi_graph_t **graph);
/** Device kernels the session prepared: a fused group, a quantized layer lowered with its
 * Q/DQ nodes, or a layout conversion counts once each. -1 on the reference path or for NULL. */
MI_API int32_t mi_session_kernel_count(const mi_session_t *s);
/** Of those, the kernels taken over from the session it replaced rather than prepared: a nested
 * branch (mi_session_nested) prepared again when its captures' shapes changed keeps every
 * kernel whose description did not change. 0 for a session prepared from scratch; -1 on the
 * reference path or for NULL. */
MI_API int32_t mi_session_kernel_reused_count(const mi_session_t *s);
/** The graph nodes device kernel `index` runs (execution order): returns their count and
 * points *nodes at them (valid while the session lives); 0 for a bad index. */
MI_API int32_t mi_session_kernel_nodes(const mi_session_t *s, int32_t index,
                                       const int32_t **nodes);
/** Device memory of the session's runtime tensors: bytes its buffers take under the memory plan,
 * bytes one buffer per tensor would take, and the most bytes live at any one step (the bound for
 * any plan). Returns 1 and sets the non-NULL outputs; 0 on the reference path or for NULL. Kernel
 * workspaces, weights and nested sessions are not included. */
MI_API int mi_session_memory(const mi_session_t *s, uint64_t *planned, uint64_t *unplanned,
                             uint64_t *live_peak);
/** Bytes the last mi_session_run copied from the host to the device (inputs, host results a
 * kernel reads, constant parts of eliminated Concats) and back (outputs, values a host step
 * reads), nested sessions' included. A device whose kernels address host memory (ABI 1.4
 * buffer_wrap: blis-cpu) reads the caller's inputs and writes its outputs where they lie, so
 * only layout conversions and host steps' values are copied. Returns 1 and sets the non-NULL
 * outputs; 0 on the reference path or for NULL. */
MI_API int mi_session_transfers(const mi_session_t *s, uint64_t *to_device, uint64_t *to_host);
/** Multi-node kernels the device refused, so that their nodes ran one kernel each: count, and
 * one line each ("group of 'conv1' (3 nodes): <the plugin's reason>"). */
MI_API int32_t mi_session_unfused_count(const mi_session_t *s);
MI_API const char *mi_session_unfused(const mi_session_t *s, int32_t index);
/** Frees kernels and buffers. NULL is a no-op. */
MI_API void mi_session_destroy(mi_session_t *s);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_CORE_H */
