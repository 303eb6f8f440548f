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

/** Gives `entry` its host services table (entry->host, never freed); the services accept its
 * handle from then on until mi__host_api_release (a forged or stale handle is refused, not
 * followed). MI_ERR_OUT_OF_MEMORY when no table can be made. */
int32_t mi__host_api_init(mi__plugin_entry_t *entry);
void mi__host_api_release(mi__plugin_entry_t *entry);


/** 1 when a manifest's library path is absolute or climbs out with "..": refused. */
int mi__library_path_escapes(const char *lib);

/** Checks every description of every device of a created plugin. */
int32_t mi__plugin_validate(const mi_plugin_t *p, mi_error_t *err);

/** Trace line for MI_LOADER_DEBUG. */
void mi__loader_trace(int debug, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
