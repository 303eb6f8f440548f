/* blis_qms.c - com.microsoft QLinearSigmoid, QLinearLeakyRelu, QLinearConcat and
 * QLinearSoftmax of ONNX Runtime's QOperator models, with the reference's float formulas
 * (framework/src/ref/ref_qlut.c), so the codes are the reference's bit for bit: the first three
 * as 256-entry tables on the codes built at prepare (dequantize as x_scale * (x - zp), the float
 * op, quantize as saturate(nearbyint(v / y_scale) + y_zp)); QLinearConcat requantizes each input
 * through its table into its slice of the output (a plain copy where the input's parameters are
 * the output's); QLinearSoftmax reads a 256-entry table of exponentials per row. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

#define QMS_MAX_IN 64

typedef struct qms {
  int32_t y, n_in;
  int64_t grain;                                /* rows per part at least */
  int64_t outer, inner, out_axis;               /* Concat: rows before the axis, elements after it, y's axis */
  int32_t x[QMS_MAX_IN];                        /* input tensors */
  int64_t axis_len[QMS_MAX_IN], at[QMS_MAX_IN]; /* each input's axis size and offset in y's axis */
  uint8_t copy[QMS_MAX_IN];
  int32_t softmax, s8, zy; /* QLinearSoftmax: rows of D codes at stride inner */
  int64_t D;
  float yinv, e[256];
  uint8_t table[QMS_MAX_IN][256];
} qms_t;

static uint8_t quant_f(float v, float s, int32_t zp, int s8) {
  float lo = s8 ? -128.0f : 0.0f, hi = s8 ? 127.0f : 255.0f, q = nearbyintf(v / s) + (float)zp;
  q = q < lo ? lo : q > hi ? hi
                           : q;
  return (uint8_t)(int32_t)q;
}

/* fn: 0 copy (requantize), 1 sigmoid, 2 leaky relu. */
static void build(uint8_t *table, int s8, float xs, int32_t zx, float ys, int32_t zy, int fn, float alpha) {
  for (int32_t t = 0; t < 256; t++) {
    int32_t code = s8 ? (int32_t)(int8_t)(uint8_t)t : t;
    float x = xs * (float)(code - zx), v = x;
    if (fn == 1) v = (float)(1.0 / (1.0 + exp(-(double)x)));
    else if (fn == 2)
      v = x >= 0.0f ? x : alpha * x;
    table[t] = quant_f(v, ys, zy, s8);
  }
}

/* Rows [b, e) of the outer dims: every input's slice requantized into y. */
static void qms_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *t = arg;
  const qms_t *q = t->state;
  uint8_t *y = t->t[q->y];
  for (int32_t k = 0; k < q->n_in; k++) {
    const uint8_t *x = t->t[q->x[k]], *tab = q->table[k];
    int64_t row = q->axis_len[k] * q->inner;
    for (int64_t o = b; o < e; o++) {
      const uint8_t *xr = x + o * row;
      uint8_t *yr = y + o * q->out_axis * q->inner + q->at[k] * q->inner;
      if (q->copy[k]) memcpy(yr, xr, (size_t)row);
      else
        for (int64_t i = 0; i < row; i++) yr[i] = tab[xr[i]];
    }
  }
}

/* QLinearSoftmax rows [b, e) (row r: outer index r / inner, inner index r % inner). */
static void softmax_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *t = arg;
  const qms_t *q = t->state;
  const uint8_t *x = t->t[q->x[0]];
  uint8_t *y = t->t[q->y];
  float lo = q->s8 ? -128.0f : 0.0f, hi = q->s8 ? 127.0f : 255.0f;
  for (int64_t r = b; r < e; r++) {
    int64_t base = (r / q->inner) * q->D * q->inner + r % q->inner;
    int32_t mx = -129;
    for (int64_t k = 0; k < q->D; k++) {
      int32_t v = q->s8 ? (int8_t)x[base + k * q->inner] : x[base + k * q->inner];
      mx = v > mx ? v : mx;
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < q->D; k++) {
      int32_t v = q->s8 ? (int8_t)x[base + k * q->inner] : x[base + k * q->inner];
      sum += q->e[255 - (mx - v)];
    }
    for (int64_t k = 0; k < q->D; k++) {
      int32_t v = q->s8 ? (int8_t)x[base + k * q->inner] : x[base + k * q->inner];
      float c = nearbyintf(q->e[255 - (mx - v)] * q->yinv / sum) + (float)q->zy;
      c = c < lo ? lo : c > hi ? hi
                               : c;
      y[base + k * q->inner] = (uint8_t)(int32_t)c;
    }
  }
}

static int32_t run_qms(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qms_t *q = s->state;
  (void)err;
  if (q->softmax) return mi__blis_run_parts(s, t, env, q->outer * q->inner, 1, 3 * q->D, softmax_part);
  int64_t work = 0;
  for (int32_t k = 0; k < q->n_in; k++) work += q->axis_len[k] * q->inner;
  return mi__blis_run_parts(s, t, env, q->outer, q->grain, work, qms_part);
}

int32_t mi__blis_prep_qms(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const char *op = n->op_type;
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int concat = strcmp(op, "QLinearConcat") == 0, fn = strcmp(op, "QLinearSigmoid") == 0 ? 1 : 2;
  int softmax = strcmp(op, "QLinearSoftmax") == 0;
  const mi_tensor_desc_t *x0 = mi__blis_tensor(p, mi__blis_in(n, concat ? 2 : 0));
  qms_t *q;
  if (!x0 || !y) return mi__blis_unsupported(err, n, "missing input or output");
  if (p->desc->node_count != 1) return mi__blis_unsupported(err, n, "runs alone, not in a fused group");
  if (!mi__blis_is_q8(x0) || y->dtype != x0->dtype || x0->data)
    return mi__blis_unsupported(err, n, "needs runtime INT8/UINT8 codes in and out, of one dtype");
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  s->run = run_qms;
  q->y = mi__blis_out(n, 0);
  int s8 = x0->dtype == MI_DTYPE_INT8;
  float ys;
  int32_t zy;
  if (softmax) { /* ONNX Runtime's algorithm, as ref_qlut.c's qlinear_softmax */
    float xs;
    int32_t zx, axis = 0;
    const mi_attr_t *op_set = NULL;
    for (int32_t a = 0; a < n->attr_count; a++)
      if (!strcmp(n->attrs[a].name, "opset")) op_set = &n->attrs[a];
    if (!op_set || !mi__blis_qpair_f(p, n, 1, 2, x0->dtype, &xs, &zx) || !mi__blis_qpair_f(p, n, 3, 4, x0->dtype, &ys, &zy) || x0->rank < 1)
      return mi__blis_unsupported(err, n, "needs the opset attribute and per-tensor constant scales and zero points");
    int64_t opset = op_set->i, ax = mi_sdk_attr_int(n, "axis", opset < 13 ? 1 : -1);
    if (ax < 0) ax += x0->rank;
    if (ax < 0 || ax >= x0->rank) return mi__blis_unsupported(err, n, "axis out of range");
    axis = (int32_t)ax;
    q->softmax = 1;
    q->s8 = s8;
    q->zy = zy;
    q->x[0] = mi__blis_in(n, 0);
    q->outer = q->D = q->inner = 1;
    for (int32_t d = 0; d < x0->rank; d++)
      if (d < axis) q->outer *= x0->dims[d];
      else if (opset < 13 || d == axis)
        q->D *= x0->dims[d];
      else
        q->inner *= x0->dims[d];
    if (q->D < 1) return mi__blis_unsupported(err, n, "empty softmax axis");
    double bsh = log((double)(FLT_MAX / (float)q->D)) - 5.0;
    bsh = (bsh > 0.0 ? bsh : 0.0) / (double)xs;
    for (int32_t i = 0; i < 256; i++) q->e[i] = (float)exp(((double)i - 255.0 + bsh) * (double)xs);
    q->yinv = floorf(1.0f / ys);
    return MI_OK;
  }
  if (!concat) {
    float xs;
    int32_t zx;
    if (!mi__blis_qpair_f(p, n, 1, 2, x0->dtype, &xs, &zx) || !mi__blis_qpair_f(p, n, 3, 4, x0->dtype, &ys, &zy))
      return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
    q->n_in = 1; /* one "row" per element, so the parts split the elements */
    q->x[0] = mi__blis_in(n, 0);
    q->outer = mi_sdk_numel(y);
    q->inner = q->out_axis = q->axis_len[0] = 1;
    q->grain = 4096;
    build(q->table[0], s8, xs, zx, ys, zy, fn, mi_sdk_attr_float(n, "alpha", 0.01f));
    return MI_OK;
  }
  int32_t nin = (n->input_count - 2) / 3, r = y->rank;
  int64_t axis = mi_sdk_attr_int(n, "axis", 0);
  if (n->input_count < 5 || (n->input_count - 2) % 3 || nin > QMS_MAX_IN)
    return mi__blis_unsupported(err, n, "input count is not 2 + 3 per input (at most 64 inputs)");
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return mi__blis_unsupported(err, n, "axis out of range");
  if (!mi__blis_qpair_f(p, n, 0, 1, x0->dtype, &ys, &zy))
    return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
  q->outer = q->inner = q->grain = 1;
  for (int32_t d = 0; d < axis; d++) q->outer *= y->dims[d];
  for (int32_t d = (int32_t)axis + 1; d < r; d++) q->inner *= y->dims[d];
  q->out_axis = y->dims[axis];
  q->n_in = nin;
  int64_t at = 0;
  for (int32_t k = 0; k < nin; k++) {
    const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 2 + 3 * k));
    float xs;
    int32_t zx;
    if (!x || x->dtype != x0->dtype || x->rank != r || x->data)
      return mi__blis_unsupported(err, n, "inputs must be runtime codes of one dtype and rank");
    for (int32_t d = 0; d < r; d++)
      if (d != axis && x->dims[d] != y->dims[d]) return mi__blis_unsupported(err, n, "input dims differ off the axis");
    if (!mi__blis_qpair_f(p, n, 3 + 3 * k, 4 + 3 * k, x0->dtype, &xs, &zx))
      return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
    q->x[k] = mi__blis_in(n, 2 + 3 * k);
    q->axis_len[k] = x->dims[axis];
    q->at[k] = at;
    at += x->dims[axis];
    q->copy[k] = xs == ys && zx == zy;
    build(q->table[k], s8, xs, zx, ys, zy, 0, 0.0f);
  }
  if (at != q->out_axis) return mi__blis_unsupported(err, n, "the inputs' axis sizes do not add up to the output's");
  return MI_OK;
}
