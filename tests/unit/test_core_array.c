/* test_core_array.c - host arrays: a large one asks for transparent huge pages before its first
 * write (a run's outputs are new arrays each run, and their 4 KiB page faults were a sixth of the
 * quantized IS-Net's run), and still comes back zeroed; a small one is zeroed too. */
#include <stdint.h>
#include <unistd.h>

#include "metainfer/mi.h"
#include "test_util.h"

/* The VmFlags line of the mapping of /proc/self/smaps that holds address `at`, in `flags`; 0 when
 * no mapping holds it or smaps cannot be read. */
static int vm_flags_at(uintptr_t at, char *flags, size_t cap) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int inside = 0, found = 0;
  if (!f) return 0;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) { /* a mapping's first line; its fields have names */
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      snprintf(flags, cap, "%s", line + 8);
      found = 1;
    }
  }
  fclose(f);
  return found;
}

static int all_zero(const mi_array_t *a) {
  const unsigned char *p = a->data;
  for (size_t i = 0; i < a->nbytes; i++)
    if (p[i]) return 0;
  return 1;
}

static void huge_pages(void) {
  int64_t dims[4] = {1, 16, 512, 512}; /* 16 MiB */
  mi_array_t *a;
  char flags[512] = "";
  uintptr_t in;
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) TU_SKIP("this kernel has no huge pages");
  a = mi_array_create(MI_DTYPE_FLOAT32, 4, dims);
  REQUIRE(a);
  CHECK(a->nbytes == (size_t)16 << 20 && all_zero(a));
  in = ((uintptr_t)a->data + ((uintptr_t)2 << 20) - 1) & ~(((uintptr_t)2 << 20) - 1); /* a whole 2 MiB inside */
  REQUIRE(vm_flags_at(in, flags, sizeof flags), "no mapping in /proc/self/smaps holds %p", (void *)in);
  /* "hg": the range was advised MADV_HUGEPAGE (set whatever the system then gives it) */
  CHECK(strstr(flags, " hg") != NULL, "VmFlags:%s", flags);
  mi_array_destroy(a);
}

static void small_zeroed(void) {
  int64_t dims[2] = {3, 5};
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, 2, dims);
  REQUIRE(a);
  CHECK(a->nbytes == 60 && all_zero(a) && ((uintptr_t)a->data & 63) == 0);
  mi_array_destroy(a);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(huge_pages),
    TU_CASE(small_zeroed),
};

TU_MAIN(NULL, NULL)
