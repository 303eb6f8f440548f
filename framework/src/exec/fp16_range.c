/* fp16_range.c - which FLOAT32 nodes a device that computes them in FP16 must leave to the host:
 * those fed by a constant beyond FP16's range (65504), and the elementwise values that follow
 * them until an op brings the range back. The rule OpenVINO's FP16 compression keeps (a constant
 * out of the FP16 range keeps its subgraph in FP32). Seen: Silero VAD v4's front end computes
 * log(|STFT| * 2^20 + 1); the constant 2^20 rounds to FP16 infinity, every later value was inf
 * or NaN on npu-stub (relative L2 1.06 at the outputs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

#define FP16_MAX 65504.0

/* A FLOAT32 constant input with a finite value FP16 cannot hold. */
static int wide_const(const mi_graph_t *g, mi_array_t *const *consts, int32_t node) {
  const mi_node_t *n = &g->nodes[node];
  for (int32_t j = 0; j < n->input_count; j++) {
    const mi_array_t *a = n->inputs[j] >= 0 ? consts[n->inputs[j]] : NULL;
    if (!a || a->dtype != MI_DTYPE_FLOAT32) continue;
    for (uint64_t i = 0; i < a->nbytes / 4; i++) {
      double v = fabs((double)((const float *)a->data)[i]);
      if (isfinite(v) && v > FP16_MAX) return 1;
    }
  }
  return 0;
}

/* Ops whose output is back in a small range whatever the input's magnitude. */
static int compresses(const mi_node_t *n) {
  static const char *const ops[] = {"Log", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Sign",
                                    "Erf", "Softsign", "HardSigmoid", "LayerNormalization",
                                    "InstanceNormalization", "LpNormalization"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(n->op_type, ops[i]) == 0) return 1;
  return 0;
}

int mi__fp16_only(const mi_plugin_t *p, uint32_t device) {
  mi_device_desc_t d;
  mi_error_t err = {0};
  if (!p || mi_plugin_device_info(p, device, &d, &err) != MI_OK) return 0;
  return (d.dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT16)) &&
         !(d.dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32));
}

void mi__fp16_range_mark(const mi_graph_t *g, mi_array_t *const *consts, uint8_t *host) {
  /* Nodes are in topological order: one forward pass carries the mark to the readers. */
  uint8_t *wide = calloc((size_t)g->tensor_count + 1, 1); /* FLOAT32 values out of range */
  if (!wide) return;                                      /* without the mark the device computes them, as before */
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int in = wide_const(g, consts, i);
    for (int32_t j = 0; j < n->input_count && !in; j++)
      in = n->inputs[j] >= 0 && wide[n->inputs[j]];
    if (!in) continue;
    host[i] = 1;
    if (compresses(n)) continue;
    for (int32_t j = 0; j < n->output_count; j++) {
      int32_t t = n->outputs[j];
      if (t >= 0 && !consts[t] && g->tensors[t].dtype == MI_DTYPE_FLOAT32) wide[t] = 1;
    }
  }
  free(wide);
}
