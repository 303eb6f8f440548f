/* ref_pad.c - reference Pad (constant, reflect, edge; pads as attribute before opset 11, as
 * input from 11, axes from 18) and Size. */
#include <string.h>

#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"

int32_t mi__ref_pad(mi__ref_call_t *c) {
  const mi_array_t *x, *p, *v;
  int64_t pads[2 * MI_MAX_RANK], axes[MI_MAX_RANK], full[2 * MI_MAX_RANK] = {0};
  int64_t od[MI_MAX_RANK], idx[MI_MAX_RANK] = {0}, st[MI_MAX_RANK];
  int32_t rc, np = 0, na = -1, mode;
  unsigned char cval[8] = {0};
  mi_array_t *y;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  const char *ms = mi_node_attr_string(c->node, "mode", "constant");
  mode = mi_sdk_pad_mode_from_name(ms);
  if (mode < 0) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "mode '%s' is not supported", ms);
  size_t es = mi_dtype_size(x->dtype);
  if (es == 0 || es > sizeof cval || x->dtype == MI_DTYPE_INT4)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "dtype %s is not supported", mi_dtype_name(x->dtype));
  if (c->opset < 11) {
    if ((rc = mi__ref_attr_ints(c, "pads", pads, 2 * MI_MAX_RANK, &np)) != MI_OK) return rc;
    float f = mi_node_attr_float(c->node, "value", 0.0f);
    if (x->dtype == MI_DTYPE_FLOAT32) memcpy(cval, &f, sizeof f);
  } else {
    if ((rc = mi__ref_need(c, 1, 0, &p)) != MI_OK) return rc;
    if ((rc = mi__ref_read_ints(c, p, "pads", pads, 2 * MI_MAX_RANK, &np)) != MI_OK) return rc;
    if ((v = mi__ref_in(c, 2)) && mi_array_numel(v) > 0) {
      if (v->dtype != x->dtype)
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "constant_value is %s, data %s",
                            mi_dtype_name(v->dtype), mi_dtype_name(x->dtype));
      memcpy(cval, v->data, es);
    }
    if (mi__ref_in(c, 3) &&
        (rc = mi__ref_read_ints(c, mi__ref_in(c, 3), "axes", axes, MI_MAX_RANK, &na)) != MI_OK)
      return rc;
  }
  if (na < 0) {
    na = x->rank;
    for (int32_t d = 0; d < na; d++) axes[d] = d;
  }
  if (np != 2 * na)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "pads has %d values for %d axes", (int)np,
                        (int)na);
  for (int32_t k = 0; k < na; k++) {
    int32_t a;
    if ((rc = mi__ref_axis(c, axes[k], x->rank, &a)) != MI_OK) return rc;
    full[a] = pads[k];
    full[a + x->rank] = pads[k + na];
  }
  for (int32_t d = 0; d < x->rank; d++) {
    od[d] = x->dims[d] + full[d] + full[d + x->rank];
    if (od[d] < 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "pads make dimension %d negative", (int)d);
    if (mode && x->dims[d] == 0 && od[d] > 0)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "cannot %s-pad an empty dimension", ms);
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, x->rank, od, &y)) != MI_OK) return rc;
  mi__ref_strides(x->rank, x->dims, st);
  int64_t n = mi_array_numel(y);
  for (int64_t o = 0; o < n; o++) {
    int64_t off = 0;
    for (int32_t d = 0; d < x->rank && off >= 0; d++) {
      int64_t s = mi_sdk_pad_source(mode, idx[d], full[d], x->dims[d]);
      off = s < 0 ? -1 : off + s * st[d];
    }
    memcpy((char *)y->data + (size_t)o * es, off < 0 ? (const void *)cval : (const char *)x->data + (size_t)off * es, es);
    for (int32_t d = x->rank - 1; d >= 0; d--) {
      if (++idx[d] < od[d]) break;
      idx[d] = 0;
    }
  }
  return MI_OK;
}

int32_t mi__ref_size(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &x)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_INT64, 0, NULL, &y)) != MI_OK) return rc;
  ((int64_t *)y->data)[0] = mi_array_numel(x);
  return MI_OK;
}
