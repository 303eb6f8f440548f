/* retake.c - a session prepared again for other shapes takes over, without describing them
 * again, the donor's device steps whose described tensors did not change. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

static int same_str(const char *a, const char *b) {
  if (a == b) return 1;
  if (!a || !b) return (!a || !a[0]) && (!b || !b[0]);
  return strcmp(a, b) == 0;
}

static int same_attr(const mi_attr_t *a, const mi_attr_t *b) {
  if (!same_str(a->name, b->name) || a->type != b->type || a->count != b->count || a->i != b->i ||
      memcmp(&a->f, &b->f, sizeof a->f) != 0)
    return 0;
  if (a->type == MI_ATTR_INTS && (!a->ints != !b->ints ||
                                  (a->ints && memcmp(a->ints, b->ints, (size_t)a->count * sizeof *a->ints))))
    return 0;
  if (a->type == MI_ATTR_FLOATS &&
      (!a->floats != !b->floats ||
       (a->floats && memcmp(a->floats, b->floats, (size_t)a->count * sizeof *a->floats))))
    return 0;
  return a->type != MI_ATTR_STRING || same_str(a->s, b->s);
}

/* 1 when g and h have the same nodes over the same tensor indices (ops, names, attributes,
 * edges) and the same graph inputs and outputs: a tensor index names the same value in both. */
/* (a loop rather than memcmp: the lists are a few entries long, a call each cost more) */
static int same_ints(const int32_t *a, const int32_t *b, int32_t n) {
  for (int32_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static int same_structure(const mi_graph_t *g, const mi_graph_t *h) {
  if (g->node_count != h->node_count || g->tensor_count != h->tensor_count || g->opset != h->opset ||
      g->input_count != h->input_count || g->output_count != h->output_count ||
      !same_ints(g->inputs, h->inputs, g->input_count) || !same_ints(g->outputs, h->outputs, g->output_count))
    return 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *a = &g->nodes[i], *b = &h->nodes[i];
    if (a->input_count != b->input_count || a->output_count != b->output_count ||
        a->attr_count != b->attr_count || a->subgraph_count != b->subgraph_count ||
        !same_ints(a->inputs, b->inputs, a->input_count) || !same_ints(a->outputs, b->outputs, a->output_count) ||
        !same_str(a->op_type, b->op_type) || !same_str(a->name, b->name) || !same_str(a->domain, b->domain))
      return 0;
    for (int32_t k = 0; a->attrs != b->attrs && k < a->attr_count; k++)
      if (!same_attr(&a->attrs[k], &b->attrs[k])) return 0;
  }
  return 1;
}

static int same_const(const mi_array_t *a, const mi_array_t *b) {
  if (a == b) return 1; /* (a folded value moved from the donor, or none on both sides) */
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes ||
      memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) != 0)
    return 0;
  /* (by value up to the size a kernel's signature holds by value, else by address: a step kept
   * here is one its signature would have found) */
  if (a->data == b->data) return 1;
  return a->nbytes <= MI__SIG_INLINE_BYTES && memcmp(a->data, b->data, a->nbytes) == 0;
}

/* 1 when tensor t is described the same in s as in its donor d (dconst: d's constants as they
 * were before s's folding moved some of them over). */
static int same_tensor(const mi_session_t *s, const mi_session_t *d, mi_array_t *const *dconst, int32_t t) {
  const mi_tensor_t *a = &s->g->tensors[t], *b = &d->g->tensors[t];
  if (a->dtype != b->dtype || a->rank != b->rank || a->layout != b->layout || a->block != b->block ||
      memcmp(&a->scale, &b->scale, sizeof a->scale) != 0 || a->zero_point != b->zero_point ||
      a->channel_axis != b->channel_axis || a->channel_count != b->channel_count ||
      s->dlayout[t] != d->dlayout[t] || s->dblock[t] != d->dblock[t])
    return 0;
  if (a->rank > 0 && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) != 0) return 0;
  if (a->channel_scales != b->channel_scales &&
      (!a->channel_scales || !b->channel_scales ||
       memcmp(a->channel_scales, b->channel_scales, (size_t)a->channel_count * sizeof(float)) != 0))
    return 0;
  return same_const(s->consts[t], dconst[t]);
}

void mi__retake_snapshot(mi__retake_t *r, const mi_session_t *s) {
  const mi_session_t *d = s->donor;
  memset(r, 0, sizeof *r);
  if (!d || !d->consts || d->g->tensor_count != s->g->tensor_count) return;
  if ((r->dconst = malloc(((size_t)d->g->tensor_count + 1) * sizeof *r->dconst)))
    memcpy(r->dconst, d->consts, (size_t)d->g->tensor_count * sizeof *r->dconst);
}

void mi__retake_begin(mi__retake_t *r, const mi_session_t *s) {
  const mi_session_t *d = s->donor;
  int32_t nt = s->g->tensor_count, nn = s->g->node_count;
  if (!r->dconst || !same_structure(s->g, d->g)) goto none;
  r->clean = malloc((size_t)nt + 1);
  r->at = malloc(((size_t)nn + 1) * sizeof *r->at);
  if (!r->clean || !r->at) goto none;
  for (int32_t t = 0; t < nt; t++) {
    /* A value constant in one and not the other changes what is folded and planned around it:
     * the plan would not be the donor's. */
    if (!s->consts[t] != !r->dconst[t]) goto none;
    r->clean[t] = (uint8_t)same_tensor(s, d, r->dconst, t);
  }
  for (int32_t i = 0; i < nn; i++) r->at[i] = -1;
  for (int32_t i = d->step_count - 1; i >= 0; i--) /* (the first step anchored at a node) */
    if (d->steps[i].kind == MI__STEP_DEVICE && d->steps[i].node >= 0 && d->steps[i].node < nn)
      r->at[d->steps[i].node] = i;
  return;
none:
  mi__retake_free(r);
}

/* FNV-1a over the plan's roles and units as planned (before preparing marks units refused). */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

void mi__retake_plan(mi__retake_t *r, mi_session_t *s, const mi__plan_t *p) {
  uint64_t h = 1469598103934665603ull;
  if (!s->reusable && !s->donor) return; /* (only a donor's is asked for) */
  h = mix(h, &p->node_count, sizeof p->node_count);
  h = mix(h, p->role, (size_t)p->node_count * sizeof *p->role);
  h = mix(h, p->unit, (size_t)p->node_count * sizeof *p->unit);
  for (int32_t u = 0; u < p->unit_count; u++) {
    const mi__unit_t *x = &p->units[u];
    int32_t f[11] = {x->kind, x->count, x->at, x->op, x->dqx, x->dqw, x->act, x->q, x->dead, x->sub_count, x->dq_state};
    h = mix(h, f, sizeof f);
    h = mix(h, x->nodes, (size_t)x->count * sizeof x->nodes[0]);
    h = mix(h, x->sub, (size_t)x->sub_count * sizeof x->sub[0]);
  }
  s->plan_hash = h;
  /* Units, roles and the nodes each kernel runs are the donor's, or nothing is taken whole. */
  if (r->clean && s->donor->plan_hash != h) mi__retake_free(r);
}

void mi__retake_free(mi__retake_t *r) {
  free(r->dconst);
  free(r->clean);
  free(r->at);
  memset(r, 0, sizeof *r);
}

int mi__retake_step(const mi__retake_t *r, mi_session_t *s, int32_t anchor, const int32_t *nodes, int32_t count) {
  mi__step_t *from, *st;
  if (!r->clean || !s->donor) return 0;
  if (r->at[anchor] < 0) return 0;
  from = &s->donor->steps[r->at[anchor]];
  if (!from->kernel || !from->sig || from->desc_count <= 0 || from->node_count != count) return 0;
  if (count > 1 ? memcmp(from->nodes, nodes, (size_t)count * sizeof *nodes) != 0 : from->node != nodes[0])
    return 0;
  /* Every tensor its description held (shapes, layouts, constant values) is unchanged, and the
   * graph around it is the same: the description would be the same bytes. */
  for (int32_t j = 0; j < from->desc_count; j++)
    if (!r->clean[from->desc_tensors[j]]) return 0;
  st = &s->steps[s->step_count];
  memset(st, 0, sizeof *st);
  st->node = from->node;
  st->kind = MI__STEP_DEVICE;
  st->kernel = from->kernel;
  st->node_count = from->node_count;
  st->nodes = from->nodes;
  st->input_count = from->input_count;
  st->inputs = from->inputs;
  st->output_count = from->output_count;
  st->outputs = from->outputs;
  st->desc_count = from->desc_count;
  st->desc_tensors = from->desc_tensors;
  st->sig = from->sig;
  st->sig_len = from->sig_len;
  st->sig_hash = from->sig_hash;
  st->variant = from->variant;
  /* Moved: the donor's destroy no longer releases or frees them, and its signature look-ups
   * (reuse.c) pass over a step without a kernel. */
  from->kernel = NULL;
  from->sig = NULL;
  from->variant = NULL;
  from->inputs = from->outputs = from->nodes = from->desc_tensors = NULL;
  from->desc_count = 0;
  s->step_count++;
  s->kernel_count++;
  s->kernels_reused++;
  s->kernels_retaken++;
  return 1;
}
