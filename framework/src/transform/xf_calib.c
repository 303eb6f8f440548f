/* xf_calib.c - activation range calibration (min-max, percentile or least-MSE clipping) and the
 * per-channel input means of bias correction, from one reference pass over the samples. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

/* Percentile and MSE calibration keep at most this many values per tensor and sample (a fixed
 * stride through the tensor, so the result is deterministic). */
#define CALIB_KEEP 16384
/* Clipping ranges the MSE search tries per step: the min-max range scaled by i / MSE_GRID. */
#define MSE_GRID 128

typedef struct calib_acc {
  int32_t tensor, out_index, axis; /* axis: channel axis of the means, -1 for none */
  int ranges;                      /* a range is wanted */
  float lo, hi;
  float *vals;
  int64_t n, cap;
  double *sum; /* per channel */
  int64_t count, channels;
} calib_acc_t;

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static int32_t accumulate(calib_acc_t *a, const mi_array_t *y, int keep_values) {
  const float *v = y->data;
  int64_t n = mi_array_numel(y), stride = n / CALIB_KEEP + 1;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] < a->lo) a->lo = v[i];
    if (v[i] > a->hi) a->hi = v[i];
  }
  if (!keep_values) return MI_OK;
  for (int64_t i = 0; i < n; i += stride) {
    if (a->n == a->cap) {
      int64_t cap = a->cap ? a->cap * 2 : 4096;
      float *p = realloc(a->vals, (size_t)cap * sizeof *p);
      if (!p) return MI_ERR_OUT_OF_MEMORY;
      a->vals = p;
      a->cap = cap;
    }
    a->vals[a->n++] = v[i];
  }
  return MI_OK;
}

/* Adds y's values to the per-channel sums along a->axis (every other axis is averaged). */
static int32_t accumulate_means(calib_acc_t *a, const mi_array_t *y) {
  const float *v = y->data;
  int64_t outer = 1, inner = 1, ch;
  if (a->axis >= y->rank) return MI_OK;
  ch = y->dims[a->axis];
  for (int32_t d = 0; d < a->axis; d++) outer *= y->dims[d];
  for (int32_t d = a->axis + 1; d < y->rank; d++) inner *= y->dims[d];
  if (!a->sum) {
    if (!(a->sum = calloc((size_t)ch + 1, sizeof *a->sum))) return MI_ERR_OUT_OF_MEMORY;
    a->channels = ch;
  }
  if (ch != a->channels) return MI_OK; /* a sample of another shape: keep the first's */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++) {
      const float *p = v + (o * ch + c) * inner;
      double s = 0.0;
      for (int64_t i = 0; i < inner; i++) s += p[i];
      a->sum[c] += s;
    }
  a->count += outer * inner;
  return MI_OK;
}

double mi__xf_qdq_mse(const float *v, int64_t n, float lo, float hi) {
  float s;
  uint8_t z;
  double e = 0.0;
  mi__xf_uint8_params(lo, hi, &s, &z);
  for (int64_t i = 0; i < n; i++) {
    double q = rint((double)v[i] / (double)s) + z;
    q = q < 0.0 ? 0.0 : q > 255.0 ? 255.0
                                  : q;
    double d = (q - z) * (double)s - (double)v[i];
    e += d * d;
  }
  return n > 0 ? e / (double)n : 0.0;
}

void mi__xf_mse_range(const float *v, int64_t n, float *lo, float *hi) {
  float l0 = *lo < 0.0f ? *lo : 0.0f, h0 = *hi > 0.0f ? *hi : 0.0f, bl = l0, bh = h0;
  double best = mi__xf_qdq_mse(v, n, bl, bh);
  /* Both ends scaled together, then each end alone with the other held: the error is
   * unimodal enough along these lines for a grid, and the min-max range stays a candidate, so
   * the result is never worse than min-max on the values given. */
  for (int i = 1; i < MSE_GRID; i++) {
    float a = (float)i / MSE_GRID;
    double e = mi__xf_qdq_mse(v, n, l0 * a, h0 * a);
    if (e < best) best = e, bl = l0 * a, bh = h0 * a;
  }
  for (int pass = 0; pass < 2; pass++) {
    float el = bl, eh = bh;
    for (int i = 1; i <= MSE_GRID; i++) {
      float a = (float)i / MSE_GRID;
      float cl = pass ? l0 * a : el, ch = pass ? eh : h0 * a;
      double e = mi__xf_qdq_mse(v, n, cl, ch);
      if (e < best) best = e, bl = cl, bh = ch;
    }
  }
  *lo = bl;
  *hi = bh;
}

int32_t mi__xf_calibrate(const mi_graph_t *g, const uint8_t *want, const int8_t *mean_axis,
                         const mi_xf_samples_t *calib, int32_t method, double percentile,
                         float *ranges, double **means, mi_error_t *err) {
  int32_t rc = MI_OK, na = 0;
  int keep = method == MI_XF_CALIB_PERCENTILE || method == MI_XF_CALIB_MSE;
  mi_graph_t *c = NULL;
  calib_acc_t *acc = NULL;
  mi_array_t **outs = NULL;
  for (int32_t t = 0; t < g->tensor_count; t++) {
    ranges[2 * t] = ranges[2 * t + 1] = NAN;
    if (means) means[t] = NULL;
  }
  if (!calib || calib->sample_count < 1)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "calibrate: INT8 activations need calibration samples");
  if (calib->input_count != g->input_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "calibrate: samples have %d inputs, the model %d",
                     (int)calib->input_count, (int)g->input_count);
  c = mi_graph_clone(g);
  acc = calloc((size_t)g->tensor_count + 1, sizeof *acc);
  if (!c || !acc) goto oom;
  /* Every flagged tensor becomes an output of the copy (or is one already). */
  for (int32_t t = 0; t < g->tensor_count; t++) {
    int32_t at = -1, axis = mean_axis && means ? mean_axis[t] : -1;
    if ((!want[t] && axis < 0) || g->tensors[t].data) continue;
    for (int32_t i = 0; i < c->output_count && at < 0; i++)
      if (c->outputs[i] == t) at = i;
    if (at < 0) {
      at = c->output_count;
      if (mi_graph_add_output(c, t) != MI_OK) goto oom;
    }
    acc[na++] = (calib_acc_t){.tensor = t, .out_index = at, .axis = axis, .ranges = want[t] != 0, .lo = INFINITY, .hi = -INFINITY};
  }
  outs = calloc((size_t)c->output_count + 1, sizeof *outs);
  if (!outs) goto oom;
  for (int32_t s = 0; s < calib->sample_count && rc == MI_OK; s++) {
    rc = mi_ref_run(c, (const mi_array_t *const *)calib->inputs + (size_t)s * calib->input_count,
                    calib->input_count, outs, c->output_count, err);
    for (int32_t i = 0; rc == MI_OK && i < na; i++) {
      const mi_array_t *y = outs[acc[i].out_index];
      if (y->dtype != MI_DTYPE_FLOAT32) continue;
      if (acc[i].ranges && accumulate(&acc[i], y, keep) != MI_OK) goto oom;
      if (acc[i].axis >= 0 && accumulate_means(&acc[i], y) != MI_OK) goto oom;
    }
    for (int32_t i = 0; i < c->output_count; i++) {
      mi_array_destroy(outs[i]);
      outs[i] = NULL;
    }
  }
  for (int32_t i = 0; rc == MI_OK && i < na; i++) {
    float lo = acc[i].lo, hi = acc[i].hi;
    if (acc[i].sum && acc[i].count > 0) {
      /* The caller's array holds the means; the sums are not needed after. */
      for (int64_t k = 0; k < acc[i].channels; k++) acc[i].sum[k] /= (double)acc[i].count;
      means[acc[i].tensor] = acc[i].sum;
      acc[i].sum = NULL;
    }
    if (!acc[i].ranges) continue;
    if (method == MI_XF_CALIB_PERCENTILE && acc[i].n > 0) {
      /* Clip the tails: the (100-p)th and pth percentiles of the sampled values. */
      qsort(acc[i].vals, (size_t)acc[i].n, sizeof(float), cmp_float);
      double q = percentile / 100.0;
      int64_t last = acc[i].n - 1;
      lo = acc[i].vals[(int64_t)floor((1.0 - q) * (double)last)];
      hi = acc[i].vals[(int64_t)ceil(q * (double)last)];
    } else if (method == MI_XF_CALIB_MSE && acc[i].n > 0 && isfinite(lo) && isfinite(hi)) {
      mi__xf_mse_range(acc[i].vals, acc[i].n, &lo, &hi);
    }
    if (isfinite(lo) && isfinite(hi)) {
      ranges[2 * acc[i].tensor] = lo;
      ranges[2 * acc[i].tensor + 1] = hi;
    }
  }
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "calibrate: out of memory");
done:
  if (outs && c)
    for (int32_t i = 0; i < c->output_count; i++) mi_array_destroy(outs[i]);
  free(outs);
  if (acc)
    for (int32_t i = 0; i < na; i++) {
      free(acc[i].vals);
      free(acc[i].sum);
    }
  free(acc);
  mi_graph_destroy(c);
  if (rc != MI_OK && means)
    for (int32_t t = 0; t < g->tensor_count; t++) {
      free(means[t]);
      means[t] = NULL;
    }
  return rc;
}
