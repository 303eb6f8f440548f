/* bf16_in.c - layers the BF16 transform rounded (x -> Cast(to=BFLOAT16) -> Cast(to=FLOAT) -> a
 * Conv, MatMul or Gemm whose weight it rounded too, docs/transforms.md) run by a device variant
 * that computes in BF16: MI_DTYPE_BFLOAT16 and not FLOAT32 in its dtype_mask, operands rounded
 * to BF16 to nearest even and FP32 sums (docs/abi.md). Its kernel reads x, which it rounds
 * itself, and the two Casts do not run. Where the device has no such variant for the op, or
 * refuses the layer with it, the Casts run and the layer computes in FP32 on the rounded values:
 * the same numerics up to the order of the sums. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/prepare.h"
#include "graph/graph.h"

static const char *bf16_variant(const mi__prep_t *p, const char *op) {
  for (uint32_t i = 0; i < p->var_count; i++)
    if (strncmp(p->vars[i].op_type, op, sizeof p->vars[i].op_type) == 0 &&
        (p->vars[i].dtype_mask & MI_DTYPE_BIT(MI_DTYPE_BFLOAT16)) &&
        !(p->vars[i].dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32)))
      return p->vars[i].id;
  return NULL;
}

/* Node n is a Cast to ONNX type `to` the plan left on its own, whose output only `reader` reads. */
static int lone_cast(const mi_graph_t *g, const mi__plan_t *p, int32_t n, int64_t to, int32_t reader) {
  const mi_node_t *c = n >= 0 ? &g->nodes[n] : NULL;
  return c && mi__graph_is_op(g, n, "Cast") && p->role[n] == MI__ROLE_NODE && c->input_count == 1 &&
         c->output_count == 1 && c->inputs[0] >= 0 && c->outputs[0] >= 0 && mi_node_attr_int(c, "to", 0) == to &&
         mi__plan_sole_reader(g, p, c->outputs[0]) == reader;
}

int32_t mi__bf16_plan(mi__prep_t *p, mi_error_t *err) {
  const mi_graph_t *g = p->s->g;
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int32_t r = p->plan.role[i], u = p->plan.unit[i], c2, c1, x;
    if (n->input_count < 2 || n->inputs[0] < 0 ||
        (strcmp(n->op_type, "Conv") && strcmp(n->op_type, "MatMul") && strcmp(n->op_type, "Gemm")) ||
        (n->domain && n->domain[0]))
      continue;
    /* alone, or the anchor of a fused group (its epilogue) */
    if (!(r == MI__ROLE_NODE || (r == MI__ROLE_MEMBER && u >= 0 && p->plan.units[u].kind == 0 &&
                                 p->plan.units[u].op == i)))
      continue;
    c2 = g->tensors[n->inputs[0]].producer;
    if (!lone_cast(g, &p->plan, c2, 1, i)) continue;
    c1 = g->tensors[g->nodes[c2].inputs[0]].producer;
    if (!lone_cast(g, &p->plan, c1, 16, c2)) continue;
    x = g->nodes[c1].inputs[0];
    if (p->s->consts[x] || g->tensors[x].dtype != MI_DTYPE_FLOAT32 || !bf16_variant(p, n->op_type) ||
        mi__prep_node_layout(p->s, i) != MI_LAYOUT_NCHW)
      continue;
    if (!p->bf16_src) {
      if (!(p->bf16_src = malloc(((size_t)g->node_count + 1) * sizeof *p->bf16_src)))
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
      for (int32_t k = 0; k <= g->node_count; k++) p->bf16_src[k] = -1;
    }
    p->bf16_src[i] = x;
    p->plan.role[c1] = p->plan.role[c2] = MI__ROLE_BF16_SKIP;
  }
  return MI_OK;
}

int32_t mi__prep_bf16(mi__prep_t *p, mi__kreq_t *req, int32_t anchor, int *refused, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_graph_t *g = s->g;
  int32_t from = g->nodes[anchor].inputs[0], to = p->bf16_src[anchor], c2 = g->tensors[from].producer;
  int32_t c1 = g->tensors[g->nodes[c2].inputs[0]].producer, rc;
  mi_error_t perr = {0};
  mi__kdesc_t k;
  int fatal = 0;
  char line[MI_ERROR_MESSAGE_SIZE + 160], lb[32];
  *refused = 0;
  req->subst_from = &from;
  req->subst_to = &to;
  req->subst_count = 1;
  rc = mi__kdesc_build_req(&k, g, req, s->consts, err);
  req->subst_from = req->subst_to = NULL;
  req->subst_count = 0;
  if (rc) return rc;
  rc = mi__prep_try_kernel(p, &k, anchor, req->nodes, req->node_count, bf16_variant(p, g->nodes[anchor].op_type),
                           MI_LAYOUT_NCHW, MI_DTYPE_BIT(MI_DTYPE_BFLOAT16), &perr, &fatal, err);
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
