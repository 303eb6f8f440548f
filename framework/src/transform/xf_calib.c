/* xf_calib.c - activation range calibration (min-max or percentile) on the reference path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

/* Percentile calibration keeps at most this many values per tensor and sample (a fixed stride
 * through the tensor, so the result is deterministic). */
#define CALIB_KEEP 16384

typedef struct calib_acc {
  int32_t tensor, out_index;
  float lo, hi;
  float *vals;
  int64_t n, cap;
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

int32_t mi__xf_calibrate(const mi_graph_t *g, const uint8_t *want, const mi_xf_samples_t *calib,
                         int32_t method, double percentile, float *ranges, mi_error_t *err) {
  int32_t rc = MI_OK, na = 0;
  mi_graph_t *c = NULL;
  calib_acc_t *acc = NULL;
  mi_array_t **outs = NULL;
  for (int32_t t = 0; t < g->tensor_count; t++) ranges[2 * t] = ranges[2 * t + 1] = NAN;
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
    int32_t at = -1;
    if (!want[t] || g->tensors[t].data) continue;
    for (int32_t i = 0; i < c->output_count && at < 0; i++)
      if (c->outputs[i] == t) at = i;
    if (at < 0) {
      at = c->output_count;
      if (mi_graph_add_output(c, t) != MI_OK) goto oom;
    }
    acc[na++] = (calib_acc_t){.tensor = t, .out_index = at, .lo = INFINITY, .hi = -INFINITY};
  }
  outs = calloc((size_t)c->output_count + 1, sizeof *outs);
  if (!outs) goto oom;
  for (int32_t s = 0; s < calib->sample_count && rc == MI_OK; s++) {
    rc = mi_ref_run(c, (const mi_array_t *const *)calib->inputs + (size_t)s * calib->input_count,
                    calib->input_count, outs, c->output_count, err);
    for (int32_t i = 0; rc == MI_OK && i < na; i++) {
      const mi_array_t *y = outs[acc[i].out_index];
      if (y->dtype != MI_DTYPE_FLOAT32) continue;
      if (accumulate(&acc[i], y, method == MI_XF_CALIB_PERCENTILE) != MI_OK) goto oom;
    }
    for (int32_t i = 0; i < c->output_count; i++) {
      mi_array_destroy(outs[i]);
      outs[i] = NULL;
    }
  }
  for (int32_t i = 0; rc == MI_OK && i < na; i++) {
    float lo = acc[i].lo, hi = acc[i].hi;
    if (method == MI_XF_CALIB_PERCENTILE && acc[i].n > 0) {
      /* Clip the tails: the (100-p)th and pth percentiles of the sampled values. */
      qsort(acc[i].vals, (size_t)acc[i].n, sizeof(float), cmp_float);
      double q = percentile / 100.0;
      int64_t last = acc[i].n - 1;
      lo = acc[i].vals[(int64_t)floor((1.0 - q) * (double)last)];
      hi = acc[i].vals[(int64_t)ceil(q * (double)last)];
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
    for (int32_t i = 0; i < na; i++) free(acc[i].vals);
  free(acc);
  mi_graph_destroy(c);
  return rc;
}
