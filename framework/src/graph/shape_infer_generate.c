/* shape_infer_generate.c - shapes of the ops that build tensors from shape values (Expand,
 * ConstantOfShape, Range, Tile, EyeLike); known values flow on so shape chains stay static. */
#include <stdlib.h>
#include <string.h>

#include "graph/onnx_dtype.h"
#include "graph/shape_infer.h"

/* The shape given by input k's values: rank from its length, NaN elements dynamic.
 * Returns the rank, or -1 when not even the length is known. */
static int32_t shape_from(mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *dims) {
  int64_t cnt = 0;
  const double *v = mi__si_val(c, n, k, &cnt);
  const mi_tensor_t *s = mi__si_in(c, n, k);
  if (v && cnt <= MI_MAX_RANK) {
    for (int64_t i = 0; i < cnt; i++) dims[i] = isnan(v[i]) ? MI_DIM_DYNAMIC : mi__si_d2i(v[i]);
    return (int32_t)cnt;
  }
  if (s && s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= MI_MAX_RANK) {
    for (int64_t i = 0; i < s->dims[0]; i++) dims[i] = MI_DIM_DYNAMIC;
    return (int32_t)s->dims[0];
  }
  return -1;
}

int32_t mi__si_expand(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2), r, rank;
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t sd[MI_MAX_RANK], out[MI_MAX_RANK];
  rank = shape_from(c, n, 1, sd);
  if (rank < 0 || x->rank < 0) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    return MI_OK;
  }
  for (int32_t i = 0; i < rank; i++)
    if (sd[i] < 0 && sd[i] != MI_DIM_DYNAMIC)
      return mi__si_fail(c, n, MI_ERR_PARSE, "shape[%d] = %lld is negative", (int)i,
                         (long long)sd[i]);
  if ((rc = mi__si_broadcast(c, n, x->rank, x->dims, rank, sd, &r, out))) return rc;
  mi__si_set(c, n, 0, x->dtype, r, out);
  return MI_OK;
}

int32_t mi__si_constant_of_shape(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_attr_t *v = mi_node_attr(n, "value");
  int32_t dtype = (int32_t)mi_node_attr_int(
      n, "value_dtype", v && v->type == MI_ATTR_INT ? MI_DTYPE_INT64 : MI_DTYPE_FLOAT32);
  int64_t dims[MI_MAX_RANK], total = 1;
  int32_t rank = shape_from(c, n, 0, dims);
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < -1)
      return mi__si_fail(c, n, MI_ERR_PARSE, "shape[%d] = %lld is negative", (int)i,
                         (long long)dims[i]);
    total = dims[i] < 0 || total < 0 ? -1 : total * dims[i];
  }
  mi__si_set(c, n, 0, dtype, rank, dims);
  if (rank >= 0 && total >= 0 && total <= MI__SI_MAX_VALUES) {
    double fill = !v ? 0 : v->type == MI_ATTR_FLOAT ? v->f
                                                    : (double)v->i;
    double *o = malloc((size_t)(total ? total : 1) * sizeof *o);
    if (!o) return MI_OK;
    for (int64_t i = 0; i < total; i++) o[i] = fill;
    mi__si_set_val(c, n, 0, o, total);
    free(o);
  }
  return MI_OK;
}

int32_t mi__si_range(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 3);
  if (rc) return rc;
  const mi_tensor_t *start = mi__si_in(c, n, 0);
  double s[3];
  int known = 1;
  for (int32_t k = 0; k < 3; k++) {
    int64_t cnt = 0;
    const double *v = mi__si_val(c, n, k, &cnt);
    if (!v || cnt != 1 || isnan(v[0])) known = 0;
    else
      s[k] = v[0];
  }
  int64_t len = MI_DIM_DYNAMIC;
  if (known) {
    if (s[2] == 0) return mi__si_fail(c, n, MI_ERR_PARSE, "delta is 0");
    double cnt = ceil((s[1] - s[0]) / s[2]);
    /* Converting an out-of-range double to int64 is undefined: refuse it instead. */
    if (isnan(cnt) || cnt >= 0x1p62)
      return mi__si_fail(c, n, MI_ERR_PARSE, "start %g, limit %g and delta %g give %g elements (out of range)",
                         s[0], s[1], s[2], cnt);
    len = cnt > 0 ? (int64_t)cnt : 0;
  }
  mi__si_set(c, n, 0, start->dtype, 1, &len);
  if (known && len <= MI__SI_MAX_VALUES) {
    double *o = malloc((size_t)(len ? len : 1) * sizeof *o);
    if (!o) return MI_OK;
    for (int64_t i = 0; i < len; i++) o[i] = s[0] + (double)i * s[2];
    mi__si_set_val(c, n, 0, o, len);
    free(o);
  }
  return MI_OK;
}

int32_t mi__si_tile(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 2, &x);
  if (rc) return rc;
  int64_t reps[MI_MAX_RANK], d[MI_MAX_RANK];
  int64_t cnt = mi__si_ints(c, n, 1, reps, MI_MAX_RANK);
  if (cnt >= 0 && cnt != x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "repeats has %lld values for rank %d",
                       (long long)cnt, (int)x->rank);
  for (int32_t i = 0; i < x->rank; i++) {
    if (cnt >= 0 && reps[i] < 0)
      return mi__si_fail(c, n, MI_ERR_PARSE, "repeats[%d] is negative", (int)i);
    if (cnt < 0 || x->dims[i] < 0) d[i] = MI_DIM_DYNAMIC;
    else if (__builtin_mul_overflow(x->dims[i], reps[i], &d[i]))
      return mi__si_fail(c, n, MI_ERR_PARSE, "repeats[%d] overflows the output dim", (int)i);
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  return MI_OK;
}

/* EyeLike: input 0's 2-D shape in `dtype` (as the loader holds that ONNX type) or input 0's. */
int32_t mi__si_eyelike(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_since(c, n), dt;
  if (rc || (rc = mi__si_need(c, n, 1))) return rc;
  x = mi__si_in(c, n, 0);
  dt = mi_node_attr(n, "dtype") ? mi__dtype_from_onnx((int32_t)mi_node_attr_int(n, "dtype", 0)) : x->dtype;
  if (dt == MI_DTYPE_UNDEFINED || dt == MI_DTYPE_INT4)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "output type %lld is not supported",
                       (long long)mi_node_attr_int(n, "dtype", -1));
  if (x->rank >= 0 && x->rank != 2)
    return mi__si_fail(c, n, MI_ERR_PARSE, "input must be 2-D, got rank %d", (int)x->rank);
  mi__si_set(c, n, 0, dt, x->rank, x->dims);
  return MI_OK;
}
