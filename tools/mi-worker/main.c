/* main.c - mi-worker: one device's measurement worker, started by a worker pool
 * (docs/measurement.md, "Crash isolation"). */
#include <string.h>

#include "metainfer/mi.h"
#include "mi_cli.h"

int main(int argc, char **argv) {
  /* Not run by hand, but it answers --version like every program, to tell which build it is. */
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    mi_cli_version(stdout);
    return 0;
  }
  return mi_worker_main(argc, argv);
}
