/* test_loader_util.h - helpers shared by the loader tests: test plugin folders and checks. */
#ifndef MI_TEST_LOADER_UTIL_H
#define MI_TEST_LOADER_UTIL_H

#include <limits.h>

#include "test_util.h"

/* CHECK that text (NULL counts as empty) contains word. */
#define CHECK_CONTAINS(text, word)                                                            \
  do {                                                                                        \
    const char *t_ = (text);                                                                  \
    CHECK(t_ &&strstr(t_, (word)), "'%s' does not contain '%s'", t_ ? t_ : "(null)", (word)); \
  } while (0)

/* $MI_BUILD/tests/plugins/<case> */
static inline const char *tp_dir(const char *c) {
  static char buf[PATH_MAX];
  char rel[PATH_MAX / 2];
  snprintf(rel, sizeof rel, "tests/plugins/%s", c);
  return tu_build_path(buf, sizeof buf, rel);
}

/* Scans one case folder into a fresh registry; the scan itself must succeed. */
static inline mi_registry_t *tp_scan(const char *c) {
  mi_registry_t *r = mi_registry_create();
  mi_error_t err;
  mi_error_clear(&err);
  if (!r || mi_registry_scan(r, tp_dir(c), &err) != MI_OK) {
    fprintf(stderr, "scan %s failed: %s\n", tp_dir(c), err.message);
    exit(1);
  }
  return r;
}

/* The one rejection reason of a folder that holds exactly one bad plugin. */
static inline const char *tp_only_reason(mi_registry_t *r) {
  if (mi_registry_plugin_count(r) != 0 || mi_registry_rejected_count(r) != 1) {
    fprintf(stderr, "expected 0 plugins and 1 rejected, got %d and %d\n",
            mi_registry_plugin_count(r), mi_registry_rejected_count(r));
    g_failures++;
    return NULL;
  }
  return mi_registry_rejected(r, 0, NULL);
}

#endif
