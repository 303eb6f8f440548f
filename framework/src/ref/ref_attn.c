/* ref_attn.c - reference com.microsoft Attention and MultiHeadAttention, as ONNX Runtime's CPU
 * kernels compute them: Attention's
 * Q, K, V projections (float sums in k order, then the bias), per head the scores
 * scale * Q K^T plus the mask's bias (mask_filter_value where mask_index masks a key, the lowest
 * float above the diagonal when unidirectional) plus attention_bias (added in float), a softmax
 * over the keys (in double), and the softmax times V; past keys and values go before the new ones, and present
 * holds them all; MultiHeadAttention the same on Q, K, V given (+ their bias), past_key / past_value
 * before K and V; ONNX Attention (opset 23) likewise with GQA, attn_mask, is_causal, softcap. The
 * loader's lowerings (graph/attn_lower.c, mha_lower.c) are checked against
 * this. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn.h"
#include "ref/ref_ops.h"

/* The mask's bias for query i, key j of batch b (T keys, P of them past). */
static float mask_bias(const mi__attn_t *p, const mi_array_t *m, int64_t nb, int64_t s, int64_t t, int64_t pl, int64_t b,
                       int64_t i, int64_t j) {
  float v = 0.f;
  if (m) {
    const int32_t *mv = m->data;
    switch (p->mask) {
    case MI__MASK_LEN_START:
      if (j < mv[nb + b]) v = p->filter;
      /* fall through */
    case MI__MASK_LEN:
      if (j >= mv[b]) v = p->filter;
      break;
    case MI__MASK_2D: v = mv[b * t + j] > 0 ? 0.f : p->filter; break;
    default: v = mv[(b * s + i) * t + j] > 0 ? 0.f : p->filter; break;
    }
  }
  return p->unidir && j > pl + i ? v + MI__ATTN_CAUSAL_BIAS : v;
}

/* proj[r, c] = sum_k x[r, k] w[k, c] + bias[c] for the n columns from c0 on. */
static void project(const float *x, const float *w, const float *bias, int64_t rows, int64_t hin, int64_t wcols,
                    int64_t c0, int64_t n, float *out) {
  for (int64_t r = 0; r < rows; r++) {
    float *o = out + r * n;
    memset(o, 0, (size_t)n * sizeof *o);
    for (int64_t k = 0; k < hin; k++) {
      float xv = x[r * hin + k];
      const float *wr = w + k * wcols + c0;
      for (int64_t cc = 0; cc < n; cc++) o[cc] += xv * wr[cc];
    }
    if (bias)
      for (int64_t cc = 0; cc < n; cc++) o[cc] += bias[c0 + cc];
  }
}

/* Per batch, head and query: the scores against the T keys kk [B, N, T, h] (q: [B * S, qh]),
 * the mask's bias (P past keys), attention_bias, softmax (in double, sc: T scratch values), times
 * vv [B, N, T, hv] into y [B * S, vh]. */
static void attend(const mi__attn_t *pp, const float *q, const float *kk, const float *vv, const mi_array_t *m,
                   const mi_array_t *ab, int64_t nb, int64_t s, int64_t t, int64_t pl, float *yv, double *sc) {
  const mi__attn_t p = *pp;
  int64_t nh = p.heads, hd = p.head, vd = p.vhead;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t n = 0; n < nh; n++)
      for (int64_t i = 0; i < s; i++) {
        const float *qi = q + (b * s + i) * p.qh + n * hd;
        double mx = -INFINITY, sum = 0.;
        for (int64_t j = 0; j < t; j++) {
          const float *kj = kk + ((b * nh + n) * t + j) * hd;
          double dot = 0.;
          for (int64_t e = 0; e < hd; e++) dot += (double)qi[e] * kj[e];
          /* the biases added in float, as the kernel does: next to a mask value of -10000 a
           * score keeps only about 3 decimals, which a row masked whole softmaxes over */
          float d = (float)(dot * p.scale) + mask_bias(&p, m, nb, s, t, pl, b, i, j);
          if (ab) {
            int64_t ab0 = ab->dims[0] == 1 ? 0 : b, ab1 = ab->dims[1] == 1 ? 0 : n;
            d += ((const float *)ab->data)[((ab0 * ab->dims[1] + ab1) * s + i) * t + j];
          }
          sc[j] = d;
          if (d > mx) mx = d;
        }
        for (int64_t j = 0; j < t; j++) sum += (sc[j] = exp(sc[j] - mx));
        float *o = yv + (b * s + i) * p.vh + n * vd;
        for (int64_t e = 0; e < vd; e++) {
          double acc = 0.;
          for (int64_t j = 0; j < t; j++) acc += sc[j] / sum * vv[((b * nh + n) * t + j) * vd + e];
          o[e] = (float)acc;
        }
      }
}

static int32_t ms_attention(mi__ref_call_t *c) {
  mi__in_view_t ins[MI__AT_COUNT];
  mi__attn_t p;
  char why[256];
  int32_t rc;
  mi__ref_in_views(c, ins, MI__AT_COUNT);
  if (mi__attn_check(c->node, ins, &p, why, sizeof why)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const mi_array_t *x = mi__ref_in(c, MI__AT_X), *w = mi__ref_in(c, MI__AT_W), *bias = mi__ref_in(c, MI__AT_BIAS);
  const mi_array_t *m = mi__ref_in(c, MI__AT_MASK), *past = mi__ref_in(c, MI__AT_PAST), *ab = mi__ref_in(c, MI__AT_ABIAS);
  int64_t nb = x->dims[0], s = x->dims[1], pl = past ? past->dims[3] : 0, t = pl + s, nh = p.heads, hd = p.head,
          vd = p.vhead;
  if (m && m->rank == 1) {
    if (m->dims[0] == nb) p.mask = MI__MASK_LEN;
    else if (m->dims[0] == 2 * nb)
      p.mask = MI__MASK_LEN_START;
    else
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "mask_index [%lld] is neither [batch %lld] nor [2 * batch]",
                          (long long)m->dims[0], (long long)nb);
  }
  int64_t ydims[3] = {nb, s, p.vh}, pdims[5] = {2, nb, nh, t, hd};
  mi_array_t *y = NULL, *pres = NULL;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 3, ydims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  if (mi__ref_out_wanted(c, 1)) {
    if ((rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 5, pdims, &pres)) != MI_OK) return rc;
    c->out[1] = pres;
  }
  int64_t rows = nb * s, wc = p.qh + p.kh + p.vh;
  /* per head [B, N, T, h] keys and values, the past first */
  float *q = malloc(sizeof *q * (size_t)(rows * p.qh)), *kp = malloc(sizeof *kp * (size_t)(rows * p.kh)),
        *vp = malloc(sizeof *vp * (size_t)(rows * p.vh)), *kk = malloc(sizeof *kk * (size_t)(nb * nh * t * hd)),
        *vv = malloc(sizeof *vv * (size_t)(nb * nh * t * vd));
  double *sc = malloc(sizeof *sc * (size_t)t);
  if (!q || !kp || !vp || !kk || !vv || !sc) {
    free(q), free(kp), free(vp), free(kk), free(vv), free(sc);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  const float *bv = bias ? bias->data : NULL;
  project(x->data, w->data, bv, rows, p.hin, wc, 0, p.qh, q);
  project(x->data, w->data, bv, rows, p.hin, wc, p.qh, p.kh, kp);
  project(x->data, w->data, bv, rows, p.hin, wc, p.qh + p.kh, p.vh, vp);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t n = 0; n < nh; n++)
      for (int64_t j = 0; j < t; j++) {
        float *kd = kk + ((b * nh + n) * t + j) * hd, *vdst = vv + ((b * nh + n) * t + j) * vd;
        if (j < pl) {
          const float *pv = past->data;
          memcpy(kd, pv + ((b * nh + n) * pl + j) * hd, sizeof *kd * (size_t)hd);
          memcpy(vdst, pv + (((nb + b) * nh + n) * pl + j) * hd, sizeof *vdst * (size_t)vd);
        } else {
          memcpy(kd, kp + (b * s + j - pl) * p.kh + n * hd, sizeof *kd * (size_t)hd);
          memcpy(vdst, vp + (b * s + j - pl) * p.vh + n * vd, sizeof *vdst * (size_t)vd);
        }
      }
  if (pres) {
    memcpy(pres->data, kk, sizeof *kk * (size_t)(nb * nh * t * hd));
    memcpy((float *)pres->data + nb * nh * t * hd, vv, sizeof *vv * (size_t)(nb * nh * t * vd));
  }
  attend(&p, q, kk, vv, m, ab, nb, s, t, pl, y->data, sc);
  free(q), free(kp), free(vp), free(kk), free(vv), free(sc);
  return MI_OK;
}

/* x (3D [B, L, n * h] or 4D [B, n, L, h]) into heads out [B, n, T, h] from key j0 on. */
static void heads4(const float *x, int q4, int64_t nb, int64_t l, int64_t n, int64_t h, int64_t t, int64_t j0,
                   float *out) {
  for (int64_t b = 0; b < nb; b++)
    for (int64_t hh = 0; hh < n; hh++)
      for (int64_t j = 0; j < l; j++)
        memcpy(out + ((b * n + hh) * t + j0 + j) * h, x + (q4 ? ((b * n + hh) * l + j) * h : (b * l + j) * n * h + hh * h),
               sizeof *out * (size_t)h);
}

/* attn_mask's value at (b, n, i, j) of [B, N, S, T], broadcast from its own shape. */
static float mask_at(const mi_array_t *m, int64_t b, int64_t n, int64_t i, int64_t j) {
  int64_t idx[4] = {b, n, i, j}, off = 0, stride = 1;
  for (int32_t d = m->rank - 1; d >= 0; d--) {
    int64_t dd = m->dims[d];
    off += (dd == 1 ? 0 : idx[4 - m->rank + d]) * stride;
    stride *= dd;
  }
  if (m->dtype == MI_DTYPE_BOOL) return ((const uint8_t *)m->data)[off] ? 0.f : -INFINITY;
  return ((const float *)m->data)[off];
}

/* ONNX Attention (opset 23) as ONNX Runtime 1.30 computes it: the scores Q K^T * scale (a K / V
 * head serving heads / kv_heads query heads), softcap, + attn_mask (bool: -inf where false) and
 * the causal bias (keys after P + i, P = T - S), softmax, times V; qk_matmul_output at mode 0
 * the scores, 1 capped, 2 masked, 3 the softmax. */
static int32_t onnx_attention(mi__ref_call_t *c) {
  mi__in_view_t ins[MI__OA_COUNT];
  mi__attn_t p;
  char why[256];
  int32_t rc;
  if (c->opset < 23) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the op exists from opset 23 on");
  mi__ref_in_views(c, ins, MI__OA_COUNT);
  if (mi__onnx_attn_check(c->node, ins, c->nout, &p, why, sizeof why))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const mi_array_t *q = mi__ref_in(c, MI__OA_Q), *k = mi__ref_in(c, MI__OA_K), *v = mi__ref_in(c, MI__OA_V);
  const mi_array_t *m = mi__ref_in(c, MI__OA_MASK), *pk = mi__ref_in(c, MI__OA_PK), *pv = mi__ref_in(c, MI__OA_PV);
  int64_t nb = q->dims[0], s = q->dims[p.q4 ? 2 : 1], l = k->dims[p.q4 ? 2 : 1], pl = pk ? pk->dims[2] : 0, t = pl + l;
  int64_t nq = p.heads, nk = p.kv_heads, h = p.head, hv = p.vhead, grp = nq / nk;
  int64_t y3[3] = {nb, s, p.vh}, y4[4] = {nb, nq, s, hv}, kd[4] = {nb, nk, t, h}, vd[4] = {nb, nk, t, hv},
          qd[4] = {nb, nq, s, t};
  mi_array_t *y = NULL, *out[4] = {0};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, p.q4 ? 4 : 3, p.q4 ? y4 : y3, &y)) != MI_OK) return rc;
  c->out[0] = y;
  for (int32_t o = 1; o < 4; o++)
    if (mi__ref_out_wanted(c, o)) {
      if ((rc = mi__ref_make_out(c, o, MI_DTYPE_FLOAT32, 4, o == 1 ? kd : o == 2 ? vd
                                                                                 : qd,
                                 &out[o])) != MI_OK) return rc;
      c->out[o] = out[o];
    }
  float *qq = malloc(sizeof *qq * (size_t)(nb * nq * s * h)), *kk = malloc(sizeof *kk * (size_t)(nb * nk * t * h)),
        *vv = malloc(sizeof *vv * (size_t)(nb * nk * t * hv));
  double *sc = malloc(sizeof *sc * (size_t)(t ? t : 1) * 4);
  if (!qq || !kk || !vv || !sc) {
    free(qq), free(kk), free(vv), free(sc);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  heads4(q->data, p.q4, nb, s, nq, h, s, 0, qq);
  if (pl) {
    heads4(pk->data, 1, nb, pl, nk, h, t, 0, kk);
    heads4(pv->data, 1, nb, pl, nk, hv, t, 0, vv);
  }
  heads4(k->data, p.q4, nb, l, nk, h, t, pl, kk);
  heads4(v->data, p.q4, nb, l, nk, hv, t, pl, vv);
  if (out[1]) memcpy(out[1]->data, kk, out[1]->nbytes);
  if (out[2]) memcpy(out[2]->data, vv, out[2]->nbytes);
  float *yv = y->data;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t n = 0; n < nq; n++)
      for (int64_t i = 0; i < s; i++) {
        const float *qi = qq + ((b * nq + n) * s + i) * h;
        const float *kb = kk + (b * nk + n / grp) * t * h, *vb = vv + (b * nk + n / grp) * t * hv;
        double mx = -INFINITY, sum = 0.;
        float *qk = out[3] ? (float *)out[3]->data + ((b * nq + n) * s + i) * t : NULL;
        for (int64_t j = 0; j < t; j++) {
          double dot = 0.;
          for (int64_t e = 0; e < h; e++) dot += (double)qi[e] * kb[j * h + e];
          float d = (float)(dot * p.scale);
          if (qk && p.qk_mode == 0) qk[j] = d;
          if (p.softcap > 0.f) d = p.softcap * tanhf(d / p.softcap);
          if (qk && p.qk_mode == 1) qk[j] = d;
          if (m) d += mask_at(m, b, n, i, j);
          if (p.unidir && j > t - s + i) d += MI__ATTN_CAUSAL_BIAS;
          if (qk && p.qk_mode == 2) qk[j] = d;
          sc[j] = d;
          if (d > mx) mx = d;
        }
        for (int64_t j = 0; j < t; j++) sum += (sc[j] = exp(sc[j] - mx));
        if (qk && p.qk_mode == 3)
          for (int64_t j = 0; j < t; j++) qk[j] = (float)(sc[j] / sum);
        float *o = p.q4 ? yv + ((b * nq + n) * s + i) * hv : yv + (b * s + i) * p.vh + n * hv;
        for (int64_t e = 0; e < hv; e++) {
          double acc = 0.;
          for (int64_t j = 0; j < t; j++) acc += sc[j] / sum * vb[j * hv + e];
          o[e] = (float)acc;
        }
      }
  free(qq), free(kk), free(vv), free(sc);
  return MI_OK;
}

int32_t mi__ref_attention(mi__ref_call_t *c) {
  if (c->node->domain && !strcmp(c->node->domain, "com.microsoft")) return ms_attention(c);
  return onnx_attention(c);
}

/* [rows, n] (+ bias from c0) into heads [B, N, T, n / N] at key offset j0 of T. */
static void to_heads(const float *x, const float *bias, int64_t c0, int64_t nb, int64_t l, int64_t n, int64_t nh,
                     int64_t t, int64_t j0, float *out) {
  int64_t h = n / nh;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t j = 0; j < l; j++)
      for (int64_t e = 0; e < n; e++)
        out[((b * nh + e / h) * t + j0 + j) * h + e % h] = x[(b * l + j) * n + e] + (bias ? bias[c0 + e] : 0.f);
}

int32_t mi__ref_mha(mi__ref_call_t *c) {
  mi__in_view_t ins[MI__MH_COUNT];
  mi__attn_t p;
  char why[256];
  int32_t rc;
  mi__ref_in_views(c, ins, MI__MH_COUNT);
  if (mi__mha_check(c->node, ins, c->nout, &p, why, sizeof why))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const mi_array_t *q = mi__ref_in(c, MI__MH_Q), *k = mi__ref_in(c, MI__MH_K), *v = mi__ref_in(c, MI__MH_V);
  const mi_array_t *bias = mi__ref_in(c, MI__MH_BIAS), *m = mi__ref_in(c, MI__MH_MASK), *ab = mi__ref_in(c, MI__MH_ABIAS);
  const mi_array_t *pk = mi__ref_in(c, MI__MH_PK), *pv = mi__ref_in(c, MI__MH_PV);
  int64_t nb = q->dims[0], s = q->dims[1], l = k->dims[p.kv4 ? 2 : 1], pl = pk ? pk->dims[2] : 0, t = pl + l,
          nh = p.heads;
  if (m && m->rank == 1) {
    if (m->dims[0] != nb)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "key_padding_mask [%lld] is not [batch %lld]",
                          (long long)m->dims[0], (long long)nb);
    p.mask = MI__MASK_LEN;
  }
  int64_t ydims[3] = {nb, s, p.vh}, kd[4] = {nb, nh, t, p.head}, vdm[4] = {nb, nh, t, p.vhead};
  mi_array_t *y = NULL, *prk = NULL, *prv = NULL;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 3, ydims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  if (mi__ref_out_wanted(c, 1)) {
    if ((rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 4, kd, &prk)) != MI_OK) return rc;
    c->out[1] = prk;
  }
  if (mi__ref_out_wanted(c, 2)) {
    if ((rc = mi__ref_make_out(c, 2, MI_DTYPE_FLOAT32, 4, vdm, &prv)) != MI_OK) return rc;
    c->out[2] = prv;
  }
  float *qq = malloc(sizeof *qq * (size_t)(nb * s * p.qh)), *kk = malloc(sizeof *kk * (size_t)(nb * nh * t * p.head)),
        *vv = malloc(sizeof *vv * (size_t)(nb * nh * t * p.vhead));
  double *sc = malloc(sizeof *sc * (size_t)(t ? t : 1));
  if (!qq || !kk || !vv || !sc) {
    free(qq), free(kk), free(vv), free(sc);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  const float *bv = bias ? bias->data : NULL, *qv = q->data;
  for (int64_t r = 0; r < nb * s; r++)
    for (int64_t e = 0; e < p.qh; e++) qq[r * p.qh + e] = qv[r * p.qh + e] + (bv ? bv[e] : 0.f);
  if (p.kv4) {
    memcpy(kk, k->data, sizeof *kk * (size_t)(nb * nh * t * p.head));
    memcpy(vv, v->data, sizeof *vv * (size_t)(nb * nh * t * p.vhead));
  } else {
    for (int64_t b = 0; b < nb; b++) /* the past first */
      for (int64_t n = 0; n < nh; n++) {
        if (pl) memcpy(kk + (b * nh + n) * t * p.head, (const float *)pk->data + (b * nh + n) * pl * p.head,
                       sizeof *kk * (size_t)(pl * p.head));
        if (pl) memcpy(vv + (b * nh + n) * t * p.vhead, (const float *)pv->data + (b * nh + n) * pl * p.vhead,
                       sizeof *vv * (size_t)(pl * p.vhead));
      }
    to_heads(k->data, bv, p.qh, nb, l, p.qh, nh, t, pl, kk);
    to_heads(v->data, bv, 2 * p.qh, nb, l, p.vh, nh, t, pl, vv);
  }
  if (prk) memcpy(prk->data, kk, prk->nbytes);
  if (prv) memcpy(prv->data, vv, prv->nbytes);
  attend(&p, qq, kk, vv, m, ab, nb, s, t, pl, y->data, sc);
  free(qq), free(kk), free(vv), free(sc);
  return MI_OK;
}
