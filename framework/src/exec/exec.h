/* exec.h - internal types of the executor: sessions, their steps, kernel descriptions. */
#ifndef MI_EXEC_EXEC_H
#define MI_EXEC_EXEC_H

#include "metainfer/mi.h"

/* How one node runs in a session. */
typedef enum mi__step_kind {
  MI__STEP_DEVICE = 0, /* a kernel prepared on the plugin */
  MI__STEP_HOST = 1,   /* the device refused it: the reference interpreter runs it */
  MI__STEP_FOLDED = 2  /* evaluated once at create time; its outputs are constants */
} mi__step_kind;

typedef struct mi__step {
  int32_t node;
  int32_t kind;          /* mi__step_kind */
  mi_kernel_t *kernel;   /* MI__STEP_DEVICE only */
  int32_t input_count;   /* runtime inputs in kernel_run order (graph tensor indices) */
  int32_t *inputs;
  int32_t output_count;  /* outputs in kernel_run order (graph tensor indices) */
  int32_t *outputs;
} mi__step_t;

struct mi_session {
  const mi_graph_t *g;     /* the graph the session runs: the caller's, or `own` */
  mi_graph_t *own;         /* private clone with shapes inferred, when the caller's lacked them */
  mi_plugin_t *plugin;     /* NULL: the whole graph runs on mi_ref_run */
  uint32_t device;
  int32_t step_count;
  mi__step_t *steps;
  /* Per tensor: its constant value (a view of an initializer or an owned folded array). */
  mi_array_t **consts;
  uint8_t *const_owned;
  mi_buffer_t **bufs;      /* per tensor: device buffer, NULL when no device kernel touches it */
  uint64_t *buf_bytes;
  /* Per-run state, reset by every run (a session runs one inference at a time). */
  const mi_array_t **hval; /* valid host copy of a tensor, or NULL */
  mi_array_t **hown;       /* the host copies this run allocated */
  uint8_t *on_device;      /* the device buffer holds the current value */
  int32_t fallback_count;
  char **fallback;         /* node names */
  int has_device_time;
  uint64_t device_time_ns;
  /* Per node, timing of the last run (mi_session_node_time); allocated on the first run.
   * node_timed: 0 did not run, 1 wall time only, 2 wall and device time. */
  uint64_t *node_wall_ns;
  uint64_t *node_dev_ns;
  uint8_t *node_timed;
};

/* Storage behind one mi_kernel_desc_t; everything it points to lives here. */
typedef struct mi__kdesc {
  mi_kernel_desc_t desc;
  mi_node_desc_t node;
  const mi_node_desc_t *node_ptr;
  int32_t tensor_count;
  int32_t *tmap;                   /* local tensor index -> graph tensor index */
  mi_tensor_desc_t *tensors;
  const mi_tensor_desc_t **tensor_ptrs;
  int32_t *node_inputs, *node_outputs;
  int32_t input_count, output_count;
  int32_t *inputs, *outputs;       /* local indices (what the desc holds) */
  int32_t *graph_inputs, *graph_outputs; /* the same, as graph tensor indices */
} mi__kdesc_t;

/* Describes node `node` of `g` for kernel_prepare. `consts[t]` is tensor t's constant value
 * or NULL for a runtime tensor. The choice (variant, knobs) is left for the caller to set. */
int32_t mi__kdesc_build(mi__kdesc_t *k, const mi_graph_t *g, int32_t node,
                        mi_array_t *const *consts, mi_error_t *err);
void mi__kdesc_free(mi__kdesc_t *k);

/* Evaluates a node whose value is known at create time (all inputs constant, or a shape
 * query on a tensor of known shape). Returns 1 and fills outputs (node->output_count new
 * arrays) when it did, 0 when the node is not foldable, or a negative status on error. */
int32_t mi__fold_node(const mi_graph_t *g, int32_t node, mi_array_t *const *consts,
                      mi_array_t **outputs, mi_error_t *err);

/* A view of a graph initializer as an array (no ownership: never mi_array_destroy it). */
mi_array_t *mi__const_view(const mi_tensor_t *t);

/* Bytes of a tensor of concrete shape; 0 and *ok = 0 when its shape is not concrete. */
uint64_t mi__tensor_bytes(const mi_tensor_t *t, int *ok);

/* Node name for messages: the name, or "#INDEX" for an unnamed node. */
const char *mi__node_label(const mi_graph_t *g, int32_t node, char *buf, size_t cap);

/* The run loop (session_run.c). */
int32_t mi__session_run_device(mi_session_t *s, const mi_array_t *const *inputs,
                               mi_array_t **outputs, mi_error_t *err);

#endif
