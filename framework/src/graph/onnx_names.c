/* onnx_names.c - the importer's name -> tensor index map (open addressing): models have
 * thousands of tensors and a linear mi_graph_find_tensor per reference would be quadratic. */
#include <stdlib.h>
#include <string.h>

#include "graph/onnx_internal.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

int32_t mi__name_map_get(const mi__name_map_t *m, const char *k) {
  if (!m->cap) return -1;
  for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return -1;
    if (strcmp(m->keys[i], k) == 0) return m->vals[i];
  }
}

int mi__name_map_put(mi__name_map_t *m, const char *k, int32_t v) {
  if ((m->count + 1) * 2 > m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 256;
    const char **nk = calloc(nc, sizeof *nk);
    int32_t *nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = hash_str(m->keys[i]) & (nc - 1);
      while (nk[j]) j = (j + 1) & (nc - 1);
      nk[j] = m->keys[i];
      nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
  }
  size_t i = hash_str(k) & (m->cap - 1);
  while (m->keys[i]) i = (i + 1) & (m->cap - 1);
  m->keys[i] = k;
  m->vals[i] = v;
  m->count++;
  return 0;
}

void mi__name_map_free(mi__name_map_t *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
