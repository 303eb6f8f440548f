/* bench_blis_qmm.c - the dynamically quantized MatMul of ONNX Runtime's quantizer
 * (DynamicQuantizeLinear -> MatMulInteger (UINT8 codes, INT8 weights) -> Cast -> Mul by the scale
 * product) on blis-cpu:0 through mi_session, for a few M x K x N shapes: the median run time and
 * the GOP/s (2 M K N operations) of one or two builds, in interleaved rounds so both see the same
 * load. Usage: bench_blis_qmm BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [MxKxN ...]]]];
 * MI_BLIS_MAX_SIMD caps both plugins as usual (e.g. avx2). Default shapes: a transformer
 * encoder's fc1, fc2 and q/k/v projections over 207 tokens of width 288. */
#include <stdio.h>

#include "qdyn_bench.h"

/* m x k by k x n (d: m, k, n) and its m x k input. */
static mi_graph_t *graph(const int64_t *d, mi_array_t **in) {
  int64_t xd[2] = {d[0], d[1]}, bd[2] = {d[1], d[2]};
  mi_graph_t *g = qb_graph("qmm", 2, xd, MI_DTYPE_INT8, 2, bd, "MatMulInteger", NULL);
  *in = g ? qb_input(2, xd) : NULL;
  return g;
}

static double ops(const int64_t *d) { return 2. * (double)d[0] * (double)d[1] * (double)d[2]; }

static void label(const int64_t *d, char *buf, size_t cap) {
  snprintf(buf, cap, "%lldx%lldx%lld", (long long)d[0], (long long)d[1], (long long)d[2]);
}

int main(int argc, char **argv) {
  static const qb_spec_t spec = {
      "bench_blis_qmm", "bench_blis_qmm BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [MxKxN ...]]]]", "%lldx%lldx%lld", 3, 3, {{207, 288, 1152}, {207, 1152, 288}, {207, 288, 288}}, 20, 0, graph, ops, label, "shape (MxKxN)"};
  return qb_main(&spec, argc, argv);
}
