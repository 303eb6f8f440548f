/* blis_conv.h - convolution geometry and the fused epilogue shared by the conv variants. */
#ifndef MI_BLIS_CONV_H
#define MI_BLIS_CONV_H

#include "blis_internal.h"

#define MI__EPI_MAX 8

typedef struct mi__blis_epi_op {
  int32_t act;    /* MI__ACT_* or MI__ACT_NONE for a residual add */
  float a, b;
  int32_t tensor; /* residual operand (same shape as the output) when act == NONE */
} mi__blis_epi_op_t;

typedef struct mi__blis_conv {
  int32_t variant; /* MI__CONV_* */
  int32_t simd;    /* MI__SIMD_*: code path of the depthwise planes and the epilogue */
  int32_t x, w, y; /* tensor indices */
  int32_t nhwc_in, nhwc_out;
  int64_t N, C, H, W, M, KH, KW, OH, OW, G, sh, sw, dh, dw, pt, pl;
  int64_t block;    /* im2col_block or oc_block */
  int32_t affine;   /* 1 when scale/shift apply */
  int32_t epi_n;
  mi__blis_epi_op_t epi[MI__EPI_MAX];
  float *scale, *shift;  /* M each, inside the state block */
  float *packed;         /* variant-specific, inside aux */
  float *scratch;        /* im2col columns or NHWC input copy, inside aux */
} mi__blis_conv_t;

enum { MI__CONV_IM2COL = 0, MI__CONV_1X1, MI__CONV_DW, MI__CONV_NHWC };
enum { MI__SIMD_C = 0, MI__SIMD_AVX2, MI__SIMD_AVX512 };

/* Widest code path this CPU runs (cpuid bits and the compiler's runtime check agree). */
int32_t mi__blis_simd_level(uint32_t isa);
/* Floats of the largest plane the SIMD depthwise path takes (its padded copy lives on the stack). */
#define MI__DW_PLANE_MAX 16384
/* One depthwise plane (channel m of image n: input plane xc, filter wm) into row; 0 when the
 * padded plane is too large for the SIMD path (the caller runs the plain loops). */
int mi__blis_dw_plane(const mi__blis_conv_t *c, const float *xc, const float *wm, float *row);

/* Applies bias/BN, activations and residual adds to channel m's OH*OW row of image n. */
void mi__blis_epi_row(const mi__blis_conv_t *c, void *const *t, int64_t n, int64_t m, float *row);
int32_t mi__blis_conv_run_direct(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                                 mi_error_t *err);
int32_t mi__blis_conv_pack_nhwc(mi__blis_conv_t *c, const float *w);
int mi__blis_bn_fold(const mi__blis_prep_t *p, const mi_node_desc_t *n, int64_t c, float *scale,
                     float *shift);
int32_t mi__blis_prep_convt(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);

#endif
