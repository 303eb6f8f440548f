/* blis_qdirect.c - the byte core's KxK conv without columns (implicit GEMM on AVX-512 VNNI).
 * The im2col path builds C * KH * KW bytes a pixel (864 for a DB detector's 96-channel 3x3 convs,
 * 5.5 MB for one 80x80 layer) and streams them through L2 once per block of 6 output channels;
 * here the input is copied once into channel quads ([cq][phase][hq * wq][4]), and k step (cq, kh,
 * kw) of 16 output pixels is one 64-byte load at a fixed offset, so a 64-pixel block's operand is
 * a few KB that stays in L1 for every block of output channels. Same exact int32 sums as the
 * column path: the zero point's code in the padding and in the quads past the group's channels
 * (weight 0 there), the zero point taken out after the sum (blis_qvnni.c). */
#include <immintrin.h>
#include <string.h>

#include "blis_qgemm.h"

#define T512V __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")))
/* Register block: QD_ROWS output channels x 64 pixels, as the column path's (24 accumulators). */
#define QD_ROWS 6
/* Bytes of int32 sums one tile of output rows holds for the group's channels. */
#define QD_ACC_BYTES (256 * 1024)
/* Shortest reduction C/G * KH * KW that takes this path (see mi__blis_qd_plan). */
#define QD_MIN_K 512

static uint64_t up64(uint64_t b) { return (b + 63) / 64 * 64; }

uint64_t mi__blis_qd_plan(mi__blis_qd_t *d, const mi__blis_conv_t *c, int32_t dot) {
  int64_t taps = c->KH * c->KW, plane;
  uint64_t xb;
  memset(d, 0, sizeof *d);
  d->c = c;
  d->dot = dot;
  d->cg = c->C / c->G;
  d->mg = c->M / c->G;
  /* Only long columns (QD_MIN_K): per-layer profiles at 1 thread, this path over the column
   * path, AVX-512 VNNI: 0.41-0.65 at K 864 (96-channel 3x3, 80x80 down to 10x10), 0.56-0.73 at K
   * 576 and 1152 (64 and 128 channels, 40x40 and 80x80); 1.2-1.8 at K 72-288 (1x3 and 3x1 convs
   * of 24-96 channels on planes 2-32 wide) and 1.29 at K 36 (4 channels, 320x320 stride 2),
   * where the columns are cheap and the copy, the dropped pixels and the row tails are not. A 1x1
   * conv's columns are spans of the planes already; a group of under 16 channels that are not
   * whole quads would multiply up to 3 padding channels per quad; dilated convs keep the column
   * path (the offsets would hold them, no test does yet). */
  if (dot < MI__QDOT_VNNI_U8 || taps < 2 || d->cg * taps < QD_MIN_K || c->sh > 4 || c->sw > 4 || c->dh != 1 ||
      c->dw != 1 || (d->cg % 4 && d->cg < 16))
    return 0;
  d->cq = (d->cg + 3) / 4;
  d->kk = d->cg * taps;
  d->hq = c->OH + (c->KH - 1) * c->dh / c->sh;
  d->wq = c->OW + (c->KW - 1) * c->dw / c->sw;
  d->nph = c->sh * c->sw;
  d->nk = d->cq * taps;
  plane = d->hq * d->wq;
  xb = (uint64_t)(d->cq * d->nph * plane + d->wq + 64) * 4;
  if (xb >= (1ull << 31) || d->wq > MI__QV_ROW_BYTES) return 0; /* int32 offsets; one row buffer */
  d->tile = QD_ACC_BYTES / (d->mg * d->wq * 4);
  d->tile = d->tile < 1 ? 1 : d->tile > c->OH ? c->OH
                                              : d->tile;
  d->amx = dot == MI__QDOT_AMX_U8;
  /* AMX: its weights and the column sums of every output pixel after the quads */
  return (d->amx ? mi__blis_qa_direct_bytes(d) + up64((uint64_t)(c->OH * d->wq + 64) * 4) : 0) +
         up64((uint64_t)(d->mg * d->tile * d->wq) * 4) + up64((uint64_t)(d->nph * plane + d->wq + 64) * 4) +
         up64((uint64_t)(c->OH * d->wq) * 4) + up64((uint64_t)d->nk * 4) + up64((uint64_t)taps * 4) +
         up64((uint64_t)(c->M * d->nk) * 4) + up64(xb) + 64;
}

void mi__blis_qd_init(mi__blis_qd_t *d, void *mem, const uint8_t *w8, int64_t kq, const int32_t *wsum,
                      const int32_t *wd, int32_t shift) {
  const mi__blis_conv_t *c = d->c;
  int64_t taps = c->KH * c->KW, plane = d->hq * d->wq, q, kh, kw, e, m;
  uint8_t *b = (uint8_t *)(((uintptr_t)mem + 63) / 64 * 64);
  d->acc = (int32_t *)b;
  b += up64((uint64_t)(d->mg * d->tile * d->wq) * 4);
  d->ssum = (int32_t *)b;
  b += up64((uint64_t)(d->nph * plane + d->wq + 64) * 4);
  d->psum = (int32_t *)b;
  b += up64((uint64_t)(c->OH * d->wq) * 4);
  d->koff = (int32_t *)b;
  b += up64((uint64_t)d->nk * 4);
  d->toff = (int32_t *)b;
  b += up64((uint64_t)taps * 4);
  d->w = b;
  b += up64((uint64_t)(c->M * d->nk) * 4);
  d->xp = b;
  b += up64((uint64_t)(d->cq * d->nph * plane + d->wq + 64) * 4);
  if (d->amx) { /* after the quads (whose last tiles read into them) */
    d->asum = (int32_t *)b;
    b += up64((uint64_t)(c->OH * d->wq + 64) * 4);
    d->wa = b;
  }
  d->wsum = wsum;
  d->wd = wd;
  d->shift = shift;
  for (kh = 0; kh < c->KH; kh++)
    for (kw = 0; kw < c->KW; kw++) { /* padded (r, col) is phase (r % sh, col % sw), (r / sh, col / sw) */
      int64_t ph = (kh * c->dh % c->sh) * c->sw + kw * c->dw % c->sw;
      d->toff[kh * c->KW + kw] = (int32_t)(ph * plane + kh * c->dh / c->sh * d->wq + kw * c->dw / c->sw);
    }
  for (q = 0; q < d->cq; q++)
    for (e = 0; e < taps; e++) d->koff[q * taps + e] = (int32_t)((q * d->nph * plane + d->toff[e]) * 4);
  for (m = 0; m < c->M; m++) /* k step s = (q, kh, kw) holds channels 4q..4q+3 of that tap */
    for (q = 0; q < d->cq; q++)
      for (e = 0; e < taps; e++) {
        int64_t l;
        for (l = 0; l < 4 && 4 * q + l < d->cg; l++)
          d->w[(m * d->nk + q * taps + e) * 4 + l] = w8[m * kq * 4 + (4 * q + l) * taps + e];
      }
  if (d->amx) mi__blis_qa_direct_pack(d);
}

typedef struct qd_task {
  const mi__blis_qd_t *d;
  const uint8_t *x;
  int64_t g, oh0, oh1;
  int32_t zu;
  uint8_t zraw, flip;
  mi__blis_qd_out_fn out;
  void *arg;
} qd_task_t;

/* Items are channel quads: each phase plane's rows as quads of four channels' codes. */
static void qd_pack_part(void *arg, int64_t q0, int64_t q1) {
  const qd_task_t *t = arg;
  const mi__blis_qd_t *d = t->d;
  const mi__blis_conv_t *c = d->c;
  int64_t plane = d->hq * d->wq, q, a, b, r, e, j;
  uint8_t rows[4][MI__QV_ROW_BYTES], pad[MI__QV_ROW_BYTES];
  memset(pad, t->zraw, (size_t)d->wq);
  for (q = q0; q < q1; q++)
    for (a = 0; a < c->sh; a++)
      for (b = 0; b < c->sw; b++) {
        uint8_t *dst = d->xp + (q * d->nph + a * c->sw + b) * plane * 4;
        int64_t col = b - c->pl, lo = 0, hi = d->wq; /* phase column j reads input column j * sw + col */
        while (lo < hi && lo * c->sw + col < 0) lo++;
        while (hi > lo && (hi - 1) * c->sw + col >= c->W) hi--;
        for (r = 0; r < d->hq; r++) {
          int64_t ih = r * c->sh + a - c->pt;
          const uint8_t *rp[4];
          for (e = 0; e < 4; e++) {
            const uint8_t *src;
            rp[e] = pad;
            if (4 * q + e >= d->cg || ih < 0 || ih >= c->H || lo >= hi) continue;
            src = t->x + ((4 * q + e) * c->H + ih) * c->W;
            memset(rows[e], t->zraw, (size_t)lo);
            if (c->sw == 1) memcpy(rows[e] + lo, src + lo + col, (size_t)(hi - lo));
            else
              for (j = lo; j < hi; j++) rows[e][j] = src[j * c->sw + col];
            memset(rows[e] + hi, t->zraw, (size_t)(d->wq - hi));
            rp[e] = rows[e];
          }
          mi__blis_qv_quads(rp, d->wq, t->flip, dst + r * d->wq * 4);
        }
      }
}

static inline __mmask16 mask16(int64_t left) { return left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                                                                     : 0; }

/* Items are padded pixels of every phase: the group's codes summed (the weight shift's term). */
T512V static void qd_ssum_part(void *arg, int64_t p0, int64_t p1) {
  const qd_task_t *t = arg;
  const mi__blis_qd_t *d = t->d;
  const __m512i ones = _mm512_set1_epi32(0x01010101);
  const __m512i corr = _mm512_set1_epi32((int32_t)(4 * d->cq - d->cg) * t->zu); /* the padding channels */
  int64_t span = d->nph * d->hq * d->wq, p, q;
  for (p = p0; p < p1; p += 16) {
    __mmask16 km = mask16(p1 - p);
    __m512i s = _mm512_setzero_si512();
    if (d->amx) { /* signed quads: every byte, the padding channels' too (the tiles' correction) */
      for (q = 0; q < d->cq; q++)
        s = _mm512_dpbusd_epi32(s, ones, _mm512_maskz_loadu_epi32(km, d->xp + (q * span + p) * 4));
      _mm512_mask_storeu_epi32(d->ssum + p, km, s);
      continue;
    }
    for (q = 0; q < d->cq; q++) s = _mm512_dpbusd_epi32(s, _mm512_maskz_loadu_epi32(km, d->xp + (q * span + p) * 4), ones);
    _mm512_mask_storeu_epi32(d->ssum + p, km, _mm512_sub_epi32(s, corr));
  }
}

/* Items are output pixels oh * wq + ow: the sums of their taps' pixel sums. */
T512V static void qd_psum_part(void *arg, int64_t p0, int64_t p1) {
  const qd_task_t *t = arg;
  const mi__blis_qd_t *d = t->d;
  int64_t taps = d->c->KH * d->c->KW, p, e;
  /* AMX: the sums of signed bytes less the padding channels' (zero point codes), plus 128 a byte,
   * are the unsigned sums of the real channels the shift needs */
  int32_t szp = (int8_t)(uint8_t)(t->zraw ^ t->flip);
  const __m512i base =
      _mm512_set1_epi32((int32_t)(128u * (uint32_t)d->kk - (uint32_t)(taps * (4 * d->cq - d->cg) * szp)));
  for (p = p0; p < p1; p += 16) {
    __mmask16 km = mask16(p1 - p);
    __m512i s = _mm512_setzero_si512();
    for (e = 0; e < taps; e++) s = _mm512_add_epi32(s, _mm512_maskz_loadu_epi32(km, d->ssum + d->toff[e] + p));
    if (d->amx) _mm512_mask_storeu_epi32(d->asum + p, km, s);
    if (d->shift) _mm512_mask_storeu_epi32(d->psum + p, km, d->amx ? _mm512_add_epi32(s, base) : s);
  }
}

/* acc[m][j] = sum_s dot4(w row m step s, quads of pixel p0 + j at koff[s]) - zu * wsum[m], rows
 * m0..m1 of the group, pixels j < np, plus (wd not NULL) the weight shift wd[m] * (psum[j] - base)
 * (mi__blis_qv_shift's term, modulo 2^32) added in registers, so the sums are stored once. Pixel
 * blocks outside, channel blocks inside: the block's quads stay in L1 while every channel block
 * reads them. */
T512V static void qd_gemm512(const mi__blis_qd_t *d, const uint8_t *w, const int32_t *wsum, int64_t m0, int64_t m1,
                             int64_t p0, int64_t np, int32_t zu, const int32_t *wd, const int32_t *psum, int32_t base,
                             int32_t *acc) {
  int64_t j0, i, s, nk = d->nk;
  const int32_t *koff = d->koff;
  for (j0 = 0; j0 < np; j0 += 64) {
    const uint8_t *xb = d->xp + (p0 + j0) * 4;
    __mmask16 km[4];
    int v, r;
    for (v = 0; v < 4; v++) km[v] = mask16(np - j0 - 16 * v);
    for (i = m0; i < m1; i += QD_ROWS) {
      int64_t rows = m1 - i < QD_ROWS ? m1 - i : QD_ROWS;
      const int32_t *ar[QD_ROWS];
      __m512i c[QD_ROWS][4];
      for (r = 0; r < QD_ROWS; r++) ar[r] = (const int32_t *)(w + (i + (r < rows ? r : 0)) * nk * 4);
      _Pragma("GCC unroll 6") for (r = 0; r < QD_ROWS; r++) {
        _Pragma("GCC unroll 4") for (v = 0; v < 4; v++) c[r][v] = _mm512_setzero_si512();
      }
      for (s = 0; s < nk; s++) {
        const uint8_t *bp = xb + koff[s];
        __m512i b0 = _mm512_maskz_loadu_epi32(km[0], bp), b1 = _mm512_maskz_loadu_epi32(km[1], bp + 64);
        __m512i b2 = _mm512_maskz_loadu_epi32(km[2], bp + 128), b3 = _mm512_maskz_loadu_epi32(km[3], bp + 192);
        _Pragma("GCC unroll 6") for (r = 0; r < QD_ROWS; r++) {
          __m512i av = _mm512_set1_epi32(ar[r][s]);
          c[r][0] = _mm512_dpbusd_epi32(c[r][0], b0, av);
          c[r][1] = _mm512_dpbusd_epi32(c[r][1], b1, av);
          c[r][2] = _mm512_dpbusd_epi32(c[r][2], b2, av);
          c[r][3] = _mm512_dpbusd_epi32(c[r][3], b3, av);
        }
      }
      _Pragma("GCC unroll 6") for (r = 0; r < QD_ROWS; r++) {
        __m512i corr;
        if (r >= rows) continue;
        corr = _mm512_set1_epi32(zu * wsum[i + r]);
        _Pragma("GCC unroll 4") for (v = 0; v < 4; v++) if (km[v]) {
          __m512i s = _mm512_sub_epi32(c[r][v], corr);
          if (wd)
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_set1_epi32(wd[i + r]),
                                                       _mm512_sub_epi32(_mm512_maskz_loadu_epi32(km[v], psum + j0 + 16 * v),
                                                                        _mm512_set1_epi32(base))));
          _mm512_mask_storeu_epi32(acc + (i + r) * np + j0 + 16 * v, km[v], s);
        }
      }
    }
  }
}

/* Items are output channels of the group: their sums over the tile's rows with the weight shift
 * (on the VNNI core's tiles; AMX: a pass after), then the tile's rows to out while the sums are in
 * cache (one call a channel: a call a row cost more than the GEMM on an audio embedding's 8-32-pixel
 * rows). */
static void qd_rows_part(void *arg, int64_t m0, int64_t m1) {
  const qd_task_t *t = arg;
  const mi__blis_qd_t *d = t->d;
  int64_t np = (t->oh1 - t->oh0) * d->wq, p0 = t->oh0 * d->wq, mb = t->g * d->mg, ow = d->c->OW, m, oh;
  if (d->amx)
    mi__blis_qa_direct(d, d->wa + mb * (mi__blis_qa_direct_bytes(d) / (d->c->M + 32)), d->wsum + mb, m0, m1, p0, np,
                       t->zu, d->acc);
  else
    qd_gemm512(d, d->w + mb * d->nk * 4, d->wsum + mb, m0, m1, p0, np, t->zu, d->shift ? d->wd + mb : NULL,
               d->psum + p0, t->zu * (int32_t)d->kk, d->acc);
  for (m = m0; m < m1 && d->shift && d->amx; m++)
    if (d->wd[mb + m]) mi__blis_qv_shift(d->acc + m * np, np, d->wd[mb + m], d->psum + p0, t->zu * (int32_t)d->kk);
  for (m = m0; m < m1; m++) { /* rows compacted in place (dropping pixels ow >= OW), one call */
    int32_t *a = d->acc + m * np;
    for (oh = 1; oh < t->oh1 - t->oh0 && d->wq > ow; oh++) memmove(a + oh * ow, a + oh * d->wq, (size_t)ow * 4);
    t->out(t->arg, m, t->oh0, t->oh1 - t->oh0, a);
  }
}

void mi__blis_qd_run(const mi__blis_qd_t *d, const mi__blis_env_t *env, int64_t g, const void *x, int32_t x_u8,
                     int32_t zx, mi__blis_qd_out_fn out, void *arg) {
  const mi__blis_conv_t *c = d->c;
  qd_task_t t;
  int64_t plane = d->hq * d->wq;
  t.d = d;
  t.x = x;
  t.g = g;
  t.zraw = (uint8_t)zx;
  t.flip = x_u8 ? 0 : 0x80;    /* INT8 codes made unsigned: u = x + 128 */
  t.flip ^= d->amx ? 0x80 : 0; /* AMX: made signed, s = u - 128 */
  t.zu = zx + (x_u8 ? 0 : 128);
  t.out = out;
  t.arg = arg;
  mi__blis_parallel(env, d->cq, 1, d->nph * plane * 4, qd_pack_part, &t);
  if (d->shift || d->amx) {
    mi__blis_parallel(env, d->nph * plane, 16, d->cq * 4, qd_ssum_part, &t);
    mi__blis_parallel(env, c->OH * d->wq, 16, c->KH * c->KW, qd_psum_part, &t);
  }
  for (t.oh0 = 0; t.oh0 < c->OH; t.oh0 = t.oh1) {
    t.oh1 = t.oh0 + d->tile < c->OH ? t.oh0 + d->tile : c->OH;
    mi__blis_parallel(env, d->mg, QD_ROWS, d->nk * 4 * (t.oh1 - t.oh0) * d->wq, qd_rows_part, &t);
  }
}
