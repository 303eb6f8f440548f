/* test_npu_numerics.c - npu-stub arithmetic: INT8 bit-exact against an independent reference,
 * INT4 weights, fused chains, and the FP16 path close to FP32. */
#include "test_npu_util.h"

/* Round half to even, written without nearbyint so the reference is independent. */
static double rhe(double v) {
  double f = floor(v), d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return fmod(f, 2.0) == 0 ? f : f + 1;
}
static int8_t sat(double v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127
                                                                        : v); }
static int8_t q_of(double real, float s, int zp) { return sat(rhe(real / (double)s) + zp); }

typedef struct rconv {
  int N, C, H, W, M, KH, KW, sh, sw, pt, pl, dh, dw, group, Ho, Wo;
  float sx, sy;
  int zx, zy;
  const float *sw_c;
  const int32_t *bias;
} rconv_t;

static void ref_conv(const rconv_t *c, const int8_t *x, const int8_t *w, int8_t *y) {
  int n, m, oh, ow, ic, r, s, cg = c->C / c->group, mg = c->M / c->group;
  for (n = 0; n < c->N; n++)
    for (m = 0; m < c->M; m++)
      for (oh = 0; oh < c->Ho; oh++)
        for (ow = 0; ow < c->Wo; ow++) {
          long long acc = c->bias ? c->bias[m] : 0;
          double mult = (double)c->sx * (double)c->sw_c[m] / (double)c->sy;
          for (ic = 0; ic < cg; ic++)
            for (r = 0; r < c->KH; r++)
              for (s = 0; s < c->KW; s++) {
                int ih = oh * c->sh - c->pt + r * c->dh, iw = ow * c->sw - c->pl + s * c->dw;
                int ci = (m / mg) * cg + ic;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                acc += (long long)(x[((n * c->C + ci) * c->H + ih) * c->W + iw] - c->zx) *
                       w[((m * cg + ic) * c->KH + r) * c->KW + s];
              }
          y[((n * c->M + m) * c->Ho + oh) * c->Wo + ow] = sat(rhe((double)acc * mult) + c->zy);
        }
}

/* Builds Conv [+ extra nodes] for the INT8 tests; returns the conv output tensor index. */
static int add_conv(kb_t *k, const rconv_t *c, int x, const int8_t *w, int wdtype,
                    const void *wdata, uint64_t wbytes) {
  int64_t wd[4] = {c->M, c->C / c->group, c->KH, c->KW}, bd[1] = {c->M};
  int64_t yd[4] = {c->N, c->M, c->Ho, c->Wo};
  int64_t st[2] = {c->sh, c->sw}, pads[4] = {c->pt, c->pl, c->pt, c->pl}, dl[2] = {c->dh, c->dw};
  int wt, bt, yt, node;
  int32_t ins[3];
  (void)w;
  wt = kb_tensor(k, wdtype, 4, wd, wdata, wbytes);
  k->t[wt].channel_axis = 0;
  k->t[wt].channel_count = (uint32_t)c->M;
  k->t[wt].channel_scales = c->sw_c;
  bt = kb_tensor(k, MI_DTYPE_INT32, 1, bd, c->bias, sizeof(int32_t) * (size_t)c->M);
  yt = kb_tensor(k, MI_DTYPE_INT8, 4, yd, NULL, 0);
  kb_quant(k, yt, c->sy, c->zy);
  ins[0] = x;
  ins[1] = wt;
  ins[2] = bt;
  node = kb_node(k, "Conv", ins, 3, yt);
  kb_ints(k, node, "strides", st, 2);
  kb_ints(k, node, "pads", pads, 4);
  kb_ints(k, node, "dilations", dl, 2);
  kb_int(k, node, "group", c->group);
  return yt;
}

static void check_conv(npu_t *p, rconv_t c, uint32_t seed) {
  size_t nx = (size_t)(c.N * c.C * c.H * c.W), nw = (size_t)(c.M * (c.C / c.group) * c.KH * c.KW);
  size_t ny = (size_t)(c.N * c.M * c.Ho * c.Wo), i;
  int8_t *x = malloc(nx), *w = malloc(nw), *y = malloc(ny), *ref = malloc(ny);
  float *swc = malloc(sizeof(float) * (size_t)c.M);
  int32_t *bias = malloc(sizeof(int32_t) * (size_t)c.M);
  int64_t xd[4] = {c.N, c.C, c.H, c.W};
  kb_t k;
  kr_t r;
  mi_error_t err;
  const void *ins[1];
  int xt, yt;
  fill_i8(x, nx, -128, 127, seed);
  fill_i8(w, nw, -127, 127, seed + 1);
  for (i = 0; i < (size_t)c.M; i++) {
    swc[i] = 0.002f + 0.0005f * (float)(i % 7);
    bias[i] = (int32_t)((int)(i * 37 % 401) - 200);
  }
  c.sw_c = swc;
  c.bias = bias;
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(&k, xt, c.sx, c.zx);
  yt = add_conv(&k, &c, xt, w, MI_DTYPE_INT8, w, nw);
  ins[0] = x;
  if (kr_prepare(&r, p, 0, &k, yt, ins, &err) != MI_OK) {
    fprintf(stderr, "prepare: %s\n", err.message);
    exit(1);
  }
  kr_run(&r, y, NULL);
  kr_release(&r);
  ref_conv(&c, x, w, ref);
  for (i = 0; i < ny; i++)
    if (y[i] != ref[i]) {
      fprintf(stderr, "conv group=%d: y[%zu]=%d ref=%d\n", c.group, i, y[i], ref[i]);
      exit(1);
    }
  /* the reference must exercise saturation and rounding, not only zeros */
  {
    int distinct = 0, hist[256] = {0};
    for (i = 0; i < ny; i++) hist[ref[i] + 128]++;
    for (i = 0; i < 256; i++) distinct += hist[i] > 0;
    REQUIRE(distinct > 20);
  }
  /* UINT8 activations (what the host quantizer emits): codes u = q + 128 with zero points
   * z + 128 are the same reals, so the output codes are the INT8 ones shifted by 128 */
  {
    unsigned char *xu = malloc(nx), *yu = malloc(ny);
    REQUIRE(xu && yu);
    for (i = 0; i < nx; i++) xu[i] = (unsigned char)(x[i] + 128);
    memset(&k, 0, sizeof k);
    xt = kb_tensor(&k, MI_DTYPE_UINT8, 4, xd, NULL, 0);
    kb_quant(&k, xt, c.sx, c.zx + 128);
    yt = add_conv(&k, &c, xt, w, MI_DTYPE_INT8, w, nw);
    k.t[yt].dtype = MI_DTYPE_UINT8;
    kb_quant(&k, yt, c.sy, c.zy + 128);
    ins[0] = xu;
    REQUIRE(kr_prepare(&r, p, 0, &k, yt, ins, &err) == MI_OK);
    kr_run(&r, yu, NULL);
    kr_release(&r);
    for (i = 0; i < ny; i++) REQUIRE((int)yu[i] == ref[i] + 128);
    free(xu);
    free(yu);
    ins[0] = x;
  }
  /* INT4 weights: the same values packed two per byte give the same result */
  if (c.group == 1) {
    int8_t *w4 = malloc(nw);
    unsigned char *packed = calloc((nw + 1) / 2, 1);
    int8_t *y4 = malloc(ny);
    for (i = 0; i < nw; i++) {
      w4[i] = (int8_t)(w[i] % 8);
      packed[i / 2] |= (unsigned char)(((unsigned)w4[i] & 0xFu) << ((i & 1) * 4));
    }
    memset(&k, 0, sizeof k);
    xt = kb_tensor(&k, MI_DTYPE_INT8, 4, xd, NULL, 0);
    kb_quant(&k, xt, c.sx, c.zx);
    yt = add_conv(&k, &c, xt, w4, MI_DTYPE_INT4, packed, (nw + 1) / 2);
    REQUIRE(kr_prepare(&r, p, 0, &k, yt, ins, &err) == MI_OK);
    kr_run(&r, y4, NULL);
    kr_release(&r);
    ref_conv(&c, x, w4, ref);
    REQUIRE(memcmp(y4, ref, ny) == 0);
    free(w4);
    free(packed);
    free(y4);
  }
  free(x);
  free(w);
  free(y);
  free(ref);
  free(swc);
  free(bias);
}

/* Conv -> BatchNormalization -> Relu -> Add(residual) as ONE kernel, against the chain of
 * per-node references with the same intermediate quantization. */
static void check_fused_chain(npu_t *p) {
  enum { C = 16,
         H = 10,
         W = 10,
         NX = C * H * W };
  rconv_t c = {1, C, H, W, C, 3, 3, 1, 1, 1, 1, 1, 1, 1, H, W, 0.04f, 0.05f, 3, 2, NULL, NULL};
  static int8_t x[NX], w[C * C * 9], yc[NX], yb[NX], yr[NX], ya[NX], out[NX];
  float swc[C], gamma[C], beta[C], mean[C], var[C];
  int32_t bias[C];
  int64_t d4[4] = {1, C, H, W}, d1[1] = {C};
  int i, xt, ct, bt, rt, at, pt[4], node;
  int32_t ins[5];
  kb_t k;
  kr_t r;
  mi_error_t err;
  const void *in[1] = {x};
  fill_i8(x, NX, -128, 127, 11);
  fill_i8(w, sizeof w, -100, 100, 12);
  for (i = 0; i < C; i++) {
    swc[i] = 0.003f + 0.0004f * (float)i;
    bias[i] = 50 * i - 300;
    gamma[i] = 0.5f + 0.1f * (float)i;
    beta[i] = -0.3f + 0.05f * (float)i;
    mean[i] = 0.1f * (float)(i % 5);
    var[i] = 0.5f + 0.2f * (float)(i % 3);
  }
  c.sw_c = swc;
  c.bias = bias;
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_INT8, 4, d4, NULL, 0);
  kb_quant(&k, xt, 0.04f, 3);
  ct = add_conv(&k, &c, xt, w, MI_DTYPE_INT8, w, sizeof w);
  pt[0] = kb_tensor(&k, MI_DTYPE_FLOAT32, 1, d1, gamma, sizeof gamma);
  pt[1] = kb_tensor(&k, MI_DTYPE_FLOAT32, 1, d1, beta, sizeof beta);
  pt[2] = kb_tensor(&k, MI_DTYPE_FLOAT32, 1, d1, mean, sizeof mean);
  pt[3] = kb_tensor(&k, MI_DTYPE_FLOAT32, 1, d1, var, sizeof var);
  bt = kb_tensor(&k, MI_DTYPE_INT8, 4, d4, NULL, 0);
  kb_quant(&k, bt, 0.06f, -1);
  ins[0] = ct;
  ins[1] = pt[0];
  ins[2] = pt[1];
  ins[3] = pt[2];
  ins[4] = pt[3];
  node = kb_node(&k, "BatchNormalization", ins, 5, bt);
  (void)node;
  rt = kb_tensor(&k, MI_DTYPE_INT8, 4, d4, NULL, 0);
  kb_quant(&k, rt, 0.03f, -128);
  ins[0] = bt;
  kb_node(&k, "Relu", ins, 1, rt);
  at = kb_tensor(&k, MI_DTYPE_INT8, 4, d4, NULL, 0);
  kb_quant(&k, at, 0.07f, 0);
  ins[0] = rt;
  ins[1] = xt;
  kb_node(&k, "Add", ins, 2, at);
  if (kr_prepare(&r, p, 0, &k, at, in, &err) != MI_OK) {
    fprintf(stderr, "fused prepare: %s\n", err.message);
    exit(1);
  }
  REQUIRE(r.nin == 1);
  kr_run(&r, out, NULL);
  kr_release(&r);
  ref_conv(&c, x, w, yc);
  for (i = 0; i < NX; i++) {
    int ch = (i / (H * W)) % C;
    double v = (double)0.05f * (yc[i] - 2);
    v = (double)gamma[ch] * (v - mean[ch]) / sqrt((double)var[ch] + (double)1e-5f) + beta[ch];
    yb[i] = q_of(v, 0.06f, -1);
    v = (double)0.06f * (yb[i] + 1);
    yr[i] = q_of(v > 0 ? v : 0, 0.03f, -128);
    ya[i] = q_of((double)0.03f * (yr[i] + 128) + (double)0.04f * (x[i] - 3), 0.07f, 0);
  }
  (void)ya;
  for (i = 0; i < NX; i++)
    if (out[i] != ya[i]) {
      fprintf(stderr, "fused: out[%d]=%d ref=%d\n", i, out[i], ya[i]);
      exit(1);
    }
}

/* Gemm with transB, per-channel scales and a FLOAT32 bias, which the output stage adds in
 * output units during the requantization (the host quantizer keeps biases FP32). */
static void check_gemm(npu_t *p) {
  enum { M = 3,
         K = 40,
         N = 24 };
  int8_t a[M * K], b[N * K], y[M * N];
  float sb[N], bias[N];
  int64_t ad[2] = {M, K}, bd[2] = {N, K}, cd[1] = {N}, yd[2] = {M, N};
  int i, j, kk, at, bt, ct, yt, node;
  int32_t ins[3];
  kb_t k;
  kr_t r;
  mi_error_t err;
  const void *in[1] = {a};
  fill_i8(a, sizeof a, -128, 127, 21);
  fill_i8(b, sizeof b, -127, 127, 22);
  for (i = 0; i < N; i++) {
    sb[i] = 0.01f + 0.001f * (float)i;
    bias[i] = -1.0f + 0.09f * (float)i;
  }
  memset(&k, 0, sizeof k);
  at = kb_tensor(&k, MI_DTYPE_INT8, 2, ad, NULL, 0);
  kb_quant(&k, at, 0.02f, -4);
  bt = kb_tensor(&k, MI_DTYPE_INT8, 2, bd, b, sizeof b);
  k.t[bt].channel_count = N;
  k.t[bt].channel_scales = sb;
  ct = kb_tensor(&k, MI_DTYPE_FLOAT32, 1, cd, bias, sizeof bias);
  yt = kb_tensor(&k, MI_DTYPE_INT8, 2, yd, NULL, 0);
  kb_quant(&k, yt, 0.15f, 1);
  ins[0] = at;
  ins[1] = bt;
  ins[2] = ct;
  node = kb_node(&k, "Gemm", ins, 3, yt);
  kb_int(&k, node, "transB", 1);
  REQUIRE(kr_prepare(&r, p, 0, &k, yt, in, &err) == MI_OK);
  kr_run(&r, y, NULL);
  kr_release(&r);
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      long long acc = 0;
      double accs = (double)0.02f * (double)sb[j];
      for (kk = 0; kk < K; kk++) acc += (long long)(a[i * K + kk] + 4) * b[j * K + kk];
      REQUIRE(y[i * N + j] ==
              sat(rhe((double)acc * (accs / (double)0.15f) + (double)bias[j] / (double)0.15f) + 1));
    }
}

/* FLOAT32 tensors run in FP16: Conv + Relu close to a double-precision reference. */
static void check_fp16(npu_t *p) {
  enum { C = 16,
         H = 12,
         W = 12,
         M = 32,
         NY = M * H * W };
  static float x[C * H * W], w[M * C * 9], b[M], y[NY];
  int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, 3, 3}, bd[1] = {M}, yd[4] = {1, M, H, W};
  int64_t pads[4] = {1, 1, 1, 1};
  int xt, wt, bt, ct, yt, node, m, oh, ow, ic, r0, s0;
  int32_t ins[3];
  double num = 0, den = 0;
  kb_t k;
  kr_t r;
  mi_error_t err;
  const void *in[1] = {x};
  fill_f32(x, C * H * W, -1.0f, 1.0f, 31);
  fill_f32(w, M * C * 9, -0.3f, 0.3f, 32);
  fill_f32(b, M, -0.2f, 0.2f, 33);
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_FLOAT32, 4, xd, NULL, 0);
  wt = kb_tensor(&k, MI_DTYPE_FLOAT32, 4, wd, w, sizeof w);
  bt = kb_tensor(&k, MI_DTYPE_FLOAT32, 1, bd, b, sizeof b);
  ct = kb_tensor(&k, MI_DTYPE_FLOAT32, 4, yd, NULL, 0);
  yt = kb_tensor(&k, MI_DTYPE_FLOAT32, 4, yd, NULL, 0);
  ins[0] = xt;
  ins[1] = wt;
  ins[2] = bt;
  node = kb_node(&k, "Conv", ins, 3, ct);
  kb_ints(&k, node, "pads", pads, 4);
  ins[0] = ct;
  kb_node(&k, "Relu", ins, 1, yt);
  REQUIRE(kr_prepare(&r, p, 0, &k, yt, in, &err) == MI_OK);
  kr_run(&r, y, NULL);
  kr_release(&r);
  for (m = 0; m < M; m++)
    for (oh = 0; oh < H; oh++)
      for (ow = 0; ow < W; ow++) {
        double acc = b[m], got = y[(m * H + oh) * W + ow];
        for (ic = 0; ic < C; ic++)
          for (r0 = 0; r0 < 3; r0++)
            for (s0 = 0; s0 < 3; s0++) {
              int ih = oh - 1 + r0, iw = ow - 1 + s0;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              acc += (double)x[(ic * H + ih) * W + iw] * w[((m * C + ic) * 3 + r0) * 3 + s0];
            }
        if (acc < 0) acc = 0;
        num += (got - acc) * (got - acc);
        den += acc * acc;
      }
  printf("fp16 conv+relu rel L2 vs fp64 = %.3g\n", sqrt(num / den));
  REQUIRE(sqrt(num / den) < 1e-2);
  REQUIRE(sqrt(num / den) > 1e-6); /* it really rounded to half precision */
}

/* INT8 AveragePool (pads, count_include_pad=0) and Sigmoid lookup table vs reference. */
static void check_pool_sigmoid(npu_t *p) {
  enum { C = 5,
         H = 7,
         W = 7,
         HO = 4,
         WO = 4 };
  int8_t x[C * H * W], y[C * HO * WO], s[C * H * W];
  int64_t xd[4] = {1, C, H, W}, yd[4] = {1, C, HO, WO}, ks[2] = {3, 3}, st[2] = {2, 2};
  int64_t pads[4] = {1, 1, 1, 1};
  int xt, yt, node, c, oh, ow, i, j;
  int32_t ins[1];
  kb_t k;
  kr_t r;
  mi_error_t err;
  const void *in[1] = {x};
  fill_i8(x, sizeof x, -128, 127, 41);
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(&k, xt, 0.1f, 5);
  yt = kb_tensor(&k, MI_DTYPE_INT8, 4, yd, NULL, 0);
  kb_quant(&k, yt, 0.07f, -3);
  ins[0] = xt;
  node = kb_node(&k, "AveragePool", ins, 1, yt);
  kb_ints(&k, node, "kernel_shape", ks, 2);
  kb_ints(&k, node, "strides", st, 2);
  kb_ints(&k, node, "pads", pads, 4);
  REQUIRE(kr_prepare(&r, p, 0, &k, yt, in, &err) == MI_OK);
  kr_run(&r, y, NULL);
  kr_release(&r);
  for (c = 0; c < C; c++)
    for (oh = 0; oh < HO; oh++)
      for (ow = 0; ow < WO; ow++) {
        long long sum = 0, cnt = 0;
        for (i = 0; i < 3; i++)
          for (j = 0; j < 3; j++) {
            int ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            sum += x[(c * H + ih) * W + iw] - 5;
            cnt++;
          }
        REQUIRE(y[(c * HO + oh) * WO + ow] == q_of((double)0.1f * (double)sum / (double)cnt, 0.07f, -3));
      }
  memset(&k, 0, sizeof k);
  xt = kb_tensor(&k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(&k, xt, 0.05f, 0);
  yt = kb_tensor(&k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(&k, yt, 1.0f / 256, -128);
  ins[0] = xt;
  kb_node(&k, "Sigmoid", ins, 1, yt);
  REQUIRE(kr_prepare(&r, p, 0, &k, yt, in, &err) == MI_OK);
  kr_run(&r, s, NULL);
  kr_release(&r);
  for (i = 0; i < C * H * W; i++)
    REQUIRE(s[i] == q_of(1.0 / (1.0 + exp(-(double)0.05f * x[i])), 1.0f / 256, -128));
}

static npu_t p;
static int p_open;
static rconv_t plain = {2, 20, 9, 9, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 5, 5, 0.05f, 0.08f, 3, -5, NULL, NULL};
static rconv_t grouped = {1, 16, 9, 9, 8, 3, 3, 1, 1, 0, 0, 2, 2, 4, 5, 5, 0.03f, 0.02f, -2, 4, NULL, NULL};
static rconv_t depthwise = {1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16, 8, 8, 0.05f, 0.01f, 0, 0, NULL, NULL};

static void setup(void) {
  mi_error_t err;
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK, "create: %s", err.message);
  p_open = 1;
}

static void teardown(void) {
  if (p_open) npu_close(&p);
}

static void convs(void) {
  check_conv(&p, plain, 1);
  check_conv(&p, grouped, 2);
  check_conv(&p, depthwise, 3);
}

static void fused_chain(void) {
  check_fused_chain(&p);
}

static void gemm(void) {
  check_gemm(&p);
}

static void pool_sigmoid(void) {
  check_pool_sigmoid(&p);
}

static void fp16(void) {
  check_fp16(&p);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(convs),
    TU_CASE(fused_chain),
    TU_CASE(gemm),
    TU_CASE(pool_sigmoid),
    TU_CASE(fp16),
};

TU_MAIN(setup, teardown)
