/* sdk_entry.c - the body every plugin's mi_plugin_entry would otherwise write: the ABI major
 * check and its refusal. */
#include "metainfer/mi_sdk.h"

const mi_plugin_api_t *mi_sdk_entry(const mi_host_api_t *host, const mi_plugin_api_t *api,
                                    mi_error_t *err) {
  const char *name = api && api->name ? api->name : "plugin";
  if (!host) {
    mi_sdk_errorf(err, MI_ERR_ABI, "%s: the host's table is NULL", name);
    return NULL;
  }
  /* Only the major decides here: the host checks the minor and the table's size itself. */
  if (host->abi_major != MI_ABI_VERSION_MAJOR) {
    mi_sdk_errorf(err, MI_ERR_ABI, "%s speaks ABI major %d, the host %u", name,
                  MI_ABI_VERSION_MAJOR, host->abi_major);
    return NULL;
  }
  return api;
}
