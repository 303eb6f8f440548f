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
  return ((const float *)x->data)[i];
}

/* Integer reductions are exact: sums and products of 64-bit values in 128 bits, the result
 * saturated to the type's range. ONNX Runtime sums INT32 and INT64 in double and saturates (its
 * ReduceSum of INT32 2^31-1, 2^31-1, 3 is 2^31-1, not the wrapped 1): the same result wherever
 * its double is exact (partial sums below 2^53). A product or sum of squares past WIDE_CAP
 * stays there (it is past every type's range and never comes back). */
__extension__ typedef __int128 wide_t;
#define WIDE_CAP ((wide_t)1 << 100)

static wide_t wide_load(const mi_array_t *x, int64_t i) {
  int64_t v = mi__int_load(x->data, x->dtype, i);
  return x->dtype == MI_DTYPE_UINT64 ? (wide_t)(uint64_t)v : (wide_t)v;
}

static wide_t wide_cap(wide_t v) {
  if (v > WIDE_CAP) return WIDE_CAP;
  return v < -WIDE_CAP ? -WIDE_CAP : v;
}

static wide_t wide_mul(wide_t a, wide_t b) {
  wide_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? -WIDE_CAP : WIDE_CAP;
  return wide_cap(r);
}

/* The largest and smallest value of integer dtype d. */
static void int_range(int32_t d, wide_t *lo, wide_t *hi) {
  int bits = (int)mi_dtype_size(d) * 8;
  if (mi__dtype_is_unsigned(d)) {
    *lo = 0;
    *hi = ((wide_t)1 << bits) - 1;
  } else {
    *lo = -((wide_t)1 << (bits - 1));
    *hi = ((wide_t)1 << (bits - 1)) - 1;
  }
}

static void store_sat(mi_array_t *y, int64_t j, wide_t v) {
  wide_t lo, hi;
  int_range(y->dtype, &lo, &hi);
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  mi__int_store(y->data, y->dtype, j, (int64_t)(uint64_t)v);
}

/* A real result (L2, LogSum, LogSumExp) into an integer: truncated toward zero, as a C++ cast
 * does, saturated; NaN (the log of a negative sum) gives 0. */
static void store_real(mi_array_t *y, int64_t j, double v) {
  wide_t lo, hi;
  int_range(y->dtype, &lo, &hi);
  if (v != v) v = 0;
  if (v <= (double)lo) store_sat(y, j, lo);
  else if (v >= (double)hi)
    store_sat(y, j, hi);
  else
    store_sat(y, j, (wide_t)trunc(v));
}

/* The integer reductions: slot[i] is the output element input element i reduces into, count the
 * elements each output reduces. */
static int32_t reduce_int(mi__ref_call_t *c, int op, const mi_array_t *x, mi_array_t *y,
                          const int64_t *slot, int64_t count) {
  int64_t on = mi_array_numel(y), n = mi_array_numel(x);
  wide_t *acc = calloc((size_t)(on ? on : 1), sizeof *acc);
  wide_t *mx = calloc((size_t)(on ? on : 1), sizeof *mx);
  double *accf = calloc((size_t)(on ? on : 1), sizeof *accf);
  uint8_t *started = calloc((size_t)(on ? on : 1), 1);
  int32_t rc = MI_OK;
  /* LogSumExp: ONNX Runtime's INT32/INT64 kernel truncates each exp(x - max) to the type, so
   * only the values equal to the max count (1 each); it has no UINT32/UINT64 kernel and runs
   * ONNX's function body there, which works in double. */
  int lse_real = mi__dtype_is_unsigned(x->dtype);
  if (!acc || !mx || !accf || !started) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (op == R_PROD)
    for (int64_t j = 0; j < on; j++) acc[j] = 1;
  for (int64_t i = 0; i < n; i++) {
    wide_t v = wide_load(x, i);
    int64_t s = slot[i];
    switch (op) {
    case R_SUM:
    case R_MEAN:
    case R_LOGSUM: acc[s] += v; break;
    case R_PROD: acc[s] = wide_mul(acc[s], v); break;
    case R_L1: acc[s] = wide_cap(acc[s] + (v < 0 ? -v : v)); break;
    case R_L2:
    case R_SSQ: acc[s] = wide_cap(acc[s] + wide_mul(v, v)); break;
    case R_LSE:
      if (lse_real) {
        accf[s] += exp(mi__int_load_f64(x->data, x->dtype, i));
      } else if (!started[s] || v > mx[s]) {
        mx[s] = v;
        acc[s] = 1;
      } else if (v == mx[s]) {
        acc[s]++;
      }
      started[s] = 1;
      break;
    default: /* R_MAX, R_MIN */
      if (!started[s] || (op == R_MAX ? v > acc[s] : v < acc[s])) acc[s] = v;
      started[s] = 1;
    }
  }
  for (int64_t j = 0; j < on; j++) {
    if (op == R_MEAN) /* truncated toward zero, as ONNX Runtime's sum / count; 0 when empty */
      store_sat(y, j, count ? acc[j] / count : 0);
    else if (op == R_L2)
      store_real(y, j, sqrt((double)acc[j]));
    else if (op == R_LOGSUM)
      store_real(y, j, log((double)acc[j]));
    else if (op == R_LSE && lse_real)
      store_real(y, j, log(accf[j]));
    else if (op == R_LSE)
      store_real(y, j, started[j] ? log((double)acc[j]) + (double)mx[j] : -INFINITY);
    else
      store_sat(y, j, acc[j]);
  }
done:
  free(acc);
  free(mx);
  free(accf);
  free(started);
  return rc;
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
  /* ONNX defines every reduction on INT32, INT64, UINT32 and UINT64, and ReduceMax/ReduceMin
   * also on INT8 and UINT8 from opset 12; none on INT16 or UINT16. */
  uint32_t mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT32) | MI_DTYPE_BIT(MI_DTYPE_INT32) |
                  MI_DTYPE_BIT(MI_DTYPE_INT64) | MI_DTYPE_BIT(MI_DTYPE_UINT32) |
                  MI_DTYPE_BIT(MI_DTYPE_UINT64);
  if ((op == R_MAX || op == R_MIN) && c->opset >= 12)
    mask |= MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8);
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
  uint8_t *started = calloc((size_t)(on ? on : 1), 1);
  int64_t idx[MI_MAX_RANK] = {0}, o = 0;
  if (!slot || !accf || !mx || !started) {
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
  if (x->dtype != MI_DTYPE_FLOAT32) {
    rc = reduce_int(c, op, x, y, slot, count);
    goto done;
  }
  if (op == R_PROD)
    for (int64_t j = 0; j < on; j++) accf[j] = 1;
  if (op == R_LSE) /* log(sum(exp(v - max))) + max, so exp never overflows */
    for (int64_t j = 0; j < on; j++) mx[j] = -INFINITY;
  for (int64_t i = 0; op == R_LSE && i < n; i++)
    if (read_elem(x, i) > mx[slot[i]]) mx[slot[i]] = read_elem(x, i);
  for (int64_t i = 0; i < n; i++) {
    double vf = read_elem(x, i);
    int64_t s = slot[i];
    switch (op) {
    case R_SUM:
    case R_MEAN: accf[s] += vf; break;
    case R_PROD: accf[s] *= vf; break;
    case R_L2: accf[s] += vf * vf; break;
    case R_L1: accf[s] += fabs(vf); break;
    case R_SSQ: accf[s] += vf * vf; break;
    case R_LOGSUM: accf[s] += vf; break;
    case R_LSE: accf[s] += isinf(mx[s]) ? exp(vf) : exp(vf - mx[s]); break;
    default: { /* R_MAX, R_MIN: NaN wins, like ONNX Runtime */
      int better = op == R_MAX ? vf > accf[s] : vf < accf[s];
      if (!started[s] || better || vf != vf) accf[s] = vf;
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
    ((float *)y->data)[j] = (float)v;
  }
done:
  free(slot);
  free(accf);
  free(mx);
  free(started);
  return rc;
}
