/* cli_paths.c - the folders programs share: loading the plugins from where every tool and worker
 * looks (mi_plugin_path), and mkdir -p for output files and folders. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mi_cli.h"

int32_t mi_cli_scan_plugins(mi_registry_t *r, const char *dir, mi_error_t *err) {
  char *path = mi_plugin_path(dir);
  int32_t rc = path ? mi_registry_scan_path(r, path, err)
                    : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  free(path);
  return rc;
}

const char *mi_cli_add_plugin_dir(const char *prev, const char *dir) {
  static char *joined;
  size_t a, b;
  char *s;
  if (!prev) return dir;
  a = strlen(prev);
  b = strlen(dir);
  if (!(s = malloc(a + b + 2))) return prev;
  memcpy(s, prev, a);
  s[a] = ':';
  memcpy(s + a + 1, dir, b + 1);
  free(joined); /* prev may be it: freed only after the copy */
  return joined = s;
}

int32_t mi_cli_make_dirs(const char *dir, mi_error_t *err) {
  char path[PATH_MAX];
  size_t len = strlen(dir);
  struct stat st;
  if (len == 0 || len >= sizeof path)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "'%.200s': bad folder name", dir);
  memcpy(path, dir, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    path[i] = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return mi_errorf(err, MI_ERR_IO, "%s: cannot create folder: %s", path, strerror(errno));
    path[i] = i < len ? '/' : '\0';
  }
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return mi_errorf(err, MI_ERR_IO, "%s: not a folder", dir);
  return MI_OK;
}

int32_t mi_cli_make_parent_dirs(const char *file, mi_error_t *err) {
  char dir[PATH_MAX];
  const char *slash = strrchr(file, '/');
  if (!slash || slash == file) return MI_OK; /* the current folder, or / */
  if ((size_t)(slash - file) >= sizeof dir)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "'%.200s': path too long", file);
  memcpy(dir, file, (size_t)(slash - file));
  dir[slash - file] = '\0';
  return mi_cli_make_dirs(dir, err);
}
