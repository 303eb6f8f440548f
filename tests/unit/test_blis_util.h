/* test_blis_util.h - what the blis-cpu tests share: the harness and the blis-cpu driver
 * (tools/drive/drive_blis.h: load the plugin, build kernel descs, run). */
#ifndef TEST_BLIS_UTIL_H
#define TEST_BLIS_UTIL_H

#include <dirent.h>

/* test_util.h first: it defines DRIVE_REQUIRE as its REQUIRE for the drive header. */
#include "test_util.h"

#include "drive_blis.h"

/* Threads of this process (the plugin's pool included), -1 when /proc cannot say. */
static inline int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

#endif
