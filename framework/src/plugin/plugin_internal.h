/* plugin_internal.h - what the plugin module's files share: manifests, loading, validation. */
#ifndef MI_PLUGIN_PLUGIN_INTERNAL_H
#define MI_PLUGIN_PLUGIN_INTERNAL_H

#include "metainfer/mi.h"

/** Upper bounds that keep a confused plugin from making the host allocate without limit. */
#define MI__MAX_DEVICES 256u
#define MI__MAX_DESCS 4096u
/** Largest manifest the loader reads; manifests are a few lines. */
#define MI__MAX_MANIFEST_BYTES 65536

/** A parsed manifest. Strings are owned. */
typedef struct mi__manifest {
  char *name;
  char *library;
  long abi_major;
} mi__manifest_t;

/** Parses a manifest image; `what` names it in errors (with line and column). On failure the
 * manifest is left empty. */
int32_t mi__manifest_parse(const void *buf, size_t size, const char *what, mi__manifest_t *m,
                           mi_error_t *err);
/** Reads and parses the manifest file at `path`. */
int32_t mi__manifest_load(const char *path, mi__manifest_t *m, mi_error_t *err);
/** Frees the manifest's strings. */
void mi__manifest_clear(mi__manifest_t *m);

/** A loaded plugin with what must outlive it: the host services it was given. The public
 * part comes first so a mi_plugin_t pointer is also a pointer to this. */
typedef struct mi__plugin_entry {
  mi_plugin_t pub;
  mi_host_api_t host;
  int debug; /* MI_LOADER_DEBUG: trace each step to stderr */
} mi__plugin_entry_t;

/** Fills the host services table handed to a plugin; host_ctx is `entry`. */
void mi__host_api_init(mi__plugin_entry_t *entry);

/** Loads the plugin a parsed manifest names: security checks, dlopen, negotiation, create,
 * and validation of every description. On failure *out is NULL and err holds the one-line
 * reason the registry records. */
int32_t mi__plugin_load(const char *manifest_path, const mi__manifest_t *m, int debug,
                        mi__plugin_entry_t **out, mi_error_t *err);
/** Destroys the instance, unloads the library and frees the entry. NULL is a no-op. */
void mi__plugin_unload(mi__plugin_entry_t *e);

/** Checks every description of every device of a created plugin. */
int32_t mi__plugin_validate(const mi_plugin_t *p, mi_error_t *err);

/** Trace line for MI_LOADER_DEBUG. */
void mi__loader_trace(int debug, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
