/* ref_util.c - helpers every reference op shares: errors, input checks, broadcasting, fp16. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "graph/graph.h"
#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"

int32_t mi__ref_fail(const mi__ref_call_t *c, int32_t code, const char *fmt, ...) {
  char msg[2 * MI_ERROR_MESSAGE_SIZE]; /* an inner error whole, and its context */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mi__errorf_nested(c->err, code, "node '%s' (%s, opset %lld): %s",
                           c->node->name ? c->node->name : "", c->node->op_type,
                           (long long)c->opset, msg);
}

const mi_array_t *mi__ref_in(const mi__ref_call_t *c, int32_t i) {
  return (i >= 0 && i < c->nin) ? c->in[i] : NULL;
}

void mi__ref_in_views(const mi__ref_call_t *c, mi__in_view_t *v, int32_t count) {
  for (int32_t k = 0; k < count; k++) {
    const mi_array_t *x = mi__ref_in(c, k);
    v[k].present = x != NULL;
    v[k].dtype = x ? x->dtype : MI_DTYPE_UNDEFINED;
    v[k].rank = x ? x->rank : -1;
    v[k].dims = x ? x->dims : NULL;
    v[k].data = x ? x->data : NULL;
  }
}

int32_t mi__ref_need(const mi__ref_call_t *c, int32_t i, uint32_t dtype_mask,
                     const mi_array_t **a) {
  const mi_array_t *x = mi__ref_in(c, i);
  *a = NULL;
  if (!x) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d is missing", (int)i);
  if (dtype_mask && !(dtype_mask & MI_DTYPE_BIT(x->dtype)))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                        "input %d has dtype %s, which this op does not take", (int)i,
                        mi_dtype_name(x->dtype));
  *a = x;
  return MI_OK;
}

int32_t mi__ref_make_out(mi__ref_call_t *c, int32_t i, int32_t dtype, int32_t rank,
                         const int64_t *dims, mi_array_t **out) {
  mi_array_t *a;
  *out = NULL;
  if (i >= c->nout) return mi__ref_fail(c, MI_ERR_INTERNAL, "output %d does not exist", (int)i);
  a = mi_array_create(dtype, rank, dims);
  if (!a) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "cannot allocate output %d", (int)i);
  c->out[i] = a;
  *out = a;
  return MI_OK;
}

int mi__ref_out_wanted(const mi__ref_call_t *c, int32_t i) {
  return i < c->node->output_count && c->node->outputs[i] >= 0;
}

int32_t mi__ref_axis(const mi__ref_call_t *c, int64_t axis, int32_t rank, int32_t *out) {
  if (axis < -(int64_t)rank || axis >= rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)axis, (int)rank);
  *out = (int32_t)(axis < 0 ? axis + rank : axis);
  return MI_OK;
}

int32_t mi__ref_read_ints(const mi__ref_call_t *c, const mi_array_t *a, const char *what,
                          int64_t *vals, int32_t cap, int32_t *count) {
  int64_t n;
  if (a->rank > 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must be 1-D, got rank %d", what,
                        (int)a->rank);
  n = mi_array_numel(a);
  if (n > cap)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "%s has %lld values, at most %d are supported",
                        what, (long long)n, (int)cap);
  for (int64_t i = 0; i < n; i++) {
    if (a->dtype == MI_DTYPE_INT64)
      vals[i] = ((const int64_t *)a->data)[i];
    else if (a->dtype == MI_DTYPE_INT32)
      vals[i] = ((const int32_t *)a->data)[i];
    else
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must be int64 or int32, got %s", what,
                          mi_dtype_name(a->dtype));
  }
  *count = (int32_t)n;
  return MI_OK;
}

int32_t mi__ref_read_float(const mi__ref_call_t *c, const mi_array_t *a, const char *what,
                           float *v) {
  if (mi_array_numel(a) != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must hold exactly one value", what);
  if (a->dtype != MI_DTYPE_FLOAT32)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "%s must be float32, got %s", what,
                        mi_dtype_name(a->dtype));
  *v = ((const float *)a->data)[0];
  return MI_OK;
}

int32_t mi__ref_attr_ints(const mi__ref_call_t *c, const char *name, int64_t *vals, int32_t cap,
                          int32_t *count) {
  const mi_attr_t *a = mi_node_attr(c->node, name);
  *count = -1;
  if (!a) return MI_OK;
  if (a->type == MI_ATTR_INT) {
    vals[0] = a->i;
    *count = 1;
    return MI_OK;
  }
  if (a->type != MI_ATTR_INTS)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute '%s' must be a list of ints", name);
  if (a->count > cap)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "attribute '%s' has %d values, at most %d allowed",
                        name, (int)a->count, (int)cap);
  for (int32_t i = 0; i < a->count; i++) vals[i] = a->ints[i];
  *count = a->count;
  return MI_OK;
}

mi_array_t *mi__ref_clone(const mi_array_t *a) {
  mi_array_t *b = mi_array_create(a->dtype, a->rank, a->dims);
  if (b && a->nbytes) memcpy(b->data, a->data, a->nbytes);
  return b;
}

void mi__ref_strides(int32_t rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

void mi__ref_index_next(int32_t rank, const int64_t *dims, const int64_t *step, int64_t *idx,
                        int64_t *off) {
  for (int32_t d = rank - 1; d >= 0; d--) {
    idx[d]++;
    *off += step[d];
    if (idx[d] < dims[d]) return;
    *off -= step[d] * dims[d];
    idx[d] = 0;
  }
}

void mi__ref_bcast_offsets(const mi__ref_bcast_t *b, int32_t n, int64_t i, int64_t *off) {
  for (int32_t k = 0; k < n; k++) off[k] = 0;
  for (int32_t d = b->rank - 1; d >= 0; d--) {
    int64_t q = i % b->dims[d];
    i /= b->dims[d];
    for (int32_t k = 0; k < n; k++) off[k] += q * b->strides[k][d];
  }
}

int32_t mi__ref_broadcast(const mi__ref_call_t *c, int32_t n, const mi_array_t *const *arrs,
                          mi__ref_bcast_t *b) {
  memset(b, 0, sizeof *b);
  for (int32_t k = 0; k < n; k++)
    if (arrs[k]->rank > b->rank) b->rank = arrs[k]->rank;
  /* Align shapes on the right; each output dim is the non-1 size, all others must be 1. */
  for (int32_t d = 0; d < b->rank; d++) {
    int64_t size = 1;
    for (int32_t k = 0; k < n; k++) {
      int32_t ad = d - (b->rank - arrs[k]->rank);
      int64_t s = ad >= 0 ? arrs[k]->dims[ad] : 1;
      if (s == 1) continue;
      if (size != 1 && size != s)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "shapes cannot be broadcast: dimension %d is %lld and %lld", (int)d,
                            (long long)size, (long long)s);
      size = s;
    }
    b->dims[d] = size;
  }
  b->numel = 1;
  for (int32_t d = 0; d < b->rank; d++) b->numel *= b->dims[d];
  for (int32_t k = 0; k < n; k++) {
    int64_t st[MI_MAX_RANK];
    int32_t off = b->rank - arrs[k]->rank;
    mi__ref_strides(arrs[k]->rank, arrs[k]->dims, st);
    for (int32_t d = 0; d < b->rank; d++) {
      int32_t ad = d - off;
      b->strides[k][d] = (ad >= 0 && arrs[k]->dims[ad] != 1) ? st[ad] : 0;
    }
  }
  return MI_OK;
}

float mi__ref_half_to_float(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = ldexpf((float)man, -24); /* subnormal */
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = ldexpf((float)(man | 0x400), exp - 25);
  return sign ? -v : v;
}

uint16_t mi__ref_float_to_half(float f) { return mi_sdk_float_to_half(f); }

int32_t mi__ref_on_codes(mi__ref_call_t *c, mi__ref_op_fn fn) {
  const mi_array_t *x = mi__ref_in(c, 0);
  mi_array_t *xf = mi_array_create(MI_DTYPE_FLOAT32, x->rank, x->dims);
  const mi_array_t *ins[16];
  if (!xf) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if (c->nin > 16) {
    mi_array_destroy(xf);
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "%d inputs", (int)c->nin);
  }
  int64_t n = mi_array_numel(x);
  int s8 = x->dtype == MI_DTYPE_INT8;
  for (int64_t i = 0; i < n; i++)
    ((float *)xf->data)[i] = s8 ? (float)((const int8_t *)x->data)[i] : (float)((const uint8_t *)x->data)[i];
  for (int32_t i = 0; i < c->nin; i++) ins[i] = c->in[i];
  ins[0] = xf;
  mi__ref_call_t f = *c;
  f.in = ins;
  int32_t rc = fn(&f);
  mi_array_destroy(xf);
  mi_array_t *yf = c->out[0];
  if (rc != MI_OK || !yf) return rc;
  mi_array_t *y = mi_array_create(x->dtype, yf->rank, yf->dims);
  if (!y) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0, m = mi_array_numel(yf); i < m; i++) {
    float v = ((const float *)yf->data)[i]; /* a code: the op only moved or picked values */
    if (s8) ((int8_t *)y->data)[i] = (int8_t)v;
    else
      ((uint8_t *)y->data)[i] = (uint8_t)v;
  }
  mi_array_destroy(yf);
  c->out[0] = y;
  return MI_OK;
}

int32_t mi__ref_need_f32(mi__ref_call_t *c, int32_t i, int opt, int32_t rank, const int64_t *d,
                         const float **out) {
  const mi_array_t *a = mi__ref_in(c, i);
  *out = NULL;
  if (!a && opt) return MI_OK;
  if (!a) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d is missing", (int)i);
  if (a->dtype != MI_DTYPE_FLOAT32)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "input %d must be float32", (int)i);
  int ok = a->rank == rank;
  for (int32_t k = 0; ok && k < rank; k++) ok = a->dims[k] == d[k];
  if (!ok) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d has the wrong shape", (int)i);
  *out = a->data;
  return MI_OK;
}
