/* onnx_dtype.h - mapping between ONNX TensorProto data types and mi_dtype. */
#ifndef METAINFER_ONNX_DTYPE_H
#define METAINFER_ONNX_DTYPE_H

#include <stdint.h>

#include "metainfer/mi_plugin.h"

/* ONNX TensorProto.DataType values (stable in the ONNX spec). */
enum {
  MI__ONNX_FLOAT = 1,
  MI__ONNX_UINT8 = 2,
  MI__ONNX_INT8 = 3,
  MI__ONNX_UINT16 = 4,
  MI__ONNX_INT16 = 5,
  MI__ONNX_INT32 = 6,
  MI__ONNX_INT64 = 7,
  MI__ONNX_STRING = 8,
  MI__ONNX_BOOL = 9,
  MI__ONNX_FLOAT16 = 10,
  MI__ONNX_DOUBLE = 11,
  MI__ONNX_UINT32 = 12,
  MI__ONNX_UINT64 = 13,
  MI__ONNX_BFLOAT16 = 16,
  MI__ONNX_UINT4 = 21, /* IR 10: two values a byte, low nibble first */
  MI__ONNX_INT4 = 22
};

/** ONNX element type of an mi_dtype, or 0 when ONNX (IR 8) has none. */
static inline int32_t mi__onnx_from_dtype(int32_t d) {
  switch (d) {
  case MI_DTYPE_FLOAT32: return MI__ONNX_FLOAT;
  case MI_DTYPE_FLOAT16: return MI__ONNX_FLOAT16;
  case MI_DTYPE_INT8: return MI__ONNX_INT8;
  case MI_DTYPE_UINT8: return MI__ONNX_UINT8;
  case MI_DTYPE_INT32: return MI__ONNX_INT32;
  case MI_DTYPE_INT64: return MI__ONNX_INT64;
  case MI_DTYPE_BOOL: return MI__ONNX_BOOL;
  case MI_DTYPE_INT4: return MI__ONNX_INT4; /* packed the same way */
  case MI_DTYPE_INT16: return MI__ONNX_INT16;
  case MI_DTYPE_UINT16: return MI__ONNX_UINT16;
  case MI_DTYPE_UINT32: return MI__ONNX_UINT32;
  case MI_DTYPE_UINT64: return MI__ONNX_UINT64;
  default: return 0;
  }
}

/** mi_dtype an ONNX element type is loaded as (DOUBLE, FLOAT16 and BFLOAT16 become float32: a
 * model exported in half precision is held and computed in float32, as a CPU without half
 * arithmetic runs it; INT4 and UINT4 are unpacked to one INT8 / UINT8 byte a value; the other
 * integer types are held as themselves, exactly), or
 * MI_DTYPE_UNDEFINED when we do not support it. */
static inline int32_t mi__dtype_from_onnx(int32_t e) {
  switch (e) {
  case MI__ONNX_FLOAT:
  case MI__ONNX_DOUBLE:
  case MI__ONNX_FLOAT16:
  case MI__ONNX_BFLOAT16: return MI_DTYPE_FLOAT32;
  case MI__ONNX_INT8:
  case MI__ONNX_INT4: return MI_DTYPE_INT8;
  case MI__ONNX_UINT8:
  case MI__ONNX_UINT4: return MI_DTYPE_UINT8;
  case MI__ONNX_INT32: return MI_DTYPE_INT32;
  case MI__ONNX_INT64: return MI_DTYPE_INT64;
  case MI__ONNX_BOOL: return MI_DTYPE_BOOL;
  case MI__ONNX_INT16: return MI_DTYPE_INT16;
  case MI__ONNX_UINT16: return MI_DTYPE_UINT16;
  case MI__ONNX_UINT32: return MI_DTYPE_UINT32;
  case MI__ONNX_UINT64: return MI_DTYPE_UINT64;
  default: return MI_DTYPE_UNDEFINED;
  }
}

/** The ONNX name of element type e ("STRING", "FLOAT8E4M3FN", ...), for messages; "?" past the
 * types ONNX 1.17 names. */
static inline const char *mi__onnx_type_name(int32_t e) {
  static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                      "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                      "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                      "UINT4", "INT4", "FLOAT4E2M1"};
  return e >= 0 && e < (int32_t)(sizeof names / sizeof names[0]) ? names[e] : "?";
}

#endif /* METAINFER_ONNX_DTYPE_H */
