/* npu_geom.c - per-op attribute checks and the geometry the cycle model and executors need. */
#include "npu_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int32_t refuse(mi_error_t *err, const npu_node_t *n, const char *what) {
  return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "npu-stub: node '%.60s': %s", n->name, what);
}

static double align_up(double v, int a) { return ceil(v / a) * a; }

static int get_ints(const mi_node_desc_t *nd, const char *name, int64_t *out, int count) {
  const mi_attr_t *a = mi_sdk_attr(nd, name);
  int i;
  if (!a) return 0;
  if (a->type != MI_ATTR_INTS || a->count != count || !a->ints) return -1;
  for (i = 0; i < count; i++) out[i] = a->ints[i];
  return 1;
}

/* Window geometry of Conv and pools: kernel, strides, dilations and pads (auto_pad resolved
 * against the output size the host inferred). */
static int32_t window(npu_node_t *n, const mi_node_desc_t *nd, const npu_tensor_t *x,
                      const npu_tensor_t *y, int64_t kh, int64_t kw, mi_error_t *err) {
  int64_t v[4];
  int mode = mi_sdk_auto_pad_from_name(mi_sdk_attr_string(nd, "auto_pad", "NOTSET"));
  int64_t H = x->dims[2], W = x->dims[3], Ho = y->dims[2], Wo = y->dims[3];
  n->kh = kh;
  n->kw = kw;
  n->sh = n->sw = n->dh = n->dw = 1;
  n->pt = n->pl = n->pb = n->pr = 0;
  if (get_ints(nd, "strides", v, 2) < 0 || get_ints(nd, "dilations", v + 2, 2) < 0)
    return refuse(err, n, "strides/dilations must list 2 values");
  if (get_ints(nd, "strides", v, 2) > 0) {
    n->sh = v[0];
    n->sw = v[1];
  }
  if (get_ints(nd, "dilations", v, 2) > 0) {
    n->dh = v[0];
    n->dw = v[1];
  }
  if (n->sh < 1 || n->sw < 1 || n->dh < 1 || n->dw < 1)
    return refuse(err, n, "strides and dilations must be positive");
  if (mode == MI_SDK_AUTO_PAD_NOTSET) {
    int r = get_ints(nd, "pads", v, 4);
    if (r < 0) return refuse(err, n, "pads must list 4 values");
    if (r > 0) {
      n->pt = v[0];
      n->pl = v[1];
      n->pb = v[2];
      n->pr = v[3];
    }
  } else if (mode == MI_SDK_AUTO_PAD_SAME_UPPER || mode == MI_SDK_AUTO_PAD_SAME_LOWER) {
    mi_sdk_same_pads(mode, (Ho - 1) * n->sh + (kh - 1) * n->dh + 1 - H, &n->pt, &n->pb);
    mi_sdk_same_pads(mode, (Wo - 1) * n->sw + (kw - 1) * n->dw + 1 - W, &n->pl, &n->pr);
  } else if (mode != MI_SDK_AUTO_PAD_VALID) {
    return refuse(err, n, "unknown auto_pad");
  }
  if (n->pt < 0 || n->pl < 0 || n->pb < 0 || n->pr < 0) return refuse(err, n, "negative pads");
  {
    /* ceil_mode may add one output row/col past the pads: the executors clip windows */
    int64_t eh = H + n->pt + n->pb - ((kh - 1) * n->dh + 1);
    int64_t ew = W + n->pl + n->pr - ((kw - 1) * n->dw + 1);
    if (eh < 0 || ew < 0) return refuse(err, n, "window larger than the padded input");
    if (Ho != eh / n->sh + 1 && Ho != (eh + n->sh - 1) / n->sh + 1)
      return refuse(err, n, "output height does not match the window");
    if (Wo != ew / n->sw + 1 && Wo != (ew + n->sw - 1) / n->sw + 1)
      return refuse(err, n, "output width does not match the window");
  }
  return MI_OK;
}

static int is_float(int32_t dt) { return dt == MI_DTYPE_FLOAT32 || dt == MI_DTYPE_FLOAT16; }

/* Weights must be constant, in the path's dtype, with per-channel scales along `axis`. */
static int32_t check_weight(const mi_kernel_t *k, const npu_node_t *n, const npu_tensor_t *w,
                            int64_t channels, mi_error_t *err) {
  if (k->fp) {
    if (!is_float(w->dtype)) return refuse(err, n, "FP16 path needs FLOAT32/FLOAT16 weights");
    return MI_OK;
  }
  if (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_INT4)
    return refuse(err, n, "INT8 path needs INT8 or INT4 weights");
  if (w->ccount > 0 && (int64_t)w->ccount != channels)
    return refuse(err, n, "per-channel weight scales must run along the output channels");
  if (w->ccount == 0 && !(w->scale > 0)) return refuse(err, n, "weights have no scale");
  return MI_OK;
}

static int32_t check_bias(const mi_kernel_t *k, const npu_node_t *n, const npu_tensor_t *b,
                          int64_t channels, int allow_full, int64_t full, mi_error_t *err) {
  if (!b->is_const) return refuse(err, n, "bias must be constant");
  if (b->numel != channels && b->numel != 1 && !(allow_full && b->numel == full))
    return refuse(err, n, "bias shape is not per output channel");
  if (k->fp ? !is_float(b->dtype) : (b->dtype != MI_DTYPE_INT32 && b->dtype != MI_DTYPE_FLOAT32))
    return refuse(err, n, "bias dtype must be INT32 or FLOAT32 (INT8) / float (FP16)");
  return MI_OK;
}

static int32_t setup_conv(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n,
                          const mi_node_desc_t *nd, mi_error_t *err) {
  const npu_tensor_t *x = &k->t[n->in[0]], *w, *y = &k->t[n->out];
  int64_t cin, cout, cin_g, cout_g, ks[2];
  double ab = k->fp ? 2 : 1, wb;
  int32_t rc;
  if (n->nin < 2 || n->in[1] < 0) return refuse(err, n, "Conv needs weights");
  w = &k->t[n->in[1]];
  if (!w->is_const) return refuse(err, n, "Conv weights must be constant");
  if (x->rank != 4 || w->rank != 4 || y->rank != 4) return refuse(err, n, "only 2-D Conv");
  n->group = mi_sdk_attr_int(nd, "group", 1);
  cin = x->dims[1];
  cout = w->dims[0];
  if (n->group < 1 || cin % n->group || cout % n->group || w->dims[1] * n->group != cin ||
      y->dims[1] != cout || y->dims[0] != x->dims[0])
    return refuse(err, n, "channels do not match group and weights");
  if (get_ints(nd, "kernel_shape", ks, 2) > 0 && (ks[0] != w->dims[2] || ks[1] != w->dims[3]))
    return refuse(err, n, "kernel_shape does not match the weights");
  rc = window(n, nd, x, y, w->dims[2], w->dims[3], err);
  if (rc != MI_OK) return rc;
  rc = check_weight(k, n, w, cout, err);
  if (rc != MI_OK) return rc;
  if (n->nin > 2 && n->in[2] >= 0) {
    rc = check_bias(k, n, &k->t[n->in[2]], cout, 0, 0, err);
    if (rc != MI_OK) return rc;
  }
  cin_g = cin / n->group;
  cout_g = cout / n->group;
  wb = k->fp ? 2 : (w->dtype == MI_DTYPE_INT4 ? 0.5 : 1);
  n->mac.m = (double)(y->dims[0] * y->dims[2] * y->dims[3]);
  if (cin_g == 1 && cout_g == 1) {
    /* depthwise: channels map onto the array columns, the window taps onto its rows */
    n->mac.groups = 1;
    n->mac.c = (double)cout;
    n->mac.k = n->mac.kpad = (double)(n->kh * n->kw);
  } else {
    n->mac.groups = (double)n->group;
    n->mac.c = (double)cout_g;
    n->mac.k = (double)(cin_g * n->kh * n->kw);
    n->mac.kpad = align_up((double)cin_g, s->channel_align) * (double)(n->kh * n->kw);
  }
  n->mac.cpad = align_up(n->mac.c, s->channel_align);
  n->mac.w_bytes = (double)w->numel * wb;
  n->mac.w_per_channel = n->mac.kpad * wb;
  n->mac.in_bytes = (double)x->numel * ab;
  n->mac.out_bytes = (double)y->numel * ab;
  n->mac.in_band = align_up((double)cin, s->channel_align) * (double)(n->kh * x->dims[3]) * ab;
  n->mac.out_band_per_channel = (double)y->dims[3] * ab;
  return MI_OK;
}

static int32_t setup_matmul(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n,
                            const mi_node_desc_t *nd, mi_error_t *err) {
  const npu_tensor_t *a, *b, *y = &k->t[n->out];
  int64_t M, K, N, batch = 1;
  int32_t i, rc;
  double ab = k->fp ? 2 : 1, wb;
  if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0) return refuse(err, n, "needs two inputs");
  a = &k->t[n->in[0]];
  b = &k->t[n->in[1]];
  n->alpha = n->beta = 1;
  if (n->op == NPU_GEMM) {
    n->trans_a = (int)mi_sdk_attr_int(nd, "transA", 0);
    n->trans_b = (int)mi_sdk_attr_int(nd, "transB", 0);
    n->alpha = mi_sdk_attr_float(nd, "alpha", 1.0f);
    n->beta = mi_sdk_attr_float(nd, "beta", 1.0f);
    if (a->rank != 2 || b->rank != 2) return refuse(err, n, "Gemm needs 2-D inputs");
  } else if (a->rank < 2 || (b->rank != 2 && b->rank != a->rank)) {
    return refuse(err, n, "MatMul needs A of rank >= 2 and B of rank 2 or A's rank");
  }
  M = a->dims[a->rank - (n->trans_a ? 1 : 2)];
  K = a->dims[a->rank - (n->trans_a ? 2 : 1)];
  N = b->dims[b->rank - (n->trans_b ? 2 : 1)];
  if (b->dims[b->rank - (n->trans_b ? 1 : 2)] != K) return refuse(err, n, "inner dims differ");
  for (i = 0; i < a->rank - 2; i++) {
    batch *= a->dims[i];
    if (b->rank == a->rank && b->dims[i] != a->dims[i])
      return refuse(err, n, "batched MatMul needs equal batch dims");
  }
  if (y->numel != batch * M * N) return refuse(err, n, "output shape does not match");
  if (b->is_const) {
    rc = check_weight(k, n, b, N, err);
    if (rc != MI_OK) return rc;
  } else if (k->fp ? !is_float(b->dtype) : b->dtype != MI_DTYPE_INT8) {
    return refuse(err, n, "B has the wrong dtype");
  }
  if (!k->fp && n->alpha <= 0) return refuse(err, n, "INT8 Gemm needs alpha > 0");
  if (n->op == NPU_GEMM && n->nin > 2 && n->in[2] >= 0) {
    const npu_tensor_t *c = &k->t[n->in[2]];
    rc = check_bias(k, n, c, N, 1, M * N, err);
    if (rc != MI_OK) return rc;
    if (!k->fp && c->dtype == MI_DTYPE_INT32 && n->beta != 1.0f)
      return refuse(err, n, "INT32 bias needs beta = 1");
  }
  wb = k->fp ? 2 : (b->dtype == MI_DTYPE_INT4 ? 0.5 : 1);
  n->mac.groups = b->rank == 2 ? 1 : (double)batch;
  n->mac.m = (double)M * (b->rank == 2 ? (double)batch : 1);
  n->mac.k = (double)K;
  n->mac.kpad = align_up((double)K, s->channel_align);
  n->mac.c = (double)N;
  n->mac.cpad = align_up((double)N, s->channel_align);
  n->mac.w_bytes = (double)b->numel * wb;
  n->mac.w_per_channel = n->mac.kpad * wb;
  n->mac.in_bytes = (double)a->numel * ab;
  n->mac.out_bytes = (double)y->numel * ab;
  n->mac.in_band = n->mac.kpad * ab;
  n->mac.out_band_per_channel = ab;
  return MI_OK;
}

static int is_codes(int32_t dt) { return dt == MI_DTYPE_INT8 || dt == MI_DTYPE_UINT8; }

/* QuantizeLinear (float -> codes) and DequantizeLinear (codes -> float): constant FP32 scales,
 * an optional constant zero point of the codes' dtype, one per scale; several scales run along
 * `axis` (per-axis quantization costs one index division per element, so it is kept). */
static int32_t setup_qdq(mi_kernel_t *k, npu_node_t *n, const mi_node_desc_t *nd,
                         mi_error_t *err) {
  const npu_tensor_t *x = &k->t[n->in[0]], *y = &k->t[n->out], *sc, *zp = NULL;
  const npu_tensor_t *codes = n->op == NPU_QUANT ? y : x, *flt = n->op == NPU_QUANT ? x : y;
  int32_t d;
  if (!k->conv) return refuse(err, n, "QuantizeLinear/DequantizeLinear must be a kernel alone");
  if (!is_codes(codes->dtype))
    return refuse(err, n, "codes must be INT8 or UINT8 (INT32, INT4 and FP8 codes are not)");
  if (!is_float(flt->dtype)) return refuse(err, n, "the float side must be FLOAT32 or FLOAT16");
  if (x->numel != y->numel || x->rank != y->rank) return refuse(err, n, "shape mismatch");
  if (mi_sdk_attr_int(nd, "block_size", 0) != 0)
    return refuse(err, n, "blocked quantization (block_size) is not supported");
  if (n->nin < 2 || n->in[1] < 0) return refuse(err, n, "needs a scale");
  sc = &k->t[n->in[1]];
  if (!sc->is_const || sc->dtype != MI_DTYPE_FLOAT32 || !sc->f || sc->numel < 1)
    return refuse(err, n, "scale must be a constant FLOAT32");
  for (d = 0; d < sc->numel; d++)
    if (!(sc->f[d] > 0) || !isfinite(sc->f[d])) return refuse(err, n, "scales must be positive");
  if (n->nin > 2 && n->in[2] >= 0) {
    zp = &k->t[n->in[2]];
    if (!zp->is_const || zp->dtype != codes->dtype || !zp->q || zp->numel != sc->numel)
      return refuse(err, n, "zero point must be constant, of the codes' dtype, one per scale");
  } else if (n->op == NPU_QUANT && codes->dtype != MI_DTYPE_UINT8) {
    return refuse(err, n, "QuantizeLinear without a zero point writes UINT8");
  }
  n->qinner = 1;
  n->qdim = 1;
  if (sc->numel > 1 || sc->rank > 1) {
    int64_t axis = mi_sdk_attr_int(nd, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank || x->dims[axis] != sc->numel)
      return refuse(err, n, "per-axis scale count does not match the axis");
    n->qdim = sc->numel;
    for (d = (int32_t)axis + 1; d < x->rank; d++) n->qinner *= x->dims[d];
  }
  n->qlo = codes->dtype == MI_DTYPE_UINT8 ? 0 : -128;
  n->qhi = codes->dtype == MI_DTYPE_UINT8 ? 255 : 127;
  return MI_OK;
}

static int32_t setup_vec(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n,
                         const mi_node_desc_t *nd, mi_error_t *err) {
  const npu_tensor_t *x = &k->t[n->in[0]], *y = &k->t[n->out];
  double pad = 1;
  int32_t i, r;
  if (y->rank == 4) pad = align_up((double)y->dims[1], s->channel_align) / (double)y->dims[1];
  n->vec_ops = (double)y->numel * pad;
  for (i = 0; i < n->nin; i++)
    if (n->in[i] >= 0 && !k->t[n->in[i]].is_const && k->t[n->in[i]].dtype == MI_DTYPE_INT64)
      return refuse(err, n, "runtime shape operands are not supported");
  switch (n->op) {
  case NPU_CLIP:
    n->fmin = mi_sdk_attr_float(nd, "min", -INFINITY);
    n->fmax = mi_sdk_attr_float(nd, "max", INFINITY);
    for (i = 1; i < 3 && i < n->nin; i++) {
      const npu_tensor_t *b;
      double v;
      if (n->in[i] < 0) continue;
      b = &k->t[n->in[i]];
      if (!b->is_const || b->numel != 1) return refuse(err, n, "Clip bounds must be constants");
      if (b->f) v = b->f[0];
      else if (b->q)
        v = (double)b->scale * (b->q[0] - b->zp);
      else
        return refuse(err, n, "Clip bounds must be float or INT8");
      if (i == 1) n->fmin = (float)v;
      else
        n->fmax = (float)v;
    }
    /* fallthrough */
  case NPU_RELU:
  case NPU_HARDSWISH:
  case NPU_HARDSIGMOID:
  case NPU_SIGMOID:
    n->alpha = mi_sdk_attr_float(nd, "alpha", 0.2f);
    n->beta = mi_sdk_attr_float(nd, "beta", 0.5f);
    if (x->numel != y->numel) return refuse(err, n, "shape mismatch");
    return MI_OK;
  case NPU_ADD:
  case NPU_MUL:
    if (n->nin != 2 || n->in[1] < 0) return refuse(err, n, "needs two inputs");
    for (i = 0; i < 2; i++) {
      const npu_tensor_t *a = &k->t[n->in[i]];
      int32_t d;
      if (a->rank > y->rank) return refuse(err, n, "broadcast rank too large");
      for (d = 0; d < a->rank; d++) {
        int64_t ad = a->dims[a->rank - 1 - d], yd = y->dims[y->rank - 1 - d];
        if (ad != 1 && ad != yd) return refuse(err, n, "inputs do not broadcast to the output");
      }
      if (a->is_const && (k->fp ? !a->f : !a->q))
        return refuse(err, n, "constant operand has the wrong dtype");
    }
    return MI_OK;
  case NPU_GAP:
  case NPU_AVGPOOL:
  case NPU_MAXPOOL: {
    int64_t ks[2] = {1, 1};
    if (x->rank != 4 || y->rank != 4 || x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1])
      return refuse(err, n, "pools need 4-D NCHW input and output");
    if (n->op == NPU_GAP) {
      n->vec_ops = (double)x->numel * pad;
      return MI_OK;
    }
    if (nd->output_count > 1 && nd->outputs[1] >= 0)
      return refuse(err, n, "MaxPool Indices output is not supported");
    r = get_ints(nd, "kernel_shape", ks, 2);
    if (r <= 0) return refuse(err, n, "pools need a 2-D kernel_shape");
    n->count_include_pad = (int)mi_sdk_attr_int(nd, "count_include_pad", 0);
    n->vec_ops *= (double)(ks[0] * ks[1]);
    return window(n, nd, x, y, ks[0], ks[1], err);
  }
  case NPU_BN:
    if (mi_sdk_attr_int(nd, "training_mode", 0)) return refuse(err, n, "training mode");
    if (x->rank < 2 || n->nin < 5) return refuse(err, n, "BatchNormalization needs 5 inputs");
    for (i = 1; i < 5; i++) {
      const npu_tensor_t *p = n->in[i] >= 0 ? &k->t[n->in[i]] : NULL;
      if (!p || !p->is_const || !p->f || p->numel != x->dims[1])
        return refuse(err, n, "BN parameters must be constant float per channel");
    }
    n->eps = mi_sdk_attr_float(nd, "epsilon", 1e-5f);
    return MI_OK;
  case NPU_QUANT:
  case NPU_DEQUANT: return setup_qdq(k, n, nd, err); /* one vector op per element */
  case NPU_FLATTEN:
  case NPU_RESHAPE:
    n->vec_ops = 0; /* a view: only DMA */
    if (x->numel != y->numel) return refuse(err, n, "element counts differ");
    return MI_OK;
  default: { /* Concat */
    int64_t sum = 0;
    n->vec_ops = 0;
    n->axis = (int)mi_sdk_attr_int(nd, "axis", 1);
    if (n->axis < 0) n->axis += y->rank;
    if (n->axis < 0 || n->axis >= y->rank) return refuse(err, n, "bad Concat axis");
    for (i = 0; i < n->nin; i++) {
      int32_t d;
      const npu_tensor_t *a = n->in[i] >= 0 ? &k->t[n->in[i]] : NULL;
      if (!a || a->rank != y->rank) return refuse(err, n, "Concat inputs need the output rank");
      if (a->is_const && (k->fp ? !a->f : !a->q))
        return refuse(err, n, "constant operand has the wrong dtype");
      for (d = 0; d < y->rank; d++)
        if (d != n->axis && a->dims[d] != y->dims[d]) return refuse(err, n, "shape mismatch");
      sum += a->dims[n->axis];
    }
    if (sum != y->dims[n->axis]) return refuse(err, n, "Concat sizes do not add up");
    return MI_OK;
  }
  }
}

int32_t npu__node_setup(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n,
                        const mi_node_desc_t *nd, const mi_kernel_desc_t *desc, mi_error_t *err) {
  int32_t i;
  n->op = npu__op_from_name(nd->op_type);
  snprintf(n->name, sizeof n->name, "%s", nd->name ? nd->name : nd->op_type);
  if (nd->input_count < 1 || nd->input_count > NPU_MAX_NODE_INPUTS || nd->output_count < 1 ||
      !nd->inputs || !nd->outputs)
    return refuse(err, n, "unexpected number of inputs or outputs");
  n->nin = nd->input_count;
  for (i = 0; i < n->nin; i++) {
    n->in[i] = nd->inputs[i];
    if (n->in[i] >= desc->tensor_count || n->in[i] < -1)
      return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: node input index out of range");
  }
  n->out = nd->outputs[0];
  if (n->out < 0 || n->out >= desc->tensor_count || n->in[0] < 0)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: node output index out of range");
  if (k->t[n->out].is_const) return refuse(err, n, "output is a constant");
  if (!k->t[n->in[0]].q && !k->t[n->in[0]].f) return refuse(err, n, "first input has no data");
  if (n->op == NPU_CONV) return setup_conv(s, k, n, nd, err);
  if (n->op == NPU_GEMM || n->op == NPU_MATMUL) return setup_matmul(s, k, n, nd, err);
  return setup_vec(s, k, n, nd, err);
}

/* SRAM a tile of `t` output channels occupies on one core. */
static double footprint(const mi_kernel_t *k, const npu_mac_t *m, double t) {
  return (t * m->w_per_channel + m->in_band + t * m->out_band_per_channel) *
         (k->dma_overlap ? 2 : 1);
}

int32_t npu__choose_tile(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n, mi_error_t *err) {
  double sram = s->sram_kib * 1024, t;
  npu_mac_t *m = &n->mac;
  if (k->sram_tile > 0) {
    t = k->sram_tile < m->cpad ? k->sram_tile : m->cpad;
    if (footprint(k, m, t) > sram) {
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "npu-stub: sram_tile=%d for node '%.40s' needs %.0f KiB of SRAM per core (%s), "
                           "%s has %.0f KiB",
                           k->sram_tile, n->name, footprint(k, m, t) / 1024,
                           k->dma_overlap ? "x2 for dma_overlap" : "single-buffered", s->name, s->sram_kib);
    }
  } else {
    for (t = m->cpad; t > s->channel_align && footprint(k, m, t) > sram; t -= s->channel_align) {
    }
    if (footprint(k, m, t) > sram)
      return refuse(err, n, "layer does not fit the core SRAM even at the smallest tile");
  }
  m->tile = (int)t;
  return MI_OK;
}
