/* blis_split.c - even splits of a kernel's rows into blocks, so that N threads finish together. */
#include "blis_split.h"

#include "blis_internal.h"

/* The pool's chunks (blis_threads.c) take blocks, and its parts their home ranges of chunks, by
 * mi__blis_chunk_start; the rows are split over the chunks by the same rule and each chunk's rows
 * evenly over its blocks, so whatever the blocks, each thread claims chunks of the same rows
 * within one, in its own range (and no block is empty where there are no more blocks than rows). */
int64_t mi__blis_split_start(int64_t n, int64_t b, int64_t parts, int64_t i) {
  int64_t chunks = b < MI__PAR_CHUNKS * parts ? b : MI__PAR_CHUNKS * parts, g = 0, b0, r0;
  /* the pool runs no more parts than items (mi__blis_par_parts), each its range */
  int64_t ranges = parts < b ? parts : b;
  if (ranges > MI__POOL_RANGES) ranges = MI__POOL_RANGES;
  if (i >= b) return n;
  if (parts <= 1) return mi__blis_even_start(n, b, i);             /* one thread runs them all */
  while (mi__blis_chunk_start(b, chunks, ranges, g + 1) <= i) g++; /* the chunk of block i */
  b0 = mi__blis_chunk_start(b, chunks, ranges, g);
  r0 = mi__blis_chunk_start(n, chunks, ranges, g);
  return r0 + mi__blis_even_start(mi__blis_chunk_start(n, chunks, ranges, g + 1) - r0,
                                  mi__blis_chunk_start(b, chunks, ranges, g + 1) - b0, i - b0);
}

/* The longest thread's share of the blocks' costs (cost[i]: block i's) when the pool's chunks
 * (MI__PAR_CHUNKS a part, by mi__blis_chunk_start) are claimed as blis_threads.c does: whichever of
 * `parts` threads is free first takes the next chunk of its home range, else of the ranges after. */
int64_t mi__blis_split_longest(const int64_t *cost, int64_t nb, int64_t parts) {
  int64_t load[MI__SPLIT_PARTS_MAX] = {0}, next[MI__POOL_RANGES], chunks, ranges, k, i, top = 0, p;
  unsigned char done[MI__SPLIT_PARTS_MAX] = {0};
  if (parts > MI__SPLIT_PARTS_MAX) parts = MI__SPLIT_PARTS_MAX;
  if (parts > nb) parts = nb; /* the pool runs no more parts than items */
  if (parts < 1) parts = 1;
  chunks = nb < MI__PAR_CHUNKS * parts ? nb : MI__PAR_CHUNKS * parts;
  ranges = parts < MI__POOL_RANGES ? parts : MI__POOL_RANGES;
  for (k = 0; k < ranges; k++) next[k] = mi__blis_even_start(chunks, ranges, k);
  for (;;) {
    int64_t t = -1, g = -1, j;
    for (p = 0; p < parts; p++)
      if (!done[p] && (t < 0 || load[p] < load[t])) t = p;
    if (t < 0) break;
    for (j = 0; j < ranges && g < 0; j++) {
      int64_t rr = (t % ranges + j) % ranges;
      if (next[rr] < mi__blis_even_start(chunks, ranges, rr + 1)) g = next[rr]++;
    }
    if (g < 0) {
      done[t] = 1;
      continue;
    }
    for (i = mi__blis_chunk_start(nb, chunks, ranges, g); i < mi__blis_chunk_start(nb, chunks, ranges, g + 1); i++)
      load[t] += cost[i];
    if (load[t] > top) top = load[t];
  }
  return top;
}

/* Why: M-LSD's 40-row and 20-row planes took 8- and 4-row bands (the most their 144- and
 * 384-channel bands hold, in blocks of 4), 5 bands a plane, 3:2 on two threads; now 4-row bands
 * (10, 5:5) and 5-row bands (4, 2:2), and its 192-channel 20-row plane 10 rows (2, 1:1) for 12
 * (12 and 8 rows). */
int64_t mi__blis_band_rows(int64_t n, int64_t images, int64_t max_rows, int64_t parts) {
  int64_t cost[MI__SPLIT_BLOCKS_MAX], r, best = 0, best_top = 0, best_nb = 0, rows = max_rows > 4 ? max_rows & ~(int64_t)3 : max_rows;
  if (parts <= 1 || n <= 0 || images <= 0) return rows;
  if (parts > MI__SPLIT_PARTS_MAX) parts = MI__SPLIT_PARTS_MAX;
  for (r = max_rows < 4 ? max_rows : 4; r <= max_rows && r <= n; r++) {
    int64_t bands = (n + r - 1) / r, nb = images * bands, i, top;
    if (nb > MI__SPLIT_BLOCKS_MAX) continue;
    for (i = 0; i < nb; i++) cost[i] = i % bands < bands - 1 ? r : n - (bands - 1) * r;
    top = mi__blis_split_longest(cost, nb, parts);
    if (!best || top < best_top ||
        (top == best_top && ((r % 4 == 0) > (best % 4 == 0) || ((r % 4 == 0) == (best % 4 == 0) && nb < best_nb)))) {
      best = r;
      best_top = top;
      best_nb = nb;
    }
  }
  return best ? best : rows;
}

/* Block i's first row: `fixed` rows a block (the last fewer) where fixed > 0, else
 * mi__blis_split_start's. */
int64_t mi__blis_wino_start(int64_t th, int64_t nb, int64_t parts, int64_t fixed, int64_t i) {
  if (fixed > 0) return i * fixed < th ? i * fixed : th;
  return mi__blis_split_start(th, nb, parts, i);
}

/* Why the longest share in vectors: the pool hands out blocks as threads ask, so M-LSD's 80x80
 * convs (20 tile rows) in 7 blocks of 3 rows (the last 2) ran 4:3 on two threads; and a block's
 * cost goes by the 16-lane vectors its tiles fill, not by its rows (40x40 on two threads: 3,3,2,2
 * rows, 2+2 : 2+2 vectors, ran no shorter than 3,3,3,1, 2+2 : 2+1). Why then the smaller blocks:
 * 4,3,3 rows (3 : 2+2) ran 3-5% slower than 3,3,3,1 at 1 thread and up to 25% at 2
 * (bench_blis_conv, 2026-12-03; a late second thread leaves the first two of three blocks). */
int64_t mi__blis_wino_blocks(int64_t th, int64_t tw, int64_t C, int64_t M, int64_t parts, int64_t lanes,
                             int64_t max_floats, int64_t max_tiles, int64_t *fixed) {
  int64_t nb, f, best_nb = 0, best_f = 0, best_top = 0, best_all = 0, best_big = 0, best_over = 0, last = 1;
  int64_t cost[MI__SPLIT_BLOCKS_MAX];
  *fixed = 0;
  if (th <= 1) return 1;
  if (parts < 1) parts = 1;
  if (parts > th) parts = th;
  if (parts > MI__SPLIT_PARTS_MAX) parts = MI__SPLIT_PARTS_MAX;
  if (lanes <= 0) { /* the fewest blocks of at most max_tiles tiles, a multiple of the parts */
    for (nb = parts; nb <= th; nb += parts) {
      int64_t i, big = 0;
      last = nb;
      for (i = 0; i < nb; i++) {
        int64_t r = mi__blis_split_start(th, nb, parts, i + 1) - mi__blis_split_start(th, nb, parts, i);
        if (r > big) big = r;
      }
      if (big * tw <= max_tiles || big == 1) return nb;
    }
    return last;
  }
  /* even splits (f = 0) of every count and blocks of f rows (the last fewer, the rule before
   * 2026-12-03): no more blocks than the pool's chunks where that can be (more only add per-block
   * work: 16 -> 16 on 160x160 in 20 blocks of 2 rows ran 10% slower at 1 thread than in 5 blocks of 8),
   * then the one whose longest thread share takes the fewest vectors of `lanes` tiles, then the
   * fewest in all, then the smallest largest block, while a block's V and Mo take at most
   * max_floats (any where even one-row blocks are too large) */
  for (f = 0; f <= th; f++)
    for (nb = f ? (th + f - 1) / f : 1; nb <= (f ? (th + f - 1) / f : th) && nb <= MI__SPLIT_BLOCKS_MAX; nb++) {
      int64_t i, big = 0, all = 0, top, over = nb > MI__PAR_CHUNKS * parts;
      for (i = 0; i < nb; i++) {
        int64_t r = mi__blis_wino_start(th, nb, parts, f, i + 1) - mi__blis_wino_start(th, nb, parts, f, i);
        if (r > big) big = r;
        cost[i] = (r * tw + lanes - 1) / lanes;
        all += cost[i];
      }
      if (!f) last = nb;
      if (big * tw * 36 * (C + M) > max_floats && big > 1) continue;
      top = mi__blis_split_longest(cost, nb, parts);
      if (!best_nb || over < best_over ||
          (over == best_over &&
           (top < best_top || (top == best_top && (all < best_all || (all == best_all && big < best_big)))))) {
        best_over = over;
        best_nb = nb;
        best_f = f;
        best_top = top;
        best_all = all;
        best_big = big;
      }
    }
  *fixed = best_nb > 0 ? best_f : 0;
  return best_nb > 0 ? best_nb : last; /* else the smallest blocks */
}
