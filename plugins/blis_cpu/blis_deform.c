/* blis_deform.c - blis-cpu's DeformConv (2-D, FLOAT32; torchvision's deform_conv2d export): per
 * chunk of output pixels, an im2col whose every entry is a bilinear sample at the tap's learned
 * offset (times the mask), then one BLIS sgemm per group. The four corners and weights of a sample
 * are worked out once per tap and pixel and shared by the channels of its offset group. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blis_conv.h" /* mi__blis_sgemm, the SIMD levels */

typedef struct dc_state {
  int32_t x, w, off, b, mask, y, simd;
  int64_t N, C, H, W, M, G, OG, KH, KW, OH, OW, sh, sw, dh, dw, pt, pl;
  int64_t chunk; /* output pixels per im2col and GEMM pass */
} dc_state_t;

/* One chunk's im2col: the image, the chunk's first pixel and length, its [C x K, len] columns. */
typedef struct dc_chunk {
  const dc_state_t *st;
  void *const *t;
  int64_t n, c0, len;
  float *col;
} dc_chunk_t;

typedef struct dc_task {
  const dc_state_t *st;
  void *const *t;
  mi__blis_env_t env1; /* the run's, one thread: the chunk's GEMM runs inside a part */
  atomic_int failed;   /* a part found no memory for its columns */
} dc_task_t;

/* Pixels of one item of the im2col: one offset group's taps over this many output pixels. */
#define DC_BLOCK 64
/* Bytes of im2col a chunk holds at most: the chunk's columns stay in L2 from their sampling to
 * the GEMM that reads them (a whole 64-channel 64x64 image's 9.4 MB did not, and its GEMM
 * packed them with BLIS's reference code; a chunk's GEMM is small enough for the kernel set
 * without packing, MI__AUTO_SMALL_MACS). */
#define DC_CHUNK_BYTES (512 << 10)

/* A chunk's im2col as items (offset group, block of DC_BLOCK output pixels). For each tap the
 * block's samples are resolved to four flat indices and weights (corners outside the image weigh
 * 0 at index 0), then each channel of the group gathers them into its im2col row. */
static inline __attribute__((always_inline)) void dc_cols(const dc_chunk_t *tk, int64_t i0, int64_t i1) {
  const dc_state_t *st = tk->st;
  const float *x = tk->t[st->x], *off = tk->t[st->off], *mask = st->mask >= 0 ? tk->t[st->mask] : NULL;
  int64_t P = st->OH * st->OW, K = st->KH * st->KW, blocks = (tk->len + DC_BLOCK - 1) / DC_BLOCK, Co = st->C / st->OG;
  int32_t idx[4][DC_BLOCK];
  float wt[4][DC_BLOCK];
  for (int64_t it = i0; it < i1; it++) {
    int64_t g = it / blocks, b0 = (it % blocks) * DC_BLOCK, p0 = tk->c0 + b0;
    int64_t np = tk->len - b0 < DC_BLOCK ? tk->len - b0 : DC_BLOCK;
    const float *og = off + (tk->n * st->OG + g) * 2 * K * P, *mg = mask ? mask + (tk->n * st->OG + g) * K * P : NULL;
    for (int64_t k = 0; k < K; k++) {
      int64_t kh = k / st->KW, kw = k % st->KW;
      for (int64_t j = 0; j < np; j++) {
        int64_t pix = p0 + j, oh = pix / st->OW, ow = pix % st->OW;
        float h = (float)(oh * st->sh - st->pt + kh * st->dh) + og[2 * k * P + pix];
        float w = (float)(ow * st->sw - st->pl + kw * st->dw) + og[(2 * k + 1) * P + pix];
        float m = mg ? mg[k * P + pix] : 1.0f;
        for (int c = 0; c < 4; c++) idx[c][j] = 0, wt[c][j] = 0.0f;
        if (!(h > -1.0f && h < (float)st->H && w > -1.0f && w < (float)st->W)) continue;
        float hf = floorf(h), wf = floorf(w), lh = h - hf, lw = w - wf;
        int64_t h0 = (int64_t)hf, w0 = (int64_t)wf;
        int in_h0 = h0 >= 0, in_h1 = h0 + 1 < st->H, in_w0 = w0 >= 0, in_w1 = w0 + 1 < st->W;
        if (in_h0 && in_w0) idx[0][j] = (int32_t)(h0 * st->W + w0), wt[0][j] = (1 - lh) * (1 - lw) * m;
        if (in_h0 && in_w1) idx[1][j] = (int32_t)(h0 * st->W + w0 + 1), wt[1][j] = (1 - lh) * lw * m;
        if (in_h1 && in_w0) idx[2][j] = (int32_t)((h0 + 1) * st->W + w0), wt[2][j] = lh * (1 - lw) * m;
        if (in_h1 && in_w1) idx[3][j] = (int32_t)((h0 + 1) * st->W + w0 + 1), wt[3][j] = lh * lw * m;
      }
      for (int64_t ci = g * Co; ci < (g + 1) * Co; ci++) {
        const float *plane = x + (tk->n * st->C + ci) * st->H * st->W;
        float *row = tk->col + (ci * K + k) * tk->len + b0;
        for (int64_t j = 0; j < np; j++)
          row[j] = wt[0][j] * plane[idx[0][j]] + wt[1][j] * plane[idx[1][j]] + wt[2][j] * plane[idx[2][j]] +
                   wt[3][j] * plane[idx[3][j]];
      }
    }
  }
}

/* Items are (image, chunk of output pixels): each part samples a chunk's columns into its own
 * buffer (in L2 still when its GEMM reads them) and runs the chunk's GEMM on its own thread, so
 * the two threads never wait for each other inside an image. */
static inline __attribute__((always_inline)) void dc_body(dc_task_t *tk, int64_t i0, int64_t i1) {
  const dc_state_t *st = tk->st;
  const float *w = tk->t[st->w], *b = st->b >= 0 ? tk->t[st->b] : NULL;
  int64_t P = st->OH * st->OW, K = st->KH * st->KW, Cg = st->C / st->G, Mg = st->M / st->G;
  int64_t chunks = (P + st->chunk - 1) / st->chunk;
  dc_chunk_t ch = {st, tk->t, 0, 0, 0, malloc((size_t)(st->C * K * st->chunk) * sizeof(float))};
  if (!ch.col) {
    atomic_store(&tk->failed, 1);
    return;
  }
  for (int64_t it = i0; it < i1; it++) {
    ch.n = it / chunks, ch.c0 = (it % chunks) * st->chunk;
    ch.len = P - ch.c0 < st->chunk ? P - ch.c0 : st->chunk;
    dc_cols(&ch, 0, st->OG * ((ch.len + DC_BLOCK - 1) / DC_BLOCK));
    float *yc = (float *)tk->t[st->y] + ch.n * st->M * P + ch.c0;
    /* beta 0, the bias after: with beta 1 BLIS's small-matrix edge kernels read a float past the
     * output's end (valgrind: 0 bytes after the output buffer, a chunk ending the tensor) */
    for (int64_t g = 0; g < st->G; g++)
      mi__blis_sgemm(&tk->env1, Mg, ch.len, Cg * K, 1.0f, w + g * Mg * Cg * K, Cg * K, 1, ch.col + g * Cg * K * ch.len,
                     ch.len, 1, 0.0f, yc + g * Mg * P, P, 1);
    for (int64_t m = 0; b && m < st->M; m++)
      for (int64_t i = 0; i < ch.len; i++) yc[m * P + i] += b[m];
  }
  free(ch.col);
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void dc_avx512(void *arg, int64_t i0, int64_t i1) {
  dc_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void dc_avx2(void *arg, int64_t i0, int64_t i1) { dc_body(arg, i0, i1); }
static void dc_c(void *arg, int64_t i0, int64_t i1) { dc_body(arg, i0, i1); }

static int32_t run_dc(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const dc_state_t *st = s->state;
  int64_t P = st->OH * st->OW, chunks = (P + st->chunk - 1) / st->chunk;
  dc_task_t task;
  task.st = st;
  task.t = t;
  task.env1 = *env;
  task.env1.threads = 1;
  atomic_init(&task.failed, 0);
  /* a chunk's work: its samples (4 corners a column entry) and its multiply-adds */
  mi__blis_parallel(env, st->N * chunks, 1, st->C * st->KH * st->KW * st->chunk * (8 + st->M / st->G),
                    st->simd == MI__SIMD_AVX512 ? dc_avx512 : st->simd == MI__SIMD_AVX2 ? dc_avx2
                                                                                        : dc_c,
                    &task);
  if (atomic_load(&task.failed))
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "DeformConv: no memory for a %lld x %lld im2col chunk",
                         (long long)(st->C * st->KH * st->KW), (long long)st->chunk);
  return MI_OK;
}

int32_t mi__blis_prep_deform_conv(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *off = mi__blis_tensor(p, mi__blis_in(n, 2)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_tensor_desc_t *b = mi__blis_tensor(p, mi__blis_in(n, 3)), *mask = mi__blis_tensor(p, mi__blis_in(n, 4));
  int64_t ss[2], dd[2], pp[4];
  dc_state_t *st;
  if (!x || !w || !off || !y || x->rank != 4 || w->rank != 4 || off->rank != 4 || y->rank != 4 ||
      x->dtype != MI_DTYPE_FLOAT32 || w->dtype != MI_DTYPE_FLOAT32 || off->dtype != MI_DTYPE_FLOAT32 ||
      y->dtype != MI_DTYPE_FLOAT32 || (b && b->dtype != MI_DTYPE_FLOAT32) || (mask && mask->dtype != MI_DTYPE_FLOAT32))
    return mi__blis_unsupported(err, n, "X, W, offset, B, mask must be FLOAT32, X, W, offset 4-D");
  if (!mi_sdk_attr_ints(n, "strides", ss, 2, 1) || !mi_sdk_attr_ints(n, "dilations", dd, 2, 1) ||
      !mi_sdk_attr_ints(n, "pads", pp, 4, 0) || strcmp(mi_sdk_attr_string(n, "auto_pad", "NOTSET"), "NOTSET"))
    return mi__blis_unsupported(err, n, "strides, dilations or pads do not fit a 2-D input (or auto_pad is set)");
  int64_t G = mi_sdk_attr_int(n, "group", 1), OG = mi_sdk_attr_int(n, "offset_group", 1);
  int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], KH = w->dims[2], KW = w->dims[3];
  int64_t OH = y->dims[2], OW = y->dims[3], K = KH * KW;
  for (int d = 0; d < 2; d++)
    if (ss[d] < 1 || dd[d] < 1 || pp[d] < 0 || pp[2 + d] < 0)
      return mi__blis_unsupported(err, n, "strides, dilations must be >= 1 and pads >= 0");
  if (G < 1 || OG < 1 || C % G || M % G || C % OG || w->dims[1] * G != C || y->dims[0] != N || y->dims[1] != M ||
      OH != (x->dims[2] + pp[0] + pp[2] - (KH - 1) * dd[0] - 1) / ss[0] + 1 ||
      OW != (x->dims[3] + pp[1] + pp[3] - (KW - 1) * dd[1] - 1) / ss[1] + 1 || off->dims[0] != N ||
      off->dims[1] != OG * 2 * K || off->dims[2] != OH || off->dims[3] != OW ||
      (mask && (mask->rank != 4 || mask->dims[0] != N || mask->dims[1] != OG * K || mask->dims[2] != OH ||
                mask->dims[3] != OW)) ||
      (b && mi_sdk_numel(b) != M) || x->dims[2] * x->dims[3] > INT32_MAX)
    return mi__blis_unsupported(err, n, "the shapes of X, W, offset, B, mask and Y do not fit each other");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0), st->w = mi__blis_in(n, 1), st->off = mi__blis_in(n, 2);
  st->b = b ? mi__blis_in(n, 3) : -1, st->mask = mask ? mi__blis_in(n, 4) : -1, st->y = mi__blis_out(n, 0);
  st->N = N, st->C = C, st->H = x->dims[2], st->W = x->dims[3], st->M = M, st->G = G, st->OG = OG;
  st->KH = KH, st->KW = KW, st->OH = OH, st->OW = OW, st->sh = ss[0], st->sw = ss[1], st->dh = dd[0], st->dw = dd[1];
  st->pt = pp[0], st->pl = pp[1];
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0); /* knob `simd`: 0 = auto */
    if (si > 0 && si < p->ctx->simd_n) st->simd = p->ctx->simd_ids[si];
  }
  /* whole DC_BLOCKs of pixels, at least one */
  st->chunk = (int64_t)DC_CHUNK_BYTES / (int64_t)sizeof(float) / (C * K) / DC_BLOCK * DC_BLOCK;
  if (st->chunk < DC_BLOCK) st->chunk = DC_BLOCK;
  if (st->chunk > OH * OW) st->chunk = OH * OW;
  s->run = run_dc;
  return MI_OK;
}
