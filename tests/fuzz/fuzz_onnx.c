/* fuzz_onnx.c - fuzz target: ONNX import, then shape inference and ordering on what imported. */
#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi_graph_t *g = NULL;
  mi_error_t err;
  /* No base directory: external data references must be refused, never followed. */
  if (mi_onnx_load_buffer(data, size, NULL, &g, &err) == MI_OK) {
    if (mi_graph_toposort(g, &err) == MI_OK) mi_graph_infer_shapes(g, &err);
    mi_graph_destroy(g);
  }
  return 0;
}
