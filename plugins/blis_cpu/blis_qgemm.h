/* blis_qgemm.h - INT8 Conv / Gemm / MatMul (lowered QDQ layers, docs/abi.md): shared core. */
#ifndef MI_BLIS_QGEMM_H
#define MI_BLIS_QGEMM_H

#include "blis_conv.h"

/* Dot products of the int32 core (knob int8_dot): int16 pairs in plain C, vpmaddwd on AVX2 or
 * AVX-512BW, vpdpwssd on AVX-512 VNNI; VNNI_U8: byte quads, vpdpbusd on the codes themselves
 * (blis_qvnni.c) where the weights fit INT8, the int16 vpdpwssd core elsewhere; AMX_U8: the same
 * byte quads on AMX tiles (tdpbusd, blis_qamx.c) where a layer is large enough, VNNI_U8 elsewhere. */
enum { MI__QDOT_C = 0,
       MI__QDOT_AVX2,
       MI__QDOT_AVX512,
       MI__QDOT_VNNI,
       MI__QDOT_VNNI_U8,
       MI__QDOT_AMX_U8 };
/* Widest pair-dot path for this CPU at SIMD level simd. */
int32_t mi__blis_qdot_level(uint32_t isa, int32_t simd);
/* acc[m0..m1)[n] = a[m][k] * b[k][n] in int32, exactly, k in kp pairs: b2 is b as [kp][n][2]
 * (pair p of column j at b2 + (p * n + j) * 2; an odd k's last pair ends in 0), a's rows have
 * stride ka = 2 * kp (zero past k). */
void mi__blis_qgemm(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kp, const int16_t *a,
                    int64_t ka, const int16_t *b2, int32_t *acc);
/* The int16 columns of the GEMM path for output rows oh0..oh1 and k pairs p0..p1 in AVX2
 * (blis_qcol256.c): pair p at col + p * npix * 2, pixel j's two values at [j * 2] (k = 2p) and
 * [j * 2 + 1] (k = 2p + 1), each x - zx or 0 in the padding and past kk; npix = (oh1 - oh0) * OW.
 * Whole pairs are written, so threads split over pairs. */
void mi__blis_qcol_pairs256(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0,
                            int64_t oh1, int64_t p0, int64_t p1, int16_t *col);
/* The same for the tile's pixels j0..j1 only (pixel j = (oh - oh0) * OW + ow), every pair. */
void mi__blis_qcol_pix256(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0,
                          int64_t oh1, int64_t j0, int64_t j1, int16_t *col);
/* mi__blis_qgemm for columns j0..j1 of the n only (acc and b2 keep their row stride n). */
void mi__blis_qgemm_cols(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t j0, int64_t j1, int64_t kp,
                         const int16_t *a, int64_t ka, const int16_t *b2, int32_t *acc);
/* The byte core (blis_qvnni.c): acc[i][j] = sum_p dot4(a row i quad p, b[p][j]) - zu * (rsum[i],
 * or csum[j] when rsum is NULL), exactly, rows m0..m1. a: rows of kq * 4 bytes; b: [kq][n][4]
 * bytes. lanes_u8: b holds the unsigned codes and a the signed weights (a conv's columns), else a
 * holds the codes and b the weights (a Gemm's). dot MI__QDOT_VNNI_U8: vpdpbusd, else plain C. */
void mi__blis_qv_gemm(int32_t dot, int32_t lanes_u8, int64_t m0, int64_t m1, int64_t n, int64_t kq,
                      const uint8_t *a, const uint8_t *b, const int32_t *rsum, const int32_t *csum,
                      int32_t zu, int32_t *acc);
/* mi__blis_qv_gemm for a conv (lanes_u8: a the weights, b the columns, rsum the weight sums) with
 * the weight shift on its register tiles: acc[i][j] also gets wd[i] * (psum[j] - base) (the shift
 * below), modulo 2^32, before the sums are stored, so they are written once. */
void mi__blis_qv_conv_shift(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a,
                            const uint8_t *b, const int32_t *rsum, int32_t zu, const int32_t *wd, const int32_t *psum,
                            int32_t base, int32_t *acc);
/* Weights whose values (minus their zero point) span at most 256 but do not fit INT8 (UINT8
 * weights with a zero point, ONNX Runtime's dynamic ConvInteger): stored as s = v - d, d one shift
 * per output channel, so s fits INT8, and the byte core's sums get d * sum_k (u_k - zu) back:
 * mi__blis_qv_colsum gives sum_k u_k per column of conv columns ([kq][n][4], k < kk only) and
 * mi__blis_qv_shift adds acc[j] += d * (psum[j] - base), base = zu * kk, modulo 2^32. */
void mi__blis_qv_colsum(int32_t dot, int64_t kk, int64_t kq, int64_t n, const uint8_t *col, int64_t j0, int64_t j1,
                        int32_t *psum);
void mi__blis_qv_shift(int32_t *acc, int64_t n, int32_t d, const int32_t *psum, int32_t base);
/* The byte core's conv columns of one group (c's geometry, x its first input channel's plane) for
 * output rows oh0..oh1, k quads q0..q1 of kk: col as [kq][(oh1 - oh0) * OW][4] codes made unsigned,
 * the zero point's code zx in the padding; a quad's k past kk repeats k = kk - 1 (weight 0). Output
 * rows up to MI__QV_ROW_BYTES columns (AVX-512BW: the byte core runs on AVX-512 VNNI CPUs only). */
#define MI__QV_ROW_BYTES 2048
void mi__blis_qv_im2col(const mi__blis_conv_t *c, const void *x, int64_t kk, int32_t x_u8, int32_t zx, int64_t oh0,
                        int64_t oh1, int64_t q0, int64_t q1, uint8_t *col);
/* The AVX2 byte core (blis_qgemm256.c): a Gemm's weights b8 ([kq][n][4] INT8, as the VNNI core's)
 * packed in panels of 16 columns ([n/16][kq][16][4], zero past n), each pair of weights that
 * vpmaddubsw could saturate with the rest of its second weight in a fix list. _fixes counts those
 * pairs (the int16 core is kept where they are more than one in MI__Q256_FIX_SHARE weights),
 * _bytes is the packed size (32-byte aligned mem), _gemm the VNNI core's sums of rows m0..m1 of
 * codes a (rows of lda >= kq * 4 bytes, anything past k), sum - zu * csum[j], exactly, to o. */
#define MI__Q256_FIX_SHARE 1024
#define MI__Q256_ROWS 6 /* rows of its register blocks */
typedef struct mi__blis_q256_fix {
  int32_t k, j, r; /* acc[i][j] += a[i][k] * r */
} mi__blis_q256_fix_t;
typedef struct mi__blis_q256 {
  int64_t n, kq, nfix;
  const int8_t *b;
  mi__blis_q256_fix_t *fix; /* by column */
  int32_t *fstart;          /* [n/16 + 1]: panel p's fixes from fix + fstart[p] */
} mi__blis_q256_t;
/* Where _gemm (and the VNNI core's mi__blis_qv_gemm_out) writes: the int32 sums to acc ([m][n]), or, y not NULL, floats y = (float)sum * s
 * [+ tb[j]] (a Cast, a Mul by the scale, an Add of a bias, each rounded as the nodes). wd not
 * NULL: each sum first gets the weight shift wd[j] * rs[i] (blis_qgemm.h's shift: rs[i] = row i's
 * code sum minus zu * k), modulo 2^32, on the tile, so the floats come from the tiles too. */
typedef struct mi__blis_q256_out {
  int32_t *acc;
  float *y;
  float s;
  const float *tb;
  const int32_t *wd, *rs; /* [n] shifts, [m] row terms; or NULL */
} mi__blis_q256_out_t;
/* The VNNI byte core's Gemm (mi__blis_qv_gemm, the codes a in rows of kq * 4 bytes, the weights b
 * [kq][n][4]) with such an output: the shift and the floats on its register tiles, so a shifted
 * MatMulInteger's float tail writes no int32 plane (o->acc is then not touched). */
void mi__blis_qv_gemm_out(int32_t dot, int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a,
                          const uint8_t *b, const int32_t *csum, int32_t zu, const mi__blis_q256_out_t *o);
int64_t mi__blis_q256_fixes(const uint8_t *b8, int64_t n, int64_t kq);
uint64_t mi__blis_q256_bytes(int64_t n, int64_t kq, int64_t nfix);
void mi__blis_q256_pack(mi__blis_q256_t *pb, const uint8_t *b8, int64_t n, int64_t kq, void *mem);
void mi__blis_q256_gemm(const mi__blis_q256_t *pb, int64_t m0, int64_t m1, const uint8_t *a, int64_t lda,
                        const int32_t *csum, int32_t zu, const mi__blis_q256_out_t *o);
/* The same core for a conv (blis_qgemm.c's AVX2 byte path): pixels are its rows, output channels
 * its columns. Pixels i0..i1 of one tile's byte columns col ([kq][npix][4] unsigned codes, see
 * mi__blis_qcol_quads256) by the panels p0..p1 of pb (a group's channels), sum - zu * csum[j] to
 * acc[j][npix] (each channel's row of the tile, as the int16 core writes it), exactly. sh not
 * NULL: each sum also gets the weight shift wd[j] * (psum[i] - base) (mi__blis_qv_shift's term)
 * on the tile before it is stored, so the sums are written once. */
typedef struct mi__blis_q256_shift {
  const int32_t *wd;   /* [channels of the group] */
  const int32_t *psum; /* [npix]: each pixel's code sum */
  int32_t base;        /* zu * kk */
} mi__blis_q256_shift_t;
void mi__blis_q256_conv(const mi__blis_q256_t *pb, int64_t i0, int64_t i1, int64_t p0, int64_t p1, const uint8_t *col,
                        int64_t npix, const int32_t *csum, int32_t zu, const mi__blis_q256_shift_t *sh, int32_t *acc);
/* The byte columns of that core in AVX2 (blis_qcol256.c): for the tile's output rows oh0..oh1 and
 * its pixels j0..j1 (pixel j = (oh - oh0) * OW + ow), every quad: col + (q * npix + j) * 4 holds
 * rows k = 4q..4q+3 of pixel j as unsigned codes (INT8 codes with their sign bit flipped), the
 * zero point's code in the padding, 0 past kk; npix = (oh1 - oh0) * OW. With psum, psum[j] = the
 * sum of pixel j's kk codes (the weight shift's pixel sums, blis_qgemm.h). */
void mi__blis_qcol_quads256(const mi__blis_conv_t *c, const void *x, int u8, int32_t zx, int64_t kk, int64_t oh0,
                            int64_t oh1, int64_t j0, int64_t j1, uint8_t *col, int32_t *psum);
/* The byte core on AMX tiles (blis_qamx.c, int8_dot amx_u8): the same exact sums as
 * mi__blis_qv_gemm. 1 when a layer of m output rows (a conv's channels of a group, a Gemm's rows),
 * n columns and reduction kk fills tiles enough to pay (else the VNNI core runs it). */
int mi__blis_qa_pays(int64_t m, int64_t n, int64_t kk);
/* Conv: the weights w8 ([m][kq * 4], signed) packed as the tiles' unsigned rows into wa
 * (mi__blis_qa_conv_bytes, zeroed: 32 rows of slack read by the last blocks), and the sums
 * acc[i][j] of rows m0..m1 (rows of wa from m0) over the columns col ([kq][n][4] codes made signed:
 * mi__blis_qv_im2col with x_u8 negated; 64 bytes readable past them), the VNNI core's
 * sum - zu * wsum[i], given ssum (mi__blis_qa_colsum). */
uint64_t mi__blis_qa_conv_bytes(int64_t m, int64_t kq);
void mi__blis_qa_conv_pack(const uint8_t *w8, int64_t m, int64_t kq, uint8_t *wa);
void mi__blis_qa_conv(int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *wa, const uint8_t *col,
                      const int32_t *wsum, const int32_t *ssum, int32_t zu, int32_t *acc);
/* ssum[j] = sum of the signed bytes of column j over all kq quads, for j0 <= j < j1, and (psum not
 * NULL) psum[j] = mi__blis_qv_colsum's sum of the unsigned codes over k < kk. */
void mi__blis_qa_colsum(int64_t kk, int64_t kq, int64_t n, const uint8_t *col, int64_t j0, int64_t j1,
                        int32_t *ssum, int32_t *psum);
/* Gemm: the weights b8 ([kq][n][4]) packed into wb (mi__blis_qa_gemm_bytes) and the sums of rows
 * m0..m1 of codes a ([m][kq * 4] unsigned; 32 rows readable past m1), sum - zu * csum[j]. */
uint64_t mi__blis_qa_gemm_bytes(int64_t n, int64_t kq);
void mi__blis_qa_gemm_pack(const uint8_t *b8, int64_t n, int64_t kq, uint8_t *wb);
void mi__blis_qa_gemm(int64_t m0, int64_t m1, int64_t n, int64_t kq, const uint8_t *a, const uint8_t *wb,
                      const int32_t *csum, int32_t zu, int32_t *acc);
/* dst[j * 4 + e] = r[e][j] ^ flip for j < n: four rows of codes interleaved into quads. */
void mi__blis_qv_quads(const uint8_t *const r[4], int64_t n, uint8_t flip, uint8_t *dst);
/* The byte core's conv without columns (blis_qdirect.c): the group's input copied once per run
 * into channel quads over stride-phase planes of the padded input ([cq][sh * sw][hq * wq][4]
 * bytes, the zero point's code in the padding), so tap (kh, kw) of quad cq is one byte offset and
 * output pixel oh * wq + ow reads 16 pixels' quads as one 64-byte load: no im2col (a 96-channel
 * 3x3 conv's columns are 864 bytes a pixel). Pixels ow >= OW of each row are computed and dropped. */
typedef struct mi__blis_qd {
  const mi__blis_conv_t *c;
  int64_t cg, mg, cq, kk;     /* input / output channels of a group, quads, cg * KH * KW */
  int64_t hq, wq, nph, nk;    /* phase plane hq x wq, sh * sw phases, k steps cq * KH * KW */
  int64_t tile;               /* output rows per tile: its sums stay in cache for the output stage */
  int32_t dot, shift;         /* shift: some wd[m] != 0 (psum needed) */
  const int32_t *wsum, *wd;   /* [M] weight sums and shifts (blis_qgemm.h) */
  int32_t *koff;              /* [nk] byte offset of k step (cq, kh, kw) from pixel 0 */
  int32_t *toff;              /* [KH * KW] int32 offset of tap (kh, kw) in ssum */
  uint8_t *w;                 /* [M][nk * 4] weights in k-step order, 0 past cg */
  uint8_t *xp;                /* the quads, and a row of slack read only by dropped pixels */
  int32_t *ssum, *psum, *acc; /* shift: per padded pixel, per output pixel; [mg][tile * wq] sums */
  /* amx: the k steps on AMX tiles (blis_qamx.c): signed quads, ssum / asum the column sums of
   * every byte (per padded pixel / output pixel), wa the weights as the tiles' unsigned rows */
  int32_t amx;
  int32_t *asum;
  uint8_t *wa;
} mi__blis_qd_t;
/* The AMX form of the direct conv's k steps: wa's bytes (mi__blis_qd_plan counts them), its
 * weights packed from d->w, and the sums of rows m0..m1 (wa from row m0), pixels p0..p0+np, as
 * the VNNI kernel's: sum - zu * wsum[m] (-128 * asum comes out too). */
uint64_t mi__blis_qa_direct_bytes(const mi__blis_qd_t *d);
void mi__blis_qa_direct_pack(const mi__blis_qd_t *d);
void mi__blis_qa_direct(const mi__blis_qd_t *d, const uint8_t *wa, const int32_t *wsum, int64_t m0, int64_t m1,
                        int64_t p0, int64_t np, int32_t zu, int32_t *acc);
/* Output of rows oh..oh+rows of group output channel m: rows * OW int32 sums (writable) at acc. */
typedef void (*mi__blis_qd_out_fn)(void *arg, int64_t m, int64_t oh, int64_t rows, int32_t *acc);
/* Fills d's geometry for conv c (the byte core's, kk = C/G * KH * KW) and returns the bytes
 * mi__blis_qd_init needs, or 0 when the direct form does not apply (1x1, a 1-channel group ...);
 * dot MI__QDOT_AMX_U8: the k steps on AMX tiles. */
uint64_t mi__blis_qd_plan(mi__blis_qd_t *d, const mi__blis_conv_t *c, int32_t dot);
/* Carves mem (zeroed, 64-byte aligned) and reorders the byte core's weights w8 ([M][kq * 4]). */
void mi__blis_qd_init(mi__blis_qd_t *d, void *mem, const uint8_t *w8, int64_t kq, const int32_t *wsum,
                      const int32_t *wd, int32_t shift);
/* Group g of one image: x its first input channel's plane, codes UINT8 (x_u8) or INT8, zero
 * point zx; exact int32 sums handed row by row to out. */
void mi__blis_qd_run(const mi__blis_qd_t *d, const mi__blis_env_t *env, int64_t g, const void *x, int32_t x_u8,
                     int32_t zx, mi__blis_qd_out_fn out, void *arg);
/* Storage of the core's operands: both int16 pairs, or one of them packed INT4, one byte per k
 * pair (even k in the low nibble, odd k in the high one, signed), widened to int16 pairs inside
 * the core right before use. A4: A rows of ka / 2 bytes; B4: B as [kp][n] bytes. */
enum { MI__QPACK_NONE = 0,
       MI__QPACK_A4,
       MI__QPACK_B4 };
/* mi__blis_qgemm with the storage `pack`: a and b are int16 pairs or packed INT4 as it says. */
void mi__blis_qgemm_packed(int32_t dot, int32_t pack, int64_t m0, int64_t m1, int64_t n, int64_t kp,
                           const void *a, int64_t ka, const void *b, int32_t *acc);
/* Byte of packed INT4 pair (w0, w1) (each in -8..7): w0 in the low nibble. */
static inline uint8_t mi__blis_nib_byte(int32_t w0, int32_t w1) {
  return (uint8_t)(((uint32_t)w0 & 15u) | (((uint32_t)w1 & 15u) << 4));
}
/* Writes n codes y[i] = clamp(round_half_even(acc[i]*mult[i*mstep] + bias[i*mstep]) + zy), UINT8
 * or INT8; mstep 1 for per-column parameters, 0 for one pair. */
void mi__blis_requant(int32_t simd, const int32_t *acc, int64_t n, const double *mult,
                      const double *bias, int64_t mstep, int32_t zy, int32_t is_u8, void *y);
/* The same from float sums that hold exact integers (the depthwise float planes). */
void mi__blis_requant_f(int32_t simd, const float *acc, int64_t n, const double *mult,
                        const double *bias, int64_t mstep, int32_t zy, int32_t is_u8, void *y);
/* Element i of an INT8 or packed INT4 (low nibble first) constant. */
int32_t mi__blis_qweight(const mi_tensor_desc_t *w, int64_t i);
/* 1 when every value of an INT8 or INT4 constant fits 4 bits (-8..7): an MI_DTYPE_INT4 weight, or
 * an INT4 layer's weight the host hands as INT8 values (docs/transforms.md); kept packed. */
int mi__blis_qweight_4bit(const mi_tensor_desc_t *w);
/* Scale of output channel c of a weight with `channels` channels (per tensor or per channel);
 * 0 when the tensor's quantization does not fit. */
int mi__blis_qscale(const mi_tensor_desc_t *w, int64_t channels, int64_t c, double *s);
int mi__blis_is_q8(const mi_tensor_desc_t *t);
/* n codes y = QuantizeLinear(x) with one scale and zero point (UINT8 when u8, else INT8), and
 * n floats y = DequantizeLinear(x), the reference's arithmetic bit for bit (blis_quant.c). */
void mi__blis_q_row(int32_t simd, const float *x, void *y, int64_t n, float s, int32_t zp, int32_t u8);
void mi__blis_dq_row(int32_t simd, const void *x, float *y, int64_t n, float s, int32_t zp, int32_t u8);
/* n codes y = Q(DQ(xa) op DQ(xb)) of two full operands (op: Add, or Mul when mul), the unfused
 * nodes' arithmetic bit for bit, on AVX-512 (blis_quant.c); 0 (nothing written) at other levels. */
typedef struct mi__blis_qbin_row {
  float sa, sb, ys;
  int32_t za, zb, yz, au8, bu8, yu8, mul;
} mi__blis_qbin_row_t;
int mi__blis_qbin_row(int32_t simd, const mi__blis_qbin_row_t *b, const void *xa, const void *xb, void *y, int64_t n);
/* A lowered QDQ Add or Mul: codes in, codes out (blis_qadd.c). */
int32_t mi__blis_prep_qbinary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);

/* After the Relu: x * am (when has_am) + ac (when has_ac) by constant scalars (a learnable affine
 * block), then a hard-swish as paddle2onnx writes it, x * clip(x + a, lo, hi) / d (or * d when
 * !div) when on; one float rounding per node as the unfused nodes do. Then nact activations in
 * order: act[i] is MI__ACT_LEAKY, _RELU or _CLIP of mi__blis_act_of with its aa / ab (the kinds
 * whose lane form is the reference's arithmetic), or MI__QT_MAX / _MIN, a Max / Min against the
 * constant aa with the reference's NaN rule (tf2onnx's leaky clamp). */
#define MI__QT_MAX (-1)
#define MI__QT_MIN (-2)
typedef struct mi__blis_hsw {
  int32_t has_am, has_ac, on, div;
  float am, ac, a, lo, hi, d;
  int32_t nact, act[2];
  float aa[2], ab[2];
  /* dq: a DynamicQuantizeLinear of the tail's output ends the step (tensors dq_x, the floats, n of
   * them, and its outputs dq_y, dq_s, dq_z): every row's min/max is merged into rlo / rhi (float bits,
   * across the threads) as it is written, and the quantize pass alone reads the floats again */
  int32_t dq, dq_x, dq_y, dq_s, dq_z;
  int64_t dq_n;
  uint32_t rlo, rhi;
  /* pad: a Pad by zero of H and W comes between (exec/plan.c): the codes are the padded plane's,
   * dq_x the tail's unpadded [planes][ih][iw] floats at (pt, pl) in [planes][oh][ow] codes, the
   * border the zero point (the range always holds 0, so the padding leaves it) */
  int32_t pad;
  int64_t ih, iw, oh, ow, pt, pl;
  /* res_post: the tail's residual is added right after the Relu, not before it (relu(x) + r) */
  int32_t res_post;
  /* hand: the tail's output y is the kernel's, so a later kernel's DynamicQuantizeLinear may ask
   * for its range (blis_range.c); track, per run (mi__blis_ftail_begin): the range is found as the
   * rows are written, into rlo / rhi (dq, or y's range asked) */
  int32_t hand, y, track;
} mi__blis_hsw_t;

/* One value of the float tail the plain loop's way: one float rounding per op, in the tail's
 * order (the vector tails match it lane for lane). */
static inline float mi__blis_ftail_one(int32_t a, float s, int has_b, float b, const float *res, int relu,
                                       const mi__blis_hsw_t *hs) {
  float v = (float)a * s;
  if (has_b) v = v + b;
  if (res && !hs->res_post) v = v + *res;
  v = relu ? (v > 0.f ? v : 0.f) : v;
  if (res && hs->res_post) v = v + *res;
  if (hs->has_am) v = v * hs->am;
  if (hs->has_ac) v = v + hs->ac;
  if (hs->on) {
    float c = v + hs->a;
    c = c < hs->lo ? hs->lo : c;
    c = c > hs->hi ? hs->hi : c;
    v = v * c;
    v = hs->div ? v / hs->d : v * hs->d;
  }
  return v;
}
/* Around a step whose tail may end in that DynamicQuantizeLinear or hand its output's range on:
 * whether this run finds the range and its reset before the rows, then the codes, scale and zero
 * point from it, or the range recorded on y for the kernel run (blis_qftail.c). */
void mi__blis_ftail_begin(const mi__blis_hsw_t *hs, const mi__blis_env_t *env);
/* A range [lo, hi] of rows a kernel wrote itself merged into the step's, as the tail merges its
 * own: each end only where strictly wider. */
void mi__blis_ftail_merge(const mi__blis_hsw_t *hs, float lo, float hi);
void mi__blis_ftail_end(const mi__blis_hsw_t *hs, void *const *t, const mi__blis_env_t *env, int32_t simd);
/* DynamicQuantizeLinear's codes of the n floats t[x] given their min lo and max hi (each widened
 * to include 0): scale and zero point to t[ys], t[yz], codes to t[y], the reference's arithmetic
 * (blis_qeltwise.c). */
void mi__blis_dynq_codes(const mi__blis_env_t *env, int32_t simd, void *const *t, int32_t x, int32_t y, int32_t ys,
                         int32_t yz, int64_t n, float lo, float hi);
/* The pieces of it: the range of n floats merged into *lo, *hi (start them at 0, the widening),
 * the scale and zero point of a range, and the codes of `outer` blocks of `inner` floats (block o
 * from x + o * inner to y + o * ystride), across the threads. */
void mi__blis_dynq_range(const mi__blis_env_t *env, int32_t simd, const float *x, int64_t n, float *lo, float *hi);
void mi__blis_dynq_params(float lo, float hi, float *scale, int32_t *zp);
/* mi__blis_dynq_params, and the two written to DynamicQuantizeLinear's outputs t[ys] (FLOAT) and
 * t[yz] (UINT8). */
void mi__blis_dynq_outputs(void *const *t, int32_t ys, int32_t yz, float lo, float hi, float *scale, int32_t *zp);
void mi__blis_dynq_blocks(const mi__blis_env_t *env, int32_t simd, const float *x, int64_t outer, int64_t inner,
                          uint8_t *y, int64_t ystride, float scale, int32_t zp);
/* The codes of n floats on the calling thread (the quantize pass of mi__blis_dynq_blocks). */
void mi__blis_dynq_row(int32_t simd, const float *x, uint8_t *y, int64_t n, float scale, int32_t zp);
/* The codes of the tail's floats f, elements e0..e0+n of its output, into the DynamicQuantizeLinear
 * codes of hs (at their padded place where hs->pad), and the padded border as the zero point. */
void mi__blis_dynq_put(const mi__blis_hsw_t *hs, int32_t simd, const float *f, int64_t e0, int64_t n, uint8_t *codes,
                       float scale, int32_t zp);
/* DynamicQuantizeLinear of hs over the range [lo, hi] begun: its scale and zero point computed
 * (into *scale, *zp) and written to its outputs, the padded border as the zero point where hs->pad;
 * returns its codes plane, for the rows that follow. */
uint8_t *mi__blis_dynq_start(const mi__blis_hsw_t *hs, void *const *t, float lo, float hi, float *scale, int32_t *zp);
/* The range of a monotone float tail (hs with no residual, no hard-swish, no LeakyRelu of negative
 * slope; see blis_qvnni.c) over a channel whose int32 sums span [alo, ahi], merged into *lo, *hi
 * with the unfused min/max pass's comparisons: each value of the channel lies between the tail
 * of its two ends, so the tail need not be written to know DynamicQuantizeLinear's range. */
void mi__blis_ftail_ends(int32_t simd, int32_t alo, int32_t ahi, float s, int has_b, float b, int relu,
                         const mi__blis_hsw_t *hs, float *lo, float *hi);

/* Where an integer layer's quantization comes from: the tensor fields of a lowered QDQ layer
 * (mi__blis_prep_qconv / _qgemm fill it) or the constant inputs of QLinearConv, QLinearMatMul,
 * ConvInteger and MatMulInteger (blis_qlinear.c). */
typedef struct mi__blis_qsrc {
  int32_t x, w, y; /* tensor indices: input codes, constant weight, output */
  int32_t zx_t;    /* runtime tensor holding x's zero point (one code), or -1: zx */
  int32_t zx, zy;
  double sx, sy;   /* scales of x and y (unused with out32) */
  const float *sw; /* weight scales: nsw = 1 (per tensor) or one per output channel */
  int64_t nsw;
  const mi_tensor_desc_t *wz; /* weight zero points (1 or per output channel); NULL: 0 */
  const int32_t *ibias;       /* int32 bias, one per output channel, added to the sums; or NULL */
  int32_t fbias;              /* FLOAT32 bias tensor in real units (lowered layers), or -1 */
  double alpha, beta;         /* Gemm's: mult = alpha * sx * sw / sy, bias = beta * b / sy */
  int32_t out32;              /* write the int32 sums themselves (ConvInteger, MatMulInteger) */
  /* out32 with a float tail (ConvInteger -> Cast -> Mul [-> Add] [-> Relu], blis_qlinear.c): y is
   * the tail's FLOAT32 output, y = relu((float)sum * scale + bias[c]) in that order */
  int32_t tail;    /* nodes of the tail absorbed (0: none) */
  int32_t scale_t; /* tensor of the one FLOAT32 scale (read at each run) */
  const float *tb; /* bias per output channel (ntb = channels) or one (ntb = 1); NULL: no Add */
  int64_t ntb;
  int32_t res_t; /* runtime FLOAT32 tensor of y's shape added after the bias (a residual; after the
                    Relu where hs.res_post), or -1 */
  int32_t relu;
  mi__blis_hsw_t hs; /* a hard-swish written out, after the Relu */
} mi__blis_qsrc_t;
/* Codes straight from the sums (the tail's floats never written): the tail of src ends in a
 * DynamicQuantizeLinear that alone reads its floats, the tail is monotone (no residual, no
 * hard-swish, no LeakyRelu of negative slope, finite constants), so its range follows from each
 * channel's int32 range (mi__blis_ftail_ends), and the conv runs twice, once for that range and
 * once for the codes. 1 where that pays: kk (C/G * KH * KW) at most MI__QCODES_MAX_K, as the second
 * pass costs about kk / 4 byte dots an output against the float plane's store and load, and the
 * float plane over a quarter of the L2 cache (512 KiB where the CPU does not say), where its round
 * trip leaves L2 beside the layer's other tensors: on the Intel Xeon of docs/benchmarks.md (2 MiB
 * L2), blazeface_back's 24x128x128 depthwise layers (1.5 MiB planes) gained a quarter, its
 * 48x32x32 and 96x16x16 ones lost, and 24x64x64 ones (384 KiB) gained in blazeface_back and lost
 * in blazeface_front, whose whole working set stays in L2. */
#define MI__QCODES_MAX_K 64
int mi__blis_ftail_codes(const mi__blis_prep_t *p, const mi__blis_qsrc_t *src, int64_t kk);
/* The low and high of n int32 sums merged into r[0], r[1]. */
void mi__blis_acc_range(int32_t simd, const int32_t *acc, int64_t n, int32_t *r);
/* y[j] = relu((float)acc[j] * s + b + res[j]) (res NULL: none; added after the relu where
 * hs->res_post), then hs (NULL: none): its affine block and its hard-swish, each where set. The tail's ops one rounding each, b added only when
 * has_b (x + 0 would turn -0 into +0), the clamp only when relu (blis_qftail.c). */
void mi__blis_qv_ftail(int32_t simd, const int32_t *acc, int64_t n, float s, int has_b, float b, const float *res,
                       int relu, const mi__blis_hsw_t *hs, float *y);
/* The same in AVX2 lanes for a tail without hs->act steps (blis_qftail256.c), bit for bit, with
 * the range of the values written (each end widened to include 0) in *lo, *hi. */
void mi__blis_qv_ftail256(const int32_t *acc, int64_t n, float s, int has_b, float b, const float *res, int relu,
                          const mi__blis_hsw_t *hs, float *y, float *lo, float *hi);
/* Weight element i (output channel c) of src's constant weight w minus its zero point, and the
 * byte core's shift d of the cnt weights of channel c (elements i0 + t * step): 0 where their
 * values fit INT8, else what moves their lowest to -128; 0 when they span more than 256 values
 * (blis_qlinear.c). */
int32_t mi__blis_qwval(const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w, int64_t i, int64_t c);
int mi__blis_qbyte_shift(const mi__blis_qsrc_t *src, const mi_tensor_desc_t *w, int64_t c, int64_t i0, int64_t cnt,
                         int64_t step, int32_t *d);
/* The depthwise byte kernel (blis_qdw.c) for ConvInteger with its float tail or int32 sums:
 * *taken 0 when it does not apply (the generic path then runs the layer). */
int32_t mi__blis_prep_qdw_int(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src, int *taken,
                              mi_error_t *err);
/* A depthwise-separable block in QDQ form (blis_qblock.c): the host describes its lowered layers
 * (depthwise Conv, pointwise Conv, [residual Add]) as one kernel whose every node writes codes.
 * _desc: p's kernel is one (each node is then prepared as its own lowered layer); _link: after
 * the kernel's steps are prepared, runs them as one pass over bands of output rows where every
 * step has the form the pass takes (else they run one after the other, as prepared). */
int mi__blis_qblock_desc(const mi__blis_prep_t *p);
void mi__blis_qblock_link(mi_kernel_t *k, const mi_kernel_desc_t *d);
/* 1 when step s runs as part of such a pass (linked: its state is still its layer's). */
int mi__blis_qblock_runs(const mi__blis_step_t *s);
/* The band pass's parts of each layer: the lowered depthwise layer of step s (codes out,
 * constant zero point: its geometry, else NULL) and its codes for output rows o0..o1 of channel
 * m of image n, rows of OW at y; the lowered pointwise layer (1x1, stride 1, no pads, one group,
 * the byte core, constant zero point) and its codes for `rows` whole rows (npix pixels) of input
 * codes x ([C][npix]; col [kq][npix][4], acc [M][npix] and psum [npix] scratch), channel m's at
 * y + m * ystride; the
 * full-operand QDQ Add/Mul on AVX-512: its rows and operand tensors, else NULL. */
const mi__blis_conv_t *mi__blis_qdw_codes_geom(const mi__blis_step_t *s);
void mi__blis_qdw_codes_rows(const mi__blis_step_t *s, const uint8_t *x, int64_t n, int64_t m, int64_t o0, int64_t o1,
                             uint8_t *y);
const mi__blis_conv_t *mi__blis_qconv_pw_geom(const mi__blis_step_t *s);
void mi__blis_qconv_pw_band(const mi__blis_step_t *s, const uint8_t *x, int64_t rows, uint8_t *col, int32_t *acc,
                            int32_t *psum, uint8_t *y, int64_t ystride);
const mi__blis_qbin_row_t *mi__blis_qbin_full(const mi__blis_step_t *s, int32_t *a, int32_t *b, int32_t *y);
/* One code of x (UINT8 when u8, else INT8). */
static inline int32_t mi__blis_qcode(const void *x, int32_t u8, int64_t i) {
  return u8 ? ((const uint8_t *)x)[i] : ((const int8_t *)x)[i];
}
/* A runtime zero point: the one code of tensor zt (INT8 or UINT8 as the input). */
static inline int32_t mi__blis_qruntime_zp(void *const *t, int32_t zt, int32_t u8) { return mi__blis_qcode(t[zt], u8, 0); }
/* Output stage parameters of channel c: mult = alpha*sx*sw/sy, bias = beta*b/sy (docs/abi.md);
 * nothing for int32 sums (src->out32). Shared by the convs (blis_qgemm.c) and blis_qmm.c. */
int32_t mi__blis_q_out_stage(mi__blis_prep_t *p, const mi_node_desc_t *n, const mi__blis_qsrc_t *src,
                             int64_t channels, double *mult, double *bias, mi_error_t *err);
/* Pair-dot path of the int32 core: knob int8_dot (0 = auto, the widest this CPU runs). */
int32_t mi__blis_q_int8_dot(const mi__blis_prep_t *p, int32_t simd);
/* Integer Conv (blis_qgemm.c) / Gemm-MatMul (B constant, 2-D; blis_qmm.c) steps from a source. */
int32_t mi__blis_qconv_build(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src,
                             mi_error_t *err);
int32_t mi__blis_qgemm_build(mi__blis_prep_t *p, mi__blis_step_t *s, const mi__blis_qsrc_t *src,
                             mi_error_t *err);

int32_t mi__blis_conv_geom(mi__blis_prep_t *p, const mi_node_desc_t *n, mi__blis_conv_t *c,
                           mi_error_t *err);
int32_t mi__blis_prep_qconv(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_qgemm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* blis_qlinear.c: QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger */
int32_t mi__blis_prep_qlinear(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* blis_qeltwise.c: DynamicQuantizeLinear, QLinearAdd, QLinearMul, QLinearGlobalAveragePool, and
 * Cast from INT32 */
int32_t mi__blis_prep_qeltwise(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* blis_qms.c: com.microsoft QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearSoftmax */
int32_t mi__blis_prep_qms(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* blis_qgemm_op.c: com.microsoft QGemm with a constant B */
int32_t mi__blis_prep_qgemm_op(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* blis_qavgpool.c: com.microsoft QLinearAveragePool (1-D / 2-D, NCHW or channels_last) */
int32_t mi__blis_prep_qavgpool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* 1 when every node of the kernel that touches runtime tensor t is one of the integer ops above
 * (or a Cast), which check their dtypes: INT8/UINT8/INT32 runtime tensors are accepted there. */
int mi__blis_int_tensor_ok(const mi_kernel_desc_t *d, int32_t t);

#endif
