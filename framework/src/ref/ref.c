/* ref.c - the reference interpreter's walker: op table, one node, and a whole graph. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ref/ref.h"
#include "ref/ref_ops.h"

/* The newest opset whose semantics these ops were checked against (22-25 against ONNX 1.17-1.20's
 * changes: types and new ops only, graph/onnx_load.c); a newer opset may change an op in ways we
 * would silently get wrong, so it is refused instead. */
#define REF_MAX_OPSET 25

typedef struct ref_op {
  const char *name;
  mi__ref_op_fn fn;
} ref_op_t;

static const ref_op_t REF_OPS[] = {
    {"Relu", mi__ref_unary},
    {"LeakyRelu", mi__ref_unary},
    {"HardSigmoid", mi__ref_unary},
    {"HardSwish", mi__ref_unary},
    {"Sigmoid", mi__ref_unary},
    {"Tanh", mi__ref_unary},
    {"Erf", mi__ref_unary},
    {"Cos", mi__ref_unary},
    {"Sin", mi__ref_unary},
    {"Gelu", mi__ref_unary},
    {"Sqrt", mi__ref_unary},
    {"Log", mi__ref_unary},
    {"Exp", mi__ref_unary},
    {"Neg", mi__ref_unary},
    {"Abs", mi__ref_unary},
    {"Reciprocal", mi__ref_unary},
    {"Not", mi__ref_unary},
    {"Clip", mi__ref_clip},
    {"Add", mi__ref_binary},
    {"Sub", mi__ref_binary},
    {"Mul", mi__ref_binary},
    {"Div", mi__ref_binary},
    {"Pow", mi__ref_binary},
    {"Equal", mi__ref_binary},
    {"Less", mi__ref_binary},
    {"Greater", mi__ref_binary},
    {"Max", mi__ref_variadic},
    {"Min", mi__ref_variadic},
    {"Sum", mi__ref_variadic},
    {"Mean", mi__ref_variadic},
    {"Where", mi__ref_where},
    {"Conv", mi__ref_conv},
    {"ConvTranspose", mi__ref_conv_transpose},
    {"MaxPool", mi__ref_pool},
    {"AveragePool", mi__ref_pool},
    {"GlobalAveragePool", mi__ref_global_pool},
    {"GlobalMaxPool", mi__ref_global_pool},
    {"MatMul", mi__ref_matmul},
    {"Gemm", mi__ref_gemm},
    {"BatchNormalization", mi__ref_batchnorm},
    {"LayerNormalization", mi__ref_layernorm},
    {"Softmax", mi__ref_softmax},
    {"LogSoftmax", mi__ref_softmax},
    {"ReduceMean", mi__ref_reduce},
    {"ReduceMax", mi__ref_reduce},
    {"ReduceMin", mi__ref_reduce},
    {"ReduceSum", mi__ref_reduce},
    {"Resize", mi__ref_resize},
    {"Upsample", mi__ref_resize},
    {"Reshape", mi__ref_reshape},
    {"Flatten", mi__ref_flatten},
    {"Squeeze", mi__ref_squeeze},
    {"Unsqueeze", mi__ref_squeeze},
    {"Shape", mi__ref_shape},
    {"Cast", mi__ref_cast},
    {"Constant", mi__ref_constant},
    {"Identity", mi__ref_identity},
    {"Dropout", mi__ref_identity},
    {"Transpose", mi__ref_transpose},
    {"Concat", mi__ref_concat},
    {"Slice", mi__ref_slice},
    {"Gather", mi__ref_gather},
    {"Sign", mi__ref_unary},
    {"Floor", mi__ref_unary},
    {"Ceil", mi__ref_unary},
    {"Round", mi__ref_unary},
    {"Softplus", mi__ref_unary},
    {"LessOrEqual", mi__ref_binary},
    {"GreaterOrEqual", mi__ref_binary},
    {"And", mi__ref_binary},
    {"Or", mi__ref_binary},
    {"Xor", mi__ref_binary},
    {"Expand", mi__ref_expand},
    {"ConstantOfShape", mi__ref_constant_of_shape},
    {"Range", mi__ref_range},
    {"Tile", mi__ref_tile},
    {"QuantizeLinear", mi__ref_quant},
    {"DequantizeLinear", mi__ref_quant},
    {"If", mi__ref_if},
    {"Loop", mi__ref_loop},
    {"Scan", mi__ref_scan},
    {"Pad", mi__ref_pad},
    {"Size", mi__ref_size},
    {"LSTM", mi__ref_lstm},
    {"GRU", mi__ref_gru},
    {"RNN", mi__ref_rnn},
    {"ReduceProd", mi__ref_reduce},
    {"ReduceL2", mi__ref_reduce},
    {"ReduceLogSumExp", mi__ref_reduce},
    {"Einsum", mi__ref_einsum},
    {"ArgMax", mi__ref_argminmax},
    {"ArgMin", mi__ref_argminmax},
    {"TopK", mi__ref_topk},
    {"NonZero", mi__ref_nonzero},
    {"Split", mi__ref_split},
    {"Trilu", mi__ref_trilu},
    {"DepthToSpace", mi__ref_depth_space},
    {"SpaceToDepth", mi__ref_depth_space},
    {"CumSum", mi__ref_cumsum},
    {"PRelu", mi__ref_prelu},
    {"Mod", mi__ref_mod},
    {"IsNaN", mi__ref_isnan_isinf},
    {"IsInf", mi__ref_isnan_isinf},
    {"InstanceNormalization", mi__ref_instancenorm},
    {"GatherElements", mi__ref_gather_elements},
    {"ScatterND", mi__ref_scatter_nd},
    {"DynamicQuantizeLinear", mi__ref_qlinear},
    {"QLinearAdd", mi__ref_qlinear},
    {"QLinearMul", mi__ref_qlinear},
    {"QLinearGlobalAveragePool", mi__ref_qlinear},
    {"QLinearAveragePool", mi__ref_qlinear},
    {"QLinearSigmoid", mi__ref_qlut},
    {"QLinearLeakyRelu", mi__ref_qlut},
    {"QLinearConcat", mi__ref_qlut},
    {"QLinearWhere", mi__ref_qlut},
    {"QLinearSoftmax", mi__ref_qlut},
    {"QGemm", mi__ref_qgemm},
    {"ConvInteger", mi__ref_qgemm},
    {"QLinearConv", mi__ref_qgemm},
    {"MatMulInteger", mi__ref_qgemm},
    {"QLinearMatMul", mi__ref_qgemm},
    {"MatMulNBits", mi__ref_matmul_nbits},
    {"DynamicQuantizeLSTM", mi__ref_dqlstm},
    {"Attention", mi__ref_attention},
    {"MultiHeadAttention", mi__ref_mha},
    {"RotaryEmbedding", mi__ref_rotary},
    {"GroupQueryAttention", mi__ref_gqa},
    {"Elu", mi__ref_act},
    {"Selu", mi__ref_act},
    {"Celu", mi__ref_act},
    {"Softsign", mi__ref_act},
    {"Mish", mi__ref_act},
    {"ThresholdedRelu", mi__ref_act},
    {"Shrink", mi__ref_act},
    {"Tan", mi__ref_act},
    {"Asin", mi__ref_act},
    {"Acos", mi__ref_act},
    {"Atan", mi__ref_act},
    {"Sinh", mi__ref_act},
    {"Cosh", mi__ref_act},
    {"Asinh", mi__ref_act},
    {"Acosh", mi__ref_act},
    {"Atanh", mi__ref_act},
    {"LRN", mi__ref_lrn},
    {"ImageScaler", mi__ref_image_scaler},
    {"GridSample", mi__ref_gridsample},
    {"RoiAlign", mi__ref_roialign},
    {"AffineGrid", mi__ref_affine_grid},
    {"MaxUnpool", mi__ref_max_unpool},
    {"DFT", mi__ref_dft},
    {"STFT", mi__ref_stft},
    {"HannWindow", mi__ref_window_fn},
    {"HammingWindow", mi__ref_window_fn},
    {"BlackmanWindow", mi__ref_window_fn},
    {"MelWeightMatrix", mi__ref_mel_weight},
    {"CastLike", mi__ref_castlike},
    {"ReduceL1", mi__ref_reduce},
    {"ReduceSumSquare", mi__ref_reduce},
    {"ReduceLogSum", mi__ref_reduce},
    {"GroupNormalization", mi__ref_groupnorm},
    {"LpNormalization", mi__ref_lpnorm},
    {"MeanVarianceNormalization", mi__ref_mvn},
    {"GatherND", mi__ref_gather_nd},
    {"ScatterElements", mi__ref_scatter_elements},
    {"Scatter", mi__ref_scatter_elements},
    {"NonMaxSuppression", mi__ref_nms},
    {"OneHot", mi__ref_onehot},
    {"Hardmax", mi__ref_hardmax},
    {"Compress", mi__ref_compress},
    {"ReverseSequence", mi__ref_reverse_sequence},
    {"RMSNormalization", mi__ref_rms},
    {"SimplifiedLayerNormalization", mi__ref_msfuse},
    {"SkipLayerNormalization", mi__ref_msfuse},
    {"SkipSimplifiedLayerNormalization", mi__ref_msfuse},
    {"FastGelu", mi__ref_msfuse},
    {"BiasGelu", mi__ref_msfuse},
    {"QuickGelu", mi__ref_msfuse},
    {"BiasAdd", mi__ref_msfuse},
    {"Swish", mi__ref_msfuse},
    {"EmbedLayerNormalization", mi__ref_msfuse},
    {"FusedMatMul", mi__ref_msfuse},
    {"TransposeMatMul", mi__ref_msfuse},
    {"EyeLike", mi__ref_eyelike},
    {"BitShift", mi__ref_bitwise},
    {"BitwiseAnd", mi__ref_bitwise},
    {"BitwiseOr", mi__ref_bitwise},
    {"BitwiseXor", mi__ref_bitwise},
    {"BitwiseNot", mi__ref_bitwise},
    {"LpPool", mi__ref_lppool},
    {"GlobalLpPool", mi__ref_global_lppool},
    {"Col2Im", mi__ref_col2im},
    {"DeformConv", mi__ref_deform_conv},
    {"Det", mi__ref_det},
    {"CenterCropPad", mi__ref_center_crop_pad},
    {"MaxRoiPool", mi__ref_max_roi_pool},
    {"TensorScatter", mi__ref_tensor_scatter},
    {"Unique", mi__ref_unique},
};

static mi__ref_op_fn ref_find(const char *op_type) {
  if (!op_type) return NULL;
  /* (the first byte first: folding and session preparation ask per node) */
  for (size_t i = 0; i < sizeof REF_OPS / sizeof REF_OPS[0]; i++)
    if (REF_OPS[i].name[0] == op_type[0] && strcmp(REF_OPS[i].name, op_type) == 0) return REF_OPS[i].fn;
  return NULL;
}

MI_API int mi_ref_supports(const char *op_type, int64_t opset) {
  return opset >= 1 && opset <= REF_MAX_OPSET && ref_find(op_type) != NULL;
}

int32_t mi__ref_node(const mi_graph_t *g, int32_t node, const mi_array_t *const *inputs,
                     mi_array_t **outputs, mi_error_t *err) {
  mi__ref_call_t c;
  mi__ref_op_fn fn;
  int32_t rc;
  if (!g || node < 0 || node >= g->node_count || (!inputs && g->nodes[node].input_count) ||
      !outputs)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi__ref_node: bad arguments");
  memset(&c, 0, sizeof c);
  c.g = g;
  c.node = &g->nodes[node];
  c.opset = g->opset;
  c.nin = c.node->input_count;
  c.in = inputs;
  c.nout = c.node->output_count;
  c.out = outputs;
  c.err = err;
  for (int32_t i = 0; i < c.nout; i++) outputs[i] = NULL;
  if (!mi__graph_op_known(c.node->domain, c.node->op_type))
    return mi__ref_fail(&c, MI_ERR_UNSUPPORTED, "domain '%s' is not supported",
                        c.node->domain);
  fn = ref_find(c.node->op_type);
  if (!fn) return mi__ref_fail(&c, MI_ERR_UNSUPPORTED, "op type is not supported");
  if (!mi_ref_supports(c.node->op_type, c.opset))
    return mi__ref_fail(&c, MI_ERR_UNSUPPORTED, "opset outside the supported range 1..%d",
                        REF_MAX_OPSET);
  rc = fn(&c);
  for (int32_t i = 0; rc == MI_OK && i < c.nout; i++)
    if (!outputs[i] && mi__ref_out_wanted(&c, i))
      rc = mi__ref_fail(&c, MI_ERR_UNSUPPORTED, "output %d is not produced by this op", (int)i);
  if (rc != MI_OK)
    for (int32_t i = 0; i < c.nout; i++) {
      mi_array_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  return rc;
}

/* How the walker holds each tensor's value. */
enum { HELD_NONE = 0,
       HELD_BORROWED = 1,
       HELD_OWNED = 2,
       HELD_VIEW = 3 };

static void release_value(mi_array_t **vals, uint8_t *held, int32_t t) {
  if (held[t] == HELD_OWNED) mi_array_destroy(vals[t]);
  if (held[t] == HELD_VIEW) free(vals[t]);
  vals[t] = NULL;
  held[t] = HELD_NONE;
}

static int32_t check_input(const mi_graph_t *g, int32_t i, const mi_array_t *a, mi_error_t *err) {
  const mi_tensor_t *t = &g->tensors[g->inputs[i]];
  if (!a) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s' is missing", t->name);
  if (t->dtype != MI_DTYPE_UNDEFINED && a->dtype != t->dtype)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s' is %s, the graph expects %s",
                     t->name, mi_dtype_name(a->dtype), mi_dtype_name(t->dtype));
  if (t->rank >= 0 && a->rank != t->rank)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s' has rank %d, the graph expects %d",
                     t->name, (int)a->rank, (int)t->rank);
  for (int32_t d = 0; t->rank >= 0 && d < t->rank; d++)
    if (t->dims[d] >= 0 && t->dims[d] != a->dims[d])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "input '%s' has dimension %d = %lld, the graph expects %lld", t->name,
                       (int)d, (long long)a->dims[d], (long long)t->dims[d]);
  return MI_OK;
}

/* Wraps an initializer's data in an array header without copying it. */
static mi_array_t *view_initializer(const mi_tensor_t *t) {
  mi_array_t *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->dtype = t->dtype;
  a->rank = t->rank;
  for (int32_t d = 0; d < t->rank; d++) a->dims[d] = t->dims[d];
  a->data = t->data;
  a->nbytes = t->nbytes;
  return a;
}

MI_API int32_t mi_ref_run(const mi_graph_t *g, const mi_array_t *const *inputs,
                          int32_t input_count, mi_array_t **outputs, int32_t output_count,
                          mi_error_t *err) {
  return mi__ref_run_scoped(g, inputs, input_count, NULL, outputs, output_count, err);
}

int32_t mi__ref_run_scoped(const mi_graph_t *g, const mi_array_t *const *inputs,
                           int32_t input_count, const mi_array_t *const *captures,
                           mi_array_t **outputs, int32_t output_count, mi_error_t *err) {
  int32_t rc = MI_OK, nt;
  mi_array_t **vals = NULL;
  uint8_t *held = NULL;
  int32_t *last_use = NULL, *role = NULL;
  const mi_array_t **nin = NULL;
  mi_array_t **nout = NULL;
  int32_t max_in = 1, max_out = 1;

  for (int32_t i = 0; outputs && i < output_count; i++) outputs[i] = NULL;
  if (!g || (!inputs && input_count) || !outputs)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_ref_run: NULL argument");
  if (input_count != g->input_count || output_count != g->output_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "mi_ref_run: graph '%s' has %d inputs and %d outputs, got %d and %d",
                     g->name ? g->name : "", (int)g->input_count, (int)g->output_count,
                     (int)input_count, (int)output_count);
  nt = g->tensor_count;
  for (int32_t n = 0; n < g->node_count; n++) {
    if (g->nodes[n].input_count > max_in) max_in = g->nodes[n].input_count;
    if (g->nodes[n].output_count > max_out) max_out = g->nodes[n].output_count;
  }
  vals = calloc((size_t)nt + 1, sizeof *vals);
  held = calloc((size_t)nt + 1, 1);
  last_use = malloc(((size_t)nt + 1) * sizeof *last_use);
  nin = calloc((size_t)max_in, sizeof *nin);
  nout = calloc((size_t)max_out, sizeof *nout);
  role = malloc(((size_t)g->node_count + 1) * sizeof *role);
  if (!vals || !held || !last_use || !nin || !nout || !role) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_ref_run: out of memory");
    goto done;
  }

  /* Last consumer of every tensor, so intermediates are freed as soon as possible; graph
   * outputs are kept to the end. -1: nobody reads it. */
  for (int32_t t = 0; t < nt; t++) last_use[t] = -1;
  for (int32_t n = 0; n < g->node_count; n++)
    for (int32_t k = 0; k < g->nodes[n].input_count; k++)
      if (g->nodes[n].inputs[k] >= 0 && g->nodes[n].inputs[k] < nt)
        last_use[g->nodes[n].inputs[k]] = n;
  for (int32_t i = 0; i < g->output_count; i++) last_use[g->outputs[i]] = g->node_count;
  /* QDQ layers run as integer layers at their QuantizeLinear (ref_qdq.c), from their input
   * codes, which therefore live until then. */
  if (mi__ref_qdq_plan(g, role) > 0)
    for (int32_t n = 0; n < g->node_count; n++) {
      int32_t t = role[n] >= 0 ? mi__ref_qdq_codes(g, role[n]) : -1;
      if (t >= 0 && last_use[t] >= 0 && last_use[t] < n) last_use[t] = n;
    }

  for (int32_t t = 0; t < nt; t++) {
    const mi_tensor_t *ts = &g->tensors[t];
    if (ts->data) {
      vals[t] = view_initializer(ts);
      held[t] = HELD_VIEW;
    } else if (ts->producer < 0 && ts->rank >= 0 && ts->nbytes == 0) {
      int64_t numel = 1;
      for (int32_t d = 0; d < ts->rank; d++) numel *= ts->dims[d];
      if (numel != 0) continue;                                 /* a runtime value, filled below or by a node */
      vals[t] = mi_array_create(ts->dtype, ts->rank, ts->dims); /* an empty initializer */
      held[t] = HELD_OWNED;
    } else {
      continue;
    }
    if (!vals[t]) {
      held[t] = HELD_NONE;
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_ref_run: out of memory");
      goto done;
    }
  }
  for (int32_t i = 0; captures && i < g->capture_count; i++) {
    int32_t t = g->captures[i];
    release_value(vals, held, t);
    vals[t] = (mi_array_t *)captures[i];
    held[t] = captures[i] ? HELD_BORROWED : HELD_NONE;
  }
  for (int32_t i = 0; i < input_count; i++) {
    int32_t t = g->inputs[i];
    rc = check_input(g, i, inputs[i], err);
    if (rc != MI_OK) goto done;
    release_value(vals, held, t);
    vals[t] = (mi_array_t *)inputs[i];
    held[t] = HELD_BORROWED;
  }

  for (int32_t n = 0; n < g->node_count; n++) {
    const mi_node_t *node = &g->nodes[n];
    for (int32_t k = 0; role[n] != MI__REF_QDQ_SKIP && k < node->input_count; k++) {
      int32_t t = node->inputs[k];
      if (role[n] >= 0 && k == 0) t = mi__ref_qdq_codes(g, role[n]);
      nin[k] = t >= 0 ? vals[t] : NULL;
      if (t >= 0 && !vals[t]) {
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "node '%s' (%s, opset %lld): input '%s' has no value (not computed yet?)",
                       node->name ? node->name : "", node->op_type, (long long)g->opset,
                       g->tensors[t].name);
        goto done;
      }
    }
    if (role[n] == MI__REF_QDQ_SKIP) rc = MI_OK;
    else if (role[n] >= 0)
      rc = mi__ref_qdq_run(g, role[n], nin[0], &nout[0], err);
    else
      rc = mi__ref_node(g, n, nin, nout, err);
    if (rc != MI_OK) goto done;
    for (int32_t k = 0; k < node->output_count; k++) {
      int32_t t = node->outputs[k];
      if (t < 0 || last_use[t] < 0) {
        mi_array_destroy(nout[k]);
      } else {
        release_value(vals, held, t);
        vals[t] = nout[k];
        held[t] = nout[k] ? HELD_OWNED : HELD_NONE;
      }
      nout[k] = NULL;
    }
    for (int32_t k = 0; k < node->input_count; k++) {
      int32_t t = node->inputs[k];
      if (t >= 0 && last_use[t] == n && held[t] == HELD_OWNED) release_value(vals, held, t);
    }
    if (role[n] >= 0) {
      int32_t t = mi__ref_qdq_codes(g, role[n]);
      if (last_use[t] == n && held[t] == HELD_OWNED) release_value(vals, held, t);
    }
  }

  for (int32_t i = 0; i < output_count; i++) {
    int32_t t = g->outputs[i];
    if (!vals[t]) {
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "graph output '%s' was never computed",
                     g->tensors[t].name);
      goto done;
    }
    outputs[i] = mi__ref_clone(vals[t]);
    if (!outputs[i]) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi_ref_run: out of memory");
      goto done;
    }
  }

done:
  if (rc != MI_OK)
    for (int32_t i = 0; i < output_count; i++) {
      mi_array_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  if (vals && held)
    for (int32_t t = 0; t < nt; t++) release_value(vals, held, t);
  free(vals);
  free(held);
  free(last_use);
  free(role);
  free(nin);
  free(nout);
  return rc;
}
