/* ln_fuse.c - a layer normalisation spelled out in elementwise ops becomes one
 * LayerNormalization node (what ONNX Runtime's default LayerNormFusion does). PyTorch exports of
 * a hand-written norm write it as ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, Mul,
 * Add: nine steps on values of a few dozen elements, each costing a step's fixed overhead
 * (a wake-word classifier spent 18% of its run in them); one kernel does it in one pass. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

/* The matched pieces of one spelled-out norm. */
typedef struct ln_match {
  int32_t x, scale, bias; /* tensors; bias -1 when the norm ends at the scale Mul */
  int32_t last;           /* the node rewritten into the LayerNormalization */
  int64_t axis;           /* first normalised axis (the rest of the dims follow it) */
  float eps;
} ln_match_t;

static int is_f32(const mi_graph_t *g, int32_t t) {
  return t >= 0 && g->tensors[t].dtype == MI_DTYPE_FLOAT32;
}

/* The value of a constant float32 scalar (any rank, one element) in *v; 0 when t is not one. */
static int const_scalar(const mi_graph_t *g, int32_t t, float *v) {
  if (t < 0 || !g->tensors[t].data || !is_f32(g, t) || g->tensors[t].nbytes != sizeof(float))
    return 0;
  memcpy(v, g->tensors[t].data, sizeof *v);
  return 1;
}

/* The first normalised axis of ReduceMean node r over a rank-`rank` input: its axes must be
 * the trailing dims (in any order, negative ones allowed) and keepdims on. -1 when not. */
static int64_t trailing_axis(const mi_graph_t *g, int32_t r, int32_t rank) {
  const mi_node_t *n = &g->nodes[r];
  const int64_t *axes = NULL;
  int64_t count = 0, seen = 0;
  if (mi_node_attr_int(n, "keepdims", 1) != 1 || rank < 1 || rank > 30) return -1;
  if (n->input_count >= 2 && n->inputs[1] >= 0) { /* opset 18: axes is an input */
    const mi_tensor_t *a = &g->tensors[n->inputs[1]];
    if (!a->data || a->dtype != MI_DTYPE_INT64) return -1;
    axes = a->data;
    count = (int64_t)(a->nbytes / sizeof(int64_t));
  } else {
    const mi_attr_t *a = mi_node_attr(n, "axes");
    if (a && a->type != MI_ATTR_INTS) return -1;
    if (a) {
      axes = a->ints;
      count = a->count;
    }
  }
  if (count == 0) { /* no axes: every dim (unless that is asked to be a no-op) */
    return mi_node_attr_int(n, "noop_with_empty_axes", 0) ? -1 : 0;
  }
  if (count > rank) return -1;
  for (int64_t i = 0; i < count; i++) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (ax < rank - count || ax >= rank || (seen >> ax & 1)) return -1;
    seen |= (int64_t)1 << ax;
  }
  return rank - count;
}

/* The operand of binary node n that is not tensor t, or -1 when n does not read t once. */
static int32_t other_operand(const mi_graph_t *g, int32_t n, int32_t t) {
  const mi_node_t *p = &g->nodes[n];
  if (p->input_count != 2 || p->output_count != 1) return -1;
  if (p->inputs[0] == t && p->inputs[1] != t) return p->inputs[1];
  if (p->inputs[1] == t && p->inputs[0] != t) return p->inputs[0];
  return -1;
}

/* 1 when the constant tensor c matches the normalised dims [axis, rank) of x exactly (its dims,
 * right-aligned, equal x's there and are 1 before): it neither broadcasts nor widens x. */
static int covers_norm_dims(const mi_graph_t *g, int32_t c, int32_t x, int64_t axis) {
  const mi_tensor_t *ct = &g->tensors[c], *xt = &g->tensors[x];
  int64_t len = 1;
  if (!ct->data || !is_f32(g, c) || ct->rank < 0 || ct->rank > xt->rank) return 0;
  for (int32_t d = (int32_t)axis; d < xt->rank; d++) len *= xt->dims[d];
  for (int32_t d = 0; d < ct->rank; d++) {
    int32_t xd = xt->rank - ct->rank + d;
    if (xd >= axis ? ct->dims[d] != xt->dims[xd] : ct->dims[d] != 1) return 0;
  }
  return (int64_t)(ct->nbytes / sizeof(float)) == len;
}

/* 1 when node s computes x - mean (a Sub with those operands in that order). */
static int is_centre(const mi_graph_t *g, int32_t s, int32_t x, int32_t mean) {
  return mi__graph_is_op(g, s, "Sub") && g->nodes[s].input_count == 2 && g->nodes[s].inputs[0] == x &&
         g->nodes[s].inputs[1] == mean && g->nodes[s].output_count == 1;
}

/* Matches the norm that ends at the Div node `div` (x - mean) / sqrt(var + eps), followed by
 * a constant Mul and optionally a constant Add. 1 and *m filled when it is one. */
/* The sole reader of t, from the index where there is one (mi__graph_sole_readers). */
static int32_t sole(const mi_graph_t *g, const int32_t *idx, int32_t t) {
  return idx && t >= 0 && t < g->tensor_count ? idx[t] : mi__graph_sole_reader(g, t);
}

static int match_at_div(const mi_graph_t *g, const int32_t *idx, int32_t div, ln_match_t *m) {
  const mi_node_t *dn = &g->nodes[div];
  int32_t sub, sq, add_eps, rm2, pw, rm1, x, mean, mul, add;
  float two;
  if (!mi__graph_is_op(g, div, "Div") || dn->input_count != 2 || dn->output_count != 1) return 0;
  sub = mi__graph_producer(g, dn->inputs[0]);
  sq = mi__graph_producer(g, dn->inputs[1]);
  if (!mi__graph_is_op(g, sub, "Sub") || !mi__graph_is_op(g, sq, "Sqrt") || sole(g, idx, dn->inputs[1]) != div)
    return 0;
  x = g->nodes[sub].inputs[0];
  mean = g->nodes[sub].inputs[1];
  rm1 = mi__graph_producer(g, mean);
  if (!is_f32(g, x) || !mi__graph_is_op(g, rm1, "ReduceMean") || g->nodes[rm1].inputs[0] != x ||
      !is_centre(g, sub, x, mean))
    return 0;
  add_eps = mi__graph_producer(g, g->nodes[sq].inputs[0]);
  if (!mi__graph_is_op(g, add_eps, "Add") || sole(g, idx, g->nodes[sq].inputs[0]) != sq) return 0;
  /* var + eps, either operand order */
  {
    const mi_node_t *a = &g->nodes[add_eps];
    int32_t var = -1;
    if (a->input_count != 2) return 0;
    if (const_scalar(g, a->inputs[1], &m->eps)) var = a->inputs[0];
    else if (const_scalar(g, a->inputs[0], &m->eps))
      var = a->inputs[1];
    rm2 = mi__graph_producer(g, var);
    if (!mi__graph_is_op(g, rm2, "ReduceMean") || sole(g, idx, var) != add_eps) return 0;
  }
  pw = mi__graph_producer(g, g->nodes[rm2].inputs[0]);
  if (sole(g, idx, g->nodes[rm2].inputs[0]) != rm2) return 0;
  /* (x - mean)^2: Pow(d, 2) or d * d, on the same centred values or a twin Sub's */
  if (mi__graph_is_op(g, pw, "Pow")) {
    if (g->nodes[pw].input_count != 2 || !const_scalar(g, g->nodes[pw].inputs[1], &two) ||
        two != 2.0f)
      return 0;
  } else if (!mi__graph_is_op(g, pw, "Mul") || g->nodes[pw].input_count != 2 ||
             g->nodes[pw].inputs[0] != g->nodes[pw].inputs[1]) {
    return 0;
  }
  if (g->nodes[pw].inputs[0] != dn->inputs[0] &&
      !is_centre(g, mi__graph_producer(g, g->nodes[pw].inputs[0]), x, mean))
    return 0;
  m->axis = trailing_axis(g, rm1, g->tensors[x].rank);
  if (m->axis < 0 || trailing_axis(g, rm2, g->tensors[x].rank) != m->axis) return 0;
  /* the mean and the centred values are read inside the norm only (x - mean feeds at most
   * the square and the Div; the mean at most two Subs) */
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++) {
      int32_t in = g->nodes[i].inputs[j];
      if (in == mean && !is_centre(g, i, x, mean)) return 0;
      if (in == dn->inputs[0] && i != div && i != pw) return 0;
      if (in == g->nodes[pw].inputs[0] && i != div && i != pw) return 0;
    }
  if (mi__graph_is_output(g, mean) || mi__graph_is_output(g, dn->inputs[0])) return 0;
  /* * scale, then optionally + bias (constants over the normalised dims) */
  mul = sole(g, idx, dn->outputs[0]);
  if (!mi__graph_is_op(g, mul, "Mul")) return 0;
  m->scale = other_operand(g, mul, dn->outputs[0]);
  if (m->scale < 0 || !covers_norm_dims(g, m->scale, x, m->axis)) return 0;
  m->x = x;
  m->last = mul;
  m->bias = -1;
  add = sole(g, idx, g->nodes[mul].outputs[0]);
  if (mi__graph_is_op(g, add, "Add")) {
    int32_t b = other_operand(g, add, g->nodes[mul].outputs[0]);
    if (b >= 0 && covers_norm_dims(g, b, x, m->axis)) {
      m->bias = b;
      m->last = add;
    }
  }
  return 1;
}

int mi__graph_ln_fusable(const mi_graph_t *g) {
  ln_match_t m;
  int32_t *idx = g ? mi__graph_sole_readers(g) : NULL; /* (NULL: the look-ups scan) */
  int found = 0;
  for (int32_t i = 0; g && i < g->node_count && !found; i++) found = match_at_div(g, idx, i, &m);
  free(idx);
  return found;
}

/* Rewrites node m->last into LayerNormalization(x, scale[, bias]) with the same output. */
static int32_t rewrite(mi_graph_t *g, const ln_match_t *m) {
  mi_node_t *n = &g->nodes[m->last];
  char *op = mi__strdup("LayerNormalization");
  int32_t *in = malloc(3 * sizeof *in);
  if (!op || !in || mi__node_own_strings(n)) {
    free(op);
    free(in);
    return MI_ERR_OUT_OF_MEMORY;
  }
  in[0] = m->x;
  in[1] = m->scale;
  in[2] = m->bias;
  free(n->op_type);
  n->op_type = op;
  free(n->inputs);
  n->inputs = in;
  n->input_count = m->bias >= 0 ? 3 : 2;
  for (int32_t a = 0; a < n->attr_count; a++) mi__attr_release(&n->attrs[a]);
  n->attr_count = 0;
  if (mi_node_set_int(g, m->last, "axis", m->axis) != MI_OK ||
      mi_node_set_float(g, m->last, "epsilon", m->eps) != MI_OK)
    return MI_ERR_OUT_OF_MEMORY;
  return MI_OK;
}

int32_t mi__graph_fuse_layernorms(mi_graph_t *g) {
  int32_t fused = 0, *idx = mi__graph_sole_readers(g); /* (NULL: the look-ups scan) */
  for (int32_t i = 0; i < g->node_count; i++) {
    ln_match_t m;
    if (!match_at_div(g, idx, i, &m)) continue;
    /* The other nodes keep their outputs, read by nobody now: the session skips them. */
    if (rewrite(g, &m) != MI_OK) {
      free(idx);
      return -MI_ERR_OUT_OF_MEMORY;
    }
    fused++;
    /* The rewritten node reads other tensors: the index of the graph as it is now. */
    free(idx);
    idx = mi__graph_sole_readers(g);
  }
  free(idx);
  return fused;
}
