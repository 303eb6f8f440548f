/* sdk_array.c - the growable array every plugin with a cache (programs, pipelines) would
 * otherwise write again. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "metainfer/mi_sdk.h"

void *mi_sdk_grow(void *items, int *cap, size_t size) {
  int n;
  void *p;
  if (*cap > INT_MAX / 2 || size == 0) return NULL;
  n = *cap > 0 ? *cap * 2 : 16;
  if ((size_t)n > SIZE_MAX / size || !(p = realloc(items, (size_t)n * size))) return NULL;
  *cap = n;
  return p;
}
