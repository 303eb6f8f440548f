/* zoo_mobilenet.c - MobileNetV2-like and MobileNetV3-like generators (inverted residuals, SE). */
#include <stdio.h>

#include "zoo_builder.h"

/* One stage of inverted residual blocks; the stride applies to its first block. */
typedef struct stage {
  int64_t kernel, expand, channels;
  int se;
  mi__zb_act_t act;
  int64_t stride;
} stage_t;

/* A narrow MobileNetV2: the real stage pattern, fewer and thinner stages so that the default
 * model stays small enough for the reference interpreter in tests. */
static const stage_t v2_stages[] = {
    {3, 1, 16, 0, MI__ZB_RELU6, 1},
    {3, 6, 24, 0, MI__ZB_RELU6, 2},
    {3, 6, 32, 0, MI__ZB_RELU6, 2},
    {3, 6, 64, 0, MI__ZB_RELU6, 2},
    {3, 6, 96, 0, MI__ZB_RELU6, 1},
    {3, 6, 160, 0, MI__ZB_RELU6, 2},
};

/* MobileNetV3-Small's pattern: 5x5 depthwise, squeeze-excite and hard-swish in later stages. */
static const stage_t v3_stages[] = {
    {3, 1, 16, 1, MI__ZB_RELU, 2},
    {3, 4, 24, 0, MI__ZB_RELU, 2},
    {5, 4, 40, 1, MI__ZB_HSWISH, 2},
    {5, 6, 48, 1, MI__ZB_HSWISH, 1},
    {5, 6, 96, 1, MI__ZB_HSWISH, 2},
};

#define NSTAGES(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

/* GlobalAveragePool, two 1x1 convs and a hard-sigmoid gate that rescales the channels. */
static int32_t squeeze_excite(mi__zb_t *b, const char *blk, int32_t x, int64_t c) {
  char n[96];
  int64_t sq = mi__zb_scale(1.0, c / 4, 8);
  int32_t s;
  snprintf(n, sizeof n, "%s.se.pool", blk);
  s = mi__zb_op1(b, "GlobalAveragePool", n, x);
  snprintf(n, sizeof n, "%s.se.reduce", blk);
  s = mi__zb_conv(b, n, s, c, sq, 1, 1, 1, 1);
  snprintf(n, sizeof n, "%s.se.relu", blk);
  s = mi__zb_op1(b, "Relu", n, s);
  snprintf(n, sizeof n, "%s.se.expand", blk);
  s = mi__zb_conv(b, n, s, sq, c, 1, 1, 1, 1);
  snprintf(n, sizeof n, "%s.se.gate", blk);
  s = mi__zb_op1(b, "HardSigmoid", n, s);
  mi__zb_attr_float(b, "alpha", 1.0f / 6.0f);
  mi__zb_attr_float(b, "beta", 0.5f);
  snprintf(n, sizeof n, "%s.se.scale", blk);
  return mi__zb_op2(b, "Mul", n, x, s);
}

/* 1x1 expand, kxk depthwise, optional SE, 1x1 linear projection, identity shortcut. */
static int32_t inverted_residual(mi__zb_t *b, int32_t index, int32_t x, int64_t cin,
                                 int64_t cout, const stage_t *st, int64_t stride) {
  char blk[32], n[96];
  int64_t hidden = cin * st->expand;
  int residual = stride == 1 && cin == cout;
  int32_t y = x;
  snprintf(blk, sizeof blk, "block%d", (int)index);
  if (st->expand != 1) {
    snprintf(n, sizeof n, "%s.expand", blk);
    y = mi__zb_conv_bn(b, n, y, cin, hidden, 1, 1, 1, st->act, 0);
  }
  snprintf(n, sizeof n, "%s.dw", blk);
  y = mi__zb_conv_bn(b, n, y, hidden, hidden, st->kernel, stride, hidden, st->act, 0);
  if (st->se) y = squeeze_excite(b, blk, y, hidden);
  snprintf(n, sizeof n, "%s.project", blk);
  y = mi__zb_conv_bn(b, n, y, hidden, cout, 1, 1, 1, MI__ZB_NONE, residual);
  if (residual) {
    snprintf(n, sizeof n, "%s.add", blk);
    y = mi__zb_op2(b, "Add", n, x, y);
  }
  return y;
}

/* Builds stem + stages; returns the last feature map and its channel count in *c_out. */
static int32_t mobilenet_body(mi__zb_t *b, const mi__zoo_cfg_t *c, const stage_t *stages,
                              int32_t nst, int64_t stem_c, mi__zb_act_t stem_act,
                              int64_t *c_out) {
  int64_t dims[4] = {c->batch, 3, c->resolution, c->resolution};
  int32_t per[8];
  int64_t stride = 2, cin;
  int32_t x, index = 0;
  mi__zoo_spread(c->depth, nst, per);
  for (int32_t s = 0; s < nst; s++)
    if (per[s] > 0) stride *= stages[s].stride;
  if (mi__zoo_check_stride(b, c, stride)) return -1;
  x = mi__zb_input(b, c->family->input_name, 4, dims);
  cin = mi__zb_scale(c->width, stem_c, 8);
  x = mi__zb_conv_bn(b, "stem", x, 3, cin, 3, 2, 1, stem_act, 0);
  for (int32_t s = 0; s < nst; s++) {
    int64_t cout = mi__zb_scale(c->width, stages[s].channels, 8);
    for (int32_t i = 0; i < per[s]; i++) {
      x = inverted_residual(b, index++, x, cin, cout, &stages[s], i == 0 ? stages[s].stride : 1);
      cin = cout;
    }
  }
  *c_out = cin;
  return x;
}

void mi__zoo_mobilenetv2(mi__zb_t *b, const mi__zoo_cfg_t *c) {
  int64_t cin = 0, last = mi__zb_scale(c->width > 1.0 ? c->width : 1.0, 512, 8);
  int32_t x = mobilenet_body(b, c, v2_stages, NSTAGES(v2_stages), 32, MI__ZB_RELU6, &cin);
  x = mi__zb_conv_bn(b, "head", x, cin, last, 1, 1, 1, MI__ZB_RELU6, 0);
  mi__zb_classifier(b, x, last, c->family->classes);
}

void mi__zoo_mobilenetv3(mi__zb_t *b, const mi__zoo_cfg_t *c) {
  int64_t cin = 0, od[2] = {b->batch, c->family->classes};
  int64_t hidden = mi__zb_scale(c->width > 1.0 ? c->width : 1.0, 256, 8);
  int32_t x = mobilenet_body(b, c, v3_stages, NSTAGES(v3_stages), 16, MI__ZB_HSWISH, &cin);
  int64_t last = cin * 6;
  x = mi__zb_conv_bn(b, "head", x, cin, last, 1, 1, 1, MI__ZB_HSWISH, 0);
  x = mi__zb_op1(b, "GlobalAveragePool", "head.pool", x);
  x = mi__zb_op1(b, "Flatten", "head.flatten", x);
  mi__zb_attr_int(b, "axis", 1);
  x = mi__zb_gemm(b, "head.fc", x, last, hidden, 1.0f);
  x = mi__zb_act(b, "head.fc.act", x, MI__ZB_HSWISH);
  x = mi__zb_gemm(b, "logits", x, hidden, c->family->classes, 0.7f);
  mi__zb_output(b, x, 2, od);
}
