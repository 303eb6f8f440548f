/* ref_pool.c - reference MaxPool (also on 8-bit codes, and its Indices output), AveragePool,
 * GlobalAveragePool and GlobalMaxPool. */
#include <float.h>
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

int32_t mi__ref_pool(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi__ref_window_t w;
  mi_array_t *y;
  int64_t kernel[4], dims[4];
  int32_t nk, rc;
  int is_max = strcmp(c->node->op_type, "MaxPool") == 0;
  int ceil_mode = (int)mi_node_attr_int(c->node, "ceil_mode", 0);
  int include_pad = (int)mi_node_attr_int(c->node, "count_include_pad", 0);
  const mi_array_t *x0 = mi__ref_in(c, 0);
  /* MaxPool on INT8 / UINT8 (opset 12): the largest code, as the float max of the codes. */
  if (is_max && x0 && (x0->dtype == MI_DTYPE_INT8 || x0->dtype == MI_DTYPE_UINT8) && c->opset >= 12)
    return mi__ref_on_codes(c, mi__ref_pool);
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  /* Indices (opset 8+): where each maximum was, flattened over the whole input (N and C
   * included), row-major or, with storage_order 1, column-major within each plane */
  int want_idx = is_max && mi__ref_out_wanted(c, 1);
  int64_t col_major = mi_node_attr_int(c->node, "storage_order", 0);
  if (want_idx && x->rank != 3 && x->rank != 4)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the Indices output is supported for 1-D and 2-D pooling");
  if ((rc = mi__ref_attr_ints(c, "kernel_shape", kernel, 4, &nk)) != MI_OK) return rc;
  if (nk != x->rank - 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "kernel_shape must have %d values for an input of rank %d",
                        (int)(x->rank - 2), (int)x->rank);
  if ((rc = mi__ref_window(c, x, kernel, ceil_mode, &w)) != MI_OK) return rc;
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  if (x->rank == 3) {
    dims[2] = w.out[1];
  } else {
    dims[2] = w.out[0];
    dims[3] = w.out[1];
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, dims, &y)) != MI_OK) return rc;
  mi_array_t *yi = NULL;
  if (want_idx && (rc = mi__ref_make_out(c, 1, MI_DTYPE_INT64, x->rank, dims, &yi)) != MI_OK) return rc;

  int64_t planes = x->dims[0] * x->dims[1], H = w.in[0], W = w.in[1];
  const float *X = x->data;
  float *Y = y->data;
  for (int64_t p = 0; p < planes; p++) {
    const float *xp = X + p * H * W;
    float *yp = Y + p * w.out[0] * w.out[1];
    for (int64_t oh = 0; oh < w.out[0]; oh++)
      for (int64_t ow = 0; ow < w.out[1]; ow++) {
        float best = -FLT_MAX, sum = 0.0f;
        int64_t inside = 0, in_padded = 0, at = 0;
        for (int64_t kh = 0; kh < w.k[0]; kh++) {
          int64_t ih = oh * w.stride[0] - w.pad_begin[0] + kh * w.dil[0];
          for (int64_t kw = 0; kw < w.k[1]; kw++) {
            int64_t iw = ow * w.stride[1] - w.pad_begin[1] + kw * w.dil[1];
            /* count_include_pad counts the explicit padding, not what ceil_mode adds past it. */
            if (ih < H + w.pad_end[0] && iw < W + w.pad_end[1]) in_padded++;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            float v = xp[ih * W + iw];
            if (v > best || (v != v && best == best) || !inside) {
              best = v;
              at = col_major ? ih + iw * H : ih * W + iw;
            }
            sum += v;
            inside++;
          }
        }
        if (yi) ((int64_t *)yi->data)[p * w.out[0] * w.out[1] + oh * w.out[1] + ow] = p * H * W + at;
        if (is_max)
          yp[oh * w.out[1] + ow] = best;
        else {
          int64_t div = include_pad ? in_padded : inside;
          yp[oh * w.out[1] + ow] = div > 0 ? sum / (float)div : 0.0f;
        }
      }
  }
  return MI_OK;
}

int32_t mi__ref_global_out(mi__ref_call_t *c, const mi_array_t **x, mi_array_t **y, int64_t *spatial) {
  int64_t dims[MI_MAX_RANK];
  int32_t rc;
  *spatial = 1;
  if ((rc = mi__ref_need(c, 0, F32, x)) != MI_OK) return rc;
  if ((*x)->rank < 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input rank %d is below 3", (int)(*x)->rank);
  dims[0] = (*x)->dims[0];
  dims[1] = (*x)->dims[1];
  for (int32_t d = 2; d < (*x)->rank; d++) {
    dims[d] = 1;
    *spatial *= (*x)->dims[d];
  }
  return mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, (*x)->rank, dims, y);
}

int32_t mi__ref_global_pool(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t spatial;
  int32_t rc;
  int is_max = strcmp(c->node->op_type, "GlobalMaxPool") == 0;
  if ((rc = mi__ref_global_out(c, &x, &y, &spatial)) != MI_OK) return rc;
  int64_t planes = x->dims[0] * x->dims[1];
  for (int64_t p = 0; p < planes; p++) {
    const float *xp = (const float *)x->data + p * spatial;
    double sum = 0.0; /* double: a 224x224 plane summed in float loses digits */
    float best = -FLT_MAX;
    for (int64_t i = 0; i < spatial; i++) {
      sum += xp[i];
      if (xp[i] > best || xp[i] != xp[i]) best = xp[i];
    }
    ((float *)y->data)[p] = is_max ? best : (spatial ? (float)(sum / (double)spatial) : 0.0f);
  }
  return MI_OK;
}

/* MaxUnpool (X, I, output_shape?): zeros of the pooled-from size (input - 1) * stride + kernel -
 * pads per spatial dim, or output_shape, with X[i] put at the flat index I[i] (MaxPool's Indices
 * over the whole tensor). */
int32_t mi__ref_max_unpool(mi__ref_call_t *c) {
  const mi_array_t *x, *ind, *shp = mi__ref_in(c, 2);
  mi_array_t *y;
  int64_t kernel[MI_MAX_RANK], strides[MI_MAX_RANK], pads[2 * MI_MAX_RANK], dims[MI_MAX_RANK];
  int32_t nk, ns, np, rc, r;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, MI_DTYPE_BIT(MI_DTYPE_INT64), &ind)) != MI_OK)
    return rc;
  r = x->rank;
  if (r < 3 || ind->rank != r || mi_array_numel(ind) != mi_array_numel(x))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be [N, C, D...] and I of its shape");
  if ((rc = mi__ref_attr_ints(c, "kernel_shape", kernel, MI_MAX_RANK, &nk)) != MI_OK ||
      (rc = mi__ref_attr_ints(c, "strides", strides, MI_MAX_RANK, &ns)) != MI_OK ||
      (rc = mi__ref_attr_ints(c, "pads", pads, 2 * MI_MAX_RANK, &np)) != MI_OK)
    return rc;
  if (nk != r - 2 || (ns >= 0 && ns != r - 2) || (np >= 0 && np != 2 * (r - 2)))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "kernel_shape, strides and pads must match the %d spatial dims", r - 2);
  dims[0] = x->dims[0], dims[1] = x->dims[1];
  for (int32_t d = 0; d < r - 2; d++)
    dims[2 + d] = (x->dims[2 + d] - 1) * (ns > 0 ? strides[d] : 1) + kernel[d] - (np > 0 ? pads[d] + pads[r - 2 + d] : 0);
  if (shp) {
    int32_t n = 0;
    if ((rc = mi__ref_read_ints(c, shp, "output_shape", dims, MI_MAX_RANK, &n)) != MI_OK) return rc;
    if (n != r || dims[0] != x->dims[0] || dims[1] != x->dims[1])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "output_shape must be [N, C, D...] of X's N and C");
  }
  for (int32_t d = 2; d < r; d++)
    if (dims[d] < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "output dim %d is %lld", (int)d, (long long)dims[d]);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, r, dims, &y)) != MI_OK) return rc;
  int64_t total = mi_array_numel(y), n = mi_array_numel(x);
  const int64_t *ip = ind->data;
  const float *xp = x->data;
  for (int64_t i = 0; i < n; i++) {
    if (ip[i] < 0 || ip[i] >= total)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "index %lld at element %lld is outside the %lld outputs",
                          (long long)ip[i], (long long)i, (long long)total);
    ((float *)y->data)[ip[i]] = xp[i];
  }
  return MI_OK;
}
