/* qdq_params.c - the quantization of a QDQ model read from a file, moved from its
 * QuantizeLinear / DequantizeLinear nodes' constant inputs into the tensor fields a lowered
 * quantized layer is described with (docs/abi.md, "Quantized layers"), so that exported QDQ
 * models (ONNX Runtime's quantize_static, tools/mi-quantize) reach the devices' INT8 kernels
 * the way the transform's own QDQ graphs do. Only the fields change: node indices, tensors and
 * what the reference computes stay the same. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

static int is_plain(const mi_node_t *n, const char *op) {
  return strcmp(n->op_type, op) == 0 && !(n->domain && n->domain[0]);
}

static int64_t numel(const mi_tensor_t *t) {
  int64_t c = 1;
  if (t->rank < 0) return -1;
  for (int32_t d = 0; d < t->rank; d++) c *= t->dims[d];
  return c;
}

/* Code i of a constant INT8/UINT8 zero point (absent: 0); 0 when z does not fit `codes`. */
static int zp_at(const mi_graph_t *g, const mi_node_t *n, int32_t codes_dtype, int64_t i,
                 int32_t *v) {
  const mi_tensor_t *z = n->input_count > 2 && n->inputs[2] >= 0 ? &g->tensors[n->inputs[2]] : NULL;
  *v = 0;
  if (!z) return 1;
  if (!z->data || z->dtype != codes_dtype) return 0;
  if (z->dtype == MI_DTYPE_UINT8) *v = ((const uint8_t *)z->data)[i];
  else if (z->dtype == MI_DTYPE_INT8)
    *v = ((const int8_t *)z->data)[i];
  else
    return 0;
  return 1;
}

/* Per-tensor parameters of Q/DQ node n on codes tensor `codes`: 1 when they are constants. */
static int per_tensor(const mi_graph_t *g, const mi_node_t *n, int32_t codes, float *s, int32_t *z) {
  const mi_tensor_t *st = n->input_count > 1 && n->inputs[1] >= 0 ? &g->tensors[n->inputs[1]] : NULL;
  int32_t dt = g->tensors[codes].dtype;
  if (!st || !st->data || st->dtype != MI_DTYPE_FLOAT32 || numel(st) != 1) return 0;
  if (dt != MI_DTYPE_UINT8 && dt != MI_DTYPE_INT8) return 0;
  *s = *(const float *)st->data;
  return *s > 0.0f && zp_at(g, n, dt, 0, z);
}

/* Writes per-tensor fields; a tensor two nodes quantize differently keeps none (flagged). */
static void set_fields(mi_tensor_t *t, uint8_t *conflict, float s, int32_t z) {
  if (*conflict) return;
  if (t->scale > 0.0f && (t->scale != s || t->zero_point != z || t->channel_count)) {
    *conflict = 1;
    return;
  }
  t->scale = s;
  t->zero_point = z;
}

/* A constant INT8 weight behind a per-axis DequantizeLinear: its channel scales (zero points
 * must all be 0, what the lowered layers compute with). */
static int32_t per_axis(mi_graph_t *g, const mi_node_t *n, int32_t w, uint8_t *conflict) {
  mi_tensor_t *t = &g->tensors[w];
  const mi_tensor_t *st = &g->tensors[n->inputs[1]];
  int64_t axis = mi_node_attr_int(n, "axis", 1), ch = numel(st);
  if (!t->data || t->dtype != MI_DTYPE_INT8 || !st->data || st->dtype != MI_DTYPE_FLOAT32 ||
      st->rank != 1 || t->rank < 1)
    return MI_OK;
  if (axis < 0) axis += t->rank;
  if (axis < 0 || axis >= t->rank || t->dims[axis] != ch) return MI_OK;
  for (int64_t c = 0; c < ch; c++) {
    int32_t z;
    if (!(((const float *)st->data)[c] > 0.0f) || !zp_at(g, n, t->dtype, c, &z) || z) return MI_OK;
  }
  if (t->scale > 0.0f || *conflict) { /* already described (the transform's, or another DQ) */
    if (!t->channel_scales || t->channel_count != (uint32_t)ch ||
        memcmp(t->channel_scales, st->data, (size_t)ch * sizeof(float)))
      *conflict = 1;
    return MI_OK;
  }
  if (!(t->channel_scales = malloc((size_t)ch * sizeof(float)))) return MI_ERR_OUT_OF_MEMORY;
  memcpy(t->channel_scales, st->data, (size_t)ch * sizeof(float));
  t->channel_axis = (int32_t)axis;
  t->channel_count = (uint32_t)ch;
  t->zero_point = 0;
  for (int64_t c = 0; c < ch; c++) /* nonzero: "quantized" (xf_quant.c does the same) */
    if (t->channel_scales[c] > t->scale) t->scale = t->channel_scales[c];
  return MI_OK;
}

int mi__qdq_params_missing(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int32_t codes;
    if (is_plain(n, "DequantizeLinear") && n->input_count >= 2) codes = n->inputs[0];
    else if (is_plain(n, "QuantizeLinear") && n->output_count == 1)
      codes = n->outputs[0];
    else
      continue;
    if (codes >= 0 && !(g->tensors[codes].scale > 0.0f)) return 1;
  }
  return 0;
}

int32_t mi__qdq_params_set(mi_graph_t *g, mi_error_t *err) {
  uint8_t *conflict = calloc((size_t)g->tensor_count + 1, 1);
  int32_t rc = MI_OK;
  if (!conflict) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory reading Q/DQ parameters");
  /* Tensors the transform already described keep their fields. */
  for (int32_t t = 0; t < g->tensor_count; t++) conflict[t] = g->tensors[t].scale > 0.0f ? 2 : 0;
  for (int32_t i = 0; i < g->node_count && rc == MI_OK; i++) {
    const mi_node_t *n = &g->nodes[i];
    int dq = is_plain(n, "DequantizeLinear"), q = is_plain(n, "QuantizeLinear");
    int32_t codes, z;
    float s;
    if ((!dq && !q) || n->input_count < 2 || n->output_count < 1 || n->inputs[0] < 0) continue;
    codes = dq ? n->inputs[0] : n->outputs[0];
    if (codes < 0 || conflict[codes] == 2) continue;
    if (per_tensor(g, n, codes, &s, &z)) set_fields(&g->tensors[codes], &conflict[codes], s, z);
    else if (dq && n->inputs[1] >= 0 && numel(&g->tensors[n->inputs[1]]) > 1)
      rc = per_axis(g, n, codes, &conflict[codes]);
  }
  /* A tensor read with two different quantizations is not one quantized tensor: no fields. */
  for (int32_t t = 0; t < g->tensor_count; t++)
    if (conflict[t] == 1) {
      mi_tensor_t *x = &g->tensors[t];
      free(x->channel_scales);
      x->channel_scales = NULL;
      x->channel_count = 0;
      x->scale = 0.0f;
      x->zero_point = 0;
    }
  free(conflict);
  return rc == MI_OK ? MI_OK : mi_errorf(err, rc, "out of memory reading Q/DQ parameters");
}
