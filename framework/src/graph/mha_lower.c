/* mha_lower.c - the loader's lowering of com.microsoft MultiHeadAttention (attention on Q, K, V
 * that are already projected) to standard ops: Add of the bias' blocks, Reshape + Transpose to
 * heads (key and value given as heads are taken as they are), Concat after past_key /
 * past_value (present_key / present_value), then the core shared with Attention (attn_build.c). */
#include <stdio.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/graph_internal.h"

/* Elements c0 .. c0 + n - 1 of the bias as a constant [n]. */
static int32_t bias_part(mi__ab_t *b, const char *what, const float *bias, int64_t c0, int64_t n) {
  return mi__ab_c_f32(b, what, 1, &n, bias + c0);
}

/* x [B, L, n] (+ the bias' part from c0) as heads [B, N, L, n / N] into out (new when < 0). */
static int32_t heads_of(mi__ab_t *b, const char *what, const mi__attn_t *p, const float *bias, int32_t x, int64_t c0,
                        int64_t n, int32_t out) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  char nm[64];
  int64_t shape[4] = {0, 0, p->heads, n / p->heads};
  if (bias) {
    snprintf(nm, sizeof nm, "%s_bias", what);
    x = mi__ab_op(b, "Add", nm, 2, (int32_t[]){x, bias_part(b, nm, bias, c0, n)});
  }
  snprintf(nm, sizeof nm, "%s_heads", what);
  int32_t r = mi__ab_op(b, "Reshape", nm, 2, (int32_t[]){x, mi__ab_c_i64(b, "shape", 1, 4, shape)});
  int32_t y = mi__ab_op_to(b, "Transpose", nm, 1, &r, out);
  mi__ab_attr_ints(b, "perm", 4, perm);
  return y;
}

/* K or V heads: [B, N, L, h] from the 3D input (+ bias) or as given, after the past (when
 * past >= 0), into present (when >= 0). */
static int32_t keys(mi__ab_t *b, const char *what, const mi__attn_t *p, const float *bias, int32_t x, int64_t c0,
                    int64_t n, int32_t past, int32_t present) {
  char nm[64];
  if (p->kv4) {
    if (present < 0) return x;
    snprintf(nm, sizeof nm, "%s_present", what);
    return mi__ab_op_to(b, "Identity", nm, 1, &x, present);
  }
  int32_t h = heads_of(b, what, p, bias, x, c0, n, past >= 0 ? -1 : present);
  if (past < 0) return h;
  snprintf(nm, sizeof nm, "%s_all", what);
  int32_t y = mi__ab_op_to(b, "Concat", nm, 2, (int32_t[]){past, h}, present);
  mi__ab_attr_int(b, "axis", 2);
  return y;
}

int32_t mi__mha_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  mi__in_view_t ins[MI__MH_COUNT];
  mi__attn_t p;
  char why[256];
  mi__ab_t b;
  const mi_node_t *n = &g->nodes[i];
  mi__ab_start(&b, g, n);
  mi__in_views_of_node(g, n, ins, MI__MH_COUNT);
  if (mi__mha_check(n, ins, n->output_count, &p, why, sizeof why))
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (com.microsoft MultiHeadAttention): %s", b.name, why);
  if (p.has_bias && !ins[MI__MH_BIAS].data)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (com.microsoft MultiHeadAttention): bias must be a constant",
                     b.name);
  if ((p.unidir || p.mask == MI__MASK_LEN || p.mask == -MI__MASK_LEN) && g->opset < 11)
    return mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "node '%s' (com.microsoft MultiHeadAttention): a 1D key_padding_mask or unidirectional needs "
                     "opset >= 11 (Range)",
                     b.name);
  const float *bias = p.has_bias ? ins[MI__MH_BIAS].data : NULL;
  int32_t q = n->inputs[MI__MH_Q], k = n->inputs[MI__MH_K], v = n->inputs[MI__MH_V], y = n->outputs[0];
  int32_t mask = ins[MI__MH_MASK].present ? n->inputs[MI__MH_MASK] : -1;
  int32_t ab = p.abias ? n->inputs[MI__MH_ABIAS] : -1;
  int32_t pk = p.past ? n->inputs[MI__MH_PK] : -1, pv = p.past ? n->inputs[MI__MH_PV] : -1;
  int32_t prk = n->output_count > 1 ? n->outputs[1] : -1, prv = n->output_count > 2 ? n->outputs[2] : -1;
  /* the node becomes its first op on query: the Add of Q's bias, else the Reshape to heads */
  int64_t qshape[4] = {0, 0, p.heads, p.head};
  int32_t first = mi__ab_tensor(&b, bias ? "q_bias" : "q_heads"), first_in[2];
  first_in[0] = q;
  first_in[1] = bias ? bias_part(&b, "q_bias", bias, 0, p.qh) : mi__ab_c_i64(&b, "shape", 1, 4, qshape);
  int32_t r = bias ? mi__ab_op(&b, "Reshape", "q_heads", 2, (int32_t[]){first, mi__ab_c_i64(&b, "shape", 1, 4, qshape)})
                   : first;
  int32_t q4 = mi__ab_op(&b, "Transpose", "q_heads", 1, &r);
  mi__ab_attr_ints(&b, "perm", 4, perm);
  int32_t k4 = keys(&b, "k", &p, bias, k, p.qh, p.qh, pk, prk);
  int32_t v4 = keys(&b, "v", &p, bias, v, 2 * p.qh, p.vh, pv, prv);
  mi__ab_core(&b, &p, q4, k4, v4, mask, ab, y);
  if (!b.ok || mi__ab_retype(g, i, bias ? "Add" : "Reshape", 2, first_in, first))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  return MI_OK;
}
