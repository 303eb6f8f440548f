/* blis_qlinear.c - where the INT8 core's layers (blis_qgemm.c) take their quantization from:
 * the lowered QDQ Conv / Gemm / MatMul (tensor fields), and QLinearConv, QLinearMatMul,
 * ConvInteger and MatMulInteger, whose scales and zero points come from constant
 * inputs instead of the tensor fields, weights may be UINT8 with zero points, ConvInteger and
 * MatMulInteger write the int32 sums, and their input zero point may be a runtime scalar (the
 * one DynamicQuantizeLinear computes). */
#include <string.h>

#include "blis_qgemm.h"

/* Weight element i (output channel c) minus its zero point. */
int32_t mi__blis_qwval(const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w, int64_t i, int64_t c) {
  int32_t v = w->dtype == MI_DTYPE_UINT8 ? ((const uint8_t *)w->data)[i] : mi__blis_qweight(w, i);
  if (src->wz) {
    int64_t k = mi_sdk_numel(src->wz) == 1 ? 0 : c;
    v -= src->wz->dtype == MI_DTYPE_UINT8 ? ((const uint8_t *)src->wz->data)[k] : ((const int8_t *)src->wz->data)[k];
  }
  return v;
}

/* Byte core shift d of the cnt weights of channel c (elements i0 + t * step): 0 where their values
 * fit INT8, else what moves their lowest to -128; returns 0 when they span more than 256 values. */
int mi__blis_qbyte_shift(const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w, int64_t c, int64_t i0, int64_t cnt,
                         int64_t step, int32_t *d) {
  int32_t lo = 0, hi = 0, v;
  int64_t t;
  for (t = 0; t < cnt; t++) {
    v = mi__blis_qwval(src, w, i0 + t * step, c);
    lo = t == 0 || v < lo ? v : lo;
    hi = t == 0 || v > hi ? v : hi;
  }
  *d = lo >= -128 && hi <= 127 ? 0 : lo + 128;
  return hi - lo <= 255;
}

/* The lowered layer's source: parameters from the tensor fields (docs/abi.md). */
static int32_t lowered_src(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t bias_idx,
                           double alpha, double beta, mi__blis_qsrc_t *src, mi_error_t *err) {
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  memset(src, 0, sizeof *src);
  src->x = mi__blis_in(n, 0);
  src->w = mi__blis_in(n, 1);
  src->y = mi__blis_out(n, 0);
  src->zx_t = -1;
  src->zx = x->zero_point;
  src->zy = y->zero_point;
  src->sx = (double)x->scale;
  src->sy = (double)y->scale;
  src->fbias = bias_idx;
  src->alpha = alpha;
  src->beta = beta;
  if (w->channel_count == 0) {
    src->sw = &w->scale;
    src->nsw = 1;
  } else if (w->channel_scales) { /* checked against the output channels by out_stage */
    src->sw = w->channel_scales;
    src->nsw = w->channel_count;
  } else {
    return mi__blis_unsupported(err, n, "INT8: weight scales are neither per tensor nor per output channel");
  }
  return MI_OK;
}

static int q8_pair(const mi_tensor_desc_t *x, const mi_tensor_desc_t *w, const mi_tensor_desc_t *y) {
  return mi__blis_is_q8(x) && mi__blis_is_q8(y) && w && w->data &&
         (w->dtype == MI_DTYPE_INT8 || w->dtype == MI_DTYPE_INT4) && w->zero_point == 0;
}

int32_t mi__blis_prep_qconv(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  mi__blis_qsrc_t src;
  int32_t rc;
  if (!q8_pair(x, w, y)) return mi__blis_unsupported(err, n, "INT8 conv needs codes in and out and an INT8/INT4 weight with zero point 0");
  if ((rc = lowered_src(p, n, mi__blis_in(n, 2), 1., 1., &src, err)) != MI_OK) return rc;
  return mi__blis_qconv_build(p, s, &src, err);
}

int32_t mi__blis_prep_qgemm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int is_gemm = strcmp(n->op_type, "Gemm") == 0;
  double alpha = is_gemm ? mi_sdk_attr_float(n, "alpha", 1.f) : 1., beta = is_gemm ? mi_sdk_attr_float(n, "beta", 1.f) : 1.;
  mi__blis_qsrc_t src;
  int32_t rc;
  if (!q8_pair(a, w, y) || w->rank != 2 || a->rank < 1)
    return mi__blis_unsupported(err, n, "INT8 Gemm/MatMul needs codes in and out and a 2-D INT8/INT4 constant B");
  if (is_gemm && (mi_sdk_attr_int(n, "transA", 0) != 0 || a->rank != 2))
    return mi__blis_unsupported(err, n, "INT8 Gemm: only transA = 0 with a 2-D A");
  if ((rc = lowered_src(p, n, is_gemm ? mi__blis_in(n, 2) : -1, alpha, beta, &src, err)) != MI_OK) return rc;
  return mi__blis_qgemm_build(p, s, &src, err);
}

/* The one value of a constant FLOAT32 tensor. */
static int f32_scalar(const mi_tensor_desc_t *t, double *v) {
  if (!t || !t->data || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1) return 0;
  *v = (double)((const float *)t->data)[0];
  return *v > 0.;
}

/* The one code of a constant INT8/UINT8 tensor of dtype dt (absent: 0). */
static int code_scalar(const mi_tensor_desc_t *t, int32_t dt, int32_t *v) {
  *v = 0;
  if (!t) return 1;
  if (!t->data || t->dtype != dt || mi_sdk_numel(t) != 1) return 0;
  *v = dt == MI_DTYPE_UINT8 ? ((const uint8_t *)t->data)[0] : ((const int8_t *)t->data)[0];
  return 1;
}

/* Weight zero points: NULL when absent or all zero (the packed INT4 path needs none), else the
 * constant tensor, of the weight's dtype, with 1 or `channels` values. */
static int weight_zp(const mi_tensor_desc_t *z, const mi_tensor_desc_t *w, int64_t channels,
                     const mi_tensor_desc_t **out) {
  int64_t i, n;
  *out = NULL;
  if (!z) return 1;
  n = mi_sdk_numel(z);
  if (!z->data || z->dtype != w->dtype || (n != 1 && n != channels)) return 0;
  for (i = 0; i < n; i++)
    if (((const uint8_t *)z->data)[i] != 0) *out = z; /* 1-byte codes: zero either way */
  return 1;
}

/* The next node of the kernel when it is op reading `cur` alone (one output, `cur` read by it only
 * and no kernel output); its other input in *other. */
static const mi_node_desc_t *tail_node(const mi__blis_prep_t *p, int32_t at, const char *op, int32_t cur,
                                       int32_t *other) {
  const mi_node_desc_t *m = mi__blis_node(p, at);
  if (!m || strcmp(m->op_type, op) || m->output_count != 1 || mi__blis_consumers(p, cur) != 1 ||
      mi__blis_is_kernel_output(p, cur))
    return NULL;
  if (m->input_count == 1 && m->inputs[0] == cur) return m;
  if (m->input_count != 2 || (m->inputs[0] != cur && m->inputs[1] != cur)) return NULL;
  *other = m->inputs[m->inputs[0] == cur ? 1 : 0];
  return *other != cur ? m : NULL;
}

/* The one FLOAT32 value of constant tensor t into *v. */
static int f32_const(const mi__blis_prep_t *p, int32_t t, float *v) {
  const mi_tensor_desc_t *d = t >= 0 ? mi__blis_tensor(p, t) : NULL;
  if (!d || !d->data || d->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(d) != 1) return 0;
  *v = *(const float *)d->data;
  return 1;
}

/* Kernel nodes at..at+3 as the host groups a hard-swish after the tail (exec/plan.c): Add(x, a) ->
 * Clip(lo, hi) -> Mul(x, clip) -> Div(d) or Mul(d), each reading only the one before it and x, no
 * intermediate read outside; fills *hs, 0 when they are not that. */
static int hswish_tail(const mi__blis_prep_t *p, int32_t at, int32_t x, mi__blis_hsw_t *hs) {
  const mi_node_desc_t *add = mi__blis_node(p, at), *clip = mi__blis_node(p, at + 1), *mul = mi__blis_node(p, at + 2),
                       *div = mi__blis_node(p, at + 3);
  int32_t t;
  if (!add || !clip || !mul || !div || strcmp(add->op_type, "Add") || strcmp(clip->op_type, "Clip") ||
      strcmp(mul->op_type, "Mul") || (strcmp(div->op_type, "Div") && strcmp(div->op_type, "Mul")))
    return 0;
  if (add->input_count != 2 || add->inputs[0] != x || !f32_const(p, add->inputs[1], &hs->a)) return 0;
  t = add->outputs[0];
  if (clip->inputs[0] != t || mi__blis_consumers(p, t) != 1 || mi__blis_is_kernel_output(p, t)) return 0;
  hs->lo = -3.402823466e38f;
  hs->hi = 3.402823466e38f;
  if (clip->input_count == 1) { /* bounds as attributes before opset 11 */
    hs->lo = mi_sdk_attr_float(clip, "min", hs->lo);
    hs->hi = mi_sdk_attr_float(clip, "max", hs->hi);
  } else if ((clip->input_count > 1 && clip->inputs[1] >= 0 && !f32_const(p, clip->inputs[1], &hs->lo)) ||
             (clip->input_count > 2 && clip->inputs[2] >= 0 && !f32_const(p, clip->inputs[2], &hs->hi))) {
    return 0;
  }
  t = clip->outputs[0];
  if (mul->input_count != 2 || mi__blis_consumers(p, t) != 1 || mi__blis_is_kernel_output(p, t) ||
      !((mul->inputs[0] == x && mul->inputs[1] == t) || (mul->inputs[0] == t && mul->inputs[1] == x)))
    return 0;
  t = mul->outputs[0];
  if (div->input_count != 2 || div->inputs[0] != t || mi__blis_consumers(p, t) != 1 || mi__blis_is_kernel_output(p, t) ||
      !f32_const(p, div->inputs[1], &hs->d))
    return 0;
  /* x is read by the Add and the Mul only */
  if (mi__blis_consumers(p, x) != 2 || mi__blis_is_kernel_output(p, x)) return 0;
  hs->div = strcmp(div->op_type, "Div") == 0;
  hs->on = 1;
  return 1;
}

/* Kernel node `at` as the tail's next activation on `cur` (read by it alone, no kernel output):
 * LeakyRelu, Relu or Clip, or a Max / Min against a constant scalar; appended to hs. */
static const mi_node_desc_t *tail_act(const mi__blis_prep_t *p, int32_t at, int32_t cur, mi__blis_hsw_t *hs) {
  const mi_node_desc_t *m = mi__blis_node(p, at);
  int32_t kind, i = hs->nact;
  float a, b;
  if (!m || m->output_count != 1 || m->input_count < 1 || m->inputs[0] != cur || mi__blis_consumers(p, cur) != 1 ||
      mi__blis_is_kernel_output(p, cur))
    return NULL;
  if ((!strcmp(m->op_type, "Max") || !strcmp(m->op_type, "Min")) && m->input_count == 2) {
    if (!f32_const(p, m->inputs[1], &a)) return NULL;
    kind = m->op_type[1] == 'a' ? MI__QT_MAX : MI__QT_MIN;
    b = 0.f;
  } else if (!mi__blis_act_of(p, m, &kind, &a, &b) ||
             (kind != MI__ACT_LEAKY && kind != MI__ACT_RELU && kind != MI__ACT_CLIP)) {
    return NULL; /* others (Sigmoid: the plugin's own exp) run as steps after the tail */
  }
  hs->act[i] = kind;
  hs->aa[i] = a;
  hs->ab[i] = b;
  hs->nact++;
  return m;
}

/* Kernel node m as DynamicQuantizeLinear of the tail's output cur (which others may read too):
 * fills hs's dq fields, 0 when it is not one. */
static int tail_dynq(const mi__blis_prep_t *p, const mi_node_desc_t *m, int32_t cur, mi__blis_hsw_t *hs) {
  const mi_tensor_desc_t *x = mi__blis_tensor(p, cur), *y, *ys, *yz;
  if (strcmp(m->op_type, "DynamicQuantizeLinear") || m->input_count != 1 || m->inputs[0] != cur ||
      m->output_count != 3 || !x || x->dtype != MI_DTYPE_FLOAT32)
    return 0;
  y = mi__blis_tensor(p, m->outputs[0]);
  ys = mi__blis_tensor(p, m->outputs[1]);
  yz = mi__blis_tensor(p, m->outputs[2]);
  if (!y || !ys || !yz || y->dtype != MI_DTYPE_UINT8 || ys->dtype != MI_DTYPE_FLOAT32 || yz->dtype != MI_DTYPE_UINT8 ||
      mi_sdk_numel(y) != mi_sdk_numel(x) || mi_sdk_numel(ys) != 1 || mi_sdk_numel(yz) != 1)
    return 0;
  hs->dq = 1;
  hs->dq_x = cur;
  hs->dq_y = m->outputs[0];
  hs->dq_s = m->outputs[1];
  hs->dq_z = m->outputs[2];
  hs->dq_n = mi_sdk_numel(x);
  return 1;
}

/* Kernel nodes at, at + 1 as a Pad of the tail's output cur (constant mode by zero, of H and W,
 * no pad below 0; pads a constant input, opset 11 on, no axes), read by it alone, then the
 * DynamicQuantizeLinear that alone reads the padded floats (exec/plan.c): fills hs's dq and pad
 * fields, the floats dq_x those of cur; 0 (hs untouched) when they are not that. */
static int tail_pad(const mi__blis_prep_t *p, int32_t at, int32_t cur, mi__blis_hsw_t *hs) {
  const mi_node_desc_t *m = mi__blis_node(p, at), *d = mi__blis_node(p, at + 1);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, cur), *v;
  mi__blis_hsw_t h = *hs;
  int64_t pads[8];
  float cv = 0.f;
  if (!m || !d || strcmp(m->op_type, "Pad") || m->opset < 11 || m->input_count < 2 || m->input_count > 3 ||
      m->inputs[0] != cur || m->output_count != 1 || strcmp(mi_sdk_attr_string(m, "mode", "constant"), "constant") ||
      mi__blis_consumers(p, cur) != 1 || mi__blis_is_kernel_output(p, cur) || !x || x->rank != 4 ||
      mi__blis_consumers(p, m->outputs[0]) != 1 || mi__blis_is_kernel_output(p, m->outputs[0]) ||
      mi__blis_const_ints(p, m->inputs[1], pads, 8) != 8)
    return 0;
  if (m->input_count == 3 && m->inputs[2] >= 0 && (v = mi__blis_tensor(p, m->inputs[2])) && mi_sdk_numel(v) > 0 &&
      !f32_const(p, m->inputs[2], &cv))
    return 0;
  if (cv != 0.f || pads[0] || pads[1] || pads[4] || pads[5] || pads[2] < 0 || pads[3] < 0 || pads[6] < 0 ||
      pads[7] < 0 || !tail_dynq(p, d, m->outputs[0], &h))
    return 0;
  h.pad = 1;
  h.dq_x = cur;
  h.dq_n = mi_sdk_numel(x);
  h.ih = x->dims[2], h.iw = x->dims[3];
  h.pt = pads[2], h.pl = pads[3];
  h.oh = h.ih + pads[2] + pads[6], h.ow = h.iw + pads[3] + pads[7];
  if (h.dq_n == 0 || h.oh * h.ow * x->dims[0] * x->dims[1] != mi_sdk_numel(mi__blis_tensor(p, h.dq_y))) return 0;
  *hs = h;
  return 1;
}

/* Kernel node `at` as an Add of cur and a runtime FLOAT32 tensor of its shape (a residual), that
 * tensor into *res. */
static int residual(const mi__blis_prep_t *p, int32_t at, int32_t cur, int32_t *res) {
  int32_t other = -1;
  const mi_node_desc_t *m = tail_node(p, at, "Add", cur, &other);
  const mi_tensor_desc_t *t = m ? mi__blis_tensor(p, other) : NULL;
  if (!t || t->data || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != mi_sdk_numel(mi__blis_tensor(p, cur)) ||
      mi_sdk_numel(mi__blis_tensor(p, m->outputs[0])) != mi_sdk_numel(t))
    return 0;
  *res = other;
  return 1;
}

/* A ConvInteger's float tail in its kernel (the host's group, docs/abi.md): Cast to FLOAT, Mul by
 * one FLOAT32 scale, then optionally Add of a constant bias (one, or one per output channel laid
 * along axis 1), a residual Add and Relu (or Relu, then the residual Add), then a Mul and an Add
 * by constant scalars and a written-out hard-swish. Fills src's tail fields and y; leaves src
 * alone when they do not fit, and the nodes then run as steps of their own. */
static void int_tail(const mi__blis_prep_t *p, int64_t ch, mi__blis_qsrc_t *src) {
  const mi_node_desc_t *m;
  const mi_tensor_desc_t *t;
  int32_t cur = src->y, other = -1, at = 1, d;
  if (!(m = tail_node(p, at, "Cast", cur, &other)) || mi_sdk_attr_int(m, "to", 0) != MI_DTYPE_FLOAT32) return;
  cur = m->outputs[0];
  if (!(m = tail_node(p, ++at, "Mul", cur, &other)) || !(t = mi__blis_tensor(p, other)) ||
      t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1)
    return;
  src->scale_t = other;
  cur = m->outputs[0];
  m = tail_node(p, ++at, "Add", cur, &other);
  t = m ? mi__blis_tensor(p, other) : NULL;
  if (t && t->data && t->dtype == MI_DTYPE_FLOAT32 && (mi_sdk_numel(t) == 1 || mi_sdk_numel(t) == ch)) {
    const mi_tensor_desc_t *y = mi__blis_tensor(p, m->outputs[0]);
    int ok = y && y->rank >= 2 && t->rank <= y->rank;
    for (d = 0; ok && d < t->rank; d++) /* aligned to the right: only axis 1 may be ch */
      ok = t->dims[d] == 1 || (y->rank - t->rank + d == 1 && t->dims[d] == ch);
    if (ok) {
      src->tb = t->data;
      src->ntb = mi_sdk_numel(t);
      cur = m->outputs[0];
      at++;
    }
  }
  if (residual(p, at, cur, &src->res_t)) {
    cur = mi__blis_node(p, at)->outputs[0];
    at++;
  }
  if ((m = tail_node(p, at, "Relu", cur, &other))) {
    src->relu = 1;
    cur = m->outputs[0];
    at++;
  }
  memset(&src->hs, 0, sizeof src->hs);
  if (src->relu && src->res_t < 0 && residual(p, at, cur, &src->res_t)) { /* relu(x) + r (exec/plan.c) */
    src->hs.res_post = 1;
    cur = mi__blis_node(p, at++)->outputs[0];
  }
  if ((m = tail_node(p, at, "Mul", cur, &other)) && f32_const(p, other, &src->hs.am)) {
    src->hs.has_am = 1;
    cur = m->outputs[0];
    at++;
  }
  if ((m = tail_node(p, at, "Add", cur, &other)) && f32_const(p, other, &src->hs.ac)) {
    src->hs.has_ac = 1;
    cur = m->outputs[0];
    at++;
  }
  if (hswish_tail(p, at, cur, &src->hs)) {
    cur = mi__blis_node(p, at + 3)->outputs[0];
    at += 4;
  }
  while (src->hs.nact < 2 && (m = tail_act(p, at, cur, &src->hs))) {
    cur = m->outputs[0];
    at++;
  }
  if (tail_pad(p, at, cur, &src->hs)) at += 2;
  else if ((m = mi__blis_node(p, at)) && tail_dynq(p, m, cur, &src->hs))
    at++;
  src->tail = at - 1;
  src->y = cur;
  src->hs.hand = mi__blis_is_kernel_output(p, cur);
  src->hs.y = cur;
}

/* A MatMulInteger's float tail in its kernel (exec/plan.c gemm_int_tail): Cast to FLOAT, Mul by
 * one FLOAT32 scale, then optionally Add of a constant bias along the last axis (n values, or
 * one), then optionally one activation (src->hs.act[0]: Gelu, Relu, Clip...). Fills src's tail
 * fields and y; leaves src alone when they do not fit (the kernel is then refused: qgemm runs
 * alone or with its whole tail). */
static void gemm_tail(const mi__blis_prep_t *p, int64_t n, mi__blis_qsrc_t *src) {
  const mi_node_desc_t *m;
  const mi_tensor_desc_t *t;
  int32_t cur = src->y, other = -1, scale, d;
  if (!(m = tail_node(p, 1, "Cast", cur, &other)) || mi_sdk_attr_int(m, "to", 0) != MI_DTYPE_FLOAT32) return;
  cur = m->outputs[0];
  if (!(m = tail_node(p, 2, "Mul", cur, &other)) || !(t = mi__blis_tensor(p, other)) ||
      t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1)
    return;
  scale = other;
  cur = m->outputs[0];
  src->tail = 2;
  if ((m = tail_node(p, 3, "Add", cur, &other)) && (t = mi__blis_tensor(p, other)) && t->data &&
      t->dtype == MI_DTYPE_FLOAT32 && (mi_sdk_numel(t) == 1 || mi_sdk_numel(t) == n)) {
    const mi_tensor_desc_t *y = mi__blis_tensor(p, m->outputs[0]);
    int ok = y && t->rank <= y->rank && mi_sdk_numel(y) == mi_sdk_numel(mi__blis_tensor(p, cur));
    for (d = 0; ok && d + 1 < t->rank; d++) ok = t->dims[d] == 1; /* along the last axis only */
    if (ok) {
      src->tb = t->data;
      src->ntb = mi_sdk_numel(t);
      cur = m->outputs[0];
      src->tail = 3;
    }
  }
  memset(&src->hs, 0, sizeof src->hs);
  if ((m = mi__blis_node(p, src->tail + 1)) && m->output_count == 1 && m->input_count >= 1 && m->inputs[0] == cur &&
      mi__blis_consumers(p, cur) == 1 && !mi__blis_is_kernel_output(p, cur) &&
      mi__blis_act_of(p, m, &src->hs.act[0], &src->hs.aa[0], &src->hs.ab[0])) {
    src->hs.nact = 1;
    cur = m->outputs[0];
    src->tail++;
  }
  src->scale_t = scale;
  src->y = cur;
}

int32_t mi__blis_prep_qlinear(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  int is_conv = strstr(n->op_type, "Conv") != NULL, qlin = strncmp(n->op_type, "QLinear", 7) == 0;
  int32_t wi = qlin ? 3 : 1;
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *w = mi__blis_tensor(p, mi__blis_in(n, wi));
  const mi_tensor_desc_t *zx = mi__blis_tensor(p, mi__blis_in(n, 2));
  mi__blis_qsrc_t src;
  int64_t ch;
  if (!x || !w || !mi__blis_is_q8(x) || !w->data || w->rank < 2)
    return mi__blis_unsupported(err, n, "needs INT8/UINT8 input codes and a constant weight");
  ch = is_conv ? w->dims[0] : w->dims[w->rank - 1];
  memset(&src, 0, sizeof src);
  src.x = mi__blis_in(n, 0);
  src.w = mi__blis_in(n, wi);
  src.y = mi__blis_out(n, 0);
  src.zx_t = -1;
  src.fbias = -1;
  src.res_t = -1;
  src.alpha = src.beta = 1.;
  if (!weight_zp(mi__blis_tensor(p, mi__blis_in(n, qlin ? 5 : 3)), w, ch, &src.wz))
    return mi__blis_unsupported(err, n, "weight zero point must be a constant of the weight's dtype, per tensor or per output channel");
  if (zx && !zx->data) { /* a runtime zero point (DynamicQuantizeLinear's): read at each run */
    if (qlin || zx->dtype != x->dtype || mi_sdk_numel(zx) != 1)
      return mi__blis_unsupported(err, n, "input zero point must be one code of the input's dtype");
    src.zx_t = mi__blis_in(n, 2);
  } else if (!code_scalar(zx, x->dtype, &src.zx)) {
    return mi__blis_unsupported(err, n, "input zero point must be one code of the input's dtype (per-row zero points are not run)");
  }
  if (!qlin) {
    src.out32 = 1;
    if (is_conv) {
      int taken, rc;
      int_tail(p, ch, &src);
      /* the tail's floats: written by the step, read by the DynamicQuantizeLinear it ends in (the
       * codes path of blis_qdw.c / blis_qgemm.c makes them a reserved plane instead) */
      if (src.tail) mi__blis_plane_mark(p, src.y, MI__PLANE_WRITTEN);
      rc = mi__blis_prep_qdw_int(p, s, &src, &taken, err); /* the depthwise byte kernel where it applies */
      if (rc != MI_OK || taken) return rc;
    }
    if (p->desc->node_count > 1) gemm_tail(p, ch, &src);
    return is_conv ? mi__blis_qconv_build(p, s, &src, err) : mi__blis_qgemm_build(p, s, &src, err);
  }
  {
    const mi_tensor_desc_t *sw = mi__blis_tensor(p, mi__blis_in(n, 4)), *y = mi__blis_tensor(p, src.y);
    const mi_tensor_desc_t *b = is_conv ? mi__blis_tensor(p, mi__blis_in(n, 8)) : NULL;
    if (!f32_scalar(mi__blis_tensor(p, mi__blis_in(n, 1)), &src.sx))
      return mi__blis_unsupported(err, n, "input scale must be one positive FLOAT32 constant (per-row scales are not run)");
    if (!f32_scalar(mi__blis_tensor(p, mi__blis_in(n, 6)), &src.sy))
      return mi__blis_unsupported(err, n, "output scale must be one positive FLOAT32 constant");
    if (!y || !code_scalar(mi__blis_tensor(p, mi__blis_in(n, 7)), y->dtype, &src.zy))
      return mi__blis_unsupported(err, n, "output zero point must be one constant code of the output's dtype");
    if (!sw || !sw->data || sw->dtype != MI_DTYPE_FLOAT32 || (mi_sdk_numel(sw) != 1 && mi_sdk_numel(sw) != ch))
      return mi__blis_unsupported(err, n, "weight scale must be a FLOAT32 constant, per tensor or per output channel");
    src.sw = sw->data;
    src.nsw = mi_sdk_numel(sw);
    if (b && (!b->data || b->dtype != MI_DTYPE_INT32 || mi_sdk_numel(b) != ch))
      return mi__blis_unsupported(err, n, "bias must be an INT32 constant with one value per output channel");
    src.ibias = b ? b->data : NULL;
  }
  return is_conv ? mi__blis_qconv_build(p, s, &src, err) : mi__blis_qgemm_build(p, s, &src, err);
}
