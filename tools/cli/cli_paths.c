/* cli_paths.c - the folders programs share: where plugins are found without --plugins (build
 * tree or installed prefix), and mkdir -p for output files and folders. */
#define _GNU_SOURCE 1 /* secure_getenv */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mi_cli.h"

#ifndef MI_INSTALL_PLUGIN_REL
#define MI_INSTALL_PLUGIN_REL "../lib/metainfer/plugins"
#endif

int mi_cli_default_plugin_dir(char *out, size_t cap) {
  /* A build tree keeps plugins in build/plugins next to build/bin; an installed prefix in
   * lib/metainfer/plugins next to bin (GNUInstallDirs). */
  static const char *const rel[] = {"../plugins", MI_INSTALL_PLUGIN_REL};
  char exe[PATH_MAX];
  char *slash;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\0';
  if (!(slash = strrchr(exe, '/'))) return 0;
  *slash = '\0';
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    struct stat st;
    if ((size_t)snprintf(out, cap, "%s/%s", exe, rel[i]) >= cap) return 0;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) return 1;
  }
  /* neither: name the build tree's, so a message says where plugins were looked for */
  return (size_t)snprintf(out, cap, "%s/%s", exe, rel[0]) < cap;
}

int32_t mi_cli_scan_plugins(mi_registry_t *r, const char *dir, mi_error_t *err) {
  char def[PATH_MAX];
  const char *env = secure_getenv("MI_PLUGIN_PATH");
  if (dir) return mi_registry_scan(r, dir, err);
  if (env && env[0]) return mi_registry_scan_env(r, err);
  if (!mi_cli_default_plugin_dir(def, sizeof def))
    return mi_errorf(err, MI_ERR_NOT_FOUND, "cannot locate the plugin folder: use --plugins");
  return mi_registry_scan(r, def, err);
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
