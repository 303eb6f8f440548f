/* npu_qdq.c - lowers a QDQ group (DequantizeLinear -> op -> QuantizeLinear, the ONNX form the
 * host quantizer writes) to the INT8 kernel the arrays run: the codes tensors take the Q/DQ
 * parameters, the float tensors between them disappear, and so do the Q/DQ nodes. */
#include "npu_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t refuse(mi_error_t *err, const mi_node_desc_t *n, const char *what) {
  return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: node '%.60s' (%.24s): %s", n->name ? n->name : "?",
                       n->op_type, what);
}

static int is_op(const mi_node_desc_t *n, const char *op) { return strcmp(n->op_type, op) == 0; }
static int is_codes(int32_t dt) { return dt == MI_DTYPE_INT8 || dt == MI_DTYPE_UINT8; }

static int32_t resolve(const int32_t *alias, int32_t t) {
  while (t >= 0 && alias[t] != t) t = alias[t];
  return t;
}

/* Scale (input 1) and zero point (input 2) of a Q/DQ node into the codes tensor `t`. One zero
 * point for the tensor (the arrays subtract one), per-axis scales only for constant weights. */
static int32_t qparams(const mi_kernel_desc_t *d, const mi_node_desc_t *n, mi_tensor_desc_t *t,
                       mi_error_t *err) {
  const mi_tensor_desc_t *s, *z = NULL;
  const float *sv;
  int64_t cnt, i;
  int32_t zp0 = 0;
  if (n->input_count < 2 || n->inputs[1] < 0 || n->inputs[1] >= d->tensor_count)
    return refuse(err, n, "needs a scale");
  s = d->tensors[n->inputs[1]];
  if (!s->data || s->dtype != MI_DTYPE_FLOAT32) return refuse(err, n, "scale must be constant FP32");
  cnt = mi_sdk_numel(s);
  sv = s->data;
  if (cnt < 1 || s->data_bytes < (uint64_t)cnt * 4) return refuse(err, n, "empty scale");
  if (n->input_count > 2 && n->inputs[2] >= 0 && n->inputs[2] < d->tensor_count) {
    z = d->tensors[n->inputs[2]];
    if (!z->data || z->dtype != t->dtype || mi_sdk_numel(z) != cnt ||
        z->data_bytes < (uint64_t)cnt)
      return refuse(err, n, "zero point must be constant, of the codes' dtype, one per scale");
  }
  for (i = 0; i < cnt; i++) {
    int32_t zp = !z                          ? 0
                 : z->dtype == MI_DTYPE_INT8 ? ((const int8_t *)z->data)[i]
                                             : ((const uint8_t *)z->data)[i];
    if (i == 0) zp0 = zp;
    if (zp != zp0) return refuse(err, n, "per-channel zero points must be equal");
    if (!(sv[i] > 0) || !isfinite(sv[i])) return refuse(err, n, "scales must be positive");
  }
  t->zero_point = zp0;
  t->scale = sv[0];
  t->channel_count = 0;
  t->channel_scales = NULL;
  if (cnt > 1) {
    int64_t axis = mi_sdk_attr_int(n, "axis", 1);
    if (!t->data) return refuse(err, n, "per-axis scales are for constant weights only");
    if (axis < 0) axis += t->rank;
    if (axis < 0 || axis >= t->rank || t->dims[axis] != cnt)
      return refuse(err, n, "per-axis scale count does not match the axis");
    t->channel_axis = (int32_t)axis;
    t->channel_count = (uint32_t)cnt;
    t->channel_scales = sv;
    for (i = 1; i < cnt; i++)
      if (sv[i] > t->scale) t->scale = sv[i];
  }
  return MI_OK;
}

/* How many kept nodes read tensor t (after aliasing). */
static int readers(const mi_kernel_desc_t *d, const uint8_t *drop, const int32_t *alias,
                   int32_t t) {
  int32_t i, j, r = 0;
  for (i = 0; i < d->node_count; i++)
    for (j = 0; !drop[i] && j < d->nodes[i]->input_count; j++)
      r += resolve(alias, d->nodes[i]->inputs[j]) == t;
  return r;
}

static int produced(const mi_kernel_desc_t *d, int32_t t) {
  int32_t i, j;
  for (i = 0; i < d->node_count; i++)
    for (j = 0; j < d->nodes[i]->output_count; j++)
      if (d->nodes[i]->outputs[j] == t) return 1;
  return 0;
}

void npu__qdq_free(npu_lowered_t *lo) {
  free(lo->t);
  free(lo->tp);
  free(lo->n);
  free(lo->np);
  free(lo->idx);
  free(lo->alias);
  free(lo->drop);
  memset(lo, 0, sizeof *lo);
}

static int32_t check_indices(const mi_kernel_desc_t *d, mi_error_t *err) {
  int32_t i, j;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    if (!n || !n->op_type || n->input_count < 1 || n->output_count < 1 || !n->inputs ||
        !n->outputs)
      return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: malformed node description");
    for (j = 0; j < n->input_count + n->output_count; j++) {
      int32_t t = j < n->input_count ? n->inputs[j] : n->outputs[j - n->input_count];
      if (t < -1 || t >= d->tensor_count || (t >= 0 && !d->tensors[t]))
        return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: node tensor index out of range");
    }
  }
  return MI_OK;
}

int32_t npu__qdq_lower(const mi_kernel_desc_t *d, npu_lowered_t *lo, int *lowered,
                       mi_error_t *err) {
  int32_t i, j, nt = d->tensor_count, kept = 0, used = 0, total = 0, rc;
  memset(lo, 0, sizeof *lo);
  *lowered = 0;
  for (i = 0; d->nodes && i < d->node_count; i++)
    if (d->nodes[i] && d->nodes[i]->op_type &&
        (is_op(d->nodes[i], "QuantizeLinear") || is_op(d->nodes[i], "DequantizeLinear")))
      break;
  if (!d->nodes || i == d->node_count || !d->tensors || nt < 1) return MI_OK;
  if (d->input_count < 0 || (d->input_count && !d->inputs) || d->output_count < 1 || !d->outputs)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: malformed kernel description");
  if ((rc = check_indices(d, err)) != MI_OK) return rc;
  for (i = 0; i < d->node_count; i++) total += d->nodes[i]->input_count + d->nodes[i]->output_count;
  lo->t = calloc((size_t)nt, sizeof *lo->t);
  lo->tp = calloc((size_t)nt, sizeof *lo->tp);
  lo->n = calloc((size_t)d->node_count, sizeof *lo->n);
  lo->np = calloc((size_t)d->node_count, sizeof *lo->np);
  lo->idx = calloc((size_t)(total + d->input_count + d->output_count) + 1, sizeof *lo->idx);
  lo->alias = malloc(sizeof *lo->alias * (size_t)nt);
  lo->drop = calloc((size_t)d->node_count, 1);
  if (!lo->t || !lo->tp || !lo->n || !lo->np || !lo->idx || !lo->alias || !lo->drop) {
    npu__qdq_free(lo);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
  }
  for (i = 0; i < nt; i++) {
    uint32_t sz = d->tensors[i]->struct_size;
    memcpy(&lo->t[i], d->tensors[i], sz < sizeof lo->t[i] ? sz : sizeof lo->t[i]);
    lo->t[i].struct_size = sizeof lo->t[i];
    lo->tp[i] = &lo->t[i];
    lo->alias[i] = i;
  }
  /* DequantizeLinear: its float output is its codes input; Q: its float input becomes its codes
   * output, written directly by the node that produced the float. */
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int dq = is_op(n, "DequantizeLinear");
    int32_t codes, f;
    if (!dq && !is_op(n, "QuantizeLinear")) continue;
    codes = dq ? n->inputs[0] : n->outputs[0];
    f = dq ? n->outputs[0] : n->inputs[0];
    if (codes < 0 || f < 0 || !is_codes(lo->t[codes].dtype))
      rc = refuse(err, n, "codes must be INT8 or UINT8");
    else if (!dq && !produced(d, f))
      rc = refuse(err, n, "quantizing a kernel input is a conversion the host runs");
    else
      rc = qparams(d, n, &lo->t[codes], err);
    if (rc != MI_OK) goto fail;
    lo->alias[f] = codes;
    lo->drop[i] = 1;
  }
  /* The host reads outputs in their own dtype: a float tensor lowered to codes cannot be one. */
  for (j = 0; j < d->output_count; j++)
    if (d->outputs[j] < 0 || d->outputs[j] >= nt || lo->alias[d->outputs[j]] != d->outputs[j]) {
      rc = refuse(err, d->nodes[0], "a float tensor of the QDQ group is a kernel output");
      goto fail;
    }
  /* Relu/Clip in front of a Q: quantizing their input at the Q's parameters and clamping the
   * codes equals clamping the float and quantizing (both are monotone), so the input takes
   * the Q's parameters when nothing else reads it. */
  for (i = d->node_count - 1; i >= 0; i--) {
    const mi_node_desc_t *n = d->nodes[i];
    int32_t out, in;
    if (lo->drop[i] || (!is_op(n, "Relu") && !is_op(n, "Clip"))) continue;
    out = resolve(lo->alias, n->outputs[0]);
    in = n->inputs[0];
    if (out == n->outputs[0] || in < 0 || !is_codes(lo->t[out].dtype) ||
        resolve(lo->alias, in) != in || lo->t[in].data || !produced(d, in) ||
        readers(d, lo->drop, lo->alias, in) != 1)
      continue;
    lo->t[in].dtype = lo->t[out].dtype;
    lo->t[in].scale = lo->t[out].scale;
    lo->t[in].zero_point = lo->t[out].zero_point;
  }
  /* Tensors aliased away are never touched; describe them like their target so the kernel's
   * bookkeeping accepts them. */
  for (i = 0; i < nt; i++) {
    int32_t to = resolve(lo->alias, i);
    if (to == i) continue;
    lo->t[i] = lo->t[to];
    lo->t[i].data = NULL;
    lo->t[i].data_bytes = 0;
    lo->t[i].layout = lo->t[i].rank == 4 ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
  }
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    uint32_t sz = n->struct_size;
    int32_t *ins, *outs;
    if (lo->drop[i]) continue;
    memcpy(&lo->n[kept], n, sz < sizeof lo->n[kept] ? sz : sizeof lo->n[kept]);
    lo->n[kept].struct_size = sizeof lo->n[kept];
    ins = lo->idx + used;
    for (j = 0; j < n->input_count; j++) ins[j] = resolve(lo->alias, n->inputs[j]);
    used += n->input_count;
    outs = lo->idx + used;
    for (j = 0; j < n->output_count; j++) outs[j] = resolve(lo->alias, n->outputs[j]);
    used += n->output_count;
    lo->n[kept].inputs = ins;
    lo->n[kept].outputs = outs;
    lo->np[kept] = &lo->n[kept];
    kept++;
  }
  if (kept == 0) {
    rc = refuse(err, d->nodes[0],
                "a lone QuantizeLinear/DequantizeLinear is a format conversion "
                "the host runs");
    goto fail;
  }
  memcpy(&lo->desc, d, d->struct_size < sizeof lo->desc ? d->struct_size : sizeof lo->desc);
  lo->desc.struct_size = sizeof lo->desc;
  lo->desc.node_count = kept;
  lo->desc.nodes = (const mi_node_desc_t *const *)lo->np;
  lo->desc.tensors = (const mi_tensor_desc_t *const *)lo->tp;
  lo->desc.inputs = lo->idx + used;
  for (i = 0; i < d->input_count; i++) lo->idx[used + i] = resolve(lo->alias, d->inputs[i]);
  used += d->input_count;
  lo->desc.outputs = lo->idx + used;
  for (i = 0; i < d->output_count; i++) lo->idx[used + i] = d->outputs[i];
  *lowered = 1;
  return MI_OK;
fail:
  npu__qdq_free(lo);
  return rc;
}
