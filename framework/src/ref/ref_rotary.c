/* ref_rotary.c - reference ONNX RotaryEmbedding (opset 23) and com.microsoft RotaryEmbedding:
 * per batch, position and head the first rotary_embedding_dim values rotated by the cos / sin of
 * the position's cache row (pairs (2k, 2k + 1) when interleaved, else (k, k + r / 2)):
 * x1 * cos - x2 * sin and x2 * cos + x1 * sin in float; the rest copied. */
#include <string.h>

#include "graph/rotary.h"
#include "ref/ref_ops.h"

int32_t mi__ref_rotary(mi__ref_call_t *c) {
  mi__in_view_t ins[4];
  mi__rot_t p;
  char why[256];
  int32_t rc, ms = c->node->domain && !strcmp(c->node->domain, "com.microsoft");
  if (!ms && c->opset < 23) return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "the op exists from opset 23 on");
  mi__ref_in_views(c, ins, 4);
  if (mi__rot_check(c->node, ms, ins, &p, why, sizeof why)) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s", why);
  const mi_array_t *x = mi__ref_in(c, p.in_x), *pos = p.in_pos >= 0 ? mi__ref_in(c, p.in_pos) : NULL;
  const float *cv = mi__ref_in(c, p.in_cos)->data, *sv = mi__ref_in(c, p.in_sin)->data, *xv = x->data;
  int64_t nb = x->dims[0], s = x->dims[p.x4 ? 2 : 1], nh = p.heads, h = p.head, half = p.rot / 2,
          rows = mi__ref_in(c, p.in_cos)->dims[0];
  mi_array_t *y = NULL;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, x->rank, x->dims, &y)) != MI_OK) return rc;
  c->out[0] = y;
  float *yv = y->data;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t t = 0; t < s; t++) {
      int64_t row = b * s + t; /* MI__ROT_POS_NONE: the caches' [b, t] row */
      if (p.pos == MI__ROT_POS_IDS) row = ((const int64_t *)pos->data)[b * s + t];
      else if (p.pos == MI__ROT_POS_OFFSET)
        row = ((const int64_t *)pos->data)[0] + t;
      if (p.pos != MI__ROT_POS_NONE && (row < 0 || row >= rows))
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "position %lld is outside the caches' %lld rows", (long long)row,
                            (long long)rows);
      const float *co = cv + row * half, *si = sv + row * half;
      for (int64_t n = 0; n < nh; n++) {
        int64_t off = p.x4 ? ((b * nh + n) * s + t) * h : ((b * s + t) * nh + n) * h;
        const float *xi = xv + off;
        float *yo = yv + off;
        memcpy(yo, xi, sizeof *yo * (size_t)h);
        for (int64_t k = 0; k < half; k++) {
          int64_t i1 = p.interleaved ? 2 * k : k, i2 = p.interleaved ? 2 * k + 1 : k + half;
          float x1 = xi[i1], x2 = xi[i2];
          yo[i1] = x1 * co[k] - x2 * si[k];
          yo[i2] = x2 * co[k] + x1 * si[k];
        }
      }
    }
  return MI_OK;
}
