/* ref_rearrange.c - reference ops that move or mask elements without arithmetic on them:
 * Split, Trilu, DepthToSpace, SpaceToDepth; and CumSum, which runs along one axis. */
#include <string.h>

#include "ref/ref_ops.h"

/* The part sizes of Split: the `split` attribute before opset 13, input 1 from 13; without
 * them, num_outputs (opset 18: ceil-sized parts, the last one smaller) or equal parts. */
static int32_t split_sizes(mi__ref_call_t *c, int64_t dim, int64_t *sz) {
  int32_t rc, ns = -1, nout = c->nout;
  const mi_array_t *s = c->opset >= 13 ? mi__ref_in(c, 1) : NULL;
  if (s) {
    if ((rc = mi__ref_read_ints(c, s, "split", sz, nout, &ns)) != MI_OK) return rc;
  } else if (c->opset < 13 && (rc = mi__ref_attr_ints(c, "split", sz, nout, &ns)) != MI_OK) {
    return rc;
  }
  if (ns >= 0) {
    int64_t sum = 0;
    if (ns != nout)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "split has %d sizes for %d outputs",
                          (int)ns, (int)nout);
    for (int32_t i = 0; i < ns; i++) {
      if (sz[i] < 0)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "split size %lld is negative",
                            (long long)sz[i]);
      if (__builtin_add_overflow(sum, sz[i], &sum))
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "split sizes overflow");
    }
    if (sum != dim)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "split sizes add up to %lld, axis has %lld",
                          (long long)sum, (long long)dim);
    return MI_OK;
  }
  int64_t parts = c->opset >= 18 ? mi_node_attr_int(c->node, "num_outputs", nout) : nout;
  if (parts != nout || nout < 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "num_outputs is %lld, the node has %d outputs",
                        (long long)parts, (int)nout);
  int64_t chunk = c->opset >= 18 ? (dim + nout - 1) / nout : dim / nout;
  if ((c->opset < 18 && dim % nout) || chunk * (nout - 1) > dim)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "an axis of %lld cannot be split in %d parts",
                        (long long)dim, (int)nout);
  for (int32_t i = 0; i < nout; i++) sz[i] = i < nout - 1 ? chunk : dim - chunk * (nout - 1);
  return MI_OK;
}

int32_t mi__ref_split(mi__ref_call_t *c) {
  const mi_array_t *x;
  int32_t rc, axis;
  int64_t sz[64], dims[MI_MAX_RANK], outer = 1, inner = 1, start = 0;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (c->nout > 64) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "more than 64 outputs");
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 0), x->rank, &axis)) != MI_OK)
    return rc;
  if ((rc = split_sizes(c, x->dims[axis], sz)) != MI_OK) return rc;
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  size_t es = mi_dtype_size(x->dtype), row = (size_t)(x->dims[axis] * inner) * es;
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int32_t k = 0; k < c->nout; k++) {
    mi_array_t *y;
    dims[axis] = sz[k];
    if (mi__ref_out_wanted(c, k)) {
      if ((rc = mi__ref_make_out(c, k, x->dtype, x->rank, dims, &y)) != MI_OK) return rc;
      size_t part = (size_t)(sz[k] * inner) * es;
      for (int64_t o = 0; o < outer && part; o++)
        memcpy((char *)y->data + (size_t)o * part,
               (const char *)x->data + (size_t)o * row + (size_t)(start * inner) * es, part);
    }
    start += sz[k];
  }
  return MI_OK;
}

int32_t mi__ref_trilu(mi__ref_call_t *c) {
  const mi_array_t *x, *ka = mi__ref_in(c, 1);
  mi_array_t *y;
  int32_t rc, nk = 0;
  int64_t k = 0;
  int upper = mi_node_attr_int(c->node, "upper", 1) != 0;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (x->rank < 2) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input rank %d < 2", (int)x->rank);
  if (ka) {
    if ((rc = mi__ref_read_ints(c, ka, "k", &k, 1, &nk)) != MI_OK) return rc;
    if (nk != 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "k must hold one value");
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1], n = mi_array_numel(x);
  size_t es = mi_dtype_size(x->dtype);
  /* Element (i, j) of each matrix is kept when j - i >= k (upper) or j - i <= k (lower);
   * the rest stays zero. */
  for (int64_t e = 0; e < n; e++) {
    int64_t j = e % cols, i = (e / cols) % rows;
    if (upper ? j - i >= k : j - i <= k)
      memcpy((char *)y->data + (size_t)e * es, (const char *)x->data + (size_t)e * es, es);
  }
  return MI_OK;
}

/* DepthToSpace and SpaceToDepth: the same index map read in two directions. With b the block,
 * C' = C / b^2, channel (i, j, c') of depth is pixel (h*b+i, w*b+j) of channel c' of space:
 * channel index (i*b + j)*C' + c' in DCR order, c'*b*b + i*b + j in CRD order. */
int32_t mi__ref_depth_space(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  int to_space = strcmp(c->node->op_type, "DepthToSpace") == 0;
  int64_t b = mi_node_attr_int(c->node, "blocksize", 0), dims[4];
  const char *mode = to_space ? mi_node_attr_string(c->node, "mode", "DCR") : "DCR";
  int crd = strcmp(mode, "CRD") == 0;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if (x->rank != 4) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input must be 4-D NCHW");
  /* A bound keeps b*b and the products below far from overflow; real blocks are 2..8. */
  if (b < 1 || b > 65535)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "blocksize %lld is outside [1, 65535]",
                        (long long)b);
  if (!crd && strcmp(mode, "DCR") != 0)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "mode '%s' (DCR or CRD)", mode);
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (to_space ? C % (b * b) : (H % b || W % b))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "shape [%lld,%lld,%lld,%lld] does not divide "
                        "by blocksize %lld",
                        (long long)N, (long long)C, (long long)H,
                        (long long)W, (long long)b);
  /* Geometry of the space side: Cs channels of Hs x Ws. */
  int64_t Cs = to_space ? C / (b * b) : C, Hs = to_space ? H * b : H, Ws = to_space ? W * b : W;
  dims[0] = N;
  dims[1] = to_space ? Cs : C * b * b;
  dims[2] = to_space ? Hs : H / b;
  dims[3] = to_space ? Ws : W / b;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, 4, dims, &y)) != MI_OK) return rc;
  size_t es = mi_dtype_size(x->dtype);
  int64_t Hd = Hs / b, Wd = Ws / b, Cd = Cs * b * b;
  for (int64_t n = 0; n < N; n++)
    for (int64_t cs = 0; cs < Cs; cs++)
      for (int64_t hs = 0; hs < Hs; hs++)
        for (int64_t ws = 0; ws < Ws; ws++) {
          int64_t i = hs % b, j = ws % b;
          int64_t cd = crd ? cs * b * b + i * b + j : (i * b + j) * Cs + cs;
          int64_t space = ((n * Cs + cs) * Hs + hs) * Ws + ws;
          int64_t depth = ((n * Cd + cd) * Hd + hs / b) * Wd + ws / b;
          int64_t from = to_space ? depth : space, to = to_space ? space : depth;
          memcpy((char *)y->data + (size_t)to * es, (const char *)x->data + (size_t)from * es, es);
        }
  return MI_OK;
}

int32_t mi__ref_cumsum(mi__ref_call_t *c) {
  const mi_array_t *x, *ax;
  mi_array_t *y;
  int32_t rc, axis, na = 0;
  int64_t av, outer = 1, inner = 1;
  int exclusive = mi_node_attr_int(c->node, "exclusive", 0) != 0;
  int reverse = mi_node_attr_int(c->node, "reverse", 0) != 0;
  /* ONNX's CumSum integers: INT32, INT64, UINT32, UINT64; sums wrap, as ONNX Runtime's do. */
  uint32_t mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | MI_DTYPE_BIT(MI_DTYPE_INT64) |
                  MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_UINT32) |
                  MI_DTYPE_BIT(MI_DTYPE_UINT64);
  if ((rc = mi__ref_need(c, 0, mask, &x)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 1, 0, &ax)) != MI_OK) return rc;
  if ((rc = mi__ref_read_ints(c, ax, "axis", &av, 1, &na)) != MI_OK) return rc;
  if (na != 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis must hold one value");
  if ((rc = mi__ref_axis(c, av, x->rank, &axis)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t len = x->dims[axis];
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double sf = 0;
      int64_t si = 0;
      for (int64_t s = 0; s < len; s++) {
        int64_t k = reverse ? len - 1 - s : s, e = (o * len + k) * inner + i;
        /* exclusive: each output is the sum of the elements before it, not including it. */
        if (x->dtype == MI_DTYPE_FLOAT32) {
          double v = ((const float *)x->data)[e];
          if (!exclusive) sf += v;
          ((float *)y->data)[e] = (float)sf;
          if (exclusive) sf += v;
        } else {
          int64_t v = mi__int_load(x->data, x->dtype, e);
          if (!exclusive) si = (int64_t)((uint64_t)si + (uint64_t)v); /* wraps, no UB */
          mi__int_store(y->data, x->dtype, e, si);                    /* keeps the type's low bits */
          if (exclusive) si = (int64_t)((uint64_t)si + (uint64_t)v);
        }
      }
    }
  return MI_OK;
}
