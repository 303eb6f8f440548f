/* sm_fold.c - a float Softmax over the last axis with the elementwise nodes that alone feed it:
 * attention's `Div(scores, sqrt(d))` or `Mul` by a constant scalar and the `Add`s of its masks
 * (key padding [B, 1, 1, T], causal [S, T], a bias [B, H, S, T]) as one kernel, so the device
 * reads the B x H x S x T scores once and writes the probabilities, instead of one pass per node
 * (ONNX Runtime's attention kernels add the mask inside their softmax too). */
#include <string.h>

#include "exec/exec.h"
#include "exec/plan_match.h"
#include "graph/graph.h"

/* Node n is `op` of the default domain with one output. */
static int is_op(const mi_graph_t *g, int32_t n, const char *op) {
  return mi__graph_is_op(g, n, op) && g->nodes[n].output_count == 1;
}

/* A runtime FLOAT32 tensor. */
static int runtime_f32(const mi_graph_t *g, mi_array_t *const *consts, int32_t t) {
  return t >= 0 && !consts[t] && g->tensors[t].dtype == MI_DTYPE_FLOAT32;
}

/* The operand of member m that carries the chain's value (the scores), else -1: a Mul by a
 * constant FLOAT32 scalar (either side), a Div by one (the divisor), or an Add whose other
 * operand is a FLOAT32 of any shape that broadcasts to it (the device checks the shapes). An Add
 * of two runtime values of the sum's shape continues through its first operand, as exports write
 * `scores + mask`. */
static int32_t chain_operand(const mi_graph_t *g, mi_array_t *const *consts, int32_t m) {
  const mi_node_t *n = &g->nodes[m];
  int32_t a, b, y = n->outputs[0];
  if (n->input_count != 2 || (a = n->inputs[0]) < 0 || (b = n->inputs[1]) < 0 || a == b) return -1;
  if (is_op(g, m, "Mul") || is_op(g, m, "Div")) {
    double c1 = mi__plan_const_scalar(g, consts, m, 1);
    if (c1 == c1 && runtime_f32(g, consts, a)) return a;
    if (is_op(g, m, "Mul") && mi__plan_const_scalar(g, consts, m, 0) == mi__plan_const_scalar(g, consts, m, 0) &&
        runtime_f32(g, consts, b))
      return b;
    return -1;
  }
  if (!is_op(g, m, "Add") || g->tensors[b].dtype != MI_DTYPE_FLOAT32 || g->tensors[a].dtype != MI_DTYPE_FLOAT32)
    return -1;
  /* the chain's operand has the sum's shape; the mask may broadcast. Of two such operands, the
   * first, unless only the second is made by a node (a bias given as a graph input, added first). */
  int fa = runtime_f32(g, consts, a) && (mi__plan_same_dims(&g->tensors[a], &g->tensors[y]) || g->tensors[y].rank < 0);
  int fb = runtime_f32(g, consts, b) && mi__plan_same_dims(&g->tensors[b], &g->tensors[y]);
  if (fa && fb && g->tensors[a].producer < 0 && g->tensors[b].producer >= 0) return b;
  if (fa) return a;
  return fb ? b : -1;
}

int mi__sm_fold_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                      mi__unit_t *u) {
  const mi_node_t *s = &g->nodes[n];
  int32_t t, reader = n, i, j, rank;
  int64_t axis;
  if (!is_op(g, n, "Softmax") || p->role[n] != MI__ROLE_NODE || (p->pinned && p->pinned[n]) || s->input_count != 1 ||
      s->outputs[0] < 0 || consts[s->outputs[0]] || !runtime_f32(g, consts, s->inputs[0]))
    return 0;
  /* the last axis only: each row a contiguous run the kernel finishes before the next */
  rank = g->tensors[s->inputs[0]].rank;
  axis = mi_node_attr_int(s, "axis", g->opset >= 13 ? -1 : 1);
  if (axis != -1 && !(rank > 0 && axis == rank - 1)) return 0;
  memset(u, 0, sizeof *u);
  for (t = s->inputs[0];;) {
    int32_t pr = g->tensors[t].producer, next;
    if (pr < 0 || p->role[pr] != MI__ROLE_NODE || (p->pinned && p->pinned[pr]) || mi__plan_live_reader(g, p, t) != reader ||
        u->count >= MI__UNIT_MAX - 1 || (next = chain_operand(g, consts, pr)) < 0)
      break;
    u->nodes[u->count++] = pr;
    reader = pr;
    t = next;
  }
  if (u->count == 0) return 0;
  /* members in node order (the walk found them last first), the Softmax last */
  for (i = 0, j = u->count - 1; i < j; i++, j--) {
    int32_t x = u->nodes[i];
    u->nodes[i] = u->nodes[j];
    u->nodes[j] = x;
  }
  u->nodes[u->count++] = n;
  u->at = n;
  u->op = n;
  u->dqx = u->dqw = u->act = u->q = -1;
  /* The members' outside inputs (the masks) are made before the members, so before n, unless
   * their producer runs inside a unit placed after n. */
  for (i = 0; i < u->count; i++)
    for (j = 0; j < g->nodes[u->nodes[i]].input_count; j++) {
      int32_t in = g->nodes[u->nodes[i]].inputs[j], pr = in >= 0 ? g->tensors[in].producer : -1;
      if (pr >= 0 && p->role[pr] == MI__ROLE_MEMBER && p->unit[pr] >= 0 && p->units[p->unit[pr]].at > n) return 0;
    }
  return 1;
}
