/* plugin_internal.h - what the plugin module's files share: host services, validation, limits,
 * and the loader of plugin/plugin.h. */
#ifndef MI_PLUGIN_PLUGIN_INTERNAL_H
#define MI_PLUGIN_PLUGIN_INTERNAL_H

#include "metainfer/mi_core.h"
#include "plugin/plugin.h"

/** Upper bounds that keep a confused plugin from making the host allocate without limit. */
#define MI__MAX_DEVICES 256u
#define MI__MAX_DESCS 4096u
/** Largest manifest the loader reads; manifests are a few lines. */
#define MI__MAX_MANIFEST_BYTES 65536

/** Checks every description of every device of a created plugin. */
int32_t mi__plugin_validate(const mi_plugin_t *p, mi_error_t *err);

/** Trace line for MI_LOADER_DEBUG. */
void mi__loader_trace(int debug, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
