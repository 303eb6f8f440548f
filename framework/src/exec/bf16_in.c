/* bf16_in.c - layers the BF16 transform rounded (x -> Cast(to=BFLOAT16) -> Cast(to=FLOAT) -> a
 * Conv, MatMul or Gemm whose weight it rounded too, docs/transforms.md) run by a device variant
 * that computes in BF16: MI_DTYPE_BFLOAT16 and not FLOAT32 in its dtype_mask, operands rounded
 * to BF16 to nearest even and FP32 sums (docs/abi.md). Its kernel reads x, which it rounds
 * itself, and the two Casts do not run. Where the device has no such variant for the op, or
 * refuses the layer with it, the Casts run and the layer computes in FP32 on the rounded values:
 * the same numerics up to the order of the sums. A pointwise conv so rounded after a depthwise
 * one joins its group (plan.c) as a member on the BF16 variant (member_choices, prepare.c), so
 * the device's one-pass dw+pw kernel still takes the pair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/prepare.h"
#include "graph/graph.h"

const char *mi__bf16_variant(const mi_variant_desc_t *vars, uint32_t n, const char *op) {
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(vars[i].op_type, op, sizeof vars[i].op_type) == 0 &&
        (vars[i].dtype_mask & MI_DTYPE_BIT(MI_DTYPE_BFLOAT16)) && !(vars[i].dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32)))
      return vars[i].id;
  return NULL;
}

/* Node n is a Cast to ONNX type `to` the plan left on its own, whose output only `reader` reads. */
static int lone_cast(const mi_graph_t *g, const mi__plan_t *p, int32_t n, int64_t to, int32_t reader) {
  const mi_node_t *c = n >= 0 ? &g->nodes[n] : NULL;
  return c && mi__graph_is_op(g, n, "Cast") && p->role[n] == MI__ROLE_NODE && c->input_count == 1 &&
         c->output_count == 1 && c->inputs[0] >= 0 && c->outputs[0] >= 0 && mi_node_attr_int(c, "to", 0) == to &&
         mi__plan_sole_reader(g, p, c->outputs[0]) == reader;
}

/* Tensor t is stored in another layout than NCHW (the session's dlayout, prepare.c). */
static int stored_other(const mi_tensor_t *t) {
  return t->rank == 4 && !t->data && (t->layout == MI_LAYOUT_NHWC || (t->layout == MI_LAYOUT_NCHWC && t->block > 0));
}

void mi__bf16_casts(const mi_graph_t *g, int32_t i, int32_t *c1, int32_t *c2) {
  const mi_node_t *n = &g->nodes[i];
  *c2 = n->input_count > 0 && n->inputs[0] >= 0 ? g->tensors[n->inputs[0]].producer : -1;
  *c1 = *c2 >= 0 && g->nodes[*c2].input_count > 0 && g->nodes[*c2].inputs[0] >= 0
            ? g->tensors[g->nodes[*c2].inputs[0]].producer
            : -1;
}

int32_t mi__bf16_source(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts,
                        const mi_variant_desc_t *vars, uint32_t var_count, int32_t i) {
  const mi_node_t *n = &g->nodes[i];
  int32_t c1, c2, x;
  if (n->input_count < 2 || n->inputs[0] < 0 ||
      (strcmp(n->op_type, "Conv") && strcmp(n->op_type, "MatMul") && strcmp(n->op_type, "Gemm")) ||
      (n->domain && n->domain[0]) || !mi__bf16_variant(vars, var_count, n->op_type))
    return -1;
  mi__bf16_casts(g, i, &c1, &c2);
  if (!lone_cast(g, p, c2, 1, i) || !lone_cast(g, p, c1, 16, c2)) return -1;
  x = g->nodes[c1].inputs[0];
  if (consts[x] || g->tensors[x].dtype != MI_DTYPE_FLOAT32) return -1;
  for (int32_t j = 0; j < n->input_count + n->output_count; j++) {
    int32_t t = j < n->input_count ? n->inputs[j] : n->outputs[j - n->input_count];
    if (t >= 0 && stored_other(&g->tensors[t])) return -1;
  }
  return x;
}

int32_t mi__bf16_plan(mi__prep_t *p, mi_error_t *err) {
  const mi_graph_t *g = p->s->g;
  for (int32_t i = 0; i < g->node_count; i++) {
    int32_t r = p->plan.role[i], u = p->plan.unit[i], c1, c2, x;
    /* alone, the anchor of a fused group (its epilogue), or the conv a depthwise conv's group or
     * a gate Mul's took through the Casts (plan.c) */
    if (!(r == MI__ROLE_NODE ||
          (r == MI__ROLE_MEMBER && u >= 0 && p->plan.units[u].kind == 0 &&
           (p->plan.units[u].op == i ||
            (mi__graph_is_op(g, i, "Conv") && (mi__graph_is_op(g, p->plan.units[u].op, "Conv") ||
                                               mi__graph_is_op(g, p->plan.units[u].op, "Mul")))))))
      continue;
    if ((x = mi__bf16_source(g, &p->plan, p->s->consts, p->vars, p->var_count, i)) < 0) continue;
    if (!p->bf16_src) {
      if (!(p->bf16_src = malloc(((size_t)g->node_count + 1) * sizeof *p->bf16_src)))
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
      for (int32_t k = 0; k <= g->node_count; k++) p->bf16_src[k] = -1;
    }
    p->bf16_src[i] = x;
    mi__bf16_casts(g, i, &c1, &c2);
    p->plan.role[c1] = p->plan.role[c2] = MI__ROLE_BF16_SKIP;
  }
  return MI_OK;
}

int32_t mi__prep_bf16(mi__prep_t *p, mi__kreq_t *req, int32_t anchor, int *refused, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_graph_t *g = s->g;
  int32_t from[MI__UNIT_MAX + 1], to[MI__UNIT_MAX + 1], c1, c2, rc, ns = req->subst_count;
  const int32_t *keep_from = req->subst_from, *keep_to = req->subst_to;
  const char *variant = mi__bf16_variant(p->vars, p->var_count, g->nodes[anchor].op_type);
  mi_error_t perr = {0};
  mi__kdesc_t k;
  int fatal = 0;
  char line[MI_ERROR_MESSAGE_SIZE + 160], lb[32];
  *refused = 0;
  mi__bf16_casts(g, anchor, &c1, &c2);
  if (ns > MI__UNIT_MAX) return mi_errorf(err, MI_ERR_INTERNAL, "BF16 layer: %d substitutions", (int)ns);
  /* the anchor's input as its source, after the caller's substitutions (a member's, prepare_unit.c) */
  for (int32_t i = 0; i < ns; i++) {
    from[i] = keep_from[i];
    to[i] = keep_to[i];
  }
  from[ns] = g->nodes[anchor].inputs[0];
  to[ns] = p->bf16_src[anchor];
  req->subst_from = from;
  req->subst_to = to;
  req->subst_count = ns + 1;
  rc = mi__kdesc_build_req(&k, g, req, s->consts, err);
  req->subst_from = keep_from;
  req->subst_to = keep_to;
  req->subst_count = ns;
  if (rc) return rc;
  rc = mi__prep_try_kernel(p, &k, anchor, req->nodes, req->node_count, variant, MI_LAYOUT_NCHW,
                           MI_DTYPE_BIT(MI_DTYPE_BFLOAT16), &perr, &fatal, err);
  mi__kdesc_free(&k);
  if (rc == MI_OK || fatal) return rc;
  if (rc != MI_ERR_UNSUPPORTED && rc != MI_ERR_INVALID_CONFIG) return mi__prep_finish(p, anchor, rc, 0, &perr, err);
  /* Refused: the rounding runs as the Casts, before the layer (their input is computed by now). */
  *refused = 1;
  p->bf16_src[anchor] = -1;
  snprintf(line, sizeof line, "BF16 layer '%s': %s; its input Casts run and it computes in FP32",
           mi__node_label(g, anchor, lb, sizeof lb), perr.message[0] ? perr.message : mi_status_message(rc));
  if ((rc = mi__prep_push_line(&s->unfused, &s->unfused_count, line, err))) return rc;
  p->plan.role[c1] = p->plan.role[c2] = MI__ROLE_NODE;
  if ((rc = mi__prep_single(p, c1, err))) return rc;
  return mi__prep_single(p, c2, err);
}
