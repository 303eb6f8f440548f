/* fuzz_deploy.c - fuzz target: deployment tables (deployment.yaml, mi_deploy_parse), then the
 * lookups and canonical configuration text a runtime uses on what parsed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "metainfer/mi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi_deploy_table_t *t = NULL;
  mi_error_t err;
  if (mi_deploy_parse((const char *)data, size, "/nonexistent-mi-fuzz/deployment.yaml", &t,
                      &err) != MI_OK)
    return 0;
  (void)mi_deploy_find(t, NULL, NULL);
  for (int32_t i = 0; i < t->entry_count; i++) {
    (void)mi_deploy_find(t, t->entries[i].model, t->entries[i].device);
    for (int32_t k = 0; k < t->entries[i].config_count; k++)
      free(mi_deploy_config_text(&t->entries[i].configs[k]));
  }
  mi_deploy_destroy(t);
  return 0;
}
