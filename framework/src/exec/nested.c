/* nested.c - an If of a device session runs the branch its condition picks in a nested session
 * on the same device, so a model whose whole network sits in a branch (Silero VAD) is offloaded
 * rather than interpreted: the branch is cloned with its captures turned into inputs, prepared
 * on first use for the captures' shapes, and kept for the next runs; when they change it is
 * prepared again, keeping the kernels those shapes do not reach (reuse.c). */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "graph/graph.h"

struct mi__nested {
  int32_t node;
  int branch;    /* 1 then, 0 else */
  int failed;    /* the device could not take it: the reference interpreter runs it */
  int ran;       /* it ran in the owning session's last run (profiles read its node times) */
  mi_graph_t *g; /* the branch, captures as inputs */
  mi_session_t *s;
  int32_t *slot; /* per input of g: the If node's input that carries its value */
};

static void nested_clear(mi__nested_t *e) {
  mi_session_destroy(e->s);
  mi_graph_destroy(e->g);
  free(e->slot);
  e->s = NULL;
  e->g = NULL;
  e->slot = NULL;
}

void mi__nested_free(mi_session_t *s) {
  for (int32_t i = 0; i < s->nested_count; i++) nested_clear(&s->nested[i]);
  free(s->nested);
  s->nested = NULL;
  s->nested_count = 0;
}

static int same_shape(const mi_tensor_t *t, const mi_array_t *a) {
  if (t->dtype != a->dtype || t->rank != a->rank) return 0;
  for (int32_t d = 0; d < a->rank; d++)
    if (t->dims[d] != a->dims[d]) return 0;
  return 1;
}

/* The branch as a graph of its own for these capture values; 0 when it cannot be one. Its
 * constants, and the outer graph's initializers it captures, are the If's graph's bytes (which
 * outlive it), at the same addresses every time. A branch prepared before for other shapes hands
 * over its kernels and the folded values that do not depend on the shapes (reuse.c), then goes. */
static int32_t build(mi_session_t *s, mi__nested_t *e, const mi_graph_t *sub,
                     const mi_array_t *const *ins) {
  const mi_node_t *n = &s->g->nodes[e->node];
  mi_session_options_t o;
  mi_error_t err = {0};
  mi__nested_t old = *e;
  mi__data_pool_t *pool = mi__data_pool(old.g);
  int32_t caps, folded = 0, ok = 0;
  e->s = NULL;
  e->g = NULL;
  e->slot = NULL;
  /* (the branch's strings and constants: the If's graph outlives this copy) */
  if (!(e->g = mi__graph_clone_named(sub))) goto done;
  caps = e->g->capture_count;
  if (e->g->input_count || !(e->slot = malloc(((size_t)caps + 1) * sizeof *e->slot))) goto done;
  for (int32_t i = 0, last = 0; i < caps; i++) {
    mi_tensor_t *t = &e->g->tensors[e->g->captures[i]];
    const mi_tensor_t *outer;
    int32_t first = n->input_count - n->implicit_inputs, span = n->implicit_inputs, k = -1;
    /* The If lists its captures in the branch's order as a rule: the search starts after the
     * last one found (a decoder's branch captures every cache: a scan from the start per
     * capture was quadratic). A name names one outer tensor, so any match is the match. */
    for (int32_t d = 0; d < span && k < 0; d++) {
      int32_t c = first + (last + d) % span;
      if (n->inputs[c] >= 0 && strcmp(s->g->tensors[n->inputs[c]].name, t->name) == 0) {
        k = c;
        last = (last + d + 1) % span;
      }
    }
    if (k < 0 || !ins[k] || ins[k]->rank > MI_MAX_RANK) goto done;
    outer = &s->g->tensors[n->inputs[k]];
    t->dtype = ins[k]->dtype;
    t->rank = ins[k]->rank;
    memcpy(t->dims, ins[k]->dims, (size_t)ins[k]->rank * sizeof t->dims[0]);
    if (outer->data) {
      /* An initializer of the outer graph (Silero v4's conv weights) stays a constant in the
       * branch: as an input the device would refuse every Conv and Gemm reading it. */
      t->nbytes = outer->nbytes;
      t->data = outer->data;
      t->data_shared = 1;
      continue;
    }
    e->slot[e->g->input_count] = k;
    if (mi_graph_add_input(e->g, e->g->captures[i]) != MI_OK) goto done;
  }
  e->g->capture_count = 0;
  if (mi_graph_toposort(e->g, &err) || mi_graph_infer_shapes(e->g, &err) ||
      mi__data_pool_folds(pool, e->g, &err) || mi_graph_fold_constants(e->g, &folded, &err))
    goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1;
  o.fallback_plugin = s->fb_plugin;
  o.fallback_device = s->fb_device;
  o.per_node_timing = s->per_node_timing; /* a profile times the branch's kernels too */
  ok = mi__session_create(e->g, s->plugin, s->device, &o, old.s, MI__SESSION_REUSABLE | MI__SESSION_INNER, &e->s, &err) == MI_OK;
done:
  mi__data_pool_free(pool);
  nested_clear(&old); /* what it did not hand over */
  return ok;
}

int32_t mi__nested_if(mi_session_t *s, int32_t node, const mi_array_t *const *ins,
                      mi_array_t **outs, mi_error_t *err) {
  const mi_node_t *n = &s->g->nodes[node];
  const mi_graph_t *sub;
  const mi_array_t *cond = ins[0], **feed;
  mi__nested_t *e = NULL;
  int taken, fresh = 0;
  int32_t rc;
  if (!s->plugin || strcmp(n->op_type, "If") != 0 || !cond || mi_array_numel(cond) != 1 ||
      (cond->dtype != MI_DTYPE_BOOL && cond->dtype != MI_DTYPE_UINT8))
    return 0;
  taken = ((const uint8_t *)cond->data)[0] != 0;
  if (!(sub = mi_node_subgraph(n, taken ? "then_branch" : "else_branch")) ||
      sub->output_count != n->output_count)
    return 0;
  for (int32_t i = 0; i < s->nested_count; i++)
    if (s->nested[i].node == node && s->nested[i].branch == taken) e = &s->nested[i];
  if (!e) {
    mi__nested_t *grown = realloc(s->nested, (size_t)(s->nested_count + 1) * sizeof *grown);
    if (!grown) return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    s->nested = grown;
    e = &s->nested[s->nested_count++];
    memset(e, 0, sizeof *e);
    e->node = node;
    e->branch = taken;
    fresh = 1;
  }
  if (e->failed) return 0;
  if (!fresh && e->s) {
    for (int32_t i = 0; i < e->g->input_count; i++)
      if (!ins[e->slot[i]] || !same_shape(&e->g->tensors[e->g->inputs[i]], ins[e->slot[i]]))
        fresh = 1;
  }
  if ((fresh || !e->s) && !build(s, e, sub, ins)) {
    /* Kept as a refusal: the reference interpreter runs this branch from now on. */
    nested_clear(e);
    e->failed = 1;
    return 0;
  }
  /* As many inputs as the branch captures non-constant values: an exporter's merged decoder
   * captures every past key and value (26 in Moonshine tiny's), so no fixed bound. */
  if (!(feed = malloc(((size_t)e->g->input_count + 1) * sizeof *feed)))
    return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < e->g->input_count; i++) feed[i] = ins[e->slot[i]];
  rc = mi_session_run(e->s, feed, e->g->input_count, outs, n->output_count, err);
  free(feed);
  e->ran = rc == MI_OK;
  return rc ? -rc : 1;
}

void mi__nested_run_begins(mi_session_t *s) {
  for (int32_t i = 0; i < s->nested_count; i++) s->nested[i].ran = 0;
}

MI_API int32_t mi_session_nested_count(const mi_session_t *s) { return s ? s->nested_count : 0; }

MI_API const mi_session_t *mi_session_nested(const mi_session_t *s, int32_t index, int32_t *node,
                                             const char **branch, const mi_graph_t **graph) {
  const mi__nested_t *e;
  if (!s || index < 0 || index >= s->nested_count) return NULL;
  e = &s->nested[index];
  if (!e->ran || !e->s) return NULL;
  if (node) *node = e->node;
  if (branch) *branch = e->branch ? "then" : "else";
  if (graph) *graph = e->g;
  return e->s;
}
