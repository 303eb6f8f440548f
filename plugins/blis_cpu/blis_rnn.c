/* blis_rnn.c - LSTM on the device (ONNX gate order i, o, f, c; default activations; forward,
 * reverse and bidirectional; layout 0 and 1), so a recurrent model's cell does not fall back to the
 * host (Silero VAD v4's two LSTMs sat in the middle of its device branch). Weights whose values are
 * all exactly FP16 (the fp16 precision's rounding) are held as halves. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_conv.h"

/* Steps times batch rows up to which the input projection runs as matvecs over the packed W
 * (each step's x row read once, W streamed like R) rather than one BLIS GEMM: a streaming
 * model's one step (Silero VAD: S = N = 1) paid the GEMM call for a 1 x 4H x I product. */
#define LSTM_MV_ROWS 4

typedef struct lstm_state {
  int32_t x, w, r, b, h0, c0; /* tensor indices (-1 when absent) */
  int32_t y, yh, yc;          /* outputs (-1 when not wanted) */
  int64_t S, N, I, H, dirs;
  int reverse;
  int layout; /* 1: batch first (X [N, S, I], Y [N, S, D, H], states [N, D, H]) */
  int32_t simd;
  int mv;             /* the input projection as matvecs over the packed W (constant W, S * N <= LSTM_MV_ROWS) */
  int half;           /* the packed R (and W with mv) held as IEEE halves: their values are exactly FP16 (the
                       * fp16 precision rounded them), so half the bytes stream with the same sums */
  int64_t dir_floats; /* aux floats per direction: the summed biases, then RT, then WT */
} lstm_state_t;

/* aux layout (floats): per direction the summed biases [4H], the transposed recurrence weights
 * RT[H][4H] and, with mv, the transposed input weights WT[I][4H] (FP32, or halves in as many
 * floats' bytes, rounded up); then the scratch: the input projections [S*N][4H] (without mv), h
 * and c [N][H], the gates [4H]. */
static int64_t packed_floats(const lstm_state_t *c, int64_t rows) {
  int64_t n = rows * 4 * c->H;
  return c->half ? (n + 1) / 2 : n;
}

/* g[0..G) += v[0..K) * M[K][G] (row k at m + k * G, FP32 or halves): each g[j] summed over k in
 * order with fused multiply-adds, so either storage gives the same sums (the C path rounds each
 * product first). NB vectors of gates stay in registers over k (a constant after inlining: with a
 * run-time count the accumulators went to the stack). */
#define MV_BODY(VEC, LANES, NB, LOADU, STOREU, SET1, FMA, LOADF, LOADH)                                          \
  do {                                                                                                           \
    VEC acc[NB];                                                                                                 \
    int b_;                                                                                                      \
    _Pragma("GCC unroll 8") for (b_ = 0; b_ < NB; b_++) acc[b_] = LOADU(g + j0 + LANES * b_);                    \
    for (k = 0; k < K; k++) {                                                                                    \
      const VEC vk = SET1(v[k]);                                                                                 \
      if (half) {                                                                                                \
        const uint16_t *row = (const uint16_t *)m + k * G + j0;                                                  \
        _Pragma("GCC unroll 8") for (b_ = 0; b_ < NB; b_++) acc[b_] = FMA(vk, LOADH(row + LANES * b_), acc[b_]); \
      } else {                                                                                                   \
        const float *row = (const float *)m + k * G + j0;                                                        \
        _Pragma("GCC unroll 8") for (b_ = 0; b_ < NB; b_++) acc[b_] = FMA(vk, LOADF(row + LANES * b_), acc[b_]); \
      }                                                                                                          \
    }                                                                                                            \
    _Pragma("GCC unroll 8") for (b_ = 0; b_ < NB; b_++) STOREU(g + j0 + LANES * b_, acc[b_]);                    \
    j0 += LANES * NB;                                                                                            \
  } while (0)

#define H512(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define H256(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))

/* the gates past the vectors, scalar, in the same order (fmaf: the vectors' rounding) */
static void mv_tail(const void *m, int half, const float *v, float *g, int64_t K, int64_t G, int64_t j0) {
  for (; j0 < G; j0++)
    for (int64_t k = 0; k < K; k++)
      g[j0] = fmaf(v[k],
                   half ? mi_sdk_half_to_float(((const uint16_t *)m)[k * G + j0]) : ((const float *)m)[k * G + j0],
                   g[j0]);
}

__attribute__((target("avx512f"))) static void mv_avx512(const void *m, int half, const float *v, float *g,
                                                         int64_t K, int64_t G) {
  int64_t j0 = 0, k;
  while (j0 + 128 <= G)
    MV_BODY(__m512, 16, 8, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_loadu_ps,
            H512);
  while (j0 + 16 <= G)
    MV_BODY(__m512, 16, 1, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_loadu_ps,
            H512);
  mv_tail(m, half, v, g, K, G, j0);
}

__attribute__((target("avx2,fma,f16c"))) static void mv_avx2(const void *m, int half, const float *v, float *g,
                                                             int64_t K, int64_t G) {
  int64_t j0 = 0, k;
  while (j0 + 64 <= G)
    MV_BODY(__m256, 8, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
            H256);
  while (j0 + 8 <= G)
    MV_BODY(__m256, 8, 1, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
            H256);
  mv_tail(m, half, v, g, K, G, j0);
}

/* FP32 storage only (halves need F16C). */
static void mv_c(const float *m, const float *v, float *g, int64_t K, int64_t G) {
  for (int64_t k = 0; k < K; k++) {
    const float vk = v[k], *row = m + k * G;
    for (int64_t j = 0; j < G; j++) g[j] += vk * row[j];
  }
}

static void mv(const lstm_state_t *c, const void *m, const float *v, float *g, int64_t K) {
  if (c->simd == MI__SIMD_AVX512) mv_avx512(m, c->half, v, g, K, 4 * c->H);
  else if (c->simd == MI__SIMD_AVX2)
    mv_avx2(m, c->half, v, g, K, 4 * c->H);
  else
    mv_c(m, v, g, K, 4 * c->H);
}

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
  float *packed = s->aux, *gx = packed + c->dirs * c->dir_floats;
  float *h = gx + (c->mv ? 0 : S * N * G), *cs = h + N * H, *g = cs + N * H;
  (void)err;
  for (int64_t d = 0; d < c->dirs; d++) {
    const float *bias = packed + d * c->dir_floats, *rt = bias + G, *wt = rt + packed_floats(c, H);
    const float *h0 = c->h0 >= 0 ? (const float *)t[c->h0] : NULL;
    const float *c0 = c->c0 >= 0 ? (const float *)t[c->c0] : NULL;
    int back = c->reverse || d == 1;
    /* Without mv, every step's input projection in one GEMM: gx[S*N][4H] = X[S*N][I] * W_d^T,
     * its rows in X's order (step-major for layout 0, batch-major for layout 1). */
    if (!c->mv) mi__blis_sgemm(env, S * N, G, I, 1.f, x, I, 1, w + d * G * I, 1, I, 0.f, gx, G, 1);
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
        int64_t row = c->layout ? n * S + tt : tt * N + n;
        if (c->mv) {
          memcpy(g, bias, (size_t)G * sizeof *g);
          mv(c, wt, x + row * I, g, I);
        } else {
          for (int64_t j = 0; j < G; j++) g[j] = gx[row * G + j] + bias[j];
        }
        mv(c, rt, hn, g, H);
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

/* 1 when every value of v[0..n) is exactly an IEEE half (the fp16 precision's rounding). */
static int half_exact(const float *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (mi_sdk_half_to_float(mi_sdk_float_to_half(v[i])) != v[i]) return 0;
  return 1;
}

/* m[rows][4H] (ONNX's [4H][rows] of one direction, transposed) into dst, FP32 or halves. */
static void pack_t(const lstm_state_t *c, const float *m, int64_t rows, float *dst) {
  int64_t G = 4 * c->H;
  for (int64_t j = 0; j < G; j++)
    for (int64_t k = 0; k < rows; k++) {
      if (c->half) ((uint16_t *)dst)[k * G + j] = mi_sdk_float_to_half(m[j * rows + k]);
      else
        dst[k * G + j] = m[j * rows + k];
    }
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
  c->mv = S * N <= LSTM_MV_ROWS && mi__blis_is_const(p, c->w);
  c->half = c->simd != MI__SIMD_C && (p->ctx->cpu.isa & MI__ISA_F16C) &&
            half_exact((const float *)rt->data, dirs * 4 * H * H) &&
            (!c->mv || half_exact((const float *)wt->data, dirs * 4 * H * I));
  c->dir_floats = 4 * H + packed_floats(c, H) + (c->mv ? packed_floats(c, I) : 0);
  uint64_t floats = (uint64_t)(dirs * c->dir_floats + (c->mv ? 0 : S * N * 4 * H) + 2 * N * H + 4 * H);
  float *a = s->aux = mi__blis_alloc(p->ctx, floats * sizeof(float));
  if (!a) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  for (int64_t d = 0; d < dirs; d++) {
    const float *b = bt ? (const float *)bt->data + d * 8 * H : NULL;
    float *pb = a + d * c->dir_floats, *pr = pb + 4 * H;
    for (int64_t j = 0; j < 4 * H; j++) pb[j] = b ? b[j] + b[4 * H + j] : 0.f;
    pack_t(c, (const float *)rt->data + d * 4 * H * H, H, pr);
    if (c->mv) pack_t(c, (const float *)wt->data + d * 4 * H * I, I, pr + packed_floats(c, H));
  }
  s->run = run_lstm;
  return MI_OK;
}
