/* ref_qgemm.c - ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul and com.microsoft QGemm
 * on the reference path:
 * zero points subtracted, products summed exactly in integers, then (QLinear*) requantized. */
#include <stdlib.h>
#include <string.h>

#include "ref/ref_qutil.h"

/* Codes of a minus its zero point(s): per tensor, or per index `(i / inner) % count`. */
static int32_t *centered(const mi_array_t *a, const mi_array_t *z, int64_t inner, int64_t count) {
  int64_t n = mi_array_numel(a);
  int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; i++)
    v[i] = mi__ref_code(a, i) - (z ? mi__ref_code(z, mi_array_numel(z) == 1 ? 0 : (i / inner) % count) : 0);
  return v;
}

/* a[i] += w * x[i * s] for i in [0, n): one weight across a run of output columns. */
static inline void row_madd(uint32_t *restrict a, const int32_t *restrict x, uint32_t w, int64_t n, int64_t s) {
  if (s == 1)
    for (int64_t i = 0; i < n; i++) a[i] += w * (uint32_t)x[i];
  else
    for (int64_t i = 0; i < n; i++) a[i] += w * (uint32_t)x[i * s];
}

/* The integer loops below are built for AVX-512, AVX2 and the baseline, picked at load time (this
 * file is compiled at -O3, so row_madd's loop is vectorised: integer sums, the same results at
 * every width). Scalar, the 1024x1024 model below spent 135 s in the conv per reference run. */
#if defined(__x86_64__) && !defined(__clang__)
#define REF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define REF_CLONES
#endif

/* Integer conv: acc[n][m][oh][ow] = sum X * W (+ bias[m]), with X, W already centered. Each
 * weight is added across an output row at once (the output columns whose input column is
 * inside the image, found once per kernel column), in a contiguous inner loop. ONNX accumulates
 * in int32 with wrap-around, and sums mod 2^32 do not depend on the order, so the accumulators
 * are uint32 (defined wrap, and vector multiplies): exactly the direct loop's int32 results. The direct loop, with its bounds checks
 * per product, took minutes per run on a 1024x1024 quantized model (119 ConvInteger), so no
 * tune measuring its accuracy against this interpreter fitted in 5 minutes. -1: out of memory. */
REF_CLONES int mi__ref_conv_acc(const int32_t *X, const int32_t *Wt, const int32_t *bias, int32_t *Y, int64_t N,
                                int64_t C, int64_t M, int64_t group, const mi__ref_window_t *w) {
  int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], KH = w->k[0], KW = w->k[1];
  int64_t Cg = C / group, Mg = M / group, s1 = w->stride[1], rows = OW < 8192 ? 8192 / OW : 1;
  uint32_t *a = malloc((size_t)(OH * OW + 1) * sizeof *a);
  if (!a) return -1;
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      int64_t g = m / Mg;
      int32_t *o = Y + (n * M + m) * OH * OW;
      for (int64_t i = 0; i < OH * OW; i++) a[i] = bias ? (uint32_t)bias[m] : 0;
      /* A block of output rows (about 32 KiB of sums) takes every input channel and tap before
       * the next: the sums stay in cache instead of streaming a whole plane per tap (a 512x512
       * output is 1 MiB of sums; the 1024x1024 model above ran 2x faster). */
      for (int64_t r0 = 0; r0 < OH; r0 += rows)
        for (int64_t ci = 0; ci < Cg; ci++) {
          const int32_t *xp = X + (n * C + g * Cg + ci) * H * W;
          for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
              uint32_t wv = (uint32_t)Wt[((m * Cg + ci) * KH + kh) * KW + kw];
              /* input column = ow * s1 + off; inside [0, W) for ow in [lo, hi] */
              int64_t off = kw * w->dil[1] - w->pad_begin[1];
              int64_t lo = off >= 0 ? 0 : (-off + s1 - 1) / s1, hi = W - 1 - off < 0 ? -1 : (W - 1 - off) / s1;
              if (hi > OW - 1) hi = OW - 1;
              if (wv == 0 || lo > hi) continue;
              for (int64_t oh = r0; oh < OH && oh < r0 + rows; oh++) {
                int64_t ih = oh * w->stride[0] - w->pad_begin[0] + kh * w->dil[0];
                const int32_t *xr;
                uint32_t *ar = a + oh * OW;
                if (ih < 0 || ih >= H) continue;
                xr = xp + ih * W + off;
                row_madd(ar + lo, xr + lo * s1, wv, hi - lo + 1, s1);
              }
            }
        }
      for (int64_t i = 0; i < OH * OW; i++) o[i] = (int32_t)a[i];
    }
  free(a);
  return 0;
}

/* ConvInteger (x, w, x_zero_point, w_zero_point) -> int32, and QLinearConv (x, x_scale,
 * x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B) -> codes. Weight scales and
 * zero points per tensor or per output channel; the input's per tensor. */
static int32_t conv_int(mi__ref_call_t *c, int qlinear) {
  const mi_array_t *x = NULL, *wt = NULL, *zx, *zw, *sx = NULL, *sw = NULL, *sy = NULL, *zy = NULL;
  const mi_array_t *b = qlinear ? mi__ref_in(c, 8) : NULL;
  mi__ref_window_t w;
  mi_array_t *y = NULL;
  int64_t k, nw = 1, dims[4];
  int32_t rc = mi__ref_need(c, 0, MI__Q8, &x);
  if (rc == MI_OK) rc = mi__ref_need(c, qlinear ? 3 : 1, MI__Q8, &wt);
  if (rc != MI_OK) return rc;
  if (wt->rank != x->rank || x->rank < 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "weight rank %d and input rank %d do not fit",
                        (int)wt->rank, (int)x->rank);
  int64_t M = wt->dims[0];
  if (qlinear) {
    rc = mi__ref_qparam(c, 1, "x_scale", 1, -1, 1, &sx, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 2, "x_zero_point", 0, x->dtype, 1, &zx, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 4, "w_scale", 1, -1, M, &sw, &nw);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 5, "w_zero_point", 0, wt->dtype, M, &zw, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 6, "y_scale", 1, -1, 1, &sy, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 7, "y_zero_point", 0, -1, 1, &zy, &k);
  } else {
    rc = mi__ref_qparam(c, 2, "x_zero_point", 0, x->dtype, 1, &zx, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 3, "w_zero_point", 0, wt->dtype, M, &zw, &k);
  }
  if (rc != MI_OK) return rc;
  if (qlinear && !zy) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "y_zero_point is missing");
  if ((rc = mi__ref_window(c, x, wt->dims + 2, 0, &w)) != MI_OK) return rc;
  int64_t group = mi_node_attr_int(c->node, "group", 1), N = x->dims[0], C = x->dims[1];
  if (group < 1 || wt->dims[1] * group != C || M % group != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "input has %lld channels, weight expects %lld x group %lld (and %lld "
                        "filters must divide by the group)",
                        (long long)C, (long long)wt->dims[1], (long long)group, (long long)M);
  if (b && (b->dtype != MI_DTYPE_INT32 || mi_array_numel(b) != M))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "bias must be int32 with %lld values", (long long)M);
  dims[0] = N;
  dims[1] = M;
  dims[2] = x->rank == 3 ? w.out[1] : w.out[0];
  dims[3] = w.out[1];
  int64_t ohw = w.out[0] * w.out[1], inner = mi_array_numel(wt) / (M ? M : 1);
  int32_t *X = centered(x, zx, 1, 1), *Wc = centered(wt, zw, inner, M);
  int32_t *acc = qlinear ? malloc((size_t)(N * M * ohw + 1) * sizeof *acc) : NULL;
  int32_t *bias = NULL;
  if (b && (bias = malloc((size_t)M * sizeof *bias)))
    for (int64_t m = 0; m < M; m++) bias[m] = mi__ref_code(b, m);
  if (!X || !Wc || (qlinear && !acc) || (b && !bias)) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  } else if ((rc = mi__ref_make_out(c, 0, qlinear ? zy->dtype : MI_DTYPE_INT32, x->rank, dims, &y)) ==
             MI_OK) {
    c->out[0] = y;
    if (mi__ref_conv_acc(X, Wc, bias, qlinear ? acc : y->data, N, C, M, group, &w) != 0)
      rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    else if (qlinear) {
      double s = *(const float *)sx->data, ys = *(const float *)sy->data;
      int32_t iz = mi__ref_code(zy, 0);
      for (int64_t i = 0; i < N * M * ohw; i++) {
        int64_t m = (i / ohw) % M;
        mi__ref_put_code(y, i, (double)acc[i] * (s * ((const float *)sw->data)[nw == 1 ? 0 : m] / ys), iz);
      }
    }
  }
  free(X);
  free(Wc);
  free(acc);
  free(bias);
  return rc;
}

/* MatMulInteger (A, B, a_zero_point, b_zero_point) -> int32 and QLinearMatMul (a, a_scale,
 * a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point) -> codes, numpy batching. A's
 * parameters per tensor or per row (M values), B's per tensor or per column (N values). */
REF_CLONES static int32_t matmul_int(mi__ref_call_t *c, int qlinear) {
  const mi_array_t *a = NULL, *b = NULL, *za, *zb, *sa = NULL, *sb = NULL, *sy = NULL, *zy = NULL;
  mi_array_t *y = NULL;
  int64_t k, na = 1, nb = 1;
  int32_t rc = mi__ref_need(c, 0, MI__Q8, &a);
  if (rc == MI_OK) rc = mi__ref_need(c, qlinear ? 3 : 1, MI__Q8, &b);
  if (rc != MI_OK) return rc;
  mi__ref_mm_t mm;
  if ((rc = mi__ref_matmul_shape(c, a, b, &mm)) != MI_OK) return rc;
  int64_t M = mm.M, K = mm.K, N = mm.N;
  if (qlinear) {
    rc = mi__ref_qparam(c, 1, "a_scale", 1, -1, M, &sa, &na);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 2, "a_zero_point", 0, a->dtype, M, &za, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 4, "b_scale", 1, -1, N, &sb, &nb);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 5, "b_zero_point", 0, b->dtype, N, &zb, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 6, "y_scale", 1, -1, 1, &sy, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 7, "y_zero_point", 0, -1, 1, &zy, &k);
    if (rc == MI_OK && !zy) rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "y_zero_point is missing");
  } else {
    rc = mi__ref_qparam(c, 2, "a_zero_point", 0, a->dtype, M, &za, &k);
    if (rc == MI_OK) rc = mi__ref_qparam(c, 3, "b_zero_point", 0, b->dtype, N, &zb, &k);
  }
  if (rc != MI_OK) return rc;
  /* Row i of A is centered by its row's zero point, column j of B by its column's. */
  int32_t *A = centered(a, za, K, M), *B = centered(b, zb, 1, N);
  if (!A || !B) {
    free(A);
    free(B);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  uint32_t *row = malloc((size_t)(N ? N : 1) * sizeof *row);
  rc = row ? mi__ref_make_out(c, 0, qlinear ? zy->dtype : MI_DTYPE_INT32, mm.rank, mm.dims, &y)
           : mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if (rc == MI_OK) {
    c->out[0] = y;
    double fy = qlinear ? *(const float *)sy->data : 1.0;
    int32_t iz = qlinear ? mi__ref_code(zy, 0) : 0;
    for (int64_t bi = 0; bi < mm.bc.numel; bi++) {
      int64_t off[2];
      mi__ref_bcast_offsets(&mm.bc, 2, bi, off);
      const int32_t *pa = A + off[0] * M * K, *pb = B + off[1] * K * N;
      for (int64_t i = 0; i < M; i++) {
        /* row i of the product, B's rows added in order: int32 sums wrap, mod 2^32 as ONNX says */
        memset(row, 0, (size_t)N * sizeof *row);
        for (int64_t kk = 0; kk < K; kk++)
          if (pa[i * K + kk]) row_madd(row, pb + kk * N, (uint32_t)pa[i * K + kk], N, 1);
        for (int64_t j = 0; j < N; j++) {
          int64_t o = (bi * M + i) * N + j;
          int32_t a32 = (int32_t)row[j];
          if (!qlinear) {
            ((int32_t *)y->data)[o] = a32;
          } else {
            double s = (double)((const float *)sa->data)[na == 1 ? 0 : i] *
                       (double)((const float *)sb->data)[nb == 1 ? 0 : j] / fy;
            mi__ref_put_code(y, o, (double)a32 * s, iz);
          }
        }
      }
    }
  }
  free(row);
  free(A);
  free(B);
  return rc;
}

/* com.microsoft QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale,
 * y_zero_point; alpha, transA, transB), as ONNX Runtime's CPU kernel: exact int32 sums of the
 * centered codes (B's zero point per tensor or per column) plus the INT32 C broadcast to [M, N];
 * the output scale alpha * a_scale * b_scale[j] (/ y_scale) in float; with y_scale, codes
 * saturate(nearbyint(float(acc) * scale) + y_zero_point) in float (its requantization), without,
 * float32 float(acc) * scale. A UINT8 A takes a UINT8 or INT8 B, an INT8 A an INT8 B; the codes
 * out have A's dtype. */
REF_CLONES static int32_t qgemm(mi__ref_call_t *c) {
  const mi_array_t *a = NULL, *b = NULL, *sa, *za, *sb, *zb, *bias = mi__ref_in(c, 6), *sy = NULL, *zy = NULL;
  mi_array_t *y = NULL;
  int64_t k, nb = 1, nz = 1;
  int ta = (int)mi_node_attr_int(c->node, "transA", 0), tb = (int)mi_node_attr_int(c->node, "transB", 0);
  float alpha = mi_node_attr_float(c->node, "alpha", 1.0f);
  int32_t rc = mi__ref_need(c, 0, MI__Q8, &a);
  if (rc == MI_OK) rc = mi__ref_need(c, 3, MI__Q8, &b);
  if (rc != MI_OK) return rc;
  if (a->dtype == MI_DTYPE_INT8 && b->dtype != MI_DTYPE_INT8)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "an INT8 A takes an INT8 B, got %s", mi_dtype_name(b->dtype));
  if (a->rank != 2 || b->rank != 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "A and B must be 2-D, got ranks %d and %d", (int)a->rank,
                        (int)b->rank);
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || !isfinite(alpha))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "transA = %d, transB = %d (0 or 1), alpha = %g (finite)", ta, tb,
                        (double)alpha);
  int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
  int64_t N = tb ? b->dims[0] : b->dims[1], KB = tb ? b->dims[1] : b->dims[0];
  if (K != KB)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "A's K (%lld) differs from B's (%lld)", (long long)K, (long long)KB);
  if (K < 1) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "K = 0 (an empty product) is not supported");
  rc = mi__ref_qparam(c, 1, "a_scale", 1, -1, 1, &sa, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 2, "a_zero_point", 0, a->dtype, 1, &za, &k);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 4, "b_scale", 1, -1, N, &sb, &nb);
  if (rc == MI_OK) rc = mi__ref_qparam(c, 5, "b_zero_point", 0, b->dtype, N, &zb, &nz);
  if (rc == MI_OK && mi__ref_in(c, 7)) rc = mi__ref_qparam(c, 7, "y_scale", 1, -1, 1, &sy, &k);
  if (rc == MI_OK && mi__ref_in(c, 8)) rc = mi__ref_qparam(c, 8, "y_zero_point", 0, a->dtype, 1, &zy, &k);
  if (rc != MI_OK) return rc;
  if (!za || !zb) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "a_zero_point and b_zero_point are required");
  if (!sy != !zy)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "y_scale and y_zero_point come together (codes) or not at all (float)");
  if (zb && mi_array_numel(zb) != nb)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "b_scale has %lld values, b_zero_point %lld", (long long)nb,
                        (long long)mi_array_numel(zb));
  /* C: (), (1), (1, 1), (N), (1, N), (M, 1) or (M, N), INT32. */
  int64_t bm = 0, bn = 0; /* C's element (i, j) = bias[i * bm + j * bn] */
  if (bias) {
    int64_t r = bias->rank, d0 = r == 2 ? bias->dims[0] : 1, d1 = r >= 1 ? bias->dims[r - 1] : 1;
    if (bias->dtype != MI_DTYPE_INT32 || r > 2 || (d0 != 1 && d0 != M) || (d1 != 1 && d1 != N))
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "C must be INT32 and broadcast to [%lld, %lld]", (long long)M,
                          (long long)N);
    bm = d0 == M && M > 1 ? d1 : 0;
    bn = d1 == N && N > 1 ? 1 : 0;
  }
  int64_t dims[2] = {M, N};
  if ((rc = mi__ref_make_out(c, 0, sy ? a->dtype : MI_DTYPE_FLOAT32, 2, dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  float *scale = malloc((size_t)nb * sizeof *scale);
  if (!scale) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t j = 0; j < nb; j++) {
    scale[j] = alpha * *(const float *)sa->data * ((const float *)sb->data)[j];
    if (sy) scale[j] /= *(const float *)sy->data;
  }
  int32_t iza = mi__ref_code(za, 0), izy = zy ? mi__ref_code(zy, 0) : 0;
  float lo = a->dtype == MI_DTYPE_INT8 ? -128.0f : 0.0f, hi = a->dtype == MI_DTYPE_INT8 ? 127.0f : 255.0f;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      uint32_t acc = bias ? (uint32_t)((const int32_t *)bias->data)[i * bm + j * bn] : 0u; /* int32 wrap */
      int32_t izb = mi__ref_code(zb, nz == 1 ? 0 : j);
      for (int64_t kk = 0; kk < K; kk++) {
        int32_t av = mi__ref_code(a, ta ? kk * M + i : i * K + kk) - iza;
        int32_t bv = mi__ref_code(b, tb ? j * K + kk : kk * N + j) - izb;
        acc += (uint32_t)av * (uint32_t)bv;
      }
      float v = (float)(int32_t)acc * scale[nb == 1 ? 0 : j];
      if (!sy) {
        ((float *)y->data)[i * N + j] = v;
        continue;
      }
      v = nearbyintf(v) + (float)izy;
      v = v < lo ? lo : v > hi ? hi
                               : v;
      if (a->dtype == MI_DTYPE_INT8) ((int8_t *)y->data)[i * N + j] = (int8_t)v;
      else
        ((uint8_t *)y->data)[i * N + j] = (uint8_t)v;
    }
  free(scale);
  return MI_OK;
}

int32_t mi__ref_qgemm(mi__ref_call_t *c) {
  const char *op = c->node->op_type;
  if (strcmp(op, "QGemm") == 0) return qgemm(c);
  if (strcmp(op, "ConvInteger") == 0) return conv_int(c, 0);
  if (strcmp(op, "QLinearConv") == 0) return conv_int(c, 1);
  if (strcmp(op, "MatMulInteger") == 0) return matmul_int(c, 0);
  return matmul_int(c, 1);
}
