/* blis_qpad.c - Pad (by zero) -> DynamicQuantizeLinear as one step: the range from the input, the codes into the padded plane. */
#include <string.h>

#include "blis_qgemm.h"

/* DynamicQuantizeLinear's range always holds 0, so zero padding leaves it (and the scale and
 * zero point) as the unpadded input's, and a zero quantizes to the zero point: the codes are the
 * input's codes with a border of the zero point. A TF export pads the float plane before each
 * stride-2 depthwise conv; the float Pad wrote the plane once more and the quantize read it
 * again (mlsd_tiny_320's dynamic form: 7 ms of its 32). Same arithmetic as the unfused ops, so
 * the codes, scale and zero point are the reference's bit for bit. */
typedef struct qpad {
  int32_t simd, x, y, ys, yz;
  int64_t planes, ih, iw, oh, ow, top, left;
} qpad_t;

static int32_t run_qpad(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qpad_t *q = s->state;
  const float *x = t[q->x];
  uint8_t *y = t[q->y];
  float lo = 0.f, hi = 0.f, scale;
  int32_t zp;
  (void)err;
  mi__blis_dynq_range(env, q->simd, x, q->planes * q->ih * q->iw, &lo, &hi);
  mi__blis_dynq_outputs(t, q->ys, q->yz, lo, hi, &scale, &zp);
  memset(y, zp, (size_t)(q->planes * q->oh * q->ow));
  for (int64_t p = 0; p < q->planes; p++)
    mi__blis_dynq_blocks(env, q->simd, x + p * q->ih * q->iw, q->ih, q->iw, y + (p * q->oh + q->top) * q->ow + q->left,
                         q->ow, scale, zp);
  return MI_OK;
}

int mi__blis_prep_qpad(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_tensor_desc_t *x, const int64_t *full,
                       float value, int32_t mode, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0), *m = mi__blis_node(p, 1);
  int32_t pad = mi__blis_out(n, 0);
  const mi_tensor_desc_t *y, *ys, *yz;
  qpad_t *q;
  if (!m || strcmp(m->op_type, "DynamicQuantizeLinear") || m->input_count != 1 || m->inputs[0] != pad ||
      m->output_count != 3 || mode != 0 || value != 0.f || x->rank != 4 || mi__blis_is_kernel_output(p, pad) ||
      mi__blis_consumers(p, pad) > 1)
    return 0;
  for (int32_t d = 0; d < 4; d++)
    if (full[d] < 0 || full[d + 4] < 0 || (d < 2 && (full[d] || full[d + 4]))) return 0;
  y = mi__blis_tensor(p, mi__blis_out(m, 0));
  ys = mi__blis_tensor(p, mi__blis_out(m, 1));
  yz = mi__blis_tensor(p, mi__blis_out(m, 2));
  if (!y || !ys || !yz || y->dtype != MI_DTYPE_UINT8 || ys->dtype != MI_DTYPE_FLOAT32 || yz->dtype != MI_DTYPE_UINT8 ||
      mi_sdk_numel(ys) != 1 || mi_sdk_numel(yz) != 1 || y->rank != 4 || y->dims[2] != x->dims[2] + full[2] + full[6] ||
      y->dims[3] != x->dims[3] + full[3] + full[7])
    return 0;
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return -1;
  q->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  q->x = mi__blis_in(n, 0);
  q->y = m->outputs[0];
  q->ys = m->outputs[1];
  q->yz = m->outputs[2];
  q->planes = x->dims[0] * x->dims[1];
  q->ih = x->dims[2], q->iw = x->dims[3], q->oh = y->dims[2], q->ow = y->dims[3];
  q->top = full[2], q->left = full[3];
  s->run = run_qpad;
  p->nodes_used = 2;
  return 1;
}
