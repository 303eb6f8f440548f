/* graph.h - the graph module's IR plumbing for the modules that rewrite graphs (graph itself and
 * transform): releasing and copying what tensors, nodes and attributes own, element counts;
 * one node's operation count (feature's model features, measure's per-layer table); who reads a
 * tensor (exec's and task's fusion chains). */
#ifndef METAINFER_GRAPH_GRAPH_H
#define METAINFER_GRAPH_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi_graph.h"

/** strdup that accepts NULL (returns NULL) and never uses a global. */
char *mi__strdup(const char *s);
/** A malloc'd copy of the n bytes at p; at least one byte is allocated, so an empty list has a
 * pointer too. NULL when out of memory (or p is NULL while n is not 0). */
void *mi__dup_bytes(const void *p, size_t n);
/** Frees everything a tensor owns (not the struct itself). */
void mi__tensor_release(mi_tensor_t *t);
/** Frees everything a node owns (not the struct itself). */
void mi__node_release(mi_node_t *n);
/** Frees what an attribute owns. */
void mi__attr_release(mi_attr_t *a);
/** Deep-copies an attribute; MI_OK or MI_ERR_OUT_OF_MEMORY. */
int32_t mi__attr_copy(mi_attr_t *dst, const mi_attr_t *src);
/** Appends an attribute (taking ownership of what `a` points to) or replaces one of the same
 * name. MI_OK or MI_ERR_OUT_OF_MEMORY (then `a` is released). */
int32_t mi__node_put_attr(mi_node_t *n, mi_attr_t *a);
/** Number of elements of a shape, or -1 when a dim is unknown or the product overflows. */
int64_t mi__dims_numel(int32_t rank, const int64_t *dims);
/** Number of elements of a tensor with a fully known shape, or -1 (unknown or overflowing). */
int64_t mi__tensor_numel(const mi_tensor_t *t);
/** Sets a tensor's shape (dim names cleared). */
void mi__tensor_set_shape(mi_tensor_t *t, int32_t rank, const int64_t *dims);
/** Element count for estimates: unknown dims count as 1, an unknown rank as 0 (node_flops.c). */
double mi__tensor_numel_est(const mi_tensor_t *t);
/** Input (out = 0) or output (out = 1) i of node n, or NULL when absent or omitted. */
const mi_tensor_t *mi__node_tensor(const mi_graph_t *g, const mi_node_t *n, int out, int32_t i);
/** Floating-point operations of one node (multiply-add = 2; one per output value for the ops
 * that are not Conv, Gemm, MatMul or a pool), from its inferred shapes. */
double mi__node_flops(const mi_graph_t *g, const mi_node_t *n);

/** 1 when tensor t is one of the graph's outputs. */
int mi__graph_is_output(const mi_graph_t *g, int32_t t);
/** The one node that reads tensor t (through any number of its inputs), or -1 when none or
 * several do or t is a graph output: what a fusion may fold into its producer. */
int32_t mi__graph_sole_reader(const mi_graph_t *g, int32_t t);
/** mi__graph_sole_reader of every tensor at once (malloc'd, tensor_count entries; NULL when out
 * of memory): a matcher that asks per node reads it instead of scanning the graph per question,
 * and builds it again after it rewrites the graph. */
int32_t *mi__graph_sole_readers(const mi_graph_t *g);
/** The node that produces tensor t, or -1 (a graph input, a constant, t < 0). */
int32_t mi__graph_producer(const mi_graph_t *g, int32_t t);
/** 1 when node n exists and is op type `op` of the default ONNX domain (what the fusion and
 * lowering matchers look for; a com.microsoft node of the same name is another op). */
int mi__graph_is_op(const mi_graph_t *g, int32_t n, const char *op);

/** A copy of g whose constants point at g's data (data_shared) instead of copies: for a working
 * copy that rewrites nodes and shapes but never a constant's bytes, and that g outlives (a
 * session's copy of the caller's graph). Releasing or replacing such a tensor leaves g's data. */
mi_graph_t *mi__graph_clone_shared(const mi_graph_t *g);
/** A copy of g whose constants point at g's data (as mi__graph_clone_shared's) and whose tensors
 * and nodes name themselves with g's strings (name_shared, strings_shared) instead of copies, for
 * a copy that g outlives and that is made again often (a nested branch prepared per input shape):
 * no constant copied, one allocation fewer per tensor, three per node, in the copy and in its
 * release, and a constant at the same address in every copy. */
mi_graph_t *mi__graph_clone_named(const mi_graph_t *g);
/** Gives node n copies of the strings it shares (before one is freed or replaced): 0, or -1
 * when out of memory (n unchanged). */
int mi__node_own_strings(mi_node_t *n);

/** 1 when some zero constant Pad of spatial dims is read by one Conv only (pad_fold.c). */
int mi__graph_pad_foldable(const mi_graph_t *g);
/** Folds each such Pad into its Conv's pads: the Conv reads the Pad's input, the Pad's output
 * is left without readers (nodes are not removed, so node indices stay those of the graph it
 * was cloned from). Returns the number folded, or -MI_ERR_OUT_OF_MEMORY. */
int32_t mi__graph_fold_pads(mi_graph_t *g);

/** 1 when the graph spells out a layer normalisation (ReduceMean, Sub, Pow, ReduceMean,
 * Add(eps), Sqrt, Div, Mul[, Add]) over its trailing dims that one LayerNormalization computes
 * (ln_fuse.c). */
int mi__graph_ln_fusable(const mi_graph_t *g);
/** Rewrites the last node of each such norm into LayerNormalization(X, scale[, bias]) with
 * the same output; the norm's other nodes are left without readers (nodes are not removed, as
 * in mi__graph_fold_pads). Returns the number fused, or -MI_ERR_OUT_OF_MEMORY. */
int32_t mi__graph_fuse_layernorms(mi_graph_t *g);

/** 1 when the graph spells out the exact Gelu, 0.5 * x * (1 + erf(x / sqrt(2))), as Div (or Mul
 * by 1 / sqrt(2)), Erf, Add(1), Mul and Mul(0.5) in any operand order (gelu_fuse.c). */
int mi__graph_gelu_fusable(const mi_graph_t *g);
/** Rewrites the last Mul of each such Gelu into Gelu(x) with the same output; the other nodes
 * are left without readers (as in mi__graph_fuse_layernorms). Returns the number fused, or
 * -MI_ERR_OUT_OF_MEMORY. */
int32_t mi__graph_fuse_gelus(mi_graph_t *g);

/** The dims [*start, *start + count) of a rank-`rank` input that a Shape node outputs: its start
 * and end attributes when has_range (opset 15 added them), negative ones counted from the end,
 * both clamped to [0, rank]. Returns the count (0 when end <= start). Shape inference, constant
 * folding (exec's and ref's) and the reference kernel all use it. */
int64_t mi__shape_op_range(const mi_node_t *n, int32_t rank, int has_range, int64_t *start);

/** Replaces If node `node` by the nodes of its then_branch (branch != 0) or else_branch
 * (if_inline.c): branch tensors and nodes whose names g already uses get "<If name>/<name>",
 * captures bind to g's values of the same name, the branch's outputs become the If's (an
 * Identity where a branch output is a captured value, a constant or repeated). The If is
 * removed (mi_graph_remove_nodes: tensor indices change); the caller sorts the graph again.
 * MI_OK or an error (out of memory leaves the graph partly rewritten). */
int32_t mi__graph_inline_if(mi_graph_t *g, int32_t node, int branch, mi_error_t *err);

/** 1 for an op of the default domain ("" or "ai.onnx") or one of the com.microsoft ops the
 * framework runs (op_domain.c: the quantized ops ONNX Runtime's quantizer writes); else 0. */
int mi__graph_op_known(const char *domain, const char *op_type);

/** One input of a node as a check that runs both on graph tensors and on reference arrays sees
 * it (MatMulNBits, DynamicQuantizeLSTM): present 0 when absent; data NULL when not constant. */
typedef struct mi__in_view {
  int32_t present, dtype, rank;
  const int64_t *dims;
  const void *data;
} mi__in_view_t;

/** Views of inputs 0..count-1 of node n of g (absent past its inputs and where one is omitted). */
void mi__in_views_of_node(const mi_graph_t *g, const mi_node_t *n, mi__in_view_t *v, int32_t count);
/** Elements of a view's shape (1 for rank 0 or an unknown rank). */
int64_t mi__in_view_numel(const mi__in_view_t *x);

#endif /* METAINFER_GRAPH_GRAPH_H */
