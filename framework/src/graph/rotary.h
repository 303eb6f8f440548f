/* rotary.h - ONNX RotaryEmbedding (opset 23) and com.microsoft RotaryEmbedding: attributes and
 * inputs checked once for shape inference, the reference (ref/ref_rotary.c) and the loader's
 * lowering to standard ops (graph/rotary_lower.c). */
#ifndef METAINFER_GRAPH_ROTARY_H
#define METAINFER_GRAPH_ROTARY_H

#include <stddef.h>
#include <stdint.h>

#include "graph/attn_build.h"
#include "graph/graph.h"
#include "metainfer/mi_graph.h"

/* How the cos / sin rows are picked per (batch, position). */
enum { MI__ROT_POS_NONE,     /* ONNX without position_ids: the caches are [B, S, r / 2] */
       MI__ROT_POS_IDS,      /* position_ids [B, S] index the caches' rows */
       MI__ROT_POS_OFFSET }; /* com.microsoft position_ids [1]: rows p0 .. p0 + S - 1 */

typedef struct mi__rot {
  int32_t ms;                           /* the com.microsoft op (inputs X, position_ids, cos, sin) */
  int32_t interleaved;                  /* rotate pairs (2k, 2k + 1), else the two halves */
  int32_t x4;                           /* X as [B, N, S, H], else [B, S, N * H] */
  int32_t pos;                          /* a MI__ROT_POS_ form */
  int32_t in_x, in_cos, in_sin, in_pos; /* input slots (in_pos -1: none) */
  int64_t heads, head;                  /* N and H */
  int64_t rot;                          /* rotated dims r (even, <= H): the first r of each head */
} mi__rot_t;

/* Reads and checks the node (com.microsoft when ms): interleaved, num_heads,
 * rotary_embedding_dim (com.microsoft: is_packed_batching and a scale other than 1 refused); X
 * FLOAT32 3D or 4D, the caches FLOAT32 [max, r / 2] (ONNX without position_ids: [B, S, r / 2]),
 * position_ids INT64 [B, S] (com.microsoft also [1]). ins has 4 entries. On error writes one line
 * to why and returns -1. */
int mi__rot_check(const mi_node_t *node, int ms, const mi__in_view_t *ins, mi__rot_t *p, char *why, size_t cap);

/** The rotation of xh (heads, the last axis H) by cos / sin rows cr / sr that broadcast against
 * its first r / 2 ... values: x1 (>= 0: the Slice of the first halves / even values already made),
 * x2 sliced, x1 * cos - x2 * sin and x2 * cos + x1 * sin put back (pairs or halves), the rest of
 * H appended; the last op writes out when >= 0. Returns the rotated tensor. */
int32_t mi__rot_apply(mi__ab_t *b, const mi__rot_t *p, int32_t xh, int32_t x1, int32_t cr, int32_t sr, int32_t out);

/** RotaryEmbedding node i (either domain) into standard ops; MI_OK or an error naming it. */
int32_t mi__rot_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err);

#endif /* METAINFER_GRAPH_ROTARY_H */
