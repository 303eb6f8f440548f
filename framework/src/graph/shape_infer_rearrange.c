/* shape_infer_rearrange.c - shapes of Split, Trilu, CumSum, DepthToSpace/SpaceToDepth, and of
 * the element-wise PRelu, Mod, IsNaN, IsInf and InstanceNormalization (Mod and Split also
 * carry known values, as shape arithmetic uses them). */
#include <stdlib.h>
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_to_bool(mi__si_t *c, const mi_node_t *n) {
  return mi__si_shaped_like(c, n, 1, MI_DTYPE_BOOL, NULL);
}

/* PRelu's slope must broadcast to X without changing X's shape. */
int32_t mi__si_prelu(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2), r;
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0), *s = mi__si_in(c, n, 1);
  int64_t d[MI_MAX_RANK];
  if (x->rank >= 0 && s->rank >= 0) {
    if ((rc = mi__si_broadcast(c, n, x->rank, x->dims, s->rank, s->dims, &r, d))) return rc;
    int ok = r == x->rank;
    for (int32_t i = 0; ok && i < r; i++) ok = x->dims[i] < 0 || d[i] == x->dims[i];
    if (!ok) return mi__si_fail(c, n, MI_ERR_PARSE, "slope does not broadcast to the input shape");
  }
  return mi__si_same_shape(c, n);
}

static double mod_value(double a, double b, int fmod_mode) {
  if (isnan(a) || isnan(b) || b == 0) return NAN;
  double r = fmod(a, b);
  if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int32_t mi__si_mod(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *a, *b;
  int32_t rc = mi__si_open2(c, n, 2, 1, &a, &b), r;
  int64_t d[MI_MAX_RANK], na = 0, nb = 0;
  if (rc) return rc;
  if ((rc = mi__si_broadcast(c, n, a->rank, a->dims, b->rank, b->dims, &r, d))) return rc;
  mi__si_set(c, n, 0, a->dtype, r, d);
  /* Values for the shapes of shape arithmetic: equal counts, or one side a single value. */
  const double *va = mi__si_val(c, n, 0, &na), *vb = mi__si_val(c, n, 1, &nb);
  int64_t cnt = na > nb ? na : nb;
  if (!va || !vb || (na != nb && na != 1 && nb != 1) || r > 1 || cnt > MI__SI_MAX_VALUES)
    return MI_OK;
  double *o = malloc((size_t)(cnt ? cnt : 1) * sizeof *o);
  if (!o) return MI_OK;
  int fm = mi_node_attr_int(n, "fmod", 0) != 0;
  for (int64_t i = 0; i < cnt; i++) o[i] = mod_value(va[na == 1 ? 0 : i], vb[nb == 1 ? 0 : i], fm);
  mi__si_set_val(c, n, 0, o, cnt);
  free(o);
  return MI_OK;
}

/* Part sizes of Split as the reference computes them (split attribute/input or equal parts);
 * -1 entries when they are known only at run time. */
static int32_t split_sizes(mi__si_t *c, const mi_node_t *n, int64_t dim, int64_t *sz) {
  int32_t nout = n->output_count;
  int64_t ns = -2;
  if (c->g->opset >= 13 && mi__si_in(c, n, 1)) {
    ns = mi__si_ints(c, n, 1, sz, nout);
    if (ns < 0) { /* split given but unknown (or too long: the run reports it) */
      for (int32_t i = 0; i < nout; i++) sz[i] = MI_DIM_DYNAMIC;
      return MI_OK;
    }
  } else if (c->g->opset < 13) {
    const mi_attr_t *a = mi_node_attr(n, "split");
    if (a && a->type == MI_ATTR_INTS) {
      if (a->count != nout)
        return mi__si_fail(c, n, MI_ERR_PARSE, "split has %d sizes for %d outputs",
                           (int)a->count, (int)nout);
      memcpy(sz, a->ints, sizeof(int64_t) * (size_t)nout);
      ns = nout;
    }
  }
  if (ns >= 0) {
    int64_t sum = 0;
    if (ns != nout)
      return mi__si_fail(c, n, MI_ERR_PARSE, "split has %lld sizes for %d outputs",
                         (long long)ns, (int)nout);
    for (int32_t i = 0; i < nout; i++) {
      if (sz[i] < 0) return mi__si_fail(c, n, MI_ERR_PARSE, "split size %lld is negative", (long long)sz[i]);
      if (__builtin_add_overflow(sum, sz[i], &sum))
        return mi__si_fail(c, n, MI_ERR_PARSE, "split sizes overflow");
    }
    if (dim >= 0 && sum != dim)
      return mi__si_fail(c, n, MI_ERR_PARSE, "split sizes add up to %lld, axis has %lld",
                         (long long)sum, (long long)dim);
    return MI_OK;
  }
  int64_t parts = c->g->opset >= 18 ? mi_node_attr_int(n, "num_outputs", nout) : nout;
  if (parts != nout)
    return mi__si_fail(c, n, MI_ERR_PARSE, "num_outputs is %lld, the node has %d outputs",
                       (long long)parts, (int)nout);
  if (dim < 0) {
    for (int32_t i = 0; i < nout; i++) sz[i] = MI_DIM_DYNAMIC;
    return MI_OK;
  }
  int64_t chunk = c->g->opset >= 18 ? (dim + nout - 1) / nout : dim / nout;
  if ((c->g->opset < 18 && dim % nout) || chunk * (nout - 1) > dim)
    return mi__si_fail(c, n, MI_ERR_PARSE, "an axis of %lld cannot be split in %d parts",
                       (long long)dim, (int)nout);
  for (int32_t i = 0; i < nout; i++) sz[i] = i < nout - 1 ? chunk : dim - chunk * (nout - 1);
  return MI_OK;
}

int32_t mi__si_split(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1), a;
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t sz[64], d[MI_MAX_RANK], cnt = 0, start = 0;
  if (n->output_count > 64) return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "more than 64 outputs");
  if (x->rank < 0) {
    for (int32_t k = 0; k < n->output_count; k++) mi__si_set(c, n, k, x->dtype, -1, NULL);
    return MI_OK;
  }
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", 0), x->rank, &a))) return rc;
  if ((rc = split_sizes(c, n, x->dims[a], sz))) return rc;
  const double *v = mi__si_val(c, n, 0, &cnt);
  memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int32_t k = 0; k < n->output_count; k++) {
    d[a] = sz[k];
    mi__si_set(c, n, k, x->dtype, x->rank, d);
    if (v && x->rank == 1 && sz[k] >= 0 && start + sz[k] <= cnt) {
      mi__si_set_val(c, n, k, v + start, sz[k]);
      start += sz[k];
    } else {
      v = NULL;
    }
  }
  return MI_OK;
}

/* An op whose output has its input's shape, given `need` inputs and an input of rank at least
 * min_rank (when known). */
static int32_t same_shape_min_rank(mi__si_t *c, const mi_node_t *n, int32_t need,
                                   int32_t min_rank) {
  int32_t rc = mi__si_need(c, n, need);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  if (x->rank >= 0 && x->rank < min_rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "input rank %d is below %d", (int)x->rank,
                       (int)min_rank);
  return mi__si_same_shape(c, n);
}

int32_t mi__si_trilu(mi__si_t *c, const mi_node_t *n) {
  return same_shape_min_rank(c, n, 1, 2);
}

int32_t mi__si_cumsum(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2), a;
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t av;
  if (x->rank >= 0 && mi__si_ints(c, n, 1, &av, 1) == 1 &&
      (rc = mi__si_axis(c, n, av, x->rank, &a)))
    return rc;
  return mi__si_same_shape(c, n);
}

int32_t mi__si_depth_space(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int to_space = strcmp(n->op_type, "DepthToSpace") == 0;
  int64_t b = mi_node_attr_int(n, "blocksize", 0), d[4];
  if (b < 1 || b > 65535)
    return mi__si_fail(c, n, MI_ERR_PARSE, "blocksize %lld is outside [1, 65535]", (long long)b);
  if (x->rank < 0) {
    mi__si_set(c, n, 0, x->dtype, -1, NULL);
    return MI_OK;
  }
  if (x->rank != 4) return mi__si_fail(c, n, MI_ERR_PARSE, "input must be 4-D NCHW");
  memcpy(d, x->dims, sizeof d);
  for (int32_t i = 1; i < 4; i++) {
    int64_t v = x->dims[i];
    if (v < 0) continue;
    int by_b2 = to_space && i == 1, mul = to_space ? i > 1 : i == 1;
    if (mul && __builtin_mul_overflow(v, i == 1 ? b * b : b, &d[i]))
      return mi__si_fail(c, n, MI_ERR_PARSE, "dimension %d = %lld times the block overflows",
                         (int)i, (long long)v);
    if (mul) continue;
    if (v % (by_b2 ? b * b : b))
      return mi__si_fail(c, n, MI_ERR_PARSE, "dimension %d = %lld does not divide by blocksize %lld",
                         (int)i, (long long)v, (long long)b);
    else
      d[i] = v / (by_b2 ? b * b : b);
  }
  mi__si_set(c, n, 0, x->dtype, 4, d);
  return MI_OK;
}

int32_t mi__si_instancenorm(mi__si_t *c, const mi_node_t *n) {
  return same_shape_min_rank(c, n, 3, 3);
}
