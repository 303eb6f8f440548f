/* blis_split.c - even splits of a kernel's rows into blocks, so that N threads finish together. */
#include "blis_split.h"

#include "blis_internal.h"

/* The pool's chunks (blis_threads.c) take blocks by mi__blis_even_start; each chunk's rows are
 * the rows' even split over the chunks, shared by its blocks the same way, so whatever the
 * blocks, each thread claims chunks of the same rows within one. */
int64_t mi__blis_split_start(int64_t n, int64_t b, int64_t parts, int64_t i) {
  int64_t chunks = b < MI__PAR_CHUNKS * parts ? b : MI__PAR_CHUNKS * parts, q = b / chunks, r = b % chunks, g, g0;
  if (i >= b) return n;
  g = i < r * (q + 1) ? i / (q + 1) : r + (i - r * (q + 1)) / q; /* the chunk of block i */
  g0 = mi__blis_even_start(n, chunks, g);
  return g0 + mi__blis_even_start(mi__blis_even_start(n, chunks, g + 1) - g0,
                                  mi__blis_even_start(b, chunks, g + 1) - mi__blis_even_start(b, chunks, g),
                                  i - mi__blis_even_start(b, chunks, g));
}

/* Tiles a block of `rows` tile rows fills in GEMM tiles of `lanes` pixels. */
static int64_t padded(int64_t rows, int64_t tw, int64_t lanes) {
  return (rows * tw + lanes - 1) / lanes * lanes;
}

/* Why a multiple of the parts: the pool hands out blocks as threads ask, so 7 equal blocks on two
 * threads run 4:3 (M-LSD's 80x80 convs: 20 tile rows in blocks of 3); 6 blocks of 4 and 3 rows,
 * largest first, run 10:10 rows. */
int64_t mi__blis_wino_blocks(int64_t th, int64_t tw, int64_t C, int64_t M, int64_t parts, int64_t lanes,
                             int64_t max_floats, int64_t max_tiles) {
  int64_t nb, best_nb = 0, last = 1;
  double best = -1.;
  if (th <= 1) return 1;
  if (parts < 1) parts = 1;
  if (parts > th) parts = th;
  for (nb = parts; nb <= th; nb += parts) {
    int64_t i, big = 0, pad = 0;
    last = nb;
    for (i = 0; i < nb; i++) {
      int64_t r = mi__blis_split_start(th, nb, parts, i + 1) - mi__blis_split_start(th, nb, parts, i);
      if (r > big) big = r;
      pad += lanes > 0 ? padded(r, tw, lanes) : 0;
    }
    if (lanes > 0) {
      /* the count whose tiles fill the lanes best while V and Mo take at most max_floats (any
       * count where even one-row blocks are too large), ties to the smaller blocks (128 -> 64 on
       * 40x40 planned for two threads, AVX-512, 1 thread: 2 blocks of 50 tiles 0.91-0.94 ms,
       * 3,3,2,2 rows 0.81-0.84, the unbalanced 3,3,3,1 before 0.77-0.79; bench_blis_conv, min
       * process CPU time, 2026-12-03) */
      double u = (double)(th * tw) / (double)pad;
      if (big * tw * 36 * (C + M) > max_floats && big > 1) continue;
      if (u >= best) {
        best = u;
        best_nb = nb;
      }
    } else if (big * tw <= max_tiles || big == 1) {
      return nb;
    }
  }
  return best_nb > 0 ? best_nb : last; /* else the smallest blocks */
}
