/* blis_rnn.c - LSTM on the device (ONNX gate order i, o, f, c; default activations; forward,
 * reverse and bidirectional; layout 0 and 1), so a recurrent model's cell does not fall back to the
 * host (Silero VAD v4's two LSTMs sat in the middle of its device branch). */
#include <math.h>
#include <string.h>

#include "blis_conv.h"

typedef struct lstm_state {
  int32_t x, w, r, b, h0, c0; /* tensor indices (-1 when absent) */
  int32_t y, yh, yc;          /* outputs (-1 when not wanted) */
  int64_t S, N, I, H, dirs;
  int reverse;
  int layout; /* 1: batch first (X [N, S, I], Y [N, S, D, H], states [N, D, H]) */
  int32_t simd;
} lstm_state_t;

/* aux layout (floats): per direction the transposed recurrence weights RT[H][4H] and the summed
 * biases [4H], then the scratch: the input projections [S*N][4H], h and c [N][H], gates [4H]. */
static int64_t rt_size(const lstm_state_t *c) { return c->H * 4 * c->H + 4 * c->H; }

/* g[0..4H) += h[0..H) * RT[H][4H]: the recurrence as axpys over the gates, so the compiler
 * vectorises the inner loop without reassociating a sum (contraction stays off in C code). */
static inline __attribute__((always_inline)) void rec_body(const float *rt, const float *h,
                                                           float *g, int64_t H) {
  int64_t G = 4 * H;
  for (int64_t k = 0; k < H; k++) {
    const float hk = h[k], *row = rt + k * G;
    for (int64_t j = 0; j < G; j++) g[j] += hk * row[j];
  }
}
__attribute__((target("avx512f"))) static void rec_avx512(const float *rt, const float *h,
                                                          float *g, int64_t H) {
  rec_body(rt, h, g, H);
}
__attribute__((target("avx2,fma"))) static void rec_avx2(const float *rt, const float *h,
                                                         float *g, int64_t H) {
  rec_body(rt, h, g, H);
}
static void rec_c(const float *rt, const float *h, float *g, int64_t H) { rec_body(rt, h, g, H); }

/* Where batch n's state of direction d lies in initial_h/c and Y_h/c: [D, N, H] or, layout 1, [N, D, H]. */
static inline int64_t state_off(const lstm_state_t *c, int64_t d, int64_t n) {
  return (c->layout ? n * c->dirs + d : d * c->N + n) * c->H;
}

static void act(int32_t simd, int32_t kind, float *x, int64_t n) {
  if (!mi__blis_act_simd(simd, kind, x, n)) mi__blis_act_apply(kind, 0.f, 0.f, x, n);
}

static int32_t run_lstm(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  const lstm_state_t *c = s->state;
  const int64_t S = c->S, N = c->N, I = c->I, H = c->H, G = 4 * H;
  const float *x = t[c->x], *w = t[c->w];
  float *packed = s->aux, *gx = packed + c->dirs * rt_size(c);
  float *h = gx + S * N * G, *cs = h + N * H, *g = cs + N * H;
  (void)err;
  for (int64_t d = 0; d < c->dirs; d++) {
    const float *rt = packed + d * rt_size(c), *bias = rt + H * G;
    const float *h0 = c->h0 >= 0 ? (const float *)t[c->h0] : NULL;
    const float *c0 = c->c0 >= 0 ? (const float *)t[c->c0] : NULL;
    int back = c->reverse || d == 1;
    /* Every step's input projection in one GEMM: gx[S*N][4H] = X[S*N][I] * W_d^T, its rows in
     * X's order (step-major for layout 0, batch-major for layout 1). */
    mi__blis_sgemm(env, S * N, G, I, 1.f, x, I, 1, w + d * G * I, 1, I, 0.f, gx, G, 1);
    for (int64_t n = 0; n < N; n++) {
      int64_t so = state_off(c, d, n);
      for (int64_t k = 0; k < H; k++) {
        h[n * H + k] = h0 ? h0[so + k] : 0.f;
        cs[n * H + k] = c0 ? c0[so + k] : 0.f;
      }
    }
    for (int64_t step = 0; step < S; step++) {
      int64_t tt = back ? S - 1 - step : step;
      for (int64_t n = 0; n < N; n++) {
        float *hn = h + n * H, *cn = cs + n * H;
        const float *gt = gx + (c->layout ? n * S + tt : tt * N + n) * G;
        for (int64_t j = 0; j < G; j++) g[j] = gt[j] + bias[j];
        if (c->simd == MI__SIMD_AVX512) rec_avx512(rt, hn, g, H);
        else if (c->simd == MI__SIMD_AVX2)
          rec_avx2(rt, hn, g, H);
        else
          rec_c(rt, hn, g, H);
        act(c->simd, MI__ACT_SIGMOID, g, 3 * H); /* i, o, f */
        act(c->simd, MI__ACT_TANH, g + 3 * H, H);
        for (int64_t j = 0; j < H; j++) {
          cn[j] = g[2 * H + j] * cn[j] + g[j] * g[3 * H + j];
          hn[j] = cn[j];
        }
        act(c->simd, MI__ACT_TANH, hn, H);
        for (int64_t j = 0; j < H; j++) hn[j] *= g[H + j];
        if (c->y >= 0)
          memcpy((float *)t[c->y] + (c->layout ? (n * S + tt) * c->dirs + d : (tt * c->dirs + d) * N + n) * H, hn,
                 (size_t)H * sizeof *hn);
      }
    }
    for (int64_t n = 0; n < N; n++) {
      if (c->yh >= 0) memcpy((float *)t[c->yh] + state_off(c, d, n), h + n * H, (size_t)H * sizeof *h);
      if (c->yc >= 0) memcpy((float *)t[c->yc] + state_off(c, d, n), cs + n * H, (size_t)H * sizeof *cs);
    }
  }
  return MI_OK;
}

/* A float tensor of exactly these dims, or NULL. */
static const mi_tensor_desc_t *f32_dims(mi__blis_prep_t *p, int32_t idx, int32_t rank,
                                        const int64_t *d) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
  if (!t || t->dtype != MI_DTYPE_FLOAT32 || t->rank != rank) return NULL;
  for (int32_t k = 0; k < rank; k++)
    if (t->dims[k] != d[k]) return NULL;
  return t;
}

int32_t mi__blis_prep_lstm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *wt, *rt, *bt = NULL;
  const mi_attr_t *dir = mi_sdk_attr(n, "direction");
  const char *ds = dir && dir->type == MI_ATTR_STRING && dir->s ? dir->s : "forward";
  lstm_state_t *c;
  int64_t H = mi_sdk_attr_int(n, "hidden_size", 0), dirs = strcmp(ds, "bidirectional") == 0 ? 2 : 1;
  int reverse = strcmp(ds, "reverse") == 0;
  if (dirs == 1 && !reverse && strcmp(ds, "forward") != 0)
    return mi__blis_unsupported(err, n, "unknown direction");
  int64_t layout = mi_sdk_attr_int(n, "layout", 0);
  if ((layout != 0 && layout != 1) || mi_sdk_attr(n, "clip") || mi_sdk_attr(n, "activations") ||
      mi_sdk_attr_int(n, "input_forget", 0))
    return mi__blis_unsupported(err, n, "only layout 0 or 1, default activations, no clip, no input_forget");
  if (mi__blis_in(n, 4) >= 0) return mi__blis_unsupported(err, n, "sequence_lens is not run");
  if (mi__blis_in(n, 7) >= 0) return mi__blis_unsupported(err, n, "peepholes are not run");
  if (!x || x->dtype != MI_DTYPE_FLOAT32 || x->rank != 3 || H <= 0)
    return mi__blis_unsupported(err, n, "X must be FLOAT32 [S, N, I] ([N, S, I] for layout 1) and hidden_size positive");
  int64_t S = x->dims[layout ? 1 : 0], N = x->dims[layout ? 0 : 1], I = x->dims[2];
  int64_t dw[3] = {dirs, 4 * H, I}, dr[3] = {dirs, 4 * H, H}, db[2] = {dirs, 8 * H};
  int64_t dh[3] = {dirs, N, H}, dy[4] = {S, dirs, N, H};
  if (layout) { /* batch first: [N, D, H] and [N, S, D, H] */
    dh[0] = N, dh[1] = dirs;
    dy[0] = N, dy[1] = S, dy[2] = dirs;
  }
  if (!(wt = f32_dims(p, mi__blis_in(n, 1), 3, dw)) || !(rt = f32_dims(p, mi__blis_in(n, 2), 3, dr)) ||
      !mi__blis_is_const(p, mi__blis_in(n, 2)) ||
      (mi__blis_in(n, 3) >= 0 && (!(bt = f32_dims(p, mi__blis_in(n, 3), 2, db)) ||
                                  !mi__blis_is_const(p, mi__blis_in(n, 3)))))
    return mi__blis_unsupported(err, n, "W, R and B must be FLOAT32 of ONNX's shapes; R and B constant");
  if ((mi__blis_in(n, 5) >= 0 && !f32_dims(p, mi__blis_in(n, 5), 3, dh)) ||
      (mi__blis_in(n, 6) >= 0 && !f32_dims(p, mi__blis_in(n, 6), 3, dh)) ||
      (mi__blis_out(n, 0) >= 0 && !f32_dims(p, mi__blis_out(n, 0), 4, dy)) ||
      (mi__blis_out(n, 1) >= 0 && !f32_dims(p, mi__blis_out(n, 1), 3, dh)) ||
      (mi__blis_out(n, 2) >= 0 && !f32_dims(p, mi__blis_out(n, 2), 3, dh)))
    return mi__blis_unsupported(err, n, "initial states and outputs must be FLOAT32 of ONNX's shapes");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->x = mi__blis_in(n, 0);
  c->w = mi__blis_in(n, 1);
  c->r = mi__blis_in(n, 2);
  c->b = mi__blis_in(n, 3);
  c->h0 = mi__blis_in(n, 5);
  c->c0 = mi__blis_in(n, 6);
  c->y = mi__blis_out(n, 0);
  c->yh = mi__blis_out(n, 1);
  c->yc = mi__blis_out(n, 2);
  c->S = S;
  c->N = N;
  c->I = I;
  c->H = H;
  c->dirs = dirs;
  c->reverse = reverse;
  c->layout = (int)layout;
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  uint64_t floats = (uint64_t)(dirs * rt_size(c) + S * N * 4 * H + 2 * N * H + 4 * H);
  float *a = s->aux = mi__blis_alloc(p->ctx, floats * sizeof(float));
  if (!a) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  for (int64_t d = 0; d < dirs; d++) {
    const float *r = (const float *)rt->data + d * 4 * H * H;
    const float *b = bt ? (const float *)bt->data + d * 8 * H : NULL;
    float *pr = a + d * rt_size(c), *pb = pr + H * 4 * H;
    for (int64_t j = 0; j < 4 * H; j++) {
      for (int64_t k = 0; k < H; k++) pr[k * 4 * H + j] = r[j * H + k];
      pb[j] = b ? b[j] + b[4 * H + j] : 0.f;
    }
  }
  s->run = run_lstm;
  return MI_OK;
}
