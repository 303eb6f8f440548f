/* ref_ops.h - the interface between the reference walker (ref.c) and its op families. */
#ifndef MI_REF_REF_OPS_H
#define MI_REF_REF_OPS_H

#include <stdint.h>

#include "core/core.h"
#include "metainfer/mi_core.h"

/** Everything one op implementation sees: the node, its input arrays and where its outputs
 * go. Ops compute output shapes from the actual inputs, never from inferred tensor shapes,
 * so that graphs with dynamic dimensions run as they are. */
typedef struct mi__ref_call {
  const mi_graph_t *g;
  const mi_node_t *node;
  int64_t opset;
  int32_t nin;
  const mi_array_t *const *in; /* NULL for an omitted optional input */
  int32_t nout;
  mi_array_t **out; /* the op creates outputs[i]; the caller cleans up on failure */
  mi_error_t *err;
} mi__ref_call_t;

typedef int32_t (*mi__ref_op_fn)(mi__ref_call_t *c);

/** Fills err with "node 'NAME' (OPTYPE, opset N): <message>" and returns code. */
int32_t mi__ref_fail(const mi__ref_call_t *c, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Input i, or NULL when it is omitted or beyond the node's inputs. */
const mi_array_t *mi__ref_in(const mi__ref_call_t *c, int32_t i);
struct mi__in_view;
/** Inputs 0..count-1 as the checks shared with the graph read them (graph/graph.h): MatMulNBits
 * and the attention ops. */
void mi__ref_in_views(const mi__ref_call_t *c, struct mi__in_view *v, int32_t count);
/** Input i, required to be present and of one of the dtypes in `dtype_mask`
 * (MI_DTYPE_BIT bits; 0 accepts any). On failure *a is NULL and err says why. */
int32_t mi__ref_need(const mi__ref_call_t *c, int32_t i, uint32_t dtype_mask,
                     const mi_array_t **a);
/* Input i of the recurrent ops' weights and states: FLOAT32 of exactly rank / d, its data in
 * *out; absent (*out NULL) is fine when `opt`. Else a one-line error naming the input. */
int32_t mi__ref_need_f32(mi__ref_call_t *c, int32_t i, int opt, int32_t rank, const int64_t *d,
                         const float **out);
/** Creates output i (zeroed) with the given shape; MI_OK or MI_ERR_OUT_OF_MEMORY. */
int32_t mi__ref_make_out(mi__ref_call_t *c, int32_t i, int32_t dtype, int32_t rank,
                         const int64_t *dims, mi_array_t **out);
/** True when output i is wanted (exists and is not an omitted "" output). */
int mi__ref_out_wanted(const mi__ref_call_t *c, int32_t i);

/** Normalises a possibly negative axis against rank (ONNX range [-rank, rank-1]). */
int32_t mi__ref_axis(const mi__ref_call_t *c, int64_t axis, int32_t rank, int32_t *out);
/** Reads an int64/int32 array (scalar or 1-D) into `vals`; at most `cap` values. */
int32_t mi__ref_read_ints(const mi__ref_call_t *c, const mi_array_t *a, const char *what,
                          int64_t *vals, int32_t cap, int32_t *count);
/** Reads a scalar (or one-element) float32 array. */
int32_t mi__ref_read_float(const mi__ref_call_t *c, const mi_array_t *a, const char *what,
                           float *v);
/** Reads an INTS attribute into `vals` (at most cap); *count = -1 when absent. */
int32_t mi__ref_attr_ints(const mi__ref_call_t *c, const char *name, int64_t *vals, int32_t cap,
                          int32_t *count);

/** Numpy broadcasting of n arrays: the output shape, and for each array the element stride
 * of every output dimension (0 where the array is broadcast). */
typedef struct mi__ref_bcast {
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
  int64_t strides[3][MI_MAX_RANK];
  int64_t numel;
} mi__ref_bcast_t;
int32_t mi__ref_broadcast(const mi__ref_call_t *c, int32_t n, const mi_array_t *const *arrs,
                          mi__ref_bcast_t *b);
/** Offset of output element i in each of the n operands of b. */
void mi__ref_bcast_offsets(const mi__ref_bcast_t *b, int32_t n, int64_t i, int64_t *off);

/** MatMul's numpy rules for A and B (rank >= 1), shared by MatMul, MatMulInteger and
 * QLinearMatMul: a 1-D A is a row [1,K], a 1-D B a column [K,1] (the added dim is dropped from
 * the result again); `bc` broadcasts the batch dims (all but the last two), whose batch i is
 * matrix bc offsets[0] of A and [1] of B; the result is [batch..., M, N]. */
typedef struct mi__ref_mm {
  int64_t M, K, N;
  mi__ref_bcast_t bc;
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
} mi__ref_mm_t;
int32_t mi__ref_matmul_shape(const mi__ref_call_t *c, const mi_array_t *a, const mi_array_t *b,
                             mi__ref_mm_t *mm);

/** Float16 bits <-> float32. */
float mi__ref_half_to_float(uint16_t h);
uint16_t mi__ref_float_to_half(float f);

/** Runs fn with input 0, INT8 or UINT8 codes, as FLOAT32 values and turns output 0 back into
 * codes of that dtype: for ops that only move or pick values (MaxPool, nearest Resize), which
 * ONNX Runtime's QOperator models run on codes. */
int32_t mi__ref_on_codes(mi__ref_call_t *c, mi__ref_op_fn fn);

/** A new array with the same dtype, shape and contents; NULL when out of memory. */
mi_array_t *mi__ref_clone(const mi_array_t *a);

/** Row-major element strides of a shape. */
void mi__ref_strides(int32_t rank, const int64_t *dims, int64_t *strides);
/** Steps the row-major multi-index idx over a shape by one element and moves *off, an offset
 * whose stride along dim d is step[d], with it (wrapping dims go back to 0). */
void mi__ref_index_next(int32_t rank, const int64_t *dims, const int64_t *step, int64_t *idx,
                        int64_t *off);

/** The sliding-window geometry of Conv and the pools, for 1-D and 2-D inputs. A 1-D input
 * is treated as 2-D with a height of 1, so every array here has two entries (H, W). */
typedef struct mi__ref_window {
  int64_t in[2], k[2], stride[2], dil[2], pad_begin[2], pad_end[2], out[2];
} mi__ref_window_t;
/** Reads strides, dilations, pads and auto_pad of the node and computes the output size of
 * input x for a kernel of `kernel` (x->rank - 2 entries). ceil_mode as in the pools. */
int32_t mi__ref_window(const mi__ref_call_t *c, const mi_array_t *x, const int64_t *kernel,
                       int ceil_mode, mi__ref_window_t *w);

/* QDQ layers evaluated as integer layers (ref_qdq.c). mi__ref_qdq_plan sets role[n] for each of
 * g's nodes: MI__REF_QDQ_PLAIN (run it as itself), MI__REF_QDQ_SKIP (the float op or activation of
 * a QDQ layer: not run), or, at a layer's QuantizeLinear, the index of its float op; it returns
 * the number of layers. mi__ref_qdq_codes is the tensor of the layer's input codes, which the
 * walker keeps until the QuantizeLinear; mi__ref_qdq_run computes the layer's output codes from
 * them. */
#define MI__REF_QDQ_PLAIN (-1)
#define MI__REF_QDQ_SKIP (-2)
int32_t mi__ref_qdq_plan(const mi_graph_t *g, int32_t *role);
int32_t mi__ref_qdq_codes(const mi_graph_t *g, int32_t op);
int32_t mi__ref_qdq_run(const mi_graph_t *g, int32_t op, const mi_array_t *x, mi_array_t **out,
                        mi_error_t *err);

/* The kernels ref.c's op table dispatches to, one line per source file; a kernel serving several
 * op types dispatches on node->op_type. All share one signature, mi__ref_kernel_fn. */
typedef int32_t mi__ref_kernel_fn(mi__ref_call_t *c);
mi__ref_kernel_fn mi__ref_unary, mi__ref_binary, mi__ref_variadic, mi__ref_where,
    mi__ref_clip;                                                        /* ref_elementwise.c */
mi__ref_kernel_fn mi__ref_conv, mi__ref_conv_transpose;                  /* ref_conv.c */
mi__ref_kernel_fn mi__ref_pool, mi__ref_global_pool, mi__ref_max_unpool; /* ref_pool.c */
/* The global pools' input (FLOAT32, rank >= 3), output ([N, C, 1, ...], FLOAT32) and plane size. */
int32_t mi__ref_global_out(mi__ref_call_t *c, const mi_array_t **x, mi_array_t **y, int64_t *spatial);
mi__ref_kernel_fn mi__ref_matmul, mi__ref_gemm; /* ref_matmul.c */
mi__ref_kernel_fn mi__ref_batchnorm, mi__ref_layernorm, mi__ref_softmax,
    mi__ref_instancenorm;         /* ref_norm.c */
mi__ref_kernel_fn mi__ref_reduce; /* ref_reduce.c */
mi__ref_kernel_fn mi__ref_resize; /* ref_resize.c */
mi__ref_kernel_fn mi__ref_reshape, mi__ref_flatten, mi__ref_squeeze, mi__ref_shape, mi__ref_cast,
    mi__ref_constant, mi__ref_identity;                                             /* ref_shape.c */
mi__ref_kernel_fn mi__ref_transpose, mi__ref_concat, mi__ref_slice, mi__ref_gather; /* ref_layout.c */
mi__ref_kernel_fn mi__ref_expand, mi__ref_constant_of_shape, mi__ref_range, mi__ref_tile,
    mi__ref_eyelike;                                                /* ref_generate.c */
mi__ref_kernel_fn mi__ref_quant;                                    /* ref_quant.c */
mi__ref_kernel_fn mi__ref_qlinear;                                  /* ref_qlinear.c */
mi__ref_kernel_fn mi__ref_qlut;                                     /* ref_qlut.c */
mi__ref_kernel_fn mi__ref_qgemm;                                    /* ref_qgemm.c */
mi__ref_kernel_fn mi__ref_dqlstm;                                   /* ref_dqlstm.c */
mi__ref_kernel_fn mi__ref_attention, mi__ref_mha;                   /* ref_attn.c */
mi__ref_kernel_fn mi__ref_rotary;                                   /* ref_rotary.c */
mi__ref_kernel_fn mi__ref_gqa;                                      /* ref_gqa.c */
mi__ref_kernel_fn mi__ref_matmul_nbits;                             /* ref_nbits.c */
mi__ref_kernel_fn mi__ref_if, mi__ref_loop, mi__ref_scan;           /* ref_control.c */
mi__ref_kernel_fn mi__ref_pad, mi__ref_size;                        /* ref_pad.c */
mi__ref_kernel_fn mi__ref_lstm;                                     /* ref_rnn.c */
mi__ref_kernel_fn mi__ref_gru, mi__ref_rnn;                         /* ref_gru.c */
mi__ref_kernel_fn mi__ref_einsum;                                   /* ref_einsum.c */
mi__ref_kernel_fn mi__ref_argminmax, mi__ref_topk, mi__ref_nonzero; /* ref_select.c */
mi__ref_kernel_fn mi__ref_split, mi__ref_trilu, mi__ref_depth_space,
    mi__ref_cumsum;                                                /* ref_rearrange.c */
mi__ref_kernel_fn mi__ref_prelu, mi__ref_mod, mi__ref_isnan_isinf; /* ref_pointwise.c */
mi__ref_kernel_fn mi__ref_gather_elements, mi__ref_scatter_nd;     /* ref_index.c */
mi__ref_kernel_fn mi__ref_gather_nd, mi__ref_scatter_elements;     /* ref_index.c */
mi__ref_kernel_fn mi__ref_act, mi__ref_castlike;                   /* ref_act.c */
mi__ref_kernel_fn mi__ref_groupnorm, mi__ref_lpnorm, mi__ref_mvn;  /* ref_norm2.c */
mi__ref_kernel_fn mi__ref_nms;                                     /* ref_nms.c */
mi__ref_kernel_fn mi__ref_onehot, mi__ref_hardmax, mi__ref_compress,
    mi__ref_reverse_sequence; /* ref_pick.c */
mi__ref_kernel_fn mi__ref_lrn, mi__ref_image_scaler, mi__ref_gridsample, mi__ref_affine_grid,
    mi__ref_roialign;                                                               /* ref_vision.c */
mi__ref_kernel_fn mi__ref_dft, mi__ref_stft, mi__ref_window_fn, mi__ref_mel_weight; /* ref_signal.c */
mi__ref_kernel_fn mi__ref_rms;                                                      /* ref_rms.c */
mi__ref_kernel_fn mi__ref_msfuse;                                                   /* ref_msfuse.c */
mi__ref_kernel_fn mi__ref_bitwise;                                                  /* ref_bitwise.c */
mi__ref_kernel_fn mi__ref_lppool, mi__ref_global_lppool;                            /* ref_lppool.c */
mi__ref_kernel_fn mi__ref_col2im;                                                   /* ref_col2im.c */
mi__ref_kernel_fn mi__ref_deform_conv;                                              /* ref_deform.c */
mi__ref_kernel_fn mi__ref_det, mi__ref_center_crop_pad, mi__ref_max_roi_pool,
    mi__ref_tensor_scatter;       /* ref_extra.c */
mi__ref_kernel_fn mi__ref_unique; /* ref_unique.c */
/** MI_OK when the node's opset has its op (graph/op_since.c), else a refusal (ref_act.c). */
int32_t mi__ref_since(mi__ref_call_t *c);

/* One LSTM cell step of one row (ref_rnn.c): the gate pre-activations g (i, o, f, c, each H wide,
 * biases in), peepholes p (i, o, f; NULL: none), the cell state c and hidden state h updated in
 * place. The float LSTM and DynamicQuantizeLSTM share it. */
void mi__ref_lstm_cell(const float *g, const float *p, float *c, float *h, int64_t H);

#endif /* MI_REF_REF_OPS_H */
