/* plan_int.c - the float tails ONNX Runtime's dynamic quantization writes after ConvInteger and
 * MatMulInteger (Cast, the scale, bias, residual, activations, the next DynamicQuantizeLinear),
 * matched as one unit for a device whose integer kernels declare the fuse bits (docs/abi.md,
 * "Fused groups and quantized kernels"). */
#include <math.h>
#include <string.h>

#include "exec/plan_match.h"
#include "graph/graph.h"

/* 1 when every input of unit u's nodes from outside the unit is ready when its kernel runs at
 * u->at: produced before it, or a constant (a folded one, a Pad's pads). */
static int inputs_ready(const mi_graph_t *g, mi_array_t *const *consts, const mi__unit_t *u) {
  for (int32_t k = 1; k < u->count; k++)
    for (int32_t j = 0; j < g->nodes[u->nodes[k]].input_count; j++) {
      int32_t t = g->nodes[u->nodes[k]].inputs[j], pr = t >= 0 ? g->tensors[t].producer : -1, inside = 0;
      for (int32_t i = 0; i < u->count; i++) inside |= u->nodes[i] == pr;
      if (pr > u->at && !inside && !consts[t]) return 0;
    }
  return 1;
}

/* The DynamicQuantizeLinear that quantizes float value `cur` for the next integer layer, or -1:
 * it joins the unit that writes cur (whose kernel can take the range while writing, one pass
 * over the floats less); cur may have other readers, before it too: the unit then runs where cur
 * is written (its only input is cur, and its outputs' readers all come after it), not at the
 * DynamicQuantizeLinear's place (a residual read by the next block before its quantize). */
int32_t mi__plan_tail_dynq(const mi_graph_t *g, const mi__plan_t *p, int32_t cur) {
  for (int32_t d = 0; d < g->node_count; d++)
    if (g->nodes[d].input_count >= 1 && g->nodes[d].inputs[0] == cur && mi__graph_is_op(g, d, "DynamicQuantizeLinear") &&
        p->role[d] == MI__ROLE_NODE && !(p->pinned && p->pinned[d]) && g->nodes[d].output_count == 3)
      return d;
  return -1;
}

/* The float tail ONNX Runtime's dynamic quantization writes after an integer conv: ConvInteger ->
 * Cast(FLOAT) -> Mul by one scale (the input's runtime scale times the weight's) [-> Add of a
 * constant bias] [-> Relu], as unit *u, for a device whose ConvInteger declares MI_FUSE_BIAS (the
 * int32 sums scaled, biased and clamped in its output stage, the same float operations in the
 * same order); a residual Add of a runtime tensor of the output's shape may come before the Relu,
 * or after it (a U-Net RSU block's relu(conv) + shortcut: the sum written in the output stage, not
 * a pass of its own over the plane, the conv's output and the shortcut), and with MI_FUSE_ACT a
 * hard-swish written out (x * clip(x + 3, 0, 6) / 6), then up to two of LeakyRelu, Relu, Clip and
 * constant Max / Min, then the DynamicQuantizeLinear reading the result first (tail_dynq) may end
 * it. 0 when the chain is not there. */
int mi__plan_int_tail(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                      int hswish, int pad, mi__unit_t *u) {
  static const char *const ops[] = {"Cast", "Mul", "Add", "Add", "Relu", "Add"};
  int32_t cur = g->nodes[n].outputs[0], res = 0, relu = 0;
  memset(u, 0, sizeof *u);
  u->nodes[u->count++] = n;
  for (int k = 0; k < 6 && cur >= 0 && !mi__graph_is_output(g, cur); k++) {
    int32_t r = mi__plan_sole_reader(g, p, cur), other;
    const mi_node_t *m = r >= 0 ? &g->nodes[r] : NULL;
    if (!m || !mi__graph_is_op(g, r, ops[k]) || p->role[r] != MI__ROLE_NODE || (p->pinned && p->pinned[r]) ||
        m->output_count != 1 || m->outputs[0] < 0) {
      if (k < 2) return 0; /* the Cast and the scale are the pattern; the bias and Relu optional */
      continue;
    }
    if (k == 0 && mi_node_attr_int(m, "to", 0) != MI_DTYPE_FLOAT32) return 0;
    if (k == 5) { /* a residual after the Relu (a residual block's join), where none came before it */
      other = m->input_count == 2 ? m->inputs[m->inputs[0] == cur ? 1 : 0] : -1;
      if (res || !relu || other < 0 || other == cur || consts[other] ||
          g->tensors[other].dtype != MI_DTYPE_FLOAT32 || !mi__plan_same_dims(&g->tensors[other], &g->tensors[cur]))
        break;
    } else if (k >= 1 && k != 4) {
      if (m->input_count != 2 || (m->inputs[0] != cur && m->inputs[1] != cur)) return 0;
      other = m->inputs[m->inputs[0] == cur ? 1 : 0];
      if (other < 0 || other == cur || g->tensors[other].dtype != MI_DTYPE_FLOAT32) return 0;
      if (k == 2 && !consts[other]) continue; /* a residual Add: not the bias */
      if (k == 3 && (consts[other] || g->tensors[other].rank != g->tensors[cur].rank)) continue;
      res |= k == 3;
      if (k == 1 && g->tensors[other].rank != 0) {
        for (int32_t d = 0; d < g->tensors[other].rank; d++)
          if (g->tensors[other].dims[d] != 1) return 0;
      }
    }
    relu |= k == 4;
    u->nodes[u->count++] = r;
    cur = m->outputs[0];
  }
  if (u->count < 3) return 0;
  /* with MI_FUSE_ACT: x * a [+ b] by constant scalars (paddle's learnable affine block), then the
   * hard-swish */
  for (int k = 0; k < 2 && hswish && cur >= 0 && !mi__graph_is_output(g, cur) && u->count < MI__UNIT_MAX; k++) {
    int32_t r = mi__plan_sole_reader(g, p, cur);
    const mi_node_t *m = r >= 0 ? &g->nodes[r] : NULL;
    if (!m || !mi__graph_is_op(g, r, k ? "Add" : "Mul") || p->role[r] != MI__ROLE_NODE || (p->pinned && p->pinned[r]) ||
        m->input_count != 2 || m->output_count != 1 || m->outputs[0] < 0 ||
        isnan(mi__plan_const_scalar(g, consts, r, m->inputs[0] == cur ? 1 : 0)))
      continue;
    u->nodes[u->count++] = r;
    cur = m->outputs[0];
  }
  int32_t q[4];
  if (hswish && cur >= 0 && !mi__graph_is_output(g, cur) && u->count + 4 <= MI__UNIT_MAX &&
      mi__plan_match_hswish(g, consts, cur, q) && p->role[q[0]] == MI__ROLE_NODE && p->role[q[1]] == MI__ROLE_NODE &&
      p->role[q[2]] == MI__ROLE_NODE && p->role[q[3]] == MI__ROLE_NODE &&
      !(p->pinned && (p->pinned[q[0]] || p->pinned[q[1]] || p->pinned[q[2]] || p->pinned[q[3]])) &&
      !mi__graph_is_output(g, g->nodes[q[0]].outputs[0]) && !mi__graph_is_output(g, g->nodes[q[1]].outputs[0]) &&
      !mi__graph_is_output(g, g->nodes[q[2]].outputs[0])) {
    for (int k = 0; k < 4; k++) u->nodes[u->count++] = q[k];
    cur = g->nodes[q[3]].outputs[0];
  }
  /* then up to two of LeakyRelu, Relu, Clip and Max / Min against a constant (tf2onnx's LeakyRelu
   * -> Max), which the FP32 conv's epilogue takes too: the dynamic layer stays one kernel */
  for (int k = 0; k < 2 && hswish && cur >= 0 && !mi__graph_is_output(g, cur) && u->count < MI__UNIT_MAX; k++) {
    int32_t r = mi__plan_sole_reader(g, p, cur);
    const mi_node_t *m = r >= 0 ? &g->nodes[r] : NULL;
    if (!m || p->role[r] != MI__ROLE_NODE || (p->pinned && p->pinned[r]) || m->output_count != 1 ||
        m->outputs[0] < 0 || consts[m->outputs[0]] || mi__plan_chain_bit(g, consts, r, cur, 0) != MI_FUSE_ACT ||
        !(mi__graph_is_op(g, r, "LeakyRelu") || mi__graph_is_op(g, r, "Relu") || mi__graph_is_op(g, r, "Clip") || mi__graph_is_op(g, r, "Max") ||
          mi__graph_is_op(g, r, "Min")))
      break;
    u->nodes[u->count++] = r;
    cur = m->outputs[0];
  }
  /* a Pad that only a DynamicQuantizeLinear reads, itself the Pad's only reader (a TF export pads
   * before each stride-2 depthwise conv), where the device's Pad declares MI_FUSE_ACT as for
   * Pad -> DynamicQuantizeLinear: the codes can go straight into the padded plane */
  int32_t r = hswish && pad && cur >= 0 && !mi__graph_is_output(g, cur) && u->count + 2 <= MI__UNIT_MAX
                  ? mi__plan_sole_reader(g, p, cur)
                  : -1;
  if (r >= 0 && mi__graph_is_op(g, r, "Pad") && p->role[r] == MI__ROLE_NODE && !(p->pinned && p->pinned[r]) &&
      g->nodes[r].input_count >= 1 && g->nodes[r].inputs[0] == cur && g->nodes[r].output_count == 1) {
    int32_t y = g->nodes[r].outputs[0], d = y >= 0 && !consts[y] && !mi__graph_is_output(g, y) ? mi__plan_tail_dynq(g, p, y) : -1;
    if (d >= 0 && mi__plan_sole_reader(g, p, y) == d) {
      u->nodes[u->count++] = r;
      u->nodes[u->count++] = d;
      cur = -1;
    }
  }
  int32_t last = u->nodes[u->count - 1]; /* where the floats are written: the unit runs there */
  if (cur < 0) last = u->nodes[u->count - 3];
  if (hswish && cur >= 0 && u->count < MI__UNIT_MAX) {
    r = mi__plan_tail_dynq(g, p, cur);
    if (r >= 0) u->nodes[u->count++] = r;
  }
  u->op = n;
  u->at = last;
  u->dqx = u->dqw = u->act = u->q = -1;
  return inputs_ready(g, consts, u);
}

/* The float tail ONNX Runtime's dynamic quantization writes after an integer MatMul:
 * MatMulInteger -> Cast(FLOAT) -> Mul by one scale [-> Add of a constant bias along the last
 * axis], as unit *u, for a device whose MatMulInteger declares MI_FUSE_BIAS (the int32 sums
 * scaled and biased as they are stored, each operation rounded as the node does); with `act` (its
 * MI_FUSE_ACT) then one activation that alone reads the result (a transformer's Gelu after fc1:
 * applied to each row while it is in cache, not as a pass of its own). 0 when the chain is not
 * there. */
int mi__plan_gemm_int_tail(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n, int act,
                           mi__unit_t *u) {
  int32_t cur = g->nodes[n].outputs[0];
  memset(u, 0, sizeof *u);
  u->nodes[u->count++] = n;
  for (int k = 0; k < 3 && cur >= 0 && !mi__graph_is_output(g, cur); k++) {
    int32_t r = mi__plan_sole_reader(g, p, cur), other;
    const mi_node_t *m = r >= 0 ? &g->nodes[r] : NULL;
    const mi_tensor_t *o, *c = &g->tensors[cur];
    if (!m || !mi__graph_is_op(g, r, k == 0 ? "Cast" : k == 1 ? "Mul"
                                                              : "Add") ||
        p->role[r] != MI__ROLE_NODE ||
        (p->pinned && p->pinned[r]) || m->output_count != 1 || m->outputs[0] < 0) {
      if (k < 2) return 0; /* the Cast and the scale are the pattern; the bias optional */
      break;
    }
    if (k == 0) {
      if (mi_node_attr_int(m, "to", 0) != MI_DTYPE_FLOAT32) return 0;
    } else {
      if (m->input_count != 2 || (m->inputs[0] != cur && m->inputs[1] != cur)) return 0;
      other = m->inputs[m->inputs[0] == cur ? 1 : 0];
      if (other < 0 || other == cur || g->tensors[other].dtype != MI_DTYPE_FLOAT32) return 0;
      o = &g->tensors[other];
      if (k == 1) {
        for (int32_t d = 0; d < o->rank; d++)
          if (o->dims[d] != 1) return 0;
      } else {
        int ok = consts[other] && o->rank >= 1 && o->rank <= c->rank &&
                 (o->dims[o->rank - 1] == c->dims[c->rank - 1] || o->dims[o->rank - 1] == 1);
        for (int32_t d = 0; ok && d + 1 < o->rank; d++) ok = o->dims[d] == 1;
        if (!ok) break;
      }
    }
    u->nodes[u->count++] = r;
    cur = m->outputs[0];
  }
  if (u->count < 3) return 0;
  if (act && cur >= 0 && !mi__graph_is_output(g, cur)) {
    /* a unary activation or a clamp (mi__plan_chain_bit's RELU / ACT), not x * a or x + a; the
     * live reader: a Gelu the session fused from its spelled-out form leaves the pieces that read
     * x unread (graph/gelu_fuse.c) */
    int32_t r = mi__plan_live_reader(g, p, cur);
    uint32_t bit = r >= 0 ? mi__plan_chain_bit(g, consts, r, cur, 0) : 0;
    if ((bit == MI_FUSE_RELU || bit == MI_FUSE_ACT) && p->role[r] == MI__ROLE_NODE && !(p->pinned && p->pinned[r]) &&
        !mi__graph_is_op(g, r, "Mul") && !mi__graph_is_op(g, r, "Add") && u->count < MI__UNIT_MAX)
      u->nodes[u->count++] = r;
  }
  u->op = n;
  u->at = u->nodes[u->count - 1];
  u->dqx = u->dqw = u->act = u->q = -1;
  return inputs_ready(g, consts, u);
}
