/* test_blis_ops.c - blis-cpu Gemm, MatMul, Softmax, LayerNorm, pools and broadcasting binaries
 * against naive implementations written here. */
#include "test_blis_util.h"

static void expect(tb_plugin_t *p, tb_t *b, const char *name, const float *const *ins, const float *ref,
                   const mi_knob_value_t *knobs, int nk) {
  int64_t n = mi_sdk_numel(&b->t[b->kout[0]]);
  float *got = calloc((size_t)n, 4);
  mi_error_t err = {0, ""};
  int32_t rc = tb_run(p, b, NULL, knobs, nk, ins, got, &err);
  CHECK(rc == MI_OK, "%s: %s", name, err.message);
  if (rc == MI_OK) {
    double e = tu_rel_l2(got, ref, n);
    CHECK(e < 1e-5, "%s: rel L2 %g", name, e);
  }
  free(got);
}

static void gemm_case(tb_plugin_t *p, int ta, int tb_, float alpha, float beta, int crank) {
  int64_t M = 13, K = 17, N = 11, ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb_ ? N : K, tb_ ? K : N};
  int64_t cd[2] = {crank == 2 ? M : N, N}, yd[2] = {M, N}, i, j, k;
  float a[13 * 17], bm[17 * 11], c[13 * 11], ref[13 * 11];
  const float *ins[1] = {a};
  char name[64];
  tb_t b;
  int t0, t1, t2, t3, node;
  tb_fill(a, M * K, 7);
  tb_fill(bm, K * N, 8);
  tb_fill(c, M * N, 9);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, ad, NULL);
  t1 = tb_tensor(&b, 2, bd, bm);
  t2 = tb_tensor(&b, crank, crank == 2 ? cd : cd + 1, c);
  t3 = tb_tensor(&b, 2, yd, NULL);
  {
    int in[3] = {t0, t1, t2};
    node = tb_node(&b, "Gemm", 13, 3, in, t3);
  }
  tb_attr_i(&b, node, "transA", ta);
  tb_attr_i(&b, node, "transB", tb_);
  tb_attr_f(&b, node, "alpha", alpha);
  tb_attr_f(&b, node, "beta", beta);
  tb_finish(&b, t3);
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      double acc = 0.;
      for (k = 0; k < K; k++) acc += (double)(ta ? a[k * M + i] : a[i * K + k]) * (tb_ ? bm[j * K + k] : bm[k * N + j]);
      ref[i * N + j] = (float)(alpha * acc + beta * (crank == 2 ? c[i * N + j] : c[j]));
    }
  snprintf(name, sizeof name, "gemm tA=%d tB=%d a=%g b=%g crank=%d", ta, tb_, alpha, beta, crank);
  expect(p, &b, name, ins, ref, NULL, 0);
}

static void matmul_case(tb_plugin_t *p, int threads) {
  /* A [2,1,5,7] x B [3,7,4] -> [2,3,5,4]: batch dims broadcast both ways. */
  int64_t ad[4] = {2, 1, 5, 7}, bd[3] = {3, 7, 4}, yd[4] = {2, 3, 5, 4}, i, j, x, y, k;
  float a[70], bm[84], ref[120];
  const float *ins[2] = {a, bm};
  mi_knob_value_t kv = {"threads", threads, 0.};
  tb_t b;
  int t0, t1, t2;
  tb_fill(a, 70, 11);
  tb_fill(bm, 84, 12);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, ad, NULL);
  t1 = tb_tensor(&b, 3, bd, NULL);
  t2 = tb_tensor(&b, 4, yd, NULL);
  {
    int in[2] = {t0, t1};
    tb_node(&b, "MatMul", 13, 2, in, t2);
  }
  tb_finish(&b, t2);
  for (i = 0; i < 2; i++)
    for (j = 0; j < 3; j++)
      for (x = 0; x < 5; x++)
        for (y = 0; y < 4; y++) {
          double acc = 0.;
          for (k = 0; k < 7; k++) acc += (double)a[(i * 5 + x) * 7 + k] * bm[(j * 7 + k) * 4 + y];
          ref[((i * 3 + j) * 5 + x) * 4 + y] = (float)acc;
        }
  expect(p, &b, threads == 1 ? "matmul broadcast 1 thread" : "matmul broadcast", ins, ref, &kv, threads ? 1 : 0);
}

/* A MatMul large enough to be cut into blocks of columns (m <= n) or rows (m > n) that the
 * plugin's threads share (mi__blis_sgemm), with a last block shorter than the others. */
static void matmul_blocks_case(tb_plugin_t *p, int64_t m, int64_t k, int64_t n, int threads) {
  int64_t ad[2] = {m, k}, bd[2] = {k, n}, yd[2] = {m, n}, i, j, l;
  float *a = malloc((size_t)(m * k) * 4), *bm = malloc((size_t)(k * n) * 4), *ref = malloc((size_t)(m * n) * 4);
  const float *ins[2];
  mi_knob_value_t kv = {"threads", threads, 0.};
  char name[64];
  tb_t b;
  int t0, t1, t2;
  REQUIRE(a && bm && ref);
  ins[0] = a;
  ins[1] = bm;
  tb_fill(a, m * k, 31);
  tb_fill(bm, k * n, 32);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, ad, NULL);
  t1 = tb_tensor(&b, 2, bd, NULL);
  t2 = tb_tensor(&b, 2, yd, NULL);
  {
    int in[2] = {t0, t1};
    tb_node(&b, "MatMul", 13, 2, in, t2);
  }
  tb_finish(&b, t2);
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      double acc = 0.;
      for (l = 0; l < k; l++) acc += (double)a[i * k + l] * bm[l * n + j];
      ref[i * n + j] = (float)acc;
    }
  snprintf(name, sizeof name, "matmul %lldx%lldx%lld, %d threads", (long long)m, (long long)k, (long long)n, threads);
  expect(p, &b, name, ins, ref, &kv, 1);
  free(a);
  free(bm);
  free(ref);
}

static void softmax_case(tb_plugin_t *p, int opset, int64_t axis) {
  int64_t d[3] = {3, 4, 5}, o, i, j, outer, len, inner;
  float x[60], ref[60];
  const float *ins[1] = {x};
  char name[48];
  tb_t b;
  int t0, t1, node;
  tb_fill(x, 60, 20 + (unsigned)axis);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 3, d, NULL);
  t1 = tb_tensor(&b, 3, d, NULL);
  node = tb_node(&b, "Softmax", opset, 1, &t0, t1);
  tb_attr_i(&b, node, "axis", axis);
  tb_finish(&b, t1);
  if (axis < 0) axis += 3;
  outer = axis == 0 ? 1 : axis == 1 ? 3
                                    : 12;
  if (opset >= 13) {
    len = d[axis];
    inner = 60 / outer / len;
  } else {
    len = 60 / outer;
    inner = 1;
  }
  for (o = 0; o < outer; o++)
    for (i = 0; i < inner; i++) {
      double s = 0.;
      for (j = 0; j < len; j++) s += exp(x[(o * len + j) * inner + i]);
      for (j = 0; j < len; j++) ref[(o * len + j) * inner + i] = (float)(exp(x[(o * len + j) * inner + i]) / s);
    }
  snprintf(name, sizeof name, "softmax opset %d axis %lld", opset, (long long)axis);
  expect(p, &b, name, ins, ref, NULL, 0);
}

/* LayerNormalization over the last dim of [2,3,len]: len 8 (one run of eight partial sums) and 37
 * (four runs and a tail). */
static void layernorm_case(tb_plugin_t *p, int64_t len, int with_bias) {
  int64_t d[3] = {2, 3, len}, ld = len, o, j;
  float x[6 * 40], g[40], be[40], ref[6 * 40];
  const float *ins[1] = {x};
  char name[48];
  tb_t b;
  int t0, t1, t2, t3, node;
  if (len > 40) return;
  tb_fill(x, 6 * len, 30);
  tb_fill(g, len, 31);
  tb_fill(be, len, 32);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 3, d, NULL);
  t1 = tb_tensor(&b, 1, &ld, g);
  t2 = tb_tensor(&b, 1, &ld, be);
  t3 = tb_tensor(&b, 3, d, NULL);
  {
    int in[3] = {t0, t1, t2};
    node = tb_node(&b, "LayerNormalization", 17, with_bias ? 3 : 2, in, t3);
  }
  if (!with_bias) memset(be, 0, sizeof be);
  tb_attr_i(&b, node, "axis", -1);
  tb_finish(&b, t3);
  for (o = 0; o < 6; o++) {
    double m = 0., v = 0.;
    for (j = 0; j < len; j++) m += x[o * len + j];
    m /= (double)len;
    for (j = 0; j < len; j++) v += (x[o * len + j] - m) * (x[o * len + j] - m);
    v /= (double)len;
    for (j = 0; j < len; j++) ref[o * len + j] = (float)((x[o * len + j] - m) / sqrt(v + 1e-5) * g[j] + be[j]);
  }
  snprintf(name, sizeof name, "layernorm len %lld%s", (long long)len, with_bias ? "" : " scale only");
  expect(p, &b, name, ins, ref, NULL, 0);
}

/* KxK (3 with pad 1, or 2 with none) stride 2 pools on 8xW with ceil_mode: the last window
 * hangs over the edge. MaxPool on SIMD path simd (knob `simd`, 0 = auto). */
static void pool_case_simd(tb_plugin_t *p, const char *op, int include_pad, int64_t W, int64_t K, int64_t simd) {
  int64_t pd = K == 3 ? 1 : 0, xd[4] = {1, 2, 8, W}, k[2] = {K, K}, s[2] = {2, 2},
          pads[4] = {pd, pd, pd, pd};
  int64_t oh = (8 + 2 * pd - K + 1) / 2 + 1, ow = (W + 2 * pd - K + 1) / 2 + 1,
          yd[4] = {1, 2, oh, ow}, c, i, j, a, bb;
  float x[16 * 40], ref[5 * 2 * 21];
  const float *ins[1] = {x};
  char name[96];
  int is_max = strcmp(op, "MaxPool") == 0, t0, t1, node;
  tb_t b;
  if (W > 40) return;
  tb_fill(x, 16 * W, 40);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, xd, NULL);
  t1 = tb_tensor(&b, 4, yd, NULL);
  node = tb_node(&b, op, 19, 1, &t0, t1);
  tb_attr_is(&b, node, "kernel_shape", 2, k);
  tb_attr_is(&b, node, "strides", 2, s);
  tb_attr_is(&b, node, "pads", 4, pads);
  tb_attr_i(&b, node, "ceil_mode", 1);
  if (!is_max) tb_attr_i(&b, node, "count_include_pad", include_pad);
  tb_finish(&b, t1);
  for (c = 0; c < 2; c++)
    for (i = 0; i < oh; i++)
      for (j = 0; j < ow; j++) {
        double acc = is_max ? -1e30 : 0.;
        int cnt = 0, padcnt = 0;
        for (a = 0; a < K; a++)
          for (bb = 0; bb < K; bb++) {
            int64_t ih = i * 2 - pd + a, iw = j * 2 - pd + bb;
            if (ih < 8 + pd && iw < W + pd) padcnt++; /* inside the padded input */
            if (ih < 0 || ih >= 8 || iw < 0 || iw >= W) continue;
            acc = is_max ? fmax(acc, x[(c * 8 + ih) * W + iw]) : acc + x[(c * 8 + ih) * W + iw];
            cnt++;
          }
        ref[(c * oh + i) * ow + j] = (float)(is_max ? acc : acc / (include_pad ? padcnt : cnt));
      }
  snprintf(name, sizeof name, "%s %lldx%lld ceil include_pad=%d width %lld simd %lld", op, (long long)K,
           (long long)K, include_pad, (long long)W, (long long)simd);
  {
    mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
    expect(p, &b, name, ins, ref, kv, is_max && simd ? 1 : 0);
  }
}

static void pool_case(tb_plugin_t *p, const char *op, int include_pad, int64_t W, int64_t K) {
  pool_case_simd(p, op, include_pad, W, K, 0);
}

/* MaxPool whose windows tile the plane (kernel = strides, no pads): C planes of (KH * OH) x W,
 * widths from 2 (pairs that run on across rows and planes) to 72 (a tail past 64), enough rows
 * that the flat pass takes several batches, a NaN tap (never taken) and an all-NaN window (-inf),
 * on every code path of knob simd; max picks one of its inputs, so the result is exact. */
static void tiled_pool_case(tb_plugin_t *p, int64_t KH, int64_t KW, int64_t W, int64_t simd) {
  enum { C = 3,
         OH = 40 };
  int64_t OW = W / KW, xd[4] = {1, C, KH * OH, W}, yd[4] = {1, C, OH, OW}, k[2] = {KH, KW}, n, i, j, a, bb, c;
  static float x[C * 3 * OH * 72], ref[C * OH * 72], got[C * OH * 72];
  const float *ins[1] = {x};
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  mi_error_t err = {0, ""};
  int t0, t1, node, bad = 0;
  tb_t b;
  n = C * KH * OH * W;
  tb_fill(x, n, 60 + W);
  x[5] = NAN;
  for (a = 0; a < KH; a++)
    for (bb = 0; bb < KW; bb++) x[(KH * 7 + a) * W + KW + bb] = NAN; /* window (7, 1) of plane 0 */
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, xd, NULL);
  t1 = tb_tensor(&b, 4, yd, NULL);
  node = tb_node(&b, "MaxPool", 12, 1, &t0, t1);
  tb_attr_is(&b, node, "kernel_shape", 2, k);
  tb_attr_is(&b, node, "strides", 2, k);
  tb_finish(&b, t1);
  for (c = 0; c < C; c++)
    for (i = 0; i < OH; i++)
      for (j = 0; j < OW; j++) {
        float acc = -INFINITY;
        for (a = 0; a < KH; a++)
          for (bb = 0; bb < KW; bb++) {
            float v = x[(c * KH * OH + i * KH + a) * W + j * KW + bb];
            acc = v > acc ? v : acc;
          }
        ref[(c * OH + i) * OW + j] = acc;
      }
  memset(got, 0, sizeof got);
  CHECK(tb_run(p, &b, NULL, kv, 1, ins, got, &err) == MI_OK, "tiled MaxPool: %s", err.message);
  for (i = 0; i < C * OH * OW; i++) bad += memcmp(&got[i], &ref[i], 4) != 0;
  CHECK(bad == 0, "MaxPool %lldx%lld/%lldx%lld width %lld simd %lld: %d of %lld outputs differ (first want %g got %g)",
        (long long)KH, (long long)KW, (long long)KH, (long long)KW, (long long)W, (long long)simd, bad,
        (long long)(C * OH * OW), ref[0], got[0]);
}

/* NHWC -> NCHW of C channels (2 to 4: the output rows read the input at stride C, sixteen a
 * step on AVX-512; 5: the plain loop), widths with a tail, on every code path of knob simd; a
 * copy, so exact. */
static void transpose_case(tb_plugin_t *p, int64_t C, int64_t W, int64_t simd) {
  int64_t H = 3, xd[4] = {1, H, W, C}, yd[4] = {1, C, H, W}, perm[4] = {0, 3, 1, 2}, c, h, w;
  static float x[3 * 40 * 5], ref[3 * 40 * 5], got[3 * 40 * 5];
  const float *ins[1] = {x};
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  mi_error_t err = {0, ""};
  int t0, t1, node;
  tb_t b;
  tb_fill(x, H * W * C, 70 + C);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, xd, NULL);
  t1 = tb_tensor(&b, 4, yd, NULL);
  node = tb_node(&b, "Transpose", 13, 1, &t0, t1);
  tb_attr_is(&b, node, "perm", 4, perm);
  tb_finish(&b, t1);
  for (c = 0; c < C; c++)
    for (h = 0; h < H; h++)
      for (w = 0; w < W; w++) ref[(c * H + h) * W + w] = x[(h * W + w) * C + c];
  memset(got, 0, sizeof got);
  CHECK(tb_run(p, &b, NULL, kv, 1, ins, got, &err) == MI_OK, "Transpose: %s", err.message);
  CHECK(memcmp(got, ref, (size_t)(H * W * C) * sizeof(float)) == 0, "Transpose NHWC->NCHW C %lld W %lld simd %lld differs",
        (long long)C, (long long)W, (long long)simd);
}

/* Slice of x [2, R, 3] along axis `axis` from b to e: the rows whole (axis 1: runs of 3 floats the
 * kernel merges into one copy per image, blis_shape.c gather_compact) or cut (axis 2), against the
 * index arithmetic. */
static void slice_case(tb_plugin_t *p, int64_t R, int64_t axis, int64_t b0, int64_t e0) {
  int64_t xd[3] = {2, R, 3}, yd[3] = {2, axis == 1 ? e0 - b0 : R, axis == 2 ? e0 - b0 : 3}, i, j, k;
  static float x[2 * 5000 * 3], ref[2 * 5000 * 3], got[2 * 5000 * 3];
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  int in[4];
  tb_t b;
  tb_fill(x, 2 * R * 3, 90 + (unsigned)R);
  memset(&b, 0, sizeof b);
  in[0] = tb_tensor(&b, 3, xd, NULL);
  in[1] = tb_ints_tensor(&b, 1, &b0);
  in[2] = tb_ints_tensor(&b, 1, &e0);
  in[3] = tb_ints_tensor(&b, 1, &axis);
  k = tb_tensor(&b, 3, yd, NULL);
  tb_node(&b, "Slice", 13, 4, in, (int)k);
  tb_finish(&b, (int)k);
  for (i = 0; i < 2; i++)
    for (j = 0; j < yd[1]; j++)
      for (k = 0; k < yd[2]; k++)
        ref[(i * yd[1] + j) * yd[2] + k] = x[(i * R + j + (axis == 1 ? b0 : 0)) * 3 + k + (axis == 2 ? b0 : 0)];
  memset(got, 0, sizeof got);
  CHECK(tb_run(p, &b, NULL, NULL, 0, ins, got, &err) == MI_OK, "Slice: %s", err.message);
  CHECK(memcmp(got, ref, (size_t)(2 * yd[1] * yd[2]) * sizeof(float)) == 0, "Slice [2,%lld,3] axis %lld [%lld:%lld) differs",
        (long long)R, (long long)axis, (long long)b0, (long long)e0);
}

/* Slice of every second float of the last axis from b0 (0 or 1) of [3, 5, W] on a plugin capped at
 * cap (a Slice takes the CPU's level, not knob simd): the rotary embedding's even/odd halves. Rows of W / 2 outputs: 16 (two AVX2 blocks, the last one's
 * load masked at the row's end), 17 and 9 (a scalar tail), 4 (scalar only); exact. */
static void slice_step2_case(tb_plugin_t *p, int64_t W, int64_t b0, const char *cap) {
  int64_t xd[3] = {3, 5, W}, w = (W - b0 + 1) / 2, yd[3] = {3, 5, w}, e0 = W, ax = 2, st = 2, i;
  static float x[3 * 5 * 40], ref[3 * 5 * 20], got[3 * 5 * 20];
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  int in[5], k;
  tb_t b;
  tb_fill(x, 15 * W, 70 + (unsigned)W);
  memset(&b, 0, sizeof b);
  in[0] = tb_tensor(&b, 3, xd, NULL);
  in[1] = tb_ints_tensor(&b, 1, &b0);
  in[2] = tb_ints_tensor(&b, 1, &e0);
  in[3] = tb_ints_tensor(&b, 1, &ax);
  in[4] = tb_ints_tensor(&b, 1, &st);
  k = tb_tensor(&b, 3, yd, NULL);
  tb_node(&b, "Slice", 13, 5, in, k);
  tb_finish(&b, k);
  for (i = 0; i < 15 * w; i++) ref[i] = x[(i / w) * W + b0 + 2 * (i % w)];
  memset(got, 0, sizeof got);
  CHECK(tb_run(p, &b, NULL, NULL, 0, ins, got, &err) == MI_OK, "Slice step 2: %s", err.message);
  CHECK(memcmp(got, ref, (size_t)(15 * w) * sizeof(float)) == 0, "Slice [3,5,%lld] [%lld::2] cap %s differs",
        (long long)W, (long long)b0, cap ? cap : "none");
}

static void binary_case(tb_plugin_t *p, const char *op) {
  /* [2,3,4] op [3,1]: numpy broadcasting over the first and last dims. */
  int64_t ad[3] = {2, 3, 4}, bd[2] = {3, 1}, i;
  float a[24], bm[3], ref[24];
  const float *ins[2] = {a, bm};
  tb_t b;
  int t0, t1, t2;
  tb_fill(a, 24, 50);
  tb_fill(bm, 3, 51);
  for (i = 0; i < 3; i++) bm[i] = bm[i] + 2.f; /* positive divisor */
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 3, ad, NULL);
  t1 = tb_tensor(&b, 2, bd, NULL);
  t2 = tb_tensor(&b, 3, ad, NULL);
  {
    int in[2] = {t0, t1};
    tb_node(&b, op, 14, 2, in, t2);
  }
  tb_finish(&b, t2);
  for (i = 0; i < 24; i++) {
    float u = a[i], v = bm[(i / 4) % 3];
    ref[i] = op[0] == 'A' ? u + v : op[0] == 'S'               ? u - v
                                : op[0] == 'M' && op[1] == 'u' ? u * v
                                : op[0] == 'D'                 ? u / v
                                : op[1] == 'a'                 ? fmaxf(u, v)
                                                               : fminf(u, v);
  }
  expect(p, &b, op, ins, ref, NULL, 0);
}

/* 4-D broadcasting with merged inner dims: [2,3,4,5] op [1,3,1,1] (a scalar per row of 20),
 * the operands swapped (the scalar on the left), and equal shapes (one contiguous run). */
static void binary4_case(tb_plugin_t *p, const char *op, const int64_t *ad, const int64_t *bd, int threads) {
  mi_knob_value_t kv = {"threads", threads, 0.};
  int64_t yd[4], an = 1, bn = 1, yn = 1, i, d;
  float *a, *bm, *ref;
  const float *ins[2];
  char name[64];
  tb_t b;
  int t0, t1, t2;
  for (d = 0; d < 4; d++) {
    yd[d] = ad[d] > bd[d] ? ad[d] : bd[d];
    an *= ad[d];
    bn *= bd[d];
    yn *= yd[d];
  }
  a = malloc((size_t)an * 4);
  bm = malloc((size_t)bn * 4);
  ref = malloc((size_t)yn * 4);
  tb_fill(a, an, 60);
  tb_fill(bm, bn, 61);
  for (i = 0; i < bn; i++) bm[i] += 2.f;
  for (i = 0; i < yn; i++) {
    int64_t r = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (d = 3; d >= 0; d--) {
      int64_t c = r % yd[d];
      r /= yd[d];
      ia += (ad[d] == 1 ? 0 : c) * sa;
      ib += (bd[d] == 1 ? 0 : c) * sb;
      sa *= ad[d];
      sb *= bd[d];
    }
    ref[i] = op[0] == 'A' ? a[ia] + bm[ib] : op[0] == 'S' ? a[ia] - bm[ib]
                                         : op[0] == 'M'   ? a[ia] * bm[ib]
                                                          : a[ia] / bm[ib];
  }
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, ad, NULL);
  t1 = tb_tensor(&b, 4, bd, NULL);
  t2 = tb_tensor(&b, 4, yd, NULL);
  {
    int in[2] = {t0, t1};
    tb_node(&b, op, 14, 2, in, t2);
  }
  tb_finish(&b, t2);
  ins[0] = a;
  ins[1] = bm;
  snprintf(name, sizeof name, "%s [%lld,%lld,%lld,%lld] by [%lld,%lld,%lld,%lld], %d threads", op, (long long)ad[0],
           (long long)ad[1], (long long)ad[2], (long long)ad[3], (long long)bd[0], (long long)bd[1],
           (long long)bd[2], (long long)bd[3], threads);
  expect(p, &b, name, ins, ref, threads ? &kv : NULL, threads ? 1 : 0);
  free(a);
  free(bm);
  free(ref);
}

/* GlobalAveragePool / GlobalMaxPool over 5x7 planes (four runs of 8 and a tail of 3). */
static void global_pool_case(tb_plugin_t *p, const char *op) {
  int64_t xd[4] = {2, 3, 5, 7}, yd[4] = {2, 3, 1, 1}, c, i;
  float x[210], ref[6];
  const float *ins[1] = {x};
  tb_t b;
  int t0, t1;
  tb_fill(x, 210, 70);
  for (c = 0; c < 6; c++) {
    double acc = op[6] == 'M' ? -1e30 : 0.;
    for (i = 0; i < 35; i++) acc = op[6] == 'M' ? (x[c * 35 + i] > acc ? x[c * 35 + i] : acc) : acc + x[c * 35 + i];
    ref[c] = (float)(op[6] == 'M' ? acc : acc / 35.);
  }
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 4, xd, NULL);
  t1 = tb_tensor(&b, 4, yd, NULL);
  tb_node(&b, op, 1, 1, &t0, t1);
  tb_finish(&b, t1);
  expect(p, &b, op, ins, ref, NULL, 0);
}

/* Activations with a vectorised path (Exp, Erf, Tanh, Sigmoid, Gelu erf/tanh) over [-9, 9] on 1037
 * values (full vectors and a tail), each value within 1e-5 relative (plus 1e-6) of double; Tanh and
 * Sigmoid over [-120, 120], saturated, too, and none of their results subnormal (a subnormal
 * quotient cost a microcode assist per lane: blis_vmath.c). */
static void unary_case(tb_plugin_t *p, const char *op, const char *approx, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  enum { N = 1037 };
  int64_t d[2] = {17, 61}, i;
  float *x = malloc(N * 4), *ref = malloc(N * 4), *got = malloc(N * 4);
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int t0, t1, node, bad = 0;
  int32_t rc;
  double lim = !strcmp(op, "Tanh") || !strcmp(op, "Sigmoid") ? 120. : 9.;
  for (i = 0; i < N; i++) {
    double v = -lim + 2. * lim * (double)i / (N - 1), r;
    x[i] = (float)v;
    v = x[i];
    if (!strcmp(op, "Exp")) r = exp(v);
    else if (!strcmp(op, "Erf"))
      r = erf(v);
    else if (!strcmp(op, "Tanh"))
      r = tanh(v);
    else if (!strcmp(op, "Sigmoid"))
      r = 1. / (1. + exp(-v));
    else if (approx)
      r = 0.5 * v * (1. + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    else
      r = 0.5 * v * (1. + erf(v / sqrt(2.)));
    ref[i] = (float)r;
  }
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, d, NULL);
  t1 = tb_tensor(&b, 2, d, NULL);
  node = tb_node(&b, op, !strcmp(op, "Gelu") ? 20 : 13, 1, &t0, t1);
  if (approx) tb_attr_s(&b, node, "approximate", approx);
  tb_finish(&b, t1);
  rc = tb_run(p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "%s: %s", op, err.message);
  for (i = 0; rc == MI_OK && i < N; i++)
    if ((!(fabs((double)got[i] - ref[i]) <= 1e-5 * fabs((double)ref[i]) + 1e-6) ||
         (lim > 9. && fpclassify(got[i]) == FP_SUBNORMAL)) &&
        bad++ < 3)
      CHECK(0, "%s%s simd %lld: x=%g got %.9g want %.9g", op, approx ? " tanh" : "", (long long)simd, x[i],
            got[i], ref[i]);
  free(x);
  free(ref);
  free(got);
}

/* Log over 1e-30 .. 1e30 (1037 values: full vectors and a tail), each within 2e-7 relative of
 * double, plus the values a vector path must not bend: subnormals, FLT_MIN, 1 (exactly 0), 0 and
 * -0 (-inf), negatives and NaN (NaN), +inf (+inf), on every code path of knob simd. */
static void log_case(tb_plugin_t *p, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  enum { N = 1037 };
  static const float special[] = {1e-40f, 1.17549435e-38f, 1.f, 0.f, -0.f, -1.f, -1e-3f, INFINITY, NAN, 2.f, 0.5f};
  int64_t d[2] = {17, 61}, i, ns = (int64_t)(sizeof special / sizeof special[0]);
  float *x = malloc(N * 4), *got = malloc(N * 4);
  double *ref = malloc(N * sizeof(double));
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  tb_t b;
  int t0, t1, bad = 0;
  int32_t rc;
  for (i = 0; i < N; i++) x[i] = (float)exp(-69. + 138. * (double)i / (N - 1));
  for (i = 0; i < ns; i++) x[37 * i + 5] = special[i]; /* spread over vectors and the tail */
  for (i = 0; i < N; i++) ref[i] = log((double)x[i]);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, d, NULL);
  t1 = tb_tensor(&b, 2, d, NULL);
  tb_node(&b, "Log", 13, 1, &t0, t1);
  tb_finish(&b, t1);
  rc = tb_run(p, &b, NULL, kv, 1, ins, got, &err);
  CHECK(rc == MI_OK, "Log: %s", err.message);
  for (i = 0; rc == MI_OK && i < N; i++) {
    int ok = isnan(ref[i])   ? isnan(got[i])
             : isinf(ref[i]) ? got[i] == (float)ref[i]
                             : fabs((double)got[i] - ref[i]) <= 2e-7 * fabs(ref[i]) + 1e-30;
    if (!ok && bad++ < 3) CHECK(0, "Log simd %lld: x=%g got %.9g want %.9g", (long long)simd, x[i], got[i], ref[i]);
  }
  free(x);
  free(ref);
  free(got);
}

/* Softmax rows longer than a vector, with large logits (the max is subtracted first). */
static void softmax_long_case(tb_plugin_t *p, int64_t len, int64_t simd) {
  mi_knob_value_t kv[1] = {{"simd", simd, 0.}};
  int64_t d[2] = {3, len}, o, j;
  float *x = malloc((size_t)(3 * len) * 4), *ref = malloc((size_t)(3 * len) * 4);
  const float *ins[1] = {x};
  char name[48];
  tb_t b;
  int t0, t1;
  tb_fill(x, 3 * len, 31);
  for (j = 0; j < 3 * len; j++) x[j] *= 40.f;
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, d, NULL);
  t1 = tb_tensor(&b, 2, d, NULL);
  tb_node(&b, "Softmax", 13, 1, &t0, t1);
  tb_finish(&b, t1);
  for (o = 0; o < 3; o++) {
    double s = 0., m = -1e30;
    for (j = 0; j < len; j++) m = x[o * len + j] > m ? x[o * len + j] : m;
    for (j = 0; j < len; j++) s += exp(x[o * len + j] - m);
    for (j = 0; j < len; j++) ref[o * len + j] = (float)(exp(x[o * len + j] - m) / s);
  }
  snprintf(name, sizeof name, "softmax rows of %lld, simd %lld", (long long)len, (long long)simd);
  expect(p, &b, name, ins, ref, kv, 1);
  free(x);
  free(ref);
}

static tb_plugin_t p;

static void setup(void) {
  REQUIRE(tb_load(&p));
}

static void teardown(void) {
  tb_unload(&p);
}

static void gemm(void) {
  int ta, tb_;
  for (ta = 0; ta < 2; ta++)
    for (tb_ = 0; tb_ < 2; tb_++) gemm_case(&p, ta, tb_, 0.75f, 0.5f, 2);
  gemm_case(&p, 0, 1, 1.f, 1.f, 1);
  gemm_case(&p, 1, 0, 2.f, 0.f, 2);
}

static void matmul(void) {
  matmul_case(&p, 1);
  matmul_case(&p, 0);
  matmul_blocks_case(&p, 40, 120, 1000, 1);
  matmul_blocks_case(&p, 40, 120, 1000, 2);
  matmul_blocks_case(&p, 1000, 120, 40, 2);
  matmul_blocks_case(&p, 37, 96, 3001, 2);
}

static void softmax(void) {
  softmax_case(&p, 13, -1);
  softmax_case(&p, 13, 1);
  softmax_case(&p, 11, 1);
  softmax_case(&p, 11, 0);
}

/* every code path of knob simd (auto, then e.g. avx512, avx2, c) */
static void simd_paths(void) {
  int64_t si;
  CHECK(simd_choices(&p) >= 2, "knob simd has %lld values", (long long)simd_choices(&p));
  for (si = 0; si < simd_choices(&p); si++) {
    for (int64_t c = 2; c <= 5; c++) {
      transpose_case(&p, c, 40, si); /* two full steps of 16 and a tail of 8 */
      transpose_case(&p, c, 5, si);
    }
    softmax_long_case(&p, 37, si);
    softmax_long_case(&p, 100, si);
    softmax_long_case(&p, 5, si);  /* shorter than a vector */
    softmax_long_case(&p, 64, si); /* whole vectors only */
    log_case(&p, si);
    unary_case(&p, "Exp", NULL, si);
    unary_case(&p, "Erf", NULL, si);
    unary_case(&p, "Tanh", NULL, si);
    unary_case(&p, "Sigmoid", NULL, si);
    unary_case(&p, "Gelu", NULL, si);
    unary_case(&p, "Gelu", "tanh", si);
    /* the stride-2 horizontal max (AVX-512: 16 outputs a step; AVX2: 8, on the outputs whose
     * taps lie inside the row) */
    pool_case_simd(&p, "MaxPool", 0, 37, 3, si);
    pool_case_simd(&p, "MaxPool", 0, 40, 3, si);
    pool_case_simd(&p, "MaxPool", 0, 37, 2, si);
    pool_case_simd(&p, "MaxPool", 0, 32, 2, si);
    pool_case_simd(&p, "MaxPool", 0, 7, 3, si);
  }
}

/* The stride-2 Slice at each SIMD level (MI_BLIS_MAX_SIMD caps the plugin loaded for it). */
static void slice_step2(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  for (int lv = 0; lv < 3; lv++) {
    tb_plugin_t q;
    if (caps[lv]) setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    else
      unsetenv("MI_BLIS_MAX_SIMD");
    REQUIRE(tb_load(&q));
    for (int64_t b0 = 0; b0 < 2; b0++) {
      slice_step2_case(&q, 32, b0, caps[lv]);
      slice_step2_case(&q, 34, b0, caps[lv]);
      slice_step2_case(&q, 18, b0, caps[lv]);
      slice_step2_case(&q, 8, b0, caps[lv]);
    }
    tb_unload(&q);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
}

static void layernorm(void) {
  layernorm_case(&p, 8, 1);
  layernorm_case(&p, 37, 1);
  layernorm_case(&p, 37, 0); /* Scale alone (a PyTorch LayerNorm without bias) */
}

static void pool(void) {
  pool_case(&p, "MaxPool", 0, 7, 3);
  pool_case(&p, "MaxPool", 0, 37, 3); /* 19 outputs a row: a full block of 16 and a tail */
  pool_case(&p, "MaxPool", 0, 7, 2);
  pool_case(&p, "MaxPool", 0, 37, 2); /* 2x2/2 on AVX-512: 16 outputs a step, then a tail of 3 */
  pool_case(&p, "MaxPool", 0, 32, 2); /* an even width: no window past the edge */
  {
    static const int64_t widths[] = {2, 4, 8, 16, 36, 72};
    int64_t si, w;
    for (si = 0; si < simd_choices(&p); si++)
      for (w = 0; w < 6; w++) {
        tiled_pool_case(&p, 2, 2, widths[w], si);
        tiled_pool_case(&p, 1, 2, widths[w], si);
        tiled_pool_case(&p, 3, 1, widths[w], si);
      }
  }
  pool_case(&p, "AveragePool", 0, 7, 3);
  pool_case(&p, "AveragePool", 1, 7, 3);
  pool_case(&p, "AveragePool", 1, 37, 3);
  pool_case(&p, "AveragePool", 0, 37, 2);
}

static void binary(void) {
  slice_case(&p, 258, 1, 129, 258); /* Silero VAD's STFT halves: one run per image */
  slice_case(&p, 258, 1, 0, 129);
  slice_case(&p, 4100, 1, 1, 4100); /* past the 8192-float row cap: rows of 3 */
  slice_case(&p, 10, 2, 1, 3);      /* cut rows: no merge */
  binary_case(&p, "Add");
  binary_case(&p, "Sub");
  binary_case(&p, "Mul");
  binary_case(&p, "Div");
  binary_case(&p, "Max");
  binary_case(&p, "Min");
}

static void binary4(void) {
  static const int64_t big[4] = {2, 3, 4, 5}, se[4] = {1, 3, 1, 1};
  /* a last dim of 1 (dropped before the merge): equal shapes, a row broadcast, a scalar a plane */
  static const int64_t col[4] = {1, 6, 7, 1}, row[4] = {1, 1, 7, 1}, per[4] = {1, 6, 1, 1};
  static const char *const ops4[4] = {"Add", "Sub", "Mul", "Div"};
  int o;
  for (o = 0; o < 4; o++) {
    binary4_case(&p, ops4[o], big, se, 0);
    binary4_case(&p, ops4[o], se, big, 0);
    binary4_case(&p, ops4[o], big, big, 0);
    binary4_case(&p, ops4[o], col, col, 0);
    binary4_case(&p, ops4[o], col, row, 0);
    binary4_case(&p, ops4[o], per, col, 0);
  }
  /* rows longer than 8192 run as pieces of 4096 (the last shorter), split over threads: 6 rows of
   * 8200 by a scalar a row (3 pieces each), one row of 49200 (equal shapes, merged), and a scalar
   * on the left of it */
  for (o = 0; o < 4; o++) {
    static const int64_t lng[4] = {2, 3, 1, 8200}, one[4] = {1, 1, 1, 1};
    binary4_case(&p, ops4[o], lng, se, 2);
    binary4_case(&p, ops4[o], lng, lng, 2);
    binary4_case(&p, ops4[o], one, lng, 2);
    binary4_case(&p, ops4[o], lng, se, 1);
  }
}

static void global_pool(void) {
  global_pool_case(&p, "GlobalAveragePool");
  global_pool_case(&p, "GlobalMaxPool");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(gemm),
    TU_CASE(matmul),
    TU_CASE(softmax),
    TU_CASE(simd_paths),
    TU_CASE(slice_step2),
    TU_CASE(layernorm),
    TU_CASE(pool),
    TU_CASE(binary),
    TU_CASE(binary4),
    TU_CASE(global_pool),
};

TU_MAIN(setup, teardown)
