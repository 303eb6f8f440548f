/* shape_infer_signal.c - output shapes of DFT, STFT, the Hann / Hamming / Blackman windows and
 * MelWeightMatrix; a size that comes from an input's value is dynamic unless that value is
 * known (an initializer or folded shape arithmetic). */
#include <string.h>

#include "graph/shape_infer.h"

/* Input k's scalar value in *v: 1 when known, 0 when the input is absent (*v = dflt), -1 when
 * it is data (*v = -1). */
static int scalar_of(mi__si_t *c, const mi_node_t *n, int32_t k, int64_t dflt, int64_t *v) {
  int64_t cnt = 0;
  const double *p;
  *v = dflt;
  if (!mi__si_in(c, n, k)) return 0;
  p = mi__si_val(c, n, k, &cnt);
  if (p && cnt == 1 && !isnan(p[0])) {
    *v = mi__si_d2i(p[0]);
    return 1;
  }
  *v = -1;
  return -1;
}

/* A size from input k: its value, dflt when absent, -1 (dynamic) when data. */
static int64_t known_int(mi__si_t *c, const mi_node_t *n, int32_t k, int64_t dflt) {
  int64_t v;
  scalar_of(c, n, k, dflt, &v);
  return v;
}

static int32_t check_out_type(mi__si_t *c, const mi_node_t *n) {
  int64_t t = mi_node_attr_int(n, "output_datatype", 1);
  if (t != 1 && t != 11)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "output_datatype %lld is not supported (FLOAT or DOUBLE)", (long long)t);
  return MI_OK;
}

int32_t mi__si_dft(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int64_t dims[MI_MAX_RANK], axis;
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_open(c, n, 1, &x))) return rc;
  int32_t r = x->rank;
  int onesided = mi_node_attr_int(n, "onesided", 0) != 0;
  axis = mi_node_attr_int(n, "axis", 1);
  if (r < 2 || (x->dims[r - 1] >= 0 && x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
    return mi__si_fail(c, n, MI_ERR_PARSE, "input must be [..., 1] (real) or [..., 2] (complex)");
  if (c->g->opset >= 20 && scalar_of(c, n, 2, -2, &axis) < 0) {
    mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, -1, NULL); /* the axis is data */
    return MI_OK;
  }
  if (axis < -r || axis > r - 2 || axis == -1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "axis %lld is not a signal axis of a rank-%d input", (long long)axis, (int)r);
  if (axis < 0) axis += r;
  int64_t len = known_int(c, n, 1, x->dims[axis]);
  memcpy(dims, x->dims, sizeof dims[0] * (size_t)r);
  dims[axis] = len < 0 ? -1 : onesided ? len / 2 + 1
                                       : len;
  dims[r - 1] = 2;
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, r, dims);
  return MI_OK;
}

int32_t mi__si_stft(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x, *w;
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_open(c, n, 2, &x))) return rc;
  if (x->rank != 3 || (x->dims[2] >= 0 && x->dims[2] != 1 && x->dims[2] != 2))
    return mi__si_fail(c, n, MI_ERR_PARSE, "signal must be [batch, length, 1 or 2]");
  w = mi__si_in(c, n, 2);
  int64_t step = known_int(c, n, 1, -1);
  int64_t flen = known_int(c, n, 3, w && w->rank == 1 ? w->dims[0] : -1);
  int64_t dims[4] = {x->dims[0], -1, -1, 2};
  if (flen >= 0) dims[2] = mi_node_attr_int(n, "onesided", 1) ? flen / 2 + 1 : flen;
  if (flen >= 1 && step >= 1 && x->dims[1] >= flen) dims[1] = (x->dims[1] - flen) / step + 1;
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 4, dims);
  return MI_OK;
}

int32_t mi__si_window_fn(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 1)) || (rc = check_out_type(c, n))) return rc;
  int64_t size = known_int(c, n, 0, -1);
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 1, &size);
  return MI_OK;
}

int32_t mi__si_mel_weight(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_since(c, n);
  if (rc || (rc = mi__si_need(c, n, 5)) || (rc = check_out_type(c, n))) return rc;
  int64_t dft = known_int(c, n, 1, -1);
  int64_t dims[2] = {dft < 0 ? -1 : dft / 2 + 1, known_int(c, n, 0, -1)};
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, 2, dims);
  return MI_OK;
}
