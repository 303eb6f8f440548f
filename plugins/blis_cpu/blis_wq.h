/* blis_wq.h - the weight-only quantized MatMul's state, shared by its 8-bit panels (blis_wq.c)
 * and its 4-bit ones (blis_wq4.c). */
#ifndef MI_BLIS_WQ_H
#define MI_BLIS_WQ_H

#include "blis_conv.h"

#define WQ_MAX_M 8
#define WQ_HOT_BYTES (16ll << 20)
#define WQ_ROWS 4 /* rows of A a pass over a column block carries in registers */

#define WQ_P 64 /* columns of a packed panel: the codes of 64 columns, row after row */

typedef struct wq {
  int64_t m, k, n, np; /* np: panels */
  int32_t a, y;        /* tensors: A (m x k floats), the output (m x n) */
  int32_t sgn;         /* INT8 codes (else UINT8) */
  int32_t simd;
  const uint8_t *pk;  /* panel p's row kk at pk + (p * k + kk) * WQ_P; columns past n hold code 0 */
  const float *s, *z; /* per column (np * WQ_P, 0 past n): scale and zero point */
  int32_t zp;         /* a zero point other than 0 (8-bit codes) */
  /* Gemm: y = alpha * sum + beta * C, C constant, broadcast to [m, n] at strides cm, cn */
  int32_t post;
  float alpha, beta;
  const float *c;
  int64_t cm, cn;
  /* 4-bit codes (blis_wq4.c): panels of 32 bytes a row, scales per block of bs rows along K */
  int32_t nib;
  int64_t bs, nb;    /* block size and blocks along K (1: one scale a column) */
  const uint8_t *zb; /* zero point of (block b, column j) at zb[b * np * WQ_P + j], 0..15 */
} wq_t;

#define WQ4_ROW (WQ_P / 2) /* bytes of a 4-bit panel row */

/* One panel of the 4-bit product: y's columns of panel p, every row of a. */
void mi__blis_wq4_panel(const wq_t *q, const float *a, float *y, int64_t p);
/* 4-bit prepare: when the codes of w (and the zero points) fit 4 bits and the scales are one,
 * one a column or blocks along K (opset 21's block_size), fills q's panels, scales and zero
 * points in one block it allocates (s->aux); 1 when taken, 0 when they do not fit (the 8-bit path
 * takes them), -1 when out of memory. */
int mi__blis_wq4_prepare(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *dq,
                         const mi_tensor_desc_t *w, int tb, wq_t *q);

#endif
