/* blis_wino_dil.c - dilated 3x3 stride-1 convolutions on the Winograd path.
 *
 * With dilation d, output pixel (i*d + a, j*d + b) reads only input pixels with the same residues
 * (a, b): the conv is d*d independent dense 3x3 convs on the sub-grids x[:, :, a::d, b::d]. When
 * every pad is d and H, W are multiples of d, each sub-grid conv is a plain 3x3 conv with pad 1
 * on an (H/d) x (W/d) plane, so the sub-grids are gathered into one mosaic image per input image
 * (zero rows and columns between them: one conv of about the original size, whose tiles fill the
 * GEMMs as the dense conv's do; a batch of small planes measured 2-4x slower), run through
 * conv.winograd (blis_wino.c) and scattered back. Bias/BN and activations apply per
 * element and run in the Winograd output stage; a fused residual Add would read the residual at
 * the gathered positions, so convs with one are not taken. */
#include <immintrin.h>
#include <string.h>

#include "blis_conv.h"

typedef struct mi__blis_wdil {
  mi__blis_conv_t conv; /* the dilated conv as prepared (first: steps after this one read it) */
  mi__blis_conv_t sub;  /* the mosaic conv: tensor 0 the gathered input, 1 its output */
  mi__blis_run_fn inner;
  float *gx, *gy; /* gathered input and the mosaic's output, inside this block */
  int32_t *col;   /* per column x of the dilated plane: its column in the mosaic, (x % d) * (W/d + 1) + x / d */
  float sc[];     /* sub.scale and sub.shift, M each */
} mi__blis_wdil_t;

int mi__blis_wino_dil_fits(const mi__blis_conv_t *c) {
  int64_t d = c->dh, e;
  if (!(c->G == 1 && c->KH == 3 && c->KW == 3 && c->sh == 1 && c->sw == 1 && d > 1 && c->dw == d &&
        c->pt == d && c->pl == d && c->OH == c->H && c->OW == c->W && c->H % d == 0 && c->W % d == 0 &&
        !c->nhwc_in && !c->nhwc_out))
    return 0;
  for (e = 0; e < c->epi_n; e++)
    if (c->epi[e].act == MI__ACT_NONE) return 0;
  return 1;
}

/* The default takes it where bench_blis_conv measured it faster than conv.packed_gemm (64->64,
 * process CPU time, min of 20, 2026-12-02, load 5-6): with AVX2 on 80x80, 64x64, 32x32 at
 * dilations 2-8 (1.3-1.8x: 80x80 d=5 3.15 against 5.59 ms); with AVX-512 only on planes of 80x80
 * or more with sub-grids of 16+ pixels a side (80x80 d=2/4/5 1.93/2.08/2.11 against
 * 2.69/2.81/2.68 ms; 64x64 even, 32x32 and 80x80 d=8 5-15% slower). */
int mi__blis_wino_dil_default(const mi__blis_conv_t *c) {
  mi__blis_conv_t sub;
  if (!mi__blis_wino_dil_fits(c)) return 0;
  sub = *c;
  sub.H = sub.OH = c->dh * (c->H / c->dh + 1) - 1;
  sub.W = sub.OW = c->dw * (c->W / c->dw + 1) - 1;
  sub.dh = sub.dw = 1;
  sub.pt = sub.pl = 1;
  if (c->simd == MI__SIMD_AVX512 && (c->H * c->W < 6400 || c->H / c->dh < 16 || c->W / c->dw < 16)) return 0;
  return mi__blis_wino_default(&sub);
}

/* Copies between the dilated layout (image n of ch channels, H x W) and the mosaic: residue
 * (a, b)'s (H/d) x (W/d) sub-grid at rows a * (H/d + 1), columns b * (W/d + 1) of one image,
 * the sub-grids apart by a row or column of zeros that the pad-1 conv reads as their padding.
 * Items are planes (image, channel): both copies split over the kernel's threads like the
 * mosaic conv between them (on one thread they were the part of the kernel that did not scale). */
typedef struct {
  const mi__blis_wdil_t *wd;
  float *dil;
  int to_mosaic;
} shuffle_task_t;

/* One dilated row and its d mosaic row segments with AVX-512 gathers: the scalar strided copies
 * took 0.55 ms of a 64-channel 80x80 d=5 conv's 2.2 (1 thread, in cache), these about 0.15 less. */
__attribute__((target("avx512f"))) static void row_avx512(const mi__blis_wdil_t *wd, float *pd, float *pm,
                                                          int to_mosaic) {
  int64_t d = wd->conv.dh, w = wd->conv.W / d, W = wd->conv.W, b, j;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  if (to_mosaic) {
    for (b = 0; b < d; b++)
      for (j = 0; j < w; j += 16) {
        __mmask16 k = (__mmask16)(w - j >= 16 ? 0xffff : (1u << (w - j)) - 1);
        __m512i ix = _mm512_mullo_epi32(_mm512_add_epi32(iota, _mm512_set1_epi32((int32_t)j)),
                                        _mm512_set1_epi32((int32_t)d));
        _mm512_mask_storeu_ps(pm + b * (w + 1) + j, k,
                              _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, ix, pd + b, 4));
      }
  } else {
    for (j = 0; j < W; j += 16) {
      __mmask16 k = (__mmask16)(W - j >= 16 ? 0xffff : (1u << (W - j)) - 1);
      __m512i ix = _mm512_maskz_loadu_epi32(k, wd->col + j);
      _mm512_mask_storeu_ps(pd + j, k, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, ix, pm, 4));
    }
  }
}

static void shuffle_part(void *arg, int64_t begin, int64_t end) {
  const shuffle_task_t *st = arg;
  const mi__blis_conv_t *c = &st->wd->conv, *sub = &st->wd->sub;
  float *mos = st->to_mosaic ? st->wd->gx : st->wd->gy;
  int64_t d = c->dh, h = c->H / d, w = c->W / d, q, a, b, i, j;
  if (c->simd == MI__SIMD_AVX512) {
    for (q = begin; q < end; q++)
      for (a = 0; a < d; a++)
        for (i = 0; i < h; i++)
          row_avx512(st->wd, st->dil + q * c->H * c->W + (i * d + a) * c->W,
                     mos + q * sub->H * sub->W + (a * (h + 1) + i) * sub->W, st->to_mosaic);
    return;
  }
  for (q = begin; q < end; q++)
    for (a = 0; a < d; a++)
      for (b = 0; b < d; b++) {
        float *pd = st->dil + q * c->H * c->W + a * c->W + b;
        float *pm = mos + q * sub->H * sub->W + a * (h + 1) * sub->W + b * (w + 1);
        for (i = 0; i < h; i++, pd += d * c->W, pm += sub->W)
          if (st->to_mosaic)
            for (j = 0; j < w; j++) pm[j] = pd[j * d];
          else
            for (j = 0; j < w; j++) pd[j * d] = pm[j];
      }
}

static void shuffle(const mi__blis_env_t *env, const mi__blis_wdil_t *wd, int64_t ch, float *dil, int to_mosaic) {
  shuffle_task_t st;
  st.wd = wd;
  st.dil = dil;
  st.to_mosaic = to_mosaic;
  mi__blis_parallel(env, wd->conv.N * ch, 1, wd->conv.H * wd->conv.W, shuffle_part, &st);
}

static int32_t run_wdil(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mi__blis_wdil_t *wd = s->state;
  mi__blis_step_t in = *s;
  void *bt[2];
  int32_t rc;
  bt[0] = wd->gx;
  bt[1] = wd->gy;
  in.state = (void *)&wd->sub;
  shuffle(env, wd, wd->conv.C, (float *)t[wd->conv.x], 1);
  rc = wd->inner(&in, bt, env, err);
  if (rc == MI_OK) shuffle(env, wd, wd->conv.M, (float *)t[wd->conv.y], 0);
  return rc;
}

int32_t mi__blis_wino_dil_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err) {
  mi__blis_wdil_t *wd;
  int64_t hm = c->dh * (c->H / c->dh + 1) - 1, wm = c->dw * (c->W / c->dw + 1) - 1;
  uint64_t nx = (uint64_t)(c->N * c->C * hm * wm), ny = (uint64_t)(c->N * c->M * hm * wm);
  uint64_t head = (sizeof *wd + 2 * (uint64_t)c->M * sizeof(float) + 63) / 64 * 64;
  int64_t x;
  int32_t rc;
  if (!mi__blis_wino_dil_fits(c))
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "blis-cpu: conv.winograd on a dilated conv needs pads equal to the dilation, H and W "
                        "multiples of it and no fused residual add");
  if (!(wd = mi__blis_calloc(p->ctx, head + (nx + ny) * sizeof(float) + (uint64_t)c->W * sizeof(int32_t))))
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  wd->conv = *c;
  wd->sub = *c;
  wd->sub.scale = wd->sc;
  wd->sub.shift = wd->sc + c->M;
  memcpy(wd->sc, c->scale, (size_t)c->M * sizeof(float));
  memcpy(wd->sc + c->M, c->shift, (size_t)c->M * sizeof(float));
  wd->sub.H = wd->sub.OH = hm;
  wd->sub.W = wd->sub.OW = wm;
  wd->sub.dh = wd->sub.dw = 1;
  wd->sub.pt = wd->sub.pl = 1;
  wd->sub.x = 0;
  wd->sub.y = 1;
  wd->gx = (float *)((char *)wd + head);
  wd->gy = wd->gx + nx;
  wd->col = (int32_t *)(wd->gy + ny);
  for (x = 0; x < c->W; x++) wd->col[x] = (int32_t)(x % c->dw * (c->W / c->dw + 1) + x / c->dw);
  rc = mi__blis_wino_prep(p, s, &wd->sub, err);
  if (rc != MI_OK) {
    mi__blis_free(p->ctx, wd);
    return rc;
  }
  /* the conv's own state block (c, with its scales) gives way to this one */
  wd->conv.scale = wd->sub.scale;
  wd->conv.shift = wd->sub.shift;
  mi__blis_free(p->ctx, s->state);
  s->state = wd;
  wd->inner = s->run;
  s->run = run_wdil;
  return MI_OK;
}
