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
  outer = axis == 0 ? 1 : axis == 1 ? 3 : 12;
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

static void layernorm_case(tb_plugin_t *p) {
  int64_t d[3] = {2, 3, 8}, ld = 8, o, j;
  float x[48], g[8], be[8], ref[48];
  const float *ins[1] = {x};
  tb_t b;
  int t0, t1, t2, t3, node;
  tb_fill(x, 48, 30);
  tb_fill(g, 8, 31);
  tb_fill(be, 8, 32);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 3, d, NULL);
  t1 = tb_tensor(&b, 1, &ld, g);
  t2 = tb_tensor(&b, 1, &ld, be);
  t3 = tb_tensor(&b, 3, d, NULL);
  {
    int in[3] = {t0, t1, t2};
    node = tb_node(&b, "LayerNormalization", 17, 3, in, t3);
  }
  tb_attr_i(&b, node, "axis", -1);
  tb_finish(&b, t3);
  for (o = 0; o < 6; o++) {
    double m = 0., v = 0.;
    for (j = 0; j < 8; j++) m += x[o * 8 + j];
    m /= 8;
    for (j = 0; j < 8; j++) v += (x[o * 8 + j] - m) * (x[o * 8 + j] - m);
    v /= 8;
    for (j = 0; j < 8; j++) ref[o * 8 + j] = (float)((x[o * 8 + j] - m) / sqrt(v + 1e-5) * g[j] + be[j]);
  }
  expect(p, &b, "layernorm", ins, ref, NULL, 0);
}

/* 3x3 stride 2 pad 1 pools on 8x7 with ceil_mode: the last window hangs over the edge. */
static void pool_case(tb_plugin_t *p, const char *op, int include_pad) {
  int64_t xd[4] = {1, 2, 8, 7}, k[2] = {3, 3}, s[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
  int64_t oh = (8 + 2 - 3 + 1) / 2 + 1, ow = (7 + 2 - 3 + 1) / 2 + 1, yd[4] = {1, 2, oh, ow}, c, i, j, a, bb;
  float x[112], ref[64];
  const float *ins[1] = {x};
  char name[64];
  int is_max = strcmp(op, "MaxPool") == 0, t0, t1, node;
  tb_t b;
  tb_fill(x, 112, 40);
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
        for (a = 0; a < 3; a++)
          for (bb = 0; bb < 3; bb++) {
            int64_t ih = i * 2 - 1 + a, iw = j * 2 - 1 + bb;
            if (ih <= 8 && iw <= 7) padcnt++; /* inside the padded input (pad 1 each side) */
            if (ih < 0 || ih >= 8 || iw < 0 || iw >= 7) continue;
            acc = is_max ? fmax(acc, x[(c * 8 + ih) * 7 + iw]) : acc + x[(c * 8 + ih) * 7 + iw];
            cnt++;
          }
        ref[(c * oh + i) * ow + j] = (float)(is_max ? acc : acc / (include_pad ? padcnt : cnt));
      }
  snprintf(name, sizeof name, "%s ceil include_pad=%d", op, include_pad);
  expect(p, &b, name, ins, ref, NULL, 0);
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
    ref[i] = op[0] == 'A' ? u + v : op[0] == 'S' ? u - v : op[0] == 'M' && op[1] == 'u' ? u * v
             : op[0] == 'D' ? u / v : op[1] == 'a' ? fmaxf(u, v) : fminf(u, v);
  }
  expect(p, &b, op, ins, ref, NULL, 0);
}

int main(void) {
  tb_plugin_t p;
  int ta, tb_;
  if (!tb_load(&p)) return 1;
  for (ta = 0; ta < 2; ta++)
    for (tb_ = 0; tb_ < 2; tb_++) gemm_case(&p, ta, tb_, 0.75f, 0.5f, 2);
  gemm_case(&p, 0, 1, 1.f, 1.f, 1);
  gemm_case(&p, 1, 0, 2.f, 0.f, 2);
  matmul_case(&p, 1);
  matmul_case(&p, 0);
  softmax_case(&p, 13, -1);
  softmax_case(&p, 13, 1);
  softmax_case(&p, 11, 1);
  softmax_case(&p, 11, 0);
  layernorm_case(&p);
  pool_case(&p, "MaxPool", 0);
  pool_case(&p, "AveragePool", 0);
  pool_case(&p, "AveragePool", 1);
  binary_case(&p, "Add");
  binary_case(&p, "Sub");
  binary_case(&p, "Mul");
  binary_case(&p, "Div");
  binary_case(&p, "Max");
  binary_case(&p, "Min");
  tb_unload(&p);
  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
