/* ref_rnn.c - reference LSTM (ONNX gate order i, o, f, c; default activations; forward,
 * reverse and bidirectional; peepholes; layout 0 and 1), as PyTorch exports it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref_ops.h"

static float sigm(float x) { return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x)); }

void mi__ref_lstm_cell(const float *g, const float *p, float *c, float *h, int64_t H) {
  for (int64_t j = 0; j < H; j++) {
    float gi = sigm(g[j] + (p ? p[j] * c[j] : 0.0f));
    float gf = sigm(g[2 * H + j] + (p ? p[2 * H + j] * c[j] : 0.0f));
    float gc = tanhf(g[3 * H + j]);
    c[j] = gf * c[j] + gi * gc;
    float go = sigm(g[H + j] + (p ? p[H + j] * c[j] : 0.0f));
    h[j] = go * tanhf(c[j]);
  }
}

int32_t mi__ref_lstm(mi__ref_call_t *c) {
  const mi_array_t *x;
  const float *W, *R, *B = NULL, *h0, *c0, *P;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x)) != MI_OK) return rc;
  const char *dir = mi_node_attr_string(c->node, "direction", "forward");
  int64_t H = mi_node_attr_int(c->node, "hidden_size", 0);
  int64_t dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  int reverse = strcmp(dir, "reverse") == 0;
  if (!reverse && dirs == 1 && strcmp(dir, "forward") != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "direction '%s' is unknown", dir);
  const int64_t L = mi_node_attr_int(c->node, "layout", 0);
  if ((L != 0 && L != 1) || mi_node_attr(c->node, "clip") || mi_node_attr(c->node, "activations") ||
      mi_node_attr_int(c->node, "input_forget", 0))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "only layout 0 or 1, default activations, no clip and no input_forget");
  if (mi__ref_in(c, 4))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "sequence_lens is not supported");
  if (x->rank != 3 || H <= 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be 3-D and hidden_size positive");
  /* layout 1: X [N, S, I], Y [N, S, D, H], the states [N, D, H] */
  int64_t S = x->dims[L ? 1 : 0], N = x->dims[L ? 0 : 1], I = x->dims[2];
  int64_t dw[3] = {dirs, 4 * H, I}, dr[3] = {dirs, 4 * H, H}, db[2] = {dirs, 8 * H};
  int64_t dh[3] = {L ? N : dirs, L ? dirs : N, H}, dp[2] = {dirs, 3 * H};
  if ((rc = mi__ref_need_f32(c, 1, 0, 3, dw, &W)) || (rc = mi__ref_need_f32(c, 2, 0, 3, dr, &R)) ||
      (rc = mi__ref_need_f32(c, 3, 1, 2, db, &B)) || (rc = mi__ref_need_f32(c, 5, 1, 3, dh, &h0)) ||
      (rc = mi__ref_need_f32(c, 6, 1, 3, dh, &c0)) || (rc = mi__ref_need_f32(c, 7, 1, 2, dp, &P)))
    return rc;
  mi_array_t *y = NULL, *yh = NULL, *yc = NULL;
  int64_t dy[4] = {L ? N : S, L ? S : dirs, L ? dirs : N, H};
  if (mi__ref_out_wanted(c, 0) && (rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, dy, &y)))
    return rc;
  if (mi__ref_out_wanted(c, 1) && (rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 3, dh, &yh)))
    return rc;
  if (mi__ref_out_wanted(c, 2) && (rc = mi__ref_make_out(c, 2, MI_DTYPE_FLOAT32, 3, dh, &yc)))
    return rc;
  float *h = calloc((size_t)(N * H), sizeof *h), *cs = calloc((size_t)(N * H), sizeof *cs);
  float *g = calloc((size_t)(4 * H), sizeof *g);
  if (!h || !cs || !g) {
    free(h);
    free(cs);
    free(g);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  const float *xd = x->data;
  for (int64_t d = 0; d < dirs; d++) {
    const float *w = W + d * 4 * H * I, *r = R + d * 4 * H * H;
    const float *b = B ? B + d * 8 * H : NULL, *p = P ? P + d * 3 * H : NULL;
    int back = reverse || d == 1;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < H; j++) {
        int64_t at = (L ? n * dirs + d : d * N + n) * H + j;
        h[n * H + j] = h0 ? h0[at] : 0.0f;
        cs[n * H + j] = c0 ? c0[at] : 0.0f;
      }
    for (int64_t step = 0; step < S; step++) {
      int64_t t = back ? S - 1 - step : step;
      for (int64_t n = 0; n < N; n++) {
        const float *xt = xd + (L ? n * S + t : t * N + n) * I;
        float *hn = h + n * H, *cn = cs + n * H;
        for (int64_t j = 0; j < 4 * H; j++) { /* all four gates read the previous h */
          double acc = b ? (double)b[j] + b[4 * H + j] : 0.0;
          for (int64_t k = 0; k < I; k++) acc += (double)w[j * I + k] * xt[k];
          for (int64_t k = 0; k < H; k++) acc += (double)r[j * H + k] * hn[k];
          g[j] = (float)acc;
        }
        mi__ref_lstm_cell(g, p, cn, hn, H);
        if (y)
          memcpy((float *)y->data + (L ? (n * S + t) * dirs + d : (t * dirs + d) * N + n) * H, hn,
                 (size_t)H * sizeof *hn);
      }
    }
    for (int64_t n = 0; n < N; n++) {
      int64_t at = (L ? n * dirs + d : d * N + n) * H;
      if (yh) memcpy((float *)yh->data + at, h + n * H, (size_t)H * sizeof *h);
      if (yc) memcpy((float *)yc->data + at, cs + n * H, (size_t)H * sizeof *cs);
    }
  }
  free(h);
  free(cs);
  free(g);
  return MI_OK;
}
