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
  mi__const_view_in(t, a);
  return a;
}

void mi__const_view_in(const mi_tensor_t *t, mi_array_t *a) {
  memset(a, 0, sizeof *a);
  a->dtype = t->dtype;
  a->rank = t->rank < 0 ? 0 : t->rank;
  for (int32_t i = 0; i < a->rank; i++) a->dims[i] = t->dims[i];
  a->data = t->data;
  a->nbytes = t->nbytes;
}

/* Index of graph tensor `t` in the local list, adding it when new. */
static int32_t local_index(mi__kdesc_t *k, int32_t t) {
  for (int32_t i = 0; i < k->tensor_count; i++)
    if (k->tmap[i] == t) return i;
  k->tmap[k->tensor_count] = t;
  return k->tensor_count++;
}

/* Activations are NCHW unless the graph says otherwise; weights and other ranks say ANY. */
static int32_t default_layout(const mi_tensor_t *t, int is_const, int plain) {
  if (t->layout != MI_LAYOUT_ANY && !(plain && !is_const && t->rank == 4)) return t->layout;
  return t->rank == 4 && !is_const ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
}

static void describe_tensor(mi_tensor_desc_t *d, const mi_tensor_t *t, const mi_array_t *c,
                            int plain) {
  memset(d, 0, sizeof *d);
  d->struct_size = (uint32_t)sizeof *d;
  d->dtype = c ? c->dtype : t->dtype;
  d->layout = default_layout(t, c != NULL, plain);
  d->block = d->layout == MI_LAYOUT_NCHWC ? t->block : 0;
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

static int32_t subst(const mi__kreq_t *r, int32_t t) {
  for (int32_t i = 0; t >= 0 && i < r->subst_count; i++)
    if (r->subst_from[i] == t) return r->subst_to[i];
  return t;
}

static int in_list(const int32_t *list, int32_t n, int32_t x) {
  for (int32_t i = 0; i < n; i++)
    if (list[i] == x) return 1;
  return 0;
}

/* True when graph tensor t must leave the kernel: a graph output, read by a node outside the
 * kernel, or not read by any later node of it (the last node's results). */
static int leaves_kernel(const mi_graph_t *g, const mi__kreq_t *r, int32_t pos, int32_t t) {
  int read_later = 0;
  if (r->absorbed_count) { /* a QDQ block: reads through the substitutions, absorbed nodes aside */
    t = subst(r, t);
    if (in_list(g->outputs, g->output_count, t)) return 1;
    for (int32_t i = 0; i < g->node_count; i++) {
      const mi_node_t *n = &g->nodes[i];
      int32_t at = -1;
      int reads = 0;
      if (in_list(r->absorbed, r->absorbed_count, i) || (r->role && r->role[i] == MI__ROLE_UNREAD)) continue;
      for (int32_t j = 0; j < n->input_count && !reads; j++)
        reads = n->inputs[j] == t || subst(r, n->inputs[j]) == t;
      if (!reads) continue; /* (membership looked up only for a reader, as below) */
      for (int32_t m = 0; m < r->node_count; m++)
        if (r->nodes[m] == i) at = m;
      for (int32_t j = 0; j < n->input_count; j++)
        if ((at < 0 ? n->inputs[j] : subst(r, n->inputs[j])) == t) {
          if (at < 0) return 1;
          read_later |= at > pos;
        }
    }
    return !read_later;
  }
  if (r->node_count == 1 || in_list(g->outputs, g->output_count, t)) return 1;
  if (r->rd_off) { /* the same question asked of t's readers only */
    for (int32_t k = r->rd_off[t]; k < r->rd_off[t + 1]; k++) {
      int32_t i = r->rd_node[k], at = -1;
      if (r->role && r->role[i] == MI__ROLE_UNREAD) continue;
      for (int32_t m = 0; m < r->node_count; m++)
        if (r->nodes[m] == i) at = m;
      if (at < 0) return 1;
      if (at > pos) read_later = 1;
    }
    return !read_later;
  }
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int32_t at = -1, reads = 0;
    if (r->role && r->role[i] == MI__ROLE_UNREAD) continue;
    for (int32_t j = 0; j < n->input_count && !reads; j++) reads = n->inputs[j] == t;
    if (!reads) continue; /* (the kernel's members looked up only for a reader) */
    for (int32_t m = 0; m < r->node_count; m++)
      if (r->nodes[m] == i) at = m;
    if (at < 0) return 1;
    if (at > pos) read_later = 1;
  }
  return !read_later;
}

/* One block for every part (it starts at k->node): ten allocations per kernel were a tenth of
 * describing a decoder's branch again at each cache length. */
static void free_parts(mi__kdesc_t *k) { free(k->node); }

static size_t up16(size_t n) { return (n + 15) & ~(size_t)15; }

static int32_t alloc_parts(mi__kdesc_t *k, int32_t nodes, int32_t slots) {
  size_t nn = (size_t)nodes + 1, ns = (size_t)slots + 1;
  size_t o_ptrs = up16(nn * sizeof *k->node), o_tens = o_ptrs + up16(nn * sizeof *k->node_ptrs);
  size_t o_tptr = o_tens + up16(ns * sizeof *k->tensors), o_ints = o_tptr + up16(ns * sizeof *k->tensor_ptrs);
  char *b = calloc(1, o_ints + 6 * up16(ns * sizeof(int32_t)));
  int32_t *ints[6];
  if (!b) return MI_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < 6; i++) ints[i] = (int32_t *)(b + o_ints + (size_t)i * up16(ns * sizeof(int32_t)));
  k->node = (mi_node_desc_t *)b;
  k->node_ptrs = (const mi_node_desc_t **)(b + o_ptrs);
  k->tensors = (mi_tensor_desc_t *)(b + o_tens);
  k->tensor_ptrs = (const mi_tensor_desc_t **)(b + o_tptr);
  k->tmap = ints[0];
  k->slots = ints[1];
  k->inputs = ints[2];
  k->graph_inputs = ints[3];
  k->outputs = ints[4];
  k->graph_outputs = ints[5];
  k->node_count = nodes;
  return MI_OK;
}

static void finish_desc(mi__kdesc_t *k) {
  for (int32_t i = 0; i < k->node_count; i++) k->node_ptrs[i] = &k->node[i];
  for (int32_t i = 0; i < k->tensor_count; i++) k->tensor_ptrs[i] = &k->tensors[i];
  k->desc.struct_size = (uint32_t)sizeof k->desc;
  k->desc.node_count = k->node_count;
  k->desc.nodes = k->node_ptrs;
  k->desc.tensor_count = k->tensor_count;
  k->desc.tensors = k->tensor_ptrs;
  k->desc.input_count = k->input_count;
  k->desc.inputs = k->inputs;
  k->desc.output_count = k->output_count;
  k->desc.outputs = k->outputs;
}

int32_t mi__readers_index(const mi_graph_t *g, int32_t **off, int32_t **node) {
  int32_t total = 0;
  *off = calloc((size_t)g->tensor_count + 2, sizeof **off);
  *node = NULL;
  if (!*off) return MI_ERR_OUT_OF_MEMORY;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] >= 0) (*off)[g->nodes[i].inputs[j] + 1]++, total++;
  for (int32_t t = 0; t < g->tensor_count; t++) (*off)[t + 1] += (*off)[t];
  if (!(*node = malloc(((size_t)total + 1) * sizeof **node))) {
    free(*off);
    *off = NULL;
    return MI_ERR_OUT_OF_MEMORY;
  }
  /* (filled through the starts, which then stand one tensor later: shifted back after) */
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] >= 0) (*node)[(*off)[g->nodes[i].inputs[j]]++] = i;
  for (int32_t t = g->tensor_count; t > 0; t--) (*off)[t] = (*off)[t - 1];
  (*off)[0] = 0;
  return MI_OK;
}

int32_t mi__kdesc_build(mi__kdesc_t *k, const mi_graph_t *g, int32_t node,
                        mi_array_t *const *consts, mi_error_t *err) {
  mi__kreq_t req;
  memset(&req, 0, sizeof req);
  req.nodes = &node;
  req.node_count = 1;
  return mi__kdesc_build_req(k, g, &req, consts, err);
}

int32_t mi__kdesc_build_req(mi__kdesc_t *k, const mi_graph_t *g, const mi__kreq_t *req,
                            mi_array_t *const *consts, mi_error_t *err) {
  int32_t cap = 0, used = 0;
  char lb[32];
  memset(k, 0, sizeof *k);
  /* Subgraphs live only in the host's IR, and their captures make the input count unbounded:
   * such a node is never described to a plugin. */
  for (int32_t m = 0; m < req->node_count; m++)
    if (g->nodes[req->nodes[m]].subgraph_count)
      return mi_errorf(err, MI_ERR_UNSUPPORTED,
                       "node '%s' (%s): a node with subgraphs runs on "
                       "the host",
                       mi__node_label(g, req->nodes[m], lb, sizeof lb),
                       g->nodes[req->nodes[m]].op_type);
  for (int32_t m = 0; m < req->node_count; m++)
    cap += g->nodes[req->nodes[m]].input_count + g->nodes[req->nodes[m]].output_count;
  if (alloc_parts(k, req->node_count, cap)) {
    mi__kdesc_free(k);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory describing node %d",
                     (int)req->nodes[0]);
  }
  for (int32_t m = 0; m < req->node_count; m++) {
    const mi_node_t *n = &g->nodes[req->nodes[m]];
    mi_node_desc_t *nd = &k->node[m];
    int32_t *ins = k->slots + used, *outs = ins + n->input_count;
    used += n->input_count + n->output_count;
    for (int32_t i = 0; i < n->input_count; i++) {
      int32_t t = subst(req, n->inputs[i]), li, seen = 0, produced = 0;
      if (t < 0) {
        ins[i] = -1;
        continue;
      }
      for (int32_t j = 0; j < k->tensor_count; j++) seen |= k->tmap[j] == t;
      /* Produced by an earlier node of this kernel: an intermediate, not an input. */
      for (int32_t p = 0; p < m; p++)
        for (int32_t j = 0; j < g->nodes[req->nodes[p]].output_count; j++)
          produced |= subst(req, g->nodes[req->nodes[p]].outputs[j]) == t;
      li = local_index(k, t);
      ins[i] = li;
      /* Runtime inputs are passed once each, in order of first appearance. */
      if (!seen && !produced && !consts[t]) {
        k->inputs[k->input_count] = li;
        k->graph_inputs[k->input_count++] = t;
      }
    }
    for (int32_t i = 0; i < n->output_count; i++) {
      int32_t t = subst(req, n->outputs[i]);
      if (t < 0) {
        outs[i] = -1;
        continue;
      }
      outs[i] = local_index(k, t);
      if (leaves_kernel(g, req, m, n->outputs[i])) {
        k->outputs[k->output_count] = outs[i];
        k->graph_outputs[k->output_count++] = t;
      }
    }
    nd->struct_size = (uint32_t)sizeof *nd;
    nd->op_type = n->op_type;
    nd->name = n->name ? n->name : "";
    nd->opset = (int32_t)g->opset;
    nd->input_count = n->input_count;
    nd->inputs = ins;
    nd->output_count = n->output_count;
    nd->outputs = outs;
    nd->attr_count = n->attr_count;
    nd->attrs = n->attrs;
  }
  for (int32_t i = 0; i < k->tensor_count; i++) {
    int32_t t = k->tmap[i];
    describe_tensor(&k->tensors[i], &g->tensors[t], consts[t], req->plain_layout);
  }
  finish_desc(k);
  return MI_OK;
}

/* The dense shape a layout's buffer has, and the permutation from NCHW order into it. */
static int stored_shape(const mi_tensor_t *t, int32_t layout, int32_t block, int32_t *rank,
                        int64_t *dims, int64_t *perm_from_nchw) {
  int64_t n = t->dims[0], c = t->dims[1], h = t->dims[2], w = t->dims[3];
  if (layout == MI_LAYOUT_NHWC) {
    int64_t d[4] = {n, h, w, c}, p[4] = {0, 2, 3, 1};
    *rank = 4;
    memcpy(dims, d, sizeof d);
    memcpy(perm_from_nchw, p, sizeof p);
    return 1;
  }
  if (layout == MI_LAYOUT_NCHWC && block > 0 && c % block == 0) {
    /* NCHW viewed as [N, C/b, b, H, W]; NCHWc is [N, C/b, H, W, b]. */
    int64_t d[5] = {n, c / block, h, w, block}, p[5] = {0, 1, 3, 4, 2};
    *rank = 5;
    memcpy(dims, d, sizeof d);
    memcpy(perm_from_nchw, p, sizeof p);
    return 1;
  }
  return 0;
}

int32_t mi__kdesc_layout(mi__kdesc_t *k, const mi_graph_t *g, int32_t node, int32_t in_layout,
                         int32_t out_layout, int32_t block, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[node];
  const mi_tensor_t *x = &g->tensors[n->inputs[0]];
  int64_t sdims[MI_MAX_RANK], perm[MI_MAX_RANK];
  int32_t srank, to_nchw = out_layout == MI_LAYOUT_NCHW, other = to_nchw ? in_layout : out_layout;
  memset(k, 0, sizeof *k);
  if (x->rank != 4 || (in_layout != MI_LAYOUT_NCHW && out_layout != MI_LAYOUT_NCHW) ||
      !stored_shape(x, other, block, &srank, sdims, perm))
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "no Transpose expresses this layout conversion");
  if (alloc_parts(k, 1, 2)) {
    mi__kdesc_free(k);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  k->tensor_count = 2;
  k->tmap[0] = n->inputs[0];
  k->tmap[1] = n->outputs[0];
  for (int32_t i = 0; i < 2; i++) {
    mi_tensor_desc_t *d = &k->tensors[i];
    int plain = (i == 0) != to_nchw; /* the NCHW side */
    d->struct_size = (uint32_t)sizeof *d;
    d->dtype = x->dtype;
    d->scale = x->scale;
    d->zero_point = x->zero_point;
    if (plain && srank == 4) {
      d->rank = 4;
      d->layout = MI_LAYOUT_NCHW;
      memcpy(d->dims, x->dims, 4 * sizeof *d->dims);
    } else if (plain) { /* [N, C/b, b, H, W] */
      int64_t v[5] = {x->dims[0], x->dims[1] / block, block, x->dims[2], x->dims[3]};
      d->rank = 5;
      d->layout = MI_LAYOUT_ANY;
      memcpy(d->dims, v, sizeof v);
    } else {
      d->rank = srank;
      d->layout = srank == 4 ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY; /* dense, in the dims given */
      memcpy(d->dims, sdims, (size_t)srank * sizeof *d->dims);
    }
  }
  /* Into the stored order: perm as is; back to NCHW: its inverse. */
  for (int32_t i = 0; i < srank; i++) {
    if (to_nchw) k->perm[perm[i]] = i;
    else
      k->perm[i] = perm[i];
  }
  k->attr.name = "perm";
  k->attr.type = MI_ATTR_INTS;
  k->attr.count = srank;
  k->attr.ints = k->perm;
  k->slots[0] = 0;
  k->slots[1] = 1;
  k->node[0].struct_size = (uint32_t)sizeof k->node[0];
  k->node[0].op_type = "Transpose";
  k->node[0].name = n->name ? n->name : "";
  k->node[0].opset = (int32_t)g->opset;
  k->node[0].input_count = 1;
  k->node[0].inputs = &k->slots[0];
  k->node[0].output_count = 1;
  k->node[0].outputs = &k->slots[1];
  k->node[0].attr_count = 1;
  k->node[0].attrs = &k->attr;
  k->input_count = k->output_count = 1;
  k->inputs[0] = 0;
  k->outputs[0] = 1;
  k->graph_inputs[0] = n->inputs[0];
  k->graph_outputs[0] = n->outputs[0];
  finish_desc(k);
  return MI_OK;
}

void mi__kdesc_free(mi__kdesc_t *k) {
  if (!k) return;
  free_parts(k);
  memset(k, 0, sizeof *k);
}
