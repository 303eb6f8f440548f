/* blis_qcore.c - the integer core of the INT8 layers: int16 x int16 -> int32 GEMM (AVX-512, AVX2
 * or plain C from one body), requantization, and reading INT8/INT4 weights. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

/* acc[m][n] = sum_k a[m][k] * b[k][n], exactly, with k taken in pairs: b2 holds b as
 * [k/2][n][2] (pair p of column j at b2 + (p * n + j) * 2), a's rows hold the pairs contiguously
 * (row stride ka, even, zero past k). A pair of int16 products summed in int32 is exact here
 * (|a|, |b| <= 255), and so is the int32 sum (K < 2^15). Rows m0..m1 only, so the pool can split
 * over m; register blocks of 4 rows x 32 (AVX-512) or 16 (AVX2) columns, masked at the column tail
 * (no reads past b2's last pair).
 *  - AVX-512 VNNI: vpdpwssd (pair products and the add in one instruction, no saturation);
 *  - AVX-512BW / AVX2: vpmaddwd then vpaddd;
 *  - plain C: the same sums, scalar. */

#define QROWS 4

/* Packed INT4 operands (MI__QPACK_A4 / MI__QPACK_B4): one byte per k pair, the even k in the low
 * nibble, the odd k in the high one, each a signed 4-bit value. They are widened to the int16
 * pair the int32 core multiplies right before use: A rows per block of QROWS rows into a K panel
 * (a_panels; per row and pair past A4_PANEL pairs), B per register block of columns and pair (a
 * byte shuffle or vpmovzxbd, then shifts). */
static inline __attribute__((always_inline)) int32_t nib_pair(uint8_t byte) {
  int32_t lo = (int32_t)(int8_t)(uint8_t)(byte << 4) >> 4, hi = (int32_t)(int8_t)byte >> 4;
  return (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xffffu));
}

/* Lanes hold a byte zero-extended to int32; out: the low nibble as int16 in the low half, the
 * high nibble as int16 in the high half (an int16 pair). v << 12 puts the low nibble at bits
 * 12..15, v << 24 the high one at bits 28..31 (no overlap, v < 256); an arithmetic shift of each
 * int16 by 12 sign-extends both. */
#define NIB_PAIRS(W, v) \
  _mm##W##_srai_epi16(_mm##W##_or_si##W(_mm##W##_slli_epi32(v, 12), _mm##W##_slli_epi32(v, 24)), 12)

/* A operand: pair p of row r (int16 rows, or INT4 rows of one byte per pair). */
#define A_I16(pr, r, p) memcpy(&pr, (const int16_t *)ar[r] + 2 * (p), sizeof pr)
#define A_I4(pr, r, p) pr = nib_pair(((const uint8_t *)ar[r])[p])
/* B operand, AVX-512: pairs p of columns j0.. (32) into b0, b1, masked at the column tail. */
#define B512_I16(p)                                          \
  const int16_t *bp = (const int16_t *)b + ((p)*n + j0) * 2; \
  __m512i b0 = _mm512_maskz_loadu_epi32(k0, bp), b1 = _mm512_maskz_loadu_epi32(k1, bp + 32)
/* INT4, AVX-512: the 16 bytes of a column block, broadcast to the four 128-bit lanes; vpshufb puts
 * byte j at bits 8..15 of both int16 halves of lane j, a shift by 4 of the low halves only brings
 * its low nibble to bits 12..15 (the high nibble is there already), vpsraw by 12 sign-extends. */
#define NIB512(v)                                                                        \
  _mm512_srai_epi16(_mm512_mask_slli_epi16(_mm512_shuffle_epi8(v, nib_ctl), 0x55555555u, \
                                           _mm512_shuffle_epi8(v, nib_ctl), 4),          \
                    12)
#define B512_I4(p)                                                           \
  const uint8_t *bp = (const uint8_t *)b + (p)*n + j0;                       \
  __m512i b0 = NIB512(_mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(k0, bp))); \
  __m512i b1 = NIB512(_mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(k1, bp + 16)))
/* vpshufb control of NIB512: int32 lane 4L+i reads byte 4L+i into bytes 1 and 3 (0x80: zero). */
#define NIB512_CTL                                                                        \
  const __m512i nib_ctl = _mm512_set_epi32(                                               \
      0x0f800f80, 0x0e800e80, 0x0d800d80, 0x0c800c80, 0x0b800b80, 0x0a800a80, 0x09800980, \
      0x08800880, 0x07800780, 0x06800680, 0x05800580, 0x04800480, 0x03800380, 0x02800280, \
      0x01800180, 0x00800080)

/* The AVX-512 body as a macro over the pair-dot step DOT(acc, b, a) and the operand loads
 * (ALOAD, BLOAD): the VNNI functions must be the only ones built with the VNNI target (the compiler
 * may fuse vpmaddwd + vpaddd into vpdpwssd). ab: bytes per A row. */
/* One block of NR rows (a constant in each instance: a block of fewer rows than QROWS, a Gemm of
 * one row above all, runs only its own rows' products, not QROWS of them). */
#define Q512_BLOCK(DOT, ALOAD, BLOAD, NR)                                                      \
  do {                                                                                         \
    const char *ar[NR];                                                                        \
    int r;                                                                                     \
    for (r = 0; r < NR; r++) ar[r] = (const char *)a + (i + r) * ab;                           \
    for (j0 = jb; j0 < je; j0 += 32) {                                                         \
      int64_t left = je - j0;                                                                  \
      __mmask16 k0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);                     \
      __mmask16 k1 = left >= 32 ? 0xffff : left > 16 ? (__mmask16)((1u << (left - 16)) - 1u)   \
                                                     : 0;                                      \
      __m512i c0[NR], c1[NR];                                                                  \
      _Pragma("GCC unroll 4") for (r = 0; r < NR; r++) c0[r] = c1[r] = _mm512_setzero_si512(); \
      for (p = 0; p < kp; p++) {                                                               \
        BLOAD(p);                                                                              \
        _Pragma("GCC unroll 4") for (r = 0; r < NR; r++) {                                     \
          int32_t pr;                                                                          \
          __m512i av;                                                                          \
          ALOAD(pr, r, p);                                                                     \
          av = _mm512_set1_epi32(pr);                                                          \
          c0[r] = DOT(c0[r], b0, av);                                                          \
          c1[r] = DOT(c1[r], b1, av);                                                          \
        }                                                                                      \
      }                                                                                        \
      _Pragma("GCC unroll 4") for (r = 0; r < NR; r++) {                                       \
        _mm512_mask_storeu_epi32(acc + (i + r) * n + j0, k0, c0[r]);                           \
        if (k1) _mm512_mask_storeu_epi32(acc + (i + r) * n + j0 + 16, k1, c1[r]);              \
      }                                                                                        \
    }                                                                                          \
  } while (0)
#define Q512_BODY(DOT, ALOAD, BLOAD)                      \
  int64_t i, j0, p;                                       \
  NIB512_CTL;                                             \
  (void)nib_ctl;                                          \
  for (i = m0; i < m1; i += QROWS) {                      \
    switch (m1 - i < QROWS ? m1 - i : QROWS) {            \
    case 1: Q512_BLOCK(DOT, ALOAD, BLOAD, 1); break;      \
    case 2: Q512_BLOCK(DOT, ALOAD, BLOAD, 2); break;      \
    case 3: Q512_BLOCK(DOT, ALOAD, BLOAD, 3); break;      \
    default: Q512_BLOCK(DOT, ALOAD, BLOAD, QROWS); break; \
    }                                                     \
  }

#define DOT_VNNI(c, b, a) _mm512_dpwssd_epi32(c, b, a)
#define DOT_MADD512(c, b, a) _mm512_add_epi32(c, _mm512_madd_epi16(b, a))

/* Columns jb..je of the n (the row stride of b and acc): the caller walks column blocks. */
#define QCORE_ARGS                                                                                  \
  int64_t m0, int64_t m1, int64_t n, int64_t jb, int64_t je, int64_t kp, const void *a, int64_t ab, \
      const void *b, int32_t *acc
#define T512 "avx512f,avx512vl,avx512bw,avx512dq"
#define T512V "avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"

__attribute__((target(T512V))) static void q512_vnni(QCORE_ARGS) { Q512_BODY(DOT_VNNI, A_I16, B512_I16) }
__attribute__((target(T512V))) static void q512_vnni_a4(QCORE_ARGS) { Q512_BODY(DOT_VNNI, A_I4, B512_I16) }
__attribute__((target(T512V))) static void q512_vnni_b4(QCORE_ARGS) { Q512_BODY(DOT_VNNI, A_I16, B512_I4) }
__attribute__((target(T512))) static void q512_madd(QCORE_ARGS) { Q512_BODY(DOT_MADD512, A_I16, B512_I16) }
__attribute__((target(T512))) static void q512_madd_a4(QCORE_ARGS) { Q512_BODY(DOT_MADD512, A_I4, B512_I16) }
__attribute__((target(T512))) static void q512_madd_b4(QCORE_ARGS) { Q512_BODY(DOT_MADD512, A_I16, B512_I4) }

/* B operand, AVX2: pairs p of columns j0.. (16) into b0, b1, masked at the column tail (INT4: a
 * zero-padded copy of the tail's bytes, so no read past the row). */
#define B256_I16(p)                                          \
  const int16_t *bp = (const int16_t *)b + ((p)*n + j0) * 2; \
  __m256i b0 = _mm256_maskload_epi32((const int *)bp, k0);   \
  __m256i b1 = _mm256_maskload_epi32((const int *)(bp + 16), k1)
#define B256_I4(p)                                                                 \
  const uint8_t *bp = (const uint8_t *)b + (p)*n + j0;                             \
  uint8_t tail[16] = {0};                                                          \
  __m256i b0, b1;                                                                  \
  if (left < 16) {                                                                 \
    memcpy(tail, bp, (size_t)left);                                                \
    bp = tail;                                                                     \
  }                                                                                \
  b0 = NIB_PAIRS(256, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)bp))); \
  b1 = NIB_PAIRS(256, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(bp + 8))))

#define Q256_BLOCK(ALOAD, BLOAD, NR)                                                              \
  do {                                                                                            \
    const char *ar[NR];                                                                           \
    int r;                                                                                        \
    for (r = 0; r < NR; r++) ar[r] = (const char *)a + (i + r) * ab;                              \
    for (j0 = jb; j0 < je; j0 += 16) {                                                            \
      int64_t left = je - j0;                                                                     \
      __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 8 ? 8 : left)), iota);       \
      __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 16 ? 8 : left > 8 ? left - 8 \
                                                                                       : 0)),     \
                                      iota);                                                      \
      __m256i c0[NR], c1[NR];                                                                     \
      (void)k0;                                                                                   \
      (void)k1;                                                                                   \
      _Pragma("GCC unroll 4") for (r = 0; r < NR; r++) c0[r] = c1[r] = _mm256_setzero_si256();    \
      for (p = 0; p < kp; p++) {                                                                  \
        BLOAD(p);                                                                                 \
        _Pragma("GCC unroll 4") for (r = 0; r < NR; r++) {                                        \
          int32_t pr;                                                                             \
          __m256i av;                                                                             \
          ALOAD(pr, r, p);                                                                        \
          av = _mm256_set1_epi32(pr);                                                             \
          c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(b0, av));                             \
          c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(b1, av));                             \
        }                                                                                         \
      }                                                                                           \
      _Pragma("GCC unroll 4") for (r = 0; r < NR; r++) {                                          \
        _mm256_maskstore_epi32((int *)(acc + (i + r) * n + j0), k0, c0[r]);                       \
        if (left > 8) _mm256_maskstore_epi32((int *)(acc + (i + r) * n + j0 + 8), k1, c1[r]);     \
      }                                                                                           \
    }                                                                                             \
  } while (0)
#define Q256_BODY(ALOAD, BLOAD)                                   \
  int64_t i, j0, p;                                               \
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); \
  for (i = m0; i < m1; i += QROWS) {                              \
    switch (m1 - i < QROWS ? m1 - i : QROWS) {                    \
    case 1: Q256_BLOCK(ALOAD, BLOAD, 1); break;                   \
    case 2: Q256_BLOCK(ALOAD, BLOAD, 2); break;                   \
    case 3: Q256_BLOCK(ALOAD, BLOAD, 3); break;                   \
    default: Q256_BLOCK(ALOAD, BLOAD, QROWS); break;              \
    }                                                             \
  }

__attribute__((target("avx2,fma"))) static void q256_madd4(QCORE_ARGS) { Q256_BODY(A_I16, B256_I16) }

/* Rows of the AVX2 int16 core in blocks of 6 over whole blocks of 16 columns: 12 accumulators,
 * two B loads and six broadcasts a k pair for twelve vpmaddwd, where the 4 x 16 block spent two
 * loads and four broadcasts on eight (and masked loads where no column is masked). The int32
 * sums are the same, so the results are the 4-row body's bit for bit; the column tail and the
 * rows past the last block of 6 go to it. */
#define Q256_ROWS6 6
__attribute__((target("avx2,fma"))) static void q256_madd(QCORE_ARGS) {
  int64_t full = jb + (je - jb) / 16 * 16, i, j0, p;
  for (i = m0; i + Q256_ROWS6 <= m1 && full > jb; i += Q256_ROWS6) {
    const int16_t *ar[Q256_ROWS6];
    int r;
    for (r = 0; r < Q256_ROWS6; r++) ar[r] = (const int16_t *)((const char *)a + (i + r) * ab);
    for (j0 = jb; j0 < full; j0 += 16) {
      const int16_t *bp = (const int16_t *)b + j0 * 2;
      __m256i c0[Q256_ROWS6], c1[Q256_ROWS6];
      _Pragma("GCC unroll 6") for (r = 0; r < Q256_ROWS6; r++) c0[r] = c1[r] = _mm256_setzero_si256();
      for (p = 0; p < kp; p++, bp += 2 * n) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)bp), b1 = _mm256_loadu_si256((const __m256i *)(bp + 16));
        _Pragma("GCC unroll 6") for (r = 0; r < Q256_ROWS6; r++) {
          int32_t pr;
          __m256i av;
          memcpy(&pr, ar[r] + 2 * p, sizeof pr);
          av = _mm256_set1_epi32(pr);
          c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(b0, av));
          c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(b1, av));
        }
      }
      _Pragma("GCC unroll 6") for (r = 0; r < Q256_ROWS6; r++) {
        _mm256_storeu_si256((__m256i *)(acc + (i + r) * n + j0), c0[r]);
        _mm256_storeu_si256((__m256i *)(acc + (i + r) * n + j0 + 8), c1[r]);
      }
    }
  }
  if (full > jb && i > m0) { /* the rows done above: their column tail alone */
    if (full < je) q256_madd4(m0, i, n, full, je, kp, a, ab, b, acc);
    m0 = i;
  }
  if (m0 < m1) q256_madd4(m0, m1, n, jb, je, kp, a, ab, b, acc);
}
__attribute__((target("avx2,fma"))) static void q256_madd_a4(QCORE_ARGS) { Q256_BODY(A_I4, B256_I16) }
__attribute__((target("avx2,fma"))) static void q256_madd_b4(QCORE_ARGS) { Q256_BODY(A_I16, B256_I4) }

/* Plain C: element e (0 or 1) of pair p, row i of A / column j of B, for either storage. */
static inline int32_t qc_a(int32_t pack, const void *a, int64_t ab, int64_t i, int64_t p, int e) {
  if (pack == MI__QPACK_A4) {
    uint8_t byte = ((const uint8_t *)a)[i * ab + p];
    return e ? (int32_t)(int8_t)byte >> 4 : (int32_t)(int8_t)(uint8_t)(byte << 4) >> 4;
  }
  return ((const int16_t *)((const char *)a + i * ab))[2 * p + e];
}
static inline int32_t qc_b(int32_t pack, const void *b, int64_t n, int64_t p, int64_t j, int e) {
  if (pack == MI__QPACK_B4) {
    uint8_t byte = ((const uint8_t *)b)[p * n + j];
    return e ? (int32_t)(int8_t)byte >> 4 : (int32_t)(int8_t)(uint8_t)(byte << 4) >> 4;
  }
  return ((const int16_t *)b)[(p * n + j) * 2 + e];
}

static void qc(int32_t pack, QCORE_ARGS) {
  int64_t i, j, p;
  for (i = m0; i < m1; i++)
    for (j = jb; j < je; j++) {
      int32_t sum = 0;
      for (p = 0; p < kp; p++)
        sum += qc_a(pack, a, ab, i, p, 0) * qc_b(pack, b, n, p, j, 0) +
               qc_a(pack, a, ab, i, p, 1) * qc_b(pack, b, n, p, j, 1);
      acc[i * n + j] = sum;
    }
}

typedef void (*qcore_fn)(QCORE_ARGS);

/* Packed INT4 A rows up to this many pairs are widened per block of QROWS rows into a K panel on
 * the stack (32 KiB), once for all the column blocks; longer rows widen each pair at its use. */
#define A4_PANEL 2048

/* Bytes of B one column block of the core spans (half a typical 512 KiB-1 MiB L2). */
#define QNB_BYTES (256 * 1024)

static void a_panels(qcore_fn i16, qcore_fn a4, QCORE_ARGS) {
  int32_t pan[QROWS * A4_PANEL];
  int64_t i, p;
  if (kp > A4_PANEL) {
    a4(m0, m1, n, jb, je, kp, a, ab, b, acc);
    return;
  }
  for (i = m0; i < m1; i += QROWS) {
    int64_t rows = m1 - i < QROWS ? m1 - i : QROWS, r;
    for (r = 0; r < rows; r++) {
      const uint8_t *row = (const uint8_t *)a + (i + r) * ab;
      for (p = 0; p < kp; p++) pan[r * kp + p] = nib_pair(row[p]);
    }
    i16(0, rows, n, jb, je, kp, pan, kp * (int64_t)sizeof(int32_t), b, acc + i * n);
  }
}

static void qgemm_cols(int32_t dot, int32_t pack, int64_t m0, int64_t m1, int64_t n, int64_t j0, int64_t j1, int64_t kp,
                       const void *a, int64_t ka, const void *b, int32_t *acc) {
  int64_t ab = pack == MI__QPACK_A4 ? ka / 2 : ka * (int64_t)sizeof(int16_t); /* bytes per A row */
  int32_t v = pack == MI__QPACK_A4 ? 1 : pack == MI__QPACK_B4 ? 2
                                                              : 0;
  static const qcore_fn cores[3][3] = {{q512_vnni, q512_vnni_a4, q512_vnni_b4},
                                       {q512_madd, q512_madd_a4, q512_madd_b4},
                                       {q256_madd, q256_madd_a4, q256_madd_b4}};
  int32_t c = dot >= MI__QDOT_VNNI ? 0 : dot == MI__QDOT_AVX512 ? 1
                                     : dot == MI__QDOT_AVX2     ? 2
                                                                : -1;
  /* Column blocks whose B panel (kp pairs of QNB columns) stays in L2 while every row block
   * reads it: one pass over b in all, where whole rows of a wide conv (an 80x80 output, K of
   * 864) streamed its columns from memory once per block of QROWS rows. */
  int64_t nb = QNB_BYTES / ((kp > 0 ? kp : 1) * 4) / 32 * 32, jb, je;
  nb = nb < 32 ? 32 : nb;
  for (jb = j0; jb < j1; jb = je) {
    je = j1 - jb > nb ? jb + nb : j1;
    if (c < 0) qc(pack, m0, m1, n, jb, je, kp, a, ab, b, acc);
    else if (v == 1)
      a_panels(cores[c][0], cores[c][1], m0, m1, n, jb, je, kp, a, ab, b, acc);
    else
      cores[c][v](m0, m1, n, jb, je, kp, a, ab, b, acc);
  }
}

void mi__blis_qgemm_packed(int32_t dot, int32_t pack, int64_t m0, int64_t m1, int64_t n, int64_t kp,
                           const void *a, int64_t ka, const void *b, int32_t *acc) {
  qgemm_cols(dot, pack, m0, m1, n, 0, n, kp, a, ka, b, acc);
}

void mi__blis_qgemm(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kp, const int16_t *a,
                    int64_t ka, const int16_t *b2, int32_t *acc) {
  qgemm_cols(dot, MI__QPACK_NONE, m0, m1, n, 0, n, kp, a, ka, b2, acc);
}

void mi__blis_qgemm_cols(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t j0, int64_t j1, int64_t kp,
                         const int16_t *a, int64_t ka, const int16_t *b2, int32_t *acc) {
  qgemm_cols(dot, MI__QPACK_NONE, m0, m1, n, j0, j1, kp, a, ka, b2, acc);
}

int32_t mi__blis_qdot_level(uint32_t isa, int32_t simd) {
  if (simd == MI__SIMD_AVX512 && (isa & MI__ISA_AVX512VNNI) && __builtin_cpu_supports("avx512vnni"))
    return (isa & MI__ISA_AMX_INT8) ? MI__QDOT_AMX_U8 : MI__QDOT_VNNI_U8;
  if (simd == MI__SIMD_AVX512) return MI__QDOT_AVX512;
  if (simd == MI__SIMD_AVX2) return MI__QDOT_AVX2;
  return MI__QDOT_C;
}

/* Round half to even without a libm call: adding and removing 1.5 * 2^52 leaves the nearest
 * integer, ties to even, in the default rounding mode (what nearbyint does) for |v| < 2^51; v is
 * first clamped far outside every code range, which changes no code. */
#define MI__RNE_MAGIC 6755399441055744.0
static inline __attribute__((always_inline)) int32_t rne_code(double v, int32_t zy, int32_t lo,
                                                              int32_t hi) {
  double r;
  v = v < -1e9 ? -1e9 : v;
  v = v > 1e9 ? 1e9 : v;
  r = (v + MI__RNE_MAGIC) - MI__RNE_MAGIC + zy;
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  return (int32_t)r;
}

/* y = clamp(round_half_even(acc * mult + bias) + zy): the double-precision form npu-stub and
 * docs/abi.md specify. Per-channel mult/bias: element i uses mult[i * mstep] (mstep 0: one).
 * Branch-free min/max so the loop vectorises in the AVX2/AVX-512 builds below. The sums come as
 * int32, or as floats holding exact integers (the depthwise planes' float SIMD sums): same codes. */
#define REQUANT_BODY(name, T)                                                                             \
  static inline __attribute__((always_inline)) void name(const T *acc, int64_t n, const double *mult,     \
                                                         const double *bias, int64_t mstep, int32_t zy,   \
                                                         int32_t is_u8, void *y) {                        \
    int64_t i;                                                                                            \
    double mu = mult[0], bi = bias[0];                                                                    \
    /* four plain loops (one scale or per column, UINT8 or INT8): no gathers, no branches */              \
    if (is_u8 && mstep == 0) {                                                                            \
      uint8_t *o = y;                                                                                     \
      for (i = 0; i < n; i++) o[i] = (uint8_t)rne_code((double)acc[i] * mu + bi, zy, 0, 255);             \
    } else if (is_u8) {                                                                                   \
      uint8_t *o = y;                                                                                     \
      for (i = 0; i < n; i++) o[i] = (uint8_t)rne_code((double)acc[i] * mult[i] + bias[i], zy, 0, 255);   \
    } else if (mstep == 0) {                                                                              \
      int8_t *o = y;                                                                                      \
      for (i = 0; i < n; i++) o[i] = (int8_t)rne_code((double)acc[i] * mu + bi, zy, -128, 127);           \
    } else {                                                                                              \
      int8_t *o = y;                                                                                      \
      for (i = 0; i < n; i++) o[i] = (int8_t)rne_code((double)acc[i] * mult[i] + bias[i], zy, -128, 127); \
    }                                                                                                     \
  }
REQUANT_BODY(requant_body, int32_t)
REQUANT_BODY(requant_body_f, float)
#define REQUANT_ARGS(T) const T *acc, int64_t n, const double *mult, const double *bias, int64_t mstep, \
                        int32_t zy, int32_t is_u8, void *y
#define T512Q __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define T256Q __attribute__((target("avx2,fma")))

/* The same codes written out in intrinsics: the compiler's vectorisation of rne_code's double
 * clamps spent most of its time moving masks (a quarter of a QDQ detector's run). Here the
 * rounding is vcvtpd2dq in the default rounding mode (round half to even, what the magic-number
 * add does for |v| <= 1e9), and the zero point and the code clamp are exact int32 steps on the
 * rounded value, so every code is rne_code's. max(lo, v) / min(hi, v) keep a NaN as the C clamps
 * do. Sixteen outputs a step: two halves of eight doubles. */
#define RQ512_HALF(d, mu, bi) \
  _mm512_cvtpd_epi32(_mm512_min_pd(hi9, _mm512_max_pd(lo9, _mm512_add_pd(_mm512_mul_pd(d, mu), bi))))
#define RQ512_BODY(LOAD_LO, LOAD_HI, LOADM_LO, LOADM_HI)                                               \
  const __m512d lo9 = _mm512_set1_pd(-1e9), hi9 = _mm512_set1_pd(1e9);                                 \
  const __m512i z = _mm512_set1_epi32(zy), clo = _mm512_set1_epi32(is_u8 ? 0 : -128);                  \
  const __m512i chi = _mm512_set1_epi32(is_u8 ? 255 : 127);                                            \
  __m512d mu0 = _mm512_set1_pd(mult[0]), mu1 = mu0, bi0 = _mm512_set1_pd(bias[0]), bi1 = bi0;          \
  int64_t i;                                                                                           \
  for (i = 0; i < n; i += 16) {                                                                        \
    __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);                            \
    __m256i r0, r1;                                                                                    \
    __m512i v;                                                                                         \
    if (mstep) {                                                                                       \
      mu0 = _mm512_maskz_loadu_pd((__mmask8)k, mult + i);                                              \
      mu1 = _mm512_maskz_loadu_pd((__mmask8)(k >> 8), mult + i + 8);                                   \
      bi0 = _mm512_maskz_loadu_pd((__mmask8)k, bias + i);                                              \
      bi1 = _mm512_maskz_loadu_pd((__mmask8)(k >> 8), bias + i + 8);                                   \
    }                                                                                                  \
    r0 = RQ512_HALF(k == 0xffff ? LOAD_LO : LOADM_LO, mu0, bi0);                                       \
    r1 = RQ512_HALF(k == 0xffff ? LOAD_HI : LOADM_HI, mu1, bi1);                                       \
    v = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);                                         \
    v = _mm512_min_epi32(chi, _mm512_max_epi32(clo, _mm512_add_epi32(v, z)));                          \
    if (k == 0xffff) /* vpmovdb to a register, then a plain store: its memory form is slow on Zen 4 */ \
      _mm_storeu_si128((__m128i *)((int8_t *)y + i), _mm512_cvtepi32_epi8(v));                         \
    else                                                                                               \
      _mm_mask_storeu_epi8((int8_t *)y + i, k, _mm512_cvtepi32_epi8(v));                               \
  }
T512Q static void requant_d512(REQUANT_ARGS(int32_t)){
    RQ512_BODY(_mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(acc + i))),
               _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(acc + i + 8))),
               _mm512_cvtepi32_pd(_mm256_maskz_loadu_epi32((__mmask8)k, acc + i)),
               _mm512_cvtepi32_pd(_mm256_maskz_loadu_epi32((__mmask8)(k >> 8), acc + i + 8)))}
/* One scale (mstep 0), sixteen codes in float first, the zero point in the bias: v = fma(fl(acc),
 * fl(mult), fl(bias + zy)) is within 2^-22 (|acc * mult| + |bias| + |zy|) of the double's v + zy
 * (fl(acc) is exact below 2^24 and within 2^-24 of acc above; the other two within 2^-24 relative;
 * the fma rounds once). r = round(v) (vcvtps2dq, half to even) and d = v - r (exact) put v
 * 1/2 - |d| from the nearest half; where that exceeds e = 2^-20 (|fl(acc)| |mult| + |bias| + |zy|)
 * in every lane, the double lands on the same side of every half, so r is its rounded value plus
 * zy. A vector with a lane nearer a half (ties, near ties; |v| >= 2^19, where e >= 1/2; past int32,
 * where r is INT_MIN and d huge) runs the double stage above, so every code is rne_code's. The code
 * clamp is the saturating narrow (vpmovsdb; UINT8 after max(r, 0), vpmovusdb). Twelve vector
 * operations on 16 codes, the double stage about twenty-two. */
/* Sixteen lanes' r = round(v), and the mask of lanes at least e from a half. */
T512Q static inline __mmask16 rq512_lanes(const int32_t *acc, __mmask16 k, __m512 muf, __m512 bzf, __m512 emu,
                                          __m512 half, __m512i *r) {
  __m512 af = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, acc));
  __m512 v = _mm512_fmadd_ps(af, muf, bzf);
  *r = _mm512_cvtps_epi32(v);
  return _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, _mm512_cvtepi32_ps(*r))),
                            _mm512_fnmadd_ps(_mm512_abs_ps(af), emu, half), _CMP_LE_OQ);
}
/* Codes i..i+15 (fewer at the end): float first, else the double stage. */
T512Q static inline void rq512_16(const int32_t *acc, int64_t n, int64_t i, const double *mult, const double *bias,
                                  int32_t zy, int32_t is_u8, void *y, __m512 muf, __m512 bzf, __m512 emu, __m512 half) {
  __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
  __m512i r;
  __m128i c;
  if ((rq512_lanes(acc + i, k, muf, bzf, emu, half, &r) & k) != k) {
    requant_d512(acc + i, n - i < 16 ? n - i : 16, mult, bias, 0, zy, is_u8, (int8_t *)y + i);
    return;
  }
  c = is_u8 ? _mm512_cvtusepi32_epi8(_mm512_max_epi32(r, _mm512_setzero_si512())) : _mm512_cvtsepi32_epi8(r);
  if (k == 0xffff) /* the narrow to a register, then a plain store: its memory form is slow on Zen 4 */
    _mm_storeu_si128((__m128i *)((int8_t *)y + i), c);
  else
    _mm_mask_storeu_epi8((int8_t *)y + i, k, c);
}
T512Q static void requant_avx512(REQUANT_ARGS(int32_t)) {
  const double mu = mult[0], bz = bias[0] + zy, ez = (fabs(bias[0]) + fabs((double)zy)) * 0x1p-20;
  int64_t i = 0;
  /* fl(mult), fl(bias + zy) within 2^-24 relative: normal floats */
  if (mstep || !(fabs(mu) >= 1e-30 && fabs(mu) <= 1e30 && fabs(bz) <= 1e30 && ez < .25)) {
    requant_d512(acc, n, mult, bias, mstep, zy, is_u8, y);
    return;
  }
  {
    const __m512 muf = _mm512_set1_ps((float)mu), bzf = _mm512_set1_ps((float)bz);
    const __m512 emu = _mm512_set1_ps((float)(fabs(mu) * 0x1p-20)), half = _mm512_set1_ps((float)(.5 - ez));
    /* 64 codes a step: two saturating packs to int16 and one to bytes clamp them (UINT8: vpackuswb
     * of the int16 values), one dword permute puts the 128-bit lanes' groups of four in order */
    const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    for (; i + 64 <= n; i += 64) {
      __m512i r0, r1, r2, r3, p01, p23;
      __mmask16 ok = rq512_lanes(acc + i, 0xffff, muf, bzf, emu, half, &r0);
      ok &= rq512_lanes(acc + i + 16, 0xffff, muf, bzf, emu, half, &r1);
      ok &= rq512_lanes(acc + i + 32, 0xffff, muf, bzf, emu, half, &r2);
      ok &= rq512_lanes(acc + i + 48, 0xffff, muf, bzf, emu, half, &r3);
      if (ok != 0xffff) { /* a lane near a half: sixteen codes at a time */
        for (int64_t j = i; j < i + 64; j += 16) rq512_16(acc, n, j, mult, bias, zy, is_u8, y, muf, bzf, emu, half);
        continue;
      }
      p01 = _mm512_packs_epi32(r0, r1);
      p23 = _mm512_packs_epi32(r2, r3);
      _mm512_storeu_si512((int8_t *)y + i, _mm512_permutexvar_epi32(order, is_u8 ? _mm512_packus_epi16(p01, p23)
                                                                                 : _mm512_packs_epi16(p01, p23)));
    }
    for (; i < n; i += 16) rq512_16(acc, n, i, mult, bias, zy, is_u8, y, muf, bzf, emu, half);
  }
}
T512Q static void requant_f_avx512(REQUANT_ARGS(float)){
    RQ512_BODY(_mm512_cvtps_pd(_mm256_loadu_ps(acc + i)), _mm512_cvtps_pd(_mm256_loadu_ps(acc + i + 8)),
               _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)k, acc + i)),
               _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)(k >> 8), acc + i + 8)))}
/* AVX2: eight outputs a step (two halves of four doubles), packed to bytes with saturating packs
 * that never saturate (the values are clamped to the code range first); the tail in plain C. */
#define RQ256_HALF(d, mu, bi) \
  _mm256_cvtpd_epi32(_mm256_min_pd(hi9, _mm256_max_pd(lo9, _mm256_add_pd(_mm256_mul_pd(d, mu), bi))))
#define RQ256_BODY(T, LOAD_LO, LOAD_HI)                                                                     \
  const __m256d lo9 = _mm256_set1_pd(-1e9), hi9 = _mm256_set1_pd(1e9);                                      \
  const __m128i z = _mm_set1_epi32(zy), clo = _mm_set1_epi32(is_u8 ? 0 : -128);                             \
  const __m128i chi = _mm_set1_epi32(is_u8 ? 255 : 127);                                                    \
  __m256d mu0 = _mm256_set1_pd(mult[0]), mu1 = mu0, bi0 = _mm256_set1_pd(bias[0]), bi1 = bi0;               \
  int64_t i;                                                                                                \
  for (i = 0; i + 8 <= n; i += 8) {                                                                         \
    __m128i r0, r1, h;                                                                                      \
    if (mstep) {                                                                                            \
      mu0 = _mm256_loadu_pd(mult + i);                                                                      \
      mu1 = _mm256_loadu_pd(mult + i + 4);                                                                  \
      bi0 = _mm256_loadu_pd(bias + i);                                                                      \
      bi1 = _mm256_loadu_pd(bias + i + 4);                                                                  \
    }                                                                                                       \
    r0 = RQ256_HALF(LOAD_LO, mu0, bi0);                                                                     \
    r1 = RQ256_HALF(LOAD_HI, mu1, bi1);                                                                     \
    r0 = _mm_min_epi32(chi, _mm_max_epi32(clo, _mm_add_epi32(r0, z)));                                      \
    r1 = _mm_min_epi32(chi, _mm_max_epi32(clo, _mm_add_epi32(r1, z)));                                      \
    h = _mm_packs_epi32(r0, r1);                                                                            \
    _mm_storel_epi64((__m128i *)((int8_t *)y + i), is_u8 ? _mm_packus_epi16(h, h) : _mm_packs_epi16(h, h)); \
  }                                                                                                         \
  if (i < n) T(acc + i, n - i, mult + i * mstep, bias + i * mstep, mstep, zy, is_u8, (int8_t *)y + i);
T256Q static void requant_avx2(REQUANT_ARGS(int32_t)){
    RQ256_BODY(requant_body, _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(acc + i))),
               _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(acc + i + 4))))} T256Q static void requant_f_avx2(REQUANT_ARGS(float)) {
  RQ256_BODY(requant_body_f, _mm256_cvtps_pd(_mm_loadu_ps(acc + i)), _mm256_cvtps_pd(_mm_loadu_ps(acc + i + 4)))
}

void mi__blis_requant(int32_t simd, const int32_t *acc, int64_t n, const double *mult,
                      const double *bias, int64_t mstep, int32_t zy, int32_t is_u8, void *y) {
  if (simd == MI__SIMD_AVX512) requant_avx512(acc, n, mult, bias, mstep, zy, is_u8, y);
  else if (simd == MI__SIMD_AVX2)
    requant_avx2(acc, n, mult, bias, mstep, zy, is_u8, y);
  else
    requant_body(acc, n, mult, bias, mstep, zy, is_u8, y);
}

void mi__blis_requant_f(int32_t simd, const float *acc, int64_t n, const double *mult,
                        const double *bias, int64_t mstep, int32_t zy, int32_t is_u8, void *y) {
  if (simd == MI__SIMD_AVX512) requant_f_avx512(acc, n, mult, bias, mstep, zy, is_u8, y);
  else if (simd == MI__SIMD_AVX2)
    requant_f_avx2(acc, n, mult, bias, mstep, zy, is_u8, y);
  else
    requant_body_f(acc, n, mult, bias, mstep, zy, is_u8, y);
}

int32_t mi__blis_qweight(const mi_tensor_desc_t *w, int64_t i) {
  if (w->dtype == MI_DTYPE_INT4) {
    uint8_t byte = ((const uint8_t *)w->data)[i / 2];
    int32_t v = (i & 1) ? byte >> 4 : byte & 15; /* low nibble first */
    return v >= 8 ? v - 16 : v;
  }
  return ((const int8_t *)w->data)[i];
}

int mi__blis_qweight_4bit(const mi_tensor_desc_t *w) {
  int64_t i, n = mi_sdk_numel(w);
  if (w->dtype == MI_DTYPE_INT4) return 1;
  if (w->dtype != MI_DTYPE_INT8) return 0;
  for (i = 0; i < n; i++) {
    int8_t v = ((const int8_t *)w->data)[i];
    if (v < -8 || v > 7) return 0;
  }
  return 1;
}

int mi__blis_qscale(const mi_tensor_desc_t *w, int64_t channels, int64_t c, double *s) {
  if (w->channel_count == 0) *s = (double)w->scale;
  else if ((int64_t)w->channel_count == channels && w->channel_scales)
    *s = (double)w->channel_scales[c];
  else
    return 0;
  return *s > 0.;
}

int mi__blis_is_q8(const mi_tensor_desc_t *t) {
  return t && (t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8);
}
