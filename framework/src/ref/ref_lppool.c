/* ref_lppool.c - reference LpPool (opsets 1, 2, 11, 18) and GlobalLpPool (1, 2): the p-norm
 * (sum of |x|^p)^(1/p) over each window, padding contributing nothing. */
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

/* p: a FLOAT attribute in opset 1, an INT from 2 on (default 2 in both). */
static int32_t read_p(mi__ref_call_t *c, double *p) {
  const mi_attr_t *a = mi_node_attr(c->node, "p");
  *p = !a ? 2.0 : a->type == MI_ATTR_FLOAT ? (double)a->f
              : a->type == MI_ATTR_INT     ? (double)a->i
                                           : NAN;
  if (!(*p > 0.0) || *p > 1e6)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "p must be a positive number");
  return MI_OK;
}

/* |v|^p, with the common orders as products (pow is slow and the products exact for p = 1, 2). */
static double lp_term(double v, double p) {
  v = fabs(v);
  return p == 2.0 ? v * v : p == 1.0 ? v
                                     : pow(v, p);
}

static float lp_root(double s, double p) {
  return (float)(p == 2.0 ? sqrt(s) : p == 1.0 ? s
                                               : pow(s, 1.0 / p));
}

int32_t mi__ref_lppool(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi__ref_window_t w;
  mi_array_t *y;
  int64_t kernel[4], dims[4];
  int32_t nk, rc;
  double p;
  int ceil_mode = (int)mi_node_attr_int(c->node, "ceil_mode", 0);
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = read_p(c, &p)) != MI_OK) return rc;
  if ((rc = mi__ref_attr_ints(c, "kernel_shape", kernel, 4, &nk)) != MI_OK) return rc;
  if (nk != x->rank - 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "kernel_shape must have %d values for an input of rank %d",
                        (int)(x->rank - 2), (int)x->rank);
  if ((rc = mi__ref_window(c, x, kernel, ceil_mode, &w)) != MI_OK) return rc;
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  dims[2] = x->rank == 3 ? w.out[1] : w.out[0];
  dims[3] = w.out[1];
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, dims, &y)) != MI_OK) return rc;
  int64_t planes = x->dims[0] * x->dims[1], H = w.in[0], W = w.in[1];
  for (int64_t pl = 0; pl < planes; pl++) {
    const float *xp = (const float *)x->data + pl * H * W;
    float *yp = (float *)y->data + pl * w.out[0] * w.out[1];
    for (int64_t oh = 0; oh < w.out[0]; oh++)
      for (int64_t ow = 0; ow < w.out[1]; ow++) {
        double s = 0.0;
        for (int64_t kh = 0; kh < w.k[0]; kh++) {
          int64_t ih = oh * w.stride[0] - w.pad_begin[0] + kh * w.dil[0];
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < w.k[1]; kw++) {
            int64_t iw = ow * w.stride[1] - w.pad_begin[1] + kw * w.dil[1];
            if (iw >= 0 && iw < W) s += lp_term(xp[ih * W + iw], p);
          }
        }
        yp[oh * w.out[1] + ow] = lp_root(s, p);
      }
  }
  return MI_OK;
}

int32_t mi__ref_global_lppool(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t spatial;
  int32_t rc;
  double p;
  if ((rc = mi__ref_global_out(c, &x, &y, &spatial)) != MI_OK || (rc = read_p(c, &p)) != MI_OK) return rc;
  for (int64_t pl = 0; pl < x->dims[0] * x->dims[1]; pl++) {
    const float *xp = (const float *)x->data + pl * spatial;
    double s = 0.0;
    for (int64_t i = 0; i < spatial; i++) s += lp_term(xp[i], p);
    ((float *)y->data)[pl] = lp_root(s, p);
  }
  return MI_OK;
}
