// rowop.comp - ops along one axis of an [outer, L, inner] view, one (outer, inner) line per
// invocation: Softmax, LogSoftmax, LayerNormalization and the reductions.
#version 450
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 3) readonly buffer G { float gamma[]; };
layout(std430, set = 0, binding = 4) readonly buffer Bt { float beta[]; };
layout(push_constant) uniform P { int outer, L, inner, mode; float eps; int has_gamma, has_beta; } pc;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= uint(pc.outer * pc.inner)) return;
  int o = int(i) / pc.inner, in0 = int(i) % pc.inner;
  int base = o * pc.L * pc.inner + in0, st = pc.inner;
  if (pc.mode <= 1) {
    float mx = -3.402823466e38, s = 0.0;
    for (int j = 0; j < pc.L; j++) mx = max(mx, x[base + j * st]);
    for (int j = 0; j < pc.L; j++) s += exp(x[base + j * st] - mx);
    for (int j = 0; j < pc.L; j++) {
      float v = x[base + j * st] - mx;
      y[base + j * st] = pc.mode == 0 ? exp(v) / s : v - log(s);
    }
  } else if (pc.mode == 2) {
    float mean = 0.0, var = 0.0;
    for (int j = 0; j < pc.L; j++) mean += x[base + j * st];
    mean /= float(pc.L);
    for (int j = 0; j < pc.L; j++) { float d = x[base + j * st] - mean; var += d * d; }
    float inv = 1.0 / sqrt(var / float(pc.L) + pc.eps);
    for (int j = 0; j < pc.L; j++) {
      float v = (x[base + j * st] - mean) * inv;
      if (pc.has_gamma != 0) v *= gamma[j];
      if (pc.has_beta != 0) v += beta[j];
      y[base + j * st] = v;
    }
  } else {
    float acc = pc.mode == 5 ? -3.402823466e38 : (pc.mode == 6 ? 3.402823466e38 : 0.0);
    for (int j = 0; j < pc.L; j++) {
      float v = x[base + j * st];
      if (pc.mode == 5) acc = max(acc, v);
      else if (pc.mode == 6) acc = min(acc, v);
      else acc += v;
    }
    y[i] = pc.mode == 3 ? acc / float(pc.L) : acc;
  }
}
