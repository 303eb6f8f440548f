/* registry.c - the set of loaded plugins and the refused ones: discovery and lookup. */
/* secure_getenv is a GNU extension. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"

typedef struct rejected {
  char *path;
  char *reason;
  char *name; /* the manifest's, when it could be read */
} rejected_t;

struct mi_registry {
  mi__plugin_entry_t **plugins;
  int32_t plugin_count, plugin_cap;
  rejected_t *rejected;
  int32_t rejected_count, rejected_cap;
  int debug;
  mi_registry_preflight_fn preflight;
  void *preflight_ctx;
  int stage_fd;                     /* mi__registry_set_stage_fd: a preflight child's report */
  mi_registry_describe_fn describe; /* mi_registry_set_isolated */
  void *describe_ctx;
};

MI_API mi_registry_t *mi_registry_create(void) {
  mi_registry_t *r = calloc(1, sizeof *r);
  const char *dbg = getenv("MI_LOADER_DEBUG");
  if (r) {
    r->debug = dbg && dbg[0] && strcmp(dbg, "0") != 0;
    r->stage_fd = -1;
  }
  return r;
}

MI_API void mi_registry_set_preflight(mi_registry_t *r, mi_registry_preflight_fn fn, void *ctx) {
  if (!r) return;
  r->preflight = fn;
  r->preflight_ctx = ctx;
}

MI_API void mi_registry_set_isolated(mi_registry_t *r, mi_registry_describe_fn fn, void *ctx) {
  if (!r) return;
  r->describe = fn;
  r->describe_ctx = ctx;
}

/* The stand-in of a plugin described elsewhere (mi_registry_set_isolated). */
static int32_t describe_manifest(mi_registry_t *r, const char *path, const mi__manifest_t *m,
                                 mi__plugin_entry_t **e, mi_error_t *why) {
  void *snap = NULL;
  size_t n = 0;
  int32_t rc = r->describe(r->describe_ctx, path, m->name, &snap, &n, why);
  if (rc == MI_OK) {
    rc = mi__plugin_from_snapshot(path, snap, n, e, why);
    if (rc == MI_OK && strcmp((*e)->pub.name, m->name) != 0) {
      rc = mi_errorf(why, MI_ERR_ABI, "manifest names '%s' but the plugin calls itself '%.127s'",
                     m->name, (*e)->pub.name);
      mi__plugin_unload(*e);
      *e = NULL;
    }
  }
  free(snap);
  return rc;
}

void mi__registry_set_stage_fd(mi_registry_t *r, int fd) {
  if (r) r->stage_fd = fd;
}

MI_API void mi_registry_destroy(mi_registry_t *r) {
  int32_t i;
  if (!r) return;
  /* Unload in reverse order of loading, like a stack of constructors. */
  for (i = r->plugin_count - 1; i >= 0; i--) mi__plugin_unload(r->plugins[i]);
  for (i = 0; i < r->rejected_count; i++) {
    free(r->rejected[i].path);
    free(r->rejected[i].reason);
    free(r->rejected[i].name);
  }
  free(r->plugins);
  free(r->rejected);
  free(r);
}

static int32_t add_rejected_named(mi_registry_t *r, const char *path, const char *name,
                                  const char *reason) {
  rejected_t *grown;
  char *p, *q;
  if (r->rejected_count == r->rejected_cap) {
    int32_t cap = r->rejected_cap ? r->rejected_cap * 2 : 8;
    grown = realloc(r->rejected, (size_t)cap * sizeof *grown);
    if (!grown) return MI_ERR_OUT_OF_MEMORY;
    r->rejected = grown;
    r->rejected_cap = cap;
  }
  p = strdup(path);
  q = strdup(reason);
  if (!p || !q) {
    free(p);
    free(q);
    return MI_ERR_OUT_OF_MEMORY;
  }
  r->rejected[r->rejected_count].path = p;
  r->rejected[r->rejected_count].reason = q;
  r->rejected[r->rejected_count].name = name ? strdup(name) : NULL;
  r->rejected_count++;
  mi__loader_trace(r->debug, "  rejected %s: %s", path, reason);
  return MI_OK;
}

static int32_t add_rejected(mi_registry_t *r, const char *path, const char *reason) {
  return add_rejected_named(r, path, NULL, reason);
}

MI_API const char *mi_registry_refusal(const mi_registry_t *r, const char *name) {
  for (int32_t i = 0; r && name && i < r->rejected_count; i++)
    if (r->rejected[i].name && strcmp(r->rejected[i].name, name) == 0) return r->rejected[i].reason;
  return NULL;
}

/* Takes plugin e into the registry, or unloads it when the list cannot grow. */
static int32_t add_plugin(mi_registry_t *r, mi__plugin_entry_t *e) {
  if (r->plugin_count == r->plugin_cap) {
    int32_t cap = r->plugin_cap ? r->plugin_cap * 2 : 8;
    mi__plugin_entry_t **grown = realloc(r->plugins, (size_t)cap * sizeof *grown);
    if (!grown) {
      mi__plugin_unload(e);
      return MI_ERR_OUT_OF_MEMORY;
    }
    r->plugins = grown;
    r->plugin_cap = cap;
  }
  r->plugins[r->plugin_count++] = e;
  return MI_OK;
}

/* Records the manifest's plugin as rejected (by its name) and releases the manifest. */
static int32_t reject_manifest(mi_registry_t *r, const char *path, mi__manifest_t *m,
                               const char *reason) {
  int32_t rc = add_rejected_named(r, path, m->name, reason);
  mi__manifest_clear(m);
  return rc;
}

/* Loads the plugin one manifest names; any failure becomes a rejection record. Only running
 * out of memory for the records themselves is an error. */
static int32_t load_manifest(mi_registry_t *r, const char *path) {
  mi__manifest_t m;
  mi__plugin_entry_t *e = NULL;
  mi_plugin_t *prev;
  mi_error_t why;
  int32_t rc;

  mi_error_clear(&why);
  mi__loader_trace(r->debug, "manifest %s", path);
  if (mi__manifest_load(path, &m, &why) != MI_OK) return add_rejected(r, path, why.message);
  mi__loader_trace(r->debug, "  name '%s', library '%s', abi_major %ld", m.name, m.library,
                   m.abi_major);
  prev = mi_registry_find(r, m.name);
  if (prev) {
    snprintf(why.message, sizeof why.message,
             "duplicate: a plugin named '%s' is already loaded from %s", m.name, prev->path);
    mi__manifest_clear(&m);
    return add_rejected(r, path, why.message);
  }
  if (r->describe) {
    rc = describe_manifest(r, path, &m, &e, &why);
    if (rc == MI_ERR_NOT_FOUND) {
      mi__manifest_clear(&m);
      return MI_OK;
    }
    if (rc != MI_OK) return reject_manifest(r, path, &m, why.message);
    mi__manifest_clear(&m);
    if ((rc = add_plugin(r, e)) == MI_OK)
      mi__loader_trace(r->debug, "  described '%s' %s in isolation", e->pub.name, e->pub.version);
    return rc;
  }
  if (r->preflight) {
    rc = r->preflight(r->preflight_ctx, path, m.name, &why);
    if (rc == MI_ERR_NOT_FOUND) {
      mi__manifest_clear(&m);
      mi__loader_trace(r->debug, "  skipped by the preflight: %s", why.message);
      return MI_OK;
    }
    if (rc != MI_OK) return reject_manifest(r, path, &m, why.message);
  }
  rc = mi__plugin_load(path, &m, r->debug, r->stage_fd, &e, &why);
  if (rc != MI_OK) return reject_manifest(r, path, &m, why.message);
  mi__manifest_clear(&m);
  if ((rc = add_plugin(r, e)) == MI_OK)
    mi__loader_trace(r->debug, "  loaded '%s' %s from %s", e->pub.name, e->pub.version,
                     e->pub.path);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_manifest(const char *name) {
  static const char ext[] = ".mi-plugin";
  size_t n = strlen(name), e = sizeof ext - 1;
  return n > e && name[0] != '.' && strcmp(name + n - e, ext) == 0;
}

MI_API int32_t mi_registry_scan(mi_registry_t *r, const char *dir, mi_error_t *err) {
  DIR *d;
  struct dirent *de;
  char **names = NULL, **grown;
  size_t count = 0, cap = 0, i;
  int32_t rc = MI_OK;

  if (!r || !dir || !dir[0])
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "registry scan: no directory given");
  mi__loader_trace(r->debug, "scanning %s", dir);
  d = opendir(dir);
  if (!d)
    return mi_errorf(err, MI_ERR_IO, "plugin directory %s: %s", dir, strerror(errno));
  while ((de = readdir(d)) != NULL) {
    if (!is_manifest(de->d_name)) continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      grown = realloc(names, cap * sizeof *names);
      if (!grown) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory scanning %s", dir);
        goto done;
      }
      names = grown;
    }
    names[count] = strdup(de->d_name);
    if (!names[count]) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory scanning %s", dir);
      goto done;
    }
    count++;
  }
  /* A stable order makes "first one wins" for duplicate names reproducible. */
  if (count) qsort(names, count, sizeof *names, cmp_str);
  for (i = 0; i < count; i++) {
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) continue;
    if (load_manifest(r, path) != MI_OK) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
      goto done;
    }
  }

done:
  closedir(d);
  for (i = 0; i < count; i++) free(names[i]);
  free(names);
  return rc;
}

MI_API int32_t mi_registry_scan_env(mi_registry_t *r, mi_error_t *err) {
  /* secure_getenv: a setuid host must not load code named by whoever runs it. */
  const char *env = secure_getenv("MI_PLUGIN_PATH");
  const char *p;
  if (!r) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "registry is NULL");
  if (!env || !env[0]) return MI_OK;
  for (p = env; *p;) {
    size_t n = strcspn(p, ":");
    if (n > 0 && n < PATH_MAX) {
      char dir[PATH_MAX];
      mi_error_t why;
      memcpy(dir, p, n);
      dir[n] = '\0';
      mi_error_clear(&why);
      /* An unreadable entry of a search path is noted, not fatal: the rest still counts. */
      if (mi_registry_scan(r, dir, &why) != MI_OK) {
        if (why.code == MI_ERR_OUT_OF_MEMORY) return mi_errorf(err, why.code, "%s", why.message);
        mi__loader_trace(r->debug, "skipping %s", why.message);
      }
    }
    p += n;
    if (*p == ':') p++;
  }
  return MI_OK;
}

MI_API int32_t mi_registry_plugin_count(const mi_registry_t *r) { return r ? r->plugin_count : 0; }

MI_API mi_plugin_t *mi_registry_plugin(const mi_registry_t *r, int32_t index) {
  if (!r || index < 0 || index >= r->plugin_count) return NULL;
  return &r->plugins[index]->pub;
}

MI_API mi_plugin_t *mi_registry_find(const mi_registry_t *r, const char *name) {
  int32_t i;
  if (!r || !name) return NULL;
  for (i = 0; i < r->plugin_count; i++)
    if (strcmp(r->plugins[i]->pub.name, name) == 0) return &r->plugins[i]->pub;
  return NULL;
}

MI_API int32_t mi_registry_rejected_count(const mi_registry_t *r) {
  return r ? r->rejected_count : 0;
}

MI_API const char *mi_registry_rejected(const mi_registry_t *r, int32_t index,
                                        const char **path) {
  if (path) *path = NULL;
  if (!r || index < 0 || index >= r->rejected_count) return NULL;
  if (path) *path = r->rejected[index].path;
  return r->rejected[index].reason;
}

MI_API int32_t mi_registry_device(const mi_registry_t *r, const char *spec, mi_plugin_t **plugin,
                                  uint32_t *device, mi_error_t *err) {
  char name[128], known[160];
  const char *colon;
  size_t n, used = 0;
  long idx = 0;
  mi_plugin_t *p;
  int32_t i;

  if (plugin) *plugin = NULL;
  if (device) *device = 0;
  if (!r || !spec || !plugin || !device)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "device lookup: NULL argument");
  colon = strrchr(spec, ':');
  n = colon ? (size_t)(colon - spec) : strlen(spec);
  if (n == 0 || n >= sizeof name)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "device '%s': expected PLUGIN:INDEX", spec);
  memcpy(name, spec, n);
  name[n] = '\0';
  if (colon) {
    char *end = NULL;
    errno = 0;
    idx = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || idx < 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "device '%s': index must be a number >= 0",
                       spec);
  }
  p = mi_registry_find(r, name);
  if (!p || (unsigned long)idx >= p->device_count) {
    known[0] = '\0';
    for (i = 0; i < r->plugin_count && used < sizeof known; i++) {
      int k = snprintf(known + used, sizeof known - used, "%s%s:0..%u", i ? ", " : "",
                       r->plugins[i]->pub.name,
                       r->plugins[i]->pub.device_count ? r->plugins[i]->pub.device_count - 1 : 0);
      if (k < 0) break;
      used += (size_t)k;
    }
    /* A plugin found but refused says why, not only that it is missing. */
    if (!p && mi_registry_refusal(r, name))
      return mi_errorf(err, MI_ERR_NOT_FOUND, "device '%s': plugin '%s' %.200s", spec, name,
                       mi_registry_refusal(r, name));
    if (!p)
      return mi_errorf(err, MI_ERR_NOT_FOUND, "device '%s': no plugin '%s' (known: %s)", spec,
                       name, r->plugin_count ? known : "none");
    return mi_errorf(err, MI_ERR_NOT_FOUND, "device '%s': plugin '%s' has %u device(s)", spec,
                     name, p->device_count);
  }
  *plugin = p;
  *device = (uint32_t)idx;
  return MI_OK;
}

static int is_cpu(const mi_plugin_t *p, uint32_t device) {
  mi_device_desc_t d;
  return mi_plugin_device_info(p, device, &d, NULL) == MI_OK && d.kind == MI_DEVICE_CPU;
}

MI_API int mi_registry_cpu_fallback(const mi_registry_t *r, const mi_plugin_t *plugin,
                                    uint32_t device, mi_plugin_t **fb_plugin,
                                    uint32_t *fb_device) {
  mi_plugin_t *best = NULL;
  uint32_t best_dev = 0;
  (void)device;
  if (fb_plugin) *fb_plugin = NULL;
  if (fb_device) *fb_device = 0;
  if (!r || !plugin || !fb_plugin || !fb_device) return 0;
  /* By plugin name, not load order: a tool that loaded the primary's plugin first finds the
   * same device as one that scanned the folder in order. */
  for (int32_t i = 0; i < r->plugin_count; i++) {
    mi_plugin_t *p = &r->plugins[i]->pub;
    if (best && strcmp(p->name, best->name) >= 0) continue;
    for (uint32_t d = 0; d < p->device_count; d++)
      if (is_cpu(p, d)) {
        best = p;
        best_dev = d;
        break;
      }
  }
  /* The primary's own plugin would refuse again what it refused (PoCL and lavapipe are CPU
   * devices too, but the first CPU plugin is another one). */
  if (!best || best == plugin) return 0;
  *fb_plugin = best;
  *fb_device = best_dev;
  return 1;
}

/* The candidates' filter during mi_registry_load_fallback's scan. */
typedef struct fb_scan {
  mi_registry_t *r;
  const mi_plugin_t *primary;
  uint32_t device;
  int primary_cpu;
  const char *want;
  size_t want_len;
  mi_registry_preflight_fn preflight;
  void *ctx;
} fb_scan_t;

static int32_t fallback_candidate(void *ctx, const char *path, const char *name, mi_error_t *err) {
  fb_scan_t *o = ctx;
  mi_plugin_t *fp = NULL;
  uint32_t fd = 0;
  int skip = strcmp(name, o->primary->name) == 0;
  if (o->want) skip |= strlen(name) != o->want_len || strncmp(name, o->want, o->want_len) != 0;
  else /* only a plugin that could still be the first CPU plugin by name (with several folders
        * on the path, one that sorts before the one found so far can come later) */
    skip |= (o->primary_cpu && strcmp(name, o->primary->name) > 0) ||
            (mi_registry_cpu_fallback(o->r, o->primary, o->device, &fp, &fd) &&
             strcmp(name, fp->name) >= 0);
  if (skip) return mi_errorf(err, MI_ERR_NOT_FOUND, "not a fallback candidate");
  return o->preflight ? o->preflight(o->ctx, path, name, err) : MI_OK;
}

MI_API int32_t mi_registry_load_fallback(mi_registry_t *r, const char *path, const char *spec,
                                         const mi_plugin_t *primary, uint32_t device,
                                         mi_registry_preflight_fn preflight, void *ctx,
                                         mi_plugin_t **fb, uint32_t *fb_device, mi_error_t *err) {
  mi_registry_preflight_fn saved;
  void *saved_ctx;
  fb_scan_t o;
  int32_t rc;
  if (fb) *fb = NULL;
  if (fb_device) *fb_device = 0;
  if (!r || !primary || !fb || !fb_device)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "fallback lookup: NULL argument");
  if (spec && strcmp(spec, "ref") == 0) return MI_OK;
  memset(&o, 0, sizeof o);
  o.r = r;
  o.primary = primary;
  o.device = device;
  o.primary_cpu = is_cpu(primary, device);
  o.want = spec;
  o.want_len = spec ? strcspn(spec, ":") : 0;
  o.preflight = preflight;
  o.ctx = ctx;
  saved = r->preflight;
  saved_ctx = r->preflight_ctx;
  r->preflight = fallback_candidate;
  r->preflight_ctx = &o;
  rc = path && path[0] ? mi_registry_scan_path(r, path, err) : mi_registry_scan_env(r, err);
  r->preflight = saved;
  r->preflight_ctx = saved_ctx;
  if (rc) return rc;
  if (!spec) {
    mi_registry_cpu_fallback(r, primary, device, fb, fb_device);
    return MI_OK;
  }
  if ((rc = mi_registry_device(r, spec, fb, fb_device, err)) == MI_ERR_NOT_FOUND) {
    char name[128];
    const char *why;
    snprintf(name, sizeof name, "%.*s", (int)(o.want_len < 127 ? o.want_len : 127), spec);
    if ((why = mi_registry_refusal(r, name)))
      return mi_errorf(err, MI_ERR_NOT_FOUND, "--fallback '%s': plugin '%s' refused at load: %.200s",
                       spec, name, why);
    return mi_errorf(err, MI_ERR_NOT_FOUND,
                     "--fallback '%s': no such device (expected 'ref' or PLUGIN:INDEX of a "
                     "loaded plugin)",
                     spec);
  }
  return rc;
}
