/* rules_host.c - R12: the plugin loads under the host's own policy (manifest, path, owner and
 * permission checks, name and ABI, every description) and in the host's own isolation (a
 * sacrificial mi-worker with a deadline: no crash, hang, exit, stdout or forged handle). */
#include <limits.h>
#include <stdio.h>
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
    snprintf(why, n, "out of memory");
    return CONFORM_FAIL;
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
    st = CONFORM_PASS;
  } else {
    snprintf(why, n, "mi-host refuses it: %s", refusal ? refusal : "not loaded (no reason given)");
    st = CONFORM_FAIL;
  }
  mi_registry_destroy(r);
  return st;
}
