/* ref_qdq.c - QDQ layers on the reference path as the integer layer they stand for:
 * DequantizeLinear(x_q) -> Conv | Gemm | MatMul (DequantizeLinear(w_q), bias) [-> Relu | Clip]
 * -> QuantizeLinear is evaluated as QLinearConv / QLinearMatMul do (docs/abi.md, "Quantized
 * layers"): products of centered codes summed exactly in integers, then one requantization
 * y = saturate(round_half_even(acc * sx * sw[c] / sy + b[c] / sy) + zy) in double. Dequantizing
 * and summing in float32 instead rounds the sum first, and a sum near a code boundary then lands
 * one code away from what an integer kernel (or ONNX Runtime, which fuses this pattern into
 * QLinearConv) computes; through a deep network one such code grew to a 4.7% output error. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ref/ref_qutil.h"

static int32_t producer(const mi_graph_t *g, int32_t t) { return t >= 0 ? g->tensors[t].producer : -1; }

/* Input k of node n when it is an initializer (data in the graph) of `dtype`; else NULL. */
static const mi_tensor_t *constant(const mi_graph_t *g, int32_t n, int32_t k, int32_t dtype) {
  int32_t t = k < g->nodes[n].input_count ? g->nodes[n].inputs[k] : -1;
  const mi_tensor_t *ts = t >= 0 ? &g->tensors[t] : NULL;
  return ts && ts->data && ts->producer < 0 && ts->dtype == dtype ? ts : NULL;
}

static int64_t numel(const mi_tensor_t *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= t->dims[d];
  return n;
}

static int32_t code_at(int32_t dtype, const void *data, int64_t i) {
  return dtype == MI_DTYPE_INT8 ? ((const int8_t *)data)[i] : ((const uint8_t *)data)[i];
}

static int is_q8(int32_t dtype) { return dtype == MI_DTYPE_INT8 || dtype == MI_DTYPE_UINT8; }

/* Scale (FLOAT32, > 0) and optional zero point (8-bit) inputs 1 and 2 of Q/DQ node n, with
 * `count` values each (1: per tensor) along `axis` of a rank-`rank` operand when count > 1. */
static int qparams(const mi_graph_t *g, int32_t n, int64_t count, int32_t axis, int32_t rank,
                   const float **s, const mi_tensor_t **z) {
  const mi_tensor_t *st = constant(g, n, 1, MI_DTYPE_FLOAT32);
  int32_t zt = g->nodes[n].input_count > 2 ? g->nodes[n].inputs[2] : -1;
  if (!st || mi_node_attr_int(&g->nodes[n], "block_size", 0) != 0) return 0;
  if (numel(st) != 1 && (numel(st) != count || st->rank != 1)) return 0;
  if (numel(st) > 1) {
    int64_t a = mi_node_attr_int(&g->nodes[n], "axis", 1);
    if ((a < 0 ? a + rank : a) != axis) return 0;
  }
  *s = st->data;
  for (int64_t i = 0; i < numel(st); i++)
    if (!((*s)[i] > 0.0f) || !isfinite((*s)[i])) return 0;
  *z = NULL;
  if (zt >= 0) {
    const mi_tensor_t *zz = &g->tensors[zt];
    if (!zz->data || zz->producer >= 0 || !is_q8(zz->dtype) || numel(zz) != numel(st)) return 0;
    *z = zz;
  }
  return 1;
}

/* Clip bound i (1 min, 2 max) of node n: its constant input, its attribute before opset 11, or
 * dflt when absent; NAN when it is a runtime value. */
static double clip_bound(const mi_graph_t *g, int32_t n, int32_t i, double dflt) {
  const mi_node_t *c = &g->nodes[n];
  const mi_tensor_t *t;
  if (c->input_count <= i || c->inputs[i] < 0) {
    if (c->input_count == 1 && g->opset < 11)
      return mi_node_attr_float(c, i == 1 ? "min" : "max", (float)dflt);
    return dflt;
  }
  t = constant(g, n, i, MI_DTYPE_FLOAT32);
  return t && numel(t) == 1 ? (double)*(const float *)t->data : NAN;
}

/* Bias value m of QDQ layer op (FLOAT32): a FLOAT32 initializer, or the DequantizeLinear of an
 * INT32 one (ONNX Runtime's quantizer writes the bias so, scale sx * sw, zero point 0), read as
 * that DequantizeLinear computes it. With out NULL, 1 when the bias is one of these with 1 or
 * `ch` values (*n their count). */
static int bias_of(const mi_graph_t *g, int32_t op, int64_t ch, int64_t *n, float *out) {
  const mi_node_t *o = &g->nodes[op];
  int32_t t = o->input_count > 2 ? o->inputs[2] : -1, dq = producer(g, t);
  const mi_tensor_t *b = t >= 0 ? constant(g, op, 2, MI_DTYPE_FLOAT32) : NULL, *z = NULL;
  const float *s = NULL;
  int64_t ns = 1;
  *n = 0;
  if (t < 0) return 1;
  if (!b) {
    const mi_tensor_t *st;
    if (!mi__graph_is_op(g, dq, "DequantizeLinear") || mi__graph_is_output(g, t) || !(b = constant(g, dq, 0, MI_DTYPE_INT32)) ||
        b->rank > 1 || !(st = constant(g, dq, 1, MI_DTYPE_FLOAT32)) || ((ns = numel(st)) != 1 && ns != numel(b)))
      return 0;
    s = st->data;
    if (g->nodes[dq].input_count > 2 && g->nodes[dq].inputs[2] >= 0) { /* a zero point: zeros */
      if (!(z = constant(g, dq, 2, MI_DTYPE_INT32)) || numel(z) != ns) return 0;
      for (int64_t i = 0; i < ns; i++)
        if (((const int32_t *)z->data)[i] != 0) return 0;
    }
  }
  if (numel(b) != ch && numel(b) != 1) return 0;
  *n = numel(b);
  for (int64_t m = 0; out && m < *n; m++)
    out[m] = s ? (float)((double)((const int32_t *)b->data)[m] * (double)s[ns == 1 ? 0 : m]) : ((const float *)b->data)[m];
  return 1;
}

/* Axis of the output channels in the weight of QDQ layer op. */
static int32_t weight_axis(const mi_graph_t *g, int32_t op) {
  if (mi__graph_is_op(g, op, "Conv")) return 0;
  return mi__graph_is_op(g, op, "Gemm") && mi_node_attr_int(&g->nodes[op], "transB", 0) ? 0 : 1;
}

/* The QDQ layer whose float op is node `op`: *q its QuantizeLinear, *act its Relu/Clip or -1,
 * *ch its output channel count and *axis their axis in the weight; 0 when the pattern does not
 * hold (the layer then runs node by node in float). The conditions are the lowering's
 * (exec/plan.c, match_lowered): the float values in between have one reader each and are not
 * graph outputs, and the activation is exactly what the quantization does anyway. */
static int match(const mi_graph_t *g, int32_t op, int32_t *q, int32_t *act, int64_t *ch) {
  const mi_node_t *n = &g->nodes[op];
  int conv = mi__graph_is_op(g, op, "Conv"), mm = mi__graph_is_op(g, op, "MatMul"), gemm = mi__graph_is_op(g, op, "Gemm");
  int32_t dqx, dqw, y, r, yt;
  const mi_tensor_t *wq, *xq, *z;
  int64_t nb;
  const float *s;
  if (!(conv || mm || gemm) || n->output_count != 1 || n->input_count < 2 || n->outputs[0] < 0) return 0;
  if (!mi__graph_is_op(g, dqx = producer(g, n->inputs[0]), "DequantizeLinear") ||
      !mi__graph_is_op(g, dqw = producer(g, n->inputs[1]), "DequantizeLinear") ||
      mi__graph_is_output(g, n->inputs[0]) || mi__graph_is_output(g, n->inputs[1]))
    return 0;
  xq = g->nodes[dqx].inputs[0] >= 0 ? &g->tensors[g->nodes[dqx].inputs[0]] : NULL;
  if (!xq || xq->data || !is_q8(xq->dtype) || !qparams(g, dqx, 1, 0, 1, &s, &z) ||
      (z && z->dtype != xq->dtype))
    return 0;
  if (!(wq = constant(g, dqw, 0, MI_DTYPE_INT8)) && !(wq = constant(g, dqw, 0, MI_DTYPE_UINT8))) return 0;
  if (conv) {
    if (wq->rank < 3 || wq->rank > 4) return 0;
    *ch = wq->dims[0];
  } else {
    int tb = gemm && mi_node_attr_int(n, "transB", 0);
    if (wq->rank != 2 || (gemm && mi_node_attr_int(n, "transA", 0))) return 0;
    *ch = wq->dims[tb ? 0 : 1];
  }
  if (!qparams(g, dqw, *ch, weight_axis(g, op), wq->rank, &s, &z) || (z && z->dtype != wq->dtype)) return 0;
  if (mm && n->input_count > 2) return 0;
  if (!bias_of(g, op, *ch, &nb, NULL) || (nb == 1 && !gemm && *ch != 1)) return 0;
  y = n->outputs[0];
  if ((r = mi__graph_sole_reader(g, y)) < 0) return 0;
  *act = -1;
  if (mi__graph_is_op(g, r, "Relu") || mi__graph_is_op(g, r, "Clip")) {
    *act = r;
    if (g->nodes[r].output_count != 1 || g->nodes[r].inputs[0] != y || (y = g->nodes[r].outputs[0]) < 0 ||
        (r = mi__graph_sole_reader(g, y)) < 0)
      return 0;
  }
  if (!mi__graph_is_op(g, r, "QuantizeLinear") || g->nodes[r].inputs[0] != y || g->nodes[r].output_count != 1 ||
      (yt = g->nodes[r].outputs[0]) < 0 || !qparams(g, r, 1, 0, 1, &s, &z) ||
      mi_node_attr_int(&g->nodes[r], "output_dtype", 0) != 0)
    return 0;
  *q = r;
  if (*act >= 0) {
    /* Relu, or Clip(0, hi), changes nothing when the lowest code means 0 and hi is at or above
     * the top code's value: the quantization clamps there anyway. */
    int u8 = !z || z->dtype == MI_DTYPE_UINT8;
    int32_t qmin = u8 ? 0 : -128, zy = z ? code_at(z->dtype, z->data, 0) : 0;
    if (zy != qmin) return 0;
    if (mi__graph_is_op(g, *act, "Clip")) {
      double hi = clip_bound(g, *act, 2, INFINITY);
      if (clip_bound(g, *act, 1, -INFINITY) != 0.0 || !(hi / (double)s[0] >= 255.0 - 0.49)) return 0;
    }
  }
  return 1;
}

int32_t mi__ref_qdq_plan(const mi_graph_t *g, int32_t *role) {
  int32_t groups = 0;
  for (int32_t n = 0; n < g->node_count; n++) role[n] = MI__REF_QDQ_PLAIN;
  for (int32_t n = 0; n < g->node_count; n++) {
    int32_t q, act;
    int64_t ch;
    if (!match(g, n, &q, &act, &ch) || q <= n || (act >= 0 && (act <= n || act >= q))) continue;
    role[n] = MI__REF_QDQ_SKIP;
    if (act >= 0) role[act] = MI__REF_QDQ_SKIP;
    role[q] = n;
    groups++;
  }
  return groups;
}

int32_t mi__ref_qdq_codes(const mi_graph_t *g, int32_t op) {
  return g->nodes[producer(g, g->nodes[op].inputs[0])].inputs[0];
}

/* Integer sums of the MatMul / Gemm: acc[r][j] = sum_k X[r][k] * W[k][j] (W[j][k] when tb),
 * wrapping as int32 does (sums mod 2^32 do not depend on the order). */
static void gemm_acc(const int32_t *X, const int32_t *W, int32_t *acc, int64_t rows, int64_t K, int64_t N, int tb) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < N; j++) {
      uint32_t a = 0;
      for (int64_t k = 0; k < K; k++) a += (uint32_t)X[r * K + k] * (uint32_t)W[tb ? j * K + k : k * N + j];
      acc[r * N + j] = (int32_t)a;
    }
}

int32_t mi__ref_qdq_run(const mi_graph_t *g, int32_t op, const mi_array_t *x, mi_array_t **out, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[op];
  int conv = mi__graph_is_op(g, op, "Conv"), gemm = mi__graph_is_op(g, op, "Gemm");
  int32_t q, act, dqx = producer(g, n->inputs[0]), dqw = producer(g, n->inputs[1]), rc = MI_OK, rank = 0;
  int64_t ch, dims[MI_MAX_RANK], per = 1, total, K = 0, rows = 1, nb = 0;
  const float *sx, *sw, *sy;
  float *b = NULL;
  const mi_tensor_t *zx, *zw, *zy, *wq;
  int32_t *X = NULL, *W = NULL, *acc = NULL;
  double alpha = gemm ? mi_node_attr_float(n, "alpha", 1.0f) : 1.0, beta = gemm ? mi_node_attr_float(n, "beta", 1.0f) : 1.0;
  mi__ref_call_t c;
  mi_array_t *y = NULL;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.node = n;
  c.opset = g->opset;
  c.err = err;
  *out = NULL;
  if (!match(g, op, &q, &act, &ch)) return mi__ref_fail(&c, MI_ERR_INTERNAL, "not a QDQ layer");
  wq = &g->tensors[g->nodes[dqw].inputs[0]];
  qparams(g, dqx, 1, 0, 1, &sx, &zx);
  qparams(g, dqw, ch, weight_axis(g, op), wq->rank, &sw, &zw);
  qparams(g, q, 1, 0, 1, &sy, &zy);
  if (!x || x->dtype != g->tensors[mi__ref_qdq_codes(g, op)].dtype)
    return mi__ref_fail(&c, MI_ERR_INVALID_ARGUMENT, "QDQ layer: the input codes are missing or of another dtype");
  if (conv) {
    mi__ref_window_t w;
    int64_t group = mi_node_attr_int(n, "group", 1);
    if (x->rank != wq->rank) return mi__ref_fail(&c, MI_ERR_INVALID_ARGUMENT, "weight rank %d and input rank %d do not fit", (int)wq->rank, (int)x->rank);
    if ((rc = mi__ref_window(&c, x, wq->dims + 2, 0, &w)) != MI_OK) return rc;
    if (group < 1 || wq->dims[1] * group != x->dims[1] || ch % group != 0)
      return mi__ref_fail(&c, MI_ERR_INVALID_ARGUMENT, "input has %lld channels, weight expects %lld x group %lld",
                          (long long)x->dims[1], (long long)wq->dims[1], (long long)group);
    rank = x->rank;
    dims[0] = x->dims[0];
    dims[1] = ch;
    dims[2] = x->rank == 3 ? w.out[1] : w.out[0];
    dims[3] = w.out[1];
    per = w.out[0] * w.out[1];
    total = dims[0] * ch * per;
    X = malloc((size_t)(mi_array_numel(x) + 1) * sizeof *X);
    W = malloc((size_t)(numel(wq) + 1) * sizeof *W);
    acc = malloc((size_t)(total + 1) * sizeof *acc);
    if (X && W && acc) {
      int64_t inner = numel(wq) / ch;
      for (int64_t i = 0; i < mi_array_numel(x); i++) X[i] = code_at(x->dtype, x->data, i) - (zx ? code_at(zx->dtype, zx->data, 0) : 0);
      for (int64_t i = 0; i < numel(wq); i++)
        W[i] = code_at(wq->dtype, wq->data, i) - (zw ? code_at(zw->dtype, zw->data, numel(zw) == 1 ? 0 : i / inner) : 0);
      if (mi__ref_conv_acc(X, W, NULL, acc, x->dims[0], x->dims[1], ch, group, &w) != 0) rc = MI_ERR_OUT_OF_MEMORY;
    }
  } else {
    int tb = gemm && mi_node_attr_int(n, "transB", 0);
    K = wq->dims[tb ? 1 : 0];
    if (x->rank < 1 || x->dims[x->rank - 1] != K || (gemm && x->rank != 2))
      return mi__ref_fail(&c, MI_ERR_INVALID_ARGUMENT, "input's last dim does not match the weight's %lld", (long long)K);
    rank = x->rank;
    for (int32_t d = 0; d < rank; d++) dims[d] = x->dims[d];
    dims[rank - 1] = ch;
    rows = K ? mi_array_numel(x) / K : 0;
    total = rows * ch;
    X = malloc((size_t)(mi_array_numel(x) + 1) * sizeof *X);
    W = malloc((size_t)(numel(wq) + 1) * sizeof *W);
    acc = malloc((size_t)(total + 1) * sizeof *acc);
    if (X && W && acc) {
      for (int64_t i = 0; i < mi_array_numel(x); i++) X[i] = code_at(x->dtype, x->data, i) - (zx ? code_at(zx->dtype, zx->data, 0) : 0);
      for (int64_t i = 0; i < numel(wq); i++) {
        int64_t c0 = tb ? i / K : i % ch; /* the output channel of weight element i */
        W[i] = code_at(wq->dtype, wq->data, i) - (zw ? code_at(zw->dtype, zw->data, numel(zw) == 1 ? 0 : c0) : 0);
      }
      gemm_acc(X, W, acc, rows, K, ch, tb);
    }
  }
  if (rc == MI_OK && (!X || !W || !acc || !(b = malloc((size_t)(ch + 1) * sizeof *b)))) rc = MI_ERR_OUT_OF_MEMORY;
  if (rc == MI_OK) bias_of(g, op, ch, &nb, b);
  if (rc == MI_OK && !(y = mi_array_create(zy ? zy->dtype : MI_DTYPE_UINT8, rank, dims))) rc = MI_ERR_OUT_OF_MEMORY;
  if (rc == MI_OK) {
    /* The output stage of an integer kernel (docs/abi.md): mult = alpha * sx * sw / sy and
     * bias = beta * b / sy in double, one rounding half to even, then the zero point. */
    int32_t z = zy ? code_at(zy->dtype, zy->data, 0) : 0;
    int64_t nsw = numel(&g->tensors[g->nodes[dqw].inputs[1]]);
    for (int64_t i = 0; i < total; i++) {
      int64_t m = conv ? (i / per) % ch : i % ch;
      double mult = alpha * (double)sx[0] * (double)sw[nsw == 1 ? 0 : m] / (double)sy[0];
      double bias = nb ? beta * (double)b[nb == 1 ? 0 : m] / (double)sy[0] : 0.0;
      mi__ref_put_code(y, i, (double)acc[i] * mult + bias, z);
    }
  }
  free(X);
  free(W);
  free(acc);
  free(b);
  if (rc == MI_ERR_OUT_OF_MEMORY) return mi__ref_fail(&c, rc, "out of memory");
  *out = y;
  return rc;
}
