/* fold.c - evaluates at session create time the nodes whose value does not depend on the
 * inputs' data: nodes on constants only, and shape queries on tensors of known shape. */
#include <string.h>

#include "exec/exec.h"
#include "graph/graph.h"
#include "ref/ref.h"

/* Shape (with opset-15 start/end) and Size need only the shape, which a session fixes.
 * Returns 1 when folded, 0 when the shape is not concrete, -status on error. */
static int32_t fold_shape_query(const mi_graph_t *g, const mi_node_t *n, mi_array_t **outputs,
                                mi_error_t *err) {
  const mi_tensor_t *in = &g->tensors[n->inputs[0]];
  int is_shape = strcmp(n->op_type, "Shape") == 0;
  int64_t start, count;
  for (int32_t i = 0; i < in->rank; i++)
    if (in->dims[i] < 0) return 0; /* not concrete: leave it to the run */
  if (in->rank < 0) return 0;
  if (!is_shape) {
    int64_t numel = 1;
    for (int32_t i = 0; i < in->rank; i++) numel *= in->dims[i];
    outputs[0] = mi_array_create(MI_DTYPE_INT64, 0, NULL);
    if (!outputs[0])
      return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory folding Size");
    *(int64_t *)outputs[0]->data = numel;
    return 1;
  }
  count = mi__shape_op_range(n, in->rank, 1, &start);
  outputs[0] = mi_array_create(MI_DTYPE_INT64, 1, &count);
  if (!outputs[0]) return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory folding Shape");
  for (int64_t i = 0; i < count; i++) ((int64_t *)outputs[0]->data)[i] = in->dims[start + i];
  return 1;
}

int32_t mi__fold_node(const mi_graph_t *g, int32_t node, mi_array_t *const *consts,
                      mi_array_t **outputs, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[node];
  if (n->domain && n->domain[0]) return 0;
  if ((strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0) &&
      n->input_count >= 1 && n->inputs[0] >= 0 && n->output_count == 1 && n->outputs[0] >= 0) {
    return fold_shape_query(g, n, outputs, err);
  }
  /* Quantized weights stay visible to the device, which may compute on them directly; the
   * session folds the ones no kernel reads as codes with mi__fold_dq once it has planned. */
  if (strcmp(n->op_type, "DequantizeLinear") == 0 || strcmp(n->op_type, "QuantizeLinear") == 0) {
    /* except an INT32 bias (ONNX Runtime's QDQ form): no kernel reads it as codes, and a
     * lowered layer takes its bias in real units */
    int32_t t = n->input_count > 0 ? n->inputs[0] : -1;
    if (n->op_type[0] != 'D' || t < 0 || !consts[t] || consts[t]->dtype != MI_DTYPE_INT32) return 0;
  }
  return mi__fold_dq(g, node, consts, outputs, err);
}

int32_t mi__fold_dq(const mi_graph_t *g, int32_t node, mi_array_t *const *consts,
                    mi_array_t **outputs, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[node];
  const mi_array_t *ins[64];
  int32_t rc;
  if (n->input_count > (int32_t)(sizeof ins / sizeof ins[0])) return 0;
  for (int32_t i = 0; i < n->input_count; i++) {
    int32_t t = n->inputs[i];
    if (t >= 0 && !consts[t]) return 0;
    ins[i] = t >= 0 ? consts[t] : NULL;
  }
  rc = mi__ref_node(g, node, ins, outputs, err);
  return rc == MI_OK ? 1 : -rc;
}
