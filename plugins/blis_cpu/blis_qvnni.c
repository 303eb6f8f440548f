/* blis_qvnni.c - the byte form of the INT8 core: vpdpbusd (AVX-512 VNNI) multiplies unsigned
 * activation codes by signed weights four k at a time, reading the codes themselves. The int16
 * core (blis_qcore.c) first widens every code minus its zero point to int16 and multiplies pairs:
 * half the products per instruction and twice the column bytes. Here the zero point is taken out
 * after the sum: sum_k (u_k - zu) * w_k = sum_k u_k * w_k - zu * sum_k w_k, one int32 constant per
 * output channel (or per column for a Gemm), so the result is the same exact int32 sum. INT8
 * codes are made unsigned by flipping their sign bit (u = x + 128, zu = zx + 128). Padding holds
 * the zero point's code, which the correction turns into an exact 0. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

#define T512V "avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"

/* Register block: QV_ROWS rows x 64 columns (4 x 16 int32 lanes): 24 accumulators, 4 column
 * vectors and a broadcast in the 32 zmm registers. */
#define QV_ROWS 6
/* Bytes of B one column block spans (stays in L2 while every row block reads it). */
#define QV_NB_BYTES (256 * 1024)

/* DOT(c, lanes, bcast): vpdpbusd takes its unsigned bytes from its first multiplicand. A conv has
 * the codes in the lanes (columns) and broadcasts the weights; a Gemm broadcasts the codes of A's
 * row and has the weights in the lanes. */
#define DOT_LANES_U8(c, l, a) _mm512_dpbusd_epi32(c, l, a)
#define DOT_BCAST_U8(c, l, a) _mm512_dpbusd_epi32(c, a, l)

/* acc[i][j] = sum_p dot4(a row i quad p, b[p][j]) - zu * (rsum[i] or csum[j]) for rows m0..m1 and
 * columns jb..je of n; a: rows of kq * 4 bytes, b: [kq][n][4] bytes. */
/* A quad of bytes read as one int32 (any alignment, any byte type under it). */
typedef int32_t qv_quad_t __attribute__((may_alias, aligned(1)));

/* One vector of sums (the lanes of km) of row i, columns j..j+16, to acc ([m][n]), or where o (a
 * Gemm's, mi__blis_qv_gemm_out) says: its weight shift wd[j] * rs[i] added (modulo 2^32, as the
 * sums), then the int32 sums to o->acc or the floats (float)sum * s [+ tb[j]] to o->y, each op
 * rounded as the nodes; the shifted sums' plane is never written and read again. */
static inline __attribute__((always_inline, target(T512V))) void qv_put(const mi__blis_q256_out_t *o, int32_t *acc,
                                                                        int64_t n, int64_t i, int64_t j, __mmask16 km,
                                                                        __m512i v) {
  if (o && o->wd)
    v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(km, o->wd + j), _mm512_set1_epi32(o->rs[i])));
  if (o && o->y) {
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(o->s));
    if (o->tb) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(km, o->tb + j));
    _mm512_mask_storeu_ps(o->y + i * n + j, km, f);
  } else
    _mm512_mask_storeu_epi32(acc + i * n + j, km, v);
}

/* A conv's weight shift on its tiles (mi__blis_qv_conv_shift): row i (output channel) gets
 * wd[i] * (psum[j] - base) at column (pixel) j, modulo 2^32 as the sums. */
typedef struct qv_shift {
  const int32_t *wd, *psum;
  int32_t base;
} qv_shift_t;
static inline __attribute__((always_inline, target(T512V))) void qv_put_conv(const qv_shift_t *sh, int32_t *acc,
                                                                             int64_t n, int64_t i, int64_t j,
                                                                             __mmask16 km, __m512i v) {
  if (sh)
    v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(sh->wd[i]),
                                               _mm512_sub_epi32(_mm512_maskz_loadu_epi32(km, sh->psum + j),
                                                                _mm512_set1_epi32(sh->base))));
  _mm512_mask_storeu_epi32(acc + i * n + j, km, v);
}

#define QV_ARGS                                                                            \
  int64_t m0, int64_t m1, int64_t n, int64_t jb, int64_t je, int64_t kq, const uint8_t *a, \
      const uint8_t *b, const int32_t *rsum, const int32_t *csum, int32_t zu, int32_t *acc
/* One row block of NR rows and VN vectors of 16 columns per row (constants in each instance): a
 * block of fewer rows than QV_ROWS, a Gemm of one row above all, runs only its own rows' dot
 * products, not QV_ROWS of them, and spans more columns with the registers it has (VN * NR
 * accumulators): B is [kq][n][4], so one quad row of a block is VN * 64 contiguous bytes, and a
 * block of one row that read 256 bytes every n * 4 reads 1 KiB. */
#define QV_BLOCK(DOT, PUT, NR, VN)                                                                              \
  do {                                                                                                          \
    const qv_quad_t *ar[NR];                                                                                    \
    int r, v;                                                                                                   \
    for (r = 0; r < NR; r++) ar[r] = (const qv_quad_t *)(a + (i + r) * kq * 4);                                 \
    for (j0 = jb; j0 < je; j0 += 16 * VN) {                                                                     \
      int64_t left = je - j0;                                                                                   \
      __mmask16 km[VN];                                                                                         \
      __m512i c[NR][VN];                                                                                        \
      const uint8_t *bp = b + j0 * 4;                                                                           \
      for (v = 0; v < VN; v++) {                                                                                \
        int64_t l = left - 16 * v;                                                                              \
        km[v] = l >= 16 ? 0xffff : l > 0 ? (__mmask16)((1u << l) - 1u)                                          \
                                         : 0;                                                                   \
      }                                                                                                         \
      _Pragma("GCC unroll 6") for (r = 0; r < NR; r++) {                                                        \
        _Pragma("GCC unroll 16") for (v = 0; v < VN; v++) c[r][v] = _mm512_setzero_si512();                     \
      }                                                                                                         \
      for (p = 0; p < kq; p++, bp += n * 4) {                                                                   \
        __m512i bv[VN];                                                                                         \
        _Pragma("GCC unroll 16") for (v = 0; v < VN; v++) bv[v] = _mm512_maskz_loadu_epi32(km[v], bp + 64 * v); \
        _Pragma("GCC unroll 6") for (r = 0; r < NR; r++) {                                                      \
          __m512i av = _mm512_set1_epi32(ar[r][p]);                                                             \
          _Pragma("GCC unroll 16") for (v = 0; v < VN; v++) c[r][v] = DOT(c[r][v], bv[v], av);                  \
        }                                                                                                       \
      }                                                                                                         \
      _Pragma("GCC unroll 6") for (r = 0; r < NR; r++) {                                                        \
        _Pragma("GCC unroll 16") for (v = 0; v < VN; v++) {                                                     \
          __m512i corr = rsum ? _mm512_set1_epi32(zu * rsum[i + r])                                             \
                              : _mm512_mullo_epi32(_mm512_set1_epi32(zu),                                       \
                                                   _mm512_maskz_loadu_epi32(km[v], csum + j0 + 16 * v));        \
          if (km[v]) PUT(i + r, j0 + 16 * v, km[v], _mm512_sub_epi32(c[r][v], corr));                           \
        }                                                                                                       \
      }                                                                                                         \
    }                                                                                                           \
  } while (0)
#define QV_BODY(DOT, PUT)                           \
  int64_t i, j0, p;                                 \
  for (i = m0; i < m1; i += QV_ROWS) {              \
    switch (m1 - i < QV_ROWS ? m1 - i : QV_ROWS) {  \
    case 1: QV_BLOCK(DOT, PUT, 1, 16); break;       \
    case 2: QV_BLOCK(DOT, PUT, 2, 8); break;        \
    case 3: QV_BLOCK(DOT, PUT, 3, 4); break;        \
    case 4: QV_BLOCK(DOT, PUT, 4, 4); break;        \
    case 5: QV_BLOCK(DOT, PUT, 5, 4); break;        \
    default: QV_BLOCK(DOT, PUT, QV_ROWS, 4); break; \
    }                                               \
  }

#define QV_PUT_CONV(i, j, km, v) qv_put_conv(sh, acc, n, i, j, km, v)
#define QV_PUT_GEMM(i, j, km, v) qv_put(o, acc, n, i, j, km, v)
__attribute__((target(T512V))) static void qv_conv512(QV_ARGS, const qv_shift_t *sh) { QV_BODY(DOT_LANES_U8, QV_PUT_CONV) }
__attribute__((target(T512V))) static void qv_gemm512(QV_ARGS, const mi__blis_q256_out_t *o) { QV_BODY(DOT_BCAST_U8, QV_PUT_GEMM) }

/* One sum of the plain C core to acc, or through sh and o as qv_put_conv and qv_put write it. */
static void qv_put1(const qv_shift_t *sh, const mi__blis_q256_out_t *o, int32_t *acc, int64_t n, int64_t i, int64_t j,
                    int32_t v) {
  if (sh) v = (int32_t)((uint32_t)v + (uint32_t)sh->wd[i] * ((uint32_t)sh->psum[j] - (uint32_t)sh->base));
  if (o && o->wd) v = (int32_t)((uint32_t)v + (uint32_t)o->wd[j] * (uint32_t)o->rs[i]);
  if (o && o->y) {
    float f = (float)v * o->s;
    o->y[i * n + j] = o->tb ? f + o->tb[j] : f;
  } else
    acc[i * n + j] = v;
}

/* Plain C, the same sums: byte e of quad p of a row / a column, signed where it holds weights. */
static void qv_c(int lanes_u8, const qv_shift_t *sh, const mi__blis_q256_out_t *o, QV_ARGS) {
  int64_t i, j, p, e;
  for (i = m0; i < m1; i++)
    for (j = jb; j < je; j++) {
      int32_t sum = 0;
      for (p = 0; p < kq; p++)
        for (e = 0; e < 4; e++) {
          int32_t av = a[(i * kq + p) * 4 + e], bv = b[(p * n + j) * 4 + e];
          sum += lanes_u8 ? bv * (int8_t)av : av * (int8_t)bv;
        }
      qv_put1(sh, o, acc, n, i, j, sum - zu * (rsum ? rsum[i] : csum[j]));
    }
}

/* The blocks of columns over B (sh: a conv's weight shift, o: a Gemm's output, see
 * mi__blis_qv_conv_shift and mi__blis_qv_gemm_out; NULL: the sums to acc). */
static void qv_blocks(int32_t dot, int32_t lanes_u8, int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a,
                      const uint8_t *b, const int32_t *rsum, const int32_t *csum, int32_t zu, int32_t *acc,
                      const qv_shift_t *sh, const mi__blis_q256_out_t *o) {
  int64_t nb = QV_NB_BYTES / ((kq > 0 ? kq : 1) * 4) / 64 * 64, jb, je;
  nb = nb < 64 ? 64 : nb;
  for (jb = 0; jb < n; jb = je) {
    je = n - jb > nb ? jb + nb : n;
    if (dot != MI__QDOT_VNNI_U8) qv_c(lanes_u8, sh, o, m0, m1, n, jb, je, kq, a, b, rsum, csum, zu, acc);
    else if (lanes_u8)
      qv_conv512(m0, m1, n, jb, je, kq, a, b, rsum, csum, zu, acc, sh);
    else
      qv_gemm512(m0, m1, n, jb, je, kq, a, b, rsum, csum, zu, acc, o);
  }
}

void mi__blis_qv_gemm(int32_t dot, int32_t lanes_u8, int64_t m0, int64_t m1, int64_t n, int64_t kq,
                      const uint8_t *a, const uint8_t *b, const int32_t *rsum, const int32_t *csum,
                      int32_t zu, int32_t *acc) {
  qv_blocks(dot, lanes_u8, m0, m1, n, kq, a, b, rsum, csum, zu, acc, NULL, NULL);
}

void mi__blis_qv_conv_shift(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a,
                            const uint8_t *b, const int32_t *rsum, int32_t zu, const int32_t *wd, const int32_t *psum,
                            int32_t base, int32_t *acc) {
  const qv_shift_t sh = {wd, psum, base};
  qv_blocks(dot, 1, m0, m1, n, kq, a, b, rsum, NULL, zu, acc, &sh, NULL);
}

void mi__blis_qv_gemm_out(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a,
                          const uint8_t *b, const int32_t *csum, int32_t zu, const mi__blis_q256_out_t *o) {
  qv_blocks(dot, 0, m0, m1, n, kq, a, b, NULL, csum, zu, o->acc, NULL, o);
}

/* psum[j] = sum over k < kk of column j's codes (kq quads of n columns, [kq][n][4] bytes), for
 * columns j0..j1: the pixel sums a weight shift needs (blis_qgemm.h). The last quad's bytes past kk
 * repeat k = kk - 1, so they get weight 0 here. vpdpbusd against ones: 16 columns a step. */
__attribute__((target(T512V))) static void qv_colsum512(int64_t kk, int64_t kq, int64_t n, const uint8_t *col,
                                                        int64_t j0, int64_t j1, int32_t *psum) {
  int32_t rem = (int32_t)(kk - 4 * (kq - 1)); /* 1..4 real bytes in the last quad */
  const __m512i ones = _mm512_set1_epi32(0x01010101), last = _mm512_set1_epi32((int32_t)(0xffffffffu >> (32 - 8 * rem)) & 0x01010101);
  int64_t j, p;
  for (j = j0; j < j1; j += 16) {
    __mmask16 km = j1 - j >= 16 ? 0xffff : (__mmask16)((1u << (j1 - j)) - 1u);
    __m512i s = _mm512_setzero_si512();
    for (p = 0; p < kq; p++)
      s = _mm512_dpbusd_epi32(s, _mm512_maskz_loadu_epi32(km, col + (p * n + j) * 4), p + 1 < kq ? ones : last);
    _mm512_mask_storeu_epi32(psum + j, km, s);
  }
}

void mi__blis_qv_colsum(int32_t dot, int64_t kk, int64_t kq, int64_t n, const uint8_t *col, int64_t j0, int64_t j1,
                        int32_t *psum) {
  int64_t j, k;
  if (dot == MI__QDOT_VNNI_U8) {
    qv_colsum512(kk, kq, n, col, j0, j1, psum);
    return;
  }
  for (j = j0; j < j1; j++) {
    int32_t s = 0;
    for (k = 0; k < kk; k++) s += col[((k >> 2) * n + j) * 4 + (k & 3)];
    psum[j] = s;
  }
}

void mi__blis_qv_shift(int32_t *acc, int64_t n, int32_t d, const int32_t *psum, int32_t base) {
  int64_t j; /* modulo 2^32, as the sums themselves: exact wherever the true sum fits int32 */
  for (j = 0; j < n; j++) acc[j] = (int32_t)((uint32_t)acc[j] + (uint32_t)d * ((uint32_t)psum[j] - (uint32_t)base));
}

/* dst[j * 4 + e] = r[e][j] ^ flip for j < n: four rows interleaved into quads (SSE2 unpacks, 16
 * columns a step, the tail scalar so nothing past dst's n quads is written). */
/* 64 columns a step: the same byte and word unpacks within each 128-bit lane, then a 4x4
 * transpose of the lanes (four 128-bit shuffles each way) puts columns 16L..16L+15 in output
 * register L: 28 operations for 256 bytes where the SSE2 steps take 80. Returns the columns done. */
__attribute__((target("avx512f,avx512bw"))) static int64_t qv_quads512(const uint8_t *const r[4], int64_t n,
                                                                       uint8_t flip, uint8_t *dst) {
  const __m512i f = _mm512_set1_epi8((char)flip);
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    __m512i r0 = _mm512_xor_si512(f, _mm512_loadu_si512(r[0] + j)), r1 = _mm512_xor_si512(f, _mm512_loadu_si512(r[1] + j));
    __m512i r2 = _mm512_xor_si512(f, _mm512_loadu_si512(r[2] + j)), r3 = _mm512_xor_si512(f, _mm512_loadu_si512(r[3] + j));
    __m512i lo01 = _mm512_unpacklo_epi8(r0, r1), hi01 = _mm512_unpackhi_epi8(r0, r1);
    __m512i lo23 = _mm512_unpacklo_epi8(r2, r3), hi23 = _mm512_unpackhi_epi8(r2, r3);
    __m512i q0 = _mm512_unpacklo_epi16(lo01, lo23), q1 = _mm512_unpackhi_epi16(lo01, lo23); /* lane L: 16L+0..7 */
    __m512i q2 = _mm512_unpacklo_epi16(hi01, hi23), q3 = _mm512_unpackhi_epi16(hi01, hi23); /* 16L+8..15 */
    __m512i a = _mm512_shuffle_i64x2(q0, q1, 0x44), b = _mm512_shuffle_i64x2(q2, q3, 0x44);
    __m512i c = _mm512_shuffle_i64x2(q0, q1, 0xEE), d = _mm512_shuffle_i64x2(q2, q3, 0xEE);
    _mm512_storeu_si512(dst + j * 4, _mm512_shuffle_i64x2(a, b, 0x88));
    _mm512_storeu_si512(dst + j * 4 + 64, _mm512_shuffle_i64x2(a, b, 0xDD));
    _mm512_storeu_si512(dst + j * 4 + 128, _mm512_shuffle_i64x2(c, d, 0x88));
    _mm512_storeu_si512(dst + j * 4 + 192, _mm512_shuffle_i64x2(c, d, 0xDD));
  }
  return j;
}

void mi__blis_qv_quads(const uint8_t *const r[4], int64_t n, uint8_t flip, uint8_t *dst) {
  const __m128i f = _mm_set1_epi8((char)flip);
  int64_t j = __builtin_cpu_supports("avx512bw") ? qv_quads512(r, n, flip, dst) : 0, e;
  for (; j + 16 <= n; j += 16) {
    __m128i r0 = _mm_xor_si128(f, _mm_loadu_si128((const __m128i *)(r[0] + j)));
    __m128i r1 = _mm_xor_si128(f, _mm_loadu_si128((const __m128i *)(r[1] + j)));
    __m128i r2 = _mm_xor_si128(f, _mm_loadu_si128((const __m128i *)(r[2] + j)));
    __m128i r3 = _mm_xor_si128(f, _mm_loadu_si128((const __m128i *)(r[3] + j)));
    __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
    __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
    _mm_storeu_si128((__m128i *)(dst + j * 4), _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128((__m128i *)(dst + j * 4 + 16), _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128((__m128i *)(dst + j * 4 + 32), _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128((__m128i *)(dst + j * 4 + 48), _mm_unpackhi_epi16(hi01, hi23));
  }
  for (; j < n; j++)
    for (e = 0; e < 4; e++) dst[j * 4 + e] = (uint8_t)(r[e][j] ^ flip);
}

/* Column rows (stride 1 or 2): row r of nrow reads input row ih0 + r * sh; output column ow reads
 * input column ow * sw + col for lo <= ow < hi, and holds the zero point's code zraw elsewhere and
 * in rows outside 0..H. */
typedef struct qv_rows {
  const uint8_t *plane; /* H x W codes of one input channel */
  int64_t H, W, OW, sh, sw, col, lo, hi;
  uint8_t zraw;
} qv_rows_t;

/* Lanes [a, b) of 64 set (a and b clamped to 0..64). */
static inline uint64_t lanes64(int64_t a, int64_t b) {
  a = a < 0 ? 0 : a > 64 ? 64
                         : a;
  b = b < 0 ? 0 : b > 64 ? 64
                         : b;
  if (b <= a) return 0;
  return (b - a == 64 ? ~0ull : (1ull << (b - a)) - 1ull) << a;
}

/* nrow column rows of OW bytes at d (row r: input row ih0 + r * sh of plane, H x W codes), output
 * column ow reading input column ow * sw + col where lo <= ow < hi and the zero point's code zraw
 * elsewhere; stride sw 1 or 2. Masked loads read only the columns inside the row (no fault past
 * the plane) and the same masks put zraw in the padding: one load and one store per 64 (stride 1)
 * or 32 (stride 2) output columns, where memset + memcpy per row cost more than the GEMM on the
 * small planes of an audio embedding (OW 4-30). Only the byte core calls it (AVX-512 VNNI CPUs). */
#define T512BW __attribute__((target("avx512f,avx512bw,avx512vl")))

/* d[i] = src[i] for i < n where base <= src + i < end, zraw elsewhere: 64 bytes a step, masked. */
T512BW static void span_copy(const uint8_t *src, int64_t n, const uint8_t *base, const uint8_t *end, __m512i z, uint8_t *d) {
  int64_t i, a = base - src, b = end - src; /* readable: a <= i < b */
  for (i = 0; i < n; i += 64)
    _mm512_mask_storeu_epi8(d + i, lanes64(0, n - i), _mm512_mask_loadu_epi8(z, lanes64(a - i, b - i), src + i));
}

/* 64 output columns of a stride-2 row: the even bytes of 128 input bytes by one two-table byte
 * permute (VBMI), where the loop below takes two 32-column steps of a load, a word-to-byte
 * narrowing and a blend. Input bytes lo2..hi2 of the 128 are read (masked loads), lanes of keep
 * take them and the others z, lanes of out are stored. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
qv_even64(const uint8_t *src, int64_t lo2, int64_t hi2, uint64_t keep, uint64_t out, __m512i z, uint8_t *d) {
  static const uint8_t ev[64] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                                 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62,
                                 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94,
                                 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126};
  __m512i a = _mm512_maskz_loadu_epi8(lanes64(lo2, hi2), src), b = _mm512_maskz_loadu_epi8(lanes64(lo2 - 64, hi2 - 64), src + 64);
  __m512i v = _mm512_mask_blend_epi8(keep, z, _mm512_permutex2var_epi8(a, _mm512_loadu_si512(ev), b));
  if (out == ~0ull)
    _mm512_storeu_si512(d, v);
  else
    _mm512_mask_storeu_epi8(d, out, v);
}

T512BW static void qv_col_rows(const qv_rows_t *g, int64_t ih0, int64_t nrow, uint8_t *d) {
  const __m512i z = _mm512_set1_epi8((char)g->zraw);
  int vbmi = g->sw == 2 && __builtin_cpu_supports("avx512vbmi");
  int64_t r, c0, step = g->sw == 2 && !vbmi ? 32 : 64;
  if (g->sw == 1 && g->sh == 1 && g->W == g->OW) {
    /* "same" stride-1 rows (OW == W): the rows inside the plane are one span of it shifted by col,
     * copied 64 bytes at a time whatever OW is (the 4-32 columns of an audio embedding's planes);
     * rows outside and the lo / hi edge columns of each row are the zero point's code */
    int64_t ra = ih0 < 0 ? -ih0 : 0, rb = g->H - ih0 < nrow ? g->H - ih0 : nrow, ow;
    ra = ra > nrow ? nrow : ra;
    rb = rb < ra ? ra : rb;
    span_copy(d, ra * g->OW, d, d, z, d); /* nothing readable: all zraw */
    span_copy(g->plane + (ih0 + ra) * g->W + g->col, (rb - ra) * g->OW, g->plane, g->plane + g->H * g->W, z,
              d + ra * g->OW);
    span_copy(d, (nrow - rb) * g->OW, d, d, z, d + rb * g->OW);
    if (g->lo > 0 || g->hi < g->OW)
      for (r = ra; r < rb; r++) {
        for (ow = 0; ow < g->lo; ow++) d[r * g->OW + ow] = g->zraw;
        for (ow = g->hi; ow < g->OW; ow++) d[r * g->OW + ow] = g->zraw;
      }
    return;
  }
  for (r = 0; r < nrow; r++, d += g->OW) {
    int64_t ih = ih0 + r * g->sh;
    const uint8_t *src = g->plane + ih * g->W + g->col;
    int inside = ih >= 0 && ih < g->H;
    for (c0 = 0; c0 < g->OW; c0 += step) {
      uint64_t keep = inside ? lanes64(g->lo - c0, g->hi - c0) : 0, out = lanes64(0, g->OW - c0);
      if (vbmi) { /* lane j's byte is input column 2 (c0 + j) + col */
        int64_t lo2 = inside ? 2 * (g->lo - c0) : 0, hi2 = inside ? 2 * (g->hi - c0) - 1 : 0;
        qv_even64(src + 2 * c0, lo2, hi2, keep, out, z, d + c0);
        continue;
      }
      if (g->sw == 2) { /* byte pairs: lane j's even byte is input column 2 (c0 + j) + col */
        uint64_t kl = lanes64(2 * (g->lo - c0), 2 * (g->hi - c0) - 1) * (inside != 0);
        __m256i v = _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi8(kl, src + 2 * c0));
        v = _mm256_mask_blend_epi8((__mmask32)keep, _mm512_castsi512_si256(z), v);
        _mm256_mask_storeu_epi8(d + c0, (__mmask32)out, v);
      } else {
        _mm512_mask_storeu_epi8(d + c0, out, _mm512_mask_loadu_epi8(z, keep, src + c0));
      }
    }
  }
}

/* Rows ohs..ohs+nrow of column row k (channel, kh, kw) as raw codes, the zero point's code in
 * the padding, OW bytes each: strides 1 and 2 in AVX-512, others a scalar loop. */
static void col_rows_k(const mi__blis_conv_t *c, const uint8_t *x, int64_t k, int64_t ohs, int64_t nrow, uint8_t zraw,
                       uint8_t *d) {
  int64_t kh = k / c->KW % c->KH, kw = k % c->KW, oh, ow;
  qv_rows_t g = {x + k / (c->KH * c->KW) * c->H * c->W, c->H, c->W, c->OW, c->sh, c->sw, kw * c->dw - c->pl, 0, c->OW,
                 zraw};
  while (g.lo < c->OW && g.lo * c->sw + g.col < 0) g.lo++;
  while (g.hi > g.lo && (g.hi - 1) * c->sw + g.col >= c->W) g.hi--;
  if (c->sw <= 2) {
    qv_col_rows(&g, ohs * c->sh - c->pt + kh * c->dh, nrow, d);
    return;
  }
  for (oh = ohs; oh < ohs + nrow; oh++, d += c->OW) {
    int64_t ih = oh * c->sh - c->pt + kh * c->dh;
    for (ow = 0; ow < c->OW; ow++)
      d[ow] = ih >= 0 && ih < c->H && ow >= g.lo && ow < g.hi ? g.plane[ih * c->W + ow * c->sw + g.col] : zraw;
  }
}

void mi__blis_qv_im2col(const mi__blis_conv_t *c, const void *x, int64_t kk, int32_t x_u8, int32_t zx, int64_t oh0,
                        int64_t oh1, int64_t q0, int64_t q1, uint8_t *col) {
  int64_t ohw = (oh1 - oh0) * c->OW, chunk = MI__QV_ROW_BYTES / c->OW, qd, e, oh;
  uint8_t rows[4][MI__QV_ROW_BYTES], flip = x_u8 ? 0 : 0x80;
  int flat = c->KH == 1 && c->KW == 1 && c->sh == 1 && c->sw == 1 && c->OW == c->W && c->OH == c->H;
  for (qd = q0; qd < q1; qd++) {
    uint8_t *dst = col + qd * ohw * 4;
    const uint8_t *r[4];
    if (flat) { /* 1x1, stride 1, no pads: each row is a span of its channel's plane */
      for (e = 0; e < 4; e++) {
        int64_t k = 4 * qd + e < kk ? 4 * qd + e : kk - 1;
        r[e] = (const uint8_t *)x + k * c->H * c->W + oh0 * c->W;
      }
      mi__blis_qv_quads(r, ohw, flip, dst);
      continue;
    }
    for (oh = oh0; oh < oh1; oh += chunk) {
      int64_t nrow = oh1 - oh < chunk ? oh1 - oh : chunk;
      for (e = 0; e < 4; e++) {
        col_rows_k(c, x, 4 * qd + e < kk ? 4 * qd + e : kk - 1, oh, nrow, (uint8_t)zx, rows[e]);
        r[e] = rows[e];
      }
      mi__blis_qv_quads(r, nrow * c->OW, flip, dst + (oh - oh0) * c->OW * 4);
    }
  }
}
