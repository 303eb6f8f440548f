/* qop.c - mi-quantize's QOperator rewrite (quantize_static, QuantFormat.QOperator): each
 * DequantizeLinear -> op -> QuantizeLinear of the QDQ form fused into the op ONNX Runtime's
 * quantizer writes for it (QLinearConv, QLinearMatMul, and com.microsoft QLinearAdd / Mul /
 * GlobalAveragePool / AveragePool / Sigmoid / LeakyRelu / Softmax / Concat / Where and QGemm;
 * MaxPool and nearest Resize stay themselves, on the codes), then the Q/DQ nodes left unread
 * dropped. */
#include <stdlib.h>
#include <string.h>

#include "mi_quantize.h"

/* Removes attribute `name` of node n (QGemm has no beta). */
static void drop_attr(mi_node_t *n, const char *name) {
  for (int32_t a = 0; a < n->attr_count; a++)
    if (strcmp(n->attrs[a].name, name) == 0) {
      free((char *)n->attrs[a].name);
      memmove(&n->attrs[a], &n->attrs[a + 1], sizeof n->attrs[0] * (size_t)(n->attr_count - a - 1));
      n->attr_count--;
      return;
    }
}

/* The DequantizeLinear producing tensor t, or NULL. */
static const mi_node_t *dq_of(const mi_graph_t *g, int32_t t) {
  int32_t p = t >= 0 ? g->tensors[t].producer : -1;
  return p >= 0 && !strcmp(g->nodes[p].op_type, "DequantizeLinear") ? &g->nodes[p] : NULL;
}

/* Appends DQ d's (codes, scale, zero point) to ins at *k. */
static void triple(const mi_node_t *d, int32_t *ins, int32_t *k) {
  ins[(*k)++] = d->inputs[0];
  ins[(*k)++] = d->inputs[1];
  ins[(*k)++] = d->input_count > 2 ? d->inputs[2] : -1;
}

/* The QOperator rewrite of node i whose quantized inputs come from DequantizeLinear nodes and
 * whose output alone feeds a QuantizeLinear; 1 when rewritten (the Q is then marked in drop),
 * 0 when the node keeps its float form, -1 out of memory. */
static int32_t to_qop(mi_graph_t *g, int32_t i, uint8_t *drop) {
  mi_node_t *n = &g->nodes[i];
  const char *op = n->op_type;
  int32_t q = -1, k = 0, nin = n->input_count;
  if (!mq_op_takes(g, n)) return 0;
  if (mq_readers(g, n->outputs[0], &q) != 1 || strcmp(g->nodes[q].op_type, "QuantizeLinear")) return 0;
  int conv = !strcmp(op, "Conv"), gemm = !strcmp(op, "Gemm"), where = !strcmp(op, "Where");
  int concat = !strcmp(op, "Concat"), biased = (conv || gemm) && nin > 2 && n->inputs[2] >= 0;
  int32_t nq = conv || gemm || !strcmp(op, "MatMul") || !strcmp(op, "Add") || !strcmp(op, "Mul") ? 2 : concat ? nin
                                                                                                              : 1;
  const mi_node_t *d[64];
  if (nq > 64) return 0;
  for (int32_t j = 0; j < nq; j++)
    if (!(d[j] = dq_of(g, n->inputs[where ? j + 1 : j]))) return 0;
  const mi_node_t *bd = biased ? dq_of(g, n->inputs[2]) : NULL;
  if (biased && !bd) return 0;
  if (where && !dq_of(g, n->inputs[2])) return 0;
  const mi_node_t *qn = &g->nodes[q];
  int32_t *ins = malloc(sizeof *ins * (size_t)(3 * nq + 8)), ys = qn->inputs[1], yz = qn->inputs[2], y = qn->outputs[0];
  if (!ins) return -1;
  const char *nop = NULL;
  int direct = mq_direct8(n);
  if (direct) { /* the op itself on the codes: the Q after it has the DQ's parameters (mq_qdq) */
    ins[k++] = d[0]->inputs[0];
    for (int32_t j = 1; j < nin; j++) ins[k++] = n->inputs[j];
    nop = op;
  } else if (concat) {
    ins[k++] = ys;
    ins[k++] = yz;
    for (int32_t j = 0; j < nq; j++) triple(d[j], ins, &k);
    nop = "QLinearConcat";
  } else if (where) {
    ins[k++] = n->inputs[0];
    triple(d[0], ins, &k);
    triple(dq_of(g, n->inputs[2]), ins, &k);
    ins[k++] = ys;
    ins[k++] = yz;
    nop = "QLinearWhere";
  } else if (gemm) {
    triple(d[0], ins, &k);
    triple(d[1], ins, &k);
    ins[k++] = bd ? bd->inputs[0] : -1;
    ins[k++] = ys;
    ins[k++] = yz;
    nop = "QGemm";
  } else {
    for (int32_t j = 0; j < nq; j++) triple(d[j], ins, &k);
    ins[k++] = ys;
    ins[k++] = yz;
    if (conv && bd) ins[k++] = bd->inputs[0]; /* QLinearConv's bias: the INT32 codes themselves */
    static const char *const names[][2] = {{"Conv", "QLinearConv"},
                                           {"MatMul", "QLinearMatMul"},
                                           {"Add", "QLinearAdd"},
                                           {"Mul", "QLinearMul"},
                                           {"GlobalAveragePool", "QLinearGlobalAveragePool"},
                                           {"AveragePool", "QLinearAveragePool"},
                                           {"Sigmoid", "QLinearSigmoid"},
                                           {"LeakyRelu", "QLinearLeakyRelu"},
                                           {"Softmax", "QLinearSoftmax"}};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++)
      if (!strcmp(op, names[t][0])) nop = names[t][1];
  }
  int is_softmax = !strcmp(op, "Softmax");
  int32_t t = n->outputs[0], dq = -1;
  if (mq_is_output(g, t)) { /* a graph output: the DQ after the Q writes it (as ONNX Runtime's) */
    for (int32_t j = 0; j < g->node_count; j++)
      if (!strcmp(g->nodes[j].op_type, "DequantizeLinear") && g->nodes[j].inputs[0] == qn->outputs[0]) dq = j;
    if (dq < 0) {
      free(ins);
      return 0;
    }
  }
  int std_domain = conv || !strcmp(op, "MatMul") || direct;
  int32_t rc = nop ? mq_set_node(g, i, nop, k, ins, y, std_domain ? NULL : "com.microsoft") : 0;
  free(ins);
  if (!nop) return 0;
  if (rc) return -1;
  if (gemm) drop_attr(&g->nodes[i], "beta");
  if (dq >= 0) {
    int32_t old = g->nodes[dq].outputs[0];
    for (int32_t j = 0; j < g->node_count; j++)
      for (int32_t m = 0; m < g->nodes[j].input_count; m++)
        if (g->nodes[j].inputs[m] == old) g->nodes[j].inputs[m] = t;
    g->nodes[dq].outputs[0] = t;
    g->tensors[t].producer = dq;
  }
  /* QLinearSoftmax reads axis by the Softmax opset it replaces (2-D flattening before 13). */
  if (is_softmax && mi_node_set_int(g, i, "opset", g->opset) != MI_OK) return -1;
  drop[q] = 1;
  return 1;
}

int32_t mq_qop(mi_graph_t *g, mi_error_t *err) {
  uint8_t *drop = calloc((size_t)g->node_count + 1, 1);
  if (!drop) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < g->node_count; i++)
    if (to_qop(g, i, drop) < 0) {
      free(drop);
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    }
  for (int changed = 1; changed;) {
    changed = 0;
    for (int32_t i = 0; i < g->node_count; i++) {
      int32_t y = g->nodes[i].outputs[0];
      if (drop[i] || (strcmp(g->nodes[i].op_type, "DequantizeLinear") && strcmp(g->nodes[i].op_type, "QuantizeLinear")))
        continue;
      int32_t live = 0;
      for (int32_t k = 0; k < g->node_count; k++)
        for (int32_t j = 0; !drop[k] && j < g->nodes[k].input_count; j++) live += g->nodes[k].inputs[j] == y;
      if (!live && !mq_is_output(g, y)) drop[i] = 1, changed = 1;
    }
  }
  int32_t rc = mi_graph_remove_nodes(g, drop, err);
  free(drop);
  return rc == MI_OK ? mi_graph_toposort(g, err) : rc;
}
