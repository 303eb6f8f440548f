/* hash.c - the FNV-1a hash behind configuration, model and device ids, and the splitmix64
 * random stream every search operator draws from. */
#include <stdio.h>

#include "metainfer/mi_core.h"

MI_API uint64_t mi_hash64(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

MI_API void mi_hash64_hex(uint64_t h, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

MI_API void mi_rng_seed(mi_rng_t *r, uint64_t seed) { r->state = seed ^ 0x9e3779b97f4a7c15ull; }

MI_API uint64_t mi_rng_next(mi_rng_t *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

MI_API double mi_rng_uniform(mi_rng_t *r) { return (double)(mi_rng_next(r) >> 11) * 0x1.0p-53; }

MI_API uint32_t mi_rng_below(mi_rng_t *r, uint32_t n) {
  return n ? (uint32_t)(mi_rng_uniform(r) * (double)n) : 0;
}
