/* array.c - dense host tensors: allocation, element sizes, deterministic random fill. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/core.h"
#include "metainfer/mi_core.h"
#include "metainfer/mi_sdk.h"

MI_API size_t mi_dtype_size(int32_t dtype) {
  switch (dtype) {
  case MI_DTYPE_FLOAT32:
  case MI_DTYPE_INT32:
  case MI_DTYPE_UINT32: return 4;
  case MI_DTYPE_FLOAT16:
  case MI_DTYPE_INT16:
  case MI_DTYPE_UINT16: return 2;
  case MI_DTYPE_INT8:
  case MI_DTYPE_UINT8:
  case MI_DTYPE_BOOL:
  case MI_DTYPE_INT4: return 1;
  case MI_DTYPE_INT64:
  case MI_DTYPE_UINT64: return 8;
  default: return 0;
  }
}

MI_API size_t mi_dtype_bytes_for(int32_t dtype, int64_t count) {
  if (count < 0) return 0;
  if (dtype == MI_DTYPE_INT4) return (size_t)(count + 1) / 2;
  return (size_t)count * mi_dtype_size(dtype);
}

MI_API const char *mi_dtype_name(int32_t dtype) {
  switch (dtype) {
  case MI_DTYPE_FLOAT32: return "float32";
  case MI_DTYPE_FLOAT16: return "float16";
  case MI_DTYPE_INT8: return "int8";
  case MI_DTYPE_UINT8: return "uint8";
  case MI_DTYPE_INT4: return "int4";
  case MI_DTYPE_INT32: return "int32";
  case MI_DTYPE_INT64: return "int64";
  case MI_DTYPE_BOOL: return "bool";
  case MI_DTYPE_INT16: return "int16";
  case MI_DTYPE_UINT16: return "uint16";
  case MI_DTYPE_UINT32: return "uint32";
  case MI_DTYPE_UINT64: return "uint64";
  default: return "undefined";
  }
}

/* Arrays from this size on ask for transparent huge pages (where the system leaves them to
 * madvise): a run hands back every output as a new array, and each 4 KiB page of it faulted in
 * on its first write. On the 2-vCPU VM of docs/benchmarks.md a fault cost about 13 us, so the
 * quantized IS-Net's 118 MB of outputs took 370-420 ms a run to create and fill, a sixth of its
 * run at 1 thread and more at 2 (serial at any thread count); with 2 MiB pages 57-85 ms ("The
 * second thread on IS-Net at AVX2"). Smaller arrays keep the default: a huge page needs 2 MiB of
 * the allocation aligned to it. */
#define ARRAY_HUGE_MIN ((size_t)4 << 20)
#define ARRAY_HUGE_PAGE ((uintptr_t)2 << 20)

static void advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  uintptr_t a = ((uintptr_t)p + ARRAY_HUGE_PAGE - 1) & ~(ARRAY_HUGE_PAGE - 1);
  uintptr_t e = ((uintptr_t)p + bytes) & ~(ARRAY_HUGE_PAGE - 1);
  if (bytes >= ARRAY_HUGE_MIN && e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE); /* a hint only */
#else
  (void)p;
  (void)bytes;
#endif
}

/* A new array whose data is zero (zero_data) or left as the allocator gave it, the bytes past
 * nbytes (the 64-byte rounding) zero either way. */
static mi_array_t *array_new(int32_t dtype, int32_t rank, const int64_t *dims, int zero_data) {
  int64_t n = 1;
  size_t bytes, alloc;
  mi_array_t *a;
  if (rank < 0 || rank > MI_MAX_RANK || mi_dtype_size(dtype) == 0) return NULL;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < 0 || (dims[i] > 0 && n > INT64_MAX / 16 / dims[i])) return NULL;
    n *= dims[i];
  }
  bytes = mi_dtype_bytes_for(dtype, n);
  a = calloc(1, sizeof *a);
  if (!a) return NULL;
  alloc = (bytes + 63) / 64 * 64;
  a->data = aligned_alloc(64, alloc ? alloc : 64);
  if (!a->data) {
    free(a);
    return NULL;
  }
  advise_huge(a->data, alloc); /* before the first write faults the pages in */
  if (zero_data) memset(a->data, 0, alloc ? alloc : 64);
  else
    memset((char *)a->data + bytes, 0, (alloc ? alloc : 64) - bytes);
  a->dtype = dtype;
  a->rank = rank;
  for (int32_t i = 0; i < rank; i++) a->dims[i] = dims[i];
  a->nbytes = bytes;
  return a;
}

MI_API mi_array_t *mi_array_create(int32_t dtype, int32_t rank, const int64_t *dims) {
  return array_new(dtype, rank, dims, 1);
}

mi_array_t *mi__array_create_unset(int32_t dtype, int32_t rank, const int64_t *dims) {
  return array_new(dtype, rank, dims, 0);
}

MI_API void mi_array_destroy(mi_array_t *a) {
  if (!a) return;
  free(a->data);
  free(a);
}

MI_API int64_t mi_array_numel(const mi_array_t *a) {
  int64_t n = 1;
  for (int32_t i = 0; i < a->rank; i++) n *= a->dims[i];
  return n;
}

MI_API void mi_array_fill_random(mi_array_t *a, uint64_t seed) {
  int64_t n = mi_array_numel(a);
  /* The state is the seed itself, not mi_rng_seed's mix: the arrays keep the values they
   * have always had. */
  mi_rng_t s = {seed};
  if (a->dtype == MI_DTYPE_FLOAT32) {
    float *p = a->data;
    for (int64_t i = 0; i < n; i++) p[i] = (float)((mi_rng_next(&s) >> 40) * (2.0 / 16777216.0) - 1.0);
  } else if (a->dtype == MI_DTYPE_INT64) {
    int64_t *p = a->data;
    for (int64_t i = 0; i < n; i++) p[i] = (int64_t)(mi_rng_next(&s) % 16);
  } else if (a->dtype == MI_DTYPE_INT32) {
    int32_t *p = a->data;
    for (int64_t i = 0; i < n; i++) p[i] = (int32_t)(mi_rng_next(&s) % 16);
  } else {
    unsigned char *p = a->data;
    for (size_t i = 0; i < a->nbytes; i++) p[i] = (unsigned char)mi_rng_next(&s);
  }
}

void mi__f64_narrow(const unsigned char *src, size_t n, float *dst) {
  for (size_t i = 0; i < n; i++) {
    double v;
    memcpy(&v, src + i * sizeof v, sizeof v);
    dst[i] = (float)v;
  }
}

MI_API int32_t mi_array_widen_half(mi_array_t **a) {
  mi_array_t *w;
  if (!a || !*a || (*a)->dtype != MI_DTYPE_FLOAT16) return MI_OK;
  if (!(w = mi_array_create(MI_DTYPE_FLOAT32, (*a)->rank, (*a)->dims))) return MI_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0, n = mi_array_numel(w); i < n; i++)
    ((float *)w->data)[i] = mi_sdk_half_to_float(((const uint16_t *)(*a)->data)[i]);
  mi_array_destroy(*a);
  *a = w;
  return MI_OK;
}
