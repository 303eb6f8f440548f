/* sdk_kernel.c - what every plugin asks of a kernel description: the checks a plugin running
 * FP32 activations makes before it looks at the ops, and where each tensor lives. */
#include <limits.h>

#include "metainfer/mi_sdk.h"

int32_t mi_sdk_check_fp32_kernel(const mi_kernel_desc_t *d, const char *plugin, int32_t max_io,
                                 int64_t max_numel, mi_error_t *err) {
  int32_t i;
  if (d->input_count > max_io || d->output_count > max_io || d->output_count < 1)
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "%s: %d inputs / %d outputs not supported", plugin,
                         (int)d->input_count, (int)d->output_count);
  for (i = 0; i < d->tensor_count; i++) {
    const mi_tensor_desc_t *t = d->tensors[i];
    if (!t) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: tensor %d is NULL", plugin, (int)i);
    if (t->rank < 0 || t->rank > MI_MAX_RANK || mi_sdk_numel(t) > max_numel)
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "%s: tensor %d: rank or size out of range",
                           plugin, (int)i);
    /* INT64 only as constant data: shapes, axes, indices the plugin reads on the host. */
    if (t->dtype != MI_DTYPE_FLOAT32 && !(t->dtype == MI_DTYPE_INT64 && t->data))
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                           "%s: tensor %d has dtype %d; only FP32 activations are implemented",
                           plugin, (int)i, (int)t->dtype);
    if (t->layout != MI_LAYOUT_ANY && t->layout != MI_LAYOUT_NCHW)
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "%s: tensor %d: layout %d not supported",
                           plugin, (int)i, (int)t->layout);
  }
  return MI_OK;
}

int mi_sdk_kernel_io(const mi_kernel_desc_t *d, int32_t t, int32_t *index) {
  int32_t i, found = -1;
  int io = MI_SDK_IO_NONE;
  for (i = 0; i < d->input_count && io == MI_SDK_IO_NONE; i++)
    if (d->inputs[i] == t) {
      io = MI_SDK_IO_INPUT;
      found = i;
    }
  for (i = 0; i < d->output_count && io == MI_SDK_IO_NONE; i++)
    if (d->outputs[i] == t) {
      io = MI_SDK_IO_OUTPUT;
      found = i;
    }
  if (index) *index = found;
  return io;
}
