/* ref_rms.c - reference RMSNormalization (ONNX opset 23): y = x / sqrt(mean(x^2) + epsilon) *
 * scale over the dims from `axis` on, the mean of squares in double; also what ONNX Runtime's
 * SimplifiedLayerNormalization computes (the loader lowers that op onto this one). */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

int32_t mi__ref_rms(mi__ref_call_t *c) {
  const mi_array_t *x, *scale;
  mi_array_t *y;
  int32_t axis, rc;
  float eps = mi_node_attr_float(c->node, "epsilon", 1e-5f);
  int64_t stash = mi_node_attr_int(c->node, "stash_type", 1);
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &scale)) != MI_OK) return rc;
  if (stash != 1)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "stash_type = %lld (1, FLOAT32, is supported)", (long long)stash);
  if (!(eps >= 0)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "epsilon must be >= 0");
  if (x->rank == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X is a scalar");
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -1), x->rank, &axis)) != MI_OK) return rc;
  int32_t nr = x->rank - axis; /* the normalised dims */
  int64_t outer = 1, len = 1;
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  for (int32_t d = axis; d < x->rank; d++) len *= x->dims[d];
  /* scale broadcasts (numpy, right-aligned) to the normalised shape */
  if (scale->rank > nr)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "scale has rank %d, the normalised dims are %d", (int)scale->rank,
                        (int)nr);
  for (int32_t k = 1; k <= scale->rank; k++)
    if (scale->dims[scale->rank - k] != 1 && scale->dims[scale->rank - k] != x->dims[x->rank - k])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "scale's dim %d is %lld, X's dim %d is %lld",
                          (int)(scale->rank - k), (long long)scale->dims[scale->rank - k], (int)(x->rank - k),
                          (long long)x->dims[x->rank - k]);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  float *s = malloc((size_t)(len ? len : 1) * sizeof *s);
  if (!s) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  const float *sp = scale->data;
  for (int64_t i = 0; i < len; i++) { /* the scale spread over one row */
    int64_t rem = i, off = 0, stride = 1;
    for (int32_t k = 1; k <= nr; k++) {
      int64_t dim = x->dims[x->rank - k], idx = rem % dim;
      rem /= dim;
      if (k <= scale->rank && scale->dims[scale->rank - k] != 1) off += idx * stride;
      if (k <= scale->rank) stride *= scale->dims[scale->rank - k];
    }
    s[i] = sp[off];
  }
  for (int64_t o = 0; o < outer; o++) {
    const float *xp = (const float *)x->data + o * len;
    float *yp = (float *)y->data + o * len;
    double ss = 0;
    for (int64_t i = 0; i < len; i++) ss += (double)xp[i] * xp[i];
    double inv = 1.0 / sqrt(ss / (double)len + eps);
    for (int64_t i = 0; i < len; i++) yp[i] = (float)(xp[i] * inv) * s[i];
  }
  free(s);
  return MI_OK;
}
