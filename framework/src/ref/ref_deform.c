/* ref_deform.c - reference DeformConv (opsets 19, 22; torchvision's deform_conv2d export): a 2-D
 * convolution whose every kernel tap reads the input at its own learned fractional offset, by
 * bilinear interpolation (zero outside the image), optionally scaled by a mask. */
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

static float bilinear_zero(const float *plane, int64_t H, int64_t W, double h, double w) {
  /* The corners that fall inside count, the others read as 0 (torchvision's and ONNX Runtime's
   * rule); a point a whole pixel or more outside reads 0. */
  if (!(h > -1.0 && h < (double)H && w > -1.0 && w < (double)W)) return 0.0f;
  double h0f = floor(h), w0f = floor(w), lh = h - h0f, lw = w - w0f;
  int64_t h0 = (int64_t)h0f, w0 = (int64_t)w0f, h1 = h0 + 1, w1 = w0 + 1;
  double v00 = h0 >= 0 && w0 >= 0 ? plane[h0 * W + w0] : 0.0;
  double v01 = h0 >= 0 && w1 < W ? plane[h0 * W + w1] : 0.0;
  double v10 = h1 < H && w0 >= 0 ? plane[h1 * W + w0] : 0.0;
  double v11 = h1 < H && w1 < W ? plane[h1 * W + w1] : 0.0;
  return (float)((1 - lh) * (1 - lw) * v00 + (1 - lh) * lw * v01 + lh * (1 - lw) * v10 + lh * lw * v11);
}

/* Checks the inputs and attributes against each other and fills the geometry. */
static int32_t deform_geometry(mi__ref_call_t *c, mi__ref_window_t *w, int64_t *group, int64_t *ogroup) {
  const mi_array_t *x = mi__ref_in(c, 0), *wt = mi__ref_in(c, 1), *off = mi__ref_in(c, 2);
  const mi_array_t *b = mi__ref_in(c, 3), *mask = mi__ref_in(c, 4);
  int64_t ks[2];
  int32_t nk, rc;
  *group = mi_node_attr_int(c->node, "group", 1);
  *ogroup = mi_node_attr_int(c->node, "offset_group", 1);
  if (x->rank != 4 || wt->rank != 4 || off->rank != 4)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "X, W and offset must be 4-D (2-D deformable convolution), got ranks "
                        "%d, %d, %d",
                        (int)x->rank, (int)wt->rank, (int)off->rank);
  if ((rc = mi__ref_attr_ints(c, "kernel_shape", ks, 2, &nk)) != MI_OK) return rc;
  if (nk >= 0 && (nk != 2 || ks[0] != wt->dims[2] || ks[1] != wt->dims[3]))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "kernel_shape does not match W's [%lld, %lld]",
                        (long long)wt->dims[2], (long long)wt->dims[3]);
  if ((rc = mi__ref_window(c, x, wt->dims + 2, 0, w)) != MI_OK) return rc;
  int64_t N = x->dims[0], C = x->dims[1], M = wt->dims[0], K = wt->dims[2] * wt->dims[3];
  if (*group < 1 || *ogroup < 1 || C % *group || M % *group || wt->dims[1] * *group != C || C % *ogroup)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "X has %lld channels, W [%lld, %lld, ...]: group %lld and offset_group %lld must divide them",
                        (long long)C, (long long)M, (long long)wt->dims[1], (long long)*group, (long long)*ogroup);
  if (off->dims[0] != N || off->dims[1] != *ogroup * 2 * K || off->dims[2] != w->out[0] || off->dims[3] != w->out[1])
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "offset must be [%lld, %lld, %lld, %lld]", (long long)N,
                        (long long)(*ogroup * 2 * K), (long long)w->out[0], (long long)w->out[1]);
  if (b && (b->dtype != MI_DTYPE_FLOAT32 || mi_array_numel(b) != M))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "B must be FLOAT32 with %lld values", (long long)M);
  if (mask && (mask->dtype != MI_DTYPE_FLOAT32 || mask->rank != 4 || mask->dims[0] != N ||
               mask->dims[1] != *ogroup * K || mask->dims[2] != w->out[0] || mask->dims[3] != w->out[1]))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "mask must be FLOAT32 [%lld, %lld, %lld, %lld]", (long long)N,
                        (long long)(*ogroup * K), (long long)w->out[0], (long long)w->out[1]);
  return MI_OK;
}

int32_t mi__ref_deform_conv(mi__ref_call_t *c) {
  const mi_array_t *x, *wt, *off, *mask = mi__ref_in(c, 4), *b = mi__ref_in(c, 3);
  mi__ref_window_t w;
  mi_array_t *y;
  int64_t group, og;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, F32, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 1, F32, &wt)) != MI_OK || (rc = mi__ref_need(c, 2, F32, &off)) != MI_OK ||
      (rc = deform_geometry(c, &w, &group, &og)) != MI_OK)
    return rc;
  int64_t N = x->dims[0], C = x->dims[1], H = w.in[0], W = w.in[1], M = wt->dims[0], Cg = wt->dims[1];
  int64_t KH = w.k[0], KW = w.k[1], K = KH * KW, OH = w.out[0], OW = w.out[1], Mg = M / group, Co = C / og;
  int64_t dims[4] = {N, M, OH, OW};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, dims, &y)) != MI_OK) return rc;
  const float *X = x->data, *Wt = wt->data, *O = off->data, *Mk = mask ? mask->data : NULL;
  float *Y = y->data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      int64_t g = m / Mg;
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = b ? ((const float *)b->data)[m] : 0.0;
          for (int64_t ci = 0; ci < Cg; ci++) {
            int64_t ch = g * Cg + ci, gi = ch / Co; /* the input channel and its offset group */
            const float *plane = X + (n * C + ch) * H * W;
            for (int64_t k = 0; k < K; k++) {
              int64_t at = ((n * og + gi) * 2 * K + 2 * k) * OH * OW + oh * OW + ow;
              double ph = (double)(oh * w.stride[0] - w.pad_begin[0] + (k / KW) * w.dil[0]) + O[at];
              double pw = (double)(ow * w.stride[1] - w.pad_begin[1] + (k % KW) * w.dil[1]) + O[at + OH * OW];
              double v = bilinear_zero(plane, H, W, ph, pw);
              if (Mk) v *= Mk[((n * og + gi) * K + k) * OH * OW + oh * OW + ow];
              acc += v * Wt[(m * Cg + ci) * K + k];
            }
          }
          Y[((n * M + m) * OH + oh) * OW + ow] = (float)acc;
        }
    }
  return MI_OK;
}
