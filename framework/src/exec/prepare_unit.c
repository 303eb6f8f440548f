/* prepare_unit.c - preparing a plan's units as one kernel each: a fused group (described with its
 * anchor's choice), a lowered quantized layer (the op on the codes) and a QDQ block; a unit the
 * plugin refuses is noted and its nodes are prepared one by one. */
#include <stdio.h>
#include <string.h>

#include "exec/prepare.h"
#include "graph/graph.h"

static const char *int8_variant_id(const mi__prep_t *p, const char *op) {
  for (uint32_t i = 0; i < p->var_count; i++)
    if (strncmp(p->vars[i].op_type, op, sizeof p->vars[i].op_type) == 0 &&
        (p->vars[i].dtype_mask & (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8))))
      return p->vars[i].id;
  return NULL;
}

static int32_t note_refusal(mi__prep_t *p, const mi__unit_t *u, const mi_error_t *perr,
                            mi_error_t *err) {
  char line[MI_ERROR_MESSAGE_SIZE + 160], lb[32];
  snprintf(line, sizeof line, "%s of '%s' (%d nodes): %s; ran node by node",
           u->kind ? "quantized layer" : "group",
           mi__node_label(p->s->g, u->op, lb, sizeof lb), (int)u->count,
           perr->message[0] ? perr->message : mi_status_message(perr->code));
  return mi__prep_push_line(&p->s->unfused, &p->s->unfused_count, line, err);
}

/* One kernel for unit u (a lowered layer or a fused group), described by `req`. MI_OK with
 * *refused = 1 when the plugin declined it: u is dead and the refusal noted, and the caller
 * prepares its nodes one by one; other failures are the unit's error. */
static int32_t try_unit(mi__prep_t *p, mi__unit_t *u, const mi__kreq_t *req, const char *variant,
                        int32_t layout, uint32_t dtypes, int *refused, mi_error_t *err) {
  mi_error_t perr = {0};
  mi__kdesc_t k;
  int fatal = 0;
  int32_t rc;
  *refused = 0;
  if (mi__retake_step(&p->retake, p->s, u->op, u->nodes, u->count)) return MI_OK;
  if ((rc = mi__kdesc_build_req(&k, p->s->g, req, p->s->consts, err))) return rc;
  rc = mi__prep_try_kernel(p, &k, u->op, u->nodes, u->count, variant, layout, dtypes, &perr, &fatal, err);
  mi__kdesc_free(&k);
  if (rc == MI_OK || fatal) return rc;
  if (rc != MI_ERR_UNSUPPORTED && rc != MI_ERR_INVALID_CONFIG)
    return mi__prep_finish(p, u->op, rc, 0, &perr, err);
  u->dead = 1;
  *refused = 1;
  perr.code = rc;
  return note_refusal(p, u, &perr, err);
}

/* A lowered layer: the op alone, reading the input codes and the INT8 weight, writing the
 * output codes of the QuantizeLinear. Refused: its Q/DQ nodes run as ordinary ops again. */
int32_t mi__prep_lowered(mi__prep_t *p, mi__unit_t *u, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_graph_t *g = s->g;
  const mi_node_t *op = &g->nodes[u->op];
  int32_t from[3] = {op->inputs[0], op->inputs[1], op->outputs[0]};
  int32_t to[3] = {g->nodes[u->dqx].inputs[0], g->nodes[u->dqw].inputs[0],
                   g->nodes[u->q].outputs[0]};
  mi__kreq_t req = {&u->op, 1, from, to, 3, 0, NULL, 0, NULL, NULL, NULL};
  int refused;
  int32_t rc = try_unit(p, u, &req, int8_variant_id(p, op->op_type), MI_LAYOUT_NCHW,
                        MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8), &refused, err);
  if (rc || !refused) return rc;
  /* A chain's kernel on the same codes does not write their float value: run the DQ apart. */
  if (mi__qdq_chain_dq_apart(&p->plan, u->dqx, u->at) && (rc = mi__prep_single(p, u->dqx, err))) return rc;
  if (u->dqw != u->dqx && mi__qdq_chain_dq_apart(&p->plan, u->dqw, u->at) && (rc = mi__prep_single(p, u->dqw, err)))
    return rc;
  /* Its DequantizeLinears were skipped when only lowered layers read them: revive them. */
  if (p->plan.role[u->dqx] == MI__ROLE_DQ_SKIP) {
    p->plan.role[u->dqx] = MI__ROLE_NODE;
    if ((rc = mi__prep_single(p, u->dqx, err))) return rc;
  }
  if (p->plan.role[u->dqw] == MI__ROLE_DQ_SKIP && !p->folded[u->dqw]) {
    p->plan.role[u->dqw] = MI__ROLE_NODE;
    rc = mi__prep_fold(p, u->dqw, 1, err);
    if (rc < 0) return -rc;
    if (rc == 0 && (rc = mi__prep_single(p, u->dqw, err))) return rc;
  }
  return mi__prep_single(p, u->op, err);
}

/* A QDQ block (qdq_block.c): its lowered layers' ops in one kernel, each with its own lowered
 * layer's substitutions, the Q/DQ nodes between absorbed. Refused: each lowered layer alone. */
int32_t mi__prep_block(mi__prep_t *p, mi__unit_t *u, mi_error_t *err) {
  const mi_graph_t *g = p->s->g;
  int32_t ops[3], from[9], to[9], absorbed[MI__UNIT_MAX + 6], na = 0, rc;
  mi__kreq_t req;
  mi__unit_t view = *u;
  int refused;
  for (int32_t i = 0; i < u->sub_count; i++) {
    const mi__unit_t *l = &p->plan.units[u->sub[i]];
    const mi_node_t *op = &g->nodes[l->op];
    ops[i] = l->op;
    from[3 * i] = op->inputs[0];
    from[3 * i + 1] = op->inputs[1];
    from[3 * i + 2] = op->outputs[0];
    to[3 * i] = g->nodes[l->dqx].inputs[0];
    to[3 * i + 1] = g->nodes[l->dqw].inputs[0];
    to[3 * i + 2] = g->nodes[l->q].outputs[0];
    for (int32_t k = 0; k < l->count; k++)
      if (l->nodes[k] != l->op) absorbed[na++] = l->nodes[k];
    absorbed[na++] = l->dqx;
    absorbed[na++] = l->dqw;
  }
  memset(&req, 0, sizeof req);
  req.nodes = ops;
  req.node_count = u->sub_count;
  req.subst_from = from;
  req.subst_to = to;
  req.subst_count = 3 * u->sub_count;
  req.absorbed = absorbed;
  req.absorbed_count = na;
  view.nodes[0] = ops[0]; /* the kernel's nodes are the ops: its step and its profile row name them */
  view.nodes[1] = ops[1];
  view.nodes[2] = ops[2 % u->sub_count];
  view.count = u->sub_count;
  rc = try_unit(p, &view, &req, int8_variant_id(p, "Conv"), MI_LAYOUT_NCHW,
                MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8), &refused, err);
  u->dead = view.dead;
  if (rc || !refused) return rc;
  for (int32_t i = 0; i < u->sub_count; i++)
    if ((rc = mi__prep_lowered(p, &p->plan.units[u->sub[i]], err))) return rc;
  return MI_OK;
}

/* A fused group, described with the anchor's choice; refused: its nodes one by one. */
int32_t mi__prep_group(mi__prep_t *p, mi__unit_t *u, mi_error_t *err) {
  mi_session_t *s = p->s;
  mi__kreq_t req = {u->nodes, u->count, NULL, NULL, 0, 0, NULL, 0, NULL, NULL, NULL};
  const char *variant = NULL;
  int32_t lay = mi__prep_node_layout(s, u->op), rc, readers[MI__UNIT_MAX + 2], from[1], to[1];
  int refused;
  if (lay != MI_LAYOUT_NCHW)
    variant = mi__variant_for_layout(p->vars, p->var_count, s->g->nodes[u->op].op_type, lay);
  /* A quantized chain whose DQ value only lowered layers read (they read the codes): their
   * reads do not make the kernel write that float plane. */
  req.absorbed_count = mi__qdq_chain_code_readers(&p->plan, s->g, u, readers, MI__UNIT_MAX);
  req.absorbed = readers;
  req.role = p->plan.role;
  req.rd_off = p->rd_off;
  req.rd_node = p->rd_node;
  if (req.absorbed_count && u->dq_state == 0) u->dq_state = 1;
  /* The pointwise conv a depthwise conv's group took through the BF16 Casts (plan.c): it reads
   * their source, on its BF16 variant (member_choices, prepare.c); the Casts are no reads. */
  for (int32_t m = 1; p->bf16_src && m < u->count && !req.subst_count; m++) {
    int32_t i = u->nodes[m];
    if (i == u->op || p->bf16_src[i] < 0) continue;
    from[0] = s->g->nodes[i].inputs[0];
    to[0] = p->bf16_src[i];
    mi__bf16_casts(s->g, i, &readers[req.absorbed_count], &readers[req.absorbed_count + 1]);
    req.absorbed_count += 2;
    req.subst_from = from;
    req.subst_to = to;
    req.subst_count = 1;
  }
  if (p->bf16_src && p->bf16_src[u->op] >= 0) {
    /* a BF16 layer and its epilogue: on the BF16 variant, or (refused) the Casts run first */
    if (mi__retake_step(&p->retake, s, u->op, u->nodes, u->count)) return MI_OK;
    if ((rc = mi__prep_bf16(p, &req, u->op, &refused, err)) || !refused) return rc;
  }
  if ((rc = try_unit(p, u, &req, variant, lay, 0, &refused, err)) || !refused) return rc;
  for (int32_t m = 0; m < u->count; m++) { /* (a chain's DQ that already runs apart: once) */
    if (!m && u->dq_state == 2) continue;
    /* a weight's DequantizeLinear (qdq_weight.c): its float value, once, as when it is no member */
    if (mi__prep_dq_of_constants(s, u->nodes[m]) && (rc = mi__prep_fold(p, u->nodes[m], 1, err)) != 0) {
      if (rc < 0) return -rc;
      continue;
    }
    if ((rc = mi__prep_single(p, u->nodes[m], err))) return rc;
  }
  return MI_OK;
}

int mi__prep_dq_of_constants(const mi_session_t *s, int32_t i) {
  const mi_node_t *n = &s->g->nodes[i];
  if (strcmp(n->op_type, "DequantizeLinear") != 0) return 0;
  for (int32_t j = 0; j < n->input_count; j++)
    if (n->inputs[j] >= 0 && !s->consts[n->inputs[j]]) return 0;
  return 1;
}
