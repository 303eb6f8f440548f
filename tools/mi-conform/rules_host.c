/* rules_host.c - R12: the plugin loads under the host's own policy (manifest, path, owner and
 * permission checks, name and ABI, every description) and in the host's own isolation (a
 * sacrificial mi-worker with a deadline: no crash, hang, exit, stdout or forged handle); R16:
 * its manifest and files pass that policy before any of its code runs. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* This manifest only, preflighted exactly as mi-host does. */
static int32_t only_this(void *ctx, const char *path, const char *name, mi_error_t *err) {
  if (strcmp(path, ctx) != 0) return mi_errorf(err, MI_ERR_NOT_FOUND, "another manifest");
  return mi_worker_preflight(NULL, path, name, err);
}

int conform_rule_host_load(conform_ctx_t *c, char *why, size_t n) {
  char dir[PATH_MAX];
  const char *slash = strrchr(c->manifest, '/');
  mi_registry_t *r = mi_registry_create();
  mi_error_t err;
  const char *refusal;
  int st;
  if (!r) {
    return conform_verdict(why, n, CONFORM_FAIL, "out of memory");
  }
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - c->manifest) : 1,
           slash ? c->manifest : ".");
  mi_registry_set_preflight(r, only_this, (void *)c->manifest);
  mi_error_clear(&err);
  if (mi_registry_scan(r, dir, &err) != MI_OK) {
    snprintf(why, n, "cannot scan %s: %s", dir, err.message);
    mi_registry_destroy(r);
    return CONFORM_FAIL;
  }
  refusal = mi_registry_refusal(r, c->name);
  if (mi_registry_find(r, c->name)) {
    snprintf(why, n, "loaded by mi-host's own loader after its preflight in a worker");
    st = CONFORM_PASS;
  } else {
    snprintf(why, n, "mi-host refuses it: %s", refusal ? refusal : "not loaded (no reason given)");
    st = CONFORM_FAIL;
  }
  mi_registry_destroy(r);
  return st;
}

/* R16: the manifest is one the host accepts before running any plugin code (its ABI major, a
 * library path inside its folder, nobody else able to write the library or the folders on its
 * way: the host's own check, mi_manifest_check_files), and the library it names, followed through
 * links, is inside the plugin's folder: a plugin is installed as one folder, and a link out of
 * it loads code whose owner the folder's owner does not control. */
int conform_rule_manifest(conform_ctx_t *c, char *why, size_t n) {
  mi_manifest_t m = {0};
  mi_error_t err;
  char *lib = NULL, *folder = NULL, dir[PATH_MAX];
  const char *slash = strrchr(c->manifest, '/');
  size_t len;
  int st = CONFORM_FAIL;
  mi_error_clear(&err);
  if (mi_manifest_load(c->manifest, &m, &err) != MI_OK) {
    return conform_verdict(why, n, CONFORM_FAIL, "%s", err.message);
  }
  if (mi_manifest_check_files(c->manifest, &m, &lib, &err) != MI_OK) {
    snprintf(why, n, "the host refuses it before opening it: %s", err.message);
    goto done;
  }
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - c->manifest) : 1,
           slash ? c->manifest : ".");
  if (!(folder = realpath(dir, NULL))) {
    snprintf(why, n, "cannot resolve the plugin's folder %s", dir);
    goto done;
  }
  len = strlen(folder);
  if (strncmp(lib, folder, len) != 0 || (lib[len] != '/' && strcmp(folder, "/") != 0)) {
    snprintf(why, n, "library '%s' resolves to %s, outside the plugin's folder %s", m.library,
             lib, folder);
    goto done;
  }
  snprintf(why, n, "ABI %ld, library '%s' inside the plugin's folder, writable by its owner only",
           m.abi_major, m.library);
  st = CONFORM_PASS;
done:
  free(lib);
  free(folder);
  mi_manifest_clear(&m);
  return st;
}
