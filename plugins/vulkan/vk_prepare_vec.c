/* vk_prepare_vec.c - the shapes and weights of conv.vec and conv.dw_vec (shaders/convvec.comp):
 * convolutions that keep a block of outputs per invocation in registers and load each input
 * and weight once for the block, for CPU Vulkan drivers where every buffer load is a loop over
 * the SIMD lanes (docs/backends/vulkan.md, "conv.vec and conv.dw_vec"). */
#include <stdlib.h>
#include <string.h>

#include "vk.h"

#define DW_MAX_KS 7     /* the window and tap loops unroll: kernel sizes up to 7 */
#define DW_MAX_STRIDE 2 /* and strides 1 and 2 */

static int is_dw(const vk_prep_t *p) { return strcmp(p->var->v.id, "conv.dw_vec") == 0; }

/* v: N C H W K OH OW KH KW sh sw ph pw dh dw G (the push block's first 16 words). */
int32_t mi__vk_conv_vec_shape(vk_prep_t *p, int64_t *v, uint64_t *items) {
  const char *id = p->var->v.id;
  int64_t rm = p->spec[K_REG_M], rn = p->spec[K_REG_N];
  if (is_dw(p)) {
    if (v[15] != v[1] || v[4] != v[1])
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: needs group == channels == outputs (group %lld, C %lld, K %lld)",
                           id, (long long)v[15], (long long)v[1], (long long)v[4]);
    if (v[7] != v[8] || v[7] > DW_MAX_KS || v[9] != v[10] || v[9] > DW_MAX_STRIDE || v[13] != 1 || v[14] != 1)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                           "%s: needs a square kernel up to %dx%d, equal strides up to %d and no dilation "
                           "(kernel %lldx%lld, strides %lld,%lld, dilations %lld,%lld)",
                           id, DW_MAX_KS, DW_MAX_KS, DW_MAX_STRIDE, (long long)v[7], (long long)v[8],
                           (long long)v[9], (long long)v[10], (long long)v[13], (long long)v[14]);
    /* the stride and kernel size are compile-time constants of the pipeline */
    p->spec[K_STRIDE] = (uint32_t)v[9];
    p->spec[K_KSIZE] = (uint32_t)v[7];
    *items = (uint64_t)(v[0] * v[4] * ((v[5] + rm - 1) / rm) * ((v[6] + 4 * rn - 1) / (4 * rn)));
    return MI_OK;
  }
  if (v[15] != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: needs group 1 (group %lld)", id, (long long)v[15]);
  /* A 1x1 stride-1 unpadded conv reads its input pixels in output order: one row of H*W, so
   * every quad is one aligned vec4 load when H*W is a multiple of 4. */
  if (v[7] == 1 && v[8] == 1 && v[9] == 1 && v[10] == 1 && v[11] == 0 && v[12] == 0) {
    v[3] *= v[2], v[6] *= v[5];
    v[2] = v[5] = 1;
  }
  p->spec[K_STRIDE] = p->spec[K_KSIZE] = 1; /* not read: one pipeline per knob setting */
  *items = (uint64_t)(v[0] * ((v[4] + 4 * rm - 1) / (4 * rm)) * v[5] * ((v[6] + 3) / 4));
  return MI_OK;
}

/* conv.vec reads 4 output channels per vec4: [K/4][C*KH*KW][4], zero-padded to whole blocks
 * of 4*reg_m channels. conv.dw_vec reads the weights as they are. */
int32_t mi__vk_conv_vec_weights(vk_prep_t *p, const int64_t *v, const float *w, vk_ref_t *out) {
  int64_t blk = 4 * (int64_t)p->spec[K_REG_M], kp = (v[4] + blk - 1) / blk * blk;
  int64_t ckk = v[1] * v[7] * v[8], k, j;
  float *r;
  int32_t rc;
  if (is_dw(p)) return mi__vk_upload(p, w, (size_t)(v[4] * v[7] * v[8]) * 4, out);
  if (!(r = calloc((size_t)(kp * ckk), sizeof *r)))
    return mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  for (k = 0; k < v[4]; k++)
    for (j = 0; j < ckk; j++) r[((k / 4) * ckk + j) * 4 + k % 4] = w[k * ckk + j];
  rc = mi__vk_upload(p, r, (size_t)(kp * ckk) * sizeof *r, out);
  free(r);
  return rc;
}
