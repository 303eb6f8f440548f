/* test_opencl_pad.c - Pad (constant, reflect, edge, negative pads) and Split of the OpenCL
 * plugin against naive C loops: the host's reference has neither op, so C is the oracle here. */
#include "test_opencl_common.h"

#define H 4
#define W 5
static float X[2 * H * W], Y[2 * 16 * 16], R[2 * 16 * 16];
static ocl_t o;

/* Index of padded coordinate c (pad `b` before) into an axis of length n, -1 = constant. */
static int src_index(int c, int b, int n, int mode) {
  int s = c - b, per = 2 * (n - 1);
  if (s >= 0 && s < n) return s;
  if (mode == 0) return -1;
  if (mode == 2) return s < 0 ? 0 : n - 1;
  s %= per;
  if (s < 0) s += per;
  return s >= n ? per - s : s;
}

static void pad_case(int mode, const int64_t *pads, float value) {
  static const char *modes[] = {"constant", "reflect", "edge"};
  kd_t k;
  int64_t dx[3] = {2, H, W}, dy[3], dp[1] = {6}, dv[1] = {1};
  int in[3], c, h, w, t;
  const float *ins[1] = {X};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  mi_node_desc_t *n;
  double e;
  for (t = 0; t < 3; t++) dy[t] = dx[t] + pads[t] + pads[3 + t];
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 3, dx, NULL);
  in[1] = kd_tensor(&k, 1, dp, NULL);
  k.t[in[1]].dtype = MI_DTYPE_INT64; /* constant pads */
  k.t[in[1]].data = pads;
  k.t[in[1]].data_bytes = 6 * sizeof *pads;
  in[2] = kd_tensor(&k, 0, dv, &value);
  k.ins[k.nin++] = in[0];
  k.outs[k.nout++] = kd_tensor(&k, 3, dy, NULL);
  n = kd_node(&k, "Pad", 3, in, k.outs[0]);
  n->opset = 13;
  {
    mi_attr_t *a = &k.attrs[0][n->attr_count++];
    memset(a, 0, sizeof *a);
    a->name = "mode";
    a->type = MI_ATTR_STRING;
    a->s = modes[mode];
  }
  for (c = 0; c < dy[0]; c++)
    for (h = 0; h < dy[1]; h++)
      for (w = 0; w < dy[2]; w++) {
        int sc = src_index(c, (int)pads[0], 2, mode), sh = src_index(h, (int)pads[1], H, mode);
        int sw = src_index(w, (int)pads[2], W, mode);
        R[(c * dy[1] + h) * dy[2] + w] =
            sc < 0 || sh < 0 || sw < 0 ? value : X[(sc * H + sh) * W + sw];
      }
  memset(Y, 0, sizeof Y);
  if (ocl_run(&o, kd_finish(&k, NULL), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "Pad %s: %s\n", modes[mode], err.message);
  REQUIRE(err.code == 0);
  e = tu_rel_l2(Y, R, (size_t)(dy[0] * dy[1] * dy[2]));
  fprintf(stderr, "Pad %-8s pads %lld,%lld,%lld / %lld,%lld,%lld: rel L2 %.3g\n", modes[mode],
          (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3],
          (long long)pads[4], (long long)pads[5], e);
  REQUIRE(e == 0.0);
}

/* Split [2,H,W] along axis 2 into widths 1, 3, 1: three outputs, one strided copy each. */
static void split_case(void) {
  static float Y0[2 * H * 1], Y1[2 * H * 3], Y2[2 * H * 1];
  kd_t k;
  int64_t dx[3] = {2, H, W}, d0[3] = {2, H, 1}, d1[3] = {2, H, 3}, parts[3] = {1, 3, 1}, dp[1] = {3};
  int in[2], c, h, w;
  const float *ins[1] = {X};
  float *outs[3] = {Y0, Y1, Y2};
  mi_error_t err = {0, ""};
  mi_node_desc_t *n;
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 3, dx, NULL);
  in[1] = kd_tensor(&k, 1, dp, NULL);
  k.t[in[1]].dtype = MI_DTYPE_INT64;
  k.t[in[1]].data = parts;
  k.t[in[1]].data_bytes = sizeof parts;
  k.ins[k.nin++] = in[0];
  k.outs[k.nout++] = kd_tensor(&k, 3, d0, NULL);
  k.outs[k.nout++] = kd_tensor(&k, 3, d1, NULL);
  k.outs[k.nout++] = kd_tensor(&k, 3, d0, NULL);
  n = kd_node(&k, "Split", 2, in, k.outs[0]);
  n->opset = 13;
  n->output_count = 3;
  k.io[0][1][1] = k.outs[1];
  k.io[0][1][2] = k.outs[2];
  kd_attr_int(&k, n, "axis", 2);
  if (ocl_run(&o, kd_finish(&k, NULL), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "Split: %s\n", err.message);
  REQUIRE(err.code == 0);
  for (c = 0; c < 2; c++)
    for (h = 0; h < H; h++)
      for (w = 0; w < W; w++) {
        float v = X[(c * H + h) * W + w];
        if (w == 0) REQUIRE(Y0[c * H + h] == v);
        else if (w < 4)
          REQUIRE(Y1[(c * H + h) * 3 + w - 1] == v);
        else
          REQUIRE(Y2[c * H + h] == v);
      }
  fprintf(stderr, "Split axis 2 into 1,3,1: exact\n");
}

static const int64_t p1[6] = {0, 1, 2, 1, 2, 0}, p2[6] = {1, 3, 4, 0, 2, 3};
static const int64_t crop[6] = {0, -1, 2, 0, 1, -2};

static void setup(void) {
  memset(&o, 0, sizeof o);
  ocl_env(&o);
  ocl_open_or_skip(&o);
  fill(X, sizeof X / 4, 31);
}

static void teardown(void) {
  ocl_close(&o);
  ocl_rm_cache(&o);
}

static void pad(void) {
  pad_case(0, p1, 0.25f);
  pad_case(1, p2, 0.f); /* reflect wider than the axis (3 + 4 on W=5) folds back twice */
  pad_case(2, p2, 0.f);
  pad_case(0, crop, -1.f);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(pad),
    TU_CASE(split_case),
};

TU_MAIN(setup, teardown)
