/* ref_msfuse.c - reference of ONNX Runtime's transformer-optimizer fused ops as ONNX Runtime's CPU
 * kernels compute them: Skip(Simplified)LayerNormalization (the sum input + skip (+ bias) in
 * float, a skip of [S, H] or [1, S, H] repeated over the batch), FastGelu (tanh), BiasGelu (erf),
 * QuickGelu and ONNX Swish (x * sigmoid(alpha x)), BiasAdd, EmbedLayerNormalization, FusedMatMul and
 * SimplifiedLayerNormalization (the RMSNormalization reference). The loader lowers them all to standard ops (graph/ms_fuse_lower.c);
 * this is what the lowered graph is checked against. */
#include <math.h>
#include <string.h>

#include "graph/ms_fuse.h"
#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

/* 1 when output k is asked for: a graph output or read by a node (the importer gives an omitted
 * output in the middle a placeholder tensor, which the walker still wants filled). */
static int asked(const mi__ref_call_t *c, int32_t k) {
  if (!mi__ref_out_wanted(c, k)) return 0;
  int32_t t = c->node->outputs[k];
  for (int32_t i = 0; i < c->g->output_count; i++)
    if (c->g->outputs[i] == t) return 1;
  for (int32_t j = 0; j < c->g->node_count; j++)
    for (int32_t i = 0; i < c->g->nodes[j].input_count; i++)
      if (c->g->nodes[j].inputs[i] == t) return 1;
  return 0;
}

/* A 1-D [h] input k (optional when opt): its data or NULL. */
static int32_t vec(mi__ref_call_t *c, int32_t k, int opt, int64_t h, const char *what, const float **out) {
  const mi_array_t *a = mi__ref_in(c, k);
  int32_t rc;
  *out = NULL;
  if (!a && opt) return MI_OK;
  if ((rc = mi__ref_need(c, k, F32, &a)) != MI_OK) return rc;
  if (a->rank != 1 || a->dims[0] != h)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must be 1-D with the hidden size %lld values", what,
                        (long long)h);
  *out = a->data;
  return MI_OK;
}

static int32_t skip_ln(mi__ref_call_t *c, int simplified) {
  const mi_array_t *x, *skip;
  const float *gamma, *beta = NULL, *bias;
  mi_array_t *y, *outs[4] = {0};
  int32_t rc;
  char why[256];
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &skip)) != MI_OK) return rc;
  int32_t none[3] = {-2, -2, -2};
  int64_t d0[3] = {-1, -1, -1};
  if (mi__msf_skip_shapes(x->rank, x->dims, skip->rank, skip->dims, none, d0, why, sizeof why))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  int64_t h = x->dims[x->rank - 1], n = mi_array_numel(x), ns = mi_array_numel(skip);
  if ((rc = vec(c, 2, 0, h, "gamma", &gamma)) != MI_OK) return rc;
  if (!simplified && (rc = vec(c, 3, 1, h, "beta", &beta)) != MI_OK) return rc;
  if ((rc = vec(c, simplified ? 3 : 4, 1, h, "bias", &bias)) != MI_OK) return rc;
  if (simplified && (asked(c, 1) || asked(c, 2)))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "outputs mean and inv_std_var are not supported");
  float eps = mi_node_attr_float(c->node, "epsilon", MI__MSF_SKIP_EPS);
  int64_t sd[MI_MAX_RANK];
  for (int32_t d = 0; d < x->rank; d++) sd[d] = d < x->rank - 1 ? x->dims[d] : 1;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  for (int32_t k = 1; k < 4; k++)
    if (mi__ref_out_wanted(c, k) &&
        (rc = mi__ref_make_out(c, k, MI_DTYPE_FLOAT32, x->rank, k == 3 ? x->dims : sd, &outs[k])) != MI_OK)
      return rc;
  const float *xp = x->data, *sp = skip->data;
  float *yp = y->data;
  for (int64_t r = 0; r < n / (h ? h : 1); r++) {
    const float *xr = xp + r * h, *sr = sp + (r * h) % ns; /* skip repeats over the batch */
    float *yr = yp + r * h;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < h; j++) {
      float v = xr[j] + sr[j];
      if (bias) v += bias[j];
      yr[j] = v;
      sum += v;
    }
    if (outs[3]) memcpy((float *)outs[3]->data + r * h, yr, (size_t)h * sizeof *yr);
    double mean = simplified ? 0 : sum / (double)h;
    for (int64_t j = 0; j < h; j++) sq += (yr[j] - mean) * (yr[j] - mean);
    double inv = 1.0 / sqrt(sq / (double)h + eps);
    for (int64_t j = 0; j < h; j++) yr[j] = (float)((yr[j] - mean) * inv) * gamma[j] + (beta ? beta[j] : 0.f);
    if (outs[1]) ((float *)outs[1]->data)[r] = (float)mean;
    if (outs[2]) ((float *)outs[2]->data)[r] = (float)inv;
  }
  return MI_OK;
}

/* FastGelu, BiasGelu, QuickGelu, Swish, BiasAdd: elementwise over input 0. */
static int32_t pointwise(mi__ref_call_t *c, int kind) {
  const mi_array_t *x;
  const float *b = NULL, *s = NULL;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (x->rank == 0 && kind != MI__MSF_QUICK_GELU && kind != MI__MSF_SWISH)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input 0 is a scalar");
  int64_t h = x->rank ? x->dims[x->rank - 1] : 1, n = mi_array_numel(x);
  if (kind == MI__MSF_SWISH && c->opset < 24)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the op exists from opset 24 on");
  if ((kind == MI__MSF_FAST_GELU || kind == MI__MSF_BIAS_GELU || kind == MI__MSF_BIAS_ADD) &&
      (rc = vec(c, 1, kind == MI__MSF_FAST_GELU, h, "the bias", &b)) != MI_OK)
    return rc;
  if (kind == MI__MSF_BIAS_ADD) {
    const mi_array_t *sk;
    if ((rc = mi__ref_need(c, 2, F32, &sk)) != MI_OK) return rc;
    if (mi_array_numel(sk) != n || sk->rank != x->rank)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "skip must have the input's shape");
    s = sk->data;
  }
  float alpha = mi_node_attr_float(c->node, "alpha", kind == MI__MSF_SWISH ? 1.0f : MI__MSF_QUICK_ALPHA);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t i = 0; i < n; i++) {
    float v = xp[i] + (b ? b[i % h] : 0.f), r;
    switch (kind) {
    case MI__MSF_FAST_GELU: r = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))); break;
    case MI__MSF_BIAS_GELU: r = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); break;
    case MI__MSF_BIAS_ADD: r = v + s[i]; break;
    default: r = v / (1.0f + expf(-alpha * v)); break; /* QuickGelu, Swish */
    }
    yp[i] = r;
  }
  return MI_OK;
}

#define I32 MI_DTYPE_BIT(MI_DTYPE_INT32)

/* An optional INT32 input k of the ids' shape (position_ids: [1 or batch, sequence]). */
static int32_t ids_like(mi__ref_call_t *c, int32_t k, const mi_array_t *ids, int pos, const char *what,
                        const int32_t **out) {
  const mi_array_t *a = mi__ref_in(c, k);
  int32_t rc;
  *out = NULL;
  if (!a) return MI_OK;
  if ((rc = mi__ref_need(c, k, I32, &a)) != MI_OK) return rc;
  if (a->rank != 2 || a->dims[1] != ids->dims[1] || (a->dims[0] != ids->dims[0] && !(pos && a->dims[0] == 1)))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must have input_ids' shape%s", what,
                        pos ? " (or a batch of 1)" : "");
  *out = a->data;
  return MI_OK;
}

/* Row `v` of a [rows, h] table, or a refusal naming the index. */
static int32_t row(mi__ref_call_t *c, const mi_array_t *t, int32_t v, const char *what, int64_t at, const float **out) {
  if (v < 0 || v >= t->dims[0])
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s index %d at %lld is out of range (%lld rows)", what, (int)v,
                        (long long)at, (long long)t->dims[0]);
  *out = (const float *)t->data + (int64_t)v * t->dims[1];
  return MI_OK;
}

/* EmbedLayerNormalization: word + position (+ segment) rows, summed in float, then the norm;
 * mask_index the count of mask values equal to 1 per batch row (zeros without a mask). */
static int32_t embed_ln(mi__ref_call_t *c) {
  const mi_array_t *ids, *we, *pe, *se = mi__ref_in(c, MI__EMB_SEGE);
  const float *gamma, *beta;
  const int32_t *seg, *mask, *pos;
  mi_array_t *y, *mi = NULL, *sum = NULL;
  int32_t rc;
  if ((rc = mi__ref_need(c, MI__EMB_IDS, I32, &ids)) != MI_OK || (rc = mi__ref_need(c, MI__EMB_WORD, F32, &we)) != MI_OK ||
      (rc = mi__ref_need(c, MI__EMB_POS, F32, &pe)) != MI_OK)
    return rc;
  if (ids->rank != 2) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input_ids must be 2-D [batch, sequence]");
  if (we->rank != 2) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "word_embedding must be 2-D");
  int64_t b = ids->dims[0], sl = ids->dims[1], h = we->dims[1];
  if (pe->rank != 2 || pe->dims[1] != h || (se && (se->dtype != MI_DTYPE_FLOAT32 || se->rank != 2 || se->dims[1] != h)))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "the embedding tables must be 2-D FLOAT32 of width %lld", (long long)h);
  if ((!se) != (!mi__ref_in(c, MI__EMB_SEG)))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "segment_ids and segment_embedding go together");
  if ((rc = vec(c, MI__EMB_GAMMA, 0, h, "gamma", &gamma)) != MI_OK || (rc = vec(c, MI__EMB_BETA, 0, h, "beta", &beta)) != MI_OK ||
      (rc = ids_like(c, MI__EMB_SEG, ids, 0, "segment_ids", &seg)) != MI_OK ||
      (rc = ids_like(c, MI__EMB_MASK, ids, 0, "mask", &mask)) != MI_OK ||
      (rc = ids_like(c, MI__EMB_POS_IDS, ids, 1, "position_ids", &pos)) != MI_OK)
    return rc;
  int pos_batch = pos && mi__ref_in(c, MI__EMB_POS_IDS)->dims[0] == b;
  float eps = mi_node_attr_float(c->node, "epsilon", MI__MSF_SKIP_EPS);
  int64_t od[3] = {b, sl, h};
  if ((rc = mi__ref_make_out(c, 0, we->dtype, 3, od, &y)) != MI_OK ||
      (mi__ref_out_wanted(c, 1) && (rc = mi__ref_make_out(c, 1, MI_DTYPE_INT32, 1, od, &mi)) != MI_OK) ||
      (mi__ref_out_wanted(c, 2) && (rc = mi__ref_make_out(c, 2, we->dtype, 3, od, &sum)) != MI_OK))
    return rc;
  const int32_t *ip = ids->data;
  for (int64_t r = 0; r < b * sl; r++) {
    const float *w, *p, *sg = NULL;
    int64_t si = r % sl, bi = r / sl;
    if ((rc = row(c, we, ip[r], "input_ids", r, &w)) != MI_OK ||
        (rc = row(c, pe, pos ? pos[(pos_batch ? bi * sl : 0) + si] : (int32_t)si, "position", r, &p)) != MI_OK ||
        (seg && (rc = row(c, se, seg[r], "segment_ids", r, &sg)) != MI_OK))
      return rc;
    float *yr = (float *)y->data + r * h;
    double m = 0, v = 0;
    for (int64_t j = 0; j < h; j++) {
      float t = w[j] + p[j];
      if (sg) t += sg[j];
      yr[j] = t;
      m += t;
    }
    if (sum) memcpy((float *)sum->data + r * h, yr, (size_t)h * sizeof *yr);
    m /= (double)h;
    for (int64_t j = 0; j < h; j++) v += (yr[j] - m) * (yr[j] - m);
    double inv = 1.0 / sqrt(v / (double)h + eps);
    for (int64_t j = 0; j < h; j++) yr[j] = (float)((yr[j] - m) * inv) * gamma[j] + beta[j];
  }
  for (int64_t bi = 0; mi && bi < b; bi++) {
    int32_t cnt = 0;
    for (int64_t si = 0; mask && si < sl; si++) cnt += mask[bi * sl + si] == 1;
    ((int32_t *)mi->data)[bi] = cnt;
  }
  return MI_OK;
}

/* A copy of a with its last two dims swapped. */
static mi_array_t *swapped(const mi_array_t *a) {
  int64_t d[MI_MAX_RANK];
  int32_t r = a->rank;
  memcpy(d, a->dims, sizeof d);
  d[r - 2] = a->dims[r - 1];
  d[r - 1] = a->dims[r - 2];
  mi_array_t *t = mi_array_create(MI_DTYPE_FLOAT32, r, d);
  if (!t) return NULL;
  int64_t rows = a->dims[r - 2], cols = a->dims[r - 1], per = rows * cols, mats = per ? mi_array_numel(a) / per : 0;
  const float *src = a->data;
  float *dst = t->data;
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) dst[m * rows * cols + j * rows + i] = src[m * rows * cols + i * cols + j];
  return t;
}

/* FusedMatMul: alpha * op(A) @ op(B) by the MatMul reference on swapped copies. */
static int32_t fused_mm(mi__ref_call_t *c) {
  const mi_array_t *a, *b;
  float alpha;
  int ta, tb;
  char why[128];
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &a)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &b)) != MI_OK) return rc;
  if (mi__msf_fused_mm_attrs(c->node, &alpha, &ta, &tb, why, sizeof why))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "%s", why);
  if (a->rank < 2 || b->rank < 2) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "A and B must have rank >= 2");
  mi_array_t *sa = ta ? swapped(a) : NULL, *sb = tb ? swapped(b) : NULL;
  const mi_array_t *ins[2] = {ta ? sa : a, tb ? sb : b};
  mi__ref_call_t mc = *c;
  mc.in = ins;
  mc.nin = 2;
  if ((ta && !sa) || (tb && !sb)) rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  else
    rc = mi__ref_matmul(&mc);
  mi_array_destroy(sa);
  mi_array_destroy(sb);
  if (rc == MI_OK && alpha != 1.0f) {
    float *y = c->out[0]->data;
    for (int64_t i = 0; i < mi_array_numel(c->out[0]); i++) y[i] *= alpha;
  }
  return rc;
}

int32_t mi__ref_msfuse(mi__ref_call_t *c) {
  int kind = mi__msf_kind(c->node);
  switch (kind) {
  case MI__MSF_SKIP_LN: return skip_ln(c, 0);
  case MI__MSF_SKIP_SLN: return skip_ln(c, 1);
  case MI__MSF_EMBED_LN: return embed_ln(c);
  case MI__MSF_FUSED_MM: return fused_mm(c);
  case MI__MSF_SLN: {
    if (asked(c, 1)) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "output inv_std_var is not supported");
    int32_t rc = mi__ref_rms(c);
    if (rc == MI_OK && mi__ref_out_wanted(c, 1)) /* a placeholder nobody reads: zeros */
      rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 0, NULL, &c->out[1]);
    return rc;
  }
  case MI__MSF_NONE: return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "op type is not supported in this domain");
  default: return pointwise(c, kind);
  }
}
