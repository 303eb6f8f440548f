/* blis_simd.c - depthwise conv planes and the fused conv epilogue, compiled for AVX-512, AVX2 and
 * plain C from one body; the conv's prepare picks the widest level the CPU runs. */
#include <string.h>

#include "blis_epi512.h"

/* Floats of the padded, stride-phased input plane kept on the stack (64 KiB); larger planes run
 * the plain loops of blis_conv_direct.c. */
#define DW_BUF MI__DW_PLANE_MAX
/* Output pixels per register block: one zmm, two ymm, or what the C compiler makes of it. */
#define DW_VEC 16
/* Vectors (flat run) or output rows (strided planes) computed together. */
#define DW_BLK 4
/* Most filter taps (KH*KW) the SIMD path takes. */
#define DW_TAPS 64
/* GCC vector type: one zmm, two ymm or four xmm depending on the function's target. */
typedef float mi__v16 __attribute__((vector_size(DW_VEC * sizeof(float))));
typedef float mi__v8 __attribute__((vector_size(DW_VEC / 2 * sizeof(float))));

int32_t mi__blis_simd_level(uint32_t isa) {
  __builtin_cpu_init();
  if ((isa & MI__ISA_AVX512F) && (isa & MI__ISA_AVX512DQBWVL) && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return MI__SIMD_AVX512;
  if ((isa & MI__ISA_AVX2) && (isa & MI__ISA_FMA) && __builtin_cpu_supports("avx2")) return MI__SIMD_AVX2;
  return MI__SIMD_C;
}

/* The planes are written with GCC vector types, and C11 keeps a * b + c as a multiply and an add:
 * allow fused multiply-adds where the target has them (AVX-512, AVX2), as blis_pgemm.c does. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")

/* The register-blocked tap loops, instantiated for a vector type of the target's width (a 64-byte
 * GCC vector on an AVX2 target is kept in memory halves and spilled through general registers:
 * the 5x5 planes ran at 2 GFLOP/s). VL floats a vector, DW_BLK * DW_VEC / VL accumulators: enough
 * independent FMA chains to cover the FMA latency, each tap's weight broadcast once for all.
 * dw_flat_*: DW_BLK * DW_VEC consecutive outputs of a flat stride-1 run from b0;
 * dw_rows_*: one DW_VEC-wide column block (from ow0) of DW_BLK output rows whose padded input
 * rows start at base[r], into tile. Every output sums its taps in (kh, kw) order. nt is a constant
 * at the call sites that matter (3x3, 5x5), so the tap loop unrolls. */
#define DW_KERNELS(VT, VL, SFX)                                                               \
  static inline __attribute__((always_inline)) void dw_flat_##SFX(                            \
      const float *b0, const int64_t *off, const float *wt, int64_t nt, float *out) {         \
    VT acc[DW_BLK * DW_VEC / VL], v;                                                          \
    int64_t t;                                                                                \
    int j;                                                                                    \
    _Pragma("GCC unroll 8") for (j = 0; j < DW_BLK * DW_VEC / VL; j++) acc[j] = (VT){0};      \
    _Pragma("GCC unroll 25") for (t = 0; t < nt; t++) {                                       \
      const float *bt = b0 + off[t];                                                          \
      float w = wt[t];                                                                        \
      _Pragma("GCC unroll 8") for (j = 0; j < DW_BLK * DW_VEC / VL; j++) {                    \
        memcpy(&v, bt + j * VL, sizeof v); /* unaligned load */                               \
        acc[j] += w * v;                                                                      \
      }                                                                                       \
    }                                                                                         \
    _Pragma("GCC unroll 8") for (j = 0; j < DW_BLK * DW_VEC / VL; j++)                        \
        memcpy(out + j * VL, &acc[j], sizeof acc[j]);                                         \
  }                                                                                           \
  static inline __attribute__((always_inline)) void dw_rows_##SFX(                            \
      const float *const *base, int64_t ow0, const int64_t *off, const float *wt, int64_t nt, \
      float(*tile)[DW_VEC]) {                                                                 \
    VT acc[DW_BLK][DW_VEC / VL], v;                                                           \
    int64_t t;                                                                                \
    int r, j;                                                                                 \
    _Pragma("GCC unroll 4") for (r = 0; r < DW_BLK; r++)                                      \
        _Pragma("GCC unroll 2") for (j = 0; j < DW_VEC / VL; j++) acc[r][j] = (VT){0};        \
    _Pragma("GCC unroll 25") for (t = 0; t < nt; t++) {                                       \
      float w = wt[t];                                                                        \
      _Pragma("GCC unroll 4") for (r = 0; r < DW_BLK; r++)                                    \
          _Pragma("GCC unroll 2") for (j = 0; j < DW_VEC / VL; j++) {                         \
        memcpy(&v, base[r] + ow0 + off[t] + j * VL, sizeof v);                                \
        acc[r][j] += w * v;                                                                   \
      }                                                                                       \
    }                                                                                         \
    _Pragma("GCC unroll 4") for (r = 0; r < DW_BLK; r++)                                      \
        _Pragma("GCC unroll 2") for (j = 0; j < DW_VEC / VL; j++)                             \
            memcpy(tile[r] + j * VL, &acc[r][j], sizeof acc[r][j]);                           \
  }
DW_KERNELS(mi__v16, 16, v16)
DW_KERNELS(mi__v8, 8, v8)

/* The tap loop of every 3x3 and 5x5 plane unrolled, the rest generic; wide: 64-byte vectors. */
#define DW_TAPS_CALL(KIND, ...)                          \
  do {                                                   \
    if (wide) {                                          \
      if (nt == 9) dw_##KIND##_v16(__VA_ARGS__, 9, OUT); \
      else if (nt == 25)                                 \
        dw_##KIND##_v16(__VA_ARGS__, 25, OUT);           \
      else                                               \
        dw_##KIND##_v16(__VA_ARGS__, nt, OUT);           \
    } else {                                             \
      if (nt == 9) dw_##KIND##_v8(__VA_ARGS__, 9, OUT);  \
      else if (nt == 25)                                 \
        dw_##KIND##_v8(__VA_ARGS__, 25, OUT);            \
      else                                               \
        dw_##KIND##_v8(__VA_ARGS__, nt, OUT);            \
    }                                                    \
  } while (0)

/* One depthwise plane. The input plane is copied once into a zero-padded buffer whose rows are
 * split into `sw` phases (phase r holds padded columns r, r+sw, ...), so every tap of every
 * stride reads a contiguous run with no bounds checks: input column ow*sw + kw*dw of the padded
 * row is phase (kw*dw) % sw, element ow + (kw*dw) / sw. Each output pixel sums its taps in
 * (kh, kw) order starting from 0, whichever block it falls in. */
static inline __attribute__((always_inline)) int dw_body(const mi__blis_conv_t *c, const float *xc,
                                                         const float *wm, float *row, int wide) {
  float buf[DW_BUF];
  int64_t sw = c->sw, hp = c->H + c->pt, wp = c->W + c->pl, lp, ih, oh, ow0, kh, kw;
  int64_t need_h = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1;
  int64_t need_w = (c->OW - 1) * sw + (c->KW - 1) * c->dw + 1;
  int64_t tr[DW_TAPS], tq[DW_TAPS], off[DW_TAPS], nt, oh_n = c->OH, ow_n = c->OW, rs = c->sh * sw;
  float wt[DW_TAPS];
  if (hp < need_h) hp = need_h;
  if (wp < need_w) wp = need_w;
  lp = (wp + sw - 1) / sw;
  /* DW_BLK * DW_VEC + KW * dw floats of slack: the flat stride-1 path below reads past the last row */
  if (hp * sw * lp + DW_BLK * DW_VEC + c->KW * c->dw > DW_BUF || c->KH * c->KW > DW_TAPS) return 0;
  rs *= lp;
  /* Plain loops, not memset/memcpy (see MI__AVX512 below). */
  for (ih = 0; ih < hp * sw * lp + DW_BLK * DW_VEC + c->KW * c->dw; ih++) buf[ih] = 0.f;
  for (ih = 0; ih < c->H; ih++) {
    float *pr = buf + (ih + c->pt) * sw * lp;
    const float *xr = xc + ih * c->W;
    if (sw == 1) {
      float *dst = pr + c->pl;
      int64_t j, w = c->W;
      for (j = 0; j < w; j++) dst[j] = xr[j];
    } else {
      int64_t r, j, j0, j1;
      for (r = 0; r < sw; r++) {
        /* padded column j*sw + r is input column j*sw + r - pl; a branch-free strided copy over
         * the j where that column exists, so the compiler vectorises it */
        float *dst = pr + r * lp;
        const float *src = xr + r - c->pl;
        j0 = c->pl > r ? (c->pl - r + sw - 1) / sw : 0;
        j1 = c->W - 1 + c->pl - r >= 0 ? (c->W - 1 + c->pl - r) / sw + 1 : 0;
        if (j1 > lp) j1 = lp;
        if (sw == 2) /* constant stride: vectorised with permutes */
          for (j = j0; j < j1; j++) dst[j] = src[j * 2];
        else
          for (j = j0; j < j1; j++) dst[j] = src[j * sw];
      }
    }
  }
  for (kw = 0; kw < c->KW; kw++) {
    tr[kw] = (kw * c->dw) % sw;
    tq[kw] = (kw * c->dw) / sw;
  }
  /* Flat tap table: tap t = kh*KW + kw reads base + off[t] + ow. Locals, so the stores to the
   * output (char-typed memcpy) do not force the geometry to be reloaded. */
  nt = c->KH * c->KW;
  for (kh = 0; kh < c->KH; kh++)
    for (kw = 0; kw < c->KW; kw++) {
      off[kh * c->KW + kw] = kh * c->dh * sw * lp + tr[kw] * lp + tq[kw];
      wt[kh * c->KW + kw] = wm[kh * c->KW + kw];
    }
  if (c->sh == 1 && sw == 1) {
    /* Stride 1: output (oh, ow) reads buf[off[t] + oh * lp + ow], so the whole plane is one flat
     * run of OH * lp outputs (columns ow >= OW are computed and dropped): full vectors even on
     * narrow planes (kws: 5 wide), no per-row blocks. DW_BLK vectors at a time: independent FMA
     * chains (one chain per vector waits on the FMA latency: 5x5 planes ran at a quarter of the
     * FMA rate), every tap's weight broadcast once for all of them. */
    float flat[DW_BUF];
    int64_t q, total = oh_n * lp;
    if (total + DW_BLK * DW_VEC <= DW_BUF) {
      for (q = 0; q < total; q += DW_BLK * DW_VEC) {
#define OUT flat + q
        DW_TAPS_CALL(flat, buf + q, off, wt);
#undef OUT
      }
      for (oh = 0; oh < oh_n; oh++) {
        float *yr = row + oh * ow_n;
        const float *fr = flat + oh * lp;
        for (ow0 = 0; ow0 < ow_n; ow0++) yr[ow0] = fr[ow0];
      }
      return 1;
    }
  }
  for (oh = 0; oh < oh_n; oh += DW_BLK) {
    /* DW_BLK output rows of one column block together (see the flat run); rows past the plane
     * repeat the last one and are not stored */
    const float *base[DW_BLK];
    int64_t nr = oh_n - oh < DW_BLK ? oh_n - oh : DW_BLK, r;
    for (r = 0; r < DW_BLK; r++) base[r] = buf + (oh + (r < nr ? r : nr - 1)) * rs;
    /* Full blocks, then one partial block whose extra lanes read the next padded values (the
     * buffer has slack) and are not stored. */
    for (ow0 = 0; ow0 < ow_n; ow0 += DW_VEC) {
      int64_t nl = ow_n - ow0 < DW_VEC ? ow_n - ow0 : DW_VEC, t;
      float tile[DW_BLK][DW_VEC];
#define OUT tile
      DW_TAPS_CALL(rows, base, ow0, off, wt);
#undef OUT
      for (r = 0; r < nr; r++) {
        float *yr = row + (oh + r) * ow_n + ow0;
        if (nl == DW_VEC) memcpy(yr, tile[r], sizeof tile[r]);
        else /* lane by lane: a variable-length memcpy becomes `rep movs` here */
          for (t = 0; t < nl; t++) yr[t] = tile[r][t];
      }
    }
  }
  return 1;
}

/* Bias / folded BN, then the chain of activations and residual adds, on one output row. The
 * common activations are inlined here so they vectorise with the row; the rest call the
 * shared scalar code. */
static inline __attribute__((always_inline)) void epi_body(const mi__blis_conv_t *c, void *const *t,
                                                           int64_t n, int64_t m, float *row,
                                                           int64_t len, int64_t rstride) {
  int64_t i;
  int32_t e;
  if (c->affine) {
    float s = c->scale[m], b = c->shift[m];
    for (i = 0; i < len; i++) row[i] = row[i] * s + b;
  }
  for (e = 0; e < c->epi_n; e++) {
    const mi__blis_epi_op_t *op = &c->epi[e];
    float a = op->a, b = op->b;
    if (op->act == MI__ACT_NONE) { /* residual add */
      const float *r = (const float *)t[op->tensor] + (n * c->M + m) * rstride;
      for (i = 0; i < len; i++) row[i] += r[i];
    } else if (!mi__blis_act_lanes(op->act, a, b, row, len) && !mi__blis_act_simd(c->simd, op->act, row, len)) {
      mi__blis_act_apply(op->act, a, b, row, len); /* the rest: vectorised math or scalar */
    }
  }
}

/* no-tree-loop-distribute-patterns: keep the short row copies as loops; turned back into
 * memcpy/memset they are expanded as `rep movs/stos` in these functions, slow on short rows. */
#define MI__AVX512                                             \
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"), \
                 optimize("no-tree-loop-distribute-patterns")))
#define MI__AVX2 __attribute__((target("avx2,fma"), optimize("no-tree-loop-distribute-patterns")))

MI__AVX512 static int dw_avx512(const mi__blis_conv_t *c, const float *x, const float *w, float *y) {
  return dw_body(c, x, w, y, 1);
}
MI__AVX2 static int dw_avx2(const mi__blis_conv_t *c, const float *x, const float *w, float *y) {
  return dw_body(c, x, w, y, 0);
}
static int dw_c(const mi__blis_conv_t *c, const float *x, const float *w, float *y) {
  return dw_body(c, x, w, y, 0);
}
#pragma GCC pop_options

static int dw_level(const mi__blis_conv_t *c, const float *xc, const float *wm, float *row) {
  switch (c->simd) {
  case MI__SIMD_AVX512: return dw_avx512(c, xc, wm, row);
  case MI__SIMD_AVX2: return dw_avx2(c, xc, wm, row);
  default: return dw_c(c, xc, wm, row);
  }
}

/* A plane whose padded copy does not fit the stack buffer (a DB detector's 160x160 planes) runs as
 * strips of output rows, each a plane of its own: the input rows it reads, with the top padding
 * only where the strip starts above row 0 and zeros below the last input row. */
int mi__blis_dw_plane(const mi__blis_conv_t *c, const float *xc, const float *wm, float *row) {
  mi__blis_conv_t s;
  int64_t lp, rows, strip, oh0;
  if (dw_level(c, xc, wm, row)) return 1;
  if (c->KH * c->KW > DW_TAPS) return 0;
  lp = (c->W + c->pl + (c->KW - 1) * c->dw + c->sw) / c->sw + 1;        /* at least the strip's phase width */
  rows = (DW_BUF - DW_BLK * DW_VEC - c->KW * c->dw) / (c->sw * lp) - 1; /* padded rows a strip may hold */
  strip = (rows - (c->KH - 1) * c->dh - 1) / c->sh + 1;
  if (rows < (c->KH - 1) * c->dh + 1 || strip < 1) return 0;
  if (strip > (DW_BUF - DW_BLK * DW_VEC) / lp - 1) strip = (DW_BUF - DW_BLK * DW_VEC) / lp - 1; /* the flat run */
  if (strip < 1) return 0;
  s = *c;
  for (oh0 = 0; oh0 < c->OH; oh0 += strip) {
    int64_t oh1 = oh0 + strip < c->OH ? oh0 + strip : c->OH;
    int64_t lo = oh0 * c->sh - c->pt, hi = (oh1 - 1) * c->sh - c->pt + (c->KH - 1) * c->dh + 1;
    int64_t a = lo > 0 ? lo : 0, b = hi < c->H ? hi : c->H;
    s.OH = oh1 - oh0;
    s.pt = a - lo;
    s.H = b > a ? b - a : 0;
    if (s.H == 0) { /* every tap in the padding: the strip is zeros */
      int64_t i;
      for (i = 0; i < s.OH * c->OW; i++) row[oh0 * c->OW + i] = 0.f;
      continue;
    }
    if (!dw_level(&s, xc + a * c->W, wm, row + oh0 * c->OW)) return 0;
  }
  return 1;
}

/* The SIMD row epilogues: bias/BN and the chain's vector prefix in registers, one pass over the row
 * (GCC leaves the per-op loops of epi_body scalar under -ftrapping-math), then the rest of the
 * chain on the row (mi__blis_epi_tail). The source is channel m's OH rows of OW outputs at a row
 * stride of ss floats: the output row itself (ss == OW, one flat run) or a GEMM's raw sums with
 * junk columns (conv.packed_gemm's flat planes), so compacting them costs no pass of its own. */
MI__AVX512 static void epi_avx512(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m,
                                  const float *src, int64_t ss, float *row) {
  int64_t len = c->OH * c->OW, nr = ss == c->OW ? 1 : c->OH, wd = len / nr, r, i;
  for (r = 0; r < nr; r++)
    for (i = 0; i < wd; i += 16) {
      __mmask16 k = wd - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (wd - i)) - 1u);
      _mm512_mask_storeu_ps(row + r * wd + i, k,
                            mi__blis_epi512(c, t, n, m, r * wd + i, k, _mm512_maskz_loadu_ps(k, src + r * ss + i)));
    }
  if (c->pg_vec_ops < c->epi_n) mi__blis_epi_tail(c, t, n, m, 0, row, len, c->pg_vec_ops, 0);
}
/* One op of the chain on nv registers: the switch is taken once per block, not per register (per
 * register it cost more than the op itself), and each case inlines the op with its kind constant. */
#define EPI_VN 8
#define EPI_ACT_CASE(K)                                            \
  case K: {                                                        \
    mi__blis_epi_op_t o_ = *op;                                    \
    o_.act = K;                                                    \
    for (j = 0; j < nv; j++) v[j] = mi__blis_act256_op(&o_, v[j]); \
  } break;
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma"))) void
act256_block(const mi__blis_epi_op_t *op, __m256 *v, int nv) {
  int j;
  switch (op->act) {
    EPI_ACT_CASE(MI__ACT_RELU)
    EPI_ACT_CASE(MI__ACT_CLIP)
    EPI_ACT_CASE(MI__ACT_LEAKY)
    EPI_ACT_CASE(MI__ACT_HSIGMOID)
    EPI_ACT_CASE(MI__ACT_AFFINE)
  default:
    for (j = 0; j < nv; j++) v[j] = mi__blis_act256_op(op, v[j]);
    break;
  }
}
#undef EPI_ACT_CASE
/* Blocks of up to EPI_VN registers of one source row; only a row's last register is masked
 * (masked loads and stores cost several times more than plain ones on some cores). */
MI__AVX2 static void epi_avx2(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m,
                              const float *src, int64_t ss, float *row) {
  int64_t len = c->OH * c->OW, nr = ss == c->OW ? 1 : c->OH, wd = len / nr, r, i;
  const float *res[MI__EPI_MAX];
  int32_t e;
  __m256 sc = _mm256_set1_ps(c->affine ? c->scale[m] : 1.f), sh = _mm256_set1_ps(c->affine ? c->shift[m] : 0.f);
  __m256i lk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(wd % 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (e = 0; e < c->pg_vec_ops; e++)
    res[e] = c->epi[e].act == MI__ACT_NONE ? (const float *)t[c->epi[e].tensor] + (n * c->M + m) * len : NULL;
  for (r = 0; r < nr; r++)
    for (i = 0; i < wd; i += 8 * EPI_VN) {
      const float *s = src + r * ss + i;
      float *d = row + r * wd + i;
      int64_t p = r * wd + i, left = wd - i;
      int nv = left >= 8 * EPI_VN ? EPI_VN : (int)((left + 7) / 8), full = nv - (left < 8 * nv), j;
      __m256 v[EPI_VN];
      for (j = 0; j < full; j++) v[j] = _mm256_loadu_ps(s + 8 * j);
      if (full < nv) v[full] = _mm256_maskload_ps(s + 8 * full, lk);
      if (c->affine)
        for (j = 0; j < nv; j++) v[j] = _mm256_fmadd_ps(v[j], sc, sh);
      for (e = 0; e < c->pg_vec_ops; e++) {
        if (!res[e]) {
          act256_block(&c->epi[e], v, nv);
          continue;
        }
        for (j = 0; j < full; j++) v[j] = _mm256_add_ps(v[j], _mm256_loadu_ps(res[e] + p + 8 * j));
        if (full < nv) v[full] = _mm256_add_ps(v[full], _mm256_maskload_ps(res[e] + p + 8 * full, lk));
      }
      for (j = 0; j < full; j++) _mm256_storeu_ps(d + 8 * j, v[j]);
      if (full < nv) _mm256_maskstore_ps(d + 8 * full, lk, v[full]);
    }
  if (c->pg_vec_ops < c->epi_n) mi__blis_epi_tail(c, t, n, m, 0, row, len, c->pg_vec_ops, 0);
}
static void epi_c(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *src,
                  int64_t ss, float *row) {
  int64_t oh, j;
  if (src != row)
    for (oh = 0; oh < c->OH; oh++)
      for (j = 0; j < c->OW; j++) row[oh * c->OW + j] = src[oh * ss + j];
  epi_body(c, t, n, m, row, c->OH * c->OW, c->OH * c->OW);
}

static void epi_level(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *src,
                      int64_t ss, float *row) {
  switch (c->simd) {
  case MI__SIMD_AVX512: epi_avx512(c, t, n, m, src, ss, row); break;
  case MI__SIMD_AVX2: epi_avx2(c, t, n, m, src, ss, row); break;
  default: epi_c(c, t, n, m, src, ss, row); break;
  }
}

void mi__blis_epi_row(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, float *row) {
  epi_level(c, t, n, m, row, c->OW, row);
}

typedef struct compact_task {
  const mi__blis_conv_t *c;
  void *const *t;
  int64_t n, m0, ss;
  const float *raw;
  float *y;
} compact_task_t;

/* Items are the group's output channels. */
static void compact_part(void *arg, int64_t m0, int64_t m1) {
  const compact_task_t *k = arg;
  int64_t m, ohw = k->c->OH * k->c->OW, nf = (k->c->OH - 1) * k->ss + k->c->OW;
  for (m = m0; m < m1; m++) epi_level(k->c, k->t, k->n, k->m0 + m, k->raw + m * nf, k->ss, k->y + m * ohw);
}

void mi__blis_epi_compact(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env, int64_t n,
                          int64_t m0, int64_t mg, const float *raw, int64_t ss, float *y) {
  compact_task_t k;
  k.c = c;
  k.t = t;
  k.n = n;
  k.m0 = m0;
  k.ss = ss;
  k.raw = raw;
  k.y = y;
  mi__blis_parallel(env, mg, 1, c->OH * c->OW * (1 + c->epi_n), compact_part, &k);
}
