/* shape_infer_pad.c - shapes of Pad (attribute or input pads by opset), Size and LSTM. */
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_pad(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 1, &x);
  if (rc) return rc;
  int64_t pads[2 * MI_MAX_RANK], axes[MI_MAX_RANK], d[MI_MAX_RANK];
  int64_t np = -1, na = -1;
  if (c->g->opset < 11) {
    const mi_attr_t *a = mi_node_attr(n, "pads");
    if (a && a->type == MI_ATTR_INTS && a->count <= 2 * MI_MAX_RANK) {
      np = a->count;
      for (int32_t i = 0; i < a->count; i++) pads[i] = a->ints[i];
    }
  } else {
    np = mi__si_ints(c, n, 1, pads, 2 * MI_MAX_RANK);
    if (mi__si_in(c, n, 3)) na = mi__si_ints(c, n, 3, axes, MI_MAX_RANK);
  }
  if (np < 0 || (mi__si_in(c, n, 3) && na < 0)) { /* pads known only at run time */
    for (int32_t i = 0; i < x->rank; i++) d[i] = MI_DIM_DYNAMIC;
    mi__si_set(c, n, 0, x->dtype, x->rank, d);
    return MI_OK;
  }
  if (na < 0) {
    na = x->rank;
    for (int32_t i = 0; i < x->rank; i++) axes[i] = i;
  }
  if (np != 2 * na)
    return mi__si_fail(c, n, MI_ERR_PARSE, "pads has %lld values for %lld axes", (long long)np,
                       (long long)na);
  memcpy(d, x->dims, sizeof d);
  for (int64_t k = 0; k < na; k++) {
    int32_t a;
    if ((rc = mi__si_axis(c, n, axes[k], x->rank, &a))) return rc;
    if (d[a] < 0) continue;
    d[a] += pads[k] + pads[k + na];
    if (d[a] < 0)
      return mi__si_fail(c, n, MI_ERR_PARSE, "pads make dimension %d negative", (int)a);
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  return MI_OK;
}

int32_t mi__si_size(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  int64_t numel = mi__tensor_numel(mi__si_in(c, n, 0));
  mi__si_set(c, n, 0, MI_DTYPE_INT64, 0, NULL);
  if (numel >= 0) {
    double v = (double)numel;
    mi__si_set_val(c, n, 0, &v, 1);
  }
  return MI_OK;
}

int32_t mi__si_lstm(mi__si_t *c, const mi_node_t *n) { return mi__si_recurrent(c, n, 3); }
