/* blis_transpose.c - Transposes that are a batch of 2-D transposes: channels-last -> channels-first
 * of a few channels (an image model's NHWC input before its first Conv) as one pass over the
 * input, sixteen pixels a step, and larger ones (output heads' NCHW -> NHWC) in 16x16 tiles. */
#include <immintrin.h>

#include "blis_epi512.h"

/* y[o][c][p] = x[o][p][c] for o < outer, c < ch, p < pix: ch 2 to 4 (deinterleave), or ch 5 or
 * more and pix 8 or more (tiles, AVX-512 only; a spectrogram's 257x5 -> 5x257 0.50 -> 0.35-0.40 us). */
typedef struct deint_state {
  int32_t x, y, simd, tiles;
  int64_t outer, ch, pix, blocks; /* blocks: 16-pixel blocks an image, or 16-channel bands */
} deint_state_t;

/* Pixels [p0, p1) of one image, sixteen a step: the 16 * ch floats they span as ch masked loads
 * (never past the last pixel's last channel), then per channel two vpermt2ps (lanes whose index
 * is below 32 from the first pair, the rest from the second) and a blend. The input is read once;
 * the per-row strided gather this replaces read each pixel's cache line once a channel, at 21
 * GB/s on a 3-channel 128x128 image (BlazeFace's first step). */
__attribute__((target("avx512f"))) static void deint_avx512(const float *x, int64_t ch, float *y, int64_t pix,
                                                            int64_t p0, int64_t p1) {
  const __m512i step = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32((int32_t)ch));
  __m512i idx[4];
  __mmask16 upper[4];
  int64_t p, k, c;
  for (c = 0; c < ch; c++) {
    idx[c] = _mm512_add_epi32(step, _mm512_set1_epi32((int32_t)c));
    upper[c] = _mm512_cmpge_epi32_mask(idx[c], _mm512_set1_epi32(32));
  }
  for (p = p0; p < p1; p += 16) {
    int64_t cnt = p1 - p < 16 ? p1 - p : 16, need = cnt * ch;
    const float *xp = x + p * ch;
    const __mmask16 out = cnt == 16 ? 0xffff : (__mmask16)((1u << cnt) - 1u);
    __m512 v[4];
    if (cnt == 16 && ch == 3) { /* the common image case: three whole vectors */
      v[0] = _mm512_loadu_ps(xp);
      v[1] = _mm512_loadu_ps(xp + 16);
      v[2] = _mm512_loadu_ps(xp + 32);
      v[3] = _mm512_setzero_ps();
    } else
      for (k = 0; k < 4; k++) {
        int64_t left = need - 16 * k;
        __mmask16 m = left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                                     : 0;
        v[k] = _mm512_maskz_loadu_ps(m, xp + 16 * k);
      }
    for (c = 0; c < ch; c++) {
      __m512 lo = _mm512_permutex2var_ps(v[0], idx[c], v[1]), hi = _mm512_permutex2var_ps(v[2], idx[c], v[3]);
      _mm512_mask_storeu_ps(y + c * pix + p, out, _mm512_mask_blend_ps(upper[c], lo, hi));
    }
  }
}

/* Blocks [b0, b1) of 16 pixels over all images, image-major. */
static void deint_blocks(void *arg, int64_t b0, int64_t b1) {
  const mi__blis_task_t *q = arg;
  const deint_state_t *d = q->state;
  const float *x = q->t[d->x];
  float *y = q->t[d->y];
  int64_t b = b0;
  while (b < b1) {
    int64_t o = b / d->blocks, e = (o + 1) * d->blocks < b1 ? (o + 1) * d->blocks : b1;
    int64_t p0 = (b - o * d->blocks) * 16, p1 = (e - o * d->blocks) * 16 < d->pix ? (e - o * d->blocks) * 16 : d->pix, c, p;
    const float *xo = x + o * d->pix * d->ch;
    float *yo = y + o * d->pix * d->ch;
    if (d->simd == MI__SIMD_AVX512)
      deint_avx512(xo, d->ch, yo, d->pix, p0, p1);
    else
      for (c = 0; c < d->ch; c++)
        for (p = p0; p < p1; p++) yo[c * d->pix + p] = xo[p * d->ch + c];
    b = e;
  }
}

/* Output rows [c0, c0 + 16) of one image (all its pixels) in 16x16 tiles: sixteen input rows
 * (pixels) of up to 16 channels, one in-register transpose, up to sixteen output rows of 16
 * pixels. The strided gather read an output row at the input's channel stride, one float a load
 * (an output head's 1x32x16x16 -> 1x16x16x32 at 23 GB/s). */
MI__AVX512_FN static void tile_band(const float *x, int64_t ch, float *y, int64_t pix, int64_t c0) {
  int64_t ccnt = ch - c0 < 16 ? ch - c0 : 16, p0, i;
  const __mmask16 cm = ccnt == 16 ? 0xffff : (__mmask16)((1u << ccnt) - 1u);
  __m512 r[16];
  for (p0 = 0; p0 < pix; p0 += 16) {
    int64_t pcnt = pix - p0 < 16 ? pix - p0 : 16;
    const __mmask16 pm = pcnt == 16 ? 0xffff : (__mmask16)((1u << pcnt) - 1u);
    for (i = 0; i < 16; i++) r[i] = i < pcnt ? _mm512_maskz_loadu_ps(cm, x + (p0 + i) * ch + c0) : _mm512_setzero_ps();
    mi__blis_tr16(r);
    for (i = 0; i < ccnt; i++) _mm512_mask_storeu_ps(y + (c0 + i) * pix + p0, pm, r[i]);
  }
}

/* Bands [b0, b1) of 16 output rows over all images, image-major. */
static void tile_bands(void *arg, int64_t b0, int64_t b1) {
  const mi__blis_task_t *q = arg;
  const deint_state_t *d = q->state;
  int64_t b;
  for (b = b0; b < b1; b++) {
    int64_t o = b / d->blocks;
    tile_band((const float *)q->t[d->x] + o * d->pix * d->ch, d->ch, (float *)q->t[d->y] + o * d->pix * d->ch, d->pix,
              (b % d->blocks) * 16);
  }
}

/* The pool's floor by elements (16 a block or a band row): counted twice (read and write), the
 * 128x128x3 image split over two threads and took 13-19 us against 11-12 on one (blazeface-front,
 * 2 threads, --repeat 200, load 4.5): the hand-off and the conv after it reading the other core's
 * half cost more than the half saved. */
static int32_t run_deint(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const deint_state_t *d = s->state;
  (void)err;
  if (d->tiles) return mi__blis_run_parts(s, t, env, d->outer * d->blocks, 1, 16 * d->pix, tile_bands);
  return mi__blis_run_parts(s, t, env, d->outer * d->blocks, 1, 16 * d->ch, deint_blocks);
}

/* Merges the output axes (dims, input strides xs, size-1 axes dropped) into the fewest that walk
 * the input with one stride each, with no limit on a run's length, and takes the step when they
 * are [outer,] ch, pix with input strides [pix * ch,] 1, ch: a channels-last -> channels-first
 * transpose whatever the rank or the perm's spelling. */
int32_t mi__blis_prep_deinterleave(mi__blis_prep_t *p, mi__blis_step_t *s, const int64_t *dims, const int64_t *xs,
                                   int32_t rank, int *taken, mi_error_t *err) {
  int64_t md[MI_MAX_RANK], ms[MI_MAX_RANK];
  int32_t d, r = 0, simd = mi__blis_simd_level(p->ctx->cpu.isa), tiles;
  deint_state_t *st;
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  *taken = 0;
  for (d = 0; d < rank; d++) {
    if (dims[d] == 1) continue;
    if (r > 0 && ms[r - 1] == dims[d] * xs[d]) {
      md[r - 1] *= dims[d];
      ms[r - 1] = xs[d];
      continue;
    }
    md[r] = dims[d];
    ms[r++] = xs[d];
  }
  if (r < 2 || r > 3 || ms[r - 2] != 1 || ms[r - 1] != md[r - 2]) return MI_OK;
  if (r == 3 && ms[0] != md[1] * md[2]) return MI_OK;
  tiles = md[r - 2] >= 5 && md[r - 1] >= 8 && simd == MI__SIMD_AVX512;
  if (!tiles && (md[r - 2] < 2 || md[r - 2] > 4)) return MI_OK;
  if (!tiles && simd != MI__SIMD_AVX512 && md[r - 1] < 16) return MI_OK; /* the row gather is as good */
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->simd = simd;
  st->outer = r == 3 ? md[0] : 1;
  st->ch = md[r - 2];
  st->pix = md[r - 1];
  st->tiles = tiles;
  st->blocks = tiles ? (st->ch + 15) / 16 : (st->pix + 15) / 16;
  s->run = run_deint;
  *taken = 1;
  return MI_OK;
}
