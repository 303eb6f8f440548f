/* blis_kernel.c - kernel_prepare/run/release: tensors, steps per node group, op dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blis_qgemm.h"

/* True for the generated "<op>.direct" ids of the plain-loop ops (suffix, not substring:
 * "conv.direct_nhwc" is a table variant). */
int mi__blis_is_direct_id(const char *id) {
  size_t n = id ? strlen(id) : 0;
  return n > 7 && strcmp(id + n - 7, ".direct") == 0;
}

static const struct {
  const char *op;
  mi__blis_prep_fn prep;
} ops[] = {
    {"Conv", mi__blis_prep_conv},
    {"ConvTranspose", mi__blis_prep_conv},
    {"Gemm", mi__blis_prep_gemm},
    {"MatMul", mi__blis_prep_matmul},
    {"BatchNormalization", mi__blis_prep_bn},
    {"Softmax", mi__blis_prep_softmax},
    {"LayerNormalization", mi__blis_prep_layernorm},
    {"RMSNormalization", mi__blis_prep_rms},
    {"GlobalAveragePool", mi__blis_prep_pool},
    {"GlobalMaxPool", mi__blis_prep_pool},
    {"MaxPool", mi__blis_prep_pool},
    {"AveragePool", mi__blis_prep_pool},
    {"ReduceMean", mi__blis_prep_reduce},
    {"ReduceMax", mi__blis_prep_reduce},
    {"ReduceMin", mi__blis_prep_reduce},
    {"ReduceSum", mi__blis_prep_reduce},
    {"Reshape", mi__blis_prep_copy},
    {"Flatten", mi__blis_prep_copy},
    {"Squeeze", mi__blis_prep_copy},
    {"Unsqueeze", mi__blis_prep_copy},
    {"Identity", mi__blis_prep_copy},
    {"Dropout", mi__blis_prep_copy},
    {"Transpose", mi__blis_prep_transpose},
    {"Concat", mi__blis_prep_concat},
    {"Slice", mi__blis_prep_slice},
    {"Add", mi__blis_prep_binary},
    {"Sub", mi__blis_prep_binary},
    {"Mul", mi__blis_prep_binary},
    {"Div", mi__blis_prep_binary},
    {"Pow", mi__blis_prep_binary},
    {"Max", mi__blis_prep_binary},
    {"Min", mi__blis_prep_binary},
    {"Relu", mi__blis_prep_unary},
    {"LeakyRelu", mi__blis_prep_unary},
    {"Clip", mi__blis_prep_unary},
    {"HardSigmoid", mi__blis_prep_unary},
    {"HardSwish", mi__blis_prep_unary},
    {"Sigmoid", mi__blis_prep_unary},
    {"Tanh", mi__blis_prep_unary},
    {"Erf", mi__blis_prep_unary},
    {"Gelu", mi__blis_prep_unary},
    {"Elu", mi__blis_prep_unary},
    {"Selu", mi__blis_prep_unary},
    {"Celu", mi__blis_prep_unary},
    {"Softsign", mi__blis_prep_unary},
    {"Mish", mi__blis_prep_unary},
    {"ThresholdedRelu", mi__blis_prep_unary},
    {"Shrink", mi__blis_prep_unary},
    {"Cos", mi__blis_prep_unary},
    {"Sin", mi__blis_prep_unary},
    {"Tan", mi__blis_prep_unary},
    {"Asin", mi__blis_prep_unary},
    {"Acos", mi__blis_prep_unary},
    {"Atan", mi__blis_prep_unary},
    {"Sinh", mi__blis_prep_unary},
    {"Cosh", mi__blis_prep_unary},
    {"Asinh", mi__blis_prep_unary},
    {"Acosh", mi__blis_prep_unary},
    {"Atanh", mi__blis_prep_unary},
    {"LRN", mi__blis_prep_lrn},
    {"LpPool", mi__blis_prep_lppool},
    {"GlobalLpPool", mi__blis_prep_lppool},
    {"DeformConv", mi__blis_prep_deform_conv},
    {"Col2Im", mi__blis_prep_col2im},
    {"NonMaxSuppression", mi__blis_prep_nms},
    {"GridSample", mi__blis_prep_gridsample},
    {"RoiAlign", mi__blis_prep_roialign},
    {"TopK", mi__blis_prep_topk},
    {"Compress", mi__blis_prep_compress},
    {"ReverseSequence", mi__blis_prep_reverse_sequence},
    {"ArgMax", mi__blis_prep_argminmax},
    {"ArgMin", mi__blis_prep_argminmax},
    {"STFT", mi__blis_prep_stft},
    {"DFT", mi__blis_prep_stft},
    {"Softplus", mi__blis_prep_unary},
    {"Floor", mi__blis_prep_unary},
    {"Ceil", mi__blis_prep_unary},
    {"Sqrt", mi__blis_prep_unary},
    {"Log", mi__blis_prep_unary},
    {"Exp", mi__blis_prep_unary},
    {"Neg", mi__blis_prep_unary},
    {"Abs", mi__blis_prep_unary},
    {"Reciprocal", mi__blis_prep_unary},
    {"QuantizeLinear", mi__blis_prep_quant},
    {"DequantizeLinear", mi__blis_prep_quant},
    {"Resize", mi__blis_prep_resize},
    {"Upsample", mi__blis_prep_resize},
    {"Cast", mi__blis_prep_cast},
    {"Equal", mi__blis_prep_cmp},
    {"Less", mi__blis_prep_cmp},
    {"Greater", mi__blis_prep_cmp},
    {"LessOrEqual", mi__blis_prep_cmp},
    {"GreaterOrEqual", mi__blis_prep_cmp},
    {"PRelu", mi__blis_prep_binary},
    {"Pad", mi__blis_prep_pad},
    {"Split", mi__blis_prep_split},
    {"Expand", mi__blis_prep_expand_tile},
    {"Tile", mi__blis_prep_expand_tile},
    {"Gather", mi__blis_prep_gather_any},
    {"DepthToSpace", mi__blis_prep_depth_space},
    {"SpaceToDepth", mi__blis_prep_depth_space},
    {"LogSoftmax", mi__blis_prep_softmax},
    {"InstanceNormalization", mi__blis_prep_instancenorm},
    {"Sum", mi__blis_prep_nary},
    {"Mean", mi__blis_prep_nary},
    {"Round", mi__blis_prep_unary},
    {"Sign", mi__blis_prep_unary},
    {"ReduceProd", mi__blis_prep_reduce},
    {"ReduceL2", mi__blis_prep_reduce},
    {"ReduceLogSumExp", mi__blis_prep_reduce},
    {"CumSum", mi__blis_prep_cumsum},
    {"Trilu", mi__blis_prep_trilu},
    {"Mod", mi__blis_prep_binary},
    {"QLinearConv", mi__blis_prep_qlinear},
    {"QLinearMatMul", mi__blis_prep_qlinear},
    {"ConvInteger", mi__blis_prep_qlinear},
    {"MatMulInteger", mi__blis_prep_qlinear},
    {"DynamicQuantizeLinear", mi__blis_prep_qeltwise},
    {"QLinearAdd", mi__blis_prep_qeltwise},
    {"QLinearMul", mi__blis_prep_qeltwise},
    {"QLinearGlobalAveragePool", mi__blis_prep_qeltwise},
    {"QLinearSigmoid", mi__blis_prep_qms},
    {"QLinearLeakyRelu", mi__blis_prep_qms},
    {"QLinearConcat", mi__blis_prep_qms},
    {"QLinearSoftmax", mi__blis_prep_qms},
    {"QGemm", mi__blis_prep_qgemm_op},
    {"QLinearAveragePool", mi__blis_prep_qavgpool},
    {"QLinearWhere", mi__blis_prep_qwhere},
    {"LSTM", mi__blis_prep_lstm},
    {"GRU", mi__blis_prep_gru},
    {"RNN", mi__blis_prep_gru},
    {"GroupNormalization", mi__blis_prep_groupnorm},
    {"MeanVarianceNormalization", mi__blis_prep_mvn},
    {"LpNormalization", mi__blis_prep_lpnorm},
    {"ReduceL1", mi__blis_prep_reduce},
    {"ReduceSumSquare", mi__blis_prep_reduce},
    {"ReduceLogSum", mi__blis_prep_reduce},
    {"CastLike", mi__blis_prep_castlike},
    {"GatherND", mi__blis_prep_gather_nd},
    {"ScatterElements", mi__blis_prep_scatter_elements},
    {"Hardmax", mi__blis_prep_hardmax},
    {"OneHot", mi__blis_prep_onehot},
    {"GatherElements", mi__blis_prep_gather_elements},
    {"CenterCropPad", mi__blis_prep_center_crop_pad},
    {"EyeLike", mi__blis_prep_eyelike},
    {"BitwiseAnd", mi__blis_prep_bitwise},
    {"BitwiseOr", mi__blis_prep_bitwise},
    {"BitwiseXor", mi__blis_prep_bitwise},
    {"BitwiseNot", mi__blis_prep_bitwise},
    {"BitShift", mi__blis_prep_bitwise},
    {"Det", mi__blis_prep_det},
    {"MaxRoiPool", mi__blis_prep_max_roi_pool},
};
#define OPS_N ((int32_t)(sizeof ops / sizeof ops[0]))

const mi_node_desc_t *mi__blis_node(const mi__blis_prep_t *p, int32_t offset) {
  int32_t i = p->node_index + offset;
  return i < p->desc->node_count ? p->desc->nodes[i] : NULL;
}

const mi_tensor_desc_t *mi__blis_tensor(const mi__blis_prep_t *p, int32_t idx) {
  return idx >= 0 && idx < p->desc->tensor_count ? p->desc->tensors[idx] : NULL;
}

int32_t mi__blis_in(const mi_node_desc_t *n, int32_t i) {
  return i < n->input_count ? n->inputs[i] : -1;
}

int32_t mi__blis_out(const mi_node_desc_t *n, int32_t i) {
  return i < n->output_count ? n->outputs[i] : -1;
}

int mi__blis_is_const(const mi__blis_prep_t *p, int32_t idx) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
  return t && t->data != NULL;
}

int mi__blis_is_kernel_output(const mi__blis_prep_t *p, int32_t idx) {
  int32_t i;
  for (i = 0; i < p->desc->output_count; i++)
    if (p->desc->outputs[i] == idx) return 1;
  return 0;
}

int32_t mi__blis_consumers(const mi__blis_prep_t *p, int32_t idx) {
  int32_t i, j, n = 0;
  for (i = 0; i < p->desc->node_count; i++)
    for (j = 0; j < p->desc->nodes[i]->input_count; j++) n += p->desc->nodes[i]->inputs[j] == idx;
  return n;
}

void mi__blis_plane_mark(mi__blis_prep_t *p, int32_t t, int kind) {
  if (t >= 0 && t < p->k->tensor_count) p->k->plane[t] = (uint8_t)kind;
}

void mi__blis_drop_const(mi__blis_prep_t *p, int32_t t) {
  if (mi__blis_consumers(p, t) != 1 || !p->k->owned[t]) return;
  mi__blis_free(p->ctx, p->k->ptr[t]);
  p->k->ptr[t] = NULL;
  p->k->owned[t] = 0;
}

int32_t mi__blis_const_ints(const mi__blis_prep_t *p, int32_t idx, int64_t *out, int32_t max) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, idx);
  int64_t n, i;
  if (!t || !t->data) return -1;
  n = mi_sdk_numel(t);
  if (n > max) return -1;
  for (i = 0; i < n; i++) {
    if (t->dtype == MI_DTYPE_INT64) out[i] = ((const int64_t *)t->data)[i];
    else if (t->dtype == MI_DTYPE_INT32)
      out[i] = ((const int32_t *)t->data)[i];
    else
      return -1;
  }
  return (int32_t)n;
}

int32_t mi__blis_unsupported(mi_error_t *err, const mi_node_desc_t *n, const char *why) {
  return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "blis-cpu: %s '%s': %s", n->op_type, n->name ? n->name : "", why);
}

int mi__blis_axis_split(const mi_tensor_desc_t *x, int64_t *axis, int64_t *outer, int64_t *len,
                        int64_t *inner) {
  int64_t o = 1, l = 1, in = 1;
  int32_t i;
  if (*axis < 0) *axis += x->rank;
  if (*axis < 0 || *axis >= (x->rank ? x->rank : 1)) return 0;
  for (i = 0; i < x->rank; i++) {
    if (i < *axis) o *= x->dims[i];
    else if (i == *axis)
      l = x->dims[i];
    else
      in *= x->dims[i];
  }
  if (outer) *outer = o;
  if (len) *len = l;
  if (inner) *inner = in;
  return 1;
}

/* The variant `id` must belong to `op`: "<op>.direct" or a table entry. */
/* The group kernels that may take a group's members from node i on, tried in this order on the
 * node's op type (space-separated list): the MatMul with its folded Transpose / scale
 * (blis_gemm.c), a masked softmax (blis_smask.c), weight-only dequantization (blis_wq.c). */
static const struct {
  const char *ops;
  int32_t (*prep)(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err);
} k_group_preps[] = {
    {"Mul Transpose MatMul", mi__blis_prep_mm_fold},
    {"Add Mul Div", mi__blis_prep_smask},
    {"DequantizeLinear", mi__blis_prep_wq},
};

/* 1 when `word` is one of the space-separated words of `list`. */
static int word_in(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *at = list; (at = strstr(at, word)) != NULL; at += n)
    if ((at == list || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0')) return 1;
  return 0;
}

static int32_t check_variant(const char *id, const char *op, mi_error_t *err) {
  const mi__blis_variant_t *v;
  char want[72];
  size_t i, n = strlen(op);
  if (!id || !id[0]) return MI_OK;
  v = mi__blis_find_variant(id);
  if (v && strcmp(v->op, op) == 0) return MI_OK;
  for (i = 0; i < n && i + 8 < sizeof want; i++)
    want[i] = (char)(op[i] >= 'A' && op[i] <= 'Z' ? op[i] - 'A' + 'a' : op[i]);
  memcpy(want + i, ".direct", 8);
  if (!v && strcmp(want, id) == 0) return MI_OK;
  return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "blis-cpu: variant '%s' %s op %s", id, v ? "does not implement" : "is unknown for", op);
}

void *mi__blis_state_new(mi__blis_prep_t *p, mi__blis_step_t *s, uint64_t bytes, mi_error_t *err) {
  s->state = mi__blis_calloc(p->ctx, bytes);
  if (!s->state) mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  return s->state;
}

/* The kernel and its arrays in one zeroed block, widest elements first so each stays aligned:
 * one allocation to fail, one free. */
static mi_kernel_t *kernel_new(const mi_kernel_desc_t *d) {
  size_t nt = (size_t)d->tensor_count, ni = (size_t)d->input_count + 1, no = (size_t)d->output_count + 1;
  mi_kernel_t *k = calloc(1, sizeof *k + (size_t)d->node_count * sizeof *k->steps + nt * sizeof *k->ptr +
                                 nt * sizeof *k->rsv + nt * sizeof *k->range + (ni + no) * sizeof *k->inputs + 2 * nt);
  if (!k) return NULL;
  k->tensor_count = d->tensor_count;
  k->steps = (mi__blis_step_t *)(k + 1);
  k->ptr = (void **)(k->steps + d->node_count);
  k->rsv = (uint64_t *)(k->ptr + nt);
  k->range = (mi__blis_range_t *)(k->rsv + nt); /* 4-byte fields: after the pointers */
  k->inputs = (int32_t *)(k->range + nt);
  k->outputs = k->inputs + ni;
  k->owned = (uint8_t *)(k->outputs + no);
  k->plane = k->owned + nt;
  return k;
}

void mi__blis_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *k) {
  int32_t i;
  if (!k) return;
  for (i = 0; i < k->step_count; i++) {
    mi__blis_free(ctx, k->steps[i].state);
    mi__blis_free(ctx, k->steps[i].aux);
  }
  for (i = 0; i < k->tensor_count; i++)
    if (k->owned[i] == 2) mi__blis_unreserve(k->ptr[i], k->rsv[i]);
    else if (k->owned[i])
      mi__blis_free(ctx, k->ptr[i]);
  free(k); /* its arrays share its block */
}

/* INT8/UINT8 runtime tensors are accepted only where every node touching them is a
 * Quantize/DequantizeLinear or a lowered INT8 Conv/Gemm/MatMul/Add, the ops that check their dtypes;
 * the float ops would misread them. */
static int only_qdq_touch(const mi_kernel_desc_t *d, int32_t t) {
  int32_t i, j;
  if (mi__blis_int_tensor_ok(d, t)) return 1; /* the integer ops of quantized models */
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int touches = 0;
    for (j = 0; j < n->input_count; j++) touches |= n->inputs[j] == t;
    for (j = 0; j < n->output_count; j++) touches |= n->outputs[j] == t;
    if (touches && strcmp(n->op_type, "QuantizeLinear") && strcmp(n->op_type, "DequantizeLinear") &&
        strcmp(n->op_type, "Conv") && strcmp(n->op_type, "Gemm") && strcmp(n->op_type, "MatMul") &&
        strcmp(n->op_type, "Add")) /* a QDQ block's residual Add (blis_qblock.c) */
      return 0;
  }
  return 1;
}

/* Checks every tensor and copies the constants; the intermediates get their memory once the steps
 * are known (alloc_intermediates). */
static int32_t prepare_tensors(mi_plugin_ctx_t *ctx, mi_kernel_t *k, const mi_kernel_desc_t *d,
                               mi_error_t *err) {
  int32_t i;
  for (i = 0; i < d->tensor_count; i++) {
    const mi_tensor_desc_t *t = d->tensors[i];
    uint64_t bytes = mi_sdk_tensor_bytes(t);
    if (t->rank < 0 || t->rank > MI_MAX_RANK)
      return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: tensor rank out of range");
    if (t->data) {
      if (t->data_bytes < bytes)
        return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: constant data shorter than its shape");
      k->ptr[i] = mi__blis_alloc(ctx, bytes ? bytes : 1);
      if (!k->ptr[i]) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
      k->owned[i] = 1;
      memcpy(k->ptr[i], t->data, (size_t)bytes);
      continue;
    }
    /* a BOOL intermediate: a comparison's result its Cast reads in the same pass (blis_cmp.c); a
     * BOOL the QLinearWhere nodes alone read as their condition (blis_qwhere.c) */
    if (t->dtype != MI_DTYPE_FLOAT32 &&
        !((t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8 || t->dtype == MI_DTYPE_INT32) &&
          only_qdq_touch(d, i)) &&
        !(t->dtype == MI_DTYPE_BOOL && mi_sdk_kernel_io(d, i, NULL) == MI_SDK_IO_NONE) &&
        !(t->dtype == MI_DTYPE_BOOL && mi__blis_where_cond(d, i)) &&
        !((t->dtype == MI_DTYPE_INT64 || t->dtype == MI_DTYPE_INT32) && mi__blis_index_input(d, i)) &&
        !mi__blis_int_move_tensor(d, i) &&
        !((t->dtype == MI_DTYPE_INT64 || t->dtype == MI_DTYPE_INT32 || t->dtype == MI_DTYPE_BOOL) &&
          mi__blis_vision_int(d, i)) &&
        !mi__blis_elem_tensor(d, i)) {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                           "blis-cpu: runtime tensor %d has dtype %d; only "
                           "FLOAT32 is run (INT8/UINT8 only by Q/DQ)",
                           i, t->dtype);
    }
    if (t->rank == 4 && t->layout == MI_LAYOUT_NCHWC)
      return mi_sdk_error(err, MI_ERR_UNSUPPORTED, "blis-cpu: blocked NCHWc tensors are not accepted");
  }
  return MI_OK;
}

/* The intermediates of a fused group that a step really reads or writes get memory of their own:
 * one made by a step and read by a later one (a group run member by member), or one no member
 * reads (a second output the maker writes anyway). One whose maker and every reader lie in the same
 * step is never materialised: the step computes through it (a Conv's activation tail, Mul -> Add
 * in one pass, ConvInteger's float tail in the output stage, a Q/DQ lookup table), and steps
 * joined into one pass count as one (step_of: a depthwise conv and its pointwise conv in bands, a
 * gate Mul in the conv's weights, a linked QDQ block). A plane a prep marks MI__PLANE_RESERVED
 * (written on a rare path, or by no step: a Resize whose rows the Concat's quantize computes) is
 * address space only. Allocating those anyway counted memory the run never touched: IS-Net 1024's
 * quantized export 4127 MiB against 793 MiB of resident growth, BlazeFace's back model 55 MiB
 * against 9 (docs/benchmarks.md). Not zeroed: the step that makes an intermediate writes it before
 * the next reads it. */
static int32_t alloc_intermediates(mi_plugin_ctx_t *ctx, mi_kernel_t *k, const mi_kernel_desc_t *d,
                                   const int32_t *step_of, mi_error_t *err) {
  int32_t t, i, j;
  for (t = 0; t < d->tensor_count; t++) {
    int32_t maker = -1, readers = 0, apart = 0;
    uint64_t bytes;
    if (d->tensors[t]->data || mi_sdk_kernel_io(d, t, NULL) != MI_SDK_IO_NONE) continue;
    for (i = 0; i < d->node_count; i++) {
      const mi_node_desc_t *n = d->nodes[i];
      for (j = 0; j < n->output_count; j++)
        if (n->outputs[j] == t) maker = i;
      for (j = 0; j < n->input_count; j++)
        if (n->inputs[j] == t) {
          readers++;
          apart |= maker < 0 || step_of[i] != step_of[maker];
        }
    }
    bytes = mi_sdk_tensor_bytes(d->tensors[t]);
    if (k->plane[t] == MI__PLANE_RESERVED) { /* written on a rare path only, or by none */
      if (!(k->ptr[t] = mi__blis_reserve(bytes, &k->rsv[t])))
        return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of address space");
      k->owned[t] = 2;
      continue;
    }
    if (k->plane[t] != MI__PLANE_WRITTEN && maker >= 0 && readers > 0 && !apart) continue; /* inside one step */
    k->ptr[t] = mi__blis_alloc(ctx, bytes ? bytes : 1);
    if (!k->ptr[t]) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    k->owned[t] = 1;
  }
  return MI_OK;
}

/* Member i's own choice (ABI 1.1 member_choices) as a description of its own in *own (the
 * kernel's with the member's variant and knobs; own->struct_size 0 when it has none). threads
 * and arch stay the kernel's: one kernel runs on one thread count and BLIS kernel set, so a
 * member asking for others is refused, and the host runs the group's nodes one by one. */
static int32_t member_desc(mi_plugin_ctx_t *ctx, const mi_kernel_desc_t *d, int32_t i, mi_kernel_desc_t *own,
                           mi_error_t *err) {
  const mi_member_choice_t *m;
  int32_t rc, q;
  own->struct_size = 0;
  if (!MI_HAS_FIELD(d, mi_kernel_desc_t, member_choices) || !d->member_choices || !(m = d->member_choices[i]) ||
      !MI_HAS_FIELD(m, mi_member_choice_t, knobs))
    return MI_OK;
  if ((rc = mi__blis_check_knobs(ctx, m->knobs, m->knob_count, err)) != MI_OK ||
      (rc = check_variant(m->variant_id, d->nodes[i]->op_type, err)) != MI_OK)
    return rc;
  for (q = 0; q < m->knob_count; q++) {
    const char *nm = m->knobs[q].name ? m->knobs[q].name : "";
    int64_t v = m->knobs[q].i, kv = mi_sdk_knob_int(d, nm, -1);
    int th = !strcmp(nm, "threads"), ar = !strcmp(nm, "arch");
    /* compared as what runs: 0 threads and no arch are the device's own */
    if ((th && (v > 0 ? v : ctx->threads) != (kv > 0 ? kv : ctx->threads)) ||
        (ar && ctx->arch_ids[v] != (kv >= 0 ? ctx->arch_ids[kv] : ctx->arch)))
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "blis-cpu: member '%s' asks %s=%lld, the group's kernel runs one",
                           d->nodes[i]->name ? d->nodes[i]->name : "?", nm, (long long)m->knobs[q].i);
  }
  *own = *d;
  own->variant_id = m->variant_id;
  own->knob_count = m->knob_count;
  own->knobs = m->knobs;
  return MI_OK;
}

int32_t mi__blis_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *d,
                                mi_kernel_t **out, mi_error_t *err) {
  mi_kernel_t *k = NULL;
  int32_t rc, i, n, *step_of = NULL;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu kernel_prepare: out is NULL");
  *out = NULL;
  if (!ctx || !d || d->node_count < 1 || !d->nodes || d->tensor_count < 1 || !d->tensors ||
      d->input_count < 0 || d->output_count < 0)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu kernel_prepare: empty description");
  if (device != 0) return mi_sdk_error(err, MI_ERR_NOT_FOUND, "blis-cpu: only device 0 exists");
  rc = mi__blis_check_knobs(ctx, d->knobs, d->knob_count, err);
  /* the variant is the anchor's: the first node, or the last where members come first (a
   * folded MatMul, a masked Softmax) */
  if (rc == MI_OK && check_variant(d->variant_id, d->nodes[d->node_count - 1]->op_type, NULL) != MI_OK)
    rc = check_variant(d->variant_id, d->nodes[0]->op_type, err);
  if (rc != MI_OK) return rc;
  if (!(k = kernel_new(d)) || !(step_of = malloc((size_t)d->node_count * sizeof *step_of))) {
    free(k);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  }
  k->input_count = d->input_count;
  k->output_count = d->output_count;
  for (i = 0; i < d->input_count; i++) k->inputs[i] = d->inputs[i];
  for (i = 0; i < d->output_count; i++) k->outputs[i] = d->outputs[i];
  k->threads = (int32_t)mi_sdk_knob_int(d, "threads", 0);
  n = (int32_t)mi_sdk_knob_int(d, "arch", -1);
  k->arch = n >= 0 ? ctx->arch_ids[n] : -1;
  {
    const void *cntx = mi__blis_cntx(ctx, k->arch >= 0 ? k->arch : ctx->arch, err, &rc);
    (void)cntx;
    if (rc != MI_OK) goto fail;
    if ((k->arch >= 0 ? k->arch : ctx->arch) == MI__ARCH_AUTO &&
        mi__blis_arch_supported(&ctx->cpu, MI__ARCH_HASWELL)) {
      (void)mi__blis_cntx(ctx, MI__ARCH_HASWELL, err, &rc); /* built now, not during a run */
      if (rc != MI_OK) goto fail;
    }
  }
  rc = prepare_tensors(ctx, k, d, err);
  if (rc != MI_OK) goto fail;
  for (i = 0; i < d->node_count;) {
    mi__blis_prep_t p;
    mi_kernel_desc_t own;
    const mi_node_desc_t *node = d->nodes[i];
    int32_t j;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.k = k;
    p.desc = d;
    p.node_index = i;
    p.nodes_used = 1;
    if (i > 0 && (rc = member_desc(ctx, d, i, &own, err)) != MI_OK) goto fail;
    if (i > 0 && own.struct_size) p.desc = &own; /* a member with a choice of its own */
    p.variant = (i == 0 || p.desc != d) && p.desc->variant_id && p.desc->variant_id[0] &&
                        !mi__blis_is_direct_id(p.desc->variant_id)
                    ? p.desc->variant_id
                    : NULL;
    if (d->node_count > 1) {
      int taken = 0;
      rc = MI_OK;
      for (size_t g = 0; g < sizeof k_group_preps / sizeof k_group_preps[0] && !taken && rc == MI_OK; g++)
        if (word_in(k_group_preps[g].ops, node->op_type))
          rc = k_group_preps[g].prep(&p, &k->steps[k->step_count], &taken, err);
      if (taken || rc != MI_OK) {
        for (j = 0; j < p.nodes_used && i + j < d->node_count; j++) step_of[i + j] = k->step_count;
        k->step_count++;
        if (rc != MI_OK) goto fail;
        i += p.nodes_used;
        continue;
      }
    }
    for (j = 0; j < OPS_N; j++)
      if (strcmp(ops[j].op, node->op_type) == 0) break;
    if (j == OPS_N) {
      rc = mi__blis_unsupported(err, node, "op not implemented by blis-cpu");
      goto fail;
    }
    rc = ops[j].prep(&p, &k->steps[k->step_count], err);
    for (j = 0; j < (p.nodes_used > 0 ? p.nodes_used : 1) && i + j < d->node_count; j++)
      step_of[i + j] = k->step_count;
    /* Counted even when refused: a prep may already hold its state/aux, released with the rest. */
    k->step_count++;
    if (rc != MI_OK) goto fail;
    i += p.nodes_used > 0 ? p.nodes_used : 1;
  }
  if (d->node_count > 1) mi__blis_qblock_link(k, d);
  for (i = 0; i < d->node_count; i++) /* steps joined to the one before: one pass */
    while (step_of[i] > 0 && k->steps[step_of[i]].joined) step_of[i]--;
  if ((rc = alloc_intermediates(ctx, k, d, step_of, err)) != MI_OK) goto fail;
  free(step_of);
  k->cost_ns = mi__blis_kernel_cost_ns(d, mi__blis_simd_level(ctx->cpu.isa) == MI__SIMD_AVX512);
  *out = k;
  return MI_OK;
fail:
  free(step_of);
  mi__blis_kernel_release(ctx, k);
  return rc;
}

int32_t mi__blis_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *in, int32_t nin,
                            mi_buffer_t *const *outs, int32_t nout, mi_run_stats_t *stats,
                            mi_error_t *err) {
  mi__blis_env_t env;
  struct timespec t0, t1;
  int32_t i, rc = MI_OK, rows_t = -1;
  int64_t rows = -1;
  uint64_t ns, bytes;
  if (!ctx || !k) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu kernel_run: NULL kernel");
  if (nin != k->input_count || nout != k->output_count)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu kernel_run: wrong buffer count");
  for (i = 0; i < nin; i++)
    if (!in[i]) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu kernel_run: NULL input");
  for (i = 0; i < nout; i++)
    if (!outs[i]) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu kernel_run: NULL output");
  for (i = 0; i < k->tensor_count; i++) mi__blis_range_reset(&k->range[i]);
  for (i = 0; i < nin; i++) {
    float lo, hi;
    k->ptr[k->inputs[i]] = mi__blis_buffer_data(in[i], &bytes);
    if (mi__blis_buffer_range(in[i], &lo, &hi)) { /* written by a kernel of ours that found it */
      mi__blis_range_merge(&k->range[k->inputs[i]], lo, hi);
      k->range[k->inputs[i]].known = 1;
    } else if (k->range[k->inputs[i]].reads)
      mi__blis_buffer_ask_range(in[i]);
  }
  for (i = 0; i < nout; i++) {
    k->ptr[k->outputs[i]] = mi__blis_buffer_data(outs[i], &bytes);
    mi__blis_buffer_written(outs[i]);
    k->range[k->outputs[i]].asked = mi__blis_buffer_range_asked(outs[i]);
  }
  env.range = k->range;
  env.range_used = &ctx->ranges_reused;
  /* a kernel too small to gain from a split runs on this thread alone (blis_cost.c) */
  env.threads = mi__blis_kernel_threads(k->threads > 0 ? k->threads : ctx->threads, k->cost_ns);
  env.pool = ctx->pool;
  env.ctx = ctx;
  env.k = k;
  env.cntx = mi__blis_cntx(ctx, k->arch >= 0 ? k->arch : ctx->arch, err, &rc);
  if (rc != MI_OK) return rc;
  env.cntx_small = NULL;
  if ((k->arch >= 0 ? k->arch : ctx->arch) == MI__ARCH_AUTO && ctx->cntx[MI__ARCH_HASWELL])
    env.cntx_small = ctx->cntx[MI__ARCH_HASWELL];
  env.rows_tensor = &rows_t;
  env.rows = &rows;
  env.rows_ok = stats && MI_HAS_FIELD(stats, mi_run_stats_t, rows);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (i = 0; i < k->step_count && rc == MI_OK; i++) rc = k->steps[i].run(&k->steps[i], k->ptr, &env, err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc != MI_OK) return rc;
  for (i = 0; i < nout; i++) /* after every output's write is counted: outputs may share a root */
    if (k->range[k->outputs[i]].known) {
      float lo, hi;
      mi__blis_range_get(&k->range[k->outputs[i]], &lo, &hi);
      mi__blis_buffer_set_range(outs[i], lo, hi);
    }
  ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
  atomic_fetch_add(&ctx->total_run_ns, ns);
  if (stats && MI_HAS_FIELD(stats, mi_run_stats_t, device_time_ns)) {
    stats->has_device_time = 1;
    stats->device_time_ns = ns;
  }
  for (i = 0; rows_t >= 0 && env.rows_ok && i < nout; i++)
    if (k->outputs[i] == rows_t) {
      stats->has_rows = 1;
      stats->rows_output = i;
      stats->rows = rows;
    }
  return MI_OK;
}
