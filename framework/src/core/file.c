/* file.c - reading a whole file into memory, once for every module (manifests, recipes,
 * deployment tables, ONNX models, farm blobs), so the size limit and error lines agree; and
 * closing a written temporary durably before it is renamed into place (npy, deployment tables). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "metainfer/mi_core.h"

/* Reads in chunks rather than trusting ftell, so pipes and /proc files read too, and a file
 * that grows while read is cut at `max` + 1 bytes and refused rather than read without end. */
int32_t mi__read_file(const char *path, size_t max, char **buf, size_t *n, mi_error_t *err) {
  FILE *f;
  char *b = NULL;
  size_t size = 0, cap = 0;
  int32_t rc = MI_OK;
  *buf = NULL;
  *n = 0;
  if (!(f = fopen(path, "rb"))) return mi_errorf(err, MI_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  for (;;) {
    if (size + 1 >= cap) {
      size_t nc = cap ? cap * 2 : 65536;
      char *p;
      if (nc > max + 2) nc = max + 2; /* room for one byte past the limit and the NUL */
      if (nc <= cap || !(p = realloc(b, nc))) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
      }
      b = p;
      cap = nc;
    }
    size_t got = fread(b + size, 1, cap - 1 - size, f);
    size += got;
    if (size > max) {
      rc = mi_errorf(err, MI_ERR_PARSE, "%s: too large (at most %zu bytes)", path, max);
      goto done;
    }
    if (got == 0) break;
  }
  if (ferror(f)) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    goto done;
  }
  b[size] = '\0';
  *buf = b;
  *n = size;
  b = NULL;
done:
  fclose(f);
  free(b);
  return rc;
}

int32_t mi__file_close_synced(FILE *f, const char *tmp, mi_error_t *err) {
  if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
    int32_t rc = mi_errorf(err, MI_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
    fclose(f);
    return rc;
  }
  if (fclose(f) != 0) return mi_errorf(err, MI_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
  return MI_OK;
}

char *mi__path_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash == path ? 1 : slash - path) : 1;
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, slash ? path : ".", n);
  d[n] = '\0';
  return d;
}
