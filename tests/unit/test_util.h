/* test_util.h - what every unit test shares: CHECK and the failure count, exit-at-once
 * REQUIRE, the closing summary, paths under $MI_BUILD, scanning the built plugins, relative L2
 * errors and private temporary folders. A header (static inline), so the test glob skips it.
 * With TU_SDK_ONLY defined (code built against the plugin SDK alone, like tools/bench/opencl)
 * the helpers that need the host library are left out. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TU_SDK_ONLY
#include "metainfer/mi_plugin.h"
#else
#include "metainfer/mi.h"
#endif

/* Failed CHECKs so far; main returns non-zero when any. Unused where every check exits. */
static int g_failures __attribute__((unused));

/* Counts the failure and goes on, so one run reports every broken check. */
#define TU_CHECK(cond, ...)                                           \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
      g_failures++;                                                   \
    }                                                                 \
  } while (0)

/* TU_CHECK for checks whose condition says it all. */
#define TU_CHECK_BARE(cond) TU_CHECK(cond, "%s", "check failed")

/* Stops the test at once: for checks that later steps cannot go on without. */
#define TU_REQUIRE(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* The exit code ctest reports as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt). */
#define TU_SKIP_CODE 77

/* Ends the whole test as skipped, saying why. Only for what the machine lacks (no device, no
 * fetched model, no root): what the code under test gets wrong is a failure, never a skip. */
#define TU_SKIP(...)          \
  do {                        \
    fflush(stderr);           \
    printf("SKIP: ");         \
    printf(__VA_ARGS__);      \
    printf("\n");             \
    exit(TU_SKIP_CODE);       \
  } while (0)

/* A file that wants another CHECK (TU_CHECK_BARE, TU_REQUIRE) defines it before this header. */
#ifndef CHECK
#define CHECK TU_CHECK
#endif

/* main's result: 1 and a count on stderr after failed checks, else 0 and "<name>: ok". */
static inline int tu_finish(const char *name) {
  if (g_failures) {
    fprintf(stderr, "%s: %d failure(s)\n", name, g_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

/* The build directory ctest passes in MI_BUILD; "." when unset. */
static inline const char *tu_build_dir(void) {
  const char *b = getenv("MI_BUILD");
  return b && b[0] ? b : ".";
}

/* "<build dir>/<rel>" into buf; returns buf. */
static inline char *tu_build_path(char *buf, size_t cap, const char *rel) {
  snprintf(buf, cap, "%s/%s", tu_build_dir(), rel);
  return buf;
}

/* Writes zoo model `family` to path with the mi-zoo program the build made (extra options in
 * args, its stdout dropped); the command goes into cmd for messages. 0 when it succeeded. */
static inline int tu_mi_zoo(char *cmd, size_t cap, const char *family, const char *path,
                            const char *args) {
  snprintf(cmd, cap, "'%s/bin/mi-zoo' %s --out '%s' %s >/dev/null", tu_build_dir(), family, path,
           args);
  return system(cmd);
}

/* ||a - ref|| / ||ref|| over n floats; the absolute norm when ref is all zeros. */
static inline double tu_rel_l2(const float *a, const float *ref, int64_t n) {
  double num = 0., den = 0.;
  for (int64_t i = 0; i < n; i++) {
    double d = (double)a[i] - (double)ref[i];
    num += d * d;
    den += (double)ref[i] * ref[i];
  }
  return den > 0. ? sqrt(num / den) : sqrt(num);
}

/* A fresh private folder /tmp/mi-<tag>-XXXXXX, its path into dir (cap >= 64 is plenty). */
static inline int tu_tempdir(char *dir, size_t cap, const char *tag) {
  snprintf(dir, cap, "/tmp/mi-%s-XXXXXX", tag);
  return mkdtemp(dir) != NULL;
}

/* Removes dir and everything in it; 0, or -1 (said on stderr) when it cannot. */
static inline int tu_rmtree(const char *dir) {
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) == 0) return 0;
  fprintf(stderr, "could not remove %s\n", dir);
  return -1;
}

#ifndef TU_SDK_ONLY
/* Scans the plugins the build made (<build dir>/plugins) into r with the host loader. */
static inline int32_t tu_scan_plugins(mi_registry_t *r, mi_error_t *err) {
  char dir[1024];
  return mi_registry_scan(r, tu_build_path(dir, sizeof dir, "plugins"), err);
}

/* Plugin `name`'s device `spec` ("opencl:0") in r into *p and *dev. A plugin this build made
 * (its manifest is in $MI_BUILD/plugins) that the loader refused is a failure (exit 1); one
 * that loaded but sees no device on this machine, or one this build did not make, is a skip
 * (exit 77). */
static inline void tu_device_or_skip(const mi_registry_t *r, const char *name, const char *spec,
                                     mi_plugin_t **p, uint32_t *dev) {
  char manifest[1024], rel[256];
  mi_error_t err = {0, ""};
  snprintf(rel, sizeof rel, "plugins/%s.mi-plugin", name);
  tu_build_path(manifest, sizeof manifest, rel);
  if (!mi_registry_find(r, name)) {
    FILE *f = fopen(manifest, "r");
    if (!f) TU_SKIP("%s was not built here", name);
    fclose(f);
    fprintf(stderr, "FAIL: %s was built (%s) but the loader refused it\n", name, manifest);
    exit(1);
  }
  if (mi_registry_device(r, spec, p, dev, &err) != MI_OK) TU_SKIP("%s: %s", spec, err.message);
}

/* tu_rel_l2 of two float32 arrays; INFINITY when a is missing or does not match ref. */
static inline double tu_rel_l2_arrays(const mi_array_t *a, const mi_array_t *ref) {
  int64_t n = mi_array_numel(ref);
  if (!a || a->dtype != MI_DTYPE_FLOAT32 || mi_array_numel(a) != n) return INFINITY;
  return tu_rel_l2(a->data, ref->data, n);
}
#endif

#endif
