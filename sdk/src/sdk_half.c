/* sdk_half.c - IEEE binary16 (ONNX FLOAT16) and BFLOAT16 conversions, the same bits in the
 * reference and every plugin that stores FP16 weights or emulates an FP16 datapath. */
#include <math.h>
#include <string.h>

#include "metainfer/mi_sdk.h"

uint16_t mi_sdk_float_to_half(float f) {
  uint32_t x, sign, man;
  int32_t exp;
  memcpy(&x, &f, 4);
  sign = (x >> 16) & 0x8000u;
  exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  man = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    /* Subnormal half (or zero): shift the mantissa with its implicit bit, round to nearest even. */
    uint32_t m, shift, r, half;
    if (exp < -10) return (uint16_t)sign;
    m = man | 0x800000u;
    shift = (uint32_t)(14 - exp);
    r = m >> shift;
    half = 1u << (shift - 1);
    if ((m & ((1u << shift) - 1)) > half || ((m & ((1u << shift) - 1)) == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  {
    uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    /* Round to nearest even; a carry into the exponent is the right answer too. */
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)h;
  }
}

float mi_sdk_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, b;
  float f;
  if (exp == 0) {
    f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  /* Infinities and NaNs keep their payload bits. */
  if (exp == 31) b = sign | 0x7f800000u | (man << 13);
  else
    b = sign | ((exp + 112) << 23) | (man << 13);
  memcpy(&f, &b, 4);
  return f;
}

uint16_t mi_sdk_float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u);
  /* to nearest even on the dropped 16 bits; a carry into the exponent is the right answer too */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float mi_sdk_bf16_to_float(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
