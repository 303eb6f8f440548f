/* ref_signal.c - reference signal-processing ops of opset 17 (audio front ends exported with
 * their feature extraction): DFT (the opset-17 and 20 forms), STFT, HannWindow, HammingWindow,
 * BlackmanWindow and MelWeightMatrix. Sums in double over a table of the n twiddles indexed
 * by j k mod n (exact angles), so the reference is at least as accurate as a runtime's float FFT;
 * O(n^2) per line, one multiply-add per term. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/op_since.h"
#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define INTS (MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32))

/* An optional scalar integer input (absent: dflt). */
static int32_t opt_int(mi__ref_call_t *c, int32_t i, const char *what, int64_t dflt, int64_t *v) {
  const mi_array_t *a = mi__ref_in(c, i);
  int32_t n = 0, rc;
  *v = dflt;
  if (!a) return MI_OK;
  if ((rc = mi__ref_read_ints(c, a, what, v, 1, &n)) != MI_OK) return rc;
  if (n != 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must be one integer", what);
  return MI_OK;
}

/* The float dtype an output_datatype attribute names: FLOAT (1), or DOUBLE (11), which this
 * framework loads as float32 like every DOUBLE tensor. */
static int32_t out_float(mi__ref_call_t *c) {
  int64_t t = mi_node_attr_int(c->node, "output_datatype", 1);
  if (t != 1 && t != 11)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "output_datatype %lld is not supported (FLOAT or DOUBLE)", (long long)t);
  return MI_OK;
}

/* cos and sin of 2 pi m / n for m < n: the twiddles every line of a transform of length n reads
 * (j k mod n indexes them exactly); NULL when out of memory. */
static double *twiddles(int64_t n) {
  double *t = malloc((size_t)n * 2 * sizeof *t);
  for (int64_t m = 0; t && m < n; m++) {
    double a = 2.0 * M_PI * (double)m / (double)n;
    t[2 * m] = cos(a);
    t[2 * m + 1] = sin(a);
  }
  return t;
}

/* y[k] = sum_j x[j] e^(-+2 pi i j k / n) (sign + and a 1/n factor when inverse) for k < m, over
 * `len` input values (a shorter signal is zero-padded to n); x and y hold `xc` (1: real, 2:
 * complex) and 2 components at element strides xs and ys; tw from twiddles(n). */
static void dft_line(const double *tw, const float *x, int64_t xs, int32_t xc, int64_t len, float *y, int64_t ys,
                     int64_t n, int64_t m, int inverse) {
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
  if (len > n) len = n;
  for (int64_t k = 0; k < m; k++) {
    double re = 0, im = 0;
    for (int64_t j = 0, jk = 0; j < len; j++, jk = (jk + k) % n) {
      double cr = tw[2 * jk], ci = sign * tw[2 * jk + 1];
      double xr = x[j * xs * xc], xi = xc == 2 ? x[j * xs * xc + 1] : 0.0;
      re += xr * cr - xi * ci;
      im += xr * ci + xi * cr;
    }
    y[k * ys * 2] = (float)(re * scale);
    y[k * ys * 2 + 1] = (float)(im * scale);
  }
}

/* DFT: input [..., signal..., 1 or 2]; opset 17 takes `axis` as an attribute (default 1), 20 as
 * input 2 (default -2); dft_length (input 1) pads or truncates; onesided keeps n / 2 + 1 bins
 * of a real forward transform. */
int32_t mi__ref_dft(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int64_t axis, n, dims[MI_MAX_RANK];
  int inverse = mi_node_attr_int(c->node, "inverse", 0) != 0, onesided = mi_node_attr_int(c->node, "onesided", 0) != 0;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (c->opset >= 20) {
    if ((rc = opt_int(c, 2, "axis", -2, &axis)) != MI_OK) return rc;
  } else {
    axis = mi_node_attr_int(c->node, "axis", 1);
  }
  int32_t r = x->rank, xc = r >= 2 ? (int32_t)x->dims[r - 1] : 0;
  if (r < 2 || (xc != 1 && xc != 2))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input must be [..., 1] (real) or [..., 2] (complex)");
  if (axis < -r || axis > r - 2 || axis == -1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %lld is not a signal axis of a rank-%d input", (long long)axis, (int)r);
  if (axis < 0) axis += r;
  if ((rc = opt_int(c, 1, "dft_length", x->dims[axis], &n)) != MI_OK) return rc;
  if (n < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "dft_length %lld must be >= 1", (long long)n);
  if (onesided && (inverse || xc == 2))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "onesided is supported for a real forward transform only");
  memcpy(dims, x->dims, sizeof dims[0] * (size_t)r);
  dims[axis] = onesided ? n / 2 + 1 : n;
  dims[r - 1] = 2;
  double *tw = twiddles(n);
  if (!tw) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, r, dims, &y)) != MI_OK) {
    free(tw);
    return rc;
  }
  int64_t outer = 1, inner = 1, L = x->dims[axis], M = dims[axis];
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = (int32_t)axis + 1; d < r - 1; d++) inner *= x->dims[d];
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      dft_line(tw, xp + (o * L * inner + i) * xc, inner, xc, L, yp + (o * M * inner + i) * 2, inner, n, M, inverse);
  free(tw);
  return MI_OK;
}

/* STFT: signal [B, T, 1 or 2], frame_step, window [N]?, frame_length?: [B, frames, bins, 2],
 * frames = (T - N) / step + 1, each frame times the window, bins N / 2 + 1 when onesided. */
int32_t mi__ref_stft(mi__ref_call_t *c) {
  const mi_array_t *x, *w = NULL;
  mi_array_t *y;
  int64_t step, flen, dims[4];
  int onesided = mi_node_attr_int(c->node, "onesided", 1) != 0;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if ((rc = opt_int(c, 1, "frame_step", 0, &step)) != MI_OK) return rc;
  if (mi__ref_in(c, 2) && (rc = mi__ref_need(c, 2, F32, &w)) != MI_OK) return rc;
  if ((rc = opt_int(c, 3, "frame_length", w ? w->dims[0] : 0, &flen)) != MI_OK) return rc;
  int32_t xc = x->rank == 3 ? (int32_t)x->dims[2] : 0;
  if (xc != 1 && xc != 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "signal must be [batch, length, 1 or 2]");
  if (step < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "frame_step must be given and >= 1");
  if (w && (w->rank != 1 || w->dims[0] != flen))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "window must be 1-D with frame_length (%lld) values", (long long)flen);
  if (flen < 1 || flen > x->dims[1])
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "frame_length %lld must be in [1, %lld] (the signal's length)",
                        (long long)flen, (long long)x->dims[1]);
  if (onesided && xc == 2) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "onesided is supported for a real signal only");
  dims[0] = x->dims[0];
  dims[1] = (x->dims[1] - flen) / step + 1;
  dims[2] = onesided ? flen / 2 + 1 : flen;
  dims[3] = 2;
  float *frame = malloc((size_t)(flen * xc) * sizeof *frame);
  double *tw = twiddles(flen);
  if (!frame || !tw || (rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, dims, &y)) != MI_OK) {
    free(frame);
    free(tw);
    return frame && tw ? rc : mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  const float *xp = x->data, *wp = w ? w->data : NULL;
  float *yp = y->data;
  for (int64_t b = 0; b < dims[0]; b++)
    for (int64_t f = 0; f < dims[1]; f++) {
      const float *src = xp + (b * x->dims[1] + f * step) * xc;
      for (int64_t t = 0; t < flen * xc; t++) frame[t] = src[t] * (wp ? wp[t / xc] : 1.0f);
      dft_line(tw, frame, 1, xc, flen, yp + (b * dims[1] + f) * dims[2] * 2, 1, flen, dims[2], 0);
    }
  free(frame);
  free(tw);
  return MI_OK;
}

/* Hann, Hamming and Blackman windows of `size` (input 0): a0 - a1 cos(2 pi k / N) + a2 cos(4 pi
 * k / N), N = size when periodic (the default), size - 1 when symmetric. */
int32_t mi__ref_window_fn(mi__ref_call_t *c) {
  const char *op = c->node->op_type;
  int64_t size;
  mi_array_t *y;
  int periodic = mi_node_attr_int(c->node, "periodic", 1) != 0;
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = out_float(c)) != MI_OK) return rc;
  if (!mi__ref_in(c, 0)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "size is required");
  if ((rc = opt_int(c, 0, "size", 0, &size)) != MI_OK) return rc;
  if (size < 1) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "size %lld must be >= 1", (long long)size);
  if (!strcmp(op, "HammingWindow")) a0 = 25.0 / 46.0, a1 = 21.0 / 46.0;
  if (!strcmp(op, "BlackmanWindow")) a0 = 0.42, a1 = 0.5, a2 = 0.08;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 1, &size, &y)) != MI_OK) return rc;
  double N = (double)(periodic ? size : size - 1);
  float *yp = y->data;
  for (int64_t k = 0; k < size; k++) {
    double t = N > 0 ? 2.0 * M_PI * (double)k / N : 0.0;
    yp[k] = (float)(a0 - a1 * cos(t) + a2 * cos(2.0 * t));
  }
  return MI_OK;
}

/* MelWeightMatrix (num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
 * [dft_length / 2 + 1, num_mel_bins] triangles between num_mel_bins + 2 mel-spaced points, each
 * point's bin floor((dft_length + 1) * hz / sample_rate). The points step by the mel range over
 * num_mel_bins + 2, as ONNX Runtime computes them (the spec's reference code divides by
 * num_mel_bins + 1, reaching upper_edge_hertz: their matrices differ by whole bins). */
int32_t mi__ref_mel_weight(mi__ref_call_t *c) {
  int64_t mels, dft, rate, dims[2];
  const mi_array_t *lo, *hi;
  float flo, fhi;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK || (rc = out_float(c)) != MI_OK) return rc;
  for (int32_t i = 0; i < 5; i++)
    if (!mi__ref_in(c, i)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "all five inputs are required");
  if ((rc = opt_int(c, 0, "num_mel_bins", 0, &mels)) != MI_OK || (rc = opt_int(c, 1, "dft_length", 0, &dft)) != MI_OK ||
      (rc = opt_int(c, 2, "sample_rate", 0, &rate)) != MI_OK)
    return rc;
  if ((rc = mi__ref_need(c, 3, F32, &lo)) != MI_OK || (rc = mi__ref_need(c, 4, F32, &hi)) != MI_OK ||
      (rc = mi__ref_read_float(c, lo, "lower_edge_hertz", &flo)) != MI_OK ||
      (rc = mi__ref_read_float(c, hi, "upper_edge_hertz", &fhi)) != MI_OK)
    return rc;
  if (mels < 1 || dft < 1 || rate < 1 || mels > 4096)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "num_mel_bins (1..4096), dft_length and sample_rate must be >= 1");
  dims[0] = dft / 2 + 1;
  dims[1] = mels;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 2, dims, &y)) != MI_OK) return rc;
  int64_t bin[4096 + 2];
  double mlo = 2595.0 * log10(1.0 + flo / 700.0), mhi = 2595.0 * log10(1.0 + fhi / 700.0);
  double step = (mhi - mlo) / (double)(mels + 2);
  for (int64_t i = 0; i < mels + 2; i++) {
    double hz = 700.0 * (pow(10.0, ((double)i * step + mlo) / 2595.0) - 1.0);
    double b = floor((double)(dft + 1) * hz / (double)rate);
    if (!(b >= 0 && b < (double)dims[0])) /* NaN edges too */
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "the mel edges fall outside the %lld spectrum bins", (long long)dims[0]);
    bin[i] = (int64_t)b;
  }
  float *yp = y->data;
  for (int64_t m = 0; m < mels; m++) {
    int64_t l = bin[m], ce = bin[m + 1], h = bin[m + 2];
    if (ce == l) yp[ce * mels + m] = 1.0f;
    else
      for (int64_t j = l; j <= ce; j++) yp[j * mels + m] = (float)((double)(j - l) / (double)(ce - l));
    for (int64_t j = ce; j < h; j++) yp[j * mels + m] = (float)((double)(h - j) / (double)(h - ce));
  }
  return MI_OK;
}
