/* zoo_bench.h - what the blis-cpu zoo benchmarks (bench_blis_zoo, prof_blis_zoo, bench_blis_q4)
 * share: sorting their timings and the fused graph they run. */
#ifndef MI_ZOO_BENCH_H
#define MI_ZOO_BENCH_H

#include "metainfer/mi.h"

/** qsort comparison of doubles, ascending. */
int zb_cmp_double(const void *a, const void *b);

/** The REPEAT argument argv[at] (`dflt` when absent), kept within [5, max]: a median and its
 * p10/p90 need a few runs, and the timing arrays hold `max`. */
int32_t zb_repeats(int argc, char **argv, int at, int32_t dflt, int32_t max);

/** The graph as ONNX Runtime's default session would run it: BN folded into the convs and
 * chains grouped for the fuse masks of device `dev`'s variants. *out is the caller's. */
int32_t zb_fuse(const mi_graph_t *g, mi_plugin_t *p, uint32_t dev, mi_graph_t **out,
                mi_error_t *err);

#endif
