/* blis_bitwise.c - blis-cpu's BitwiseAnd / Or / Xor / Not (opset 18) on INT8, UINT8, INT32 and
 * INT64 and BitShift (opset 11) on UINT8, with numpy broadcasting, to the bit of the reference
 * (framework/src/ref/ref_bitwise.c): masks and packed flags of exported post-processing. */
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

enum { BW_AND,
       BW_OR,
       BW_XOR,
       BW_NOT,
       BW_SHL,
       BW_SHR };

/* The output as [rows, w]: operand k's row r starts at the offset its strides over the row dims
 * give, and steps sw[k] (0: one value along the row, or 1) along it. Dims where both operands
 * walk alike are merged, so a same-shape op is one row. */
typedef struct bw_state {
  int32_t a, b, y, op, es, simd, rank; /* rank: of the row dims */
  int64_t rows, w, sw[2];
  int64_t dims[MI_MAX_RANK], st[2][MI_MAX_RANK];
} bw_state_t;

#define BW_BLOCK 4096

/* One run of m values; the op and the strides are constants where the bodies inline it, so each
 * form is its own vectorised loop. A shift by the width or more gives 0 (the reference's). */
#define BW_RUN(T, W)                                                                                    \
  static inline __attribute__((always_inline)) void bw_run_##T(const T *a, const T *b, T *y, int64_t m, \
                                                               int op, int64_t sa, int64_t sb) {        \
    for (int64_t i = 0; i < m; i++) {                                                                   \
      T p = a[i * sa], q = op == BW_NOT ? 0 : b[i * sb];                                                \
      y[i] = op == BW_AND   ? (T)(p & q)                                                                \
             : op == BW_OR  ? (T)(p | q)                                                                \
             : op == BW_XOR ? (T)(p ^ q)                                                                \
             : op == BW_NOT ? (T)~p                                                                     \
             : op == BW_SHL ? (T)(q >= (W) ? 0 : (T)(p << (q & ((W)-1))))                               \
                            : (T)(q >= (W) ? 0 : (T)(p >> (q & ((W)-1))));                              \
    }                                                                                                   \
  }
BW_RUN(uint8_t, 8)
BW_RUN(uint32_t, 32)
BW_RUN(uint64_t, 64)

/* The stride pairs a row may take, each its own loop. */
#define BW_STRIDES(T, op)                                     \
  do {                                                        \
    if (sa == 1 && sb == 1) bw_run_##T(a, b, y, m, op, 1, 1); \
    else if (sa == 1)                                         \
      bw_run_##T(a, b, y, m, op, 1, 0);                       \
    else if (sb == 1)                                         \
      bw_run_##T(a, b, y, m, op, 0, 1);                       \
    else                                                      \
      bw_run_##T(a, b, y, m, op, 0, 0);                       \
  } while (0)

#define BW_OPS(T)                                             \
  do {                                                        \
    const T *a = pa, *b = pb;                                 \
    T *y = py;                                                \
    switch (op) {                                             \
    case BW_AND: BW_STRIDES(T, BW_AND); break;                \
    case BW_OR: BW_STRIDES(T, BW_OR); break;                  \
    case BW_XOR: BW_STRIDES(T, BW_XOR); break;                \
    case BW_NOT: bw_run_##T(a, a, y, m, BW_NOT, 1, 0); break; \
    case BW_SHL: BW_STRIDES(T, BW_SHL); break;                \
    default: BW_STRIDES(T, BW_SHR);                           \
    }                                                         \
  } while (0)

static inline __attribute__((always_inline)) void bw_row(int32_t es, int op, const void *pa, const void *pb, void *py,
                                                         int64_t m, int64_t sa, int64_t sb) {
  if (es == 1) BW_OPS(uint8_t);
  else if (es == 4)
    BW_OPS(uint32_t);
  else
    BW_OPS(uint64_t);
}

/* Items: (row, block of BW_BLOCK values). */
static inline __attribute__((always_inline)) void bw_body(const mi__blis_task_t *tk, int64_t i0, int64_t i1) {
  const bw_state_t *st = tk->state;
  const char *a = tk->t[st->a], *b = st->op == BW_NOT ? a : tk->t[st->b];
  char *y = tk->t[st->y];
  size_t es = (size_t)st->es;
  int64_t blocks = (st->w + BW_BLOCK - 1) / BW_BLOCK;
  for (int64_t it = i0; it < i1; it++) {
    int64_t r = it / blocks, j0 = (it % blocks) * BW_BLOCK, m = st->w - j0 < BW_BLOCK ? st->w - j0 : BW_BLOCK;
    int64_t oa = 0, ob = 0, rest = r;
    for (int32_t d = st->rank - 1; d >= 0; d--) {
      int64_t i = rest % st->dims[d];
      rest /= st->dims[d];
      oa += i * st->st[0][d];
      ob += i * st->st[1][d];
    }
    oa += j0 * st->sw[0];
    ob += j0 * st->sw[1];
    bw_row(st->es, st->op, a + (size_t)oa * es, b + (size_t)ob * es, y + (size_t)(r * st->w + j0) * es, m, st->sw[0],
           st->sw[1]);
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void bw_avx512(void *arg, int64_t i0, int64_t i1) {
  bw_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void bw_avx2(void *arg, int64_t i0, int64_t i1) {
  bw_body(arg, i0, i1);
}
static void bw_c(void *arg, int64_t i0, int64_t i1) { bw_body(arg, i0, i1); }

static int32_t run_bitwise(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const bw_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->rows * ((st->w + BW_BLOCK - 1) / BW_BLOCK), 1, BW_BLOCK * st->es / 4,
                            st->simd == MI__SIMD_AVX512 ? bw_avx512 : st->simd == MI__SIMD_AVX2 ? bw_avx2
                                                                                                : bw_c);
}

static int bw_int(const mi_tensor_desc_t *t) {
  return t && (t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8 || t->dtype == MI_DTYPE_INT32 ||
               t->dtype == MI_DTYPE_INT64);
}

int32_t mi__blis_prep_bitwise(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *in[2] = {mi__blis_tensor(p, mi__blis_in(n, 0)), mi__blis_tensor(p, mi__blis_in(n, 1))};
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int shift = !strcmp(n->op_type, "BitShift"), nin = strcmp(n->op_type, "BitwiseNot") ? 2 : 1, op;
  int64_t dims[MI_MAX_RANK], st[2][MI_MAX_RANK];
  int32_t r, d, k, m;
  bw_state_t *bs;
  if (shift) {
    const char *dir = mi_sdk_attr_string(n, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")) return mi__blis_unsupported(err, n, "direction is not LEFT or RIGHT");
    op = !strcmp(dir, "LEFT") ? BW_SHL : BW_SHR;
  } else {
    op = !strcmp(n->op_type, "BitwiseAnd") ? BW_AND : !strcmp(n->op_type, "BitwiseOr") ? BW_OR
                                                  : !strcmp(n->op_type, "BitwiseXor")  ? BW_XOR
                                                                                       : BW_NOT;
  }
  if (!bw_int(in[0]) || !y || y->dtype != in[0]->dtype || (shift && in[0]->dtype != MI_DTYPE_UINT8) ||
      (nin == 2 && (!in[1] || in[1]->dtype != in[0]->dtype)))
    return mi__blis_unsupported(err, n, shift ? "operands must be UINT8" : "operands must be one of INT8, UINT8, INT32, INT64");
  /* numpy broadcasting: each operand's dims right-aligned to the output's, stride 0 where it has 1 */
  r = y->rank;
  for (k = 0; k < nin; k++) {
    int64_t s1 = 1;
    if (in[k]->rank > r) return mi__blis_unsupported(err, n, "an operand's rank exceeds the output's");
    for (d = r - 1; d >= 0; d--) {
      int32_t e = d - (r - in[k]->rank);
      int64_t dim = e >= 0 ? in[k]->dims[e] : 1;
      if (dim != 1 && dim != y->dims[d]) return mi__blis_unsupported(err, n, "operands do not broadcast to the output");
      st[k][d] = dim == 1 ? 0 : s1;
      s1 *= dim;
    }
  }
  if (nin == 1)
    for (d = 0; d < r; d++) st[1][d] = st[0][d];
  /* merge dim d into d + 1 where both operands continue across it */
  m = 0;
  for (d = 0; d < r; d++) {
    if (y->dims[d] == 1) continue; /* walks nothing */
    if (m > 0 && st[0][m - 1] == st[0][d] * y->dims[d] && st[1][m - 1] == st[1][d] * y->dims[d]) {
      dims[m - 1] *= y->dims[d];
      st[0][m - 1] = st[0][d];
      st[1][m - 1] = st[1][d];
      continue;
    }
    dims[m] = y->dims[d];
    st[0][m] = st[0][d];
    st[1][m] = st[1][d];
    m++;
  }
  if (!(bs = mi__blis_state_new(p, s, sizeof *bs, err))) return MI_ERR_OUT_OF_MEMORY;
  bs->a = mi__blis_in(n, 0);
  bs->b = nin == 2 ? mi__blis_in(n, 1) : bs->a;
  bs->y = mi__blis_out(n, 0);
  bs->op = op;
  bs->es = (int32_t)mi_sdk_dtype_size(y->dtype);
  bs->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  if (m == 0) { /* a scalar */
    bs->w = 1, bs->rows = 1, bs->rank = 0, bs->sw[0] = bs->sw[1] = 0;
  } else {
    bs->w = dims[m - 1];
    bs->sw[0] = st[0][m - 1];
    bs->sw[1] = st[1][m - 1];
    bs->rank = m - 1;
    bs->rows = 1;
    for (d = 0; d < m - 1; d++) {
      bs->dims[d] = dims[d];
      bs->st[0][d] = st[0][d];
      bs->st[1][d] = st[1][d];
      bs->rows *= dims[d];
    }
  }
  s->run = run_bitwise;
  return MI_OK;
}
