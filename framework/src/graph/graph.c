/* graph.c - the graph IR: creation, deep copy, destruction and the builder functions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

char *mi__strdup(const char *s) {
  return s ? strdup(s) : NULL;
}

void mi__tensor_release(mi_tensor_t *t) {
  if (!t) return;
  if (!t->name_shared) free(t->name);
  for (int i = 0; i < MI_MAX_RANK; i++) free(t->dim_names[i]);
  if (!t->data_shared) free(t->data);
  free(t->channel_scales);
  memset(t, 0, sizeof *t);
}

void mi__node_release(mi_node_t *n) {
  if (!n) return;
  if (!n->strings_shared) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
  }
  free(n->inputs);
  free(n->outputs);
  for (int32_t i = 0; i < n->attr_count; i++) mi__attr_release(&n->attrs[i]);
  free(n->attrs);
  for (int32_t i = 0; i < n->subgraph_count; i++) {
    mi_graph_destroy(n->subgraphs[i]);
    if (n->subgraph_names) free(n->subgraph_names[i]);
  }
  free(n->subgraphs);
  free(n->subgraph_names);
  memset(n, 0, sizeof *n);
}

int mi__node_own_strings(mi_node_t *n) {
  char *name, *op, *domain;
  if (!n->strings_shared) return 0;
  name = mi__strdup(n->name);
  op = mi__strdup(n->op_type);
  domain = mi__strdup(n->domain);
  if ((n->name && !name) || (n->op_type && !op) || (n->domain && !domain)) {
    free(name);
    free(op);
    free(domain);
    return -1;
  }
  n->name = name;
  n->op_type = op;
  n->domain = domain;
  n->strings_shared = 0;
  return 0;
}

MI_API mi_graph_t *mi_node_subgraph(const mi_node_t *n, const char *name) {
  for (int32_t i = 0; n && name && i < n->subgraph_count; i++)
    if (n->subgraph_names[i] && strcmp(n->subgraph_names[i], name) == 0) return n->subgraphs[i];
  return NULL;
}

int64_t mi__dims_numel(int32_t rank, const int64_t *dims) {
  if (rank < 0) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++)
    if (dims[i] < 0) return -1;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] == 0) return 0;
    if (n > INT64_MAX / dims[i]) return -1;
    n *= dims[i];
  }
  return n;
}

int64_t mi__tensor_numel(const mi_tensor_t *t) { return mi__dims_numel(t->rank, t->dims); }

void mi__tensor_set_shape(mi_tensor_t *t, int32_t rank, const int64_t *dims) {
  for (int i = 0; i < MI_MAX_RANK; i++) {
    free(t->dim_names[i]);
    t->dim_names[i] = NULL;
    t->dims[i] = 0;
  }
  t->rank = rank;
  for (int32_t i = 0; i < rank && i < MI_MAX_RANK; i++) t->dims[i] = dims[i];
}

MI_API mi_graph_t *mi_graph_create(const char *name) {
  mi_graph_t *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->name = mi__strdup(name ? name : "graph");
  if (!g->name) {
    free(g);
    return NULL;
  }
  g->opset = 13;
  return g;
}

MI_API void mi_graph_destroy(mi_graph_t *g) {
  if (!g) return;
  for (int32_t i = 0; i < g->tensor_count; i++) mi__tensor_release(&g->tensors[i]);
  for (int32_t i = 0; i < g->node_count; i++) mi__node_release(&g->nodes[i]);
  free(g->tensors);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->captures);
  free(g->name);
  free(g);
}

int mi__why(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return -1;
}

void mi__in_views_of_node(const mi_graph_t *g, const mi_node_t *n, mi__in_view_t *v, int32_t count) {
  for (int32_t k = 0; k < count; k++) {
    int32_t t = k < n->input_count ? n->inputs[k] : -1;
    const mi_tensor_t *x = t >= 0 ? &g->tensors[t] : NULL;
    v[k].present = x != NULL;
    v[k].dtype = x ? x->dtype : MI_DTYPE_UNDEFINED;
    v[k].rank = x ? x->rank : -1;
    v[k].dims = x ? x->dims : NULL;
    v[k].data = x ? x->data : NULL;
  }
}

int64_t mi__in_view_numel(const mi__in_view_t *x) {
  int64_t c = 1;
  for (int32_t d = 0; d < x->rank; d++) c *= x->dims[d];
  return c;
}

void *mi__dup_bytes(const void *p, size_t n) {
  if (!p && n) return NULL;
  void *d = malloc(n ? n : 1);
  if (d && n) memcpy(d, p, n);
  return d;
}

/* share: the copy points at s's data instead of copying it (clone_graph); names: at its name. */
static int clone_tensor(mi_tensor_t *d, const mi_tensor_t *s, int share, int names) {
  *d = *s;
  d->name = NULL;
  d->name_shared = 0;
  memset(d->dim_names, 0, sizeof d->dim_names);
  d->data = NULL;
  d->data_shared = 0;
  d->channel_scales = NULL;
  if (names) {
    d->name = s->name;
    d->name_shared = 1;
  } else if (!(d->name = mi__strdup(s->name))) {
    return -1;
  }
  for (int i = 0; i < MI_MAX_RANK; i++)
    if (s->dim_names[i] && !(d->dim_names[i] = mi__strdup(s->dim_names[i]))) return -1;
  if (s->data && share) {
    d->data = s->data;
    d->data_shared = 1;
  } else if (s->data && !(d->data = mi__dup_bytes(s->data, s->nbytes))) {
    return -1;
  }
  if (s->channel_scales &&
      !(d->channel_scales = mi__dup_bytes(s->channel_scales, s->channel_count * sizeof(float))))
    return -1;
  return 0;
}

static mi_graph_t *clone_graph(const mi_graph_t *g, int share, int names);

static int clone_node(mi_node_t *d, const mi_node_t *s, int share, int names) {
  memset(d, 0, sizeof *d);
  d->group = s->group;
  if (names && s->domain) {
    d->name = s->name;
    d->op_type = s->op_type;
    d->domain = s->domain;
    d->strings_shared = 1;
  } else if (!(d->name = mi__strdup(s->name)) || !(d->op_type = mi__strdup(s->op_type)) ||
             !(d->domain = mi__strdup(s->domain ? s->domain : ""))) {
    return -1;
  }
  if (!(d->inputs = mi__dup_bytes(s->inputs, (size_t)s->input_count * sizeof(int32_t)))) return -1;
  d->input_count = s->input_count;
  if (!(d->outputs = mi__dup_bytes(s->outputs, (size_t)s->output_count * sizeof(int32_t)))) return -1;
  d->output_count = s->output_count;
  if (s->attr_count) {
    if (!(d->attrs = calloc((size_t)s->attr_count, sizeof *d->attrs))) return -1;
    for (int32_t i = 0; i < s->attr_count; i++) {
      if (mi__attr_copy(&d->attrs[i], &s->attrs[i]) != MI_OK) return -1;
      d->attr_count = i + 1;
    }
  }
  d->implicit_inputs = s->implicit_inputs;
  if (s->subgraph_count) {
    if (!(d->subgraphs = calloc((size_t)s->subgraph_count, sizeof *d->subgraphs)) ||
        !(d->subgraph_names = calloc((size_t)s->subgraph_count, sizeof *d->subgraph_names)))
      return -1;
    for (int32_t i = 0; i < s->subgraph_count; i++) {
      d->subgraph_count = i + 1;
      if (!(d->subgraphs[i] = clone_graph(s->subgraphs[i], share, names)) ||
          !(d->subgraph_names[i] = mi__strdup(s->subgraph_names[i])))
        return -1;
    }
  }
  return 0;
}

/* A copy of g; with share, its constants (subgraphs' too) point at g's data (mi__graph_clone_shared);
 * with names, its tensors and nodes name themselves with g's strings. */
static mi_graph_t *clone_graph(const mi_graph_t *g, int share, int names) {
  if (!g) return NULL;
  mi_graph_t *c = mi_graph_create(g->name);
  if (!c) return NULL;
  c->opset = g->opset;
  if (g->tensor_count) {
    if (!(c->tensors = calloc((size_t)g->tensor_count, sizeof *c->tensors))) goto fail;
    c->tensor_cap = g->tensor_count;
    for (int32_t i = 0; i < g->tensor_count; i++) {
      c->tensor_count = i + 1;
      if (clone_tensor(&c->tensors[i], &g->tensors[i], share, names)) goto fail;
    }
  }
  if (g->node_count) {
    if (!(c->nodes = calloc((size_t)g->node_count, sizeof *c->nodes))) goto fail;
    c->node_cap = g->node_count;
    for (int32_t i = 0; i < g->node_count; i++) {
      c->node_count = i + 1;
      if (clone_node(&c->nodes[i], &g->nodes[i], share, names)) goto fail;
    }
  }
  if (g->input_count &&
      !(c->inputs = mi__dup_bytes(g->inputs, (size_t)g->input_count * sizeof(int32_t))))
    goto fail;
  c->input_count = g->input_count;
  if (g->output_count &&
      !(c->outputs = mi__dup_bytes(g->outputs, (size_t)g->output_count * sizeof(int32_t))))
    goto fail;
  c->output_count = g->output_count;
  if (g->capture_count &&
      !(c->captures = mi__dup_bytes(g->captures, (size_t)g->capture_count * sizeof(int32_t))))
    goto fail;
  c->capture_count = g->capture_count;
  return c;
fail:
  mi_graph_destroy(c);
  return NULL;
}

MI_API mi_graph_t *mi_graph_clone(const mi_graph_t *g) {
  return clone_graph(g, 0, 0);
}

mi_graph_t *mi__graph_clone_shared(const mi_graph_t *g) {
  return clone_graph(g, 1, 0);
}

mi_graph_t *mi__graph_clone_named(const mi_graph_t *g) {
  return clone_graph(g, 1, 1);
}

static int grow(void **arr, int32_t *cap, int32_t need, size_t elem) {
  if (need <= *cap) return 0;
  int32_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *p = realloc(*arr, (size_t)nc * elem);
  if (!p) return -1;
  memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
  *arr = p;
  *cap = nc;
  return 0;
}

MI_API int32_t mi_graph_add_tensor(mi_graph_t *g, const char *name, int32_t dtype, int32_t rank,
                                   const int64_t *dims) {
  if (!g || rank > MI_MAX_RANK || rank < -1 || (rank > 0 && !dims)) return -1;
  if (grow((void **)&g->tensors, &g->tensor_cap, g->tensor_count + 1, sizeof *g->tensors))
    return -1;
  mi_tensor_t *t = &g->tensors[g->tensor_count];
  memset(t, 0, sizeof *t);
  char auto_name[32];
  if (!name) {
    snprintf(auto_name, sizeof auto_name, "t%d", (int)g->tensor_count);
    name = auto_name;
  }
  if (!(t->name = mi__strdup(name))) return -1;
  t->dtype = dtype;
  t->rank = rank;
  for (int32_t i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->layout = MI_LAYOUT_ANY;
  t->producer = -1;
  return g->tensor_count++;
}

MI_API int32_t mi_tensor_dynamic_dim(const mi_tensor_t *t) {
  for (int32_t d = 0; t && d < t->rank; d++)
    if (t->dims[d] < 0) return d;
  return -1;
}

MI_API int32_t mi_graph_find_tensor(const mi_graph_t *g, const char *name) {
  if (!g || !name) return -1;
  for (int32_t i = 0; i < g->tensor_count; i++)
    if (g->tensors[i].name && strcmp(g->tensors[i].name, name) == 0) return i;
  return -1;
}

MI_API int32_t mi_graph_set_data(mi_graph_t *g, int32_t t, const void *data, size_t nbytes) {
  if (!g || t < 0 || t >= g->tensor_count || (!data && nbytes)) return MI_ERR_INVALID_ARGUMENT;
  void *d = malloc(nbytes ? nbytes : 1);
  if (!d) return MI_ERR_OUT_OF_MEMORY;
  if (nbytes) memcpy(d, data, nbytes);
  if (!g->tensors[t].data_shared) free(g->tensors[t].data);
  g->tensors[t].data = d;
  g->tensors[t].data_shared = 0;
  g->tensors[t].nbytes = nbytes;
  return MI_OK;
}

/* A new tensor holding a copy of `nbytes` of data; -1, and nothing added, when it cannot be. */
static int32_t add_const(mi_graph_t *g, const char *name, int32_t dtype, int32_t rank,
                         const int64_t *dims, const void *data, size_t nbytes) {
  int32_t t = mi_graph_add_tensor(g, name, dtype, rank, dims);
  if (t < 0) return -1;
  if (mi_graph_set_data(g, t, data, nbytes) != MI_OK) {
    mi__tensor_release(&g->tensors[t]);
    g->tensor_count--;
    return -1;
  }
  return t;
}

MI_API int32_t mi_graph_add_const_f32(mi_graph_t *g, const char *name, int32_t rank,
                                      const int64_t *dims, const float *data) {
  if (!g || rank < 0 || rank > MI_MAX_RANK || (rank > 0 && !dims)) return -1;
  int64_t n = mi__dims_numel(rank, dims);
  if (n < 0 || (n > 0 && !data)) return -1;
  return add_const(g, name, MI_DTYPE_FLOAT32, rank, dims, data, (size_t)n * sizeof(float));
}

MI_API int32_t mi_graph_add_const_i64(mi_graph_t *g, const char *name, int64_t count,
                                      const int64_t *data) {
  if (!g || count < 0 || (count > 0 && !data)) return -1;
  return add_const(g, name, MI_DTYPE_INT64, 1, &count, data, (size_t)count * sizeof(int64_t));
}

static int32_t append_index(int32_t **arr, int32_t *count, int32_t v) {
  for (int32_t i = 0; i < *count; i++)
    if ((*arr)[i] == v) return MI_OK;
  int32_t *p = realloc(*arr, (size_t)(*count + 1) * sizeof **arr);
  if (!p) return MI_ERR_OUT_OF_MEMORY;
  p[(*count)++] = v;
  *arr = p;
  return MI_OK;
}

MI_API int32_t mi_graph_add_input(mi_graph_t *g, int32_t t) {
  if (!g || t < 0 || t >= g->tensor_count) return MI_ERR_INVALID_ARGUMENT;
  return append_index(&g->inputs, &g->input_count, t);
}

MI_API int32_t mi_graph_add_output(mi_graph_t *g, int32_t t) {
  if (!g || t < 0 || t >= g->tensor_count) return MI_ERR_INVALID_ARGUMENT;
  return append_index(&g->outputs, &g->output_count, t);
}

MI_API int32_t mi_graph_add_node(mi_graph_t *g, const char *op_type, const char *name,
                                 int32_t input_count, const int32_t *inputs,
                                 int32_t output_count, const int32_t *outputs) {
  if (!g || !op_type || input_count < 0 || output_count < 0 || (input_count && !inputs) ||
      (output_count && !outputs))
    return -1;
  for (int32_t i = 0; i < input_count; i++)
    if (inputs[i] < -1 || inputs[i] >= g->tensor_count) return -1;
  for (int32_t i = 0; i < output_count; i++)
    if (outputs[i] < 0 || outputs[i] >= g->tensor_count) return -1;
  if (grow((void **)&g->nodes, &g->node_cap, g->node_count + 1, sizeof *g->nodes)) return -1;
  mi_node_t *n = &g->nodes[g->node_count];
  memset(n, 0, sizeof *n);
  char auto_name[96];
  if (!name) {
    snprintf(auto_name, sizeof auto_name, "%s_%d", op_type, (int)g->node_count);
    name = auto_name;
  }
  n->group = -1;
  n->name = mi__strdup(name);
  n->op_type = mi__strdup(op_type);
  n->domain = mi__strdup("");
  n->inputs = malloc((size_t)(input_count ? input_count : 1) * sizeof(int32_t));
  n->outputs = malloc((size_t)(output_count ? output_count : 1) * sizeof(int32_t));
  if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs) {
    mi__node_release(n);
    return -1;
  }
  if (input_count) memcpy(n->inputs, inputs, (size_t)input_count * sizeof(int32_t));
  if (output_count) memcpy(n->outputs, outputs, (size_t)output_count * sizeof(int32_t));
  n->input_count = input_count;
  n->output_count = output_count;
  for (int32_t i = 0; i < output_count; i++) g->tensors[outputs[i]].producer = g->node_count;
  return g->node_count++;
}
