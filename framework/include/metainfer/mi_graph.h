/* mi_graph.h - the graph IR shared by the importer, the reference interpreter, the transforms,
 * the search and the executor. */
#ifndef METAINFER_MI_GRAPH_H
#define METAINFER_MI_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exports. Defined here because every public header includes this one. */
#ifndef MI_API
#define MI_API __attribute__((visibility("default")))
#endif

/** Dimension value for a dimension not known until run time. */
#define MI_DIM_DYNAMIC (-1)

/** A tensor: a graph input, an initializer (data != NULL), or a value a node produces.
 * Shapes are logical (ONNX order); `layout` says how activations are stored. */
typedef struct mi_tensor {
  char *name;
  int32_t dtype;                /* mi_dtype */
  int32_t rank;                 /* -1 = shape unknown */
  int64_t dims[MI_MAX_RANK];    /* MI_DIM_DYNAMIC for unknown dims */
  char *dim_names[MI_MAX_RANK]; /* symbolic names of dynamic dims ("batch"), or NULL */
  int32_t layout;               /* mi_layout */
  int32_t block;                /* channel block when layout == MI_LAYOUT_NCHWC */
  void *data;                   /* initializer data, owned unless data_shared; NULL for runtime values */
  size_t nbytes;
  /* Quantization parameters; scale == 0 means "not quantized". */
  float scale;
  int32_t zero_point;
  int32_t channel_axis;
  uint32_t channel_count;
  float *channel_scales; /* owned */
  int32_t producer;      /* index of the producing node, -1 for inputs/initializers */
  /* Bits the values really use when fewer than the dtype holds, 0 otherwise. The quantizer's
   * INT4 weights are INT8 data in [-7, 7] (ONNX export has no packed INT4) with value_bits 4:
   * a plugin may be given them packed as MI_DTYPE_INT4 (see docs/transforms.md). */
  int32_t value_bits;
  /* 1 when `data` belongs to another graph that outlives this one (a session's working copy of
   * the caller's graph shares its weights): never freed or written through this tensor. */
  int32_t data_shared;
  /* 1 when `name` belongs to another graph that outlives this one (a nested branch's copy
   * prepared again per input shape names its tensors with the branch's strings): never freed
   * through this tensor. */
  int32_t name_shared;
} mi_tensor_t;

/** A node: one op (ONNX semantics). Attributes use the SDK's mi_attr_t; the node owns every
 * string and array they point to. */
typedef struct mi_node {
  char *name;
  char *op_type;
  char *domain; /* "" for the default ONNX domain */
  int32_t input_count;
  int32_t *inputs; /* tensor indices; -1 for an omitted optional input */
  int32_t output_count;
  int32_t *outputs;
  int32_t attr_count;
  mi_attr_t *attrs;
  int32_t group; /* fused group id, -1 when not fused */
  /* Graph-valued attributes (If's branches, Loop's and Scan's body), kept here rather than in
   * mi_attr_t so the plugin ABI is untouched; a node with subgraphs always runs on the host.
   * A subgraph names a value of an enclosing graph by a tensor of the same name that is
   * neither an input, an initializer nor produced inside it (a capture); the node lists the
   * outer tensors it captures as its last `implicit_inputs` inputs, so ordering, liveness
   * and pruning see the dependency. */
  int32_t subgraph_count;
  struct mi_graph **subgraphs; /* owned */
  char **subgraph_names;       /* attribute names ("then_branch", "body"), owned */
  int32_t implicit_inputs;
  /* 1 when name, op_type and domain belong to another graph that outlives this one (as
   * mi_tensor_t.name_shared): never freed through this node; mi__node_own_strings copies
   * them before one is replaced. */
  int32_t strings_shared;
} mi_node_t;

/** A graph. Nodes are kept in topological order once mi_graph_toposort() succeeded. */
typedef struct mi_graph {
  char *name;
  int64_t opset; /* default-domain opset version */
  int32_t tensor_count, tensor_cap;
  mi_tensor_t *tensors;
  int32_t node_count, node_cap;
  mi_node_t *nodes;
  int32_t input_count; /* runtime inputs (initializers excluded) */
  int32_t *inputs;
  int32_t output_count;
  int32_t *outputs;
  /* In a subgraph (mi_node_t.subgraphs): tensors bound by name to values of the enclosing
   * graphs when it runs; they count as defined like inputs. 0 / NULL in a main graph. */
  int32_t capture_count;
  int32_t *captures;
} mi_graph_t;

/** Size in bytes of one element of `dtype` (INT4: 1, two values share a byte; see
 * mi_dtype_bytes_for). 0 for MI_DTYPE_UNDEFINED. */
MI_API size_t mi_dtype_size(int32_t dtype);
/** Bytes needed for `count` elements of dtype (INT4 rounds up). */
MI_API size_t mi_dtype_bytes_for(int32_t dtype, int64_t count);
/** Short name: "float32", "int8", ... */
MI_API const char *mi_dtype_name(int32_t dtype);

/** Creates an empty graph (opset 13). Returns NULL when out of memory. */
MI_API mi_graph_t *mi_graph_create(const char *name);
/** Frees a graph and everything it owns. NULL is a no-op. */
MI_API void mi_graph_destroy(mi_graph_t *g);
/** Deep copy; NULL when out of memory. */
MI_API mi_graph_t *mi_graph_clone(const mi_graph_t *g);

/** Adds a tensor and returns its index, or -1 when out of memory. `dims` may be NULL when
 * rank is -1. The name is copied. */
MI_API int32_t mi_graph_add_tensor(mi_graph_t *g, const char *name, int32_t dtype, int32_t rank,
                                   const int64_t *dims);
/** Index of the tensor named `name`, or -1. */
MI_API int32_t mi_graph_find_tensor(const mi_graph_t *g, const char *name);
/** Index of t's first dimension that is not known (a symbolic or missing size, < 0), or -1 when
 * every one is known (a tensor of unknown rank has none to name). */
MI_API int32_t mi_tensor_dynamic_dim(const mi_tensor_t *t);
/** Copies `nbytes` of `data` into tensor `t` as its constant value. MI_OK or an error. */
MI_API int32_t mi_graph_set_data(mi_graph_t *g, int32_t t, const void *data, size_t nbytes);
/** Adds a constant FP32 tensor with the given shape and data; returns its index or -1. */
MI_API int32_t mi_graph_add_const_f32(mi_graph_t *g, const char *name, int32_t rank,
                                      const int64_t *dims, const float *data);
/** Adds a constant INT64 tensor (1-D) and returns its index or -1. */
MI_API int32_t mi_graph_add_const_i64(mi_graph_t *g, const char *name, int64_t count,
                                      const int64_t *data);
/** Marks tensor `t` as a graph input / output. */
MI_API int32_t mi_graph_add_input(mi_graph_t *g, int32_t t);
MI_API int32_t mi_graph_add_output(mi_graph_t *g, int32_t t);

/** Adds a node and returns its index, or -1 when out of memory. Inputs may contain -1 for an
 * omitted optional input. The node's outputs get `producer` set. */
MI_API int32_t mi_graph_add_node(mi_graph_t *g, const char *op_type, const char *name,
                                 int32_t input_count, const int32_t *inputs,
                                 int32_t output_count, const int32_t *outputs);
/** Attribute setters; they copy their arguments and replace an attribute of the same name. */
MI_API int32_t mi_node_set_int(mi_graph_t *g, int32_t node, const char *name, int64_t v);
MI_API int32_t mi_node_set_float(mi_graph_t *g, int32_t node, const char *name, float v);
MI_API int32_t mi_node_set_ints(mi_graph_t *g, int32_t node, const char *name, int32_t count,
                                const int64_t *v);
MI_API int32_t mi_node_set_floats(mi_graph_t *g, int32_t node, const char *name, int32_t count,
                                  const float *v);
MI_API int32_t mi_node_set_string(mi_graph_t *g, int32_t node, const char *name,
                                  const char *v);

/** Attribute lookups; NULL / the default when absent or of another type. */
MI_API const mi_attr_t *mi_node_attr(const mi_node_t *n, const char *name);
MI_API int64_t mi_node_attr_int(const mi_node_t *n, const char *name, int64_t dflt);
MI_API float mi_node_attr_float(const mi_node_t *n, const char *name, float dflt);
MI_API const char *mi_node_attr_string(const mi_node_t *n, const char *name, const char *dflt);

/** Sorts nodes topologically (stable for already sorted graphs) and sets producers.
 * MI_ERR_PARSE naming a tensor when the graph has a cycle or an undefined input. */
MI_API int32_t mi_graph_toposort(mi_graph_t *g, mi_error_t *err);

/** Infers dtype and shape of every tensor a node produces, from the graph inputs' shapes
 * and constant values. Dynamic input dims may be fixed first by setting them in the tensor.
 * MI_ERR_UNSUPPORTED naming the node, op type and opset for an op it does not know;
 * MI_ERR_PARSE for inconsistent shapes. */
MI_API int32_t mi_graph_infer_shapes(mi_graph_t *g, mi_error_t *err);
/** Parses a shape "D0,D1,..." or "D0xD1x..." (each >= 0; "" is a scalar). */
MI_API int32_t mi_shape_parse(const char *text, int32_t *rank, int64_t *dims);

/** Removes the nodes with drop[i] != 0 (node_count entries), then every tensor that no kept
 * node, graph input or graph output refers to; tensor indices are renumbered and producers
 * recomputed. MI_OK, or an error leaving the graph unchanged. */
MI_API int32_t mi_graph_remove_nodes(mi_graph_t *g, const uint8_t *drop, mi_error_t *err);

/** The subgraph attribute `name` of a node, or NULL. */
MI_API struct mi_graph *mi_node_subgraph(const mi_node_t *n, const char *name);
/** Marks tensor t of subgraph `sub` as a capture: bound at run time to the enclosing graph's
 * tensor of the same name. */
MI_API int32_t mi_graph_add_capture(struct mi_graph *sub, int32_t t);
/** Attaches `sub` to a node as its subgraph attribute `name`, taking ownership of it (also on
 * failure), and appends the enclosing tensors it captures (found by name in g) to the node's
 * implicit inputs. MI_ERR_PARSE when a capture names no tensor of g. */
MI_API int32_t mi_node_add_subgraph(struct mi_graph *g, int32_t node, const char *name,
                                    struct mi_graph *sub, mi_error_t *err);

/** Loads an ONNX model file (external data is resolved relative to the file).
 * On failure *out is NULL and err names the file and what is wrong. */
MI_API int32_t mi_onnx_load(const char *path, mi_graph_t **out, mi_error_t *err);
/** Loads an ONNX model from memory; `base_dir` resolves external data (may be NULL). */
MI_API int32_t mi_onnx_load_buffer(const void *data, size_t size, const char *base_dir,
                                   mi_graph_t **out, mi_error_t *err);
/** Writes a graph as an ONNX model (IR version 8, the graph's opset). */
MI_API int32_t mi_onnx_save(const mi_graph_t *g, const char *path, mi_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_GRAPH_H */
