// epi.glsl - the fused epilogue of conv/gemm: per-channel affine (bias, folded BN), activation,
// residual add, activation. Needs the push block `pc` with the epilogue fields and bindings 3-5.
layout(std430, set = 0, binding = 3) readonly buffer Scale { float scale[]; };
layout(std430, set = 0, binding = 4) readonly buffer Shift { float shift[]; };
layout(std430, set = 0, binding = 5) readonly buffer Res { float res[]; };

float epi(float v, uint idx) {
  if ((pc.flags & 1) != 0) {
    uint ch = (idx / uint(pc.cinner)) % uint(pc.nchan);
    v = v * scale[ch] + shift[ch];
  }
  v = act_apply(v, pc.act0, pc.p0, pc.p1);
  if ((pc.flags & 2) != 0) v += res[idx];
  return act_apply(v, pc.act1, pc.p2, pc.p3);
}
