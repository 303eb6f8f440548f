/* blis_split.h - even splits of a kernel's rows into blocks for the thread pool (blis_split.c). */
#ifndef MI_BLIS_SPLIT_H
#define MI_BLIS_SPLIT_H

#include <stdint.h>

/* The first of n rows that block i of b takes, for `parts` threads: the blocks come in the
 * chunks the pool hands out (MI__PAR_CHUNKS a part, one block each where b <= MI__PAR_CHUNKS *
 * parts) from each part's home range, the rows as equal as they can be over the ranges, then over
 * each range's chunks (mi__blis_chunk_start: the larger ones first), and so are the rows of the
 * blocks within a chunk. */
int64_t mi__blis_split_start(int64_t n, int64_t b, int64_t parts, int64_t i);

#define MI__SPLIT_PARTS_MAX 256   /* threads a split plans for, at most */
#define MI__SPLIT_BLOCKS_MAX 1024 /* blocks conv.winograd considers, at most */

/* The longest thread's share of the blocks' costs when whichever of `parts` threads is free first
 * claims the next chunk of its home range, else of the ranges after it (the pool's claim order,
 * simulated). */
int64_t mi__blis_split_longest(const int64_t *cost, int64_t nb, int64_t parts);

/* Output rows a band of the fused depthwise + pointwise pass (blis_dwpw.c) takes, of n rows in
 * `images` images, at most max_rows (>= 1) a band: on one thread max_rows, in whole blocks of 4
 * (the depthwise row kernels') where over 4; on `parts` threads, from min(4, max_rows) up, the
 * rows whose bands (claimed as the pool hands out its chunks) give the longest thread the fewest
 * rows, then whole blocks of 4, then the fewest bands. */
int64_t mi__blis_band_rows(int64_t n, int64_t images, int64_t max_rows, int64_t parts);

/* conv.winograd's blocks of tile rows for th x tw tiles of C -> M channels, for `parts` threads,
 * bounded by mi__blis_wino_start. lanes (16 with AVX-512: a vector of the GEMM tiles' pixels):
 * among even splits and blocks of *fixed rows, no more blocks than the pool's chunks where that
 * can be, then the shortest longest thread share (mi__blis_split_longest) in vectors of tiles,
 * then the fewest in all, then the smallest largest block, with at most max_floats of scratch per
 * block; 0: the fewest blocks of at most max_tiles tiles, a multiple of `parts` (*fixed = 0). */
int64_t mi__blis_wino_blocks(int64_t th, int64_t tw, int64_t C, int64_t M, int64_t parts, int64_t lanes,
                             int64_t max_floats, int64_t max_tiles, int64_t *fixed);
/* Block i's first tile row: *fixed rows a block (the last fewer) where mi__blis_wino_blocks set
 * *fixed > 0, else mi__blis_split_start's. */
int64_t mi__blis_wino_start(int64_t th, int64_t nb, int64_t parts, int64_t fixed, int64_t i);

#endif
