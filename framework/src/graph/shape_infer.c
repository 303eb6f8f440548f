/* shape_infer.c - shape inference driver: known-value tracking, shared helpers, dispatch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/onnx_dtype.h"
#include "graph/op_since.h"
#include "graph/shape_infer.h"

int32_t mi__si_fail(mi__si_t *c, const mi_node_t *n, int32_t code, const char *fmt, ...) {
  char msg[2 * MI_ERROR_MESSAGE_SIZE]; /* an inner error whole, and its context */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mi__errorf_nested(c->err, code, "node '%s' (%s, opset %lld): %s", n->name, n->op_type,
                           (long long)c->g->opset, msg);
}

int32_t mi__si_since(mi__si_t *c, const mi_node_t *n) {
  int64_t s = mi__op_since(n->op_type);
  if (c->g->opset < s)
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "the op exists from opset %lld on", (long long)s);
  return MI_OK;
}

const mi_tensor_t *mi__si_in(const mi__si_t *c, const mi_node_t *n, int32_t k) {
  if (k < 0 || k >= n->input_count || n->inputs[k] < 0) return NULL;
  return &c->g->tensors[n->inputs[k]];
}

int32_t mi__si_need(mi__si_t *c, const mi_node_t *n, int32_t min) {
  for (int32_t k = 0; k < min; k++)
    if (!mi__si_in(c, n, k))
      return mi__si_fail(c, n, MI_ERR_PARSE, "needs at least %d inputs, input %d is missing",
                         (int)min, (int)k);
  if (n->output_count < 1) return mi__si_fail(c, n, MI_ERR_PARSE, "has no output");
  return MI_OK;
}

int32_t mi__si_open(mi__si_t *c, const mi_node_t *n, int32_t min, const mi_tensor_t **x) {
  int32_t rc = mi__si_need(c, n, min);
  if (rc) return rc;
  *x = mi__si_in(c, n, 0);
  if ((*x)->rank >= 0) return MI_OK;
  mi__si_set(c, n, 0, (*x)->dtype, -1, NULL);
  return MI__SI_DONE;
}

int32_t mi__si_open2(mi__si_t *c, const mi_node_t *n, int32_t min, int32_t kb,
                     const mi_tensor_t **a, const mi_tensor_t **b) {
  int32_t rc = mi__si_need(c, n, min);
  if (rc) return rc;
  *a = mi__si_in(c, n, 0);
  *b = mi__si_in(c, n, kb);
  if ((*a)->rank >= 0 && (*b)->rank >= 0) return MI_OK;
  mi__si_set(c, n, 0, (*a)->dtype, -1, NULL);
  return MI__SI_DONE;
}

int32_t mi__si_shaped_like(mi__si_t *c, const mi_node_t *n, int32_t min, int32_t dtype,
                           const mi_tensor_t **x) {
  int32_t rc = mi__si_need(c, n, min);
  if (rc) return rc;
  const mi_tensor_t *in = mi__si_in(c, n, 0);
  mi__si_set(c, n, 0, dtype == MI_DTYPE_UNDEFINED ? in->dtype : dtype, in->rank, in->dims);
  if (x) *x = in;
  return MI_OK;
}

int32_t mi__si_same_shape(mi__si_t *c, const mi_node_t *n) {
  return mi__si_shaped_like(c, n, 1, MI_DTYPE_UNDEFINED, NULL);
}

void mi__si_set(mi__si_t *c, const mi_node_t *n, int32_t k, int32_t dtype, int32_t rank,
                const int64_t *dims) {
  if (k >= n->output_count) return;
  mi_tensor_t *t = &c->g->tensors[n->outputs[k]];
  t->dtype = dtype;
  int64_t d[MI_MAX_RANK] = {0};
  for (int32_t i = 0; i < rank; i++) d[i] = dims[i] < 0 ? MI_DIM_DYNAMIC : dims[i];
  mi__tensor_set_shape(t, rank, d);
}

const double *mi__si_val(const mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *count) {
  if (k < 0 || k >= n->input_count || n->inputs[k] < 0) return NULL;
  *count = c->val_n[n->inputs[k]];
  return c->val[n->inputs[k]];
}

/* Integer values as the tensor's type holds them: the arithmetic above runs in doubles, so a
 * sum that overflows an INT16 or UINT32 wraps here as it will when the graph runs; a negative
 * UINT64, which a double cannot hold wrapped, becomes unknown. */
static void wrap_values(int32_t dt, double *p, int64_t count) {
  int bits = (int)mi_dtype_size(dt) * 8;
  if (!mi__dtype_is_int(dt) || (bits == 64 && dt != MI_DTYPE_UINT64)) return;
  int uns = mi__dtype_is_unsigned(dt);
  for (int64_t i = 0; i < count; i++) {
    double x = p[i];
    if (!isfinite(x)) continue;
    if (bits == 64) {
      if (x < 0) p[i] = NAN;
      continue;
    }
    double m = ldexp(1.0, bits), lo = uns ? 0.0 : -m / 2;
    if (x < lo || x >= lo + m) {
      x = fmod(trunc(x) - lo, m);
      p[i] = (x < 0 ? x + m : x) + lo;
    }
  }
}

void mi__si_set_val(mi__si_t *c, const mi_node_t *n, int32_t k, const double *v, int64_t count) {
  if (k >= n->output_count || count > MI__SI_MAX_VALUES || count < 0) return;
  int32_t t = n->outputs[k];
  double *p = malloc((size_t)(count ? count : 1) * sizeof *p);
  if (!p) return; /* values only sharpen shapes; without them dims stay dynamic */
  if (count) memcpy(p, v, (size_t)count * sizeof *p);
  wrap_values(c->g->tensors[t].dtype, p, count);
  free(c->val[t]);
  c->val[t] = p;
  c->val_n[t] = count;
}

int64_t mi__si_d2i(double v) {
  if (isnan(v)) return INT64_MIN; /* callers test NaN first; this keeps the cast defined */
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return (int64_t)v;
}

int64_t mi__si_ints(const mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *out, int64_t max) {
  int64_t cnt = 0;
  const double *v = mi__si_val(c, n, k, &cnt);
  if (!v || cnt > max) return -1;
  for (int64_t i = 0; i < cnt; i++) {
    if (isnan(v[i])) return -1;
    out[i] = mi__si_d2i(v[i]);
  }
  return cnt;
}

int32_t mi__si_axis(mi__si_t *c, const mi_node_t *n, int64_t axis, int32_t rank, int32_t *out) {
  if (axis < -rank || axis >= rank)
    return mi__si_fail(c, n, MI_ERR_PARSE, "axis %lld out of range for rank %d", (long long)axis,
                       (int)rank);
  *out = (int32_t)(axis < 0 ? axis + rank : axis);
  return MI_OK;
}

static void fmt_dims(char *buf, size_t n, int32_t rank, const int64_t *d) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, n - o, "[");
  for (int32_t i = 0; i < rank && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, i ? ",%lld" : "%lld", (long long)d[i]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

int32_t mi__si_broadcast(mi__si_t *c, const mi_node_t *n, int32_t ra, const int64_t *a,
                         int32_t rb, const int64_t *b, int32_t *rout, int64_t *out) {
  int32_t r = ra > rb ? ra : rb;
  for (int32_t i = 0; i < r; i++) {
    int64_t x = i < r - ra ? 1 : a[i - (r - ra)];
    int64_t y = i < r - rb ? 1 : b[i - (r - rb)];
    if (x == y) out[i] = x;
    else if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (x < 0)
      out[i] = y; /* a dynamic dim must match the known one, or be 1 */
    else if (y < 0)
      out[i] = x;
    else {
      char sa[96], sb[96];
      fmt_dims(sa, sizeof sa, ra, a);
      fmt_dims(sb, sizeof sb, rb, b);
      return mi__si_fail(c, n, MI_ERR_PARSE, "cannot broadcast shapes %s and %s", sa, sb);
    }
  }
  *rout = r;
  return MI_OK;
}

/* Every op shape inference knows, by family (the file that holds its handler). */
static const mi__si_op_t ops[] = {
    /* elementwise */
    {"Relu", mi__si_same_shape},
    {"LeakyRelu", mi__si_same_shape},
    {"HardSigmoid", mi__si_same_shape},
    {"HardSwish", mi__si_same_shape},
    {"Sigmoid", mi__si_same_shape},
    {"Tanh", mi__si_same_shape},
    {"Erf", mi__si_same_shape},
    {"Cos", mi__si_same_shape},
    {"Sin", mi__si_same_shape},
    {"Gelu", mi__si_same_shape},
    {"Log", mi__si_same_shape},
    {"Exp", mi__si_same_shape},
    {"Reciprocal", mi__si_same_shape},
    {"Sqrt", mi__si_unary_eval},
    {"Neg", mi__si_unary_eval},
    {"Abs", mi__si_unary_eval},
    {"Identity", mi__si_unary_eval},
    {"Dropout", mi__si_dropout},
    {"Add", mi__si_broadcast_op},
    {"Sub", mi__si_broadcast_op},
    {"Mul", mi__si_broadcast_op},
    {"Div", mi__si_broadcast_op},
    {"Pow", mi__si_broadcast_op},
    {"Max", mi__si_broadcast_op},
    {"Min", mi__si_broadcast_op},
    {"Equal", mi__si_broadcast_op},
    {"Where", mi__si_broadcast_op},
    {"Cast", mi__si_cast},
    {"Softmax", mi__si_softmax},
    {"BatchNormalization", mi__si_batchnorm},
    {"LayerNormalization", mi__si_layernorm},
    {"Clip", mi__si_clip},
    {"Constant", mi__si_constant},
    {"Sign", mi__si_unary_eval},
    {"Floor", mi__si_unary_eval},
    {"Ceil", mi__si_unary_eval},
    {"Round", mi__si_unary_eval},
    {"Not", mi__si_unary_eval},
    {"Softplus", mi__si_same_shape},
    {"Less", mi__si_broadcast_op},
    {"Greater", mi__si_broadcast_op},
    {"LessOrEqual", mi__si_broadcast_op},
    {"GreaterOrEqual", mi__si_broadcast_op},
    {"And", mi__si_broadcast_op},
    {"Or", mi__si_broadcast_op},
    {"Xor", mi__si_broadcast_op},
    {"Sum", mi__si_broadcast_op},
    {"Mean", mi__si_broadcast_op},
    {"LogSoftmax", mi__si_softmax},
    {"QuantizeLinear", mi__si_quantize_linear},
    {"DequantizeLinear", mi__si_dequantize_linear},
    /* nn */
    {"Conv", mi__si_conv},
    {"ConvTranspose", mi__si_conv},
    {"MaxPool", mi__si_pool},
    {"AveragePool", mi__si_pool},
    {"GlobalAveragePool", mi__si_pool},
    {"MatMul", mi__si_matmul},
    {"Gemm", mi__si_gemm},
    {"Resize", mi__si_resize},
    {"Upsample", mi__si_resize},
    /* tensor */
    {"Reshape", mi__si_reshape},
    {"Flatten", mi__si_flatten},
    {"Transpose", mi__si_transpose},
    {"ReduceMean", mi__si_reduce},
    {"ReduceMax", mi__si_reduce},
    {"ReduceSum", mi__si_reduce},
    {"Squeeze", mi__si_squeeze},
    {"Unsqueeze", mi__si_unsqueeze},
    {"Concat", mi__si_concat},
    {"Shape", mi__si_shape},
    {"Gather", mi__si_gather},
    {"Slice", mi__si_slice},
    {"ReduceMin", mi__si_reduce},
    {"ReduceProd", mi__si_reduce},
    {"ReduceL2", mi__si_reduce},
    {"ReduceLogSumExp", mi__si_reduce},
    /* generate */
    {"Expand", mi__si_expand},
    {"ConstantOfShape", mi__si_constant_of_shape},
    {"Range", mi__si_range},
    {"Tile", mi__si_tile},
    /* control */
    {"Scan", mi__si_scan_op},
    {"If", mi__si_if_op},
    {"Loop", mi__si_loop_op},
    /* pad */
    {"Pad", mi__si_pad},
    {"Size", mi__si_size},
    {"LSTM", mi__si_lstm},
    {"GRU", mi__si_gru},
    {"RNN", mi__si_gru},
    /* select */
    {"ArgMax", mi__si_argminmax},
    {"ArgMin", mi__si_argminmax},
    {"TopK", mi__si_topk},
    {"NonZero", mi__si_nonzero},
    {"Einsum", mi__si_einsum},
    {"GatherElements", mi__si_gather_elements},
    {"ScatterND", mi__si_scatter_nd},
    /* rearrange */
    {"Split", mi__si_split},
    {"Trilu", mi__si_trilu},
    {"CumSum", mi__si_cumsum},
    {"DepthToSpace", mi__si_depth_space},
    {"SpaceToDepth", mi__si_depth_space},
    {"PRelu", mi__si_prelu},
    {"Mod", mi__si_mod},
    {"IsNaN", mi__si_to_bool},
    {"IsInf", mi__si_to_bool},
    {"InstanceNormalization", mi__si_instancenorm},
    /* quant */
    {"ConvInteger", mi__si_conv_integer},
    {"QLinearConv", mi__si_qlinear_conv},
    {"MatMulInteger", mi__si_matmul_integer},
    {"QLinearMatMul", mi__si_qlinear_matmul},
    {"DynamicQuantizeLinear", mi__si_dynamic_quantize},
    {"QLinearAdd", mi__si_qlinear_binary},
    {"QLinearMul", mi__si_qlinear_binary},
    {"QLinearGlobalAveragePool", mi__si_qlinear_gap},
    {"QLinearAveragePool", mi__si_qlinear_avgpool},
    {"QLinearSigmoid", mi__si_qlinear_unary},
    {"QLinearLeakyRelu", mi__si_qlinear_unary},
    {"QLinearSoftmax", mi__si_qlinear_unary},
    {"QLinearConcat", mi__si_qlinear_concat},
    {"QLinearWhere", mi__si_qlinear_where},
    {"QGemm", mi__si_qgemm},
    {"MatMulNBits", mi__si_matmul_nbits},
    {"DynamicQuantizeLSTM", mi__si_dqlstm},
    /* attn */
    {"Attention", mi__si_attention},
    {"MultiHeadAttention", mi__si_mha},
    {"RotaryEmbedding", mi__si_rotary},
    {"GroupQueryAttention", mi__si_gqa},
    /* act: activations, CastLike, GroupNormalization */
    {"Elu", mi__si_act},
    {"Selu", mi__si_act},
    {"Celu", mi__si_act},
    {"Softsign", mi__si_act},
    {"Mish", mi__si_act},
    {"ThresholdedRelu", mi__si_act},
    {"Shrink", mi__si_act},
    {"Tan", mi__si_act},
    {"Asin", mi__si_act},
    {"Acos", mi__si_act},
    {"Atan", mi__si_act},
    {"Sinh", mi__si_act},
    {"Cosh", mi__si_act},
    {"Asinh", mi__si_act},
    {"Acosh", mi__si_act},
    {"Atanh", mi__si_act},
    {"LRN", mi__si_lrn},
    {"ImageScaler", mi__si_same_shape},
    {"GridSample", mi__si_gridsample},
    {"RoiAlign", mi__si_roialign},
    {"AffineGrid", mi__si_affine_grid},
    {"MaxUnpool", mi__si_max_unpool},
    {"DFT", mi__si_dft},
    {"STFT", mi__si_stft},
    {"HannWindow", mi__si_window_fn},
    {"HammingWindow", mi__si_window_fn},
    {"BlackmanWindow", mi__si_window_fn},
    {"MelWeightMatrix", mi__si_mel_weight},
    {"CastLike", mi__si_castlike},
    {"GroupNormalization", mi__si_groupnorm},
    {"LpNormalization", mi__si_lpnorm},
    {"MeanVarianceNormalization", mi__si_lpnorm},
    {"ReduceL1", mi__si_reduce},
    {"ReduceSumSquare", mi__si_reduce},
    {"ReduceLogSum", mi__si_reduce},
    /* nd: GatherND, ScatterElements, NonMaxSuppression */
    {"GatherND", mi__si_gather_nd},
    {"ScatterElements", mi__si_scatter_elements},
    {"Scatter", mi__si_scatter_elements},
    {"NonMaxSuppression", mi__si_nms},
    {"OneHot", mi__si_onehot},
    {"Hardmax", mi__si_softmax},
    {"Compress", mi__si_compress},
    {"ReverseSequence", mi__si_reverse_sequence},
    /* msfuse: RMSNormalization and ONNX Runtime's transformer fusions */
    {"RMSNormalization", mi__si_rms},
    {"SimplifiedLayerNormalization", mi__si_msfuse},
    {"SkipLayerNormalization", mi__si_msfuse},
    {"SkipSimplifiedLayerNormalization", mi__si_msfuse},
    {"FastGelu", mi__si_msfuse},
    {"BiasGelu", mi__si_msfuse},
    {"QuickGelu", mi__si_msfuse},
    {"BiasAdd", mi__si_msfuse},
    {"Swish", mi__si_msfuse},
    {"EmbedLayerNormalization", mi__si_msfuse},
    {"FusedMatMul", mi__si_msfuse},
    {"TransposeMatMul", mi__si_msfuse},
    /* EyeLike, the bitwise ops, Lp pooling, Col2Im, DeformConv, Det, CenterCropPad, MaxRoiPool, TensorScatter, Unique */
    {"EyeLike", mi__si_eyelike},
    {"BitShift", mi__si_bitwise},
    {"BitwiseAnd", mi__si_bitwise},
    {"BitwiseOr", mi__si_bitwise},
    {"BitwiseXor", mi__si_bitwise},
    {"BitwiseNot", mi__si_bitwise},
    {"LpPool", mi__si_pool},
    {"GlobalLpPool", mi__si_pool},
    {"Col2Im", mi__si_col2im},
    {"DeformConv", mi__si_deform_conv},
    {"Det", mi__si_det},
    {"CenterCropPad", mi__si_center_crop_pad},
    {"MaxRoiPool", mi__si_max_roi_pool},
    {"TensorScatter", mi__si_tensor_scatter},
    {"Unique", mi__si_unique},
};

mi__si_fn mi__si_lookup(const char *op) {
  /* (the first byte first: asked per node at every shape inference) */
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (ops[i].op[0] == op[0] && strcmp(ops[i].op, op) == 0) return ops[i].fn;
  return NULL;
}

static int32_t lookup_and_run(mi__si_t *c, const mi_node_t *n) {
  if (!mi__graph_op_known(n->domain, n->op_type))
    return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "unsupported op (domain '%s')", n->domain);
  mi__si_fn fn = mi__si_lookup(n->op_type);
  if (!fn) return mi__si_fail(c, n, MI_ERR_UNSUPPORTED, "unsupported op");
  int32_t rc = fn(c, n);
  return rc == MI__SI_DONE ? MI_OK : rc;
}

/* Loads the values of small constant tensors so shape arithmetic can run on them. */
static void load_values(mi__si_t *c) {
  for (int32_t t = 0; t < c->g->tensor_count; t++) {
    const mi_tensor_t *x = &c->g->tensors[t];
    int64_t cnt = mi__tensor_numel(x);
    if (!x->data || cnt < 0 || cnt > MI__SI_MAX_VALUES) continue;
    if (x->nbytes < mi_dtype_bytes_for(x->dtype, cnt)) continue;
    double *v = malloc((size_t)(cnt ? cnt : 1) * sizeof *v);
    if (!v) continue;
    int ok = 1;
    for (int64_t i = 0; i < cnt && ok; i++) {
      switch (x->dtype) {
      case MI_DTYPE_FLOAT32: v[i] = ((const float *)x->data)[i]; break;
      default:
        if (mi__dtype_is_int(x->dtype) || x->dtype == MI_DTYPE_BOOL) v[i] = mi__int_load_f64(x->data, x->dtype, i);
        else
          ok = 0;
        break;
      }
    }
    if (!ok) {
      free(v);
      continue;
    }
    c->val[t] = v;
    c->val_n[t] = cnt;
  }
}

MI_API int32_t mi_graph_infer_shapes(mi_graph_t *g, mi_error_t *err) {
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "infer shapes: graph is NULL");
  int32_t rc = mi_graph_toposort(g, err);
  if (rc != MI_OK) return rc;
  mi__si_t c = {.g = g, .err = err};
  c.val = calloc((size_t)g->tensor_count + 1, sizeof *c.val);
  c.val_n = calloc((size_t)g->tensor_count + 1, sizeof *c.val_n);
  if (!c.val || !c.val_n) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "infer shapes: out of memory");
    goto done;
  }
  load_values(&c);
  for (int32_t i = 0; i < g->node_count && rc == MI_OK; i++) rc = lookup_and_run(&c, &g->nodes[i]);
done:
  if (c.val)
    for (int32_t t = 0; t < g->tensor_count; t++) free(c.val[t]);
  free(c.val);
  free(c.val_n);
  return rc;
}
