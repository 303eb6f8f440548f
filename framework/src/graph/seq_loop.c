/* seq_loop.c - a list a Loop builds, lowered at load time: torch.jit exports `xs = []; for ...:
 * xs.append(y)` as a Loop carrying a sequence that starts as SequenceEmpty and a body that appends
 * one tensor to it per iteration (SequenceInsert without a position). That is a Loop scan output
 * (the appended tensors stacked along a new axis 0), so the carried value becomes one: the append
 * leaves the body and the tensor appended becomes a scan output; after the loop, the list is the
 * stacked tensor's slices along axis 0, which the walk reads as it reads an unbind's
 * (seq_slices.c: torch.stack(xs) is the stacked tensor itself, torch.cat(xs) a Reshape of it,
 * xs[i] a Gather, len(xs) its first dim). Every other sequence a Loop carries is refused, saying
 * why. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/seq_lower.h"

static int is_op(const mi_node_t *n, const char *op) {
  return (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op);
}

/* How many node inputs of g (implicit ones too) read tensor t. */
static int32_t readers(const mi_graph_t *g, int32_t t) {
  int32_t c = 0;
  for (int32_t j = 0; j < g->node_count; j++)
    for (int32_t q = 0; q < g->nodes[j].input_count; q++) c += g->nodes[j].inputs[q] == t;
  return c;
}

static int32_t count_in(const int32_t *v, int32_t n, int32_t t) {
  int32_t c = 0;
  for (int32_t k = 0; k < n; k++) c += v[k] == t;
  return c;
}

/* Removes entry k of v[0..*n). */
static void remove_at(int32_t *v, int32_t *n, int32_t k) {
  memmove(v + k, v + k + 1, sizeof *v * (size_t)(*n - k - 1));
  (*n)--;
}

/* The append of carried value k in the body: the SequenceInsert node, or -1 when the body does
 * anything else with the list. */
static int32_t the_append(const mi_graph_t *body, int32_t k) {
  int32_t bi = body->inputs[2 + k], bo = body->outputs[1 + k], p = body->tensors[bo].producer;
  if (p < 0 || !is_op(&body->nodes[p], "SequenceInsert")) return -1;
  const mi_node_t *a = &body->nodes[p];
  if (a->input_count < 2 || a->inputs[0] != bi || a->inputs[1] < 0 || (a->input_count > 2 && a->inputs[2] >= 0))
    return -1;
  if (readers(body, bi) != 1 || count_in(body->outputs, body->output_count, bi) || readers(body, bo) ||
      count_in(body->outputs, body->output_count, bo) != 1)
    return -1;
  return p;
}

/* Gives Loop node i all nv + nscan outputs (placeholders where the model left some out). */
static int32_t pad_outputs(mi__seql_t *l, int32_t i, int32_t want) {
  mi_graph_t *g = l->g;
  if (g->nodes[i].output_count >= want) return MI_OK;
  int32_t *o = realloc(g->nodes[i].outputs, sizeof *o * (size_t)want);
  if (!o) return mi_errorf(l->err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", g->nodes[i].name);
  g->nodes[i].outputs = o;
  for (int32_t k = g->nodes[i].output_count; k < want; k++) {
    char nm[400];
    snprintf(nm, sizeof nm, "%s:unused%d", g->nodes[i].name, (int)k);
    for (int s = 1; mi_graph_find_tensor(g, nm) >= 0; s++) snprintf(nm, sizeof nm, "%s:unused%d_%d", g->nodes[i].name, (int)k, s);
    int32_t t = mi_graph_add_tensor(g, nm, MI_DTYPE_UNDEFINED, -1, NULL);
    if (t < 0) return mi_errorf(l->err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", g->nodes[i].name);
    g->tensors[t].producer = i;
    g->nodes[i].outputs[g->nodes[i].output_count++] = t;
  }
  return MI_OK;
}

/* Carried value k of Loop node i, a sequence: becomes the loop's last scan output, or refused. */
static int32_t to_scan(mi__seql_t *l, int32_t i, int32_t k) {
  mi_graph_t *g = l->g, *body = mi_node_subgraph(&g->nodes[i], "body");
  const mi_node_t *n = &g->nodes[i];
  int32_t nv = n->input_count - n->implicit_inputs - 2, init = n->inputs[2 + k], rc;
  const mi__seqv_t *s = mi__seq_of(l, init);
  const char *vn = g->tensors[init].name;
  if (!body) return mi__seq_fail(l, i, "has no body");
  int32_t nscan = body->output_count - 1 - nv;
  if (body->input_count != nv + 2 || nscan < 0)
    return mi__seq_fail(l, i, "body takes %d inputs and gives %d outputs for %d loop-carried values", (int)body->input_count,
                        (int)body->output_count, (int)nv);
  if (s->kind == MI__SEQ_OPT) return mi__seq_fail(l, i, "optional '%s' carried through the loop is not supported", vn);
  if (s->n != 0)
    return mi__seq_fail(l, i,
                        "sequence '%s' carried through the loop is not supported: it does not start empty (a list "
                        "the loop builds from empty is)",
                        vn);
  int32_t app = the_append(body, k);
  if (app < 0)
    return mi__seq_fail(l, i,
                        "sequence '%s' carried through the loop is not supported: the body does more than append "
                        "one tensor to it per iteration (SequenceInsert without a position)",
                        vn);
  int32_t out = k < n->output_count ? n->outputs[k] : -1;
  /* the body: the appended tensor becomes the last scan output, the list and its append go */
  int32_t x = body->nodes[app].inputs[1];
  uint8_t *drop = calloc((size_t)body->node_count + 1, 1);
  if (!drop) return mi_errorf(l->err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", n->name);
  drop[app] = 1;
  remove_at(body->inputs, &body->input_count, 2 + k);
  remove_at(body->outputs, &body->output_count, 1 + k);
  body->outputs[body->output_count++] = x; /* (the slot just freed) */
  rc = mi_graph_remove_nodes(body, drop, l->err);
  free(drop);
  if (rc) return rc;
  /* the node: the list's initial value goes, its result moves to the scan outputs */
  if ((rc = pad_outputs(l, i, nv + nscan))) return rc;
  mi__ab_t b;
  mi__ab_start(&b, g, &g->nodes[i]);
  char what[300];
  snprintf(what, sizeof what, "%s_stacked", out >= 0 ? g->tensors[out].name : "list");
  int32_t stacked = mi__ab_tensor(&b, what);
  if (stacked < 0) return mi__seq_oom(l, i);
  mi_node_t *m = &g->nodes[i];
  if (out < 0) out = m->outputs[k];
  remove_at(m->inputs, &m->input_count, 2 + k);
  remove_at(m->outputs, &m->output_count, k);
  m->outputs[m->output_count++] = stacked;
  g->tensors[stacked].producer = i;
  g->tensors[out].producer = -1;
  if (out >= l->nsv) return MI_OK; /* a placeholder: nobody reads the list */
  mi__seqv_t *v = &l->sv[out];
  free(v->el);
  *v = (mi__seqv_t){.kind = MI__SEQ_LIST, .n = -1, .src = stacked, .axis = 0, .keep = 0};
  return MI_OK;
}

int32_t mi__seq_lower_loop(mi__seql_t *l, int32_t i) {
  const mi_node_t *n = &l->g->nodes[i];
  int32_t nx = n->input_count - n->implicit_inputs, rc;
  for (int32_t k = nx - 3; k >= 0; k--)
    if (mi__seq_is(l, l->g->nodes[i].inputs[2 + k]) && (rc = to_scan(l, i, k))) return rc;
  return MI_OK;
}
