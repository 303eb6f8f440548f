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

/* ONNX QuantizeLinear: saturate(round_half_to_even(x / scale) + zero_point). nearbyintf uses
 * the default rounding mode, round-to-nearest-even. */
static void quant_part(void *arg, int64_t b, int64_t e) {
  const quant_task_t *qt = arg;
  const quant_state_t *q = qt->q;
  int64_t i;
  if (q->quantize && q->channels == 1) { /* per tensor: no per-element channel index */
    float s = q->scale[0], z = (float)q->zp[0], lo = q->is_u8 ? 0.f : -128.f, hi = q->is_u8 ? 255.f : 127.f;
    const float *x = qt->x;
    for (i = b; i < e; i++) {
      float v = nearbyintf(x[i] / s) + z;
      v = v < lo ? lo : v > hi ? hi : v;
      if (q->is_u8) ((uint8_t *)qt->y)[i] = (uint8_t)v;
      else ((int8_t *)qt->y)[i] = (int8_t)v;
    }
    return;
  }
  for (i = b; i < e; i++) {
    int64_t c = (i / q->inner) % q->channels;
    if (q->quantize) {
      float v = nearbyintf(((const float *)qt->x)[i] / q->scale[c]) + (float)q->zp[c];
      float lo = q->is_u8 ? 0.f : -128.f, hi = q->is_u8 ? 255.f : 127.f;
      v = v < lo ? lo : v > hi ? hi : v;
      if (q->is_u8) ((uint8_t *)qt->y)[i] = (uint8_t)v;
      else ((int8_t *)qt->y)[i] = (int8_t)v;
    } else {
      int32_t v = q->is_u8 ? ((const uint8_t *)qt->x)[i] : ((const int8_t *)qt->x)[i];
      ((float *)qt->y)[i] = (float)(v - q->zp[c]) * q->scale[c];
    }
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
  q = mi__blis_calloc(p->ctx, sizeof *q + (uint64_t)ch * (sizeof(float) + sizeof(int32_t)));
  if (!q) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  s->state = q;
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
