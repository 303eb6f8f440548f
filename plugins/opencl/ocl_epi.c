/* ocl_epi.c - reads activations and fused epilogue chains (bias, BatchNormalization,
 * activation, residual Add) out of a kernel description. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

const mi_tensor_desc_t *mi__ocl_tensor(const mi_kernel_desc_t *desc, int t) {
  return t >= 0 && t < desc->tensor_count ? desc->tensors[t] : NULL;
}

static int const_scalar(const mi_kernel_desc_t *desc, const mi_node_desc_t *n, int slot, float *v) {
  const mi_tensor_desc_t *t;
  if (slot >= n->input_count || n->inputs[slot] < 0) return 0; /* absent: keep default */
  t = mi__ocl_tensor(desc, n->inputs[slot]);
  if (!t || !t->data || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1) return -1;
  memcpy(v, t->data, sizeof *v);
  return 1;
}

int mi__ocl_act_of(const mi_kernel_desc_t *desc, const mi_node_desc_t *node, int *code,
                   float *p, float *q, mi_error_t *err) {
  static const struct {
    const char *op;
    int code;
  } simple[] = {
      {"Relu", ACT_RELU}, {"Sigmoid", ACT_SIGMOID}, {"Tanh", ACT_TANH}, {"HardSwish", ACT_HSWISH}, {"Erf", ACT_ERF}, {"Exp", ACT_EXP}, {"Log", ACT_LOG}, {"Sqrt", ACT_SQRT}, {"Neg", ACT_NEG}, {"Abs", ACT_ABS}, {"Reciprocal", ACT_RECIP}, {"Softplus", ACT_SOFTPLUS}, {"Floor", ACT_FLOOR}, {"Ceil", ACT_CEIL}};
  const char *op = node->op_type;
  size_t i;
  *code = ACT_NONE;
  *p = 0.0f;
  *q = 0.0f;
  for (i = 0; i < sizeof simple / sizeof simple[0]; i++) {
    if (strcmp(op, simple[i].op) == 0) {
      *code = simple[i].code;
      return 1;
    }
  }
  if (strcmp(op, "LeakyRelu") == 0) {
    *code = ACT_LEAKY;
    *p = mi_sdk_attr_float(node, "alpha", 0.01f);
  } else if (strcmp(op, "Elu") == 0) {
    *code = ACT_ELU;
    *p = mi_sdk_attr_float(node, "alpha", 1.0f);
  } else if (strcmp(op, "HardSigmoid") == 0) {
    *code = ACT_HSIGMOID;
    *p = mi_sdk_attr_float(node, "alpha", 0.2f);
    *q = mi_sdk_attr_float(node, "beta", 0.5f);
  } else if (strcmp(op, "Gelu") == 0) {
    const mi_attr_t *a = mi_sdk_attr(node, "approximate");
    *code = a && a->type == MI_ATTR_STRING && a->s && strcmp(a->s, "tanh") == 0 ? ACT_GELU_TANH
                                                                                : ACT_GELU;
  } else if (strcmp(op, "Clip") == 0) {
    *code = ACT_CLIP;
    *p = -INFINITY;
    *q = INFINITY;
    if (node->opset > 0 && node->opset < 11) {
      *p = mi_sdk_attr_float(node, "min", -INFINITY);
      *q = mi_sdk_attr_float(node, "max", INFINITY);
    } else if (const_scalar(desc, node, 1, p) < 0 || const_scalar(desc, node, 2, q) < 0) {
      mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "Clip: min/max must be constant scalars");
      return -1;
    }
  } else {
    return 0;
  }
  return 1;
}

static int input_is(const mi_node_desc_t *n, int t) {
  int32_t i;
  for (i = 0; i < n->input_count; i++)
    if (n->inputs[i] == t) return 1;
  return 0;
}

static int32_t fold_bn(const mi_kernel_desc_t *desc, const mi_node_desc_t *n, ocl_epi_t *e,
                       mi_error_t *err) {
  const mi_tensor_desc_t *t[4];
  const float *v[4];
  float eps = mi_sdk_attr_float(n, "epsilon", 1e-5f);
  int i;
  if (n->input_count < 5) return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "BatchNormalization: 5 inputs expected");
  for (i = 0; i < 4; i++) {
    t[i] = mi__ocl_tensor(desc, n->inputs[i + 1]);
    if (!t[i] || !t[i]->data || t[i]->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t[i]) != e->nchan)
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                           "BatchNormalization: parameters must be constant FP32 of %d channels",
                           e->nchan);
    v[i] = t[i]->data;
  }
  for (i = 0; i < e->nchan; i++) {
    float s = v[0][i] / sqrtf(v[3][i] + eps);
    float b = v[1][i] - v[2][i] * s;
    e->scale[i] *= s;
    e->shift[i] = e->shift[i] * s + b;
  }
  e->flags |= 1;
  e->fuse |= MI_FUSE_BN;
  return MI_OK;
}

/* True when the other operand of Add is a constant that varies only along the channel axis. */
static int channel_const(const mi_kernel_desc_t *desc, const mi_node_desc_t *n, int t_out,
                         const ocl_epi_t *e) {
  const mi_tensor_desc_t *c = mi__ocl_tensor(desc, n->inputs[0] == t_out ? n->inputs[1] : n->inputs[0]);
  const mi_tensor_desc_t *y = mi__ocl_tensor(desc, t_out);
  int d;
  if (!c || !y || !c->data || c->dtype != MI_DTYPE_FLOAT32 || e->chan_axis < 0 ||
      c->rank > y->rank || mi_sdk_numel(c) != e->nchan)
    return 0;
  for (d = 0; d < c->rank; d++) {
    int yd = d + y->rank - c->rank;
    if (c->dims[d] != 1 && yd != e->chan_axis) return 0;
  }
  return 1;
}

int32_t mi__ocl_epi_parse(const mi_kernel_desc_t *desc, int first, int t_out, int nchan,
                          ocl_epi_t *e, mi_error_t *err) {
  int k, state = 0; /* 0 start, 2 after an activation, 3 after Add, 4 closed */
  int32_t st;
  e->nchan = nchan > 0 ? nchan : 1;
  e->res_tensor = -1;
  if (!e->scale) {
    e->scale = malloc((size_t)e->nchan * sizeof *e->scale);
    e->shift = malloc((size_t)e->nchan * sizeof *e->shift);
    if (!e->scale || !e->shift) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    for (k = 0; k < e->nchan; k++) {
      e->scale[k] = 1.0f;
      e->shift[k] = 0.0f;
    }
  }
  for (k = first; k < desc->node_count; k++) {
    const mi_node_desc_t *n = desc->nodes[k];
    int code;
    float p, q;
    int a;
    if (!input_is(n, t_out) || n->output_count < 1)
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "fused %s does not consume the previous output",
                           n->op_type);
    if (strcmp(n->op_type, "BatchNormalization") == 0 && state == 0 && nchan > 0 &&
        n->inputs[0] == t_out) {
      if ((st = fold_bn(desc, n, e, err)) != MI_OK) return st;
    } else if ((a = mi__ocl_act_of(desc, n, &code, &p, &q, err)) != 0) {
      if (a < 0) return MI_ERR_UNSUPPORTED;
      if (state == 0) {
        e->act0 = code;
        e->p[0] = p;
        e->p[1] = q;
        state = 2;
      } else if (state == 2 || state == 3) {
        e->act1 = code;
        e->p[2] = p;
        e->p[3] = q;
        state = 4;
      } else {
        return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "fused chain too long at %s", n->op_type);
      }
      e->fuse |= code == ACT_RELU || code == ACT_CLIP ? MI_FUSE_RELU : MI_FUSE_ACT;
    } else if (strcmp(n->op_type, "Add") == 0 && state == 0 && n->input_count == 2 &&
               channel_const(desc, n, t_out, e)) {
      const mi_tensor_desc_t *c = mi__ocl_tensor(desc, n->inputs[0] == t_out ? n->inputs[1] : n->inputs[0]);
      const float *v = c->data;
      for (a = 0; a < e->nchan; a++) e->shift[a] += v[a];
      e->flags |= 1;
      e->fuse |= MI_FUSE_BIAS;
    } else if (strcmp(n->op_type, "Add") == 0 && (state == 0 || state == 2) && n->input_count == 2) {
      int other = n->inputs[0] == t_out ? n->inputs[1] : n->inputs[0];
      const mi_tensor_desc_t *to = mi__ocl_tensor(desc, other), *ty = mi__ocl_tensor(desc, t_out);
      int d;
      if (!to || !ty || to->rank != ty->rank || to->dtype != MI_DTYPE_FLOAT32)
        return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "fused Add: operand shape differs from the output");
      for (d = 0; d < to->rank; d++)
        if (to->dims[d] != ty->dims[d])
          return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "fused Add: operand shape differs from the output");
      state = 3; /* an activation seen before the Add stays in act0, applied before it */
      e->res_tensor = other;
      e->flags |= 2;
      e->fuse |= MI_FUSE_ADD;
    } else {
      return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "cannot fuse %s after %s", n->op_type,
                           desc->nodes[first - 1]->op_type);
    }
    t_out = n->outputs[0];
  }
  e->out_tensor = t_out;
  if (desc->output_count != 1 || desc->outputs[0] != t_out)
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED,
                         "fused group must have exactly one output, the last node's");
  return MI_OK;
}

void mi__ocl_epi_free(ocl_epi_t *e) {
  if (!e) return;
  free(e->scale);
  free(e->shift);
  e->scale = e->shift = NULL;
}
