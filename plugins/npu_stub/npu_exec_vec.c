/* npu_exec_vec.c - vector-unit ops (activations as INT8 tables, elementwise, pools, BN, copies)
 * and the FP16 path's rounding. */
#include "npu_internal.h"

#include <math.h>
#include <string.h>

float npu__fp16_round(float x) { return mi_sdk_half_to_float(mi_sdk_float_to_half(x)); }

int8_t npu__quant(double real, float scale, int32_t zp) {
  double r = nearbyint(real / (double)scale) + zp;
  if (r < -128) r = -128;
  if (r > 127) r = 127;
  return (int8_t)r;
}

static double act(const npu_node_t *n, double x) {
  switch (n->op) {
  case NPU_RELU: return x > 0 ? x : 0;
  case NPU_CLIP: return x < n->fmin ? n->fmin : (x > n->fmax ? n->fmax : x);
  case NPU_HARDSWISH: {
    double g = x / 6 + 0.5;
    return x * (g < 0 ? 0 : (g > 1 ? 1 : g));
  }
  case NPU_HARDSIGMOID: {
    double g = n->alpha * x + n->beta;
    return g < 0 ? 0 : (g > 1 ? 1 : g);
  }
  default: return 1.0 / (1.0 + exp(-x)); /* Sigmoid */
  }
}

static int is_lut_op(int op) {
  return op == NPU_RELU || op == NPU_CLIP || op == NPU_HARDSWISH || op == NPU_HARDSIGMOID ||
         op == NPU_SIGMOID;
}

/* INT8 activations: the function is evaluated once per input code, in double. */
void npu__build_lut(mi_kernel_t *k, npu_node_t *n) {
  const npu_tensor_t *x = &k->t[n->in[0]], *y = &k->t[n->out];
  int q;
  if (!is_lut_op(n->op)) return;
  for (q = -128; q < 128; q++)
    n->lut[q + 128] = npu__quant(act(n, (double)x->scale * (q - x->zp)), y->scale, y->zp);
}

static double real_at(const npu_tensor_t *t, int64_t i, int fp) {
  return fp ? (double)t->f[i] : (double)t->scale * (t->q[i] - t->zp);
}

static void put(npu_tensor_t *y, int64_t i, double v, int fp) {
  if (fp) y->f[i] = npu__fp16_round((float)v);
  else
    y->q[i] = npu__quant(v, y->scale, y->zp);
}

/* Offset into a broadcast operand for output index `i`. */
static int64_t bcast(const npu_tensor_t *a, const npu_tensor_t *y, int64_t i) {
  int64_t off = 0, stride = 1;
  int32_t d;
  for (d = 0; d < y->rank; d++) {
    int32_t yd = y->rank - 1 - d, ad = a->rank - 1 - d;
    int64_t idx = i % y->dims[yd];
    i /= y->dims[yd];
    if (ad < 0) break;
    if (a->dims[ad] != 1) off += idx * stride;
    stride *= a->dims[ad];
  }
  return off;
}

static void pool(mi_kernel_t *k, const npu_node_t *n) {
  const npu_tensor_t *x = &k->t[n->in[0]];
  npu_tensor_t *y = &k->t[n->out];
  int64_t NC = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t Ho = y->dims[2], Wo = y->dims[3], c, oh, ow, r, s;
  int gap = n->op == NPU_GAP;
  int64_t kh = gap ? H : n->kh, kw = gap ? W : n->kw;
  for (c = 0; c < NC; c++) {
    for (oh = 0; oh < Ho; oh++) {
      for (ow = 0; ow < Wo; ow++) {
        int64_t count = 0, padded = 0, isum = 0, best_i = -1;
        double fsum = 0, best = -INFINITY;
        for (r = 0; r < kh; r++) {
          int64_t ih = gap ? r : oh * n->sh - n->pt + r * n->dh;
          for (s = 0; s < kw; s++) {
            int64_t iw = gap ? s : ow * n->sw - n->pl + s * n->dw;
            int64_t xi;
            if (!gap && (ih >= H + n->pb || iw >= W + n->pr)) continue; /* past the pads */
            padded++;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            xi = (c * H + ih) * W + iw;
            count++;
            if (k->fp) {
              fsum += x->f[xi];
              if (x->f[xi] > best) best = x->f[xi];
            } else {
              isum += x->q[xi] - x->zp;
              if (best_i < 0 || x->q[xi] > x->q[best_i]) best_i = xi;
            }
          }
        }
        {
          int64_t yi = (c * Ho + oh) * Wo + ow;
          int64_t div = n->count_include_pad ? padded : count;
          if (n->op == NPU_MAXPOOL) {
            if (k->fp) y->f[yi] = (float)best;
            else if (best_i < 0)
              y->q[yi] = (int8_t)y->zp;
            else if (x->scale == y->scale && x->zp == y->zp)
              y->q[yi] = x->q[best_i];
            else
              y->q[yi] = npu__quant(real_at(x, best_i, 0), y->scale, y->zp);
          } else if (k->fp) {
            y->f[yi] = npu__fp16_round((float)(div ? fsum / div : 0));
          } else {
            y->q[yi] = npu__quant(div ? (double)x->scale * (double)isum / (double)div : 0,
                                  y->scale, y->zp);
          }
        }
      }
    }
  }
}

/* Copies `count` values, requantizing when the INT8 parameters differ. */
static void copy_vals(const npu_tensor_t *x, int64_t xo, npu_tensor_t *y, int64_t yo,
                      int64_t count, int fp) {
  int64_t i;
  if (fp) memcpy(y->f + yo, x->f + xo, sizeof(float) * (size_t)count);
  else if (x->scale == y->scale && x->zp == y->zp)
    memcpy(y->q + yo, x->q + xo, (size_t)count);
  else
    for (i = 0; i < count; i++) y->q[yo + i] = npu__quant(real_at(x, xo + i, 0), y->scale, y->zp);
}

/* QuantizeLinear / DequantizeLinear as ONNX specifies them, in the FP32 the float side is held
 * in: q = saturate(round_half_to_even(x / s) + z), x = (q - z) * s. The division is done in
 * double (as the host reference does), so a quotient is never rounded onto a tie first; for
 * 8-bit codes (q - z) * s is exact in double, leaving one rounding to the float. UINT8 codes
 * are held as INT8 codes u - 128 (npu_prepare.c). */
static void convert(mi_kernel_t *k, const npu_node_t *n) {
  const npu_tensor_t *x = &k->t[n->in[0]], *sc = &k->t[n->in[1]];
  const npu_tensor_t *zp = n->nin > 2 && n->in[2] >= 0 ? &k->t[n->in[2]] : NULL;
  npu_tensor_t *y = &k->t[n->out];
  int32_t off = n->qlo == 0 ? 128 : 0; /* stored code + off = the code's value */
  int64_t i;
  for (i = 0; i < y->numel; i++) {
    int64_t ch = n->qdim == 1 ? 0 : (i / n->qinner) % n->qdim;
    double s = (double)sc->f[ch], z = zp ? (double)(zp->q[ch] + off) : 0.0;
    if (n->op == NPU_QUANT) {
      double v = nearbyint((double)x->f[i] / s) + z;
      if (isnan(v)) v = z; /* NaN has no code: the zero point's (the reference leaves it open) */
      v = v < n->qlo ? n->qlo : (v > n->qhi ? n->qhi : v);
      y->q[i] = (int8_t)((int32_t)v - off);
    } else {
      y->f[i] = (float)(((double)(x->q[i] + off) - z) * s);
    }
  }
}

void npu__exec_vec(mi_kernel_t *k, const npu_node_t *n) {
  const npu_tensor_t *x = &k->t[n->in[0]];
  npu_tensor_t *y = &k->t[n->out];
  int64_t i, j;
  int fp = k->fp;
  if (is_lut_op(n->op)) {
    for (i = 0; i < y->numel; i++) {
      if (fp) y->f[i] = npu__fp16_round((float)act(n, x->f[i]));
      else
        y->q[i] = n->lut[x->q[i] + 128];
    }
    return;
  }
  switch (n->op) {
  case NPU_ADD:
  case NPU_MUL: {
    const npu_tensor_t *b = &k->t[n->in[1]];
    for (i = 0; i < y->numel; i++) {
      double va = real_at(x, bcast(x, y, i), fp), vb = real_at(b, bcast(b, y, i), fp);
      put(y, i, n->op == NPU_ADD ? va + vb : va * vb, fp);
    }
    return;
  }
  case NPU_GAP:
  case NPU_AVGPOOL:
  case NPU_MAXPOOL: pool(k, n); return;
  case NPU_BN: {
    const npu_tensor_t *g = &k->t[n->in[1]], *bb = &k->t[n->in[2]], *mu = &k->t[n->in[3]],
                       *var = &k->t[n->in[4]];
    int64_t C = x->dims[1], inner = x->numel / (x->dims[0] * C);
    for (i = 0; i < x->numel; i++) {
      int64_t c = (i / inner) % C;
      if (fp) {
        float sc = g->f[c] / sqrtf(var->f[c] + n->eps);
        y->f[i] = npu__fp16_round((x->f[i] - mu->f[c]) * sc + bb->f[c]);
      } else {
        double v = (double)g->f[c] * (real_at(x, i, 0) - mu->f[c]) /
                       sqrt((double)var->f[c] + (double)n->eps) +
                   bb->f[c];
        y->q[i] = npu__quant(v, y->scale, y->zp);
      }
    }
    return;
  }
  case NPU_QUANT:
  case NPU_DEQUANT: convert(k, n); return;
  case NPU_FLATTEN:
  case NPU_RESHAPE: copy_vals(x, 0, y, 0, y->numel, fp); return;
  default: { /* Concat */
    int64_t outer = 1, inner = 1, off = 0;
    int32_t d;
    for (d = 0; d < n->axis; d++) outer *= y->dims[d];
    for (d = n->axis + 1; d < y->rank; d++) inner *= y->dims[d];
    for (j = 0; j < n->nin; j++) {
      const npu_tensor_t *a = &k->t[n->in[j]];
      int64_t chunk = a->dims[n->axis] * inner;
      for (i = 0; i < outer; i++)
        copy_vals(a, i * chunk, y, i * y->dims[n->axis] * inner + off, chunk, fp);
      off += chunk;
    }
    return;
  }
  }
}
