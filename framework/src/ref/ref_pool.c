/* ref_pool.c - reference MaxPool (also on 8-bit codes), AveragePool, GlobalAveragePool and GlobalMaxPool. */
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
  if (is_max && mi__ref_out_wanted(c, 1))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the Indices output is not supported");
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

  int64_t planes = x->dims[0] * x->dims[1], H = w.in[0], W = w.in[1];
  const float *X = x->data;
  float *Y = y->data;
  for (int64_t p = 0; p < planes; p++) {
    const float *xp = X + p * H * W;
    float *yp = Y + p * w.out[0] * w.out[1];
    for (int64_t oh = 0; oh < w.out[0]; oh++)
      for (int64_t ow = 0; ow < w.out[1]; ow++) {
        float best = -FLT_MAX, sum = 0.0f;
        int64_t inside = 0, in_padded = 0;
        for (int64_t kh = 0; kh < w.k[0]; kh++) {
          int64_t ih = oh * w.stride[0] - w.pad_begin[0] + kh * w.dil[0];
          for (int64_t kw = 0; kw < w.k[1]; kw++) {
            int64_t iw = ow * w.stride[1] - w.pad_begin[1] + kw * w.dil[1];
            /* count_include_pad counts the explicit padding, not what ceil_mode adds past it. */
            if (ih < H + w.pad_end[0] && iw < W + w.pad_end[1]) in_padded++;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            float v = xp[ih * W + iw];
            if (v > best || v != v) best = v;
            sum += v;
            inside++;
          }
        }
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

int32_t mi__ref_global_pool(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t dims[MI_MAX_RANK], spatial = 1;
  int32_t rc;
  int is_max = strcmp(c->node->op_type, "GlobalMaxPool") == 0;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (x->rank < 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input rank %d is below 3", (int)x->rank);
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (int32_t d = 2; d < x->rank; d++) {
    dims[d] = 1;
    spatial *= x->dims[d];
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, dims, &y)) != MI_OK) return rc;
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
