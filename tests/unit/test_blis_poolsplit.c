/* test_blis_poolsplit.c - blis-cpu's pools split over (row block, plane) items (blis_pool.c): every
 * path (2x2 tiles, the separable max, the window loop, averages with and without the pads
 * counted; output heights under, at and over the eight row blocks) gives the same bits at 1 and 2
 * threads as a plain loop, and a MaxPool the size of oww-embedding's first (24 x 72x32), whose
 * window compares stayed under the pool's floor for a second part, now wakes the worker. */

#include <math.h>

#include "test_blis_util.h"

typedef struct pool_spec {
  const char *op;
  int64_t c, h, w, k, s, pad, include_pad;
} pool_spec_t;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t pad) { return (in + 2 * pad - k) / s + 1; }

static void pool_desc(tb_t *b, const pool_spec_t *q) {
  static int64_t ks[2], st[2], pads[4]; /* the attributes point at them: one description at a time */
  int64_t xd[4] = {1, q->c, q->h, q->w}, yd[4] = {1, q->c, out_dim(q->h, q->k, q->s, q->pad), out_dim(q->w, q->k, q->s, q->pad)};
  int in[1], y, node;
  ks[0] = ks[1] = q->k;
  st[0] = st[1] = q->s;
  pads[0] = pads[1] = pads[2] = pads[3] = q->pad;
  memset(b, 0, sizeof *b);
  in[0] = tb_tensor(b, 4, xd, NULL);
  y = tb_tensor(b, 4, yd, NULL);
  node = tb_node(b, q->op, 13, 1, in, y);
  tb_attr_is(b, node, "kernel_shape", 2, ks);
  tb_attr_is(b, node, "strides", 2, st);
  tb_attr_is(b, node, "pads", 4, pads);
  if (q->include_pad) tb_attr_i(b, node, "count_include_pad", 1);
  tb_finish(b, y);
}

/* The plain loop: each window in row-major order, as the plugin's loops take it. */
static void pool_plain(const pool_spec_t *q, const float *x, float *y) {
  int64_t oh_n = out_dim(q->h, q->k, q->s, q->pad), ow_n = out_dim(q->w, q->k, q->s, q->pad), c, oh, ow, i, j;
  int mx = strcmp(q->op, "MaxPool") == 0;
  for (c = 0; c < q->c; c++)
    for (oh = 0; oh < oh_n; oh++)
      for (ow = 0; ow < ow_n; ow++) {
        float acc = mx ? -INFINITY : 0.f;
        int64_t cnt = 0;
        for (i = 0; i < q->k; i++)
          for (j = 0; j < q->k; j++) {
            int64_t ih = oh * q->s - q->pad + i, iw = ow * q->s - q->pad + j;
            float v;
            if (ih < 0 || ih >= q->h || iw < 0 || iw >= q->w) continue;
            v = x[(c * q->h + ih) * q->w + iw];
            acc = mx ? (v > acc ? v : acc) : acc + v;
            cnt++;
          }
        if (!mx) acc /= (float)(q->include_pad ? q->k * q->k : cnt);
        y[(c * oh_n + oh) * ow_n + ow] = acc;
      }
}

/* Every pool path at 1 and 2 threads against the plain loop: max exactly, averages within
 * rounding of the divide (the plugin may multiply by the reciprocal). */
static void same_at_every_split(void) {
  static const pool_spec_t specs[] = {
      {"MaxPool", 24, 72, 32, 2, 2, 0, 0}, /* 2x2 tiles, 36 rows: 8 blocks of 4-5 */
      {"MaxPool", 16, 10, 12, 2, 2, 0, 0}, /* 5 output rows: a block each */
      {"MaxPool", 32, 41, 40, 3, 2, 1, 0}, /* the separable max, stride 2, padded */
      {"MaxPool", 20, 27, 30, 3, 1, 1, 0}, /* the separable max, stride 1 */
      {"AveragePool", 24, 40, 36, 3, 2, 1, 0},
      {"AveragePool", 24, 40, 36, 3, 1, 1, 1},
      {"AveragePool", 96, 16, 16, 2, 2, 0, 0},
  };
  tb_plugin_t p;
  if (!tb_load(&p)) TU_SKIP("blis-cpu not built");
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    const pool_spec_t *q = &specs[i];
    int64_t xn = q->c * q->h * q->w, yn = q->c * out_dim(q->h, q->k, q->s, q->pad) * out_dim(q->w, q->k, q->s, q->pad);
    float *x = malloc((size_t)xn * 4), *want = malloc((size_t)yn * 4), *got = malloc((size_t)yn * 4);
    const float *ins[1] = {x};
    tb_t b;
    REQUIRE(x && want && got);
    tb_fill(x, xn, 11 + (unsigned)i);
    pool_plain(q, x, want);
    pool_desc(&b, q);
    for (int64_t t = 1; t <= 2; t++) {
      mi_knob_value_t knob = {"threads", t, 0};
      mi_error_t err = {0, ""};
      double num = 0, den = 0;
      CHECK(tb_run(&p, &b, NULL, &knob, 1, ins, got, &err) == MI_OK, " run: %s", err.message);
      for (int64_t j = 0; j < yn; j++) {
        num += ((double)got[j] - want[j]) * ((double)got[j] - want[j]);
        den += (double)want[j] * want[j];
      }
      if (!strcmp(q->op, "MaxPool"))
        CHECK(memcmp(got, want, (size_t)yn * 4) == 0, " %s %lldx%lld k%lld s%lld t%lld: not the plain loop's bits", q->op,
              (long long)q->h, (long long)q->w, (long long)q->k, (long long)q->s, (long long)t);
      else
        CHECK(sqrt(num / den) < 1e-6, " %s %lldx%lld k%lld s%lld t%lld: rel L2 %.3e", q->op, (long long)q->h,
              (long long)q->w, (long long)q->k, (long long)q->s, (long long)t, sqrt(num / den));
    }
    free(x);
    free(want);
    free(got);
  }
  tb_unload(&p);
}

/* oww-embedding's first MaxPool (24 x 72x32 -> 36x16, 55 k window compares) ran on the calling
 * thread alone at threads=2: counted in elements read and written (69 k) it is two parts. */
static void first_pool_splits(void) {
  static const pool_spec_t q = {"MaxPool", 24, 72, 32, 2, 2, 0, 0};
  mi_knob_value_t knob = {"threads", 2, 0}, one = {"threads", 1, 0};
  mi_error_t err = {0, ""};
  tb_plugin_t p;
  tb_t b;
  float *x = malloc(24 * 72 * 32 * 4), *y = malloc(24 * 36 * 16 * 4);
  const float *ins[1] = {x};
  int before;
  REQUIRE(x && y);
  if (!tb_load(&p)) TU_SKIP("blis-cpu not built");
  /* the device's threads 1, so that the input's upload (221 kB) stays on this thread; the kernel's 2 */
  CHECK(p.api->set_device_knobs(p.ctx, 0, &one, 1, &err) == MI_OK, " threads=1: %s", err.message);
  tb_fill(x, 24 * 72 * 32, 3);
  pool_desc(&b, &q);
  before = threads_now();
  CHECK(tb_run(&p, &b, NULL, &knob, 1, ins, y, &err) == MI_OK, " run: %s", err.message);
  CHECK(threads_now() - before == 1, " the MaxPool started no worker");
  tb_unload(&p);
  free(x);
  free(y);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(same_at_every_split),
    TU_CASE(first_pool_splits),
};

TU_MAIN(NULL, NULL)
