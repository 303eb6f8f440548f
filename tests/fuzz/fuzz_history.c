/* fuzz_history.c - fuzz target: JSON Lines history import into an in-memory SQLite log, then
 * an export of what was imported (every imported field is read back). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "metainfer/mi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mi_history_t *h = NULL;
  mi_error_t err;
  FILE *in, *out;
  char *buf = NULL;
  size_t len = 0;
  int64_t added = 0, skipped = 0, n = 0;
  if (size == 0) return 0; /* fmemopen refuses an empty buffer */
  /* A fresh log per input keeps runs independent and reproducible. */
  if (mi_history_open(":memory:", &h, &err) != MI_OK) abort();
  in = fmemopen((void *)data, size, "r");
  if (!in) abort();
  (void)mi_history_import(h, in, &added, &skipped, &err);
  fclose(in);
  if (added > 0) {
    out = open_memstream(&buf, &len);
    if (!out) abort();
    if (mi_history_export(h, out, &n, &err) == MI_OK && n != added) abort();
    fclose(out);
    free(buf);
  }
  mi_history_close(h);
  return 0;
}
