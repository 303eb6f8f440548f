/* ms_fuse.h - ONNX Runtime's transformer-optimizer fused ops (com.microsoft SkipLayerNormalization
 * and friends) and the norms the lowering maps them onto: which node is which, the shape rules
 * shared by the loader's lowering, shape inference and the reference. */
#ifndef MI_GRAPH_MS_FUSE_H
#define MI_GRAPH_MS_FUSE_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph_internal.h"

/* The ops lowered to standard ones (ms_fuse_lower.c); MI__MSF_NONE for any other node. */
enum {
  MI__MSF_NONE = 0,
  MI__MSF_SKIP_LN,    /* com.microsoft SkipLayerNormalization */
  MI__MSF_SKIP_SLN,   /* com.microsoft SkipSimplifiedLayerNormalization */
  MI__MSF_SLN,        /* SimplifiedLayerNormalization (ONNX Runtime registers it in the default domain) */
  MI__MSF_FAST_GELU,  /* com.microsoft FastGelu */
  MI__MSF_BIAS_GELU,  /* com.microsoft BiasGelu */
  MI__MSF_GELU,       /* com.microsoft Gelu */
  MI__MSF_QUICK_GELU, /* com.microsoft QuickGelu */
  MI__MSF_BIAS_ADD,   /* com.microsoft BiasAdd */
  MI__MSF_SWISH,      /* ONNX Swish (opset 24) */
  MI__MSF_EMBED_LN,   /* com.microsoft EmbedLayerNormalization */
  MI__MSF_FUSED_MM    /* com.microsoft FusedMatMul */
};

/* The default epsilon of the Skip*LayerNormalization ops (ONNX Runtime's schema). */
#define MI__MSF_SKIP_EPS 1e-12f
/* EmbedLayerNormalization's inputs. */
enum { MI__EMB_IDS,
       MI__EMB_SEG,
       MI__EMB_WORD,
       MI__EMB_POS,
       MI__EMB_SEGE,
       MI__EMB_GAMMA,
       MI__EMB_BETA,
       MI__EMB_MASK,
       MI__EMB_POS_IDS };
/* QuickGelu's default alpha. */
#define MI__MSF_QUICK_ALPHA 1.702f

int mi__msf_kind(const mi_node_t *n);
/* 1 when g holds a node the lowering rewrites. */
int mi__graph_has_msfuse(const mi_graph_t *g);
/* Rewrites every such node of g into standard ops (node i becomes the last op of its chain, the
 * others are appended), then sorts; a one-line error naming the node for a form not covered. */
int32_t mi__graph_lower_msfuse(mi_graph_t *g, mi_error_t *err);

/* The Skip*LayerNormalization shapes ONNX Runtime accepts, on ranks/dims where -1 (rank or dim)
 * is unknown: input [B, S, H] or [S, H], skip of the input's shape, [1, S, H] or [S, H] (the last
 * two dims the input's), gamma, beta and bias [H] (gbb_rank/gbb_dim0 of each, rank -2 when the
 * input is absent). 0, or -1 with why filled. */
int mi__msf_skip_shapes(int32_t xr, const int64_t *xd, int32_t sr, const int64_t *sd, const int32_t *gbb_rank,
                        const int64_t *gbb_dim0, char *why, size_t cap);

/* FusedMatMul's attributes: 0, or -1 with why filled (transBatchA/B are not supported). */
int mi__msf_fused_mm_attrs(const mi_node_t *n, float *alpha, int *ta, int *tb, char *why, size_t cap);

#endif
