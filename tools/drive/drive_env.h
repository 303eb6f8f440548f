/* drive_env.h - what code that drives a plugin directly (the unit tests, tools/bench) shares:
 * the build directory ($MI_BUILD) and paths under it, removing a scratch folder, and the
 * stop-at-once check DRIVE_REQUIRE. Plugin SDK only (no host library). The unit tests define
 * DRIVE_REQUIRE as their REQUIRE before including this; elsewhere a failed check says where
 * and exits 1. */
#ifndef MI_DRIVE_ENV_H
#define MI_DRIVE_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef DRIVE_REQUIRE
#define DRIVE_REQUIRE(cond)                                             \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)
#endif

/* The build directory ctest (or the caller) passes in MI_BUILD; "." when unset. */
static inline const char *drive_build_dir(void) {
  const char *b = getenv("MI_BUILD");
  return b && b[0] ? b : ".";
}

/* Points PoCL's cache of compiled programs (POCL_CACHE_DIR, unless the caller set it) at the
 * folder MI_POCL_CACHE names (the Makefile's test targets share one between the plain and the
 * sanitizer suites: PoCL's output depends on the kernel source, not on our build), else at
 * fallback (made if missing), so a second run compiles nothing. */
static inline void drive_pocl_cache(const char *fallback) {
  const char *shared = getenv("MI_POCL_CACHE"), *dir = shared && shared[0] ? shared : fallback;
  mkdir(dir, 0755);
  setenv("POCL_CACHE_DIR", dir, 0);
}

/* "<build dir>/<rel>" into buf; returns buf. */
static inline char *drive_build_path(char *buf, size_t cap, const char *rel) {
  snprintf(buf, cap, "%s/%s", drive_build_dir(), rel);
  return buf;
}

/* Removes dir and everything in it; 0, or -1 (said on stderr) when it cannot. */
static inline int drive_rmtree(const char *dir) {
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) == 0) return 0;
  fprintf(stderr, "could not remove %s\n", dir);
  return -1;
}

#endif
