/* ref_gqa.c - reference com.microsoft GroupQueryAttention (past and present as separate buffers):
 * per batch the keys are past_key then the new K ([B, Nkv, P + S, H]); query head n reads K / V
 * head n / (Nq / Nkv); key j of batch b is masked past seqlens_k[b] and above the diagonal at
 * P + i; the scores Q K^T * scale in float, softcapped, then softmax (double) times V; do_rotary:
 * the new Q and K rotated first at their positions (s, or seqlens_k[b] + 1 - S + s with a past). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn.h"
#include "ref/ref_ops.h"

/* x [B, S, stride] columns c0 .. c0 + n * h - 1 into heads out [B, n, T, h] from key j0 on. */
static void to_heads(const float *x, int64_t stride, int64_t c0, int64_t nb, int64_t s, int64_t n, int64_t h, int64_t t,
                     int64_t j0, float *out) {
  for (int64_t b = 0; b < nb; b++)
    for (int64_t hh = 0; hh < n; hh++)
      for (int64_t j = 0; j < s; j++)
        memcpy(out + ((b * n + hh) * t + j0 + j) * h, x + (b * s + j) * stride + c0 + hh * h, sizeof *out * (size_t)h);
}

/* v rotated in place by the cos / sin row (pairs or halves of its first 2 * half values). */
static void rotate(float *v, const float *co, const float *si, int64_t half, int interleaved) {
  for (int64_t k = 0; k < half; k++) {
    int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
    float x1 = v[i1], x2 = v[i2];
    v[i1] = x1 * co[k] - x2 * si[k];
    v[i2] = x2 * co[k] + x1 * si[k];
  }
}

int32_t mi__ref_gqa(mi__ref_call_t *c) {
  mi__in_view_t ins[MI__GQ_COUNT];
  mi__attn_t p;
  char why[256];
  int32_t rc;
  mi__ref_in_views(c, ins, MI__GQ_COUNT);
  if (mi__gqa_check(c->node, ins, c->nout, &p, why, sizeof why)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const mi_array_t *q = mi__ref_in(c, MI__GQ_Q), *pk = mi__ref_in(c, MI__GQ_PK), *pv = mi__ref_in(c, MI__GQ_PV);
  const mi_array_t *sl = mi__ref_in(c, MI__GQ_SEQLENS);
  const float *kv = p.packed ? q->data : mi__ref_in(c, MI__GQ_K)->data, *vv0 = p.packed ? q->data : mi__ref_in(c, MI__GQ_V)->data;
  int64_t nb = q->dims[0], s = q->dims[1], pl = pk ? pk->dims[2] : 0, t = pl + s, nq = p.heads, nk = p.kv_heads, h = p.head;
  int64_t kvh = nk * h, qstride = q->dims[2], kstride = p.packed ? qstride : kvh;
  if (sl->dims[0] != nb) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "seqlens_k has %lld values, batch %lld",
                                             (long long)sl->dims[0], (long long)nb);
  int64_t yd[3] = {nb, s, p.qh}, kd[4] = {nb, nk, t, h};
  mi_array_t *y = NULL, *out[3] = {0};
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 3, yd, &y)) != MI_OK) return rc;
  c->out[0] = y;
  for (int32_t o = 1; o < 3; o++)
    if (mi__ref_out_wanted(c, o)) {
      if ((rc = mi__ref_make_out(c, o, MI_DTYPE_FLOAT32, 4, kd, &out[o])) != MI_OK) return rc;
      c->out[o] = out[o];
    }
  float *kk = malloc(sizeof *kk * (size_t)(nb * nk * t * h)), *vv = malloc(sizeof *vv * (size_t)(nb * nk * t * h));
  float *qq = malloc(sizeof *qq * (size_t)(nb * s * qstride));
  double *sc = malloc(sizeof *sc * (size_t)(t ? t : 1));
  if (!kk || !vv || !sc || !qq) {
    free(kk), free(vv), free(sc), free(qq);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int64_t r = 0; pl && r < nb * nk; r++) { /* the past first */
    memcpy(kk + r * t * h, (const float *)pk->data + r * pl * h, sizeof *kk * (size_t)(pl * h));
    memcpy(vv + r * t * h, (const float *)pv->data + r * pl * h, sizeof *vv * (size_t)(pl * h));
  }
  to_heads(kv, kstride, p.packed ? p.qh : 0, nb, s, nk, h, t, pl, kk);
  to_heads(vv0, kstride, p.packed ? p.qh + kvh : 0, nb, s, nk, h, t, pl, vv);
  const int32_t *lens = sl->data;
  memcpy(qq, q->data, sizeof *qq * (size_t)(nb * s * qstride));
  if (p.rot) { /* token i of batch b at position i (no past), else seqlens_k[b] + 1 - S + i */
    const mi_array_t *ca = mi__ref_in(c, MI__GQ_COS);
    const float *cv = ca->data, *sv = mi__ref_in(c, MI__GQ_SIN)->data;
    int64_t half = p.rot / 2;
    for (int64_t b = 0; b < nb; b++)
      for (int64_t i = 0; i < s; i++) {
        int64_t at = pk ? lens[b] + 1 - s + i : i;
        if (at < 0 || at >= ca->dims[0]) {
          free(kk), free(vv), free(sc), free(qq);
          return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "position %lld is outside the caches' %lld rows", (long long)at,
                              (long long)ca->dims[0]);
        }
        for (int64_t n = 0; n < nq; n++)
          rotate(qq + (b * s + i) * qstride + n * h, cv + at * half, sv + at * half, half, p.rot_interleaved);
        for (int64_t n = 0; n < nk; n++)
          rotate(kk + ((b * nk + n) * t + pl + i) * h, cv + at * half, sv + at * half, half, p.rot_interleaved);
      }
  }
  if (out[1]) memcpy(out[1]->data, kk, out[1]->nbytes);
  if (out[2]) memcpy(out[2]->data, vv, out[2]->nbytes);
  const float *qv = qq;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t n = 0; n < nq; n++)
      for (int64_t i = 0; i < s; i++) {
        const float *qi = qv + (b * s + i) * qstride + n * h;
        const float *kb = kk + (b * nk + n / (nq / nk)) * t * h, *vb = vv + (b * nk + n / (nq / nk)) * t * h;
        double mx = -INFINITY, sum = 0.;
        for (int64_t j = 0; j < t; j++) {
          double dot = 0.;
          for (int64_t e = 0; e < h; e++) dot += (double)qi[e] * kb[j * h + e];
          float d = (float)(dot * p.scale);
          if (p.softcap > 0.f) d = p.softcap * tanhf(d / p.softcap);
          if (j > lens[b]) d += p.filter;
          if (j > t - s + i) d += MI__ATTN_CAUSAL_BIAS;
          sc[j] = d;
          if (d > mx) mx = d;
        }
        for (int64_t j = 0; j < t; j++) sum += (sc[j] = exp(sc[j] - mx));
        float *o = (float *)y->data + (b * s + i) * p.qh + n * h;
        for (int64_t e = 0; e < h; e++) {
          double acc = 0.;
          for (int64_t j = 0; j < t; j++) acc += sc[j] / sum * vb[j * h + e];
          o[e] = (float)acc;
        }
      }
  free(kk), free(vv), free(sc), free(qq);
  return MI_OK;
}
