/* npu_exec_mac.c - exact arithmetic of the MAC ops: INT8 with int32 accumulation, or FP16. */
#include "npu_internal.h"

#include <math.h>

/* Requantization of an int32 accumulator: round half to even (nearbyint in the default
 * rounding mode), add the output zero point, saturate to INT8. */
static int8_t requant(double acc_times_multiplier, int32_t zp) {
  double r = nearbyint(acc_times_multiplier) + zp;
  if (r < -128) r = -128;
  if (r > 127) r = 127;
  return (int8_t)r;
}

static double w_scale(const npu_tensor_t *w, int64_t c) {
  return w->ccount ? (double)w->cscale[c] : (double)w->scale;
}

/* Bias: INT32 joins the accumulator (accumulator units, scale s_in * s_w[c]); FLOAT32 is
 * added by the output stage in the requantization, in output units, so a QDQ model whose bias
 * stays FP32 (the host quantizer's form) gets exactly the reference's rounding. */
static int32_t bias_acc(const npu_tensor_t *b, int64_t i) {
  return b && b->i32 ? b->i32[b->numel == 1 ? 0 : i] : 0;
}

static double bias_out(const npu_tensor_t *b, int64_t i, double beta, float y_scale) {
  return b && b->f ? beta * (double)b->f[b->numel == 1 ? 0 : i] / (double)y_scale : 0.0;
}

static void conv(mi_kernel_t *k, const npu_node_t *n) {
  const npu_tensor_t *x = &k->t[n->in[0]], *w = &k->t[n->in[1]];
  const npu_tensor_t *b = n->nin > 2 && n->in[2] >= 0 ? &k->t[n->in[2]] : NULL;
  npu_tensor_t *y = &k->t[n->out];
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t M = y->dims[1], Ho = y->dims[2], Wo = y->dims[3];
  int64_t cg = C / n->group, mg = M / n->group, KH = w->dims[2], KW = w->dims[3];
  int64_t in, oc, oh, ow, ic, r, s;
  for (in = 0; in < N; in++) {
    for (oc = 0; oc < M; oc++) {
      int64_t g = oc / mg;
      const int64_t wbase = oc * cg * KH * KW;
      double sw = k->fp ? 1 : w_scale(w, oc);
      double mult = k->fp ? 0 : (double)x->scale * sw / (double)y->scale;
      int32_t bq = k->fp ? 0 : bias_acc(b, oc);
      double bo = k->fp ? 0 : bias_out(b, oc, 1.0, y->scale);
      float bf = k->fp && b ? b->f[b->numel == 1 ? 0 : oc] : 0.0f;
      for (oh = 0; oh < Ho; oh++) {
        for (ow = 0; ow < Wo; ow++) {
          int32_t acc = bq;
          float facc = 0.0f;
          for (ic = 0; ic < cg; ic++) {
            int64_t xc = (in * C + g * cg + ic) * H;
            const int64_t wc = wbase + ic * KH * KW;
            for (r = 0; r < KH; r++) {
              int64_t ih = oh * n->sh - n->pt + r * n->dh;
              if (ih < 0 || ih >= H) continue;
              for (s = 0; s < KW; s++) {
                int64_t iw = ow * n->sw - n->pl + s * n->dw;
                if (iw < 0 || iw >= W) continue;
                if (k->fp)
                  facc += x->f[(xc + ih) * W + iw] * w->f[wc + r * KW + s];
                else
                  acc += ((int32_t)x->q[(xc + ih) * W + iw] - x->zp) *
                         ((int32_t)w->q[wc + r * KW + s] - w->zp);
              }
            }
          }
          if (k->fp)
            y->f[((in * M + oc) * Ho + oh) * Wo + ow] = npu__fp16_round(facc + bf);
          else
            y->q[((in * M + oc) * Ho + oh) * Wo + ow] =
                requant((double)acc * mult + bo, y->zp);
        }
      }
    }
  }
}

static void matmul(mi_kernel_t *k, const npu_node_t *n) {
  const npu_tensor_t *a = &k->t[n->in[0]], *b = &k->t[n->in[1]];
  const npu_tensor_t *c = n->op == NPU_GEMM && n->nin > 2 && n->in[2] >= 0 ? &k->t[n->in[2]] : NULL;
  npu_tensor_t *y = &k->t[n->out];
  int64_t M = a->dims[a->rank - (n->trans_a ? 1 : 2)];
  int64_t K = a->dims[a->rank - (n->trans_a ? 2 : 1)];
  int64_t N = b->dims[b->rank - (n->trans_b ? 2 : 1)];
  int64_t batch = y->numel / (M * N), bt, i, j, kk;
  for (bt = 0; bt < batch; bt++) {
    int64_t ao = bt * M * K, bo = b->rank == 2 ? 0 : bt * K * N, yo = bt * M * N;
    for (j = 0; j < N; j++) {
      double sb = k->fp ? 1 : w_scale(b, j);
      double mult = k->fp ? 0 : (double)n->alpha * (double)a->scale * sb / (double)y->scale;
      for (i = 0; i < M; i++) {
        int64_t ci = c ? (c->numel == N ? j : (c->numel == 1 ? 0 : i * N + j)) : 0;
        int32_t acc = 0;
        float facc = 0.0f;
        for (kk = 0; kk < K; kk++) {
          int64_t ai = ao + (n->trans_a ? kk * M + i : i * K + kk);
          int64_t bi = bo + (n->trans_b ? j * K + kk : kk * N + j);
          if (k->fp) facc += a->f[ai] * b->f[bi];
          else
            acc += ((int32_t)a->q[ai] - a->zp) * ((int32_t)b->q[bi] - b->zp);
        }
        if (k->fp) {
          float v = n->alpha * facc + (c ? n->beta * c->f[ci] : 0.0f);
          y->f[yo + i * N + j] = npu__fp16_round(v);
        } else {
          /* INT32 bias joins the accumulator, FP32 bias the requantization */
          if (c) acc += bias_acc(c, ci);
          y->q[yo + i * N + j] = requant((double)acc * mult + bias_out(c, ci, n->beta, y->scale),
                                         y->zp);
        }
      }
    }
  }
}

void npu__exec_mac(mi_kernel_t *k, const npu_node_t *n) {
  if (n->op == NPU_CONV) conv(k, n);
  else
    matmul(k, n);
}
