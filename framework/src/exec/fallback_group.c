/* fallback_group.c - a run of consecutive nodes the primary refused, run as one sub-graph in a
 * session of the fallback device: its planning and fusions apply to the run (M-LSD's Equal ->
 * Cast, which blis-cpu takes only as a pair), the values between its nodes stay there, and the
 * host copies go in and out once per run rather than once per node. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

struct mi__fb_group {
  mi_graph_t *g;     /* the run's nodes: runtime inputs as inputs, values read after it as outputs */
  mi_session_t *s;   /* g on the fallback device */
  int32_t *in, *out; /* per input / output of g: the session's graph tensor */
};

void mi__fallback_group_free(mi__fb_group_t *q) {
  if (!q) return;
  mi_session_destroy(q->s);
  mi_graph_destroy(q->g);
  free(q->in);
  free(q->out);
  free(q);
}

static int member_of(const int32_t *nodes, int32_t count, int32_t n) {
  for (int32_t i = 0; i < count; i++)
    if (nodes[i] == n) return 1;
  return 0;
}

static int listed(const int32_t *list, int32_t count, int32_t t) {
  for (int32_t i = 0; i < count; i++)
    if (list[i] == t) return 1;
  return 0;
}

/* Whether a member writes tensor t (by the nodes' lists: a rewritten copy's producer fields
 * are not relied on). */
static int written_by(const mi_graph_t *g, const int32_t *nodes, int32_t count, int32_t t) {
  for (int32_t i = 0; i < count; i++)
    if (listed(g->nodes[nodes[i]].outputs, g->nodes[nodes[i]].output_count, t)) return 1;
  return 0;
}

/* Whether tensor t (a member's output) is read outside the run or is a graph output. */
static int read_after(const mi_graph_t *g, const int32_t *nodes, int32_t count, int32_t t) {
  for (int32_t i = 0; i < g->output_count; i++)
    if (g->outputs[i] == t) return 1;
  for (int32_t n = 0; n < g->node_count; n++) {
    if (member_of(nodes, count, n)) continue;
    for (int32_t j = 0; j < g->nodes[n].input_count; j++)
      if (g->nodes[n].inputs[j] == t) return 1;
  }
  return 0;
}

/* The run's nodes as a graph of their own in q; 0 when it cannot be one. */
static int build_graph(mi_session_t *s, mi__fb_group_t *q, const int32_t *nodes, int32_t count) {
  const mi_graph_t *g = s->g;
  int32_t nin = 0, nout = 0, cap = 0;
  uint8_t *drop = NULL;
  mi_error_t err = {0};
  int ok = 0;
  for (int32_t i = 0; i < count; i++) cap += g->nodes[nodes[i]].input_count + g->nodes[nodes[i]].output_count;
  if (!(q->in = malloc(((size_t)cap + 1) * sizeof *q->in)) ||
      !(q->out = malloc(((size_t)cap + 1) * sizeof *q->out)) || !(q->g = mi_graph_clone(g)) ||
      !(drop = calloc((size_t)g->node_count + 1, 1)))
    goto done;
  for (int32_t i = 0; i < count; i++) {
    const mi_node_t *n = &g->nodes[nodes[i]];
    for (int32_t j = 0; j < n->input_count; j++) {
      int32_t t = n->inputs[j];
      if (t < 0 || listed(q->in, nin, t)) continue;
      if (written_by(g, nodes, count, t)) continue;
      if (s->consts[t]) {
        /* A value the session folded at create time is a constant of the run too. */
        if (!q->g->tensors[t].data &&
            mi_graph_set_data(q->g, t, s->consts[t]->data, s->consts[t]->nbytes) != MI_OK)
          goto done;
        continue;
      }
      q->in[nin++] = t;
    }
    for (int32_t j = 0; j < n->output_count; j++) {
      int32_t t = n->outputs[j];
      if (t >= 0 && !listed(q->out, nout, t) && read_after(g, nodes, count, t)) q->out[nout++] = t;
    }
  }
  if (nout == 0) goto done;
  /* The clone keeps the tensor indices until the nodes outside the run go. */
  q->g->input_count = 0;
  q->g->output_count = 0;
  for (int32_t i = 0; i < nin; i++)
    if (mi_graph_add_input(q->g, q->in[i]) != MI_OK) goto done;
  for (int32_t i = 0; i < nout; i++)
    if (mi_graph_add_output(q->g, q->out[i]) != MI_OK) goto done;
  for (int32_t n = 0; n < g->node_count; n++) drop[n] = !member_of(nodes, count, n);
  ok = mi_graph_remove_nodes(q->g, drop, &err) == MI_OK && q->g->input_count == nin &&
       q->g->output_count == nout;
done:
  free(drop);
  return ok;
}

int32_t mi__fallback_group(mi_session_t *s, const int32_t *nodes, int32_t count, uint8_t *on,
                           mi__fb_group_t **out, mi_error_t *err) {
  mi__fb_group_t *q;
  mi_session_options_t o;
  mi_error_t serr = {0};
  *out = NULL;
  if (!s->fb_plugin || count < 2) return 0;
  if (!(q = calloc(1, sizeof *q))) return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if (!build_graph(s, q, nodes, count)) {
    mi__fallback_group_free(q);
    return 0;
  }
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1; /* what the fallback device refuses of the run: the reference */
  o.per_node_timing = s->per_node_timing;
  /* On the session's own plugin it runs at the device knobs the session's run set; on
   * another, at that device's defaults. */
  if (mi__session_create(q->g, s->fb_plugin, s->fb_device, &o, NULL,
                         s->fb_plugin == s->plugin ? MI__SESSION_INNER : 0, &q->s, &serr) != MI_OK ||
      mi_session_kernel_count(q->s) <= 0) {
    /* Nothing of it on the fallback device: the nodes go one by one as before. */
    mi__fallback_group_free(q);
    return 0;
  }
  /* Where each member ran: the group session's refusals by name (its graph may be its own
   * rewritten copy, with other node indices); the clone keeps members in graph order, so local
   * node i is nodes[i]. */
  for (int32_t i = 0; i < count; i++) on[i] = 1;
  for (int32_t k = 0; k < mi_session_fallback_count(q->s); k++) {
    const char *name = mi_session_fallback_node(q->s, k);
    char lb[32];
    for (int32_t i = 0; i < count && name; i++)
      if (!strcmp(mi__node_label(q->g, i, lb, sizeof lb), name)) on[i] = 0;
  }
  *out = q;
  return 1;
}

int32_t mi__fallback_group_run(const mi__fb_group_t *q, const mi_array_t *const *ins,
                               mi_array_t **outs, mi_error_t *err) {
  return mi_session_run(q->s, ins, q->g->input_count, outs, q->g->output_count, err);
}

int32_t mi__fallback_group_io(const mi__fb_group_t *q, const int32_t **in, int32_t *in_count,
                              const int32_t **out) {
  *in = q->in;
  *in_count = q->g->input_count;
  *out = q->out;
  return q->g->output_count;
}
