/* ref_select.c - reference ops that pick elements by value: ArgMax/ArgMin, TopK, NonZero. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref_ops.h"

#define INTS                                                                                      \
  (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) | MI_DTYPE_BIT(MI_DTYPE_INT16) |    \
   MI_DTYPE_BIT(MI_DTYPE_UINT16) | MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_UINT32) | \
   MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_UINT64))
#define NUMERIC (MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | INTS)

static double elem(const mi_array_t *x, int64_t i) {
  if (x->dtype == MI_DTYPE_FLOAT32) return ((const float *)x->data)[i];
  return mi__int_load_f64(x->data, x->dtype, i); /* integers, bool */
}

/* Integer element i as a key whose unsigned order is the values' order: exact where a double
 * is not (INT64 and UINT64 beyond 2^53). */
static uint64_t int_key(const mi_array_t *x, int64_t i) {
  uint64_t v = (uint64_t)mi__int_load(x->data, x->dtype, i);
  return mi__dtype_is_unsigned(x->dtype) ? v : v ^ ((uint64_t)1 << 63);
}

/* The input seen as [outer, axis, inner] around one axis. */
static void split_around(const mi_array_t *x, int32_t axis, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int32_t d = 0; d < axis; d++) *outer *= x->dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) *inner *= x->dims[d];
}

int32_t mi__ref_argminmax(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc, axis, rank = 0;
  int is_max = strcmp(c->node->op_type, "ArgMax") == 0;
  int keep = mi_node_attr_int(c->node, "keepdims", 1) != 0;
  int last = c->opset >= 12 && mi_node_attr_int(c->node, "select_last_index", 0) != 0;
  int64_t dims[MI_MAX_RANK], outer, inner;
  if ((rc = mi__ref_need(c, 0, NUMERIC, &x)) != MI_OK) return rc;
  int is_int = x->dtype != MI_DTYPE_FLOAT32;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x->rank, &axis)) != MI_OK)
    return rc;
  int64_t len = x->dims[axis];
  if (len == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %d is empty", (int)axis);
  for (int32_t d = 0; d < x->rank; d++)
    if (d != axis || keep) dims[rank++] = d == axis ? 1 : x->dims[d];
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_INT64, rank, dims, &y)) != MI_OK) return rc;
  split_around(x, axis, &outer, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t best = 0, base = o * len * inner + i;
      double bv = is_int ? 0 : elem(x, base);
      uint64_t bk = is_int ? int_key(x, base) : 0;
      for (int64_t k = 1; k < len; k++) {
        int64_t e = base + k * inner;
        double v = is_int ? 0 : elem(x, e);
        uint64_t vk = is_int ? int_key(x, e) : 0;
        int gt = is_int ? vk > bk : v > bv, lt = is_int ? vk < bk : v < bv;
        int eq = is_int ? vk == bk : v == bv;
        /* Ties keep the first index, or move to the later one with select_last_index. */
        if (is_max ? (gt || (last && eq)) : (lt || (last && eq))) {
          bv = v;
          bk = vk;
          best = k;
        }
      }
      ((int64_t *)y->data)[o * inner + i] = best;
    }
  return MI_OK;
}

typedef struct {
  double v;
  uint64_t key; /* integers: int_key; floats: 0 */
  int64_t i;
} pick_t;

/* Order for TopK: by value (NaN above everything), equal values by lower index first. */
static int cmp_largest(const void *pa, const void *pb) {
  const pick_t *a = pa, *b = pb;
  int an = isnan(a->v), bn = isnan(b->v);
  if (an != bn) return an ? -1 : 1;
  if (!an && a->v != b->v) return a->v > b->v ? -1 : 1;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}
static int cmp_smallest(const void *pa, const void *pb) {
  const pick_t *a = pa, *b = pb;
  int an = isnan(a->v), bn = isnan(b->v);
  if (an != bn) return an ? 1 : -1;
  if (!an && a->v != b->v) return a->v < b->v ? -1 : 1;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}
static int cmp_index(const void *pa, const void *pb) {
  const pick_t *a = pa, *b = pb;
  return a->i < b->i ? -1 : a->i > b->i;
}

int32_t mi__ref_topk(mi__ref_call_t *c) {
  const mi_array_t *x, *ka;
  mi_array_t *vals = NULL, *idxs = NULL;
  int32_t rc, axis, nk = 0;
  int64_t k, kv[1], dims[MI_MAX_RANK], outer, inner;
  int largest = c->opset < 11 || mi_node_attr_int(c->node, "largest", 1) != 0;
  int sorted = c->opset < 11 || mi_node_attr_int(c->node, "sorted", 1) != 0;
  /* TopK takes every numeric type from opset 11 (INT32 and INT64 were always taken here). */
  uint32_t mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | MI_DTYPE_BIT(MI_DTYPE_INT32) |
                  MI_DTYPE_BIT(MI_DTYPE_INT64);
  if ((rc = mi__ref_need(c, 0, c->opset >= 11 ? NUMERIC : mask, &x)) != MI_OK) return rc;
  if (c->opset >= 10) {
    if ((rc = mi__ref_need(c, 1, 0, &ka)) != MI_OK) return rc;
    if ((rc = mi__ref_read_ints(c, ka, "k", kv, 1, &nk)) != MI_OK) return rc;
    if (nk != 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "k must hold one value");
    k = kv[0];
  } else {
    k = mi_node_attr_int(c->node, "k", -1);
  }
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -1), x->rank, &axis)) != MI_OK)
    return rc;
  int64_t len = x->dims[axis];
  if (k < 0 || k > len)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "k = %lld is outside [0, %lld] for axis %d",
                        (long long)k, (long long)len, (int)axis);
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[axis] = k;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, dims, &vals)) != MI_OK) return rc;
  if (c->nout > 1 && (rc = mi__ref_make_out(c, 1, MI_DTYPE_INT64, x->rank, dims, &idxs)) != MI_OK)
    return rc;
  pick_t *row = malloc((size_t)(len ? len : 1) * sizeof *row);
  if (!row) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  size_t es = mi_dtype_size(x->dtype);
  split_around(x, axis, &outer, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * len * inner + i, obase = o * k * inner + i;
      for (int64_t j = 0; j < len; j++) {
        int64_t e = base + j * inner;
        row[j] = x->dtype == MI_DTYPE_FLOAT32 ? (pick_t){elem(x, e), 0, j} : (pick_t){0, int_key(x, e), j};
      }
      qsort(row, (size_t)len, sizeof *row, largest ? cmp_largest : cmp_smallest);
      /* sorted = 0 leaves the order open; we give the picks in input order. */
      if (!sorted) qsort(row, (size_t)k, sizeof *row, cmp_index);
      for (int64_t j = 0; j < k; j++) {
        memcpy((char *)vals->data + (size_t)(obase + j * inner) * es,
               (const char *)x->data + (size_t)(base + row[j].i * inner) * es, es);
        if (idxs) ((int64_t *)idxs->data)[obase + j * inner] = row[j].i;
      }
    }
  free(row);
  return MI_OK;
}

int32_t mi__ref_nonzero(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, NUMERIC | MI_DTYPE_BIT(MI_DTYPE_BOOL), &x)) != MI_OK)
    return rc;
  int64_t n = mi_array_numel(x), nnz = 0, idx[MI_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) nnz += elem(x, i) != 0;
  int64_t dims[2] = {x->rank, nnz};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_INT64, 2, dims, &y)) != MI_OK) return rc;
  /* Column j holds the coordinates of the j-th non-zero in row-major order. */
  for (int64_t i = 0, j = 0; i < n; i++) {
    if (elem(x, i) != 0) {
      for (int32_t d = 0; d < x->rank; d++) ((int64_t *)y->data)[d * nnz + j] = idx[d];
      j++;
    }
    for (int32_t d = x->rank - 1; d >= 0; d--) {
      if (++idx[d] < x->dims[d]) break;
      idx[d] = 0;
    }
  }
  return MI_OK;
}
