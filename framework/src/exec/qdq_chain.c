/* qdq_chain.c - quantized elementwise chains: DequantizeLinear(x_q) -> elementwise float ops
 * whose other operands are constants -> QuantizeLinear -> y_q. What QDQ exports put between two
 * quantized layers (LeakyRelu and a clamp, hard-swish written out, per-channel scale and shift,
 * HardSigmoid) computes one function of each input code, per channel at most, so a device can
 * run the whole chain as a table lookup on the codes instead of dequantizing, running each float
 * op over memory and quantizing again (docs/abi.md, "Quantized elementwise chains"). Offered as
 * one kernel only to a device whose DequantizeLinear variants declare MI_FUSE_ACT; refused, its
 * nodes run one by one as before. A MaxPool may end the chain, right before its Q: quantization
 * never decreases, so the Q of a window's maximum is the maximum of its codes, and the device
 * pools the codes the table wrote (the window shrinks the shape; the device checks the rest).
 * A Concat of the chain's value with constants may come last (after such a MaxPool, if any):
 * quantizing is elementwise, so Q(Concat(v, c)) is Concat(Q(v), Q(c)), the constants' codes
 * fixed at prepare (the zero channels a residual branch widens its channels with). A Pad may
 * come last instead (no MaxPool or Concat with it), for the same reason: Q(Pad(v, c)) is
 * Pad(Q(v), Q(c)) (the explicit zero padding of a stride-2 depthwise conv in TF exports). */
#include <string.h>

#include "exec/exec.h"
#include "graph/graph.h"

static int plain_op(const mi_graph_t *g, int32_t n, const char *op) {
  return strcmp(g->nodes[n].op_type, op) == 0 && !(g->nodes[n].domain && g->nodes[n].domain[0]);
}

/* Elementwise float ops a chain may hold (the device decides which operand shapes it takes). */
static int chain_op(const mi_graph_t *g, int32_t n) {
  static const char *const ops[] = {"Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid",
                                    "Tanh", "Neg", "Abs", "Clip", "Add",
                                    "Sub", "Mul", "Div", "Max", "Min",
                                    "MaxPool", "Concat", "Pad"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (plain_op(g, n, ops[i])) return g->nodes[n].output_count == 1;
  return 0;
}

static int member(const mi__unit_t *u, int32_t n) {
  for (int32_t i = 0; i < u->count; i++)
    if (u->nodes[i] == n) return 1;
  return 0;
}

/* The lowered unit (kind 1, alone or inside a QDQ block) whose op is node n, or NULL. */
static const mi__unit_t *lowered_of(const mi__plan_t *p, int32_t n) {
  const mi__unit_t *u = p->unit[n] >= 0 ? &p->units[p->unit[n]] : NULL;
  if (u && u->kind == 2)
    for (int32_t k = 0; k < u->sub_count; k++)
      if (p->units[u->sub[k]].op == n) return &p->units[u->sub[k]];
  return u && u->kind == 1 && u->op == n ? u : NULL;
}

/* Node i reads DequantizeLinear dq's value as a live lowered layer: it reads dq's codes. */
static int code_reader(const mi__plan_t *p, int32_t i, int32_t dq) {
  const mi__unit_t *l = lowered_of(p, i);
  return l && !l->dead && (l->dqx == dq || l->dqw == dq);
}

int mi__qdq_chain_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t dq,
                        mi__unit_t *u) {
  const int8_t *role = p->role;
  const mi_node_t *d = &g->nodes[dq];
  int32_t q = -1, xq;
  memset(u, 0, sizeof *u);
  if (!plain_op(g, dq, "DequantizeLinear") || role[dq] != MI__ROLE_NODE || d->input_count < 2 ||
      d->output_count != 1 || d->outputs[0] < 0 || (xq = d->inputs[0]) < 0 || consts[xq])
    return 0;
  if (g->tensors[xq].dtype != MI_DTYPE_UINT8 && g->tensors[xq].dtype != MI_DTYPE_INT8) return 0;
  u->nodes[u->count++] = dq;
  /* Grow the set of nodes that read only the chain's values and constants, in node order (the
   * graph is topologically sorted, so one pass past dq sees every producer before its readers). */
  for (int32_t i = dq + 1; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int reads = 0, outside = 0, past_dq = 0;
    for (int32_t j = 0; j < n->input_count; j++) {
      int32_t t = n->inputs[j], pr = t >= 0 ? g->tensors[t].producer : -1;
      if (t < 0 || consts[t]) continue;
      if (pr >= 0 && member(u, pr)) reads = 1, past_dq |= pr != dq;
      else
        outside = 1;
    }
    if (!reads) continue;
    /* A lowered layer reads the codes the chain reads, wherever it runs (prepare.c runs the DQ
     * apart for it when the device refuses it). */
    if (!past_dq && code_reader(p, i, dq)) continue;
    /* A reader of the dequantized input alone that is no part of the chain: the kernel writes
     * that value too, so the reader must come after the kernel (the chain's Q). */
    if (!past_dq && (outside || !chain_op(g, i) || q >= 0)) {
      if (q < 0 || mi__graph_is_output(g, d->outputs[0])) return 0;
      continue;
    }
    if (plain_op(g, i, "QuantizeLinear")) {
      if (q >= 0 || outside || n->inputs[0] < 0 || g->tensors[n->inputs[0]].producer < 0) return 0;
      q = i;
      continue;
    }
    /* A reader that is no chain op, or mixes in another runtime value: not one code's function. */
    if (outside || !chain_op(g, i) || role[i] != MI__ROLE_NODE || u->count >= MI__UNIT_MAX - 1 ||
        consts[n->outputs[0]])
      return 0;
    u->nodes[u->count++] = i;
  }
  if (q < 0 || role[q] != MI__ROLE_NODE || g->nodes[q].output_count != 1) return 0;
  /* A Concat or a Pad only as the value the Q reads; a MaxPool as that value or the Concat's
   * operand. */
  for (int32_t m = 1; m < u->count; m++) {
    int32_t t = g->nodes[u->nodes[m]].outputs[0], qin = g->nodes[q].inputs[0];
    int32_t last = u->nodes[u->count - 1];
    if ((plain_op(g, u->nodes[m], "Concat") || plain_op(g, u->nodes[m], "Pad")) && t != qin) return 0;
    if (plain_op(g, u->nodes[m], "MaxPool") && t != qin &&
        !(plain_op(g, last, "Concat") && g->nodes[last].outputs[0] == qin && m == u->count - 2 &&
          mi__plan_sole_reader(g, p, t) == last))
      return 0;
  }
  /* Every value of the chain stays inside: read by members only (the last by the Q alone). */
  for (int32_t m = 0; m < u->count; m++) {
    int32_t t = g->nodes[u->nodes[m]].outputs[0];
    if (u->nodes[m] > q || mi__graph_is_output(g, t)) return 0;
    for (int32_t i = 0; i < g->node_count; i++)
      for (int32_t j = 0; j < g->nodes[i].input_count; j++)
        if (g->nodes[i].inputs[j] == t && !member(u, i) && i != q && !(m == 0 && (i > q || code_reader(p, i, dq))))
          return 0;
    if (t == g->nodes[q].inputs[0])
      for (int32_t i = 0; i < g->node_count; i++)
        for (int32_t j = 0; j < g->nodes[i].input_count; j++)
          if (g->nodes[i].inputs[j] == t && i != q) return 0;
  }
  u->nodes[u->count++] = q;
  u->kind = 0;
  u->op = dq;
  u->at = q;
  u->dqx = u->dqw = u->act = u->q = -1;
  return 1;
}

int32_t mi__qdq_chain_code_readers(const mi__plan_t *p, const mi_graph_t *g, const mi__unit_t *u, int32_t *out,
                                   int32_t cap) {
  int32_t n = 0, dq = u->op, t;
  if (u->kind != 0 || u->dead || !plain_op(g, dq, "DequantizeLinear") || (t = g->nodes[dq].outputs[0]) < 0 ||
      mi__graph_is_output(g, t))
    return 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    if (member(u, i)) continue;
    for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
      if (g->nodes[i].inputs[j] != t) continue;
      /* a reader that needs the float value, unless a step of its own computes it already */
      if ((u->dq_state != 2 && !code_reader(p, i, dq)) || n >= cap) return 0;
      out[n++] = i;
      break;
    }
  }
  return n;
}

int mi__qdq_chain_dq_apart(mi__plan_t *p, int32_t dq, int32_t at) {
  mi__unit_t *u = p->unit[dq] >= 0 ? &p->units[p->unit[dq]] : NULL;
  if (!u || u->kind != 0 || u->op != dq || u->dead || u->dq_state == 2) return 0;
  if (u->at < at && u->dq_state != 1) return 0; /* prepared already, writing the value */
  u->dq_state = 2;
  return 1;
}
