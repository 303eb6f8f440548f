/* blis_split.h - even splits of a kernel's rows into blocks for the thread pool (blis_split.c). */
#ifndef MI_BLIS_SPLIT_H
#define MI_BLIS_SPLIT_H

#include <stdint.h>

/* The first of n rows that block i of b takes, for `parts` threads: the blocks come in the
 * chunks the pool hands out (MI__PAR_CHUNKS a part, one block each where b <= MI__PAR_CHUNKS *
 * parts), the chunks' rows as equal as they can be (n / chunks or one more, the larger ones
 * first, so that the pool's claim-as-you-go order hands them out first), and so are the rows of
 * the blocks within a chunk. */
int64_t mi__blis_split_start(int64_t n, int64_t b, int64_t parts, int64_t i);

/* conv.winograd's blocks of tile rows for th x tw tiles of C -> M channels: a multiple of
 * `parts` blocks (the threads that may share them; fewer only where there are fewer tile rows),
 * sized by mi__blis_split_start.
 * lanes: the GEMM tiles' pixel lanes (32 with AVX-512) the blocks' tiles should fill best, with
 * at most max_floats of scratch per block; 0: the fewest blocks of at most max_tiles tiles. */
int64_t mi__blis_wino_blocks(int64_t th, int64_t tw, int64_t C, int64_t M, int64_t parts, int64_t lanes,
                             int64_t max_floats, int64_t max_tiles);

#endif
