/* blis_qpool.c - MaxPool on 8-bit codes, for a quantized elementwise chain that ends in a MaxPool
 * before its QuantizeLinear (blis_qlut.c). Quantization never decreases, so the Q of a window's
 * maximum is the largest of the window's codes: the table writes the codes of the pool's input
 * and this pools them, byte-equal to pooling in float and quantizing after. Codes arrive in
 * unsigned order (INT8 codes with their sign bit flipped), so one unsigned max serves both. */
#include <immintrin.h>
#include <string.h>

#include "blis_internal.h"

static int ints(const mi_node_desc_t *n, const char *name, int64_t *out, int32_t want, int64_t dflt) {
  const mi_attr_t *a = mi_sdk_attr(n, name);
  for (int32_t i = 0; i < want; i++) out[i] = dflt;
  if (!a) return 1;
  if (a->type != MI_ATTR_INTS || a->count != want) return 0;
  for (int32_t i = 0; i < want; i++) out[i] = a->ints[i];
  return 1;
}

int32_t mi__blis_qpool_init(const mi_node_desc_t *n, const mi_tensor_desc_t *x, const mi_tensor_desc_t *y,
                            mi__blis_qpool_t *q, mi_error_t *err) {
  int64_t k[2], st[2], d[2], pads[4];
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int auto_pad;
  memset(q, 0, sizeof *q);
  if (!x || !y || x->rank != 4 || y->rank != 4 || x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1])
    return mi__blis_unsupported(err, n, "a chain's MaxPool pools 2-D NCHW codes");
  if (mi__blis_out(n, 1) >= 0 || mi_sdk_attr_int(n, "storage_order", 0) != 0)
    return mi__blis_unsupported(err, n, "a chain's MaxPool without Indices or storage_order");
  if (!ints(n, "kernel_shape", k, 2, 0) || !ints(n, "strides", st, 2, 1) || !ints(n, "dilations", d, 2, 1) ||
      !ints(n, "pads", pads, 4, 0) || k[0] < 1 || k[1] < 1 || st[0] < 1 || st[1] < 1 || d[0] < 1 || d[1] < 1)
    return mi__blis_unsupported(err, n, "malformed kernel_shape/strides/dilations/pads");
  q->H = x->dims[2], q->W = x->dims[3], q->OH = y->dims[2], q->OW = y->dims[3];
  q->KH = k[0], q->KW = k[1], q->sh = st[0], q->sw = st[1], q->dh = d[0], q->dw = d[1];
  q->pt = pads[0], q->pl = pads[1];
  auto_pad = mi_sdk_auto_pad_from_name(ap && ap->type == MI_ATTR_STRING ? ap->s : NULL);
  if (auto_pad == MI_SDK_AUTO_PAD_SAME_UPPER || auto_pad == MI_SDK_AUTO_PAD_SAME_LOWER) {
    int64_t pb, pr; /* the end pads follow from the output size */
    mi_sdk_same_pads(auto_pad, (q->OH - 1) * q->sh + (q->KH - 1) * q->dh + 1 - q->H, &q->pt, &pb);
    mi_sdk_same_pads(auto_pad, (q->OW - 1) * q->sw + (q->KW - 1) * q->dw + 1 - q->W, &q->pl, &pr);
  }
  if (q->OH < 1 || q->OW < 1 || q->H < 1 || q->W < 1)
    return mi__blis_unsupported(err, n, "a chain's MaxPool with an empty plane");
  q->k2s2 = (q->KH == 1 || q->KH == 2) && q->KW == 2 && q->sw == 2 && q->dw == 1 && q->pt == 0 && q->pl == 0 &&
            (q->OH - 1) * q->sh + (q->KH - 1) * q->dh < q->H && 2 * q->OW <= q->W &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return MI_OK;
}

/* Output columns [from, to) of one row of windows, where a window may leave the row. */
static void border(const mi__blis_qpool_t *q, const uint8_t *xr, uint8_t *yr, int64_t from, int64_t to) {
  for (int64_t ow = from; ow < to; ow++)
    for (int64_t kw = 0; kw < q->KW; kw++) {
      int64_t iw = ow * q->sw - q->pl + kw * q->dw;
      if (iw >= 0 && iw < q->W && xr[iw] > yr[ow]) yr[ow] = xr[iw];
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
      __m512i m = _mm512_max_epu8(_mm512_maskz_loadu_epi8(k, r0 + 2 * ow), _mm512_maskz_loadu_epi8(k, r1 + 2 * ow));
      m = _mm512_max_epu8(m, _mm512_srli_epi16(m, 8));
      _mm256_mask_storeu_epi8(y + oh * q->OW + ow, left >= 32 ? ~0u : (1u << left) - 1u,
                              _mm512_cvtepi16_epi8(_mm512_and_si512(m, _mm512_set1_epi16(0xff))));
    }
  }
}

/* One plane: x is H x W codes in unsigned order, y OH x OW. A window wholly in the padding gives
 * code 0 (the lowest), as the float pool's -inf quantizes to the lowest code. */
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
    memset(yr, 0, (size_t)q->OW);
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
          for (int64_t i = 0; i < n; i++) yk[i] = xk[i] > yk[i] ? xk[i] : yk[i];
        else
          for (int64_t i = 0; i < n; i++) yk[i] = xk[i * q->sw] > yk[i] ? xk[i * q->sw] : yk[i];
      }
      border(q, xr, yr, o1, q->OW);
    }
  }
}
