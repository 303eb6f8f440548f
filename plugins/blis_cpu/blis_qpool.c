/* blis_qpool.c - MaxPool on 8-bit codes: for a quantized elementwise chain that ends in a MaxPool
 * before its QuantizeLinear (blis_qlut.c), and the MaxPool of ONNX Runtime's QOperator and QDQ
 * models on UINT8/INT8 codes between QLinear ops, on its own (opset 12+). Quantization never
 * decreases, so the Q of a window's maximum is the largest of the window's codes: byte-equal to
 * pooling in float and quantizing after, and to the reference's pool of the codes as floats. The
 * chain's codes arrive in unsigned order (INT8 codes with their sign bit flipped), so one unsigned
 * max serves both; a lone INT8 pool compares its codes with the sign bit flipped (flip 0x80). */
#include <immintrin.h>
#include <string.h>

#include "blis_internal.h"

/* The spatial values of attribute `name` (sp of them, or 2 * sp for pads) into out[2] (out[4]
 * for pads: top, left, bottom, right); a 1-D pool is a 2-D one of height 1. 0 when malformed. */
static int ints(const mi_node_desc_t *n, const char *name, int64_t *out, int32_t sp, int pads, int64_t dflt) {
  const mi_attr_t *a = mi_sdk_attr(n, name);
  int32_t want = pads ? 2 * sp : sp, all = pads ? 4 : 2;
  for (int32_t i = 0; i < all; i++) out[i] = dflt;
  if (!a) return 1;
  if (a->type != MI_ATTR_INTS || a->count != want) return 0;
  if (sp == 2)
    for (int32_t i = 0; i < want; i++) out[i] = a->ints[i];
  else if (pads)
    out[1] = a->ints[0], out[3] = a->ints[1];
  else
    out[1] = a->ints[0];
  return 1;
}

int32_t mi__blis_qpool_init(const mi_node_desc_t *n, const mi_tensor_desc_t *x, const mi_tensor_desc_t *y,
                            uint32_t isa, mi__blis_qpool_t *q, mi_error_t *err) {
  int64_t k[2], st[2], d[2], pads[4];
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int auto_pad;
  memset(q, 0, sizeof *q);
  if (!x || !y || (x->rank != 4 && x->rank != 3) || y->rank != x->rank || x->dims[0] != y->dims[0] ||
      x->dims[1] != y->dims[1] || x->layout == MI_LAYOUT_NHWC)
    return mi__blis_unsupported(err, n, "an 8-bit MaxPool pools 1-D or 2-D NCHW codes");
  if (mi__blis_out(n, 1) >= 0 || mi_sdk_attr_int(n, "storage_order", 0) != 0)
    return mi__blis_unsupported(err, n, "an 8-bit MaxPool without Indices or storage_order");
  int32_t sp = x->rank - 2;
  if (!ints(n, "kernel_shape", k, sp, 0, 1) || !mi_sdk_attr(n, "kernel_shape") || !ints(n, "strides", st, sp, 0, 1) ||
      !ints(n, "dilations", d, sp, 0, 1) || !ints(n, "pads", pads, sp, 1, 0) || k[0] < 1 || k[1] < 1 || st[0] < 1 ||
      st[1] < 1 || d[0] < 1 || d[1] < 1 || pads[0] < 0 || pads[1] < 0)
    return mi__blis_unsupported(err, n, "malformed kernel_shape/strides/dilations/pads");
  q->H = sp == 2 ? x->dims[2] : 1, q->W = x->dims[x->rank - 1];
  q->OH = sp == 2 ? y->dims[2] : 1, q->OW = y->dims[y->rank - 1];
  q->KH = k[0], q->KW = k[1], q->sh = st[0], q->sw = st[1], q->dh = d[0], q->dw = d[1];
  q->pt = pads[0], q->pl = pads[1];
  auto_pad = mi_sdk_auto_pad_from_name(ap && ap->type == MI_ATTR_STRING ? ap->s : NULL);
  if (auto_pad == MI_SDK_AUTO_PAD_SAME_UPPER || auto_pad == MI_SDK_AUTO_PAD_SAME_LOWER) {
    int64_t pb, pr; /* the end pads follow from the output size */
    mi_sdk_same_pads(auto_pad, (q->OH - 1) * q->sh + (q->KH - 1) * q->dh + 1 - q->H, &q->pt, &pb);
    mi_sdk_same_pads(auto_pad, (q->OW - 1) * q->sw + (q->KW - 1) * q->dw + 1 - q->W, &q->pl, &pr);
  }
  if (q->OH < 1 || q->OW < 1 || q->H < 1 || q->W < 1)
    return mi__blis_unsupported(err, n, "an 8-bit MaxPool with an empty plane");
  q->k2s2 = (q->KH == 1 || q->KH == 2) && q->KW == 2 && q->sw == 2 && q->dw == 1 && q->pt == 0 && q->pl == 0 &&
            (q->OH - 1) * q->sh + (q->KH - 1) * q->dh < q->H && 2 * q->OW <= q->W &&
            (isa & MI__ISA_AVX512F) && (isa & MI__ISA_AVX512DQBWVL);
  return MI_OK;
}

/* Output columns [from, to) of one row of windows, where a window may leave the row. */
static void border(const mi__blis_qpool_t *q, const uint8_t *xr, uint8_t *yr, int64_t from, int64_t to) {
  const uint8_t f = q->flip;
  for (int64_t ow = from; ow < to; ow++)
    for (int64_t kw = 0; kw < q->KW; kw++) {
      int64_t iw = ow * q->sw - q->pl + kw * q->dw;
      if (iw >= 0 && iw < q->W && (uint8_t)(xr[iw] ^ f) > (uint8_t)(yr[ow] ^ f)) yr[ow] = xr[iw];
    }
}

/* Windows 2 wide at stride 2 along W and of 1 or 2 rows along H, all inside the plane: the rows'
 * maximum (a 1-row window takes its row twice), then each byte pair's (the high byte shifted onto
 * the low one), packed back to bytes. The strided scalar loop of the general path ran at about a
 * byte a cycle: a QDQ face detector's first pool took 0.36 ms, and a keyword model's 1x2 pools
 * (stride 1x2, TF exports of audio models) 1.7 GB/s. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void pool_k2s2(const mi__blis_qpool_t *q, const uint8_t *x,
                                                                           uint8_t *y) {
  for (int64_t oh = 0; oh < q->OH; oh++) {
    const uint8_t *r0 = x + oh * q->sh * q->W, *r1 = r0 + (q->KH - 1) * q->dh * q->W;
    for (int64_t ow = 0; ow < q->OW; ow += 32) {
      int64_t left = q->OW - ow;
      __mmask64 k = left >= 32 ? ~0ull : (1ull << (2 * left)) - 1ull;
      __m512i a = _mm512_maskz_loadu_epi8(k, r0 + 2 * ow), b = _mm512_maskz_loadu_epi8(k, r1 + 2 * ow), m;
      /* the pair's maximum lands in the low byte of each 16-bit lane; the high bytes are dropped */
      if (q->flip) {
        m = _mm512_max_epi8(a, b);
        m = _mm512_max_epi8(m, _mm512_srli_epi16(m, 8));
      } else {
        m = _mm512_max_epu8(a, b);
        m = _mm512_max_epu8(m, _mm512_srli_epi16(m, 8));
      }
      _mm256_mask_storeu_epi8(y + oh * q->OW + ow, left >= 32 ? ~0u : (1u << left) - 1u,
                              _mm512_cvtepi16_epi8(_mm512_and_si512(m, _mm512_set1_epi16(0xff))));
    }
  }
}

/* One plane: x is H x W codes (in unsigned order after XOR with flip), y OH x OW. A window wholly in
 * the padding gives the lowest code (0, or -128 for INT8), as the float pool's -inf quantizes to
 * the lowest code. */
void mi__blis_qpool_plane(const mi__blis_qpool_t *q, const uint8_t *x, uint8_t *y) {
  /* output columns whose whole window lies inside the row: [o0, o1) */
  int64_t o0 = (q->pl + q->sw - 1) / q->sw, last = q->W - 1 - (q->KW - 1) * q->dw + q->pl;
  int64_t o1 = last < 0 ? 0 : last / q->sw + 1;
  o0 = o0 < q->OW ? o0 : q->OW;
  o1 = o1 < q->OW ? o1 : q->OW;
  o1 = o1 > o0 ? o1 : o0;
  if (q->k2s2) {
    pool_k2s2(q, x, y);
    return;
  }
  for (int64_t oh = 0; oh < q->OH; oh++) {
    uint8_t *yr = y + oh * q->OW;
    const uint8_t f = q->flip;
    memset(yr, f, (size_t)q->OW);
    for (int64_t kh = 0; kh < q->KH; kh++) {
      int64_t ih = oh * q->sh - q->pt + kh * q->dh;
      if (ih < 0 || ih >= q->H) continue;
      const uint8_t *xr = x + ih * q->W;
      border(q, xr, yr, 0, o0);
      for (int64_t kw = 0; kw < q->KW && o1 > o0; kw++) {
        const uint8_t *xk = xr + o0 * q->sw - q->pl + kw * q->dw;
        uint8_t *yk = yr + o0;
        int64_t n = o1 - o0;
        if (q->sw == 1)
          for (int64_t i = 0; i < n; i++) yk[i] = (uint8_t)(xk[i] ^ f) > (uint8_t)(yk[i] ^ f) ? xk[i] : yk[i];
        else
          for (int64_t i = 0; i < n; i++)
            yk[i] = (uint8_t)(xk[i * q->sw] ^ f) > (uint8_t)(yk[i] ^ f) ? xk[i * q->sw] : yk[i];
      }
      border(q, xr, yr, o1, q->OW);
    }
  }
}

/* ---- a lone MaxPool on UINT8/INT8 codes: planes split across threads */
typedef struct qmp {
  int32_t x, y;
  int64_t planes;
  mi__blis_qpool_t q;
} qmp_t;

static void qmp_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *t = arg;
  const qmp_t *m = t->state;
  const uint8_t *x = t->t[m->x];
  uint8_t *y = t->t[m->y];
  for (int64_t p = b; p < e; p++) mi__blis_qpool_plane(&m->q, x + p * m->q.H * m->q.W, y + p * m->q.OH * m->q.OW);
}

static int32_t run_qmp(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qmp_t *m = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, m->planes, 1, m->q.H * m->q.W + m->q.OH * m->q.OW * m->q.KH * m->q.KW, qmp_part);
}

int32_t mi__blis_prep_qmaxpool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  qmp_t *m;
  int32_t rc;
  if (p->desc->node_count != 1) return mi__blis_unsupported(err, n, "an 8-bit MaxPool runs alone, not in a fused group");
  if (n->opset < 12) return mi__blis_unsupported(err, n, "MaxPool on 8-bit codes needs opset 12 or later");
  if (!y || y->dtype != x->dtype || x->data) return mi__blis_unsupported(err, n, "needs runtime codes in, codes of one dtype out");
  if (!(m = mi__blis_state_new(p, s, sizeof *m, err))) return MI_ERR_OUT_OF_MEMORY;
  if ((rc = mi__blis_qpool_init(n, x, y, p->ctx->cpu.isa, &m->q, err)) != MI_OK) return rc;
  m->q.flip = x->dtype == MI_DTYPE_INT8 ? 0x80 : 0;
  m->x = mi__blis_in(n, 0);
  m->y = mi__blis_out(n, 0);
  m->planes = x->dims[0] * x->dims[1];
  s->run = run_qmp;
  return MI_OK;
}
