/* blis_qdw.c - INT8 depthwise Conv (a lowered QDQ layer, or ConvInteger with its float tail: one
 * input channel per group) on AVX-512 VNNI with VBMI: sixteen output columns in the lanes, each
 * lane's four taps of one kernel row gathered from a 64-byte load by one byte permute (vpermb) and
 * multiplied by the row's four weights in one vpdpbusd, exact int32 sums, then the output stage of
 * the GEMM path (blis_qcore.c), the int32 sums themselves, or ConvInteger's float tail. The generic
 * depthwise path (blis_qgemm.c) widens every code to float and runs the float plane: a 3x3
 * 24x128x128 layer of a QDQ face detector took 0.23 ms there, more than its FP32 original's
 * depthwise, pointwise, add and Relu together; the dynamic export's ConvInteger took 0.30-0.35 ms
 * there. Same results, bit for bit: both compute the exact sum of (x - zx) * w over the taps
 * inside the image and finish it the same way. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "blis_dynq512.h"
#include "blis_qgemm.h"

/* Stack scratch of one strip of output rows: its padded input rows and its int32 sums. */
#define QDW_ROWS_BYTES (32 * 1024)
#define QDW_ACC_INTS 4096
#define QDW_MAX_QUADS 4 /* kernel rows up to 16 taps wide */

enum { QDW_CODES = 0, /* the output stage to codes (lowered QDQ) */
       QDW_INT32,     /* ConvInteger's int32 sums */
       QDW_TAIL };    /* ConvInteger -> Cast -> Mul [-> Add bias] [-> Add residual] [-> Relu] */

typedef struct qdw {
  mi__blis_conv_t g;
  int32_t zy, y_u8, flip, zxu; /* flip: 0x80 makes INT8 codes unsigned; zxu: zx made unsigned */
  int32_t zx_t;                /* runtime tensor of x's zero point (one code), or -1: zxu */
  int32_t out, relu, scale_t, res_t;
  mi__blis_hsw_t hs; /* the tail's hard-swish */
  /* codes: the tail's floats are read by its DynamicQuantizeLinear alone and the tail is monotone
   * (mi__blis_ftail_monotone): a first pass takes each plane's int32 range into rng ([N * M][2]),
   * the tail of its ends gives the range, and a second pass writes the codes from the sums through
   * the tail in L1: the float plane is never written nor read again (docs/backends/blis-cpu.md) */
  int32_t codes;
  int32_t *rng;
  mi__blis_hsw_t hs1;             /* hs without its DynamicQuantizeLinear (the second pass's rows) */
  int32_t nq;                     /* quads of taps per kernel row */
  int64_t wp, rows;               /* bytes of a padded input row; output rows per strip */
  double *mult, *bias;            /* [M] output stage (QDW_CODES) */
  float *tb;                      /* [M] the tail's bias, or NULL */
  int32_t *vsum;                  /* [M]: sum of channel m's weights (minus their zero point) */
  int32_t *wd;                    /* [M]: shift d of channel m: the stored bytes are w - d (UINT8 weights) */
  int32_t *wq;                    /* [M][KH][nq] dwords: taps 4q..4q+3 of a kernel row, 0 past KW */
  int32_t ones[QDW_MAX_QUADS];    /* quad q's bytes 1 for taps inside KW: the codes' sum for d */
  uint8_t idx[QDW_MAX_QUADS][64]; /* vpermb index of quad q: lane j, byte t <- j * sw + (4q + t) * dw */
} qdw_t;

typedef struct qdw_task {
  const qdw_t *q;
  const uint8_t *x;
  uint8_t *y;
  const float *res; /* the tail's residual, or NULL */
  float fs;         /* the tail's scale */
  int32_t zxu;      /* this run's zero point, made unsigned */
  uint8_t *codes;   /* q->codes: DynamicQuantizeLinear's codes, its scale and zero point */
  float scale;
  int32_t zp;
} qdw_task_t;

/* Input rows r0..r0+n of plane xp as padded rows of wp bytes: zxu left of the image (pl bytes),
 * the codes made unsigned, zxu to the end; rows outside the image all zxu. The zero point's code
 * in the padding adds zxu * w there, which the correction takes out with the rest: the padding
 * counts as real zero, as in the reference. 64 bytes a step, every store whole (the image's bytes
 * blended into zxu under a load mask): a row's last store may run up to 63 bytes into the next
 * row, which is written after it, or into the scratch's QDW_PAD_SLACK. Masked byte stores, which
 * the kernel's 64-byte loads then read across, made this copy 6-8% of a QDQ detector's samples. */
#define QDW_PAD_SLACK 128
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qdw_pad_rows(const qdw_t *q, int32_t zxu,
                                                                              const uint8_t *xp, int64_t r0,
                                                                              int64_t n, uint8_t *dst) {
  const mi__blis_conv_t *c = &q->g;
  const __m512i flip = _mm512_set1_epi8((char)q->flip), z = _mm512_set1_epi8((char)zxu);
  int64_t r, i, wr = (c->W + 63) / 64 * 64; /* bytes the image's stores cover */
  for (r = 0; r < n; r++, dst += q->wp) {
    int64_t ih = r0 + r;
    if (ih < 0 || ih >= c->H) {
      for (i = 0; i < q->wp; i += 64) _mm512_storeu_si512(dst + i, z);
      continue;
    }
    for (i = 0; i < c->pl; i += 64) _mm512_storeu_si512(dst + i, z); /* the image overwrites the rest */
    for (i = 0; i < c->W; i += 64) {
      int64_t left = c->W - i;
      __mmask64 k = left >= 64 ? ~0ull : (1ull << left) - 1ull;
      __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, xp + ih * c->W + i), flip);
      _mm512_storeu_si512(dst + c->pl + i, _mm512_mask_blend_epi8(k, z, v));
    }
    for (i = c->pl + wr; i < q->wp; i += 64) _mm512_storeu_si512(dst + i, z);
  }
}

/* The sums of output rows o0..o1 of channel m into acc (row stride OW, up to 15 lanes written
 * past each row's end: the next row's, or the scratch's slack): sum (u - zxu) * (s + d) over the
 * taps = sum u * s + d * sum u - zxu * vsum, s the stored bytes; corr = zxu * vsum. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi"))) static void
qdw_rows512(const qdw_t *q, int64_t m, int32_t corr, const uint8_t *pad, int64_t o0, int64_t o1, int32_t *acc) {
  const mi__blis_conv_t *c = &q->g;
  const int32_t *wm = q->wq + m * c->KH * q->nq, d = q->wd[m];
  const __m512i vc = _mm512_set1_epi32(corr), vd = _mm512_set1_epi32(d);
  __m512i ix[QDW_MAX_QUADS];
  int64_t oh, j0, kh, qi;
  for (qi = 0; qi < q->nq; qi++) ix[qi] = _mm512_loadu_si512(q->idx[qi]);
  for (oh = o0; oh < o1; oh++) {
    const uint8_t *row = pad + (oh - o0) * c->sh * q->wp;
    int32_t *ar = acc + (oh - o0) * c->OW;
    for (j0 = 0; j0 < c->OW; j0 += 16) {
      __m512i a = _mm512_setzero_si512(), u = _mm512_setzero_si512();
      for (kh = 0; kh < c->KH; kh++) {
        __m512i v = _mm512_loadu_si512(row + kh * c->dh * q->wp + j0 * c->sw);
        for (qi = 0; qi < q->nq; qi++) {
          __m512i t = _mm512_permutexvar_epi8(ix[qi], v);
          a = _mm512_dpbusd_epi32(a, t, _mm512_set1_epi32(wm[kh * q->nq + qi]));
          if (d) u = _mm512_dpbusd_epi32(u, t, _mm512_set1_epi32(q->ones[qi]));
        }
      }
      if (d) a = _mm512_add_epi32(a, _mm512_mullo_epi32(u, vd));
      _mm512_storeu_si512(ar + j0, _mm512_sub_epi32(a, vc));
    }
  }
}

/* The common 3-tap-row case (one quad, no weight shift: every QDQ 3x3 depthwise layer), the three
 * rows' weights held in registers, R output rows a step: at stride 1 they read R + 2 input rows,
 * each loaded and permuted once and multiplied into the up to three output rows it feeds (3R
 * vpdpbusd for R + 2 vpermb, where the loop above runs 3R of each). The same sums in the same
 * order per lane. A row's last vector is stored under its mask, as rows are interleaved. */
#define QDW3_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))
/* What a step does with its sums: stores them (QDW3_SUMS), or, in the codes path's passes, keeps
 * their range in registers (QDW3_RANGE: the first pass, nothing stored) or takes them through the
 * tail and DynamicQuantizeLinear in registers to 16 codes a row vector (QDW3_CODES: the second pass,
 * no int32 or float row written or read again; the tail of Cast, Mul, [bias Add], [Relu] only,
 * ftail_vec512's operations in its order, and the quantize pass's code, so the same bits), or,
 * on the float plane path, through that tail to the float plane, the range of a DynamicQuantizeLinear
 * after it kept in registers as qv_ftail512 keeps it (QDW3_FLOAT: no int32 strip stored and read). */
enum { QDW3_SUMS,
       QDW3_RANGE,
       QDW3_CODES,
       QDW3_FLOAT };
typedef struct qdw3_k {
  __m512 fs, fb, z, rcp, zf, qs; /* the tail's scale and bias; the quantize's 1 / s, zero point, s */
  __m512i qz;
  int has_b, relu, dq;
  float *fy; /* QDW3_FLOAT: the float plane's output row o0 */
} qdw3_k_t;
/* Where a step's input rows come from: the padded rows (row, wp bytes apart), or, in place (ip),
 * the plane's own rows (no padded copy): a row outside the image is the zero point's code z; a
 * column block whose lanes read bytes outside the row (the first, with the left padding, and the
 * last) takes the bytes inside the row under mask km, z elsewhere; the others load plainly, the
 * bytes past what the lanes read being the next row's, except where the load would leave the
 * plane (rows past ihmax), which take the mask too. */
typedef struct qdw3_in {
  const uint8_t *xp;       /* the plane, H x W UINT8 codes */
  int64_t ih0, off, ihmax; /* the step's first input row; the block's first byte's column; last plain row */
  __mmask64 km;
  int plain;
  __m512i z;
} qdw3_in_t;
QDW3_T512 static inline __attribute__((always_inline)) __m512i qdw3_load(const qdw_t *q, const qdw3_in_t *in,
                                                                         const uint8_t *row, int64_t j0, int i,
                                                                         int ip) {
  const mi__blis_conv_t *c = &q->g;
  int64_t ih = in->ih0 + i;
  if (!ip) return _mm512_loadu_si512(row + i * q->wp + j0 * c->sw);
  if (ih < 0 || ih >= c->H) return in->z;
  if (in->plain && ih <= in->ihmax) return _mm512_loadu_si512(in->xp + ih * c->W + in->off);
  return _mm512_mask_loadu_epi8(in->z, in->km, in->xp + ih * c->W + in->off);
}
QDW3_T512 static inline __attribute__((always_inline)) void qdw3_step(const qdw_t *q, const __m512i *w, __m512i ix,
                                                                      __m512i vc, const uint8_t *row, int64_t j0,
                                                                      int32_t *acc, int64_t ro, __mmask16 k, int R,
                                                                      int mode, const qdw3_k_t *tk, __m512i *lo,
                                                                      __m512i *hi, uint8_t *cy, int64_t cys,
                                                                      const qdw3_in_t *in, int ip, __m512 *flo, __m512 *fhi) {
  /* R > 1 only at stride 1: R, mode, ip and the tap loop are constants, so all of it unrolls */
  const mi__blis_conv_t *c = &q->g;
  __m512i a[4];
  int r, i;
  for (r = 0; r < R; r++) a[r] = _mm512_setzero_si512();
  for (i = 0; i < R + 2; i++) {
    __m512i t = _mm512_permutexvar_epi8(ix, qdw3_load(q, in, row, j0, i, ip));
    for (r = 0; r < R; r++) { /* input row i feeds output row r through kernel row i - r */
      int kh = i - r;
      if (kh >= 0 && kh < 3) a[r] = _mm512_dpbusd_epi32(a[r], t, w[kh]);
    }
  }
  for (r = 0; r < R; r++) {
    __m512i s = _mm512_sub_epi32(a[r], vc), qc;
    if (mode == QDW3_SUMS) {
      _mm512_mask_storeu_epi32(acc + (ro + r) * c->OW + j0, k, s);
    } else if (mode == QDW3_RANGE) {
      *lo = _mm512_mask_min_epi32(*lo, k, *lo, s);
      *hi = _mm512_mask_max_epi32(*hi, k, *hi, s);
    } else {
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), tk->fs);
      if (tk->has_b) v = _mm512_add_ps(v, tk->fb);
      if (tk->relu) v = _mm512_max_ps(v, tk->z); /* NaN and -0 give +0, as x > 0 ? x : 0 */
      if (mode == QDW3_FLOAT) {                  /* the new value first: a NaN leaves the range, as qv_ftail512's */
        _mm512_mask_storeu_ps(tk->fy + (ro + r) * c->OW + j0, k, v);
        if (tk->dq) {
          *flo = _mm512_mask_min_ps(*flo, k, v, *flo);
          *fhi = _mm512_mask_max_ps(*fhi, k, v, *fhi);
        }
        continue;
      }
      mi__blis_dynq_lanes(v, tk->rcp, tk->zf, tk->qs, tk->qz, &qc);
      _mm_mask_storeu_epi8(cy + (ro + r) * cys + j0, k, _mm512_cvtusepi32_epi8(_mm512_max_epi32(_mm512_setzero_si512(), qc)));
    }
  }
}
/* Output rows o0..o1 of channel m: sums to acc (QDW3_SUMS), their range merged into rng[0..1]
 * (QDW3_RANGE), or codes to cy, output row o0's, rows cys apart (QDW3_CODES). */
/* The block of output columns j0.. of plane xp read in place: its first byte's column, its mask,
 * and whether every byte its lanes read (up to 15 * sw + 2 past the first) lies inside the row. */
QDW3_T512 static inline __attribute__((always_inline)) void qdw3_block(const qdw_t *q, int64_t j0, qdw3_in_t *in) {
  const mi__blis_conv_t *c = &q->g;
  int64_t off = j0 * c->sw - c->pl, a = -off < 0 ? 0 : -off, b = c->W - off > 64 ? 64 : c->W - off;
  in->off = off;
  in->km = b <= a ? 0 : (b - a == 64 ? ~0ull : ((1ull << (b - a)) - 1ull) << a);
  in->plain = off >= 0 && off + 15 * c->sw + 3 <= c->W;
  in->ihmax = c->H * c->W - off - 64 < 0 ? -1 : (c->H * c->W - off - 64) / c->W;
}
/* Input rows from pad (padded rows, row 0 the strip's first) or, where xp, in place. */
QDW3_T512 static inline __attribute__((always_inline)) void qdw3_body(const qdw_t *q, int64_t m, int32_t corr,
                                                                      const uint8_t *pad, int64_t o0, int64_t o1,
                                                                      int32_t *acc, int mode, const qdw3_k_t *tk,
                                                                      int32_t *rng, uint8_t *cy, int64_t cys,
                                                                      const uint8_t *xp, int32_t zxu, int ip) {
  const mi__blis_conv_t *c = &q->g;
  const int32_t *wm = q->wq + m * 3;
  const __m512i vc = _mm512_set1_epi32(corr), ix = _mm512_loadu_si512(q->idx[0]);
  __m512i w[3], lo = _mm512_set1_epi32(INT32_MAX), hi = _mm512_set1_epi32(INT32_MIN);
  __m512 flo = _mm512_setzero_ps(), fhi = _mm512_setzero_ps();
  int64_t oh = o0, j0;
  qdw3_in_t in;
  memset(&in, 0, sizeof in);
  in.xp = xp;
  in.z = _mm512_set1_epi8((char)zxu);
  w[0] = _mm512_set1_epi32(wm[0]);
  w[1] = _mm512_set1_epi32(wm[1]);
  w[2] = _mm512_set1_epi32(wm[2]);
  for (; c->sh == 1 && oh + 4 <= o1; oh += 4)
    for (j0 = 0; j0 < c->OW; j0 += 16) {
      __mmask16 k = c->OW - j0 >= 16 ? 0xffff : (__mmask16)((1u << (c->OW - j0)) - 1u);
      if (ip) qdw3_block(q, j0, &in);
      in.ih0 = oh - c->pt;
      qdw3_step(q, w, ix, vc, pad + (oh - o0) * q->wp, j0, acc, oh - o0, k, 4, mode, tk, &lo, &hi, cy, cys, &in, ip, &flo, &fhi);
    }
  for (; oh < o1; oh++)
    for (j0 = 0; j0 < c->OW; j0 += 16) {
      __mmask16 k = c->OW - j0 >= 16 ? 0xffff : (__mmask16)((1u << (c->OW - j0)) - 1u);
      if (ip) qdw3_block(q, j0, &in);
      in.ih0 = oh * c->sh - c->pt;
      qdw3_step(q, w, ix, vc, pad + (oh - o0) * c->sh * q->wp, j0, acc, oh - o0, k, 1, mode, tk, &lo, &hi, cy, cys,
                &in, ip, &flo, &fhi);
    }
  if (mode == QDW3_RANGE) {
    int32_t l = _mm512_reduce_min_epi32(lo), h = _mm512_reduce_max_epi32(hi);
    rng[0] = l < rng[0] ? l : rng[0];
    rng[1] = h > rng[1] ? h : rng[1];
  }
  if (mode == QDW3_FLOAT && tk->dq) /* merged only where strictly wider, as the tail's */
    mi__blis_ftail_merge(&q->hs, _mm512_reduce_min_ps(flo), _mm512_reduce_max_ps(fhi));
}
/* The passes' kernels: xp non-NULL reads the plane in place (pad unused), else the padded rows. */
QDW3_T512 static void qdw3_rows512(const qdw_t *q, int64_t m, int32_t zxu, const uint8_t *pad, const uint8_t *xp,
                                   int64_t o0, int64_t o1, int32_t *acc) {
  if (xp) qdw3_body(q, m, zxu * q->vsum[m], pad, o0, o1, acc, QDW3_SUMS, NULL, NULL, NULL, 0, xp, zxu, 1);
  else
    qdw3_body(q, m, zxu * q->vsum[m], pad, o0, o1, acc, QDW3_SUMS, NULL, NULL, NULL, 0, NULL, zxu, 0);
}
QDW3_T512 static void qdw3_range512(const qdw_t *q, int64_t m, int32_t zxu, const uint8_t *pad, const uint8_t *xp,
                                    int64_t o0, int64_t o1, int32_t *rng) {
  if (xp) qdw3_body(q, m, zxu * q->vsum[m], pad, o0, o1, NULL, QDW3_RANGE, NULL, rng, NULL, 0, xp, zxu, 1);
  else
    qdw3_body(q, m, zxu * q->vsum[m], pad, o0, o1, NULL, QDW3_RANGE, NULL, rng, NULL, 0, NULL, zxu, 0);
}
QDW3_T512 static void qdw3_codes512(const qdw_t *q, const qdw_task_t *t, int64_t m, const uint8_t *pad,
                                    const uint8_t *xp, int64_t o0, int64_t o1, uint8_t *cy, int64_t cys) {
  qdw3_k_t k; /* the constants in registers: the code stores cannot alias a local whose address stays here */
  k.fs = _mm512_set1_ps(t->fs);
  k.fb = _mm512_set1_ps(q->tb ? q->tb[m] : 0.f);
  k.z = _mm512_setzero_ps();
  k.rcp = _mm512_set1_ps(1.f / t->scale); /* as the quantize pass's */
  k.zf = _mm512_set1_ps((float)t->zp);
  k.qs = _mm512_set1_ps(t->scale);
  k.qz = _mm512_set1_epi32(t->zp);
  k.has_b = q->tb != NULL;
  k.relu = q->relu;
  if (xp) qdw3_body(q, m, t->zxu * q->vsum[m], pad, o0, o1, NULL, QDW3_CODES, &k, NULL, cy, cys, xp, t->zxu, 1);
  else
    qdw3_body(q, m, t->zxu * q->vsum[m], pad, o0, o1, NULL, QDW3_CODES, &k, NULL, cy, cys, NULL, t->zxu, 0);
}

QDW3_T512 static void qdw3_float512(const qdw_t *q, const qdw_task_t *t, int64_t m, const uint8_t *pad,
                                    const uint8_t *xp, int64_t o0, int64_t o1, float *fy) {
  qdw3_k_t k;
  memset(&k, 0, sizeof k);
  k.fs = _mm512_set1_ps(t->fs);
  k.fb = _mm512_set1_ps(q->tb ? q->tb[m] : 0.f);
  k.z = _mm512_setzero_ps();
  k.has_b = q->tb != NULL;
  k.relu = q->relu;
  k.dq = q->hs.track;
  k.fy = fy;
  if (xp) qdw3_body(q, m, t->zxu * q->vsum[m], pad, o0, o1, NULL, QDW3_FLOAT, &k, NULL, NULL, 0, xp, t->zxu, 1);
  else
    qdw3_body(q, m, t->zxu * q->vsum[m], pad, o0, o1, NULL, QDW3_FLOAT, &k, NULL, NULL, 0, NULL, t->zxu, 0);
}

/* n sums of channel m to y at element offset off: codes, int32 sums or the float tail. */
static void qdw_out(const qdw_task_t *t, int64_t m, const int32_t *acc, int64_t n, int64_t off) {
  const qdw_t *q = t->q;
  if (q->out == QDW_CODES)
    mi__blis_requant(q->g.simd, acc, n, q->mult + m, q->bias + m, 0, q->zy, q->y_u8, t->y + off);
  else if (q->out == QDW_INT32)
    memcpy((int32_t *)t->y + off, acc, (size_t)n * sizeof *acc);
  else
    mi__blis_qv_ftail(q->g.simd, acc, n, t->fs, q->tb != NULL, q->tb ? q->tb[m] : 0.f, t->res ? t->res + off : NULL,
                      q->relu, &q->hs, (float *)t->y + off);
}

/* A tail qdw3_body takes in registers: Cast, Mul, [bias], [Relu]. */
static int qdw3_plain_tail(const mi__blis_hsw_t *h) { return !h->has_am && !h->has_ac && !h->on && h->nact == 0; }

/* 1 when channel m's rows take the 3-tap kernel (qdw3_body). */
static int qdw3_takes(const qdw_t *q, int64_t m) { return q->g.KH == 3 && q->nq == 1 && q->wd[m] == 0; }

/* The padded input rows of output rows o0..o1, xp the input plane. */
static void qdw_strip_pad(const qdw_t *q, int32_t zxu, const uint8_t *xp, int64_t o0, int64_t o1, uint8_t *pad) {
  const mi__blis_conv_t *c = &q->g;
  qdw_pad_rows(q, zxu, xp, o0 * c->sh - c->pt, (o1 - o0 - 1) * c->sh + (c->KH - 1) * c->dh + 1, pad);
}

/* Input rows for the 3-tap kernel's strip o0..o1: the plane in place where its codes are UINT8 (no
 * sign flip to apply) and the kernel's; else the rows padded into pad, and NULL. */
static const uint8_t *qdw3_rows_in(const qdw_t *q, int32_t zxu, const uint8_t *xp, int64_t o0, int64_t o1,
                                   uint8_t *pad) {
  if (q->flip == 0) return xp;
  qdw_strip_pad(q, zxu, xp, o0, o1, pad);
  return NULL;
}

/* The sums of output rows o0..o1 (at most q->rows) of channel m, xp its input plane. */
static void qdw_strip(const qdw_t *q, int32_t zxu, const uint8_t *xp, int64_t m, int64_t o0, int64_t o1,
                      uint8_t *pad, int32_t *acc) {
  if (qdw3_takes(q, m)) {
    qdw3_rows512(q, m, zxu, pad, qdw3_rows_in(q, zxu, xp, o0, o1, pad), o0, o1, acc);
    return;
  }
  qdw_strip_pad(q, zxu, xp, o0, o1, pad);
  qdw_rows512(q, m, zxu * q->vsum[m], pad, o0, o1, acc);
}

/* Items are (image, output channel) planes, each in strips of q->rows output rows. */
static void qdw_part(void *arg, int64_t p0, int64_t p1) {
  const qdw_task_t *t = arg;
  const qdw_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  uint8_t pad[QDW_ROWS_BYTES + QDW_PAD_SLACK];
  int32_t acc[QDW_ACC_INTS];
  int64_t pl, o0, dm = c->M / c->C, ohw = c->OH * c->OW;
  for (pl = p0; pl < p1; pl++) {
    int64_t n = pl / c->M, m = pl % c->M;
    const uint8_t *xp = t->x + (n * c->C + m / dm) * c->H * c->W;
    for (o0 = 0; o0 < c->OH; o0 += q->rows) {
      int64_t o1 = o0 + q->rows < c->OH ? o0 + q->rows : c->OH;
      if (q->out == QDW_TAIL && !t->res && qdw3_takes(q, m) && qdw3_plain_tail(&q->hs)) { /* floats from registers */
        qdw3_float512(q, t, m, pad, qdw3_rows_in(q, t->zxu, xp, o0, o1, pad), o0, o1,
                      (float *)t->y + pl * ohw + o0 * c->OW);
        continue;
      }
      qdw_strip(q, t->zxu, xp, m, o0, o1, pad, acc);
      qdw_out(t, m, acc, (o1 - o0) * c->OW, pl * ohw + o0 * c->OW);
    }
  }
}

/* First pass of q->codes: each plane's int32 range. */
static void qdw_range_part(void *arg, int64_t p0, int64_t p1) {
  const qdw_task_t *t = arg;
  const qdw_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  uint8_t pad[QDW_ROWS_BYTES + QDW_PAD_SLACK];
  int32_t acc[QDW_ACC_INTS], *out;
  int64_t pl, o0, dm = c->M / c->C;
  for (pl = p0; pl < p1; pl++) {
    const uint8_t *xp = t->x + (pl / c->M * c->C + pl % c->M / dm) * c->H * c->W;
    out = (int32_t *)q->rng + pl * 2; /* the step's writable block, one pair per plane */
    out[0] = INT32_MAX;
    out[1] = INT32_MIN;
    for (o0 = 0; o0 < c->OH; o0 += q->rows) {
      int64_t o1 = o0 + q->rows < c->OH ? o0 + q->rows : c->OH;
      if (qdw3_takes(q, pl % c->M)) { /* the range in registers, no sums stored */
        qdw3_range512(q, pl % c->M, t->zxu, pad, qdw3_rows_in(q, t->zxu, xp, o0, o1, pad), o0, o1, out);
        continue;
      }
      qdw_strip(q, t->zxu, xp, pl % c->M, o0, o1, pad, acc);
      mi__blis_acc_range(c->simd, acc, (o1 - o0) * c->OW, out);
    }
  }
}

/* Second pass: the sums again, through the tail into L1 and straight to codes (in registers where
 * the 3-tap kernel and a plain tail allow). */
static void qdw_codes_part(void *arg, int64_t p0, int64_t p1) {
  const qdw_task_t *t = arg;
  const qdw_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  uint8_t pad[QDW_ROWS_BYTES + QDW_PAD_SLACK];
  int32_t acc[QDW_ACC_INTS];
  float f[QDW_ACC_INTS];
  int64_t pl, o0, dm = c->M / c->C, ohw = c->OH * c->OW;
  for (pl = p0; pl < p1; pl++) {
    int64_t m = pl % c->M;
    const uint8_t *xp = t->x + (pl / c->M * c->C + m / dm) * c->H * c->W;
    for (o0 = 0; o0 < c->OH; o0 += q->rows) {
      int64_t o1 = o0 + q->rows < c->OH ? o0 + q->rows : c->OH, n = (o1 - o0) * c->OW;
      if (qdw3_takes(q, m) && qdw3_plain_tail(&q->hs1)) { /* output row o0's codes, at its padded place */
        const mi__blis_hsw_t *h = &q->hs;
        uint8_t *cy = h->pad ? t->codes + (pl * h->oh + h->pt + o0) * h->ow + h->pl : t->codes + pl * ohw + o0 * c->OW;
        qdw3_codes512(q, t, m, pad, qdw3_rows_in(q, t->zxu, xp, o0, o1, pad), o0, o1, cy, h->pad ? h->ow : c->OW);
        continue;
      }
      qdw_strip(q, t->zxu, xp, m, o0, o1, pad, acc);
      mi__blis_qv_ftail(c->simd, acc, n, t->fs, q->tb != NULL, q->tb ? q->tb[m] : 0.f, NULL, q->relu, &q->hs1, f);
      mi__blis_dynq_put(&q->hs, c->simd, f, pl * ohw + o0 * c->OW, n, t->codes, t->scale, t->zp);
    }
  }
}

/* Both passes, then the scale and zero point as DynamicQuantizeLinear's from the ends' range. */
static void run_qdw_codes(qdw_task_t *task, void *const *t, const mi__blis_env_t *env) {
  const qdw_t *q = task->q;
  const mi__blis_conv_t *c = &q->g;
  float lo = 0.f, hi = 0.f;
  int64_t work = c->OH * c->OW * c->KH * c->KW, pl;
  mi__blis_parallel(env, c->N * c->M, 1, work, qdw_range_part, task);
  for (pl = 0; pl < c->N * c->M; pl++) {
    int64_t m = pl % c->M;
    mi__blis_ftail_ends(c->simd, q->rng[2 * pl], q->rng[2 * pl + 1], task->fs, q->tb != NULL, q->tb ? q->tb[m] : 0.f,
                        q->relu, &q->hs1, &lo, &hi);
  }
  task->codes = mi__blis_dynq_start(&q->hs, t, lo, hi, &task->scale, &task->zp);
  mi__blis_parallel(env, c->N * c->M, 1, work, qdw_codes_part, task);
}

static int32_t run_qdw(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  qdw_task_t task;
  const mi__blis_conv_t *c;
  (void)err;
  task.q = s->state;
  c = &task.q->g;
  task.x = t[c->x];
  task.y = t[c->y];
  task.zxu = task.q->zx_t >= 0 ? (*(const uint8_t *)t[task.q->zx_t] ^ task.q->flip) & 0xff : task.q->zxu;
  task.fs = task.q->out == QDW_TAIL ? *(const float *)t[task.q->scale_t] : 0.f;
  task.res = task.q->out == QDW_TAIL && task.q->res_t >= 0 ? t[task.q->res_t] : NULL;
  if (task.q->codes && fabsf(task.fs) <= 0x1p64f) { /* |sum * scale| stays finite; else the plane */
    run_qdw_codes(&task, t, env);
    return MI_OK;
  }
  if (task.q->codes) {
    int32_t rc = mi__blis_plane_open(env, c->y, err);
    if (rc != MI_OK) return rc;
  }
  mi__blis_ftail_begin(&task.q->hs, env);
  mi__blis_parallel(env, c->N * c->M, 1, c->OH * c->OW * c->KH * c->KW, qdw_part, &task);
  mi__blis_ftail_end(&task.q->hs, t, env, c->simd);
  if (task.q->codes) mi__blis_plane_close(env, c->y);
  return MI_OK;
}

const mi__blis_conv_t *mi__blis_qdw_codes_geom(const mi__blis_step_t *s) {
  const qdw_t *q = s->state;
  return (s->run == run_qdw || mi__blis_qblock_runs(s)) && q->out == QDW_CODES && q->zx_t < 0 ? &q->g : NULL;
}

void mi__blis_qdw_codes_rows(const mi__blis_step_t *s, const uint8_t *x, int64_t n, int64_t m, int64_t o0, int64_t o1,
                             uint8_t *y) {
  const qdw_t *q = s->state;
  const mi__blis_conv_t *c = &q->g;
  uint8_t pad[QDW_ROWS_BYTES + QDW_PAD_SLACK];
  int32_t acc[QDW_ACC_INTS];
  const uint8_t *xp = x + (n * c->C + m / (c->M / c->C)) * c->H * c->W;
  for (int64_t a = o0; a < o1; a += q->rows) {
    int64_t b = a + q->rows < o1 ? a + q->rows : o1;
    qdw_strip(q, q->zxu, xp, m, a, b, pad, acc);
    mi__blis_requant(c->simd, acc, (b - a) * c->OW, q->mult + m, q->bias + m, 0, q->zy, q->y_u8, y + (a - o0) * c->OW);
  }
}

/* The geometry of this path, or 0: NCHW depthwise, the lanes' taps inside one 64-byte load,
 * and a strip of at least one output row in the scratch. Sets wp, rows and nq. */
static int qdw_geometry(qdw_t *q) {
  const mi__blis_conv_t *c = &q->g;
  int64_t owr = (c->OW + 15) / 16 * 16, in_rows;
  q->nq = (int32_t)((c->KW + 3) / 4);
  if (c->nhwc_in || c->nhwc_out || c->G != c->C || c->G < 2 || c->M % c->C || q->nq > QDW_MAX_QUADS) return 0;
  /* dilated kernels index the same way, but no test covers them yet: the generic path takes them */
  if (c->dh != 1 || c->dw != 1 || 15 * c->sw + (4 * q->nq - 1) * c->dw > 63) return 0;
  /* a padded row holds the left padding and the image row, and every lane's 64-byte load */
  q->wp = (owr - 16) * c->sw + 64;
  if (q->wp < c->pl + c->W) q->wp = c->pl + c->W;
  q->rows = QDW_ACC_INTS / owr < c->OH ? QDW_ACC_INTS / owr : c->OH;
  for (; q->rows > 0; q->rows--) {
    in_rows = (q->rows - 1) * c->sh + (c->KH - 1) * c->dh + 1;
    if (in_rows * q->wp <= QDW_ROWS_BYTES) break;
  }
  return q->rows > 0;
}

/* 1 when the CPU runs this path and the int8_dot knob leaves it the choice (auto, or the byte
 * core that vpdpbusd is, or its AMX form): the other values of the knob pin the generic path. */
static int qdw_cpu(const mi__blis_prep_t *p) {
  int64_t v = mi_sdk_knob_int(p->desc, "int8_dot", 0);
  if (v > 0 && v < p->ctx->qdot_n && p->ctx->qdot_ids[v] < MI__QDOT_VNNI_U8) return 0;
  return mi__blis_qdot_level(p->ctx->cpu.isa, mi__blis_simd_level(p->ctx->cpu.isa)) >= MI__QDOT_VNNI_U8 &&
         __builtin_cpu_supports("avx512vbmi");
}

/* The output stage, as the GEMM path's: mult = sx * sw / sy and bias = b / sy per channel; 0 when
 * a scale or the bias is not of a form this path takes (the generic path says why). */
static int qdw_stage(const mi__blis_prep_t *p, const mi_node_desc_t *n, qdw_t *q) {
  const mi_tensor_desc_t *x = mi__blis_tensor(p, q->g.x), *w = mi__blis_tensor(p, q->g.w);
  const mi_tensor_desc_t *y = mi__blis_tensor(p, q->g.y), *b = mi__blis_tensor(p, mi__blis_in(n, 2));
  int64_t m, bn = b ? mi_sdk_numel(b) : 0;
  if (!(x->scale > 0.f) || !(y->scale > 0.f)) return 0;
  if (w->channel_count != 0 && (!w->channel_scales || w->channel_count != (uint32_t)q->g.M)) return 0;
  if (b && (!b->data || b->dtype != MI_DTYPE_FLOAT32 || (bn != 1 && bn != q->g.M))) return 0;
  for (m = 0; m < q->g.M; m++) {
    double sw = (double)(w->channel_count ? w->channel_scales[m] : w->scale);
    if (!(sw > 0.)) return 0;
    q->mult[m] = (double)x->scale * sw / (double)y->scale;
    q->bias[m] = b ? (double)((const float *)b->data)[bn == 1 ? 0 : m] / (double)y->scale : 0.;
  }
  return 1;
}

/* The step's state for the layer src describes, its weights stored; NULL (and err clear) when
 * this path does not apply: the generic path then builds the step afresh and says what it refuses. */
static qdw_t *qdw_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, src->x), *w = mi__blis_tensor(p, src->w);
  qdw_t probe, *q;
  int64_t m, kh, kw, qi, j, t, taps;
  if (!qdw_cpu(p) || !x || !w || !w->data || !mi__blis_is_q8(x) ||
      (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_INT4 && w->dtype != MI_DTYPE_UINT8))
    return NULL;
  memset(&probe, 0, sizeof probe);
  probe.g.x = src->x;
  probe.g.w = src->w;
  probe.g.y = src->y;
  probe.g.simd = mi__blis_simd_level(p->ctx->cpu.isa);
  if (mi__blis_conv_geom(p, n, &probe.g, err) != MI_OK || !qdw_geometry(&probe)) {
    memset(err, 0, sizeof *err);
    return NULL;
  }
  taps = probe.g.KH * probe.g.KW;
  if (!(q = mi__blis_state_new(p, s,
                               sizeof *q + (uint64_t)probe.g.M * (2 * sizeof(double) + 2 * sizeof(int32_t) + sizeof(float)) +
                                   (uint64_t)(probe.g.M * probe.g.KH * probe.nq + 2 * probe.g.N * probe.g.M) * sizeof(int32_t),
                               err)))
    return NULL;
  *q = probe;
  q->mult = (double *)(q + 1);
  q->bias = q->mult + q->g.M;
  q->vsum = (int32_t *)(q->bias + q->g.M);
  q->wd = q->vsum + q->g.M;
  q->wq = q->wd + q->g.M;
  q->tb = (float *)(q->wq + q->g.M * q->g.KH * q->nq);
  q->rng = (int32_t *)(q->tb + q->g.M);
  q->flip = x->dtype == MI_DTYPE_UINT8 ? 0 : 0x80;
  q->zxu = (src->zx ^ q->flip) & 0xff;
  q->zx_t = src->zx_t;
  for (m = 0; m < q->g.M; m++) {
    if (!mi__blis_qbyte_shift(src, w, m, m * taps, taps, 1, &q->wd[m])) goto refuse;
    for (kh = 0; kh < q->g.KH; kh++)
      for (kw = 0; kw < q->g.KW; kw++) {
        int32_t v = mi__blis_qwval(src, w, (m * q->g.KH + kh) * q->g.KW + kw, m);
        uint8_t *d = (uint8_t *)&q->wq[(m * q->g.KH + kh) * q->nq + kw / 4] + kw % 4; /* x86: little endian */
        *d = (uint8_t)(int8_t)(v - q->wd[m]);
        q->vsum[m] += v;
      }
  }
  for (qi = 0; qi < q->nq; qi++) {
    for (t = 0; t < 4; t++) q->ones[qi] |= (4 * qi + t < q->g.KW ? 1 : 0) << (8 * t);
    for (j = 0; j < 16; j++)
      for (t = 0; t < 4; t++) /* taps past KW have weight 0: any byte of the load serves */
        q->idx[qi][j * 4 + t] = (uint8_t)(4 * qi + t < q->g.KW ? j * q->g.sw + (4 * qi + t) * q->g.dw : 0);
  }
  s->run = run_qdw;
  return q;
refuse:
  mi__blis_free(p->ctx, s->state);
  s->state = NULL;
  return NULL;
}

int32_t mi__blis_prep_qdw(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  mi__blis_qsrc_t src;
  qdw_t *q;
  *taken = 0;
  if ((p->desc->node_count != 1 && !mi__blis_qblock_desc(p)) || !x || !y || !w || !mi__blis_is_q8(y) ||
      w->dtype == MI_DTYPE_UINT8 ||
      w->zero_point != 0)
    return MI_OK;
  memset(&src, 0, sizeof src);
  src.x = mi__blis_in(n, 0);
  src.w = mi__blis_in(n, 1);
  src.y = mi__blis_out(n, 0);
  src.zx = x->zero_point;
  src.zx_t = -1;
  if (!(q = qdw_new(p, s, &src, err))) return err->code ? err->code : MI_OK;
  if (!qdw_stage(p, n, q)) { /* the generic path builds the step's state afresh */
    mi__blis_free(p->ctx, s->state);
    s->state = NULL;
    return MI_OK;
  }
  q->out = QDW_CODES;
  q->zy = y->zero_point;
  q->y_u8 = y->dtype == MI_DTYPE_UINT8;
  *taken = 1;
  return MI_OK;
}

int32_t mi__blis_prep_qdw_int(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src, int *taken,
                              mi_error_t *err) {
  const mi_tensor_desc_t *y = mi__blis_tensor(p, src->y);
  qdw_t *q;
  int64_t m;
  *taken = 0;
  if (!src->out32 || src->ibias || p->desc->node_count != 1 + src->tail || !y ||
      y->dtype != (src->tail ? MI_DTYPE_FLOAT32 : MI_DTYPE_INT32))
    return MI_OK;
  if (!(q = qdw_new(p, s, src, err))) return err->code ? err->code : MI_OK;
  q->out = src->tail ? QDW_TAIL : QDW_INT32;
  q->relu = src->relu;
  q->hs = src->hs;
  q->scale_t = src->scale_t;
  q->res_t = src->res_t;
  q->hs1 = src->hs;
  q->hs1.dq = 0;
  q->codes = mi__blis_ftail_codes(p, src, q->g.KH * q->g.KW);
  /* codes from the sums: the floats are written only where the scale is out of range (run_qdw) */
  if (q->codes) mi__blis_plane_mark(p, src->y, MI__PLANE_RESERVED);
  for (m = 0; m < q->g.M; m++) q->tb[m] = src->tb ? src->tb[src->ntb == 1 ? 0 : m] : 0.f;
  if (!src->tb) q->tb = NULL;
  p->nodes_used = 1 + src->tail;
  *taken = 1;
  return MI_OK;
}
