// pool.comp - 2-D MaxPool / AveragePool (pads, strides, dilations, count_include_pad), one
// output per invocation.
#version 450
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  int NC, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, mode, include_pad, peh, pew;
} pc;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= uint(pc.NC * pc.OH * pc.OW)) return;
  int ow = int(i % uint(pc.OW));
  uint t = i / uint(pc.OW);
  int oh = int(t % uint(pc.OH));
  int nc = int(t / uint(pc.OH));
  float acc = pc.mode == 0 ? -3.402823466e38 : 0.0;
  int cnt = 0;
  for (int kh = 0; kh < pc.KH; kh++) {
    int ih = oh * pc.sh - pc.ph + kh * pc.dh;
    for (int kw = 0; kw < pc.KW; kw++) {
      int iw = ow * pc.sw - pc.pw + kw * pc.dw;
      bool inside = ih >= 0 && ih < pc.H && iw >= 0 && iw < pc.W;
      if (pc.mode == 0) {
        if (inside) acc = max(acc, x[(nc * pc.H + ih) * pc.W + iw]);
      } else {
        if (inside) { acc += x[(nc * pc.H + ih) * pc.W + iw]; cnt++; }
        // count_include_pad counts the explicit end pads (which may differ from the begin pads),
        // not what ceil_mode adds past them.
        else if (pc.include_pad != 0 && ih < pc.H + pc.peh && iw < pc.W + pc.pew) cnt++;
      }
    }
  }
  y[i] = pc.mode == 0 ? acc : acc / float(max(cnt, 1));
}
