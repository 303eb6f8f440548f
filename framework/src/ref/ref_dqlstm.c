/* ref_dqlstm.c - reference com.microsoft DynamicQuantizeLSTM in ONNX Runtime 1.30's arithmetic
 * (its CPU kernel, the deep CPU LSTM with quantized GEMMs): per direction, X [S*N, I] is quantized
 * once to UINT8 with the range of all its values (0 included; scale (max - min) / 255 in float, zero
 * point nearbyint(-min / scale) clamped, codes saturate(nearbyint(x / scale) + zp), as
 * DynamicQuantizeLinear), its exact int32 products with the INT8/UINT8 W codes (minus their zero
 * point) scaled by float(x_scale * w_scale[column]); at every step the hidden state of all N rows
 * is quantized the same way and its R product, scaled likewise, added to the step's gates; then
 * the biases (Wb + Rb), peepholes and the default activations as the float LSTM (ref_rnn.c).
 * Attributes and inputs as LSTM; sequence_lens, clip, other activations refused by name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dqlstm.h"
#include "ref/ref_ops.h"

/* n floats quantized to UINT8 codes q with the range of their values, as ONNX Runtime's
 * GetQuantizationParameter + MlasQuantizeLinear; the scale and zero point out. */
static void quantize_rows(const float *x, int64_t n, uint8_t *q, float *scale, int32_t *zp) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  float s = hi == lo ? 1.0f : (hi - lo) / 255.0f, z0 = 0.0f - lo / s;
  z0 = z0 < 0.0f ? 0.0f : z0 > 255.0f ? 255.0f
                                      : z0;
  int32_t z = (int32_t)nearbyintf(z0);
  for (int64_t i = 0; i < n; i++) {
    float v = x[i] / s, lo_v = (float)(0 - z), hi_v = (float)(255 - z);
    v = v < lo_v ? lo_v : v > hi_v ? hi_v
                                   : v;
    q[i] = (uint8_t)((int32_t)nearbyintf(v) + z);
  }
  *scale = s;
  *zp = z;
}

/* The 8-bit weight w [rows, 4H] of one direction (codes, their scales and zero points). */
typedef struct qw {
  const void *codes;
  int s8;
  const float *scale; /* 1 or 4H values */
  const void *zero;
  int64_t per_col, rows;
} qw_t;

static int32_t wcode(const qw_t *w, int64_t i) {
  return w->s8 ? ((const int8_t *)w->codes)[i] : ((const uint8_t *)w->codes)[i];
}

static int32_t wzero(const qw_t *w, int64_t j) {
  int64_t p = w->per_col ? j : 0;
  return w->s8 ? ((const int8_t *)w->zero)[p] : ((const uint8_t *)w->zero)[p];
}

/* out[m][j] (+)= float(sum_k (a[m][k] - za) * (w[k][j] - zw[j])) * float(sa * sw[j]) for M rows. */
static void qgemm(const uint8_t *a, int64_t M, int32_t za, float sa, const qw_t *w, int64_t h4, float *out, int acc) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t j = 0; j < h4; j++) {
      int32_t zw = wzero(w, j);
      int64_t sum = 0;
      for (int64_t k = 0; k < w->rows; k++) sum += (int64_t)(a[m * w->rows + k] - za) * (wcode(w, k * h4 + j) - zw);
      float v = (float)(int32_t)sum * (sa * w->scale[w->per_col ? j : 0]);
      out[m * h4 + j] = acc ? out[m * h4 + j] + v : v;
    }
}

static void view_of(const mi_array_t *x, mi__dql_in_t *v) {
  v->present = x != NULL;
  v->dtype = x ? x->dtype : MI_DTYPE_UNDEFINED;
  v->rank = x ? x->rank : -1;
  v->dims = x ? x->dims : NULL;
  v->data = x ? x->data : NULL;
}

int32_t mi__ref_dqlstm(mi__ref_call_t *c) {
  mi__dql_in_t ins[12];
  const mi_array_t *x;
  char why[256];
  int32_t rc;
  for (int32_t k = 0; k < 12; k++) view_of(k < c->nin ? mi__ref_in(c, k) : NULL, &ins[k]);
  if ((rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x)) != MI_OK) return rc;
  if (x->rank != 3) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be 3-D [seq_length, batch, input_size]");
  if (mi__dqlstm_check(c->node, ins, why, sizeof why))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const char *dir = mi_node_attr_string(c->node, "direction", "forward");
  int64_t H = mi_node_attr_int(c->node, "hidden_size", 0), dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  int reverse = strcmp(dir, "reverse") == 0;
  if (!reverse && dirs == 1 && strcmp(dir, "forward") != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "direction '%s' is unknown", dir);
  if (mi_node_attr_int(c->node, "layout", 0) != 0 || mi_node_attr(c->node, "clip") || mi_node_attr(c->node, "activations") ||
      mi_node_attr_int(c->node, "input_forget", 0))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "only layout 0, default activations, no clip and no input_forget");
  if (mi__ref_in(c, 4)) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "sequence_lens is not supported");
  int64_t S = x->dims[0], N = x->dims[1], I = x->dims[2], h4 = 4 * H;
  if (ins[1].dims[1] != I) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "W has %lld rows, X's input_size is %lld",
                                               (long long)ins[1].dims[1], (long long)I);
  const float *B, *h0, *c0, *P;
  int64_t db[2] = {dirs, 8 * H}, dh[3] = {dirs, N, H}, dp[2] = {dirs, 3 * H}, dy[4] = {S, dirs, N, H};
  if ((rc = mi__ref_need_f32(c, 3, 1, 2, db, &B)) || (rc = mi__ref_need_f32(c, 5, 1, 3, dh, &h0)) || (rc = mi__ref_need_f32(c, 6, 1, 3, dh, &c0)) ||
      (rc = mi__ref_need_f32(c, 7, 1, 2, dp, &P)))
    return rc;
  mi_array_t *y = NULL, *yh = NULL, *yc = NULL;
  if (mi__ref_out_wanted(c, 0) && (rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, dy, &y))) return rc;
  if (mi__ref_out_wanted(c, 1) && (rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 3, dh, &yh))) return rc;
  if (mi__ref_out_wanted(c, 2) && (rc = mi__ref_make_out(c, 2, MI_DTYPE_FLOAT32, 3, dh, &yc))) return rc;
  int64_t big = S * N * I > N * H ? S * N * I : N * H;
  float *h = calloc((size_t)(N * H), sizeof *h), *cs = calloc((size_t)(N * H), sizeof *cs);
  float *g = malloc(sizeof *g * (size_t)(S * N * h4 + 1));
  uint8_t *q = malloc((size_t)big + 1);
  if (!h || !cs || !g || !q) {
    free(h), free(cs), free(g), free(q);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  const float *xd = x->data;
  float xs;
  int32_t xz;
  quantize_rows(xd, S * N * I, q, &xs, &xz);
  uint8_t *xq = malloc((size_t)(S * N * I) + 1);
  if (!xq) {
    free(h), free(cs), free(g), free(q);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  memcpy(xq, q, (size_t)(S * N * I));
  for (int64_t d = 0; d < dirs; d++) {
    int64_t nsw = mi__in_view_numel(&ins[8]), nsr = mi__in_view_numel(&ins[10]);
    qw_t w = {(const uint8_t *)ins[1].data + d * I * h4, ins[1].dtype == MI_DTYPE_INT8,
              (const float *)ins[8].data + (nsw == dirs ? d : d * h4), NULL, nsw != dirs, I};
    qw_t r = {(const uint8_t *)ins[2].data + d * H * h4, ins[2].dtype == MI_DTYPE_INT8,
              (const float *)ins[10].data + (nsr == dirs ? d : d * h4), NULL, nsr != dirs, H};
    w.zero = (const uint8_t *)ins[9].data + (nsw == dirs ? d : d * h4);
    r.zero = (const uint8_t *)ins[11].data + (nsr == dirs ? d : d * h4);
    const float *b = B ? B + d * 8 * H : NULL, *p = P ? P + d * 3 * H : NULL;
    int back = reverse || d == 1;
    qgemm(xq, S * N, xz, xs, &w, h4, g, 0); /* every step's input gates at once */
    for (int64_t k = 0; k < N * H; k++) {
      h[k] = h0 ? h0[d * N * H + k] : 0.0f;
      cs[k] = c0 ? c0[d * N * H + k] : 0.0f;
    }
    for (int64_t step = 0; step < S; step++) {
      int64_t t = back ? S - 1 - step : step;
      float hs, *gt = g + t * N * h4;
      int32_t hz;
      quantize_rows(h, N * H, q, &hs, &hz); /* the previous hidden state of all rows */
      qgemm(q, N, hz, hs, &r, h4, gt, 1);
      for (int64_t n = 0; n < N; n++) {
        float *gn = gt + n * h4, *hn = h + n * H, *cn = cs + n * H;
        if (b)
          for (int64_t j = 0; j < h4; j++) gn[j] += b[j] + b[h4 + j];
        mi__ref_lstm_cell(gn, p, cn, hn, H);
        if (y) memcpy((float *)y->data + ((t * dirs + d) * N + n) * H, hn, (size_t)H * sizeof *hn);
      }
    }
    if (yh) memcpy((float *)yh->data + d * N * H, h, (size_t)(N * H) * sizeof *h);
    if (yc) memcpy((float *)yc->data + d * N * H, cs, (size_t)(N * H) * sizeof *cs);
  }
  free(h), free(cs), free(g), free(q), free(xq);
  return MI_OK;
}
