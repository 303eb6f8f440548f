/* shape_infer_select.c - shapes of ArgMax/ArgMin, TopK, NonZero, Einsum, GatherElements and
 * ScatterND. */
#include <string.h>

#include "graph/einsum.h"
#include "graph/shape_infer.h"

int32_t mi__si_argminmax(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1), a, r = 0;
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int keep = mi_node_attr_int(n, "keepdims", 1) != 0;
  int64_t d[MI_MAX_RANK];
  if (x->rank < 0) {
    mi__si_set(c, n, 0, MI_DTYPE_INT64, -1, NULL);
    return MI_OK;
  }
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", 0), x->rank, &a))) return rc;
  for (int32_t i = 0; i < x->rank; i++)
    if (i != a || keep) d[r++] = i == a ? 1 : x->dims[i];
  mi__si_set(c, n, 0, MI_DTYPE_INT64, r, d);
  return MI_OK;
}

int32_t mi__si_topk(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, c->g->opset >= 10 ? 2 : 1), a;
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t d[MI_MAX_RANK], k = MI_DIM_DYNAMIC;
  if (x->rank < 0) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    mi__si_set(c, n, 1, MI_DTYPE_INT64, -1, NULL);
    return MI_OK;
  }
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", -1), x->rank, &a))) return rc;
  if (c->g->opset < 10) k = mi_node_attr_int(n, "k", MI_DIM_DYNAMIC);
  else if (mi__si_ints(c, n, 1, &k, 1) != 1)
    k = MI_DIM_DYNAMIC;
  if (k != MI_DIM_DYNAMIC && (k < 0 || (x->dims[a] >= 0 && k > x->dims[a])))
    return mi__si_fail(c, n, MI_ERR_PARSE, "k = %lld is outside [0, %lld]", (long long)k,
                       (long long)x->dims[a]);
  memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
  d[a] = k;
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  mi__si_set(c, n, 1, MI_DTYPE_INT64, x->rank, d);
  return MI_OK;
}

/* The count of non-zeros is data: the second dim stays dynamic even for constant input. */
int32_t mi__si_nonzero(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t d[2] = {x->rank >= 0 ? x->rank : MI_DIM_DYNAMIC, MI_DIM_DYNAMIC};
  mi__si_set(c, n, 0, MI_DTYPE_INT64, 2, d);
  return MI_OK;
}

int32_t mi__si_einsum(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const char *eq = mi_node_attr_string(n, "equation", NULL), *why = NULL;
  mi__einsum_t e;
  int64_t size[MI__EINSUM_MAX_LABELS], d[MI_MAX_RANK];
  if (!eq) return mi__si_fail(c, n, MI_ERR_PARSE, "attribute 'equation' is missing");
  if (mi__einsum_parse(eq, n->input_count, &e, &why) != 0)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "equation '%s' is not supported: %s", eq, why);
  for (int32_t k = 0; k < e.nlab; k++) size[k] = MI_DIM_DYNAMIC;
  for (int32_t i = 0; i < e.nin; i++) {
    const mi_tensor_t *x = mi__si_in(c, n, i);
    if (!x) return mi__si_fail(c, n, MI_ERR_PARSE, "operand %d is missing", (int)i);
    if (x->rank < 0) continue;
    if (x->rank != e.in_rank[i])
      return mi__si_fail(c, n, MI_ERR_PARSE,
                         "equation '%s' gives operand %d %d labels, it has "
                         "rank %d",
                         eq, (int)i, (int)e.in_rank[i], (int)x->rank);
    for (int32_t k = 0; k < x->rank; k++) {
      int32_t l = e.in_lab[i][k];
      if (x->dims[k] < 0) continue;
      if (size[l] >= 0 && size[l] != x->dims[k])
        return mi__si_fail(c, n, MI_ERR_PARSE, "equation '%s': one label has sizes %lld and %lld",
                           eq, (long long)size[l], (long long)x->dims[k]);
      size[l] = x->dims[k];
    }
  }
  for (int32_t k = 0; k < e.out_rank; k++) d[k] = size[e.out_lab[k]];
  mi__si_set(c, n, 0, mi__si_in(c, n, 0)->dtype, e.out_rank, d);
  return MI_OK;
}

/* GatherElements: the indices' shape, the data's dtype. */
int32_t mi__si_gather_elements(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0), *ind = mi__si_in(c, n, 1);
  if (x->rank >= 0 && ind->rank >= 0 && x->rank != ind->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "indices have rank %d, data rank %d", (int)ind->rank,
                       (int)x->rank);
  mi__si_set(c, n, 0, x->dtype, ind->rank, ind->rank >= 0 ? ind->dims : NULL);
  return MI_OK;
}

/* ScatterND: the data's shape and dtype; where the ranks are known, updates must have the
 * shape indices[:-1] + data[q:] (q = the last dim of indices). */
int32_t mi__si_scatter_nd(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 3);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0), *ind = mi__si_in(c, n, 1), *u = mi__si_in(c, n, 2);
  if (x->rank >= 0 && ind->rank >= 1 && u->rank >= 0 && ind->dims[ind->rank - 1] >= 0) {
    int64_t q = ind->dims[ind->rank - 1];
    int ok = q >= 1 && q <= x->rank && u->rank == ind->rank - 1 + x->rank - q;
    for (int32_t d = 0; ok && d < u->rank; d++) {
      int64_t want = d < ind->rank - 1 ? ind->dims[d] : x->dims[q + d - (ind->rank - 1)];
      ok = want < 0 || u->dims[d] < 0 || want == u->dims[d];
    }
    if (!ok)
      return mi__si_fail(c, n, MI_ERR_PARSE,
                         "updates do not have the shape indices[:-1] + "
                         "data[%lld:]",
                         (long long)q);
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, x->rank >= 0 ? x->dims : NULL);
  return MI_OK;
}
