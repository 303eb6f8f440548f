/* onnx_attn_lower.c - the loader's lowering of ONNX Attention (opset 23) to standard ops: Q, K, V
 * to heads (Reshape + Transpose from [B, S, N * h]; 4D ones as they are), K and V after
 * past_key / past_value (Concat, into present_key / present_value), then the core shared with
 * com.microsoft Attention (attn_build.c), with GQA's grouping of Q heads, the bool or float
 * attn_mask, is_causal, softcap and qk_matmul_output. */
#include <stdio.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/graph_internal.h"

/* [B, L, n * h] into heads [B, n, L, h] (into out when >= 0). */
static int32_t heads_of(mi__ab_t *b, const char *what, int32_t x, int64_t n, int64_t h, int32_t out) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  int64_t shape[4] = {0, 0, n, h};
  char nm[64];
  snprintf(nm, sizeof nm, "%s_heads", what);
  int32_t r = mi__ab_op(b, "Reshape", nm, 2, (int32_t[]){x, mi__ab_c_i64(b, "shape", 1, 4, shape)});
  int32_t y = mi__ab_op_to(b, "Transpose", nm, 1, &r, out);
  mi__ab_attr_ints(b, "perm", 4, perm);
  return y;
}

/* K or V as heads after the past (when past >= 0), into present (when >= 0). */
static int32_t keys(mi__ab_t *b, const char *what, const mi__attn_t *p, int32_t x, int64_t h, int32_t past,
                    int32_t present) {
  char nm[64];
  int32_t k4 = p->q4 ? x : heads_of(b, what, x, p->kv_heads, h, past < 0 ? present : -1);
  snprintf(nm, sizeof nm, "%s_all", what);
  if (past >= 0) {
    k4 = mi__ab_op_to(b, "Concat", nm, 2, (int32_t[]){past, k4}, present);
    mi__ab_attr_int(b, "axis", 2);
  } else if (p->q4 && present >= 0)
    k4 = mi__ab_op_to(b, "Identity", nm, 1, &k4, present);
  return k4;
}

int32_t mi__onnx_attn_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  mi__in_view_t ins[MI__OA_COUNT];
  mi__attn_t p;
  char why[256];
  mi__ab_t b;
  const mi_node_t *n = &g->nodes[i];
  mi__ab_start(&b, g, n);
  if (g->opset < 23)
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (Attention): the op exists from opset 23 on (model opset %lld)",
                     b.name, (long long)g->opset);
  mi__in_views_of_node(g, n, ins, MI__OA_COUNT);
  if (mi__onnx_attn_check(n, ins, n->output_count, &p, why, sizeof why))
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (Attention): %s", b.name, why);
  int32_t q = n->inputs[MI__OA_Q], k = n->inputs[MI__OA_K], v = n->inputs[MI__OA_V], y = n->outputs[0];
  int32_t mask = ins[MI__OA_MASK].present ? n->inputs[MI__OA_MASK] : -1;
  int32_t pk = p.past ? n->inputs[MI__OA_PK] : -1, pv = p.past ? n->inputs[MI__OA_PV] : -1;
  int32_t prk = n->output_count > 1 ? n->outputs[1] : -1, prv = n->output_count > 2 ? n->outputs[2] : -1;
  b.qk_out = n->output_count > 3 ? n->outputs[3] : -1;
  b.out4 = p.q4;
  /* the node becomes its first op on Q: the Reshape to heads, or (Q as heads) the Mul by the scale */
  int64_t qshape[4] = {0, 0, p.heads, p.head};
  float scale = p.scale;
  int32_t first = mi__ab_tensor(&b, p.q4 ? "q_scaled" : "q_heads"), first_in[2] = {q, -1}, q4 = first;
  first_in[1] = p.q4 ? mi__ab_c_f32(&b, "scale", 0, NULL, &scale) : mi__ab_c_i64(&b, "shape", 1, 4, qshape);
  if (p.q4) b.q_scaled = first;
  else {
    static const int64_t perm[4] = {0, 2, 1, 3};
    q4 = mi__ab_op(&b, "Transpose", "q_heads", 1, &first);
    mi__ab_attr_ints(&b, "perm", 4, perm);
  }
  int32_t k4 = keys(&b, "k", &p, k, p.head, pk, prk), v4 = keys(&b, "v", &p, v, p.vhead, pv, prv);
  mi__ab_core(&b, &p, q4, k4, v4, mask, -1, y);
  if (!b.ok || mi__ab_retype(g, i, p.q4 ? "Mul" : "Reshape", 2, first_in, first))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  return MI_OK;
}
