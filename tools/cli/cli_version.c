/* cli_version.c - the one --version line all programs print. */
#include "mi_cli.h"

#ifndef MI_GIT_HASH
#define MI_GIT_HASH "unknown"
#endif

void mi_cli_version(FILE *f) {
  fprintf(f, "metainfer %s (plugin ABI %d.%d, git %s)\n", mi_version(), MI_ABI_VERSION_MAJOR,
          MI_ABI_VERSION_MINOR, MI_GIT_HASH);
}
