/* nbits.c - mi-quantize's 4-bit weight-only forms: ONNX Runtime's MatMulNBits (its
 * matmul_nbits_quantizer) and opset 21's blocked INT4 DequantizeLinear, with the block parameter
 * rules of its blockwise quantizer (MLAS): asymmetric blocks over [min(lo, 0), max(hi, 0)] in
 * 15 steps, symmetric ones scaled so that the value of largest magnitude lands on -8. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mi_quantize.h"

/* One block's parameters: codes q in [0, 15] with zero point *zp, value = (q - zp) * scale. */
static void block_params(const float *v, int64_t stride, int64_t count, int sym, float *scale, int *zp) {
  if (sym) {
    double m = 0;
    for (int64_t i = 0; i < count; i++)
      if (fabs((double)v[i * stride]) > fabs(m)) m = v[i * stride];
    *scale = m == 0 ? 1.0f : (float)(m / -8.0);
    *zp = 8;
    return;
  }
  double lo = 0, hi = 0;
  for (int64_t i = 0; i < count; i++) {
    lo = fmin(lo, (double)v[i * stride]);
    hi = fmax(hi, (double)v[i * stride]);
  }
  if (hi == lo) {
    *scale = 1.0f;
    *zp = 0;
    return;
  }
  *scale = (float)((hi - lo) / 15.0);
  double z = rint(-lo / (double)*scale);
  *zp = (int)(z < 0 ? 0 : z > 15 ? 15
                                 : z);
}

static int code_of(float v, float scale, int zp) {
  double q = rint((double)v / (double)scale) + zp;
  return (int)(q < 0 ? 0 : q > 15 ? 15
                                  : q);
}

/* 1 when node i is a MatMul of a runtime FLOAT32 A and a constant 2-D FLOAT32 B. */
static int eligible(const mi_graph_t *g, int32_t i) {
  const mi_node_t *n = &g->nodes[i];
  if (strcmp(n->op_type, "MatMul") || (n->domain && n->domain[0]) || n->input_count != 2 || n->output_count != 1)
    return 0;
  int32_t a = n->inputs[0], b = n->inputs[1];
  if (a < 0 || b < 0 || g->tensors[a].data || g->tensors[a].dtype != MI_DTYPE_FLOAT32) return 0;
  const mi_tensor_t *w = &g->tensors[b];
  return w->data && w->dtype == MI_DTYPE_FLOAT32 && w->rank == 2 && w->dims[0] > 0 && w->dims[1] > 0;
}

/* Codes [K, N] (row major, 0..15), scales and zero points [kb, N] of weight w [K, N]. */
typedef struct q4 {
  int64_t k, n, kb, bs;
  uint8_t *q;
  float *s;
  uint8_t *z;
} q4_t;

static int quantize(const mi_tensor_t *w, int64_t bs, int sym, q4_t *r) {
  r->k = w->dims[0];
  r->n = w->dims[1];
  r->bs = bs;
  r->kb = (r->k + bs - 1) / bs;
  r->q = malloc((size_t)(r->k * r->n));
  r->s = malloc(sizeof *r->s * (size_t)(r->kb * r->n));
  r->z = malloc((size_t)(r->kb * r->n));
  if (!r->q || !r->s || !r->z) return -1;
  const float *v = w->data;
  for (int64_t c = 0; c < r->n; c++)
    for (int64_t b = 0; b < r->kb; b++) {
      int64_t k0 = b * bs, cnt = r->k - k0 < bs ? r->k - k0 : bs;
      float sc;
      int zp;
      block_params(v + k0 * r->n + c, r->n, cnt, sym, &sc, &zp);
      r->s[b * r->n + c] = sc;
      r->z[b * r->n + c] = (uint8_t)zp;
      for (int64_t k = k0; k < k0 + cnt; k++) r->q[k * r->n + c] = (uint8_t)code_of(v[k * r->n + c], sc, zp);
    }
  return 0;
}

static void q4_free(q4_t *r) {
  free(r->q), free(r->s), free(r->z);
}

static int32_t oom(mi_error_t *err) { return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory"); }

/* MatMulNBits inputs: B [N, kb, bs / 2] (two codes a byte, low nibble first, past K the zero
 * point's code), scales [N * kb], zero points [N * ceil(kb / 2)] packed the same way. */
static int32_t to_nbits(mi_graph_t *g, int32_t i, const q4_t *r, int sym, mi_error_t *err) {
  int64_t blob = r->bs / 2, zrow = (r->kb + 1) / 2;
  int64_t bd[3] = {r->n, r->kb, blob}, sd[1] = {r->n * r->kb}, zd[1] = {r->n * zrow};
  uint8_t *b = calloc((size_t)(r->n * r->kb * blob), 1), *z = calloc((size_t)(r->n * zrow), 1);
  float *s = malloc(sizeof *s * (size_t)(r->n * r->kb));
  int32_t rc = MI_OK;
  if (!b || !z || !s) {
    rc = oom(err);
    goto done;
  }
  for (int64_t c = 0; c < r->n; c++)
    for (int64_t blk = 0; blk < r->kb; blk++) {
      int zp = r->z[blk * r->n + c];
      s[c * r->kb + blk] = r->s[blk * r->n + c];
      z[c * zrow + blk / 2] |= (uint8_t)(zp << (4 * (blk & 1)));
      for (int64_t j = 0; j < r->bs; j++) {
        int64_t k = blk * r->bs + j;
        int code = k < r->k ? r->q[k * r->n + c] : zp;
        b[(c * r->kb + blk) * blob + j / 2] |= (uint8_t)(code << (4 * (j & 1)));
      }
    }
  {
    mi_node_t *n = &g->nodes[i];
    char base[400];
    snprintf(base, sizeof base, "%s", g->tensors[n->inputs[1]].name);
    int32_t a = n->inputs[0], y = n->outputs[0];
    int32_t tb = mq_new_init(g, base, "_Q4", MI_DTYPE_UINT8, 3, bd, b, (size_t)(r->n * r->kb * blob));
    int32_t ts = tb < 0 ? -1 : mq_new_init(g, base, "_scales", MI_DTYPE_FLOAT32, 1, sd, s, sizeof *s * (size_t)sd[0]);
    int32_t tz = sym || ts < 0 ? -1 : mq_new_init(g, base, "_zero_points", MI_DTYPE_UINT8, 1, zd, z, (size_t)zd[0]);
    int32_t ins[4] = {a, tb, ts, tz};
    if (tb < 0 || ts < 0 || (!sym && tz < 0) ||
        mq_set_node(g, i, "MatMulNBits", sym ? 3 : 4, ins, y, "com.microsoft") ||
        mi_node_set_int(g, i, "K", r->k) || mi_node_set_int(g, i, "N", r->n) || mi_node_set_int(g, i, "bits", 4) ||
        mi_node_set_int(g, i, "block_size", r->bs)) {
      rc = oom(err);
      goto done;
    }
    char nm[512];
    snprintf(nm, sizeof nm, "%s_Q4", g->nodes[i].name);
    free(g->nodes[i].name);
    if (!(g->nodes[i].name = strdup(nm))) rc = oom(err);
  }
done:
  free(b), free(z), free(s);
  return rc;
}

/* DequantizeLinear(codes INT4 [K, N], scales [kb, N], zero points INT4 [kb, N], axis 0,
 * block_size) -> MatMul. The IR's INT4 is signed: the codes are written as q - 8 with zero points
 * z - 8, the same (q - z) (an asymmetric model reads as INT4 with zero points, not UINT4). */
static int32_t to_qdq4(mi_graph_t *g, int32_t i, const q4_t *r, int sym, mi_error_t *err) {
  int64_t kn[2] = {r->k, r->n}, bn[2] = {r->kb, r->n};
  size_t nq = (size_t)(r->k * r->n + 1) / 2, nz = (size_t)(r->kb * r->n + 1) / 2;
  uint8_t *q = calloc(nq, 1), *z = calloc(nz, 1);
  int32_t rc = MI_OK;
  if (!q || !z) {
    rc = oom(err);
    goto done;
  }
  for (int64_t e = 0; e < r->k * r->n; e++) q[e / 2] |= (uint8_t)(((r->q[e] - 8) & 0xf) << (4 * (e & 1)));
  for (int64_t e = 0; e < r->kb * r->n; e++) z[e / 2] |= (uint8_t)(((r->z[e] - 8) & 0xf) << (4 * (e & 1)));
  {
    mi_node_t *n = &g->nodes[i];
    char base[400], nm[512];
    snprintf(base, sizeof base, "%s", g->tensors[n->inputs[1]].name);
    int32_t tq = mq_new_init(g, base, "_quantized", MI_DTYPE_INT4, 2, kn, q, nq);
    int32_t ts = tq < 0 ? -1 : mq_new_init(g, base, "_scale", MI_DTYPE_FLOAT32, 2, bn, r->s, sizeof *r->s * (size_t)(r->kb * r->n));
    int32_t tz = sym || ts < 0 ? -1 : mq_new_init(g, base, "_zero_point", MI_DTYPE_INT4, 2, bn, z, nz);
    snprintf(nm, sizeof nm, "%s_DequantizeLinear_Output", base);
    int32_t w = ts < 0 ? -1 : mi_graph_add_tensor(g, nm, MI_DTYPE_FLOAT32, 2, kn);
    int32_t dq_in[3] = {tq, ts, tz};
    snprintf(nm, sizeof nm, "%s_DequantizeLinear", base);
    int32_t d = w < 0 || (!sym && tz < 0) ? -1 : mi_graph_add_node(g, "DequantizeLinear", nm, sym ? 2 : 3, dq_in, 1, &w);
    if (d < 0 || mi_node_set_int(g, d, "axis", 0) || mi_node_set_int(g, d, "block_size", r->bs)) {
      rc = oom(err);
      goto done;
    }
    g->nodes[i].inputs[1] = w;
  }
done:
  free(q), free(z);
  return rc;
}

static int32_t rewrite(mi_graph_t *g, const mq_options_t *o, int qdq, mi_error_t *err) {
  int64_t bs = o->block_size ? o->block_size : 32;
  int32_t count = g->node_count, done = 0, rc = MI_OK;
  if (bs < 16 || (bs & (bs - 1)))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "block size %lld is not a power of two >= 16", (long long)bs);
  for (int32_t i = 0; i < count && rc == MI_OK; i++) {
    if (!eligible(g, i)) continue;
    q4_t r = {0};
    if (quantize(&g->tensors[g->nodes[i].inputs[1]], bs, o->symmetric, &r)) rc = oom(err);
    else
      rc = qdq ? to_qdq4(g, i, &r, o->symmetric, err) : to_nbits(g, i, &r, o->symmetric, err);
    q4_free(&r);
    done++;
  }
  if (rc == MI_OK && !done)
    rc = mi_errorf(err, MI_ERR_UNSUPPORTED, "no MatMul with a constant 2-D FLOAT32 weight to quantize");
  if (rc == MI_OK) rc = mi_graph_toposort(g, err);
  return rc;
}

int32_t mq_nbits(mi_graph_t *g, const mq_options_t *o, mi_error_t *err) { return rewrite(g, o, 0, err); }

int32_t mq_qdq4(mi_graph_t *g, const mq_options_t *o, mi_error_t *err) {
  /* opset 21 introduced block_size and INT4; the ops our models use read the same from opset 18
   * (Reduce* axes became inputs there), so older graphs are refused rather than misread */
  if (g->opset < 18)
    return mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "the model's opset %lld is below 18: blocked INT4 DequantizeLinear needs opset 21",
                     (long long)g->opset);
  if (g->opset < 21) g->opset = 21;
  return rewrite(g, o, 1, err);
}
