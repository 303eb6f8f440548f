/* fuzz_npy.c - fuzz target: the .npy parser. */
#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi_array_t *a = NULL;
  mi_error_t err;
  if (mi_npy_parse(data, size, "fuzz.npy", &a, &err) == MI_OK) mi_array_destroy(a);
  return 0;
}
