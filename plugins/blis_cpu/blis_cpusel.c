/* blis_cpusel.c - SIMD defaults per kernel class from the CPU's description: which CPUs run
 * AVX-512 as two 256-bit halves, and the kernels that run faster in AVX2 code there. */
#include <string.h>

#include "blis_conv.h"

int mi__blis_avx512_halves(const char *vendor, uint32_t family, uint32_t isa) {
  /* AMD family 19h with AVX-512 is Zen 4, whose 512-bit instructions issue as two 256-bit
   * halves (Zen 3, the same family, has no AVX-512). Intel CPUs, and AMD family 1Ah (Zen 5, whose
   * server and desktop parts have full 512-bit units), answer 0: their defaults stay the widest. */
  return (isa & MI__ISA_AVX512F) && vendor && strcmp(vendor, "AuthenticAMD") == 0 && family == 0x19;
}

int32_t mi__blis_pw_simd(int32_t widest, int avx512_halves, int64_t K, int64_t M, int64_t npix, int generic_epi) {
  /* On AVX-512 in halves, a pointwise GEMM with a short K that keeps or widens the channels ran
   * 1.1-1.8x faster in AVX2 tiles (6x16) than in AVX-512 ones (8x32); with K above 64 or fewer
   * output than input channels the AVX-512 tiles were as fast or faster (docs/benchmarks.md,
   * 2026-12-04). Not with a generic epilogue chain (no specialised tile code, e.g. HardSwish):
   * PP-OCR's 16 -> 88 and 32 -> 200 ones with BN + HardSwish ran 10-20% slower in AVX2 tiles. The
   * channels-in-lanes tiles of small planes were not measured: kept widest. */
  if (widest == MI__SIMD_AVX512 && avx512_halves && !generic_epi && K <= MI__PW_HALVES_K && M >= K &&
      npix >= MI__PG_MV_PIX)
    return MI__SIMD_AVX2;
  return widest;
}
