/* blis_qamx.c - the byte core on AMX tiles: tdpbusd multiplies 16 rows of unsigned bytes by 16
 * columns of signed quads, 64 bytes of k at a time (16 x 16 x 64 products an instruction, 16x a
 * vpdpbusd's), into 16 x 16 int32 tiles. The int32 sums are the VNNI core's (blis_qvnni.c), exactly.
 * A Gemm's rows are the codes themselves (unsigned) and its weights the signed side, as there. A
 * conv's columns ([kq][pixels][4], blis_qvnni.c) are already the signed side's layout (a row of a
 * tile is a quad of 16 pixels), so the conv runs with the weights as the unsigned rows: w + 128
 * (the sign bit flipped) against the codes made signed, s = u - 128 (columns built with the other
 * flip), and sum_k w * u = sum_k (w + 128) * s + 128 * sum_k w - 128 * sum_k s: the weight sums are
 * the zero point's correction already, the column sums sum_k s one vpdpbusd pass per tile. */
#include <immintrin.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blis_qgemm.h"

#define TAMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")))
#define T512V __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")))

/* The kernel's permission request for the tile data (XFEATURE_XTILEDATA, arch_prctl
 * ARCH_REQ_XCOMP_PERM): without it the first tile instruction faults. */
#define AMX_REQ_XCOMP_PERM 0x1023
#define AMX_XTILEDATA 18

uint32_t mi__blis_amx_request(void) {
  static int state; /* 0 not asked, 1 granted, 2 refused; the request is idempotent */
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (!s) {
    unsigned a = 7, b = 0, c = 0, d = 0;
    __asm__("cpuid"
            : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    /* CPUID.(7,0):EDX bit 24 AMX-TILE, bit 25 AMX-INT8; the tiles feed AVX-512 VNNI code here */
    s = (d & (1u << 24)) && (d & (1u << 25)) && __builtin_cpu_supports("avx512vnni") &&
                syscall(SYS_arch_prctl, AMX_REQ_XCOMP_PERM, AMX_XTILEDATA) == 0
            ? 1
            : 2;
    __atomic_store_n(&state, s, __ATOMIC_RELEASE);
  }
  return s == 1 ? MI__ISA_AMX_INT8 : 0;
}

/* k blocks: kbr quads each (16, or kq when shorter), block b from quad min(b * kbr, kq - kbr), so
 * every tile reads inside the rows; the quads a block shares with the one before get weight 0. */
static int64_t qa_kbr(int64_t kq) { return kq < 16 ? kq : 16; }
static int64_t qa_nkb(int64_t kq) { return (kq + qa_kbr(kq) - 1) / qa_kbr(kq); }
static int64_t qa_kstart(int64_t kq, int64_t b) {
  int64_t s = b * qa_kbr(kq);
  return s + qa_kbr(kq) > kq ? kq - qa_kbr(kq) : s;
}

int mi__blis_qa_pays(int64_t m, int64_t n, int64_t kk) { return m >= 8 && n >= 32 && kk >= 16; }

uint64_t mi__blis_qa_conv_bytes(int64_t m, int64_t kq) {
  return (uint64_t)(m + 32) * (uint64_t)(qa_nkb(kq) * qa_kbr(kq) * 4);
}

void mi__blis_qa_conv_pack(const uint8_t *w8, int64_t m, int64_t kq, uint8_t *wa) {
  int64_t kbr = qa_kbr(kq), nkb = qa_nkb(kq), ws = nkb * kbr * 4, i, b, t, e;
  for (i = 0; i < m; i++)
    for (b = 0; b < nkb; b++)
      for (t = 0; t < kbr; t++) {
        int64_t g = qa_kstart(kq, b) + t;
        for (e = 0; e < 4; e++) /* w + 128; a quad of the block before: 0 (no product) */
          wa[i * ws + (b * kbr + t) * 4 + e] = g < b * kbr ? 0 : (uint8_t)(w8[(i * kq + g) * 4 + e] ^ 0x80);
      }
}

uint64_t mi__blis_qa_gemm_bytes(int64_t n, int64_t kq) {
  return (uint64_t)((n + 15) / 16) * (uint64_t)(qa_nkb(kq) * qa_kbr(kq) * 64);
}

void mi__blis_qa_gemm_pack(const uint8_t *b8, int64_t n, int64_t kq, uint8_t *wb) {
  int64_t kbr = qa_kbr(kq), nkb = qa_nkb(kq), nj = (n + 15) / 16, jb, b, t, j;
  memset(wb, 0, (size_t)mi__blis_qa_gemm_bytes(n, kq));
  for (jb = 0; jb < nj; jb++)
    for (b = 0; b < nkb; b++)
      for (t = 0; t < kbr; t++) {
        int64_t g = qa_kstart(kq, b) + t;
        uint8_t *d = wb + ((jb * nkb + b) * kbr + t) * 64;
        for (j = 0; j < 16 && jb * 16 + j < n && g >= b * kbr; j++) memcpy(d + j * 4, b8 + (g * n + jb * 16 + j) * 4, 4);
      }
}

/* ldtilecfg's 64 bytes: palette 1, tiles 0-3 the 16 x 16 int32 sums, 4-5 the unsigned rows (16 x
 * kbr quads), 6-7 the signed side (kbr rows of 16 quads). */
typedef struct qa_cfg {
  uint8_t palette, start_row, rsv[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((aligned(64))) qa_cfg_t;

static void qa_config(qa_cfg_t *c, int64_t kbr) {
  int t;
  memset(c, 0, sizeof *c);
  c->palette = 1;
  for (t = 0; t < 8; t++) {
    c->rows[t] = (uint8_t)(t >= 6 ? kbr : 16);
    c->colsb[t] = (uint16_t)(t == 4 || t == 5 ? kbr * 4 : 64);
  }
}

/* A 2 x 2 block of tiles: rows i..i+32 (a1: a second row tile) x columns j..j+32 (b1), over the k
 * blocks; unsigned rows at a (block b at a + b * kbr * 4, row stride as), the signed side at bp(b)
 * (kbr rows, stride bs; the second column tile 64 bytes or bstep further). */
#define QA_BLOCK(A_AT, B_AT, as, bs, bstep, two_i, two_j) \
  do {                                                    \
    _tile_zero(0);                                        \
    _tile_zero(1);                                        \
    _tile_zero(2);                                        \
    _tile_zero(3);                                        \
    for (b = 0; b < nkb; b++) {                           \
      const uint8_t *ap = A_AT, *bp = B_AT;               \
      _tile_loadd(4, ap, as);                             \
      _tile_loadd(6, bp, bs);                             \
      _tile_dpbusd(0, 4, 6);                              \
      if (two_j) {                                        \
        _tile_loadd(7, bp + (bstep), bs);                 \
        _tile_dpbusd(1, 4, 7);                            \
      }                                                   \
      if (two_i) {                                        \
        _tile_loadd(5, ap + 16 * (as), as);               \
        _tile_dpbusd(2, 5, 6);                            \
        if (two_j) _tile_dpbusd(3, 5, 7);                 \
      }                                                   \
    }                                                     \
    _tile_stored(0, buf[0], 64);                          \
    if (two_j) _tile_stored(1, buf[1], 64);               \
    if (two_i) _tile_stored(2, buf[2], 64);               \
    if (two_i && two_j) _tile_stored(3, buf[3], 64);      \
  } while (0)

static inline __mmask16 qa_mask(int64_t left) {
  return left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                        : 0;
}

TAMX void mi__blis_qa_conv(int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *wa, const uint8_t *col,
                           const int32_t *wsum, const int32_t *ssum, int32_t zu, int32_t *acc) {
  int64_t kbr = qa_kbr(kq), nkb = qa_nkb(kq), ws = nkb * kbr * 4, bs = n * 4, i, j0, b;
  int32_t buf[4][16][16];
  qa_cfg_t cfg;
  qa_config(&cfg, kbr);
  _tile_loadconfig(&cfg);
  for (j0 = 0; j0 < n; j0 += 32) {
    int two_j = n - j0 > 16;
    /* -128 * sum_k s of each pixel of the block */
    __m512i sc0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(qa_mask(n - j0), ssum + j0), 7);
    __m512i sc1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(qa_mask(n - j0 - 16), ssum + j0 + 16), 7);
    for (i = m0; i < m1; i += 32) {
      int two_i = m1 - i > 16, ti, tj, r;
      QA_BLOCK(wa + i * ws + b * kbr * 4, col + (qa_kstart(kq, b) * n + j0) * 4, ws, bs, 64, two_i, two_j);
      for (ti = 0; ti < 1 + two_i; ti++)
        for (r = 0; r < 16 && i + 16 * ti + r < m1; r++) {
          int64_t m = i + 16 * ti + r;
          /* (128 - zu) * wsum[m], modulo 2^32 as the sums */
          __m512i cm = _mm512_set1_epi32((int32_t)((uint32_t)(128 - zu) * (uint32_t)wsum[m]));
          for (tj = 0; tj < 1 + two_j; tj++) {
            __m512i v = _mm512_loadu_si512(buf[2 * ti + tj][r]);
            v = _mm512_sub_epi32(_mm512_add_epi32(v, cm), tj ? sc1 : sc0);
            _mm512_mask_storeu_epi32(acc + m * n + j0 + 16 * tj, qa_mask(n - j0 - 16 * tj), v);
          }
        }
    }
  }
  _tile_release();
}

TAMX void mi__blis_qa_gemm(int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a, const uint8_t *wb,
                           const int32_t *csum, int32_t zu, int32_t *acc) {
  int64_t kbr = qa_kbr(kq), nkb = qa_nkb(kq), as = kq * 4, i, j0, b;
  int32_t buf[4][16][16];
  qa_cfg_t cfg;
  qa_config(&cfg, kbr);
  _tile_loadconfig(&cfg);
  for (j0 = 0; j0 < n; j0 += 32) {
    int two_j = n - j0 > 16, tj, ti, r;
    __m512i cz[2]; /* zu * csum of the block's columns */
    const uint8_t *wj = wb + j0 / 16 * nkb * kbr * 64;
    for (tj = 0; tj < 2; tj++)
      cz[tj] = _mm512_mullo_epi32(_mm512_set1_epi32(zu),
                                  _mm512_maskz_loadu_epi32(qa_mask(n - j0 - 16 * tj), csum + j0 + 16 * tj));
    for (i = m0; i < m1; i += 32) {
      int two_i = m1 - i > 16;
      QA_BLOCK(a + i * as + qa_kstart(kq, b) * 4, wj + b * kbr * 64, as, 64, nkb * kbr * 64, two_i, two_j);
      for (ti = 0; ti < 1 + two_i; ti++)
        for (r = 0; r < 16 && i + 16 * ti + r < m1; r++)
          for (tj = 0; tj < 1 + two_j; tj++)
            _mm512_mask_storeu_epi32(acc + (i + 16 * ti + r) * n + j0 + 16 * tj, qa_mask(n - j0 - 16 * tj),
                                     _mm512_sub_epi32(_mm512_loadu_si512(buf[2 * ti + tj][r]), cz[tj]));
    }
  }
  _tile_release();
}

/* Column sums of signed conv columns for pixels j0..j1: ssum over every byte of the kq quads (the
 * AMX conv's correction), psum (when not NULL) the VNNI core's pixel sums of the unsigned codes
 * over k < kk, sum_k s + 128 * kk (the weight shift's, blis_qgemm.h). 128 pixels at a time, every
 * quad row read as 512 contiguous bytes: a 16-pixel column walked down the rows (the column
 * path's layout) read one line a row, 472 us for 216 quads x 6400 pixels against 531 us of tiles. */
#define QA_CS 8
T512V void mi__blis_qa_colsum(int64_t kk, int64_t kq, int64_t n, const uint8_t *col, int64_t j0, int64_t j1,
                              int32_t *ssum, int32_t *psum) {
  int32_t rem = (int32_t)(kk - 4 * (kq - 1)); /* 1..4 real bytes in the last quad */
  const __m512i ones = _mm512_set1_epi32(0x01010101);
  const __m512i last = _mm512_set1_epi32((int32_t)(0xffffffffu >> (32 - 8 * rem)) & 0x01010101);
  const __m512i pad = _mm512_xor_si512(ones, last), base = _mm512_set1_epi32((int32_t)(128u * (uint32_t)kk));
  int64_t j, p;
  int v;
  for (j = j0; j < j1; j += 16 * QA_CS) {
    __mmask16 km[QA_CS];
    __m512i s[QA_CS], x;
    for (v = 0; v < QA_CS; v++) {
      km[v] = qa_mask(j1 - j - 16 * v);
      s[v] = _mm512_setzero_si512();
    }
    for (p = 0; p + 1 < kq; p++)
      for (v = 0; v < QA_CS; v++)
        s[v] = _mm512_dpbusd_epi32(s[v], ones, _mm512_maskz_loadu_epi32(km[v], col + (p * n + j + 16 * v) * 4));
    for (v = 0; v < QA_CS; v++) {
      if (!km[v]) break;
      x = _mm512_maskz_loadu_epi32(km[v], col + ((kq - 1) * n + j + 16 * v) * 4);
      s[v] = _mm512_dpbusd_epi32(s[v], last, x);
      if (psum) _mm512_mask_storeu_epi32(psum + j + 16 * v, km[v], _mm512_add_epi32(s[v], base));
      _mm512_mask_storeu_epi32(ssum + j + 16 * v, km[v], _mm512_dpbusd_epi32(s[v], pad, x));
    }
  }
}

/* The direct conv (blis_qdirect.c): k step (quad q, tap e) of 16 pixels is 64 bytes at a fixed
 * offset, and quads q..q+15 of one tap lie one stride (a quad's phase planes) apart, so a tap's
 * block of quads is one tile of the signed side; k blocks are (tap, block of kbr quads). */
uint64_t mi__blis_qa_direct_bytes(const mi__blis_qd_t *d) {
  return (uint64_t)(d->c->M + 32) * (uint64_t)(d->c->KH * d->c->KW * qa_nkb(d->cq) * qa_kbr(d->cq) * 4);
}

void mi__blis_qa_direct_pack(const mi__blis_qd_t *d) {
  int64_t taps = d->c->KH * d->c->KW, kbr = qa_kbr(d->cq), nqb = qa_nkb(d->cq), ws = taps * nqb * kbr * 4, m, e, b, t, l;
  for (m = 0; m < d->c->M; m++)
    for (e = 0; e < taps; e++)
      for (b = 0; b < nqb; b++)
        for (t = 0; t < kbr; t++) {
          int64_t q = qa_kstart(d->cq, b) + t;
          uint8_t *dst = d->wa + m * ws + ((e * nqb + b) * kbr + t) * 4;
          for (l = 0; l < 4; l++) dst[l] = q < b * kbr ? 0 : (uint8_t)(d->w[(m * d->nk + q * taps + e) * 4 + l] ^ 0x80);
        }
}

TAMX void mi__blis_qa_direct(const mi__blis_qd_t *d, const uint8_t *wa, const int32_t *wsum, int64_t m0, int64_t m1,
                             int64_t p0, int64_t np, int32_t zu, int32_t *acc) {
  int64_t kbr = qa_kbr(d->cq), nqb = qa_nkb(d->cq), nkb = d->c->KH * d->c->KW * nqb, ws = nkb * kbr * 4;
  int64_t qs = d->nph * d->hq * d->wq * 4, i, j0, b;
  int32_t buf[4][16][16];
  qa_cfg_t cfg;
  qa_config(&cfg, kbr);
  _tile_loadconfig(&cfg);
  for (j0 = 0; j0 < np; j0 += 32) {
    int two_j = np - j0 > 16;
    const uint8_t *xb = d->xp + (p0 + j0) * 4;
    __m512i sc0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(qa_mask(np - j0), d->asum + p0 + j0), 7);
    __m512i sc1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(qa_mask(np - j0 - 16), d->asum + p0 + j0 + 16), 7);
    for (i = m0; i < m1; i += 32) {
      int two_i = m1 - i > 16, ti, tj, r;
      QA_BLOCK(wa + i * ws + b * kbr * 4, xb + qa_kstart(d->cq, b % nqb) * qs + d->toff[b / nqb] * 4, ws, qs, 64, two_i,
               two_j);
      for (ti = 0; ti < 1 + two_i; ti++)
        for (r = 0; r < 16 && i + 16 * ti + r < m1; r++) {
          int64_t m = i + 16 * ti + r;
          __m512i cm = _mm512_set1_epi32((int32_t)((uint32_t)(128 - zu) * (uint32_t)wsum[m]));
          for (tj = 0; tj < 1 + two_j; tj++) {
            __m512i v = _mm512_sub_epi32(_mm512_add_epi32(_mm512_loadu_si512(buf[2 * ti + tj][r]), cm), tj ? sc1 : sc0);
            _mm512_mask_storeu_epi32(acc + m * np + j0 + 16 * tj, qa_mask(np - j0 - 16 * tj), v);
          }
        }
    }
  }
  _tile_release();
}
