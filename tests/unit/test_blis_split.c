/* test_blis_split.c - the blis-cpu plugin's even splits (blis_split.c, built into this test):
 * conv.winograd's tile-row blocks cover every row once, come in a multiple of the threads, and
 * the pool's claim-as-you-go order hands each of N equally fast threads the same rows within one. */
#include "test_util.h"

#include "../../plugins/blis_cpu/blis_split.c"

#define WB_FLOATS 393216 /* blis_wino.c's scratch bound and tile bound */
#define WB_TILES 64

/* How much the rows of `threads` threads differ when the pool hands out its chunks of blocks
 * (MI__PAR_CHUNKS a thread, by mi__blis_even_start) to whichever thread is free first, a block
 * costing its rows. */
static int64_t spread(int64_t th, int64_t nb, int32_t threads) {
  int64_t load[16] = {0}, chunks = nb < MI__PAR_CHUNKS * threads ? nb : MI__PAR_CHUNKS * threads, k, lo, hi;
  int32_t i, t;
  for (k = 0; k < chunks; k++) {
    int64_t b = mi__blis_even_start(nb, chunks, k), e = mi__blis_even_start(nb, chunks, k + 1);
    for (t = 0, i = 1; i < threads; i++)
      if (load[i] < load[t]) t = i;
    load[t] += mi__blis_split_start(th, nb, threads, e) - mi__blis_split_start(th, nb, threads, b);
  }
  for (lo = hi = load[0], i = 1; i < threads; i++) {
    if (load[i] < lo) lo = load[i];
    if (load[i] > hi) hi = load[i];
  }
  return hi - lo;
}

/* The rows of the largest block. */
static int64_t largest(int64_t th, int64_t nb, int64_t parts) {
  int64_t i, big = 0;
  for (i = 0; i < nb; i++) {
    int64_t r = mi__blis_split_start(th, nb, parts, i + 1) - mi__blis_split_start(th, nb, parts, i);
    if (r > big) big = r;
  }
  return big;
}

/* Blocks cover [0, th) in order, none empty. */
static void check_blocks(const char *what, int64_t th, int64_t nb, int64_t parts) {
  int64_t i;
  CHECK(mi__blis_split_start(th, nb, parts, 0) == 0 && mi__blis_split_start(th, nb, parts, nb) == th, " %s: cover",
        what);
  for (i = 0; i < nb; i++)
    CHECK(mi__blis_split_start(th, nb, parts, i + 1) > mi__blis_split_start(th, nb, parts, i),
          " %s: block %lld empty", what, (long long)i);
}

static void wino_shapes(void) {
  /* tile rows, tile columns, C, M: M-LSD's 64->64 on 80x80 and 128->128 on 40x40, 16->16 on
   * 160x160, 96->24 on 80x80, a 70x66 plane, a one-row plane */
  static const int64_t shapes[][4] = {{20, 20, 64, 64}, {10, 10, 128, 128}, {40, 40, 16, 16}, {20, 20, 96, 24}, {18, 17, 9, 18}, {1, 3, 3, 4}};
  int32_t s, parts, lanes;
  for (s = 0; s < (int32_t)(sizeof shapes / sizeof shapes[0]); s++)
    for (parts = 1; parts <= 4; parts++)
      for (lanes = 0; lanes <= 32; lanes += 32) {
        const int64_t *g = shapes[s];
        int64_t nb = mi__blis_wino_blocks(g[0], g[1], g[2], g[3], parts, lanes, WB_FLOATS, WB_TILES);
        char what[96];
        snprintf(what, sizeof what, "%lldx%lld tiles %lld->%lld, %d threads, %d lanes", (long long)g[0],
                 (long long)g[1], (long long)g[2], (long long)g[3], parts, lanes);
        CHECK(nb >= 1 && nb <= g[0], " %s: %lld blocks", what, (long long)nb);
        if (nb < 1 || nb > g[0]) continue;
        check_blocks(what, g[0], nb, parts);
        if (g[0] >= parts) {
          CHECK(nb % parts == 0, " %s: %lld blocks, not a multiple of the threads", what, (long long)nb);
          CHECK(spread(g[0], nb, parts) <= 1, " %s: %lld blocks, the threads' rows differ by %lld", what,
                (long long)nb, (long long)spread(g[0], nb, parts));
        }
        /* within the bound, unless no multiple of the threads keeps every block within it: then
         * the most blocks */
        if (nb != g[0] / parts * parts) {
          int64_t big = largest(g[0], nb, parts);
          if (lanes)
            CHECK(big * g[1] * 36 * (g[2] + g[3]) <= WB_FLOATS || big == 1, " %s: a block's scratch over the bound",
                  what);
          else
            CHECK(big * g[1] <= WB_TILES || big == 1, " %s: blocks over %d tiles", what, WB_TILES);
        }
      }
}

/* M-LSD's 80x80 convs on two threads: 6 blocks of 4,4,3,3,3,3 rows (80- and 60-tile blocks fill
 * 32-pixel lanes to 89%), 10 rows a thread; 7 blocks of 3 ran 4:3. */
static void mlsd_80(void) {
  int64_t nb = mi__blis_wino_blocks(20, 20, 64, 64, 2, 32, WB_FLOATS, WB_TILES);
  CHECK(nb == 6, " %lld blocks", (long long)nb);
  CHECK(spread(20, nb, 2) == 0, " rows per thread differ by %lld", (long long)spread(20, nb, 2));
  CHECK(spread(20, 7, 2) > 1, " the old 7 blocks would pass");
  nb = mi__blis_wino_blocks(20, 20, 64, 64, 2, 0, WB_FLOATS, WB_TILES);
  CHECK(nb == 8 && spread(20, nb, 2) == 0, " AVX2: %lld blocks", (long long)nb);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(wino_shapes),
    TU_CASE(mlsd_80),
};

TU_MAIN(NULL, NULL)
