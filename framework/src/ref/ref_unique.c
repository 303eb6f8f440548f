/* ref_unique.c - reference Unique (opset 11): the distinct elements of the flattened input, or
 * the distinct slices along `axis`, ascending (`sorted` 1, the default) or in the order of their
 * first occurrence, with the optional indices (first occurrence), inverse_indices and counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref_ops.h"

/* S slices of L elements each; element e of slice s is at (e / inner) * (S * inner) + s * inner +
 * e % inner (the flattened form: S = numel, L = inner = 1). */
typedef struct uq {
  const mi_array_t *x;
  int64_t S, L, inner;
} uq_t;

static int cmp_elem(const mi_array_t *x, int64_t a, int64_t b) {
  switch (x->dtype) {
  case MI_DTYPE_FLOAT32: {
    float p = ((const float *)x->data)[a], q = ((const float *)x->data)[b];
    if (p != p || q != q) return (q != q) - (p != p); /* NaN after every number, NaNs equal */
    return (p > q) - (p < q);
  }
  default: { /* the integer types and bool (Unique's mask), unsigned ones as unsigned */
    int64_t p = mi__int_load(x->data, x->dtype, a), q = mi__int_load(x->data, x->dtype, b);
    if (mi__dtype_is_unsigned(x->dtype)) return ((uint64_t)p > (uint64_t)q) - ((uint64_t)p < (uint64_t)q);
    return (p > q) - (p < q);
  }
  }
}

/* Lexicographic order of slices s and t. */
static int cmp_slice(const uq_t *u, int64_t s, int64_t t) {
  for (int64_t e = 0; e < u->L; e++) {
    int64_t base = (e / u->inner) * u->S * u->inner + e % u->inner;
    int c = cmp_elem(u->x, base + s * u->inner, base + t * u->inner);
    if (c) return c;
  }
  return 0;
}

/* Stable merge sort of v[0..n) by the slices they name (key NULL) or by key[v[i]]. */
static void sort_by(const uq_t *u, const int64_t *key, int64_t *v, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        int c = key ? (key[v[j]] < key[v[i]] ? -1 : 0) : cmp_slice(u, v[j], v[i]);
        tmp[k++] = c < 0 ? v[j++] : v[i++];
      }
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
  }
}

int32_t mi__ref_unique(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y = NULL, *o[3] = {NULL, NULL, NULL};
  int32_t rc, ax = -1;
  int sorted = mi_node_attr_int(c->node, "sorted", 1) != 0;
  const mi_attr_t *axis = mi_node_attr(c->node, "axis");
  /* float32, bool and the eight integer types (cmp_elem compares nothing else) */
  const uint32_t mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | MI_DTYPE_BIT(MI_DTYPE_BOOL) |
                        MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) |
                        MI_DTYPE_BIT(MI_DTYPE_INT16) | MI_DTYPE_BIT(MI_DTYPE_UINT16) |
                        MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_UINT32) |
                        MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_UINT64);
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, mask, &x)) != MI_OK) return rc;
  if (x->dtype == MI_DTYPE_INT4 || x->dtype == MI_DTYPE_FLOAT16 || x->dtype == MI_DTYPE_UNDEFINED)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "input type %s is not supported", mi_dtype_name(x->dtype));
  uq_t u = {x, mi_array_numel(x), 1, 1};
  if (axis) {
    if ((rc = mi__ref_axis(c, axis->i, x->rank, &ax)) != MI_OK) return rc;
    u.S = x->dims[ax];
    u.L = u.S ? mi_array_numel(x) / u.S : 0;
    for (int32_t d = ax + 1; d < x->rank; d++) u.inner *= x->dims[d];
  }
  int64_t *ord = malloc((size_t)(3 * u.S + 1) * sizeof *ord), *tmp = ord + u.S, *grp = tmp + u.S;
  if (!ord) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t s = 0; s < u.S; s++) ord[s] = s;
  sort_by(&u, NULL, ord, tmp, u.S);
  /* groups of equal slices in sorted order; first[g] is the group's first occurrence */
  int64_t U = 0, *first = tmp;
  for (int64_t i = 0; i < u.S; i++) {
    if (i == 0 || cmp_slice(&u, ord[i - 1], ord[i])) first[U++] = ord[i];
    grp[ord[i]] = U - 1;
  }
  int64_t *rank = malloc((size_t)(2 * U + 1) * sizeof *rank), *pos = rank + U; /* group -> output position */
  if (!rank) {
    free(ord);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int64_t g = 0; g < U; g++) pos[g] = g;
  if (!sorted) { /* output positions by first occurrence */
    int64_t *t2 = malloc((size_t)(U + 1) * sizeof *t2);
    if (!t2) {
      free(ord), free(rank);
      return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    }
    sort_by(&u, first, pos, t2, U);
    free(t2);
  }
  for (int64_t k = 0; k < U; k++) rank[pos[k]] = k; /* pos[k]: the group at output k */
  int64_t dims[MI_MAX_RANK], d1[1] = {U}, dS[1] = {u.S};
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  if (ax >= 0) dims[ax] = U;
  rc = mi__ref_make_out(c, 0, x->dtype, ax >= 0 ? x->rank : 1, ax >= 0 ? dims : d1, &y);
  if (rc == MI_OK && mi__ref_out_wanted(c, 1)) rc = mi__ref_make_out(c, 1, MI_DTYPE_INT64, 1, d1, &o[0]);
  if (rc == MI_OK && mi__ref_out_wanted(c, 2)) rc = mi__ref_make_out(c, 2, MI_DTYPE_INT64, 1, dS, &o[1]);
  if (rc == MI_OK && mi__ref_out_wanted(c, 3)) rc = mi__ref_make_out(c, 3, MI_DTYPE_INT64, 1, d1, &o[2]);
  if (rc == MI_OK) {
    size_t es = mi_dtype_size(x->dtype);
    for (int64_t k = 0; k < U; k++) {
      int64_t s = first[pos[k]];
      for (int64_t e = 0; e < u.L; e++) {
        int64_t base = (e / u.inner) * u.inner, in = e % u.inner;
        memcpy((uint8_t *)y->data + (size_t)(base * U + k * u.inner + in) * es,
               (const uint8_t *)x->data + (size_t)(base * u.S + s * u.inner + in) * es, es);
      }
      if (o[0]) ((int64_t *)o[0]->data)[k] = s;
    }
    for (int64_t s = 0; s < u.S; s++) {
      if (o[1]) ((int64_t *)o[1]->data)[s] = rank[grp[s]];
      if (o[2]) ((int64_t *)o[2]->data)[rank[grp[s]]]++;
    }
  }
  free(ord);
  free(rank);
  return rc;
}
