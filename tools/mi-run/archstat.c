/* archstat.c - whether a thread of this process ran AVX-512 code lately, by the kernel's record
 * (x86 Linux: /proc/self/task/TID/arch_status, AVX512_elapsed_ms), so a run capped at AVX2
 * (MI_BLIS_MAX_SIMD=avx2) can show that none ran in its timed runs. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "mi_run.h"

/* AVX512_elapsed_ms of one thread: ms since the kernel last saw it use AVX-512 state at a
 * context switch, -1 for never; -2 where the file or the line is missing. */
static long long elapsed_ms(const char *tid) {
  char path[300], line[128];
  long long v = -2;
  FILE *f;
  snprintf(path, sizeof path, "/proc/self/task/%s/arch_status", tid);
  if (!(f = fopen(path, "r"))) return -2;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "AVX512_elapsed_ms: %lld", &v) == 1) break;
  fclose(f);
  return v;
}

int run_avx512_within(double ms) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int used = 0, known = d != NULL;
  while (d && (e = readdir(d))) {
    long long v;
    if (e->d_name[0] == '.') continue;
    v = elapsed_ms(e->d_name);
    if (v == -2) known = 0;
    else if (v >= 0 && (double)v <= ms)
      used = 1;
  }
  if (d) closedir(d);
  return used ? 1 : known ? 0
                          : -1;
}
