/* qdq_weight.c - weight-only quantization: a float MatMul / Gemm whose B is the DequantizeLinear of
 * constant 8-bit codes, as one kernel with that DequantizeLinear (docs/abi.md, "Weight-only
 * quantized MatMul"). Exports keep such weights as codes (ONNX Runtime's weight-only quantizer,
 * Moonshine's 288 x 32768 UINT8 decoder head; its 4-bit MatMulNBits and opset 21's INT4, which
 * arrive here as codes unpacked to a byte with blocked scales); folded, a one-row product reads
 * four (eight) times the bytes of the codes, and the session holds the float copy besides. */
#include <string.h>

#include "exec/exec.h"
#include "exec/plan_match.h"
#include "graph/graph.h"

/* Constant INT8/UINT8 (or packed INT4) codes behind DequantizeLinear d: scale (and zero point) constants, one
 * value or one per index of an axis (the device checks which axis it takes). */
static int const_codes(const mi_graph_t *g, mi_array_t *const *consts, int32_t d) {
  const mi_node_t *n = &g->nodes[d];
  int32_t q = n->input_count > 0 ? n->inputs[0] : -1, s = n->input_count > 1 ? n->inputs[1] : -1;
  int32_t z = n->input_count > 2 ? n->inputs[2] : -1;
  if (q < 0 || s < 0 || !consts[q] || !consts[s] || (z >= 0 && !consts[z]) || n->output_count != 1 ||
      n->outputs[0] < 0 || consts[n->outputs[0]])
    return 0;
  if (consts[q]->dtype != MI_DTYPE_UINT8 && consts[q]->dtype != MI_DTYPE_INT8 && consts[q]->dtype != MI_DTYPE_INT4)
    return 0;
  if (consts[s]->dtype != MI_DTYPE_FLOAT32 || (z >= 0 && consts[z]->dtype != consts[q]->dtype)) return 0;
  return consts[q]->rank == 2;
}

int mi__qdq_weight_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                         mi__unit_t *u) {
  const mi_node_t *m = &g->nodes[n];
  int gemm = mi__graph_is_op(g, n, "Gemm");
  int32_t b, d, y;
  if (!(gemm || mi__graph_is_op(g, n, "MatMul")) || p->role[n] != MI__ROLE_NODE || (p->pinned && p->pinned[n]) ||
      m->input_count < 2 || m->output_count != 1 || (y = m->outputs[0]) < 0 || consts[y] || m->inputs[0] < 0 ||
      consts[m->inputs[0]] || g->tensors[m->inputs[0]].dtype != MI_DTYPE_FLOAT32 || (b = m->inputs[1]) < 0 ||
      m->inputs[0] == b)
    return 0;
  /* a Gemm's C, where it has one, stays a constant the kernel reads (its bias) */
  if (gemm && m->input_count > 2 && m->inputs[2] >= 0 && !consts[m->inputs[2]]) return 0;
  d = g->tensors[b].producer;
  if (d < 0 || !mi__graph_is_op(g, d, "DequantizeLinear") || p->role[d] != MI__ROLE_NODE ||
      (p->pinned && p->pinned[d]) || mi__graph_is_output(g, b) || mi__plan_live_reader(g, p, b) != n ||
      !const_codes(g, consts, d))
    return 0;
  memset(u, 0, sizeof *u);
  u->nodes[u->count++] = d;
  u->nodes[u->count++] = n;
  u->at = n;
  u->op = n; /* the anchor: its choice describes the kernel, and the step and its time are its */
  u->dqx = u->dqw = u->act = u->q = -1;
  return 1;
}
