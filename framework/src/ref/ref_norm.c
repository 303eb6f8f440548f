/* ref_norm.c - reference BatchNormalization (inference), InstanceNormalization,
 * LayerNormalization and Softmax. */
#include <math.h>
#include <string.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

static int64_t prod(const int64_t *dims, int32_t from, int32_t to) {
  int64_t p = 1;
  for (int32_t d = from; d < to; d++) p *= dims[d];
  return p;
}

int32_t mi__ref_batchnorm(mi__ref_call_t *c) {
  const mi_array_t *x, *p[4];
  mi_array_t *y;
  float eps = mi_node_attr_float(c->node, "epsilon", 1e-5f);
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  for (int32_t i = 0; i < 4; i++)
    if ((rc = mi__ref_need(c, i + 1, F32, &p[i])) != MI_OK) return rc;
  if (mi_node_attr_int(c->node, "training_mode", 0) != 0 || mi__ref_out_wanted(c, 1))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "training mode is not supported");
  if (mi_node_attr_int(c->node, "spatial", 1) != 1)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "spatial=0 is not supported");
  if (x->rank < 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input rank %d is below 2", (int)x->rank);
  int64_t C = x->dims[1], inner = prod(x->dims, 2, x->rank), N = x->dims[0];
  for (int32_t i = 0; i < 4; i++)
    if (mi_array_numel(p[i]) != C)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d must have %lld values",
                          (int)(i + 1), (long long)C);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  const float *scale = p[0]->data, *bias = p[1]->data, *mean = p[2]->data, *var = p[3]->data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++) {
      float k = scale[ch] / sqrtf(var[ch] + eps);
      const float *xp = (const float *)x->data + (n * C + ch) * inner;
      float *yp = (float *)y->data + (n * C + ch) * inner;
      for (int64_t i = 0; i < inner; i++) yp[i] = (xp[i] - mean[ch]) * k + bias[ch];
    }
  return MI_OK;
}

/* Each (n, c) plane is normalised by its own mean and biased variance, then scaled. */
int32_t mi__ref_instancenorm(mi__ref_call_t *c) {
  const mi_array_t *x, *scale, *bias;
  mi_array_t *y;
  float eps = mi_node_attr_float(c->node, "epsilon", 1e-5f);
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 1, F32, &scale)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 2, F32, &bias)) != MI_OK) return rc;
  if (x->rank < 3)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input rank %d is below 3", (int)x->rank);
  int64_t N = x->dims[0], C = x->dims[1], inner = prod(x->dims, 2, x->rank);
  if (mi_array_numel(scale) != C || mi_array_numel(bias) != C)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "scale and B must hold C = %lld values",
                        (long long)C);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++) {
      const float *xp = (const float *)x->data + (n * C + ch) * inner;
      float *yp = (float *)y->data + (n * C + ch) * inner;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; i++) mean += xp[i];
      mean = inner ? mean / (double)inner : 0;
      for (int64_t i = 0; i < inner; i++) var += (xp[i] - mean) * (xp[i] - mean);
      var = inner ? var / (double)inner : 0;
      double k = ((const float *)scale->data)[ch] / sqrt(var + eps);
      for (int64_t i = 0; i < inner; i++)
        yp[i] = (float)((xp[i] - mean) * k + ((const float *)bias->data)[ch]);
    }
  return MI_OK;
}

int32_t mi__ref_layernorm(mi__ref_call_t *c) {
  const mi_array_t *x, *scale, *bias = mi__ref_in(c, 2);
  mi_array_t *y, *mean_out = NULL, *istd_out = NULL;
  float eps = mi_node_attr_float(c->node, "epsilon", 1e-5f);
  int32_t axis, rc;
  int64_t stat_dims[MI_MAX_RANK];
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &scale)) != MI_OK)
    return rc;
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -1), x->rank, &axis)) != MI_OK)
    return rc;
  int64_t outer = prod(x->dims, 0, axis), size = prod(x->dims, axis, x->rank);
  /* Scale and B cover the normalised dims (or are one value broadcast over them). */
  int64_t ns = mi_array_numel(scale), nb = bias ? mi_array_numel(bias) : 0;
  if ((ns != size && ns != 1) || (bias && ((nb != size && nb != 1) ||
                                           bias->dtype != MI_DTYPE_FLOAT32)))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "Scale and B must have %lld values (the dims from axis %d on)",
                        (long long)size, (int)axis);
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  for (int32_t d = 0; d < x->rank; d++) stat_dims[d] = d < axis ? x->dims[d] : 1;
  if (mi__ref_out_wanted(c, 1) &&
      (rc = mi__ref_make_out(c, 1, MI_DTYPE_FLOAT32, x->rank, stat_dims, &mean_out)) != MI_OK)
    return rc;
  if (mi__ref_out_wanted(c, 2) &&
      (rc = mi__ref_make_out(c, 2, MI_DTYPE_FLOAT32, x->rank, stat_dims, &istd_out)) != MI_OK)
    return rc;
  const float *S = scale->data, *B = bias ? bias->data : NULL;
  for (int64_t o = 0; o < outer; o++) {
    const float *xp = (const float *)x->data + o * size;
    float *yp = (float *)y->data + o * size;
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < size; i++) mean += xp[i];
    mean /= (double)size;
    for (int64_t i = 0; i < size; i++) var += (xp[i] - mean) * (xp[i] - mean);
    var /= (double)size;
    float istd = (float)(1.0 / sqrt(var + eps));
    for (int64_t i = 0; i < size; i++) {
      float v = (float)(xp[i] - mean) * istd * S[ns == 1 ? 0 : i];
      yp[i] = B ? v + B[nb == 1 ? 0 : i] : v;
    }
    if (mean_out) ((float *)mean_out->data)[o] = (float)mean;
    if (istd_out) ((float *)istd_out->data)[o] = istd;
  }
  return MI_OK;
}

int32_t mi__ref_softmax(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t axis, rc;
  int is_log = strcmp(c->node->op_type, "LogSoftmax") == 0;
  int64_t outer, len, inner;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (x->rank == 0) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input is a scalar");
  if (c->opset < 13) {
    /* Before opset 13 the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] and
     * the softmax runs over the whole second part. */
    if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", 1), x->rank, &axis)) != MI_OK)
      return rc;
    outer = prod(x->dims, 0, axis);
    len = prod(x->dims, axis, x->rank);
    inner = 1;
  } else {
    if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -1), x->rank, &axis)) != MI_OK)
      return rc;
    outer = prod(x->dims, 0, axis);
    len = x->dims[axis];
    inner = prod(x->dims, axis + 1, x->rank);
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      const float *xp = (const float *)x->data + o * len * inner + in;
      float *yp = (float *)y->data + o * len * inner + in;
      float mx = -INFINITY;
      double sum = 0.0;
      for (int64_t i = 0; i < len; i++)
        if (xp[i * inner] > mx) mx = xp[i * inner];
      for (int64_t i = 0; i < len; i++) sum += exp((double)(xp[i * inner] - mx));
      for (int64_t i = 0; i < len; i++) {
        float shifted = xp[i * inner] - mx;
        yp[i * inner] = is_log ? (float)(shifted - log(sum)) : (float)(exp(shifted) / sum);
      }
    }
  return MI_OK;
}
