/* attn.c - com.microsoft Attention and MultiHeadAttention: attribute and input checks shared by
 * shape inference, the reference and the loader's lowering (attn_lower.c, mha_lower.c). What ONNX Runtime's CPU kernel takes is
 * taken; its forms we do not run (a shared past/present buffer, rotary inside the node, the 4D
 * Megatron mask) are refused by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/attn.h"
#include "graph/graph_internal.h"

static int is_f32(const mi__in_view_t *x) { return x->dtype == MI_DTYPE_UNDEFINED || x->dtype == MI_DTYPE_FLOAT32; }

/* Dim d of x, -1 when x's rank is unknown or the dim is dynamic. */
static int64_t dim(const mi__in_view_t *x, int32_t d) { return x->rank > d && x->dims[d] >= 0 ? x->dims[d] : -1; }

/* 1 when known dim a differs from known dim b. */
static int differ(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

/* mask_index (Attention) or key_padding_mask (mha: MultiHeadAttention, no [2B] form). */
static int check_mask(const mi__in_view_t *m, mi__attn_t *p, int64_t b, int64_t s, int64_t t, int mha, char *why,
                      size_t cap) {
  const char *nm = mha ? "key_padding_mask" : "mask_index";
  if (m->dtype != MI_DTYPE_INT32) return mi__why(why, cap, "%s must be INT32 (dtype %lld)", nm, (long long)m->dtype);
  switch (m->rank) {
  case 1:
    /* [B] key lengths or [2B] ends and starts: told apart by the batch when both are known,
     * else at run time (the lowering handles both) */
    p->mask = MI__MASK_LEN;
    if (dim(m, 0) >= 0 && b >= 0) {
      if (dim(m, 0) == 2 * b && !mha) p->mask = MI__MASK_LEN_START;
      else if (dim(m, 0) != b)
        return mi__why(why, cap, "%s [%lld] is neither [batch %lld]%s", nm, (long long)dim(m, 0), (long long)b,
                       mha ? " (the [3 * batch + 2] form is not supported)" : " nor [2 * batch]");
    } else
      p->mask = -MI__MASK_LEN; /* not known yet which */
    return 0;
  case 2:
    p->mask = MI__MASK_2D;
    if (differ(dim(m, 0), b) || differ(dim(m, 1), t))
      return mi__why(why, cap, "%s [%lld, %lld] is not [batch %lld, total sequence %lld]", nm, (long long)dim(m, 0),
                     (long long)dim(m, 1), (long long)b, (long long)t);
    return 0;
  case 3:
    p->mask = MI__MASK_3D;
    if (differ(dim(m, 0), b) || differ(dim(m, 1), s) || differ(dim(m, 2), t))
      return mi__why(why, cap, "%s [%lld, %lld, %lld] is not [batch %lld, sequence %lld, total sequence %lld]", nm,
                     (long long)dim(m, 0), (long long)dim(m, 1), (long long)dim(m, 2), (long long)b, (long long)s,
                     (long long)t);
    return 0;
  case 4: return mi__why(why, cap, "a 4D %s (the Megatron GPT-2 form) is not supported", nm);
  default:
    if (m->rank < 0) {
      p->mask = -MI__MASK_LEN;
      return 0;
    }
    return mi__why(why, cap, "%s of rank %d is not supported (1D, 2D or 3D)", nm, (int)m->rank);
  }
}

static int check_abias(const mi__in_view_t *ab, const mi__attn_t *p, int64_t b, int64_t s, int64_t t, char *why,
                       size_t cap) {
  if (!is_f32(ab) || (ab->rank >= 0 && ab->rank != 4))
    return mi__why(why, cap, "attention_bias must be FLOAT32 [batch or 1, num_heads or 1, S, T]");
  if ((dim(ab, 0) != 1 && differ(dim(ab, 0), b)) || (dim(ab, 1) != 1 && differ(dim(ab, 1), p->heads)) ||
      differ(dim(ab, 2), s) || differ(dim(ab, 3), t))
    return mi__why(why, cap, "attention_bias is [%lld, %lld, %lld, %lld], [batch or 1, num_heads or 1, %lld, %lld] needed",
                   (long long)dim(ab, 0), (long long)dim(ab, 1), (long long)dim(ab, 2), (long long)dim(ab, 3),
                   (long long)s, (long long)t);
  return 0;
}

int mi__attn_check(const mi_node_t *node, const mi__in_view_t *ins, mi__attn_t *p, char *why, size_t cap) {
  const mi__in_view_t *x = &ins[MI__AT_X], *w = &ins[MI__AT_W], *bias = &ins[MI__AT_BIAS];
  const mi__in_view_t *past = &ins[MI__AT_PAST], *ab = &ins[MI__AT_ABIAS];
  memset(p, 0, sizeof *p);
  p->heads = mi_node_attr_int(node, "num_heads", -1);
  p->unidir = mi_node_attr_int(node, "unidirectional", 0) != 0;
  p->filter = mi_node_attr_float(node, "mask_filter_value", -10000.f);
  if (p->heads < 1) return mi__why(why, cap, "num_heads = %lld (must be given and >= 1)", (long long)p->heads);
  if (mi_node_attr_int(node, "do_rotary", 0))
    return mi__why(why, cap, "do_rotary = 1 (rotary embedding inside the node) is not supported");
  if (mi_node_attr_int(node, "past_present_share_buffer", 0))
    return mi__why(why, cap, "past_present_share_buffer = 1 (a shared past/present buffer) is not supported");
  if (ins[MI__AT_PSL].present)
    return mi__why(why, cap, "past_sequence_length (the shared past/present buffer form) is not supported");
  if (!x->present || !w->present) return mi__why(why, cap, "inputs input and weights are required");
  if (!is_f32(x) || !is_f32(w)) return mi__why(why, cap, "input and weights must be FLOAT32");
  if (x->rank >= 0 && x->rank != 3) return mi__why(why, cap, "input has rank %d, [batch, sequence, hidden] needs 3", (int)x->rank);
  if (w->rank != 2) return mi__why(why, cap, "weights must be a known [hidden, qkv hidden] matrix (rank %d)", (int)w->rank);
  p->hin = w->dims[0];
  if (differ(dim(x, 2), p->hin))
    return mi__why(why, cap, "input's hidden size %lld is not weights' rows %lld", (long long)dim(x, 2), (long long)p->hin);
  const mi_attr_t *qkv = mi_node_attr(node, "qkv_hidden_sizes");
  if (qkv) {
    if (qkv->type != MI_ATTR_INTS || qkv->count != 3)
      return mi__why(why, cap, "qkv_hidden_sizes must be 3 ints");
    p->qh = qkv->ints[0], p->kh = qkv->ints[1], p->vh = qkv->ints[2];
  } else {
    if (w->dims[1] % 3) return mi__why(why, cap, "weights' %lld columns are not 3 equal parts", (long long)w->dims[1]);
    p->qh = p->kh = p->vh = w->dims[1] / 3;
  }
  if (p->qh < 1 || p->vh < 1 || p->qh != p->kh)
    return mi__why(why, cap, "qkv_hidden_sizes %lld, %lld, %lld: Q and K must be equal and all >= 1", (long long)p->qh,
                   (long long)p->kh, (long long)p->vh);
  if (p->qh + p->kh + p->vh != w->dims[1])
    return mi__why(why, cap, "weights have %lld columns, qkv_hidden_sizes sum to %lld", (long long)w->dims[1],
                   (long long)(p->qh + p->kh + p->vh));
  if (p->qh % p->heads || p->vh % p->heads)
    return mi__why(why, cap, "hidden sizes %lld and %lld are not multiples of num_heads %lld", (long long)p->qh,
                   (long long)p->vh, (long long)p->heads);
  p->head = p->qh / p->heads, p->vhead = p->vh / p->heads;
  float sc = mi_node_attr_float(node, "scale", 0.f);
  p->scale = sc == 0.f ? 1.f / sqrtf((float)p->head) : sc;
  if ((p->has_bias = bias->present)) {
    if (!is_f32(bias) || (bias->rank >= 0 && (bias->rank != 1 || differ(dim(bias, 0), w->dims[1]))))
      return mi__why(why, cap, "bias must be FLOAT32 [%lld]", (long long)w->dims[1]);
  }
  int64_t b = dim(x, 0), s = dim(x, 1), pl = 0, t;
  if ((p->past = past->present)) {
    if (p->vhead != p->head) return mi__why(why, cap, "past needs K and V of one hidden size");
    if (!is_f32(past) || (past->rank >= 0 && past->rank != 5))
      return mi__why(why, cap, "past must be FLOAT32 [2, batch, num_heads, past sequence, head size]");
    if (differ(dim(past, 0), 2) || differ(dim(past, 1), b) || differ(dim(past, 2), p->heads) ||
        differ(dim(past, 4), p->head))
      return mi__why(why, cap, "past is [%lld, %lld, %lld, %lld, %lld], [2, batch %lld, num_heads %lld, P, %lld] needed",
                     (long long)dim(past, 0), (long long)dim(past, 1), (long long)dim(past, 2), (long long)dim(past, 3),
                     (long long)dim(past, 4), (long long)b, (long long)p->heads, (long long)p->head);
    pl = dim(past, 3);
  }
  t = s >= 0 && pl >= 0 ? s + pl : -1;
  if (ins[MI__AT_MASK].present && check_mask(&ins[MI__AT_MASK], p, b, s, t, 0, why, cap)) return -1;
  if ((p->abias = ab->present) && check_abias(ab, p, b, s, t, why, cap)) return -1;
  return 0;
}

int mi__mha_check(const mi_node_t *node, const mi__in_view_t *ins, int32_t nout, mi__attn_t *p, char *why, size_t cap) {
  const mi__in_view_t *q = &ins[MI__MH_Q], *k = &ins[MI__MH_K], *v = &ins[MI__MH_V], *bias = &ins[MI__MH_BIAS];
  const mi__in_view_t *pk = &ins[MI__MH_PK], *pv = &ins[MI__MH_PV];
  memset(p, 0, sizeof *p);
  p->heads = mi_node_attr_int(node, "num_heads", -1);
  p->unidir = mi_node_attr_int(node, "unidirectional", 0) != 0;
  p->filter = mi_node_attr_float(node, "mask_filter_value", -10000.f);
  if (p->heads < 1) return mi__why(why, cap, "num_heads = %lld (must be given and >= 1)", (long long)p->heads);
  if (ins[MI__MH_PSL].present || ins[MI__MH_CI].present)
    return mi__why(why, cap, "past_sequence_length and cache_indirection (the decoder-masked form) are not supported");
  if (nout > 3) return mi__why(why, cap, "the qk output is not supported");
  if (!q->present || !is_f32(q)) return mi__why(why, cap, "query must be given, FLOAT32");
  if (q->rank == 5) return mi__why(why, cap, "packed QKV (query [B, S, N, 3, H]) is not supported");
  if (q->rank != 3) return mi__why(why, cap, "query must be a known [batch, sequence, hidden] (rank %d)", (int)q->rank);
  if (!k->present || !v->present) return mi__why(why, cap, "key and value are required (packed QKV is not supported)");
  if (k->rank == 5) return mi__why(why, cap, "packed KV (key [B, L, N, 2, H]) is not supported");
  if (!is_f32(k) || !is_f32(v) || (k->rank != 3 && k->rank != 4) || v->rank != k->rank)
    return mi__why(why, cap, "key and value must be FLOAT32 of one known rank, 3 ([B, L, D]) or 4 ([B, N, L, H])");
  p->qh = p->kh = dim(q, 2);
  if (p->qh < 1 || p->qh % p->heads)
    return mi__why(why, cap, "query's hidden size %lld is not a known multiple of num_heads %lld", (long long)p->qh,
                   (long long)p->heads);
  p->head = p->qh / p->heads;
  int64_t b = dim(q, 0), s = dim(q, 1), l, pl = 0;
  if ((p->kv4 = k->rank == 4)) {
    if (differ(dim(k, 0), b) || differ(dim(k, 1), p->heads) || differ(dim(k, 3), p->head) || differ(dim(v, 0), b) ||
        differ(dim(v, 1), p->heads) || differ(dim(v, 2), dim(k, 2)) || dim(v, 3) < 1)
      return mi__why(why, cap, "key / value as heads must be [batch %lld, num_heads %lld, L, %lld] / [.., L, hv]",
                     (long long)b, (long long)p->heads, (long long)p->head);
    p->vhead = dim(v, 3), p->vh = p->vhead * p->heads, l = dim(k, 2);
    if (bias->present) return mi__why(why, cap, "bias with key and value as heads [B, N, L, H] is not supported");
    if (pk->present || pv->present) return mi__why(why, cap, "past_key with key and value as heads is not supported");
  } else {
    p->vh = dim(v, 2), l = dim(k, 1);
    if (differ(dim(k, 0), b) || differ(dim(k, 2), p->qh) || differ(dim(v, 0), b) || differ(dim(v, 1), l) || p->vh < 1 ||
        p->vh % p->heads)
      return mi__why(why, cap, "key [%lld, %lld, %lld] / value [%lld, %lld, %lld] do not fit query's batch %lld, hidden %lld",
                     (long long)dim(k, 0), (long long)dim(k, 1), (long long)dim(k, 2), (long long)dim(v, 0),
                     (long long)dim(v, 1), (long long)dim(v, 2), (long long)b, (long long)p->qh);
    p->vhead = p->vh / p->heads;
  }
  if ((p->has_bias = bias->present) &&
      (!is_f32(bias) || (bias->rank >= 0 && (bias->rank != 1 || differ(dim(bias, 0), 2 * p->qh + p->vh)))))
    return mi__why(why, cap, "bias must be FLOAT32 [%lld]", (long long)(2 * p->qh + p->vh));
  if (pk->present != pv->present) return mi__why(why, cap, "past_key and past_value go together");
  if ((p->past = pk->present)) {
    if (!is_f32(pk) || !is_f32(pv) || pk->rank != 4 || pv->rank != 4 || differ(dim(pk, 0), b) ||
        differ(dim(pk, 1), p->heads) || differ(dim(pk, 3), p->head) || differ(dim(pv, 0), b) ||
        differ(dim(pv, 1), p->heads) || differ(dim(pv, 2), dim(pk, 2)) || differ(dim(pv, 3), p->vhead))
      return mi__why(why, cap, "past_key / past_value must be FLOAT32 [batch, num_heads, P, %lld] / [.., P, %lld]",
                     (long long)p->head, (long long)p->vhead);
    pl = dim(pk, 2);
  }
  if (p->unidir && differ(l, s))
    return mi__why(why, cap, "unidirectional with key length %lld != query length %lld is not supported", (long long)l,
                   (long long)s);
  float sc = mi_node_attr_float(node, "scale", 0.f);
  p->scale = sc == 0.f ? 1.f / sqrtf((float)p->head) : sc;
  int64_t t = l >= 0 && pl >= 0 ? l + pl : -1;
  if (ins[MI__MH_MASK].present && check_mask(&ins[MI__MH_MASK], p, b, s, t, 1, why, cap)) return -1;
  if ((p->abias = ins[MI__MH_ABIAS].present) && check_abias(&ins[MI__MH_ABIAS], p, b, s, t, why, cap)) return -1;
  return 0;
}

int mi__onnx_attn_check(const mi_node_t *node, const mi__in_view_t *ins, int32_t nout, mi__attn_t *p, char *why,
                        size_t cap) {
  const mi__in_view_t *q = &ins[MI__OA_Q], *k = &ins[MI__OA_K], *v = &ins[MI__OA_V], *m = &ins[MI__OA_MASK];
  const mi__in_view_t *pk = &ins[MI__OA_PK], *pv = &ins[MI__OA_PV];
  memset(p, 0, sizeof *p);
  p->unidir = mi_node_attr_int(node, "is_causal", 0) != 0;
  p->softcap = mi_node_attr_float(node, "softcap", 0.f);
  p->qk_mode = (int32_t)mi_node_attr_int(node, "qk_matmul_output_mode", 0);
  if (p->qk_mode < 0 || p->qk_mode > 3) return mi__why(why, cap, "qk_matmul_output_mode = %d (0..3)", (int)p->qk_mode);
  if (p->softcap < 0.f) return mi__why(why, cap, "softcap = %g is negative", (double)p->softcap);
  if (!q->present || !k->present || !v->present) return mi__why(why, cap, "Q, K and V are required");
  if (!is_f32(q) || !is_f32(k) || !is_f32(v)) return mi__why(why, cap, "Q, K and V must be FLOAT32");
  if ((q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank)
    return mi__why(why, cap, "Q, K and V must be of one known rank, 3 or 4 (%d, %d, %d)", (int)q->rank, (int)k->rank,
                   (int)v->rank);
  int64_t b = dim(q, 0), s, l;
  if ((p->q4 = q->rank == 4)) {
    p->heads = dim(q, 1), p->kv_heads = dim(k, 1), p->head = dim(q, 3), p->vhead = dim(v, 3), s = dim(q, 2), l = dim(k, 2);
    if (differ(dim(k, 3), p->head) || differ(dim(v, 1), p->kv_heads) || differ(dim(v, 2), l))
      return mi__why(why, cap, "K [B, Nkv, L, %lld] and V [B, Nkv, L, hv] do not fit", (long long)p->head);
  } else {
    p->heads = mi_node_attr_int(node, "q_num_heads", -1), p->kv_heads = mi_node_attr_int(node, "kv_num_heads", -1);
    if (p->heads < 1 || p->kv_heads < 1)
      return mi__why(why, cap, "3D Q, K, V need q_num_heads and kv_num_heads >= 1 (%lld, %lld)", (long long)p->heads,
                     (long long)p->kv_heads);
    if (dim(q, 2) < 1 || dim(q, 2) % p->heads || dim(k, 2) < 1 || dim(k, 2) % p->kv_heads || dim(v, 2) < 1 ||
        dim(v, 2) % p->kv_heads)
      return mi__why(why, cap, "hidden sizes %lld, %lld, %lld are not known multiples of the heads %lld, %lld",
                     (long long)dim(q, 2), (long long)dim(k, 2), (long long)dim(v, 2), (long long)p->heads,
                     (long long)p->kv_heads);
    p->head = dim(q, 2) / p->heads, p->vhead = dim(v, 2) / p->kv_heads, s = dim(q, 1), l = dim(k, 1);
    if (dim(k, 2) / p->kv_heads != p->head) return mi__why(why, cap, "Q and K head sizes differ");
    if (differ(dim(v, 1), l)) return mi__why(why, cap, "K and V sequence lengths differ");
  }
  if (p->heads < 1 || p->kv_heads < 1 || p->head < 1 || p->vhead < 1 || p->heads % p->kv_heads)
    return mi__why(why, cap, "q heads %lld are not a multiple of kv heads %lld", (long long)p->heads,
                   (long long)p->kv_heads);
  p->qh = p->kh = p->heads * p->head, p->vh = p->heads * p->vhead;
  float sc = mi_node_attr_float(node, "scale", 0.f);
  p->scale = sc == 0.f ? 1.f / sqrtf((float)p->head) : sc;
  int64_t pl = 0;
  if (pk->present != pv->present) return mi__why(why, cap, "past_key and past_value go together");
  if ((p->past = pk->present)) {
    if (!is_f32(pk) || !is_f32(pv) || pk->rank != 4 || pv->rank != 4 || differ(dim(pk, 0), b) ||
        differ(dim(pk, 1), p->kv_heads) || differ(dim(pk, 3), p->head) || differ(dim(pv, 1), p->kv_heads) ||
        differ(dim(pv, 2), dim(pk, 2)) || differ(dim(pv, 3), p->vhead))
      return mi__why(why, cap, "past_key / past_value must be FLOAT32 [B, %lld, P, %lld] / [B, %lld, P, %lld]",
                     (long long)p->kv_heads, (long long)p->head, (long long)p->kv_heads, (long long)p->vhead);
    pl = dim(pk, 2);
  }
  if (m->present) {
    p->mask = m->dtype == MI_DTYPE_BOOL ? MI__MASK_BOOL : MI__MASK_FLOAT;
    if (p->mask == MI__MASK_FLOAT && !is_f32(m)) return mi__why(why, cap, "attn_mask must be BOOL or FLOAT32");
    if (m->rank > 4) return mi__why(why, cap, "attn_mask has rank %d (at most 4)", (int)m->rank);
    int64_t t = l >= 0 && pl >= 0 ? l + pl : -1;
    if (m->rank >= 1 && dim(m, m->rank - 1) >= 0 && t >= 0 && dim(m, m->rank - 1) != t && dim(m, m->rank - 1) != 1)
      return mi__why(why, cap,
                     "attn_mask's last dim %lld is not the total sequence %lld (a shorter mask padded is not "
                     "supported)",
                     (long long)dim(m, m->rank - 1), (long long)t);
    if (m->rank >= 2 && dim(m, m->rank - 2) > 1 && differ(dim(m, m->rank - 2), s))
      return mi__why(why, cap, "attn_mask's dim %lld does not broadcast to the query length %lld",
                     (long long)dim(m, m->rank - 2), (long long)s);
  }
  return 0;
}
