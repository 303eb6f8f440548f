/* shape_infer_tensor.c - shapes of the data-movement ops (Reshape, Flatten, Transpose,
 * Squeeze/Unsqueeze, Slice, Concat, Gather, Shape, Reduce*), with the value evaluation that
 * Shape -> Gather -> Concat -> Reshape chains need to end in static shapes. */
#include <stdlib.h>
#include <string.h>

#include "graph/shape_infer.h"

/* Passes a known value through ops that only change the shape (Reshape, Squeeze, ...). */
static void pass_value(mi__si_t *c, const mi_node_t *n) {
  int64_t cnt = 0;
  const double *v = mi__si_val(c, n, 0, &cnt);
  if (v) mi__si_set_val(c, n, 0, v, cnt);
}

int32_t mi__si_reshape(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0), *s = mi__si_in(c, n, 1);
  int64_t cnt = 0, d[MI_MAX_RANK];
  const double *v = mi__si_val(c, n, 1, &cnt);
  if (!v) {
    int64_t r = s->rank == 1 ? s->dims[0] : -1;
    if (r > MI_MAX_RANK) return mi__si_fail(c, n, MI_ERR_PARSE, "target rank %lld too large", (long long)r);
    for (int64_t i = 0; i < r; i++) d[i] = MI_DIM_DYNAMIC;
    mi__si_set(c, n, 0, x->dtype, (int32_t)r, d);
    return MI_OK;
  }
  if (cnt > MI_MAX_RANK) return mi__si_fail(c, n, MI_ERR_PARSE, "target rank %lld too large", (long long)cnt);
  int allowzero = c->g->opset >= 14 && mi_node_attr_int(n, "allowzero", 0) != 0;
  int32_t minus = -1;
  int64_t known = 1;
  int unknown = 0;
  for (int64_t i = 0; i < cnt; i++) {
    if (isnan(v[i])) {
      d[i] = MI_DIM_DYNAMIC;
      unknown = 1;
      continue;
    }
    d[i] = mi__si_d2i(v[i]);
    if (d[i] == 0 && !allowzero) {
      if (x->rank >= 0 && i >= x->rank)
        return mi__si_fail(c, n, MI_ERR_PARSE, "shape[%lld] = 0 copies a dim the input lacks", (long long)i);
      d[i] = x->rank >= 0 ? x->dims[i] : MI_DIM_DYNAMIC;
      if (d[i] < 0) unknown = 1;
    } else if (d[i] == -1) {
      if (minus >= 0) return mi__si_fail(c, n, MI_ERR_PARSE, "shape has more than one -1");
      minus = (int32_t)i;
      continue;
    } else if (d[i] < -1) {
      return mi__si_fail(c, n, MI_ERR_PARSE, "shape[%lld] = %lld is invalid", (long long)i, (long long)d[i]);
    }
    if (d[i] >= 0 && __builtin_mul_overflow(known, d[i], &known))
      return mi__si_fail(c, n, MI_ERR_PARSE, "shape's element count overflows");
  }
  int64_t total = mi__tensor_numel(x);
  if (minus >= 0) {
    if (total < 0 || unknown) d[minus] = MI_DIM_DYNAMIC;
    else if (known == 0 || total % known)
      return mi__si_fail(c, n, MI_ERR_PARSE, "cannot reshape %lld elements with -1 and %lld others",
                         (long long)total, (long long)known);
    else
      d[minus] = total / known;
  } else if (total >= 0 && !unknown && total != known) {
    return mi__si_fail(c, n, MI_ERR_PARSE, "cannot reshape %lld elements into %lld",
                       (long long)total, (long long)known);
  }
  mi__si_set(c, n, 0, x->dtype, (int32_t)cnt, d);
  pass_value(c, n);
  return MI_OK;
}

int32_t mi__si_flatten(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  if (x->rank < 0) {
    int64_t d[2] = {MI_DIM_DYNAMIC, MI_DIM_DYNAMIC};
    mi__si_set(c, n, 0, x->dtype, 2, d);
    return MI_OK;
  }
  int64_t axis = mi_node_attr_int(n, "axis", 1);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis > x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "axis out of range for rank %d", (int)x->rank);
  int64_t d[2] = {1, 1};
  for (int32_t i = 0; i < x->rank; i++) {
    int64_t *p = &d[i < axis ? 0 : 1];
    *p = (*p < 0 || x->dims[i] < 0) ? MI_DIM_DYNAMIC : *p * x->dims[i];
  }
  mi__si_set(c, n, 0, x->dtype, 2, d);
  pass_value(c, n);
  return MI_OK;
}

int32_t mi__si_transpose(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 1, &x);
  if (rc) return rc;
  const mi_attr_t *perm = mi_node_attr(n, "perm");
  int64_t d[MI_MAX_RANK];
  int used[MI_MAX_RANK] = {0};
  if (perm && perm->type == MI_ATTR_INTS && perm->count != x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "perm has %d entries for rank %d", (int)perm->count, (int)x->rank);
  for (int32_t i = 0; i < x->rank; i++) {
    int64_t p = perm && perm->type == MI_ATTR_INTS ? perm->ints[i] : x->rank - 1 - i;
    if (p < 0) p += x->rank;
    if (p < 0 || p >= x->rank || used[p]++)
      return mi__si_fail(c, n, MI_ERR_PARSE, "perm is not a permutation");
    d[i] = x->dims[p];
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  return MI_OK;
}

/* Axes from the attribute (old opsets) or from input 1 (new ones). Returns the count, -1 when
 * given but unknown, -2 when absent. */
static int64_t get_axes(mi__si_t *c, const mi_node_t *n, int from_input, int64_t *axes) {
  if (!from_input) {
    const mi_attr_t *a = mi_node_attr(n, "axes");
    if (!a || a->type != MI_ATTR_INTS) return -2;
    if (a->count > MI_MAX_RANK) return -1;
    memcpy(axes, a->ints, sizeof(int64_t) * (size_t)a->count);
    return a->count;
  }
  const mi_tensor_t *t = mi__si_in(c, n, 1);
  if (!t || mi__tensor_numel(t) == 0) return -2;
  return mi__si_ints(c, n, 1, axes, MI_MAX_RANK);
}

int32_t mi__si_reduce(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int from_input = strcmp(n->op_type, "ReduceSum") == 0 ? c->g->opset >= 13 : c->g->opset >= 18;
  int keep = mi_node_attr_int(n, "keepdims", 1) != 0;
  int64_t axes[MI_MAX_RANK], d[MI_MAX_RANK];
  int64_t na = get_axes(c, n, from_input, axes);
  if (x->rank < 0 || na == -1) {
    for (int32_t i = 0; i < x->rank; i++) d[i] = MI_DIM_DYNAMIC;
    mi__si_set(c, n, 0, x->dtype, keep ? x->rank : -1, d);
    return MI_OK;
  }
  int red[MI_MAX_RANK] = {0};
  if (na == -2 || na == 0) {
    int noop = from_input && mi_node_attr_int(n, "noop_with_empty_axes", 0) != 0;
    for (int32_t i = 0; i < x->rank; i++) red[i] = !noop;
  } else {
    for (int64_t i = 0; i < na; i++) {
      int32_t a;
      if ((rc = mi__si_axis(c, n, axes[i], x->rank, &a))) return rc;
      red[a] = 1;
    }
  }
  int32_t r = 0;
  for (int32_t i = 0; i < x->rank; i++) {
    if (!red[i]) d[r++] = x->dims[i];
    else if (keep)
      d[r++] = 1;
  }
  mi__si_set(c, n, 0, x->dtype, r, d);
  return MI_OK;
}

int32_t mi__si_squeeze(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t axes[MI_MAX_RANK], d[MI_MAX_RANK];
  int64_t na = get_axes(c, n, c->g->opset >= 13, axes);
  if (x->rank < 0 || na == -1) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    pass_value(c, n);
    return MI_OK;
  }
  int drop[MI_MAX_RANK] = {0};
  if (na < 0) {
    for (int32_t i = 0; i < x->rank; i++) {
      if (x->dims[i] < 0) { /* whether it is 1 decides the rank */
        mi__si_set(c, n, 0, x->dtype, -1, NULL);
        return MI_OK;
      }
      drop[i] = x->dims[i] == 1;
    }
  }
  for (int64_t i = 0; i < na; i++) {
    int32_t a;
    if ((rc = mi__si_axis(c, n, axes[i], x->rank, &a))) return rc;
    if (x->dims[a] > 1)
      return mi__si_fail(c, n, MI_ERR_PARSE, "cannot squeeze axis %d of size %lld", (int)a,
                         (long long)x->dims[a]);
    drop[a] = 1;
  }
  int32_t r = 0;
  for (int32_t i = 0; i < x->rank; i++)
    if (!drop[i]) d[r++] = x->dims[i];
  mi__si_set(c, n, 0, x->dtype, r, d);
  pass_value(c, n);
  return MI_OK;
}

int32_t mi__si_unsqueeze(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t axes[MI_MAX_RANK], d[MI_MAX_RANK];
  int64_t na = get_axes(c, n, c->g->opset >= 13, axes);
  if (na == -2) return mi__si_fail(c, n, MI_ERR_PARSE, "axes missing");
  if (x->rank < 0 || na < 0) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    pass_value(c, n);
    return MI_OK;
  }
  int32_t r = x->rank + (int32_t)na;
  if (r > MI_MAX_RANK) return mi__si_fail(c, n, MI_ERR_PARSE, "result rank %d too large", (int)r);
  int ins[MI_MAX_RANK] = {0};
  for (int64_t i = 0; i < na; i++) {
    int32_t a;
    if ((rc = mi__si_axis(c, n, axes[i], r, &a))) return rc;
    if (ins[a]++) return mi__si_fail(c, n, MI_ERR_PARSE, "axis %d repeated", (int)a);
  }
  for (int32_t i = 0, k = 0; i < r; i++) d[i] = ins[i] ? 1 : x->dims[k++];
  mi__si_set(c, n, 0, x->dtype, r, d);
  pass_value(c, n);
  return MI_OK;
}

int32_t mi__si_concat(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x0 = mi__si_in(c, n, 0);
  const mi_attr_t *ax = mi_node_attr(n, "axis");
  if (!ax || ax->type != MI_ATTR_INT) return mi__si_fail(c, n, MI_ERR_PARSE, "axis missing");
  int64_t d[MI_MAX_RANK];
  int32_t r = -1, a = 0;
  for (int32_t k = 0; k < n->input_count; k++) {
    const mi_tensor_t *t = mi__si_in(c, n, k);
    if (!t) continue;
    if (t->rank < 0) {
      mi__si_set(c, n, 0, x0->dtype, -1, NULL);
      return MI_OK;
    }
    if (r < 0) {
      r = t->rank;
      if ((rc = mi__si_axis(c, n, ax->i, r, &a))) return rc;
      memcpy(d, t->dims, sizeof(int64_t) * (size_t)r);
      continue;
    }
    if (t->rank != r) return mi__si_fail(c, n, MI_ERR_PARSE, "inputs have ranks %d and %d", (int)r, (int)t->rank);
    for (int32_t i = 0; i < r; i++) {
      if (i == a) d[i] = d[i] < 0 || t->dims[i] < 0 ? MI_DIM_DYNAMIC : d[i] + t->dims[i];
      else if (d[i] >= 0 && t->dims[i] >= 0 && d[i] != t->dims[i])
        return mi__si_fail(c, n, MI_ERR_PARSE, "input %d has size %lld on axis %d, expected %lld",
                           (int)k, (long long)t->dims[i], (int)i, (long long)d[i]);
      else if (d[i] < 0)
        d[i] = t->dims[i];
    }
  }
  mi__si_set(c, n, 0, x0->dtype, r, d);
  if (r != 1) return MI_OK;
  double vals[MI__SI_MAX_VALUES];
  int64_t total = 0;
  for (int32_t k = 0; k < n->input_count; k++) {
    int64_t cnt = 0;
    const double *v = mi__si_val(c, n, k, &cnt);
    if (!mi__si_in(c, n, k)) continue;
    if (!v || total + cnt > MI__SI_MAX_VALUES) return MI_OK;
    memcpy(vals + total, v, sizeof(double) * (size_t)cnt);
    total += cnt;
  }
  mi__si_set_val(c, n, 0, vals, total);
  return MI_OK;
}

int32_t mi__si_shape(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  if (x->rank < 0) {
    int64_t d = MI_DIM_DYNAMIC;
    mi__si_set(c, n, 0, MI_DTYPE_INT64, 1, &d);
    return MI_OK;
  }
  int64_t start, len = mi__shape_op_range(n, x->rank, c->g->opset >= 15, &start);
  double v[MI_MAX_RANK];
  for (int64_t i = 0; i < len; i++) v[i] = x->dims[start + i] < 0 ? NAN : (double)x->dims[start + i];
  mi__si_set(c, n, 0, MI_DTYPE_INT64, 1, &len);
  mi__si_set_val(c, n, 0, v, len);
  return MI_OK;
}

int32_t mi__si_gather(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *idx;
  int32_t rc = mi__si_open2(c, n, 2, 1, &x, &idx);
  if (rc) return rc;
  int32_t a, r = 0;
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", 0), x->rank, &a))) return rc;
  if (x->rank - 1 + idx->rank > MI_MAX_RANK) return mi__si_fail(c, n, MI_ERR_PARSE, "result rank too large");
  int64_t d[MI_MAX_RANK];
  for (int32_t i = 0; i < a; i++) d[r++] = x->dims[i];
  for (int32_t i = 0; i < idx->rank; i++) d[r++] = idx->dims[i];
  for (int32_t i = a + 1; i < x->rank; i++) d[r++] = x->dims[i];
  mi__si_set(c, n, 0, x->dtype, r, d);
  /* Values: the 1-D case shape arithmetic uses (Shape -> Gather). */
  int64_t nx = 0, ni = 0;
  const double *xv = mi__si_val(c, n, 0, &nx), *iv = mi__si_val(c, n, 1, &ni);
  if (!xv || !iv || x->rank != 1 || ni > MI__SI_MAX_VALUES) return MI_OK;
  double out[MI__SI_MAX_VALUES];
  for (int64_t i = 0; i < ni; i++) {
    if (isnan(iv[i])) return MI_OK;
    int64_t k = mi__si_d2i(iv[i]);
    if (k < 0) k += nx;
    if (k < 0 || k >= nx)
      return mi__si_fail(c, n, MI_ERR_PARSE, "index %lld out of range for %lld values",
                         (long long)mi__si_d2i(iv[i]), (long long)nx);
    out[i] = xv[k];
  }
  mi__si_set_val(c, n, 0, out, ni);
  return MI_OK;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi
                                                                                      : v; }

int32_t mi__si_slice(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, c->g->opset >= 10 ? 3 : 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t st[MI_MAX_RANK], en[MI_MAX_RANK], ax[MI_MAX_RANK], sp[MI_MAX_RANK], d[MI_MAX_RANK];
  int64_t ns, ne, na, nsp = -2;
  if (c->g->opset < 10) {
    const mi_attr_t *s = mi_node_attr(n, "starts"), *e = mi_node_attr(n, "ends"), *a = mi_node_attr(n, "axes");
    if (!s || !e || s->type != MI_ATTR_INTS || e->type != MI_ATTR_INTS || s->count > MI_MAX_RANK || e->count > MI_MAX_RANK)
      return mi__si_fail(c, n, MI_ERR_PARSE, "starts/ends attributes missing");
    ns = s->count;
    ne = e->count;
    memcpy(st, s->ints, sizeof(int64_t) * (size_t)ns);
    memcpy(en, e->ints, sizeof(int64_t) * (size_t)ne);
    na = a && a->type == MI_ATTR_INTS && a->count <= MI_MAX_RANK ? a->count : -2;
    if (na >= 0) memcpy(ax, a->ints, sizeof(int64_t) * (size_t)na);
  } else {
    ns = mi__si_ints(c, n, 1, st, MI_MAX_RANK);
    ne = mi__si_ints(c, n, 2, en, MI_MAX_RANK);
    na = mi__si_in(c, n, 3) ? mi__si_ints(c, n, 3, ax, MI_MAX_RANK) : -2;
    nsp = mi__si_in(c, n, 4) ? mi__si_ints(c, n, 4, sp, MI_MAX_RANK) : -2;
  }
  if (x->rank < 0 || ns < 0 || ne < 0 || na == -1 || nsp == -1) {
    for (int32_t i = 0; i < x->rank; i++) d[i] = MI_DIM_DYNAMIC;
    mi__si_set(c, n, 0, x->dtype, x->rank, d);
    return MI_OK;
  }
  if (ns != ne || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
    return mi__si_fail(c, n, MI_ERR_PARSE, "starts, ends, axes and steps differ in length");
  memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
  int64_t lo[MI_MAX_RANK] = {0}, step1[MI_MAX_RANK];
  for (int32_t i = 0; i < x->rank; i++) step1[i] = 1;
  for (int64_t i = 0; i < ns; i++) {
    int32_t a = (int32_t)i;
    if (na >= 0 && (rc = mi__si_axis(c, n, ax[i], x->rank, &a))) return rc;
    int64_t step = nsp >= 0 ? sp[i] : 1, dim = x->dims[a];
    if (step == 0) return mi__si_fail(c, n, MI_ERR_PARSE, "step 0");
    if (dim < 0) continue;
    int64_t s = st[i] < 0 ? (st[i] < -dim ? 0 : st[i] + dim) : st[i];
    int64_t e = en[i] < 0 ? (en[i] < -dim ? -1 : en[i] + dim) : en[i];
    if (step > 0) {
      s = clamp(s, 0, dim);
      e = clamp(e, 0, dim);
      d[a] = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = clamp(s, 0, dim - 1);
      e = clamp(e, -1, dim - 1);
      d[a] = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    lo[a] = s;
    step1[a] = step;
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  int64_t cnt = 0;
  const double *v = mi__si_val(c, n, 0, &cnt);
  if (v && x->rank == 1 && d[0] >= 0) {
    double out[MI__SI_MAX_VALUES];
    for (int64_t i = 0; i < d[0]; i++) out[i] = v[lo[0] + i * step1[0]];
    mi__si_set_val(c, n, 0, out, d[0]);
  }
  return MI_OK;
}
