/* main.c - mi-worker: one device's measurement worker, started by a worker pool
 * (docs/measurement.md, "Crash isolation"). */
#include "metainfer/mi.h"

int main(int argc, char **argv) { return mi_worker_main(argc, argv); }
