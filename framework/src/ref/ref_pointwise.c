/* ref_pointwise.c - reference element-wise ops added for real exports: PRelu (slope broadcast
 * to the input), Mod (both fmod modes, every integer type), IsNaN and IsInf. */
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define INTS                                                                                      \
  (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) | MI_DTYPE_BIT(MI_DTYPE_INT16) |    \
   MI_DTYPE_BIT(MI_DTYPE_UINT16) | MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_UINT32) | \
   MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_UINT64))

int32_t mi__ref_prelu(mi__ref_call_t *c) {
  const mi_array_t *ab[2];
  mi__ref_bcast_t b;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &ab[0])) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 1, F32, &ab[1])) != MI_OK) return rc;
  if ((rc = mi__ref_broadcast(c, 2, ab, &b)) != MI_OK) return rc;
  /* Unidirectional: the slope adapts to X, never the other way. */
  int same = b.rank == ab[0]->rank;
  for (int32_t d = 0; same && d < b.rank; d++) same = b.dims[d] == ab[0]->dims[d];
  if (!same)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "slope does not broadcast to the input shape");
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, b.rank, b.dims, &y)) != MI_OK) return rc;
  const float *x = ab[0]->data, *s = ab[1]->data;
  for (int64_t i = 0; i < b.numel; i++) {
    int64_t off[2];
    mi__ref_bcast_offsets(&b, 2, i, off);
    float v = x[off[0]];
    ((float *)y->data)[i] = v < 0 ? v * s[off[1]] : v;
  }
  return MI_OK;
}

/* fmod = 0: the remainder takes the divisor's sign (Python's %); fmod = 1: the dividend's
 * (C's fmod and %). Floats need fmod = 1, as the ONNX spec says. */
static int64_t mod_int(int64_t a, int64_t b, int fmod_mode) {
  int64_t r = (b == -1) ? 0 : a % b; /* INT64_MIN % -1 traps */
  if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int32_t mi__ref_mod(mi__ref_call_t *c) {
  const mi_array_t *ab[2];
  mi__ref_bcast_t b;
  mi_array_t *y;
  int32_t rc;
  int fm = mi_node_attr_int(c->node, "fmod", 0) != 0;
  if ((rc = mi__ref_need(c, 0, F32 | INTS, &ab[0])) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 1, F32 | INTS, &ab[1])) != MI_OK) return rc;
  if (ab[0]->dtype != ab[1]->dtype)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "inputs are %s and %s",
                        mi_dtype_name(ab[0]->dtype), mi_dtype_name(ab[1]->dtype));
  if (ab[0]->dtype == MI_DTYPE_FLOAT32 && !fm)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "float inputs need fmod = 1");
  if ((rc = mi__ref_broadcast(c, 2, ab, &b)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, ab[0]->dtype, b.rank, b.dims, &y)) != MI_OK) return rc;
  for (int64_t i = 0; i < b.numel; i++) {
    int64_t off[2];
    mi__ref_bcast_offsets(&b, 2, i, off);
    if (ab[0]->dtype == MI_DTYPE_FLOAT32) {
      ((float *)y->data)[i] =
          fmodf(((const float *)ab[0]->data)[off[0]], ((const float *)ab[1]->data)[off[1]]);
      continue;
    }
    int32_t dt = ab[0]->dtype;
    int64_t p = mi__int_load(ab[0]->data, dt, off[0]), q = mi__int_load(ab[1]->data, dt, off[1]);
    if (q == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "integer modulo by zero");
    /* Unsigned remainders have no sign to choose (UINT64 above INT64_MAX read as unsigned). */
    mi__int_store(y->data, dt, i,
                  mi__dtype_is_unsigned(dt) ? (int64_t)((uint64_t)p % (uint64_t)q) : mod_int(p, q, fm));
  }
  return MI_OK;
}

int32_t mi__ref_isnan_isinf(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  int is_nan = strcmp(c->node->op_type, "IsNaN") == 0;
  int neg = mi_node_attr_int(c->node, "detect_negative", 1) != 0;
  int pos = mi_node_attr_int(c->node, "detect_positive", 1) != 0;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_BOOL, x->rank, x->dims, &y)) != MI_OK) return rc;
  for (int64_t i = 0; i < mi_array_numel(x); i++) {
    float v = ((const float *)x->data)[i];
    ((uint8_t *)y->data)[i] = is_nan ? isnan(v) != 0 : isinf(v) && (v > 0 ? pos : neg);
  }
  return MI_OK;
}
