/* plugin.h - the plugin module's loader for those who load one plugin outside a registry (the
 * deployment runtime pins the exact plugin a table names): manifests and single-plugin loading;
 * what the measurement worker asks of the loader (load-step reports, refused handles); and the
 * load policy and host services mi-conform holds plugins to. */
#ifndef MI_PLUGIN_PLUGIN_H
#define MI_PLUGIN_PLUGIN_H

#include <stddef.h>

#include "metainfer/mi_core.h"

/** A parsed manifest: the public mi_manifest_t (mi_manifest_load and friends wrap these). */
typedef mi_manifest_t mi__manifest_t;

/** Parses a manifest image; `what` names it in errors (with line and column). On failure the
 * manifest is left empty. */
int32_t mi__manifest_parse(const void *buf, size_t size, const char *what, mi__manifest_t *m,
                           mi_error_t *err);
/** Reads and parses the manifest file at `path`. */
int32_t mi__manifest_load(const char *path, mi__manifest_t *m, mi_error_t *err);
/** Frees the manifest's strings. */
void mi__manifest_clear(mi__manifest_t *m);

/** A loaded plugin with the host services it was given (a table that outlives the entry, see
 * host_api.c). The public part comes first so a mi_plugin_t pointer is also a pointer to this. */
typedef struct mi__plugin_entry {
  mi_plugin_t pub;
  mi_host_api_t *host;
  int debug; /* MI_LOADER_DEBUG: trace each step to stderr */
} mi__plugin_entry_t;

/** Loads the plugin a parsed manifest names: security checks, dlopen, negotiation, create,
 * and validation of every description. On failure *out is NULL and err holds the one-line
 * reason the registry records. When stage_fd >= 0, a line "stage entry|create|describe" is
 * written there before each step that runs plugin code (a preflight child's report). */
int32_t mi__plugin_load(const char *manifest_path, const mi__manifest_t *m, int debug,
                        int stage_fd, mi__plugin_entry_t **out, mi_error_t *err);
/** Destroys the instance, unloads the library and frees the entry. NULL is a no-op. */
void mi__plugin_unload(mi__plugin_entry_t *e);

/** Writes every description of every device of loaded plugin `p` to `fd` (a child's answer to a
 * host that describes plugins in isolation). */
int32_t mi__plugin_snapshot_write(int fd, const mi_plugin_t *p, mi_error_t *err);
/** A stand-in for the plugin a snapshot describes: the same descriptions, checked again, and no
 * code of the plugin's (kernels and buffers are refused). */
int32_t mi__plugin_from_snapshot(const char *manifest_path, const void *snapshot, size_t size,
                                 mi__plugin_entry_t **out, mi_error_t *err);

/** 1 when a manifest's library path is absolute or climbs out with "..": refused. */
int mi__library_path_escapes(const char *lib);
/** The load policy, before any plugin code runs: the manifest's ABI major is the host's, its
 * library path stays in the manifest's folder, and neither the library (followed through
 * links) nor its folders can be written by anyone but this user or root (docs/security.md).
 * On success *real_path (when not NULL) is the resolved library to open, owned by the caller;
 * on failure it is NULL and err holds the host's one-line refusal. */
int32_t mi__plugin_check_files(const char *manifest_path, const mi__manifest_t *m,
                               char **real_path, mi_error_t *err);

/** Gives `entry` its host services table (entry->host, never freed); the services accept its
 * handle from then on until mi__host_api_release (a forged or stale handle is refused, not
 * followed). MI_ERR_OUT_OF_MEMORY when no table can be made. */
int32_t mi__host_api_init(mi__plugin_entry_t *entry);
void mi__host_api_release(mi__plugin_entry_t *entry);
/** How many service calls with a forged handle were refused in this process so far. */
int32_t mi__host_api_refused(void);
/** Reports each load step of later scans on `fd` (see mi__plugin_load); -1: none. */
void mi__registry_set_stage_fd(mi_registry_t *r, int fd);

#endif
