/* blis_conv.h - convolution geometry and the fused epilogue shared by the conv variants. */
#ifndef MI_BLIS_CONV_H
#define MI_BLIS_CONV_H

#include "blis_internal.h"

#define MI__EPI_MAX 8

typedef struct mi__blis_epi_op {
  int32_t act; /* MI__ACT_* or MI__ACT_NONE for a residual add */
  float a, b;
  int32_t tensor; /* residual operand (same shape as the output) when act == NONE */
} mi__blis_epi_op_t;

typedef struct mi__blis_conv {
  int32_t variant; /* MI__CONV_* */
  int32_t simd;    /* MI__SIMD_*: code path of the depthwise planes and the epilogue */
  int32_t x, w, y; /* tensor indices */
  int32_t nhwc_in, nhwc_out;
  int64_t N, C, H, W, M, KH, KW, OH, OW, G, sh, sw, dh, dw, pt, pl;
  int64_t block;  /* im2col_block or oc_block */
  int32_t affine; /* 1 when scale/shift apply */
  int32_t epi_n;
  mi__blis_epi_op_t epi[MI__EPI_MAX];
  float *scale, *shift; /* M each, inside the state block */
  float *packed;        /* variant-specific, inside aux */
  uint16_t *packed_h;   /* conv.packed_gemm with FP16 storage: the panels as IEEE half, inside aux */
  uint32_t *packed_b;   /* conv.packed_gemm_bf16: the panels as BF16 pairs along k, inside aux */
  int32_t pg_mv;        /* conv.packed_gemm: 1 = channels in the vector lanes (small planes) */
  int32_t pg_vec_ops;   /* conv.packed_gemm: leading epilogue ops applied in registers */
  int32_t pg_ek;        /* MI__EK_*: the epilogue chain when it is one of the common ones */
  int64_t pg_mr;        /* conv.packed_gemm: rows per packed weight panel */
  int32_t pg_direct;    /* conv.packed_gemm: B is the input itself (pointwise, stride 1) */
  int32_t pg_band;      /* conv.packed_gemm: run on a depthwise conv's bands (blis_dwpw.c) */
  int64_t pg_hp, pg_wp; /* conv.packed_gemm, stride 1: padded plane (0 = im2col instead) */
  int32_t pg_inplace;   /* ... the padded plane is the input itself (stride 1, no padding): no copy */
  int32_t pg_nojunk;    /* ... the flat run is the output's layout (pg_wp == OW): tiles store
                         * in place with the epilogue, no segments, no raw sums */
  int64_t *pg_koff;     /* ... offset of row k = (ci, kh, kw) in the padded planes, inside aux */
  int64_t *pg_pix;      /* ... "mv" tiles: flat offset oh*wp + ow of output pixel oh*OW + ow, inside aux */
  int64_t *pg_seg;      /* ... AVX-512 "nv" tiles: output row segments of <= 16 pixels as
                         * {flat offset, output pixel, length}, inside aux */
  int64_t pg_nseg;
  float *pg_raw;                  /* ... raw sums over the flat padded pixels, inside aux */
  int32_t dw_cl;                  /* conv.depthwise_direct: channels-in-lanes blocks (packed holds weights) */
  float *scratch;                 /* im2col columns or NHWC input copy, inside aux */
  const struct mi__blis_conv *pw; /* conv.depthwise_direct: the pointwise conv run in the same pass */
  int64_t pw_band;                /* with pw: floats of one band of depthwise rows (blis_dwpw.c) */
  int32_t pg_gated;               /* conv.packed_gemm: x is a Mul's operand, scaled per channel by
                                   * tensor `gate` through the weights (BF16: as the tiles convert x;
                                   * blis_convgate.c) */
  int32_t gate;
  float *pg_gated_w; /* ... the packed weights times the gate, written each run, inside aux */
} mi__blis_conv_t;

enum { MI__CONV_IM2COL = 0,
       MI__CONV_1X1,
       MI__CONV_DW,
       MI__CONV_NHWC,
       MI__CONV_PG,
       MI__CONV_WINO,
       MI__CONV_WINO1D };
enum { MI__SIMD_C = 0,
       MI__SIMD_AVX2,
       MI__SIMD_AVX512 };
/* Epilogue chains after bias/BN that the AVX-512 GEMM tile has specialised code for. */
enum { MI__EK_GENERIC = 0,
       MI__EK_NONE,
       MI__EK_RELU,
       MI__EK_CLIP,
       MI__EK_ADD,
       MI__EK_ADD_RELU };

/* The chain ops the SIMD kernels apply in registers (residual add, and the lane-wise Relu, Clip,
 * LeakyRelu, HardSigmoid, HardSwish, x * a + b); a chain's first other op and all after it run on
 * the stored rows. */
static inline int mi__blis_epi_vec_op(int32_t act) {
  return act == MI__ACT_NONE || act == MI__ACT_RELU || act == MI__ACT_CLIP || act == MI__ACT_HSWISH ||
         act == MI__ACT_LEAKY || act == MI__ACT_HSIGMOID || act == MI__ACT_AFFINE;
}

/* Those lane-wise ops on x[0..n): 1, or 0 (nothing done) for any other kind. Inlined into each
 * caller, so the loops vectorise for the caller's target (a conv row's AVX-512 or AVX2 epilogue,
 * the standalone op's plain C). Comparisons rather than fminf/fmaxf (libm calls); NaN in gives
 * NaN out either way; a * x is computed always so the LeakyRelu loop vectorises. */
static inline __attribute__((always_inline)) int mi__blis_act_lanes(int32_t kind, float a, float b, float *x,
                                                                    int64_t n) {
  int64_t i;
  switch (kind) {
  case MI__ACT_RELU:
    for (i = 0; i < n; i++) x[i] = x[i] > 0.f ? x[i] : 0.f;
    return 1;
  case MI__ACT_LEAKY:
    for (i = 0; i < n; i++) {
      float v = x[i], av = a * v;
      x[i] = v >= 0.f ? v : av;
    }
    return 1;
  case MI__ACT_CLIP:
    for (i = 0; i < n; i++) x[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
    return 1;
  case MI__ACT_HSIGMOID:
    for (i = 0; i < n; i++) {
      float h = a * x[i] + b;
      x[i] = h < 0.f ? 0.f : (h > 1.f ? 1.f : h);
    }
    return 1;
  case MI__ACT_HSWISH:
    for (i = 0; i < n; i++) {
      float h = x[i] / 6.f + 0.5f;
      x[i] = x[i] * (h < 0.f ? 0.f : (h > 1.f ? 1.f : h));
    }
    return 1;
  case MI__ACT_AFFINE:
    for (i = 0; i < n; i++) x[i] = x[i] * a + b;
    return 1;
  default: return 0;
  }
}

/* Widest code path this CPU runs (cpuid bits and the compiler's runtime check agree). */
int32_t mi__blis_simd_level(uint32_t isa);
/* Floats of the largest plane the SIMD depthwise path takes (its padded copy lives on the stack). */
#define MI__DW_PLANE_MAX 16384
/* One depthwise plane (channel m of image n: input plane xc, filter wm) into row; 0 when the
 * padded plane is too large for the SIMD path (the caller runs the plain loops). */
int mi__blis_dw_plane(const mi__blis_conv_t *c, const float *xc, const float *wm, float *row);

/* Applies bias/BN, activations and residual adds to channel m's OH*OW row of image n. */
void mi__blis_epi_row(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, float *row);
/* The conv's bias, then the chain after it in the kernel's group (per-channel Add, BatchNormalization,
 * scalar affine, activations, hard-swish, residual Add) as c's scale, shift and epilogue ops; sets
 * c->y to the chain's last value and p->nodes_used (blis_conv.c). */
int32_t mi__blis_conv_epilogue(mi__blis_prep_t *p, mi__blis_conv_t *c, const mi_node_desc_t *conv);
/* The same on channels [m0, m0 + mg) of image n, on all threads: channel m0 + i's OH rows of OW
 * outputs read at raw + i * ((OH - 1) * ss + OW) with row stride ss, written compact to y + i * OH*OW. */
void mi__blis_epi_compact(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env, int64_t n,
                          int64_t m0, int64_t mg, const float *raw, int64_t ss, float *y);
/* conv.packed_gemm (blis_pgemm.c): rows per weight panel, packed size, packing, and one GEMM over
 * group g of image n, pixels [p0, p0 + npix) of each output row, B[k][p] at b + k * ldb + p. */
int64_t mi__blis_pg_panel(int32_t simd, int mv);
uint64_t mi__blis_pg_packed_floats(const mi__blis_conv_t *c);
/* Packs w (FLOAT32, or IEEE half when w_half) into c->packed, or into c->packed_h as half when
 * that is set (FP16 storage; the float values rounded to nearest even, as the FP16 transform). */
void mi__blis_pg_pack(mi__blis_conv_t *c, const void *w, int w_half);
/* conv.packed_gemm_bf16 (blis_pgemm_bf16.c): 32-bit pairs the BF16 panels take (8-row panels,
 * k in pairs), the packing of FLOAT32 weights w into c->packed_b, and one float rounded to BF16
 * (nearest even, denormals to signed zero, NaN kept quiet: what the conversion instruction does). */
uint64_t mi__blis_pgb_packed_pairs(const mi__blis_conv_t *c);
void mi__blis_pgb_pack(mi__blis_conv_t *c, const float *w);
uint16_t mi__blis_f2bf(float f);
/* IEEE half <-> float, n values (F16C; call only where the CPU has it). */
void mi__blis_h2f(const uint16_t *h, float *f, int64_t n);
void mi__blis_f2h(const float *f, uint16_t *h, int64_t n);
void mi__blis_pg_gemm(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env, int64_t n,
                      int64_t g, const float *b, int64_t ldb, int64_t p0, int64_t npix);
/* Epilogue ops from index `from` on (and bias/BN first when `affine`), scalar, on pixels
 * [p0, p0 + len) of channel m of image n, stored at row. */
void mi__blis_epi_tail(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, int64_t p0,
                       float *row, int64_t len, int32_t from, int affine);
/* AVX2 depthwise 3x3 plane (stride 1 or 2) with the epilogue (blis_dw256.c); 0 when the geometry
 * is not taken. */
int mi__blis_dw256_plane(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc,
                         const float *wm, float *row);
/* AVX-512 depthwise plane with the epilogue (blis_dw512.c); 0 when the geometry is not taken. */
int mi__blis_dw512_plane(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m,
                         const float *xc, const float *wm, float *row);
/* The 3x3 row kernels of mi__blis_dw512_plane on output rows [oh0, oh1) only, row oh0 stored at
 * out (a band of a depthwise-then-pointwise pass, blis_dwpw.c); _fit: the geometry they take
 * (3x3, dilation 1, stride 1 or 2) with every epilogue op in registers. */
int mi__blis_dw512_rows_fit(const mi__blis_conv_t *c);
void mi__blis_dw512_rows(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc,
                         const float *wm, float *out, int64_t oh0, int64_t oh1);
/* The same on 8-lane registers (AVX2, blis_dw256.c), for the geometry mi__blis_dw512_rows_fit takes. */
void mi__blis_dw256_rows(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, const float *xc,
                         const float *wm, float *out, int64_t oh0, int64_t oh1);
/* Joins a pointwise conv.packed_gemm step `s` (state c) to the depthwise step before it in the
 * kernel when that one produces c's input alone and its geometry is taken: the depthwise step then
 * runs both over bands of rows, this one nothing. */
void mi__blis_dwpw_link(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c);
/* The same with B[k][p] at b + koff[k] + p when koff is set, and, when raw is set, the plain sums
 * written to raw (row m at raw + m * ldraw, no epilogue). */
void mi__blis_pg_gemm_ex(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env,
                         int64_t n, int64_t g, const float *b, int64_t ldb, const int64_t *koff,
                         int64_t p0, int64_t npix, float *raw, int64_t ldraw);
/* Depthwise with channels in the lanes (AVX-512, blis_dw512.c) for planes whose padded input and
 * output hold at most MI__DW_CL_PIX pixels: whether the conv fits, the weights packed per block
 * of 16 channels ([block][tap][16], 16 * taps floats per block), one block of image n. */
#define MI__DW_CL_PIX 1024
/* conv.packed_gemm puts the channels in the lanes ("mv" tiles) under this many output pixels per
 * call (measured): on the input or im2col columns, and, with AVX-512, on the flat padded planes
 * (resnet's 8x8 planes: 7.5 -> 6.4 us; the AVX2 "mv" tiles are slower than its "nv" ones there). */
#define MI__PG_MV_PIX 40

/* Longest K (input channels) of a pointwise conv that runs AVX2 tiles where AVX-512 executes as two
 * 256-bit halves (blis_cpusel.c). */
#define MI__PW_HALVES_K 64

/* 1 when the CPU (cpuid vendor string, family with the extended family added, MI__ISA_* bits)
 * executes AVX-512 as two 256-bit halves: AMD Zen 4; 0 on every Intel CPU. */
int mi__blis_avx512_halves(const char *vendor, uint32_t family, uint32_t isa);

/* The taps [*t0, *t1) (kh-major) of output row oh of a depthwise conv whose filter rows fall on
 * input rows, not padding: the channels-in-lanes kernels skip the others (they add zeros). */
static inline void mi__blis_dw_row_taps(const mi__blis_conv_t *c, int64_t oh, int64_t *t0, int64_t *t1) {
  int64_t top = oh * c->sh - c->pt, kh0 = 0, kh1 = c->KH;
  while (kh0 < kh1 && top + kh0 * c->dh < 0) kh0++;
  while (kh1 > kh0 && top + (kh1 - 1) * c->dh >= c->H) kh1--;
  *t0 = kh0 * c->KW;
  *t1 = kh1 * c->KW;
}

/* The default SIMD level of a pointwise (1x1, stride 1, one group) conv.packed_gemm of K input and M
 * output channels on npix pixels (generic_epi: its fused chain is MI__EK_GENERIC), given the widest
 * level the CPU runs: AVX2 instead of AVX-512 for the shapes measured faster so where AVX-512 runs
 * in halves, else the widest. */
int32_t mi__blis_pw_simd(int32_t widest, int avx512_halves, int64_t K, int64_t M, int64_t npix, int generic_epi);
#define MI__PG_MV_FLAT 100
int mi__blis_dw_cl_fits(const mi__blis_conv_t *c);
void mi__blis_dw_cl_pack(const mi__blis_conv_t *c, const float *w, float *packed);
void mi__blis_dw_cl_block(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t blk);
/* The same block on AVX2 as two halves of 8 channels (blis_dw256cl.c), from the same packing. */
void mi__blis_dw256_cl_block(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t blk);
/* Whether the AVX2 default takes the channel-lane blocks: what mi__blis_dw_cl_fits takes, less the
 * geometries of the 3x3 row kernel (blis_dw256.c). */
int mi__blis_dw256_cl_fits(const mi__blis_conv_t *c);
/* Vectorised activations (blis_vmath.c): Exp, Erf, Tanh, Sigmoid, Gelu (erf/tanh) in place on
 * AVX-512 or AVX2; 0 when the kind or level is not covered (the caller runs the libm loops).
 * Softmax of one contiguous row, AVX-512 only; 0 when not taken. */
int mi__blis_act_simd(int32_t simd, int32_t kind, float *x, int64_t n);
int mi__blis_softmax_simd(int32_t simd, const float *x, float *y, int64_t len);
/* The same row given its max m (a caller that found it while writing x: blis_smask.c). */
int mi__blis_softmax_from_simd(int32_t simd, const float *x, float *y, int64_t len, float m);
int32_t mi__blis_conv_run_direct(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                                 mi_error_t *err);
int32_t mi__blis_conv_pack_nhwc(mi__blis_conv_t *c, const float *w);
int mi__blis_bn_fold(const mi__blis_prep_t *p, const mi_node_desc_t *n, int64_t c, float *scale,
                     float *shift);
/* conv.winograd (blis_wino.c, run by blis_wino_drv.c): whether the conv is one it takes (dense
 * 3x3, stride and dilation 1, NCHW), and its prepare: weights transformed and packed, s->aux and
 * s->run set. */
int mi__blis_wino_fits(const mi__blis_conv_t *c);
int mi__blis_wino_default(const mi__blis_conv_t *c); /* where the default picks it */
int32_t mi__blis_wino_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err);
/* The same at the AVX2 level as F(6x6, 3x3) (blis_wino6.c): where mi__blis_wino_prep hands over to
 * it, and its prepare. */
int mi__blis_wino6_default(const mi__blis_conv_t *c);
int32_t mi__blis_wino6_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err);
/* conv.packed_gemm_bf16 on a dense 3x3 stride-1 conv as Winograd F(2x2, 3x3) with BF16 tile GEMMs
 * (blis_wino2.c): where that variant takes this form (AVX-512 level, a CPU with AVX512_BF16),
 * and its prepare. */
int mi__blis_wino2_bf16_default(const mi__blis_conv_t *c);
int32_t mi__blis_wino2_bf16_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err);
/* The same for dilated 3x3 stride-1 convs as a batch of sub-grid convs (blis_wino_dil.c): pads
 * equal to the dilation, H and W multiples of it, no fused residual add. */
int mi__blis_wino_dil_fits(const mi__blis_conv_t *c);
int mi__blis_wino_dil_default(const mi__blis_conv_t *c);
int32_t mi__blis_wino_dil_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err);
/* The Winograd kernels' scratch slots, one per part that can run at once (blis_wino_drv.c): claims
 * a free one of `slots` (busy[s] 0 -> 1) and returns its index; release sets it free again. */
int64_t mi__blis_wino_slot_claim(_Atomic int *busy, int64_t slots);
void mi__blis_wino_slot_release(_Atomic int *busy, int64_t s);
/* conv.winograd1d (blis_wino1d.c): dense 1-D convs (and 2-D ones with a 1xK kernel, no row
 * padding) of any stride as Winograd F(m, r) on the polyphase split; whether it takes the
 * conv, where the default picks it, the tile F(m, r) and tap chunks nq it runs a K-tap stride-s
 * conv on, and its prepare. */
int mi__blis_w1d_fits(const mi__blis_conv_t *c);
int mi__blis_w1d_default(const mi__blis_conv_t *c);
void mi__blis_w1d_tile(int64_t K, int64_t s, int64_t *m, int64_t *r, int64_t *nq);
int32_t mi__blis_w1d_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c, mi_error_t *err);
/* The zeroed state of a Conv or ConvTranspose node with room for `m` per-channel scales and
 * shifts (c->scale, c->shift) and its X, W and Y set; NULL with "out of memory" in err. */
mi__blis_conv_t *mi__blis_conv_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n, int64_t m,
                                   mi_error_t *err);
int32_t mi__blis_prep_convt(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);

/* A per-channel gate Mul just before this conv in the kernel (the Mul's result read by this conv
 * alone): 1 when conv.packed_gemm takes it over (c->x becomes the Mul's other operand, the Mul's
 * step does nothing). in_b: the BF16 tiles scale their input as they convert it (pg_call_t's
 * gate); else the caller gives c->pg_gated_w the packed weights' floats (blis_convgate.c). */
int mi__blis_conv_gate_link(mi__blis_prep_t *p, mi__blis_conv_t *c, int in_b);
/* The packed weights times the gate t[c->gate] along their input channels, into c->pg_gated_w. */
void mi__blis_conv_gate_weights(const mi__blis_conv_t *c, void *const *t);

#endif
