/* shape_infer.h - the shape-inference context shared by the per-op-family files. */
#ifndef METAINFER_SHAPE_INFER_H
#define METAINFER_SHAPE_INFER_H

#include <math.h>
#include <stdint.h>

#include "graph/graph_internal.h"

/* Small tensors whose values are known while inferring (initializers and the results of
 * shape arithmetic on them), as doubles; NaN marks an element not known (a dynamic dim). */
#define MI__SI_MAX_VALUES 4096

typedef struct mi__si {
  mi_graph_t *g;
  double **val; /* per tensor, NULL when unknown */
  int64_t *val_n;
  mi_error_t *err;
} mi__si_t;

/* A handler infers one node's output shapes. MI__SI_DONE: it finished early without error
 * (mi__si_open marked the output unknown); the driver reads it as MI_OK. */
typedef int32_t (*mi__si_fn)(mi__si_t *c, const mi_node_t *n);
#define MI__SI_DONE (-1)

/* One row of the op table (shape_infer.c): an op type and its handler. */
typedef struct mi__si_op {
  const char *op;
  mi__si_fn fn;
} mi__si_op_t;

/** Error "node 'NAME' (OP, opset N): <message>" with `code`. */
int32_t mi__si_fail(mi__si_t *c, const mi_node_t *n, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** MI_OK when the graph's opset has the node's op (mi__op_since), else the error "the op exists
 * from opset N on", as the interpreter refuses it. */
int32_t mi__si_since(mi__si_t *c, const mi_node_t *n);
/** The node's input k, or NULL when absent or omitted. */
const mi_tensor_t *mi__si_in(const mi__si_t *c, const mi_node_t *n, int32_t k);
/** MI_OK when the node has at least `min` present inputs at the front, else an error. */
int32_t mi__si_need(mi__si_t *c, const mi_node_t *n, int32_t min);
/** The opening most handlers share: at least `min` inputs (mi__si_need), input 0 in *x.
 * When x's rank is unknown, output 0 gets x's dtype and an unknown rank: MI__SI_DONE. */
int32_t mi__si_open(mi__si_t *c, const mi_node_t *n, int32_t min, const mi_tensor_t **x);
/** The same for two operands, inputs 0 (*a) and kb (*b): when either rank is unknown, output 0
 * gets a's dtype and an unknown rank: MI__SI_DONE. */
int32_t mi__si_open2(mi__si_t *c, const mi_node_t *n, int32_t min, int32_t kb,
                     const mi_tensor_t **a, const mi_tensor_t **b);
/** Output 0 takes input 0's dtype and shape (element-wise ops). */
int32_t mi__si_same_shape(mi__si_t *c, const mi_node_t *n);
/** Output 0 takes input 0's shape in `dtype` (MI_DTYPE_UNDEFINED: input 0's), once the node has
 * at least `min` inputs; *x (when x is not NULL) is input 0. */
int32_t mi__si_shaped_like(mi__si_t *c, const mi_node_t *n, int32_t min, int32_t dtype,
                           const mi_tensor_t **x);
/** Sets output k's dtype and shape (rank -1: unknown); a missing output is ignored. */
void mi__si_set(mi__si_t *c, const mi_node_t *n, int32_t k, int32_t dtype, int32_t rank,
                const int64_t *dims);
/** Known values of input k (count in *count), or NULL. */
const double *mi__si_val(const mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *count);
/** Records the value of output k (copied); silently skipped when too large. */
void mi__si_set_val(mi__si_t *c, const mi_node_t *n, int32_t k, const double *v, int64_t count);
/** Reads known integer values of input k into out (at most max); -1 when unknown or with an
 * unknown element, else the count. */
int64_t mi__si_ints(const mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *out, int64_t max);
/** Normalizes a possibly negative axis for `rank`; -1 (after an error) when out of range. */
int32_t mi__si_axis(mi__si_t *c, const mi_node_t *n, int64_t axis, int32_t rank, int32_t *out);
/** Numpy broadcasting of two shapes into out; MI_ERR_PARSE when incompatible. */
int32_t mi__si_broadcast(mi__si_t *c, const mi_node_t *n, int32_t ra, const int64_t *a,
                         int32_t rb, const int64_t *b, int32_t *rout, int64_t *out);
/** Converts a double back to int64, saturating (INT64_MAX ends of Slice survive). */
int64_t mi__si_d2i(double v);

/* The handlers, one per op family file shape_infer_<family>.c; the op table that maps op
 * types onto them is in shape_infer.c. */
/* elementwise: unary, broadcasting, normalization */
int32_t mi__si_unary_eval(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_dropout(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_broadcast_op(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_cast(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_softmax(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_batchnorm(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_layernorm(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_clip(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_constant(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_quantize_linear(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_dequantize_linear(mi__si_t *c, const mi_node_t *n);
/* nn: Conv, pools, MatMul, Gemm, Resize */
int32_t mi__si_conv(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_pool(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_matmul(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_gemm(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_resize(mi__si_t *c, const mi_node_t *n);
/* tensor: Reshape, Slice, Gather, Reduce*, ... */
int32_t mi__si_reshape(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_flatten(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_transpose(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_reduce(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_squeeze(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_unsqueeze(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_concat(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_shape(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_gather(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_slice(mi__si_t *c, const mi_node_t *n);
/* generate: Expand, ConstantOfShape, Range, Tile */
int32_t mi__si_expand(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_constant_of_shape(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_range(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_tile(mi__si_t *c, const mi_node_t *n);
/* control: Scan, If, Loop */
int32_t mi__si_scan_op(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_if_op(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_loop_op(mi__si_t *c, const mi_node_t *n);
/* pad: Pad, Size, LSTM */
int32_t mi__si_pad(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_size(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_lstm(mi__si_t *c, const mi_node_t *n);
/* shape_infer_rnn.c: GRU and RNN (Y, Y_h), and the recurrent ops' shapes by layout */
int32_t mi__si_gru(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_recurrent(mi__si_t *c, const mi_node_t *n, int32_t outputs);
/* select: ArgMax, TopK, ... */
int32_t mi__si_argminmax(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_topk(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_nonzero(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_einsum(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_gather_elements(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_scatter_nd(mi__si_t *c, const mi_node_t *n);
/* rearrange: Split, Trilu, DepthToSpace, ... */
int32_t mi__si_split(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_trilu(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_cumsum(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_depth_space(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_prelu(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_mod(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_to_bool(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_instancenorm(mi__si_t *c, const mi_node_t *n);
/* quant: QLinear*, *Integer */
int32_t mi__si_conv_integer(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_conv(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_matmul_integer(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_matmul(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_dynamic_quantize(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_binary(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_gap(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_unary(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_avgpool(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_concat(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qlinear_where(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_qgemm(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_matmul_nbits(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_dqlstm(mi__si_t *c, const mi_node_t *n);
/* attn: Attention (both domains), com.microsoft MultiHeadAttention, RotaryEmbedding */
int32_t mi__si_attention(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_mha(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_rotary(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_gqa(mi__si_t *c, const mi_node_t *n);
/* act: Elu, Selu, Celu, Softsign, Mish, ThresholdedRelu, Shrink, CastLike, the normalizations */
int32_t mi__si_act(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_castlike(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_groupnorm(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_lpnorm(mi__si_t *c, const mi_node_t *n); /* and MeanVarianceNormalization */
/* nd: GatherND, ScatterElements, NonMaxSuppression */
int32_t mi__si_gather_nd(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_scatter_elements(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_nms(mi__si_t *c, const mi_node_t *n);
/* pick: OneHot, Compress, ReverseSequence (Hardmax has Softmax's shape rule) */
int32_t mi__si_onehot(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_compress(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_reverse_sequence(mi__si_t *c, const mi_node_t *n);
/* vision: LRN, GridSample, RoiAlign */
int32_t mi__si_lrn(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_gridsample(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_roialign(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_affine_grid(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_max_unpool(mi__si_t *c, const mi_node_t *n);
/* signal: DFT, STFT, the windows, MelWeightMatrix */
int32_t mi__si_dft(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_stft(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_window_fn(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_mel_weight(mi__si_t *c, const mi_node_t *n);
/* msfuse: RMSNormalization and ONNX Runtime's transformer fusions (shape_infer_msfuse.c) */
int32_t mi__si_rms(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_msfuse(mi__si_t *c, const mi_node_t *n);
/* EyeLike (shape_infer_generate.c), BitShift and the Bitwise ops (shape_infer_elementwise.c),
 * DeformConv and Col2Im (shape_infer_deform.c); LpPool and GlobalLpPool take mi__si_pool. */
int32_t mi__si_eyelike(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_bitwise(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_deform_conv(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_col2im(mi__si_t *c, const mi_node_t *n);
/* Det, CenterCropPad, MaxRoiPool, TensorScatter, Unique (shape_infer_extra.c) */
int32_t mi__si_det(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_center_crop_pad(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_max_roi_pool(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_tensor_scatter(mi__si_t *c, const mi_node_t *n);
int32_t mi__si_unique(mi__si_t *c, const mi_node_t *n);
/** The handler for op_type from the op table, or NULL. */
mi__si_fn mi__si_lookup(const char *op);

#endif /* METAINFER_SHAPE_INFER_H */
