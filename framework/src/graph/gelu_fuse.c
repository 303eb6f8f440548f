/* gelu_fuse.c - the exact (erf) Gelu spelled out in elementwise ops becomes one Gelu node (what
 * ONNX Runtime's default GeluFusion does). Exports before opset 20 write 0.5 * x * (1 + erf(x /
 * sqrt(2))) as Div (or Mul by 1 / sqrt(2)), Erf, Add, Mul, Mul: five steps over a transformer
 * MLP's widest activation (Moonshine's encoder: 207 x 1152 values, five passes over 1 MB); the
 * Gelu kernel makes one, and a float MatMul's tiles may take it as their activation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

/* An ONNX op of one output. */
static int is_op(const mi_graph_t *g, int32_t n, const char *op) {
  return mi__graph_is_op(g, n, op) && g->nodes[n].output_count == 1;
}

/* 1 when t is a constant float32 scalar (any rank, one element) within rel of want. */
static int const_near(const mi_graph_t *g, int32_t t, double want, double rel) {
  float v;
  if (t < 0 || !g->tensors[t].data || g->tensors[t].dtype != MI_DTYPE_FLOAT32 ||
      g->tensors[t].nbytes != sizeof(float))
    return 0;
  memcpy(&v, g->tensors[t].data, sizeof v);
  return fabs((double)v - want) <= rel * want;
}

/* The operand of two-input node n that is not tensor t, or -1 when n does not read t once. */
static int32_t other_operand(const mi_graph_t *g, int32_t n, int32_t t) {
  const mi_node_t *p = &g->nodes[n];
  if (p->input_count != 2) return -1;
  if (p->inputs[0] == t && p->inputs[1] != t) return p->inputs[1];
  if (p->inputs[1] == t && p->inputs[0] != t) return p->inputs[0];
  return -1;
}

/* Matches the Gelu around Erf node e: *x its input, *last the Mul whose output is Gelu(x). The
 * products may come in any of the orders exporters write: (x * u) * 0.5, (x * 0.5) * u and
 * x * (u * 0.5), with u = 1 + erf(x / sqrt(2)); every intermediate is read inside the pattern
 * only. */
static int match_at_erf(const mi_graph_t *g, int32_t e, int32_t *x, int32_t *last) {
  int32_t d, a, m, t, u, h;
  if (!is_op(g, e, "Erf") || g->nodes[e].input_count != 1) return 0;
  d = mi__graph_producer(g, g->nodes[e].inputs[0]);
  if (mi__graph_sole_reader(g, g->nodes[e].inputs[0]) != e) return 0;
  if (is_op(g, d, "Div") && g->nodes[d].input_count == 2 &&
      const_near(g, g->nodes[d].inputs[1], 1.4142135623730951, 1e-6))
    *x = g->nodes[d].inputs[0];
  else if (is_op(g, d, "Mul") && g->nodes[d].input_count == 2 &&
           const_near(g, g->nodes[d].inputs[1], 0.7071067811865476, 1e-6))
    *x = g->nodes[d].inputs[0];
  else if (is_op(g, d, "Mul") && g->nodes[d].input_count == 2 &&
           const_near(g, g->nodes[d].inputs[0], 0.7071067811865476, 1e-6))
    *x = g->nodes[d].inputs[1];
  else
    return 0;
  if (*x < 0 || g->tensors[*x].dtype != MI_DTYPE_FLOAT32) return 0;
  a = mi__graph_sole_reader(g, g->nodes[e].outputs[0]);
  if (!is_op(g, a, "Add") || !const_near(g, other_operand(g, a, g->nodes[e].outputs[0]), 1.0, 0))
    return 0;
  u = g->nodes[a].outputs[0];
  m = mi__graph_sole_reader(g, u);
  if (!is_op(g, m, "Mul")) return 0;
  t = other_operand(g, m, u);
  if (t == *x) { /* (x * u) * 0.5 */
    h = mi__graph_sole_reader(g, g->nodes[m].outputs[0]);
    if (!is_op(g, h, "Mul") || !const_near(g, other_operand(g, h, g->nodes[m].outputs[0]), 0.5, 0))
      return 0;
    *last = h;
    return 1;
  }
  if (const_near(g, t, 0.5, 0)) { /* x * (u * 0.5) */
    h = mi__graph_sole_reader(g, g->nodes[m].outputs[0]);
    if (!is_op(g, h, "Mul") || other_operand(g, h, g->nodes[m].outputs[0]) != *x) return 0;
    *last = h;
    return 1;
  }
  /* (x * 0.5) * u */
  h = mi__graph_producer(g, t);
  if (!is_op(g, h, "Mul") || mi__graph_sole_reader(g, t) != m ||
      !const_near(g, other_operand(g, h, *x), 0.5, 0))
    return 0;
  *last = m;
  return 1;
}

int mi__graph_gelu_fusable(const mi_graph_t *g) {
  int32_t x, last;
  for (int32_t i = 0; g && i < g->node_count; i++)
    if (match_at_erf(g, i, &x, &last)) return 1;
  return 0;
}

int32_t mi__graph_fuse_gelus(mi_graph_t *g) {
  int32_t fused = 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    int32_t x, last;
    mi_node_t *n;
    char *op;
    if (!match_at_erf(g, i, &x, &last)) continue;
    /* The other nodes keep their outputs, read by nobody now: the session skips them. */
    n = &g->nodes[last];
    if (mi__node_own_strings(n) || !(op = mi__strdup("Gelu"))) return -MI_ERR_OUT_OF_MEMORY;
    free(n->op_type);
    n->op_type = op;
    n->inputs[0] = x;
    n->input_count = 1;
    for (int32_t k = 0; k < n->attr_count; k++) mi__attr_release(&n->attrs[k]);
    n->attr_count = 0;
    fused++;
  }
  return fused;
}
