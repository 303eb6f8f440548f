/* nbits.h - com.microsoft MatMulNBits (ONNX Runtime's weight-only 2/4/8-bit MatMul): its
 * attributes and input layouts checked once for shape inference, the reference and the session's
 * lowering, and its packed codes read back. */
#ifndef METAINFER_GRAPH_NBITS_H
#define METAINFER_GRAPH_NBITS_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "metainfer/mi_graph.h"

/* Input slots (ContribOperators.md): A, B, scales, zero_points, g_idx, bias. */
enum { MI__NB_A,
       MI__NB_B,
       MI__NB_SCALES,
       MI__NB_ZP,
       MI__NB_GIDX,
       MI__NB_BIAS };

/* One input as the checks see it: a graph tensor or a reference array. */
typedef mi__in_view_t mi__nb_in_t;

/* A node's attributes and the layout they imply. */
typedef struct mi__nbits {
  int64_t k, n, bits, block;
  int64_t kb;       /* blocks along K: ceil(K / block) */
  int64_t blob;     /* bytes of one block's codes: block * bits / 8 */
  int64_t zp_row;   /* bytes of one row's packed zero points: ceil(kb * bits / 8) */
  int32_t zp_float; /* zero points have the scales' dtype (else packed UINT8, or absent) */
} mi__nbits_t;

/* Reads and checks the attributes K, N, bits (2, 4 or 8), block_size (a power of two >= 16) and
 * the inputs' dtypes and shapes (A: [..., K] FLOAT32; B: UINT8 [N, kb, blob]; scales FLOAT32 or
 * FLOAT16, N * kb values; zero_points packed UINT8 N * zp_row, or N * kb of the scales' dtype;
 * g_idx absent or the trivial k / block; bias N values of A's dtype). ins[] has 6 entries (an
 * absent input: present 0); a shape that is not known yet (rank < 0) is not checked. On error
 * writes one line to why and returns -1. */
int mi__nbits_check(const mi_node_t *node, const mi__nb_in_t *ins, mi__nbits_t *p, char *why,
                    size_t cap);

/* Code of row n (output column), index k along K, from B's packed bytes (low bits first). */
static inline int32_t mi__nbits_code(const mi__nbits_t *p, const uint8_t *b, int64_t n, int64_t k) {
  int64_t blk = k / p->block, j = k % p->block, bit = j * p->bits;
  const uint8_t *blob = b + (n * p->kb + blk) * p->blob;
  return (blob[bit / 8] >> (bit % 8)) & ((1 << p->bits) - 1);
}

/* Scale of (row n, block blk), FLOAT32 or FLOAT16 scales. */
float mi__nbits_scale(const mi__nbits_t *p, const mi__nb_in_t *scales, int64_t n, int64_t blk);
/* Zero point of (row n, block blk): packed codes, float ones, or 2^(bits-1) when absent. */
float mi__nbits_zero(const mi__nbits_t *p, const mi__nb_in_t *zp, int64_t n, int64_t blk);

/** 1 when the graph has a MatMulNBits node (the session lowers them). */
int mi__graph_has_nbits(const mi_graph_t *g);
/** Rewrites each MatMulNBits (constant B, scales, zero points, bias) into opset 21's blocked
 * DequantizeLinear of its codes [K, N] with scales and zero points [kb, N] (axis 0, block_size;
 * codes of 2 and 4 bits as packed MI_DTYPE_INT4 q - 8 with zero points z - 8, 8-bit ones UINT8),
 * and a MatMul (float zero points: the dequantized FLOAT32 weight
 * instead), then an Add of the bias. The node keeps its index and name as the MatMul (the Add,
 * when there is a bias, ends the chain under the node's output); the new nodes are appended and
 * the graph sorted again. MI_OK or an error naming the node. */
int32_t mi__graph_lower_nbits(mi_graph_t *g, mi_error_t *err);

#endif /* METAINFER_GRAPH_NBITS_H */
