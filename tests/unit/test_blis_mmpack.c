/* test_blis_mmpack.c - blis-cpu Gemm and MatMul on blis_mmpack.c's packed tiles (constant and
 * runtime B) against double-precision sums: many shapes, each SIMD path, 1 and 2 threads. */
#include "test_blis_util.h"

static tb_plugin_t p;

/* One problem: Y = alpha * A B (+ beta * bias), A [ab, m, k] (2-D when ab is 0), B [bb, k, n]
 * (2-D when bb is 0; [n, k] with transB, Gemm only), a constant unless rt (runtime B), bias of n
 * (Gemm only). The batch of Y is the larger of ab and bb; a batch of 1 broadcasts. */
typedef struct mm_case {
  int gemm, trans_b, rt;
  int64_t ab, bb, m, k, n;
  float alpha, beta;
  int bias;
} mm_case_t;

/* Runs the case on every simd path at 1 and 2 threads: each within 1e-5 relative L2 of the double
 * sums, and the 2-thread result the same bits as the 1-thread one (the split is by column panels,
 * each element summed in the same order). */
/* b's kernel at every SIMD level, at 1 and 2 threads: within 1e-5 rel L2 of ref (count values),
 * and the 2-thread result bit for bit the 1-thread one. */
static void check_each_simd(tb_t *b, const float *const *ins, const float *ref, int64_t count, const char *name) {
  float *got1 = malloc((size_t)count * 4), *got2 = malloc((size_t)count * 4);
  int64_t nsimd = simd_choices(&p);
  REQUIRE(got1 && got2);
  for (int64_t si = 0; si < nsimd; si++) {
    mi_knob_value_t kv[2] = {{"simd", si, 0.}, {"threads", 1, 0.}};
    mi_error_t err = {0, ""};
    int32_t rc1, rc2;
    double e;
    rc1 = tb_run(&p, b, NULL, kv, 2, ins, got1, &err);
    CHECK(rc1 == MI_OK, "%s: %s", name, err.message);
    kv[1].i = 2;
    rc2 = tb_run(&p, b, NULL, kv, 2, ins, got2, &err);
    CHECK(rc2 == MI_OK, "%s: %s", name, err.message);
    if (rc1 != MI_OK || rc2 != MI_OK) continue;
    e = tu_rel_l2(got1, ref, count);
    CHECK(e < 1e-5, "%s simd %lld: rel L2 %g", name, (long long)si, e);
    CHECK(memcmp(got1, got2, (size_t)count * 4) == 0, "%s simd %lld: 2 threads differ from 1", name, (long long)si);
  }
  free(got1);
  free(got2);
}

static void run_case(const mm_case_t *c) {
  int64_t ob = c->ab > c->bb ? c->ab : c->bb, nb = ob ? ob : 1, na = c->ab ? c->ab : 1, nbb = c->bb ? c->bb : 1;
  int64_t rows = nb * c->m, i, j, l, x;
  int64_t ad[3] = {c->ab, c->m, c->k}, bd[3] = {c->bb, c->trans_b ? c->n : c->k, c->trans_b ? c->k : c->n};
  int64_t yd[3] = {ob, c->m, c->n}, cd = c->n;
  float *a = malloc((size_t)(na * c->m * c->k) * 4), *bm = malloc((size_t)(nbb * c->k * c->n) * 4);
  float *bias = malloc((size_t)c->n * 4), *ref = malloc((size_t)(rows * c->n) * 4);
  const float *ins[2];
  tb_t b;
  int t0, t1, t2 = -1, t3, node;
  char name[160];
  REQUIRE(a && bm && bias && ref);
  ins[0] = a;
  ins[1] = bm;
  tb_fill(a, na * c->m * c->k, 41);
  tb_fill(bm, nbb * c->k * c->n, 42);
  tb_fill(bias, c->n, 43);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, c->ab ? 3 : 2, c->ab ? ad : ad + 1, NULL);
  t1 = tb_tensor(&b, c->bb ? 3 : 2, c->bb ? bd : bd + 1, c->rt ? NULL : bm);
  if (c->bias) t2 = tb_tensor(&b, 1, &cd, bias);
  t3 = tb_tensor(&b, ob ? 3 : 2, ob ? yd : yd + 1, NULL);
  {
    int in[3] = {t0, t1, t2};
    node = tb_node(&b, c->gemm ? "Gemm" : "MatMul", 13, c->bias ? 3 : 2, in, t3);
  }
  if (c->gemm) {
    tb_attr_i(&b, node, "transB", c->trans_b);
    tb_attr_f(&b, node, "alpha", c->alpha);
    tb_attr_f(&b, node, "beta", c->beta);
  }
  tb_finish(&b, t3);
  for (x = 0; x < nb; x++) {
    const float *ax = a + (na > 1 ? x : 0) * c->m * c->k, *bx = bm + (nbb > 1 ? x : 0) * c->k * c->n;
    for (i = 0; i < c->m; i++)
      for (j = 0; j < c->n; j++) {
        double acc = 0.;
        for (l = 0; l < c->k; l++)
          acc += (double)ax[i * c->k + l] * (c->trans_b ? bx[j * c->k + l] : bx[l * c->n + j]);
        ref[(x * c->m + i) * c->n + j] =
            (float)((c->gemm ? c->alpha : 1.) * acc + (c->bias ? c->beta * bias[j] : 0.));
      }
  }
  snprintf(name, sizeof name, "%s a[%lld,%lld,%lld] b[%lld,%lld,%lld]%s transB %d bias %d", c->gemm ? "gemm" : "matmul",
           (long long)c->ab, (long long)c->m, (long long)c->k, (long long)c->bb, (long long)c->k, (long long)c->n,
           c->rt ? " runtime" : "", c->trans_b, c->bias);
  check_each_simd(&b, ins, ref, rows * c->n, name);
  free(a);
  free(bm);
  free(bias);
  free(ref);
}

static void setup(void) {
  REQUIRE(tb_load(&p));
  REQUIRE(simd_choices(&p) >= 2);
}

static void teardown(void) {
  tb_unload(&p);
}

/* Rows 1..207 (tile tails of 12 / 6 / 4 rows, more than one 192-row block), odd K (one k block
 * and past 256: partial sums through Y), N from 1 to past several panels with tails; a last
 * 32-wide panel with 16 or fewer columns (N 33, 36, 48, 65, 100, 207, ...) runs one vector per
 * row (an attention head's 207 x 207 by 207 x 36, and 207 x 36 by 36 x 207). Rows of one tile (1, 12)
 * with K past 256 walk each panel whole before the next (a decoder's head: 1 x 288 by 288 x 32768). */
static void matmul_shapes(void) {
  static const int64_t shapes[][3] = {{1, 1, 1}, {1, 17, 33}, {2, 3, 7}, {5, 120, 65}, {11, 64, 16}, {12, 31, 32}, {13, 257, 31}, {25, 9, 100}, {37, 96, 301}, {40, 120, 331}, {64, 300, 48}, {128, 64, 17}, {200, 300, 65}, {193, 5, 129}, {207, 207, 36}, {207, 36, 207}, {1, 288, 1000}, {12, 300, 65}};
  size_t i;
  for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    mm_case_t c = {0, 0, 0, 0, 0, shapes[i][0], shapes[i][1], shapes[i][2], 1.f, 0.f, 0};
    run_case(&c);
  }
}

/* A [batch, m, k] by a shared B [k, n] or [1, k, n]: one tall GEMM over the batch's rows. */
static void matmul_batch(void) {
  mm_case_t c = {0, 0, 0, 3, 0, 7, 33, 45, 1.f, 0.f, 0};
  run_case(&c);
  c.bb = 1;
  c.m = 128;
  c.k = 40;
  c.n = 70;
  run_case(&c);
}

/* Gemm: transB (B stored [n, k], as exports write nn.Linear), alpha, the bias scaled by beta. */
static void gemm_shapes(void) {
  static const int64_t shapes[][3] = {{1, 512, 10}, {7, 19, 33}, {40, 120, 97}, {130, 270, 64}};
  size_t i;
  int tb_, bias;
  for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (tb_ = 0; tb_ < 2; tb_++)
      for (bias = 0; bias < 2; bias++) {
        mm_case_t c = {1, tb_, 0, 0, 0, shapes[i][0], shapes[i][1], shapes[i][2], 0.5f, 0.25f, bias};
        run_case(&c);
      }
}

/* Runtime B (attention's QK^T and PV): packed on every call where it has 16 rows or more, per batch
 * with B batched, broadcast either way; under 16 rows, and a constant B with a batch of its own, too. */
static void matmul_runtime(void) {
  static const int64_t cases[][5] = {{4, 4, 128, 64, 128}, {4, 4, 128, 128, 64}, {3, 1, 17, 31, 45}, {1, 3, 40, 15, 40}, {0, 0, 200, 300, 65}, {2, 2, 5, 9, 33}};
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mm_case_t c = {0, 0, 1, cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4], 1.f, 0.f, 0};
    run_case(&c);
    c.rt = 0; /* the same B as a constant */
    run_case(&c);
  }
}

/* The host's MatMul fold unit (MI_FUSE_TRANSPOSE): [Mul(q, sq)], Transpose of k, [Mul(k^T, sk)],
 * MatMul, one kernel: k [h, n, kd] read through strides as [h, kd, n] (or k [1, n, h, kd], perm
 * 0,2,3,1, as [1, h, kd, n]: the heads a stride too), the scales folded. Odd sizes (tile, panel and
 * row-block tails; 13 rows: BLIS with the strides and alpha), every SIMD path, 1 and 2 threads, the
 * same bits at both. */
static void fold_case(int four_d, int sq_on, int sk_on, int64_t h, int64_t m, int64_t n, int64_t kd) {
  int64_t qd[4] = {1, h, m, kd}, kdims[4] = {1, n, h, kd}, ktd[4] = {1, h, kd, n}, yd[4] = {1, h, m, n}, one = 1;
  static const int64_t perm3[3] = {0, 2, 1}, perm4[4] = {0, 2, 3, 1};
  int r = four_d ? 4 : 3;
  float sq = 0.37f, sk = -0.61f;
  float *q = malloc((size_t)(h * m * kd) * 4), *k = malloc((size_t)(h * n * kd) * 4);
  float *ref = malloc((size_t)(h * m * n) * 4);
  const float *ins[2];
  int64_t x, i, j, l;
  tb_t b;
  int tq, tk, tkt, ty, cur_q, cur_k, node;
  char name[160];
  REQUIRE(q && k && ref);
  tb_fill(q, h * m * kd, 51);
  tb_fill(k, h * n * kd, 52);
  if (!four_d) {
    kdims[1] = h;
    kdims[2] = n;
  }
  memset(&b, 0, sizeof b);
  tq = tb_tensor(&b, r, qd + 4 - r, NULL);
  tk = tb_tensor(&b, r, four_d ? kdims : kdims + 1, NULL);
  cur_q = tq;
  if (sq_on) {
    int in[2] = {tq, tb_tensor(&b, 1, &one, &sq)};
    cur_q = tb_tensor(&b, r, qd + 4 - r, NULL);
    tb_node(&b, "Mul", 14, 2, in, cur_q);
  }
  tkt = tb_tensor(&b, r, ktd + 4 - r, NULL);
  node = tb_node(&b, "Transpose", 13, 1, &tk, tkt);
  tb_attr_is(&b, node, "perm", r, four_d ? perm4 : perm3);
  cur_k = tkt;
  if (sk_on) {
    int in[2] = {tb_tensor(&b, 0, NULL, &sk), tkt};
    cur_k = tb_tensor(&b, r, ktd + 4 - r, NULL);
    tb_node(&b, "Mul", 14, 2, in, cur_k);
  }
  ty = tb_tensor(&b, r, yd + 4 - r, NULL);
  {
    int in[2] = {cur_q, cur_k};
    tb_node(&b, "MatMul", 13, 2, in, ty);
  }
  tb_finish(&b, ty);
  REQUIRE(b.nkin == 2);
  ins[0] = b.kin[0] == tq ? q : k; /* the kernel's inputs in first-use order */
  ins[1] = b.kin[0] == tq ? k : q;
  for (x = 0; x < h; x++)
    for (i = 0; i < m; i++)
      for (j = 0; j < n; j++) {
        double acc = 0.;
        for (l = 0; l < kd; l++)
          acc += (double)q[(x * m + i) * kd + l] * (four_d ? k[(j * h + x) * kd + l] : k[(x * n + j) * kd + l]);
        ref[(x * m + i) * n + j] = (float)(acc * (sq_on ? sq : 1.) * (sk_on ? sk : 1.));
      }
  snprintf(name, sizeof name, "fold %s h %lld m %lld n %lld k %lld sq %d sk %d", four_d ? "4-D" : "3-D", (long long)h,
           (long long)m, (long long)n, (long long)kd, sq_on, sk_on);
  check_each_simd(&b, ins, ref, h * m * n, name);
  free(q);
  free(k);
  free(ref);
}

static void matmul_fold(void) {
  static const int64_t sizes[][4] = {{8, 207, 207, 36}, {3, 37, 45, 20}, {2, 13, 33, 7}, {1, 200, 65, 300}, {5, 17, 1, 9}};
  size_t i;
  int f;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (f = 0; f < 8; f++) fold_case(f & 1, (f >> 1) & 1, (f >> 2) & 1, sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(matmul_fold),
    TU_CASE(matmul_runtime),
    TU_CASE(matmul_shapes),
    TU_CASE(matmul_batch),
    TU_CASE(gemm_shapes),
};

TU_MAIN(setup, teardown)
