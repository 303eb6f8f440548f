/* blis_split.c - even splits of a kernel's rows into blocks, so that N threads finish together. */
#include "blis_split.h"

#include "blis_internal.h"

static int64_t even_start(int64_t n, int64_t b, int64_t i) {
  int64_t q = n / b, r = n % b;
  return i * q + (i < r ? i : r);
}

int64_t mi__blis_split_start(int64_t n, int64_t b, int64_t parts, int64_t i) {
  int64_t per = (b + MI__PAR_CHUNKS * parts - 1) / (MI__PAR_CHUNKS * parts); /* blocks a chunk */
  int64_t chunks = (b + per - 1) / per, g = i / per, in = i % per, g0, g1, gb;
  if (i >= b) return n;
  g0 = even_start(n, chunks, g);
  g1 = even_start(n, chunks, g + 1);
  gb = g + 1 < chunks ? per : b - g * per;
  return g0 + even_start(g1 - g0, gb, in);
}

/* Tiles a block of `rows` tile rows fills in GEMM tiles of `lanes` pixels. */
static int64_t padded(int64_t rows, int64_t tw, int64_t lanes) {
  return (rows * tw + lanes - 1) / lanes * lanes;
}

/* Why a multiple of the parts: the pool hands out blocks as threads ask, so 7 equal blocks on two
 * threads run 4:3 (M-LSD's 80x80 convs: 20 tile rows in blocks of 3); 6 blocks of 4 and 3 rows,
 * largest first, run 10:10 rows. Past MI__PAR_CHUNKS blocks a part the pool claims several at a
 * time: a multiple of that many keeps the chunks' count a multiple of the parts. */
int64_t mi__blis_wino_blocks(int64_t th, int64_t tw, int64_t C, int64_t M, int64_t parts, int64_t lanes,
                             int64_t max_floats, int64_t max_tiles) {
  int64_t nb, best_nb = 0, last = 1;
  double best = -1.;
  if (th <= 1) return 1;
  if (parts < 1) parts = 1;
  if (parts > th) parts = th;
  for (nb = parts; nb <= th; nb += parts) {
    int64_t i, big = 0, pad = 0;
    if (nb > MI__PAR_CHUNKS * parts && nb % (MI__PAR_CHUNKS * parts)) continue;
    last = nb;
    for (i = 0; i < nb; i++) {
      int64_t r = mi__blis_split_start(th, nb, parts, i + 1) - mi__blis_split_start(th, nb, parts, i);
      if (r > big) big = r;
      pad += lanes > 0 ? padded(r, tw, lanes) : 0;
    }
    if (lanes > 0) {
      /* the count whose tiles fill the lanes best while V and Mo take at most max_floats (any
       * count where even one-row blocks are too large), ties to the larger blocks */
      double u = (double)(th * tw) / (double)pad;
      if (big * tw * 36 * (C + M) > max_floats && big > 1) continue;
      if (u > best) {
        best = u;
        best_nb = nb;
      }
    } else if (big * tw <= max_tiles || big == 1) {
      return nb;
    }
  }
  return best_nb > 0 ? best_nb : last; /* else the smallest blocks */
}
