/* rewrite.c - mi-quantize's graph rewrites: ONNX Runtime's dynamic and QDQ patterns, with its
 * quantization parameter rules (onnxruntime/python/tools/quantization/quant_utils.py); the
 * QOperator fusion of the QDQ form is in qop.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mi_quantize.h"

/* A tensor name not in the graph yet: base + suffix (+ _N). */
static void fresh_name(const mi_graph_t *g, const char *base, const char *suffix, char *out, size_t cap) {
  snprintf(out, cap, "%s%s", base, suffix);
  for (int k = 1; mi_graph_find_tensor(g, out) >= 0; k++) snprintf(out, cap, "%s%s_%d", base, suffix, k);
}

static int32_t new_tensor(mi_graph_t *g, const char *base, const char *suffix, int32_t dtype) {
  char nm[512];
  fresh_name(g, base, suffix, nm, sizeof nm);
  return mi_graph_add_tensor(g, nm, dtype, -1, NULL);
}

int32_t mq_new_init(mi_graph_t *g, const char *base, const char *suffix, int32_t dtype, int32_t rank,
                    const int64_t *dims, const void *data, size_t nbytes) {
  char nm[512];
  fresh_name(g, base, suffix, nm, sizeof nm);
  int32_t t = mi_graph_add_tensor(g, nm, dtype, rank, dims);
  if (t >= 0 && mi_graph_set_data(g, t, data, nbytes) != MI_OK) return -1;
  return t;
}

static int32_t add_node(mi_graph_t *g, const char *op, const char *name, int32_t nin, const int32_t *ins,
                        int32_t out, const char *domain) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s", name);
  int32_t n = mi_graph_add_node(g, op, nm, nin, ins, 1, &out);
  if (n >= 0 && domain) {
    char *d = strdup(domain);
    if (!d) return -1;
    free(g->nodes[n].domain);
    g->nodes[n].domain = d;
  }
  return n;
}

/* Turns node n into op with the given inputs and single output (attributes kept). */
int mq_set_node(mi_graph_t *g, int32_t n, const char *op, int32_t nin, const int32_t *ins, int32_t out,
                const char *domain) {
  mi_node_t *nd = &g->nodes[n];
  char *o = strdup(op), *d = strdup(domain ? domain : "");
  int32_t *in = malloc(sizeof *in * (size_t)nin);
  if (!o || !d || !in) {
    free(o), free(d), free(in);
    return -1;
  }
  free(nd->op_type), free(nd->domain), free(nd->inputs);
  nd->op_type = o;
  nd->domain = d;
  nd->inputs = in;
  memcpy(in, ins, sizeof *in * (size_t)nin);
  nd->input_count = nin;
  nd->outputs[0] = out;
  nd->output_count = 1;
  return 0;
}

static int is_const_f32(const mi_graph_t *g, int32_t t) {
  return t >= 0 && g->tensors[t].data && g->tensors[t].dtype == MI_DTYPE_FLOAT32;
}

static int is_runtime_f32(const mi_graph_t *g, int32_t t) {
  return t >= 0 && !g->tensors[t].data && g->tensors[t].dtype == MI_DTYPE_FLOAT32;
}

/* ---- quantization parameters (quant_utils.compute_scale_zp and quantize_data) */

/* Asymmetric UINT8 over [min(lo, 0), max(hi, 0)]. */
static void params_u8(double lo, double hi, float *scale, uint8_t *zp) {
  lo = lo < 0 ? lo : 0;
  hi = hi > 0 ? hi : 0;
  if (hi == lo) {
    *scale = 1.0f;
    *zp = 0;
    return;
  }
  *scale = (float)((hi - lo) / 255.0);
  double z = rint(0.0 - lo / (double)*scale);
  *zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255
                                      : z);
}

/* Symmetric INT8 in [-127, 127], zero point 0. */
static float scale_s8(const float *w, int64_t stride, int64_t count) {
  double m = 0;
  for (int64_t i = 0; i < count; i++) m = fmax(m, fabs((double)w[i * stride]));
  return m == 0 ? 1.0f : (float)(2.0 * m / 254.0);
}

static int32_t quantize_value(float v, float scale, int32_t zp, int32_t lo, int32_t hi) {
  double q = rint((double)v / (double)scale) + zp;
  return (int32_t)(q < lo ? lo : q > hi ? hi
                                        : q);
}

/* Weight tensor w quantized: INT8 symmetric (per tensor, or per slice of axis 0 when per_channel)
 * or UINT8 asymmetric per tensor. Writes the initializers; *wq, *ws, *wz their indices. */
static int32_t quantize_weight(mi_graph_t *g, int32_t w, int u8, int per_channel, int32_t *wq, int32_t *ws,
                               int32_t *wz) {
  mi_tensor_t *t = &g->tensors[w];
  int64_t n = (int64_t)(t->nbytes / sizeof(float)), ch = per_channel ? t->dims[0] : 1, inner = n / ch;
  const float *v = t->data;
  char base[400];
  snprintf(base, sizeof base, "%s", t->name);
  float *sc = malloc(sizeof *sc * (size_t)ch);
  uint8_t *zp = calloc((size_t)ch, 1), *q = malloc((size_t)(n ? n : 1));
  if (!sc || !zp || !q) {
    free(sc), free(zp), free(q);
    return -1;
  }
  for (int64_t c = 0; c < ch; c++) {
    if (u8) {
      double lo = 0, hi = 0;
      for (int64_t i = 0; i < inner; i++) lo = fmin(lo, v[c * inner + i]), hi = fmax(hi, v[c * inner + i]);
      params_u8(lo, hi, &sc[c], &zp[c]);
    } else {
      sc[c] = scale_s8(v + c * inner, 1, inner);
    }
    for (int64_t i = 0; i < inner; i++) {
      int32_t k = u8 ? quantize_value(v[c * inner + i], sc[c], zp[c], 0, 255)
                     : quantize_value(v[c * inner + i], sc[c], 0, -127, 127);
      q[c * inner + i] = (uint8_t)k; /* the byte of the INT8 or UINT8 code */
    }
  }
  int32_t dt = u8 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8, rank = t->rank;
  int64_t dims[MI_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims); /* adding tensors may move g->tensors */
  *wq = mq_new_init(g, base, "_quantized", dt, rank, dims, q, (size_t)n);
  *ws = mq_new_init(g, base, "_scale", MI_DTYPE_FLOAT32, per_channel ? 1 : 0, &ch, sc, sizeof *sc * (size_t)ch);
  *wz = mq_new_init(g, base, "_zero_point", dt, per_channel ? 1 : 0, &ch, zp, (size_t)ch);
  free(sc), free(zp), free(q);
  return *wq >= 0 && *ws >= 0 && *wz >= 0 ? 0 : -1;
}

/* ---- dynamic */

int32_t mq_dynamic(mi_graph_t *g, const mq_options_t *o, mi_error_t *err) {
  int32_t nodes = g->node_count, nt0 = g->tensor_count;
  int32_t *dq = malloc(sizeof *dq * (size_t)nt0 * 3); /* per float tensor: its DQL's outputs */
  if (!dq) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < nt0 * 3; i++) dq[i] = -1;
  if (g->opset < 11) {
    free(dq);
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "DynamicQuantizeLinear needs opset 11, the model has %lld",
                     (long long)g->opset);
  }
  int32_t done = mq_dynamic_lstm(g, o->per_channel);
  if (done < 0) goto oom;
  for (int32_t i = 0; i < nodes; i++) {
    mi_node_t *n = &g->nodes[i];
    int conv = strcmp(n->op_type, "Conv") == 0, mm = strcmp(n->op_type, "MatMul") == 0;
    if ((!conv && !mm) || (n->domain && n->domain[0]) || n->input_count < 2) continue;
    int32_t x = n->inputs[0], w = n->inputs[1], b = conv && n->input_count > 2 ? n->inputs[2] : -1;
    if (!is_runtime_f32(g, x) || !is_const_f32(g, w) || (mm && g->tensors[w].rank != 2) ||
        (b >= 0 && !is_const_f32(g, b)))
      continue;
    char base[400], nname[400];
    snprintf(base, sizeof base, "%s", g->tensors[x].name);
    snprintf(nname, sizeof nname, "%s", n->name);
    if (dq[x * 3] < 0) {
      int32_t outs[3] = {new_tensor(g, base, "_quantized", MI_DTYPE_UINT8),
                         new_tensor(g, base, "_scale", MI_DTYPE_FLOAT32),
                         new_tensor(g, base, "_zero_point", MI_DTYPE_UINT8)};
      char qn[512];
      snprintf(qn, sizeof qn, "%s_QuantizeLinear", base);
      if (mi_graph_add_node(g, "DynamicQuantizeLinear", qn, 1, &x, 3, outs) < 0) goto oom;
      memcpy(dq + x * 3, outs, sizeof outs);
    }
    int32_t wq, ws, wz;
    if (quantize_weight(g, w, conv ? o->conv_u8 : o->matmul_u8, 0, &wq, &ws, &wz)) goto oom;
    int32_t y = g->nodes[i].outputs[0];
    char ybase[400];
    snprintf(ybase, sizeof ybase, "%s", g->tensors[y].name);
    int32_t acc = new_tensor(g, ybase, "_output_quantized", MI_DTYPE_INT32);
    int32_t cast = new_tensor(g, ybase, "_output_quantized_cast_output", MI_DTYPE_FLOAT32);
    int32_t smul = new_tensor(g, ybase, "_scales_mul_output", MI_DTYPE_FLOAT32);
    int32_t scaled = b >= 0 ? new_tensor(g, ybase, "_output_scaled", MI_DTYPE_FLOAT32) : y;
    int32_t ins[4] = {dq[x * 3], wq, dq[x * 3 + 2], wz};
    char nm[512];
    if (mq_set_node(g, i, conv ? "ConvInteger" : "MatMulInteger", 4, ins, acc, NULL)) goto oom;
    snprintf(nm, sizeof nm, "%s_output_quantized_cast", nname);
    int32_t c = add_node(g, "Cast", nm, 1, &acc, cast, NULL);
    if (c < 0 || mi_node_set_int(g, c, "to", 1) != MI_OK) goto oom;
    int32_t sm[2] = {dq[x * 3 + 1], ws}, om[2] = {cast, smul};
    snprintf(nm, sizeof nm, "%s_scales_mul", nname);
    if (add_node(g, "Mul", nm, 2, sm, smul, NULL) < 0) goto oom;
    snprintf(nm, sizeof nm, "%s_output_scale_mul", nname);
    if (add_node(g, "Mul", nm, 2, om, scaled, NULL) < 0) goto oom;
    if (b >= 0) { /* the bias reshaped to [1, M, 1, ...] and added */
      int64_t shape[MI_MAX_RANK] = {1, -1}, r = g->tensors[w].rank;
      for (int64_t k = 2; k < r; k++) shape[k] = 1;
      char bb[400];
      snprintf(bb, sizeof bb, "%s", g->tensors[b].name);
      int32_t sh = mq_new_init(g, bb, "_reshape_shape", MI_DTYPE_INT64, 1, &r, shape, sizeof(int64_t) * (size_t)r);
      int32_t rb = new_tensor(g, bb, "_reshape_output", MI_DTYPE_FLOAT32);
      int32_t ri[2] = {b, sh}, ai[2] = {scaled, rb};
      snprintf(nm, sizeof nm, "%s_bias_reshape", nname);
      if (sh < 0 || add_node(g, "Reshape", nm, 2, ri, rb, NULL) < 0) goto oom;
      snprintf(nm, sizeof nm, "%s_bias_add", nname);
      if (add_node(g, "Add", nm, 2, ai, y, NULL) < 0) goto oom;
    }
    done++;
  }
  free(dq);
  if (!done) return mi_errorf(err, MI_ERR_UNSUPPORTED, "no Conv, MatMul or LSTM with a constant weight to quantize");
  return mi_graph_toposort(g, err);
oom:
  free(dq);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory rewriting the graph");
}

/* ---- QDQ and QOperator */

int mq_op_takes(const mi_graph_t *g, const mi_node_t *n) {
  static const char *const ops[] = {"Conv", "MatMul", "Add", "Mul", "GlobalAveragePool", "AveragePool",
                                    "Sigmoid", "Softmax", "LeakyRelu", "Concat", "Where", "Gemm", "MaxPool", "Resize"};
  int known = 0;
  if (n->domain && n->domain[0]) return 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) known |= !strcmp(n->op_type, ops[i]);
  if (!known || n->output_count != 1) return 0;
  if (!strcmp(n->op_type, "AveragePool")) { /* QLinearAveragePool here: 2-D, no dilations */
    const mi_attr_t *d = mi_node_attr(n, "dilations");
    for (int32_t i = 0; d && i < d->count; i++)
      if (d->ints[i] != 1) return 0;
    const mi_attr_t *k = mi_node_attr(n, "kernel_shape"); /* 2-D (the input's rank is not known after QDQ) */
    return n->input_count == 1 && k && k->count == 2;
  }
  if (!strcmp(n->op_type, "Resize")) /* on codes: nearest only, opset 11 on (as ONNX Runtime's QResize) */
    return g->opset >= 11 && !strcmp(mi_node_attr_string(n, "mode", "nearest"), "nearest");
  if (!strcmp(n->op_type, "MaxPool")) return g->opset >= 12; /* MaxPool takes 8-bit codes from opset 12 */
  if (!strcmp(n->op_type, "Gemm"))                           /* QGemm takes alpha but no beta; a transposed A stays float */
    return mi_node_attr_float(n, "alpha", 1.0f) == 1.0f && mi_node_attr_float(n, "beta", 1.0f) == 1.0f &&
           mi_node_attr_int(n, "transA", 0) == 0;
  return 1;
}

static int qdq_op(const mi_graph_t *g, const mi_node_t *n) {
  const char *op = n->op_type;
  if (!mq_op_takes(g, n)) return 0;
  if (strcmp(op, "Conv") == 0)
    return n->input_count >= 2 && is_runtime_f32(g, n->inputs[0]) && is_const_f32(g, n->inputs[1]) &&
           (n->input_count < 3 || n->inputs[2] < 0 || is_const_f32(g, n->inputs[2]));
  if (strcmp(op, "MatMul") == 0)
    return n->input_count == 2 && is_runtime_f32(g, n->inputs[0]) && is_const_f32(g, n->inputs[1]) &&
           g->tensors[n->inputs[1]].rank == 2;
  if (strcmp(op, "Gemm") == 0) { /* a constant B, and a constant C of N values (the bias) or none */
    int32_t b = n->input_count >= 2 ? n->inputs[1] : -1, c = n->input_count > 2 ? n->inputs[2] : -1;
    if (!is_runtime_f32(g, n->inputs[0]) || !is_const_f32(g, b) || g->tensors[b].rank != 2) return 0;
    int64_t N = g->tensors[b].dims[mi_node_attr_int(n, "transB", 0) ? 0 : 1];
    return c < 0 || (is_const_f32(g, c) && g->tensors[c].rank <= 2 && (int64_t)(g->tensors[c].nbytes / 4) == N);
  }
  if (strcmp(op, "Add") == 0 || strcmp(op, "Mul") == 0)
    return n->input_count == 2 && is_runtime_f32(g, n->inputs[0]) && is_runtime_f32(g, n->inputs[1]);
  if (strcmp(op, "GlobalAveragePool") == 0) return is_runtime_f32(g, n->inputs[0]) && g->tensors[n->inputs[0]].rank == 4;
  if (strcmp(op, "Concat") == 0) {
    for (int32_t j = 0; j < n->input_count; j++)
      if (!is_runtime_f32(g, n->inputs[j])) return 0;
    return n->input_count >= 1 && n->input_count <= 64;
  }
  if (strcmp(op, "Where") == 0)
    return n->input_count == 3 && n->inputs[0] >= 0 && g->tensors[n->inputs[0]].dtype == MI_DTYPE_BOOL &&
           is_runtime_f32(g, n->inputs[1]) && is_runtime_f32(g, n->inputs[2]);
  return n->input_count >= 1 && is_runtime_f32(g, n->inputs[0]); /* the single-input ops */
}

int mq_direct8(const mi_node_t *n) {
  return (!n->domain || !n->domain[0]) && (!strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "Resize"));
}

int32_t mq_readers(const mi_graph_t *g, int32_t t, int32_t *only) {
  int32_t c = 0;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] == t) {
        c++;
        *only = i;
      }
  return c;
}

int mq_is_output(const mi_graph_t *g, int32_t t) {
  for (int32_t i = 0; i < g->output_count; i++)
    if (g->outputs[i] == t) return 1;
  return 0;
}

int32_t mq_qdq_prepare(mi_graph_t *g, uint8_t *quantize, mi_error_t *err) {
  if (g->opset < 10)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "QuantizeLinear needs opset 10, the model has %lld",
                     (long long)g->opset);
  uint8_t *drop = calloc((size_t)g->node_count + 1, 1);
  if (!drop) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  /* A Relu that alone reads a Conv's or MatMul's output goes: quantizing its output with a zero
   * point at code 0 clamps the same way (QDQKeepRemovableActivations off, ORT's default). */
  for (int32_t i = 0; i < g->node_count; i++) {
    mi_node_t *n = &g->nodes[i];
    int32_t r = -1, y = n->outputs[0];
    if (!qdq_op(g, n) || (strcmp(n->op_type, "Conv") && strcmp(n->op_type, "MatMul"))) continue;
    if (mq_is_output(g, y) || mq_readers(g, y, &r) != 1 || strcmp(g->nodes[r].op_type, "Relu") || drop[r]) continue;
    n->outputs[0] = g->nodes[r].outputs[0];
    g->nodes[r].inputs[0] = y; /* keeps the dropped node well-formed until removed */
    drop[r] = 1;
  }
  int32_t rc = mi_graph_remove_nodes(g, drop, err);
  free(drop);
  if (rc != MI_OK) return rc;
  memset(quantize, 0, (size_t)g->tensor_count);
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    if (!qdq_op(g, n)) continue;
    /* The activations quantized: Add, Mul and Concat all inputs, Where X and Y, the rest input 0 */
    const char *op = n->op_type;
    int all = !strcmp(op, "Add") || !strcmp(op, "Mul") || !strcmp(op, "Concat"), where = !strcmp(op, "Where");
    /* MaxPool and nearest Resize (ONNX Runtime's Direct8Bit ops) only where their input is already
     * quantized; their output takes the input's parameters (mq_qdq) */
    if (mq_direct8(n) && !quantize[n->inputs[0]]) continue;
    for (int32_t j = where ? 1 : 0; j < (all || where ? n->input_count : 1); j++) quantize[n->inputs[j]] = 1;
    if (g->tensors[n->outputs[0]].dtype == MI_DTYPE_FLOAT32 || g->tensors[n->outputs[0]].dtype == MI_DTYPE_UNDEFINED)
      quantize[n->outputs[0]] = 1;
  }
  return MI_OK;
}

int32_t mq_qdq(mi_graph_t *g, const uint8_t *quantize, const mq_ranges_t *r, const mq_options_t *o, int qop,
               mi_error_t *err) {
  int32_t nt0 = g->tensor_count, nodes = g->node_count;
  int32_t *deq = malloc(sizeof *deq * (size_t)nt0);
  float *xs = calloc((size_t)nt0, sizeof *xs);
  if (!deq || !xs) {
    free(deq), free(xs);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int32_t t = 0; t < nt0; t++) deq[t] = -1;
  for (int32_t t = 0; t < nt0; t++) {
    if (!quantize[t]) continue;
    if (isnan(r->lo[t])) {
      free(deq), free(xs);
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "tensor '%s' was not calibrated", g->tensors[t].name);
    }
    float s;
    uint8_t z;
    int32_t p = g->tensors[t].producer, from = t;
    if (p >= 0 && mq_direct8(&g->nodes[p]) && mq_op_takes(g, &g->nodes[p]) && quantize[g->nodes[p].inputs[0]])
      from = g->nodes[p].inputs[0];
    params_u8(r->lo[from], r->hi[from], &s, &z);           /* a Direct8Bit op's output: its input's parameters */
    if (p >= 0 && !strcmp(g->nodes[p].op_type, "Softmax")) /* [0, 1) at scale 1/256, as ONNX Runtime's */
      s = 1.0f / 256.0f, z = 0;
    xs[t] = s;
    char base[400], nm[512];
    snprintf(base, sizeof base, "%s", g->tensors[t].name);
    int32_t ts = mq_new_init(g, base, "_scale", MI_DTYPE_FLOAT32, 0, NULL, &s, sizeof s);
    int32_t tz = mq_new_init(g, base, "_zero_point", MI_DTYPE_UINT8, 0, NULL, &z, 1);
    int32_t tq = new_tensor(g, base, "_QuantizeLinear_Output", MI_DTYPE_UINT8);
    int32_t td = new_tensor(g, base, "_DequantizeLinear_Output", MI_DTYPE_FLOAT32);
    int32_t qi[3] = {t, ts, tz}, di[3] = {tq, ts, tz};
    snprintf(nm, sizeof nm, "%s_QuantizeLinear", base);
    if (ts < 0 || tz < 0 || add_node(g, "QuantizeLinear", nm, 3, qi, tq, NULL) < 0) goto oom;
    snprintf(nm, sizeof nm, "%s_DequantizeLinear", base);
    if (add_node(g, "DequantizeLinear", nm, 3, di, td, NULL) < 0) goto oom;
    deq[t] = td;
  }
  /* Every original reader reads the dequantized value. */
  for (int32_t i = 0; i < nodes; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
      int32_t t = g->nodes[i].inputs[j];
      if (t >= 0 && t < nt0 && deq[t] >= 0) g->nodes[i].inputs[j] = deq[t];
    }
  /* Weights (INT8 symmetric) and biases (INT32, scale sx * sw) behind DequantizeLinear. */
  for (int32_t i = 0; i < nodes; i++) {
    mi_node_t *n = &g->nodes[i];
    int conv = !strcmp(n->op_type, "Conv"), mm = !strcmp(n->op_type, "MatMul"), gemm = !strcmp(n->op_type, "Gemm");
    if ((!conv && !mm && !gemm) || n->input_count < 2 || !is_const_f32(g, n->inputs[1]) || !mq_op_takes(g, n)) continue;
    /* Per channel: Conv's output channels, Gemm's columns when B is [N, K] (transB) */
    int32_t w = n->inputs[1], x = -1, wq, ws, wz;
    int32_t pc = o->per_channel && (conv || (gemm && mi_node_attr_int(n, "transB", 0)));
    int32_t p = g->tensors[n->inputs[0]].producer;
    if (p < 0 || strcmp(g->nodes[p].op_type, "DequantizeLinear")) continue;
    /* DQ <- Q <- the float tensor */
    x = g->tensors[g->nodes[p].inputs[0]].producer >= 0 ? g->nodes[g->tensors[g->nodes[p].inputs[0]].producer].inputs[0] : -1;
    if (x < 0 || x >= nt0 || !(xs[x] > 0)) continue;
    if (quantize_weight(g, w, 0, pc, &wq, &ws, &wz)) goto oom;
    char nm[512];
    int32_t wd = new_tensor(g, g->tensors[w].name, "_DequantizeLinear_Output", MI_DTYPE_FLOAT32);
    int32_t di[3] = {wq, ws, wz};
    snprintf(nm, sizeof nm, "%s_DequantizeLinear", g->tensors[w].name);
    int32_t dn = add_node(g, "DequantizeLinear", nm, 3, di, wd, NULL);
    if (dn < 0 || (pc && mi_node_set_int(g, dn, "axis", 0) != MI_OK)) goto oom;
    g->nodes[i].inputs[1] = wd;
    n = &g->nodes[i];
    if ((conv || gemm) && n->input_count > 2 && is_const_f32(g, n->inputs[2])) {
      int32_t b = n->inputs[2];
      int64_t m = (int64_t)(g->tensors[b].nbytes / sizeof(float));
      float *bs = malloc(sizeof *bs * (size_t)m);
      int32_t *bq = malloc(sizeof *bq * (size_t)m), *bz = calloc((size_t)m, sizeof *bz);
      if (!bs || !bq || !bz) {
        free(bs), free(bq), free(bz);
        goto oom;
      }
      const float *sw = g->tensors[ws].data, *bv = g->tensors[b].data;
      for (int64_t c = 0; c < m; c++) {
        bs[c] = xs[x] * sw[pc ? c : 0];
        double v = rint((double)bv[c] / (double)bs[c]);
        bq[c] = (int32_t)(v < -2147483648.0 ? -2147483648.0 : v > 2147483647.0 ? 2147483647.0
                                                                               : v);
      }
      int64_t one = pc ? m : 1;
      char bb[400];
      snprintf(bb, sizeof bb, "%s", g->tensors[b].name);
      int32_t tq = mq_new_init(g, bb, "_quantized", MI_DTYPE_INT32, 1, &m, bq, sizeof *bq * (size_t)m);
      int32_t ts = mq_new_init(g, bb, "_quantized_scale", MI_DTYPE_FLOAT32, pc ? 1 : 0, &one, bs, sizeof *bs * (size_t)one);
      int32_t tz = mq_new_init(g, bb, "_quantized_zero_point", MI_DTYPE_INT32, pc ? 1 : 0, &one, bz, sizeof *bz * (size_t)one);
      free(bs), free(bq), free(bz);
      int32_t bd = new_tensor(g, bb, "_DequantizeLinear_Output", MI_DTYPE_FLOAT32), bi[3] = {tq, ts, tz};
      snprintf(nm, sizeof nm, "%s_DequantizeLinear", bb);
      dn = add_node(g, "DequantizeLinear", nm, 3, bi, bd, NULL);
      if (tq < 0 || ts < 0 || tz < 0 || dn < 0 || (pc && mi_node_set_int(g, dn, "axis", 0) != MI_OK)) goto oom;
      g->nodes[i].inputs[2] = bd;
    }
  }
  free(deq), free(xs);
  int32_t rc = mi_graph_toposort(g, err);
  if (rc != MI_OK || !qop) return rc;
  return mq_qop(g, err);
oom:
  free(deq), free(xs);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory rewriting the graph");
}
