/* blis_convgate.c - a per-channel gate Mul (an SE block's x * gate) folded into the packed weights of the conv reading it. */
#include <string.h>

#include "blis_conv.h"

/* The Mul's step when the conv took its work over: x * gate is never written. */
static int32_t run_nothing(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  (void)s;
  (void)t;
  (void)env;
  (void)err;
  return MI_OK;
}

/* `g` holds one runtime FLOAT32 value per channel of the conv input x ([1,C,1,1] or [C,1,1]). */
static int is_gate(const mi__blis_prep_t *p, int32_t g, const mi__blis_conv_t *c) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, g);
  int32_t d;
  if (!t || t->data || t->dtype != MI_DTYPE_FLOAT32 || (t->rank != 4 && t->rank != 3)) return 0;
  for (d = 0; d < t->rank; d++)
    if (t->dims[d] != (d == t->rank - 3 ? c->C : 1)) return 0;
  return 1;
}

/* `a` has the shape of the conv's input. */
static int is_input_shaped(const mi__blis_prep_t *p, int32_t a, const mi__blis_conv_t *c) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, a);
  return t && !t->data && t->dtype == MI_DTYPE_FLOAT32 && t->rank == 4 && t->dims[0] == c->N && t->dims[1] == c->C &&
         t->dims[2] == c->H && t->dims[3] == c->W;
}

/* Why weights and not the input: the gate scales input channel ci, and W * (x * s) = (W * s) * x
 * with s along W's input channels; scaling the M x C x KH x KW weights a run costs less than the
 * Mul's pass over x (read, write, read again by the conv) when they are fewer than x's values
 * (ppocr-v2-cls's SE blocks: 200 x 32 weights against 200 x 2 x 96 values). The products are
 * reassociated ((w * s) * x for w * (s * x)): within float rounding of the Mul-then-conv path.
 * The BF16 tiles convert their input each run anyway: they take x * s there (in_b), the Mul's
 * FP32 product rounded to BF16 as the conv would have rounded the Mul's output, so that path
 * gives the Mul-then-conv results exactly, at any weight count. */
int mi__blis_conv_gate_link(mi__blis_prep_t *p, mi__blis_conv_t *c, int in_b) {
  const mi_node_desc_t *m = p->node_index > 0 ? mi__blis_node(p, -1) : NULL;
  int32_t a, g;
  if (!m || strcmp(m->op_type, "Mul") || m->input_count != 2 || m->output_count != 1 || m->outputs[0] != c->x ||
      c->variant != MI__CONV_PG || c->G != 1 || c->nhwc_in || p->k->step_count < 1 ||
      mi__blis_consumers(p, c->x) != 1 || mi__blis_is_kernel_output(p, c->x) ||
      (!in_b && c->M * c->KH * c->KW > c->N * c->H * c->W))
    return 0;
  a = m->inputs[0];
  g = m->inputs[1];
  if (!is_gate(p, g, c)) {
    a = m->inputs[1];
    g = m->inputs[0];
  }
  if (!is_gate(p, g, c) || !is_input_shaped(p, a, c)) return 0;
  c->x = a;
  c->gate = g;
  c->pg_gated = 1;
  p->k->steps[p->k->step_count - 1].run = run_nothing; /* the Mul's, prepared just before */
  p->k->steps[p->k->step_count].joined = 1;            /* this conv's step, being prepared */
  return 1;
}

void mi__blis_conv_gate_weights(const mi__blis_conv_t *c, void *const *t) {
  const float *s = t[c->gate];
  int64_t kk = c->KH * c->KW, K = c->C * kk, mr = c->pg_mr, np = (c->M + mr - 1) / mr, pnl, k, i;
  for (pnl = 0; pnl < np; pnl++) {
    const float *src = c->packed + pnl * mr * K;
    float *dst = c->pg_gated_w + pnl * mr * K;
    for (k = 0; k < K; k++) {
      float f = s[k / kk];
      for (i = 0; i < mr; i++) dst[k * mr + i] = src[k * mr + i] * f;
    }
  }
}
