// gemm.comp - batched GEMM Y = alpha * op(A) op(B) with the fused epilogue. -DNAIVE: one output
// per invocation. Otherwise tiles of A and B are staged in shared memory and each invocation
// keeps an RM x RN block of outputs in registers (RM = RN = 1 is the plain tiled variant).
// -DFP16: the same with FP16 weights, tiles and products (shaderFloat16 + 16-bit storage).
// -DCONV: Conv as an implicit GEMM per (image, group): A is the weights [K/G, C/G*KH*KW], B the
// input unfolded on the fly (im2col inside the tile loads, no buffer), Y is NCHW, so the tiles
// and register blocks of the tiled path serve convolutions too (conv.comp's push block).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef FP16
// B (the constant weights) is stored as FP16 and products are FP16; sums stay FP32.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#define HT float16_t
#else
#define HT float
#endif
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint LX = 16;
layout(constant_id = 1) const uint LY = 16;
layout(constant_id = 2) const uint TK = 8;
layout(constant_id = 3) const uint UNROLL = 1;
layout(constant_id = 4) const uint RM = 1;
layout(constant_id = 5) const uint RN = 1;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { HT b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
#ifdef CONV
layout(push_constant) uniform P {
  int NB, C, H, W, KO, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, G;
  int flags, act0, act1, nchan, cinner; float p0, p1, p2, p3;
} pc;
#include "act.glsl"
#include "epi.glsl"
// bz = image * G + group; rows m are the group's output channels, columns n its output pixels.
uint dimM() { return uint(pc.KO / pc.G); }
uint dimN() { return uint(pc.OH * pc.OW); }
uint dimK() { return uint(pc.C / pc.G * pc.KH * pc.KW); }
#define ALPHA 1.0
float loadA(uint bz, uint m, uint k) {
  return a[((bz % uint(pc.G)) * dimM() + m) * dimK() + k];
}
HT loadB(uint bz, uint k, uint n) {
  uint kk = uint(pc.KH * pc.KW), c = k / kk, r = k % kk;
  int ih = int(n / uint(pc.OW)) * pc.sh - pc.ph + int(r / uint(pc.KW)) * pc.dh;
  int iw = int(n % uint(pc.OW)) * pc.sw - pc.pw + int(r % uint(pc.KW)) * pc.dw;
  if (ih < 0 || ih >= pc.H || iw < 0 || iw >= pc.W) return HT(0.0);
  uint img = bz / uint(pc.G), ch = (bz % uint(pc.G)) * uint(pc.C / pc.G) + c;
  return b[((img * uint(pc.C) + ch) * uint(pc.H) + uint(ih)) * uint(pc.W) + uint(iw)];
}
#else
layout(push_constant) uniform P {
  int M, N, K, sAb, sBb, transA, transB; float alpha;
  int flags, act0, act1, nchan, cinner; float p0, p1, p2, p3;
} pc;
#include "act.glsl"
#include "epi.glsl"
uint dimM() { return uint(pc.M); }
uint dimN() { return uint(pc.N); }
uint dimK() { return uint(pc.K); }
#define ALPHA pc.alpha

float loadA(uint bz, uint m, uint k) {
  return a[bz * uint(pc.sAb) + (pc.transA != 0 ? k * uint(pc.M) + m : m * uint(pc.K) + k)];
}
HT loadB(uint bz, uint k, uint n) {
  return b[bz * uint(pc.sBb) + (pc.transB != 0 ? n * uint(pc.K) + k : k * uint(pc.N) + n)];
}
#endif

#ifdef NAIVE
void main() {
  uint n = gl_GlobalInvocationID.x, m = gl_GlobalInvocationID.y, bz = gl_WorkGroupID.z;
  if (m >= dimM() || n >= dimN()) return;
  float acc = 0.0;
  for (uint k = 0; k < dimK(); k++) acc += loadA(bz, m, k) * float(loadB(bz, k, n));
  uint idx = (bz * dimM() + m) * dimN() + n;
  y[idx] = epi(ALPHA * acc, idx);
}
#else
const uint TM = LY * RM, TN = LX * RN, NT = LX * LY;
shared HT As[TM * TK];
shared HT Bs[TK * TN];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * LX + tx;
  uint bz = gl_WorkGroupID.z;
  uint m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * TN;
  uint M = dimM(), N = dimN(), K = dimK();
  float acc[RM * RN];
  HT ar[RM];
  HT br[RN];
  for (uint i = 0; i < RM * RN; i++) acc[i] = 0.0;
  for (uint k0 = 0; k0 < K; k0 += TK) {
    for (uint e = tid; e < TM * TK; e += NT) {
      uint r = e / TK, c = e % TK;
      As[e] = HT((m0 + r < M && k0 + c < K) ? loadA(bz, m0 + r, k0 + c) : 0.0);
    }
    for (uint e = tid; e < TK * TN; e += NT) {
      uint r = e / TN, c = e % TN;
      Bs[e] = (k0 + r < K && n0 + c < N) ? loadB(bz, k0 + r, n0 + c) : HT(0.0);
    }
    barrier();
    for (uint kk = 0; kk < TK; kk += UNROLL) {
      for (uint u = 0; u < UNROLL; u++) {
        for (uint i = 0; i < RM; i++) ar[i] = As[(ty + i * LY) * TK + kk + u];
        for (uint j = 0; j < RN; j++) br[j] = Bs[(kk + u) * TN + tx + j * LX];
        for (uint i = 0; i < RM; i++)
          for (uint j = 0; j < RN; j++) acc[i * RN + j] += float(ar[i] * br[j]);
      }
    }
    barrier();
  }
  for (uint i = 0; i < RM; i++) {
    uint m = m0 + ty + i * LY;
    if (m >= M) continue;
    for (uint j = 0; j < RN; j++) {
      uint n = n0 + tx + j * LX;
      if (n >= N) continue;
      uint idx = (bz * M + m) * N + n;
      y[idx] = epi(ALPHA * acc[i * RN + j], idx);
    }
  }
}
#endif
