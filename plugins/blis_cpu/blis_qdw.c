/* blis_qdw.c - INT8 depthwise Conv (a lowered QDQ layer, one input channel per group) on AVX-512
 * VNNI with VBMI: sixteen output columns in the lanes, each lane's four taps of one kernel row
 * gathered from a 64-byte load by one byte permute (vpermb) and multiplied by the row's four
 * weights in one vpdpbusd, exact int32 sums, the output stage of the GEMM path (blis_qcore.c).
 * The generic depthwise path (blis_qgemm.c) widens every code to float and runs the float plane:
 * a 3x3 24x128x128 layer of a QDQ face detector took 0.23 ms there, more than its FP32 original's
 * depthwise, pointwise, add and Relu together. Same codes, bit for bit: both compute the exact
 * sum of (x - zx) * w over the taps inside the image and apply mi__blis_requant to it. */
#include <immintrin.h>
#include <string.h>

#include "blis_qgemm.h"

/* Stack scratch of one strip of output rows: its padded input rows and its int32 sums. */
#define QDW_ROWS_BYTES (32 * 1024)
#define QDW_ACC_INTS 4096
#define QDW_MAX_QUADS 4 /* kernel rows up to 16 taps wide */

typedef struct qdw {
  mi__blis_conv_t g;
  int32_t zy, y_u8, flip, zxu;    /* flip: 0x80 makes INT8 codes unsigned; zxu: zx made unsigned */
  int32_t nq;                     /* quads of taps per kernel row */
  int64_t wp, rows;               /* bytes of a padded input row; output rows per strip */
  double *mult, *bias;            /* [M] output stage */
  int32_t *corr;                  /* [M]: zxu * the sum of channel m's weights */
  int32_t *wq;                    /* [M][KH][nq] dwords: taps 4q..4q+3 of a kernel row, 0 past KW */
  uint8_t idx[QDW_MAX_QUADS][64]; /* vpermb index of quad q: lane j, byte t <- j * sw + (4q + t) * dw */
} qdw_t;

typedef struct qdw_task {
  const qdw_t *q;
  const uint8_t *x;
  uint8_t *y;
} qdw_task_t;

/* Input rows r0..r0+n of plane xp as padded rows of wp bytes: zxu left of the image (pl bytes),
 * the codes made unsigned, zxu to the end; rows outside the image all zxu. The zero point's code
 * in the padding adds zxu * w there, which corr takes out with the rest: the padding counts as
 * real zero, as in the reference. 64 bytes a step (the scalar copy was most of the layer). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qdw_pad_rows(const qdw_t *q, const uint8_t *xp,
                                                                              int64_t r0, int64_t n, uint8_t *dst) {
  const mi__blis_conv_t *c = &q->g;
  const __m512i flip = _mm512_set1_epi8((char)q->flip), z = _mm512_set1_epi8((char)q->zxu);
  int64_t r, i;
  for (r = 0; r < n; r++, dst += q->wp) {
    int64_t ih = r0 + r;
    for (i = 0; i < q->wp; i += 64) {
      int64_t left = q->wp - i;
      _mm512_mask_storeu_epi8(dst + i, left >= 64 ? ~0ull : (1ull << left) - 1ull, z);
    }
    if (ih < 0 || ih >= c->H) continue;
    for (i = 0; i < c->W; i += 64) {
      int64_t left = c->W - i;
      __mmask64 k = left >= 64 ? ~0ull : (1ull << left) - 1ull;
      __m512i v = _mm512_maskz_loadu_epi8(k, xp + ih * c->W + i);
      _mm512_mask_storeu_epi8(dst + c->pl + i, k, _mm512_xor_si512(v, flip));
    }
  }
}

/* The sums of output rows o0..o1 of channel m into acc (row stride OW, up to 15 lanes written
 * past each row's end: the next row's, or the scratch's slack). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi"))) static void
qdw_rows512(const qdw_t *q, int64_t m, const uint8_t *pad, int64_t o0, int64_t o1, int32_t *acc) {
  const mi__blis_conv_t *c = &q->g;
  const int32_t *wm = q->wq + m * c->KH * q->nq;
  const __m512i corr = _mm512_set1_epi32(q->corr[m]);
  __m512i ix[QDW_MAX_QUADS];
  int64_t oh, j0, kh, qi;
  for (qi = 0; qi < q->nq; qi++) ix[qi] = _mm512_loadu_si512(q->idx[qi]);
  for (oh = o0; oh < o1; oh++) {
    const uint8_t *row = pad + (oh - o0) * c->sh * q->wp;
    int32_t *ar = acc + (oh - o0) * c->OW;
    for (j0 = 0; j0 < c->OW; j0 += 16) {
      __m512i a = _mm512_setzero_si512();
      for (kh = 0; kh < c->KH; kh++) {
        __m512i v = _mm512_loadu_si512(row + kh * c->dh * q->wp + j0 * c->sw);
        for (qi = 0; qi < q->nq; qi++)
          a = _mm512_dpbusd_epi32(a, _mm512_permutexvar_epi8(ix[qi], v), _mm512_set1_epi32(wm[kh * q->nq + qi]));
      }
      _mm512_storeu_si512(ar + j0, _mm512_sub_epi32(a, corr));
    }
  }
}

/* Items are (image, output channel) planes, each in strips of q->rows output rows. */
static void qdw_part(void *arg, int64_t p0, int64_t p1) {
  const qdw_task_t *t = arg;
  const qdw_t *q = t->q;
  const mi__blis_conv_t *c = &q->g;
  uint8_t pad[QDW_ROWS_BYTES];
  int32_t acc[QDW_ACC_INTS];
  int64_t pl, o0, dm = c->M / c->C, ohw = c->OH * c->OW;
  for (pl = p0; pl < p1; pl++) {
    int64_t n = pl / c->M, m = pl % c->M;
    const uint8_t *xp = t->x + (n * c->C + m / dm) * c->H * c->W;
    for (o0 = 0; o0 < c->OH; o0 += q->rows) {
      int64_t o1 = o0 + q->rows < c->OH ? o0 + q->rows : c->OH;
      qdw_pad_rows(q, xp, o0 * c->sh - c->pt, (o1 - o0 - 1) * c->sh + (c->KH - 1) * c->dh + 1, pad);
      qdw_rows512(q, m, pad, o0, o1, acc);
      mi__blis_requant(c->simd, acc, (o1 - o0) * c->OW, q->mult + m, q->bias + m, 0, q->zy, q->y_u8,
                       t->y + pl * ohw + o0 * c->OW);
    }
  }
}

static int32_t run_qdw(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  qdw_task_t task;
  const mi__blis_conv_t *c;
  (void)err;
  task.q = s->state;
  c = &task.q->g;
  task.x = t[c->x];
  task.y = t[c->y];
  mi__blis_parallel(env, c->N * c->M, 1, c->OH * c->OW * c->KH * c->KW, qdw_part, &task);
  return MI_OK;
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
 * core that vpdpbusd is): the other values of the knob pin the generic path. */
static int qdw_cpu(const mi__blis_prep_t *p) {
  int64_t v = mi_sdk_knob_int(p->desc, "int8_dot", 0);
  if (v > 0 && v < p->ctx->qdot_n && p->ctx->qdot_ids[v] != MI__QDOT_VNNI_U8) return 0;
  return mi__blis_qdot_level(p->ctx->cpu.isa, mi__blis_simd_level(p->ctx->cpu.isa)) == MI__QDOT_VNNI_U8 &&
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

int32_t mi__blis_prep_qdw(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  qdw_t probe, *q;
  int64_t m, kh, kw, qi, j, t;
  *taken = 0;
  if (p->desc->node_count != 1 || !qdw_cpu(p) || !x || !y || !w || !w->data || !mi__blis_is_q8(x) ||
      !mi__blis_is_q8(y) || (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_INT4) || w->zero_point != 0)
    return MI_OK;
  memset(&probe, 0, sizeof probe);
  probe.g.x = mi__blis_in(n, 0);
  probe.g.w = mi__blis_in(n, 1);
  probe.g.y = mi__blis_out(n, 0);
  probe.g.simd = mi__blis_simd_level(p->ctx->cpu.isa);
  if (mi__blis_conv_geom(p, n, &probe.g, err) != MI_OK || !qdw_geometry(&probe)) {
    memset(err, 0, sizeof *err); /* the generic path reports what it refuses */
    return MI_OK;
  }
  if (!(q = mi__blis_state_new(p, s, sizeof *q + (uint64_t)probe.g.M * (2 * sizeof(double) + sizeof(int32_t)) + (uint64_t)(probe.g.M * probe.g.KH * probe.nq) * sizeof(int32_t),
                               err)))
    return MI_ERR_OUT_OF_MEMORY;
  *q = probe;
  q->mult = (double *)(q + 1);
  q->bias = q->mult + q->g.M;
  q->corr = (int32_t *)(q->bias + q->g.M);
  q->wq = q->corr + q->g.M;
  if (!qdw_stage(p, n, q)) { /* the generic path builds the step's state afresh */
    mi__blis_free(p->ctx, s->state);
    s->state = NULL;
    return MI_OK;
  }
  q->flip = x->dtype == MI_DTYPE_UINT8 ? 0 : 0x80;
  q->zxu = (x->zero_point ^ q->flip) & 0xff;
  q->zy = y->zero_point;
  q->y_u8 = y->dtype == MI_DTYPE_UINT8;
  for (m = 0; m < q->g.M; m++)
    for (kh = 0; kh < q->g.KH; kh++)
      for (kw = 0; kw < q->g.KW; kw++) {
        int32_t v = mi__blis_qweight(w, (m * q->g.KH + kh) * q->g.KW + kw);
        uint8_t *d = (uint8_t *)&q->wq[(m * q->g.KH + kh) * q->nq + kw / 4] + kw % 4; /* x86: little endian */
        *d = (uint8_t)(int8_t)v;
        q->corr[m] += q->zxu * v;
      }
  for (qi = 0; qi < q->nq; qi++)
    for (j = 0; j < 16; j++)
      for (t = 0; t < 4; t++) /* taps past KW have weight 0: any byte of the load serves */
        q->idx[qi][j * 4 + t] = (uint8_t)(4 * qi + t < q->g.KW ? j * q->g.sw + (4 * qi + t) * q->g.dw : 0);
  s->run = run_qdw;
  *taken = 1;
  return MI_OK;
}
