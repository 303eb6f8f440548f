/* npu_prepare.c - kernel_prepare: checks what the NPU can run, copies constants into device form. */
#include "npu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void npu__kernel_free(mi_kernel_t *k) {
  int i;
  if (!k) return;
  for (i = 0; i < k->tensor_count; i++) {
    free(k->t[i].q);
    free(k->t[i].f);
    free(k->t[i].i32);
    free(k->t[i].cscale);
  }
  free(k); /* its arrays share its block */
}

/* The kernel and its arrays in one zeroed block, widest elements first so each stays aligned:
 * one allocation to fail, one free. */
static mi_kernel_t *kernel_new(const mi_kernel_desc_t *desc) {
  size_t nt = (size_t)desc->tensor_count, nn = (size_t)desc->node_count;
  size_t ni = (size_t)desc->input_count + 1, no = (size_t)desc->output_count;
  mi_kernel_t *k = calloc(1, sizeof *k + nt * sizeof *k->t + nn * sizeof *k->nodes +
                                 (ni + no) * sizeof *k->inputs);
  if (!k) return NULL;
  k->t = (npu_tensor_t *)(k + 1);
  k->nodes = (npu_node_t *)(k->t + nt);
  k->inputs = (int32_t *)(k->nodes + nn);
  k->outputs = k->inputs + ni;
  k->tensor_count = desc->tensor_count;
  k->node_count = desc->node_count;
  k->input_count = desc->input_count;
  k->output_count = desc->output_count;
  return k;
}

static int32_t unsupported(mi_error_t *err, const char *what, const char *node) {
  return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: %s (node '%.60s')", what, node ? node : "?");
}

/* Copies one host tensor description; constants are converted to the device's form now,
 * because their data is only borrowed for this call. */
static int32_t load_tensor(mi_kernel_t *k, int idx, const mi_tensor_desc_t *src, mi_error_t *err) {
  npu_tensor_t *t = &k->t[idx];
  int32_t i;
  int64_t n = 1, j;
  if (!src) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: NULL tensor description");
  if (src->rank < 0 || src->rank > MI_MAX_RANK)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: tensor rank out of range");
  t->dtype = src->dtype;
  t->rank = src->rank;
  for (i = 0; i < src->rank; i++) {
    if (src->dims[i] <= 0) {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: tensor %d has dynamic or empty dim %d: the NPU needs static shapes",
                           idx, i);
    }
    t->dims[i] = src->dims[i];
    n *= src->dims[i];
  }
  t->numel = n;
  if (src->rank == 4 && src->layout != MI_LAYOUT_NCHW && src->layout != MI_LAYOUT_ANY) {
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: tensor %d: only NCHW 4-D activations are accepted", idx);
  }
  t->scale = src->scale;
  /* UINT8 codes are held as INT8 codes u - 128 with zero point z - 128: the same reals, so
   * the arithmetic is unchanged (asymmetric uint8 is what the host quantizer emits) */
  t->zp = src->dtype == MI_DTYPE_UINT8 ? src->zero_point - 128 : src->zero_point;
  t->is_const = src->data != NULL;
  if (src->channel_count > 0 && src->channel_scales) {
    t->ccount = src->channel_count;
    t->cscale = malloc(sizeof(float) * t->ccount);
    if (!t->cscale) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
    memcpy(t->cscale, src->channel_scales, sizeof(float) * t->ccount);
  }
  if (!t->is_const && k->conv) {
    /* a conversion kernel: float on one side, codes on the other (the node checks which);
     * the codes' scale and zero point are the node's inputs, not the tensor's fields */
    int codes = t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8;
    if (!codes && t->dtype != MI_DTYPE_FLOAT32 && t->dtype != MI_DTYPE_FLOAT16) {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                           "npu-stub: tensor %d: a QuantizeLinear/DequantizeLinear converts between "
                           "FLOAT32/FLOAT16 and INT8/UINT8 (got dtype %d)",
                           idx, t->dtype);
    }
    if (codes) t->q = calloc((size_t)n, 1);
    else
      t->f = calloc((size_t)n, sizeof(float));
    if (!t->f && !t->q) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
    return MI_OK;
  }
  if (!t->is_const) {
    if (k->fp ? (t->dtype != MI_DTYPE_FLOAT32 && t->dtype != MI_DTYPE_FLOAT16)
              : (t->dtype != MI_DTYPE_INT8 && t->dtype != MI_DTYPE_UINT8)) {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                           "npu-stub: tensor %d: activations must all be INT8/UINT8 or all FLOAT32/FLOAT16 "
                           "(got dtype %d)",
                           idx, t->dtype);
    }
    if (!k->fp && !(t->scale > 0)) {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: INT8 tensor %d has no positive scale", idx);
    }
    if (k->fp) t->f = calloc((size_t)n, sizeof(float));
    else
      t->q = calloc((size_t)n, 1);
    if (!t->f && !t->q) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
    return MI_OK;
  }
  switch (t->dtype) {
  case MI_DTYPE_INT8:
  case MI_DTYPE_UINT8:
    if (src->data_bytes < (uint64_t)n) goto short_data;
    t->q = malloc((size_t)n);
    if (!t->q) goto oom;
    memcpy(t->q, src->data, (size_t)n);
    if (t->dtype == MI_DTYPE_UINT8)
      for (j = 0; j < n; j++) t->q[j] = (int8_t)(((const unsigned char *)src->data)[j] ^ 0x80u);
    break;
  case MI_DTYPE_INT4: {
    /* unpacked to INT8 once: the array computes INT4 weights as INT8 */
    const unsigned char *p = src->data;
    if (src->data_bytes < (uint64_t)((n + 1) / 2)) goto short_data;
    t->q = malloc((size_t)n);
    if (!t->q) goto oom;
    for (j = 0; j < n; j++) {
      int v = (p[j / 2] >> ((j & 1) * 4)) & 0xF;
      t->q[j] = (int8_t)(v >= 8 ? v - 16 : v);
    }
    break;
  }
  case MI_DTYPE_FLOAT32:
  case MI_DTYPE_FLOAT16:
    if (src->data_bytes < (uint64_t)n * (t->dtype == MI_DTYPE_FLOAT32 ? 4u : 2u)) goto short_data;
    t->f = malloc(sizeof(float) * (size_t)n);
    if (!t->f) goto oom;
    for (j = 0; j < n; j++) {
      float v;
      if (t->dtype == MI_DTYPE_FLOAT32) memcpy(&v, (const char *)src->data + 4 * j, 4);
      else {
        uint16_t h;
        memcpy(&h, (const char *)src->data + 2 * j, 2);
        v = mi_sdk_half_to_float(h);
      }
      /* the FP16 path stores every float constant in half precision; a conversion's scales
       * stay FP32 */
      t->f[j] = k->fp && !k->conv ? npu__fp16_round(v) : v;
    }
    break;
  case MI_DTYPE_INT32:
    if (src->data_bytes < (uint64_t)n * 4u) goto short_data;
    t->i32 = malloc(sizeof(int32_t) * (size_t)n);
    if (!t->i32) goto oom;
    memcpy(t->i32, src->data, sizeof(int32_t) * (size_t)n);
    break;
  case MI_DTYPE_INT64:
    break; /* shape operands: the output shape is already known */
  default:
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: constant tensor %d has unsupported dtype %d", idx,
                         t->dtype);
  }
  return MI_OK;
short_data:
  return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: constant tensor %d has fewer bytes than its shape", idx);
oom:
  return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
}

static double device_bytes(const mi_kernel_t *k, const npu_tensor_t *t) {
  switch (t->dtype) {
  case MI_DTYPE_INT8:
  case MI_DTYPE_UINT8: return (double)t->numel;
  case MI_DTYPE_INT4: return (double)t->numel * 0.5;
  case MI_DTYPE_INT32: return (double)t->numel * 4;
  case MI_DTYPE_FLOAT32: return (double)t->numel * (k->fp && !k->conv ? 2 : 4);
  case MI_DTYPE_FLOAT16: return (double)t->numel * (k->fp ? 2 : 4);
  default: return 0;
  }
}

/* The kernel's runtime inputs or outputs (`what`): runtime tensors of the kernel, whose device
 * bytes count as I/O. */
static int32_t bind_io(mi_kernel_t *k, const int32_t *idx, int count, int32_t *dst, const char *what,
                       mi_error_t *err) {
  int i;
  for (i = 0; i < count; i++) {
    int32_t j = idx[i];
    if (j < 0 || j >= k->tensor_count || k->t[j].is_const)
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: bad kernel %s index", what);
    dst[i] = j;
    k->io_bytes += device_bytes(k, &k->t[j]);
  }
  return MI_OK;
}

static int is_mac(int op) { return op == NPU_CONV || op == NPU_GEMM || op == NPU_MATMUL; }

static int32_t prepare(npu_device_t *d, uint32_t device, const mi_kernel_desc_t *desc,
                       mi_kernel_t **out, mi_error_t *err);

/* A QDQ group (DequantizeLinear -> op -> QuantizeLinear) is first lowered to the INT8 kernel
 * it stands for (npu_qdq.c); everything else is prepared as given. */
int32_t npu__prepare(npu_device_t *d, uint32_t device, const mi_kernel_desc_t *desc,
                     mi_kernel_t **out, mi_error_t *err) {
  npu_lowered_t lo;
  int lowered = 0;
  int32_t rc;
  /* A QuantizeLinear/DequantizeLinear alone is a conversion kernel of its own (the vector
   * unit's); inside a group it is lowered away. */
  if (desc && desc->node_count == 1 && desc->nodes && desc->nodes[0] && desc->nodes[0]->op_type &&
      (npu__op_from_name(desc->nodes[0]->op_type) == NPU_QUANT ||
       npu__op_from_name(desc->nodes[0]->op_type) == NPU_DEQUANT))
    return prepare(d, device, desc, out, err);
  rc = npu__qdq_lower(desc, &lo, &lowered, err);
  if (rc != MI_OK || !lowered) return rc != MI_OK ? rc : prepare(d, device, desc, out, err);
  rc = prepare(d, device, &lo.desc, out, err);
  npu__qdq_free(&lo);
  return rc;
}

static int32_t prepare(npu_device_t *d, uint32_t device, const mi_kernel_desc_t *desc,
                       mi_kernel_t **out, mi_error_t *err) {
  mi_kernel_t *k = NULL;
  int64_t vals[NPU_KNOB_COUNT];
  uint32_t given = 0;
  int32_t rc, i, first_in = -1;
  rc = npu__check_knobs(&d->spec, desc->variant_id, desc->knobs, desc->knobs ? desc->knob_count : 0,
                        vals, &given, err);
  if (rc != MI_OK) return rc;
  if (desc->node_count < 1 || !desc->nodes || desc->tensor_count < 1 || !desc->tensors ||
      desc->input_count < 0 || desc->output_count < 1 || (desc->input_count && !desc->inputs) ||
      !desc->outputs)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: malformed kernel description");
  for (i = 0; i < desc->node_count; i++) {
    const mi_node_desc_t *nd = desc->nodes[i];
    if (!nd || !nd->op_type)
      return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: NULL node description");
    if (npu__op_from_name(nd->op_type) < 0) {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: op %.32s (node '%.60s') is not supported by the NPU (non-dataflow op)",
                           nd->op_type, nd->name ? nd->name : "?");
    }
  }
  if (desc->variant_id && desc->variant_id[0] &&
      npu__variant_op(desc->variant_id) != npu__op_from_name(desc->nodes[0]->op_type)) {
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "npu-stub: variant '%.60s' does not implement %.32s",
                         desc->variant_id, desc->nodes[0]->op_type);
  }
  /* The first runtime input decides the numeric path. */
  for (i = 0; i < desc->nodes[0]->input_count && first_in < 0; i++) {
    int32_t ti = desc->nodes[0]->inputs[i];
    if (ti >= 0 && ti < desc->tensor_count && desc->tensors[ti] && !desc->tensors[ti]->data)
      first_in = ti;
  }
  if (first_in < 0)
    return unsupported(err, "kernel has no runtime input", desc->nodes[0]->name);
  if (!(k = kernel_new(desc))) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "npu-stub: out of memory");
  k->device = device;
  switch (desc->tensors[first_in]->dtype) {
  case MI_DTYPE_INT8:
  case MI_DTYPE_UINT8: k->fp = 0; break;
  case MI_DTYPE_FLOAT32:
  case MI_DTYPE_FLOAT16: k->fp = 1; break;
  default:
    rc = unsupported(err, "input dtype is neither INT8/UINT8 nor FLOAT32/FLOAT16",
                     desc->nodes[0]->name);
    goto fail;
  }
  /* A conversion computes in float (scale multiply or divide) on the float lanes. */
  if (npu__op_from_name(desc->nodes[0]->op_type) == NPU_QUANT ||
      npu__op_from_name(desc->nodes[0]->op_type) == NPU_DEQUANT) {
    if (desc->node_count != 1) {
      rc = unsupported(err, "a QuantizeLinear/DequantizeLinear kernel holds that node alone",
                       desc->nodes[0]->name);
      goto fail;
    }
    k->conv = 1;
    k->fp = 1;
  }
  k->dataflow = (int)vals[NPU_KNOB_DATAFLOW];
  k->sram_tile = (int)vals[NPU_KNOB_TILE];
  k->dma_overlap = (int)vals[NPU_KNOB_OVERLAP];
  k->cores = (given & (1u << NPU_KNOB_CORES)) ? (int)vals[NPU_KNOB_CORES] : -1;
  k->level = (given & (1u << NPU_KNOB_DVFS)) ? (int)vals[NPU_KNOB_DVFS] : -1;
  k->batch = (given & (1u << NPU_KNOB_BATCH)) ? (int)vals[NPU_KNOB_BATCH] : -1;
  for (i = 0; i < k->tensor_count; i++) {
    rc = load_tensor(k, i, desc->tensors[i], err);
    if (rc != MI_OK) goto fail;
  }
  if ((rc = bind_io(k, desc->inputs, k->input_count, k->inputs, "input", err)) != MI_OK ||
      (rc = bind_io(k, desc->outputs, k->output_count, k->outputs, "output", err)) != MI_OK)
    goto fail;
  for (i = 0; i < k->tensor_count; i++)
    if (k->t[i].is_const) k->const_bytes += device_bytes(k, &k->t[i]);
  k->samples = k->t[first_in].rank > 0 ? k->t[first_in].dims[0] : 1;
  for (i = 0; i < k->node_count; i++) {
    npu_node_t *n = &k->nodes[i];
    rc = npu__node_setup(&d->spec, k, n, desc->nodes[i], desc, err);
    if (rc != MI_OK) goto fail;
    /* An elementwise op right after a MAC op, consuming its result, runs in the array's
     * output stage: that is what a fused kernel buys on this NPU. */
    if (i > 0 && !is_mac(n->op) && n->op != NPU_GAP && n->op != NPU_AVGPOOL &&
        n->op != NPU_MAXPOOL && n->op != NPU_CONCAT && n->nin > 0 &&
        (is_mac(k->nodes[0].op)) && n->in[0] == k->nodes[i - 1].out)
      n->fused = 1;
    if (is_mac(n->op)) {
      rc = npu__choose_tile(&d->spec, k, n, err);
      if (rc != MI_OK) goto fail;
    } else if (!k->fp) {
      npu__build_lut(k, n);
    }
  }
  *out = k;
  return MI_OK;
fail:
  npu__kernel_free(k);
  return rc;
}
