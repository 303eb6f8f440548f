/* plugin_path.c - where plugins are looked for, decided in one place for every tool and for the
 * measurement workers they start: the folders named on the command line, else MI_PLUGIN_PATH,
 * else the plugins folder of the build tree or of the installed prefix the program runs from. */
/* secure_getenv is a GNU extension. */
#define _GNU_SOURCE 1
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metainfer/mi_core.h"

/* An installed program's plugins, relative to its bin folder (GNUInstallDirs: set by CMake). */
#ifndef MI_INSTALL_PLUGIN_REL
#define MI_INSTALL_PLUGIN_REL "../lib/metainfer/plugins"
#endif

typedef struct list {
  char *s;
  size_t len;
  int failed;
} list_t;

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode) && access(p, R_OK | X_OK) == 0;
}

/* Appends `dir` (n bytes) to the list with a ':' between entries. */
static void add(list_t *b, const char *dir, size_t n) {
  char *s;
  if (b->failed) return;
  if (!(s = realloc(b->s, b->len + n + 2))) {
    b->failed = 1;
    return;
  }
  b->s = s;
  if (b->len > 0) s[b->len++] = ':';
  memcpy(s + b->len, dir, n);
  b->len += n;
  s[b->len] = '\0';
}

static char *take(list_t *b) {
  if (b->failed) {
    free(b->s);
    return NULL;
  }
  return b->s ? b->s : strdup("");
}

MI_API char *mi_plugin_path(const char *given) {
  list_t b = {NULL, 0, 0};
  const char *env;
  char exe[PATH_MAX], dir[PATH_MAX + 16];
  ssize_t n;
  if (given && given[0]) return strdup(given);
  /* secure_getenv: a setuid program must not load code named by whoever runs it. Entries that
   * are not readable folders are left out here, as the scan of a search path always skipped
   * them, so that a worker given this list sees the same plugins as its host. */
  env = secure_getenv("MI_PLUGIN_PATH");
  if (env && env[0]) {
    for (const char *p = env; *p;) {
      size_t k = strcspn(p, ":");
      if (k > 0 && k < PATH_MAX) {
        char one[PATH_MAX];
        memcpy(one, p, k);
        one[k] = '\0';
        if (is_dir(one)) add(&b, one, k);
      }
      p += k;
      if (*p == ':') p++;
    }
    return take(&b);
  }
  /* The first of <folder of the program>/../plugins (build/bin/X finds build/plugins) and
   * MI_INSTALL_PLUGIN_REL (P/bin/X finds P/lib/metainfer/plugins; relative, so a moved prefix
   * still works). Neither is no error: no plugins were built or installed. */
  n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    static const char *const rel[] = {"../plugins", MI_INSTALL_PLUGIN_REL};
    char *slash;
    exe[n] = '\0';
    if ((slash = strrchr(exe, '/'))) {
      *slash = '\0';
      for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
        if ((size_t)snprintf(dir, sizeof dir, "%s/%s", exe, rel[i]) < sizeof dir && is_dir(dir)) {
          add(&b, dir, strlen(dir));
          break;
        }
    }
  }
  return take(&b);
}

MI_API int32_t mi_registry_scan_path(mi_registry_t *r, const char *path, mi_error_t *err) {
  char *copy, *save = NULL;
  int32_t rc = MI_OK;
  if (!r) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "registry is NULL");
  if (!path || !path[0]) return MI_OK;
  if (!(copy = strdup(path))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (char *d = strtok_r(copy, ":", &save); d && rc == MI_OK; d = strtok_r(NULL, ":", &save))
    rc = mi_registry_scan(r, d, err);
  free(copy);
  return rc;
}
