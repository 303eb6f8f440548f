/* shape_infer_quant.c - shapes of the integer ops of quantized models: DynamicQuantizeLinear,
 * ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul and com.microsoft's QLinearAdd,
 * QLinearMul and QLinearGlobalAveragePool. The GEMM-like ones reuse Conv's and MatMul's rules
 * on their data inputs. */
#include <string.h>

#include "graph/shape_infer.h"

/* Runs the float op `like` on inputs x (slot 0) and w (slot wk), then sets output 0's dtype:
 * INT32, or the dtype of input zk (the output zero point). */
static int32_t like_float(mi__si_t *c, const mi_node_t *n, const char *like, int32_t wk, int32_t zk) {
  int32_t rc = mi__si_need(c, n, wk + 1), ins[2];
  if (rc) return rc;
  if (!mi__si_in(c, n, wk)) return mi__si_fail(c, n, MI_ERR_PARSE, "input %d is missing", (int)wk);
  mi_node_t tmp = *n;
  ins[0] = n->inputs[0];
  ins[1] = n->inputs[wk];
  tmp.inputs = ins;
  tmp.input_count = 2;
  rc = mi__si_lookup(like)(c, &tmp);
  if (rc && rc != MI__SI_DONE) return rc;
  int32_t dt = MI_DTYPE_INT32;
  if (zk >= 0) {
    const mi_tensor_t *z = mi__si_in(c, n, zk);
    if (!z) return mi__si_fail(c, n, MI_ERR_PARSE, "output zero point (input %d) is missing", (int)zk);
    dt = z->dtype;
  }
  const mi_tensor_t *y = &c->g->tensors[n->outputs[0]];
  int64_t dims[MI_MAX_RANK];
  int32_t rank = y->rank;
  if (rank > 0) memcpy(dims, y->dims, sizeof(int64_t) * (size_t)rank);
  mi__si_set(c, n, 0, dt, rank, dims);
  return MI_OK;
}

int32_t mi__si_conv_integer(mi__si_t *c, const mi_node_t *n) { return like_float(c, n, "Conv", 1, -1); }
int32_t mi__si_qlinear_conv(mi__si_t *c, const mi_node_t *n) { return like_float(c, n, "Conv", 3, 7); }
int32_t mi__si_matmul_integer(mi__si_t *c, const mi_node_t *n) { return like_float(c, n, "MatMul", 1, -1); }
int32_t mi__si_qlinear_matmul(mi__si_t *c, const mi_node_t *n) { return like_float(c, n, "MatMul", 3, 7); }

/* y (UINT8, x's shape), y_scale (FLOAT32 scalar), y_zero_point (UINT8 scalar). */
int32_t mi__si_dynamic_quantize(mi__si_t *c, const mi_node_t *n) {
  int32_t rc = mi__si_shaped_like(c, n, 1, MI_DTYPE_UINT8, NULL);
  if (rc) return rc;
  mi__si_set(c, n, 1, MI_DTYPE_FLOAT32, 0, NULL);
  mi__si_set(c, n, 2, MI_DTYPE_UINT8, 0, NULL);
  return MI_OK;
}

/* QLinearAdd / QLinearMul: A and B (slots 0 and 3) broadcast, in A's dtype. */
int32_t mi__si_qlinear_binary(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *a, *b;
  int32_t rc = mi__si_open2(c, n, 4, 3, &a, &b), r;
  int64_t out[MI_MAX_RANK];
  if (rc) return rc;
  if ((rc = mi__si_broadcast(c, n, a->rank, a->dims, b->rank, b->dims, &r, out))) return rc;
  mi__si_set(c, n, 0, a->dtype, r, out);
  return MI_OK;
}

/* QLinearGlobalAveragePool: spatial dims become 1 (NCHW, or NHWC with channels_last = 1). */
int32_t mi__si_qlinear_gap(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 4, &x);
  if (rc) return rc;
  int64_t last = mi_node_attr_int(n, "channels_last", 0), d[MI_MAX_RANK];
  if (x->rank < 3) return mi__si_fail(c, n, MI_ERR_PARSE, "input rank %d < 3", (int)x->rank);
  if (last != 0 && last != 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "channels_last = %lld (0 or 1)", (long long)last);
  for (int32_t i = 0; i < x->rank; i++)
    d[i] = (last ? (i > 0 && i < x->rank - 1) : i >= 2) ? 1 : x->dims[i];
  mi__si_set(c, n, 0, x->dtype, x->rank, d);
  return MI_OK;
}
