// conv.comp - direct 2-D convolution (groups, strides, pads, dilations), one output per
// invocation; with -DDEPTHWISE the group == channels case without the channel loop, with
// -DTRANSPOSE ConvTranspose (the same push block, one output per invocation).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const int UNROLL = 1;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  int N, C, H, W, K, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, G;
  int flags, act0, act1, nchan, cinner; float p0, p1, p2, p3;
} pc;
#include "act.glsl"
#include "epi.glsl"

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint total = uint(pc.N * pc.K * pc.OH * pc.OW);
  if (i >= total) return;
  int ow = int(i % uint(pc.OW));
  uint t = i / uint(pc.OW);
  int oh = int(t % uint(pc.OH));
  t /= uint(pc.OH);
  int k = int(t % uint(pc.K));
  int n = int(t / uint(pc.K));
  float acc = 0.0;
#ifdef DEPTHWISE
  int xb = (n * pc.C + k) * pc.H * pc.W, wb = k * pc.KH * pc.KW;
  for (int kh = 0; kh < pc.KH; kh++) {
    int ih = oh * pc.sh - pc.ph + kh * pc.dh;
    if (ih < 0 || ih >= pc.H) continue;
    for (int kw = 0; kw < pc.KW; kw++) {
      int iw = ow * pc.sw - pc.pw + kw * pc.dw;
      if (iw >= 0 && iw < pc.W) acc += x[xb + ih * pc.W + iw] * w[wb + kh * pc.KW + kw];
    }
  }
#elif defined(TRANSPOSE)
  // ConvTranspose gathers: output (oh, ow) takes input (ih, iw) through tap (kh, kw) when
  // oh + ph - kh*dh == ih*sh. W is [C, K/G, KH, KW].
  int cpg = pc.C / pc.G, kpg = pc.K / pc.G, g = k / kpg, kk = k % kpg;
  for (int c = 0; c < cpg; c++) {
    int xb = (n * pc.C + g * cpg + c) * pc.H * pc.W, wb = ((g * cpg + c) * kpg + kk) * pc.KH * pc.KW;
    for (int kh = 0; kh < pc.KH; kh++) {
      int th = oh + pc.ph - kh * pc.dh;
      if (th < 0 || th % pc.sh != 0 || th / pc.sh >= pc.H) continue;
      int ih = th / pc.sh;
      for (int kw = 0; kw < pc.KW; kw++) {
        int tw = ow + pc.pw - kw * pc.dw;
        if (tw >= 0 && tw % pc.sw == 0 && tw / pc.sw < pc.W)
          acc += x[xb + ih * pc.W + tw / pc.sw] * w[wb + kh * pc.KW + kw];
      }
    }
  }
#else
  int cpg = pc.C / pc.G, kpg = pc.K / pc.G, g = k / kpg;
  for (int c = 0; c < cpg; c++) {
    int xb = (n * pc.C + g * cpg + c) * pc.H * pc.W, wb = (k * cpg + c) * pc.KH * pc.KW;
    for (int kh = 0; kh < pc.KH; kh++) {
      int ih = oh * pc.sh - pc.ph + kh * pc.dh;
      if (ih < 0 || ih >= pc.H) continue;
      int kw = 0;
      for (; kw + UNROLL <= pc.KW; kw += UNROLL) {
        for (int u = 0; u < UNROLL; u++) {
          int iw = ow * pc.sw - pc.pw + (kw + u) * pc.dw;
          if (iw >= 0 && iw < pc.W) acc += x[xb + ih * pc.W + iw] * w[wb + kh * pc.KW + kw + u];
        }
      }
      for (; kw < pc.KW; kw++) {
        int iw = ow * pc.sw - pc.pw + kw * pc.dw;
        if (iw >= 0 && iw < pc.W) acc += x[xb + ih * pc.W + iw] * w[wb + kh * pc.KW + kw];
      }
    }
  }
#endif
  y[i] = epi(acc, i);
}
