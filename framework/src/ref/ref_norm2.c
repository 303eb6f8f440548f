/* ref_norm2.c - reference GroupNormalization (opset 18: scale and bias per group, opset 21: per
 * channel), LpNormalization and MeanVarianceNormalization. */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

/* scale and bias are 1-D with `want` values (the groups in opset 18, the channels in 21). */
static int32_t need_vec(mi__ref_call_t *c, int32_t i, const char *what, int64_t want,
                        const char *per, const mi_array_t **a) {
  int32_t rc = mi__ref_need(c, i, F32, a);
  if (rc != MI_OK) return rc;
  if ((*a)->rank != 1 || (*a)->dims[0] != want)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s must be 1-D with %lld values (one per %s)",
                        what, (long long)want, per);
  return MI_OK;
}

int32_t mi__ref_groupnorm(mi__ref_call_t *c) {
  const mi_array_t *x, *sc, *bi;
  mi_array_t *y;
  int32_t rc;
  int64_t G = mi_node_attr_int(c->node, "num_groups", 0);
  float eps = mi_node_attr_float(c->node, "epsilon", 1e-5f);
  int per_channel = c->opset >= 21;
  if (c->opset < 18) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the op exists from opset 18 on");
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (x->rank < 2)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "X must have rank 2 or more, got %d",
                        (int)x->rank);
  int64_t N = x->dims[0], C = x->dims[1], S = 1;
  for (int32_t d = 2; d < x->rank; d++) S *= x->dims[d];
  if (G <= 0 || C % G != 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "num_groups %lld must be positive and divide the %lld channels",
                        (long long)G, (long long)C);
  if (per_channel && mi_node_attr_int(c->node, "stash_type", 1) != 1)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "stash_type %lld is not supported (only 1, float)",
                        (long long)mi_node_attr_int(c->node, "stash_type", 1));
  if ((rc = need_vec(c, 1, "scale", per_channel ? C : G, per_channel ? "channel" : "group", &sc)) !=
          MI_OK ||
      (rc = need_vec(c, 2, "bias", per_channel ? C : G, per_channel ? "channel" : "group", &bi)) !=
          MI_OK)
    return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  const float *xp = x->data, *s = sc->data, *b = bi->data;
  float *yp = y->data;
  int64_t cg = C / G, len = cg * S;
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < G; g++) {
      const float *xg = xp + (n * C + g * cg) * S;
      float *yg = yp + (n * C + g * cg) * S;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < len; i++) mean += xg[i];
      mean = len ? mean / (double)len : 0;
      for (int64_t i = 0; i < len; i++) var += ((double)xg[i] - mean) * ((double)xg[i] - mean);
      var = len ? var / (double)len : 0;
      double inv = 1.0 / sqrt(var + (double)eps);
      for (int64_t i = 0; i < len; i++) {
        int64_t k = per_channel ? g * cg + i / S : g;
        yg[i] = (float)(((double)xg[i] - mean) * inv * s[k] + b[k]);
      }
    }
  return MI_OK;
}

/* y = x / ||x||_p along `axis` (p 1 or 2); an all-zero line stays zero. */
int32_t mi__ref_lpnorm(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc, axis;
  int64_t p = mi_node_attr_int(c->node, "p", 2);
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (p != 1 && p != 2)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "p = %lld is not supported (only 1 and 2)",
                        (long long)p);
  if ((rc = mi__ref_axis(c, mi_node_attr_int(c->node, "axis", -1), x->rank, &axis)) != MI_OK)
    return rc;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  int64_t len = x->dims[axis], inner = 1, outer = 1;
  for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
  const float *xp = x->data;
  float *yp = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      const float *xl = xp + o * len * inner + i;
      float *yl = yp + o * len * inner + i;
      double norm = 0;
      for (int64_t k = 0; k < len; k++)
        norm += p == 1 ? fabs(xl[k * inner]) : (double)xl[k * inner] * xl[k * inner];
      if (p == 2) norm = sqrt(norm);
      for (int64_t k = 0; k < len; k++) yl[k * inner] = norm > 0 ? (float)(xl[k * inner] / norm) : 0.0f;
    }
  return MI_OK;
}

/* y = (x - mean) / (sqrt(variance) + 1e-9) over `axes` (default 0, 2, 3), as ONNX's function body
 * for the op writes it. */
int32_t mi__ref_mvn(mi__ref_call_t *c) {
  const mi_array_t *x;
  mi_array_t *y;
  int32_t rc, n = 3, red[MI_MAX_RANK] = {0};
  int64_t axes[MI_MAX_RANK] = {0, 2, 3}, rdims[MI_MAX_RANK], rstride[MI_MAX_RANK];
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, F32, &x)) != MI_OK) return rc;
  if (mi_node_attr(c->node, "axes") &&
      (rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &n)) != MI_OK)
    return rc;
  for (int32_t i = 0; i < n; i++) {
    int32_t a;
    if ((rc = mi__ref_axis(c, axes[i], x->rank, &a)) != MI_OK) return rc;
    red[a] = 1;
  }
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  /* slot of each element: its index with the reduced dims zeroed, as ref_reduce.c */
  for (int32_t d = 0; d < x->rank; d++) rdims[d] = red[d] ? 1 : x->dims[d];
  mi__ref_strides(x->rank, rdims, rstride);
  for (int32_t d = 0; d < x->rank; d++)
    if (red[d]) rstride[d] = 0;
  int64_t total = mi_array_numel(x), slots = 1, idx[MI_MAX_RANK] = {0}, o = 0;
  for (int32_t d = 0; d < x->rank; d++) slots *= rdims[d];
  int64_t *slot = malloc((size_t)(total ? total : 1) * sizeof *slot);
  double *sum = calloc((size_t)(slots ? slots : 1), sizeof *sum);
  double *sq = calloc((size_t)(slots ? slots : 1), sizeof *sq);
  if (!slot || !sum || !sq) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  const float *xp = x->data;
  for (int64_t i = 0; i < total; i++) {
    slot[i] = o;
    sum[o] += xp[i];
    mi__ref_index_next(x->rank, x->dims, rstride, idx, &o);
  }
  double cnt = slots ? (double)total / (double)slots : 1;
  for (int64_t j = 0; j < slots; j++) sum[j] /= cnt;
  for (int64_t i = 0; i < total; i++) sq[slot[i]] += (xp[i] - sum[slot[i]]) * (xp[i] - sum[slot[i]]);
  for (int64_t i = 0; i < total; i++)
    ((float *)y->data)[i] = (float)((xp[i] - sum[slot[i]]) / (sqrt(sq[slot[i]] / cnt) + 1e-9));
done:
  free(slot);
  free(sum);
  free(sq);
  return rc;
}
