// eltwise.comp - unary/binary element-wise ops with numpy broadcasting, strided copies
// (Transpose, Concat, Slice, nearest Resize) and the per-channel affine of BatchNormalization.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint n; int op; int act; int rank; float p0; float p1; int ooff; int boff2;
  int dims[6]; int sa[6]; int sb[6]; int so[6];
} pc;
#include "act.glsl"

// GLSL's pow(x, y) is undefined for x < 0 (lavapipe gives NaN), and for x == 0 with
// y <= 0, but ONNX Pow follows C powf: a negative base with an integral exponent is exact up
// to sign, e.g. the (x - mean)^2 of a decomposed LayerNorm.
float pow_c(float x, float y) {
  if (y == 0.0) return 1.0;
  if (y == 1.0) return x;
  if (y == 2.0) return x * x;
  float ax = abs(x);
  float r = ax == 0.0 ? (y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u)) : pow(ax, y);
  if (x >= 0.0 || isnan(x)) return x >= 0.0 ? r : x;
  if (floor(y) != y) return uintBitsToFloat(0x7fc00000u);
  return mod(y, 2.0) == 1.0 ? -r : r;
}

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= pc.n) return;
  uint r = i;
  // boff2 is BatchNormalization's shift offset in B, and A's start offset for copies (Slice).
  int oa = pc.op == 0 ? pc.boff2 : 0, ob = 0, oo = pc.ooff;
  for (int d = pc.rank - 1; d >= 0; d--) {
    int c = int(r % uint(pc.dims[d]));
    r /= uint(pc.dims[d]);
    oa += c * pc.sa[d];
    ob += c * pc.sb[d];
    oo += c * pc.so[d];
  }
  float x = a[oa], v = x;
  switch (pc.op) {
  case 1: v = x + b[ob]; break;
  case 2: v = x - b[ob]; break;
  case 3: v = x * b[ob]; break;
  case 4: v = x / b[ob]; break;
  case 5: v = max(x, b[ob]); break;
  case 6: v = min(x, b[ob]); break;
  case 7: v = pow_c(x, b[ob]); break;
  case 8: v = x < 0.0 ? x * b[ob] : x; break;
  case 9: v = x * b[ob] + b[ob + pc.boff2]; break;
  default: break;
  }
  y[oo] = act_apply(v, pc.act, pc.p0, pc.p1);
}
