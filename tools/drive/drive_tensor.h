/* drive_tensor.h - the descriptions code that drives a plugin by hand fills (the blis, opencl and
 * vulkan drivers): one FP32 tensor, NCHW when 4-D, its bytes counted when it carries data; a
 * node with one output; an attribute; the kernel description over them. Plugin SDK only. */
#ifndef MI_DRIVE_TENSOR_H
#define MI_DRIVE_TENSOR_H

#include <string.h>

#include "metainfer/mi_plugin.h"

static inline void drive_f32_desc(mi_tensor_desc_t *t, int rank, const int64_t *dims,
                                  const float *data) {
  memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->dtype = MI_DTYPE_FLOAT32;
  t->layout = rank == 4 ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->data = data;
  t->data_bytes = data ? (uint64_t)mi_sdk_numel(t) * 4u : 0;
}

/* Node n: op (also its name) at `opset`, inputs read from `in` (nin of them, the array the node
 * points at), the one output `out` stored in out_slot, attributes to come in `attrs`. */
static inline void drive_node_desc(mi_node_desc_t *n, const char *op, int opset, int nin,
                                   const int *ins, int32_t *in, int out, int32_t *out_slot,
                                   const mi_attr_t *attrs) {
  memset(n, 0, sizeof *n);
  n->struct_size = sizeof *n;
  n->op_type = op;
  n->name = op;
  n->opset = opset;
  for (int i = 0; i < nin; i++) in[i] = ins[i];
  *out_slot = out;
  n->input_count = nin;
  n->inputs = in;
  n->output_count = 1;
  n->outputs = out_slot;
  n->attrs = attrs;
}

/* *a zeroed as an attribute `name` of `type`; the caller sets its value. */
static inline mi_attr_t *drive_attr(mi_attr_t *a, const char *name, int type) {
  memset(a, 0, sizeof *a);
  a->name = name;
  a->type = type;
  return a;
}

/* The kernel description over nodes np[0..nn) and tensors tp[0..nt), its runtime inputs and
 * outputs (tensor indices), the variant and the knobs. */
static inline void drive_kernel_desc(mi_kernel_desc_t *d, const mi_node_desc_t *const *np, int nn,
                                     const mi_tensor_desc_t *const *tp, int nt, const int32_t *ins,
                                     int nin, const int32_t *outs, int nout, const char *variant,
                                     const mi_knob_value_t *knobs, int nk) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->node_count = nn;
  d->nodes = np;
  d->tensor_count = nt;
  d->tensors = tp;
  d->input_count = nin;
  d->inputs = ins;
  d->output_count = nout;
  d->outputs = outs;
  d->variant_id = variant;
  d->knob_count = nk;
  d->knobs = knobs;
}

#endif
