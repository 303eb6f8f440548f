/* mm_fold.c - a float MatMul with the Transpose and the Muls by a constant scalar that feed its
 * runtime operands, as one kernel: attention's Q * K^T, where exports write K^T as its own
 * Transpose of the last two axes and the 1/sqrt(d) scale as a Mul on Q, on K^T or on both
 * (ONNX Runtime's MatMulScaleFusion and TransposeMatMul fusion make them one FusedMatMul). The
 * device reads the transposed operand through strides and folds the scales into the product, so
 * neither the transposed copy nor the scaled copies are written. A Mul or Div of the product by a
 * constant scalar (PyTorch writes the scale after Q K^T) folds into the same product, last. */
#include <string.h>

#include "exec/exec.h"
#include "exec/plan_match.h"
#include "graph/graph.h"

/* Node n is `op` of the default domain with one output. */
static int is_op(const mi_graph_t *g, int32_t n, const char *op) {
  return mi__graph_is_op(g, n, op) && g->nodes[n].output_count == 1;
}

/* 1 when t is a constant FLOAT32 of one element. */
static int const_scalar(mi_array_t *const *consts, int32_t t) {
  return t >= 0 && consts[t] && consts[t]->dtype == MI_DTYPE_FLOAT32 && consts[t]->nbytes == sizeof(float);
}

/* The runtime operand of Mul node m whose other operand is a constant scalar, else -1. */
static int32_t scaled_operand(const mi_graph_t *g, mi_array_t *const *consts, int32_t m) {
  const mi_node_t *n = &g->nodes[m];
  if (!is_op(g, m, "Mul") || n->input_count != 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return -1;
  /* the scalar's rank at most the operand's: the product has the operand's shape */
  for (int32_t i = 0; i < 2; i++) {
    int32_t c = n->inputs[i], x = n->inputs[1 - i];
    if (const_scalar(consts, c) && !consts[x] && consts[c]->rank <= g->tensors[x].rank) return x;
  }
  return -1;
}

/* Walks back from operand t of node `reader`: Muls by a constant scalar and, on B (`b`), one
 * Transpose, each read by the node after it alone and running on its own so far, join *u. */
static void walk_operand(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t t,
                         int32_t reader, int b, mi__unit_t *u) {
  int transposes = 0;
  for (;;) {
    int32_t pr = t >= 0 ? g->tensors[t].producer : -1, next;
    if (pr < 0 || p->role[pr] != MI__ROLE_NODE || (p->pinned && p->pinned[pr]) || consts[t] ||
        g->tensors[t].dtype != MI_DTYPE_FLOAT32 || mi__plan_live_reader(g, p, t) != reader || u->count >= MI__UNIT_MAX - 1)
      return;
    if ((next = scaled_operand(g, consts, pr)) < 0) {
      if (!b || transposes || !is_op(g, pr, "Transpose") || g->nodes[pr].input_count != 1) return;
      next = g->nodes[pr].inputs[0];
      transposes++;
    }
    if (next < 0 || consts[next]) return;
    u->nodes[u->count++] = pr;
    reader = pr;
    t = next;
  }
}

int mi__mm_fold_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                      mi__unit_t *u) {
  const mi_node_t *m = &g->nodes[n];
  int32_t i, j;
  if (!is_op(g, n, "MatMul") || p->role[n] != MI__ROLE_NODE || (p->pinned && p->pinned[n]) || m->input_count != 2 ||
      m->inputs[0] < 0 || m->inputs[1] < 0 || m->outputs[0] < 0 || consts[m->outputs[0]] ||
      g->tensors[m->outputs[0]].dtype != MI_DTYPE_FLOAT32 || m->inputs[0] == m->inputs[1])
    return 0;
  memset(u, 0, sizeof *u);
  walk_operand(g, p, consts, m->inputs[0], n, 0, u);
  walk_operand(g, p, consts, m->inputs[1], n, 1, u);
  u->nodes[u->count++] = n;
  /* the scale written after the product, `Div(Q K^T, sqrt(d))` as PyTorch exports it: the Mul or
   * Div by a constant scalar that alone reads it, folded into the same alpha */
  {
    int32_t y = m->outputs[0], r = mi__plan_live_reader(g, p, y);
    if (r >= 0 && p->role[r] == MI__ROLE_NODE && !(p->pinned && p->pinned[r]) && g->nodes[r].output_count == 1 &&
        g->nodes[r].outputs[0] >= 0 && g->tensors[g->nodes[r].outputs[0]].dtype == MI_DTYPE_FLOAT32 &&
        (scaled_operand(g, consts, r) == y ||
         (is_op(g, r, "Div") && g->nodes[r].input_count == 2 && g->nodes[r].inputs[0] == y &&
          const_scalar(consts, g->nodes[r].inputs[1]) && consts[g->nodes[r].inputs[1]]->rank <= g->tensors[y].rank)))
      u->nodes[u->count++] = r;
  }
  if (u->count == 1) return 0;
  /* node order: the graph's is topological, and the kernel runs its members in that order */
  for (i = 1; i < u->count; i++)
    for (j = i; j > 0 && u->nodes[j - 1] > u->nodes[j]; j--) {
      int32_t x = u->nodes[j];
      u->nodes[j] = u->nodes[j - 1];
      u->nodes[j - 1] = x;
    }
  u->at = n;
  u->op = n;
  u->dqx = u->dqw = u->act = u->q = -1;
  /* The members' outside inputs are made before the members, so before n, unless their
   * producer runs inside a unit placed after n. */
  for (i = 0; i < u->count; i++)
    for (j = 0; j < g->nodes[u->nodes[i]].input_count; j++) {
      int32_t t = g->nodes[u->nodes[i]].inputs[j], pr = t >= 0 ? g->tensors[t].producer : -1;
      if (pr >= 0 && p->role[pr] == MI__ROLE_MEMBER && p->unit[pr] >= 0 && p->units[p->unit[pr]].at > n) return 0;
    }
  return 1;
}
