/* ref_reduce.c - reference ReduceMean, ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL2,
 * ReduceLogSumExp, ReduceL1, ReduceSumSquare and ReduceLogSum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref_ops.h"

enum { R_SUM,
       R_MEAN,
       R_MAX,
       R_MIN,
       R_PROD,
       R_L2,
       R_LSE,
       R_L1,
       R_SSQ,
       R_LOGSUM };

static int reduce_code(const char *name) {
  static const char *names[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                "ReduceProd", "ReduceL2", "ReduceLogSumExp", "ReduceL1",
                                "ReduceSumSquare", "ReduceLogSum"};
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(name, names[i]) == 0) return i;
  return R_MIN;
}

/* The opset from which an op takes `axes` as an input instead of an attribute. */
static int64_t axes_input_since(int op) { return op == R_SUM ? 13 : 18; }

static double read_elem(const mi_array_t *x, int64_t i) {
  if (x->dtype == MI_DTYPE_FLOAT32) return ((const float *)x->data)[i];
  if (x->dtype == MI_DTYPE_INT64) return (double)((const int64_t *)x->data)[i];
  return ((const int32_t *)x->data)[i];
}

static int64_t read_int(const mi_array_t *x, int64_t i) {
  return x->dtype == MI_DTYPE_INT64 ? ((const int64_t *)x->data)[i]
                                    : ((const int32_t *)x->data)[i];
}

int32_t mi__ref_reduce(mi__ref_call_t *c) {
  int op = reduce_code(c->node->op_type);
  const mi_array_t *x, *ax;
  mi_array_t *y;
  int64_t axes[MI_MAX_RANK], dims[MI_MAX_RANK], ostride[MI_MAX_RANK], in_dims_out[MI_MAX_RANK];
  int32_t naxes = -1, rc, rank = 0;
  int reduce[MI_MAX_RANK] = {0};
  int keepdims = mi_node_attr_int(c->node, "keepdims", 1) != 0;
  int noop_empty = mi_node_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
  uint32_t mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  if (op == R_SUM || op == R_MAX || op == R_MIN || op == R_PROD || op == R_L1 || op == R_SSQ)
    mask |= MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_INT32);
  if ((rc = mi__ref_need(c, 0, mask, &x)) != MI_OK) return rc;

  if (c->opset >= axes_input_since(op)) {
    if ((ax = mi__ref_in(c, 1)) != NULL &&
        (rc = mi__ref_read_ints(c, ax, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK)
      return rc;
  } else if ((rc = mi__ref_attr_ints(c, "axes", axes, MI_MAX_RANK, &naxes)) != MI_OK) {
    return rc;
  }
  if (naxes <= 0) {
    /* No axes: reduce everything, or nothing when noop_with_empty_axes says so; reducing
     * nothing still applies the op's element-wise part (|x|, x^2, log x), as ONNX Runtime does. */
    for (int32_t d = 0; d < x->rank; d++) reduce[d] = !(noop_empty && c->opset >= axes_input_since(op));
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

  /* slot[i]: the output element input element i reduces into (reduced dims zeroed). */
  int64_t on = mi_array_numel(y), n = mi_array_numel(x), count = on ? n / on : 0;
  int64_t *slot = malloc((size_t)(n ? n : 1) * sizeof *slot);
  double *accf = calloc((size_t)(on ? on : 1), sizeof *accf);
  double *mx = calloc((size_t)(on ? on : 1), sizeof *mx);
  int64_t *acci = calloc((size_t)(on ? on : 1), sizeof *acci);
  uint8_t *started = calloc((size_t)(on ? on : 1), 1);
  int64_t idx[MI_MAX_RANK] = {0}, o = 0;
  if (!slot || !accf || !mx || !acci || !started) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  mi__ref_strides(x->rank, in_dims_out, ostride);
  for (int32_t d = 0; d < x->rank; d++)
    if (reduce[d]) ostride[d] = 0;
  for (int64_t i = 0; i < n; i++) {
    slot[i] = o;
    mi__ref_index_next(x->rank, x->dims, ostride, idx, &o);
  }
  int is_float = x->dtype == MI_DTYPE_FLOAT32;
  if (op == R_PROD)
    for (int64_t j = 0; j < on; j++) accf[j] = 1, acci[j] = 1;
  if (op == R_LSE) /* log(sum(exp(v - max))) + max, so exp never overflows */
    for (int64_t j = 0; j < on; j++) mx[j] = -INFINITY;
  for (int64_t i = 0; op == R_LSE && i < n; i++)
    if (read_elem(x, i) > mx[slot[i]]) mx[slot[i]] = read_elem(x, i);
  for (int64_t i = 0; i < n; i++) {
    double vf = read_elem(x, i);
    int64_t vi = is_float ? 0 : read_int(x, i), s = slot[i];
    switch (op) {
    /* Integer sums and products wrap like the int64 arithmetic of other runtimes. */
    case R_SUM:
    case R_MEAN:
      accf[s] += vf;
      acci[s] = (int64_t)((uint64_t)acci[s] + (uint64_t)vi);
      break;
    case R_PROD:
      accf[s] *= vf;
      acci[s] = (int64_t)((uint64_t)acci[s] * (uint64_t)vi);
      break;
    case R_L2: accf[s] += vf * vf; break;
    case R_L1:
      accf[s] += fabs(vf);
      acci[s] = (int64_t)((uint64_t)acci[s] + (uint64_t)(vi < 0 ? -(uint64_t)vi : (uint64_t)vi));
      break;
    case R_SSQ:
      accf[s] += vf * vf;
      acci[s] = (int64_t)((uint64_t)acci[s] + (uint64_t)vi * (uint64_t)vi);
      break;
    case R_LOGSUM: accf[s] += vf; break;
    case R_LSE: accf[s] += isinf(mx[s]) ? exp(vf) : exp(vf - mx[s]); break;
    default: { /* R_MAX, R_MIN: NaN wins, like ONNX Runtime */
      int better = op == R_MAX ? (vf > accf[s] || vi > acci[s]) : (vf < accf[s] || vi < acci[s]);
      if (!started[s] || better || vf != vf) {
        accf[s] = vf;
        acci[s] = vi;
      }
      started[s] = 1;
    }
    }
  }
  for (int64_t j = 0; j < on; j++) {
    double v = accf[j];
    if (op == R_MEAN) v /= (double)count;
    if (op == R_L2) v = sqrt(v);
    if (op == R_LOGSUM) v = log(v);
    if (op == R_LSE) v = isinf(mx[j]) ? log(v) : log(v) + mx[j];
    if (is_float)
      ((float *)y->data)[j] = (float)v;
    else if (x->dtype == MI_DTYPE_INT64)
      ((int64_t *)y->data)[j] = acci[j];
    else
      ((int32_t *)y->data)[j] = (int32_t)acci[j];
  }
done:
  free(slot);
  free(accf);
  free(mx);
  free(acci);
  free(started);
  return rc;
}
