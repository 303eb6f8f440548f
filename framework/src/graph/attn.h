/* attn.h - com.microsoft Attention (ONNX Runtime's fused BERT self-attention) and
 * MultiHeadAttention (its attention on projected Q, K, V): attributes and inputs checked once for
 * shape inference, the reference (ref/ref_attn.c) and the loader's lowering to standard ops
 * (graph/attn_lower.c, graph/mha_lower.c). */
#ifndef METAINFER_GRAPH_ATTN_H
#define METAINFER_GRAPH_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "metainfer/mi_graph.h"

/* Input slots (ContribOperators.md): input, weights, bias, mask_index, past, attention_bias,
 * past_sequence_length. */
enum { MI__AT_X,
       MI__AT_W,
       MI__AT_BIAS,
       MI__AT_MASK,
       MI__AT_PAST,
       MI__AT_ABIAS,
       MI__AT_PSL,
       MI__AT_COUNT };

/* MultiHeadAttention's input slots: query, key, value, bias, key_padding_mask, attention_bias,
 * past_key, past_value, past_sequence_length, cache_indirection. */
enum { MI__MH_Q,
       MI__MH_K,
       MI__MH_V,
       MI__MH_BIAS,
       MI__MH_MASK,
       MI__MH_ABIAS,
       MI__MH_PK,
       MI__MH_PV,
       MI__MH_PSL,
       MI__MH_CI,
       MI__MH_COUNT };

/* The forms of mask_index ONNX Runtime's CPU kernel takes (int32). */
enum { MI__MASK_NONE,
       MI__MASK_LEN,       /* [B]: key j of batch b masked when j >= mask[b] */
       MI__MASK_LEN_START, /* [2B]: also masked when j < mask[B + b] */
       MI__MASK_2D,        /* [B, T]: masked where 0 */
       MI__MASK_3D,        /* [B, S, T]: masked where 0 */
       MI__MASK_FLOAT,     /* ONNX Attention: a float mask added, broadcast to [B, N, S, T] */
       MI__MASK_BOOL,      /* ONNX Attention: a bool mask, false masks (-inf) */
       MI__MASK_SEQLENS }; /* GroupQueryAttention's seqlens_k [B]: key j masked when j > seqlens_k[b] */

/* com.microsoft GroupQueryAttention's input slots (graph/gqa.c). */
enum { MI__GQ_Q,
       MI__GQ_K,
       MI__GQ_V,
       MI__GQ_PK,
       MI__GQ_PV,
       MI__GQ_SEQLENS,
       MI__GQ_TOTAL,
       MI__GQ_COS,
       MI__GQ_SIN,
       MI__GQ_POS,
       MI__GQ_ABIAS,
       MI__GQ_SINK,
       MI__GQ_COUNT };

/* ONNX Attention's input slots: Q, K, V, attn_mask, past_key, past_value. */
enum { MI__OA_Q,
       MI__OA_K,
       MI__OA_V,
       MI__OA_MASK,
       MI__OA_PK,
       MI__OA_PV,
       MI__OA_COUNT };

/* A node's attributes and the sizes they imply. */
typedef struct mi__attn {
  int64_t heads;          /* num_heads */
  int64_t hin;            /* input's hidden size (weights' rows) */
  int64_t qh, kh, vh;     /* hidden sizes of Q, K and V (qkv_hidden_sizes, else weights' columns / 3) */
  int64_t head, vhead;    /* per-head sizes of Q/K and of V */
  int32_t unidir;         /* unidirectional: key j > P + i masked for query i (P past keys) */
  int32_t mask, has_bias; /* a MI__MASK_ form; the bias input given */
  int32_t past, abias;    /* the past (past_key / past_value) and attention_bias inputs given */
  int32_t kv4;            /* MultiHeadAttention: key and value as heads [B, N, L, h] */
  /* ONNX Attention */
  int32_t q4;       /* Q (and so Y) as heads [B, N, S, h] */
  int64_t kv_heads; /* K / V heads (GQA: heads a multiple of it) */
  float softcap;    /* > 0: scores = softcap * tanh(scores / softcap) before the softmax */
  int32_t qk_mode;  /* qk_matmul_output_mode: 0 scores, 1 + softcap, 2 + masks, 3 softmax */
  int32_t packed;   /* GroupQueryAttention: Q, K, V packed in query */
  int64_t rot;      /* GroupQueryAttention do_rotary: the rotated dims of Q and K (0: none) */
  int32_t rot_interleaved;
  float scale;  /* the scale attribute, else 1 / sqrt(head) */
  float filter; /* mask_filter_value (-10000 by default) */
} mi__attn_t;

/* The value a masked score gets from unidirectional (ONNX Runtime's: the lowest float). */
#define MI__ATTN_CAUSAL_BIAS (-3.402823466e38f)

/* Reads and checks the attributes (num_heads, qkv_hidden_sizes, unidirectional, scale,
 * mask_filter_value; do_rotary and past_present_share_buffer refused) and the inputs' dtypes and
 * the shapes that are known (rank < 0: not checked yet): input [B, S, hin] FLOAT32, weights
 * [hin, qh + kh + vh], bias [qh + kh + vh], mask_index int32 in a MI__MASK_ form, past
 * [2, B, heads, P, head], attention_bias [B or 1, heads or 1, S, P + S]; past_sequence_length
 * refused. ins[] has MI__AT_COUNT entries. On error writes one line to why and returns -1. */
int mi__attn_check(const mi_node_t *node, const mi__in_view_t *ins, mi__attn_t *p, char *why, size_t cap);

/* MultiHeadAttention's: num_heads, scale, mask_filter_value, unidirectional; query [B, S, D]
 * FLOAT32, key [B, L, D] and value [B, L, Dv] (or both as heads [B, N, L, h] / [B, N, L, hv]),
 * bias [D + D + Dv] (with 3D key and value), key_padding_mask int32 [B], [B, T] or [B, S, T],
 * attention_bias [B or 1, N or 1, S, T], past_key / past_value [B, N, P, h] / [B, N, P, hv]
 * (with 3D key and value); the packed QKV and KV forms, past_sequence_length, cache_indirection
 * and the qk output refused. nout is the node's output count. Sizes into p (qh = kh = D,
 * vh = Dv). On error writes one line to why and returns -1. */
int mi__mha_check(const mi_node_t *node, const mi__in_view_t *ins, int32_t nout, mi__attn_t *p, char *why, size_t cap);

/* ONNX Attention (opset 23): q_num_heads / kv_num_heads (3D Q, K, V), is_causal, scale, softcap,
 * qk_matmul_output_mode; Q [B, S, Nq * h] or [B, Nq, S, h], K / V likewise with Nkv (Nq a multiple
 * of it), attn_mask bool or of Q's type broadcastable to [B, Nq, S, T], past_key / past_value
 * [B, Nkv, P, h]; nout the node's output count. On error writes one line to why, returns -1. */
int mi__onnx_attn_check(const mi_node_t *node, const mi__in_view_t *ins, int32_t nout, mi__attn_t *p, char *why,
                        size_t cap);

/* com.microsoft GroupQueryAttention (graph/gqa.c): num_heads, kv_num_heads, scale, softcap; query
 * [B, S, Nq * H] (or packed QKV [B, S, (Nq + 2 Nkv) * H] without key and value), key / value
 * [B, S, Nkv * H], past_key / past_value [B, Nkv, P, H] (not a shared buffer), seqlens_k int32
 * [B], total_sequence_length; causal always. do_rotary, local_window_size, smooth_softmax,
 * position_ids, attention_bias, head_sink and the qk output refused. On error writes one line to
 * why and returns -1. */
int mi__gqa_check(const mi_node_t *node, const mi__in_view_t *ins, int32_t nout, mi__attn_t *p, char *why, size_t cap);
/** GroupQueryAttention node i into standard ops (graph/gqa.c). */
int32_t mi__gqa_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err);

/** 1 when the graph has a node the loader lowers to standard ops (attn_lower.c). */
int mi__graph_has_attn(const mi_graph_t *g);
/** Rewrites each com.microsoft Attention and MultiHeadAttention (mi__mha_lower_one) into standard ops (MatMul / Add projections, Reshape +
 * Transpose to heads, Mul by the scale, MatMul Q K^T, Add of the mask's bias built from
 * mask_index by standard ops, Softmax, MatMul with V, Transpose + Reshape back; past and present
 * by Concat). The node keeps its index and name as the Q projection's MatMul; the new nodes are
 * appended and the graph sorted again. `label` starts the error. MI_OK or an error naming the
 * node. */
int32_t mi__graph_lower_attn(mi_graph_t *g, const char *label, mi_error_t *err);
/** MultiHeadAttention node i into standard ops (mha_lower.c); MI_OK or an error naming it. */
int32_t mi__mha_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err);
/** ONNX Attention node i into standard ops (onnx_attn_lower.c). */
int32_t mi__onnx_attn_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err);

#endif /* METAINFER_GRAPH_ATTN_H */
