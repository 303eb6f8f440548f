/* shape_infer_quant.c - shapes of the integer ops of quantized models: DynamicQuantizeLinear,
 * ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul and com.microsoft's QLinearAdd,
 * QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearSoftmax, QLinearConcat, QLinearWhere, QGemm, MatMulNBits and DynamicQuantizeLSTM. The
 * GEMM-like ones and the pools reuse the float ops' rules on their data inputs. */
#include <string.h>

#include "graph/dqlstm.h"
#include "graph/nbits.h"
#include "graph/shape_infer.h"

/* The most data inputs a QLinearConcat may have here. */
#define MI__SI_MAX_DATA 64

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

/* The float op `like` run on the node's data inputs `ks` (nk of them), output 0 only. */
static int32_t on_data(mi__si_t *c, const mi_node_t *n, const char *like, const int32_t *ks, int32_t nk) {
  int32_t ins[MI__SI_MAX_DATA];
  mi_node_t tmp = *n;
  for (int32_t i = 0; i < nk; i++) {
    if (!mi__si_in(c, n, ks[i])) return mi__si_fail(c, n, MI_ERR_PARSE, "input %d is missing", (int)ks[i]);
    ins[i] = n->inputs[ks[i]];
  }
  tmp.inputs = ins;
  tmp.input_count = nk;
  tmp.output_count = 1;
  int32_t rc = mi__si_lookup(like)(c, &tmp);
  return rc == MI__SI_DONE ? MI_OK : rc;
}

/* QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax: the codes keep X's shape and dtype. */
int32_t mi__si_qlinear_unary(mi__si_t *c, const mi_node_t *n) {
  return mi__si_shaped_like(c, n, 1, MI_DTYPE_UNDEFINED, NULL);
}

/* QLinearAveragePool: AveragePool's shape on X; channels_last = 1 moves the channel last. */
int32_t mi__si_qlinear_avgpool(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *x;
  int32_t rc = mi__si_open(c, n, 1, &x), k0 = 0;
  if (rc) return rc;
  int64_t last = mi_node_attr_int(n, "channels_last", 0);
  if (last != 0 && last != 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "channels_last = %lld (0 or 1)", (long long)last);
  if (!last) return on_data(c, n, "AveragePool", &k0, 1);
  /* NHWC: the pool's rule on X seen as NCHW for the call, then the channel moved last. */
  mi_tensor_t *xt = &c->g->tensors[n->inputs[0]];
  int64_t saved[MI_MAX_RANK], d[MI_MAX_RANK];
  int32_t r = xt->rank;
  if (r < 3) return mi__si_fail(c, n, MI_ERR_PARSE, "input rank %d < 3", (int)r);
  memcpy(saved, xt->dims, sizeof(int64_t) * (size_t)r);
  xt->dims[1] = saved[r - 1];
  for (int32_t i = 2; i < r; i++) xt->dims[i] = saved[i - 1];
  rc = on_data(c, n, "AveragePool", &k0, 1);
  memcpy(xt->dims, saved, sizeof(int64_t) * (size_t)r);
  const mi_tensor_t *y = &c->g->tensors[n->outputs[0]];
  if (rc || y->rank != r) return rc;
  d[0] = y->dims[0];
  d[r - 1] = y->dims[1];
  for (int32_t i = 2; i < r; i++) d[i - 1] = y->dims[i];
  mi__si_set(c, n, 0, x->dtype, r, d);
  return MI_OK;
}

/* QLinearConcat: Concat of the X inputs (2, 5, 8, ...). */
int32_t mi__si_qlinear_concat(mi__si_t *c, const mi_node_t *n) {
  int32_t ks[MI__SI_MAX_DATA], nk = 0;
  if (n->input_count < 5 || (n->input_count - 2) % 3)
    return mi__si_fail(c, n, MI_ERR_PARSE, "%d inputs; expected Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples",
                       (int)n->input_count);
  for (int32_t k = 2; k < n->input_count && nk < MI__SI_MAX_DATA; k += 3) ks[nk++] = k;
  if (nk * 3 + 2 < n->input_count) return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "more than %d inputs", MI__SI_MAX_DATA);
  return on_data(c, n, "Concat", ks, nk);
}

/* QLinearWhere: condition, X and Y (0, 1, 4) broadcast, in X's dtype. */
int32_t mi__si_qlinear_where(mi__si_t *c, const mi_node_t *n) {
  int32_t ks[3] = {0, 1, 4}, rc = on_data(c, n, "Where", ks, 3);
  if (rc) return rc;
  const mi_tensor_t *y = &c->g->tensors[n->outputs[0]], *x = mi__si_in(c, n, 1);
  int64_t dims[MI_MAX_RANK];
  int32_t rank = y->rank;
  if (rank > 0) memcpy(dims, y->dims, sizeof(int64_t) * (size_t)rank);
  mi__si_set(c, n, 0, x->dtype, rank, dims);
  return MI_OK;
}

/* QGemm: [M, N] from A (0) and B (3) with transA / transB; codes of y_zero_point's dtype (input
 * 8), or FLOAT32 without y_scale. */
int32_t mi__si_qgemm(mi__si_t *c, const mi_node_t *n) {
  const mi_tensor_t *a, *b, *z = mi__si_in(c, n, 8);
  int32_t dt = mi__si_in(c, n, 7) ? (z ? z->dtype : MI_DTYPE_UNDEFINED) : MI_DTYPE_FLOAT32;
  int32_t rc = mi__si_open2(c, n, 4, 3, &a, &b);
  if (rc == MI__SI_DONE) {
    mi__si_set(c, n, 0, dt, -1, NULL);
    return MI_OK;
  }
  if (rc) return rc;
  if (a->rank != 2 || b->rank != 2)
    return mi__si_fail(c, n, MI_ERR_PARSE, "A and B must be 2-D, got ranks %d and %d", (int)a->rank, (int)b->rank);
  int ta = mi_node_attr_int(n, "transA", 0) != 0, tb = mi_node_attr_int(n, "transB", 0) != 0;
  int64_t ka = a->dims[ta ? 0 : 1], kb = b->dims[tb ? 1 : 0], d[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
  if (ka >= 0 && kb >= 0 && ka != kb)
    return mi__si_fail(c, n, MI_ERR_PARSE, "A's K (%lld) differs from B's (%lld)", (long long)ka, (long long)kb);
  mi__si_set(c, n, 0, dt, 2, d);
  return MI_OK;
}

/* com.microsoft MatMulNBits: A [..., K] times the dequantized [K, N]: [..., N] FLOAT32. */
int32_t mi__si_matmul_nbits(mi__si_t *c, const mi_node_t *n) {
  mi__nb_in_t ins[6];
  mi__nbits_t p;
  char why[256];
  mi__in_views_of_node(c->g, n, ins, 6);
  if (mi__nbits_check(n, ins, &p, why, sizeof why)) return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  const mi_tensor_t *a = mi__si_in(c, n, 0);
  if (a->rank < 0) {
    mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, -1, NULL);
    return MI_OK;
  }
  int64_t d[MI_MAX_RANK];
  memcpy(d, a->dims, sizeof(int64_t) * (size_t)a->rank);
  d[a->rank - 1] = p.n;
  mi__si_set(c, n, 0, MI_DTYPE_FLOAT32, a->rank, d);
  return MI_OK;
}

/* com.microsoft DynamicQuantizeLSTM: its weights checked, then LSTM's shapes. */
int32_t mi__si_dqlstm(mi__si_t *c, const mi_node_t *n) {
  mi__dql_in_t ins[12];
  char why[256];
  mi__in_views_of_node(c->g, n, ins, 12);
  if (mi__dqlstm_check(n, ins, why, sizeof why))
    return mi__si_fail(c, n, MI_ERR_PARSE, "%s", why);
  return mi__si_lookup("LSTM")(c, n);
}
