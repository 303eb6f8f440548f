/* test_opencl_conv.c - convolution variants of the OpenCL plugin against a naive convolution:
 * odd shapes, stride 2, padding, groups, depthwise, and the fused Conv+BN+Relu+Add chain. */
#include "test_opencl_common.h"

#define NB 2
#define C 6
#define H 9
#define W 7
#define OC 6
#define KS 3
#define S 2
#define P 1
#define OH ((H + 2 * P - KS) / S + 1)
#define OW ((W + 2 * P - KS) / S + 1)

static float X[NB * C * H * W], Wt[OC * C * KS * KS], Bs[OC], Y[NB * OC * OH * OW],
    R[NB * OC * OH * OW], RES[NB * OC * OH * OW];
static float bn_s[OC], bn_b[OC], bn_m[OC], bn_v[OC];

static int conv_node(kd_t *k, int group, int with_bias, int x, int out) {
  static int64_t ks[2] = {KS, KS}, st[2] = {S, S}, pads[4] = {P, P, P, P};
  int64_t dw[4] = {OC, C / group, KS, KS}, db[1] = {OC};
  int in[3];
  mi_node_desc_t *n;
  in[0] = x;
  in[1] = kd_tensor(k, 4, dw, Wt);
  in[2] = with_bias ? kd_tensor(k, 1, db, Bs) : -1;
  n = kd_node(k, "Conv", with_bias ? 3 : 2, in, out);
  kd_attr_ints(k, n, "kernel_shape", 2, ks);
  kd_attr_ints(k, n, "strides", 2, st);
  kd_attr_ints(k, n, "pads", 4, pads);
  kd_attr_int(k, n, "group", group);
  return out;
}

static void conv_variant(ocl_t *o, const char *variant, int group, const char *knob, int64_t kv) {
  kd_t k;
  int64_t dx[4] = {NB, C, H, W}, dy[4] = {NB, OC, OH, OW};
  const float *ins[1] = {X};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  mi_run_stats_t st;
  double e;
  int x;
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 4, dx, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 4, dy, NULL);
  conv_node(&k, group, 1, x, k.outs[0]);
  if (knob) kd_knob(&k, knob, kv);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  memset(Y, 0, sizeof Y);
  if (ocl_run(o, kd_finish(&k, variant), ins, outs, &st, &err) != MI_OK)
    fprintf(stderr, "%s: %s\n", variant, err.message);
  REQUIRE(err.code == 0);
  ref_conv(X, Wt, Bs, R, NB, C, H, W, OC, KS, KS, S, P, group, OH, OW);
  e = tu_rel_l2(Y, R, sizeof Y / 4);
  fprintf(stderr, "%-18s group %d: rel L2 %.3g, device %llu ns\n", variant, group, e,
          (unsigned long long)st.device_time_ns);
  REQUIRE(e < 1e-5);
  REQUIRE(st.has_device_time == 1 && st.device_time_ns > 0);
}

/* Conv -> BatchNormalization -> Relu -> Add(residual) as one kernel, against the unfused ops. */
static void fused(ocl_t *o, const char *variant) {
  kd_t k;
  int64_t dx[4] = {NB, C, H, W}, dy[4] = {NB, OC, OH, OW}, dc[1] = {OC};
  const float *ins[2] = {X, RES};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  int x, t1, t2, t3, res, in[5], i;
  mi_node_desc_t *bn;
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 4, dx, NULL);
  t1 = kd_tensor(&k, 4, dy, NULL);
  conv_node(&k, 1, 1, x, t1);
  t2 = kd_tensor(&k, 4, dy, NULL);
  in[0] = t1;
  in[1] = kd_tensor(&k, 1, dc, bn_s);
  in[2] = kd_tensor(&k, 1, dc, bn_b);
  in[3] = kd_tensor(&k, 1, dc, bn_m);
  in[4] = kd_tensor(&k, 1, dc, bn_v);
  bn = kd_node(&k, "BatchNormalization", 5, in, t2);
  kd_attr_float(&k, bn, "epsilon", 1e-3f);
  t3 = kd_tensor(&k, 4, dy, NULL);
  kd_node(&k, "Relu", 1, &t2, t3);
  res = kd_tensor(&k, 4, dy, NULL);
  k.outs[k.nout++] = kd_tensor(&k, 4, dy, NULL);
  in[0] = t3;
  in[1] = res;
  kd_node(&k, "Add", 2, in, k.outs[0]);
  k.ins[k.nin++] = x;
  k.ins[k.nin++] = res;
  if (ocl_run(o, kd_finish(&k, variant), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "fused %s: %s\n", variant, err.message);
  REQUIRE(err.code == 0);
  ref_conv(X, Wt, Bs, R, NB, C, H, W, OC, KS, KS, S, P, 1, OH, OW);
  for (i = 0; i < NB * OC * OH * OW; i++) {
    int c = (i / (OH * OW)) % OC;
    double v = (R[i] - bn_m[c]) / sqrt(bn_v[c] + 1e-3) * bn_s[c] + bn_b[c];
    R[i] = (float)((v > 0 ? v : 0) + RES[i]);
  }
  REQUIRE(tu_rel_l2(Y, R, sizeof Y / 4) < 1e-5);
}

static ocl_t o;

static void setup(void) {
  memset(&o, 0, sizeof o);
  ocl_env(&o);
  ocl_open_or_skip(&o);
  int i;
  fill(X, sizeof X / 4, 11);
  fill(Wt, sizeof Wt / 4, 12);
  fill(Bs, OC, 13);
  fill(RES, sizeof RES / 4, 14);
  fill(bn_s, OC, 15);
  fill(bn_b, OC, 16);
  fill(bn_m, OC, 17);
  fill(bn_v, OC, 18);
  for (i = 0; i < OC; i++) bn_v[i] = bn_v[i] * bn_v[i] + 0.1f;
}

static void teardown(void) {
  ocl_close(&o);
  ocl_rm_cache(&o);
}

static void variants(void) {
  conv_variant(&o, "conv.direct", 1, "unroll", 2);
  conv_variant(&o, "conv.direct", 3, NULL, 0);
  conv_variant(&o, "conv.im2col_gemm", 1, NULL, 0);
  conv_variant(&o, "conv.im2col_gemm", 2, "use_local_memory", 0);
  conv_variant(&o, "conv.implicit_gemm", 1, NULL, 0);
  conv_variant(&o, "conv.implicit_gemm", 2, NULL, 0);
  conv_variant(&o, "conv.implicit_gemm", 3, "use_local_memory", 0);
  conv_variant(&o, "conv.implicit_gemm", 1, "tile_k", 1);
  conv_variant(&o, "conv.depthwise", C, "wg_x", 32);
  conv_variant(&o, NULL, C, NULL, 0); /* default picks depthwise */
}

static void fused_epilogues(void) {
  fused(&o, "conv.im2col_gemm");
  fused(&o, "conv.implicit_gemm");
  fused(&o, "conv.direct");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(variants),
    TU_CASE(fused_epilogues),
};

TU_MAIN(setup, teardown)
