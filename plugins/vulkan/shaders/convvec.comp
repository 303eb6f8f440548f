// convvec.comp - convolutions shaped for CPU Vulkan drivers (llvmpipe). Such a driver runs a
// subgroup of invocations as the lanes of one SIMD register, but turns every storage-buffer or
// shared-memory load into a loop over the lanes with a branch per lane: loads, not arithmetic,
// set the speed. So each invocation here keeps many outputs in registers and loads each input
// and weight once for all of them, with no shared memory and no barrier.
//
// Default (conv.vec, group 1): 4 adjacent output columns x 4*RM output channels per invocation.
// The weights are repacked at prepare as vec4 of 4 output channels, [K/4][C*KH*KW]; an input
// quad is one vec4 load when the stride is 1 and the quad is aligned and inside the row, else 4
// scalar loads. A 1x1 stride-1 unpadded conv is prepared as one row of H*W pixels.
// -DDEPTHWISE (conv.dw_vec, group == C == K): RM output rows x 4*RN output columns per
// invocation; each input row the block needs is loaded once into registers as a window and
// every tap of every output row reads it from there. S (stride) and KS (kernel size) are
// specialization constants, so the window and tap loops unroll into registers.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 4) const int RM = 1;
layout(constant_id = 5) const int RN = 1;
layout(constant_id = 6) const int S = 1;
layout(constant_id = 7) const int KS = 3;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, set = 0, binding = 5) readonly buffer R4 { vec4 res4[]; };
layout(push_constant) uniform P {
  int N, C, H, W, K, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, G;
  int flags, act0, act1, nchan, cinner; float p0, p1, p2, p3;
} pc;
#include "act.glsl"
#include "epi.glsl"

uint gid() { return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x; }

// Stores a quad of outputs starting at idx (4 adjacent columns of one row, nq of them valid).
void store4(uint idx, vec4 v, int nq) {
  if (nq == 4 && (idx & 3u) == 0u) {
    uint ch = (idx / uint(pc.cinner)) % uint(pc.nchan);
    if ((pc.flags & 1) != 0) v = v * scale[ch] + shift[ch];
    for (int q = 0; q < 4; q++) v[q] = act_apply(v[q], pc.act0, pc.p0, pc.p1);
    if ((pc.flags & 2) != 0) v += res4[idx >> 2];
    for (int q = 0; q < 4; q++) v[q] = act_apply(v[q], pc.act1, pc.p2, pc.p3);
    y4[idx >> 2] = v;
  } else {
    for (int q = 0; q < 4; q++)
      if (q < nq) y[idx + uint(q)] = epi(v[q], idx + uint(q));
  }
}

#ifdef DEPTHWISE
const int QW = 4 * RN;                // output columns per invocation
const int WIN = (QW - 1) * S + KS;    // input columns they read
const int ROWS = (RM - 1) * S + KS;   // input rows they read

void main() {
  int owb = (pc.OW + QW - 1) / QW, ohb = (pc.OH + RM - 1) / RM;
  uint i = gid();
  if (i >= uint(pc.N * pc.K * ohb * owb)) return;
  int ow0 = int(i % uint(owb)) * QW;
  uint t = i / uint(owb);
  int oh0 = int(t % uint(ohb)) * RM;
  t /= uint(ohb);
  int k = int(t % uint(pc.K)), n = int(t / uint(pc.K));
  float wk[KS * KS];
  for (int j = 0; j < KS * KS; j++) wk[j] = w[k * KS * KS + j];
  float acc[RM * QW];
  for (int j = 0; j < RM * QW; j++) acc[j] = 0.0;
  int xb = (n * pc.C + k) * pc.H * pc.W, iw0 = ow0 * S - pc.pw;
  for (int ir = 0; ir < ROWS; ir++) {
    int ih = oh0 * S - pc.ph + ir;
    if (ih < 0 || ih >= pc.H) continue;
    float win[WIN];
    for (int j = 0; j < WIN; j++) {
      int iw = iw0 + j;
      win[j] = (iw >= 0 && iw < pc.W) ? x[xb + ih * pc.W + iw] : 0.0;
    }
    for (int r = 0; r < RM; r++) {
      int kh = ir - r * S;
      if (kh < 0 || kh >= KS) continue;
      for (int q = 0; q < QW; q++)
        for (int kw = 0; kw < KS; kw++) acc[r * QW + q] += win[q * S + kw] * wk[kh * KS + kw];
    }
  }
  for (int r = 0; r < RM; r++) {
    int oh = oh0 + r;
    if (oh >= pc.OH) break;
    for (int c = 0; c < RN; c++) {
      int ow = ow0 + 4 * c;
      if (ow >= pc.OW) break;
      uint idx = uint(((n * pc.K + k) * pc.OH + oh) * pc.OW + ow);
      store4(idx, vec4(acc[r * QW + 4 * c], acc[r * QW + 4 * c + 1], acc[r * QW + 4 * c + 2],
                       acc[r * QW + 4 * c + 3]), min(4, pc.OW - ow));
    }
  }
}
#else
// Input quad of row `rb` (the row's first element) at columns iw + q*sw.
vec4 quad(int rb, int iw) {
  if (pc.sw == 1 && ((rb + iw) & 3) == 0 && iw >= 0 && iw + 3 < pc.W) return x4[(rb + iw) >> 2];
  vec4 v;
  for (int q = 0; q < 4; q++) {
    int c = iw + q * pc.sw;
    v[q] = (c >= 0 && c < pc.W) ? x[rb + c] : 0.0;
  }
  return v;
}

void main() {
  int owq = (pc.OW + 3) / 4, kb = (pc.K + 4 * RM - 1) / (4 * RM);
  uint i = gid();
  if (i >= uint(pc.N * kb * pc.OH * owq)) return;
  int ow0 = int(i % uint(owq)) * 4;
  uint t = i / uint(owq);
  int oh = int(t % uint(pc.OH));
  t /= uint(pc.OH);
  int kg0 = int(t % uint(kb)) * RM, n = int(t / uint(kb));
  int ckk = pc.C * pc.KH * pc.KW;
  vec4 acc[RM * 4]; // [channel group j][column q], 4 channels per vec4
  for (int j = 0; j < RM * 4; j++) acc[j] = vec4(0.0);
  for (int c = 0; c < pc.C; c++) {
    int xb = (n * pc.C + c) * pc.H;
    for (int kh = 0; kh < pc.KH; kh++) {
      int ih = oh * pc.sh - pc.ph + kh * pc.dh;
      if (ih < 0 || ih >= pc.H) continue;
      int wb = (c * pc.KH + kh) * pc.KW;
      for (int kw = 0; kw < pc.KW; kw++) {
        vec4 xv = quad((xb + ih) * pc.W, ow0 * pc.sw - pc.pw + kw * pc.dw);
        for (int j = 0; j < RM; j++) {
          vec4 wv = w4[(kg0 + j) * ckk + wb + kw];
          acc[j * 4 + 0] += wv * xv.x;
          acc[j * 4 + 1] += wv * xv.y;
          acc[j * 4 + 2] += wv * xv.z;
          acc[j * 4 + 3] += wv * xv.w;
        }
      }
    }
  }
  int nq = min(4, pc.OW - ow0);
  for (int j = 0; j < RM; j++) {
    for (int e = 0; e < 4; e++) {
      int k = (kg0 + j) * 4 + e;
      if (k >= pc.K) break;
      uint idx = uint(((n * pc.K + k) * pc.OH + oh) * pc.OW + ow0);
      store4(idx, vec4(acc[j * 4][e], acc[j * 4 + 1][e], acc[j * 4 + 2][e], acc[j * 4 + 3][e]), nq);
    }
  }
}
#endif
