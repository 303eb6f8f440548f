/* drive_host.h - loading the plugins this build made through the host library, for code that
 * then drives one plugin directly (the unit tests, tools/bench). */
#ifndef MI_DRIVE_HOST_H
#define MI_DRIVE_HOST_H

#include "drive_env.h"
#include "metainfer/mi.h"

/* Scans the plugins the build made (<build dir>/plugins) into r with the host loader. */
static inline int32_t drive_scan_plugins(mi_registry_t *r, mi_error_t *err) {
  char dir[1024];
  return mi_registry_scan(r, drive_build_path(dir, sizeof dir, "plugins"), err);
}

#endif
