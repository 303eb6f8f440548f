/* ref_conv.c - reference Conv and ConvTranspose (direct loops), and the shared window geometry. */
#include <string.h>

#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

/* Reads an INTS attribute of `nsp` spatial values into the last nsp slots of out[2]. */
static int32_t spatial_attr(const mi__ref_call_t *c, const char *name, int32_t nsp, int32_t mult,
                            int64_t dflt, int64_t *out) {
  int64_t v[4];
  int32_t n, rc;
  for (int32_t i = 0; i < 2 * mult; i++) out[i] = dflt;
  if ((rc = mi__ref_attr_ints(c, name, v, 4, &n)) != MI_OK) return rc;
  if (n < 0) return MI_OK;
  if (n != nsp * mult)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute '%s' has %d values, expected %d",
                        name, (int)n, (int)(nsp * mult));
  for (int32_t m = 0; m < mult; m++)
    for (int32_t i = 0; i < nsp; i++) out[m * 2 + (2 - nsp) + i] = v[m * nsp + i];
  return MI_OK;
}

int32_t mi__ref_window(const mi__ref_call_t *c, const mi_array_t *x, const int64_t *kernel,
                       int ceil_mode, mi__ref_window_t *w) {
  int32_t nsp = x->rank - 2, rc;
  int64_t pads[4];
  const char *auto_pad = mi_node_attr_string(c->node, "auto_pad", "NOTSET");
  int ap = mi_sdk_auto_pad_from_name(auto_pad);
  memset(w, 0, sizeof *w);
  if (nsp < 1 || nsp > 2)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "only 1-D and 2-D spatial inputs are supported, "
                        "got rank %d",
                        (int)x->rank);
  if ((rc = spatial_attr(c, "strides", nsp, 1, 1, w->stride)) != MI_OK ||
      (rc = spatial_attr(c, "dilations", nsp, 1, 1, w->dil)) != MI_OK ||
      (rc = spatial_attr(c, "pads", nsp, 2, 0, pads)) != MI_OK)
    return rc;
  for (int32_t d = 0; d < 2; d++) {
    int32_t xd = d - (2 - nsp); /* the input dim, or -1 for the invented height of a 1-D input */
    w->in[d] = xd >= 0 ? x->dims[2 + xd] : 1;
    w->k[d] = xd >= 0 ? kernel[xd] : 1;
    w->pad_begin[d] = pads[d];
    w->pad_end[d] = pads[2 + d];
    if (w->stride[d] < 1 || w->dil[d] < 1 || w->k[d] < 1 || pads[d] < 0 || pads[2 + d] < 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "kernel, strides and dilations must be >= 1 and pads >= 0");
    int64_t ek = (w->k[d] - 1) * w->dil[d] + 1, s = w->stride[d];
    if (ap < 0) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "auto_pad='%s' is not supported", auto_pad);
    if (ap == MI_SDK_AUTO_PAD_VALID) w->pad_begin[d] = w->pad_end[d] = 0;
    w->out[d] = mi_sdk_window_out(ap, w->in[d], w->k[d], s, w->dil[d], w->pad_begin[d],
                                  w->pad_end[d], ceil_mode);
    if (ap == MI_SDK_AUTO_PAD_SAME_UPPER || ap == MI_SDK_AUTO_PAD_SAME_LOWER)
      mi_sdk_same_pads(ap, (w->out[d] - 1) * s + ek - w->in[d], &w->pad_begin[d], &w->pad_end[d]);
    if (w->out[d] < 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "the window (kernel %lld, dilation %lld) does not fit the padded input "
                          "(%lld)",
                          (long long)w->k[d], (long long)w->dil[d],
                          (long long)w->in[d]);
  }
  return MI_OK;
}

/* Output dims (N, M, [H,] W) of a 1-D or 2-D op. */
static void out_dims(const mi_array_t *x, int64_t m, const mi__ref_window_t *w, int64_t *dims) {
  dims[0] = x->dims[0];
  dims[1] = m;
  if (x->rank == 3) {
    dims[2] = w->out[1];
  } else {
    dims[2] = w->out[0];
    dims[3] = w->out[1];
  }
}

int32_t mi__ref_conv(mi__ref_call_t *c) {
  const mi_array_t *x, *wt, *b = mi__ref_in(c, 2);
  mi__ref_window_t w;
  mi_array_t *y;
  int64_t group = mi_node_attr_int(c->node, "group", 1), dims[4];
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &wt)) != MI_OK)
    return rc;
  if (wt->rank != x->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "weight rank %d differs from input rank %d",
                        (int)wt->rank, (int)x->rank);
  if ((rc = mi__ref_window(c, x, wt->dims + 2, 0, &w)) != MI_OK) return rc;
  int64_t N = x->dims[0], C = x->dims[1], M = wt->dims[0], Cg = wt->dims[1];
  if (group < 1 || Cg * group != C || M % group != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "input has %lld channels, weight expects %lld x group %lld (and %lld "
                        "filters must divide by the group)",
                        (long long)C, (long long)Cg, (long long)group, (long long)M);
  if (b && (b->dtype != MI_DTYPE_FLOAT32 || mi_array_numel(b) != M))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "bias must be float32 with %lld values",
                        (long long)M);
  out_dims(x, M, &w, dims);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, dims, &y)) != MI_OK) return rc;

  int64_t H = w.in[0], W = w.in[1], OH = w.out[0], OW = w.out[1], KH = w.k[0], KW = w.k[1];
  int64_t Mg = M / group;
  const float *X = x->data, *Wt = wt->data, *B = b ? b->data : NULL;
  float *Y = y->data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      int64_t g = m / Mg;
      float *o = Y + (n * M + m) * OH * OW;
      for (int64_t i = 0; i < OH * OW; i++) o[i] = B ? B[m] : 0.0f;
      for (int64_t ci = 0; ci < Cg; ci++) {
        const float *xin = X + (n * C + g * Cg + ci) * H * W;
        const float *wk = Wt + (m * Cg + ci) * KH * KW;
        for (int64_t kh = 0; kh < KH; kh++)
          for (int64_t kw = 0; kw < KW; kw++) {
            float wv = wk[kh * KW + kw];
            int64_t col = kw * w.dil[1] - w.pad_begin[1]; /* input column of output column 0 */
            int64_t lo = 0, hi = OW;
            /* Output columns whose input column lies inside the row. */
            while (lo < OW && lo * w.stride[1] + col < 0) lo++;
            while (hi > lo && (hi - 1) * w.stride[1] + col >= W) hi--;
            for (int64_t oh = 0; oh < OH; oh++) {
              int64_t ih = oh * w.stride[0] - w.pad_begin[0] + kh * w.dil[0];
              if (ih < 0 || ih >= H) continue;
              const float *xr = xin + ih * W;
              float *orow = o + oh * OW;
              for (int64_t ow = lo; ow < hi; ow++) orow[ow] += wv * xr[col + ow * w.stride[1]];
            }
          }
      }
    }
  return MI_OK;
}

int32_t mi__ref_conv_transpose(mi__ref_call_t *c) {
  const mi_array_t *x, *wt, *b = mi__ref_in(c, 2);
  mi_array_t *y;
  int64_t group = mi_node_attr_int(c->node, "group", 1), dims[4];
  int64_t stride[2], dil[2], pads[4], opad[2], oshape[4];
  int64_t in[2], k[2], pb[2], out[2];
  int32_t nsp, rc, nos;
  const char *auto_pad = mi_node_attr_string(c->node, "auto_pad", "NOTSET");
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &wt)) != MI_OK)
    return rc;
  nsp = x->rank - 2;
  if (nsp < 1 || nsp > 2 || wt->rank != x->rank)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "only 1-D and 2-D inputs with a weight of the "
                        "same rank are supported");
  if ((rc = spatial_attr(c, "strides", nsp, 1, 1, stride)) != MI_OK ||
      (rc = spatial_attr(c, "dilations", nsp, 1, 1, dil)) != MI_OK ||
      (rc = spatial_attr(c, "pads", nsp, 2, 0, pads)) != MI_OK ||
      (rc = spatial_attr(c, "output_padding", nsp, 1, 0, opad)) != MI_OK ||
      (rc = mi__ref_attr_ints(c, "output_shape", oshape, 4, &nos)) != MI_OK)
    return rc;
  if (nos >= 0 && nos < nsp)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "output_shape has too few values");
  for (int32_t d = 0; d < 2; d++) {
    int32_t xd = d - (2 - nsp);
    in[d] = xd >= 0 ? x->dims[2 + xd] : 1;
    k[d] = xd >= 0 ? wt->dims[2 + xd] : 1;
    if (stride[d] < 1 || dil[d] < 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "strides and dilations must be >= 1");
    int64_t full = stride[d] * (in[d] - 1) + opad[d] + (k[d] - 1) * dil[d] + 1;
    int64_t want = -1;
    if (nos >= 0 && xd >= 0) want = oshape[nos - nsp + xd];
    else if (nos >= 0)
      want = 1;
    else if (strncmp(auto_pad, "SAME", 4) == 0)
      want = in[d] * stride[d];
    if (want >= 0) {
      /* The pads follow from the requested size; the odd one goes where the spec says. */
      int64_t total = full - want;
      if (total < 0) total = 0;
      pb[d] = strcmp(auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
      out[d] = want;
    } else if (strcmp(auto_pad, "NOTSET") == 0 || strcmp(auto_pad, "VALID") == 0) {
      int64_t pe = auto_pad[0] == 'V' ? 0 : pads[2 + d];
      pb[d] = auto_pad[0] == 'V' ? 0 : pads[d];
      out[d] = full - pb[d] - pe;
    } else {
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "auto_pad='%s' is not supported", auto_pad);
    }
    if (out[d] < 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "output size %lld is not positive",
                          (long long)out[d]);
  }
  int64_t N = x->dims[0], C = x->dims[1], Mg = wt->dims[1], M = Mg * group;
  if (group < 1 || wt->dims[0] != C || C % group != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "input has %lld channels but the weight has %lld (group %lld)",
                        (long long)C, (long long)wt->dims[0], (long long)group);
  if (b && (b->dtype != MI_DTYPE_FLOAT32 || mi_array_numel(b) != M))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "bias must be float32 with %lld values",
                        (long long)M);
  dims[0] = N;
  dims[1] = M;
  dims[2] = nsp == 1 ? out[1] : out[0];
  dims[3] = out[1];
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, dims, &y)) != MI_OK) return rc;

  const float *X = x->data, *Wt = wt->data, *B = b ? b->data : NULL;
  float *Y = y->data;
  int64_t OH = out[0], OW = out[1], Cg = C / group;
  for (int64_t n = 0; n < N; n++) {
    for (int64_t m = 0; m < M; m++)
      for (int64_t i = 0; i < OH * OW; i++) Y[(n * M + m) * OH * OW + i] = B ? B[m] : 0.0f;
    /* Each input pixel scatters its kernel-weighted value into the output. */
    for (int64_t ci = 0; ci < C; ci++) {
      int64_t g = ci / Cg;
      for (int64_t ih = 0; ih < in[0]; ih++)
        for (int64_t iw = 0; iw < in[1]; iw++) {
          float xv = X[((n * C + ci) * in[0] + ih) * in[1] + iw];
          for (int64_t mo = 0; mo < Mg; mo++) {
            const float *wk = Wt + (ci * Mg + mo) * k[0] * k[1];
            float *o = Y + (n * M + g * Mg + mo) * OH * OW;
            for (int64_t kh = 0; kh < k[0]; kh++) {
              int64_t oh = ih * stride[0] - pb[0] + kh * dil[0];
              if (oh < 0 || oh >= OH) continue;
              for (int64_t kw = 0; kw < k[1]; kw++) {
                int64_t ow = iw * stride[1] - pb[1] + kw * dil[1];
                if (ow >= 0 && ow < OW) o[oh * OW + ow] += xv * wk[kh * k[1] + kw];
              }
            }
          }
        }
    }
  }
  return MI_OK;
}
