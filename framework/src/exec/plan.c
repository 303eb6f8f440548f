/* plan.c - which graph nodes a session runs as one kernel: fused groups (mi_node_t.group, set
 * by the transform's fusion pass, or found here when the graph carries none), and quantized
 * layers lowered with their Q/DQ nodes when the device computes that op in INT8 (docs/abi.md,
 * "Fused groups and quantized kernels"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/plan_match.h"
#include "graph/graph.h"

#define INT8_BITS (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8))

/* Two tensors of one known shape (a residual that does not broadcast). */
int mi__plan_same_dims(const mi_tensor_t *a, const mi_tensor_t *b) {
  if (a->rank != b->rank) return 0;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d] || a->dims[d] < 0) return 0;
  return 1;
}

const char *mi__variant_for_layout(const mi_variant_desc_t *vars, uint32_t n, const char *op,
                                   int32_t layout) {
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(vars[i].op_type, op, sizeof vars[i].op_type) == 0 &&
        (vars[i].layout_mask & MI_LAYOUT_BIT(layout)))
      return vars[i].id;
  return NULL;
}

static uint32_t fuse_mask(const mi_variant_desc_t *v, uint32_t n, const char *op);

static int int8_variant(const mi_variant_desc_t *vars, uint32_t n, const char *op) {
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(vars[i].op_type, op, sizeof vars[i].op_type) == 0 &&
        (vars[i].dtype_mask & INT8_BITS))
      return 1;
  return 0;
}

int mi__layout_transparent(const mi_graph_t *g, int32_t node, mi_array_t *const *consts) {
  static const char *const ops[] = {
      "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu",
      "Softplus", "Gelu", "Erf", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
      "Ceil", "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Identity", "Dropout",
      "QuantizeLinear", "DequantizeLinear"};
  const mi_node_t *n = &g->nodes[node];
  const mi_tensor_t *ref = NULL;
  int known = 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) known |= strcmp(n->op_type, ops[i]) == 0;
  if (!known || n->output_count < 1 || n->outputs[0] < 0) return 0;
  ref = &g->tensors[n->outputs[0]];
  if (ref->rank != 4) return 0;
  /* Every runtime operand has the output's shape and storage; constants are scalars. */
  for (int32_t j = 0; j < n->input_count + n->output_count; j++) {
    int32_t t = j < n->input_count ? n->inputs[j] : n->outputs[j - n->input_count];
    const mi_tensor_t *x;
    int64_t numel = 1;
    if (t < 0) continue;
    x = &g->tensors[t];
    if (consts[t]) {
      for (int32_t d = 0; d < consts[t]->rank; d++) numel *= consts[t]->dims[d];
      if (numel != 1) return 0;
      continue;
    }
    if (x->rank != 4 || x->layout != ref->layout || x->block != ref->block) return 0;
    /* Padded blocks put pad elements among the data: not a plain run of values. */
    if (x->layout == MI_LAYOUT_NCHWC && (x->block < 1 || x->dims[1] % x->block)) return 0;
    for (int32_t d = 0; d < 4; d++)
      if (x->dims[d] != ref->dims[d]) return 0;
  }
  return 1;
}

/* Clip bound from a constant scalar input; `dflt` when absent, NAN when not constant. */
static double clip_bound(const mi_graph_t *g, mi_array_t *const *consts, int32_t node, int32_t i,
                         double dflt) {
  const mi_node_t *n = &g->nodes[node];
  const mi_array_t *a;
  if (n->input_count <= i || n->inputs[i] < 0) {
    if (n->input_count == 1 && g->opset < 11) { /* attributes before opset 11 */
      return i == 1 ? mi_node_attr_float(n, "min", (float)dflt)
                    : mi_node_attr_float(n, "max", (float)dflt);
    }
    return dflt;
  }
  a = consts[n->inputs[i]];
  return a && a->dtype == MI_DTYPE_FLOAT32 && a->nbytes >= 4 ? (double)*(const float *)a->data : NAN;
}

/* True when quantizing with q's parameters already performs activation `act`: Relu, or
 * Clip(0, hi), is exact when the lowest code means 0 and hi is at or above the top code. */
static int act_implied(const mi_graph_t *g, mi_array_t *const *consts, int32_t act,
                       const mi_tensor_t *yq) {
  int32_t qmin = yq->dtype == MI_DTYPE_UINT8 ? 0 : -128, qmax = yq->dtype == MI_DTYPE_UINT8 ? 255 : 127;
  double hi = INFINITY;
  if (yq->zero_point != qmin || !(yq->scale > 0)) return 0;
  if (mi__graph_is_op(g, act, "Clip")) {
    if (clip_bound(g, consts, act, 1, -INFINITY) != 0.0) return 0;
    hi = clip_bound(g, consts, act, 2, INFINITY);
    return hi / (double)yq->scale >= (double)(qmax - qmin) - 0.49;
  }
  return mi__graph_is_op(g, act, "Relu");
}

/* DequantizeLinear feeding input slot `slot` of node n: its node, or -1. */
static int32_t dq_of(const mi_graph_t *g, int32_t n, int32_t slot) {
  int32_t t = slot < g->nodes[n].input_count ? g->nodes[n].inputs[slot] : -1;
  int32_t p = t >= 0 ? g->tensors[t].producer : -1;
  return p >= 0 && mi__graph_is_op(g, p, "DequantizeLinear") && !mi__graph_is_output(g, t) ? p : -1;
}

/* Runtime 8-bit codes with one scale and zero point in their tensor fields. */
static int runtime_codes(const mi_graph_t *g, mi_array_t *const *consts, int32_t t) {
  return t >= 0 && !consts[t] && g->tensors[t].scale > 0 && g->tensors[t].channel_count == 0 &&
         (g->tensors[t].dtype == MI_DTYPE_UINT8 || g->tensors[t].dtype == MI_DTYPE_INT8);
}

/* Matches DQ(xq) -> op(DQ(wq), bias) [-> Relu/Clip] -> Q(y) around weighted node n, or
 * DQ(aq), DQ(bq) -> Add/Mul [-> Relu/Clip] -> Q(y) of two runtime codes tensors (a residual
 * add in QDQ form: what ONNX Runtime runs as QLinearAdd; here the device computes it on the
 * codes in the unfused float arithmetic, so the result is the same). */
static int match_lowered(const mi_graph_t *g, mi_array_t *const *consts, int32_t n,
                         mi__unit_t *u) {
  const mi_node_t *x = &g->nodes[n];
  int32_t dqx, dqw, y, r, act = -1, q, xq, wq;
  int bin = mi__graph_is_op(g, n, "Add") || mi__graph_is_op(g, n, "Mul");
  if (!(mi__graph_is_op(g, n, "Conv") || mi__graph_is_op(g, n, "Gemm") || mi__graph_is_op(g, n, "MatMul") || bin) ||
      x->output_count != 1 || x->input_count < 2 || x->outputs[0] < 0 || (bin && x->input_count != 2))
    return 0;
  if ((dqx = dq_of(g, n, 0)) < 0 || (dqw = dq_of(g, n, 1)) < 0) return 0;
  xq = g->nodes[dqx].inputs[0];
  wq = g->nodes[dqw].inputs[0];
  if (bin) {
    if (!runtime_codes(g, consts, xq) || !runtime_codes(g, consts, wq)) return 0;
  } else {
    if (xq < 0 || consts[xq] || !(g->tensors[xq].scale > 0) ||
        (g->tensors[xq].dtype != MI_DTYPE_UINT8 && g->tensors[xq].dtype != MI_DTYPE_INT8))
      return 0;
    if (wq < 0 || !consts[wq] || consts[wq]->dtype != MI_DTYPE_INT8 || !(g->tensors[wq].scale > 0))
      return 0;
  }
  if (x->input_count > 2 && x->inputs[2] >= 0 && !consts[x->inputs[2]]) return 0;
  y = x->outputs[0];
  if ((r = mi__graph_sole_reader(g, y)) < 0) return 0;
  if (mi__graph_is_op(g, r, "Relu") || mi__graph_is_op(g, r, "Clip")) {
    act = r;
    if (g->nodes[r].output_count != 1 || g->nodes[r].inputs[0] != y) return 0;
    y = g->nodes[r].outputs[0];
    if (y < 0 || (r = mi__graph_sole_reader(g, y)) < 0) return 0;
  }
  q = r;
  if (!mi__graph_is_op(g, q, "QuantizeLinear") || g->nodes[q].inputs[0] != y ||
      g->nodes[q].output_count != 1 || g->nodes[q].outputs[0] < 0)
    return 0;
  {
    const mi_tensor_t *yq = &g->tensors[g->nodes[q].outputs[0]];
    if (!(yq->scale > 0) || (yq->dtype != MI_DTYPE_UINT8 && yq->dtype != MI_DTYPE_INT8)) return 0;
    if (act >= 0 && !act_implied(g, consts, act, yq)) return 0;
  }
  memset(u, 0, sizeof *u);
  u->kind = 1;
  u->op = n;
  u->dqx = dqx;
  u->dqw = dqw;
  u->act = act;
  u->q = q;
  u->at = n;
  u->nodes[u->count++] = n;
  if (act >= 0) u->nodes[u->count++] = act;
  u->nodes[u->count++] = q;
  return 1;
}

/* Members of group `id` in node order; 0 when it cannot be one kernel here. */
static int match_group(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts,
                       int32_t id, mi__unit_t *u) {
  memset(u, 0, sizeof *u);
  for (int32_t i = 0; i < g->node_count; i++) {
    if (g->nodes[i].group != id) continue;
    if (u->count == 8 || p->role[i] != MI__ROLE_NODE) return 0; /* groups of the fuse pass */
    for (int32_t j = 0; j < g->nodes[i].output_count; j++)
      if (g->nodes[i].outputs[j] >= 0 && consts[g->nodes[i].outputs[j]]) return 0; /* folded */
    u->nodes[u->count++] = i;
  }
  if (u->count < 2) return 0;
  u->at = u->nodes[u->count - 1];
  u->op = u->nodes[0];
  u->dqx = u->dqw = u->act = u->q = -1;
  /* The kernel runs at its last member: nothing outside may read a member's result earlier. */
  for (int32_t i = 0; i < g->node_count; i++) {
    int member = g->nodes[i].group == id;
    if (member) continue;
    for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
      int32_t t = g->nodes[i].inputs[j], pr = t >= 0 ? g->tensors[t].producer : -1;
      if (pr >= 0 && g->nodes[pr].group == id && i < u->at) return 0;
    }
  }
  return 1;
}

/* ---- groups found by the session itself (graphs no fusion pass has grouped) ----
 * What ONNX Runtime's default optimiser does for a CPU: the elementwise chain after a conv
 * (BatchNormalization, activations, clamps, hard-swish written out as x * clip(x + 3, 0, 6) / 6,
 * a residual Add) joins the conv's kernel when the device's conv variants declare the matching
 * fuse bits. Which nodes a plugin then really folds into its epilogue is its business; the rest
 * run as steps of the same kernel. */

/* Union of the fuse masks the variants declare for `op`. */
static uint32_t fuse_mask(const mi_variant_desc_t *v, uint32_t n, const char *op) {
  uint32_t m = 0;
  /* (the first byte first: asked per node of the graph over every variant of the device) */
  for (uint32_t i = 0; i < n; i++)
    if (v[i].op_type[0] == op[0] && strncmp(v[i].op_type, op, sizeof v[i].op_type) == 0)
      m |= v[i].fuse_mask;
  return m;
}

/* The value of a constant one-element FLOAT32 input, or NAN. */
double mi__plan_const_scalar(const mi_graph_t *g, mi_array_t *const *consts, int32_t node, int32_t i) {
  const mi_node_t *n = &g->nodes[node];
  const mi_array_t *a = i < n->input_count && n->inputs[i] >= 0 ? consts[n->inputs[i]] : NULL;
  return a && a->dtype == MI_DTYPE_FLOAT32 && a->nbytes == 4 ? (double)*(const float *)a->data : NAN;
}

/* The fuse bit an elementwise node after the conv needs, 0 when it is not one; `cur` is the
 * chain's value, `out_numel` its element count. */
uint32_t mi__plan_chain_bit(const mi_graph_t *g, mi_array_t *const *consts, int32_t node, int32_t cur,
                            int first) {
  static const char *const acts[] = {"LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh",
                                     "Elu", "Softplus", "Gelu", "Erf", "Identity", "Dropout"};
  const mi_node_t *n = &g->nodes[node];
  if (n->domain && n->domain[0]) return 0;
  if (n->output_count < 1 || n->outputs[0] < 0 || n->input_count < 1 || n->inputs[0] != cur) {
    /* Add and Mul may take the chain's value as either operand. */
    if ((strcmp(n->op_type, "Add") && strcmp(n->op_type, "Mul")) || n->input_count != 2 ||
        n->inputs[1] != cur)
      return 0;
  }
  /* A node whose output is stored otherwise than the chain's value (the layout pass's
   * converting Identity) is a transpose, not an epilogue. */
  if (n->outputs[0] < 0 || g->tensors[n->outputs[0]].layout != g->tensors[cur].layout ||
      g->tensors[n->outputs[0]].block != g->tensors[cur].block)
    return 0;
  /* x * a and x + a by a constant scalar (learnable affine blocks, folded scales) */
  if ((!strcmp(n->op_type, "Mul") || !strcmp(n->op_type, "Add")) && n->input_count == 2 &&
      !isnan(mi__plan_const_scalar(g, consts, node, n->inputs[0] == cur ? 1 : 0)))
    return MI_FUSE_ACT;
  if (!strcmp(n->op_type, "BatchNormalization"))
    return first && n->output_count == 1 ? MI_FUSE_BN : 0;
  /* a constant of one value per channel ([C, 1, 1] or [1, C, 1, 1]) added straight after the conv
   * (or after its bias or BN): a bias (paddle2onnx writes a ConvTranspose's bias as such an Add) */
  if (!strcmp(n->op_type, "Add") && first && n->input_count == 2) {
    int32_t other = n->inputs[0] == cur ? n->inputs[1] : n->inputs[0];
    const mi_array_t *a = other >= 0 ? consts[other] : NULL;
    const mi_tensor_t *y = &g->tensors[cur];
    if (a && a->dtype == MI_DTYPE_FLOAT32 && y->rank == 4 && (a->rank == 3 || a->rank == 4) &&
        (y->layout == MI_LAYOUT_ANY || y->layout == MI_LAYOUT_NCHW)) {
      int ok = a->dims[a->rank - 3] == y->dims[1] && a->dims[a->rank - 2] == 1 && a->dims[a->rank - 1] == 1 &&
               (a->rank == 3 || a->dims[0] == 1);
      if (ok) return MI_FUSE_BIAS;
    }
  }
  if (!strcmp(n->op_type, "Relu")) return MI_FUSE_RELU;
  if (!strcmp(n->op_type, "Clip")) {
    for (int32_t i = 1; i < n->input_count; i++)
      if (n->inputs[i] >= 0 && isnan(mi__plan_const_scalar(g, consts, node, i))) return 0;
    return MI_FUSE_ACT;
  }
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
    if (!strcmp(n->op_type, acts[i])) return n->input_count == 1 ? MI_FUSE_ACT : 0;
  /* A clamp against a constant (tf2onnx writes Relu6 and leaky clamps as Max/Min). */
  if ((!strcmp(n->op_type, "Max") || !strcmp(n->op_type, "Min")) && n->input_count == 2)
    return !isnan(mi__plan_const_scalar(g, consts, node, 1)) ? MI_FUSE_ACT : 0;
  if (!strcmp(n->op_type, "Add") && n->input_count == 2) {
    int32_t other = n->inputs[0] == cur ? n->inputs[1] : n->inputs[0];
    const mi_tensor_t *a = other >= 0 ? &g->tensors[other] : NULL, *y = &g->tensors[cur];
    if (!a || other == cur || a->rank != y->rank || a->dtype != MI_DTYPE_FLOAT32) return 0;
    for (int32_t d = 0; d < a->rank; d++)
      if (a->dims[d] != y->dims[d]) return 0;
    return MI_FUSE_ADD;
  }
  return 0;
}

/* x * clip(x + 3, 0, 6) / 6 (paddle2onnx's hard-swish) from the two readers of x: the four
 * nodes in *q, 1 when it matches. */
int mi__plan_match_hswish(const mi_graph_t *g, mi_array_t *const *consts, int32_t x, int32_t q[4]) {
  int32_t add = -1, mul = -1, clip, t;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] == x) {
        if (mi__graph_is_op(g, i, "Add") && add < 0) add = i;
        else if (mi__graph_is_op(g, i, "Mul") && mul < 0)
          mul = i;
        else
          return 0;
        break;
      }
  if (add < 0 || mul < 0 || g->nodes[add].inputs[0] != x || mi__plan_const_scalar(g, consts, add, 1) != 3.0)
    return 0;
  t = g->nodes[add].outputs[0];
  /* Clip's bounds: constant inputs, or attributes before opset 11 */
  if ((clip = mi__graph_sole_reader(g, t)) < 0 || !mi__graph_is_op(g, clip, "Clip") ||
      g->nodes[clip].inputs[0] != t || clip_bound(g, consts, clip, 1, NAN) != 0.0 ||
      clip_bound(g, consts, clip, 2, NAN) != 6.0)
    return 0;
  t = g->nodes[clip].outputs[0];
  if (mi__graph_sole_reader(g, t) != mul || g->nodes[mul].input_count != 2) return 0;
  t = g->nodes[mul].outputs[0];
  if (t < 0 || (q[3] = mi__graph_sole_reader(g, t)) < 0) return 0;
  if (!(mi__graph_is_op(g, q[3], "Div") && mi__plan_const_scalar(g, consts, q[3], 1) == 6.0) &&
      !(mi__graph_is_op(g, q[3], "Mul") && fabs(mi__plan_const_scalar(g, consts, q[3], 1) - 1.0 / 6.0) < 1e-7))
    return 0;
  if (g->nodes[q[3]].inputs[0] != t) return 0;
  q[0] = add;
  q[1] = clip;
  q[2] = mul;
  return 1;
}

/* Conv node `n` is depthwise (group == input channels > 1), NCHW (or unset), constant weights. */
static int is_depthwise(const mi_graph_t *g, mi_array_t *const *consts, int32_t n) {
  const mi_node_t *c = &g->nodes[n];
  const mi_tensor_t *x = c->input_count > 1 && c->inputs[0] >= 0 ? &g->tensors[c->inputs[0]] : NULL;
  int64_t grp = mi_node_attr_int(c, "group", 1);
  return x && x->rank == 4 && c->inputs[1] >= 0 && consts[c->inputs[1]] && grp > 1 && x->dims[1] == grp &&
         (x->layout == MI_LAYOUT_ANY || x->layout == MI_LAYOUT_NCHW);
}

/* Conv node `r` is pointwise on `cur` (1x1, stride 1, no pads, group 1, constant weights and
 * bias): the second conv of a depthwise-separable block (MI_FUSE_CONV). */
static int is_pointwise_on(const mi_graph_t *g, mi_array_t *const *consts, int32_t r, int32_t cur) {
  const mi_node_t *c = &g->nodes[r];
  const mi_array_t *w = c->input_count > 1 && c->inputs[1] >= 0 ? consts[c->inputs[1]] : NULL;
  const mi_attr_t *a;
  if (!mi__graph_is_op(g, r, "Conv") || c->inputs[0] != cur || !w || w->rank != 4 || w->dims[2] != 1 ||
      w->dims[3] != 1 || mi_node_attr_int(c, "group", 1) != 1 || c->output_count != 1 ||
      (c->input_count > 2 && c->inputs[2] >= 0 && !consts[c->inputs[2]]) ||
      g->tensors[c->outputs[0]].layout != g->tensors[cur].layout)
    return 0;
  if ((a = mi_node_attr(c, "auto_pad")) && a->s && strcmp(a->s, "NOTSET") && strcmp(a->s, "VALID"))
    return 0;
  for (const char *const *k = (const char *const[]){"strides", "pads", "dilations", NULL}; *k; k++)
    if ((a = mi_node_attr(c, *k)) && a->type != MI_ATTR_INTS)
      return 0;
    else if (a)
      for (int32_t i = 0; i < a->count; i++)
        if (a->ints[i] != (strcmp(*k, "pads") ? 1 : 0)) return 0;
  return 1;
}

/* The pointwise conv (is_pointwise_on) that reads value cur through the BF16 transform's two
 * Casts, the first of them c1, where the device runs it on a BF16 variant (mi__bf16_source);
 * else -1. */
static int32_t bf16_pointwise(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts,
                              const mi_variant_desc_t *vars, uint32_t var_count, int32_t c1, int32_t cur) {
  int32_t c2, pw;
  if (!mi__graph_is_op(g, c1, "Cast") || g->nodes[c1].output_count != 1 || g->nodes[c1].outputs[0] < 0 ||
      (c2 = mi__plan_sole_reader(g, p, g->nodes[c1].outputs[0])) < 0 || g->nodes[c2].output_count != 1 ||
      g->nodes[c2].outputs[0] < 0 || (pw = mi__plan_sole_reader(g, p, g->nodes[c2].outputs[0])) < 0 ||
      p->role[pw] != MI__ROLE_NODE || !is_pointwise_on(g, consts, pw, g->nodes[c2].outputs[0]) ||
      mi__bf16_source(g, p, consts, vars, var_count, pw) != cur)
    return -1;
  return pw;
}

/* The one node that reads runtime value t and runs, or -1 (t a graph output, or read by more or
 * none): nodes marked MI__ROLE_UNREAD never run, so they do not count. A spelled-out pattern the
 * session rewrote into one node (graph/ln_fuse.c, graph/gelu_fuse.c) leaves its other pieces
 * reading the pattern's input, unread; the node before it still has the rewritten node alone. */
int32_t mi__plan_live_reader(const mi_graph_t *g, const mi__plan_t *p, int32_t t) {
  int32_t found = -1;
  if (p->live) return t < 0 || t >= g->tensor_count ? -1 : p->live[t];
  if (t < 0 || mi__graph_is_output(g, t)) return -1;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count && p->role[i] != MI__ROLE_UNREAD; j++)
      if (g->nodes[i].inputs[j] == t) {
        if (found >= 0 && found != i) return -1;
        found = i;
      }
  return found;
}

/* The chain after conv `n` as unit *u (2..MI__UNIT_MAX nodes); 0 when nothing joins it. A
 * pointwise conv joins a depthwise one's unit (MI_FUSE_CONV) only when its whole chain fits too:
 * else the unit is matched again without it, so no chain op is left out of a kernel. */
static int match_chain(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts,
                       const mi_variant_desc_t *vars, uint32_t var_count, uint32_t mask, int32_t n, mi__unit_t *u) {
  int32_t cur = g->nodes[n].outputs[0], last_conv = 0; /* index in u->nodes of the last Conv */
  int dw = (mask & MI_FUSE_CONV) && is_depthwise(g, consts, n), capped = 0;
  int first = 1; /* nothing but a per-channel bias since the last conv: a BN may still fold */
  memset(u, 0, sizeof *u);
  u->nodes[u->count++] = n;
  while (cur >= 0 && !mi__graph_is_output(g, cur)) {
    int32_t r = mi__plan_live_reader(g, p, cur), q[4], pw;
    uint32_t bit;
    /* A pointwise conv with a choice of its own joins only when the plugin runs a member with
     * its own choice (MI_FUSE_MEMBER_CHOICES); else the unit would carry its anchor's only. */
    if (dw && r >= 0 && last_conv == 0 && p->role[r] == MI__ROLE_NODE && u->count < MI__UNIT_MAX &&
        !(p->pinned && p->pinned[r] && !(mask & MI_FUSE_MEMBER_CHOICES)) && is_pointwise_on(g, consts, r, cur)) {
      last_conv = u->count;
      u->nodes[u->count++] = r;
      cur = g->nodes[r].outputs[0];
      first = 1;
      continue;
    }
    /* The same conv behind the BF16 transform's Casts (cur -> Cast -> Cast -> it), run on the
     * device's BF16 variant as a member choice (bf16_in.c): it reads cur, which it rounds
     * itself, and the Casts do not run. Apart, its input would go through memory and back. */
    if (dw && r >= 0 && last_conv == 0 && (mask & MI_FUSE_MEMBER_CHOICES) && u->count < MI__UNIT_MAX &&
        (pw = bf16_pointwise(g, p, consts, vars, var_count, r, cur)) >= 0) {
      last_conv = u->count;
      u->nodes[u->count++] = pw;
      cur = g->nodes[pw].outputs[0];
      first = 1;
      continue;
    }
    capped = u->count + 4 > MI__UNIT_MAX;
    if (r < 0) {
      if (!(mask & MI_FUSE_ACT) || u->count + 4 > MI__UNIT_MAX || !mi__plan_match_hswish(g, consts, cur, q))
        break;
      for (int k = 0; k < 4; k++)
        if (p->role[q[k]] != MI__ROLE_NODE) return 0;
      for (int k = 0; k < 4; k++) u->nodes[u->count++] = q[k];
      cur = g->nodes[q[3]].outputs[0];
      first = 0;
      continue;
    }
    bit = mi__plan_chain_bit(g, consts, r, cur, first);
    if (!bit || !(mask & bit) || p->role[r] != MI__ROLE_NODE || u->count == MI__UNIT_MAX ||
        g->nodes[r].output_count != 1 || consts[g->nodes[r].outputs[0]])
      break;
    u->nodes[u->count++] = r;
    cur = g->nodes[r].outputs[0];
    first = bit == MI_FUSE_BIAS;
  }
  if (last_conv > 0 && capped)
    return match_chain(g, p, consts, vars, var_count, mask & ~(uint32_t)MI_FUSE_CONV, n, u);
  if (u->count < 2) return 0;
  u->op = n;
  u->at = u->nodes[u->count - 1];
  u->dqx = u->dqw = u->act = u->q = -1;
  /* The kernel runs at its last member: every outside input must be ready by then. */
  for (int32_t k = 1; k < u->count; k++) {
    const mi_node_t *m = &g->nodes[u->nodes[k]];
    for (int32_t j = 0; j < m->input_count; j++) {
      int32_t t = m->inputs[j], pr = t >= 0 ? g->tensors[t].producer : -1;
      if (pr > u->at) return 0;
    }
  }
  return 1;
}

static int32_t add_unit(mi__plan_t *p, const mi__unit_t *u);

/* The two-node unit n -> r, run as one kernel at node `at` (n or r). */
static int32_t add_pair(mi__plan_t *p, int32_t n, int32_t r, int32_t at) {
  mi__unit_t u;
  memset(&u, 0, sizeof u);
  u.nodes[u.count++] = n;
  u.nodes[u.count++] = r;
  u.op = n;
  u.at = at;
  u.dqx = u.dqw = u.act = u.q = -1;
  return add_unit(p, &u);
}

/* Concat n -> DynamicQuantizeLinear r as unit *u (at n), headed by the Resizes whose results
 * only n reads, for a device whose Resize declares MI_FUSE_ACT: the quantize kernel computes
 * their rows where it needs them (twice: for the range, then for the codes, in cache) and no
 * upsampled plane is written and read back (a U-Net decoder's upsample -> skip join ->
 * quantize: 4 bytes a value written and read twice for a 1-byte code). */
static const mi__unit_t *resize_join(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                                     int32_t r, mi__unit_t *u) {
  const mi_node_t *c = &g->nodes[n];
  memset(u, 0, sizeof *u);
  for (int32_t j = 0; j < c->input_count && u->count + 2 < MI__UNIT_MAX; j++) {
    int32_t t = c->inputs[j], pr = t >= 0 ? g->tensors[t].producer : -1, dup = 0;
    for (int32_t i = 0; i < u->count; i++) dup |= u->nodes[i] == pr;
    if (pr < 0 || dup || consts[t] || !mi__graph_is_op(g, pr, "Resize") || p->role[pr] != MI__ROLE_NODE ||
        (p->pinned && p->pinned[pr]) || g->nodes[pr].output_count != 1 || mi__plan_sole_reader(g, p, t) != n)
      continue;
    u->nodes[u->count++] = pr;
  }
  u->nodes[u->count++] = n;
  u->nodes[u->count++] = r;
  u->op = u->nodes[0];
  u->at = n;
  u->dqx = u->dqw = u->act = u->q = -1;
  return u;
}

/* x * Sigmoid(x) written out (torch's SiLU, paddle's Swish) on the runtime value x: its only two
 * readers the Sigmoid (q[0]) and the Mul of x by the Sigmoid's result (q[1], the sigmoid's only
 * reader); 1 when it matches. */
static int linear_swish(const mi_graph_t *g, const mi__plan_t *p, int32_t x, int32_t q[2]) {
  int32_t readers = 0, sg = -1, ml = -1, so;
  if (mi__graph_is_output(g, x)) return 0;
  for (int32_t d = 0; d < g->node_count; d++)
    for (int32_t j = 0; j < g->nodes[d].input_count; j++)
      if (g->nodes[d].inputs[j] == x) {
        readers++;
        if (mi__graph_is_op(g, d, "Sigmoid")) sg = d;
        else if (mi__graph_is_op(g, d, "Mul"))
          ml = d;
      }
  if (readers != 2 || sg < 0 || ml < 0 || g->nodes[sg].input_count != 1 || g->nodes[sg].output_count != 1 ||
      (so = g->nodes[sg].outputs[0]) < 0 || mi__graph_is_output(g, so) || mi__plan_sole_reader(g, p, so) != ml ||
      g->nodes[ml].input_count != 2 || g->nodes[ml].output_count != 1 || g->nodes[ml].outputs[0] < 0 ||
      !((g->nodes[ml].inputs[0] == x && g->nodes[ml].inputs[1] == so) ||
        (g->nodes[ml].inputs[1] == x && g->nodes[ml].inputs[0] == so)) ||
      p->role[sg] != MI__ROLE_NODE || p->role[ml] != MI__ROLE_NODE || (p->pinned && (p->pinned[sg] || p->pinned[ml])))
    return 0;
  q[0] = sg;
  q[1] = ml;
  return 1;
}

/* The LayerNormalization that alone reads runtime value x, over x's last axis, with its Y output
 * only and constant (or no) scale and bias, or -1. Nodes that never run do not count as readers:
 * a spelled-out norm rewritten into one LayerNormalization (graph/ln_fuse.c) leaves its pieces
 * reading x, unread. */
static int32_t linear_norm(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t x) {
  int32_t f = -1, rank = g->tensors[x].rank;
  const mi_node_t *m;
  int64_t axis;
  if (mi__graph_is_output(g, x)) return -1;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count && p->role[i] != MI__ROLE_UNREAD; j++)
      if (g->nodes[i].inputs[j] == x) {
        if (f >= 0) return -1;
        f = i;
      }
  if (f < 0 || !mi__graph_is_op(g, f, "LayerNormalization") || p->role[f] != MI__ROLE_NODE || (p->pinned && p->pinned[f]))
    return -1;
  m = &g->nodes[f];
  axis = mi_node_attr_int(m, "axis", -1);
  if (m->inputs[0] != x || m->output_count < 1 || m->outputs[0] < 0 || consts[m->outputs[0]] || rank < 1 ||
      (axis != -1 && axis != rank - 1))
    return -1;
  for (int32_t o = 1; o < m->output_count; o++)
    if (m->outputs[o] >= 0) return -1; /* Mean / InvStdDev wanted */
  for (int32_t j = 1; j < m->input_count; j++)
    if (m->inputs[j] >= 0 && !consts[m->inputs[j]]) return -1;
  return f;
}

/* A Linear as torch and tf2onnx write it: MatMul / Gemm (no C) with a constant B -> Add of a
 * constant bias along the last dim, or a Gemm with a constant C [-> one activation, or x *
 * Sigmoid(x)] [-> a residual Add] [-> LayerNormalization over the last axis [-> one activation]],
 * where the device's MatMul / Gemm declares MI_FUSE_BIAS (MI_FUSE_RELU / MI_FUSE_ACT for the
 * activations, MI_FUSE_ADD for the residual, MI_FUSE_NORM for the norm): one kernel, whose plugin
 * may start its accumulators from the bias and apply the rest as it stores (ONNX Runtime's
 * MatMul + Add -> Gemm and Gemm + activation fusions). A model of small Linears (a wake-word
 * head: Gemm -> LayerNorm -> Relu, 32 wide) otherwise paid a kernel's fixed cost per node. */
static int32_t linear_groups(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                             const mi_variant_desc_t *vars, uint32_t var_count) {
  static const char *const acts[] = {"Relu", "Gelu", "Sigmoid", "Tanh", "Clip", "LeakyRelu"};
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *m = &g->nodes[n];
    int gemm = mi__graph_is_op(g, n, "Gemm");
    uint32_t mask = (gemm || mi__graph_is_op(g, n, "MatMul")) ? fuse_mask(vars, var_count, gemm ? "Gemm" : "MatMul") : 0;
    int32_t y = m->output_count == 1 ? m->outputs[0] : -1, r, bias, out, f, q[2];
    /* a Gemm's own constant C is its bias: no Add to find */
    int cbias = gemm && m->input_count > 2 && m->inputs[2] >= 0 && consts[m->inputs[2]] &&
                consts[m->inputs[2]]->dtype == MI_DTYPE_FLOAT32;
    mi__unit_t u;
    if (!(mask & MI_FUSE_BIAS) || p->role[n] != MI__ROLE_NODE || y < 0 || consts[y] || m->input_count < 2 ||
        (m->input_count > 2 && m->inputs[2] >= 0 && !cbias) || m->inputs[0] < 0 || m->inputs[1] < 0 ||
        !consts[m->inputs[1]] || consts[m->inputs[1]]->dtype != MI_DTYPE_FLOAT32 ||
        g->tensors[m->inputs[0]].dtype != MI_DTYPE_FLOAT32 || mi__graph_is_output(g, y))
      continue;
    memset(&u, 0, sizeof u);
    u.nodes[u.count++] = n;
    out = y;
    if (!cbias) {
      if ((r = mi__plan_live_reader(g, p, y)) < 0 || !mi__graph_is_op(g, r, "Add") || p->role[r] != MI__ROLE_NODE ||
          (p->pinned && p->pinned[r]) || g->nodes[r].input_count != 2 || g->nodes[r].output_count != 1 ||
          (out = g->nodes[r].outputs[0]) < 0 || consts[out])
        continue;
      bias = g->nodes[r].inputs[g->nodes[r].inputs[0] == y ? 1 : 0];
      {
        const mi_tensor_t *b = bias >= 0 ? &g->tensors[bias] : NULL, *t = &g->tensors[y];
        int ok = b && bias != y && consts[bias] && b->dtype == MI_DTYPE_FLOAT32 && b->rank >= 1 &&
                 b->rank <= t->rank && t->rank >= 1 && b->dims[b->rank - 1] == t->dims[t->rank - 1];
        for (int32_t d = 0; ok && d + 1 < b->rank; d++) ok = b->dims[d] == 1;
        if (!ok) continue;
      }
      u.nodes[u.count++] = r;
    }
    if (!mi__graph_is_output(g, out) && (f = mi__plan_live_reader(g, p, out)) >= 0 && p->role[f] == MI__ROLE_NODE &&
        !(p->pinned && p->pinned[f]) && g->nodes[f].output_count == 1 && g->nodes[f].outputs[0] >= 0) {
      uint32_t bit = mi__plan_chain_bit(g, consts, f, out, 0);
      int named = 0;
      for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) named |= mi__graph_is_op(g, f, acts[i]);
      if (named && (bit == MI_FUSE_RELU || bit == MI_FUSE_ACT) && (mask & bit)) {
        u.nodes[u.count++] = f;
        out = g->nodes[f].outputs[0];
      }
    } else if ((mask & MI_FUSE_ACT) && linear_swish(g, p, out, q)) {
      u.nodes[u.count++] = q[0];
      u.nodes[u.count++] = q[1];
      out = g->nodes[q[1]].outputs[0];
    }
    /* then a residual Add (a runtime tensor of the output's shape, ready before the kernel) */
    if ((mask & MI_FUSE_ADD) && !mi__graph_is_output(g, out) && (f = mi__plan_live_reader(g, p, out)) >= 0 &&
        p->role[f] == MI__ROLE_NODE && !(p->pinned && p->pinned[f]) && g->nodes[f].output_count == 1 &&
        g->nodes[f].outputs[0] >= 0 && !consts[g->nodes[f].outputs[0]] && mi__graph_is_op(g, f, "Add") &&
        mi__plan_chain_bit(g, consts, f, out, 0) == MI_FUSE_ADD) {
      int32_t other = g->nodes[f].inputs[g->nodes[f].inputs[0] == out ? 1 : 0];
      if (!consts[other] && g->tensors[other].producer < f) {
        u.nodes[u.count++] = f;
        out = g->nodes[f].outputs[0];
      }
    }
    /* then a LayerNormalization over the last axis [-> its activation] */
    if ((mask & MI_FUSE_NORM) && (f = linear_norm(g, p, consts, out)) >= 0) {
      u.nodes[u.count++] = f;
      out = g->nodes[f].outputs[0];
      if (!mi__graph_is_output(g, out) && (f = mi__plan_live_reader(g, p, out)) >= 0 && p->role[f] == MI__ROLE_NODE &&
          !(p->pinned && p->pinned[f]) && g->nodes[f].output_count == 1 && g->nodes[f].outputs[0] >= 0 &&
          !consts[g->nodes[f].outputs[0]]) {
        uint32_t bit = mi__plan_chain_bit(g, consts, f, out, 0);
        int named = 0;
        for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) named |= mi__graph_is_op(g, f, acts[i]);
        if (named && (bit == MI_FUSE_RELU || bit == MI_FUSE_ACT) && (mask & bit)) u.nodes[u.count++] = f;
      }
    }
    if (u.count < 2) continue; /* a Gemm with C and nothing after it */
    u.op = n;
    u.at = u.nodes[u.count - 1];
    u.dqx = u.dqw = u.act = u.q = -1;
    if (add_unit(p, &u)) return MI_ERR_OUT_OF_MEMORY;
  }
  return MI_OK;
}

/* Groups of the session's own, when the graph carries none and the device fuses conv chains. */
/* Runtime FLOAT32 value `a` scaled by runtime `b` of one value per channel of `a` ([1,C,1,1] or
 * [C,1,1]): an SE block's gate, x * HardSigmoid(...) broadcast over each plane. */
static int channel_gate(const mi_graph_t *g, mi_array_t *const *consts, int32_t a, int32_t b) {
  const mi_tensor_t *x = &g->tensors[a], *s = &g->tensors[b];
  if (a < 0 || b < 0 || consts[a] || consts[b] || x->dtype != MI_DTYPE_FLOAT32 || s->dtype != MI_DTYPE_FLOAT32 ||
      x->rank != 4 || (s->rank != 4 && s->rank != 3) || x->dims[1] <= 0 ||
      (x->layout != MI_LAYOUT_ANY && x->layout != MI_LAYOUT_NCHW))
    return 0;
  for (int32_t d = 0; d < s->rank; d++)
    if (s->dims[d] != (d == s->rank - 3 ? x->dims[1] : 1)) return 0;
  return 1;
}

/* A Mul of a runtime value by a per-channel runtime gate whose result only a group-1 Conv reads
 * (as its input), where the device's Mul declares MI_FUSE_CONV: the Mul joins that conv's unit
 * (or the conv alone) as its first member and anchor, so the kernel can scale the conv's weights
 * by the gate (M x C x KH x KW products a run) instead of writing x * gate and reading it back.
 * The conv may read the product through the BF16 transform's Casts where the device runs it on
 * its BF16 variant (mi__bf16_source): it then joins as a member on that variant (bf16_in.c), which
 * scales its input as it rounds it. After the conv chains; a conv with a choice of its own joins
 * only where the Mul's variant runs members' own choices (MI_FUSE_MEMBER_CHOICES). */
static int32_t gate_heads(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                          const mi_variant_desc_t *vars, uint32_t var_count) {
  const int own = (fuse_mask(vars, var_count, "Mul") & MI_FUSE_MEMBER_CHOICES) != 0;
  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *m = &g->nodes[n];
    int32_t y = m->output_count == 1 ? m->outputs[0] : -1, r;
    mi__unit_t u, *old;
    if (!mi__graph_is_op(g, n, "Mul") || p->role[n] != MI__ROLE_NODE || (p->pinned && p->pinned[n]) || y < 0 ||
        m->input_count != 2 || consts[y] || mi__graph_is_output(g, y) || (r = mi__plan_sole_reader(g, p, y)) < 0)
      continue;
    if (own && mi__graph_is_op(g, r, "Cast")) { /* the BF16 transform's rounding of a conv's input */
      int32_t c2 = g->nodes[r].output_count == 1 ? mi__plan_sole_reader(g, p, g->nodes[r].outputs[0]) : -1;
      int32_t cv = c2 >= 0 && g->nodes[c2].output_count == 1 ? mi__plan_sole_reader(g, p, g->nodes[c2].outputs[0]) : -1;
      if (cv < 0 || mi__bf16_source(g, p, consts, vars, var_count, cv) != y) continue;
      r = cv;
    } else if (!mi__graph_is_op(g, r, "Conv") || g->nodes[r].inputs[0] != y) {
      continue;
    }
    if (!mi__graph_is_op(g, r, "Conv") || mi_node_attr_int(&g->nodes[r], "group", 1) != 1 ||
        (p->pinned && p->pinned[r] && !own))
      continue;
    if (!channel_gate(g, consts, m->inputs[0], m->inputs[1]) && !channel_gate(g, consts, m->inputs[1], m->inputs[0]))
      continue;
    if (p->role[r] == MI__ROLE_NODE) {
      if (add_pair(p, n, r, r)) return MI_ERR_OUT_OF_MEMORY;
      continue;
    }
    old = p->role[r] == MI__ROLE_MEMBER ? &p->units[p->unit[r]] : NULL;
    if (!old || old->kind != 0 || old->nodes[0] != r || old->count >= MI__UNIT_MAX) continue;
    u = *old;
    memmove(u.nodes + 1, u.nodes, (size_t)u.count * sizeof *u.nodes);
    u.nodes[0] = n;
    u.count++;
    u.op = n;
    *old = u;
    p->role[n] = MI__ROLE_MEMBER;
    p->unit[n] = p->unit[r];
  }
  return MI_OK;
}

static int32_t auto_groups(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                           const mi_variant_desc_t *vars, uint32_t var_count) {
  uint32_t mask = fuse_mask(vars, var_count, "Conv");
  mi__unit_t u;
  uint32_t imask = fuse_mask(vars, var_count, "ConvInteger");
  if (imask & MI_FUSE_BIAS)
    for (int32_t n = 0; n < g->node_count; n++)
      if (mi__graph_is_op(g, n, "ConvInteger") && p->role[n] == MI__ROLE_NODE && g->nodes[n].output_count == 1 &&
          g->nodes[n].outputs[0] >= 0 &&
          mi__plan_int_tail(g, p, consts, n, (imask & MI_FUSE_ACT) != 0,
                            (fuse_mask(vars, var_count, "Pad") & MI_FUSE_ACT) != 0, &u) &&
          add_unit(p, &u))
        return MI_ERR_OUT_OF_MEMORY;
  uint32_t mmask = fuse_mask(vars, var_count, "MatMulInteger");
  if (mmask & MI_FUSE_BIAS)
    for (int32_t n = 0; n < g->node_count; n++)
      if (mi__graph_is_op(g, n, "MatMulInteger") && p->role[n] == MI__ROLE_NODE && !(p->pinned && p->pinned[n]) &&
          g->nodes[n].output_count == 1 && g->nodes[n].outputs[0] >= 0 &&
          mi__plan_gemm_int_tail(g, p, consts, n, (mmask & MI_FUSE_ACT) != 0, &u) && add_unit(p, &u))
        return MI_ERR_OUT_OF_MEMORY;
  /* A Concat whose result a DynamicQuantizeLinear reads first, where the device's Concat declares
   * MI_FUSE_ACT: one kernel, which can take the range from the inputs and write the codes from
   * them (the float concatenation only where others read it). A Pad likewise (its codes padded). */
  uint32_t cat_act = fuse_mask(vars, var_count, "Concat") & MI_FUSE_ACT;
  uint32_t pad_act = fuse_mask(vars, var_count, "Pad") & MI_FUSE_ACT;
  if (cat_act || pad_act)
    for (int32_t n = 0; n < g->node_count; n++) {
      int32_t y = g->nodes[n].output_count == 1 ? g->nodes[n].outputs[0] : -1, r;
      if (!((mi__graph_is_op(g, n, "Concat") && cat_act) || (mi__graph_is_op(g, n, "Pad") && pad_act)) || p->role[n] != MI__ROLE_NODE ||
          (p->pinned && p->pinned[n]) || y < 0 || consts[y] || mi__graph_is_output(g, y) || (r = mi__plan_tail_dynq(g, p, y)) < 0)
        continue;
      if (mi__graph_is_op(g, n, "Concat") && (fuse_mask(vars, var_count, "Resize") & MI_FUSE_ACT)) {
        if (add_unit(p, resize_join(g, p, consts, n, r, &u))) return MI_ERR_OUT_OF_MEMORY;
      } else if (add_pair(p, n, r, n)) {
        return MI_ERR_OUT_OF_MEMORY; /* at n: r reads only n's result */
      }
    }
  uint32_t tmask = fuse_mask(vars, var_count, "ConvTranspose") & ~(uint32_t)MI_FUSE_CONV;
  if ((mask | tmask) & (MI_FUSE_BIAS | MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD))
    for (int32_t n = 0; n < g->node_count; n++) {
      int tr = mi__graph_is_op(g, n, "ConvTranspose");
      if (!(mi__graph_is_op(g, n, "Conv") || tr) || p->role[n] != MI__ROLE_NODE || g->nodes[n].output_count != 1 ||
          g->nodes[n].outputs[0] < 0 || consts[g->nodes[n].outputs[0]])
        continue;
      if (match_chain(g, p, consts, vars, var_count, tr ? tmask : mask, n, &u) && add_unit(p, &u))
        return MI_ERR_OUT_OF_MEMORY;
    }
  if ((fuse_mask(vars, var_count, "Mul") & MI_FUSE_CONV) && gate_heads(p, g, consts, vars, var_count))
    return MI_ERR_OUT_OF_MEMORY;
  /* A Mul of two runtime values whose result only an Add reads, the Add's other operand one of
   * the Mul's (an SE block's x + x * gate), where the device's Mul declares MI_FUSE_ADD: one
   * kernel, one pass. After the conv chains, which take a Mul or Add of theirs first; a constant
   * factor is left to the quantized chains (DQ -> elementwise -> Q as a table). */
  if (fuse_mask(vars, var_count, "Mul") & MI_FUSE_ADD)
    for (int32_t n = 0; n < g->node_count; n++) {
      const mi_node_t *m = &g->nodes[n];
      int32_t y = m->output_count == 1 ? m->outputs[0] : -1, r, other;
      if (!mi__graph_is_op(g, n, "Mul") || p->role[n] != MI__ROLE_NODE || (p->pinned && p->pinned[n]) || y < 0 ||
          m->input_count != 2 || consts[y] || m->inputs[0] < 0 || m->inputs[1] < 0 || consts[m->inputs[0]] ||
          consts[m->inputs[1]] || mi__graph_is_output(g, y) || (r = mi__plan_sole_reader(g, p, y)) < 0 ||
          !mi__graph_is_op(g, r, "Add") || p->role[r] != MI__ROLE_NODE || (p->pinned && p->pinned[r]) ||
          g->nodes[r].input_count != 2 || g->nodes[r].output_count != 1)
        continue;
      other = g->nodes[r].inputs[g->nodes[r].inputs[0] == y ? 1 : 0];
      if (other == y || (other != m->inputs[0] && other != m->inputs[1]) ||
          g->tensors[other].dtype != MI_DTYPE_FLOAT32)
        continue;
      if (add_pair(p, n, r, r)) return MI_ERR_OUT_OF_MEMORY;
    }
  /* A comparison of FLOAT32 values whose bool result only a Cast to FLOAT reads (M-LSD's peak
   * mask, x == MaxPool(x)), where the device's comparison declares MI_FUSE_ACT: one kernel that
   * writes the 0/1 floats, no bool tensor (a device that runs FLOAT32 tensors alone, blis-cpu,
   * left the comparison to the host) */
  for (int32_t n = 0; n < g->node_count; n++) {
    static const char *cmps[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    const mi_node_t *m = &g->nodes[n];
    int32_t y = m->output_count == 1 ? m->outputs[0] : -1, r, cmp = 0;
    for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++) cmp |= mi__graph_is_op(g, n, cmps[i]);
    if (!cmp || !(fuse_mask(vars, var_count, m->op_type) & MI_FUSE_ACT) || p->role[n] != MI__ROLE_NODE ||
        (p->pinned && p->pinned[n]) || y < 0 || consts[y] || m->input_count != 2 || m->inputs[0] < 0 ||
        m->inputs[1] < 0 || g->tensors[m->inputs[0]].dtype != MI_DTYPE_FLOAT32 || mi__graph_is_output(g, y) ||
        (r = mi__plan_sole_reader(g, p, y)) < 0 || !mi__graph_is_op(g, r, "Cast") || p->role[r] != MI__ROLE_NODE ||
        (p->pinned && p->pinned[r]) || mi_node_attr_int(&g->nodes[r], "to", 0) != MI_DTYPE_FLOAT32 ||
        g->nodes[r].output_count != 1)
      continue;
    if (add_pair(p, n, r, r)) return MI_ERR_OUT_OF_MEMORY;
  }
  if (linear_groups(p, g, consts, vars, var_count)) return MI_ERR_OUT_OF_MEMORY;
  /* a MatMul / Gemm on the codes of its DequantizeLinear'd constant B (exec/qdq_weight.c) */
  if ((fuse_mask(vars, var_count, "MatMul") | fuse_mask(vars, var_count, "Gemm")) & MI_FUSE_DQ)
    for (int32_t n = 0; n < g->node_count; n++)
      if (mi__qdq_weight_match(g, p, consts, n, &u) && (fuse_mask(vars, var_count, g->nodes[n].op_type) & MI_FUSE_DQ) &&
          add_unit(p, &u))
        return MI_ERR_OUT_OF_MEMORY;
  /* a MatMul's transposed and scaled runtime operands (exec/mm_fold.c) */
  if (fuse_mask(vars, var_count, "MatMul") & MI_FUSE_TRANSPOSE)
    for (int32_t n = 0; n < g->node_count; n++)
      if (mi__mm_fold_match(g, p, consts, n, &u) && add_unit(p, &u)) return MI_ERR_OUT_OF_MEMORY;
  /* a Softmax's scale and additive masks, read once with the scores (exec/sm_fold.c) */
  if (fuse_mask(vars, var_count, "Softmax") & MI_FUSE_ADD)
    for (int32_t n = 0; n < g->node_count; n++)
      if (mi__sm_fold_match(g, p, consts, n, &u) && add_unit(p, &u)) return MI_ERR_OUT_OF_MEMORY;
  return MI_OK;
}

static int32_t add_unit(mi__plan_t *p, const mi__unit_t *u) {
  mi__unit_t *grown = realloc(p->units, (size_t)(p->unit_count + 1) * sizeof *grown);
  if (!grown) return MI_ERR_OUT_OF_MEMORY;
  p->units = grown;
  p->units[p->unit_count] = *u;
  for (int32_t i = 0; i < u->count; i++) {
    p->role[u->nodes[i]] = MI__ROLE_MEMBER;
    p->unit[u->nodes[i]] = p->unit_count;
  }
  p->unit_count++;
  return MI_OK;
}

/* A DequantizeLinear is skipped when every reader is a lowered layer reading its codes. */
static void mark_dq_skips(mi__plan_t *p, const mi_graph_t *g) {
  for (int32_t d = 0; d < g->node_count; d++) {
    int32_t t, readers = 0, lowered = 0;
    if (!mi__graph_is_op(g, d, "DequantizeLinear") || p->role[d] != MI__ROLE_NODE) continue;
    t = g->nodes[d].outputs[0];
    if (t < 0 || mi__graph_is_output(g, t)) continue;
    for (int32_t i = 0; i < g->node_count; i++)
      for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
        const mi__unit_t *u;
        if (g->nodes[i].inputs[j] != t) continue;
        readers++;
        u = p->unit[i] >= 0 ? &p->units[p->unit[i]] : NULL;
        if (u && u->kind == 1 && u->op == i && ((j == 0 && u->dqx == d) || (j == 1 && u->dqw == d)))
          lowered++;
      }
    if (readers > 0 && readers == lowered) p->role[d] = MI__ROLE_DQ_SKIP;
  }
}

/* Nodes whose outputs nobody reads (a Pad folded into its Conv leaves one): never run. Counted
 * readers, so a node read only by such nodes is one too (a fused layer norm leaves a chain). */
int32_t mi__plan_sole_reader(const mi_graph_t *g, const mi__plan_t *p, int32_t t) {
  if (p && p->sole) return t < 0 || t >= g->tensor_count ? -1 : p->sole[t];
  return mi__graph_sole_reader(g, t);
}

/* The reader index (mi__plan_t.sole, .live) once the unread nodes are marked: the same answers
 * as the scans. Without memory the matchers scan, as before. */
void mi__plan_index_readers(mi__plan_t *p, const mi_graph_t *g) {
  size_t n = (size_t)g->tensor_count + 1;
  int32_t *sole = malloc(n * sizeof *sole), *live = malloc(n * sizeof *live);
  if (!sole || !live) {
    free(sole);
    free(live);
    return;
  }
  for (size_t t = 0; t < n; t++) sole[t] = live[t] = -1;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
      int32_t t = g->nodes[i].inputs[j];
      if (t < 0) continue;
      sole[t] = sole[t] == -1 || sole[t] == i ? i : -2; /* -2: several, until the end */
      if (p->role[i] != MI__ROLE_UNREAD) live[t] = live[t] == -1 || live[t] == i ? i : -2;
    }
  for (int32_t o = 0; o < g->output_count; o++)
    if (g->outputs[o] >= 0) sole[g->outputs[o]] = live[g->outputs[o]] = -2;
  for (size_t t = 0; t < n; t++) {
    if (sole[t] == -2) sole[t] = -1;
    if (live[t] == -2) live[t] = -1;
  }
  p->sole = sole;
  p->live = live;
}

void mi__plan_unindex_readers(mi__plan_t *p) {
  free(p->sole);
  free(p->live);
  p->sole = p->live = NULL;
}

static void mark_unread(mi__plan_t *p, const mi_graph_t *g) {
  int32_t *reads = calloc((size_t)g->tensor_count + 1, sizeof *reads);
  int changed = 1;
  if (!reads) return; /* then they run, as before */
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] >= 0) reads[g->nodes[i].inputs[j]]++;
  /* Graph order is topological: a backward sweep settles a chain at once; repeat until none. */
  while (changed) {
    changed = 0;
    for (int32_t i = g->node_count - 1; i >= 0; i--) {
      const mi_node_t *n = &g->nodes[i];
      int used = n->output_count == 0 || n->subgraph_count > 0;
      if (p->role[i] == MI__ROLE_UNREAD) continue;
      for (int32_t o = 0; o < n->output_count && !used; o++)
        used = n->outputs[o] >= 0 && (reads[n->outputs[o]] || mi__graph_is_output(g, n->outputs[o]));
      if (used) continue;
      p->role[i] = MI__ROLE_UNREAD;
      changed = 1;
      for (int32_t j = 0; j < n->input_count; j++)
        if (n->inputs[j] >= 0) reads[n->inputs[j]]--;
    }
  }
  free(reads);
}

int32_t mi__plan_build(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                       const mi_variant_desc_t *vars, uint32_t var_count, int auto_fuse,
                       const uint8_t *pinned, mi_error_t *err) {
  int32_t max_group = -1;
  mi__unit_t u;
  memset(p, 0, sizeof *p);
  p->pinned = pinned;
  p->node_count = g->node_count;
  p->role = calloc((size_t)g->node_count + 1, sizeof *p->role);
  p->unit = malloc(((size_t)g->node_count + 1) * sizeof *p->unit);
  if (!p->role || !p->unit) goto oom;
  for (int32_t i = 0; i < g->node_count; i++) p->unit[i] = -1;
  mark_unread(p, g);
  mi__plan_index_readers(p, g);
  int qdq_elt = (fuse_mask(vars, var_count, "DequantizeLinear") & MI_FUSE_ACT) != 0;
  for (int32_t n = 0; n < g->node_count; n++) {
    if (p->role[n] != MI__ROLE_NODE || !match_lowered(g, consts, n, &u)) continue;
    if (!int8_variant(vars, var_count, g->nodes[n].op_type)) continue;
    /* A lowered Add/Mul only where the device runs quantized elementwise chains too (its
     * DequantizeLinear declares MI_FUSE_ACT): it is the same promise, codes in and out with the
     * unfused nodes' arithmetic. */
    if ((mi__graph_is_op(g, n, "Add") || mi__graph_is_op(g, n, "Mul")) && !qdq_elt) continue;
    if (p->role[u.q] != MI__ROLE_NODE || (u.act >= 0 && p->role[u.act] != MI__ROLE_NODE)) continue;
    if (add_unit(p, &u)) goto oom;
  }
  for (int32_t n = 0; n < g->node_count; n++)
    if (g->nodes[n].group > max_group) max_group = g->nodes[n].group;
  for (int32_t id = 0; id <= max_group; id++)
    if (match_group(g, p, consts, id, &u) && add_unit(p, &u)) goto oom;
  if (max_group < 0 && auto_fuse && auto_groups(p, g, consts, vars, var_count)) goto oom;
  /* DQ -> elementwise float ops -> Q as one kernel (a table on the codes) where the device's
   * DequantizeLinear declares MI_FUSE_ACT. */
  if (fuse_mask(vars, var_count, "DequantizeLinear") & MI_FUSE_ACT)
    for (int32_t n = 0; n < g->node_count; n++)
      if (mi__qdq_chain_match(g, p, consts, n, &u) && add_unit(p, &u)) goto oom;
  mark_dq_skips(p, g);
  if (mi__qdq_block_plan(p, g, consts, vars, var_count)) goto oom;
  mi__plan_unindex_readers(p); /* the session rewrites its graph after planning */
  return MI_OK;
oom:
  mi__plan_free(p);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory planning kernels");
}

void mi__plan_free(mi__plan_t *p) {
  if (!p) return;
  mi__plan_unindex_readers(p);
  free(p->role);
  free(p->unit);
  free(p->units);
  memset(p, 0, sizeof *p);
}
