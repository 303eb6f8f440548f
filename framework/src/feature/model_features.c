/* model_features.c - static features of a model and of each layer: op histogram, FLOPs,
 * parameters, widths, bytes moved, arithmetic intensity, fusability, channel alignment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/graph.h"
#include "metainfer/mi_measure.h"

/* Bytes a tensor holds, by mi__tensor_numel_est's count. */
static double est_bytes(const mi_tensor_t *t) {
  return mi__tensor_numel_est(t) * (double)mi_dtype_size(t->dtype);
}

static void shape_str(const mi_tensor_t *t, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (int32_t i = 0; t->rank > 0 && i < t->rank && n < cap; i++)
    n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "x" : "", (long long)t->dims[i]);
}

/* Activations, normalisation and residual adds right after a producer can join its kernel. */
static int fusable(const mi_graph_t *g, const mi_node_t *n) {
  static const char *const ops[] = {"Relu", "Clip", "Sigmoid", "HardSwish", "HardSigmoid",
                                    "LeakyRelu", "BatchNormalization", "Add", "Gelu", "Tanh"};
  const mi_tensor_t *x = mi__node_tensor(g, n, 0, 0);
  int hit = 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) hit |= !strcmp(n->op_type, ops[i]);
  if (!hit || !x || x->producer < 0) return 0;
  {
    const char *p = g->nodes[x->producer].op_type;
    return !strcmp(p, "Conv") || !strcmp(p, "Gemm") || !strcmp(p, "MatMul") ||
           !strcmp(p, "BatchNormalization");
  }
}

static int32_t alignment(int64_t c) {
  int32_t a = 1;
  if (c <= 0) return 1;
  while (a < 64 && c % (a * 2) == 0) a *= 2;
  return a;
}

static int64_t width(const mi_tensor_t *t) {
  if (!t || t->rank < 2) return t && t->rank == 1 ? t->dims[0] : 0;
  return t->rank == 4 ? t->dims[1] : t->dims[t->rank - 1];
}

MI_API int32_t mi_model_features(const mi_graph_t *g, mi_model_features_t *f,
                                 mi_layer_features_t **layers, int32_t *layer_count,
                                 mi_error_t *err) {
  mi_layer_features_t *ls = NULL;
  size_t n = 0;
  if (layers) *layers = NULL;
  if (layer_count) *layer_count = 0;
  if (!g || !f) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_model_features: NULL");
  memset(f, 0, sizeof *f);
  if (layers && !(ls = calloc((size_t)g->node_count + 1, sizeof *ls)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "features: out of memory");
  for (int32_t t = 0; t < g->tensor_count; t++)
    if (g->tensors[t].data) f->params += (int64_t)mi__tensor_numel_est(&g->tensors[t]);
  for (int32_t i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    char sh[64];
    int64_t b = t->rank > 0 && t->dims[0] > 0 ? t->dims[0] : 1;
    if (i == 0) f->batch = b;
    f->input_scale += (int64_t)(mi__tensor_numel_est(t) / (double)b);
    shape_str(t, sh, sizeof sh);
    n += (size_t)snprintf(f->input_shapes + n, n < sizeof f->input_shapes ? sizeof f->input_shapes - n : 0,
                          "%s%s:%s", i ? ";" : "", t->name, sh);
    if (n >= sizeof f->input_shapes) n = sizeof f->input_shapes - 1;
  }
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *nd = &g->nodes[i];
    const mi_tensor_t *x = mi__node_tensor(g, nd, 0, 0), *y = mi__node_tensor(g, nd, 1, 0);
    double bytes = 0, fl;
    int32_t k;
    if (!strcmp(nd->op_type, "Constant")) continue;
    f->layer_count++;
    for (k = 0; k < f->op_kinds; k++)
      if (!strcmp(f->op_names[k], nd->op_type)) break;
    if (k == f->op_kinds && k < MI_FEATURE_MAX_OPS) {
      snprintf(f->op_names[k], sizeof f->op_names[k], "%s", nd->op_type);
      f->op_kinds++;
    }
    if (k < MI_FEATURE_MAX_OPS) f->op_counts[k]++;
    fl = mi__node_flops(g, nd);
    f->flops += fl;
    if (width(y) > f->max_width) f->max_width = width(y);
    if (!ls) continue;
    for (int32_t j = 0; j < nd->input_count; j++)
      if (nd->inputs[j] >= 0)
        bytes += est_bytes(&g->tensors[nd->inputs[j]]);
    for (int32_t j = 0; j < nd->output_count; j++)
      if (nd->outputs[j] >= 0)
        bytes += est_bytes(&g->tensors[nd->outputs[j]]);
    {
      mi_layer_features_t *l = &ls[(*layer_count)++];
      snprintf(l->name, sizeof l->name, "%s", nd->name ? nd->name : "");
      snprintf(l->op_type, sizeof l->op_type, "%s", nd->op_type);
      if (x) shape_str(x, l->in_shape, sizeof l->in_shape);
      if (y) shape_str(y, l->out_shape, sizeof l->out_shape);
      l->flops = fl;
      l->bytes = bytes;
      l->intensity = bytes > 0 ? fl / bytes : 0;
      l->fusable = fusable(g, nd);
      l->alignment = alignment(width(y));
    }
  }
  if (layers) *layers = ls;
  return MI_OK;
}

MI_API char *mi_model_features_json(const mi_model_features_t *f) {
  mi__sbuf_t b = {0};
  if (!f) return NULL;
  mi__sbuf_printf(&b, "{\"layers\":%d,\"flops\":", (int)f->layer_count);
  mi__sbuf_json_double(&b, f->flops);
  mi__sbuf_printf(&b,
                  ",\"params\":%lld,\"max_width\":%lld,\"input_scale\":%lld,\"batch\":%lld,"
                  "\"input_shapes\":",
                  (long long)f->params, (long long)f->max_width,
                  (long long)f->input_scale, (long long)f->batch);
  mi__sbuf_json_string(&b, f->input_shapes);
  mi__sbuf_printf(&b, ",\"ops\":{");
  for (int32_t i = 0; i < f->op_kinds; i++) {
    mi__sbuf_printf(&b, "%s", i ? "," : "");
    mi__sbuf_json_string(&b, f->op_names[i]);
    mi__sbuf_printf(&b, ":%d", (int)f->op_counts[i]);
  }
  mi__sbuf_printf(&b, "}}");
  return mi__sbuf_take(&b);
}

MI_API int32_t mi_file_hash(const char *path, char out[17], mi_error_t *err) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  unsigned char buf[65536];
  uint64_t h = MI_HASH64_SEED;
  size_t n;
  if (!f) return mi_errorf(err, MI_ERR_IO, "cannot read '%s'", path ? path : "(null)");
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = mi_hash64(buf, n, h);
  if (ferror(f)) {
    fclose(f);
    return mi_errorf(err, MI_ERR_IO, "cannot read '%s'", path);
  }
  fclose(f);
  mi_hash64_hex(h, out);
  return MI_OK;
}
