/* xf_quant.c - per-layer weight quantization (FP16, BF16, INT8, INT4) in the ONNX QDQ style, and
 * BF16 rounding of a layer's input, so the reference interpreter runs the real numerics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_sdk.h"
#include "ref/ref_ops.h"
#include "transform/xf_internal.h"

/* The output-channel axis of node n's weight. */
static int32_t weight_axis(const mi_graph_t *g, const mi_node_t *x) {
  const mi_tensor_t *w = &g->tensors[x->inputs[1]];
  if (strcmp(x->op_type, "Conv") == 0) return 0;
  if (strcmp(x->op_type, "Gemm") == 0) return mi_node_attr_int(x, "transB", 0) ? 0 : 1;
  return w->rank - 1; /* MatMul: B is [..., K, N] */
}

/* FP16: input `in` (the weight: 1) becomes a float16 initializer read through Cast(to=FLOAT);
 * deq, when given, gets the values the Cast gives. */
static int32_t to_fp16(mi_graph_t *g, int32_t n, int32_t in, float *deq) {
  int32_t w = g->nodes[n].inputs[in], rc = MI_ERR_OUT_OF_MEMORY, th, tf;
  int64_t cnt = mi__xf_numel(g, w), dims[MI_MAX_RANK];
  int32_t rank = g->tensors[w].rank;
  memcpy(dims, g->tensors[w].dims, sizeof dims);
  uint16_t *h = malloc((size_t)cnt * sizeof *h + 1);
  if (!h) return rc;
  for (int64_t i = 0; i < cnt; i++) {
    h[i] = mi__ref_float_to_half(((const float *)g->tensors[w].data)[i]);
    if (deq) deq[i] = mi__ref_half_to_float(h[i]);
  }
  th = mi__xf_add_const(g, g->nodes[n].name, in == 1 ? ".w_fp16" : ".r_fp16", MI_DTYPE_FLOAT16, rank, dims, h,
                        (size_t)cnt * sizeof *h);
  free(h);
  if (th < 0) return rc;
  if ((tf = mi__xf_add_value(g, g->nodes[n].name, in == 1 ? ".w_f32" : ".r_f32", w)) < 0) return rc;
  char name[256];
  snprintf(name, sizeof name, "%s.cast_%s", g->nodes[n].name, in == 1 ? "w" : "r");
  int32_t c = mi_graph_add_node(g, "Cast", name, 1, &th, 1, &tf);
  if (c < 0 || mi_node_set_int(g, c, "to", 1) != MI_OK) return rc;
  g->nodes[n].inputs[in] = tf;
  return MI_OK;
}

int32_t mi__xf_round_recurrent_fp16(mi_graph_t *g, int32_t n, mi_error_t *err) {
  int32_t rc = to_fp16(g, n, 1, NULL);
  if (rc == MI_OK) rc = to_fp16(g, n, 2, NULL);
  if (rc != MI_OK)
    return mi_errorf(err, rc, "quantize: node '%s': %s", g->nodes[n].name ? g->nodes[n].name : "?", mi_status_message(rc));
  return MI_OK;
}

/* BF16: the weight's values rounded to BF16, held as a FLOAT32 initializer (the IR computes in
 * FLOAT32; what a BF16 engine reads are exactly these values); deq, when given, gets them too. */
static int32_t to_bf16(mi_graph_t *g, int32_t n, float *deq) {
  int32_t w = g->nodes[n].inputs[1], rank = g->tensors[w].rank, t;
  int64_t cnt = mi__xf_numel(g, w), dims[MI_MAX_RANK];
  float *r = malloc((size_t)cnt * sizeof *r + 1);
  if (!r) return MI_ERR_OUT_OF_MEMORY;
  memcpy(dims, g->tensors[w].dims, sizeof dims); /* (adding a tensor may move the table) */
  for (int64_t i = 0; i < cnt; i++)
    r[i] = mi_sdk_bf16_to_float(mi_sdk_float_to_bf16(((const float *)g->tensors[w].data)[i]));
  if (deq) memcpy(deq, r, (size_t)cnt * sizeof *r);
  t = mi__xf_add_const(g, g->nodes[n].name, ".w_bf16", MI_DTYPE_FLOAT32, rank, dims, r, (size_t)cnt * sizeof *r);
  free(r);
  if (t < 0) return MI_ERR_OUT_OF_MEMORY;
  g->nodes[n].inputs[1] = t;
  return MI_OK;
}

int32_t mi__xf_round_input_bf16(mi_graph_t *g, int32_t n, mi_error_t *err) {
  int32_t x = g->nodes[n].inputs[0], tb, tf, c;
  char name[256];
  if (x < 0 || g->tensors[x].data) return MI_OK; /* a constant input: nothing runs per input */
  if ((tb = mi__xf_add_value(g, g->nodes[n].name, ".x_bf16", x)) < 0 ||
      (tf = mi__xf_add_value(g, g->nodes[n].name, ".x_f32", x)) < 0)
    goto oom;
  snprintf(name, sizeof name, "%s.cast_x_bf16", g->nodes[n].name);
  if ((c = mi_graph_add_node(g, "Cast", name, 1, &x, 1, &tb)) < 0 || mi_node_set_int(g, c, "to", 16) != MI_OK)
    goto oom;
  snprintf(name, sizeof name, "%s.cast_x_f32", g->nodes[n].name);
  if ((c = mi_graph_add_node(g, "Cast", name, 1, &tb, 1, &tf)) < 0 || mi_node_set_int(g, c, "to", 1) != MI_OK)
    goto oom;
  g->nodes[n].inputs[0] = tf;
  return MI_OK;
oom:
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "bf16: node '%s': out of memory", g->nodes[n].name);
}

/* INT8 / INT4 symmetric: W_q (int8), scale, zero point 0 -> DequantizeLinear -> W. */
static int32_t to_int(mi_graph_t *g, int32_t n, int32_t bits4, int32_t per_channel, float *deq) {
  int32_t w = g->nodes[n].inputs[1], rc = MI_ERR_OUT_OF_MEMORY, axis = weight_axis(g, &g->nodes[n]);
  int32_t rank = g->tensors[w].rank, tq, ts, tz, tf, dq;
  int64_t cnt = mi__xf_numel(g, w), dims[MI_MAX_RANK], ch, inner = 1, sdim;
  const float *wv = g->tensors[w].data;
  const float qmax = bits4 ? 7.0f : 127.0f;
  memcpy(dims, g->tensors[w].dims, sizeof dims);
  ch = per_channel ? dims[axis] : 1;
  for (int32_t d = axis + 1; d < rank; d++) inner *= dims[d];
  float *scale = calloc((size_t)ch, sizeof *scale);
  int8_t *q = malloc((size_t)cnt + 1), *zp = calloc((size_t)ch, 1);
  if (!scale || !q || !zp) goto done;
  for (int64_t i = 0; i < cnt; i++) {
    int64_t c = per_channel ? (i / inner) % ch : 0;
    float a = fabsf(wv[i]);
    if (a > scale[c]) scale[c] = a;
  }
  /* An all-zero channel (padding) keeps scale 1 so dequantization stays finite. */
  for (int64_t c = 0; c < ch; c++) scale[c] = scale[c] > 0.0f ? scale[c] / qmax : 1.0f;
  for (int64_t i = 0; i < cnt; i++) {
    int64_t c = per_channel ? (i / inner) % ch : 0;
    float v = rintf(wv[i] / scale[c]);
    q[i] = (int8_t)(v > qmax ? qmax : v < -qmax ? -qmax
                                                : v);
    if (deq) deq[i] = (float)((double)q[i] * (double)scale[c]); /* as DequantizeLinear */
  }
  sdim = ch;
  tq = mi__xf_add_const(g, g->nodes[n].name, bits4 ? ".w_int4" : ".w_int8", MI_DTYPE_INT8, rank,
                        dims, q, (size_t)cnt);
  ts = mi__xf_add_const(g, g->nodes[n].name, ".w_scale", MI_DTYPE_FLOAT32, per_channel ? 1 : 0,
                        &sdim, scale, (size_t)ch * sizeof *scale);
  tz = mi__xf_add_const(g, g->nodes[n].name, ".w_zero", MI_DTYPE_INT8, per_channel ? 1 : 0, &sdim,
                        zp, (size_t)ch);
  if (tq < 0 || ts < 0 || tz < 0 || (tf = mi__xf_add_value(g, g->nodes[n].name, ".w_dq", w)) < 0)
    goto done;
  /* Plugins read the quantization from the tensor fields. */
  mi_tensor_t *tt = &g->tensors[tq];
  if (per_channel) {
    tt->channel_axis = axis;
    tt->channel_count = (uint32_t)ch;
    tt->channel_scales = malloc((size_t)ch * sizeof *scale);
    if (!tt->channel_scales) goto done;
    memcpy(tt->channel_scales, scale, (size_t)ch * sizeof *scale);
    tt->scale = 0.0f;
    for (int64_t c = 0; c < ch; c++)
      if (scale[c] > tt->scale) tt->scale = scale[c]; /* nonzero: "quantized" */
  } else {
    tt->scale = scale[0];
  }
  tt->zero_point = 0;
  tt->value_bits = bits4 ? 4 : 0;
  char name[256];
  int32_t ins[3] = {tq, ts, tz};
  snprintf(name, sizeof name, "%s.dq_w", g->nodes[n].name);
  if ((dq = mi_graph_add_node(g, "DequantizeLinear", name, 3, ins, 1, &tf)) < 0) goto done;
  if (per_channel && mi_node_set_int(g, dq, "axis", axis) != MI_OK) goto done;
  g->nodes[n].inputs[1] = tf;
  rc = MI_OK;
done:
  free(scale);
  free(q);
  free(zp);
  return rc;
}

int32_t mi__xf_quantize_weights(mi_graph_t *g, int32_t n, const mi_xf_layer_t *l, float *deq,
                                mi_xf_stats_t *st, mi_error_t *err) {
  int32_t rc = MI_OK;
  if (!mi__xf_is_weighted(g, n)) return MI_OK;
  switch (l->weights) {
  case MI_XF_FP16: rc = to_fp16(g, n, 1, deq); break;
  case MI_XF_BF16: rc = to_bf16(g, n, deq); break;
  case MI_XF_INT8: rc = to_int(g, n, 0, l->scales == MI_XF_PER_CHANNEL, deq); break;
  case MI_XF_INT4: rc = to_int(g, n, 1, l->scales == MI_XF_PER_CHANNEL, deq); break;
  default: break;
  }
  if (rc != MI_OK)
    return mi_errorf(err, rc, "quantize: node '%s': %s", g->nodes[n].name, mi_status_message(rc));
  if (l->weights != MI_XF_FP32 && st) st->quantized_layers++;
  return MI_OK;
}
