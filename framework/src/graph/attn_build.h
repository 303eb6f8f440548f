/* attn_build.h - building blocks of the attention lowerings (attn_build.c): new tensors, nodes
 * and constants named "<node>/<what>", and the core shared by com.microsoft Attention and
 * MultiHeadAttention from the heads to the output. */
#ifndef METAINFER_GRAPH_ATTN_BUILD_H
#define METAINFER_GRAPH_ATTN_BUILD_H

#include <stdint.h>

#include "graph/attn.h"

/* What the new nodes share: the graph, the node's name (prefix of every new name), its opset;
 * ok drops to 0 at the first failure (every later call then does nothing and returns -1). */
typedef struct mi__ab {
  mi_graph_t *g;
  char name[256];
  int64_t opset;
  int32_t last; /* the node added last */
  int ok;
  /* Attention's weights and bias (their data, not the tensors: adding tensors moves those) */
  const float *w, *bias;
  int64_t wcols;
  /* ONNX Attention: Y as heads [B, N, S, hv] (not [B, S, N * hv]); qk_matmul_output (-1: none) */
  int out4;
  int32_t qk_out;
  int32_t q_scaled; /* >= 0: Q already multiplied by the scale (the node itself became that Mul) */
} mi__ab_t;

/** b set up to lower node n of g: the node's name, the graph's opset, no failure yet. */
void mi__ab_start(mi__ab_t *b, mi_graph_t *g, const mi_node_t *n);
/** A new tensor "<node>/<what>" of unknown dtype and shape. */
int32_t mi__ab_tensor(mi__ab_t *b, const char *what);
/** Node `type` on inputs `in` into `out` (a new tensor when out < 0); returns its output. */
int32_t mi__ab_op_to(mi__ab_t *b, const char *type, const char *what, int32_t nin, const int32_t *in, int32_t out);
int32_t mi__ab_op(mi__ab_t *b, const char *type, const char *what, int32_t nin, const int32_t *in);
/** An INT / INTS attribute on the node added last. */
void mi__ab_attr_int(mi__ab_t *b, const char *name, int64_t v);
void mi__ab_attr_ints(mi__ab_t *b, const char *name, int32_t n, const int64_t *v);
/** Constants: n int64 values (a scalar when rank 0, else [n]); FLOAT32 of the given shape. */
int32_t mi__ab_c_i64(mi__ab_t *b, const char *what, int32_t rank, int64_t n, const int64_t *v);
int32_t mi__ab_c_f32(mi__ab_t *b, const char *what, int32_t rank, const int64_t *dims, const float *v);
/** Transpose of a rank-4 x by perm. */
int32_t mi__ab_transpose(mi__ab_t *b, const char *what, int32_t x, const int64_t *perm);
/** Unsqueeze at `axes` (an attribute before opset 13, an input since). */
int32_t mi__ab_unsqueeze(mi__ab_t *b, const char *what, int32_t x, int32_t n, const int64_t *axes);
/** From Q [B, N, S, h], K [B, N, T, h], V [B, N, T, hv] to y [B, S, N * hv] (b->out4: [B, N, S,
 * hv]): Mul of Q by the scale, MatMul by K^T, Add of the mask's bias (mask >= 0: p->mask's form),
 * of the causal bias (p->unidir) and of attention_bias (ab >= 0), the softcap (p->softcap > 0),
 * Softmax, MatMul by V, Transpose + Reshape. With fewer K / V heads (p->kv_heads, GQA) Q's heads
 * are grouped onto them by a Reshape (no copy of K and V per group). */
int32_t mi__ab_core(mi__ab_t *b, const mi__attn_t *p, int32_t q4, int32_t k4, int32_t v4, int32_t mask, int32_t ab,
                    int32_t y);
/** Node i rewritten in place as `type` (default domain, no attributes) on `in` into `out`, so it
 * keeps its index and name. 0, or -1 out of memory. */
int32_t mi__ab_retype(mi_graph_t *g, int32_t i, const char *type, int32_t nin, const int32_t *in, int32_t out);

#endif /* METAINFER_GRAPH_ATTN_BUILD_H */
