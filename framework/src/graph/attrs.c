/* attrs.c - node attributes: setters that copy their arguments, lookups with defaults. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

void mi__attr_release(mi_attr_t *a) {
  if (!a) return;
  free((void *)a->name);
  free((void *)a->ints);
  free((void *)a->floats);
  free((void *)a->s);
  memset(a, 0, sizeof *a);
}

int32_t mi__attr_copy(mi_attr_t *dst, const mi_attr_t *src) {
  memset(dst, 0, sizeof *dst);
  dst->type = src->type;
  dst->count = src->count;
  dst->i = src->i;
  dst->f = src->f;
  if (!(dst->name = mi__strdup(src->name))) goto oom;
  if (src->ints) {
    int64_t *p = malloc((size_t)(src->count ? src->count : 1) * sizeof *p);
    if (!p) goto oom;
    if (src->count) memcpy(p, src->ints, (size_t)src->count * sizeof *p);
    dst->ints = p;
  }
  if (src->floats) {
    float *p = malloc((size_t)(src->count ? src->count : 1) * sizeof *p);
    if (!p) goto oom;
    if (src->count) memcpy(p, src->floats, (size_t)src->count * sizeof *p);
    dst->floats = p;
  }
  if (src->s && !(dst->s = mi__strdup(src->s))) goto oom;
  return MI_OK;
oom:
  mi__attr_release(dst);
  return MI_ERR_OUT_OF_MEMORY;
}

int32_t mi__node_put_attr(mi_node_t *n, mi_attr_t *a) {
  for (int32_t i = 0; i < n->attr_count; i++) {
    if (strcmp(n->attrs[i].name, a->name) == 0) {
      mi__attr_release(&n->attrs[i]);
      n->attrs[i] = *a;
      return MI_OK;
    }
  }
  mi_attr_t *p = realloc(n->attrs, (size_t)(n->attr_count + 1) * sizeof *p);
  if (!p) {
    mi__attr_release(a);
    return MI_ERR_OUT_OF_MEMORY;
  }
  p[n->attr_count++] = *a;
  n->attrs = p;
  return MI_OK;
}

static mi_node_t *node_at(mi_graph_t *g, int32_t node, const char *name) {
  if (!g || !name || node < 0 || node >= g->node_count) return NULL;
  return &g->nodes[node];
}

/* Stores a copy of `a` (which points at the caller's values) as attribute `name` of the node,
 * replacing one of that name. */
static int32_t put_copy(mi_graph_t *g, int32_t node, const char *name, mi_attr_t a) {
  mi_node_t *n = node_at(g, node, name);
  mi_attr_t c;
  if (!n) return MI_ERR_INVALID_ARGUMENT;
  a.name = name;
  if (mi__attr_copy(&c, &a) != MI_OK) return MI_ERR_OUT_OF_MEMORY;
  return mi__node_put_attr(n, &c);
}

MI_API int32_t mi_node_set_int(mi_graph_t *g, int32_t node, const char *name, int64_t v) {
  return put_copy(g, node, name, (mi_attr_t){.type = MI_ATTR_INT, .i = v});
}

MI_API int32_t mi_node_set_float(mi_graph_t *g, int32_t node, const char *name, float v) {
  return put_copy(g, node, name, (mi_attr_t){.type = MI_ATTR_FLOAT, .f = v});
}

/* An empty list still gets an array (of one unused element), as a parsed one has. */
static const int64_t k_no_ints[1];
static const float k_no_floats[1];

MI_API int32_t mi_node_set_ints(mi_graph_t *g, int32_t node, const char *name, int32_t count,
                                const int64_t *v) {
  if (count < 0 || (count && !v)) return MI_ERR_INVALID_ARGUMENT;
  return put_copy(g, node, name,
                  (mi_attr_t){.type = MI_ATTR_INTS, .count = count, .ints = v ? v : k_no_ints});
}

MI_API int32_t mi_node_set_floats(mi_graph_t *g, int32_t node, const char *name, int32_t count,
                                  const float *v) {
  if (count < 0 || (count && !v)) return MI_ERR_INVALID_ARGUMENT;
  return put_copy(g, node, name,
                  (mi_attr_t){.type = MI_ATTR_FLOATS, .count = count, .floats = v ? v : k_no_floats});
}

MI_API int32_t mi_node_set_string(mi_graph_t *g, int32_t node, const char *name, const char *v) {
  if (!v) return MI_ERR_INVALID_ARGUMENT;
  return put_copy(g, node, name, (mi_attr_t){.type = MI_ATTR_STRING, .s = v});
}

MI_API const mi_attr_t *mi_node_attr(const mi_node_t *n, const char *name) {
  if (!n || !name) return NULL;
  for (int32_t i = 0; i < n->attr_count; i++)
    if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

MI_API int64_t mi_node_attr_int(const mi_node_t *n, const char *name, int64_t dflt) {
  const mi_attr_t *a = mi_node_attr(n, name);
  return a && a->type == MI_ATTR_INT ? a->i : dflt;
}

MI_API float mi_node_attr_float(const mi_node_t *n, const char *name, float dflt) {
  const mi_attr_t *a = mi_node_attr(n, name);
  return a && a->type == MI_ATTR_FLOAT ? a->f : dflt;
}

MI_API const char *mi_node_attr_string(const mi_node_t *n, const char *name, const char *dflt) {
  const mi_attr_t *a = mi_node_attr(n, name);
  return a && a->type == MI_ATTR_STRING ? a->s : dflt;
}

int64_t mi__shape_op_range(const mi_node_t *n, int32_t rank, int has_range, int64_t *start) {
  int64_t s = has_range ? mi_node_attr_int(n, "start", 0) : 0;
  int64_t e = has_range ? mi_node_attr_int(n, "end", rank) : rank;
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = s < 0 ? 0 : s > rank ? rank
                           : s;
  e = e < 0 ? 0 : e > rank ? rank
                           : e;
  *start = s;
  return e > s ? e - s : 0;
}

void mi__node_become(mi_node_t *m, char *op) {
  free(m->op_type);
  m->op_type = op;
  free(m->domain);
  m->domain = NULL;
  for (int32_t k = 0; k < m->attr_count; k++) mi__attr_release(&m->attrs[k]);
  free(m->attrs);
  m->attrs = NULL;
  m->attr_count = 0;
}
