/* ref_elementwise.c - reference unary activations, broadcasting binary ops, Clip and Where. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define INTS                                                                                      \
  (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) | MI_DTYPE_BIT(MI_DTYPE_INT16) |    \
   MI_DTYPE_BIT(MI_DTYPE_UINT16) | MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_UINT32) | \
   MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_UINT64))
#define BOOL MI_DTYPE_BIT(MI_DTYPE_BOOL)

/* ---------------------------------------------------------------- unary */

static float sigmoidf(float x) {
  /* Two forms so that exp never overflows. */
  if (x >= 0) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

enum {
  U_RELU,
  U_LEAKY,
  U_HSIG,
  U_HSWISH,
  U_SIGMOID,
  U_TANH,
  U_ERF,
  U_GELU,
  U_SQRT,
  U_LOG,
  U_EXP,
  U_NEG,
  U_ABS,
  U_RECIP,
  U_NOT,
  U_SIGN,
  U_FLOOR,
  U_CEIL,
  U_ROUND,
  U_SOFTPLUS,
  U_COS,
  U_SIN
};

static int unary_code(const char *op) {
  static const char *names[] = {"Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid",
                                "Tanh", "Erf", "Gelu", "Sqrt", "Log",
                                "Exp", "Neg", "Abs", "Reciprocal", "Not",
                                "Sign", "Floor", "Ceil", "Round", "Softplus", "Cos", "Sin"};
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(op, names[i]) == 0) return i;
  return -1;
}

/* Neg, Abs and Sign also run on integers (shape arithmetic; wrapping as the type does), Not on
 * bool. */
static int32_t unary_int(mi__ref_call_t *c, int code, const mi_array_t *x) {
  mi_array_t *y;
  int32_t rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y);
  int64_t n = mi_array_numel(x);
  int uns = mi__dtype_is_unsigned(x->dtype);
  if (rc != MI_OK) return rc;
  for (int64_t i = 0; i < n; i++) {
    if (x->dtype == MI_DTYPE_BOOL) {
      ((uint8_t *)y->data)[i] = !((const uint8_t *)x->data)[i];
    } else {
      int64_t v = mi__int_load(x->data, x->dtype, i);
      int neg = code == U_NEG || (!uns && v < 0);
      if (code == U_SIGN)
        mi__int_store(y->data, x->dtype, i, (v != 0) - 2 * (!uns && v < 0));
      else
        mi__int_store(y->data, x->dtype, i, neg ? (int64_t)(0 - (uint64_t)v) : v);
    }
  }
  return MI_OK;
}

int32_t mi__ref_unary(mi__ref_call_t *c) {
  int code = unary_code(c->node->op_type);
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  float alpha = 0, beta = 0;
  int gelu_tanh = 0;

  if (code < 0) return mi__ref_fail(c, MI_ERR_INTERNAL, "no unary kernel");
  if (code == U_NOT) {
    if ((rc = mi__ref_need(c, 0, BOOL, &x)) != MI_OK) return rc;
    return unary_int(c, code, x);
  }
  if ((rc = mi__ref_need(c, 0, (code == U_NEG || code == U_ABS || code == U_SIGN) ? F32 | INTS : F32,
                         &x)) != MI_OK)
    return rc;
  if (x->dtype != MI_DTYPE_FLOAT32) return unary_int(c, code, x);
  if (code == U_LEAKY) alpha = mi_node_attr_float(c->node, "alpha", 0.01f);
  if (code == U_HSIG) {
    alpha = mi_node_attr_float(c->node, "alpha", 0.2f);
    beta = mi_node_attr_float(c->node, "beta", 0.5f);
  }
  if (code == U_GELU) {
    const char *approx = mi_node_attr_string(c->node, "approximate", "none");
    if (strcmp(approx, "tanh") == 0)
      gelu_tanh = 1;
    else if (strcmp(approx, "none") != 0)
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "approximate='%s' is not supported", approx);
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t n = mi_array_numel(x);
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t i = 0; i < n; i++) {
    float v = xp[i], r = 0;
    switch (code) {
    case U_RELU: r = v > 0 ? v : 0; break;
    case U_LEAKY: r = v >= 0 ? v : alpha * v; break;
    case U_HSIG: r = fmaxf(0.0f, fminf(1.0f, alpha * v + beta)); break;
    case U_HSWISH: r = v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f)); break;
    case U_SIGMOID: r = sigmoidf(v); break;
    case U_TANH: r = tanhf(v); break;
    case U_ERF: r = erff(v); break;
    case U_GELU:
      if (gelu_tanh) /* sqrt(2/pi) * (x + 0.044715 x^3) */
        r = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
      else
        r = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
      break;
    case U_SQRT: r = sqrtf(v); break;
    case U_LOG: r = logf(v); break;
    case U_EXP: r = expf(v); break;
    case U_NEG: r = -v; break;
    case U_ABS: r = fabsf(v); break;
    case U_RECIP: r = 1.0f / v; break;
    case U_SIGN:
      r = v > 0 ? 1.0f : v < 0 ? -1.0f
                               : v; /* keeps NaN and 0 */
      break;
    case U_FLOOR: r = floorf(v); break;
    case U_COS: r = cosf(v); break;
    case U_SIN: r = sinf(v); break;
    case U_CEIL: r = ceilf(v); break;
    case U_ROUND:
      r = nearbyintf(v); /* halves to even, the default rounding mode */
      break;
    case U_SOFTPLUS:
      r = v > 20.0f ? v : log1pf(expf(v)); /* no overflow for large v */
      break;
    }
    yp[i] = r;
  }
  return MI_OK;
}

/* Clip on integers (opset 12 on): min and max of x's dtype, each absent or empty for none. */
static int32_t clip_int(mi__ref_call_t *c, const mi_array_t *x) {
  int u = mi__dtype_is_unsigned(x->dtype), has[2] = {0, 0};
  int64_t bound[2] = {0, 0};
  mi_array_t *y;
  int32_t rc;
  for (int k = 0; k < 2; k++) {
    const mi_array_t *a = mi__ref_in(c, 1 + k);
    if (!a || mi_array_numel(a) == 0) continue;
    if (a->dtype != x->dtype || mi_array_numel(a) != 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must be one %s value", k ? "max" : "min",
                          mi_dtype_name(x->dtype));
    bound[k] = mi__int_load(a->data, a->dtype, 0);
    has[k] = 1;
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, x->dims, &y)) != MI_OK) return rc;
  for (int64_t i = 0, n = mi_array_numel(x); i < n; i++) {
    int64_t v = mi__int_load(x->data, x->dtype, i);
    /* min first, then max, as for floats */
    if (has[0] && (u ? (uint64_t)v < (uint64_t)bound[0] : v < bound[0])) v = bound[0];
    if (has[1] && (u ? (uint64_t)v > (uint64_t)bound[1] : v > bound[1])) v = bound[1];
    mi__int_store(y->data, x->dtype, i, v);
  }
  return MI_OK;
}

int32_t mi__ref_clip(mi__ref_call_t *c) {
  const mi_array_t *x, *a;
  float lo = -FLT_MAX, hi = FLT_MAX;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, c->opset >= 12 ? F32 | INTS : F32, &x)) != MI_OK) return rc;
  if (x->dtype != MI_DTYPE_FLOAT32) return clip_int(c, x);
  if (c->opset < 11) {
    /* Before opset 11 the bounds are attributes. */
    lo = mi_node_attr_float(c->node, "min", -FLT_MAX);
    hi = mi_node_attr_float(c->node, "max", FLT_MAX);
  } else {
    if ((a = mi__ref_in(c, 1)) && mi_array_numel(a) > 0 &&
        (rc = mi__ref_read_float(c, a, "min", &lo)) != MI_OK)
      return rc;
    if ((a = mi__ref_in(c, 2)) && mi_array_numel(a) > 0 &&
        (rc = mi__ref_read_float(c, a, "max", &hi)) != MI_OK)
      return rc;
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t n = mi_array_numel(x);
  for (int64_t i = 0; i < n; i++) {
    float v = ((const float *)x->data)[i];
    /* ONNX applies max first, then min: with min > max every value becomes max. */
    v = v < lo ? lo : v;
    ((float *)y->data)[i] = v > hi ? hi : v;
  }
  return MI_OK;
}

/* ---------------------------------------------------------------- broadcasting */

/* Advances the output multi-index by one and updates each operand's offset. */
static void bcast_next(const mi__ref_bcast_t *b, int32_t n, int64_t *idx, int64_t *off) {
  for (int32_t d = b->rank - 1; d >= 0; d--) {
    idx[d]++;
    for (int32_t k = 0; k < n; k++) off[k] += b->strides[k][d];
    if (idx[d] < b->dims[d]) return;
    for (int32_t k = 0; k < n; k++) off[k] -= b->strides[k][d] * b->dims[d];
    idx[d] = 0;
  }
}

enum { OP_ADD,
       OP_SUB,
       OP_MUL,
       OP_DIV,
       OP_POW,
       OP_MAX,
       OP_MIN,
       OP_EQ,
       OP_LT,
       OP_GT,
       OP_LE,
       OP_GE,
       OP_AND,
       OP_OR,
       OP_XOR };

static int binary_code(const char *op) {
  static const char *names[] = {"Add", "Sub", "Mul", "Div", "Pow",
                                "Max", "Min", "Equal", "Less", "Greater",
                                "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"};
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(op, names[i]) == 0) return i;
  return -1;
}

static float apply_f(int op, float a, float b) {
  switch (op) {
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV: return a / b;
  case OP_POW: return powf(a, b);
  case OP_MAX: return (a != a || a > b) ? a : b; /* NaN propagates like ONNX Runtime */
  case OP_MIN: return (a != a || a < b) ? a : b;
  default: return 0;
  }
}

/* a OP b on integers of one dtype, loaded by mi__int_load; `u64` reads them as UINT64 (the
 * narrower unsigned types are zero-extended, so signed 64-bit arithmetic is exact for them).
 * Add, Sub and Mul wrap: the store keeps the low bits, as the type's own arithmetic would. */
static int64_t apply_i(int op, int64_t a, int64_t b, int u64) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case OP_ADD: return (int64_t)(ua + ub); /* wraps instead of UB */
  case OP_SUB: return (int64_t)(ua - ub);
  case OP_MUL: return (int64_t)(ua * ub);
  case OP_DIV: return u64 ? (int64_t)(ua / ub) : (a == INT64_MIN && b == -1) ? a
                                                                             : a / b;
  case OP_MAX: return (u64 ? ua > ub : a > b) ? a : b;
  case OP_MIN: return (u64 ? ua < ub : a < b) ? a : b;
  default: return 0;
  }
}

static int compare(int op, double a, double b) {
  switch (op) {
  case OP_EQ: return a == b;
  case OP_LT: return a < b;
  case OP_GT: return a > b;
  case OP_LE: return a <= b;
  case OP_GE: return a >= b;
  case OP_AND: return a != 0 && b != 0;
  case OP_OR: return a != 0 || b != 0;
  default: return (a != 0) != (b != 0); /* Xor */
  }
}

/* The comparisons on integers, exactly (a double holds no 64-bit value exactly). */
static int compare_i(int op, int64_t a, int64_t b, int u64) {
  int lt = u64 ? (uint64_t)a < (uint64_t)b : a < b, eq = a == b;
  switch (op) {
  case OP_EQ: return eq;
  case OP_LT: return lt;
  case OP_GT: return !lt && !eq;
  case OP_LE: return lt || eq;
  default: return !lt; /* GE */
  }
}

static double load(const mi_array_t *a, int64_t i) {
  if (a->dtype == MI_DTYPE_FLOAT32) return ((const float *)a->data)[i];
  return mi__int_load_f64(a->data, a->dtype, i);
}

/* out = a OP b with numpy broadcasting; the result array is created here. */
static int32_t binary_apply(mi__ref_call_t *c, int op, const mi_array_t *a, const mi_array_t *b,
                            mi_array_t **res) {
  const mi_array_t *ab[2] = {a, b};
  mi__ref_bcast_t bc;
  int64_t idx[MI_MAX_RANK] = {0}, off[2] = {0, 0};
  int logic = op == OP_AND || op == OP_OR || op == OP_XOR;
  int cmp = op == OP_EQ || op == OP_LT || op == OP_GT || op == OP_LE || op == OP_GE || logic;
  int32_t rc, dtype = cmp ? MI_DTYPE_BOOL : a->dtype;
  mi_array_t *y;
  *res = NULL;
  if (a->dtype != b->dtype && !(op == OP_POW && a->dtype == MI_DTYPE_FLOAT32))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "operands have different dtypes %s and %s",
                        mi_dtype_name(a->dtype), mi_dtype_name(b->dtype));
  if (a->dtype == MI_DTYPE_BOOL && op != OP_EQ && !logic)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "bool operands are only supported by Equal");
  if (logic && a->dtype != MI_DTYPE_BOOL)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "operands must be bool, not %s",
                        mi_dtype_name(a->dtype));
  if (op == OP_POW && a->dtype != MI_DTYPE_FLOAT32)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "Pow is supported on float32 bases only");
  if (a->dtype != MI_DTYPE_FLOAT32 && a->dtype != MI_DTYPE_BOOL && !mi__dtype_is_int(a->dtype))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "dtype %s is not supported",
                        mi_dtype_name(a->dtype));
  if ((rc = mi__ref_broadcast(c, 2, ab, &bc)) != MI_OK) return rc;
  y = mi_array_create(dtype, bc.rank, bc.dims);
  if (!y) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "cannot allocate the result");
  int ints = mi__dtype_is_int(a->dtype), u64 = a->dtype == MI_DTYPE_UINT64;
  for (int64_t i = 0; i < bc.numel; i++, bcast_next(&bc, 2, idx, off)) {
    if (cmp && ints && !logic) {
      ((uint8_t *)y->data)[i] = (uint8_t)compare_i(op, mi__int_load(a->data, a->dtype, off[0]),
                                                   mi__int_load(b->data, b->dtype, off[1]), u64);
    } else if (cmp) {
      ((uint8_t *)y->data)[i] = (uint8_t)compare(op, load(a, off[0]), load(b, off[1]));
    } else if (dtype == MI_DTYPE_FLOAT32) {
      ((float *)y->data)[i] = apply_f(op, ((const float *)a->data)[off[0]], (float)load(b, off[1]));
    } else {
      int64_t va = mi__int_load(a->data, a->dtype, off[0]), vb = mi__int_load(b->data, b->dtype, off[1]);
      if (op == OP_DIV && vb == 0) {
        mi_array_destroy(y);
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "integer division by zero");
      }
      mi__int_store(y->data, dtype, i, apply_i(op, va, vb, u64));
    }
  }
  *res = y;
  return MI_OK;
}

int32_t mi__ref_binary(mi__ref_call_t *c) {
  const mi_array_t *a, *b;
  int op = binary_code(c->node->op_type);
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &a)) != MI_OK || (rc = mi__ref_need(c, 1, 0, &b)) != MI_OK)
    return rc;
  if (op < 0) return mi__ref_fail(c, MI_ERR_INTERNAL, "no binary kernel");
  return binary_apply(c, op, a, b, &c->out[0]);
}

/* Max, Min, Sum, Mean: any number of inputs, folded left to right with broadcasting. */
int32_t mi__ref_variadic(mi__ref_call_t *c) {
  const char *op = c->node->op_type;
  int code = strcmp(op, "Max") == 0 ? OP_MAX : strcmp(op, "Min") == 0 ? OP_MIN
                                                                      : OP_ADD;
  mi_array_t *acc = NULL, *next;
  const mi_array_t *a;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &a)) != MI_OK) return rc;
  acc = mi__ref_clone(a);
  if (!acc) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "cannot allocate the result");
  for (int32_t k = 1; k < c->nin; k++) {
    if ((rc = mi__ref_need(c, k, 0, &a)) != MI_OK) {
      mi_array_destroy(acc);
      return rc;
    }
    rc = binary_apply(c, code, acc, a, &next);
    mi_array_destroy(acc);
    if (rc != MI_OK) return rc;
    acc = next;
  }
  if (strcmp(op, "Mean") == 0) {
    if (acc->dtype != MI_DTYPE_FLOAT32) {
      mi_array_destroy(acc);
      return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "Mean is supported on float32 only");
    }
    int64_t n = mi_array_numel(acc);
    for (int64_t i = 0; i < n; i++) ((float *)acc->data)[i] /= (float)c->nin;
  }
  c->out[0] = acc;
  return MI_OK;
}

int32_t mi__ref_where(mi__ref_call_t *c) {
  const mi_array_t *cond, *x, *y;
  mi__ref_bcast_t bc;
  int64_t idx[MI_MAX_RANK] = {0}, off[3] = {0, 0, 0};
  mi_array_t *out;
  size_t es;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, BOOL, &cond)) != MI_OK || (rc = mi__ref_need(c, 1, 0, &x)) != MI_OK ||
      (rc = mi__ref_need(c, 2, 0, &y)) != MI_OK)
    return rc;
  const mi_array_t *all[3] = {cond, x, y};
  if (x->dtype != y->dtype)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X is %s but Y is %s",
                        mi_dtype_name(x->dtype), mi_dtype_name(y->dtype));
  if ((rc = mi__ref_broadcast(c, 3, all, &bc)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, x->dtype, bc.rank, bc.dims, &out)) != MI_OK) return rc;
  es = mi_dtype_size(x->dtype);
  for (int64_t i = 0; i < bc.numel; i++, bcast_next(&bc, 3, idx, off)) {
    const mi_array_t *src = ((const uint8_t *)cond->data)[off[0]] ? x : y;
    int64_t so = src == x ? off[1] : off[2];
    memcpy((char *)out->data + (size_t)i * es, (const char *)src->data + (size_t)so * es, es);
  }
  return MI_OK;
}
