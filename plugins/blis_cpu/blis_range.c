/* blis_range.c - a tensor's value range merged by the parts of the step that writes it. */
#include <string.h>

#include "blis_internal.h"

/* Float bits to a key that orders as the floats do (NaN never reaches here: min/max skip it). */
static uint32_t key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u & 0x80000000u ? ~u : u | 0x80000000u;
}

static float unkey(uint32_t k) {
  uint32_t u = k & 0x80000000u ? k & 0x7fffffffu : ~k;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

void mi__blis_range_reset(mi__blis_range_t *r) {
  atomic_store(&r->lo, key(0.f));
  atomic_store(&r->hi, key(0.f));
  r->known = 0;
  r->asked = 0;
}

void mi__blis_range_merge(mi__blis_range_t *r, float lo, float hi) {
  uint32_t l = key(lo), h = key(hi), cur = atomic_load(&r->lo);
  while (l < cur && !atomic_compare_exchange_weak(&r->lo, &cur, l)) {
  }
  cur = atomic_load(&r->hi);
  while (h > cur && !atomic_compare_exchange_weak(&r->hi, &cur, h)) {
  }
}

void mi__blis_range_get(const mi__blis_range_t *r, float *lo, float *hi) {
  *lo = unkey(atomic_load(&((mi__blis_range_t *)r)->lo));
  *hi = unkey(atomic_load(&((mi__blis_range_t *)r)->hi));
}
