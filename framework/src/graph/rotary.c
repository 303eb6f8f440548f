/* rotary.c - ONNX and com.microsoft RotaryEmbedding: the checks shared by shape inference, the
 * reference and the lowering (rotary_lower.c). */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/rotary.h"

static int64_t dim(const mi__in_view_t *x, int32_t d) { return x->rank > d && x->dims[d] >= 0 ? x->dims[d] : -1; }

static int is_f32(const mi__in_view_t *x) { return x->dtype == MI_DTYPE_UNDEFINED || x->dtype == MI_DTYPE_FLOAT32; }

int mi__rot_check(const mi_node_t *node, int ms, const mi__in_view_t *ins, mi__rot_t *p, char *why, size_t cap) {
  memset(p, 0, sizeof *p);
  p->ms = ms;
  p->in_x = 0, p->in_cos = ms ? 2 : 1, p->in_sin = ms ? 3 : 2, p->in_pos = ms ? 1 : 3;
  const mi__in_view_t *x = &ins[p->in_x], *c = &ins[p->in_cos], *s = &ins[p->in_sin], *pos = &ins[p->in_pos];
  p->interleaved = mi_node_attr_int(node, "interleaved", 0) != 0;
  p->heads = mi_node_attr_int(node, "num_heads", 0);
  int64_t rdim = mi_node_attr_int(node, "rotary_embedding_dim", 0);
  if (ms && mi_node_attr_int(node, "is_packed_batching", 0))
    return mi__why(why, cap, "is_packed_batching = 1 is not supported");
  if (ms && mi_node_attr_float(node, "scale", 1.f) != 1.f)
    return mi__why(why, cap, "scale = %g is not supported (1 only)", (double)mi_node_attr_float(node, "scale", 1.f));
  if (!x->present || !c->present || !s->present) return mi__why(why, cap, "input, cos_cache and sin_cache are required");
  if (!is_f32(x) || !is_f32(c) || !is_f32(s)) return mi__why(why, cap, "input and the caches must be FLOAT32");
  if (x->rank != 3 && x->rank != 4) return mi__why(why, cap, "input must be a known 3D or 4D tensor (rank %d)", (int)x->rank);
  p->x4 = x->rank == 4;
  if (!pos->present) {
    if (ms) return mi__why(why, cap, "position_ids is required");
    p->pos = MI__ROT_POS_NONE;
  } else {
    if (pos->dtype != MI_DTYPE_INT64) return mi__why(why, cap, "position_ids must be INT64");
    if (ms && pos->rank == 1) p->pos = MI__ROT_POS_OFFSET;
    else if (pos->rank == 2)
      p->pos = MI__ROT_POS_IDS;
    else
      return mi__why(why, cap, "position_ids must be [batch, sequence]%s (rank %d)", ms ? " or [1]" : "", (int)pos->rank);
  }
  int32_t want = p->pos == MI__ROT_POS_NONE ? 3 : 2;
  if (c->rank != want || s->rank != want || dim(c, want - 1) < 1 || dim(s, want - 1) != dim(c, want - 1))
    return mi__why(why, cap, "cos_cache and sin_cache must be known %s of one shape",
                   want == 3 ? "[batch, sequence, rotary dim / 2]" : "[max position, rotary dim / 2]");
  p->rot = 2 * dim(c, want - 1);
  if (rdim && rdim != p->rot)
    return mi__why(why, cap, "rotary_embedding_dim = %lld, the caches hold %lld", (long long)rdim, (long long)p->rot);
  if (p->x4) {
    p->heads = dim(x, 1), p->head = dim(x, 3);
  } else {
    int64_t hidden = dim(x, 2);
    if (p->heads < 1) {
      /* com.microsoft: without num_heads the head is the rotated size */
      if (!ms || rdim) return mi__why(why, cap, "a 3D input needs num_heads");
      p->heads = hidden > 0 && hidden % p->rot == 0 ? hidden / p->rot : -1;
    }
    if (p->heads < 1 || hidden < 1 || hidden % p->heads)
      return mi__why(why, cap, "hidden size %lld is not a known multiple of num_heads %lld", (long long)hidden,
                     (long long)p->heads);
    p->head = hidden / p->heads;
  }
  if (p->head < 1 || p->rot > p->head)
    return mi__why(why, cap, "rotary dim %lld is more than the head size %lld", (long long)p->rot, (long long)p->head);
  return 0;
}
