/* test_blis_mmpack.c - blis-cpu Gemm and MatMul on a constant B (the packed-weight GEMM of
 * blis_mmpack.c) against double-precision sums, over many shapes, each SIMD path, 1 and 2 threads. */
#include "test_blis_util.h"

static tb_plugin_t p;

/* Number of values of the `simd` knob on this CPU (auto, then each code path, widest first). */
static int64_t simd_choices(void) {
  uint32_t n = 0, i;
  mi_error_t err = {0, ""};
  if (p.api->knob_count(p.ctx, 0, &n, &err) != MI_OK) return 0;
  for (i = 0; i < n; i++) {
    mi_knob_desc_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    if (p.api->knob_desc(p.ctx, 0, i, &k, &err) == MI_OK && strcmp(k.name, "simd") == 0) return k.max + 1;
  }
  return 0;
}

/* One problem: Y = alpha * A B (+ beta * bias) with B constant, A [batch, m, k] (rank 2 when
 * batch is 0), B [k, n] or [n, k] (transB, Gemm only), bias of n (Gemm only, NULL: none). */
typedef struct mm_case {
  int gemm, trans_b, b3; /* b3: MatMul's B as [1, k, n] */
  int64_t batch, m, k, n;
  float alpha, beta;
  int bias;
} mm_case_t;

/* Runs the case on every simd path at 1 and 2 threads: each within 1e-5 relative L2 of the double
 * sums, and the 2-thread result the same bits as the 1-thread one (the split is by column panels,
 * each element summed in the same order). */
static void run_case(const mm_case_t *c) {
  int64_t rows = (c->batch ? c->batch : 1) * c->m, i, j, l;
  int64_t ad[3] = {c->batch, c->m, c->k}, bd[3] = {1, c->trans_b ? c->n : c->k, c->trans_b ? c->k : c->n};
  int64_t yd[3] = {c->batch, c->m, c->n}, cd = c->n;
  float *a = malloc((size_t)(rows * c->k) * 4), *bm = malloc((size_t)(c->k * c->n) * 4);
  float *bias = malloc((size_t)c->n * 4), *ref = malloc((size_t)(rows * c->n) * 4);
  float *got1 = malloc((size_t)(rows * c->n) * 4), *got2 = malloc((size_t)(rows * c->n) * 4);
  const float *ins[1];
  int64_t si, nsimd = simd_choices();
  tb_t b;
  int t0, t1, t2 = -1, t3, node, r3 = c->batch ? 3 : 2;
  REQUIRE(a && bm && bias && ref && got1 && got2);
  ins[0] = a;
  tb_fill(a, rows * c->k, 41);
  tb_fill(bm, c->k * c->n, 42);
  tb_fill(bias, c->n, 43);
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, r3, c->batch ? ad : ad + 1, NULL);
  t1 = tb_tensor(&b, c->b3 ? 3 : 2, c->b3 ? bd : bd + 1, bm);
  if (c->bias) t2 = tb_tensor(&b, 1, &cd, bias);
  t3 = tb_tensor(&b, r3, c->batch ? yd : yd + 1, NULL);
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
  for (i = 0; i < rows; i++)
    for (j = 0; j < c->n; j++) {
      double acc = 0.;
      for (l = 0; l < c->k; l++)
        acc += (double)a[i * c->k + l] * (c->trans_b ? bm[j * c->k + l] : bm[l * c->n + j]);
      ref[i * c->n + j] = (float)((c->gemm ? c->alpha : 1.) * acc + (c->bias ? c->beta * bias[j] : 0.));
    }
  for (si = 0; si < nsimd; si++) {
    mi_knob_value_t kv[2] = {{"simd", si, 0.}, {"threads", 1, 0.}};
    mi_error_t err = {0, ""};
    int32_t rc1, rc2;
    double e;
    rc1 = tb_run(&p, &b, NULL, kv, 2, ins, got1, &err);
    CHECK(rc1 == MI_OK, "%s: %s", c->gemm ? "gemm" : "matmul", err.message);
    kv[1].i = 2;
    rc2 = tb_run(&p, &b, NULL, kv, 2, ins, got2, &err);
    CHECK(rc2 == MI_OK, "%s: %s", c->gemm ? "gemm" : "matmul", err.message);
    if (rc1 != MI_OK || rc2 != MI_OK) continue;
    e = tu_rel_l2(got1, ref, rows * c->n);
    CHECK(e < 1e-5, "%s batch %lld m %lld k %lld n %lld transB %d bias %d simd %lld: rel L2 %g",
          c->gemm ? "gemm" : "matmul", (long long)c->batch, (long long)c->m, (long long)c->k, (long long)c->n,
          c->trans_b, c->bias, (long long)si, e);
    CHECK(memcmp(got1, got2, (size_t)(rows * c->n) * 4) == 0,
          "%s m %lld k %lld n %lld simd %lld: 2 threads differ from 1", c->gemm ? "gemm" : "matmul",
          (long long)c->m, (long long)c->k, (long long)c->n, (long long)si);
  }
  free(a);
  free(bm);
  free(bias);
  free(ref);
  free(got1);
  free(got2);
}

static void setup(void) {
  REQUIRE(tb_load(&p));
  REQUIRE(simd_choices() >= 2);
}

static void teardown(void) {
  tb_unload(&p);
}

/* Rows 1..200 (tile tails of 12 / 6 / 4 rows, more than one 192-row block), odd K (one k block
 * and past 256: partial sums through Y), N from 1 to past several panels with tails. */
static void matmul_shapes(void) {
  static const int64_t shapes[][3] = {{1, 1, 1}, {1, 17, 33}, {2, 3, 7}, {5, 120, 65}, {11, 64, 16}, {12, 31, 32}, {13, 257, 31}, {25, 9, 100}, {37, 96, 301}, {40, 120, 331}, {64, 300, 48}, {128, 64, 17}, {200, 300, 65}, {193, 5, 129}};
  size_t i;
  for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    mm_case_t c = {0, 0, 0, 0, shapes[i][0], shapes[i][1], shapes[i][2], 1.f, 0.f, 0};
    run_case(&c);
  }
}

/* A [batch, m, k] by a shared B [k, n] or [1, k, n]: one tall GEMM over the batch's rows. */
static void matmul_batch(void) {
  mm_case_t c = {0, 0, 0, 3, 7, 33, 45, 1.f, 0.f, 0};
  run_case(&c);
  c.b3 = 1;
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
        mm_case_t c = {1, tb_, 0, 0, shapes[i][0], shapes[i][1], shapes[i][2], 0.5f, 0.25f, bias};
        run_case(&c);
      }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(matmul_shapes),
    TU_CASE(matmul_batch),
    TU_CASE(gemm_shapes),
};

TU_MAIN(setup, teardown)
