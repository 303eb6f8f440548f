/* onnx_internal.h - what the ONNX importer's files share (protobuf-c types in, IR values out). */
#ifndef METAINFER_ONNX_INTERNAL_H
#define METAINFER_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph_internal.h"
#include "onnx.pb-c.h"

/** A decoded tensor value: dtype (after DOUBLE/BFLOAT16 -> float32), shape and owned data. */
typedef struct mi__onnx_value {
  int32_t dtype;
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
  void *data;
  size_t nbytes;
} mi__onnx_value_t;

/** Decodes a TensorProto (raw_data, typed fields or external data under base_dir). `label`
 * (the model file) starts every error message. On failure v->data is NULL. */
int32_t mi__onnx_decode_tensor(const Onnx__TensorProto *tp, const char *base_dir,
                               const char *label, mi__onnx_value_t *v, mi_error_t *err);

#endif /* METAINFER_ONNX_INTERNAL_H */
