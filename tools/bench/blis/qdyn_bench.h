/* qdyn_bench.h - what bench_blis_qmm and bench_blis_qconv share: the dynamically quantized layer
 * of ONNX Runtime's quantizer (DynamicQuantizeLinear -> MatMulInteger or ConvInteger -> Cast ->
 * Mul by the scale product) built for a shape, timed on blis-cpu:0 through mi_session for one or
 * two builds in interleaved rounds, and the table of median times and GOP/s. */
#ifndef QDYN_BENCH_H
#define QDYN_BENCH_H

#include <stdint.h>

#include "metainfer/mi.h"

#define QB_MAX_SHAPES 8
#define QB_MAX_DIMS 5

typedef struct qb_spec {
  const char *prog;      /* the program's name, in messages */
  const char *usage;     /* its usage line */
  const char *shape_fmt; /* sscanf format of one SHAPE argument (QB_MAX_DIMS %lld at most) */
  int ndims;             /* numbers in a shape */
  int nshapes;           /* default shapes */
  int64_t shapes[QB_MAX_SHAPES][QB_MAX_DIMS];
  int32_t reps;     /* default REPEAT */
  int cpu_clock_1t; /* at 1 thread time by the process's CPU time (else wall time) */
  /* the graph and its input for a shape; the operations of one run; the shape as text */
  mi_graph_t *(*graph)(const int64_t *d, mi_array_t **in);
  double (*ops)(const int64_t *d);
  void (*label)(const int64_t *d, char *buf, size_t cap);
  const char *header; /* the table's first column's title */
} qb_spec_t;

/* A PCG-style stream shared by weights and inputs (fixed seed: every build sees the same). */
uint32_t qb_rnd32(void);
/* A weight as trained ones look: about normal (three uniforms, spread 20), one in 512 out at
 * 100..127 in magnitude, so a few pairs in ten thousand reach past vpmaddubsw's int16 range. */
int8_t qb_weight(void);
/* DynamicQuantizeLinear(x) -> OP(codes, w, zx, wz) -> Cast -> Mul(xs * 0.0123): `op` is
 * "MatMulInteger" or "ConvInteger" (with `pads`, 4 values, when not NULL); w of dtype `wdtype`
 * (INT8: weights as qb_weight, zero point 0; UINT8: qb_weight + 128, zero point 128). */
mi_graph_t *qb_graph(const char *name, int xrank, const int64_t *xd, int wdtype, int wrank, const int64_t *wd,
                     const char *op, const int64_t *pads);
/* An input of the shape given, uniform in [-3, 5). */
mi_array_t *qb_input(int rank, const int64_t *dims);
/* The whole program: BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [SHAPE ...]]]]. */
int qb_main(const qb_spec_t *spec, int argc, char **argv);

#endif
