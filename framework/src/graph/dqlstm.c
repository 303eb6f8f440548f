/* dqlstm.c - com.microsoft DynamicQuantizeLSTM: the checks of its 8-bit weights, their scales and
 * zero points, shared by shape inference and the reference (ref/ref_dqlstm.c, which runs it in
 * ONNX Runtime's arithmetic, activations quantized at run time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dqlstm.h"
#include "graph/graph_internal.h"

/* One weight (slot k, rows = I or H) and its scale / zero point (slots ks, ks + 1). */
static int check_one(const mi__dql_in_t *ins, int32_t k, int32_t ks, int64_t dirs, int64_t rows, int64_t h4,
                     const char *what, char *why, size_t cap) {
  const mi__dql_in_t *w = &ins[k], *s = &ins[ks], *z = &ins[ks + 1];
  if (!w->present || !s->present || !z->present)
    return mi__why(why, cap, "%s, its scale and zero point are required", what);
  if (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_UINT8)
    return mi__why(why, cap, "%s must be INT8 or UINT8 (dtype %d)", what, (int)w->dtype);
  if (w->rank >= 0 && (w->rank != 3 || w->dims[0] != dirs || w->dims[2] != h4 || (rows >= 0 && w->dims[1] != rows)))
    return mi__why(why, cap, "%s must be [%lld, %s, %lld] ([num_directions, %s, 4 * hidden_size])", what,
                   (long long)dirs, k == 1 ? "input_size" : "hidden_size", (long long)h4,
                   k == 1 ? "input_size" : "hidden_size");
  if (s->dtype != MI_DTYPE_FLOAT32 || z->dtype != w->dtype)
    return mi__why(why, cap, "%s's scale must be FLOAT32 and its zero point %s's dtype", what, what);
  if (s->rank >= 0 && mi__in_view_numel(s) != dirs && mi__in_view_numel(s) != dirs * h4)
    return mi__why(why, cap, "%s's scale has %lld values (num_directions or num_directions * 4 * hidden_size)", what,
                   (long long)mi__in_view_numel(s));
  if (s->rank >= 0 && z->rank >= 0 && mi__in_view_numel(z) != mi__in_view_numel(s))
    return mi__why(why, cap, "%s's zero point has %lld values, its scale %lld", what, (long long)mi__in_view_numel(z),
                   (long long)mi__in_view_numel(s));
  return 0;
}

int mi__dqlstm_check(const mi_node_t *node, const mi__dql_in_t *ins, char *why, size_t cap) {
  int64_t h = mi_node_attr_int(node, "hidden_size", 0);
  int64_t dirs = strcmp(mi_node_attr_string(node, "direction", "forward"), "bidirectional") == 0 ? 2 : 1;
  const mi__dql_in_t *x = &ins[0];
  int64_t in = x->rank == 3 ? x->dims[2] : -1;
  if (h <= 0) return mi__why(why, cap, "hidden_size must be positive");
  if (check_one(ins, 1, 8, dirs, in, 4 * h, "W", why, cap) || check_one(ins, 2, 10, dirs, h, 4 * h, "R", why, cap))
    return -1;
  return 0;
}
