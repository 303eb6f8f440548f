/* blis_dwpw.c - a depthwise conv and the pointwise conv that reads it, in one pass over bands of
 * output rows: the depthwise rows of every channel go to a small buffer that the packed GEMM
 * reads at once, so the intermediate never travels to memory and back (MobileNet/BlazeFace
 * blocks on large planes are bound by those bytes, not by their FLOPs). */
#include "blis_conv.h"
#include "blis_split.h"

/* Floats of one band of depthwise output, on the stack: 64 KiB where that holds 4 rows, else up
 * to an eighth of the L2 and at most 192 KiB (the QDQ block's band, blis_qblock.c), so that the
 * band, the input rows it reads and the residual rows beside it stay in L2. With 64 KiB on every
 * CPU, M-LSD's 96- to 384-channel blocks (80- to 20-wide planes) did not fit 4 rows and ran as two
 * convs, the intermediate through memory; with up to 192 KiB (this CPU's 2 MiB L2) they fuse: the
 * whole model 27.7 -> 25.2 ms capped at AVX2, 22.3 -> 20.3 uncapped (1 thread, 3 interleaved
 * rounds of mi-run, CPU time); BlazeFace keeps its 64 KiB bands. */
#define DWPW_BAND_MIN 16384
#define DWPW_BAND_MAX 49152

/* Fewest output rows per band: thinner bands cost more in per-band calls than the intermediate's
 * round trip saves (M-LSD's 96-channel 160- and 80-wide planes, 1 and 2 rows a band: 12-20%
 * slower at 1 thread than the two convs apart; BlazeFace's 24-channel 128-wide planes, 4 rows a
 * band: faster). */
#define DWPW_MIN_ROWS 4

typedef struct dwpw_task {
  const mi__blis_conv_t *dw;
  void *const *t;
  int64_t rows, bands; /* output rows per band, bands per image */
} dwpw_task_t;

/* Floats from one channel's rows to the next in the band. A band of 4 rows of a 128-wide plane is
 * 2 KiB a channel, and at such strides the channels' rows share one or two L1 sets, so the
 * pointwise GEMM copied each 16-pixel block out before its tiles read it (blis_pgemm.c, pack_b16):
 * a copy per block, about an eighth of the GEMM at K = 24. One cache line more between channels
 * spreads the rows over the sets and the tiles read the band in place. */
static int64_t band_ld(int64_t M, int64_t npix) {
  if (npix % 512 == 0 && M * (npix + 16) <= DWPW_BAND_MAX) return npix + 16;
  return npix;
}

/* Items are (image, band). */
static void band_part(void *arg, int64_t b0, int64_t b1) {
  const dwpw_task_t *k = arg;
  const mi__blis_conv_t *dw = k->dw, *pw = dw->pw;
  const float *x = k->t[dw->x], *w = k->t[dw->w];
  float buf[DWPW_BAND_MAX] __attribute__((aligned(64)));
  int64_t b, m, mult = dw->M / dw->C;
  for (b = b0; b < b1; b++) {
    int64_t n = b / k->bands, oh0 = b % k->bands * k->rows;
    int64_t oh1 = oh0 + k->rows < dw->OH ? oh0 + k->rows : dw->OH, npix = (oh1 - oh0) * dw->OW;
    int64_t ld = band_ld(dw->M, npix);
    for (m = 0; m < dw->M; m++) {
      const float *xc = x + (n * dw->C + m / mult) * dw->H * dw->W;
      if (dw->simd == MI__SIMD_AVX512) mi__blis_dw512_rows(dw, k->t, n, m, xc, w + m * 9, buf + m * ld, oh0, oh1);
      else
        mi__blis_dw256_rows(dw, k->t, n, m, xc, w + m * 9, buf + m * ld, oh0, oh1);
    }
    mi__blis_pg_gemm(pw, k->t, NULL, n, 0, buf, ld, oh0 * dw->OW, npix);
  }
}

static int32_t run_dwpw(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mi__blis_conv_t *dw = s->state;
  dwpw_task_t k;
  (void)err;
  k.dw = dw;
  k.t = t;
  /* bands that split evenly over the threads (blis_split.c) */
  k.rows = mi__blis_band_rows(dw->OH, dw->N, dw->pw_band / (dw->M * dw->OW), env ? env->threads : 1);
  k.bands = (dw->OH + k.rows - 1) / k.rows;
  mi__blis_parallel(env, dw->N * k.bands, 1, k.rows * dw->OW * dw->M * (9 + dw->pw->M) * 2, band_part, &k);
  return MI_OK;
}

/* The pointwise step's work is done by the depthwise step's pass. */
static int32_t run_none(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  (void)s;
  (void)t;
  (void)env;
  (void)err;
  return MI_OK;
}

void mi__blis_dwpw_link(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c) {
  mi__blis_step_t *prev = p->k->step_count > 0 ? &p->k->steps[p->k->step_count - 1] : NULL;
  mi__blis_conv_t *dw = prev && prev->run == mi__blis_conv_run_direct ? prev->state : NULL;
  /* 64 KiB where that holds 4 rows (thinner bands: more of them to split over threads), else up
   * to an eighth of the L2 (0 where unknown) */
  int64_t band = (int64_t)(p->ctx->cpu.l2_bytes / 8 / sizeof(float)) / 16 * 16;
  if (band > DWPW_BAND_MAX) band = DWPW_BAND_MAX;
  if (band < DWPW_BAND_MIN || (dw && dw->M * dw->OW * DWPW_MIN_ROWS <= DWPW_BAND_MIN)) band = DWPW_BAND_MIN;
  if (!dw || dw->variant != MI__CONV_DW || dw->dw_cl || dw->nhwc_in || dw->nhwc_out || dw->pw ||
      (dw->simd != MI__SIMD_AVX512 && dw->simd != MI__SIMD_AVX2) || !mi__blis_dw512_rows_fit(dw) ||
      dw->M * dw->OW * DWPW_MIN_ROWS > band)
    return;
  /* The pointwise conv may run another SIMD level than the depthwise rows (blis_cpusel.c: AVX2
   * tiles on Zen 4 under AVX-512 rows); each side dispatches on its own level. */
  if (c->variant != MI__CONV_PG || !c->pg_direct || c->pg_mv || c->packed_h || c->G != 1 || c->simd == MI__SIMD_C ||
      c->x != dw->y || c->N != dw->N || c->C != dw->M || c->H != dw->OH ||
      c->W != dw->OW || mi__blis_consumers(p, c->x) != 1 || mi__blis_is_kernel_output(p, c->x))
    return;
  dw->pw = c;
  dw->pw_band = band;
  c->pg_band = 1;
  prev->run = run_dwpw;
  s->run = run_none;
  s->joined = 1;
}
