/* test_blis_cpusel.c - blis-cpu's SIMD defaults per kernel class (blis_cpusel.c, built into this
 * test): which CPU descriptions count as running AVX-512 in two 256-bit halves (AMD Zen 4 only;
 * never an Intel CPU), and that a pointwise conv's default level changes only there, only for the
 * shapes measured faster in AVX2 tiles (not with a generic fused chain), and is the widest level everywhere else. */
#include "test_util.h"

#include "../../plugins/blis_cpu/blis_cpusel.c"

#define AVX512_ISA (MI__ISA_AVX2 | MI__ISA_FMA | MI__ISA_AVX512F | MI__ISA_AVX512DQBWVL)

static void halves(void) {
  uint32_t fam;
  CHECK(mi__blis_avx512_halves("AuthenticAMD", 0x19, AVX512_ISA | MI__ISA_AVX512VNNI) == 1, " Zen 4");
  CHECK(mi__blis_avx512_halves("AuthenticAMD", 0x19, MI__ISA_AVX2 | MI__ISA_FMA | MI__ISA_F16C) == 0, " Zen 3: no AVX-512");
  CHECK(mi__blis_avx512_halves("AuthenticAMD", 0x19, MI__ISA_AVX2 | MI__ISA_FMA) == 0, " Zen 4 capped at AVX2");
  CHECK(mi__blis_avx512_halves("AuthenticAMD", 0x1a, AVX512_ISA) == 0, " Zen 5: full-width units");
  CHECK(mi__blis_avx512_halves("AuthenticAMD", 0x17, MI__ISA_AVX2 | MI__ISA_FMA) == 0, " Zen 2");
  CHECK(mi__blis_avx512_halves(NULL, 0x19, AVX512_ISA) == 0, " no vendor string");
  /* Intel: family 6 (Skylake-SP to Granite Rapids) and any other family number, with or without
   * AVX-512, never counts */
  for (fam = 0; fam < 0x40; fam++) {
    CHECK(mi__blis_avx512_halves("GenuineIntel", fam, AVX512_ISA | MI__ISA_AVX512VNNI | MI__ISA_AMX_INT8) == 0,
          " Intel family %u", fam);
    CHECK(mi__blis_avx512_halves("GenuineIntel", fam, MI__ISA_AVX2 | MI__ISA_FMA) == 0, " Intel family %u, AVX2", fam);
  }
}

static void pointwise(void) {
  static const int64_t ks[] = {1, 3, 16, 24, 32, 48, 64, 65, 96, 144, 384, 1024};
  static const int64_t pix[] = {1, 9, 39, 40, 400, 16384};
  size_t i, j, l;
  int32_t w;
  /* Intel (and every CPU with full-width AVX-512): the widest level whatever the shape */
  for (w = MI__SIMD_C; w <= MI__SIMD_AVX512; w++)
    for (i = 0; i < sizeof ks / sizeof *ks; i++)
      for (j = 0; j < sizeof ks / sizeof *ks; j++)
        for (l = 0; l < sizeof pix / sizeof *pix; l++) {
          CHECK(mi__blis_pw_simd(w, 0, ks[i], ks[j], pix[l], 0) == w, " full width: level %d K %lld M %lld", w,
                (long long)ks[i], (long long)ks[j]);
          /* in halves, below AVX-512 nothing changes either */
          if (w != MI__SIMD_AVX512)
            CHECK(mi__blis_pw_simd(w, 1, ks[i], ks[j], pix[l], 0) == w, " halves: level %d K %lld M %lld", w,
                  (long long)ks[i], (long long)ks[j]);
        }
  /* in halves: the shapes measured (docs/benchmarks.md, 2026-12-04) */
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 16, 96, 25600, 0) == MI__SIMD_AVX2, " 16 -> 96, 160x160");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 24, 144, 6400, 0) == MI__SIMD_AVX2, " 24 -> 144, 80x80");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 24, 24, 512, 0) == MI__SIMD_AVX2, " 24 -> 24, a BlazeFace band");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 48, 288, 1600, 0) == MI__SIMD_AVX2, " 48 -> 288, 40x40");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 64, 64, 1600, 0) == MI__SIMD_AVX2, " 64 -> 64");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 64, 32, 6400, 0) == MI__SIMD_AVX512, " 64 -> 32: narrowing");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 144, 24, 6400, 0) == MI__SIMD_AVX512, " 144 -> 24: narrowing");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 96, 384, 400, 0) == MI__SIMD_AVX512, " 96 -> 384: K past 64");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 24, 144, 39, 0) == MI__SIMD_AVX512, " channels-in-lanes tiles");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 16, 88, 288, 1) == MI__SIMD_AVX512, " 16 -> 88, BN + HardSwish");
  CHECK(mi__blis_pw_simd(MI__SIMD_AVX512, 1, 32, 200, 192, 1) == MI__SIMD_AVX512, " 32 -> 200, BN + HardSwish");
  for (w = MI__SIMD_C; w <= MI__SIMD_AVX512; w++) /* Intel with a generic chain: the widest too */
    CHECK(mi__blis_pw_simd(w, 0, 16, 88, 288, 1) == w, " full width, generic chain: level %d", w);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(halves),
    TU_CASE(pointwise),
};

TU_MAIN(NULL, NULL)
