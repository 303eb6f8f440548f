/* blis_qlut.c - a quantized elementwise chain, DequantizeLinear -> elementwise float ops whose
 * other operands are constants (scalars or one value per channel) -> QuantizeLinear, run as one
 * 256-entry table per channel on the codes (docs/abi.md, "Quantized elementwise chains"). The
 * table is the chain evaluated once per code at prepare with the reference interpreter's
 * formulas (framework/src/ref: ref_quant.c, ref_elementwise.c), in the same float and double
 * arithmetic, so the codes are the reference's. QDQ exports put such chains between all their
 * quantized layers (LeakyRelu and a clamp, hard-swish written out, per-channel scale and shift):
 * a lookup per byte instead of dequantizing, one pass per float op and quantizing again.
 * A Concat of the chain's value with constants may end the chain (after its MaxPool, if any):
 * the table writes its planes into their channels of the output, and the constants' codes,
 * quantized once at prepare with the Q's formula, are copied into theirs (the zero channels a
 * residual branch is widened with become the zero point's code). A constant-mode Pad of the
 * spatial dims may end the chain instead: the table writes each row into the padded plane, whose
 * border is the pad value's code (a TF export's explicit padding before a stride-2 depthwise
 * conv, which otherwise ran as dequantize, clamp, pad and quantize over a float plane). */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blis_qgemm.h"

typedef struct qlut {
  int32_t x, y, xf;             /* xf: the DequantizeLinear's value when read outside the chain, else -1 */
  int64_t planes, hw, channels; /* element i: channel (i / hw) % channels */
  int32_t pool;                 /* 1: a MaxPool ends the chain; the table writes its input */
  uint8_t flip;                 /* 0x80 for INT8 codes pooled in unsigned order, else 0 */
  int32_t vbmi;                 /* look up 64 codes at a time with vpermi2b (AVX-512 VBMI) */
  int32_t simd, zx, x_u8;       /* xf's rows: mi__blis_dq_row of the codes (the table's first values) */
  float sx;
  mi__blis_qpool_t qp;
  uint8_t *codes; /* pool mode: the table's codes, planes x hw (the step's aux) */
  /* The output: batch x out_ch planes of out_hw codes; the chain's planes start at channel
   * cat_off. A Concat's constant inputs: cat_n of them, cat_ch[k] channels at cat_at[k], their
   * codes batch x cat_ch[k] x out_hw each, back to back in cat_codes. */
  int64_t out_ch, out_hw, cat_off, batch;
  int32_t cat_n;
  int64_t cat_ch[8], cat_at[8];
  uint8_t *cat_codes; /* after the table (the step's state) */
  /* A Pad ending the chain (pad): planes of ih x iw codes into oh x ow planes at (top, left),
   * the rest pad_code. */
  int32_t pad;
  uint8_t pad_code;
  int64_t ih, iw, oh, ow, top, left;
  uint8_t table[]; /* channels x 256, indexed by the code's byte */
} qlut_t;

typedef struct qlut_task {
  const qlut_t *q;
  const uint8_t *x;
  uint8_t *y;
  float *xf;
} qlut_task_t;

/* y[i] = tab[x[i]], 64 codes a step: two vpermi2b look up the low and the high 128 entries
 * (index bits 0..6), bit 7 of the code picks between them. The scalar loop ran at one byte a
 * cycle or worse and was a tenth of a QDQ detector's run. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void lut_row_vbmi(const uint8_t *tab, const uint8_t *x,
                                                                                uint8_t *y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(tab), t1 = _mm512_loadu_si512(tab + 64);
  const __m512i t2 = _mm512_loadu_si512(tab + 128), t3 = _mm512_loadu_si512(tab + 192);
  for (int64_t i = 0; i < n; i += 64) {
    __mmask64 k = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
    __m512i v = _mm512_maskz_loadu_epi8(k, x + i);
    __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(y + i, k, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
}

void mi__blis_lut_row(int32_t vbmi, const uint8_t *tab, const uint8_t *x, uint8_t *y, int64_t n) {
  if (vbmi) lut_row_vbmi(tab, x, y, n);
  else
    for (int64_t i = 0; i < n; i++) y[i] = tab[x[i]];
}

/* One plane into its padded plane: border rows whole, then each row's ends around its lookup. */
static void lut_pad_plane(const qlut_t *q, const uint8_t *tab, const uint8_t *x, uint8_t *y) {
  int64_t right = q->ow - q->left - q->iw;
  memset(y, q->pad_code, (size_t)(q->top * q->ow));
  for (int64_t r = 0; r < q->ih; r++) {
    uint8_t *yr = y + (q->top + r) * q->ow;
    memset(yr, q->pad_code, (size_t)q->left);
    mi__blis_lut_row(q->vbmi, tab, x + r * q->iw, yr + q->left, q->iw);
    memset(yr + q->left + q->iw, q->pad_code, (size_t)right);
  }
  memset(y + (q->top + q->ih) * q->ow, q->pad_code, (size_t)((q->oh - q->top - q->ih) * q->ow));
}

static void qlut_part(void *arg, int64_t b, int64_t e) {
  const qlut_task_t *t = arg;
  const qlut_t *q = t->q;
  for (int64_t p = b; p < e; p++) {
    const uint8_t *tab = q->table + ((p % q->channels) << 8);
    const uint8_t *x = t->x + p * q->hw;
    uint8_t *yo = t->y + ((p / q->channels) * q->out_ch + q->cat_off + p % q->channels) * q->out_hw;
    if (q->pad) {
      lut_pad_plane(q, tab, x, yo);
      if (t->xf) mi__blis_dq_row(q->simd, x, t->xf + p * q->hw, q->hw, q->sx, q->zx, q->x_u8);
      continue;
    }
    uint8_t *y = q->pool ? q->codes + p * q->hw : yo;
    mi__blis_lut_row(q->vbmi, tab, x, y, q->hw);
    if (q->pool) {
      uint8_t *yp = yo;
      mi__blis_qpool_plane(&q->qp, y, yp);
      if (q->flip)
        for (int64_t i = 0; i < q->qp.OH * q->qp.OW; i++) yp[i] ^= q->flip;
    }
    if (t->xf) mi__blis_dq_row(q->simd, x, t->xf + p * q->hw, q->hw, q->sx, q->zx, q->x_u8);
  }
}

static int32_t run_qlut(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  qlut_task_t qt;
  qt.q = s->state;
  qt.x = t[qt.q->x];
  qt.y = t[qt.q->y];
  qt.xf = qt.q->xf >= 0 ? t[qt.q->xf] : NULL;
  (void)err;
  mi__blis_parallel(env, qt.q->planes, 1, qt.q->hw, qlut_part, &qt);
  for (int64_t n = 0, at = 0; n < qt.q->batch; n++)
    for (int32_t k = 0; k < qt.q->cat_n; k++) {
      int64_t bytes = qt.q->cat_ch[k] * qt.q->out_hw;
      memcpy(qt.y + (n * qt.q->out_ch + qt.q->cat_at[k]) * qt.q->out_hw, qt.q->cat_codes + at, (size_t)bytes);
      at += bytes;
    }
  return MI_OK;
}

/* A per-tensor scale and zero point (constants) of Q/DQ node n for codes of dtype dt. */
static int qparams(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t dt, float *s, int32_t *z) {
  const mi_tensor_desc_t *st = mi__blis_tensor(p, mi__blis_in(n, 1)), *zt = mi__blis_tensor(p, mi__blis_in(n, 2));
  if (!st || !st->data || st->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(st) != 1) return 0;
  *s = *(const float *)st->data;
  *z = 0;
  if (zt) {
    if (!zt->data || zt->dtype != dt || mi_sdk_numel(zt) != 1) return 0;
    *z = dt == MI_DTYPE_UINT8 ? *(const uint8_t *)zt->data : *(const int8_t *)zt->data;
  }
  return *s > 0.f;
}

/* Operand `slot` of node n for channel c: a chain value (vals[t] holds channels x 256) or a
 * constant that is one value, or one per channel along axis 1 of the chain's shape. NULL when
 * it is neither. *stride: 1 when the pointer walks the 256 codes, 0 for a constant. */
static const float *operand(const mi__blis_prep_t *p, float *const *vals, const mi_node_desc_t *n, int32_t slot,
                            int32_t rank, int64_t c, int *stride) {
  int32_t t = mi__blis_in(n, slot);
  const mi_tensor_desc_t *d = mi__blis_tensor(p, t);
  int64_t numel;
  if (!d) return NULL;
  if (vals[t]) {
    *stride = 1;
    return vals[t] + (c << 8);
  }
  if (!d->data || d->dtype != MI_DTYPE_FLOAT32 || d->rank > rank) return NULL;
  *stride = 0;
  numel = mi_sdk_numel(d);
  if (numel == 1) return d->data;
  /* [.., C, 1, .., 1] aligned to the right: its channel dimension is axis 1 of the chain's. */
  for (int32_t k = 0; k < d->rank; k++) {
    int32_t axis = rank - d->rank + k;
    if (d->dims[k] != 1 && axis != 1) return NULL;
  }
  return (const float *)d->data + (numel > 1 ? c : 0);
}

static float sigmoid_ref(float x) { /* ref_elementwise.c's two forms */
  if (x >= 0) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

/* One chain node over the 256 codes of channel c (ref_elementwise.c's formulas). */
static int eval_node(const mi__blis_prep_t *p, float *const *vals, const mi_node_desc_t *n, int32_t rank,
                     int64_t c, int64_t channels, float *y) {
  const char *op = n->op_type;
  int sa = 0, sb = 0;
  const float *a = operand(p, vals, n, 0, rank, c, &sa), *b = NULL;
  if (!a) return 0;
  if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
      !strcmp(op, "Max") || !strcmp(op, "Min")) {
    if (n->input_count != 2 || !(b = operand(p, vals, n, 1, rank, c, &sb))) return 0;
    for (int k = 0; k < 256; k++) {
      float u = a[k * sa], v = b[k * sb];
      switch (op[0] == 'A' ? 0 : op[0] == 'S' ? 1
                             : op[0] == 'D'   ? 3
                             : op[1] == 'u'   ? 2
                             : op[1] == 'a'   ? 4
                                              : 5) {
      case 0: y[k] = u + v; break;
      case 1: y[k] = u - v; break;
      case 2: y[k] = u * v; break;
      case 3: y[k] = u / v; break;
      case 4: y[k] = (u != u || u > v) ? u : v; break;
      default: y[k] = (u != u || u < v) ? u : v; break;
      }
    }
    return 1;
  }
  if (!strcmp(op, "Clip")) {
    float lo = -FLT_MAX, hi = FLT_MAX;
    int s1 = 0;
    const float *l = NULL, *h = NULL;
    if (n->input_count == 1) { /* bounds as attributes before opset 11 */
      lo = mi_sdk_attr_float(n, "min", -FLT_MAX);
      hi = mi_sdk_attr_float(n, "max", FLT_MAX);
    }
    if (mi__blis_in(n, 1) >= 0 && (!(l = operand(p, vals, n, 1, rank, c, &s1)) || s1 ||
                                   mi_sdk_numel(mi__blis_tensor(p, mi__blis_in(n, 1))) != 1))
      return 0;
    if (mi__blis_in(n, 2) >= 0 && (!(h = operand(p, vals, n, 2, rank, c, &s1)) || s1 ||
                                   mi_sdk_numel(mi__blis_tensor(p, mi__blis_in(n, 2))) != 1))
      return 0;
    if (l) lo = *l;
    if (h) hi = *h;
    for (int k = 0; k < 256; k++) {
      float v = a[k * sa];
      v = v < lo ? lo : v; /* max first, then min, as ONNX */
      y[k] = v > hi ? hi : v;
    }
    return 1;
  }
  if (n->input_count != 1) return 0;
  (void)channels;
  float alpha = mi_sdk_attr_float(n, "alpha", !strcmp(op, "LeakyRelu") ? 0.01f : 0.2f);
  float beta = mi_sdk_attr_float(n, "beta", 0.5f);
  for (int k = 0; k < 256; k++) {
    float v = a[k * sa], r;
    if (!strcmp(op, "Relu")) r = v > 0 ? v : 0;
    else if (!strcmp(op, "LeakyRelu"))
      r = v >= 0 ? v : alpha * v;
    else if (!strcmp(op, "HardSigmoid"))
      r = fmaxf(0.0f, fminf(1.0f, alpha * v + beta));
    else if (!strcmp(op, "HardSwish"))
      r = v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f));
    else if (!strcmp(op, "Sigmoid"))
      r = sigmoid_ref(v);
    else if (!strcmp(op, "Tanh"))
      r = tanhf(v);
    else if (!strcmp(op, "Neg"))
      r = -v;
    else if (!strcmp(op, "Abs"))
      r = fabsf(v);
    else
      return 0;
    y[k] = r;
  }
  return 1;
}

/* The Concat ending a chain (along axis 1): input `value` is the chain's value (v, its
 * shape), every other input a FLOAT32 constant of the output's shape but for its channels.
 * Fills the output geometry and the constants' codes: QuantizeLinear of each value with the
 * Q's scale sy and zero point zy (ref_quant.c's formula, as the table's). */
static int32_t concat_init(mi__blis_prep_t *p, const mi_node_desc_t *cat, int32_t value,
                           const mi_tensor_desc_t *v, const mi_tensor_desc_t *y, float sy, int32_t zy, qlut_t *lut,
                           mi_error_t *err) {
  int64_t axis = mi_sdk_attr_int(cat, "axis", 0), ch = 0, bytes = 0, at = 0;
  double lo = y->dtype == MI_DTYPE_UINT8 ? 0. : -128., hi = y->dtype == MI_DTYPE_UINT8 ? 255. : 127.;
  int seen = 0;
  if (axis < 0) axis += y->rank;
  if (axis != 1 || y->rank < 2 || v->rank != y->rank || cat->input_count > 9 ||
      (y->rank == 4 && y->layout != MI_LAYOUT_NCHW && y->layout != MI_LAYOUT_ANY))
    return mi__blis_unsupported(err, cat, "a chain's Concat joins NCHW channels (axis 1)");
  for (int32_t i = 0; i < cat->input_count; i++) {
    const mi_tensor_desc_t *d = mi__blis_tensor(p, mi__blis_in(cat, i));
    int ok = d && d->rank == y->rank;
    for (int32_t k = 0; ok && k < y->rank; k++) ok = k == 1 || d->dims[k] == y->dims[k];
    if (ok && mi__blis_in(cat, i) == value && !seen) {
      seen = 1, lut->cat_off = ch;
    } else if (ok && d->data && d->dtype == MI_DTYPE_FLOAT32) {
      lut->cat_at[lut->cat_n] = ch;
      lut->cat_ch[lut->cat_n++] = d->dims[1];
      bytes += mi_sdk_numel(d);
    } else
      return mi__blis_unsupported(err, cat, "a chain's Concat of its value with FLOAT32 constants");
    ch += d->dims[1];
  }
  if (!seen || ch != y->dims[1]) return mi__blis_unsupported(err, cat, "a chain's Concat of its value with constants");
  if (bytes > mi_sdk_numel(y)) return mi__blis_unsupported(err, cat, "a chain's Concat of its value with constants");
  for (int32_t i = 0; i < cat->input_count; i++) {
    const mi_tensor_desc_t *d = mi__blis_tensor(p, mi__blis_in(cat, i));
    if (mi__blis_in(cat, i) == value) continue;
    for (int64_t e = 0, n = mi_sdk_numel(d); e < n; e++) {
      float f = ((const float *)d->data)[e];
      double r = rint((double)f / (double)sy) + zy;
      if (f != f) return mi__blis_unsupported(err, cat, "a chain's Concat with a NaN constant");
      r = r < lo ? lo : r > hi ? hi
                               : r;
      lut->cat_codes[at++] = (uint8_t)(int32_t)r;
    }
  }
  lut->out_ch = y->dims[1];
  return MI_OK;
}

/* The Pad ending a chain: constant mode, pads on the last two dims of NCHW codes only (from
 * opset 11 as a constant input, without axes; before as attributes), the value a FLOAT32
 * constant or 0. Fills the geometry and the value's code (the Q's formula, as the table's). */
static int32_t pad_init(mi__blis_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t *x,
                        const mi_tensor_desc_t *y, float sy, int32_t zy, qlut_t *lut, mi_error_t *err) {
  int64_t pads[8];
  int32_t np;
  float c = 0.f;
  double lo = y->dtype == MI_DTYPE_UINT8 ? 0. : -128., hi = y->dtype == MI_DTYPE_UINT8 ? 255. : 127., r;
  if (strcmp(mi_sdk_attr_string(n, "mode", "constant"), "constant") || x->rank != 4 || y->rank != 4)
    return mi__blis_unsupported(err, n, "a chain's Pad: constant mode on 4-D codes");
  if (n->opset < 11) {
    const mi_attr_t *pa = mi_sdk_attr(n, "pads");
    if (!pa || pa->type != MI_ATTR_INTS || pa->count != 8) return mi__blis_unsupported(err, n, "pads");
    for (np = 0; np < 8; np++) pads[np] = pa->ints[np];
    c = mi_sdk_attr_float(n, "value", 0.0f);
  } else {
    const mi_tensor_desc_t *v = mi__blis_tensor(p, mi__blis_in(n, 2));
    np = mi__blis_const_ints(p, mi__blis_in(n, 1), pads, 8);
    if (np != 8 || mi__blis_in(n, 3) >= 0) return mi__blis_unsupported(err, n, "a chain's Pad: constant pads of every axis");
    if (v && mi_sdk_numel(v) > 0) {
      if (!v->data || v->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(v) != 1)
        return mi__blis_unsupported(err, n, "a chain's Pad: a FLOAT32 constant value");
      c = *(const float *)v->data;
    }
  }
  for (int32_t k = 0; k < 8; k++)
    if (pads[k] < 0 || ((k & 3) < 2 && pads[k])) return mi__blis_unsupported(err, n, "a chain's Pad: H and W, outwards");
  if (c != c || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] || y->dims[2] != x->dims[2] + pads[2] + pads[6] ||
      y->dims[3] != x->dims[3] + pads[3] + pads[7])
    return mi__blis_unsupported(err, n, "a chain's Pad: output shape differs from the pads");
  r = rint((double)c / (double)sy) + zy; /* ref_quant.c */
  r = r < lo ? lo : r > hi ? hi
                           : r;
  lut->pad = 1;
  lut->pad_code = (uint8_t)(int32_t)r;
  lut->ih = x->dims[2], lut->iw = x->dims[3], lut->oh = y->dims[2], lut->ow = y->dims[3];
  lut->top = pads[2], lut->left = pads[3];
  return MI_OK;
}

int32_t mi__blis_prep_qlut(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_kernel_desc_t *d = p->desc;
  const mi_node_desc_t *dq = d->nodes[0], *q = d->nodes[d->node_count - 1];
  /* a Concat with constants right before the Q (exec/qdq_chain.c), and a MaxPool right before
   * it or the Q, pooling the table's codes (blis_qpool.c) */
  const mi_node_desc_t *cat = d->node_count >= 3 && !strcmp(d->nodes[d->node_count - 2]->op_type, "Concat")
                                  ? d->nodes[d->node_count - 2]
                                  : NULL;
  const mi_node_desc_t *pad = d->node_count >= 3 && !strcmp(d->nodes[d->node_count - 2]->op_type, "Pad")
                                  ? d->nodes[d->node_count - 2]
                                  : NULL;
  const int32_t mp_at = d->node_count - 2 - (cat != NULL || pad != NULL);
  const mi_node_desc_t *mp = mp_at >= 1 && !strcmp(d->nodes[mp_at]->op_type, "MaxPool") ? d->nodes[mp_at] : NULL;
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(dq, 0)), *y = mi__blis_tensor(p, mi__blis_out(q, 0));
  float sx, sy;
  int32_t zx, zy, rc = MI_OK;
  int64_t channels, hw = 1;
  float **vals = NULL, *buf = NULL;
  qlut_t *lut;
  if (!x || !y || x->data || (x->dtype != MI_DTYPE_UINT8 && x->dtype != MI_DTYPE_INT8) ||
      (y->dtype != MI_DTYPE_UINT8 && y->dtype != MI_DTYPE_INT8) || x->rank != y->rank ||
      (!mp && !cat && !pad && mi_sdk_numel(x) != mi_sdk_numel(y)) || mi_sdk_numel(x) < 1)
    return mi__blis_unsupported(err, dq, "a chain from INT8/UINT8 codes to codes of the same shape");
  if (!qparams(p, dq, x->dtype, &sx, &zx) || !qparams(p, q, y->dtype, &sy, &zy))
    return mi__blis_unsupported(err, dq, "a chain's Q/DQ take one constant scale and zero point");
  if (x->rank == 4 && x->layout != MI_LAYOUT_NCHW && x->layout != MI_LAYOUT_ANY)
    return mi__blis_unsupported(err, dq, "a chain runs on NCHW codes");
  channels = x->rank >= 2 ? x->dims[1] : 1;
  for (int32_t k = 2; k < x->rank; k++) hw *= x->dims[k];
  if (x->rank < 2) hw = mi_sdk_numel(x);
  if (channels < 1 || channels > 4096) return mi__blis_unsupported(err, dq, "chain over too many channels");
  vals = calloc((size_t)d->tensor_count, sizeof *vals);
  buf = malloc((size_t)d->node_count * (size_t)channels * 256 * sizeof *buf);
  lut = mi__blis_calloc(p->ctx, sizeof *lut + (uint64_t)channels * 256 + (cat ? (uint64_t)mi_sdk_numel(y) : 0));
  if (!vals || !buf || !lut) {
    rc = mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    goto done;
  }
  s->state = lut;
  lut->cat_codes = lut->table + channels * 256;
  /* DequantizeLinear of every code (exact: 9-bit integer times the scale, rounded once). */
  vals[mi__blis_out(dq, 0)] = buf;
  for (int64_t c = 0; c < channels; c++)
    for (int k = 0; k < 256; k++) {
      int32_t code = x->dtype == MI_DTYPE_UINT8 ? k : (int8_t)(uint8_t)k;
      buf[(c << 8) + k] = (float)((double)(code - zx) * (double)sx);
    }
  for (int32_t i = 1; i + 1 + (mp != NULL) + (cat != NULL) + (pad != NULL) < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int32_t o = mi__blis_out(n, 0);
    const mi_tensor_desc_t *od = mi__blis_tensor(p, o);
    if (!od || od->dtype != MI_DTYPE_FLOAT32 || od->rank != x->rank || mi_sdk_numel(od) != mi_sdk_numel(x) ||
        vals[o]) {
      rc = mi__blis_unsupported(err, n, "a chain's ops keep the codes' shape");
      goto done;
    }
    vals[o] = buf + (size_t)i * (size_t)channels * 256;
    for (int64_t c = 0; c < channels; c++)
      if (!eval_node(p, vals, n, x->rank, c, channels, vals[o] + (c << 8))) {
        rc = mi__blis_unsupported(err, n, "not an elementwise op of a chain on constants (scalar or per channel)");
        goto done;
      }
  }
  if (mp) {
    int32_t in = mi__blis_in(mp, 0);
    if (in < 0 || !vals[in] || mi__blis_out(mp, 0) < 0) {
      rc = mi__blis_unsupported(err, mp, "a chain's MaxPool reads the chain's value");
      goto done;
    }
    /* Pooling codes equals quantizing the float pool's maximum unless a NaN is in the window. */
    for (int64_t k = 0; k < channels * 256; k++)
      if (vals[in][k] != vals[in][k]) {
        rc = mi__blis_unsupported(err, mp, "a chain whose value before MaxPool can be NaN");
        goto done;
      }
    if (!x || x->rank != 4) { /* the chain's planes are 2-D */
      rc = mi__blis_unsupported(err, mp, "a chain's MaxPool pools 2-D NCHW codes");
      goto done;
    }
    if ((rc = mi__blis_qpool_init(mp, x, cat ? mi__blis_tensor(p, mi__blis_out(mp, 0)) : y, p->ctx->cpu.isa, &lut->qp, err)) !=
        MI_OK)
      goto done;
    vals[mi__blis_out(mp, 0)] = vals[in]; /* the Q's table is over the pool's input */
    lut->pool = 1;
    lut->flip = y->dtype == MI_DTYPE_INT8 ? 0x80 : 0;
    if (!(s->aux = lut->codes = mi__blis_alloc(p->ctx, (uint64_t)mi_sdk_numel(x)))) {
      rc = mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
      goto done;
    }
  }
  lut->out_ch = channels;
  lut->out_hw = mp ? lut->qp.OH * lut->qp.OW : hw;
  if (cat) {
    int32_t in = mp ? mi__blis_out(mp, 0) : -1;
    for (int32_t i = 0; in < 0 && i < cat->input_count; i++)
      if (mi__blis_in(cat, i) >= 0 && vals[mi__blis_in(cat, i)]) in = mi__blis_in(cat, i);
    if (in < 0 || !vals[in] || mi__blis_out(cat, 0) < 0 || !mi__blis_tensor(p, in)) {
      rc = mi__blis_unsupported(err, cat, "a chain's Concat reads the chain's value");
      goto done;
    }
    if ((rc = concat_init(p, cat, in, mi__blis_tensor(p, in), y, sy, zy, lut, err)) != MI_OK) goto done;
    vals[mi__blis_out(cat, 0)] = vals[in]; /* the Q's table is over the chain's value */
  }
  if (pad) {
    int32_t in = mi__blis_in(pad, 0);
    if (mp || in < 0 || !vals[in] || mi__blis_out(pad, 0) < 0 || mi__blis_out(pad, 0) != mi__blis_in(q, 0)) {
      rc = mi__blis_unsupported(err, pad, "a chain's Pad reads the chain's value, the Q its output");
      goto done;
    }
    if ((rc = pad_init(p, pad, x, y, sy, zy, lut, err)) != MI_OK) goto done;
    lut->out_hw = lut->oh * lut->ow;
    vals[mi__blis_out(pad, 0)] = vals[in]; /* the Q's table is over the chain's value */
  }
  {
    int sa = 0;
    const float *v;
    double lo = y->dtype == MI_DTYPE_UINT8 ? 0. : -128., hi = y->dtype == MI_DTYPE_UINT8 ? 255. : 127.;
    for (int64_t c = 0; c < channels; c++) {
      if (!(v = operand(p, vals, q, 0, x->rank, c, &sa)) || !sa) {
        rc = mi__blis_unsupported(err, q, "the chain's QuantizeLinear reads its last value");
        goto done;
      }
      for (int k = 0; k < 256; k++) {
        /* ref_quant.c: rint of the quotient in double, plus the zero point, saturated */
        double r = rint((double)v[k] / (double)sy) + zy;
        r = r < lo ? lo : r > hi ? hi
                                 : r;
        lut->table[(c << 8) + k] = (uint8_t)(int32_t)r ^ lut->flip;
      }
    }
  }
  lut->xf = mi__blis_is_kernel_output(p, mi__blis_out(dq, 0)) ? mi__blis_out(dq, 0) : -1;
  lut->x = mi__blis_in(dq, 0);
  lut->y = mi__blis_out(q, 0);
  lut->channels = channels;
  lut->hw = hw;
  lut->planes = mi_sdk_numel(x) / hw;
  lut->batch = lut->planes / channels;
  lut->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  lut->sx = sx;
  lut->zx = zx;
  lut->x_u8 = x->dtype == MI_DTYPE_UINT8;
  lut->vbmi = mi__blis_simd_level(p->ctx->cpu.isa) == MI__SIMD_AVX512 && __builtin_cpu_supports("avx512vbmi");
  s->run = run_qlut;
  p->nodes_used = d->node_count;
done:
  free(vals);
  free(buf);
  return rc;
}
