/* kernel_desc.c - describes a graph node to a plugin as an mi_kernel_desc_t (the contract in
 * docs/abi.md): its tensors with concrete shapes, constants with data, runtime inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

const char *mi__node_label(const mi_graph_t *g, int32_t node, char *buf, size_t cap) {
  const char *name = g->nodes[node].name;
  if (name && name[0]) return name;
  snprintf(buf, cap, "#%d", (int)node);
  return buf;
}

uint64_t mi__tensor_bytes(const mi_tensor_t *t, int *ok) {
  int64_t n = 1;
  *ok = 0;
  if (t->rank < 0 || t->rank > MI_MAX_RANK || mi_dtype_size(t->dtype) == 0) return 0;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return 0;
    if (t->dims[i] > 0 && n > INT64_MAX / 16 / t->dims[i]) return 0;
    n *= t->dims[i];
  }
  *ok = 1;
  return mi_dtype_bytes_for(t->dtype, n);
}

mi_array_t *mi__const_view(const mi_tensor_t *t) {
  mi_array_t *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->dtype = t->dtype;
  a->rank = t->rank < 0 ? 0 : t->rank;
  for (int32_t i = 0; i < a->rank; i++) a->dims[i] = t->dims[i];
  a->data = t->data;
  a->nbytes = t->nbytes;
  return a;
}

/* Index of graph tensor `t` in the local list, adding it when new. */
static int32_t local_index(mi__kdesc_t *k, int32_t t) {
  for (int32_t i = 0; i < k->tensor_count; i++)
    if (k->tmap[i] == t) return i;
  k->tmap[k->tensor_count] = t;
  return k->tensor_count++;
}

/* Activations are NCHW unless the graph says otherwise; weights and other ranks say ANY. */
static int32_t default_layout(const mi_tensor_t *t, int is_const) {
  if (t->layout != MI_LAYOUT_ANY) return t->layout;
  return t->rank == 4 && !is_const ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
}

static void describe_tensor(mi_tensor_desc_t *d, const mi_tensor_t *t, const mi_array_t *c) {
  memset(d, 0, sizeof *d);
  d->struct_size = (uint32_t)sizeof *d;
  d->dtype = c ? c->dtype : t->dtype;
  d->layout = default_layout(t, c != NULL);
  d->block = t->block;
  d->rank = c ? c->rank : t->rank;
  for (int32_t i = 0; i < d->rank; i++) d->dims[i] = c ? c->dims[i] : t->dims[i];
  d->scale = t->scale;
  d->zero_point = t->zero_point;
  d->channel_axis = t->channel_axis;
  d->channel_count = t->channel_count;
  d->channel_scales = t->channel_scales;
  if (c) {
    d->data = c->data;
    d->data_bytes = c->nbytes;
  }
}

int32_t mi__kdesc_build(mi__kdesc_t *k, const mi_graph_t *g, int32_t node,
                        mi_array_t *const *consts, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[node];
  int32_t cap = n->input_count + n->output_count;
  memset(k, 0, sizeof *k);
  k->tmap = calloc((size_t)cap + 1, sizeof *k->tmap);
  k->tensors = calloc((size_t)cap + 1, sizeof *k->tensors);
  k->tensor_ptrs = calloc((size_t)cap + 1, sizeof *k->tensor_ptrs);
  k->node_inputs = calloc((size_t)n->input_count + 1, sizeof *k->node_inputs);
  k->node_outputs = calloc((size_t)n->output_count + 1, sizeof *k->node_outputs);
  k->inputs = calloc((size_t)n->input_count + 1, sizeof *k->inputs);
  k->graph_inputs = calloc((size_t)n->input_count + 1, sizeof *k->graph_inputs);
  k->outputs = calloc((size_t)n->output_count + 1, sizeof *k->outputs);
  k->graph_outputs = calloc((size_t)n->output_count + 1, sizeof *k->graph_outputs);
  if (!k->tmap || !k->tensors || !k->tensor_ptrs || !k->node_inputs || !k->node_outputs ||
      !k->inputs || !k->graph_inputs || !k->outputs || !k->graph_outputs) {
    mi__kdesc_free(k);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory describing node %d", (int)node);
  }
  for (int32_t i = 0; i < n->input_count; i++) {
    int32_t t = n->inputs[i], li, seen = 0;
    if (t < 0) {
      k->node_inputs[i] = -1;
      continue;
    }
    for (int32_t j = 0; j < k->tensor_count; j++) seen |= k->tmap[j] == t;
    li = local_index(k, t);
    k->node_inputs[i] = li;
    /* Runtime inputs are passed once each, in order of first appearance. */
    if (!seen && !consts[t]) {
      k->inputs[k->input_count] = li;
      k->graph_inputs[k->input_count++] = t;
    }
  }
  for (int32_t i = 0; i < n->output_count; i++) {
    int32_t t = n->outputs[i];
    if (t < 0) {
      k->node_outputs[i] = -1;
      continue;
    }
    k->node_outputs[i] = local_index(k, t);
    k->outputs[k->output_count] = k->node_outputs[i];
    k->graph_outputs[k->output_count++] = t;
  }
  for (int32_t i = 0; i < k->tensor_count; i++) {
    int32_t t = k->tmap[i];
    describe_tensor(&k->tensors[i], &g->tensors[t], consts[t]);
    k->tensor_ptrs[i] = &k->tensors[i];
  }
  k->node.struct_size = (uint32_t)sizeof k->node;
  k->node.op_type = n->op_type;
  k->node.name = n->name ? n->name : "";
  k->node.opset = (int32_t)g->opset;
  k->node.input_count = n->input_count;
  k->node.inputs = k->node_inputs;
  k->node.output_count = n->output_count;
  k->node.outputs = k->node_outputs;
  k->node.attr_count = n->attr_count;
  k->node.attrs = n->attrs;
  k->node_ptr = &k->node;
  k->desc.struct_size = (uint32_t)sizeof k->desc;
  k->desc.node_count = 1;
  k->desc.nodes = &k->node_ptr;
  k->desc.tensor_count = k->tensor_count;
  k->desc.tensors = k->tensor_ptrs;
  k->desc.input_count = k->input_count;
  k->desc.inputs = k->inputs;
  k->desc.output_count = k->output_count;
  k->desc.outputs = k->outputs;
  return MI_OK;
}

void mi__kdesc_free(mi__kdesc_t *k) {
  if (!k) return;
  free(k->tmap);
  free(k->tensors);
  free(k->tensor_ptrs);
  free(k->node_inputs);
  free(k->node_outputs);
  free(k->inputs);
  free(k->graph_inputs);
  free(k->outputs);
  free(k->graph_outputs);
  memset(k, 0, sizeof *k);
}
