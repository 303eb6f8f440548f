/* xf_qdq.c - which activations an INT8 device stores (the rule of ONNX Runtime's static QDQ
 * quantizer) and the QuantizeLinear/DequantizeLinear pairs that make the reference compute them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "transform/xf_internal.h"

/* Ops without weights that an INT8 device runs on codes (npu-stub's INT8 list): they join the
 * INT8 region when one of their activation inputs comes from it. */
static int int8_capable(const mi_node_t *x) {
  static const char *const ops[] = {"Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool",
                                    "GlobalMaxPool", "Concat", "Relu", "Clip", "HardSwish",
                                    "HardSigmoid", "Sigmoid", "BatchNormalization", "Flatten",
                                    "Reshape"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(x->op_type, ops[i]) == 0) return 1;
  return 0;
}

/* Activations whose quantization equals clamping the codes: a device runs them in the output
 * stage of the op before, so the tensor between the two is never stored. */
static int fusable_act(const mi_node_t *x) {
  return strcmp(x->op_type, "Relu") == 0 || strcmp(x->op_type, "Clip") == 0;
}

/* How many leading inputs of x are data (the rest are parameters: weights, shapes, bounds). */
static int32_t data_inputs(const mi_node_t *x) {
  if (strcmp(x->op_type, "Add") == 0 || strcmp(x->op_type, "Mul") == 0 ||
      strcmp(x->op_type, "Concat") == 0)
    return x->input_count;
  return x->input_count > 0 ? 1 : 0;
}

static int is_activation(const mi_graph_t *g, int32_t t) {
  return t >= 0 && !g->tensors[t].data && g->tensors[t].dtype == MI_DTYPE_FLOAT32;
}

/* True when t runs from an INT8 op straight into a fused Relu/Clip and nothing else reads it. */
static int fused_inside(const mi_graph_t *g, const uint8_t *op8, int32_t t) {
  int32_t p = g->tensors[t].producer, c = mi__xf_sole_consumer(g, t);
  return p >= 0 && op8[p] && c >= 0 && op8[c] && fusable_act(&g->nodes[c]) &&
         g->nodes[c].inputs[0] == t;
}

/* Elementwise ops whose output is a function of their activation inputs alone (the rest are
 * constants): the ops a device runs as one table on the codes (exec/qdq_chain.c). */
static int code_function_op(const mi_node_t *x) {
  static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max",
                                    "Min", "Relu", "LeakyRelu", "Clip", "HardSwish",
                                    "HardSigmoid", "Sigmoid", "Tanh", "Neg", "Abs"};
  if (x->output_count != 1 || (x->domain && x->domain[0])) return 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(x->op_type, ops[i]) == 0) return 1;
  return 0;
}

/* chain[t] = 1 when t has readers and each computes a function of the same root (see
 * unquantize_inner), one pass over the nodes: 2 marks a reader outside the chain. */
static void mark_chain_reads(const mi_graph_t *g, const int32_t *root, uint8_t *chain) {
  memset(chain, 0, (size_t)g->tensor_count);
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *x = &g->nodes[n];
    for (int32_t k = 0; k < x->input_count; k++) {
      int32_t t = x->inputs[k];
      if (t < 0) continue;
      if (!code_function_op(x) || root[x->outputs[0]] != root[t]) chain[t] = 2;
      else if (chain[t] == 0)
        chain[t] = 1;
    }
  }
}

/* A stored value that elementwise ops turn into other stored values through values computed
 * from it alone (hard-swish written out: x * Clip(x + 3, 0, 6) / 6; HardSigmoid as Add, Clip,
 * Div) is one function of each stored code: a device runs the whole chain as one table
 * (exec/qdq_chain.c), and the values inside it need no codes. Quantizing each of them added a
 * step and a rounding per op (ppocr_v2_cls: three steps per hard-swish). root[t] is the stored
 * tensor t is such a function of (t itself where it is stored and computed otherwise, -1 where
 * it is none). A chain whose float value leaves it unquantized (to a float op, a graph output)
 * runs as float ops anyway and keeps its codes; in the others, every stored value read only by
 * the chain is unquantized. root, escapes and chain: tensor_count entries. */
static void unquantize_inner(const mi_graph_t *g, uint8_t *qt, int32_t *root, uint8_t *escapes,
                             uint8_t *chain) {
  for (int32_t t = 0; t < g->tensor_count; t++) root[t] = qt[t] ? t : -1, escapes[t] = 0;
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *x = &g->nodes[n];
    int32_t y = x->output_count > 0 ? x->outputs[0] : -1, r = -2;
    if (y < 0 || !code_function_op(x)) continue;
    for (int32_t k = 0; k < x->input_count; k++)
      if (is_activation(g, x->inputs[k])) r = r == -2 || r == root[x->inputs[k]] ? root[x->inputs[k]] : -1;
    if (r >= 0) root[y] = r;
  }
  mark_chain_reads(g, root, chain);
  for (int32_t t = 0; t < g->tensor_count; t++)
    if (root[t] >= 0 && root[t] != t && !qt[t] && (mi__graph_is_output(g, t) || chain[t] != 1))
      escapes[root[t]] = 1;
  for (int32_t t = 0; t < g->tensor_count; t++)
    if (qt[t] && root[t] >= 0 && root[t] != t && !escapes[root[t]] && !mi__graph_is_output(g, t) &&
        chain[t] == 1)
      qt[t] = 0;
}

int32_t mi__xf_plan_qdq(const mi_graph_t *g, const uint8_t *int8_layer, int keep_float_output,
                        uint8_t *qt, mi_error_t *err) {
  uint8_t *op8 = calloc((size_t)g->node_count + 1, 1), *region = calloc((size_t)g->tensor_count + 1, 1);
  int32_t *root = malloc(((size_t)g->tensor_count + 1) * sizeof *root);
  uint8_t *escapes = malloc((size_t)g->tensor_count + 1);
  if (!op8 || !region || !root || !escapes) {
    free(op8);
    free(region);
    free(root);
    free(escapes);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "quantize: out of memory");
  }
  memset(qt, 0, (size_t)g->tensor_count);
  /* Nodes are sorted: the INT8 region grows forward from the layers the configuration makes
   * INT8; a weighted layer left at FP32 activations stops it. */
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *x = &g->nodes[n];
    if (int8_layer[n]) op8[n] = 1;
    else if (!mi__xf_is_weighted(g, n) && int8_capable(x))
      for (int32_t k = 0; k < data_inputs(x); k++)
        if (is_activation(g, x->inputs[k]) && region[x->inputs[k]]) op8[n] = 1;
    for (int32_t k = 0; op8[n] && k < x->output_count; k++)
      if (x->outputs[k] >= 0) region[x->outputs[k]] = 1;
  }
  /* Every activation an INT8 op reads or writes is stored as codes, except inside a fused
   * op -> Relu/Clip pair, and the graph outputs when they are to stay float. */
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *x = &g->nodes[n];
    if (!op8[n]) continue;
    for (int32_t k = 0; k < data_inputs(x); k++) {
      int32_t t = x->inputs[k];
      if (is_activation(g, t) && !fused_inside(g, op8, t) &&
          !(keep_float_output && mi__graph_is_output(g, t)))
        qt[t] = 1;
    }
    int32_t y = x->output_count > 0 ? x->outputs[0] : -1;
    if (is_activation(g, y) && !fused_inside(g, op8, y) &&
        !(keep_float_output && mi__graph_is_output(g, y)))
      qt[y] = 1;
  }
  unquantize_inner(g, qt, root, escapes, region); /* region's bytes reused for the chain marks */
  free(op8);
  free(region);
  free(root);
  free(escapes);
  return MI_OK;
}

/* Widened to hold 0 exactly: padding, ReLU outputs and zero points must map to a code. */
void mi__xf_uint8_params(float lo, float hi, float *s, uint8_t *z) {
  if (lo > 0.0f) lo = 0.0f;
  if (hi < 0.0f) hi = 0.0f;
  *s = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  double zf = rint(-(double)lo / (double)*s);
  *z = (uint8_t)(zf < 0.0 ? 0.0 : zf > 255.0 ? 255.0
                                             : zf);
}

int32_t mi__xf_insert_qdq(mi_graph_t *g, int32_t t, float lo, float hi, mi_error_t *err) {
  float s;
  uint8_t z;
  int32_t ts, tz, tq, td, ins[3], src = t, prod = g->tensors[t].producer;
  char name[256], base[200];
  mi__xf_uint8_params(lo, hi, &s, &z);
  snprintf(base, sizeof base, "%s", g->tensors[t].name);
  if ((ts = mi__xf_add_const(g, base, ".a_scale", MI_DTYPE_FLOAT32, 0, NULL, &s, sizeof s)) < 0 ||
      (tz = mi__xf_add_const(g, base, ".a_zero", MI_DTYPE_UINT8, 0, NULL, &z, 1)) < 0 ||
      (tq = mi__xf_add_value(g, base, ".q", t)) < 0)
    goto oom;
  if (mi__graph_is_output(g, t) && prod >= 0) {
    /* A graph output keeps its name and index: its producer writes a new float tensor and
     * the DequantizeLinear writes the output. */
    if ((src = mi__xf_add_value(g, base, ".float", t)) < 0) goto oom;
    for (int32_t k = 0; k < g->nodes[prod].output_count; k++)
      if (g->nodes[prod].outputs[k] == t) g->nodes[prod].outputs[k] = src;
    td = t;
  } else if ((td = mi__xf_add_value(g, base, ".dq", t)) < 0) {
    goto oom;
  }
  g->tensors[tq].dtype = MI_DTYPE_UINT8;
  g->tensors[tq].scale = s;
  g->tensors[tq].zero_point = z;
  ins[0] = src;
  ins[1] = ts;
  ins[2] = tz;
  snprintf(name, sizeof name, "%s.quant", base);
  int32_t qn = mi_graph_add_node(g, "QuantizeLinear", name, 3, ins, 1, &tq);
  if (qn < 0) goto oom;
  ins[0] = tq;
  snprintf(name, sizeof name, "%s.dequant", base);
  if (mi_graph_add_node(g, "DequantizeLinear", name, 3, ins, 1, &td) < 0) goto oom;
  /* Every reader, not only the quantized layers, sees the value the device holds. */
  if (td != t) mi__xf_replace_uses(g, t, td, qn);
  return MI_OK;
oom:
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "quantize: activation '%s': out of memory",
                   g->tensors[t].name);
}
