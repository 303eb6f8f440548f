/* test_blis_transpose.c - blis-cpu's channels-last -> channels-first Transpose (blis_transpose.c)
 * and its 16x16-tiled NCHW -> NHWC against index arithmetic, bit for bit: perms of every rank that
 * spell them, batches, tails, knob simd's code paths and 1 or 2 threads. */
#include "test_blis_util.h"

static tb_plugin_t p;

static void setup(void) {
  REQUIRE(tb_load(&p));
}

static void teardown(void) {
  tb_unload(&p);
}

/* Transpose of x (rank r, dims xd) by perm on knob simd `si` and `threads`, against y[i] =
 * x[sum idx[d] * stride[perm[d]]]; a copy, so exact. */
static void case_of(int32_t r, const int64_t *xd, const int64_t *perm, int64_t si, int64_t threads) {
  int64_t yd[6], xst[6], idx[6] = {0}, n = 1, i, d;
  float *x, *ref, *got;
  const float *ins[1];
  mi_knob_value_t kv[2] = {{"simd", si, 0.}, {"threads", threads, 0.}};
  mi_error_t err = {0, ""};
  int t0, t1, node;
  tb_t b;
  for (d = r - 1; d >= 0; d--) {
    xst[d] = n;
    n *= xd[d];
  }
  for (d = 0; d < r; d++) yd[d] = xd[perm[d]];
  x = malloc((size_t)n * 4);
  ref = malloc((size_t)n * 4);
  got = calloc((size_t)n, 4);
  REQUIRE(x && ref && got);
  tb_fill(x, n, 90u + (unsigned)n);
  for (i = 0; i < n; i++) {
    int64_t off = 0;
    for (d = 0; d < r; d++) off += idx[d] * xst[perm[d]];
    ref[i] = x[off];
    for (d = r - 1; d >= 0 && ++idx[d] == yd[d]; d--) idx[d] = 0;
  }
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, (int)r, xd, NULL);
  t1 = tb_tensor(&b, (int)r, yd, NULL);
  node = tb_node(&b, "Transpose", 13, 1, &t0, t1);
  tb_attr_is(&b, node, "perm", (int)r, perm);
  tb_finish(&b, t1);
  ins[0] = x;
  CHECK(tb_run(&p, &b, NULL, kv, 2, ins, got, &err) == MI_OK, "Transpose: %s", err.message);
  CHECK(memcmp(got, ref, (size_t)n * 4) == 0, "Transpose rank %d of %lld values, simd %lld, %lld threads differs",
        (int)r, (long long)n, (long long)si, (long long)threads);
  free(x);
  free(ref);
  free(got);
}

/* NHWC -> NCHW of 2 to 5 channels (5: the strided gather), batches of 1 and 2, pixel counts with
 * and without a tail of 16, an image large enough to split over two threads. */
static void nhwc_to_nchw(void) {
  static const int64_t perm[4] = {0, 3, 1, 2};
  int64_t si, c, th;
  CHECK(simd_choices(&p) >= 2, "knob simd has %lld values", (long long)simd_choices(&p));
  for (si = 0; si < simd_choices(&p); si++)
    for (th = 1; th <= 2; th++) {
      for (c = 2; c <= 5; c++) {
        int64_t a[4] = {1, 5, 37, c}, bt[4] = {2, 4, 8, c}, one[4] = {1, 1, 3, c};
        case_of(4, a, perm, si, th);
        case_of(4, bt, perm, si, th);
        case_of(4, one, perm, si, th);
      }
      {
        int64_t big[4] = {1, 128, 128, 3};
        case_of(4, big, perm, si, th);
      }
    }
}

/* The same movement spelled at other ranks ([N, P, C] -> [N, C, P], [P, C] -> [C, P], a 5-D
 * channels-last volume) and near misses that must keep the gather: the channel axis not last in
 * the input, a batch moved inside. */
static void other_spellings(void) {
  int64_t si;
  for (si = 0; si < simd_choices(&p); si++) {
    int64_t x3[3] = {3, 50, 4}, p3[3] = {0, 2, 1}, x2[2] = {33, 3}, p2[2] = {1, 0};
    int64_t x5[5] = {2, 3, 4, 5, 2}, p5[5] = {0, 4, 1, 2, 3}, q5[5] = {4, 0, 1, 2, 3};
    int64_t x4[4] = {2, 6, 7, 3}, q4[4] = {3, 1, 0, 2}, r4[4] = {0, 3, 2, 1};
    case_of(3, x3, p3, si, 1);
    case_of(2, x2, p2, si, 1);
    case_of(5, x5, p5, si, 2);
    case_of(5, x5, q5, si, 1);
    case_of(4, x4, q4, si, 1);
    case_of(4, x4, r4, si, 2);
  }
}

/* NCHW -> NHWC (an output head's, before a Reshape): whole 16x16 tiles, tails on either axis,
 * batches, 5 output rows of 257 (a spectrogram's frames), 4 pixels (the deinterleave), 2
 * channels and 4 pixels of 7 channels (the gather). */
static void nchw_to_nhwc(void) {
  static const int64_t perm[4] = {0, 2, 3, 1};
  int64_t si, th, k;
  static const int64_t shapes[][4] = {{1, 32, 16, 16}, {1, 96, 8, 8}, {2, 20, 5, 7}, {3, 8, 2, 4}, {1, 7, 9, 9}, {1, 40, 1, 7}, {1, 257, 1, 5}, {1, 20, 1, 4}, {1, 2, 16, 16}, {1, 7, 2, 2}};
  for (si = 0; si < simd_choices(&p); si++)
    for (th = 1; th <= 2; th++)
      for (k = 0; k < (int64_t)(sizeof shapes / sizeof shapes[0]); k++) case_of(4, shapes[k], perm, si, th);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(nhwc_to_nchw),
    TU_CASE(nchw_to_nhwc),
    TU_CASE(other_spellings),
};

TU_MAIN(setup, teardown)
