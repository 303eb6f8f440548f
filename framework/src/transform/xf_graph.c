/* xf_graph.c - graph-editing helpers the transform passes share (uses, new tensors, removal). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "transform/xf_internal.h"

int32_t mi__xf_sole_consumer(const mi_graph_t *g, int32_t t) {
  int32_t who = t < 0 ? -1 : mi__graph_sole_reader(g, t);
  if (who < 0) return -1;
  /* The passes rewrite the one input that reads t: a node reading it twice (Mul(x, x)) does not
   * qualify, though it is the sole reader. */
  int32_t reads = 0;
  for (int32_t k = 0; k < g->nodes[who].input_count; k++) reads += g->nodes[who].inputs[k] == t;
  return reads == 1 ? who : -1;
}

float *mi__xf_const_f32(const mi_graph_t *g, const mi_node_t *n, int32_t k) {
  if (k >= n->input_count || n->inputs[k] < 0) return NULL;
  const mi_tensor_t *t = &g->tensors[n->inputs[k]];
  if (!t->data || t->dtype != MI_DTYPE_FLOAT32) return NULL;
  return t->data;
}

static int32_t unique_name(const mi_graph_t *g, const char *base, const char *suffix, char *buf,
                           size_t cap) {
  snprintf(buf, cap, "%s%s", base ? base : "t", suffix);
  for (int i = 1; mi_graph_find_tensor(g, buf) >= 0; i++)
    snprintf(buf, cap, "%s%s.%d", base ? base : "t", suffix, i);
  return 0;
}

int32_t mi__xf_add_const(mi_graph_t *g, const char *base, const char *suffix, int32_t dtype,
                         int32_t rank, const int64_t *dims, const void *data, size_t nbytes) {
  char name[256];
  unique_name(g, base, suffix, name, sizeof name);
  int32_t t = mi_graph_add_tensor(g, name, dtype, rank, dims);
  if (t < 0) return -1;
  if (mi_graph_set_data(g, t, data, nbytes) != MI_OK) return -1;
  return t;
}

int32_t mi__xf_add_value(mi_graph_t *g, const char *base, const char *suffix, int32_t like) {
  char name[256];
  unique_name(g, base, suffix, name, sizeof name);
  /* Copy the shape first: adding a tensor may move the array `like` lives in. */
  int32_t dtype = g->tensors[like].dtype, rank = g->tensors[like].rank;
  int64_t dims[MI_MAX_RANK];
  memcpy(dims, g->tensors[like].dims, sizeof dims);
  return mi_graph_add_tensor(g, name, dtype, rank, rank >= 0 ? dims : NULL);
}

void mi__xf_remove_node(mi_graph_t *g, int32_t n) {
  mi__node_release(&g->nodes[n]);
  memmove(&g->nodes[n], &g->nodes[n + 1], (size_t)(g->node_count - n - 1) * sizeof *g->nodes);
  g->node_count--;
  for (int32_t t = 0; t < g->tensor_count; t++) {
    if (g->tensors[t].producer == n) g->tensors[t].producer = -1;
    else if (g->tensors[t].producer > n)
      g->tensors[t].producer--;
  }
}

void mi__xf_replace_uses(mi_graph_t *g, int32_t from, int32_t to, int32_t skip) {
  for (int32_t n = 0; n < g->node_count; n++) {
    if (n == skip) continue;
    for (int32_t k = 0; k < g->nodes[n].input_count; k++)
      if (g->nodes[n].inputs[k] == from) g->nodes[n].inputs[k] = to;
  }
}

int32_t mi__xf_refresh(mi_graph_t *g, mi_error_t *err) {
  return mi_graph_infer_shapes(g, err); /* sorts first */
}

int mi__xf_is_act(const mi_node_t *n) {
  static const char *const acts[] = {"Relu", "Clip", "LeakyRelu", "HardSwish", "HardSigmoid",
                                     "Sigmoid", "Tanh", "Gelu", "Elu", "Selu"};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
    if (strcmp(n->op_type, acts[i]) == 0) return 1;
  return 0;
}

int mi__xf_is_zero_act(const mi_graph_t *g, const mi_node_t *n) {
  static const char *const zero[] = {"Relu", "LeakyRelu", "HardSwish", "Tanh", "Gelu",
                                     "Identity"};
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
    if (strcmp(n->op_type, zero[i]) == 0) return 1;
  if (strcmp(n->op_type, "Clip") == 0) {
    float lo = mi_node_attr_float(n, "min", -INFINITY), hi = mi_node_attr_float(n, "max", INFINITY);
    const float *p;
    if ((p = mi__xf_const_f32(g, n, 1))) lo = p[0];
    if ((p = mi__xf_const_f32(g, n, 2))) hi = p[0];
    if (n->input_count > 1 && n->inputs[1] >= 0 && !mi__xf_const_f32(g, n, 1)) return 0;
    if (n->input_count > 2 && n->inputs[2] >= 0 && !mi__xf_const_f32(g, n, 2)) return 0;
    return lo <= 0.0f && hi >= 0.0f;
  }
  return 0;
}

int mi__xf_is_weighted(const mi_graph_t *g, int32_t n) {
  const mi_node_t *x = &g->nodes[n];
  if (strcmp(x->op_type, "Conv") != 0 && strcmp(x->op_type, "Gemm") != 0 &&
      strcmp(x->op_type, "MatMul") != 0)
    return 0;
  if (x->input_count < 2 || x->inputs[0] < 0 || g->tensors[x->inputs[0]].data) return 0;
  const float *w = mi__xf_const_f32(g, x, 1);
  if (!w) return 0;
  return g->tensors[x->inputs[1]].rank >= 2;
}

MI_API int mi_xf_recurrent(const mi_graph_t *g, int32_t n) {
  const mi_node_t *x = &g->nodes[n];
  if (strcmp(x->op_type, "LSTM") && strcmp(x->op_type, "GRU") && strcmp(x->op_type, "RNN")) return 0;
  if (x->input_count < 3 || x->inputs[0] < 0 || g->tensors[x->inputs[0]].data) return 0;
  for (int32_t i = 1; i <= 2; i++)
    if (x->inputs[i] < 0 || !mi__xf_const_f32(g, x, i) || g->tensors[x->inputs[i]].rank != 3) return 0;
  return 1;
}

int64_t mi__xf_numel(const mi_graph_t *g, int32_t t) {
  if (t < 0) return -1;
  const mi_tensor_t *x = &g->tensors[t];
  if (x->data && x->dtype != MI_DTYPE_INT4) {
    size_t es = mi_dtype_size(x->dtype);
    return es ? (int64_t)(x->nbytes / es) : -1;
  }
  return mi__tensor_numel(x);
}

char *mi__xf_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int32_t mi__xf_compact(mi_graph_t *g, mi_error_t *err) {
  int32_t *map = malloc(((size_t)g->tensor_count + 1) * sizeof *map), kept = 0;
  if (!map) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "compact: out of memory");
  for (int32_t t = 0; t < g->tensor_count; t++) map[t] = -1;
  for (int32_t n = 0; n < g->node_count; n++) {
    for (int32_t k = 0; k < g->nodes[n].input_count; k++)
      if (g->nodes[n].inputs[k] >= 0) map[g->nodes[n].inputs[k]] = 0;
    for (int32_t k = 0; k < g->nodes[n].output_count; k++)
      if (g->nodes[n].outputs[k] >= 0) map[g->nodes[n].outputs[k]] = 0;
  }
  for (int32_t i = 0; i < g->input_count; i++) map[g->inputs[i]] = 0;
  for (int32_t i = 0; i < g->output_count; i++) map[g->outputs[i]] = 0;
  for (int32_t t = 0; t < g->tensor_count; t++) {
    if (map[t] < 0) {
      mi__tensor_release(&g->tensors[t]);
      continue;
    }
    if (kept != t) g->tensors[kept] = g->tensors[t];
    map[t] = kept++;
  }
  g->tensor_count = kept;
  for (int32_t n = 0; n < g->node_count; n++) {
    for (int32_t k = 0; k < g->nodes[n].input_count; k++)
      if (g->nodes[n].inputs[k] >= 0) g->nodes[n].inputs[k] = map[g->nodes[n].inputs[k]];
    for (int32_t k = 0; k < g->nodes[n].output_count; k++)
      if (g->nodes[n].outputs[k] >= 0) g->nodes[n].outputs[k] = map[g->nodes[n].outputs[k]];
  }
  for (int32_t i = 0; i < g->input_count; i++) g->inputs[i] = map[g->inputs[i]];
  for (int32_t i = 0; i < g->output_count; i++) g->outputs[i] = map[g->outputs[i]];
  free(map);
  return MI_OK;
}

/* Sets input k of node n (growing the input list when needed). */
int32_t mi__xf_set_input(mi_graph_t *g, int32_t n, int32_t k, int32_t t) {
  mi_node_t *x = &g->nodes[n];
  if (k >= x->input_count) {
    int32_t *p = realloc(x->inputs, (size_t)(k + 1) * sizeof *p);
    if (!p) return MI_ERR_OUT_OF_MEMORY;
    for (int32_t i = x->input_count; i <= k; i++) p[i] = -1;
    x->inputs = p;
    x->input_count = k + 1;
  }
  x->inputs[k] = t;
  return MI_OK;
}
