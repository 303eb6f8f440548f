/* test_blis_split.c - the blis-cpu plugin's even splits (blis_split.c, built into this test):
 * conv.winograd's tile-row blocks cover every row once and stay within the scratch bound; by the
 * pool's claim order (each thread its home range of chunks first), simulated, the longest thread share (in vectors of tiles) is never
 * longer than the old rule's and within a block of an even split; with AVX2 the blocks come in a
 * multiple of the threads and each of N equally fast threads gets the same rows within one in its
 * own range; the
 * fused depthwise + pointwise pass's bands split evenly over the threads. */
#include "test_util.h"

#include "../../plugins/blis_cpu/blis_split.c"

#define WB_FLOATS 393216 /* blis_wino.c's scratch bound and tile bound */
#define WB_TILES 64

/* How much the rows of `threads` threads differ when each runs the chunks of blocks of its home
 * range (the pool's: MI__PAR_CHUNKS a thread, by mi__blis_chunk_start), a block costing its rows. */
static int64_t spread(int64_t th, int64_t nb, int32_t threads) {
  int64_t load[16] = {0}, chunks = nb < MI__PAR_CHUNKS * threads ? nb : MI__PAR_CHUNKS * threads, lo, hi, k;
  int32_t i;
  for (i = 0; i < threads; i++) {
    int64_t c0 = mi__blis_even_start(chunks, threads, i), c1 = mi__blis_even_start(chunks, threads, i + 1);
    int64_t b = mi__blis_chunk_start(nb, chunks, threads, c0), e = mi__blis_chunk_start(nb, chunks, threads, c1);
    for (k = b; k < e; k++) load[i] += mi__blis_split_start(th, nb, threads, k + 1) - mi__blis_split_start(th, nb, threads, k);
  }
  for (lo = hi = load[0], i = 1; i < threads; i++) {
    if (load[i] < lo) lo = load[i];
    if (load[i] > hi) hi = load[i];
  }
  return hi - lo;
}

/* The rows of the largest block. */
static int64_t largest(int64_t th, int64_t nb, int64_t parts, int64_t fixed) {
  int64_t i, big = 0;
  for (i = 0; i < nb; i++) {
    int64_t r = mi__blis_wino_start(th, nb, parts, fixed, i + 1) - mi__blis_wino_start(th, nb, parts, fixed, i);
    if (r > big) big = r;
  }
  return big;
}

/* Blocks cover [0, th) in order, none empty. */
static void check_blocks(const char *what, int64_t th, int64_t nb, int64_t parts, int64_t fixed) {
  int64_t i;
  CHECK(mi__blis_wino_start(th, nb, parts, fixed, 0) == 0 && mi__blis_wino_start(th, nb, parts, fixed, nb) == th,
        " %s: cover", what);
  for (i = 0; i < nb; i++)
    CHECK(mi__blis_wino_start(th, nb, parts, fixed, i + 1) > mi__blis_wino_start(th, nb, parts, fixed, i),
          " %s: block %lld empty", what, (long long)i);
}

/* The blocks' costs in vectors of `lanes` tiles. */
static int64_t costs(int64_t th, int64_t tw, int64_t nb, int64_t parts, int64_t fixed, int64_t lanes,
                     int64_t *cost) {
  int64_t i, all = 0;
  for (i = 0; i < nb; i++) {
    int64_t r = mi__blis_wino_start(th, nb, parts, fixed, i + 1) - mi__blis_wino_start(th, nb, parts, fixed, i);
    cost[i] = (r * tw + lanes - 1) / lanes;
    all += cost[i];
  }
  return all;
}

/* The longest thread share of the rule before 2026-12-03: r rows a block (the last fewer), r the
 * count whose block fills 32 lanes best within the scratch bound, ties to the larger, at least
 * two blocks. */
static int64_t old_longest(int64_t th, int64_t tw, int64_t C, int64_t M, int64_t parts) {
  int64_t r, rows = 1, rmax = th > 1 ? (th + 1) / 2 : 1, maxt = WB_FLOATS / (36 * (C + M)), nb, i, cost[1024];
  double best = -1.;
  for (r = 1; r <= rmax && (r == 1 || r * tw <= maxt); r++) {
    double u = (double)(r * tw) / (double)((r * tw + 31) / 32 * 32);
    if (u >= best) {
      best = u;
      rows = r;
    }
  }
  nb = (th + rows - 1) / rows;
  for (i = 0; i < nb; i++) cost[i] = ((i + 1 < nb ? rows : th - i * rows) * tw + 15) / 16;
  return mi__blis_split_longest(cost, nb, parts);
}

static void wino_shapes(void) {
  /* tile rows, tile columns, C, M: M-LSD's 64->64 on 80x80 and 128->128 on 40x40, 16->16 on
   * 160x160, 96->24 on 80x80, a 70x66 plane, a one-row plane */
  static const int64_t shapes[][4] = {{20, 20, 64, 64}, {10, 10, 128, 128}, {10, 10, 128, 64}, {40, 40, 16, 16}, {20, 20, 96, 24}, {18, 17, 9, 18}, {1, 3, 3, 4}};
  int32_t s, parts, lanes;
  for (s = 0; s < (int32_t)(sizeof shapes / sizeof shapes[0]); s++)
    for (parts = 1; parts <= 4; parts++)
      for (lanes = 0; lanes <= 16; lanes += 16) {
        const int64_t *g = shapes[s];
        int64_t fixed, nb = mi__blis_wino_blocks(g[0], g[1], g[2], g[3], parts, lanes, WB_FLOATS, WB_TILES, &fixed), big;
        char what[96];
        snprintf(what, sizeof what, "%lldx%lld tiles %lld->%lld, %d threads, %d lanes", (long long)g[0],
                 (long long)g[1], (long long)g[2], (long long)g[3], parts, lanes);
        CHECK(nb >= 1 && nb <= g[0], " %s: %lld blocks", what, (long long)nb);
        if (nb < 1 || nb > g[0]) continue;
        check_blocks(what, g[0], nb, parts, fixed);
        big = largest(g[0], nb, parts, fixed);
        if (lanes) {
          int64_t cost[64], all = costs(g[0], g[1], nb, parts, fixed, 16, cost), top = mi__blis_split_longest(cost, nb, parts);
          CHECK(big * g[1] * 36 * (g[2] + g[3]) <= WB_FLOATS || big == 1, " %s: a block's scratch over the bound",
                what);
          /* never a longer thread share than the old rule's, and within a block of an even split */
          CHECK(top <= old_longest(g[0], g[1], g[2], g[3], parts), " %s: %lld blocks, longest share %lld vectors",
                what, (long long)nb, (long long)top);
          CHECK(top * parts <= all + (parts - 1) * (g[1] * big + 15) / 16, " %s: longest share %lld of %lld", what,
                (long long)top, (long long)all);
        } else if (g[0] >= parts) {
          CHECK(fixed == 0, " %s: fixed rows", what);
          CHECK(nb % parts == 0, " %s: %lld blocks, not a multiple of the threads", what, (long long)nb);
          CHECK(spread(g[0], nb, parts) <= 1, " %s: %lld blocks, the threads' rows differ by %lld", what,
                (long long)nb, (long long)spread(g[0], nb, parts));
          if (nb != g[0] / parts * parts)
            CHECK(big * g[1] <= WB_TILES || big == 1, " %s: blocks over %d tiles", what, WB_TILES);
        }
      }
}

/* M-LSD's convs on two threads. 80x80 (20 tile rows of 20 tiles): 6 blocks of 4,4,3,3,3,3 rows,
 * 5+4+4 vectors of 16 tiles a thread; the 7 blocks of 3 rows (the last 2) before ran 4:3, 12+3
 * vectors against 12. 40x40 128 -> 128: 3,3,3,1 rows as before (2+2 : 2+1 vectors; 4,3,3 takes
 * as long and larger blocks). */
static void mlsd(void) {
  int64_t cost[64], fixed, nb = mi__blis_wino_blocks(20, 20, 64, 64, 2, 16, WB_FLOATS, WB_TILES, &fixed), all;
  CHECK(nb == 6 && fixed == 0, " 80x80: %lld blocks, fixed %lld", (long long)nb, (long long)fixed);
  all = costs(20, 20, nb, 2, fixed, 16, cost);
  CHECK(mi__blis_split_longest(cost, nb, 2) * 2 == all, " 80x80: shares differ");
  CHECK(old_longest(20, 20, 64, 64, 2) == 15 && mi__blis_split_longest(cost, nb, 2) == 13, " 80x80: 15 -> 13 vectors");
  nb = mi__blis_wino_blocks(10, 10, 128, 128, 2, 16, WB_FLOATS, WB_TILES, &fixed);
  CHECK(nb == 4 && fixed == 3, " 40x40: %lld blocks, fixed %lld", (long long)nb, (long long)fixed);
  nb = mi__blis_wino_blocks(20, 20, 64, 64, 2, 0, WB_FLOATS, WB_TILES, &fixed);
  CHECK(nb == 8 && fixed == 0 && spread(20, nb, 2) == 0, " AVX2: %lld blocks", (long long)nb);
}

/* The longest thread's rows when bands of `rows` (the last fewer) of n rows in `images` images go
 * to `parts` threads in the pool's claim order. */
static int64_t band_longest(int64_t n, int64_t images, int64_t rows, int64_t parts) {
  int64_t cost[MI__SPLIT_BLOCKS_MAX], bands = (n + rows - 1) / rows, i;
  for (i = 0; i < images * bands; i++) cost[i] = i % bands < bands - 1 ? rows : n - (bands - 1) * rows;
  return mi__blis_split_longest(cost, images * bands, parts);
}

/* The fused depthwise + pointwise bands (blis_dwpw.c): on one thread the rule before (the most
 * rows a band holds, in blocks of 4 over 4); on more, never more rows than that rule and never a
 * longer thread share, within a band of an even split where a band of 4 rows or more allows it;
 * M-LSD's planes on two threads: 40 rows of at most 8 a band 5:5 bands of 4 (was 3:2 of 8), 20
 * of at most 6 2:2 of 5 (was 3:2 of 4), 20 of at most 12 1:1 of 10 (was 12:8). */
static void dwpw_bands(void) {
  int64_t n, mx, parts, images;
  for (images = 1; images <= 2; images++)
    for (n = 1; n <= 160; n++)
      for (mx = 1; mx <= 24; mx++) {
        int64_t old = mx > 4 ? mx & ~(int64_t)3 : mx;
        CHECK(mi__blis_band_rows(n, images, mx, 1) == old, " n %lld max %lld: one thread %lld rows", (long long)n,
              (long long)mx, (long long)mi__blis_band_rows(n, images, mx, 1));
        for (parts = 2; parts <= 4; parts++) {
          int64_t r = mi__blis_band_rows(n, images, mx, parts), top = band_longest(n, images, r, parts);
          int64_t even = (images * n + parts - 1) / parts;
          CHECK(r >= 1 && r <= mx, " n %lld max %lld parts %lld: %lld rows", (long long)n, (long long)mx,
                (long long)parts, (long long)r);
          CHECK(top <= band_longest(n, images, old, parts), " n %lld max %lld parts %lld: longer than before",
                (long long)n, (long long)mx, (long long)parts);
          if (mx >= 4 && n >= 4 * parts && images == 1)
            CHECK(top <= even + 3, " n %lld max %lld parts %lld: %lld rows, longest %lld of %lld", (long long)n,
                  (long long)mx, (long long)parts, (long long)r, (long long)top, (long long)even);
        }
      }
  CHECK(mi__blis_band_rows(40, 1, 8, 2) == 4 && band_longest(40, 1, 4, 2) == 20, " 40 rows");
  CHECK(mi__blis_band_rows(20, 1, 6, 2) == 5 && band_longest(20, 1, 5, 2) == 10, " 20 rows, 6 a band");
  CHECK(mi__blis_band_rows(20, 1, 12, 2) == 10, " 20 rows, 12 a band");
  CHECK(mi__blis_band_rows(80, 1, 6, 2) == 4, " 80 rows: as before");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(wino_shapes),
    TU_CASE(mlsd),
    TU_CASE(dwpw_bands),
};

TU_MAIN(NULL, NULL)
