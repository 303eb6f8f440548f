/* blis_qadd.c - lowered QDQ Add / Mul: DQ(a), DQ(b) -> Add or Mul [-> an activation the Q
 * implies] -> Q, handed over as the Add or Mul alone reading and writing codes (the tensors'
 * quantization fields say how; docs/abi.md, "Fused groups and quantized kernels"). What a QDQ
 * export puts at every residual add. The codes are the unfused nodes' bit for bit: each block of
 * outputs is dequantized, added and quantized with the standalone kernels' row loops, in cache,
 * instead of three passes over memory with two float tensors between them. Also the rows of a
 * com.microsoft QLinearAdd whose operands do not broadcast (mi__blis_qladd_avx512). */
#include <string.h>

#include <immintrin.h>

#include "blis_qgemm.h"

#define QB_BLOCK 512 /* outputs per block: the float rows stay in L1 */

/* How an operand's elements map to the output's: element i reads code (i / run) % count. */
typedef struct qb_side {
  int32_t t, u8, z;
  float s;
  int64_t run, count;
} qb_side_t;

typedef struct qbin {
  qb_side_t a, b;
  int32_t y, yu8, yz, mul, simd;
  int32_t tab, vbmi; /* tab: b broadcasts over runs of b.run outputs; a runs through a table per run */
  int32_t full;      /* neither operand broadcasts: mi__blis_qbin_row where the SIMD level has it */
  mi__blis_qbin_row_t row;
  float ys;
  int64_t n;
} qbin_t;

typedef struct qb_task {
  const qbin_t *q;
  void *const *t;
} qb_task_t;

/* Floats of outputs [i, i + len) of one operand: one row when it is not broadcast, else one
 * value per run (the same product DequantizeLinear computes). */
static void side_rows(const qbin_t *q, const qb_side_t *o, const void *codes, int64_t i, int64_t len,
                      float *f) {
  int64_t j = 0;
  if (o->run == 1 && o->count == q->n) {
    mi__blis_dq_row(q->simd, (const uint8_t *)codes + i, f, len, o->s, o->z, o->u8);
    return;
  }
  if (o->run == 1) { /* a row of `count` codes repeated (a trailing-dims broadcast: a [1,1,1,S]
                      * attention mask against [B,H,S,S] scores): contiguous pieces of the row, each
                      * through the same row loop (element-wise division here ran at 0.7 GB/s) */
    int64_t k = i % o->count;
    while (j < len) {
      int64_t m = o->count - k < len - j ? o->count - k : len - j;
      mi__blis_dq_row(q->simd, (const uint8_t *)codes + k, f + j, m, o->s, o->z, o->u8);
      j += m;
      k = 0;
    }
    return;
  }
  while (j < len) {
    int64_t at = i + j, k = (at / o->run) % o->count, end = (at / o->run + 1) * o->run - i;
    int32_t c = o->u8 ? ((const uint8_t *)codes)[k] : ((const int8_t *)codes)[k];
    float v = (float)(c - o->z) * o->s;
    if (end > len) end = len;
    for (; j < end; j++) f[j] = v;
  }
}

static void qb_part(void *arg, int64_t b, int64_t e) {
  const qb_task_t *t = arg;
  const qbin_t *q = t->q;
  float fa[QB_BLOCK], fb[QB_BLOCK];
  int64_t blk, j;
  if (q->full) {
    int64_t i = b * QB_BLOCK, end = e * QB_BLOCK < q->n ? e * QB_BLOCK : q->n;
    if (mi__blis_qbin_row(q->simd, &q->row, (const uint8_t *)t->t[q->a.t] + i, (const uint8_t *)t->t[q->b.t] + i,
                          (uint8_t *)t->t[q->y] + i, end - i))
      return;
  }
  for (blk = b; blk < e; blk++) {
    int64_t i = blk * QB_BLOCK, len = q->n - i < QB_BLOCK ? q->n - i : QB_BLOCK;
    side_rows(q, &q->a, t->t[q->a.t], i, len, fa);
    side_rows(q, &q->b, t->t[q->b.t], i, len, fb);
    if (q->mul)
      for (j = 0; j < len; j++) fa[j] *= fb[j];
    else
      for (j = 0; j < len; j++) fa[j] += fb[j];
    mi__blis_q_row(q->simd, fa, (uint8_t *)t->t[q->y] + i, len, q->ys, q->yz, q->yu8);
  }
}

/* Items are runs of outputs over which b holds one value (a per-channel scale or shift against a
 * full tensor: an SE block's Mul). Within a run each output is a function of a's code, so the
 * 256 codes go through the block loop's own rows (DequantizeLinear, the op with b's value,
 * QuantizeLinear: the same float and double steps, so the same codes) and the run is looked up. */
static void qb_tab_part(void *arg, int64_t b, int64_t e) {
  const qb_task_t *t = arg;
  const qbin_t *q = t->q;
  float fa[256], fb;
  uint8_t codes[256], tab[256];
  int64_t r, j;
  for (j = 0; j < 256; j++) codes[j] = (uint8_t)j;
  mi__blis_dq_row(q->simd, codes, fa, 256, q->a.s, q->a.z, q->a.u8);
  for (r = b; r < e; r++) {
    float f[256];
    side_rows(q, &q->b, t->t[q->b.t], r * q->b.run, 1, &fb);
    if (q->mul)
      for (j = 0; j < 256; j++) f[j] = fa[j] * fb;
    else
      for (j = 0; j < 256; j++) f[j] = fa[j] + fb;
    mi__blis_q_row(q->simd, f, tab, 256, q->ys, q->yz, q->yu8);
    mi__blis_lut_row(q->vbmi, tab, (const uint8_t *)t->t[q->a.t] + r * q->b.run,
                     (uint8_t *)t->t[q->y] + r * q->b.run, q->b.run);
  }
}

static int32_t run_qbin(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qbin_t *q = s->state;
  qb_task_t task = {q, t};
  (void)err;
  if (q->tab) {
    mi__blis_parallel(env, q->n / q->b.run, 1, q->b.run, qb_tab_part, &task);
    return MI_OK;
  }
  mi__blis_parallel(env, (q->n + QB_BLOCK - 1) / QB_BLOCK, 1, QB_BLOCK * 4, qb_part, &task);
  return MI_OK;
}

const mi__blis_qbin_row_t *mi__blis_qbin_full(const mi__blis_step_t *s, int32_t *a, int32_t *b, int32_t *y) {
  const qbin_t *q = s->state;
  if ((s->run != run_qbin && !mi__blis_qblock_runs(s)) || !q->full || q->simd != MI__SIMD_AVX512) return NULL;
  *a = q->a.t;
  *b = q->b.t;
  *y = q->y;
  return &q->row;
}

/* The run and count of an operand that broadcasts to y as one block of y's dims (all of them,
 * a single element, or a middle block such as [C,1,1] of [N,C,H,W]); 0 otherwise. */
static int side_shape(const mi_tensor_desc_t *x, const mi_tensor_desc_t *y, qb_side_t *o) {
  int32_t off = y->rank - x->rank, d, first = -1, last = -1;
  if (off < 0) return 0;
  for (d = 0; d < x->rank; d++)
    if (x->dims[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  o->run = 1;
  o->count = mi_sdk_numel(x);
  if (first < 0) { /* one element */
    o->run = mi_sdk_numel(y);
    o->count = 1;
    return o->run > 0;
  }
  for (d = first; d <= last; d++)
    if (x->dims[d] != y->dims[d + off]) return 0;
  for (d = last + 1 + off; d < y->rank; d++) o->run *= y->dims[d];
  return 1;
}

static int side_codes(const mi_tensor_desc_t *x, const mi_tensor_desc_t *y, int32_t t, qb_side_t *o) {
  if (!mi__blis_is_q8(x) || x->data || x->channel_count != 0 || !(x->scale > 0.f)) return 0;
  o->t = t;
  o->u8 = x->dtype == MI_DTYPE_UINT8;
  o->s = x->scale;
  o->z = x->zero_point;
  return side_shape(x, y, o);
}

int32_t mi__blis_prep_qbinary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, mi__blis_in(n, 0)), *b = mi__blis_tensor(p, mi__blis_in(n, 1)),
                         *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  qbin_t *q;
  if (strcmp(n->op_type, "Add") && strcmp(n->op_type, "Mul"))
    return mi__blis_unsupported(err, n, "only Add and Mul run on codes");
  if (p->desc->node_count != 1 && !mi__blis_qblock_desc(p))
    return mi__blis_unsupported(err, n, "a quantized Add/Mul runs alone");
  if (!a || !b || !y || !mi__blis_is_q8(y) || y->channel_count != 0 || !(y->scale > 0.f))
    return mi__blis_unsupported(err, n, "needs codes out with one scale and zero point");
  q = mi__blis_calloc(p->ctx, sizeof *q);
  if (!q) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  s->state = q;
  if (!side_codes(a, y, mi__blis_in(n, 0), &q->a) || !side_codes(b, y, mi__blis_in(n, 1), &q->b))
    return mi__blis_unsupported(err, n,
                                "operands must be runtime codes with one scale and zero point that "
                                "broadcast to the output as one block of its dims");
  q->y = mi__blis_out(n, 0);
  q->yu8 = y->dtype == MI_DTYPE_UINT8;
  q->yz = y->zero_point;
  q->ys = y->scale;
  q->mul = strcmp(n->op_type, "Mul") == 0;
  q->n = mi_sdk_numel(y);
  q->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  q->vbmi = q->simd == MI__SIMD_AVX512 && __builtin_cpu_supports("avx512vbmi");
  if (q->b.run == 1 && q->a.run > 1) { /* the broadcast operand second (Add, Mul: a op b == b op a in IEEE) */
    qb_side_t o = q->a;
    q->a = q->b;
    q->b = o;
  }
  /* a table per run where a run is long enough to pay for its 256 codes */
  q->tab = q->a.run == 1 && q->a.count == q->n && q->b.run >= 1024 && q->n % q->b.run == 0;
  q->full = q->a.run == 1 && q->a.count == q->n && q->b.run == 1 && q->b.count == q->n;
  q->row.sa = q->a.s;
  q->row.sb = q->b.s;
  q->row.ys = q->ys;
  q->row.za = q->a.z;
  q->row.zb = q->b.z;
  q->row.yz = q->yz;
  q->row.au8 = q->a.u8;
  q->row.bu8 = q->b.u8;
  q->row.yu8 = q->yu8;
  q->row.mul = q->mul;
  s->run = run_qbin;
  return MI_OK;
}

/* ---- com.microsoft QLinearAdd's rows (blis_qeltwise.c) */

/* QLinearAdd of outputs [b, e) where neither operand broadcasts, 8 codes a step: the reference's
 * double arithmetic ((a - za) * ra + (b - zb) * rb, rounded to nearest even, + zc, clamped) with
 * explicitly rounded products and sum, so no multiply-add is fused. blis_qeltwise.c's odometer
 * loop ran at about 1 GB/s: a QOperator blazeface_front's largest residual QLinearAdd took 15% of
 * the model. Returns the first output it did not write. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) int64_t
mi__blis_qladd_avx512(const uint8_t *a, const uint8_t *bb, uint8_t *y, int64_t b, int64_t e, double ra_, double rb_,
                      int32_t za_, int32_t zb_, int32_t zc_, int32_t u8) {
  const int R = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512d ra = _mm512_set1_pd(ra_), rb = _mm512_set1_pd(rb_), zc = _mm512_set1_pd((double)zc_);
  const __m512d lo = _mm512_set1_pd(u8 ? 0. : -128.), hi = _mm512_set1_pd(u8 ? 255. : 127.);
  const __m256i za = _mm256_set1_epi32(za_), zb = _mm256_set1_epi32(zb_);
  int64_t i;
  for (i = b; i + 8 <= e; i += 8) {
    __m128i la = _mm_loadl_epi64((const __m128i *)(a + i)), lb = _mm_loadl_epi64((const __m128i *)(bb + i));
    __m256i ia = u8 ? _mm256_cvtepu8_epi32(la) : _mm256_cvtepi8_epi32(la);
    __m256i ib = u8 ? _mm256_cvtepu8_epi32(lb) : _mm256_cvtepi8_epi32(lb);
    __m512d va = _mm512_mul_round_pd(_mm512_cvtepi32_pd(_mm256_sub_epi32(ia, za)), ra, R);
    __m512d vb = _mm512_mul_round_pd(_mm512_cvtepi32_pd(_mm256_sub_epi32(ib, zb)), rb, R);
    __m512d v = _mm512_roundscale_pd(_mm512_add_round_pd(va, vb, R), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_pd(_mm512_max_pd(_mm512_add_pd(v, zc), lo), hi);
    _mm_storel_epi64((__m128i *)(y + i), _mm256_cvtepi32_epi8(_mm512_cvtpd_epi32(v)));
  }
  return i;
}
