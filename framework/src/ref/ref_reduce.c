/* ref_reduce.c - reference ReduceMean, ReduceMax, ReduceMin and ReduceSum. */
#include <stdlib.h>
#include <string.h>

#include "ref/ref_ops.h"

enum { R_SUM, R_MEAN, R_MAX, R_MIN };

/* The opset from which an op takes `axes` as an input instead of an attribute. */
static int64_t axes_input_since(int op) { return op == R_SUM ? 13 : 18; }

int32_t mi__ref_reduce(mi__ref_call_t *c) {
  const char *name = c->node->op_type;
  int op = strcmp(name, "ReduceSum") == 0    ? R_SUM
           : strcmp(name, "ReduceMean") == 0 ? R_MEAN
           : strcmp(name, "ReduceMax") == 0  ? R_MAX
                                             : R_MIN;
  const mi_array_t *x, *ax;
  mi_array_t *y;
  int64_t axes[MI_MAX_RANK], dims[MI_MAX_RANK], ostride[MI_MAX_RANK], in_dims_out[MI_MAX_RANK];
  int32_t naxes = -1, rc, rank = 0;
  int reduce[MI_MAX_RANK] = {0};
  int keepdims = mi_node_attr_int(c->node, "keepdims", 1) != 0;
  int noop_empty = mi_node_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
  uint32_t mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  if (op != R_MEAN) mask |= MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32);
  if ((rc = mi__ref_need(c, 0, mask, &x)) != MI_OK) return rc;

  if (c->opset >= axes_input_since(op)) {
    if ((ax = mi__ref_in(c, 1)) != NULL &&
        (rc = mi__ref_read_ints(c, ax, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK)
      return rc;
  } else if ((rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK) {
    return rc;
  }
  if (naxes <= 0) {
    /* No axes: reduce everything, or nothing when noop_with_empty_axes says so. */
    if (noop_empty && c->opset >= axes_input_since(op)) {
      c->out[0] = mi__ref_clone(x);
      return c->out[0] ? MI_OK : mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t d = 0; d < x->rank; d++) reduce[d] = 1;
  }
  for (int32_t i = 0; i < naxes; i++) {
    int32_t a;
    if ((rc = mi__ref_axis(c, axes[i], x->rank, &a)) != MI_OK) return rc;
    if (reduce[a]) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "axis %d repeats", (int)a);
    reduce[a] = 1;
  }
  for (int32_t d = 0; d < x->rank; d++) {
    in_dims_out[d] = reduce[d] ? 1 : x->dims[d];
    if (!reduce[d] || keepdims) dims[rank++] = in_dims_out[d];
    if (reduce[d] && x->dims[d] == 0 && (op == R_MAX || op == R_MIN))
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "cannot take max/min of an empty axis");
  }
  if ((rc = mi__ref_make_out(c, 0, x->dtype, rank, dims, &y)) != MI_OK) return rc;

  /* Walk the input once; each element lands in the output slot with reduced dims zeroed. */
  int64_t on = mi_array_numel(y), n = mi_array_numel(x), count = on ? n / on : 0;
  double *accf = calloc((size_t)(on ? on : 1), sizeof *accf);
  int64_t *acci = calloc((size_t)(on ? on : 1), sizeof *acci);
  int64_t idx[MI_MAX_RANK] = {0}, o = 0;
  if (!accf || !acci) {
    free(accf);
    free(acci);
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  mi__ref_strides(x->rank, in_dims_out, ostride);
  for (int32_t d = 0; d < x->rank; d++)
    if (reduce[d]) ostride[d] = 0;
  for (int64_t i = 0; i < n; i++) {
    double vf = 0;
    int64_t vi = 0;
    if (x->dtype == MI_DTYPE_FLOAT32) vf = ((const float *)x->data)[i];
    else if (x->dtype == MI_DTYPE_INT64) vi = ((const int64_t *)x->data)[i];
    else vi = ((const int32_t *)x->data)[i];
    if (op == R_SUM || op == R_MEAN) {
      accf[o] += vf;
      acci[o] += vi;
    } else {
      /* The first element reaching a slot is the one whose reduced indices are all zero. */
      int is_first = 1;
      for (int32_t d = 0; d < x->rank; d++)
        if (reduce[d] && idx[d] != 0) is_first = 0;
      int better = op == R_MAX ? (vf > accf[o] || vi > acci[o]) : (vf < accf[o] || vi < acci[o]);
      if (vf != vf) better = 1; /* NaN wins, like ONNX Runtime */
      if (is_first || better) {
        accf[o] = vf;
        acci[o] = vi;
      }
    }
    for (int32_t d = x->rank - 1; d >= 0; d--) {
      idx[d]++;
      o += ostride[d];
      if (idx[d] < x->dims[d]) break;
      o -= ostride[d] * x->dims[d];
      idx[d] = 0;
    }
  }
  for (int64_t j = 0; j < on; j++) {
    if (x->dtype == MI_DTYPE_FLOAT32)
      ((float *)y->data)[j] = (float)(op == R_MEAN ? accf[j] / (double)count : accf[j]);
    else if (x->dtype == MI_DTYPE_INT64)
      ((int64_t *)y->data)[j] = acci[j];
    else
      ((int32_t *)y->data)[j] = (int32_t)acci[j];
  }
  free(accf);
  free(acci);
  return MI_OK;
}
