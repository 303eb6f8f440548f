/* test_blis_bf16mm.c - BF16 compute for MatMul and Gemm in blis-cpu (matmul.packed_bf16 and
 * gemm.packed_bf16, listed where the CPU has AVX512_BF16): against the FP32 product of BF16-rounded
 * operands (FP32 summing level), exactly equal to it where every product and sum is exact (the
 * rounding of A and B, ties included), within BF16's error of the FP32 product; GEMV rows, odd k
 * and n, k blocks, row blocks, batched A, a 1-D A, the fused bias and activation, Gemm's transA /
 * transB / alpha / beta / C, threads; the refusals (runtime B, batched B), and the fallback where the
 * CPU lacks the instructions (MI_BLIS_MAX_SIMD=avx2): not listed, and named anyway it runs the FP32
 * layer, the same bits, with a line in the host's log. */
#include "test_blis_util.h"

#define MMV "matmul.packed_bf16"
#define GMV "gemm.packed_bf16"

static int g_has_bf16;
static int64_t g_cores = 1;
static tb_plugin_t p_glob;
static double g_worst_bf, g_worst32;

/* BF16, round to nearest even, FP32 denormals to signed zero (independent of the plugin's). */
static float to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
  else {
    uint32_t low = u & 0xffffu, keep = u & 0xffff0000u;
    if (low > 0x8000u || (low == 0x8000u && (keep & 0x10000u))) keep += 0x10000u;
    u = keep;
  }
  memcpy(&f, &u, 4);
  return f;
}

/* A product case: Y [m][n] = alpha * op(A) op(B) (+ beta * C) [-> bias Add -> Relu], op a transpose
 * where ta / tb; A's batch dims (MatMul) in ad. */
typedef struct mcase {
  const char *name;
  int gemm;  /* 0: MatMul, 1: Gemm */
  int arank; /* MatMul: A's rank (1: a vector, 3: batched) */
  int64_t batch, m, k, n;
  int ta, tb;        /* Gemm */
  float alpha, beta; /* Gemm */
  int c;             /* Gemm's C: 0 none, 1 [n] constant, 2 [m, n] constant, 3 [n] runtime */
  int tail;          /* MatMul: -> Add (bias [n]) -> Relu after it */
} mcase_t;

/* The reference in double over the given operands (already rounded or not). */
static void naive(const mcase_t *s, const float *a, const float *b, const float *c, const float *bias, float *y) {
  int64_t rows = s->batch * s->m, i, j, kk;
  for (i = 0; i < rows; i++)
    for (j = 0; j < s->n; j++) {
      double acc = 0.;
      for (kk = 0; kk < s->k; kk++) {
        double av = s->ta ? a[kk * s->m + i] : a[i * s->k + kk], bv = s->tb ? b[j * s->k + kk] : b[kk * s->n + j];
        acc += av * bv;
      }
      acc *= s->gemm ? s->alpha : 1.f;
      if (s->c == 1 || s->c == 3) acc += (double)s->beta * c[j];
      if (s->c == 2) acc += (double)s->beta * c[i * s->n + j];
      if (s->tail) {
        acc += bias[j];
        if (acc < 0.) acc = 0.;
      }
      y[i * s->n + j] = (float)acc;
    }
}

static int32_t run_case(tb_plugin_t *p, const mcase_t *s, const float *a, const float *b, const float *c,
                        const float *bias, const char *variant, int64_t threads, float *y, mi_error_t *err) {
  int64_t ad[3], bd[2], yd[3], cd[2] = {s->m, s->n}, nd = s->n;
  mi_knob_value_t kv[1] = {{"threads", threads, 0.}};
  const float *ins[2] = {a, c};
  tb_t t;
  int ta, tbt, ty, node, ar = s->gemm ? 2 : s->arank;
  memset(&t, 0, sizeof t);
  if (ar == 1) ad[0] = s->k;
  else if (ar == 2) {
    ad[0] = s->ta ? s->k : s->m;
    ad[1] = s->ta ? s->m : s->k;
  } else {
    ad[0] = s->batch;
    ad[1] = s->m;
    ad[2] = s->k;
  }
  bd[0] = s->tb ? s->n : s->k;
  bd[1] = s->tb ? s->k : s->n;
  memcpy(yd, ad, sizeof yd);
  if (ar == 1) yd[0] = s->n;
  else
    yd[ar - 1] = s->n, yd[ar - 2] = s->m;
  ta = tb_tensor(&t, ar, ad, NULL);
  tbt = tb_tensor(&t, 2, bd, b);
  ty = tb_tensor(&t, ar, yd, NULL);
  if (s->gemm) {
    int in3[3] = {ta, tbt, -1};
    if (s->c) in3[2] = tb_tensor(&t, s->c == 2 ? 2 : 1, s->c == 2 ? cd : &nd, s->c == 3 ? NULL : c);
    node = tb_node(&t, "Gemm", 13, s->c ? 3 : 2, in3, ty);
    if (s->ta) tb_attr_i(&t, node, "transA", 1);
    if (s->tb) tb_attr_i(&t, node, "transB", 1);
    tb_attr_f(&t, node, "alpha", s->alpha);
    tb_attr_f(&t, node, "beta", s->beta);
  } else {
    int in2[2] = {ta, tbt};
    node = tb_node(&t, "MatMul", 13, 2, in2, ty);
  }
  if (s->tail) {
    int tbias = tb_tensor(&t, 1, &nd, bias), ts = tb_tensor(&t, ar, yd, NULL), tr = tb_tensor(&t, ar, yd, NULL);
    int add[2] = {ty, tbias};
    tb_node(&t, "Add", 14, 2, add, ts);
    tb_node(&t, "Relu", 14, 1, &ts, tr);
    ty = tr;
  }
  (void)node;
  tb_finish(&t, ty);
  return tb_run(p, &t, variant, kv, 1, ins, y, err);
}

/* Random operands in [-1, 1): against the product of rounded operands (1e-5) and the FP32 one
 * (BF16's 8-bit significand: above 1e-4, under 1e-2); threads 1 and N the same bits. */
static void mm_case(tb_plugin_t *p, const mcase_t *s) {
  int64_t an = s->batch * s->m * s->k, bn = s->k * s->n, yn = s->batch * s->m * s->n, cn = s->m * s->n, i;
  float *a = malloc((size_t)an * 4), *b = malloc((size_t)bn * 4), *ar = malloc((size_t)an * 4);
  float *br = malloc((size_t)bn * 4), *c = malloc((size_t)cn * 4), *bias = malloc((size_t)s->n * 4);
  float *refb = malloc((size_t)yn * 4), *ref32 = malloc((size_t)yn * 4), *y = malloc((size_t)yn * 4);
  float *y2 = malloc((size_t)yn * 4);
  const char *v = s->gemm ? GMV : MMV;
  mi_error_t err = {0, ""};
  int32_t rc;
  REQUIRE(a && b && ar && br && c && bias && refb && ref32 && y && y2);
  tb_fill(a, an, 11);
  tb_fill(b, bn, 12);
  tb_fill(c, cn, 13);
  tb_fill(bias, s->n, 14);
  for (i = 0; i < an; i++) ar[i] = to_bf16(a[i]);
  for (i = 0; i < bn; i++) br[i] = to_bf16(b[i]);
  naive(s, ar, br, c, bias, refb);
  naive(s, a, b, c, bias, ref32);
  rc = run_case(p, s, a, b, c, bias, v, 1, y, &err);
  CHECK(rc == MI_OK, "%s: %s: %s", s->name, v, err.message);
  if (rc == MI_OK) {
    double eb = tu_rel_l2(y, refb, yn), e32 = tu_rel_l2(y, ref32, yn);
    if (eb > g_worst_bf) g_worst_bf = eb;
    if (e32 > g_worst32) g_worst32 = e32;
    CHECK(eb < 1e-5, "%s: rel L2 %.3g against the product of BF16 operands", s->name, eb);
    CHECK(e32 > 1e-4 && e32 < 1e-2, "%s: rel L2 %.3g against the FP32 product", s->name, e32);
  }
  rc = run_case(p, s, a, b, c, bias, v, g_cores > 4 ? 4 : g_cores, y2, &err);
  CHECK(rc == MI_OK && memcmp(y, y2, (size_t)yn * 4) == 0, "%s: threads=%lld differs (%s)", s->name,
        (long long)(g_cores > 4 ? 4 : g_cores), err.message);
  free(a);
  free(b);
  free(ar);
  free(br);
  free(c);
  free(bias);
  free(refb);
  free(ref32);
  free(y);
  free(y2);
}

/* m k n: GEMV rows (1, 3: the split k chains), k odd (a pair half empty), n under 16 (16-wide panels)
 * and past a 32-wide panel by a few (the half panel), k past 512 (two k blocks, partial sums through
 * Y), rows past 192 (two row blocks), batched A folded into rows, a 1-D A. */
static const mcase_t cases[] = {
    {"MatMul 1x288 by 288x300 (GEMV)", 0, 2, 1, 1, 288, 300, 0, 0, 1.f, 1.f, 0, 0},
    {"MatMul 3x37 by 37x13", 0, 2, 1, 3, 37, 13, 0, 0, 1.f, 1.f, 0, 0},
    {"MatMul 2x5x40 by 40x33 (batched A)", 0, 3, 2, 5, 40, 33, 0, 0, 1.f, 1.f, 0, 0},
    {"MatMul 40x1101 by 1101x70 (k blocks)", 0, 2, 1, 40, 1101, 70, 0, 0, 1.f, 1.f, 0, 0},
    {"MatMul 203x24 by 24x49 (row blocks)", 0, 2, 1, 203, 24, 49, 0, 0, 1.f, 1.f, 0, 0},
    {"MatMul 63 by 63x17 (1-D A)", 0, 1, 1, 1, 63, 17, 0, 0, 1.f, 1.f, 0, 0},
    {"MatMul 2x40x120 by 120x45 -> Add -> Relu", 0, 3, 2, 40, 120, 45, 0, 0, 1.f, 1.f, 0, 1},
    {"Gemm 7x45 by (45x19)^T + C[n], alpha .5 beta 2", 1, 2, 1, 7, 45, 19, 0, 1, .5f, 2.f, 1, 0},
    {"Gemm (33x14)^T by 33x40 + C[m,n] (transA, C after)", 1, 2, 1, 14, 33, 40, 1, 0, 1.f, .75f, 2, 0},
    {"Gemm 1x64 by (64x37)^T + runtime C[n]", 1, 2, 1, 1, 64, 37, 0, 1, 1.25f, 1.f, 3, 0},
};

static void products(void) {
  size_t i;
  if (!g_has_bf16) {
    fprintf(stderr, "  no AVX512_BF16 on this CPU: the variants are refused (see declarations), cases skipped\n");
    return;
  }
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) mm_case(&p_glob, &cases[i]);
  fprintf(stderr, "  products, BF16 compute: worst rel L2 %.2g vs the product of BF16 operands, %.2g vs FP32\n",
          g_worst_bf, g_worst32);
}

/* Values of 16 significant bits in [2^-8, 1), a quarter exactly halfway between two BF16 values. */
static void tie_fill(float *x, int64_t n, unsigned r) {
  int64_t i;
  for (i = 0; i < n; i++) {
    uint32_t sig, e;
    r = r * 1103515245u + 12345u;
    sig = 0x8000u | ((r >> 8) & 0x7fffu);
    if ((r >> 4) % 4 == 0) sig = (sig & 0xff00u) | 0x80u; /* a tie */
    e = (r >> 2) % 9;
    x[i] = ldexpf((float)sig, -(int)(16 + e)) * ((r >> 28) & 1 ? -1.f : 1.f);
  }
}

static void int_fill(float *x, int64_t n, unsigned r) {
  int64_t i;
  for (i = 0; i < n; i++) {
    r = r * 1103515245u + 12345u;
    x[i] = (float)((int)((r >> 16) % 5) - 2);
  }
}

/* One operand of 16-bit values (ties included), the other small integers, k <= 64: every product
 * and sum of the rounded operands is exact in FP32, so the output must equal the product of the
 * operands rounded to nearest even bit for bit, whatever the order of the sums; truncation, or ties
 * away from zero, would not. which: 0 A carries the ties, 1 B does. */
static void exact_case(const mcase_t *s, int which) {
  int64_t an = s->batch * s->m * s->k, bn = s->k * s->n, yn = s->batch * s->m * s->n, i, diff = 0, changed = 0;
  float *a = malloc((size_t)an * 4), *b = malloc((size_t)bn * 4), *ar = malloc((size_t)an * 4);
  float *br = malloc((size_t)bn * 4), *ref = malloc((size_t)yn * 4), *y = malloc((size_t)yn * 4);
  mi_error_t err = {0, ""};
  int32_t rc;
  REQUIRE(a && b && ar && br && ref && y && s->k <= 64 && !s->c && !s->tail);
  if (which == 0) {
    tie_fill(a, an, 777u);
    int_fill(b, bn, 778u);
  } else {
    int_fill(a, an, 779u);
    tie_fill(b, bn, 780u);
  }
  for (i = 0; i < an; i++) changed += (ar[i] = to_bf16(a[i])) != a[i];
  for (i = 0; i < bn; i++) changed += (br[i] = to_bf16(b[i])) != b[i];
  naive(s, ar, br, NULL, NULL, ref);
  rc = run_case(&p_glob, s, a, b, NULL, NULL, s->gemm ? GMV : MMV, 1, y, &err);
  CHECK(rc == MI_OK, "%s: %s", s->name, err.message);
  for (i = 0; rc == MI_OK && i < yn; i++) diff += memcmp(&y[i], &ref[i], 4) != 0;
  CHECK(changed > (which ? bn : an) / 2, "%s: only %lld values change when rounded", s->name, (long long)changed);
  CHECK(rc != MI_OK || diff == 0, "%s (%s rounded): %lld of %lld outputs differ from the product of rounded operands",
        s->name, which ? "B" : "A", (long long)diff, (long long)yn);
  free(a);
  free(b);
  free(ar);
  free(br);
  free(ref);
  free(y);
}

static void exact(void) {
  static const mcase_t e[] = {
      {"exact MatMul 5x63 by 63x41", 0, 2, 1, 5, 63, 41, 0, 0, 1.f, 1.f, 0, 0},
      {"exact MatMul 1x64 by 64x20 (GEMV)", 0, 2, 1, 1, 64, 20, 0, 0, 1.f, 1.f, 0, 0},
      {"exact Gemm (31x13)^T by (31x35)^T (transA, transB)", 1, 2, 1, 13, 31, 35, 1, 1, 1.f, 1.f, 0, 0},
  };
  size_t i;
  if (!g_has_bf16) return;
  for (i = 0; i < sizeof e / sizeof e[0]; i++) {
    exact_case(&e[i], 0);
    exact_case(&e[i], 1);
  }
}

/* How many variants p lists among the BF16 MatMul / Gemm ones, checking their declarations. */
static int listed(tb_plugin_t *p) {
  uint32_t nv = 0, i;
  mi_error_t err = {0, ""};
  int n = 0;
  if (p->api->variant_count(p->ctx, 0, &nv, &err) == MI_OK)
    for (i = 0; i < nv; i++) {
      mi_variant_desc_t v;
      memset(&v, 0, sizeof v);
      v.struct_size = sizeof v;
      if (p->api->variant_desc(p->ctx, 0, i, &v, &err) != MI_OK || (strcmp(v.id, MMV) && strcmp(v.id, GMV))) continue;
      n++;
      CHECK(strcmp(v.op_type, strcmp(v.id, MMV) ? "Gemm" : "MatMul") == 0 && strcmp(v.knobs, "threads") == 0,
            "%s: op %s knobs %s", v.id, v.op_type, v.knobs);
      /* not FP32-exact: declared BFLOAT16 alone */
      CHECK(v.dtype_mask == MI_DTYPE_BIT(MI_DTYPE_BFLOAT16), "%s dtype_mask 0x%x", v.id, v.dtype_mask);
    }
  return n;
}

/* A runtime B, and a B with batch dims over A's: refused, the message naming the variant and why. */
static void refusals(void) {
  int64_t ad[3] = {2, 4, 8}, bd[3] = {2, 8, 6}, yd[3] = {2, 4, 6}, i;
  float a[64], b[96], y[48];
  const float *ins[2] = {a, b};
  mi_error_t err = {0, ""};
  tb_t t;
  int in2[2], rc;
  if (!g_has_bf16) return;
  for (i = 0; i < 64; i++) a[i] = (float)i;
  for (i = 0; i < 96; i++) b[i] = (float)i;
  memset(&t, 0, sizeof t);
  in2[0] = tb_tensor(&t, 3, ad, NULL);
  in2[1] = tb_tensor(&t, 3, bd, NULL);
  tb_node(&t, "MatMul", 13, 2, in2, tb_tensor(&t, 3, yd, NULL));
  tb_finish(&t, 2);
  rc = tb_run(&p_glob, &t, MMV, NULL, 0, ins, y, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, MMV " needs a constant B"), "runtime B: %d %s", rc, err.message);
  memset(&t, 0, sizeof t);
  in2[0] = tb_tensor(&t, 3, ad, NULL);
  in2[1] = tb_tensor(&t, 3, bd, b);
  tb_node(&t, "MatMul", 13, 2, in2, tb_tensor(&t, 3, yd, NULL));
  tb_finish(&t, 2);
  rc = tb_run(&p_glob, &t, MMV, NULL, 0, ins, y, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "batch dims"), "batched B: %d %s", rc, err.message);
}

/* Listed exactly where the CPU has AVX512_BF16. Capped at AVX2 they are not listed; a configuration
 * naming them anyway runs the FP32 layer (matmul.blis / gemm.blis: the same bits as those) and the
 * host's log says so. */
static void declarations(void) {
  static const mcase_t fb[2] = {
      {"fallback MatMul 3x37 by 37x29", 0, 2, 1, 3, 37, 29, 0, 0, 1.f, 1.f, 0, 0},
      {"fallback Gemm 5x20 by (20x18)^T + C", 1, 2, 1, 5, 20, 18, 0, 1, .5f, 1.f, 1, 0},
  };
  float a[200], b[1073], c[90], y32[90], yb[90];
  tb_plugin_t q;
  int f;
  CHECK(listed(&p_glob) == 2 * g_has_bf16, "BF16 MatMul/Gemm variants listed %d times (AVX512_BF16 %d)",
        listed(&p_glob), g_has_bf16);
  tb_fill(a, 200, 21);
  tb_fill(b, 1073, 22);
  tb_fill(c, 90, 23);
  setenv("MI_BLIS_MAX_SIMD", "avx2", 1);
  REQUIRE(tb_load(&q));
  CHECK(listed(&q) == 0, "BF16 MatMul/Gemm variants listed with MI_BLIS_MAX_SIMD=avx2");
  for (f = 0; f < 2; f++) {
    char logbuf[4096] = "";
    mi_error_t err = {0, ""};
    int32_t rc, rc32;
    int fd_err;
    FILE *tmp;
    rc32 = run_case(&q, &fb[f], a, b, c, NULL, f ? "gemm.blis" : "matmul.blis", 1, y32, &err);
    CHECK(rc32 == MI_OK, "%s: FP32: %s", fb[f].name, err.message);
    fflush(stderr);
    tmp = tmpfile();
    REQUIRE(tmp);
    fd_err = dup(2);
    REQUIRE(fd_err >= 0 && dup2(fileno(tmp), 2) >= 0);
    rc = run_case(&q, &fb[f], a, b, c, NULL, f ? GMV : MMV, 1, yb, &err);
    fflush(stderr);
    dup2(fd_err, 2);
    close(fd_err);
    rewind(tmp);
    logbuf[fread(logbuf, 1, sizeof logbuf - 1, tmp)] = '\0';
    fclose(tmp);
    CHECK(rc == MI_OK, "%s: %s", fb[f].name, err.message);
    CHECK(rc != MI_OK || rc32 != MI_OK || memcmp(y32, yb, (size_t)(fb[f].m * fb[f].n) * 4) == 0,
          "%s: not the FP32 layer's bits", fb[f].name);
    CHECK(strstr(logbuf, "needs AVX512_BF16") && strstr(logbuf, f ? "runs gemm.blis in FP32" : "runs matmul.blis in FP32"),
          "%s: the log says '%s'", fb[f].name, logbuf);
  }
  tb_unload(&q);
  unsetenv("MI_BLIS_MAX_SIMD");
}

static void setup(void) {
  mi_device_desc_t dd;
  mi_error_t err = {0, ""};
  unsetenv("MI_BLIS_MAX_SIMD");
  REQUIRE(tb_load(&p_glob));
  memset(&dd, 0, sizeof dd);
  dd.struct_size = sizeof dd;
  if (p_glob.api->device_info(p_glob.ctx, 0, &dd, &err) == MI_OK) g_cores = dd.compute_units;
  g_has_bf16 = tu_cpu_avx512_bf16();
}

static void teardown(void) { tb_unload(&p_glob); }

static const tu_case_t tu_cases[] = {
    TU_CASE(declarations),
    TU_CASE(products),
    TU_CASE(exact),
    TU_CASE(refusals),
};

TU_MAIN(setup, teardown)
