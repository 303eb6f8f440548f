/* fuzz_manifest.c - fuzz target: the plugin manifest parser. */
#include <stddef.h>
#include <stdint.h>

#include "plugin/plugin_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi__manifest_t m = {0};
  mi_error_t err;
  if (mi__manifest_parse(data, size, "fuzz.mi-plugin", &m, &err) == MI_OK) mi__manifest_clear(&m);
  return 0;
}
