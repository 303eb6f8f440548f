/* concat_alias.c - concat elimination: a Concat whose output stores its inputs one after another
 * (plain NCHW, every dim before the axis of extent 1) runs as nothing, its producers writing
 * straight into their slices of its buffer (memplan.c gives them views), and its step only
 * writes the constant parts. */
#include <string.h>

#include "exec/exec.h"

/* The byte offset of each node input of a single-node Concat step within its output, when the
 * output is their contiguous stack in device storage: the same dtype and plain NCHW throughout
 * (blocked channels would interleave), static shapes, and every dim before the axis of extent 1
 * (a batch of 2 would interleave the inputs' halves). 1 and the offsets in off[], else 0. */
int mi__concat_stack(const mi_session_t *s, const mi__step_t *st, uint64_t *off) {
  const mi_graph_t *g = s->g;
  const mi_node_t *n = &g->nodes[st->node];
  const mi_tensor_t *y;
  uint64_t at = 0;
  int64_t axis;
  int ok;
  if (st->kind != MI__STEP_DEVICE || st->node_count != 1 || st->output_count != 1 ||
      strcmp(n->op_type, "Concat") != 0 || n->output_count != 1 || n->input_count < 1 ||
      n->input_count > MI__CONCAT_MAX_INPUTS || st->outputs[0] != n->outputs[0])
    return 0;
  y = &g->tensors[st->outputs[0]];
  axis = mi_node_attr_int(n, "axis", 0);
  if (y->rank < 1 || s->dlayout[st->outputs[0]] != MI_LAYOUT_NCHW) return 0;
  if (axis < 0) axis += y->rank;
  if (axis < 0 || axis >= y->rank) return 0;
  for (int32_t d = 0; d < axis; d++)
    if (y->dims[d] != 1) return 0;
  for (int32_t j = 0; j < n->input_count; j++) {
    int32_t t = n->inputs[j];
    const mi_tensor_t *x;
    if (t < 0) return 0;
    x = &g->tensors[t];
    if (x->dtype != y->dtype || x->rank != y->rank || (!s->consts[t] && s->dlayout[t] != MI_LAYOUT_NCHW))
      return 0;
    off[j] = at;
    at += mi__tensor_bytes(x, &ok);
    if (!ok || (s->consts[t] && s->consts[t]->nbytes != mi__tensor_bytes(x, &ok))) return 0;
  }
  return at == mi__stored_bytes(y, MI_LAYOUT_NCHW, 0, &ok) && ok;
}

/* The step of an eliminated Concat: the runtime inputs are already in place (their producers
 * wrote them there), so only the constant inputs' bytes are written, every run, since the
 * allocation is shared with tensors of other lifetimes. */
int32_t mi__concat_alias_run(mi_session_t *s, const mi__step_t *st, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  const mi_node_t *n = &s->g->nodes[st->node];
  uint64_t off[MI__CONCAT_MAX_INPUTS];
  char lb[32];
  if (!mi__concat_stack(s, st, off))
    return mi_errorf(err, MI_ERR_INTERNAL, "node '%s': eliminated Concat is not a stack",
                     mi__node_label(s->g, st->node, lb, sizeof lb));
  for (int32_t j = 0; j < n->input_count; j++) {
    const mi_array_t *c = s->consts[n->inputs[j]];
    mi_error_t perr = {0};
    int32_t rc;
    if (!c || !c->nbytes) continue;
    rc = p->api.buffer_write(p->ctx, s->bufs[st->outputs[0]], off[j], c->data, c->nbytes, &perr);
    s->xfer_in += c->nbytes;
    if (rc)
      return mi_errorf(err, rc, "node '%s' (Concat): writing constant input %d: %s",
                       mi__node_label(s->g, st->node, lb, sizeof lb), (int)j,
                       perr.message[0] ? perr.message : mi_status_message(rc));
  }
  return MI_OK;
}
