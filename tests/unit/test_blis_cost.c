/* test_blis_cost.c - blis-cpu's per-kernel threading decision (blis_cost.c): a kernel's estimated
 * one-thread time from its shapes in one unit for every op with FLOPs, the threads that time is worth, and,
 * through the plugin, that a kernel too small to gain from a split never wakes the pool's worker
 * while a large one does. */

#include "test_blis_util.h"

#include "../../plugins/blis_cpu/blis_cost.c"

/* A Conv from x (1 x c x h x w) with an m x c/g x k x k weight, stride 1, "same" padding. */
static void conv_desc(tb_t *b, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t g, const float *wt) {
  static int64_t pads[4]; /* the attribute points at it: one description at a time */
  int64_t xd[4] = {1, c, h, w}, wd[4] = {m, c / g, k, k}, yd[4] = {1, m, h, w};
  int in[2], y, node;
  pads[0] = pads[1] = pads[2] = pads[3] = k / 2;
  memset(b, 0, sizeof *b);
  in[0] = tb_tensor(b, 4, xd, NULL);
  in[1] = tb_tensor(b, 4, wd, wt);
  y = tb_tensor(b, 4, yd, NULL);
  node = tb_node(b, "Conv", 13, 2, in, y);
  tb_attr_i(b, node, "group", g);
  tb_attr_is(b, node, "pads", 4, pads);
  tb_finish(b, y);
}

/* An elementwise Mul of two runtime tensors of n floats. */
static void mul_desc(tb_t *b, int64_t n) {
  int64_t d[2] = {1, n};
  int in[2], y;
  memset(b, 0, sizeof *b);
  in[0] = tb_tensor(b, 2, d, NULL);
  in[1] = tb_tensor(b, 2, d, NULL);
  y = tb_tensor(b, 2, d, NULL);
  tb_node(b, "Mul", 13, 2, in, y);
  tb_finish(b, y);
}

static int64_t cost_of(tb_t *b, int wide) {
  mi_kernel_desc_t d;
  tb_desc(b, &d, NULL, NULL, 0);
  return mi__blis_kernel_cost_ns(&d, wide);
}

/* The estimate's unit is the same for every op with FLOPs: FLOPs from the weight's shape, bytes
 * from the kernel's inputs, outputs and constants; and the threads follow from it alone. */
static void estimate(void) {
  static float wt[64 * 64 * 9];
  tb_t b;
  int64_t small, dw, big, mul;
  /* ppocr-v2-cls's 24 -> 24 pointwise conv on 12x48: 663 kFLOP, 113 kB: lost 3-7 us split */
  conv_desc(&b, 24, 12, 48, 24, 1, 1, wt);
  small = cost_of(&b, 1);
  CHECK(small > 6000 && small < 9000, " 24 -> 24 pointwise on 12x48: %lld ns", (long long)small);
  CHECK(cost_of(&b, 0) > small * 3 / 2, " AVX2's FLOP rate is lower");
  /* a depthwise 3x3 of 64 channels on 40x40: 1.8 MFLOP (C/G = 1), 0.8 MB */
  conv_desc(&b, 64, 40, 40, 64, 3, 64, wt);
  dw = cost_of(&b, 1);
  CHECK(dw > 25000 && dw < 35000, " depthwise 3x3 64 x 40x40: %lld ns", (long long)dw);
  /* M-LSD's 64 -> 64 3x3 on 80x80: 472 MFLOP */
  conv_desc(&b, 64, 80, 80, 64, 3, 1, wt);
  big = cost_of(&b, 1);
  CHECK(big > 4000000, " 64 -> 64 3x3 on 80x80: %lld ns", (long long)big);
  conv_desc(&b, 64, 40, 40, 64, 3, 1, wt);
  CHECK(cost_of(&b, 1) > dw * 16, " dense 3x3 64 -> 64 on 40x40: %lld ns against %lld depthwise",
        (long long)cost_of(&b, 1), (long long)dw);
  /* a kernel without FLOPs has no estimate: its loops keep the pool's floor by elements */
  mul_desc(&b, 6144);
  mul = cost_of(&b, 1);
  CHECK(mul == -1 && mi__blis_kernel_threads(2, mul) == 2, " Mul of 6144 floats: %lld ns", (long long)mul);
  CHECK(mi__blis_kernel_threads(2, small) == 1 && mi__blis_kernel_threads(8, small) == 1,
        " a small conv on one thread");
  CHECK(mi__blis_kernel_threads(2, big) == 2 && mi__blis_kernel_threads(16, big) == 16 &&
            mi__blis_kernel_threads(1, big) == 1,
        " a large kernel on every thread it is given");
  CHECK(mi__blis_kernel_threads(4, 3 * MI__PAR_PART_NS) == 3, " each thread at least MI__PAR_PART_NS");
}

/* Runs the conv described at `threads` and returns how many threads the process gained. */
static int run_conv(tb_plugin_t *p, tb_t *b, int64_t xn, int64_t yn, int64_t threads) {
  mi_knob_value_t knob = {"threads", threads, 0};
  float *x = malloc((size_t)xn * 4), *y = malloc((size_t)yn * 4);
  const float *ins[1] = {x};
  mi_error_t err = {0, ""};
  int before = threads_now(), after;
  int32_t rc;
  REQUIRE(x && y);
  tb_fill(x, xn, 7);
  rc = tb_run(p, b, NULL, &knob, 1, ins, y, &err);
  CHECK(rc == MI_OK, " run: %s", err.message);
  after = threads_now();
  free(x);
  free(y);
  return after - before;
}

/* The pool starts its workers on first need: a kernel that runs on one thread starts none. The
 * cls-sized pointwise conv split over two threads by the pool's operation floor before (331 k
 * multiply-adds, over 2 x 2^15); now it runs alone, and a large conv still starts the worker. */
static void no_worker_for_small(void) {
  static float wt[64 * 64 * 9];
  tb_plugin_t p;
  tb_t b;
  if (!tb_load(&p)) TU_SKIP("blis-cpu not built");
  tb_fill(wt, 64 * 64 * 9, 3);
  conv_desc(&b, 24, 12, 48, 24, 1, 1, wt);
  CHECK(run_conv(&p, &b, 24 * 12 * 48, 24 * 12 * 48, 2) == 0, " the small conv started a worker");
  conv_desc(&b, 64, 40, 40, 64, 3, 1, wt);
  CHECK(run_conv(&p, &b, 64 * 40 * 40, 64 * 40 * 40, 2) == 1, " the large conv started no worker");
  tb_unload(&p);
}

/* A binary op whose dims merge into one long row splits over the threads in pieces of the row:
 * [1, 409600] * [1, 409600] ran as one item on the calling thread (M-LSD's input scaling). */
static void long_row_splits(void) {
  mi_knob_value_t knob = {"threads", 2, 0};
  int64_t n = 409600;
  float *a = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
  const float *ins[2];
  mi_error_t err = {0, ""};
  tb_plugin_t p;
  tb_t b;
  int before;
  REQUIRE(a && y);
  if (!tb_load(&p)) TU_SKIP("blis-cpu not built");
  tb_fill(a, n, 5);
  ins[0] = ins[1] = a;
  mul_desc(&b, n);
  before = threads_now();
  CHECK(tb_run(&p, &b, NULL, &knob, 1, ins, y, &err) == MI_OK, " run: %s", err.message);
  CHECK(threads_now() - before == 1, " the long-row Mul started no worker");
  CHECK(y[n - 1] == a[n - 1] * a[n - 1] && y[0] == a[0] * a[0], " wrong product");
  tb_unload(&p);
  free(a);
  free(y);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(estimate),
    TU_CASE(no_worker_for_small),
    TU_CASE(long_row_splits),
};

TU_MAIN(NULL, NULL)
