/* test_device_hash.c - a device's hash is its identity: the same device described with other
 * memory, compute-unit or capacity figures (PoCL's global memory follows the memory free at
 * start-up; units follow affinity) keeps its hash; another name, vendor, driver, ISA or kind
 * does not. */
#include "test_util.h"

static mi_device_desc_t pocl(void) {
  mi_device_desc_t d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kind = MI_DEVICE_CPU;
  snprintf(d.name, sizeof d.name, "pthread-skylake-avx512-AMD EPYC");
  snprintf(d.vendor, sizeof d.vendor, "AuthenticAMD");
  snprintf(d.driver_version, sizeof d.driver_version, "3.1+debian");
  snprintf(d.isa, sizeof d.isa, "x86_64-avx512");
  d.global_memory_bytes = 6536552448ull;
  d.compute_units = 2;
  d.max_buffer_bytes = 2147483648ull;
  d.max_threads = 4096;
  return d;
}

static void all_device_hash(void) {
  mi_device_desc_t a = pocl(), b;
  char ha[17], hb[17];
  mi_device_hash(&a, ha);
  CHECK(strlen(ha) == 16, "hash '%s'", ha);

  /* The same device in another process: what the driver reports of the machine's state. */
  b = pocl();
  b.global_memory_bytes = 7073423360ull; /* seen with 3 GB held by another process */
  b.max_buffer_bytes = 4294967296ull;
  b.compute_units = 1; /* taskset -c 0, or a cgroup CPU quota */
  b.max_threads = 1024;
  b.peak_gflops = 123.0;
  b.peak_bandwidth_gbs = 45.0;
  b.cache_bytes = 1 << 20;
  mi_device_hash(&b, hb);
  CHECK(!strcmp(ha, hb), "state changed the hash: %s vs %s", ha, hb);

  /* Another device: each identity field on its own changes the hash. */
  for (int f = 0; f < 5; f++) {
    b = pocl();
    if (f == 0) snprintf(b.name, sizeof b.name, "pthread-zen4-AMD EPYC");
    if (f == 1) snprintf(b.vendor, sizeof b.vendor, "GenuineIntel");
    if (f == 2) snprintf(b.driver_version, sizeof b.driver_version, "5.0+debian");
    if (f == 3) snprintf(b.isa, sizeof b.isa, "x86_64-avx2");
    if (f == 4) b.kind = MI_DEVICE_GPU;
    mi_device_hash(&b, hb);
    CHECK(strcmp(ha, hb) != 0, "identity field %d did not change the hash", f);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_device_hash),
};

TU_MAIN(NULL, NULL)
