/* drive_tensor.h - the tensor descriptions code that drives a plugin by hand fills (the blis and
 * opencl drivers): one FP32 tensor, NCHW when 4-D, its bytes counted when it carries data.
 * Plugin SDK only. */
#ifndef MI_DRIVE_TENSOR_H
#define MI_DRIVE_TENSOR_H

#include <string.h>

#include "metainfer/mi_plugin.h"

static inline void drive_f32_desc(mi_tensor_desc_t *t, int rank, const int64_t *dims,
                                  const float *data) {
  memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->dtype = MI_DTYPE_FLOAT32;
  t->layout = rank == 4 ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->data = data;
  t->data_bytes = data ? (uint64_t)mi_sdk_numel(t) * 4u : 0;
}

#endif
