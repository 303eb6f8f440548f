/* bench_blis_qconv.c - the dynamically quantized conv of ONNX Runtime's quantizer
 * (DynamicQuantizeLinear -> ConvInteger (UINT8 codes, UINT8 weights with zero point 128) -> Cast
 * -> Mul by the scale product) on blis-cpu:0 through mi_session, for a few C x H x W -> M shapes of
 * K x K kernels (stride 1, "same" pads): the median run time and the GOP/s (2 M C K K H W
 * operations) of one or two builds, in interleaved rounds so both see the same load; at 1 thread
 * by the process's CPU time (a shared machine steals wall time), at more by wall time.
 * Usage: bench_blis_qconv BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [CxHxW:MxK ...]]]];
 * MI_BLIS_MAX_SIMD caps both plugins as usual (e.g. avx2). Default shapes: IS-Net's heaviest
 * 3x3 convs at 1024x1024 (docs/benchmarks.md). */
#include <stdio.h>

#include "qdyn_bench.h"

/* A C x H x W input, M outputs, K x K kernel, stride 1, "same" pads (d: C, H, W, M, K). */
static mi_graph_t *graph(const int64_t *d, mi_array_t **in) {
  int64_t xd[4] = {1, d[0], d[1], d[2]}, bd[4] = {d[3], d[0], d[4], d[4]};
  int64_t pads[4] = {d[4] / 2, d[4] / 2, d[4] / 2, d[4] / 2};
  mi_graph_t *g = qb_graph("qconv", 4, xd, MI_DTYPE_UINT8, 4, bd, "ConvInteger", pads);
  *in = g ? qb_input(4, xd) : NULL;
  return g;
}

static double ops(const int64_t *d) { return 2. * (double)(d[0] * d[1] * d[2] * d[3] * d[4] * d[4]); }

static void label(const int64_t *d, char *buf, size_t cap) {
  snprintf(buf, cap, "%lldx%lldx%lld:%lldx%lld", (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3],
           (long long)d[4]);
}

int main(int argc, char **argv) {
  static const qb_spec_t spec = {
      "bench_blis_qconv", "bench_blis_qconv BUILD [BASE_BUILD|-] [THREADS [ROUNDS [REPEAT [CxHxW:MxK ...]]]]", "%lldx%lldx%lld:%lldx%lld", 5, 6, {{64, 512, 512, 64, 3}, {128, 512, 512, 64, 3}, {256, 256, 256, 64, 3}, {64, 256, 256, 128, 3}, {32, 512, 512, 64, 3}, {512, 32, 32, 512, 3}}, 3, 1, graph, ops, label, "shape (CxHxW:MxK)"};
  return qb_main(&spec, argc, argv);
}
