/* zoo_cnn.c - ResNet-like (basic blocks) and keyword-spotting (DS-CNN-like) generators. */
#include <stdio.h>

#include "zoo_builder.h"

static const struct {
  int64_t channels, stride;
} resnet_stages[] = {{16, 1}, {32, 2}, {64, 2}, {128, 2}};

/* 3x3 conv-BN-ReLU, 3x3 conv-BN, shortcut (identity or strided 1x1 projection), add, ReLU. */
static int32_t basic_block(mi__zb_t *b, int32_t index, int32_t x, int64_t cin, int64_t cout,
                           int64_t stride) {
  char n[64];
  int32_t y, sc = x;
  snprintf(n, sizeof n, "block%d.conv1", (int)index);
  y = mi__zb_conv_bn(b, n, x, cin, cout, 3, stride, 1, MI__ZB_RELU, 0);
  snprintf(n, sizeof n, "block%d.conv2", (int)index);
  y = mi__zb_conv_bn(b, n, y, cout, cout, 3, 1, 1, MI__ZB_NONE, 1);
  if (stride != 1 || cin != cout) {
    snprintf(n, sizeof n, "block%d.down", (int)index);
    sc = mi__zb_conv_bn(b, n, x, cin, cout, 1, stride, 1, MI__ZB_NONE, 0);
  }
  snprintf(n, sizeof n, "block%d.add", (int)index);
  y = mi__zb_op2(b, "Add", n, sc, y);
  snprintf(n, sizeof n, "block%d.relu", (int)index);
  return mi__zb_op1(b, "Relu", n, y);
}

void mi__zoo_resnet(mi__zb_t *b, const mi__zoo_cfg_t *c) {
  enum { NST = (int)(sizeof resnet_stages / sizeof resnet_stages[0]) };
  int64_t dims[4] = {c->batch, 3, c->resolution, c->resolution};
  int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  int64_t stride = 4, cin;
  int32_t per[NST], x, index = 0;
  mi__zoo_spread(c->depth, NST, per);
  for (int32_t s = 0; s < NST; s++)
    if (per[s] > 0) stride *= resnet_stages[s].stride;
  if (mi__zoo_check_stride(b, c, stride)) return;
  x = mi__zb_input(b, c->family->input_name, 4, dims);
  cin = mi__zb_scale(c->width, resnet_stages[0].channels, 8);
  x = mi__zb_conv_bn(b, "stem", x, 3, cin, 7, 2, 1, MI__ZB_RELU, 0);
  x = mi__zb_op1(b, "MaxPool", "stem.pool", x);
  mi__zb_attr_ints(b, "kernel_shape", 2, k3);
  mi__zb_attr_ints(b, "strides", 2, s2);
  mi__zb_attr_ints(b, "pads", 4, p1);
  for (int32_t s = 0; s < NST; s++) {
    int64_t cout = mi__zb_scale(c->width, resnet_stages[s].channels, 8);
    for (int32_t i = 0; i < per[s]; i++) {
      x = basic_block(b, index++, x, cin, cout, i == 0 ? resnet_stages[s].stride : 1);
      cin = cout;
    }
  }
  mi__zb_classifier(b, x, cin, c->family->classes);
}

/* The MFCC input has 10 coefficients per frame; `resolution` is the number of frames. */
#define KWS_COEFFS 10

void mi__zoo_kws(mi__zb_t *b, const mi__zoo_cfg_t *c) {
  int64_t dims[4] = {c->batch, 1, c->resolution, KWS_COEFFS};
  int64_t ch = mi__zb_scale(c->width, 64, 8);
  int64_t wd[4] = {ch, 1, 10, 4}, ks[2] = {10, 4}, st[2] = {2, 2};
  /* "Same"-style padding for the even 10x4 kernel: the extra row/column goes at the end. */
  int64_t pads[4] = {4, 1, 5, 2};
  int64_t h = mi__zb_out_size(c->resolution, 10, 2, 9);
  int64_t w = mi__zb_out_size(KWS_COEFFS, 4, 2, 3);
  int64_t pool[2] = {h, w};
  int64_t od[2] = {c->batch, c->family->classes};
  const float bound = 0.3873f; /* He-uniform: sqrt(6 / fan_in), fan_in = 1 * 10 * 4 */
  char n[64];
  int32_t x, in[2];
  if (c->resolution < 10) {
    mi__zb_fail(b, MI_ERR_INVALID_ARGUMENT,
                "mi-zoo: kws: resolution (frames) %d is smaller than the 10-frame first kernel",
                (int)c->resolution);
    return;
  }
  x = mi__zb_input(b, c->family->input_name, 4, dims);
  in[0] = x;
  in[1] = mi__zb_rand(b, "stem.conv.weight", 4, wd, -bound, bound);
  x = mi__zb_op(b, "Conv", "stem.conv", 2, in);
  mi__zb_attr_ints(b, "kernel_shape", 2, ks);
  mi__zb_attr_ints(b, "strides", 2, st);
  mi__zb_attr_ints(b, "pads", 4, pads);
  x = mi__zb_bn(b, "stem.bn", x, ch, 0.7f, 1.3f);
  x = mi__zb_act(b, "stem.act", x, MI__ZB_RELU);
  for (int32_t i = 0; i < c->depth; i++) {
    snprintf(n, sizeof n, "ds%d.dw", (int)i);
    x = mi__zb_conv_bn(b, n, x, ch, ch, 3, 1, ch, MI__ZB_RELU, 0);
    snprintf(n, sizeof n, "ds%d.pw", (int)i);
    x = mi__zb_conv_bn(b, n, x, ch, ch, 1, 1, 1, MI__ZB_RELU, 0);
  }
  /* DS-CNN averages the whole remaining map with one AveragePool, not a global pool. */
  x = mi__zb_op1(b, "AveragePool", "head.pool", x);
  mi__zb_attr_ints(b, "kernel_shape", 2, pool);
  x = mi__zb_op1(b, "Flatten", "head.flatten", x);
  mi__zb_attr_int(b, "axis", 1);
  x = mi__zb_gemm(b, "logits", x, ch, c->family->classes, 0.7f);
  mi__zb_output(b, x, 2, od);
}
