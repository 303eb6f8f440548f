/* blis_quant.c - QuantizeLinear / DequantizeLinear (INT8/UINT8, per-tensor or per-axis scales). */
#include <math.h>
#include <string.h>

#include "blis_internal.h"

typedef struct quant_state {
  int32_t x, y, quantize, is_u8;
  int64_t n, inner, channels; /* element i has channel (i / inner) % channels */
  float *scale;               /* channels each, after the struct */
  int32_t *zp;
} quant_state_t;

typedef struct quant_task {
  const quant_state_t *q;
  const void *x;
  void *y;
} quant_task_t;

/* Round half to even of a float without a libm call, so the loops vectorise: adding and removing
 * 1.5 * 2^23 leaves the nearest integer, ties to even, in the default rounding mode (what
 * nearbyintf does) for |v| <= 2^22; v is clamped to that first, which changes no code. */
static inline float rne(float v) {
  v = v < -4194304.f ? -4194304.f : v > 4194304.f ? 4194304.f : v;
  return (v + 12582912.f) - 12582912.f;
}

/* Elements [b, e) of one channel (scale s, zero point z): ONNX QuantizeLinear
 * saturate(round_half_to_even(x / scale) + zero_point), or DequantizeLinear (x - z) * s. */
static void quant_run(const quant_state_t *q, const void *x, void *y, int64_t b, int64_t e, float s, int32_t zp) {
  float z = (float)zp, lo = q->is_u8 ? 0.f : -128.f, hi = q->is_u8 ? 255.f : 127.f;
  int64_t i;
  if (q->quantize) {
    const float *xf = x;
    if (q->is_u8)
      for (i = b; i < e; i++) {
        float v = rne(xf[i] / s) + z;
        ((uint8_t *)y)[i] = (uint8_t)(int32_t)(v < lo ? lo : v > hi ? hi : v);
      }
    else
      for (i = b; i < e; i++) {
        float v = rne(xf[i] / s) + z;
        ((int8_t *)y)[i] = (int8_t)(int32_t)(v < lo ? lo : v > hi ? hi : v);
      }
  } else if (q->is_u8) {
    for (i = b; i < e; i++) ((float *)y)[i] = (float)(((const uint8_t *)x)[i] - zp) * s;
  } else {
    for (i = b; i < e; i++) ((float *)y)[i] = (float)(((const int8_t *)x)[i] - zp) * s;
  }
}

/* Elements [b, e), in runs of one channel each. */
static void quant_part(void *arg, int64_t b, int64_t e) {
  const quant_task_t *qt = arg;
  const quant_state_t *q = qt->q;
  while (b < e) {
    int64_t c = q->channels == 1 ? 0 : (b / q->inner) % q->channels;
    int64_t end = q->channels == 1 ? e : (b / q->inner + 1) * q->inner;
    if (end > e) end = e;
    quant_run(q, qt->x, qt->y, b, end, q->scale[c], q->zp[c]);
    b = end;
  }
}

static int32_t run_quant(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  quant_task_t qt;
  qt.q = s->state;
  qt.x = t[qt.q->x];
  qt.y = t[qt.q->y];
  (void)err;
  mi__blis_parallel(env, qt.q->n, 4096, 4, quant_part, &qt);
  return MI_OK;
}

int32_t mi__blis_prep_quant(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)),
                         *sc = mi__blis_tensor(p, mi__blis_in(n, 1)),
                         *zp = mi__blis_tensor(p, mi__blis_in(n, 2)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int quantize = strcmp(n->op_type, "QuantizeLinear") == 0;
  const mi_tensor_desc_t *q8 = quantize ? y : x, *f32 = quantize ? x : y;
  quant_state_t *q;
  int64_t axis, ch, i, d;
  if (!quantize && p->node_index == 0 && p->desc->node_count > 1 &&
      !strcmp(p->desc->nodes[p->desc->node_count - 1]->op_type, "QuantizeLinear"))
    return mi__blis_prep_qlut(p, s, err); /* DQ -> elementwise ops -> Q */
  if (!x || !y || !sc || mi_sdk_numel(x) != mi_sdk_numel(y))
    return mi__blis_unsupported(err, n, "missing input, scale or output");
  if (f32->dtype != MI_DTYPE_FLOAT32 || (q8->dtype != MI_DTYPE_INT8 && q8->dtype != MI_DTYPE_UINT8))
    return mi__blis_unsupported(err, n, "only FLOAT32 <-> INT8/UINT8");
  if (!sc->data || sc->dtype != MI_DTYPE_FLOAT32 || (zp && (!zp->data || zp->dtype != q8->dtype)))
    return mi__blis_unsupported(err, n, "scale and zero point must be constants (FLOAT32, INT8/UINT8)");
  ch = mi_sdk_numel(sc);
  axis = mi_sdk_attr_int(n, "axis", 1);
  if (axis < 0) axis += x->rank;
  if (ch > 1 && (axis < 0 || axis >= x->rank || x->dims[axis] != ch))
    return mi__blis_unsupported(err, n, "per-axis scale does not match the axis");
  if (mi_sdk_attr(n, "block_size") && mi_sdk_attr_int(n, "block_size", 0) != 0)
    return mi__blis_unsupported(err, n, "blocked quantization");
  if (zp && mi_sdk_numel(zp) != ch) return mi__blis_unsupported(err, n, "zero point count != scale count");
  if (!(q = mi__blis_state_new(p, s, sizeof *q + (uint64_t)ch * (sizeof(float) + sizeof(int32_t)), err))) return MI_ERR_OUT_OF_MEMORY;
  q->scale = (float *)(q + 1);
  q->zp = (int32_t *)(q->scale + ch);
  q->x = mi__blis_in(n, 0);
  q->y = mi__blis_out(n, 0);
  q->quantize = quantize;
  q->is_u8 = q8->dtype == MI_DTYPE_UINT8;
  q->n = mi_sdk_numel(x);
  q->channels = ch;
  q->inner = 1;
  if (ch > 1)
    for (d = axis + 1; d < x->rank; d++) q->inner *= x->dims[d];
  for (i = 0; i < ch; i++) {
    q->scale[i] = ((const float *)sc->data)[i];
    q->zp[i] = !zp ? 0 : q->is_u8 ? ((const uint8_t *)zp->data)[i] : ((const int8_t *)zp->data)[i];
    if (!(q->scale[i] > 0.f) && quantize) return mi__blis_unsupported(err, n, "scale must be > 0");
  }
  s->run = run_quant;
  return MI_OK;
}
