/* if_inline.c - replaces one If node by the nodes of one of its branches (the one its constant
 * condition takes): the branch's tensors and nodes join the enclosing graph, renamed where
 * their names are already taken there, its captures bind to the enclosing values of the same
 * name, and its outputs become the If's outputs (through an Identity where a branch output is
 * not computed inside the branch: a captured value, a constant, or one value given twice). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static int32_t find_node(const mi_graph_t *g, const char *name) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return i;
  return -1;
}

/* A name not yet used in g: `name` itself, else "<prefix>/<name>", else with a count added.
 * nodes: 1 for node names, 0 for tensor names. NULL when out of memory. */
static char *unique_name(const mi_graph_t *g, const char *prefix, const char *name, int nodes) {
  size_t cap = strlen(prefix) + strlen(name) + 32;
  char *s = malloc(cap);
  if (!s) return NULL;
  snprintf(s, cap, "%s", name);
  for (int k = 0; nodes ? find_node(g, s) >= 0 : mi_graph_find_tensor(g, s) >= 0; k++) {
    if (k == 0) snprintf(s, cap, "%s/%s", prefix, name);
    else
      snprintf(s, cap, "%s/%s_%d", prefix, name, k);
  }
  return s;
}

/* Renames every capture of `from` to `to` in the subgraphs of sub's nodes, at any depth, as long
 * as no subgraph on the way defines a value of that name itself. 0, or -1 when out of memory. */
static int rename_captures(mi_graph_t *sub, const char *from, const char *to) {
  for (int32_t i = 0; i < sub->node_count; i++)
    for (int32_t s = 0; s < sub->nodes[i].subgraph_count; s++) {
      mi_graph_t *b = sub->nodes[i].subgraphs[s];
      int32_t t = mi_graph_find_tensor(b, from);
      int captured = 0;
      if (t < 0) continue;
      for (int32_t c = 0; c < b->capture_count; c++) captured |= b->captures[c] == t;
      if (!captured) continue; /* b's own value of that name: its nodes see that one */
      char *nm = mi__strdup(to);
      if (!nm) return -1;
      if (!b->tensors[t].name_shared) free(b->tensors[t].name);
      b->tensors[t].name = nm;
      b->tensors[t].name_shared = 0;
      if (rename_captures(b, from, to)) return -1;
    }
  return 0;
}

static int is_capture(const mi_graph_t *sub, int32_t t) {
  for (int32_t c = 0; c < sub->capture_count; c++)
    if (sub->captures[c] == t) return 1;
  return 0;
}

/* Appends a copy of branch node `s` to g reading ins[] and writing outs[], under a unique name;
 * its subgraphs are copied with their captures of renamed values renamed (renamed[] holds the
 * new name of each branch tensor that got one, else NULL). MI_OK or MI_ERR_OUT_OF_MEMORY. */
static int32_t copy_node(mi_graph_t *g, const char *prefix, const mi_graph_t *sub, const mi_node_t *s,
                         const int32_t *ins, const int32_t *outs, char *const *renamed) {
  char *name = unique_name(g, prefix, s->name ? s->name : s->op_type, 1);
  int32_t idx = name ? mi_graph_add_node(g, s->op_type, name, s->input_count, ins, s->output_count, outs) : -1;
  free(name);
  if (idx < 0) return MI_ERR_OUT_OF_MEMORY;
  mi_node_t *d = &g->nodes[idx];
  free(d->domain);
  if (!(d->domain = mi__strdup(s->domain ? s->domain : ""))) return MI_ERR_OUT_OF_MEMORY;
  if (s->attr_count) {
    if (!(d->attrs = calloc((size_t)s->attr_count, sizeof *d->attrs))) return MI_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; i < s->attr_count; i++) {
      if (mi__attr_copy(&d->attrs[i], &s->attrs[i]) != MI_OK) return MI_ERR_OUT_OF_MEMORY;
      d->attr_count = i + 1;
    }
  }
  d->implicit_inputs = s->implicit_inputs;
  if (s->subgraph_count) {
    if (!(d->subgraphs = calloc((size_t)s->subgraph_count, sizeof *d->subgraphs)) ||
        !(d->subgraph_names = calloc((size_t)s->subgraph_count, sizeof *d->subgraph_names)))
      return MI_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; i < s->subgraph_count; i++) {
      d->subgraph_count = i + 1;
      if (!(d->subgraphs[i] = mi_graph_clone(s->subgraphs[i])) ||
          !(d->subgraph_names[i] = mi__strdup(s->subgraph_names[i])))
        return MI_ERR_OUT_OF_MEMORY;
    }
    /* A nested subgraph names the values it captures: follow the renames (through a graph of
     * one node holding the copies, so the walk is rename_captures' own). */
    mi_graph_t holder = {0};
    holder.nodes = d;
    holder.node_count = 1;
    for (int32_t t = 0; t < sub->tensor_count; t++)
      if (renamed[t] && rename_captures(&holder, sub->tensors[t].name, renamed[t]))
        return MI_ERR_OUT_OF_MEMORY;
  }
  return MI_OK;
}

/* A new tensor of g with src's type, shape, constant data and quantization, under `name`. */
static int32_t copy_tensor(mi_graph_t *g, const mi_tensor_t *src, const char *name) {
  int32_t t = mi_graph_add_tensor(g, name, src->dtype, src->rank, src->dims);
  if (t < 0) return -1;
  mi_tensor_t *d = &g->tensors[t];
  for (int32_t k = 0; k < MI_MAX_RANK; k++)
    if (src->dim_names[k] && !(d->dim_names[k] = mi__strdup(src->dim_names[k]))) return -1;
  if (src->data && mi_graph_set_data(g, t, src->data, src->nbytes) != MI_OK) return -1;
  d->layout = src->layout;
  d->block = src->block;
  d->scale = src->scale;
  d->zero_point = src->zero_point;
  d->channel_axis = src->channel_axis;
  d->value_bits = src->value_bits;
  if (src->channel_scales) {
    if (!(d->channel_scales = mi__dup_bytes(src->channel_scales, src->channel_count * sizeof(float)))) return -1;
    d->channel_count = src->channel_count;
  }
  return t;
}

int32_t mi__graph_inline_if(mi_graph_t *g, int32_t node, int branch, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[node];
  const char *bname = branch ? "then_branch" : "else_branch";
  const mi_graph_t *sub = mi_node_subgraph(n, bname);
  int32_t *map = NULL, *ins = NULL, *outs = NULL, *if_outs = NULL, rc = MI_OK, nouts, ntensors;
  char **renamed = NULL, *prefix = NULL;
  uint8_t *drop = NULL;
  if (!sub || sub->output_count != n->output_count || sub->input_count != 0)
    return mi_errorf(err, MI_ERR_PARSE, "If '%s': %s missing or its outputs (%d) are not the If's (%d)",
                     n->name ? n->name : "", bname, sub ? (int)sub->output_count : 0, (int)n->output_count);
  nouts = n->output_count;
  ntensors = sub->tensor_count; /* sub goes with the If node */
  if (!(prefix = mi__strdup(n->name && n->name[0] ? n->name : "If")) ||
      !(map = malloc(((size_t)sub->tensor_count + 1) * sizeof *map)) ||
      !(renamed = calloc((size_t)sub->tensor_count + 1, sizeof *renamed)) ||
      !(if_outs = mi__dup_bytes(n->outputs, (size_t)nouts * sizeof *if_outs))) {
    rc = MI_ERR_OUT_OF_MEMORY;
    goto done;
  }
  /* Each branch tensor's index in g: captures by name, a value the branch computes and gives
   * as output k the If's output k (the first time only), every other one a new tensor. */
  for (int32_t t = 0; t < sub->tensor_count; t++) map[t] = -1;
  for (int32_t t = 0; t < sub->tensor_count; t++) {
    if (!is_capture(sub, t)) continue;
    if ((map[t] = mi_graph_find_tensor(g, sub->tensors[t].name)) < 0) {
      rc = mi_errorf(err, MI_ERR_PARSE, "If '%s': %s captures '%s', which the graph does not have", prefix, bname,
                     sub->tensors[t].name);
      goto done;
    }
  }
  for (int32_t k = 0; k < nouts; k++) {
    int32_t t = sub->outputs[k];
    if (t < 0 || map[t] >= 0 || if_outs[k] < 0 || is_capture(sub, t) || sub->tensors[t].data) continue;
    map[t] = if_outs[k];
  }
  for (int32_t t = 0; t < sub->tensor_count; t++) {
    if (map[t] >= 0) continue;
    if (!(renamed[t] = unique_name(g, prefix, sub->tensors[t].name, 0))) {
      rc = MI_ERR_OUT_OF_MEMORY;
      goto done;
    }
    if ((map[t] = copy_tensor(g, &sub->tensors[t], renamed[t])) < 0) {
      rc = MI_ERR_OUT_OF_MEMORY;
      goto done;
    }
    if (strcmp(renamed[t], sub->tensors[t].name) == 0) {
      free(renamed[t]);
      renamed[t] = NULL;
    }
  }
  for (int32_t i = 0; i < sub->node_count && rc == MI_OK; i++) {
    const mi_node_t *s = &sub->nodes[i];
    free(ins);
    free(outs);
    ins = malloc(((size_t)s->input_count + 1) * sizeof *ins);
    outs = malloc(((size_t)s->output_count + 1) * sizeof *outs);
    if (!ins || !outs) {
      rc = MI_ERR_OUT_OF_MEMORY;
      break;
    }
    for (int32_t k = 0; k < s->input_count; k++) ins[k] = s->inputs[k] < 0 ? -1 : map[s->inputs[k]];
    for (int32_t k = 0; k < s->output_count; k++) outs[k] = s->outputs[k] < 0 ? -1 : map[s->outputs[k]];
    rc = copy_node(g, prefix, sub, s, ins, outs, renamed);
  }
  /* Outputs the branch does not compute itself reach the If's outputs through an Identity. */
  for (int32_t k = 0; k < nouts && rc == MI_OK; k++) {
    int32_t t = sub->outputs[k], src = t < 0 ? -1 : map[t];
    if (if_outs[k] < 0 || src == if_outs[k]) continue;
    char *nm = unique_name(g, prefix, "output", 1);
    if (!nm || mi_graph_add_node(g, "Identity", nm, 1, &src, 1, &if_outs[k]) < 0) rc = MI_ERR_OUT_OF_MEMORY;
    free(nm);
  }
  if (rc == MI_OK && !(drop = calloc((size_t)g->node_count + 1, 1))) rc = MI_ERR_OUT_OF_MEMORY;
  if (rc == MI_OK) {
    /* remove_nodes finds producers again: the If's outputs now come from the branch's nodes. */
    drop[node] = 1;
    rc = mi_graph_remove_nodes(g, drop, err);
  }
done:
  if (rc == MI_ERR_OUT_OF_MEMORY) mi_errorf(err, rc, "inlining If '%s': out of memory", prefix ? prefix : "");
  for (int32_t t = 0; renamed && t < ntensors; t++) free(renamed[t]);
  free(renamed);
  free(map);
  free(ins);
  free(outs);
  free(if_outs);
  free(drop);
  free(prefix);
  return rc;
}
