/* load.c - loads one plugin: path and permission checks, dlopen, ABI negotiation, create. */
/* secure_getenv and RTLD_NODELETE are GNU extensions. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_internal.h"

/* The table must reach past its last required function; everything after is optional. */
#define MI__REQUIRED_TABLE_SIZE \
  (offsetof(mi_plugin_api_t, kernel_release) + sizeof(((mi_plugin_api_t *)0)->kernel_release))

typedef struct required_fn {
  const char *name;
  size_t offset;
} required_fn_t;

#define REQ(f) \
  { #f, offsetof(mi_plugin_api_t, f) }
static const required_fn_t k_required[] = {
    REQ(create),
    REQ(destroy),
    REQ(device_count),
    REQ(device_info),
    REQ(knob_count),
    REQ(knob_desc),
    REQ(variant_count),
    REQ(variant_desc),
    REQ(buffer_alloc),
    REQ(buffer_write),
    REQ(buffer_read),
    REQ(buffer_free),
    REQ(kernel_prepare),
    REQ(kernel_run),
    REQ(kernel_release),
};
#undef REQ

/* A library path may name a file in the manifest's directory or below it, never outside. */
int mi__library_path_escapes(const char *lib) {
  const char *p = lib;
  if (lib[0] == '/') return 1;
  while (*p) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') return 1;
    p += n;
    while (*p == '/') p++;
  }
  return 0;
}

/* Anyone who can write the library or its directory can run code in every host that loads
 * it, so such plugins are refused: world-writable; group-writable by a group other than the
 * caller's own (the user-private-group convention of umask 002 stays usable); owned by another
 * user than the caller or root (an owner can always chmod). docs/security.md. */
static int32_t check_writable(const char *path, const char *what, mi_error_t *err) {
  struct stat st;
  if (stat(path, &st) != 0)
    return mi_errorf(err, MI_ERR_IO, "cannot stat %s %s: %s", what, path, strerror(errno));
  if (st.st_mode & S_IWOTH)
    return mi_errorf(err, MI_ERR_ABI, "refused: %s %s is world-writable (mode %03o)", what, path,
                     (unsigned)(st.st_mode & 0777));
  if ((st.st_mode & S_IWGRP) && st.st_gid != getegid())
    return mi_errorf(err, MI_ERR_ABI, "refused: %s %s is writable by group %u (mode %03o)", what,
                     path, (unsigned)st.st_gid, (unsigned)(st.st_mode & 0777));
  if (st.st_uid != 0 && st.st_uid != geteuid())
    return mi_errorf(err, MI_ERR_ABI, "refused: %s %s is owned by uid %u, not by this user or root",
                     what, path, (unsigned)st.st_uid);
  return MI_OK;
}

/* Names the step about to run plugin code on `stage_fd` (a preflight child's report line), so a
 * crash or hang is blamed on entry, create or describe. -1: nobody listens. */
static void stage(int stage_fd, const char *what) {
  if (stage_fd >= 0) {
    ssize_t w = write(stage_fd, what, strlen(what));
    (void)w;
  }
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  char *d = malloc(n + 1);
  if (!d) return NULL;
  if (slash) {
    memcpy(d, path, n);
    if (n == 0) d[n++] = '/';
  } else {
    d[0] = '.';
  }
  d[n] = '\0';
  return d;
}

void mi__plugin_unload(mi__plugin_entry_t *e) {
  if (!e) return;
  if (e->pub.ctx && e->pub.api.destroy) e->pub.api.destroy(e->pub.ctx);
  if (e->pub.dl) dlclose(e->pub.dl);
  mi__host_api_release(e);
  free(e->pub.name);
  free(e->pub.version);
  free(e->pub.path);
  free(e->pub.manifest);
  free(e);
}

/* Negotiation: the entry's answer must be a table of this major that reaches past its last
 * required function, with every required function present. The host keeps a zero-filled copy
 * of min(declared, known) bytes, so optional functions an older table lacks read NULL. */
static int32_t negotiate(mi__plugin_entry_t *e, const mi_plugin_api_t *t, mi_error_t *err) {
  uint32_t size, major, minor;
  size_t i, name_len;
  memcpy(&size, t, sizeof size);
  if (size < offsetof(mi_plugin_api_t, abi_minor) + sizeof(uint32_t))
    return mi_errorf(err, MI_ERR_ABI, "table too small: %u bytes declared, no room for the version",
                     size);
  memcpy(&major, (const char *)t + offsetof(mi_plugin_api_t, abi_major), sizeof major);
  memcpy(&minor, (const char *)t + offsetof(mi_plugin_api_t, abi_minor), sizeof minor);
  if (major != MI_ABI_VERSION_MAJOR)
    return mi_errorf(err, MI_ERR_ABI, "wrong major: plugin speaks ABI %u.%u, host speaks %d.%d",
                     major, minor, MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR);
  if (size < MI__REQUIRED_TABLE_SIZE)
    return mi_errorf(err, MI_ERR_ABI,
                     "table too small: %u bytes declared, ABI %d needs at least %zu "
                     "(through kernel_release)",
                     size, MI_ABI_VERSION_MAJOR, (size_t)MI__REQUIRED_TABLE_SIZE);
  memset(&e->pub.api, 0, sizeof e->pub.api);
  memcpy(&e->pub.api, t, size < sizeof e->pub.api ? size : sizeof e->pub.api);
  e->pub.api.struct_size = size;
  e->pub.declared_size = size;
  e->pub.abi_major = major;
  e->pub.abi_minor = minor;
  for (i = 0; i < sizeof k_required / sizeof k_required[0]; i++) {
    void *fn;
    memcpy(&fn, (const char *)&e->pub.api + k_required[i].offset, sizeof fn);
    if (!fn)
      return mi_errorf(err, MI_ERR_ABI, "required function '%s' is NULL", k_required[i].name);
  }
  /* ABI 1.3's asynchronous pair comes whole: an enqueue without a sync would leave work in
   * flight with no way to wait for it, a sync alone is never called. */
  if (!e->pub.api.kernel_enqueue != !e->pub.api.device_sync)
    return mi_errorf(err, MI_ERR_ABI,
                     "'%s' is set but '%s' is NULL: kernel_enqueue and device_sync come as a "
                     "pair (ABI 1.3)",
                     e->pub.api.kernel_enqueue ? "kernel_enqueue" : "device_sync",
                     e->pub.api.kernel_enqueue ? "device_sync" : "kernel_enqueue");
  name_len = e->pub.api.name ? strnlen(e->pub.api.name, 128) : 0;
  if (name_len == 0 || name_len == 128)
    return mi_errorf(err, MI_ERR_ABI, "plugin name is %s", name_len ? "too long" : "empty");
  return MI_OK;
}

static int32_t open_library(mi__plugin_entry_t *e, const char *lib_path, int stage_fd,
                            mi_error_t *err) {
  void *sym;
  mi_plugin_entry_fn entry;
  const mi_plugin_api_t *table;
  mi_error_t perr;

  /* RTLD_NODELETE: a plugin's code stays mapped after unload. A thread the plugin started and
   * never stopped (or a driver's) may still be running in it: unmapping it under that thread
   * was a crash at the host's exit, now and then (tests/integration/hostile_thread.sh). It also
   * lets LeakSanitizer name the code behind a plugin's allocations. Loading the same library
   * again reuses the mapping. */
  int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
  e->pub.dl = dlopen(lib_path, flags);
  if (!e->pub.dl) {
    const char *why = dlerror();
    return mi_errorf(err, MI_ERR_ABI, "dlopen error: %s", why ? why : "unknown");
  }
  mi__loader_trace(e->debug, "  dlopen ok");
  dlerror();
  sym = dlsym(e->pub.dl, MI_PLUGIN_ENTRY_NAME);
  if (!sym)
    return mi_errorf(err, MI_ERR_ABI, "missing entry symbol '%s' (is it exported?)",
                     MI_PLUGIN_ENTRY_NAME);
  memcpy(&entry, &sym, sizeof entry);
  mi_error_clear(&perr);
  stage(stage_fd, "stage entry\n");
  table = entry(e->host, &perr);
  perr.message[sizeof perr.message - 1] = '\0';
  if (!table)
    return mi_errorf(err, MI_ERR_ABI, "negotiation refused: %s",
                     perr.message[0] ? perr.message : "entry returned NULL without a message");
  return negotiate(e, table, err);
}

static int32_t create_instance(mi__plugin_entry_t *e, mi_error_t *err) {
  mi_error_t perr;
  int32_t rc;
  mi_error_clear(&perr);
  rc = e->pub.api.create(e->host, &e->pub.ctx, &perr);
  perr.message[sizeof perr.message - 1] = '\0';
  if (rc != MI_OK) {
    e->pub.ctx = NULL;
    return mi_errorf(err, MI_ERR_ABI, "create failed (%s): %s", mi_status_message(rc),
                     perr.message[0] ? perr.message : "no message");
  }
  mi_error_clear(&perr);
  rc = e->pub.api.device_count(e->pub.ctx, &e->pub.device_count, &perr);
  perr.message[sizeof perr.message - 1] = '\0';
  if (rc != MI_OK)
    return mi_errorf(err, MI_ERR_ABI, "device_count failed (%s): %s", mi_status_message(rc),
                     perr.message);
  if (e->pub.device_count > MI__MAX_DEVICES)
    return mi_errorf(err, MI_ERR_ABI, "invalid description: %u devices (at most %u)",
                     e->pub.device_count, MI__MAX_DEVICES);
  return MI_OK;
}

int32_t mi__plugin_check_files(const char *manifest_path, const mi__manifest_t *m,
                               char **real_path, mi_error_t *err) {
  char *dir = NULL, *lib_path = NULL, *lib_dir = NULL, *real = NULL;
  size_t n;
  int32_t rc;

  if (real_path) *real_path = NULL;
  if (m->abi_major != MI_ABI_VERSION_MAJOR) {
    rc = mi_errorf(err, MI_ERR_ABI, "wrong major: manifest declares ABI %ld, host speaks %d",
                   m->abi_major, MI_ABI_VERSION_MAJOR);
    goto fail;
  }
  if (mi__library_path_escapes(m->library)) {
    rc = mi_errorf(err, MI_ERR_ABI, "refused: library path '%s' escapes the manifest's directory",
                   m->library);
    goto fail;
  }
  dir = dir_of(manifest_path);
  n = dir ? strlen(dir) + strlen(m->library) + 2 : 0;
  lib_path = dir ? malloc(n) : NULL;
  if (!lib_path) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  snprintf(lib_path, n, "%s/%s", dir, m->library);
  lib_dir = dir_of(lib_path);
  if (!lib_dir) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  if ((rc = check_writable(dir, "directory", err)) != MI_OK ||
      (rc = check_writable(lib_dir, "directory", err)) != MI_OK ||
      (rc = check_writable(lib_path, "library", err)) != MI_OK)
    goto fail;
  /* A symbolic link may lead elsewhere: the file actually opened and its folder must pass too. */
  if (!(real = realpath(lib_path, NULL))) {
    rc = mi_errorf(err, MI_ERR_IO, "cannot resolve library %s: %s", lib_path, strerror(errno));
    goto fail;
  }
  free(lib_dir);
  if (!(lib_dir = dir_of(real))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  if ((rc = check_writable(lib_dir, "directory", err)) != MI_OK ||
      (rc = check_writable(real, "library", err)) != MI_OK)
    goto fail;
  if (real_path) {
    *real_path = real;
    real = NULL;
  }

fail:
  free(dir);
  free(lib_path);
  free(lib_dir);
  free(real);
  return rc;
}

int32_t mi__plugin_load(const char *manifest_path, const mi__manifest_t *m, int debug,
                        int stage_fd, mi__plugin_entry_t **out, mi_error_t *err) {
  mi__plugin_entry_t *e = NULL;
  char *real = NULL;
  int32_t rc;

  *out = NULL;
  if ((rc = mi__plugin_check_files(manifest_path, m, &real, err)) != MI_OK) goto fail;
  mi__loader_trace(debug, "  library %s", real);

  if (stage_fd >= 0) {
    char line[160];
    int k = snprintf(line, sizeof line, "plugin %.128s\n", m->name);
    for (int i = 0; i < k - 1 && i < (int)sizeof line - 2; i++)
      if ((unsigned char)line[i] < 0x20) line[i] = ' ';
    if (k > 0) stage(stage_fd, line);
  }
  e = calloc(1, sizeof *e);
  if (!e) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  e->debug = debug;
  if (mi__host_api_init(e) != MI_OK) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory (host services table)");
    goto fail;
  }
  if ((rc = open_library(e, real, stage_fd, err)) != MI_OK) goto fail;
  mi__loader_trace(debug, "  negotiated: plugin '%s' ABI %u.%u, table %u bytes (host knows %zu)",
                   e->pub.api.name, e->pub.abi_major, e->pub.abi_minor, e->pub.declared_size,
                   sizeof(mi_plugin_api_t));
  if (strcmp(e->pub.api.name, m->name) != 0) {
    rc = mi_errorf(err, MI_ERR_ABI, "manifest names '%s' but the plugin calls itself '%.127s'",
                   m->name, e->pub.api.name);
    goto fail;
  }
  e->pub.name = strdup(e->pub.api.name);
  e->pub.version = strdup(e->pub.api.version ? e->pub.api.version : "");
  e->pub.manifest = strdup(manifest_path);
  e->pub.path = real;
  real = NULL;
  if (!e->pub.name || !e->pub.version || !e->pub.manifest) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  stage(stage_fd, "stage create\n");
  if ((rc = create_instance(e, err)) != MI_OK) goto fail;
  mi__loader_trace(debug, "  created: %u device(s)", e->pub.device_count);
  stage(stage_fd, "stage describe\n");
  if ((rc = mi__plugin_validate(&e->pub, err)) != MI_OK) goto fail;
  *out = e;
  e = NULL;

fail:
  mi__plugin_unload(e);
  free(real);
  return rc;
}
