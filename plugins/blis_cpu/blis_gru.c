/* blis_gru.c - GRU (linear_before_reset 0 and 1) and RNN on the device: forward, reverse and
 * bidirectional, layout 0 and 1, optional B and initial_h, activations Sigmoid, Tanh or Relu
 * (defaults: GRU Sigmoid and Tanh, RNN Tanh). Every step's input projection is one BLIS sgemm for all directions;
 * each step's h * R^T runs over R^T packed at prepare in column blocks held in registers. */
#include <immintrin.h>
#include <string.h>

#include "blis_conv.h"

#define BLK 128 /* columns of a packed block: 8 AVX-512 accumulators */

typedef struct gru_state {
  int32_t x, w, h0, y, yh;  /* tensor indices (-1 when absent) */
  int64_t S, N, I, H, D, G; /* G: gate rows a direction (3H for GRU, H for RNN) */
  int64_t Zp, Hp;           /* GRU's z|r width and one gate's width, padded to 16 */
  int64_t pack, scratch;    /* floats a direction's packed weights take; a (d, n) row's scratch */
  int gru, lbr, reverse, layout;
  int wt; /* 1: W constant, kept transposed [I][D*G] after the scratch */
  int32_t simd;
  int32_t act[2][2]; /* per direction: f, g (RNN: f only), MI__ACT_* */
} gru_state_t;

static int64_t pad16(int64_t v) { return (v + 15) / 16 * 16; }

/* R rows [r0, r0 + rows) of one direction (each H long), transposed into blocks of BLK columns
 * (the last narrower, padded to 16 with zero columns): block b is H rows of its width. */
static void pack_rt(const float *r, int64_t r0, int64_t rows, int64_t H, float *out) {
  int64_t W = pad16(rows);
  memset(out, 0, (size_t)(W * H) * sizeof *out);
  for (int64_t j0 = 0; j0 < W; j0 += BLK) {
    int64_t bw = W - j0 < BLK ? W - j0 : BLK;
    for (int64_t k = 0; k < H; k++)
      for (int64_t j = 0; j < bw && j0 + j < rows; j++) out[j0 * H + k * bw + j] = r[(r0 + j0 + j) * H + k];
  }
}

/* g[0..W) += sum_k h[k] * RT[k][0..W) over pack_rt's blocks; the accumulators stay in registers
 * for the whole k loop (an axpy a k loaded and stored g each time). */
__attribute__((target("avx512f"))) static void rec_avx512(const float *pk, const float *h,
                                                          float *g, int64_t H, int64_t W) {
  for (int64_t j0 = 0; j0 < W; j0 += BLK) {
    const int64_t bw = W - j0 < BLK ? W - j0 : BLK, nv = bw / 16;
    const float *p = pk + j0 * H;
    __m512 a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) a[i] = i < nv ? _mm512_loadu_ps(g + j0 + 16 * i) : _mm512_setzero_ps();
    if (nv == 8) {
      for (int64_t k = 0; k < H; k++, p += BLK) {
        const __m512 hk = _mm512_set1_ps(h[k]);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) a[i] = _mm512_fmadd_ps(_mm512_loadu_ps(p + 16 * i), hk, a[i]);
      }
    } else {
      for (int64_t k = 0; k < H; k++, p += bw) {
        const __m512 hk = _mm512_set1_ps(h[k]);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
          if (i < nv) a[i] = _mm512_fmadd_ps(_mm512_loadu_ps(p + 16 * i), hk, a[i]);
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
      if (i < nv) _mm512_storeu_ps(g + j0 + 16 * i, a[i]);
  }
}

/* The same at 8 lanes: each block in halves of 64 columns (8 accumulators of 16 registers). */
__attribute__((target("avx2,fma"))) static void rec_avx2(const float *pk, const float *h, float *g,
                                                         int64_t H, int64_t W) {
  for (int64_t j0 = 0; j0 < W; j0 += BLK) {
    const int64_t bw = W - j0 < BLK ? W - j0 : BLK;
    for (int64_t s = 0; s < bw; s += 64) {
      const int64_t nv = (bw - s < 64 ? bw - s : 64) / 8;
      const float *p = pk + j0 * H + s;
      __m256 a[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) a[i] = i < nv ? _mm256_loadu_ps(g + j0 + s + 8 * i) : _mm256_setzero_ps();
      for (int64_t k = 0; k < H; k++, p += bw) {
        const __m256 hk = _mm256_set1_ps(h[k]);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
          if (i < nv) a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8 * i), hk, a[i]);
      }
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++)
        if (i < nv) _mm256_storeu_ps(g + j0 + s + 8 * i, a[i]);
    }
  }
}

static void rec_c(const float *pk, const float *h, float *g, int64_t H, int64_t W) {
  for (int64_t j0 = 0; j0 < W; j0 += BLK) {
    const int64_t bw = W - j0 < BLK ? W - j0 : BLK;
    const float *p = pk + j0 * H;
    for (int64_t k = 0; k < H; k++, p += bw)
      for (int64_t j = 0; j < bw; j++) g[j0 + j] += h[k] * p[j];
  }
}

static void rec(int32_t simd, const float *pk, const float *h, float *g, int64_t H, int64_t W) {
  if (simd == MI__SIMD_AVX512) rec_avx512(pk, h, g, H, W);
  else if (simd == MI__SIMD_AVX2)
    rec_avx2(pk, h, g, H, W);
  else
    rec_c(pk, h, g, H, W);
}

static void act(int32_t simd, int32_t kind, float *x, int64_t n) {
  if (!mi__blis_act_simd(simd, kind, x, n)) mi__blis_act_apply(kind, 0.f, 0.f, x, n);
}

typedef struct gru_task {
  const gru_state_t *c;
  void *const *t;
  const float *packed, *gx;
  float *scratch;
} gru_task_t;

/* Direction d of batch row n, all its steps. Per direction the packed block holds GRU's R^T of
 * z|r [H][Zp] and of h [H][Hp], then the biases: z|r's two summed [Zp], h's input bias (plus its
 * recurrent one when linear_before_reset is 0) [Hp], h's recurrent bias (else 0) [Hp]; RNN's R^T
 * [H][Hp] and its summed biases [Hp]. */
static void run_row(const gru_task_t *tk, int64_t d, int64_t n, float *sc) {
  const gru_state_t *c = tk->c;
  const int64_t S = c->S, N = c->N, H = c->H, Zp = c->Zp, Hp = c->Hp, DG = c->D * c->G;
  const float *pk = tk->packed + d * c->pack;
  float *h = sc, *a = h + Hp, *b = a + Zp, *rh = b + Hp;
  const int back = c->reverse || d == 1;
  const int64_t hoff = (c->layout ? n * c->D + d : d * N + n) * H;
  memset(sc, 0, (size_t)c->scratch * sizeof *sc);
  if (c->h0 >= 0) memcpy(h, (const float *)tk->t[c->h0] + hoff, (size_t)H * sizeof *h);
  for (int64_t step = 0; step < S; step++) {
    const int64_t tt = back ? S - 1 - step : step, row = c->layout ? n * S + tt : tt * N + n;
    const float *gx = tk->gx + row * DG + d * c->G;
    if (c->gru) {
      const float *rzr = pk, *rhh = rzr + H * Zp, *bzr = rhh + H * Hp, *bxh = bzr + Zp, *brh = bxh + Hp;
      for (int64_t j = 0; j < 2 * H; j++) a[j] = gx[j] + bzr[j];
      rec(c->simd, rzr, h, a, H, Zp);
      act(c->simd, c->act[d][0], a, 2 * H); /* z, r */
      if (c->lbr) {
        memcpy(b, brh, (size_t)H * sizeof *b);
        rec(c->simd, rhh, h, b, H, Hp);
        for (int64_t j = 0; j < H; j++) b[j] = gx[2 * H + j] + bxh[j] + a[H + j] * b[j];
      } else {
        for (int64_t j = 0; j < H; j++) rh[j] = a[H + j] * h[j], b[j] = gx[2 * H + j] + bxh[j];
        rec(c->simd, rhh, rh, b, H, Hp);
      }
      act(c->simd, c->act[d][1], b, H);
      for (int64_t j = 0; j < H; j++) h[j] = (1.0f - a[j]) * b[j] + a[j] * h[j];
    } else {
      const float *bias = pk + H * Hp;
      for (int64_t j = 0; j < H; j++) b[j] = gx[j] + bias[j];
      rec(c->simd, pk, h, b, H, Hp);
      act(c->simd, c->act[d][0], b, H);
      memcpy(h, b, (size_t)H * sizeof *h);
    }
    if (c->y >= 0) {
      int64_t yoff = (c->layout ? (n * S + tt) * c->D + d : (tt * c->D + d) * N + n) * H;
      memcpy((float *)tk->t[c->y] + yoff, h, (size_t)H * sizeof *h);
    }
  }
  if (c->yh >= 0) memcpy((float *)tk->t[c->yh] + hoff, h, (size_t)H * sizeof *h);
}

/* Items are (direction, batch row) pairs: independent recurrences, so two threads take the two
 * directions of a bidirectional layer. */
static void rows_part(void *arg, int64_t begin, int64_t end) {
  const gru_task_t *tk = arg;
  for (int64_t i = begin; i < end; i++) run_row(tk, i / tk->c->N, i % tk->c->N, tk->scratch + i * tk->c->scratch);
}

static int32_t run_gru(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                       mi_error_t *err) {
  const gru_state_t *c = s->state;
  const int64_t DG = c->D * c->G;
  gru_task_t tk;
  (void)err;
  tk.c = c;
  tk.t = t;
  tk.packed = s->aux;
  float *gx = (float *)s->aux + c->D * c->pack;
  tk.gx = gx;
  tk.scratch = gx + c->S * c->N * DG;
  const float *wt = tk.scratch + c->D * c->N * c->scratch;
  /* Every step's input projection for all directions in one GEMM: gx[S*N][D*G] = X * W^T (X's
   * rows in its own order; run_row finds step t of row n by the layout). */
  if (c->wt) /* row-major W^T: BLIS's small-matrix kernels for it took half the time of W's rows */
    mi__blis_sgemm(env, c->S * c->N, DG, c->I, 1.f, t[c->x], c->I, 1, wt, DG, 1, 0.f, gx, DG, 1);
  else
    mi__blis_sgemm(env, c->S * c->N, DG, c->I, 1.f, t[c->x], c->I, 1, t[c->w], 1, c->I, 0.f, gx, DG, 1);
  mi__blis_parallel(env, c->D * c->N, 1, c->S * c->G * c->H, rows_part, &tk);
  return MI_OK;
}

/* A float tensor of exactly these dims, or NULL. */
static const mi_tensor_desc_t *f32_dims(mi__blis_prep_t *p, int32_t idx, int32_t rank, const int64_t *d) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
  if (!t || t->dtype != MI_DTYPE_FLOAT32 || t->rank != rank) return NULL;
  for (int32_t k = 0; k < rank; k++)
    if (t->dims[k] != d[k]) return NULL;
  return t;
}

/* Whether p[0..len) is `lower` up to ASCII case, as the reference reads activation names. */
static int name_is(const char *p, size_t len, const char *lower) {
  if (strlen(lower) != len) return 0;
  for (size_t i = 0; i < len; i++)
    if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]) != lower[i]) return 0;
  return 1;
}

/* `activations` (the names joined by ',', as the importer keeps them) into act[direction][f, g]:
 * nact names a direction, or nact for both; 0 for a name other than Sigmoid, Tanh or Relu. */
static int read_acts(const mi_node_desc_t *n, int nact, int64_t D, int32_t act[2][2]) {
  static const char *const names[3] = {"sigmoid", "tanh", "relu"};
  static const int32_t kinds[3] = {MI__ACT_SIGMOID, MI__ACT_TANH, MI__ACT_RELU};
  const mi_attr_t *a = mi_sdk_attr(n, "activations");
  int32_t got[4];
  int k = 0;
  for (int d = 0; d < 2; d++) act[d][0] = nact == 2 ? MI__ACT_SIGMOID : MI__ACT_TANH, act[d][1] = MI__ACT_TANH;
  if (!a) return 1;
  if (a->type != MI_ATTR_STRING || !a->s) return 0;
  for (const char *p = a->s;; p++) {
    size_t len = strcspn(p, ",");
    int j = 0;
    while (j < 3 && !name_is(p, len, names[j])) j++;
    if (j == 3 || k == 4) return 0;
    got[k++] = kinds[j];
    p += len;
    if (!*p) break;
  }
  if (k != nact && k != nact * D) return 0;
  for (int i = 0; i < nact * D; i++) act[i / nact][i % nact] = got[i % k];
  return 1;
}

int32_t mi__blis_prep_gru(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *rt, *bt = NULL;
  const mi_attr_t *dir = mi_sdk_attr(n, "direction");
  const char *ds = dir && dir->type == MI_ATTR_STRING && dir->s ? dir->s : "forward";
  const int gru = strcmp(n->op_type, "GRU") == 0;
  const int64_t H = mi_sdk_attr_int(n, "hidden_size", 0), D = strcmp(ds, "bidirectional") == 0 ? 2 : 1;
  const int64_t layout = mi_sdk_attr_int(n, "layout", 0), G = gru ? 3 * H : H;
  const int reverse = strcmp(ds, "reverse") == 0;
  gru_state_t *c;
  if (D == 1 && !reverse && strcmp(ds, "forward") != 0) return mi__blis_unsupported(err, n, "unknown direction");
  if (layout != 0 && layout != 1) return mi__blis_unsupported(err, n, "layout is not 0 or 1");
  int32_t acts[2][2];
  if (mi_sdk_attr(n, "clip") || mi_sdk_attr(n, "activation_alpha") || mi_sdk_attr(n, "activation_beta") ||
      !read_acts(n, gru ? 2 : 1, D, acts))
    return mi__blis_unsupported(err, n, "only Sigmoid, Tanh and Relu activations, no clip");
  if (mi__blis_in(n, 4) >= 0) return mi__blis_unsupported(err, n, "sequence_lens is not run");
  if (!x || x->dtype != MI_DTYPE_FLOAT32 || x->rank != 3 || H <= 0)
    return mi__blis_unsupported(err, n, "X must be FLOAT32 of rank 3 and hidden_size positive");
  const int64_t S = x->dims[layout ? 1 : 0], N = x->dims[layout ? 0 : 1], I = x->dims[2];
  if (S <= 0 || N <= 0 || I <= 0) return mi__blis_unsupported(err, n, "X must have known, non-zero dims");
  int64_t dw[3] = {D, G, I}, dr[3] = {D, G, H}, db[2] = {D, 2 * G};
  int64_t dh[3] = {layout ? N : D, layout ? D : N, H}, dy0[4] = {S, D, N, H}, dy1[4] = {N, S, D, H};
  if (!f32_dims(p, mi__blis_in(n, 1), 3, dw) || !(rt = f32_dims(p, mi__blis_in(n, 2), 3, dr)) ||
      !mi__blis_is_const(p, mi__blis_in(n, 2)) ||
      (mi__blis_in(n, 3) >= 0 &&
       (!(bt = f32_dims(p, mi__blis_in(n, 3), 2, db)) || !mi__blis_is_const(p, mi__blis_in(n, 3)))))
    return mi__blis_unsupported(err, n, "W, R and B must be FLOAT32 of ONNX's shapes; R and B constant");
  if ((mi__blis_in(n, 5) >= 0 && !f32_dims(p, mi__blis_in(n, 5), 3, dh)) ||
      (mi__blis_out(n, 0) >= 0 && !f32_dims(p, mi__blis_out(n, 0), 4, layout ? dy1 : dy0)) ||
      (mi__blis_out(n, 1) >= 0 && !f32_dims(p, mi__blis_out(n, 1), 3, dh)))
    return mi__blis_unsupported(err, n, "initial_h and the outputs must be FLOAT32 of ONNX's shapes");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->x = mi__blis_in(n, 0);
  c->w = mi__blis_in(n, 1);
  c->h0 = mi__blis_in(n, 5);
  c->y = mi__blis_out(n, 0);
  c->yh = mi__blis_out(n, 1);
  c->S = S, c->N = N, c->I = I, c->H = H, c->D = D, c->G = G;
  c->Zp = pad16(2 * H), c->Hp = pad16(H);
  c->gru = gru, c->reverse = reverse, c->layout = (int)layout;
  c->lbr = gru && mi_sdk_attr_int(n, "linear_before_reset", 0) != 0;
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  memcpy(c->act, acts, sizeof acts);
  c->pack = gru ? H * c->Zp + H * c->Hp + c->Zp + 2 * c->Hp : H * c->Hp + c->Hp;
  c->scratch = 3 * c->Hp + c->Zp;
  c->wt = mi__blis_is_const(p, c->w);
  uint64_t floats = (uint64_t)(D * c->pack + S * N * D * G + D * N * c->scratch + (c->wt ? D * G * I : 0));
  float *a = s->aux = mi__blis_alloc(p->ctx, floats * sizeof(float));
  if (!a) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  memset(a, 0, (size_t)(D * c->pack) * sizeof *a);
  if (c->wt) {
    const float *w = mi__blis_tensor(p, c->w)->data;
    float *wt = a + D * c->pack + S * N * D * G + D * N * c->scratch;
    for (int64_t j = 0; j < D * G; j++)
      for (int64_t k = 0; k < I; k++) wt[k * D * G + j] = w[j * I + k];
  }
  for (int64_t d = 0; d < D; d++) {
    const float *r = (const float *)rt->data + d * G * H, *b = bt ? (const float *)bt->data + d * 2 * G : NULL;
    float *pd = a + d * c->pack;
    if (gru) {
      float *bzr = pd + H * c->Zp + H * c->Hp, *bxh = bzr + c->Zp, *brh = bxh + c->Hp;
      pack_rt(r, 0, 2 * H, H, pd);
      pack_rt(r, 2 * H, H, H, pd + H * c->Zp);
      for (int64_t j = 0; b && j < H; j++) {
        bzr[j] = b[j] + b[G + j];
        bzr[H + j] = b[H + j] + b[G + H + j];
        bxh[j] = c->lbr ? b[2 * H + j] : b[2 * H + j] + b[G + 2 * H + j];
        brh[j] = c->lbr ? b[G + 2 * H + j] : 0.f;
      }
    } else {
      float *bias = pd + H * c->Hp;
      pack_rt(r, 0, H, H, pd);
      for (int64_t j = 0; b && j < H; j++) bias[j] = b[j] + b[H + j];
    }
  }
  s->run = run_gru;
  return MI_OK;
}
