/* shape_infer_nn.c - shapes of the network ops: convolutions, pooling, MatMul/Gemm, Resize. */
#include <stdlib.h>
#include <string.h>

#include "graph/shape_infer.h"

static int64_t ints_at(const mi_attr_t *a, int32_t i, int64_t dflt) {
  return a && a->type == MI_ATTR_INTS && i < a->count ? a->ints[i] : dflt;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* Output spatial sizes of a sliding window (Conv, pooling): auto_pad, pads, strides,
 * dilations and ceil_mode, following the ONNX operator spec. */
static int32_t window(mi__si_t *c, const mi_node_t *n, const mi_tensor_t *x, int32_t nsp,
                      const int64_t *kernel, int ceil_mode, int64_t *out) {
  const mi_attr_t *strides = mi_node_attr(n, "strides"), *dil = mi_node_attr(n, "dilations");
  const mi_attr_t *pads = mi_node_attr(n, "pads");
  const char *ap = mi_node_attr_string(n, "auto_pad", "NOTSET");
  if (pads && pads->type == MI_ATTR_INTS && pads->count != 2 * nsp)
    return mi__si_fail(c, n, MI_ERR_PARSE, "pads has %d values, expected %d", (int)pads->count,
                       (int)(2 * nsp));
  for (int32_t i = 0; i < nsp; i++) {
    int64_t in = x->dims[2 + i], s = ints_at(strides, i, 1), d = ints_at(dil, i, 1);
    int64_t pb = ints_at(pads, i, 0), pe = ints_at(pads, nsp + i, 0);
    if (s < 1 || d < 1 || kernel[i] < 1)
      return mi__si_fail(c, n, MI_ERR_PARSE, "kernel, strides and dilations must be positive");
    int64_t ek = (kernel[i] - 1) * d + 1;
    if (in < 0) {
      out[i] = MI_DIM_DYNAMIC;
    } else if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
      out[i] = ceil_div(in, s);
    } else if (strcmp(ap, "VALID") == 0) {
      out[i] = in >= ek ? (in - ek) / s + 1 : 0;
    } else if (strcmp(ap, "NOTSET") == 0) {
      int64_t span = in + pb + pe - ek;
      if (span < 0)
        return mi__si_fail(c, n, MI_ERR_PARSE,
                           "window %lld larger than padded input %lld on spatial axis %d",
                           (long long)ek, (long long)(in + pb + pe), (int)i);
      out[i] = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
      /* The last window must start inside the input or its left padding. */
      if (ceil_mode && (out[i] - 1) * s >= in + pb) out[i]--;
    } else {
      return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "auto_pad '%s' unsupported", ap);
    }
  }
  return MI_OK;
}

int32_t mi__si_conv(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0), *w = mi__si_in(c, n, 1);
  if (x->rank < 0 || w->rank < 0) {
    mi__si_set(c, n, 0, x->dtype, x->rank, x->dims);
    return MI_OK;
  }
  if (x->rank < 3 || w->rank != x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "input rank %d and weight rank %d do not fit",
                       (int)x->rank, (int)w->rank);
  int32_t nsp = x->rank - 2;
  int64_t group = mi_node_attr_int(n, "group", 1), kernel[MI_MAX_RANK], d[MI_MAX_RANK];
  const mi_attr_t *ks = mi_node_attr(n, "kernel_shape");
  for (int32_t i = 0; i < nsp; i++) kernel[i] = ints_at(ks, i, w->dims[2 + i]);
  if (group < 1) return mi__si_fail(c, n, MI_ERR_PARSE, "group %lld < 1", (long long)group);
  int transposed = strcmp(n->op_type, "ConvTranspose") == 0;
  if (!transposed && x->dims[1] >= 0 && w->dims[1] >= 0 && w->dims[1] * group != x->dims[1])
    return mi__si_fail(c, n, MI_ERR_PARSE,
                       "input has %lld channels, weight expects %lld x group %lld",
                       (long long)x->dims[1], (long long)w->dims[1], (long long)group);
  if (transposed && x->dims[1] >= 0 && w->dims[0] >= 0 && w->dims[0] != x->dims[1])
    return mi__si_fail(c, n, MI_ERR_PARSE, "input has %lld channels, weight has %lld",
                       (long long)x->dims[1], (long long)w->dims[0]);
  d[0] = x->dims[0];
  d[1] = transposed ? (w->dims[1] >= 0 ? w->dims[1] * group : MI_DIM_DYNAMIC) : w->dims[0];
  if (!transposed) {
    if ((rc = window(c, n, x, nsp, kernel, 0, d + 2))) return rc;
  } else {
    const mi_attr_t *os = mi_node_attr(n, "output_shape"), *op = mi_node_attr(n, "output_padding");
    const mi_attr_t *st = mi_node_attr(n, "strides"), *dl = mi_node_attr(n, "dilations");
    const mi_attr_t *pads = mi_node_attr(n, "pads");
    const char *ap = mi_node_attr_string(n, "auto_pad", "NOTSET");
    for (int32_t i = 0; i < nsp; i++) {
      int64_t in = x->dims[2 + i], s = ints_at(st, i, 1), dd = ints_at(dl, i, 1);
      if (os && os->type == MI_ATTR_INTS && os->count >= nsp) {
        d[2 + i] = os->ints[os->count - nsp + i];
      } else if (in < 0) {
        d[2 + i] = MI_DIM_DYNAMIC;
      } else if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
        d[2 + i] = in * s;
      } else {
        d[2 + i] = s * (in - 1) + ints_at(op, i, 0) + (kernel[i] - 1) * dd + 1 -
                   ints_at(pads, i, 0) - ints_at(pads, nsp + i, 0);
        if (d[2 + i] < 0) return mi__si_fail(c, n, MI_ERR_PARSE, "negative output size");
      }
    }
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  return MI_OK;
}

int32_t mi__si_pool(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 1, &x);
  if (rc) return rc;
  if (x->rank < 3) return mi__si_fail(c, n, MI_ERR_PARSE, "input rank %d < 3", (int)x->rank);
  int32_t nsp = x->rank - 2;
  int64_t d[MI_MAX_RANK], kernel[MI_MAX_RANK];
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  if (strncmp(n->op_type, "Global", 6) == 0) {
    for (int32_t i = 0; i < nsp; i++) d[2 + i] = 1;
  } else {
    const mi_attr_t *ks = mi_node_attr(n, "kernel_shape");
    if (!ks || ks->type != MI_ATTR_INTS || ks->count != nsp)
      return mi__si_fail(c, n, MI_ERR_PARSE, "kernel_shape missing or not of length %d", (int)nsp);
    for (int32_t i = 0; i < nsp; i++) kernel[i] = ks->ints[i];
    if ((rc = window(c, n, x, nsp, kernel, (int)mi_node_attr_int(n, "ceil_mode", 0), d + 2)))
      return rc;
  }
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  mi__si_set(c, n, 1, MI_DTYPE_INT64, x->rank, d); /* MaxPool's Indices */
  return MI_OK;
}

int32_t mi__si_matmul(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *a, *b;
  int32_t rc = mi__si_open2(c, n, 2, 1, &a, &b);
  if (rc) return rc;
  if (a->rank == 0 || b->rank == 0) return mi__si_fail(c, n, MI_ERR_PARSE, "scalar operand");
  /* 1-D operands are promoted (a: prepend 1, b: append 1) and the added dim removed after. */
  int64_t ad[MI_MAX_RANK + 1], bd[MI_MAX_RANK + 1], out[MI_MAX_RANK + 1];
  int32_t ar = a->rank, br = b->rank, r;
  if (ar == 1) {
    ad[0] = 1;
    ad[1] = a->dims[0];
    ar = 2;
  } else
    memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
  if (br == 1) {
    bd[0] = b->dims[0];
    bd[1] = 1;
    br = 2;
  } else
    memcpy(bd, b->dims, sizeof(int64_t) * (size_t)br);
  int64_t k1 = ad[ar - 1], k2 = bd[br - 2];
  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    return mi__si_fail(c, n, MI_ERR_PARSE, "inner dimensions %lld and %lld differ", (long long)k1,
                       (long long)k2);
  if ((rc = mi__si_broadcast(c, n, ar - 2, ad, br - 2, bd, &r, out))) return rc;
  if (a->rank != 1) out[r++] = ad[ar - 2];
  if (b->rank != 1) out[r++] = bd[br - 1];
  if (r > MI_MAX_RANK) return mi__si_fail(c, n, MI_ERR_PARSE, "result rank too large");
  mi__si_set(c, n, 0, a->dtype, r, out);
  return MI_OK;
}

int32_t mi__si_gemm(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 2);
  if (rc) return rc;
  const mi_tensor_t *a = mi__si_in(c, n, 0), *b = mi__si_in(c, n, 1);
  if (a->rank != 2 || b->rank != 2)
    return mi__si_fail(c, n, MI_ERR_PARSE, "A and B must be 2-D (ranks %d, %d)", (int)a->rank,
                       (int)b->rank);
  int ta = mi_node_attr_int(n, "transA", 0) != 0, tb = mi_node_attr_int(n, "transB", 0) != 0;
  int64_t m = a->dims[ta ? 1 : 0], k1 = a->dims[ta ? 0 : 1];
  int64_t k2 = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    return mi__si_fail(c, n, MI_ERR_PARSE, "inner dimensions %lld and %lld differ", (long long)k1,
                       (long long)k2);
  int64_t d[2] = {m, nn};
  mi__si_set(c, n, 0, a->dtype, 2, d);
  return MI_OK;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (opset 7-8: scales
 * attribute; 9: scales input). */
int32_t mi__si_resize(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 1, &x);
  if (rc) return rc;
  int32_t r = x->rank, scales_in = -1, sizes_in = -1;
  int upsample = strcmp(n->op_type, "Upsample") == 0;
  if (upsample) scales_in = c->g->opset >= 9 ? 1 : -1;
  else if (c->g->opset < 11)
    scales_in = 1;
  else {
    scales_in = 2;
    sizes_in = 3;
  }
  int64_t d[MI_MAX_RANK], axes[MI_MAX_RANK], na = r;
  for (int32_t i = 0; i < r; i++) axes[i] = i;
  const mi_attr_t *axes_attr = mi_node_attr(n, "axes"); /* opset 18 */
  if (axes_attr && axes_attr->type == MI_ATTR_INTS) {
    if (axes_attr->count > r) return mi__si_fail(c, n, MI_ERR_PARSE, "too many axes");
    na = axes_attr->count;
    for (int32_t i = 0; i < na; i++) {
      int32_t a;
      if ((rc = mi__si_axis(c, n, axes_attr->ints[i], r, &a))) return rc;
      axes[i] = a;
    }
  }
  memcpy(d, x->dims, sizeof(int64_t) * (size_t)r);
  double sc[MI_MAX_RANK];
  int64_t cnt = 0;
  const double *v = NULL;
  int have_scales = 0;
  if (upsample && scales_in < 0) {
    const mi_attr_t *s = mi_node_attr(n, "scales");
    if (!s || s->type != MI_ATTR_FLOATS || s->count != r)
      return mi__si_fail(c, n, MI_ERR_PARSE, "scales attribute missing or not of length %d", (int)r);
    for (int32_t i = 0; i < r; i++) sc[i] = s->floats[i];
    have_scales = 1;
  }
  const mi_tensor_t *st = mi__si_in(c, n, scales_in);
  const mi_tensor_t *zt = mi__si_in(c, n, sizes_in);
  if (zt && mi__tensor_numel(zt) != 0) {
    int64_t sz[MI_MAX_RANK];
    int64_t got = mi__si_ints(c, n, sizes_in, sz, MI_MAX_RANK);
    if (got < 0) {
      for (int32_t i = 0; i < na; i++) d[axes[i]] = MI_DIM_DYNAMIC;
    } else if (got != na) {
      return mi__si_fail(c, n, MI_ERR_PARSE, "sizes has %lld values for %lld axes",
                         (long long)got, (long long)na);
    } else {
      const char *pol = mi_node_attr_string(n, "keep_aspect_ratio_policy", "stretch");
      if (strcmp(pol, "stretch") == 0) {
        for (int32_t i = 0; i < na; i++) d[axes[i]] = sz[i];
      } else {
        int larger = strcmp(pol, "not_smaller") == 0;
        if (!larger && strcmp(pol, "not_larger") != 0)
          return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s'", pol);
        double s = larger ? 0 : 1e300;
        for (int32_t i = 0; i < na; i++) {
          if (x->dims[axes[i]] <= 0) return mi__si_fail(c, n, MI_ERR_PARSE, "dynamic input dim");
          double q = (double)sz[i] / (double)x->dims[axes[i]];
          s = larger ? (q > s ? q : s) : (q < s ? q : s);
        }
        for (int32_t i = 0; i < na; i++) {
          double r = floor(s * (double)x->dims[axes[i]] + 0.5);
          /* Converting an out-of-range double to int64 is undefined: refuse it instead. */
          if (!(r >= 0 && r < 0x1p62))
            return mi__si_fail(c, n, MI_ERR_PARSE, "output size %g of axis %lld is out of range",
                               r, (long long)axes[i]);
          d[axes[i]] = (int64_t)r;
        }
      }
    }
  } else if (have_scales || (st && (v = mi__si_val(c, n, scales_in, &cnt)))) {
    if (!have_scales) {
      if (cnt != na) return mi__si_fail(c, n, MI_ERR_PARSE, "scales has %lld values for %lld axes",
                                        (long long)cnt, (long long)na);
      for (int32_t i = 0; i < na; i++) sc[i] = v[i];
    }
    for (int32_t i = 0; i < na; i++) {
      int64_t in = x->dims[axes[i]];
      double r = in < 0 || isnan(sc[i]) ? -1 : floor((double)in * sc[i] + 1e-9);
      if (in >= 0 && !isnan(sc[i]) && !(r >= 0 && r < 0x1p62))
        return mi__si_fail(c, n, MI_ERR_PARSE, "scale %g of axis %lld gives an output size out of range",
                           sc[i], (long long)axes[i]);
      d[axes[i]] = r < 0 ? MI_DIM_DYNAMIC : (int64_t)r;
    }
  } else if (st && mi__tensor_numel(st) != 0) {
    for (int32_t i = 0; i < na; i++) d[axes[i]] = MI_DIM_DYNAMIC;
  } else {
    return mi__si_fail(c, n, MI_ERR_PARSE, "neither scales nor sizes given");
  }
  mi__si_set(c, n, 0, x->dtype, r, d);
  return MI_OK;
}
