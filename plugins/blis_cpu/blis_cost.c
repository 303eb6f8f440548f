/* blis_cost.c - a kernel's estimated time on one thread, in one unit for every op that carries FLOPs, and the threads it is worth. */
#include <string.h>

#include "blis_internal.h"

/* One core's rates on the Intel Xeon this was measured on (2026-12-03, mi-run --profile at 1 thread,
 * steps of 0.1-2.5 MFLOP): FP32 convs and GEMMs at about 100 GFLOP/s with AVX-512 (pointwise 100,
 * depthwise 50-80 with their epilogues, Winograd 3x3 up to 240), half that at AVX2; data-bound
 * steps (elementwise, pooling, copies) at about 75 GB/s from L2 (a 308 kB Mul 4.1 us). One rate a
 * class is enough: the estimate only has to say on which side of a few microseconds a step is. */
#define MI__COST_NS_PER_FLOP_512 0.01
#define MI__COST_NS_PER_FLOP_256 0.02
#define MI__COST_NS_PER_BYTE 0.013

static const mi_tensor_desc_t *tensor(const mi_kernel_desc_t *d, const mi_node_desc_t *n, int32_t i, int out) {
  int32_t idx = out ? (i < n->output_count ? n->outputs[i] : -1) : (i < n->input_count ? n->inputs[i] : -1);
  return idx >= 0 && idx < d->tensor_count ? d->tensors[idx] : NULL;
}

/* Product of dims [from, rank). */
static double dims_from(const mi_tensor_desc_t *t, int32_t from) {
  double p = 1;
  for (int32_t i = from; i < t->rank; i++) p *= (double)t->dims[i];
  return p;
}

/* Multiply-adds times two of the ops that carry the FLOPs (convs, GEMMs, recurrent cells); 0 for
 * the others, whose time goes by their bytes. Read from shapes alone: a Conv's weight is M x C/G x
 * KH x KW, so each output takes C/G*KH*KW multiply-adds whatever the attributes; a ConvTranspose's
 * is C x M/G x KH x KW, per input element; a Gemm's A holds M*K, its output's first dim is M. */
static double node_flops(const mi_kernel_desc_t *d, const mi_node_desc_t *n) {
  const char *op = n->op_type ? n->op_type : "";
  const mi_tensor_desc_t *y = tensor(d, n, 0, 1), *a = tensor(d, n, 0, 0), *w;
  if (!y || !a) return 0;
  if (!strcmp(op, "Conv") || !strcmp(op, "ConvInteger") || !strcmp(op, "QLinearConv")) {
    w = tensor(d, n, !strcmp(op, "QLinearConv") ? 3 : 1, 0);
    return w && w->rank >= 2 ? 2.0 * (double)mi_sdk_numel(y) * dims_from(w, 1) : 0;
  }
  if (!strcmp(op, "ConvTranspose")) {
    w = tensor(d, n, 1, 0);
    return w && w->rank >= 2 ? 2.0 * (double)mi_sdk_numel(a) * dims_from(w, 1) : 0;
  }
  if (!strcmp(op, "MatMul") || !strcmp(op, "MatMulInteger") || !strcmp(op, "QLinearMatMul"))
    return a->rank >= 1 ? 2.0 * (double)mi_sdk_numel(y) * (double)a->dims[a->rank - 1] : 0;
  if (!strcmp(op, "Gemm"))
    return y->rank == 2 && y->dims[0] > 0 ? 2.0 * (double)mi_sdk_numel(y) * (double)mi_sdk_numel(a) / (double)y->dims[0]
                                          : 0;
  if (!strcmp(op, "LSTM") || !strcmp(op, "GRU") || !strcmp(op, "RNN")) {
    const mi_tensor_desc_t *wx = tensor(d, n, 1, 0), *wh = tensor(d, n, 2, 0);
    if (!wx || !wh || a->rank != 3) return 0;
    return 2.0 * (double)a->dims[0] * (double)a->dims[1] * (double)(mi_sdk_numel(wx) + mi_sdk_numel(wh));
  }
  return 0;
}

/* Why only kernels with FLOPs: the bytes rate holds for streaming passes (Add, Mul, copies), but
 * gathers and transcendental ops take several times longer a byte, and a split paid on them:
 * PP-OCR v4's detector's Sigmoid on 320x320 took 184 us at 1 thread (10 us by its bytes), its
 * Resizes 19-85 us (3-10), M-LSD's output Transpose 91 us (11), BlazeFace's input Transpose 22 us
 * (5); with the pool's floor raised to 2^17, which kept such steps on one thread, those models ran
 * 2-5% slower at 2 threads. Their loops keep the pool's floor by elements. */
int64_t mi__blis_kernel_cost_ns(const mi_kernel_desc_t *d, int wide) {
  double flops = 0, bytes = 0;
  int32_t i;
  if (!d) return -1;
  for (i = 0; i < d->node_count; i++)
    if (d->nodes && d->nodes[i]) flops += node_flops(d, d->nodes[i]);
  if (flops <= 0) return -1;
  /* what the kernel reads and writes: its runtime inputs and outputs and its constants (weights);
   * the members' intermediates of a fused group stay in registers or cache */
  for (i = 0; i < d->tensor_count; i++) {
    const mi_tensor_desc_t *t = d->tensors[i];
    int32_t j, io = t && t->data != NULL;
    for (j = 0; t && !io && j < d->input_count; j++) io = d->inputs[j] == i;
    for (j = 0; t && !io && j < d->output_count; j++) io = d->outputs[j] == i;
    if (io) bytes += (double)mi_sdk_tensor_bytes(t);
  }
  return (int64_t)(flops * (wide ? MI__COST_NS_PER_FLOP_512 : MI__COST_NS_PER_FLOP_256) + bytes * MI__COST_NS_PER_BYTE);
}

/* Why a floor in time: on the 2-vCPU VM a split step took about 5-7 us more than half its 1-thread
 * time (ppocr-v2-cls's convs, 2026-12-03 15:09 UTC: 147 kFLOP 1.9 -> 4.8 us, 811 kFLOP 10.1 ->
 * 11.7, 1.27 MFLOP 24.4 -> 17.5), the region's hand-off plus the second core fetching its half of
 * the data from the first core's cache (an elementwise Mul 1.4 -> 5.5 us). The pool's own floor
 * counts operations in each loop's unit (multiply-adds for a conv, elements for a copy), so it
 * cannot tell these steps apart; this one is the same for every kernel. */
int32_t mi__blis_kernel_threads(int32_t threads, int64_t cost_ns) {
  int64_t parts = cost_ns / MI__PAR_PART_NS;
  if (cost_ns < 0) return threads; /* no estimate: the pool's floor decides per loop */
  if (threads <= 1 || parts <= 1) return 1;
  return parts < threads ? (int32_t)parts : threads;
}
