/* qdq_block.c - a depthwise-separable block in QDQ form as one kernel. A QDQ export writes a
 * MobileNet/BlazeFace block as three lowered layers, each alone in a kernel: the depthwise Conv
 * (codes out), the pointwise Conv reading them, the residual Add reading its codes. The FP32
 * form runs the same block as one kernel (MI_FUSE_CONV), a band of rows at a time in cache; apart,
 * the INT8 form writes and reads each intermediate plane in memory and pays a kernel call per
 * layer. Here the lowered units become one unit (kind 2) whose kernel describes the three ops
 * over codes (each layer's tensors substituted as its own lowered kernel has them; the Q and DQ
 * nodes between are absorbed), offered to a device whose INT8 Conv variant declares
 * MI_FUSE_CONV. Refused, each lowered layer is prepared alone as before (prepare.c). */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "graph/graph.h"

static int plain(const mi_graph_t *g, int32_t n, const char *op) {
  return n >= 0 && strcmp(g->nodes[n].op_type, op) == 0 && !(g->nodes[n].domain && g->nodes[n].domain[0]);
}

/* The device computes a lowered Conv in INT8 and fuses a conv into a conv for it. */
static int block_device(const mi_variant_desc_t *vars, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(vars[i].op_type, "Conv", sizeof vars[i].op_type) == 0 &&
        (vars[i].dtype_mask & (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8))) &&
        (vars[i].fuse_mask & MI_FUSE_CONV))
      return 1;
  return 0;
}

static int64_t ints_attr_all(const mi_node_t *c, const char *name, int64_t want) {
  const mi_attr_t *a = mi_node_attr(c, name);
  if (!a) return 1;
  if (a->type != MI_ATTR_INTS) return 0;
  for (int32_t i = 0; i < a->count; i++)
    if (a->ints[i] != want) return 0;
  return 1;
}

/* Lowered unit u's op is a depthwise Conv (group == input channels > 1) / a pointwise one (1x1,
 * stride 1, no pads, group 1), by its constant weight's shape and its attributes. */
static int conv_kind(const mi_graph_t *g, mi_array_t *const *consts, const mi__unit_t *u, int pointwise) {
  const mi_node_t *c = &g->nodes[u->op];
  const mi_array_t *w = consts[g->nodes[u->dqw].inputs[0]];
  const mi_tensor_t *x = c->inputs[0] >= 0 ? &g->tensors[c->inputs[0]] : NULL;
  const mi_attr_t *ap = mi_node_attr(c, "auto_pad");
  int64_t grp = mi_node_attr_int(c, "group", 1);
  if (!plain(g, u->op, "Conv") || !w || w->rank != 4 || !x || x->rank != 4) return 0;
  if (x->layout != MI_LAYOUT_ANY && x->layout != MI_LAYOUT_NCHW) return 0;
  if (!pointwise) return grp > 1 && x->dims[1] == grp;
  if (ap && ap->s && strcmp(ap->s, "NOTSET") && strcmp(ap->s, "VALID")) return 0;
  return grp == 1 && w->dims[2] == 1 && w->dims[3] == 1 && ints_attr_all(c, "strides", 1) &&
         ints_attr_all(c, "pads", 0) && ints_attr_all(c, "dilations", 1);
}

/* The live lowered unit whose op reads codes tensor `codes` through its one skipped DQ, as
 * input slot 0 (or, for an Add, either slot: *slot says which); -1 when there is none or the
 * codes or the DQ's values have another reader. */
static int32_t reader_unit(const mi__plan_t *p, const mi_graph_t *g, int32_t codes, int32_t *slot) {
  int32_t dq = mi__plan_sole_reader(g, p, codes), r, ui;
  const mi__unit_t *u;
  if (dq < 0 || !plain(g, dq, "DequantizeLinear") || p->role[dq] != MI__ROLE_DQ_SKIP ||
      g->nodes[dq].inputs[0] != codes || g->nodes[dq].output_count != 1)
    return -1;
  if ((r = mi__plan_sole_reader(g, p, g->nodes[dq].outputs[0])) < 0 || (ui = p->unit[r]) < 0) return -1;
  u = &p->units[ui];
  if (u->kind != 1 || u->dead || u->op != r || (p->pinned && p->pinned[r])) return -1;
  if (u->dqx == dq && u->dqw != dq) *slot = 0;
  else if (u->dqw == dq && u->dqx != dq)
    *slot = 1;
  else
    return -1;
  return ui;
}

static int32_t add_block(mi__plan_t *p, const int32_t *sub, int32_t n) {
  mi__unit_t b, *grown;
  memset(&b, 0, sizeof b);
  b.kind = 2;
  b.dqx = b.dqw = b.act = b.q = -1;
  for (int32_t i = 0; i < n; i++) {
    const mi__unit_t *l = &p->units[sub[i]];
    for (int32_t k = 0; k < l->count; k++) b.nodes[b.count++] = l->nodes[k];
    b.sub[b.sub_count++] = sub[i];
  }
  /* node order: the kernel runs at its last member */
  for (int32_t i = 1; i < b.count; i++)
    for (int32_t j = i; j > 0 && b.nodes[j - 1] > b.nodes[j]; j--) {
      int32_t t = b.nodes[j];
      b.nodes[j] = b.nodes[j - 1];
      b.nodes[j - 1] = t;
    }
  b.at = b.nodes[b.count - 1];
  b.op = p->units[sub[0]].op;
  if (!(grown = realloc(p->units, (size_t)(p->unit_count + 1) * sizeof *grown))) return MI_ERR_OUT_OF_MEMORY;
  p->units = grown;
  p->units[p->unit_count] = b;
  for (int32_t i = 0; i < b.count; i++) p->unit[b.nodes[i]] = p->unit_count;
  p->unit_count++;
  return MI_OK;
}

int32_t mi__qdq_block_plan(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                           const mi_variant_desc_t *vars, uint32_t var_count) {
  if (!block_device(vars, var_count)) return MI_OK;
  for (int32_t a = 0, count = p->unit_count; a < count; a++) {
    int32_t sub[3], n = 1, slot = 0, b, c, ta, tb;
    const mi__unit_t *ua = &p->units[a];
    if (ua->kind != 1 || ua->dead || (p->pinned && p->pinned[ua->op]) || !conv_kind(g, consts, ua, 0)) continue;
    if (p->unit[ua->op] != a) continue; /* already in a block */
    ta = g->nodes[ua->q].outputs[0];
    if (mi__graph_is_output(g, ta) || (b = reader_unit(p, g, ta, &slot)) < 0 || slot != 0 ||
        !conv_kind(g, consts, &p->units[b], 1))
      continue;
    sub[0] = a;
    sub[n++] = b;
    tb = g->nodes[p->units[b].q].outputs[0];
    /* the residual Add: its other operand is ready before the block runs (at its last member) */
    if (!mi__graph_is_output(g, tb) && (c = reader_unit(p, g, tb, &slot)) >= 0 && plain(g, p->units[c].op, "Add"))
      sub[n++] = c;
    if (add_block(p, sub, n)) return MI_ERR_OUT_OF_MEMORY;
  }
  return MI_OK;
}
