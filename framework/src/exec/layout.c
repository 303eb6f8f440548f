/* layout.c - the storage of 4-D activations on a device (NHWC, blocked NCHWc) against the
 * logical ONNX-order data the host keeps: sizes and conversions, done on the host. */
#include <string.h>

#include "exec/exec.h"

uint64_t mi__stored_bytes(const mi_tensor_t *t, int32_t layout, int32_t block, int *ok) {
  uint64_t bytes = mi__tensor_bytes(t, ok);
  if (!*ok || t->rank != 4 || layout != MI_LAYOUT_NCHWC || block < 1) return bytes;
  /* Channels padded to whole blocks. */
  {
    int64_t c = t->dims[1], cp = (c + block - 1) / block * block;
    return c > 0 ? bytes / (uint64_t)c * (uint64_t)cp : bytes;
  }
}

/* Offset (in elements) of logical element (n, c, h, w) in the stored buffer. */
static int64_t stored_offset(const int64_t *d, int32_t layout, int32_t block, int64_t n,
                             int64_t c, int64_t h, int64_t w) {
  if (layout == MI_LAYOUT_NHWC) return ((n * d[2] + h) * d[3] + w) * d[1] + c;
  {
    int64_t cb = (d[1] + block - 1) / block;
    return (((n * cb + c / block) * d[2] + h) * d[3] + w) * block + c % block;
  }
}

static void convert(const mi_array_t *a, int32_t layout, int32_t block, void *stored,
                    int to_stored) {
  size_t es = mi_dtype_size(a->dtype);
  const int64_t *d = a->dims;
  int64_t i = 0;
  if (to_stored && layout == MI_LAYOUT_NCHWC) {
    int64_t cp = (d[1] + block - 1) / block * block;
    memset(stored, 0, (size_t)(d[0] * cp * d[2] * d[3]) * es);
  }
  for (int64_t n = 0; n < d[0]; n++)
    for (int64_t c = 0; c < d[1]; c++)
      for (int64_t h = 0; h < d[2]; h++)
        for (int64_t w = 0; w < d[3]; w++, i++) {
          char *s = (char *)stored + (size_t)stored_offset(d, layout, block, n, c, h, w) * es;
          char *l = (char *)a->data + (size_t)i * es;
          if (to_stored) memcpy(s, l, es);
          else
            memcpy(l, s, es);
        }
}

void mi__layout_pack(const mi_array_t *a, int32_t layout, int32_t block, void *dst) {
  convert(a, layout, block, dst, 1);
}

void mi__layout_unpack(const void *src, int32_t layout, int32_t block, mi_array_t *a) {
  convert(a, layout, block, (void *)src, 0);
}
