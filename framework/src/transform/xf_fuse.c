/* xf_fuse.c - groups Conv/Gemm [+BN] [+act] [+Add [+act]] chains a plugin can run as one kernel. */
#include <string.h>

#include "transform/xf_internal.h"

/* Union of the fuse masks the variants declare for `op`. */
static uint32_t fuse_mask_for(const mi_variant_desc_t *v, uint32_t count, const char *op) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < count; i++)
    if (strncmp(v[i].op_type, op, sizeof v[i].op_type) == 0) m |= v[i].fuse_mask;
  return m;
}

static uint32_t act_bit(const mi_graph_t *g, const mi_node_t *n) {
  if (strcmp(n->op_type, "Relu") == 0) return MI_FUSE_RELU;
  if (strcmp(n->op_type, "Clip") == 0 && mi__xf_is_zero_act(g, n)) return MI_FUSE_RELU;
  return mi__xf_is_act(n) ? MI_FUSE_ACT : 0;
}

/* The next node of a chain: the only consumer of `t`, not yet grouped, and one output. */
static int32_t next_in_chain(const mi_graph_t *g, int32_t t) {
  int32_t c = mi__xf_sole_consumer(g, t);
  if (c < 0 || g->nodes[c].group >= 0 || g->nodes[c].output_count != 1) return -1;
  return c;
}

MI_API int32_t mi_xf_fuse(mi_graph_t *g, const mi_variant_desc_t *variants, uint32_t count,
                          mi_xf_stats_t *st, mi_error_t *err) {
  int32_t next_group = 0;
  if (!g || (!variants && count))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "fuse: bad arguments");
  for (int32_t n = 0; n < g->node_count; n++) g->nodes[n].group = -1;
  for (int32_t n = 0; n < g->node_count; n++) {
    mi_node_t *x = &g->nodes[n];
    if (strcmp(x->op_type, "Conv") != 0 && strcmp(x->op_type, "Gemm") != 0) continue;
    if (x->output_count != 1) continue;
    uint32_t mask = fuse_mask_for(variants, count, x->op_type);
    int32_t members[5], nm = 0, t = x->outputs[0], c;
    int stage = 0; /* 0: after the op, 1: after BN, 2: after act, 3: after Add, 4: done */
    members[nm++] = n;
    while (stage < 4 && (c = next_in_chain(g, t)) >= 0) {
      const mi_node_t *y = &g->nodes[c];
      uint32_t ab = act_bit(g, y);
      if (stage == 0 && strcmp(y->op_type, "BatchNormalization") == 0 && (mask & MI_FUSE_BN)) {
        stage = 1;
      } else if (stage <= 1 && ab && y->inputs[0] == t && (mask & ab)) {
        stage = 2;
      } else if (stage <= 2 && strcmp(y->op_type, "Add") == 0 && (mask & MI_FUSE_ADD) &&
                 y->input_count == 2 && y->inputs[0] != y->inputs[1]) {
        stage = 3;
      } else if (stage == 3 && ab && (mask & ab)) {
        stage = 4;
      } else {
        break;
      }
      members[nm++] = c;
      t = y->outputs[0];
    }
    if (nm < 2) continue;
    for (int32_t i = 0; i < nm; i++) g->nodes[members[i]].group = next_group;
    next_group++;
    if (st) {
      st->groups++;
      st->grouped_nodes += nm;
    }
  }
  return MI_OK;
}
