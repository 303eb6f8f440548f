/* shape_infer_msfuse.c - shapes of RMSNormalization and ONNX Runtime's transformer-optimizer fused
 * ops (for a graph built in code: a loaded model's are lowered at import, ms_fuse_lower.c). */
#include <string.h>

#include "graph/ms_fuse.h"
#include "graph/shape_infer.h"

int32_t mi__si_rms(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_shaped_like(c, n, 2, MI_DTYPE_UNDEFINED, &x), a;
  if (rc || x->rank < 0) return rc;
  if (x->rank == 0) return mi__si_fail(c, n, MI_ERR_PARSE, "X is a scalar");
  if (mi_node_attr_int(n, "stash_type", 1) != 1)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "stash_type = %lld (1, FLOAT32, is supported)",
                       (long long)mi_node_attr_int(n, "stash_type", 1));
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", -1), x->rank, &a))) return rc;
  const mi_tensor_t *s = mi__si_in(c, n, 1);
  if (s->rank > x->rank - a)
    return mi__si_fail(c, n, MI_ERR_PARSE, "scale has rank %d, the normalised dims are %d", (int)s->rank,
                       (int)(x->rank - a));
  for (int32_t k = 1; k <= s->rank; k++) { /* scale broadcasts to the normalised dims */
    int64_t sd = s->dims[s->rank - k], xd = x->dims[x->rank - k];
    if (sd >= 0 && xd >= 0 && sd != 1 && sd != xd)
      return mi__si_fail(c, n, MI_ERR_PARSE, "scale's dim %d is %lld, X's dim %d is %lld", (int)(s->rank - k),
                         (long long)sd, (int)(x->rank - k), (long long)xd);
  }
  return MI_OK;
}

int32_t mi__si_msfuse(mi__si_t *c, const mi_node_t *n) {
  int kind = mi__msf_kind(n);
  if (kind == MI__MSF_SLN) return mi__si_rms(c, n);
  if (kind == MI__MSF_SWISH && (c->g->opset < 24))
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "the op exists from opset 24 on");
  if (kind == MI__MSF_FUSED_MM) {
    const mi_tensor_t *a, *b;
    float alpha;
    int ta, tb;
    char why[128];
    int32_t rc = mi__si_open2(c, n, 2, 1, &a, &b), r;
    if (rc) return rc;
    if (mi__msf_fused_mm_attrs(n, &alpha, &ta, &tb, why, sizeof why))
      return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "%s", why);
    if (a->rank < 2 || b->rank < 2) return mi__si_fail(c, n, MI_ERR_PARSE, "A and B must have rank >= 2");
    int64_t ad[MI_MAX_RANK], bd[MI_MAX_RANK], out[MI_MAX_RANK];
    memcpy(ad, a->dims, sizeof ad);
    memcpy(bd, b->dims, sizeof bd);
    if (ta) ad[a->rank - 2] = a->dims[a->rank - 1], ad[a->rank - 1] = a->dims[a->rank - 2];
    if (tb) bd[b->rank - 2] = b->dims[b->rank - 1], bd[b->rank - 1] = b->dims[b->rank - 2];
    if (ad[a->rank - 1] >= 0 && bd[b->rank - 2] >= 0 && ad[a->rank - 1] != bd[b->rank - 2])
      return mi__si_fail(c, n, MI_ERR_PARSE, "inner dimensions %lld and %lld differ", (long long)ad[a->rank - 1],
                         (long long)bd[b->rank - 2]);
    if ((rc = mi__si_broadcast(c, n, a->rank - 2, ad, b->rank - 2, bd, &r, out))) return rc;
    out[r++] = ad[a->rank - 2];
    out[r++] = bd[b->rank - 1];
    if (r > MI_MAX_RANK) return mi__si_fail(c, n, MI_ERR_PARSE, "result rank too large");
    mi__si_set(c, n, 0, a->dtype, r, out);
    return MI_OK;
  }
  if (kind == MI__MSF_EMBED_LN) {
    int32_t rc = mi__si_need(c, n, 1);
    if (rc) return rc;
    static const int32_t req[4] = {MI__EMB_WORD, MI__EMB_POS, MI__EMB_GAMMA, MI__EMB_BETA};
    for (int k = 0; k < 4; k++)
      if (!mi__si_in(c, n, req[k])) return mi__si_fail(c, n, MI_ERR_PARSE, "input %d is required", (int)req[k]);
    const mi_tensor_t *ids = mi__si_in(c, n, MI__EMB_IDS), *we = mi__si_in(c, n, MI__EMB_WORD);
    if (ids->rank >= 0 && ids->rank != 2) return mi__si_fail(c, n, MI_ERR_PARSE, "input_ids must be 2-D [batch, sequence]");
    if (we->rank >= 0 && we->rank != 2) return mi__si_fail(c, n, MI_ERR_PARSE, "word_embedding must be 2-D");
    int64_t d[3] = {ids->rank == 2 ? ids->dims[0] : -1, ids->rank == 2 ? ids->dims[1] : -1, we->rank == 2 ? we->dims[1] : -1};
    mi__si_set(c, n, 0, we->dtype, ids->rank < 0 ? -1 : 3, d);
    mi__si_set(c, n, 1, MI_DTYPE_INT32, ids->rank < 0 ? -1 : 1, d);
    mi__si_set(c, n, 2, we->dtype, ids->rank < 0 ? -1 : 3, d);
    return MI_OK;
  }
  if (kind != MI__MSF_SKIP_LN && kind != MI__MSF_SKIP_SLN) {
    int32_t need = kind == MI__MSF_BIAS_GELU ? 2 : kind == MI__MSF_BIAS_ADD ? 3
                                                                            : 1;
    return kind == MI__MSF_NONE ? mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "unsupported op")
                                : mi__si_shaped_like(c, n, need, MI_DTYPE_UNDEFINED, NULL);
  }
  const mi_tensor_t *x, *skip;
  int32_t rc = mi__si_shaped_like(c, n, 3, MI_DTYPE_UNDEFINED, &x), gr[3] = {-2, -2, -2};
  if (rc) return rc;
  skip = mi__si_in(c, n, 1);
  int64_t g0[3] = {-1, -1, -1};
  int32_t first = 2, last = kind == MI__MSF_SKIP_LN ? 4 : 3;
  for (int32_t k = first; k <= last; k++) {
    const mi_tensor_t *t = mi__si_in(c, n, k);
    int32_t slot = kind == MI__MSF_SKIP_SLN && k == 3 ? 2 : k - 2; /* gamma, beta, bias */
    if (!t) continue;
    gr[slot] = t->rank;
    g0[slot] = t->rank >= 1 ? t->dims[0] : -1;
  }
  char why[256];
  if (mi__msf_skip_shapes(x->rank, x->dims, skip->rank, skip->dims, gr, g0, why, sizeof why))
    return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  if (x->rank < 0) return MI_OK;
  int64_t d[MI_MAX_RANK];
  for (int32_t i = 0; i < x->rank; i++) d[i] = i < x->rank - 1 ? x->dims[i] : 1;
  mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, x->rank, d);
  mi__si_set(c, n, 2, MI_DTYPE_FLOAT32, x->rank, d);
  mi__si_set(c, n, 3, x->dtype, x->rank, x->dims);
  return MI_OK;
}
