/* ref_layout.c - reference data movement: Transpose, Concat, Slice and Gather (any dtype). */
#include <string.h>

#include "ref/ref_ops.h"

static void copy_elem(char *dst, const char *src, size_t es) {
  switch (es) {
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  default: memcpy(dst, src, es); break;
  }
}

/* Copies a strided view of x into y: y[idx] = x[base + sum(idx[d] * step[d])], offsets in
 * elements. Shared by Transpose (permuted strides) and Slice (stepped strides). */
static void strided_copy(const mi_array_t *x, mi_array_t *y, int64_t base, const int64_t *step) {
  size_t es = mi_dtype_size(x->dtype);
  int64_t n = mi_array_numel(y), idx[MI_MAX_RANK] = {0}, off = base;
  for (int64_t i = 0; i < n; i++) {
    copy_elem((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
    mi__ref_index_next(y->rank, y->dims, step, idx, &off);
  }
}

int32_t mi__ref_transpose(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t perm[MI_MAX_RANK], dims[MI_MAX_RANK], st[MI_MAX_RANK], step[MI_MAX_RANK];
  int32_t np, rc;
  int seen[MI_MAX_RANK] = {0};
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if ((rc = mi__ref_attr_ints(c, "perm", perm, MI_MAX_RANK, &np)) != MI_OK) return rc;
  if (np < 0) { /* default: reverse the dims */
    np = x->rank;
    for (int32_t d = 0; d < np; d++) perm[d] = np - 1 - d;
  }
  if (np != x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "perm has %d values for rank %d", (int)np,
                        (int)x->rank);
  for (int32_t d = 0; d < np; d++) {
    if (perm[d] < 0 || perm[d] >= np || seen[perm[d]])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "perm is not a permutation");
    seen[perm[d]] = 1;
  }
  mi__ref_strides(x->rank, x->dims, st);
  for (int32_t d = 0; d < np; d++) {
    dims[d] = x->dims[perm[d]];
    step[d] = st[perm[d]];
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, dims, &y)) != MI_OK) return rc;
  strided_copy(x, y, 0, step);
  return MI_OK;
}

int32_t mi__ref_concat(mi__ref_call_t *c) {
  const mi_array_t *first, *a;
  mi_array_t *y;
  int64_t dims[MI_MAX_RANK];
  int32_t axis, rc;
  if ((rc = mi__ref_need(c, 0, 0, &first)) != MI_OK) return rc;
  if (!mi_node_attr(c->node, "axis"))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute 'axis' is missing");
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), first->rank, &axis)) != MI_OK)
    return rc;
  memcpy(dims, first->dims, sizeof dims);
  dims[axis] = 0;
  for (int32_t k = 0; k < c->nin; k++) {
    if ((rc = mi__ref_need(c, k, 0, &a)) != MI_OK) return rc;
    if (a->dtype != first->dtype || a->rank != first->rank)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d is %s rank %d, input 0 is %s rank %d",
                          (int)k, mi_dtype_name(a->dtype), (int)a->rank,
                          mi_dtype_name(first->dtype), (int)first->rank);
    for (int32_t d = 0; d < a->rank; d++)
      if (d != axis && a->dims[d] != first->dims[d])
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "input %d has dimension %d = %lld, input 0 has %lld", (int)k, (int)d,
                            (long long)a->dims[d], (long long)first->dims[d]);
    dims[axis] += a->dims[axis];
  }
  if ((rc = mi__ref_make_out(c, 0, first->dtype, first->rank, dims, &y)) != MI_OK) return rc;
  /* Each outer slice of the output is the inputs' slices one after another. */
  size_t es = mi_dtype_size(first->dtype);
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < axis; d++) outer *= dims[d];
  for (int32_t d = axis + 1; d < first->rank; d++) inner *= dims[d];
  char *dst = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int32_t k = 0; k < c->nin; k++) {
      size_t chunk = (size_t)(c->in[k]->dims[axis] * inner) * es;
      if (chunk) memcpy(dst, (const char *)c->in[k]->data + (size_t)o * chunk, chunk);
      dst += chunk;
    }
  return MI_OK;
}

/* Reads Slice's starts/ends/axes/steps from attributes (opset < 10) or inputs. */
static int32_t slice_params(mi__ref_call_t *c, int64_t *starts, int64_t *ends, int64_t *axes,
                            int64_t *steps, int32_t *n) {
  int32_t ne, na = -1, ns = -1, rc;
  const mi_array_t *a;
  if (c->opset < 10) {
    if ((rc = mi__ref_attr_ints(c, "starts", starts, MI_MAX_RANK, n)) != MI_OK ||
        (rc = mi__ref_attr_ints(c, "ends", ends, MI_MAX_RANK, &ne)) != MI_OK ||
        (rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &na)) != MI_OK)
      return rc;
    if (*n < 0 || ne < 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attributes starts and ends are required");
  } else {
    if ((rc = mi__ref_need(c, 1, 0, &a)) != MI_OK ||
        (rc = mi__ref_read_ints(c, a, "starts", starts, MI_MAX_RANK, n)) != MI_OK ||
        (rc = mi__ref_need(c, 2, 0, &a)) != MI_OK ||
        (rc = mi__ref_read_ints(c, a, "ends", ends, MI_MAX_RANK, &ne)) != MI_OK)
      return rc;
    if ((a = mi__ref_in(c, 3)) && (rc = mi__ref_read_ints(c, a, "axes", axes, MI_MAX_RANK, &na)))
      return rc;
    if ((a = mi__ref_in(c, 4)) && (rc = mi__ref_read_ints(c, a, "steps", steps, MI_MAX_RANK, &ns)))
      return rc;
  }
  if (ne != *n || (na >= 0 && na != *n) || (ns >= 0 && ns != *n))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "starts, ends, axes and steps differ in length");
  for (int32_t i = 0; i < *n; i++) {
    if (na < 0) axes[i] = i;
    if (ns < 0) steps[i] = 1;
  }
  return MI_OK;
}

int32_t mi__ref_slice(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t starts[MI_MAX_RANK], ends[MI_MAX_RANK], axes[MI_MAX_RANK], steps[MI_MAX_RANK];
  int64_t first[MI_MAX_RANK], step[MI_MAX_RANK], dims[MI_MAX_RANK], st[MI_MAX_RANK];
  int32_t n, rc;
  int seen[MI_MAX_RANK] = {0};
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if ((rc = slice_params(c, starts, ends, axes, steps, &n)) != MI_OK) return rc;
  for (int32_t d = 0; d < x->rank; d++) {
    first[d] = 0;
    step[d] = 1;
    dims[d] = x->dims[d];
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t a;
    if ((rc = mi__ref_axis(c, axes[i], x->rank, &a)) != MI_OK) return rc;
    if (seen[a]) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %d repeats", (int)a);
    seen[a] = 1;
    int64_t dim = x->dims[a], s = starts[i], e = ends[i], k = steps[i];
    if (k == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "step 0 on axis %d", (int)a);
    /* Negative indices count from the end; then clamp, differently for negative steps
     * (a backward slice may run down to "before 0", written -1 here). */
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (k > 0) {
      s = s < 0 ? 0 : s > dim ? dim
                              : s;
      e = e < 0 ? 0 : e > dim ? dim
                              : e;
      dims[a] = e > s ? (e - s + k - 1) / k : 0;
    } else {
      s = s < 0 ? 0 : s > dim - 1 ? dim - 1
                                  : s;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1
                                    : e;
      dims[a] = s > e ? (s - e + (-k) - 1) / (-k) : 0;
    }
    first[a] = s;
    step[a] = k;
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, dims, &y)) != MI_OK) return rc;
  if (mi_array_numel(y) == 0) return MI_OK;
  int64_t base = 0, stride[MI_MAX_RANK];
  mi__ref_strides(x->rank, x->dims, st);
  for (int32_t d = 0; d < x->rank; d++) {
    base += first[d] * st[d];
    stride[d] = step[d] * st[d];
  }
  strided_copy(x, y, base, stride);
  return MI_OK;
}

int32_t mi__ref_gather(mi__ref_call_t *c) {
  const mi_array_t *x, *ind;
  mi_array_t *y;
  int64_t dims[MI_MAX_RANK];
  int32_t axis, rc, rank = 0;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32),
                         &ind)) != MI_OK)
    return rc;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x->rank, &axis)) != MI_OK)
    return rc;
  if (x->rank - 1 + ind->rank > MI_MAX_RANK)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "result rank above %d", MI_MAX_RANK);
  /* Output shape: data dims before axis, then the indices' dims, then data dims after axis. */
  for (int32_t d = 0; d < axis; d++) dims[rank++] = x->dims[d];
  for (int32_t d = 0; d < ind->rank; d++) dims[rank++] = ind->dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) dims[rank++] = x->dims[d];
  if ((rc = mi__ref_make_out(c, 0, x->dtype, rank, dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t outer = 1, inner = 1, len = x->dims[axis], ni = mi_array_numel(ind);
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  size_t chunk = (size_t)inner * es;
  char *dst = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < ni; j++) {
      int64_t k = ind->dtype == MI_DTYPE_INT64 ? ((const int64_t *)ind->data)[j]
                                               : ((const int32_t *)ind->data)[j];
      if (k < -len || k >= len)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "index %lld is out of range for axis %d of size %lld", (long long)k,
                            (int)axis, (long long)len);
      if (k < 0) k += len;
      if (chunk) memcpy(dst, (const char *)x->data + (size_t)((o * len + k) * inner) * es, chunk);
      dst += chunk;
    }
  return MI_OK;
}
