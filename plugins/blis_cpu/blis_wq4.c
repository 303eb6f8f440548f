/* blis_wq4.c - the weight-only MatMul on 4-bit codes: a DequantizeLinear of codes that fit 4 bits
 * (ONNX Runtime's MatMulNBits, lowered by the session; opset 21's INT4 with block_size), kept two
 * a byte in 64-column panels, with a scale and zero point per block of K rows and column. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "blis_wq.h"

#define AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define AVX2_FN __attribute__((target("avx2,fma")))

/* Why: a decoding step's 1-row product is memory-bound; the folded float weights read 8 times the
 * bytes of these codes. Each weight is (float)(q - z) * s, the value the fold writes (q - z is
 * exact, one rounding of the product), so only the order of the sums differs from the folded
 * path. Panel row layout (32 bytes for 64 columns): half h (columns 32h..32h+31) in bytes
 * 16h..16h+15, column 32h + c at byte 16h + c % 16, low nibble for c < 16, high for c >= 16:
 * one 16-byte load widened to 16 lanes gives two vectors of 16 columns by a mask and a shift. */

static inline int code_at(const uint8_t *row, int c) {
  int h = c / 32, cc = c % 32;
  return (row[16 * h + cc % 16] >> (4 * (cc / 16))) & 0xf;
}

static void panel_c(const wq_t *q, const float *a, float *y, int64_t p) {
  const uint8_t *pan = q->pk + p * q->k * WQ4_ROW;
  int64_t j0 = p * WQ_P, w = q->n - j0 < WQ_P ? q->n - j0 : WQ_P, ld = q->np * WQ_P;
  for (int64_t r = 0; r < q->m; r++) {
    float acc[WQ_P] = {0};
    for (int64_t b = 0; b < q->nb; b++) {
      const float *s = q->s + b * ld + j0;
      const uint8_t *z = q->zb + b * ld + j0;
      int64_t k1 = (b + 1) * q->bs < q->k ? (b + 1) * q->bs : q->k;
      for (int64_t kk = b * q->bs; kk < k1; kk++) {
        const uint8_t *row = pan + kk * WQ4_ROW;
        float av = a[r * q->k + kk];
        for (int c = 0; c < WQ_P; c++) acc[c] += av * (((float)code_at(row, c) - (float)z[c]) * s[c]);
      }
    }
    memcpy(y + r * q->n + j0, acc, (size_t)w * sizeof(float));
  }
}

/* ---- AVX-512: the panel's 4 vectors of 16 columns, R rows of A */
static inline __attribute__((always_inline)) AVX512_FN void rows512(const wq_t *q, const float *a, float *y,
                                                                    int64_t p, int64_t r0, const int R) {
  const uint8_t *pan = q->pk + p * q->k * WQ4_ROW;
  int64_t j = p * WQ_P, ld = q->np * WQ_P;
  const __m512i lo = _mm512_set1_epi32(0xf);
  __m512 acc[WQ_ROWS][4];
  for (int v = 0; v < 4; v++)
    for (int r = 0; r < R; r++) acc[r][v] = _mm512_setzero_ps();
  for (int64_t b = 0; b < q->nb; b++) {
    __m512 sv[4], zv[4];
    for (int v = 0; v < 4; v++) {
      sv[v] = _mm512_loadu_ps(q->s + b * ld + j + 16 * v);
      zv[v] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(q->zb + b * ld + j + 16 * v))));
    }
    int64_t k1 = (b + 1) * q->bs < q->k ? (b + 1) * q->bs : q->k;
    for (int64_t kk = b * q->bs; kk < k1; kk++) {
      const uint8_t *row = pan + kk * WQ4_ROW;
      for (int h = 0; h < 2; h++) {
        __m512i i = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + 16 * h)));
        __m512i c[2] = {_mm512_and_si512(i, lo), _mm512_srli_epi32(i, 4)};
        for (int u = 0; u < 2; u++) {
          int v = 2 * h + u;
          __m512 wv = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(c[u]), zv[v]), sv[v]);
          for (int r = 0; r < R; r++)
            acc[r][v] = _mm512_fmadd_ps(_mm512_set1_ps(a[(r0 + r) * q->k + kk]), wv, acc[r][v]);
        }
      }
    }
  }
  for (int v = 0; v < 4; v++) {
    int64_t left = q->n - j - 16 * v;
    __mmask16 mk = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                                             : 0;
    for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(y + (r0 + r) * q->n + j + 16 * v, mk, acc[r][v]);
  }
}

static AVX512_FN void panel_512(const wq_t *q, const float *a, float *y, int64_t p) {
  for (int64_t r0 = 0; r0 < q->m; r0 += WQ_ROWS) switch (q->m - r0) {
    case 1: rows512(q, a, y, p, r0, 1); break;
    case 2: rows512(q, a, y, p, r0, 2); break;
    case 3: rows512(q, a, y, p, r0, 3); break;
    default: rows512(q, a, y, p, r0, 4); break;
    }
}

/* ---- AVX2: half a panel (32 columns, 4 vectors of 8) at a time, R rows */
static inline __attribute__((always_inline)) AVX2_FN void rows256(const wq_t *q, const float *a, float *y,
                                                                  int64_t p, int64_t h, int64_t r0, const int R) {
  const uint8_t *pan = q->pk + p * q->k * WQ4_ROW + 16 * h;
  int64_t j = p * WQ_P + 32 * h, ld = q->np * WQ_P;
  const __m256i lo = _mm256_set1_epi32(0xf);
  __m256 acc[2][4];
  for (int v = 0; v < 4; v++)
    for (int r = 0; r < R; r++) acc[r][v] = _mm256_setzero_ps();
  for (int64_t b = 0; b < q->nb; b++) {
    __m256 sv[4], zv[4];
    for (int v = 0; v < 4; v++) {
      sv[v] = _mm256_loadu_ps(q->s + b * ld + j + 8 * v);
      zv[v] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q->zb + b * ld + j + 8 * v))));
    }
    int64_t k1 = (b + 1) * q->bs < q->k ? (b + 1) * q->bs : q->k;
    for (int64_t kk = b * q->bs; kk < k1; kk++) {
      const uint8_t *row = pan + kk * WQ4_ROW;
      for (int e = 0; e < 2; e++) { /* bytes 8e..8e+7: columns 8e.. (low nibbles), 16 + 8e.. (high) */
        __m256i i = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + 8 * e)));
        __m256i c[2] = {_mm256_and_si256(i, lo), _mm256_srli_epi32(i, 4)};
        for (int u = 0; u < 2; u++) {
          int v = e + 2 * u;
          __m256 wv = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(c[u]), zv[v]), sv[v]);
          for (int r = 0; r < R; r++)
            acc[r][v] = _mm256_fmadd_ps(_mm256_set1_ps(a[(r0 + r) * q->k + kk]), wv, acc[r][v]);
        }
      }
    }
  }
  for (int v = 0; v < 4; v++) {
    int64_t left = q->n - j - 8 * v;
    for (int r = 0; r < R; r++) {
      float *dst = y + (r0 + r) * q->n + j + 8 * v, tmp[8];
      if (left >= 8) {
        _mm256_storeu_ps(dst, acc[r][v]);
      } else if (left > 0) {
        _mm256_storeu_ps(tmp, acc[r][v]);
        memcpy(dst, tmp, (size_t)left * sizeof(float));
      }
    }
  }
}

static AVX2_FN void panel_256(const wq_t *q, const float *a, float *y, int64_t p) {
  for (int64_t h = 0; h < 2 && p * WQ_P + 32 * h < q->n; h++)
    for (int64_t r0 = 0; r0 < q->m; r0 += 2) {
      if (q->m - r0 == 1) rows256(q, a, y, p, h, r0, 1);
      else
        rows256(q, a, y, p, h, r0, 2);
    }
}

void mi__blis_wq4_panel(const wq_t *q, const float *a, float *y, int64_t p) {
  switch (q->simd) {
  case MI__SIMD_AVX512: panel_512(q, a, y, p); break;
  case MI__SIMD_AVX2: panel_256(q, a, y, p); break;
  default: panel_c(q, a, y, p); break;
  }
}

/* Code i of an INT8 / UINT8 / packed INT4 constant, shifted into 0..15 (the signed ones by +8);
 * -1 when outside. */
static int code4(const mi_tensor_desc_t *t, int64_t i) {
  int v;
  if (t->dtype == MI_DTYPE_INT4) return ((((const uint8_t *)t->data)[i / 2] >> (4 * (i & 1))) & 0xf) ^ 8;
  v = t->dtype == MI_DTYPE_INT8 ? ((const int8_t *)t->data)[i] + 8 : ((const uint8_t *)t->data)[i];
  return v >= 0 && v <= 15 ? v : -1;
}

/* Where the scale of (block b, column j) sits in the scale tensor: per tensor, per column, or
 * blocks along K (codes [K, N]: scales [nb, N]; transB codes [N, K]: [N, nb]). */
typedef struct layout {
  int64_t bs, nb;
  int kind; /* 0 per tensor, 1 per column, 2 blocked */
} layout_t;

static int64_t param_index(const layout_t *l, int tb, int64_t n, int64_t b, int64_t j) {
  if (l->kind == 0) return 0;
  if (l->kind == 1) return j;
  return tb ? j * l->nb + b : b * n + j;
}

static int find_layout(const mi_node_desc_t *dq, const mi_tensor_desc_t *st, const mi_tensor_desc_t *w, int tb,
                       int64_t k, int64_t n, layout_t *l) {
  int64_t ns = mi_sdk_numel(st), axis = mi_sdk_attr_int(dq, "axis", 1), bs = mi_sdk_attr_int(dq, "block_size", 0);
  if (axis < 0) axis += 2;
  l->bs = k;
  l->nb = 1;
  if (ns == 1) l->kind = 0;
  else if (bs <= 0 && st->rank == 1 && axis == (tb ? 0 : 1) && ns == n)
    l->kind = 1;
  else if (bs > 0 && st->rank == 2 && axis == (tb ? 1 : 0) && st->dims[tb ? 0 : 1] == n &&
           st->dims[tb ? 1 : 0] == (k + bs - 1) / bs) {
    l->kind = 2;
    l->bs = bs;
    l->nb = (k + bs - 1) / bs;
  } else
    return 0;
  (void)w;
  return 1;
}

int mi__blis_wq4_prepare(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *dq,
                         const mi_tensor_desc_t *w, int tb, wq_t *q) {
  const mi_tensor_desc_t *st = mi__blis_tensor(p, mi__blis_in(dq, 1)), *zt = mi__blis_tensor(p, mi__blis_in(dq, 2));
  int64_t k = q->k, n = q->n, np = q->np, cnt = mi_sdk_numel(w), ld = np * WQ_P;
  layout_t l;
  if (!st || !st->data || st->dtype != MI_DTYPE_FLOAT32 || (zt && (!zt->data || zt->dtype != w->dtype)))
    return 0;
  if (zt && mi_sdk_numel(zt) != mi_sdk_numel(st)) return 0;
  if (!find_layout(dq, st, w, tb, k, n, &l)) return 0;
  for (int64_t i = 0; i < cnt; i++)
    if (code4(w, i) < 0) return 0;
  for (int64_t i = 0; zt && i < mi_sdk_numel(zt); i++)
    if (code4(zt, i) < 0) return 0;
  /* one block: scales [nb][ld] floats, zero points [nb][ld] bytes, then the panels */
  uint64_t sb = (uint64_t)(l.nb * ld) * sizeof(float), zb = (uint64_t)(l.nb * ld);
  uint8_t *aux = mi__blis_calloc(p->ctx, sb + zb + (uint64_t)(np * k * WQ4_ROW));
  if (!aux) return -1;
  s->aux = aux;
  float *sc = (float *)aux;
  uint8_t *zp = aux + sb, *pk = aux + sb + zb;
  for (int64_t b = 0; b < l.nb; b++)
    for (int64_t j = 0; j < n; j++) {
      int64_t at = param_index(&l, tb, n, b, j);
      sc[b * ld + j] = ((const float *)st->data)[at];
      /* no zero point: 0, which INT8 codes shifted by 8 read as 8 */
      zp[b * ld + j] = (uint8_t)(zt ? code4(zt, at) : w->dtype == MI_DTYPE_INT8 ? 8
                                                                                : 0);
    }
  for (int64_t pp = 0; pp < np; pp++)
    for (int64_t kk = 0; kk < k; kk++) {
      uint8_t *row = pk + (pp * k + kk) * WQ4_ROW;
      for (int c = 0; c < WQ_P && pp * WQ_P + c < n; c++) {
        int64_t j = pp * WQ_P + c;
        int v = code4(w, tb ? j * k + kk : kk * n + j), h = c / 32, cc = c % 32;
        row[16 * h + cc % 16] |= (uint8_t)(v << (4 * (cc / 16)));
      }
    }
  q->nib = 1;
  q->bs = l.bs;
  q->nb = l.nb;
  q->s = sc;
  q->zb = zp;
  q->pk = pk;
  return 1;
}
