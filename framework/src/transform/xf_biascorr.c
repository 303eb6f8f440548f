/* xf_biascorr.c - bias correction of quantized weights: the expected output shift
 * E[(Wq - W) x], from the calibration inputs' per-channel means, folded into the bias. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

int32_t mi__xf_bias_input_axis(const mi_graph_t *g, int32_t n) {
  const mi_node_t *x = &g->nodes[n];
  if (!mi__xf_is_weighted(g, n)) return -1;
  if (strcmp(x->op_type, "Conv") == 0) return 1;
  /* Gemm's A is 2-D; its reduction axis is 1, or 0 when transposed. MatMul has no bias input:
   * a correction there would need a new Add node, which an INT8 device would have to fuse. */
  if (strcmp(x->op_type, "Gemm") == 0) return mi_node_attr_int(x, "transA", 0) ? 0 : 1;
  return -1;
}

static int64_t ints_at(const mi_attr_t *a, int32_t i, int64_t dflt) {
  return a && a->type == MI_ATTR_INTS && i < a->count ? a->ints[i] : dflt;
}

/* valid[t]: the share of output positions at which kernel tap t reads the input rather than
 * the zero padding (the product over the spatial axes), so that the shift of a small feature
 * map, where the border taps often read padding, is not over-corrected. 0 when the shapes are
 * not static. */
static int tap_validity(const mi_graph_t *g, const mi_node_t *x, const mi_tensor_t *wt, int64_t k,
                        double *valid) {
  const mi_tensor_t *in = &g->tensors[x->inputs[0]], *out = &g->tensors[x->outputs[0]];
  const mi_attr_t *st = mi_node_attr(x, "strides"), *dl = mi_node_attr(x, "dilations");
  const mi_attr_t *pads = mi_node_attr(x, "pads");
  const char *ap = mi_node_attr_string(x, "auto_pad", "NOTSET");
  int32_t nsp = wt->rank - 2;
  for (int64_t t = 0; t < k; t++) valid[t] = 1.0;
  if (in->rank != wt->rank || out->rank != wt->rank) return 0;
  for (int32_t i = nsp - 1, inner = 1; i >= 0; inner *= (int32_t)wt->dims[2 + i], i--) {
    int64_t n = in->dims[2 + i], m = out->dims[2 + i], s = ints_at(st, i, 1), d = ints_at(dl, i, 1);
    int64_t kk = wt->dims[2 + i], ek = (kk - 1) * d + 1, pb = ints_at(pads, i, 0);
    if (n <= 0 || m <= 0) return 0;
    if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
      int64_t total = (m - 1) * s + ek - n;
      total = total > 0 ? total : 0;
      pb = strcmp(ap, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
    } else if (strcmp(ap, "VALID") == 0) {
      pb = 0;
    }
    for (int64_t kt = 0; kt < kk; kt++) {
      int64_t hit = 0;
      for (int64_t o = 0; o < m; o++) {
        int64_t at = o * s - pb + kt * d;
        hit += at >= 0 && at < n;
      }
      for (int64_t t = 0; t < k; t++)
        if ((t / inner) % kk == kt) valid[t] *= (double)hit / (double)m;
    }
  }
  return 1;
}

/* shift[o] for Conv: sum over the group's input channels and the kernel taps of
 * dW * mean * the tap's share of positions inside the input. */
static int conv_shift(const mi_graph_t *g, const mi_node_t *x, const float *w, const float *wq,
                      const double *mean, int64_t mc, double *shift, int64_t *oc) {
  const mi_tensor_t *wt = &g->tensors[x->inputs[1]];
  int64_t group = mi_node_attr_int(x, "group", 1), icg, k = 1;
  double *valid;
  if (wt->rank < 3 || group < 1) return 0;
  *oc = wt->dims[0];
  icg = wt->dims[1];
  for (int32_t d = 2; d < wt->rank; d++) k *= wt->dims[d];
  if (icg * group != mc || *oc % group) return 0;
  if (!(valid = malloc((size_t)k * sizeof *valid))) return -1;
  tap_validity(g, x, wt, k, valid);
  for (int64_t o = 0; o < *oc; o++) {
    int64_t base = (o / (*oc / group)) * icg;
    double s = 0.0;
    for (int64_t j = 0; j < icg; j++) {
      const float *a = w + (o * icg + j) * k, *b = wq + (o * icg + j) * k;
      double dw = 0.0;
      for (int64_t i = 0; i < k; i++) dw += ((double)b[i] - (double)a[i]) * valid[i];
      s += dw * mean[base + j];
    }
    shift[o] = s;
  }
  free(valid);
  return 1;
}

/* shift[c] for Gemm: alpha * sum_k dB[k, c] * mean[k]. */
static int gemm_shift(const mi_graph_t *g, const mi_node_t *x, const float *w, const float *wq,
                      const double *mean, int64_t mc, double *shift, int64_t *nn) {
  const mi_tensor_t *wt = &g->tensors[x->inputs[1]];
  int transb = (int)mi_node_attr_int(x, "transB", 0);
  double alpha = mi_node_attr_float(x, "alpha", 1.0f);
  if (wt->rank != 2) return 0;
  int64_t k = transb ? wt->dims[1] : wt->dims[0];
  *nn = transb ? wt->dims[0] : wt->dims[1];
  if (k != mc) return 0;
  for (int64_t c = 0; c < *nn; c++) {
    double s = 0.0;
    for (int64_t i = 0; i < k; i++) {
      int64_t at = transb ? c * k + i : i * *nn + c;
      s += ((double)wq[at] - (double)w[at]) * mean[i];
    }
    shift[c] = alpha * s;
  }
  return 1;
}

int32_t mi__xf_bias_correct(mi_graph_t *g, int32_t n, const float *w, const float *wq,
                            const double *mean, int64_t mean_count, mi_error_t *err) {
  mi_node_t *x = &g->nodes[n];
  int is_conv = strcmp(x->op_type, "Conv") == 0;
  int64_t m = 0, wn = mi__xf_numel(g, x->inputs[1]), bn;
  int32_t rc = MI_OK, tb;
  double *shift = NULL;
  float *nb = NULL, beta = is_conv ? 1.0f : mi_node_attr_float(x, "beta", 1.0f);
  const float *b;
  if (!w || !wq || !mean || wn <= 0) return MI_OK;
  /* The output count is at most the weight's element count. */
  if (!(shift = calloc((size_t)wn + 1, sizeof *shift))) goto oom;
  int got = is_conv ? conv_shift(g, x, w, wq, mean, mean_count, shift, &m)
                    : gemm_shift(g, x, w, wq, mean, mean_count, shift, &m);
  if (got < 0) goto oom;
  if (got == 0) goto done; /* shapes this correction does not cover: the layer stays as quantized */
  b = mi__xf_const_f32(g, x, 2);
  bn = x->input_count > 2 && x->inputs[2] >= 0 ? mi__xf_numel(g, x->inputs[2]) : 0;
  /* A runtime bias, or one broadcast over rows (Gemm's C of [M, N]): leave it. */
  if ((x->input_count > 2 && x->inputs[2] >= 0 && !b) || (bn != 0 && bn != 1 && bn != m)) goto done;
  if (!(nb = malloc((size_t)m * sizeof *nb))) goto oom;
  for (int64_t c = 0; c < m; c++)
    nb[c] = (float)((b ? (double)beta * b[bn == 1 ? 0 : c] : 0.0) - shift[c]);
  tb = mi__xf_add_const(g, g->nodes[n].name, ".b_corr", MI_DTYPE_FLOAT32, 1, &m, nb,
                        (size_t)m * sizeof *nb);
  if (tb < 0 || mi__xf_set_input(g, n, 2, tb) != MI_OK) goto oom;
  if (!is_conv && mi_node_set_float(g, n, "beta", 1.0f) != MI_OK) goto oom;
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "bias correction: node '%s': out of memory",
                 g->nodes[n].name);
done:
  free(shift);
  free(nb);
  return rc;
}
