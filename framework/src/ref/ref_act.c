/* ref_act.c - reference Elu, Selu, Celu, Softsign, Mish, ThresholdedRelu, Shrink, the
 * trigonometric and hyperbolic functions after Cos and Sin (Tan, Asin, Acos, Atan, Sinh, Cosh,
 * Asinh, Acosh, Atanh) and CastLike. */
#include <math.h>
#include <string.h>

#include "graph/onnx_dtype.h"
#include "graph/op_since.h"
#include "ref/ref_ops.h"

enum { A_ELU,
       A_SELU,
       A_CELU,
       A_SOFTSIGN,
       A_MISH,
       A_THRESH,
       A_SHRINK,
       A_TAN,
       A_ASIN,
       A_ACOS,
       A_ATAN,
       A_SINH,
       A_COSH,
       A_ASINH,
       A_ACOSH,
       A_ATANH };

static int act_code(const char *op) {
  static const char *names[] = {"Elu", "Selu", "Celu", "Softsign", "Mish", "ThresholdedRelu",
                                "Shrink", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
                                "Acosh", "Atanh"};
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(op, names[i]) == 0) return i;
  return -1;
}

int32_t mi__ref_since(mi__ref_call_t *c) {
  int64_t since = mi__op_since(c->node->op_type);
  if (c->opset < since)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the op exists from opset %lld on",
                        (long long)since);
  return MI_OK;
}

/* Shrink: values within [-lambd, lambd] become 0, the others move towards 0 by bias. */
static float shrink(float v, float lambd, float bias) {
  if (v < -lambd) return v + bias;
  if (v > lambd) return v - bias;
  return 0.0f;
}

/* log(1 + e^v) without overflow for large v, as the Softplus kernel. */
static double softplus(double v) { return v > 20.0 ? v : log1p(exp(v)); }

int32_t mi__ref_act(mi__ref_call_t *c) {
  int code = act_code(c->node->op_type);
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  float alpha = 1.0f, gamma = 0.0f, bias = 0.0f, lambd = 0.0f;
  if (code < 0) return mi__ref_fail(c, MI_ERR_INTERNAL, "no activation kernel");
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x)) != MI_OK) return rc;
  switch (code) {
  case A_SELU: /* the defaults are the float32 values of the paper's constants */
    alpha = mi_node_attr_float(c->node, "alpha", 1.67326319217681884765625f);
    gamma = mi_node_attr_float(c->node, "gamma", 1.05070102214813232421875f);
    break;
  case A_CELU:
    alpha = mi_node_attr_float(c->node, "alpha", 1.0f);
    if (alpha == 0.0f) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "alpha must not be 0");
    break;
  case A_SHRINK:
    bias = mi_node_attr_float(c->node, "bias", 0.0f);
    lambd = mi_node_attr_float(c->node, "lambd", 0.5f);
    break;
  default: alpha = mi_node_attr_float(c->node, "alpha", 1.0f); break;
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t i = 0, n = mi_array_numel(x); i < n; i++) {
    float v = xp[i], r = v;
    switch (code) {
    case A_ELU: r = v >= 0.0f ? v : alpha * (expf(v) - 1.0f); break;
    case A_SELU: r = gamma * (v > 0.0f ? v : alpha * expf(v) - alpha); break;
    case A_CELU: r = fmaxf(0.0f, v) + fminf(0.0f, alpha * (expf(v / alpha) - 1.0f)); break;
    case A_SOFTSIGN: r = v / (1.0f + fabsf(v)); break;
    case A_MISH: r = (float)(v * tanh(softplus(v))); break;
    case A_THRESH: r = v > alpha ? v : 0.0f; break;
    case A_SHRINK: r = shrink(v, lambd, bias); break;
    /* outside their domains (|x| > 1 for Asin, x < 1 for Acosh, ...) these give NaN, as in
     * ONNX Runtime */
    case A_TAN: r = tanf(v); break;
    case A_ASIN: r = asinf(v); break;
    case A_ACOS: r = acosf(v); break;
    case A_ATAN: r = atanf(v); break;
    case A_SINH: r = sinhf(v); break;
    case A_COSH: r = coshf(v); break;
    case A_ASINH: r = asinhf(v); break;
    case A_ACOSH: r = acoshf(v); break;
    default: r = atanhf(v); break;
    }
    yp[i] = r;
  }
  return MI_OK;
}

/* The ONNX TensorProto type of our dtypes, for the Cast that CastLike is (INT4, whose values
 * are held unpacked in bytes, has none here). */
static int64_t onnx_type(int32_t dt) { return dt == MI_DTYPE_INT4 ? 0 : mi__onnx_from_dtype(dt); }

/* CastLike(x, like) is Cast(x, to = like's dtype): run Cast on a copy of the node that carries
 * the `to` attribute. */
int32_t mi__ref_castlike(mi__ref_call_t *c) {
  const mi_array_t *like;
  mi_attr_t attrs[9];
  mi_node_t node;
  mi__ref_call_t cc;
  int32_t rc;
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 1, 0, &like)) != MI_OK) return rc;
  if (onnx_type(like->dtype) == 0)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "cast to %s is not supported",
                        mi_dtype_name(like->dtype));
  if (c->node->attr_count > 8)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "too many attributes");
  node = *c->node;
  for (int32_t i = 0; i < c->node->attr_count; i++) attrs[i] = c->node->attrs[i];
  memset(&attrs[node.attr_count], 0, sizeof attrs[0]);
  attrs[node.attr_count].name = "to";
  attrs[node.attr_count].type = MI_ATTR_INT;
  attrs[node.attr_count].i = onnx_type(like->dtype);
  node.attrs = attrs;
  node.attr_count++;
  cc = *c;
  cc.node = &node;
  return mi__ref_cast(&cc);
}
