/* gqa.c - com.microsoft GroupQueryAttention (what onnxruntime-genai's LLMs carry): its checks and
 * the loader's lowering to standard ops: Q, K, V (sliced from a packed query) to heads, K and V
 * after the past (present), then the core shared with the other attention ops (attn_build.c):
 * Q's heads grouped onto the K / V heads, the keys past seqlens_k[b] masked, causal at P + i,
 * softcap; do_rotary: Q and K rotated first (rotary_lower.c's rotation). */
#include <math.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/graph_internal.h"
#include "graph/rotary.h"

static int64_t dim(const mi__in_view_t *x, int32_t d) { return x->rank > d && x->dims[d] >= 0 ? x->dims[d] : -1; }
static int is_f32(const mi__in_view_t *x) { return x->dtype == MI_DTYPE_UNDEFINED || x->dtype == MI_DTYPE_FLOAT32; }

int mi__gqa_check(const mi_node_t *node, const mi__in_view_t *ins, int32_t nout, mi__attn_t *p, char *why, size_t cap) {
  const mi__in_view_t *q = &ins[MI__GQ_Q], *k = &ins[MI__GQ_K], *v = &ins[MI__GQ_V], *pk = &ins[MI__GQ_PK],
                      *pv = &ins[MI__GQ_PV], *sl = &ins[MI__GQ_SEQLENS];
  memset(p, 0, sizeof *p);
  p->heads = mi_node_attr_int(node, "num_heads", -1), p->kv_heads = mi_node_attr_int(node, "kv_num_heads", -1);
  p->softcap = mi_node_attr_float(node, "softcap", 0.f);
  p->unidir = 1;
  p->mask = MI__MASK_SEQLENS;
  p->filter = MI__ATTN_CAUSAL_BIAS; /* keys past seqlens_k take no part (the lowest float) */
  if (p->heads < 1 || p->kv_heads < 1 || p->heads % p->kv_heads)
    return mi__why(why, cap, "num_heads %lld must be a multiple of kv_num_heads %lld (both >= 1)", (long long)p->heads,
                   (long long)p->kv_heads);
  if (mi_node_attr_int(node, "local_window_size", -1) != -1)
    return mi__why(why, cap, "local_window_size = %lld is not supported", (long long)mi_node_attr_int(node, "local_window_size", -1));
  if (mi_node_attr_int(node, "smooth_softmax", 0)) return mi__why(why, cap, "smooth_softmax = 1 is not supported");
  if (p->softcap < 0.f) return mi__why(why, cap, "softcap = %g is negative", (double)p->softcap);
  if (ins[MI__GQ_POS].present || ins[MI__GQ_ABIAS].present || ins[MI__GQ_SINK].present)
    return mi__why(why, cap, "position_ids, attention_bias and head_sink are not supported");
  if (nout > 3) return mi__why(why, cap, "the qk output is not supported");
  if (!q->present || !is_f32(q) || q->rank != 3) return mi__why(why, cap, "query must be a known FLOAT32 [B, S, hidden]");
  if (!sl->present || sl->dtype != MI_DTYPE_INT32 || (sl->rank >= 0 && sl->rank != 1))
    return mi__why(why, cap, "seqlens_k must be INT32 [batch]");
  if (k->present != v->present) return mi__why(why, cap, "key and value go together");
  int64_t hidden = dim(q, 2), b = dim(q, 0);
  p->packed = !k->present;
  int64_t parts = p->packed ? p->heads + 2 * p->kv_heads : p->heads;
  if (hidden < 1 || hidden % parts)
    return mi__why(why, cap, "query's hidden size %lld is not a known multiple of %lld heads", (long long)hidden,
                   (long long)parts);
  p->head = p->vhead = hidden / parts;
  p->qh = p->kh = p->heads * p->head, p->vh = p->heads * p->head;
  if (!p->packed && (!is_f32(k) || !is_f32(v) || k->rank != 3 || v->rank != 3 || dim(k, 2) != p->kv_heads * p->head ||
                     dim(v, 2) != p->kv_heads * p->head || (dim(k, 1) >= 0 && dim(q, 1) >= 0 && dim(k, 1) != dim(q, 1))))
    return mi__why(why, cap, "key and value must be FLOAT32 [B, S, %lld]", (long long)(p->kv_heads * p->head));
  if (pk->present != pv->present) return mi__why(why, cap, "past_key and past_value go together");
  if ((p->past = pk->present) &&
      (!is_f32(pk) || !is_f32(pv) || pk->rank != 4 || pv->rank != 4 || (dim(pk, 0) >= 0 && b >= 0 && dim(pk, 0) != b) ||
       dim(pk, 1) != p->kv_heads || dim(pk, 3) != p->head || dim(pv, 1) != p->kv_heads || dim(pv, 3) != p->head))
    return mi__why(why, cap, "past_key / past_value must be FLOAT32 [B, %lld, P, %lld]", (long long)p->kv_heads,
                   (long long)p->head);
  float sc = mi_node_attr_float(node, "scale", 0.f);
  p->scale = sc == 0.f ? 1.f / sqrtf((float)p->head) : sc;
  if (mi_node_attr_int(node, "do_rotary", 0)) { /* Q and K rotated at their positions */
    const mi__in_view_t *cc = &ins[MI__GQ_COS], *ss = &ins[MI__GQ_SIN];
    if (!cc->present || !ss->present || !is_f32(cc) || !is_f32(ss) || cc->rank != 2 || ss->rank != 2 ||
        dim(cc, 1) < 1 || dim(ss, 1) != dim(cc, 1) || dim(ss, 0) != dim(cc, 0))
      return mi__why(why, cap, "do_rotary needs FLOAT32 cos_cache and sin_cache [max position, rotary dim / 2]");
    p->rot = 2 * dim(cc, 1);
    p->rot_interleaved = mi_node_attr_int(node, "rotary_interleaved", 0) != 0;
    if (p->rot > p->head)
      return mi__why(why, cap, "rotary dim %lld is more than the head size %lld", (long long)p->rot, (long long)p->head);
  } else if (ins[MI__GQ_COS].present)
    return mi__why(why, cap, "cos_cache without do_rotary");
  return 0;
}

/* [B, S, n * h] to heads [B, n, S, h] (into out when >= 0). */
static int32_t heads_of(mi__ab_t *b, const char *what, int32_t x, int64_t n, int64_t h, int32_t out) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  int64_t shape[4] = {0, 0, n, h};
  int32_t r = mi__ab_op(b, "Reshape", what, 2, (int32_t[]){x, mi__ab_c_i64(b, "shape", 1, 4, shape)});
  int32_t y = mi__ab_op_to(b, "Transpose", what, 1, &r, out);
  mi__ab_attr_ints(b, "perm", 4, perm);
  return y;
}

static int32_t bin(mi__ab_t *b, const char *op, const char *what, int32_t x, int32_t y) {
  return mi__ab_op(b, op, what, 2, (int32_t[]){x, y});
}

/* x[..., lo:hi] (into out when >= 0). */
static int32_t cols(mi__ab_t *b, const char *what, int32_t x, int64_t lo, int64_t hi, int32_t out) {
  static const int64_t ax[1] = {-1};
  return mi__ab_op_to(b, "Slice", what, 4,
                      (int32_t[]){x, mi__ab_c_i64(b, "starts", 1, 1, &lo), mi__ab_c_i64(b, "ends", 1, 1, &hi),
                                  mi__ab_c_i64(b, "axes", 1, 1, ax)},
                      out);
}

int32_t mi__gqa_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  mi__in_view_t ins[MI__GQ_COUNT];
  mi__attn_t p;
  char why[256];
  mi__ab_t b;
  const mi_node_t *n = &g->nodes[i];
  mi__ab_start(&b, g, n);
  mi__in_views_of_node(g, n, ins, MI__GQ_COUNT);
  if (mi__gqa_check(n, ins, n->output_count, &p, why, sizeof why))
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (com.microsoft GroupQueryAttention): %s", b.name, why);
  if (g->opset < 11)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (com.microsoft GroupQueryAttention): needs opset >= 11", b.name);
  static const int64_t perm4[4] = {0, 2, 1, 3};
  int32_t q = n->inputs[MI__GQ_Q], y = n->outputs[0], sl = n->inputs[MI__GQ_SEQLENS];
  int32_t n_cos = p.rot ? n->inputs[MI__GQ_COS] : -1, n_sin = p.rot ? n->inputs[MI__GQ_SIN] : -1;
  int32_t k = p.packed ? q : n->inputs[MI__GQ_K], v = p.packed ? q : n->inputs[MI__GQ_V];
  int32_t pk = p.past ? n->inputs[MI__GQ_PK] : -1, pv = p.past ? n->inputs[MI__GQ_PV] : -1;
  int32_t prk = n->output_count > 1 ? n->outputs[1] : -1, prv = n->output_count > 2 ? n->outputs[2] : -1;
  int64_t kvh = p.kv_heads * p.head, qshape[4] = {0, 0, p.heads, p.head}, lo = 0, hi = p.qh;
  static const int64_t ax[1] = {-1};
  /* the node becomes its first op on query: Q's Slice (packed), else its Reshape to heads */
  int32_t first = mi__ab_tensor(&b, p.packed ? "q" : "q_heads"), first_in[4] = {q, -1, -1, -1};
  if (p.packed) {
    first_in[1] = mi__ab_c_i64(&b, "starts", 1, 1, &lo), first_in[2] = mi__ab_c_i64(&b, "ends", 1, 1, &hi);
    first_in[3] = mi__ab_c_i64(&b, "axes", 1, 1, ax);
    k = cols(&b, "k", q, p.qh, p.qh + kvh, -1), v = cols(&b, "v", q, p.qh + kvh, p.qh + 2 * kvh, -1);
  } else
    first_in[1] = mi__ab_c_i64(&b, "shape", 1, 4, qshape);
  int32_t q4, k4;
  if (p.rot) {
    /* rotary on Q and K as [B, S, N, H] before they turn to heads: new token s of batch b sits at
     * position s (no past), else seqlens_k[b] + 1 - S + s */
    static const int64_t zero = 0, one = 1, a1[1] = {1}, a2[1] = {2};
    mi__rot_t rp = {.interleaved = p.rot_interleaved, .heads = p.heads, .head = p.head, .rot = p.rot};
    int64_t kshape[4] = {0, 0, p.kv_heads, p.head}, s_ax = 1;
    int32_t sh = mi__ab_op(&b, "Shape", "query_shape", 1, &q);
    int32_t slen = mi__ab_op(&b, "Gather", "seq_len", 2, (int32_t[]){sh, mi__ab_c_i64(&b, "index", 0, 1, &s_ax)});
    mi__ab_attr_int(&b, "axis", 0);
    int32_t pos = mi__ab_op(&b, "Range", "positions", 3,
                            (int32_t[]){mi__ab_c_i64(&b, "zero", 0, 1, &zero), slen, mi__ab_c_i64(&b, "one", 0, 1, &one)});
    if (pk >= 0) {
      int32_t l64 = mi__ab_op(&b, "Cast", "seqlens64", 1, &sl);
      mi__ab_attr_int(&b, "to", MI_DTYPE_INT64);
      int32_t past_len = bin(&b, "Sub", "past_len", bin(&b, "Add", "total_len", l64, mi__ab_c_i64(&b, "one", 0, 1, &one)), slen);
      pos = bin(&b, "Add", "positions_b", mi__ab_unsqueeze(&b, "past_len_col", past_len, 1, a1), pos);
    }
    int32_t cr = mi__ab_op(&b, "Gather", "cos", 2, (int32_t[]){n_cos, pos}), sr;
    mi__ab_attr_int(&b, "axis", 0);
    sr = mi__ab_op(&b, "Gather", "sin", 2, (int32_t[]){n_sin, pos});
    mi__ab_attr_int(&b, "axis", 0);
    cr = mi__ab_unsqueeze(&b, "cos_heads", cr, 1, pk >= 0 ? a2 : a1);
    sr = mi__ab_unsqueeze(&b, "sin_heads", sr, 1, pk >= 0 ? a2 : a1);
    int32_t qh = first;
    if (p.packed) qh = mi__ab_op(&b, "Reshape", "q_heads", 2, (int32_t[]){first, mi__ab_c_i64(&b, "shape", 1, 4, qshape)});
    qh = mi__rot_apply(&b, &rp, qh, -1, cr, sr, -1);
    q4 = mi__ab_transpose(&b, "q_heads", qh, perm4);
    rp.heads = p.kv_heads;
    int32_t kh = mi__ab_op(&b, "Reshape", "k_heads", 2, (int32_t[]){k, mi__ab_c_i64(&b, "shape", 1, 4, kshape)});
    kh = mi__rot_apply(&b, &rp, kh, -1, cr, sr, -1);
    k4 = mi__ab_op_to(&b, "Transpose", "k_heads", 1, &kh, pk < 0 ? prk : -1);
    mi__ab_attr_ints(&b, "perm", 4, perm4);
  } else {
    q4 = p.packed ? heads_of(&b, "q_heads", first, p.heads, p.head, -1) : mi__ab_transpose(&b, "q_heads", first, perm4);
    k4 = heads_of(&b, "k_heads", k, p.kv_heads, p.head, pk < 0 ? prk : -1);
  }
  int32_t v4 = heads_of(&b, "v_heads", v, p.kv_heads, p.head, pv < 0 ? prv : -1);
  if (pk >= 0) {
    k4 = mi__ab_op_to(&b, "Concat", "k_all", 2, (int32_t[]){pk, k4}, prk);
    mi__ab_attr_int(&b, "axis", 2);
    v4 = mi__ab_op_to(&b, "Concat", "v_all", 2, (int32_t[]){pv, v4}, prv);
    mi__ab_attr_int(&b, "axis", 2);
  }
  mi__ab_core(&b, &p, q4, k4, v4, sl, -1, y);
  if (!b.ok || mi__ab_retype(g, i, p.packed ? "Slice" : "Reshape", p.packed ? 4 : 2, first_in, first))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  return MI_OK;
}
