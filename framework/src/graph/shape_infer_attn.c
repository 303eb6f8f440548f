/* shape_infer_attn.c - shape inference for the attention ops: com.microsoft Attention and
 * MultiHeadAttention, ONNX Attention, RotaryEmbedding of both domains, GroupQueryAttention. */
#include <string.h>

#include "graph/attn.h"
#include "graph/rotary.h"
#include "graph/shape_infer.h"

/* ONNX Attention: Y [B, S, Nq * hv] or [B, Nq, S, hv]; present_key / present_value
 * [B, Nkv, P + L, h / hv]; qk_matmul_output [B, Nq, S, P + L]. */
static int32_t onnx_attention(mi__si_t *c, const mi_node_t *n) {
  mi__in_view_t ins[MI__OA_COUNT];
  mi__attn_t p;
  char why[256];
  if (c->g->opset < 23) return mi__si_fail(c, n, MI_ERR_PARSE, "the op exists from opset 23 on");
  mi__in_views_of_node(c->g, n, ins, MI__OA_COUNT);
  if (mi__onnx_attn_check(n, ins, n->output_count, &p, why, sizeof why)) return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  const mi_tensor_t *q = mi__si_in(c, n, MI__OA_Q), *k = mi__si_in(c, n, MI__OA_K), *pk = mi__si_in(c, n, MI__OA_PK);
  int64_t b = q->dims[0], s = q->dims[p.q4 ? 2 : 1], l = k->dims[p.q4 ? 2 : 1], pl = pk ? pk->dims[2] : 0;
  int64_t t = l >= 0 && pl >= 0 ? l + pl : -1;
  int64_t y3[3] = {b, s, p.vh}, y4[4] = {b, p.heads, s, p.vhead}, kd[4] = {b, p.kv_heads, t, p.head},
          vd[4] = {b, p.kv_heads, t, p.vhead}, qk[4] = {b, p.heads, s, t};
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, p.q4 ? 4 : 3, p.q4 ? y4 : y3);
  if (n->output_count > 1) mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, 4, kd);
  if (n->output_count > 2) mi__si_set(c, n, 2, MI_DTYPE_FLOAT32, 4, vd);
  if (n->output_count > 3) mi__si_set(c, n, 3, MI_DTYPE_FLOAT32, 4, qk);
  return MI_OK;
}

/* com.microsoft Attention: output [B, S, v hidden]; present [2, B, num_heads, P + S, head size]. */
int32_t mi__si_attention(mi__si_t *c, const mi_node_t *n) {
  if (!n->domain || strcmp(n->domain, "com.microsoft")) return onnx_attention(c, n);
  mi__in_view_t ins[MI__AT_COUNT];
  mi__attn_t p;
  char why[256];
  mi__in_views_of_node(c->g, n, ins, MI__AT_COUNT);
  if (mi__attn_check(n, ins, &p, why, sizeof why)) return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  const mi_tensor_t *x = mi__si_in(c, n, MI__AT_X), *past = mi__si_in(c, n, MI__AT_PAST);
  int64_t b = x->rank == 3 ? x->dims[0] : -1, s = x->rank == 3 ? x->dims[1] : -1;
  int64_t pl = past ? (past->rank == 5 ? past->dims[3] : -1) : 0;
  int64_t yd[3] = {b, s, p.vh}, pd[5] = {2, b, p.heads, s >= 0 && pl >= 0 ? s + pl : -1, p.head};
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 3, yd);
  if (n->output_count > 1) mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, 5, pd);
  return MI_OK;
}

/* com.microsoft MultiHeadAttention: output [B, S, Dv]; present_key / present_value
 * [B, N, P + L, h] / [B, N, P + L, hv]. */
int32_t mi__si_mha(mi__si_t *c, const mi_node_t *n) {
  mi__in_view_t ins[MI__MH_COUNT];
  mi__attn_t p;
  char why[256];
  mi__in_views_of_node(c->g, n, ins, MI__MH_COUNT);
  if (mi__mha_check(n, ins, n->output_count, &p, why, sizeof why)) return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  const mi_tensor_t *q = mi__si_in(c, n, MI__MH_Q), *k = mi__si_in(c, n, MI__MH_K), *pk = mi__si_in(c, n, MI__MH_PK);
  int64_t l = k->dims[p.kv4 ? 2 : 1], pl = pk ? pk->dims[2] : 0;
  int64_t t = l >= 0 && pl >= 0 ? l + pl : -1;
  int64_t yd[3] = {q->dims[0], q->dims[1], p.vh}, kd[4] = {q->dims[0], p.heads, t, p.head},
          vd[4] = {q->dims[0], p.heads, t, p.vhead};
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 3, yd);
  if (n->output_count > 1) mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, 4, kd);
  if (n->output_count > 2) mi__si_set(c, n, 2, MI_DTYPE_FLOAT32, 4, vd);
  return MI_OK;
}

/* RotaryEmbedding (ONNX or com.microsoft): the input's shape. */
int32_t mi__si_rotary(mi__si_t *c, const mi_node_t *n) {
  mi__in_view_t ins[4];
  mi__rot_t p;
  char why[256];
  int ms = n->domain && !strcmp(n->domain, "com.microsoft");
  if (!ms && c->g->opset < 23) return mi__si_fail(c, n, MI_ERR_PARSE, "the op exists from opset 23 on");
  mi__in_views_of_node(c->g, n, ins, 4);
  if (mi__rot_check(n, ms, ins, &p, why, sizeof why)) return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, x->rank, x->dims);
  return MI_OK;
}

/* com.microsoft GroupQueryAttention: output [B, S, Nq * H]; present_key / present_value
 * [B, Nkv, P + S, H]. */
int32_t mi__si_gqa(mi__si_t *c, const mi_node_t *n) {
  mi__in_view_t ins[MI__GQ_COUNT];
  mi__attn_t p;
  char why[256];
  mi__in_views_of_node(c->g, n, ins, MI__GQ_COUNT);
  if (mi__gqa_check(n, ins, n->output_count, &p, why, sizeof why)) return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  const mi_tensor_t *q = mi__si_in(c, n, MI__GQ_Q), *pk = mi__si_in(c, n, MI__GQ_PK);
  int64_t s = q->dims[1], pl = pk ? pk->dims[2] : 0, t = s >= 0 && pl >= 0 ? s + pl : -1;
  int64_t yd[3] = {q->dims[0], s, p.qh}, kd[4] = {q->dims[0], p.kv_heads, t, p.head};
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 3, yd);
  if (n->output_count > 1) mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, 4, kd);
  if (n->output_count > 2) mi__si_set(c, n, 2, MI_DTYPE_FLOAT32, 4, kd);
  return MI_OK;
}
