/* test_blis_util.h - what the blis-cpu tests share: the harness and the blis-cpu driver
 * (tools/drive/drive_blis.h: load the plugin, build kernel descs, run). */
#ifndef TEST_BLIS_UTIL_H
#define TEST_BLIS_UTIL_H

#include <dirent.h>

/* test_util.h first: it defines DRIVE_REQUIRE as its REQUIRE for the drive header. */
#include "test_util.h"

#include "drive_blis.h"

/* Threads of this process (the plugin's pool included), -1 when /proc cannot say. */
static inline int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* Number of values of blis-cpu's `simd` knob on this CPU (auto, then each code path, widest
 * first); 0 when the plugin does not declare it. */
static inline int64_t simd_choices(tb_plugin_t *p) {
  uint32_t n = 0, i;
  mi_error_t err = {0, ""};
  if (p->api->knob_count(p->ctx, 0, &n, &err) != MI_OK) return 0;
  for (i = 0; i < n; i++) {
    mi_knob_desc_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    if (p->api->knob_desc(p->ctx, 0, i, &k, &err) == MI_OK && strcmp(k.name, "simd") == 0) return k.max + 1;
  }
  return 0;
}

/* 1 when the CPU has AVX512_BF16 (CPUID.(EAX=7,ECX=1):EAX bit 5) and AVX-512 F/BW/VL/DQ: where
 * blis-cpu lists conv.packed_gemm_bf16 (without MI_BLIS_MAX_SIMD). */
static inline int tu_cpu_avx512_bf16(void) {
  unsigned a = 7, b = 0, c = 0, d = 0;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
    return 0;
  __asm__("cpuid"
          : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
  if (a < 1) return 0;
  a = 7;
  c = 1;
  __asm__("cpuid"
          : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
  return (a >> 5) & 1u;
}

#endif
