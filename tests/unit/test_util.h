/* test_util.h - what every unit test shares: CHECK and the failure count, exit-at-once
 * REQUIRE, the closing summary, paths under $MI_BUILD, scanning the built plugins, relative L2
 * errors and private temporary folders. A header (static inline), so the test glob skips it.
 * With TU_SDK_ONLY defined (code built against the plugin SDK alone, like tools/bench/opencl)
 * the helpers that need the host library are left out. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TU_SDK_ONLY
#include "metainfer/mi_plugin.h"
#else
#include "metainfer/mi.h"
#endif

/* The plugin drivers shared with tools/bench (tools/drive) stop a test through REQUIRE. */
#define DRIVE_REQUIRE(cond) REQUIRE(cond)
#include "drive_env.h"

/* Failed CHECKs so far in the whole run; the run fails when any. */
static int g_failures __attribute__((unused));
/* The case running now, for messages; NULL outside the cases. */
static const char *g_tu_case __attribute__((unused));

/* Says where and what failed: "file:line: FAIL <cond>: <message>" (fmt starts with a space). */
static inline void __attribute__((format(printf, 4, 5)))
tu_fail_(const char *file, int line, const char *cond, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: FAIL %s%s%s:", file, line, cond, g_tu_case ? " in case " : "",
          g_tu_case ? g_tu_case : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  g_failures++;
}

/* The one soft check: counts the failure and goes on, so one run reports every broken check.
 * CHECK(cond) or CHECK(cond, "printf format", args...); the format must be a string literal. */
#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) tu_fail_(__FILE__, __LINE__, #cond, " " __VA_ARGS__); \
  } while (0)

/* The one hard check: as CHECK, then stops the test at once (exit 1), for what later steps
 * cannot go on without. From a forked child it ends only the child, with _exit. */
#define REQUIRE(cond, ...)                                  \
  do {                                                      \
    if (!(cond)) {                                          \
      tu_fail_(__FILE__, __LINE__, #cond, " " __VA_ARGS__); \
      tu_stop_();                                           \
    }                                                       \
  } while (0)

/* The exit code ctest reports as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt). */
#define TU_SKIP_CODE 77

/* Ends the whole test as skipped, saying why. Only for what the machine lacks (no device, no
 * fetched model, no root): what the code under test gets wrong is a failure, never a skip. A
 * skip in a later case does not hide an earlier case's failed check: the test then fails. */
#define TU_SKIP(...)            \
  do {                          \
    fflush(stderr);             \
    printf("SKIP: ");           \
    printf(__VA_ARGS__);        \
    printf("\n");               \
    if (g_failures) tu_stop_(); \
    fflush(stdout);             \
    exit(TU_SKIP_CODE);         \
  } while (0)

/* The pid that runs the cases: a REQUIRE in a forked child must not run the parent's exit
 * handlers twice. */
static pid_t g_tu_pid __attribute__((unused));

static inline void tu_stop_(void) {
  fflush(stdout);
  fflush(stderr);
  if (g_tu_pid && getpid() != g_tu_pid) _exit(1);
  exit(1);
}

/* One named case of a test file: TU_CASE(fn) names it after its function. */
typedef struct tu_case {
  const char *name;
  void (*run)(void);
} tu_case_t;
#define TU_CASE(fn) \
  { #fn, fn }

/* Runs the cases the command line names (all when none; MI_TEST_CASE, a comma-separated list,
 * stands in for the command line under ctest), setup first and teardown last when given.
 * `--list` prints the case names, one a line, and runs nothing. Returns main's exit code: 0 when
 * every check held, 1 after a failed check, 2 for an unknown case name. */
static inline int tu_main_(int argc, char **argv, const char *file, const tu_case_t *cases,
                           size_t n, void (*setup)(void), void (*teardown)(void)) {
  const char *slash = strrchr(file, '/'), *env = getenv("MI_TEST_CASE");
  char name[256], envbuf[1024];
  const char *want[64];
  size_t nwant = 0, i, j, ran = 0;
  snprintf(name, sizeof name, "%s", slash ? slash + 1 : file);
  if (strchr(name, '.')) *strchr(name, '.') = '\0';
  g_tu_pid = getpid();
  for (i = 1; i < (size_t)argc; i++) {
    if (strcmp(argv[i], "--list") == 0) {
      for (j = 0; j < n; j++) printf("%s\n", cases[j].name);
      return 0;
    }
    if (nwant < sizeof want / sizeof want[0]) want[nwant++] = argv[i];
  }
  if (nwant == 0 && env && env[0]) {
    char *tok, *save = NULL;
    snprintf(envbuf, sizeof envbuf, "%s", env);
    for (tok = strtok_r(envbuf, ",", &save); tok && nwant < sizeof want / sizeof want[0];
         tok = strtok_r(NULL, ",", &save))
      want[nwant++] = tok;
  }
  for (i = 0; i < nwant; i++) {
    for (j = 0; j < n && strcmp(cases[j].name, want[i]) != 0; j++) continue;
    if (j == n) {
      fprintf(stderr, "%s: no case named '%s' (--list lists them)\n", name, want[i]);
      return 2;
    }
  }
  if (setup) setup();
  for (j = 0; j < n; j++) {
    int before = g_failures, sel = nwant == 0;
    for (i = 0; i < nwant && !sel; i++) sel = strcmp(cases[j].name, want[i]) == 0;
    if (!sel) continue;
    g_tu_case = cases[j].name;
    cases[j].run();
    g_tu_case = NULL;
    ran++;
    fflush(stdout);
    if (g_failures > before)
      fprintf(stderr, "%s: case %s: %d failure(s)\n", name, cases[j].name, g_failures - before);
  }
  if (teardown) teardown();
  if (g_failures) {
    fprintf(stderr, "%s: %d failure(s)\n", name, g_failures);
    return 1;
  }
  printf("%s: ok (%zu case%s)\n", name, ran, ran == 1 ? "" : "s");
  return 0;
}

/* The one way a test file ends: its table `static const tu_case_t tu_cases[]`, then
 * TU_MAIN(setup, teardown) (either may be NULL) defines main. A file whose program has another
 * role too (a child it re-executes) writes main itself and returns TU_RUN(...) from it. */
#define TU_RUN(argc, argv, setup, teardown) \
  tu_main_(argc, argv, __FILE__, tu_cases, sizeof tu_cases / sizeof tu_cases[0], setup, teardown)
#define TU_MAIN(setup, teardown) \
  int main(int argc, char **argv) { return TU_RUN(argc, argv, setup, teardown); }

/* The build directory ctest passes in MI_BUILD ("." when unset), and paths under it. */
#define tu_build_dir drive_build_dir
#define tu_build_path drive_build_path

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
#define tu_rmtree drive_rmtree

/* Whether this build made plugin `name` (its manifest is in $MI_BUILD/plugins). */
static inline int tu_plugin_built(const char *name) {
  char manifest[1024], rel[256];
  FILE *f;
  snprintf(rel, sizeof rel, "plugins/%s.mi-plugin", name);
  if (!(f = fopen(tu_build_path(manifest, sizeof manifest, rel), "r"))) return 0;
  fclose(f);
  return 1;
}

#ifndef TU_SDK_ONLY
#include "drive_host.h"
/* Scans the plugins the build made (<build dir>/plugins) into r with the host loader. */
#define tu_scan_plugins drive_scan_plugins

/* Plugin `name`'s device `spec` ("opencl:0") in r into *p and *dev. A plugin this build made
 * that the loader refused is a failure (exit 1); one that loaded but sees no device on this
 * machine, or one this build did not make, is a skip (exit 77). */
static inline void tu_device_or_skip(const mi_registry_t *r, const char *name, const char *spec,
                                     mi_plugin_t **p, uint32_t *dev) {
  mi_error_t err = {0, ""};
  if (!mi_registry_find(r, name)) {
    if (!tu_plugin_built(name)) TU_SKIP("%s was not built here", name);
    REQUIRE(!"plugin refused", "%s was built but the loader refused it", name);
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
