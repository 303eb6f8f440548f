/* blis_wq.c - weight-only quantized MatMul / Gemm: B the DequantizeLinear of constant INT8/UINT8
 * codes, the product computed on the codes, widened to float in registers (MI_FUSE_DQ); codes that
 * fit 4 bits go to blis_wq4.c's nibble panels, with blocked scales. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "blis_wq.h"

#define AVX512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define AVX2_FN __attribute__((target("avx2,fma")))

/* Why: a one-row product on the folded FLOAT32 weights is memory-bound, and reads four times the
 * bytes of the codes (Moonshine tiny's decoder head: 37.7 MB a token for 9.4 MB of codes), while
 * the session also keeps the float copy. The plain C panel takes each weight as (float)(q - z) * s,
 * the value the fold writes (the reference's DequantizeLinear: (q - z) * s exact in double, rounded
 * once to float, the same as one float multiply), so only the order of its sums differs from the
 * folded path; the SIMD panels scale each column's sum instead (below). Widening costs instructions, so the codes win where the float weights would come from memory
 * (bench_blis_wq, 2026-12-05, one thread: 1x288x32768 2.4-3.7x, 4 rows 1.7-1.9x, 8 rows 0.90-1.07x) and lose
 * where a few rows of A reuse float weights the cache holds (4x768x3072, 9.4 MB of floats: 0.72x).
 * So: one row always (the decoding step's GEMV, and the memory); 2 to WQ_MAX_M rows only on float
 * weights over WQ_HOT_BYTES (MI_BLIS_WQ_HOT_BYTES overrides it: the tests' small weights); more
 * rows are left to the folded path, whose packed tiles reuse each weight over the rows. */
static int32_t simd_of(const mi__blis_prep_t *p) {
  int64_t si = mi_sdk_knob_int(p->desc, "simd", 0);
  return si > 0 && si < p->ctx->simd_n ? p->ctx->simd_ids[si] : mi__blis_simd_level(p->ctx->cpu.isa);
}

/* ---- plain C: each column's sum in k order, a panel row at a time (the compiler's vectors) */
static void panel_c(const wq_t *q, const float *a, float *y, int64_t p) {
  const uint8_t *pan = q->pk + p * q->k * WQ_P;
  const float *s = q->s + p * WQ_P, *z = q->z + p * WQ_P;
  int64_t j0 = p * WQ_P, w = q->n - j0 < WQ_P ? q->n - j0 : WQ_P;
  for (int64_t r = 0; r < q->m; r++) {
    float acc[WQ_P] = {0};
    for (int64_t kk = 0; kk < q->k; kk++) {
      const uint8_t *row = pan + kk * WQ_P;
      float av = a[r * q->k + kk];
      if (q->sgn)
        for (int c = 0; c < WQ_P; c++) {
          float wv = ((float)(int8_t)row[c] - z[c]) * s[c];
          acc[c] += av * wv;
        }
      else
        for (int c = 0; c < WQ_P; c++) {
          float wv = ((float)row[c] - z[c]) * s[c];
          acc[c] += av * wv;
        }
    }
    memcpy(y + r * q->n + j0, acc, (size_t)w * sizeof(float));
  }
}

/* The SIMD panels take each weight as the integer q - z (exact in int32 and in float) and multiply
 * a column's sum by its scale once, after the last k: three or four instructions a vector of
 * weights (widen, [subtract z,] convert, multiply-add) instead of five, which bound the one-row
 * product (bench_blis_wq 1x288x2304, one thread, weights in L2: 18 GB/s of codes before). The sums
 * differ from the folded path's by the rounding of s * sum against sum of rounded s * (q - z)
 * products. With one row, AVX-512 keeps two sets of accumulators (even and odd k) to halve the
 * multiply-add chains' wait. Z: the panel has a zero point other than 0. */

/* ---- AVX-512: a panel's 4 vectors of 16 columns, R rows; stores masked past n */
static inline __attribute__((always_inline)) AVX512_FN void k512(const wq_t *q, const uint8_t *row, const float *ak,
                                                                 const __m512i *zi, const int R, const int Z,
                                                                 __m512 (*acc)[4]) {
  for (int v = 0; v < 4; v++) {
    __m128i b = _mm_loadu_si128((const __m128i *)(row + 16 * v));
    __m512i i = q->sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    __m512 w = _mm512_cvtepi32_ps(Z ? _mm512_sub_epi32(i, zi[v]) : i);
    for (int r = 0; r < R; r++) acc[r][v] = _mm512_fmadd_ps(_mm512_set1_ps(ak[r * q->k]), w, acc[r][v]);
  }
}

static inline __attribute__((always_inline)) AVX512_FN void rows512(const wq_t *q, const float *a, float *y,
                                                                    int64_t p, int64_t r0, const int R, const int Z) {
  const uint8_t *pan = q->pk + p * q->k * WQ_P;
  const float *ar = a + r0 * q->k;
  int64_t j = p * WQ_P, kk = 0;
  __m512 acc[WQ_ROWS][4], odd[WQ_ROWS][4];
  __m512i zi[4];
  for (int v = 0; v < 4; v++) {
    zi[v] = _mm512_cvtps_epi32(_mm512_loadu_ps(q->z + j + 16 * v));
    for (int r = 0; r < R; r++) acc[r][v] = odd[r][v] = _mm512_setzero_ps();
  }
  if (R == 1)
    for (; kk + 1 < q->k; kk += 2) {
      k512(q, pan + kk * WQ_P, ar + kk, zi, 1, Z, acc);
      k512(q, pan + (kk + 1) * WQ_P, ar + kk + 1, zi, 1, Z, odd);
    }
  for (; kk < q->k; kk++) k512(q, pan + kk * WQ_P, ar + kk, zi, R, Z, acc);
  for (int v = 0; v < 4; v++) {
    int64_t left = q->n - j - 16 * v;
    __mmask16 mk = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                                             : 0;
    __m512 sv = _mm512_loadu_ps(q->s + j + 16 * v);
    for (int r = 0; r < R; r++) {
      __m512 sum = R == 1 ? _mm512_add_ps(acc[r][v], odd[r][v]) : acc[r][v];
      _mm512_mask_storeu_ps(y + (r0 + r) * q->n + j + 16 * v, mk, _mm512_mul_ps(sum, sv));
    }
  }
}

static AVX512_FN void panel_512(const wq_t *q, const float *a, float *y, int64_t p) {
  int z = q->zp;
  for (int64_t r0 = 0; r0 < q->m; r0 += WQ_ROWS) switch ((q->m - r0 < WQ_ROWS ? q->m - r0 : WQ_ROWS) * 2 + z) {
    case 2: rows512(q, a, y, p, r0, 1, 0); break;
    case 3: rows512(q, a, y, p, r0, 1, 1); break;
    case 4: rows512(q, a, y, p, r0, 2, 0); break;
    case 5: rows512(q, a, y, p, r0, 2, 1); break;
    case 6: rows512(q, a, y, p, r0, 3, 0); break;
    case 7: rows512(q, a, y, p, r0, 3, 1); break;
    case 8: rows512(q, a, y, p, r0, 4, 0); break;
    default: rows512(q, a, y, p, r0, 4, 1); break;
    }
}

/* ---- AVX2: V vectors of 8 columns from column 8 * v0 of the panel, R rows; a vector past n via a
 * copy. One row takes the whole panel (8 accumulators), two rows half of it at a time (16 ymm
 * registers); Z: the panel has a zero point other than 0. */
static inline __attribute__((always_inline)) AVX2_FN void k256(const wq_t *q, const uint8_t *row, const float *ak,
                                                               const __m256i *zi, const int R, const int V,
                                                               const int Z, __m256 (*acc)[8]) {
  for (int v = 0; v < V; v++) {
    __m128i b = _mm_loadl_epi64((const __m128i *)(row + 8 * v));
    __m256i i = q->sgn ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    __m256 w = _mm256_cvtepi32_ps(Z ? _mm256_sub_epi32(i, zi[v]) : i);
    for (int r = 0; r < R; r++) acc[r][v] = _mm256_fmadd_ps(_mm256_set1_ps(ak[r * q->k]), w, acc[r][v]);
  }
}

static inline __attribute__((always_inline)) AVX2_FN void rows256(const wq_t *q, const float *a, float *y,
                                                                  int64_t p, int64_t v0, int64_t r0, const int R,
                                                                  const int V, const int Z) {
  const uint8_t *pan = q->pk + p * q->k * WQ_P + 8 * v0;
  const float *ar = a + r0 * q->k;
  int64_t j = p * WQ_P + 8 * v0;
  __m256 acc[2][8];
  __m256i zi[8];
  for (int v = 0; v < V; v++) {
    if (Z) zi[v] = _mm256_cvtps_epi32(_mm256_loadu_ps(q->z + j + 8 * v));
    for (int r = 0; r < R; r++) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t kk = 0; kk < q->k; kk++) k256(q, pan + kk * WQ_P, ar + kk, zi, R, V, Z, acc);
  for (int v = 0; v < V; v++) {
    int64_t left = q->n - j - 8 * v;
    __m256 sv = _mm256_loadu_ps(q->s + j + 8 * v);
    for (int r = 0; r < R; r++) {
      float *dst = y + (r0 + r) * q->n + j + 8 * v, tmp[8];
      __m256 sum = _mm256_mul_ps(acc[r][v], sv);
      if (left >= 8) {
        _mm256_storeu_ps(dst, sum);
      } else if (left > 0) {
        _mm256_storeu_ps(tmp, sum);
        memcpy(dst, tmp, (size_t)left * sizeof(float));
      }
    }
  }
}

static AVX2_FN void panel_256(const wq_t *q, const float *a, float *y, int64_t p) {
  int z = q->zp;
  for (int64_t r0 = 0; r0 < q->m; r0 += 2) {
    if (q->m - r0 == 1) {
      if (z) rows256(q, a, y, p, 0, r0, 1, 8, 1);
      else
        rows256(q, a, y, p, 0, r0, 1, 8, 0);
      continue;
    }
    for (int64_t h = 0; h < 2 && p * WQ_P + 32 * h < q->n; h++) {
      if (z) rows256(q, a, y, p, 4 * h, r0, 2, 4, 1);
      else
        rows256(q, a, y, p, 4 * h, r0, 2, 4, 0);
    }
  }
}

/* Work items: panels. */
static void wq_part(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *t = arg;
  const wq_t *q = t->state;
  const float *a = t->t[q->a];
  float *y = t->t[q->y];
  for (int64_t p = i0; p < i1; p++) {
    if (q->nib) mi__blis_wq4_panel(q, a, y, p);
    else
      switch (q->simd) {
      case MI__SIMD_AVX512: panel_512(q, a, y, p); break;
      case MI__SIMD_AVX2: panel_256(q, a, y, p); break;
      default: panel_c(q, a, y, p); break;
      }
    if (q->post) { /* the reference's Gemm: alpha * s + beta * C, on the panel's columns in cache */
      int64_t j0 = p * WQ_P, j1 = j0 + WQ_P < q->n ? j0 + WQ_P : q->n;
      for (int64_t r = 0; r < q->m; r++)
        for (int64_t j = j0; j < j1; j++)
          y[r * q->n + j] = q->alpha * y[r * q->n + j] + (q->c ? q->beta * q->c[r * q->cm + j * q->cn] : 0.0f);
    }
  }
}

static int32_t wq_run(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const wq_t *q = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, q->np, 1, q->m * q->k * WQ_P, wq_part);
}

/* Scale and zero point of every output column, from the DequantizeLinear's constants: one value,
 * or one per column (axis = the codes' column axis); 0 when they are laid out otherwise. */
static int col_params(const mi__blis_prep_t *p, const mi_node_desc_t *dq, const mi_tensor_desc_t *w, int tb,
                      float *s, float *z) {
  const mi_tensor_desc_t *st = mi__blis_tensor(p, mi__blis_in(dq, 1)), *zt = mi__blis_tensor(p, mi__blis_in(dq, 2));
  int64_t ns = st ? mi_sdk_numel(st) : 0, n = w->dims[tb ? 0 : 1], axis = mi_sdk_attr_int(dq, "axis", 1);
  if (!st || !st->data || st->dtype != MI_DTYPE_FLOAT32 || (zt && (!zt->data || zt->dtype != w->dtype)))
    return 0;
  if (zt && mi_sdk_numel(zt) != ns) return 0;
  if (axis < 0) axis += 2;
  if (ns != 1 && !(st->rank == 1 && axis == (tb ? 0 : 1) && ns == n)) return 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t c = ns == 1 ? 0 : j;
    s[j] = ((const float *)st->data)[c];
    z[j] = !zt ? 0.0f : w->dtype == MI_DTYPE_INT8 ? (float)((const int8_t *)zt->data)[c]
                                                  : (float)((const uint8_t *)zt->data)[c];
  }
  return 1;
}

int32_t mi__blis_prep_wq(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err) {
  const mi_node_desc_t *dq = mi__blis_node(p, 0), *op = mi__blis_node(p, 1);
  const mi_tensor_desc_t *w, *x, *yt;
  int32_t wf, gemm, tb;
  int64_t kd, nd;
  wq_t *q;
  float *aux;
  int64_t m = 1;
  *taken = 0;
  if (!op || (strcmp(op->op_type, "MatMul") && strcmp(op->op_type, "Gemm")) || (wf = mi__blis_out(dq, 0)) < 0 ||
      mi__blis_in(op, 1) != wf || mi__blis_consumers(p, wf) != 1 || mi__blis_is_kernel_output(p, wf))
    return MI_OK;
  *taken = 1;
  p->nodes_used = 2;
  gemm = !strcmp(op->op_type, "Gemm");
  w = mi__blis_tensor(p, mi__blis_in(dq, 0));
  x = mi__blis_tensor(p, mi__blis_in(op, 0));
  yt = mi__blis_tensor(p, mi__blis_out(op, 0));
  if (!w || !w->data || w->rank != 2 ||
      (w->dtype != MI_DTYPE_UINT8 && w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_INT4))
    return mi__blis_unsupported(err, op, "B is not a DequantizeLinear of constant 2-D INT8/UINT8/INT4 codes");
  if (!x || x->data || x->dtype != MI_DTYPE_FLOAT32 || x->rank < 1 || !yt || yt->dtype != MI_DTYPE_FLOAT32)
    return mi__blis_unsupported(err, op, "weight-only codes take a runtime FLOAT32 A");
  tb = gemm && mi_sdk_attr_int(op, "transB", 0);
  if (gemm && mi_sdk_attr_int(op, "transA", 0))
    return mi__blis_unsupported(err, op, "weight-only codes: a Gemm with transA runs folded");
  if (x->rank < 2 && gemm) return mi__blis_unsupported(err, op, "Gemm's A must be 2-D");
  kd = w->dims[tb ? 1 : 0];
  nd = w->dims[tb ? 0 : 1];
  for (int32_t d = 0; d + 1 < x->rank; d++) m *= x->dims[d];
  if (x->dims[x->rank - 1] != kd || m < 1)
    return mi__blis_unsupported(err, op, "A's last dim is not B's rows (or unknown)");
  if (m > WQ_MAX_M) return mi__blis_unsupported(err, op, "more rows than the weight-only GEMV takes: runs folded");
  {
    const char *hot = getenv("MI_BLIS_WQ_HOT_BYTES");
    long long lim = hot && hot[0] ? strtoll(hot, NULL, 10) : WQ_HOT_BYTES;
    if (m > 1 && 4 * w->dims[0] * w->dims[1] <= lim)
      return mi__blis_unsupported(err, op, "a few rows on float weights the cache holds run faster folded");
  }
  if (mi_sdk_numel(yt) != m * nd) return mi__blis_unsupported(err, op, "output shape");
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  q->m = m;
  q->k = kd;
  q->n = nd;
  q->np = (q->n + WQ_P - 1) / WQ_P;
  int r4 = mi__blis_wq4_prepare(p, s, dq, w, tb, q);
  if (r4 < 0) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  if (!r4 && w->dtype == MI_DTYPE_INT4) /* packed codes the 4-bit path did not take (their scales) */
    return mi__blis_unsupported(err, op, "weight-only INT4 codes take one scale, one a column or blocks along K");
  if (!r4) {
    /* one block: the per-column scales and zero points, then the panels */
    if (!(aux = s->aux = mi__blis_calloc(p->ctx, (uint64_t)(2 * q->np * WQ_P) * sizeof(float) +
                                                     (uint64_t)(q->np * q->k * WQ_P))))
      return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    if (!col_params(p, dq, w, tb, aux, aux + q->np * WQ_P))
      return mi__blis_unsupported(err, op, "weight-only codes take one scale, or one per output column");
    {
      uint8_t *pk = (uint8_t *)(aux + 2 * q->np * WQ_P);
      const uint8_t *codes = w->data;
      for (int64_t pp = 0; pp < q->np; pp++)
        for (int64_t kk = 0; kk < q->k; kk++) {
          int64_t j0 = pp * WQ_P, c = q->n - j0 < WQ_P ? q->n - j0 : WQ_P;
          if (tb) /* codes [n, k]: column j's k-th code at j * k + kk */
            for (int64_t cc = 0; cc < c; cc++) pk[(pp * q->k + kk) * WQ_P + cc] = codes[(j0 + cc) * q->k + kk];
          else
            memcpy(pk + (pp * q->k + kk) * WQ_P, codes + kk * q->n + j0, (size_t)c);
        }
      q->pk = pk;
    }
    q->s = aux;
    q->z = aux + q->np * WQ_P;
    for (int64_t j = 0; j < q->n; j++) q->zp |= q->z[j] != 0.0f;
  }
  q->a = mi__blis_in(op, 0);
  q->y = mi__blis_out(op, 0);
  q->sgn = w->dtype == MI_DTYPE_INT8;
  q->simd = simd_of(p);
  if (gemm) {
    const mi_tensor_desc_t *ct = mi__blis_tensor(p, mi__blis_in(op, 2));
    q->alpha = mi_sdk_attr_float(op, "alpha", 1.f);
    q->beta = mi_sdk_attr_float(op, "beta", 1.f);
    if (ct) { /* C broadcast to [m, n] one way, as the reference takes it */
      int64_t cm = ct->rank >= 2 ? ct->dims[ct->rank - 2] : 1, cn = ct->rank >= 1 ? ct->dims[ct->rank - 1] : 1;
      if (!ct->data || ct->dtype != MI_DTYPE_FLOAT32 || ct->rank > 2 || (cm != 1 && cm != m) || (cn != 1 && cn != q->n))
        return mi__blis_unsupported(err, op, "weight-only codes: C is no constant FLOAT32 broadcast to the output");
      q->c = p->k->ptr[mi__blis_in(op, 2)];
      q->cm = cm == 1 ? 0 : cn;
      q->cn = cn == 1 ? 0 : 1;
    }
    q->post = q->c || q->alpha != 1.f;
  }
  s->run = wq_run;
  mi__blis_drop_const(p, mi__blis_in(dq, 0)); /* the panels are all the step reads */
  /* the float weights are never written: no scratch for them (prepare_tensors made one) */
  if (p->k->owned[wf]) {
    mi__blis_free(p->ctx, p->k->ptr[wf]);
    p->k->ptr[wf] = NULL;
    p->k->owned[wf] = 0;
  }
  return MI_OK;
}
