/* blis_act2.c - blis-cpu's standalone Selu, Celu, Softsign, Mish, ThresholdedRelu, Shrink and
 * the trigonometric and hyperbolic functions: element-wise loops the unary kernel runs
 * (blis_eltwise.c), so models using them stay on the device instead of splitting into host
 * islands around each activation. */
#include <math.h>
#include <string.h>

#include "blis_conv.h" /* mi__blis_act_simd */

int mi__blis_act2_of(const mi_node_desc_t *n, int32_t *kind, float *a, float *b) {
  const char *op = n->op_type;
  *a = *b = 0.0f;
  if (strcmp(op, "Selu") == 0) {
    *kind = MI__ACT_SELU;
    *a = mi_sdk_attr_float(n, "alpha", 1.67326319217681884765625f);
    *b = mi_sdk_attr_float(n, "gamma", 1.05070102214813232421875f);
  } else if (strcmp(op, "Celu") == 0) {
    *kind = MI__ACT_CELU;
    *a = mi_sdk_attr_float(n, "alpha", 1.0f);
    if (*a == 0.0f) return 0; /* refused: x / alpha */
  } else if (strcmp(op, "Softsign") == 0) {
    *kind = MI__ACT_SOFTSIGN;
  } else if (strcmp(op, "Mish") == 0) {
    *kind = MI__ACT_MISH;
  } else if (strcmp(op, "ThresholdedRelu") == 0) {
    *kind = MI__ACT_THRESH;
    *a = mi_sdk_attr_float(n, "alpha", 1.0f);
  } else if (strcmp(op, "Shrink") == 0) {
    *kind = MI__ACT_SHRINK;
    *a = mi_sdk_attr_float(n, "lambd", 0.5f);
    *b = mi_sdk_attr_float(n, "bias", 0.0f);
  } else {
    static const char *const trig[] = {"Cos", "Sin", "Tan", "Asin", "Acos", "Atan",
                                       "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"};
    int32_t i;
    for (i = 0; i < (int32_t)(sizeof trig / sizeof trig[0]) && strcmp(op, trig[i]); i++) {
    }
    if (i == (int32_t)(sizeof trig / sizeof trig[0])) return 0;
    *kind = MI__ACT_COS + i;
  }
  return 1;
}

int mi__blis_act2_apply(int32_t kind, float a, float b, float *x, int64_t n) {
  int64_t i;
  switch (kind) {
  case MI__ACT_SELU: /* a = alpha, b = gamma */
    for (i = 0; i < n; i++) x[i] = b * (x[i] > 0.f ? x[i] : a * expf(x[i]) - a);
    break;
  case MI__ACT_CELU:
    for (i = 0; i < n; i++) x[i] = fmaxf(0.f, x[i]) + fminf(0.f, a * (expf(x[i] / a) - 1.f));
    break;
  case MI__ACT_SOFTSIGN:
    for (i = 0; i < n; i++) x[i] = x[i] / (1.f + fabsf(x[i]));
    break;
  case MI__ACT_MISH: /* x tanh(softplus(x)); softplus is x itself above 20, no overflow */
    for (i = 0; i < n; i++) x[i] = x[i] * tanhf(x[i] > 20.f ? x[i] : log1pf(expf(x[i])));
    break;
  case MI__ACT_THRESH:
    for (i = 0; i < n; i++) x[i] = x[i] > a ? x[i] : 0.f;
    break;
  case MI__ACT_SHRINK: /* a = lambd, b = bias */
    for (i = 0; i < n; i++) x[i] = x[i] < -a ? x[i] + b : x[i] > a ? x[i] - b
                                                                   : 0.f;
    break;
  case MI__ACT_COS:
    for (i = 0; i < n; i++) x[i] = cosf(x[i]);
    break;
  case MI__ACT_SIN:
    for (i = 0; i < n; i++) x[i] = sinf(x[i]);
    break;
  case MI__ACT_TAN:
    for (i = 0; i < n; i++) x[i] = tanf(x[i]);
    break;
  case MI__ACT_ASIN:
    for (i = 0; i < n; i++) x[i] = asinf(x[i]);
    break;
  case MI__ACT_ACOS:
    for (i = 0; i < n; i++) x[i] = acosf(x[i]);
    break;
  case MI__ACT_ATAN:
    for (i = 0; i < n; i++) x[i] = atanf(x[i]);
    break;
  case MI__ACT_SINH:
    for (i = 0; i < n; i++) x[i] = sinhf(x[i]);
    break;
  case MI__ACT_COSH:
    for (i = 0; i < n; i++) x[i] = coshf(x[i]);
    break;
  case MI__ACT_ASINH:
    for (i = 0; i < n; i++) x[i] = asinhf(x[i]);
    break;
  case MI__ACT_ACOSH:
    for (i = 0; i < n; i++) x[i] = acoshf(x[i]);
    break;
  case MI__ACT_ATANH:
    for (i = 0; i < n; i++) x[i] = atanhf(x[i]);
    break;
  default: return 0;
  }
  return 1;
}

/* Mish with one exponential: tanh(log(1 + e^x)) = t / (t + 2) where t = e^x (e^x + 2); the
 * exponentials come from the vector exp of blis_vmath.c in blocks, the rest is plain arithmetic
 * the compiler vectorises. Above 20, Mish is x to float precision (t would overflow). */
int mi__blis_act2_simd(int32_t simd, int32_t kind, float *x, int64_t n) {
  float e[256];
  if (kind != MI__ACT_MISH) return 0;
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t len = n - i0 < 256 ? n - i0 : 256, i;
    for (i = 0; i < len; i++) e[i] = fminf(x[i0 + i], 20.f);
    if (!mi__blis_act_simd(simd, MI__ACT_EXP, e, len)) return 0; /* the same for every block */
    for (i = 0; i < len; i++) {
      float v = x[i0 + i], t = e[i] * (e[i] + 2.f);
      x[i0 + i] = v > 20.f ? v : v * t / (t + 2.f);
    }
  }
  return 1;
}
