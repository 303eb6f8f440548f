/* shape_infer_elementwise.c - shapes of unary, broadcasting and normalization ops, with value
 * evaluation for the arithmetic that shape subgraphs do (Add, Mul, Div, Cast, Where, ...). */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/onnx_dtype.h"
#include "graph/shape_infer.h"

static int is_int_dtype(int32_t d) {
  return mi__dtype_is_int(d);
}

/* Output 0's value, element by element f(input 0's), when input 0's value is known (shape
 * arithmetic); `dt` is passed through to f. Out of memory only leaves the value unknown. */
static void map_value(mi__si_t *c, const mi_node_t *n,
                      double (*f)(const mi_node_t *, int32_t, double), int32_t dt) {
  int64_t cnt = 0;
  const double *v = mi__si_val(c, n, 0, &cnt);
  if (!v) return;
  double *o = malloc((size_t)(cnt ? cnt : 1) * sizeof *o);
  if (!o) return;
  for (int64_t i = 0; i < cnt; i++) o[i] = f(n, dt, v[i]);
  mi__si_set_val(c, n, 0, o, cnt);
  free(o);
}

static double unary_op(const mi_node_t *n, int32_t dt, double v) {
  (void)dt;
  if (strcmp(n->op_type, "Neg") == 0) return -v;
  if (strcmp(n->op_type, "Abs") == 0) return fabs(v);
  if (strcmp(n->op_type, "Sqrt") == 0) return sqrt(v);
  if (strcmp(n->op_type, "Floor") == 0) return floor(v);
  if (strcmp(n->op_type, "Ceil") == 0) return ceil(v);
  if (strcmp(n->op_type, "Round") == 0) return nearbyint(v);
  if (strcmp(n->op_type, "Sign") == 0) return v > 0 ? 1 : v < 0 ? -1
                                                                : v;
  if (strcmp(n->op_type, "Not") == 0) return isnan(v) ? NAN : !v;
  return v; /* Identity */
}

/* Unary ops whose value we also evaluate (they appear in shape arithmetic). */
int32_t mi__si_unary_eval(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_same_shape(c, n);
  if (rc) return rc;
  map_value(c, n, unary_op, 0);
  return MI_OK;
}

int32_t mi__si_dropout(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_unary_eval(c, n);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  mi__si_set(c, n, 1, MI_DTYPE_BOOL, x->rank, x->dims);
  return MI_OK;
}

static double apply(const char *op, double a, double b, int is_int) {
  if (strcmp(op, "Add") == 0 || strcmp(op, "Sum") == 0 || strcmp(op, "Mean") == 0) return a + b;
  if (strcmp(op, "Sub") == 0) return a - b;
  if (strcmp(op, "Mul") == 0) return a * b;
  if (strcmp(op, "Div") == 0) return is_int ? (b == 0 ? NAN : trunc(a / b)) : a / b;
  if (strcmp(op, "Pow") == 0) return pow(a, b);
  if (strcmp(op, "Max") == 0) return a > b ? a : b;
  if (strcmp(op, "Min") == 0) return a < b ? a : b;
  if (isnan(a) || isnan(b)) return NAN; /* an unknown dim gives an unknown truth value */
  if (strcmp(op, "Equal") == 0) return a == b;
  if (strcmp(op, "Less") == 0) return a < b;
  if (strcmp(op, "Greater") == 0) return a > b;
  if (strcmp(op, "LessOrEqual") == 0) return a <= b;
  if (strcmp(op, "GreaterOrEqual") == 0) return a >= b;
  if (strcmp(op, "And") == 0) return a != 0 && b != 0;
  if (strcmp(op, "Or") == 0) return a != 0 || b != 0;
  if (strcmp(op, "Xor") == 0) return (a != 0) != (b != 0);
  return NAN;
}

/* Evaluates a broadcasting op over known inputs. `where` selects Where's 3-input form. */
static void eval_broadcast(mi__si_t *c, const mi_node_t *n, int32_t rank, const int64_t *od) {
  int32_t ni = n->input_count;
  const double *v[3];
  int64_t cnt[3], total = mi__dims_numel(rank, od);
  if (ni > 3 || total < 0 || total > MI__SI_MAX_VALUES) return;
  for (int32_t k = 0; k < ni; k++) {
    const mi_tensor_t *t = mi__si_in(c, n, k);
    if (!t || !(v[k] = mi__si_val(c, n, k, &cnt[k])) || mi__tensor_numel(t) != cnt[k]) return;
  }
  double *o = malloc((size_t)(total ? total : 1) * sizeof *o);
  if (!o) return;
  int is_where = strcmp(n->op_type, "Where") == 0;
  int is_int = is_int_dtype(mi__si_in(c, n, is_where ? 1 : 0)->dtype);
  for (int64_t f = 0; f < total; f++) {
    double x[3] = {0, 0, 0};
    for (int32_t k = 0; k < ni; k++) {
      const mi_tensor_t *t = mi__si_in(c, n, k);
      int64_t idx = 0, rem = f, stride = 1;
      /* Walk output dims from the innermost, mapping onto this input's (right-aligned) dims. */
      for (int32_t d = rank - 1; d >= 0; d--) {
        int64_t coord = rem % od[d];
        rem /= od[d];
        int32_t td = d - (rank - t->rank);
        if (td < 0) continue;
        if (t->dims[td] != 1) idx += coord * stride;
        stride *= t->dims[td];
      }
      x[k] = v[k][idx];
    }
    if (is_where) {
      o[f] = (x[0] != 0 && !isnan(x[0])) ? x[1] : x[2];
    } else { /* a left fold, so the variadic Max, Min, Sum and Mean take every input */
      o[f] = x[0];
      for (int32_t k = 1; k < ni; k++) o[f] = apply(n->op_type, o[f], x[k], is_int);
      if (strcmp(n->op_type, "Mean") == 0) o[f] /= ni;
    }
    if (is_where && isnan(x[0])) o[f] = NAN;
  }
  mi__si_set_val(c, n, 0, o, total);
  free(o);
}

int32_t mi__si_broadcast_op(mi__si_t *c, const mi_node_t *n) {
  static const char *variadic[] = {"Max", "Min", "Sum", "Mean"};
  int32_t min = strcmp(n->op_type, "Where") == 0 ? 3 : 2;
  for (size_t i = 0; i < sizeof variadic / sizeof variadic[0]; i++)
    if (strcmp(n->op_type, variadic[i]) == 0) min = 1;
  int32_t rc = mi__si_need(c, n, min);
  if (rc) return rc;
  int32_t rank = 0;
  int64_t dims[MI_MAX_RANK];
  int unknown = 0;
  for (int32_t k = 0; k < n->input_count; k++) {
    const mi_tensor_t *t = mi__si_in(c, n, k);
    if (!t) continue;
    if (t->rank < 0) {
      unknown = 1;
      continue;
    }
    int64_t out[MI_MAX_RANK];
    int32_t r;
    if (t->rank > MI_MAX_RANK || (rc = mi__si_broadcast(c, n, rank, dims, t->rank, t->dims, &r, out)))
      return rc ? rc : mi__si_fail(c, n, MI_ERR_PARSE, "rank too large");
    rank = r;
    memcpy(dims, out, sizeof out);
  }
  int32_t dtype = mi__si_in(c, n, 0)->dtype;
  static const char *to_bool[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                  "And", "Or", "Xor"};
  for (size_t i = 0; i < sizeof to_bool / sizeof to_bool[0]; i++)
    if (strcmp(n->op_type, to_bool[i]) == 0) dtype = MI_DTYPE_BOOL;
  if (strcmp(n->op_type, "Where") == 0) dtype = mi__si_in(c, n, 1)->dtype;
  if (unknown) {
    mi__si_set(c, n, 0, dtype, -1, NULL);
    return MI_OK;
  }
  mi__si_set(c, n, 0, dtype, rank, dims);
  eval_broadcast(c, n, rank, dims);
  return MI_OK;
}

static double cast_op(const mi_node_t *n, int32_t dt, double v) {
  (void)n;
  if (dt == MI_DTYPE_BOOL) return isnan(v) ? NAN : v != 0;
  return is_int_dtype(dt) ? trunc(v) : v;
}

int32_t mi__si_cast(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_need(c, n, 1);
  if (rc) return rc;
  const mi_attr_t *to = mi_node_attr(n, "to");
  int32_t dt = to && to->type == MI_ATTR_INT ? mi__dtype_from_onnx((int32_t)to->i) : 0;
  if (dt == MI_DTYPE_UNDEFINED)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "cast target type %lld (%s) unsupported",
                       to ? (long long)to->i : -1LL,
                       to && to->i >= 0 && to->i <= INT32_MAX ? mi__onnx_type_name((int32_t)to->i) : "?");
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  mi__si_set(c, n, 0, dt, x->rank, x->dims);
  map_value(c, n, cast_op, dt);
  return MI_OK;
}

int32_t mi__si_softmax(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_same_shape(c, n);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  /* Before opset 13 the input is coerced to 2-D at `axis` (default 1); from 13 the softmax
   * runs along `axis` (default -1). The shape is kept either way; the axis must be valid. */
  int64_t axis = mi_node_attr_int(n, "axis", c->g->opset >= 13 ? -1 : 1);
  int32_t a;
  if (x->rank >= 0 && (rc = mi__si_axis(c, n, axis, x->rank > 0 ? x->rank : 1, &a))) return rc;
  return MI_OK;
}

int32_t mi__si_batchnorm(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_shaped_like(c, n, 5, MI_DTYPE_UNDEFINED, &x);
  if (rc) return rc;
  if (x->rank >= 2)
    for (int32_t k = 1; k < n->output_count; k++) mi__si_set(c, n, k, x->dtype, 1, &x->dims[1]);
  return MI_OK;
}

int32_t mi__si_layernorm(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_shaped_like(c, n, 2, MI_DTYPE_UNDEFINED, &x);
  if (rc) return rc;
  if (x->rank < 0) return MI_OK;
  int32_t a;
  if ((rc = mi__si_axis(c, n, mi_node_attr_int(n, "axis", -1), x->rank, &a))) return rc;
  int64_t d[MI_MAX_RANK];
  for (int32_t i = 0; i < x->rank; i++) d[i] = i < a ? x->dims[i] : 1;
  mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, x->rank, d);
  mi__si_set(c, n, 2, MI_DTYPE_FLOAT32, x->rank, d);
  return MI_OK;
}

int32_t mi__si_clip(mi__si_t *c, const mi_node_t *n) {
  /* min/max are attributes before opset 11 and optional inputs from 11; either way the
   * output has the input's shape. Inputs past X only exist from opset 11. */
  if (c->g->opset < 11 && n->input_count > 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "min/max are attributes before opset 11, not inputs");
  return mi__si_same_shape(c, n);
}

int32_t mi__si_constant(mi__si_t *c, const mi_node_t *n) {
  const mi_attr_t *a;
  if ((a = mi_node_attr(n, "value_float")) && a->type == MI_ATTR_FLOAT) {
    double v = a->f;
    mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 0, NULL);
    mi__si_set_val(c, n, 0, &v, 1);
  } else if ((a = mi_node_attr(n, "value_int")) && a->type == MI_ATTR_INT) {
    double v = (double)a->i;
    mi__si_set(c, n, 0, MI_DTYPE_INT64, 0, NULL);
    mi__si_set_val(c, n, 0, &v, 1);
  } else if ((a = mi_node_attr(n, "value_ints")) && a->type == MI_ATTR_INTS) {
    int64_t d = a->count;
    mi__si_set(c, n, 0, MI_DTYPE_INT64, 1, &d);
    double *v = malloc((size_t)(a->count + 1) * sizeof *v);
    if (v) {
      for (int32_t i = 0; i < a->count; i++) v[i] = (double)a->ints[i];
      mi__si_set_val(c, n, 0, v, a->count);
      free(v);
    }
  } else if ((a = mi_node_attr(n, "value_floats")) && a->type == MI_ATTR_FLOATS) {
    int64_t d = a->count;
    mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 1, &d);
  } else {
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "Constant without a supported value attribute");
  }
  return MI_OK;
}

/* Opset 21's block_size: a blocked scale has x's shape with the axis dim ceil-divided. */
static int32_t check_blocks(mi__si_t *c, const mi_node_t *n) {
  int64_t b = mi_node_attr_int(n, "block_size", 0), axis = mi_node_attr_int(n, "axis", 1);
  const mi_tensor_t *x = mi__si_in(c, n, 0), *s = mi__si_in(c, n, 1);
  if (b < 0) return mi__si_fail(c, n, MI_ERR_PARSE, "block_size %lld < 0", (long long)b);
  if (b == 0 || !x || !s || x->rank < 0 || s->rank < 0 || mi_tensor_dynamic_dim(x) >= 0 || s->rank == 0)
    return MI_OK;
  if (axis < -x->rank || axis >= x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "axis %lld out of range for rank %d", (long long)axis, (int)x->rank);
  if (axis < 0) axis += x->rank;
  if (s->rank != x->rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "block_size %lld: scale rank %d, input rank %d", (long long)b,
                       (int)s->rank, (int)x->rank);
  for (int32_t d = 0; d < x->rank; d++) {
    int64_t want = d == axis ? (x->dims[d] + b - 1) / b : x->dims[d];
    if (s->dims[d] >= 0 && s->dims[d] != want)
      return mi__si_fail(c, n, MI_ERR_PARSE, "block_size %lld along axis %lld: scale dim %d is %lld, not %lld",
                         (long long)b, (long long)axis, (int)d, (long long)s->dims[d], (long long)want);
  }
  return MI_OK;
}

/* QuantizeLinear: the input's shape in the zero point's dtype (else opset 21's output_dtype,
 * else uint8). */
int32_t mi__si_quantize_linear(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *zp = mi__si_in(c, n, 2);
  int32_t rc = check_blocks(c, n);
  if (rc) return rc;
  int32_t dt = zp ? zp->dtype : mi_node_attr_int(n, "output_dtype", 0) == 3 ? MI_DTYPE_INT8
                                                                            : MI_DTYPE_UINT8;
  return mi__si_shaped_like(c, n, 2, dt, NULL);
}

/* DequantizeLinear: the input's shape in float32. */
int32_t mi__si_dequantize_linear(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = check_blocks(c, n);
  if (rc) return rc;
  return mi__si_shaped_like(c, n, 2, MI_DTYPE_FLOAT32, NULL);
}

/* BitShift (direction LEFT / RIGHT) and BitwiseAnd / Or / Xor broadcast like Add; BitwiseNot
 * keeps its input's shape. Integer operands of one type. */
int32_t mi__si_bitwise(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  const char *dir = mi_node_attr_string(n, "direction", "");
  int is_not = strcmp(n->op_type, "BitwiseNot") == 0, shift = strcmp(n->op_type, "BitShift") == 0;
  if (rc || (rc = mi__si_need(c, n, is_not ? 1 : 2))) return rc;
  if (shift && strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
    return mi__si_fail(c, n, MI_ERR_PARSE, "direction '%s' is not LEFT or RIGHT", dir);
  if (!is_not && mi__si_in(c, n, 0)->dtype != mi__si_in(c, n, 1)->dtype &&
      mi__si_in(c, n, 0)->dtype != MI_DTYPE_UNDEFINED && mi__si_in(c, n, 1)->dtype != MI_DTYPE_UNDEFINED)
    return mi__si_fail(c, n, MI_ERR_PARSE, "inputs are %s and %s", mi_dtype_name(mi__si_in(c, n, 0)->dtype),
                       mi_dtype_name(mi__si_in(c, n, 1)->dtype));
  for (int32_t k = 0; k < (is_not ? 1 : 2); k++) {
    int32_t dt = mi__si_in(c, n, k)->dtype;
    if (dt != MI_DTYPE_UNDEFINED && (!is_int_dtype(dt) || (shift && !mi__dtype_is_unsigned(dt))))
      return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "input %d is %s: %s", (int)k, mi_dtype_name(dt),
                         shift ? "an unsigned integer type is needed" : "an integer type is needed");
  }
  return is_not ? mi__si_same_shape(c, n) : mi__si_broadcast_op(c, n);
}
