// act.glsl - activation functions shared by every shader (codes match vk.h ACT_*).
float erf_as(float x) {
  // Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): GLSL has no erf.
  float s = sign(x), a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t +
                   0.254829592) * t * exp(-a * a);
  return s * y;
}

float act_apply(float v, int code, float p, float q) {
  switch (code) {
  case 1: return max(v, 0.0);
  case 2: return min(max(v, p), q);
  case 3: return v < 0.0 ? v * p : v;
  case 4: return 1.0 / (1.0 + exp(-v));
  case 5: return tanh(clamp(v, -15.0, 15.0));
  case 6: return clamp(p * v + q, 0.0, 1.0);
  case 7: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
  case 8: return 0.5 * v * (1.0 + erf_as(v * 0.70710678118654752));
  case 9: return erf_as(v);
  case 10: return 0.5 * v * (1.0 + tanh(clamp(0.7978845608 * (v + 0.044715 * v * v * v), -15.0, 15.0)));
  case 11: return exp(v);
  case 12: return log(v);
  case 13: return sqrt(v);
  case 14: return -v;
  case 15: return abs(v);
  case 16: return 1.0 / v;
  case 17: return v < 0.0 ? p * (exp(v) - 1.0) : v;
  case 18: return v > 20.0 ? v : log(1.0 + exp(v));
  case 19: return floor(v);
  case 20: return ceil(v);
  default: return v;
  }
}
