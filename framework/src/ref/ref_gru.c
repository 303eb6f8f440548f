/* ref_gru.c - reference GRU (gate order z, r, h; linear_before_reset 0 and 1) and RNN per the
 * ONNX spec: forward, reverse and bidirectional, layout 0 and 1, optional B, sequence_lens and
 * initial_h, activations Sigmoid/Tanh/Relu (defaults GRU Sigmoid, Tanh; RNN Tanh), clip; outputs Y and Y_h, either
 * optional. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref_ops.h"

enum { ACT_SIGMOID,
       ACT_TANH,
       ACT_RELU };

typedef struct rnn_cfg {
  int64_t S, N, I, H, D; /* steps, batch, input size, hidden size, directions */
  int reverse, layout;
  float clip;         /* 0: none */
  int act[2][2];      /* per direction: f, g (RNN: f only) */
  const int64_t *len; /* per batch row: its steps (NULL: all S) */
} rnn_cfg_t;

static float act(int kind, float clip, float v) {
  if (clip > 0) v = v < -clip ? -clip : v > clip ? clip
                                                 : v;
  if (kind == ACT_TANH) return tanhf(v);
  if (kind == ACT_RELU) return v > 0 ? v : 0.0f;
  return v >= 0 ? 1.0f / (1.0f + expf(-v)) : expf(v) / (1.0f + expf(v));
}

/* The attributes and X's dims shared by GRU and RNN. */
static int32_t parse(mi__ref_call_t *c, rnn_cfg_t *k, const mi_array_t **x) {
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), x)) != MI_OK) return rc;
  const char *dir = mi_node_attr_string(c->node, "direction", "forward");
  memset(k, 0, sizeof *k);
  k->H = mi_node_attr_int(c->node, "hidden_size", 0);
  k->D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  k->reverse = strcmp(dir, "reverse") == 0;
  if (!k->reverse && k->D == 1 && strcmp(dir, "forward") != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "direction '%s' is unknown", dir);
  int64_t layout = mi_node_attr_int(c->node, "layout", 0);
  if (layout != 0 && layout != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "layout %lld is not 0 or 1", (long long)layout);
  k->layout = (int)layout;
  if ((*x)->rank != 3 || k->H <= 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must be 3-D and hidden_size positive");
  k->S = (*x)->dims[layout ? 1 : 0];
  k->N = (*x)->dims[layout ? 0 : 1];
  k->I = (*x)->dims[2];
  const mi_attr_t *clip = mi_node_attr(c->node, "clip");
  if (clip && (clip->type != MI_ATTR_FLOAT || !(clip->f > 0)))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "clip must be a positive float");
  k->clip = clip ? clip->f : 0.0f;
  if (mi_node_attr(c->node, "activation_alpha") || mi_node_attr(c->node, "activation_beta"))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "activation_alpha/activation_beta are not supported");
  return MI_OK;
}

/* Whether p[0..len) is `lower` up to ASCII case (ONNX Runtime reads "tanh" as "Tanh"). */
static int name_is(const char *p, size_t len, const char *lower) {
  if (strlen(lower) != len) return 0;
  for (size_t i = 0; i < len; i++)
    if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]) != lower[i]) return 0;
  return 1;
}

/* `activations` as the importer keeps it (the names joined by ','): nact a direction, or nact
 * for both directions; absent: the defaults. */
static int32_t activations(mi__ref_call_t *c, int nact, rnn_cfg_t *k) {
  static const char *const names[3] = {"sigmoid", "tanh", "relu"};
  const mi_attr_t *a = mi_node_attr(c->node, "activations");
  int kinds[4], n = 0;
  for (int d = 0; d < 2; d++) k->act[d][0] = nact == 2 ? ACT_SIGMOID : ACT_TANH, k->act[d][1] = ACT_TANH;
  if (!a) return MI_OK;
  if (a->type != MI_ATTR_STRING || !a->s)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "activations must be a list of names");
  for (const char *p = a->s;; p++) {
    size_t len = strcspn(p, ",");
    int kind = -1;
    for (int j = 0; j < 3; j++)
      if (name_is(p, len, names[j])) kind = j;
    if (kind < 0)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "activation '%.*s' is not supported (Sigmoid, Tanh, Relu are)",
                          (int)len, p);
    if (n == 4) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "activations lists too many names");
    kinds[n++] = kind;
    p += len;
    if (!*p) break;
  }
  if (n != nact && n != nact * k->D)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "activations lists %d names, not %d a direction", n, nact);
  for (int i = 0; i < nact * k->D; i++) k->act[i / nact][i % nact] = kinds[i % n];
  return MI_OK;
}

/* sequence_lens (input 4) as int64 into buf, each in [1, S]; k->len stays NULL when absent. */
static int32_t lengths(mi__ref_call_t *c, rnn_cfg_t *k, int64_t *buf) {
  const mi_array_t *s = mi__ref_in(c, 4);
  if (!s) return MI_OK;
  if ((s->dtype != MI_DTYPE_INT32 && s->dtype != MI_DTYPE_INT64) || s->rank != 1 || s->dims[0] != k->N)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "sequence_lens must be int32 [batch]");
  for (int64_t n = 0; n < k->N; n++) {
    buf[n] = s->dtype == MI_DTYPE_INT32 ? ((const int32_t *)s->data)[n] : ((const int64_t *)s->data)[n];
    if (buf[n] < 1 || buf[n] > k->S)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] = %lld is outside [1, %lld]",
                          (long long)n, (long long)buf[n], (long long)k->S);
  }
  k->len = buf;
  return MI_OK;
}

/* Element offsets of row (t, n) of X, of Y's (t, d, n) and of Y_h's / initial_h's (d, n). */
static int64_t x_at(const rnn_cfg_t *k, int64_t t, int64_t n) {
  return (k->layout ? n * k->S + t : t * k->N + n) * k->I;
}
static int64_t y_at(const rnn_cfg_t *k, int64_t t, int64_t d, int64_t n) {
  return (k->layout ? (n * k->S + t) * k->D + d : (t * k->D + d) * k->N + n) * k->H;
}
static int64_t h_at(const rnn_cfg_t *k, int64_t d, int64_t n) {
  return (k->layout ? n * k->D + d : d * k->N + n) * k->H;
}

/* sum_k w[j][k] * v[k] for a row of length len, in double. */
static double dot(const float *w, const float *v, int64_t len) {
  double acc = 0;
  for (int64_t i = 0; i < len; i++) acc += (double)w[i] * v[i];
  return acc;
}

/* Y, Y_h from the node's inputs; gates: 3 (GRU) or 1 (RNN). */
static int32_t run(mi__ref_call_t *c, int gates) {
  const mi_array_t *x;
  const float *W, *R, *B, *h0;
  rnn_cfg_t k;
  int32_t rc;
  if ((rc = parse(c, &k, &x)) || (rc = activations(c, gates == 3 ? 2 : 1, &k))) return rc;
  int lbr = gates == 3 && mi_node_attr_int(c->node, "linear_before_reset", 0) != 0;
  const int64_t S = k.S, N = k.N, I = k.I, H = k.H, D = k.D, G = gates * H;
  int64_t dw[3] = {D, G, I}, dr[3] = {D, G, H}, db[2] = {D, 2 * G};
  int64_t dh[3] = {k.layout ? N : D, k.layout ? D : N, H};
  if ((rc = mi__ref_need_f32(c, 1, 0, 3, dw, &W)) || (rc = mi__ref_need_f32(c, 2, 0, 3, dr, &R)) ||
      (rc = mi__ref_need_f32(c, 3, 1, 2, db, &B)) || (rc = mi__ref_need_f32(c, 5, 1, 3, dh, &h0)))
    return rc;
  int64_t *len = calloc((size_t)N, sizeof *len);
  if (!len) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if ((rc = lengths(c, &k, len))) {
    free(len);
    return rc;
  }
  mi_array_t *y = NULL, *yh = NULL;
  int64_t dy0[4] = {S, D, N, H}, dy1[4] = {N, S, D, H};
  if (mi__ref_out_wanted(c, 0) &&
      (rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, 4, k.layout ? dy1 : dy0, &y)))
    goto done;
  if (mi__ref_out_wanted(c, 1) && (rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, 3, dh, &yh)))
    goto done;
  float *h = calloc((size_t)(5 * H), sizeof *h); /* h, then per unit z, r, r * h, new value */
  if (!h) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  float *z = h + H, *r = z + H, *rh = r + H, *nv = rh + H;
  const float *xd = x->data;
  for (int64_t d = 0; d < D; d++) {
    const float *w = W + d * G * I, *u = R + d * G * H, *b = B ? B + d * 2 * G : NULL;
    const int back = k.reverse || d == 1, f = k.act[d][0], g = k.act[d][1];
    for (int64_t n = 0; n < N; n++) {
      const int64_t L = k.len ? k.len[n] : S;
      for (int64_t j = 0; j < H; j++) h[j] = h0 ? h0[h_at(&k, d, n) + j] : 0.0f;
      for (int64_t step = 0; step < L; step++) {
        const int64_t t = back ? L - 1 - step : step;
        const float *xt = xd + x_at(&k, t, n);
        if (gates == 1) {
          for (int64_t j = 0; j < H; j++) {
            double a = dot(w + j * I, xt, I) + dot(u + j * H, h, H) + (b ? (double)b[j] + b[H + j] : 0);
            nv[j] = act(f, k.clip, (float)a);
          }
          memcpy(h, nv, (size_t)H * sizeof *h);
        } else {
          for (int64_t j = 0; j < H; j++) { /* z and r read the previous h */
            double az = dot(w + j * I, xt, I) + dot(u + j * H, h, H);
            double ar = dot(w + (H + j) * I, xt, I) + dot(u + (H + j) * H, h, H);
            if (b) az += (double)b[j] + b[G + j], ar += (double)b[H + j] + b[G + H + j];
            z[j] = act(f, k.clip, (float)az);
            r[j] = act(f, k.clip, (float)ar);
            rh[j] = r[j] * h[j];
          }
          for (int64_t j = 0; j < H; j++) {
            const float *wh = w + (2 * H + j) * I, *uh = u + (2 * H + j) * H;
            double xb = dot(wh, xt, I) + (b ? b[2 * H + j] : 0), rb = b ? b[G + 2 * H + j] : 0;
            double a = lbr ? xb + r[j] * (float)(dot(uh, h, H) + rb) : xb + dot(uh, rh, H) + rb;
            nv[j] = act(g, k.clip, (float)a);
          }
          for (int64_t j = 0; j < H; j++) h[j] = (1.0f - z[j]) * nv[j] + z[j] * h[j];
        }
        if (y) memcpy((float *)y->data + y_at(&k, t, d, n), h, (size_t)H * sizeof *h);
      }
      if (yh) memcpy((float *)yh->data + h_at(&k, d, n), h, (size_t)H * sizeof *h);
    }
  }
  free(h);
done:
  free(len);
  return rc;
}

int32_t mi__ref_gru(mi__ref_call_t *c) { return run(c, 3); }

int32_t mi__ref_rnn(mi__ref_call_t *c) { return run(c, 1); }
