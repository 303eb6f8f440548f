/* ref_nbits.c - reference com.microsoft MatMulNBits (DynamicQuantizeLSTM: ref_dqlstm.c): the packed 2/4/8-bit weight dequantized to
 * float [K, N] (each value (q - z) * s in double, rounded once: the value DequantizeLinear gives),
 * then A times it as MatMul does (float sums in k order), then the bias. The session lowers the
 * node to exactly that DequantizeLinear + MatMul (+ Add), so both paths agree to the bit. */
#include <stdio.h>
#include <stdlib.h>

#include "graph/nbits.h"
#include "ref/ref_ops.h"

int32_t mi__ref_matmul_nbits(mi__ref_call_t *c) {
  mi__nb_in_t ins[6];
  mi__nbits_t p;
  char why[256];
  mi_array_t *y = NULL;
  int32_t rc;
  mi__ref_in_views(c, ins, 6);
  if (mi__nbits_check(c->node, ins, &p, why, sizeof why)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const mi_array_t *a = mi__ref_in(c, 0);
  int64_t dims[MI_MAX_RANK], rows = 1;
  for (int32_t d = 0; d < a->rank; d++) dims[d] = a->dims[d];
  for (int32_t d = 0; d + 1 < a->rank; d++) rows *= a->dims[d];
  dims[a->rank - 1] = p.n;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, a->rank, dims, &y)) != MI_OK) return rc;
  float *w = malloc((size_t)(p.k * p.n) * sizeof *w);
  if (!w) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory for the %lld x %lld weight",
                              (long long)p.k, (long long)p.n);
  for (int64_t n = 0; n < p.n; n++)
    for (int64_t k = 0; k < p.k; k++) {
      int64_t blk = k / p.block;
      double q = mi__nbits_code(&p, ins[MI__NB_B].data, n, k);
      w[k * p.n + n] = (float)((q - (double)mi__nbits_zero(&p, &ins[MI__NB_ZP], n, blk)) *
                               (double)mi__nbits_scale(&p, &ins[MI__NB_SCALES], n, blk));
    }
  const float *av = a->data, *bias = ins[MI__NB_BIAS].present ? ins[MI__NB_BIAS].data : NULL;
  float *yv = y->data;
  for (int64_t r = 0; r < rows; r++) {
    float *o = yv + r * p.n;
    for (int64_t k = 0; k < p.k; k++) {
      float x = av[r * p.k + k];
      const float *wr = w + k * p.n;
      for (int64_t n = 0; n < p.n; n++) o[n] += x * wr[n];
    }
    if (bias)
      for (int64_t n = 0; n < p.n; n++) o[n] += bias[n];
  }
  free(w);
  c->out[0] = y;
  return MI_OK;
}
