/* fuzz_recipe.c - fuzz target: YAML recipes (mi_recipe_parse), without a plugin registry. */
#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi_recipe_t *r = NULL;
  mi_error_t err;
  /* A folder that does not exist: relative model paths resolve into it and are not found, so
   * only the parser and validator run; absolute paths are only stat()ed, never opened. */
  if (mi_recipe_parse((const char *)data, size, "/nonexistent-mi-fuzz/recipe.yaml", NULL, &r,
                      &err) == MI_OK)
    mi_recipe_destroy(r);
  return 0;
}
