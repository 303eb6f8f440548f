/* fuzz_xfconfig.c - fuzz target: transform configuration YAML, then its canonical text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "metainfer/mi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi_xf_config_t *c = NULL;
  mi_error_t err;
  if (mi_xf_config_parse((const char *)data, size, "fuzz.yaml", &c, &err) == MI_OK) {
    char *canon = NULL;
    /* Whatever parsed must also have a canonical text and a hash (both walk every field). */
    if (mi_xf_config_canonical(c, &canon, &err) == MI_OK) free(canon);
    (void)mi_xf_config_hash(c);
    mi_xf_config_destroy(c);
  }
  return 0;
}
