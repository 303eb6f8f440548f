/* blis_qgemm.c - INT8 Conv (Gemm and MatMul: blis_qmm.c): the lowered QDQ layers of docs/abi.md. Input codes
 * minus their zero point times the INT8 (or INT4) weights, accumulated exactly in int32, bias and
 * scales applied in the output stage, output codes rounded half to even. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

typedef struct qconv {
  mi__blis_conv_t g;              /* geometry; g.x, g.w, g.y tensor indices */
  int32_t zx, zy, x_u8, y_u8, dw; /* dw: one input channel per group, direct loops */
  int32_t zx_t;                   /* runtime tensor of x's zero point, or -1 (zx) */
  int32_t out32;                  /* write the int32 sums (ConvInteger), no output stage */
  int32_t *ibias;                 /* [M] int32 bias added to the sums (QLinearConv), or NULL */
  int32_t dot;                    /* MI__QDOT_*: pair-dot path of the int32 core (knob int8_dot) */
  int32_t w4;                     /* INT4 weight kept packed: w4q, not wq */
  int64_t kk, ka;                 /* C/G * KH * KW; ka: kk rounded up to even (pairs) */
  double *mult, *bias;
  int16_t *wq;                        /* [M][ka], zero past kk (INT8, and INT4 depthwise) */
  uint8_t *w4q;                       /* INT4: [M][ka/2] bytes, one per k pair (MI__QPACK_A4), zero past kk */
  float *wf;                          /* depthwise: the weights as floats ([M][kk]), for the float SIMD planes */
  int16_t *col;                       /* [ka/2][tile rows*OW][2] scratch: pairs of column rows of one tile */
  int32_t *acc;                       /* [M/G][tile rows*OW] scratch (depthwise: [N*M][OH*OW]) */
  int64_t kq;                         /* byte core (u8k): kk rounded up to 4, in quads */
  int32_t u8k;                        /* byte core: w8, col as [kq][tile rows*OW][4] codes, wsum */
  uint8_t *w8;                        /* [M][kq * 4] INT8 weights, zero past kk (in wq's storage) */
  int32_t *wsum;                      /* [M] sums of each output channel's weights: the zero point's correction */
  int32_t *wd;                        /* [M] byte core: weight shift d of each output channel (s = v - d fits INT8) */
  int32_t *psum;                      /* [tile rows*OW] byte core with a shift: sums of each pixel's column codes */
  int32_t shift;                      /* some wd[m] != 0 */
  int32_t tail, relu, scale_t, res_t; /* out32's float tail (mi__blis_qsrc_t): scale, residual */
  float *tb;                          /* [M] the tail's bias, or NULL */
  mi__blis_hsw_t hs;                  /* the tail's hard-swish */
  int32_t codes;                      /* codes straight from the sums (mi__blis_ftail_codes) */
  int32_t *rng;                       /* [M][2] codes: each channel's int32 range (first pass) */
  mi__blis_hsw_t hs1;                 /* codes: hs without its DynamicQuantizeLinear */
  mi__blis_qd_t qd;                   /* byte core without columns when qd.w (blis_qdirect.c) */
  int32_t amx;                        /* byte core on AMX tiles (blis_qamx.c): signed columns, wa, ssum */
  uint8_t *wa;                        /* [M + 32][...] its weights (mi__blis_qa_conv_pack) */
  int32_t *ssum;                      /* [tile rows*OW] its column sums */
  /* b256: the AVX2 byte core (blis_qgemm256.c) on byte columns (col as [kq][tile rows*OW][4],
   * mi__blis_qcol_quads256), each group's weights in pbg[g]'s panels, wsum / wd / psum as u8k's */
  int32_t b256;
  mi__blis_q256_t *pbg;
} qconv_t;

/* Bytes of int16 columns one output-row tile of the GEMM path spans, and of its int32 sums: the
 * output stage reads those right after the GEMM wrote them, from L2 (a 1x1 16 -> 96 conv at
 * 160x160 took 102-row tiles by its columns alone, 6.3 MB of sums written to memory and read back). */
#define QCOL_TILE_BYTES (512 * 1024)
#define QACC_TILE_BYTES (256 * 1024)

/* Output rows per tile of the GEMM path: its columns and sums are all the scratch it needs, so a
 * layer holds one tile's, not its whole plane's (each 3x3 64-channel layer of a 1024x1024 model
 * held 576 int16 columns and 64 int32 sums per output pixel, zeroed at prepare). */
static int64_t qtile_rows(const qconv_t *q) {
  int64_t tile = QCOL_TILE_BYTES / (q->ka * 2 * q->g.OW), sums = QACC_TILE_BYTES / (q->g.M / q->g.G * 4 * q->g.OW);
  tile = tile < sums ? tile : sums;
  tile = tile < 1 ? 1 : tile;
  return tile < q->g.OH ? tile : q->g.OH;
}

typedef struct qconv_task {
  const qconv_t *q;
  const void *x; /* image n, group g input */
  void *y;       /* image n, group g output */
  int64_t g;
  int32_t zx;       /* x's zero point for this run */
  float fs;         /* the float tail's scale for this run */
  const float *res; /* the tail's residual at y's offset, or NULL */
  int64_t oh0, oh1; /* the output rows of this tile (columns and sums of these rows only) */
  int32_t pass;     /* q->codes: 1 takes each channel's range, 2 writes the codes */
  const float *yb;  /* q->codes: the tail's (unwritten) float plane, for element offsets */
  uint8_t *codes;   /* q->codes: DynamicQuantizeLinear's codes, scale and zero point */
  float scale;
  int32_t zp;
} qconv_task_t;

/* One column row: dst[ow * 2] = x[ih][ow * sw + col] - zx for the output columns whose input
 * column lies inside the row (lo..hi), 0 elsewhere (the padding is real zero). */
static inline __attribute__((always_inline)) void qcol_row(int16_t *dst, const void *xr, int u8, int64_t ow_n,
                                                           int64_t lo, int64_t hi, int64_t col, int64_t sw, int32_t zx) {
  int64_t ow;
  for (ow = 0; ow < lo; ow++) dst[ow * 2] = 0;
  if (u8)
    for (ow = lo; ow < hi; ow++) dst[ow * 2] = (int16_t)(((const uint8_t *)xr)[col + ow * sw] - zx);
  else
    for (ow = lo; ow < hi; ow++) dst[ow * 2] = (int16_t)(((const int8_t *)xr)[col + ow * sw] - zx);
  for (ow = hi; ow < ow_n; ow++) dst[ow * 2] = 0;
}

/* qcol_row for stride 1 in AVX-512: 16 codes widened to int32 lanes minus zx, each lane's low
 * int16 stored to its even slot by a masked store, so the odd slots (the pair's other row,
 * another item's) are not written. The scalar loop was a tenth of a QDQ detector's run. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qcol_row1_512(int16_t *dst, const void *xr, int u8,
                                                                               int64_t ow_n, int64_t lo, int64_t hi,
                                                                               int64_t col, int32_t zx) {
  const __m512i z = _mm512_set1_epi32(zx);
  int64_t ow;
  for (ow = 0; ow < lo; ow++) dst[ow * 2] = 0;
  for (ow = lo; ow < hi; ow += 16) {
    int64_t left = hi - ow;
    __mmask16 k = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);
    __m128i b = _mm_maskz_loadu_epi8(k, (const int8_t *)xr + col + ow);
    __m512i v = _mm512_sub_epi32(u8 ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b), z);
    __mmask32 even = 0x55555555u & (left >= 16 ? 0xffffffffu : (1u << (2 * left)) - 1u);
    _mm512_mask_storeu_epi16(dst + ow * 2, even, v);
  }
  for (ow = hi; ow < ow_n; ow++) dst[ow * 2] = 0;
}

/* Stride 2: 32 bytes widened to int16 lanes minus zx; lane 2j holds input column 2j, which is
 * output column j, and the even-slot store puts it at dst[j * 2]. The load stops at the last
 * column read (2 * (hi - 1) + col), so nothing past the row is touched. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qcol_row2_512(int16_t *dst, const void *xr, int u8,
                                                                               int64_t ow_n, int64_t lo, int64_t hi,
                                                                               int64_t col, int32_t zx) {
  const __m512i z = _mm512_set1_epi16((int16_t)zx);
  int64_t ow;
  for (ow = 0; ow < lo; ow++) dst[ow * 2] = 0;
  for (ow = lo; ow < hi; ow += 16) {
    int64_t left = hi - ow;
    __mmask32 k = left >= 16 ? 0x7fffffffu : (1u << (2 * left - 1)) - 1u;
    __m256i b = _mm256_maskz_loadu_epi8(k, (const int8_t *)xr + col + ow * 2);
    __m512i v = _mm512_sub_epi16(u8 ? _mm512_cvtepu8_epi16(b) : _mm512_cvtepi8_epi16(b), z);
    __mmask32 even = 0x55555555u & (left >= 16 ? 0xffffffffu : (1u << (2 * left)) - 1u);
    _mm512_mask_storeu_epi16(dst + ow * 2, even, v);
  }
  for (ow = hi; ow < ow_n; ow++) dst[ow * 2] = 0;
}

/* Items are input channels of the group: (x - zx) columns, 0 in the padding (real zero), written
 * as pairs of rows (row k is half k & 1 of pair k / 2) for the int32 core. */
static void qim2col_part(void *arg, int64_t c0, int64_t c1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  int64_t ci, kh, kw, oh, ohw = (t->oh1 - t->oh0) * c->OW, eb = 1; /* 1-byte codes */
  int flat = c->simd == MI__SIMD_AVX512 && c->KH == 1 && c->KW == 1 && c->sh == 1 && c->sw == 1 && c->OW == c->W &&
             c->OH == c->H; /* no pads: the output plane is the input plane */
  for (ci = c0; ci < c1; ci++)
    for (kh = 0; kh < c->KH; kh++)
      for (kw = 0; kw < c->KW; kw++) {
        int64_t k = (ci * c->KH + kh) * c->KW + kw, col = kw * c->dw - c->pl, lo = 0, hi = c->OW;
        int16_t *dst = q->col + (k >> 1) * ohw * 2 + (k & 1);
        const uint8_t *base = (const uint8_t *)t->x + ci * c->H * c->W * eb;
        while (lo < c->OW && lo * c->sw + col < 0) lo++;
        while (hi > lo && (hi - 1) * c->sw + col >= c->W) hi--;
        if (flat) { /* a 1x1 stride-1 conv without pads: the tile's rows are one contiguous span */
          qcol_row1_512(dst, base + t->oh0 * c->W, q->x_u8, ohw, 0, ohw, 0, t->zx);
          continue;
        }
        for (oh = t->oh0; oh < t->oh1; oh++) {
          int64_t ih = oh * c->sh - c->pt + kh * c->dh;
          int16_t *d = dst + (oh - t->oh0) * c->OW * 2;
          if (ih < 0 || ih >= c->H) {
            qcol_row(d, base, q->x_u8, c->OW, c->OW, c->OW, 0, 0, 0);
            continue;
          }
          if (c->sw == 2 && c->simd == MI__SIMD_AVX512) qcol_row2_512(d, base + ih * c->W, q->x_u8, c->OW, lo, hi, col, t->zx);
          else if (c->sw == 1 && c->simd == MI__SIMD_AVX512)
            qcol_row1_512(d, base + ih * c->W, q->x_u8, c->OW, lo, hi, col, t->zx);
          else if (c->sw == 1)
            qcol_row(d, base + ih * c->W, q->x_u8, c->OW, lo, hi, col, 1, t->zx);
          else
            qcol_row(d, base + ih * c->W, q->x_u8, c->OW, lo, hi, col, c->sw, t->zx);
        }
      }
}

/* AVX2 columns: items are k pairs (blis_qcol256.c). */
static void qcol256_part(void *arg, int64_t p0, int64_t p1) {
  const qconv_task_t *t = arg;
  mi__blis_qcol_pairs256(&t->q->g, t->x, t->q->x_u8, t->zx, t->q->kk, t->oh0, t->oh1, p0, p1, t->q->col);
}

/* Byte core columns: items are k quads (blis_qvnni.c). */
static void qv_im2col_part(void *arg, int64_t q0, int64_t q1) {
  const qconv_task_t *t = arg;
  /* AMX: the codes made signed (the other flip) */
  mi__blis_qv_im2col(&t->q->g, t->x, t->q->kk, t->q->x_u8 ^ t->q->amx, t->zx, t->oh0, t->oh1, q0, q1,
                     (uint8_t *)t->q->col);
}

/* The AMX conv's column sums (and the weight shift's pixel sums): items are pixels. */
static void qa_colsum_part(void *arg, int64_t j0, int64_t j1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  mi__blis_qa_colsum(q->kk, q->kq, (t->oh1 - t->oh0) * q->g.OW, (const uint8_t *)q->col, j0, j1, q->ssum,
                     q->shift ? q->psum : NULL);
}

/* Pixel sums of the tile's byte columns, for the weight shift: items are pixels. */
static void qv_colsum_part(void *arg, int64_t j0, int64_t j1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  mi__blis_qv_colsum(q->dot, q->kk, q->kq, (t->oh1 - t->oh0) * q->g.OW, (const uint8_t *)q->col, j0, j1, q->psum);
}

/* The sums of output channel oc (n values) to its output row: the int32 bias added, then the
 * codes (output stage) or the int32 sums themselves (out32). */
static void qconv_out(const qconv_task_t *t, int64_t oc, int32_t *acc, int64_t n, void *yr) {
  const qconv_t *q = t->q;
  int64_t i;
  if (q->ibias)
    for (i = 0; i < n; i++) acc[i] += q->ibias[oc];
  if (t->pass == 1) { /* items own their channels within a tile, and tiles run in turn */
    mi__blis_acc_range(q->g.simd, acc, n, q->rng + 2 * oc);
  } else if (t->pass == 2) { /* through the tail in L1, then DynamicQuantizeLinear's codes */
    float f[1024];
    int64_t e0 = (const float *)yr - t->yb;
    for (i = 0; i < n; i += 1024) {
      int64_t k = n - i < 1024 ? n - i : 1024;
      mi__blis_qv_ftail(q->g.simd, acc + i, k, t->fs, q->tb != NULL, q->tb ? q->tb[oc] : 0.f, NULL, q->relu, &q->hs1,
                        f);
      mi__blis_dynq_put(&q->hs, q->g.simd, f, e0 + i, k, t->codes, t->scale, t->zp);
    }
  } else if (q->tail)
    mi__blis_qv_ftail(q->g.simd, acc, n, t->fs, q->tb != NULL, q->tb ? q->tb[oc] : 0.f,
                      t->res ? t->res + ((float *)yr - (float *)t->y) : NULL, q->relu, &q->hs, yr);
  else if (q->out32)
    memcpy(yr, acc, (size_t)n * sizeof *acc);
  else
    mi__blis_requant(q->g.simd, acc, n, q->mult + oc, q->bias + oc, 0, q->zy, q->y_u8, yr);
}

/* The direct form's sums of group output channel m, output rows oh..oh+rows. */
static void qd_out(void *arg, int64_t m, int64_t oh, int64_t rows, int32_t *acc) {
  const qconv_task_t *t = arg;
  const mi__blis_conv_t *c = &t->q->g;
  qconv_out(t, t->g * (c->M / c->G) + m, acc, rows * c->OW, (uint8_t *)t->y + (m * c->OH + oh) * c->OW * (t->q->out32 ? 4 : 1));
}

/* Items are output channels of the group: accumulate, then requantize the row. */
static void qconv_rows(void *arg, int64_t m0, int64_t m1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  int64_t m, ohw = (t->oh1 - t->oh0) * c->OW, mg = c->M / c->G, y0 = t->oh0 * c->OW;
  if (q->u8k) { /* codes made unsigned: zu = zx + 128 for INT8 codes */
    int32_t zu = t->zx + (q->x_u8 ? 0 : 128);
    if (q->amx)
      mi__blis_qa_conv(m0, m1, ohw, q->kq, q->wa + t->g * mg * (mi__blis_qa_conv_bytes(0, q->kq) / 32),
                       (const uint8_t *)q->col, q->wsum + t->g * mg, q->ssum, zu, q->acc);
    else if (q->shift) /* the weight shift on the core's tiles: the sums written once */
      mi__blis_qv_conv_shift(q->dot, m0, m1, ohw, q->kq, q->w8 + t->g * mg * q->kq * 4, (const uint8_t *)q->col,
                             q->wsum + t->g * mg, zu, q->wd + t->g * mg, q->psum, zu * (int32_t)q->kk, q->acc);
    else
      mi__blis_qv_gemm(q->dot, 1, m0, m1, ohw, q->kq, q->w8 + t->g * mg * q->kq * 4, (const uint8_t *)q->col,
                       q->wsum + t->g * mg, NULL, zu, q->acc);
    for (m = m0; m < m1 && q->shift && q->amx; m++)
      if (q->wd[t->g * mg + m]) mi__blis_qv_shift(q->acc + m * ohw, ohw, q->wd[t->g * mg + m], q->psum, zu * (int32_t)q->kk);
  } else if (q->w4)
    mi__blis_qgemm_packed(q->dot, MI__QPACK_A4, m0, m1, ohw, q->ka / 2, q->w4q + t->g * mg * q->ka / 2,
                          q->ka, q->col, q->acc);
  else
    mi__blis_qgemm(q->dot, m0, m1, ohw, q->ka / 2, q->wq + t->g * mg * q->ka, q->ka, q->col, q->acc);
  for (m = m0; m < m1; m++) /* 1-byte codes or int32 sums */
    qconv_out(t, t->g * mg + m, q->acc + m * ohw, ohw,
              (uint8_t *)t->y + (m * c->OH * c->OW + y0) * (q->out32 ? 4 : 1));
}

/* The AVX2 path split over the tile's pixels: each part builds every pair of its pixels' columns,
 * then every output channel's sums and outputs of those pixels (for layers of few output
 * channels, which the channel split cannot share out). */
static void qconv_pix(void *arg, int64_t j0, int64_t j1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  int64_t m, ohw = (t->oh1 - t->oh0) * c->OW, mg = c->M / c->G, y0 = t->oh0 * c->OW + j0;
  mi__blis_qcol_pix256(c, t->x, q->x_u8, t->zx, q->kk, t->oh0, t->oh1, j0, j1, q->col);
  mi__blis_qgemm_cols(q->dot, 0, mg, ohw, j0, j1, q->ka / 2, q->wq + t->g * mg * q->ka, q->ka, q->col, q->acc);
  for (m = 0; m < mg; m++)
    qconv_out(t, t->g * mg + m, q->acc + m * ohw + j0, j1 - j0,
              (uint8_t *)t->y + (m * c->OH * c->OW + y0) * (q->out32 ? 4 : 1));
}

/* The AVX2 byte core's sums of the tile's pixels j0..j1 and its panels p0..p1 of the group (their
 * channels m0..m1), the weight shift added on the core's tiles, to qconv_out. */
static void q256_sums(const qconv_task_t *t, int64_t j0, int64_t j1, int64_t p0, int64_t p1) {
  const qconv_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  int64_t m, ohw = (t->oh1 - t->oh0) * c->OW, mg = c->M / c->G, y0 = t->oh0 * c->OW + j0;
  int64_t m1 = p1 * 16 < mg ? p1 * 16 : mg;
  int32_t zu = t->zx + (q->x_u8 ? 0 : 128); /* codes made unsigned */
  const mi__blis_q256_shift_t sh = {q->wd + t->g * mg, q->psum, zu * (int32_t)q->kk};
  mi__blis_q256_conv(&q->pbg[t->g], j0, j1, p0, p1, (const uint8_t *)q->col, ohw, q->wsum + t->g * mg, zu,
                     q->shift ? &sh : NULL, q->acc);
  for (m = p0 * 16; m < m1; m++)
    qconv_out(t, t->g * mg + m, q->acc + m * ohw + j0, j1 - j0,
              (uint8_t *)t->y + (m * c->OH * c->OW + y0) * (q->out32 ? 4 : 1));
}

/* The byte columns of the tile's pixels j0..j1 (and their sums where the weights shift). */
static void q256_col_part(void *arg, int64_t j0, int64_t j1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  mi__blis_qcol_quads256(&q->g, t->x, q->x_u8, t->zx, q->kk, t->oh0, t->oh1, j0, j1, (uint8_t *)q->col,
                         q->shift ? q->psum : NULL);
}

/* Items are pixels of the tile: each part builds its pixels' byte columns and runs every channel
 * on them (the int16 path's pixel split, qconv_pix). */
static void q256_pix(void *arg, int64_t j0, int64_t j1) {
  const qconv_task_t *t = arg;
  const mi__blis_conv_t *c = &t->q->g;
  q256_col_part(arg, j0, j1);
  q256_sums(t, j0, j1, 0, (c->M / c->G + 15) / 16);
}

/* Items are panels of 16 channels over the whole tile (the codes' first pass, whose channel ranges
 * are one part's alone). */
static void q256_pan(void *arg, int64_t p0, int64_t p1) {
  const qconv_task_t *t = arg;
  q256_sums(t, 0, (t->oh1 - t->oh0) * t->q->g.OW, p0, p1);
}

/* The exact sums of one depthwise plane through the float SIMD plane kernel, in strips of output
 * rows whose input rows fit its buffer (planes over MI__DW_PLANE_MAX, 160x160 in a detector's
 * first stages, took the scalar loops at 0.2 GFLOP/s). 0 when the kernel refuses a strip. */
static int qdw_strips(const qconv_task_t *t, int64_t xo, const float *wf, int32_t *acc) {
  const qconv_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  mi__blis_conv_t s = *c;
  float xf[MI__DW_PLANE_MAX], yf[MI__DW_PLANE_MAX];
  int64_t span = c->W + c->pl + c->KW * c->dw + 1, halo = (c->KH - 1) * c->dh + 1 + c->pt, rows, o0, i;
  rows = (MI__DW_PLANE_MAX * 3 / 4 / span - halo) / c->sh + 1;
  if (rows > MI__DW_PLANE_MAX / c->OW) rows = MI__DW_PLANE_MAX / c->OW;
  if (rows < 1) return 0;
  for (o0 = 0; o0 < c->OH; o0 += rows) {
    int64_t o1 = o0 + rows < c->OH ? o0 + rows : c->OH, a = o0 * c->sh - c->pt;
    int64_t top = a < 0 ? 0 : a, end = (o1 - 1) * c->sh - c->pt + (c->KH - 1) * c->dh + 1;
    end = end > c->H ? c->H : end;
    s.OH = o1 - o0;
    s.pt = a < 0 ? -a : 0;
    s.H = end > top ? end - top : 0;
    if (s.H * s.W > MI__DW_PLANE_MAX) return 0;
    mi__blis_dq_row(c->simd, (const uint8_t *)t->x + xo + top * c->W, xf, s.H * s.W, 1.f, t->zx, q->x_u8);
    if (!mi__blis_dw_plane(&s, xf, wf, yf)) return 0;
    for (i = 0; i < s.OH * c->OW; i++) acc[o0 * c->OW + i] = (int32_t)yf[i];
  }
  return 1;
}

/* Depthwise (one input channel per group): items are (image, output channel) planes, taps read
 * straight from the codes, no columns. Same exact sums and output stage as the GEMM path. */
static void qdw_part(void *arg, int64_t p0, int64_t p1) {
  const qconv_task_t *t = arg;
  const qconv_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  int64_t pl, oh, ow, kh, kw, ohw = c->OH * c->OW, mult = c->M / c->C;
  for (pl = p0; pl < p1; pl++) {
    int64_t n = pl / c->M, m = pl % c->M, xo = (n * c->C + m / mult) * c->H * c->W, i;
    const int16_t *wm = q->wq + m * q->ka;
    int32_t *acc = q->acc + pl * ohw;
    if (q->wf && c->H * c->W <= MI__DW_PLANE_MAX && ohw <= MI__DW_PLANE_MAX) {
      /* Integer codes as floats: every product (< 2^15) and partial sum (taps * 255 * 127 <
       * 2^24) is exact in float, so the float SIMD plane computes the exact integer sum. */
      float xf[MI__DW_PLANE_MAX], yf[MI__DW_PLANE_MAX];
      /* (code - zx) * 1: the codes as exact floats, in the SIMD row loop */
      mi__blis_dq_row(c->simd, (const uint8_t *)t->x + xo, xf, c->H * c->W, 1.f, t->zx, q->x_u8);
      if (mi__blis_dw_plane(c, xf, q->wf + m * c->KH * c->KW, yf)) {
        if (!q->ibias && !q->out32) { /* the output stage straight from the exact float sums */
          mi__blis_requant_f(c->simd, yf, ohw, q->mult + m, q->bias + m, 0, q->zy, q->y_u8,
                             (uint8_t *)t->y + pl * ohw);
          continue;
        }
        for (i = 0; i < ohw; i++) acc[i] = (int32_t)yf[i];
        qconv_out(t, m, acc, ohw, (uint8_t *)t->y + pl * ohw * (q->out32 ? 4 : 1));
        continue;
      }
    } else if (q->wf && qdw_strips(t, xo, q->wf + m * c->KH * c->KW, acc)) {
      qconv_out(t, m, acc, ohw, (uint8_t *)t->y + pl * ohw * (q->out32 ? 4 : 1));
      continue;
    }
    for (oh = 0; oh < c->OH; oh++)
      for (ow = 0; ow < c->OW; ow++) {
        int32_t sum = 0;
        for (kh = 0; kh < c->KH; kh++) {
          int64_t ih = oh * c->sh - c->pt + kh * c->dh;
          if (ih < 0 || ih >= c->H) continue;
          for (kw = 0; kw < c->KW; kw++) {
            int64_t iw = ow * c->sw - c->pl + kw * c->dw;
            if (iw < 0 || iw >= c->W) continue;
            sum += (mi__blis_qcode(t->x, q->x_u8, xo + ih * c->W + iw) - t->zx) * wm[kh * c->KW + kw];
          }
        }
        acc[oh * c->OW + ow] = sum;
      }
    qconv_out(t, m, acc, ohw, (uint8_t *)t->y + pl * ohw * (q->out32 ? 4 : 1));
  }
}

/* The conv's sums, every image and group, each row handed to qconv_out. */
static void qconv_sums(const qconv_t *q, void *const *t, const mi__blis_env_t *env, qconv_task_t *tp) {
  const mi__blis_conv_t *c = &q->g;
  int64_t n, g, cg = c->C / c->G, mg = c->M / c->G, ohw = c->OH * c->OW;
  qconv_task_t task = *tp;
  int64_t yb = q->out32 ? 4 : 1; /* bytes per output element */
  /* the byte core's columns take the int16 core's rows per tile: 4 * kq <= 2 * ka bytes a pixel
   * fit the scratch qtile_rows sized at prepare */
  int64_t tile = qtile_rows(q);
  if (q->dw) {
    task.x = t[c->x];
    task.y = t[c->y];
    mi__blis_parallel(env, c->N * c->M, 1, ohw * c->KH * c->KW, qdw_part, &task);
  }
  for (n = 0; !q->dw && n < c->N; n++)
    for (g = 0; g < c->G; g++) {
      int64_t xo = (n * c->C + g * cg) * c->H * c->W, yo = (n * c->M + g * mg) * ohw;
      task.g = g;
      task.x = (const uint8_t *)t[c->x] + xo; /* 1-byte codes: byte offsets */
      task.y = (uint8_t *)t[c->y] + yo * yb;
      task.res = task.res ? (const float *)t[q->res_t] + yo : NULL;
      if (q->qd.w) mi__blis_qd_run(&q->qd, env, g, task.x, q->x_u8, task.zx, qd_out, &task);
      /* Tiles of output rows whose columns (ka int16 per pixel) stay in cache between im2col
       * and the GEMM: a 96x80x80 3x3 conv's whole column matrix is 11 MB. */
      for (task.oh0 = 0; task.oh0 < c->OH && !q->qd.w; task.oh0 = task.oh1) {
        int64_t npix;
        task.oh1 = task.oh0 + tile < c->OH ? task.oh0 + tile : c->OH;
        npix = (task.oh1 - task.oh0) * c->OW;
        /* AVX2, several threads, fewer output channels than the tile's pixels: split over
         * pixels, one part a thread of at least 64 pixels (16 is the core's column block), each
         * building its own pixels' columns and running every channel on them. The k-pair then
         * channel split forked twice a tile and each core read the columns the other built: on
         * the quiet machine IS-Net capped at 2 threads ran 2194-2229 ms that way, 1921-1936 with
         * four parts a thread. One part a thread: a wide layer's tile is one output row (512
         * pixels at 512x512), and each part pays the per-pair set-up of its column rows once per
         * part, so four 64-pixel parts paid it four times over what one 256-pixel part does; a
         * 64 -> 16 3x3 conv at 512x512, 2 threads, 5 alternating rounds: 92.9-99.7 -> 83.6-88.1
         * ms (docs/benchmarks.md, "The AVX2 INT8 conv's pixel split"). Not for the codes' first
         * pass: a channel's range is one part's alone there. */
        if (q->b256) { /* the AVX2 byte core: one part a thread of whole 6-row blocks (96-pixel
                        * steps left a 512-pixel tile in parts of 288 and 224) */
          int64_t th = env && env->threads > 1 ? env->threads : 1, grain = (npix + th - 1) / th;
          grain = (grain + MI__Q256_ROWS - 1) / MI__Q256_ROWS * MI__Q256_ROWS;
          /* more channels than pixels (a deep layer's 32-pixel rows): the threads share the
           * panels, each would stream all of them through the split over pixels */
          if (task.pass == 0 && mg <= npix) {
            mi__blis_parallel(env, npix, grain, mg * q->kk, q256_pix, &task);
          } else {
            mi__blis_parallel(env, npix, grain, q->kk, q256_col_part, &task);
            mi__blis_parallel(env, (mg + 15) / 16, 1, 16 * q->kk * npix, q256_pan, &task);
          }
          continue;
        }
        if (c->simd == MI__SIMD_AVX2 && !q->u8k && !q->w4 && task.pass == 0 && env && env->threads > 1 &&
            mg <= npix) {
          int64_t grain = (npix + env->threads - 1) / env->threads;
          grain = grain < 64 ? 64 : (grain + 15) / 16 * 16;
          mi__blis_parallel(env, npix, grain, mg * q->kk, qconv_pix, &task);
          continue;
        }
        if (q->u8k) mi__blis_parallel(env, q->kq, 1, 4 * (task.oh1 - task.oh0) * c->OW, qv_im2col_part, &task);
        if (q->amx) mi__blis_parallel(env, (task.oh1 - task.oh0) * c->OW, 128, q->kq, qa_colsum_part, &task);
        else if (q->shift)
          mi__blis_parallel(env, (task.oh1 - task.oh0) * c->OW, 16, q->kq, qv_colsum_part, &task);
        if (!q->u8k && c->simd == MI__SIMD_AVX2) /* items are k pairs: each writes whole pairs */
          mi__blis_parallel(env, q->ka / 2, 1, 2 * (task.oh1 - task.oh0) * c->OW, qcol256_part, &task);
        else if (!q->u8k)
          mi__blis_parallel(env, cg, 1, c->KH * c->KW * (task.oh1 - task.oh0) * c->OW, qim2col_part, &task);
        mi__blis_parallel(env, mg, 1, q->kk * (task.oh1 - task.oh0) * c->OW, qconv_rows, &task);
      }
    }
}

/* q->codes: the sums once for each channel's range, the range of the tail's ends, then the sums
 * again into codes. */
static void run_qconv_codes(const qconv_t *q, void *const *t, const mi__blis_env_t *env, qconv_task_t *task) {
  const mi__blis_conv_t *c = &q->g;
  float lo = 0.f, hi = 0.f;
  int64_t m;
  for (m = 0; m < c->M; m++) { /* the step's writable block */
    q->rng[2 * m] = INT32_MAX;
    q->rng[2 * m + 1] = INT32_MIN;
  }
  task->pass = 1;
  qconv_sums(q, t, env, task);
  for (m = 0; m < c->M; m++)
    if (q->rng[2 * m] <= q->rng[2 * m + 1]) /* channels with outputs */
      mi__blis_ftail_ends(c->simd, q->rng[2 * m], q->rng[2 * m + 1], task->fs, q->tb != NULL, q->tb ? q->tb[m] : 0.f,
                          q->relu, &q->hs1, &lo, &hi);
  task->codes = mi__blis_dynq_start(&q->hs, t, lo, hi, &task->scale, &task->zp);
  task->yb = t[c->y];
  task->pass = 2;
  qconv_sums(q, t, env, task);
}

static int32_t run_qconv(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  const qconv_t *q = s->state;
  const mi__blis_conv_t *c = &q->g;
  qconv_task_t task;
  (void)err;
  memset(&task, 0, sizeof task);
  task.q = q;
  task.oh0 = 0;
  task.oh1 = c->OH;
  task.zx = q->zx_t >= 0 ? mi__blis_qruntime_zp(t, q->zx_t, q->x_u8) : q->zx;
  task.fs = q->tail ? *(const float *)t[q->scale_t] : 0.f;
  task.res = q->tail && q->res_t >= 0 ? t[q->res_t] : NULL;
  if (q->codes && fabsf(task.fs) <= 0x1p64f) { /* |sum * scale| stays finite; else the plane */
    run_qconv_codes(q, t, env, &task);
    return MI_OK;
  }
  if (q->codes) {
    int32_t rc = mi__blis_plane_open(env, c->y, err);
    if (rc != MI_OK) return rc;
  }
  mi__blis_ftail_begin(&q->hs, env);
  qconv_sums(q, t, env, &task);
  mi__blis_ftail_end(&q->hs, t, env, c->simd);
  if (q->codes) mi__blis_plane_close(env, c->y);
  return MI_OK;
}

const mi__blis_conv_t *mi__blis_qconv_pw_geom(const mi__blis_step_t *s) {
  const qconv_t *q = s->state;
  const mi__blis_conv_t *c = &q->g;
  int ok = (s->run == run_qconv || mi__blis_qblock_runs(s)) && q->u8k && !q->qd.w && !q->dw && !q->out32 && !q->tail;
  ok = ok && !q->ibias && q->zx_t < 0 && c->G == 1 && c->KH * c->KW * c->sh * c->sw == 1;
  return ok && c->OH == c->H && c->OW == c->W ? c : NULL;
}

void mi__blis_qconv_pw_band(const mi__blis_step_t *s, const uint8_t *x, int64_t rows, uint8_t *col, int32_t *acc,
                            int32_t *psum, uint8_t *y, int64_t ystride) {
  const qconv_t *q = s->state;
  mi__blis_conv_t g = q->g; /* the band as a plane of its own: the flat 1x1 columns */
  int32_t zu = q->zx + (q->x_u8 ? 0 : 128);
  int64_t m, npix = rows * g.OW;
  g.H = g.OH = rows;
  mi__blis_qv_im2col(&g, x, q->kk, q->x_u8, q->zx, 0, rows, 0, q->kq, col);
  if (q->shift) { /* the pixel sums first, for the shift on the core's tiles */
    mi__blis_qv_colsum(q->dot, q->kk, q->kq, npix, col, 0, npix, psum);
    mi__blis_qv_conv_shift(q->dot, 0, g.M, npix, q->kq, q->w8, col, q->wsum, zu, q->wd, psum, zu * (int32_t)q->kk, acc);
  } else
    mi__blis_qv_gemm(q->dot, 1, 0, g.M, npix, q->kq, q->w8, col, q->wsum, NULL, zu, acc);
  for (m = 0; m < g.M; m++) {
    mi__blis_requant(g.simd, acc + m * npix, npix, q->mult + m, q->bias + m, 0, q->zy, q->y_u8, y + m * ystride);
  }
}

int32_t mi__blis_q_out_stage(mi__blis_prep_t *p, const mi_node_desc_t *n, const mi__blis_qsrc_t *src,
                             int64_t channels, double *mult, double *bias, mi_error_t *err) {
  const mi_tensor_desc_t *b = mi__blis_tensor(p, src->fbias);
  int64_t c, bn = b ? mi_sdk_numel(b) : 0;
  if (src->out32) return MI_OK;
  if (b && (!b->data || b->dtype != MI_DTYPE_FLOAT32 || (bn != 1 && bn != channels)))
    return mi__blis_unsupported(err, n, "INT8: bias must be a FLOAT32 constant of 1 or N elements");
  if (!(src->sx > 0.) || !(src->sy > 0.))
    return mi__blis_unsupported(err, n, "INT8: input and output codes need a positive scale");
  if (!src->sw || (src->nsw != 1 && src->nsw != channels))
    return mi__blis_unsupported(err, n, "INT8: weight scales are neither per tensor nor per output channel");
  for (c = 0; c < channels; c++) {
    double sw = (double)src->sw[src->nsw == 1 ? 0 : c];
    if (!(sw > 0.)) return mi__blis_unsupported(err, n, "INT8: weight scales must be > 0");
    mult[c] = src->alpha * src->sx * sw / src->sy;
    bias[c] = b ? src->beta * (double)((const float *)b->data)[bn == 1 ? 0 : c] / src->sy : 0.;
  }
  return MI_OK;
}

/* Saturating pairs (vpmaddubsw, blis_qgemm256.c) of channel c's kk weights minus d, pairs (k, k + 1)
 * for even k (the last of an odd kk pairs with a 0). */
static int64_t b256_sat_pairs(const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w, int64_t c, int64_t kk, int32_t d) {
  int64_t k, cnt = 0;
  for (k = 0; k + 1 < kk; k += 2) {
    int32_t a = mi__blis_qwval(src, w, c * kk + k, c) - d, b = mi__blis_qwval(src, w, c * kk + k + 1, c) - d;
    cnt += (a > 0 ? a : 0) + (b > 0 ? b : 0) > 128 || (a < 0 ? a : 0) + (b < 0 ? b : 0) < -128;
  }
  return cnt;
}

/* The weight shift of channel c for the AVX2 byte core: *d0 0 where its weights minus their zero
 * point fit INT8 (else that of mi__blis_qbyte_shift), and *d of the shifts that bring them into
 * INT8 (*d0, the one that centres their range, the two that put an end at -128 or 127) the one
 * with the fewest saturating pairs, so the fix lists stay short where a layer's weights use the
 * whole UINT8 range (ONNX Runtime's dynamic quantization: a zero point per tensor leaves a
 * channel's weights on one side of it); *n0, *n their saturating pairs. 0 when they span more
 * than 256 values. */
static int b256_shift(const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w, int64_t c, int64_t kk, int32_t *d0,
                      int64_t *n0, int32_t *d, int64_t *n) {
  int32_t lo = 0, hi = 0, v, cand[4];
  int64_t k;
  for (k = 0; k < kk; k++) {
    v = mi__blis_qwval(src, w, c * kk + k, c);
    lo = k == 0 || v < lo ? v : lo;
    hi = k == 0 || v > hi ? v : hi;
  }
  if (hi - lo > 255) return 0;
  cand[0] = lo >= -128 && hi <= 127 ? 0 : lo + 128;
  cand[1] = (lo + hi) >> 1; /* s = v - d in [lo - d, hi - d]: centred */
  cand[1] = cand[1] < hi - 127 ? hi - 127 : cand[1] > lo + 128 ? lo + 128
                                                               : cand[1];
  cand[2] = lo + 128;
  cand[3] = hi - 127;
  *d0 = *d = cand[0];
  *n0 = *n = b256_sat_pairs(src, w, c, kk, cand[0]);
  for (k = 1; k < 4; k++) {
    int64_t nk = b256_sat_pairs(src, w, c, kk, cand[k]);
    if (nk < *n) {
      *n = nk;
      *d = cand[k];
    }
  }
  return 1;
}

/* The AVX2 byte core for conv q (its geometry, kk, dot set): where every output channel's weights
 * minus their zero point fit INT8 with a shift (wd) and at most one pair in MI__Q256_FIX_SHARE
 * weights saturates vpmaddubsw, *b8 gets each group's weights as the core's quads ([G][kq][M/G][4],
 * a transient copy), *bytes the panels' size, q->wsum and q->shift theirs, and q->b256 is set.
 * Else nothing is kept and the int16 core runs the layer. */
static int32_t qconv_b256_plan(mi__blis_prep_t *p, qconv_t *q, const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w,
                               uint8_t **b8, uint64_t *bytes, mi_error_t *err) {
  const int64_t kk = q->kk, kq = (kk + 3) / 4, mg = q->g.M / q->g.G, G = q->g.G;
  int64_t i, g, nfix = 0;
  uint64_t total = (uint64_t)G * sizeof(mi__blis_q256_t);
  *b8 = NULL;
  *bytes = 0;
  int64_t n0 = 0, nb = 0, c0, cb;
  int32_t db;
  /* each channel's fewest saturating pairs; without a shift where that passes the rule too (no
   * pixel sums, no shift to add) */
  for (i = 0; i < q->g.M; i++) {
    if (!b256_shift(src, w, i, kk, &q->wd[i], &c0, &db, &cb)) {
      memset(q->wd, 0, (size_t)q->g.M * sizeof(int32_t));
      return MI_OK;
    }
    n0 += c0;
    nb += cb;
    if (nb > kk * q->g.M / MI__Q256_FIX_SHARE) { /* too many saturating pairs: the int16 core */
      memset(q->wd, 0, (size_t)q->g.M * sizeof(int32_t));
      return MI_OK;
    }
  }
  if (n0 > kk * q->g.M / MI__Q256_FIX_SHARE)
    for (i = 0; i < q->g.M; i++) b256_shift(src, w, i, kk, &db, &c0, &q->wd[i], &cb);
  if (!(*b8 = mi__blis_calloc(p->ctx, (uint64_t)(G * kq * 4 * mg))))
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  for (i = 0; i < q->g.M * kk; i++) {
    int64_t m = i / kk, k = i % kk, j = m % mg;
    int32_t v = mi__blis_qwval(src, w, i, m) - q->wd[m];
    (*b8)[m / mg * kq * 4 * mg + ((k >> 2) * mg + j) * 4 + (k & 3)] = (uint8_t)(int8_t)v;
    q->wsum[m] += v;
  }
  for (g = 0; g < G; g++) {
    int64_t f = mi__blis_q256_fixes(*b8 + g * kq * 4 * mg, mg, kq);
    nfix += f;
    total += mi__blis_q256_bytes(mg, kq, f) + 32;
  }
  if (nfix > kk * q->g.M / MI__Q256_FIX_SHARE) { /* too many saturating pairs: the int16 core */
    mi__blis_free(p->ctx, *b8);
    *b8 = NULL;
    memset(q->wd, 0, (size_t)q->g.M * sizeof(int32_t));
    memset(q->wsum, 0, (size_t)q->g.M * sizeof(int32_t));
    return MI_OK;
  }
  for (i = 0; i < q->g.M; i++) q->shift |= q->wd[i] != 0;
  q->b256 = 1;
  *bytes = total;
  return MI_OK;
}

/* The panels of q's groups at mem (qconv_b256_plan's bytes): pbg first, then each group's. */
static void qconv_b256_pack(qconv_t *q, const uint8_t *b8, void *mem) {
  const int64_t kq = (q->kk + 3) / 4, mg = q->g.M / q->g.G;
  uint8_t *d = (uint8_t *)((mi__blis_q256_t *)mem + q->g.G);
  int64_t g;
  q->pbg = mem;
  for (g = 0; g < q->g.G; g++) {
    const uint8_t *bg = b8 + g * kq * 4 * mg;
    d = (uint8_t *)(((uintptr_t)d + 31) & ~(uintptr_t)31);
    mi__blis_q256_pack(&q->pbg[g], bg, mg, kq, d);
    d += mi__blis_q256_bytes(mg, kq, q->pbg[g].nfix);
  }
}

int32_t mi__blis_q_int8_dot(const mi__blis_prep_t *p, int32_t simd) {
  int64_t v = mi_sdk_knob_int(p->desc, "int8_dot", 0);
  if (v > 0 && v < p->ctx->qdot_n) return p->ctx->qdot_ids[v];
  return mi__blis_qdot_level(p->ctx->cpu.isa, simd);
}

int32_t mi__blis_qconv_build(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src,
                             mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, src->x), *w = mi__blis_tensor(p, src->w);
  const mi_tensor_desc_t *y = mi__blis_tensor(p, src->y);
  qconv_t *q;
  int64_t i, ohw, mg, wn, fw, th, na;
  int32_t rc;
  if (!mi__blis_is_q8(x) || !w || !w->data || !y ||
      (src->out32 ? y->dtype != (src->tail ? MI_DTYPE_FLOAT32 : MI_DTYPE_INT32) : !mi__blis_is_q8(y)))
    return mi__blis_unsupported(err, n, "integer conv needs INT8/UINT8 codes in, a constant weight, codes or INT32 out");
  if (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_UINT8 && w->dtype != MI_DTYPE_INT4)
    return mi__blis_unsupported(err, n, "integer conv: the weight must be INT8, UINT8 or INT4");
  if (p->desc->node_count != 1 + src->tail && !(src->tail == 0 && mi__blis_qblock_desc(p)))
    return mi__blis_unsupported(err, n, "INT8 conv runs alone or with its float tail, not in a fused group");
  if (!(q = mi__blis_state_new(p, s, sizeof *q + (uint64_t)w->dims[0] * (2 * sizeof(double) + 6 * sizeof(int32_t)), err))) return MI_ERR_OUT_OF_MEMORY;
  q->mult = (double *)(q + 1);
  q->bias = q->mult + w->dims[0];
  q->wsum = (int32_t *)(q->bias + w->dims[0]) + w->dims[0];
  q->wd = q->wsum + w->dims[0];
  q->rng = q->wd + 2 * w->dims[0]; /* after tb's */
  if ((q->tail = src->tail) > 0) { /* the float tail: y is its output (blis_qlinear.c) */
    q->scale_t = src->scale_t;
    q->relu = src->relu;
    q->hs = src->hs;
    q->res_t = src->res_t;
    q->tb = src->tb ? (float *)(q->wd + w->dims[0]) : NULL;
    for (i = 0; q->tb && i < w->dims[0]; i++) q->tb[i] = src->tb[src->ntb == 1 ? 0 : i];
    p->nodes_used = 1 + src->tail;
  }
  if (src->ibias) {
    q->ibias = (int32_t *)(q->bias + w->dims[0]);
    memcpy(q->ibias, src->ibias, (size_t)w->dims[0] * sizeof(int32_t));
  }
  q->g.x = src->x;
  q->g.w = src->w;
  q->g.y = src->y;
  q->g.simd = mi__blis_simd_level(p->ctx->cpu.isa);
  if ((rc = mi__blis_conv_geom(p, n, &q->g, err)) != MI_OK) return rc;
  if (q->g.nhwc_in || q->g.nhwc_out) return mi__blis_unsupported(err, n, "INT8 conv is NCHW only");
  rc = mi__blis_q_out_stage(p, n, src, q->g.M, q->mult, q->bias, err);
  if (rc != MI_OK) return rc;
  q->zx = src->zx;
  q->zx_t = src->zx_t;
  q->zy = src->zy;
  q->out32 = src->out32;
  q->x_u8 = x->dtype == MI_DTYPE_UINT8;
  q->y_u8 = y->dtype == MI_DTYPE_UINT8;
  q->kk = q->g.C / q->g.G * q->g.KH * q->g.KW;
  q->ka = (q->kk + 1) / 2 * 2;
  q->dot = mi__blis_q_int8_dot(p, q->g.simd);
  ohw = q->g.OH * q->g.OW;
  /* AMX tiles where the layer fills them (the byte core's conditions below still apply), else
   * the VNNI byte core: every other path reads dot as VNNI_U8 */
  q->amx = q->dot == MI__QDOT_AMX_U8 && mi__blis_qa_pays(q->g.M / q->g.G, ohw, q->kk);
  /* 1x1 convs under 256 input channels keep vpdpbusd: ppocr_v4_det's 48-192 channel ones ran 1.1-1.6x
   * longer on the tiles in per-layer profiles (1 thread), its 384-channel ones 0.72x; convs with
   * taps (oww_embedding's 1x3 and 3x1, 24-96 channels) 0.65-0.93x */
  q->amx &= q->g.KH * q->g.KW > 1 || q->kk >= 256;
  q->dot = q->dot == MI__QDOT_AMX_U8 ? MI__QDOT_VNNI_U8 : q->dot;
  mg = q->g.M / q->g.G;
  th = q->g.OW * qtile_rows(q); /* pixels of one tile: the GEMM path's columns and sums */
  wn = q->g.M * q->ka;
  if (q->kk >= 32768) return mi__blis_unsupported(err, n, "INT8 conv: reduction too long for int32");
  q->dw = q->g.C == q->g.G && q->g.G > 1;
  /* the depthwise path's items are planes: one channel's range from two threads at a batch of 2 */
  if ((q->codes = (!q->dw || q->g.N == 1) && mi__blis_ftail_codes(p, src, q->kk))) {
    q->hs1 = q->hs;
    q->hs1.dq = 0;
    /* codes from the sums: the floats are written only where the scale is out of range (run_qconv) */
    mi__blis_plane_mark(p, src->y, MI__PLANE_RESERVED);
  }
  /* INT4 GEMM path: the weights stay packed, one byte per pair (the depthwise path's few taps
   * are kept widened) */
  q->w4 = !q->dw && !src->wz && mi__blis_qweight_4bit(w);
  if (q->w4) wn = (wn / 2 + 1) / 2; /* M * ka / 2 bytes, counted in int16 */
  /* acc holds one group's rows, or every plane of the batch for the depthwise path */
  fw = q->dw && q->g.KH * q->g.KW <= 64 ? q->g.M * q->kk : 0; /* 64 taps: float sums < 2^24 */
  na = q->dw ? q->g.N * q->g.M * ohw : mg * th;
  /* the direct form's block last, planned before the weights say whether the byte core runs */
  /* the byte core without columns keeps its layers, on the tiles where they pay: ppocr_v4_det's
   * 96->24 3x3 convs at 80x80 took 1.4-1.7 ms on the tiles after the columns, 0.6-0.8 ms there with
   * vpdpbusd (per-layer profiles, 1 thread) */
  uint64_t dq = !q->dw && !q->w4 && q->g.OW <= MI__QV_ROW_BYTES
                    ? mi__blis_qd_plan(&q->qd, &q->g, q->amx ? MI__QDOT_AMX_U8 : q->dot)
                    : 0;
  q->amx &= !q->dw && !q->w4 && !dq;
  /* AMX: its weights and column sums after the columns (whose last tiles read 64 bytes past them) */
  uint64_t amxb = q->amx ? mi__blis_qa_conv_bytes(q->g.M, (q->kk + 3) / 4) + (uint64_t)th * sizeof(int32_t) + 64 : 0;
  uint64_t ab = (uint64_t)(wn + (q->dw ? 0 : q->ka * th)) * sizeof(int16_t) + (uint64_t)(na + th) * sizeof(int32_t) +
                (uint64_t)fw * sizeof(float) + 64;
  ab = (ab + 63) / 64 * 64;
  /* the AVX2 byte core: its panels after the rest (the qd and AMX blocks are empty at AVX2) */
  uint8_t *b8 = NULL;
  uint64_t b2b = 0;
  if (q->dot == MI__QDOT_AVX2 && !q->dw && !q->w4 && !dq && !q->amx &&
      (rc = qconv_b256_plan(p, q, src, w, &b8, &b2b, err)) != MI_OK)
    return rc;
  s->aux = mi__blis_calloc(p->ctx, ab + amxb + dq + b2b);
  if (!s->aux) {
    if (b8) mi__blis_free(p->ctx, b8);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  }
  q->acc = s->aux; /* int32 first keeps it aligned */
  q->psum = q->acc + na;
  na += th;
  q->wf = fw ? (float *)(q->acc + na) : NULL;
  q->wq = (int16_t *)((char *)(q->acc + na) + fw * sizeof(float));
  q->col = q->wq + wn;
  if (q->b256) { /* byte columns: 4 * kq <= 2 * ka bytes a pixel fit col's int16 */
    q->kq = (q->kk + 3) / 4;
    qconv_b256_pack(q, b8, (char *)s->aux + ab + amxb + dq);
    mi__blis_free(p->ctx, b8);
    s->run = run_qconv;
    return MI_OK;
  }
  if (q->w4) { /* OIHW = [M][kk] as [M][ka/2] pair bytes; an odd kk's last high nibble stays 0 */
    q->w4q = (uint8_t *)q->wq;
    q->wq = NULL;
    for (i = 0; i < q->g.M * q->kk; i++) {
      int64_t m = i / q->kk, k = i % q->kk;
      int32_t v = mi__blis_qweight(w, i);
      uint8_t *d = q->w4q + m * q->ka / 2 + k / 2;
      *d = (uint8_t)(*d | mi__blis_nib_byte(k & 1 ? 0 : v, k & 1 ? v : 0));
    }
    s->run = run_qconv;
    return MI_OK;
  }
  q->kq = (q->kk + 3) / 4;
  /* byte core: the weights minus their zero point all fit INT8; [M][kq*4] bytes fit in wq's
   * [M][ka] int16 and the [kq][tile rows*OW][4] columns in col's (4 * kq <= 2 * ka) */
  q->u8k = q->dot == MI__QDOT_VNNI_U8 && !q->dw && q->g.OW <= MI__QV_ROW_BYTES;
  for (i = 0; i < q->g.M && q->u8k; i++) {
    q->u8k = mi__blis_qbyte_shift(src, w, i, i * q->kk, q->kk, 1, &q->wd[i]);
    q->shift |= q->wd[i] != 0;
  }
  q->shift &= q->u8k;
  q->amx &= q->u8k;
  if (q->u8k) {
    q->w8 = (uint8_t *)q->wq;
    for (i = 0; i < q->g.M * q->kk; i++) {
      int32_t v = mi__blis_qwval(src, w, i, i / q->kk) - q->wd[i / q->kk];
      q->w8[i / q->kk * q->kq * 4 + i % q->kk] = (uint8_t)(int8_t)v;
      q->wsum[i / q->kk] += v;
    }
    if (dq) mi__blis_qd_init(&q->qd, (char *)s->aux + ab + amxb, q->w8, q->kq, q->wsum, q->wd, q->shift);
    if (q->amx) {
      q->ssum = (int32_t *)((char *)s->aux + ab);
      q->wa = (uint8_t *)(q->ssum + th);
      mi__blis_qa_conv_pack(q->w8, q->g.M, q->kq, q->wa);
    }
    s->run = run_qconv;
    return MI_OK;
  }
  /* OIHW = [M][kk], rows padded to ka with 0; calloc leaves the odd pair halves of col 0 */
  for (i = 0; i < q->g.M * q->kk; i++) {
    int32_t v = mi__blis_qwval(src, w, i, i / q->kk);
    q->wq[i / q->kk * q->ka + i % q->kk] = (int16_t)v;
    if (q->wf) q->wf[i] = (float)v;
  }
  s->run = run_qconv;
  return MI_OK;
}
