/* blis_qconcat.c - Concat -> DynamicQuantizeLinear as one step: the range from the inputs, the codes straight from them. */
#include <string.h>

#include "blis_qgemm.h"

/* The concatenation's range is the union of its inputs' ranges and each code depends on one value,
 * so the codes come from the inputs, slab by slab, without the float concatenation in between:
 * a U-Net decoder's Concat + DynamicQuantizeLinear read and wrote the floats once more for the
 * copy and read them twice after it (the quantized IS-Net's largest step pair, 1x128x512x512).
 * The floats are still written where another node reads them. Same arithmetic as the unfused
 * ops, so the codes, scale and zero point are the reference's bit for bit. */
typedef struct qconcat {
  int32_t simd, count, y, ys, yz, yf; /* yf: the float concatenation, -1 when no one reads it */
  int64_t outer, inner_y;
  int32_t in[32];
  int64_t inner[32];
} qconcat_t;

static int32_t run_qconcat(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qconcat_t *c = s->state;
  float lo = 0.f, hi = 0.f, scale;
  int32_t i, zp;
  int64_t off = 0, o;
  (void)err;
  /* an input whose producer found its range while writing it is read once, for its codes */
  for (i = 0; i < c->count; i++)
    if (env->range && env->range[c->in[i]].known) {
      float l, h;
      mi__blis_range_get(&env->range[c->in[i]], &l, &h);
      atomic_fetch_add(env->range_used, 1);
      lo = l < lo ? l : lo;
      hi = h > hi ? h : hi;
    } else
      mi__blis_dynq_range(env, c->simd, t[c->in[i]], c->outer * c->inner[i], &lo, &hi);
  mi__blis_dynq_outputs(t, c->ys, c->yz, lo, hi, &scale, &zp);
  for (i = 0; i < c->count; i++) {
    const float *x = t[c->in[i]];
    mi__blis_dynq_blocks(env, c->simd, x, c->outer, c->inner[i], (uint8_t *)t[c->y] + off, c->inner_y, scale, zp);
    if (c->yf >= 0)
      for (o = 0; o < c->outer; o++)
        memcpy((float *)t[c->yf] + o * c->inner_y + off, x + o * c->inner[i], (size_t)c->inner[i] * sizeof(float));
    off += c->inner[i];
  }
  return MI_OK;
}

int mi__blis_prep_qconcat(mi__blis_prep_t *p, mi__blis_step_t *s, int64_t outer, int32_t count, const int32_t *in,
                          const int64_t *inner, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0), *m = mi__blis_node(p, 1);
  int32_t cat = mi__blis_out(n, 0), i;
  const mi_tensor_desc_t *y, *ys, *yz;
  qconcat_t *c;
  if (!m || strcmp(m->op_type, "DynamicQuantizeLinear") || m->input_count != 1 || m->inputs[0] != cat ||
      m->output_count != 3)
    return 0;
  y = mi__blis_tensor(p, mi__blis_out(m, 0));
  ys = mi__blis_tensor(p, mi__blis_out(m, 1));
  yz = mi__blis_tensor(p, mi__blis_out(m, 2));
  if (!y || !ys || !yz || y->dtype != MI_DTYPE_UINT8 || ys->dtype != MI_DTYPE_FLOAT32 || yz->dtype != MI_DTYPE_UINT8 ||
      mi_sdk_numel(ys) != 1 || mi_sdk_numel(yz) != 1 || mi_sdk_numel(y) != mi_sdk_numel(mi__blis_tensor(p, cat)))
    return 0;
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return -1;
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  c->count = count;
  c->y = m->outputs[0];
  c->ys = m->outputs[1];
  c->yz = m->outputs[2];
  c->yf = mi__blis_is_kernel_output(p, cat) || mi__blis_consumers(p, cat) > 1 ? cat : -1;
  c->outer = outer;
  c->inner_y = 0;
  for (i = 0; i < count; i++) {
    c->in[i] = in[i];
    c->inner[i] = inner[i];
    c->inner_y += inner[i];
    p->k->range[in[i]].reads = 1;
  }
  s->run = run_qconcat;
  p->nodes_used = 2;
  return 1;
}
