/* ocl_prepare_ops.c - prepares the element-wise, reduction, normalization, pooling and copy
 * ops (one launch each, Concat one per input). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#define WG(p) ((size_t)(p)->kn.v[K_WG_X])

static int is_op(const mi_node_desc_t *n, const char *op) { return strcmp(n->op_type, op) == 0; }

static int64_t numel_from(const mi_tensor_desc_t *t, int from, int to) {
  int64_t v = 1;
  int i;
  for (i = from; i < to; i++) v *= t->dims[i];
  return v;
}

/* Launch of a kernel from the element-wise program, with input 0 and output bound. */
static ocl_launch_t *ew_launch(ocl_prep_t *p, const char *name, int t_in, int t_out, int32_t *st) {
  return mi__ocl_launch_io(p, mi__ocl_src_ew, name, t_in, t_out, st);
}

static int32_t only_acts_after(ocl_prep_t *p, int first) {
  int k, code;
  float a, b;
  for (k = first; k < p->desc->node_count; k++)
    if (mi__ocl_act_of(p->desc, p->desc->nodes[k], &code, &a, &b, NULL) <= 0)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s cannot fuse %s", p->var->v.id,
                           p->desc->nodes[k]->op_type);
  return MI_OK;
}

static int32_t prep_unary(ocl_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]);
  int bn = is_op(n, "BatchNormalization");
  int nchan = bn && x->rank >= 2 ? (int)x->dims[1] : 1;
  int64_t cnt = mi_sdk_numel(x);
  ocl_epi_t e;
  ocl_launch_t *l;
  int32_t st;
  memset(&e, 0, sizeof e);
  e.chan_axis = -1;
  if ((st = only_acts_after(p, 1)) != MI_OK) return st;
  if ((st = mi__ocl_epi_parse(p->desc, 0, n->inputs[0], nchan, &e, p->err)) != MI_OK) goto done;
  if (!(l = ew_launch(p, "ew_unary", n->inputs[0], e.out_tensor, &st))) goto done;
  mi__ocl_arg_int(l, (cl_int)cnt);
  if ((st = mi__ocl_arg_epi(p, l, &e, x->rank > 2 ? (int)numel_from(x, 2, x->rank) : 1)) != MI_OK) goto done;
  mi__ocl_grid1(l, (size_t)cnt, WG(p));
  st = mi__ocl_check_wg(p, l);
done:
  mi__ocl_epi_free(&e);
  return st;
}

static int32_t prep_binary(ocl_prep_t *p, const mi_node_desc_t *n) {
  static const char *ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu"};
  const mi_tensor_desc_t *y = mi__ocl_tensor(p->desc, n->outputs[0]), *in[2];
  cl_int shp[3 * MI_MAX_RANK];
  ocl_epi_t e;
  ocl_arg_t a;
  ocl_launch_t *l;
  int32_t st;
  int op = 0, i, r = y->rank > 0 ? y->rank : 1;
  memset(&e, 0, sizeof e);
  e.chan_axis = -1;
  if (n->input_count != 2)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: only two inputs are implemented", n->op_type);
  while (strcmp(ops[op], n->op_type) != 0) op++;
  for (i = 0; i < 2; i++) {
    int d;
    int64_t acc = 1;
    in[i] = mi__ocl_tensor(p->desc, n->inputs[i]);
    if (!in[i] || in[i]->rank > y->rank)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: operand rank exceeds the output's", n->op_type);
    for (d = y->rank - 1; d >= 0; d--) {
      int td = d - (y->rank - in[i]->rank);
      int64_t dim = td >= 0 ? in[i]->dims[td] : 1;
      if (dim != 1 && dim != y->dims[d])
        return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: shapes do not broadcast", n->op_type);
      shp[(i + 1) * r + d] = dim == 1 ? 0 : (cl_int)acc;
      acc *= dim;
    }
  }
  for (i = 0; i < y->rank; i++) shp[i] = (cl_int)y->dims[i];
  if (y->rank == 0) shp[0] = 1, shp[1] = 0, shp[2] = 0;
  if ((st = only_acts_after(p, 1)) != MI_OK) return st;
  if ((st = mi__ocl_epi_parse(p->desc, 1, n->outputs[0], 1, &e, p->err)) != MI_OK) goto done;
  if (!(l = mi__ocl_launch_new(p, mi__ocl_src_ew, "", "ew_binary", &st))) goto done;
  for (i = 0; i < 2; i++) {
    if ((st = mi__ocl_bind(p, n->inputs[i], &a)) != MI_OK) goto done;
    mi__ocl_arg(l, a);
  }
  if ((st = mi__ocl_bind(p, e.out_tensor, &a)) != MI_OK) goto done;
  mi__ocl_arg(l, a);
  mi__ocl_arg_int(l, (cl_int)mi_sdk_numel(y));
  mi__ocl_arg_int(l, r);
  if ((st = mi__ocl_arg_ints(p, l, shp, 3 * r)) != MI_OK) goto done;
  mi__ocl_arg_int(l, op);
  if ((st = mi__ocl_arg_epi(p, l, &e, 1)) != MI_OK) goto done;
  mi__ocl_grid1(l, (size_t)mi_sdk_numel(y), WG(p));
  st = mi__ocl_check_wg(p, l);
done:
  mi__ocl_epi_free(&e);
  return st;
}

static int32_t prep_reduce(ocl_prep_t *p, const mi_node_desc_t *n) {
  static const char *ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                              "ReduceSumSquare", "ReduceL1", "ReduceL2"};
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]);
  const mi_tensor_desc_t *y = mi__ocl_tensor(p->desc, n->outputs[0]);
  int red[MI_MAX_RANK] = {0};
  int64_t s[MI_MAX_RANK];
  cl_int shp[4 * MI_MAX_RANK], kd[MI_MAX_RANK], ks[MI_MAX_RANK], rd[MI_MAX_RANK], rs[MI_MAX_RANK];
  int op = 0, i, kr = 0, rr = 0, any = 0;
  int64_t rcount = 1;
  ocl_launch_t *l;
  int32_t st;
  if (is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool")) {
    op = is_op(n, "GlobalMaxPool") ? 2 : 1;
    for (i = 2; i < x->rank; i++) red[i] = any = 1;
  } else {
    const mi_attr_t *ax = mi_sdk_attr(n, "axes");
    const int64_t *axes = NULL;
    int na = 0;
    while (strcmp(ops[op], n->op_type) != 0) op++;
    if (ax && ax->type == MI_ATTR_INTS) {
      axes = ax->ints;
      na = ax->count;
    } else if (n->input_count > 1 && n->inputs[1] >= 0) {
      const mi_tensor_desc_t *t = mi__ocl_tensor(p->desc, n->inputs[1]);
      if (!t || !t->data || t->dtype != MI_DTYPE_INT64)
        return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: axes must be constant", n->op_type);
      axes = t->data;
      na = (int)mi_sdk_numel(t);
    }
    for (i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
      if (a < 0 || a >= x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: bad axis", n->op_type);
      red[a] = any = 1;
    }
    if (!any && !mi_sdk_attr_int(n, "noop_with_empty_axes", 0))
      for (i = 0; i < x->rank; i++) red[i] = any = 1;
  }
  mi_sdk_strides(x, s);
  for (i = 0; i < x->rank; i++) {
    if (red[i]) {
      rd[rr] = (cl_int)x->dims[i];
      rs[rr++] = (cl_int)s[i];
      rcount *= x->dims[i];
    } else {
      kd[kr] = (cl_int)x->dims[i];
      ks[kr++] = (cl_int)s[i];
    }
  }
  /* packed as the kernel reads it: kept dims, kept strides, reduced dims, reduced strides */
  for (i = 0; i < kr; i++) shp[i] = kd[i], shp[kr + i] = ks[i];
  for (i = 0; i < rr; i++) shp[2 * kr + i] = rd[i], shp[2 * kr + rr + i] = rs[i];
  if (mi_sdk_numel(y) != numel_from(x, 0, x->rank) / (rcount ? rcount : 1))
    return mi_sdk_errorf(p->err, MI_ERR_INVALID_ARGUMENT, "%s: output size does not match", n->op_type);
  if (!(l = ew_launch(p, "reduce_generic", n->inputs[0], n->outputs[0], &st))) return st;
  {
    const cl_int sz[] = {(cl_int)mi_sdk_numel(y), kr, rr, (cl_int)rcount};
    mi__ocl_arg_intv(l, sz, 4);
  }
  if ((st = mi__ocl_arg_ints(p, l, shp, 2 * kr + 2 * rr)) != MI_OK) return st;
  mi__ocl_arg_int(l, op);
  mi__ocl_grid1(l, (size_t)mi_sdk_numel(y), WG(p));
  return mi__ocl_check_wg(p, l);
}

static int32_t prep_softmax(ocl_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]);
  int old = n->opset > 0 && n->opset < 13;
  int64_t axis = mi_sdk_attr_int(n, "axis", old ? 1 : -1);
  int64_t outer, len, inner;
  ocl_launch_t *l;
  int32_t st;
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= (x->rank > 0 ? x->rank : 1))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: bad axis", n->op_type);
  outer = numel_from(x, 0, (int)axis);
  len = old ? numel_from(x, (int)axis, x->rank) : x->dims[axis];
  inner = old ? 1 : numel_from(x, (int)axis + 1, x->rank);
  if (!(l = ew_launch(p, "softmax", n->inputs[0], n->outputs[0], &st))) return st;
  {
    const cl_int sz[] = {(cl_int)outer, (cl_int)len, (cl_int)inner, is_op(n, "LogSoftmax")};
    mi__ocl_arg_intv(l, sz, 4);
  }
  mi__ocl_grid1(l, (size_t)(outer * inner), WG(p));
  return mi__ocl_check_wg(p, l);
}

static int32_t prep_layernorm(ocl_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]), *t;
  int64_t axis = mi_sdk_attr_int(n, "axis", -1), rows, len;
  int has_b = n->input_count > 2 && n->inputs[2] >= 0, i;
  ocl_launch_t *l;
  ocl_arg_t a;
  int32_t st;
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank || n->input_count < 2 || p->desc->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "LayerNormalization: bad axis or extra outputs");
  rows = numel_from(x, 0, (int)axis);
  len = numel_from(x, (int)axis, x->rank);
  for (i = 1; i < 2 + has_b; i++) {
    t = mi__ocl_tensor(p->desc, n->inputs[i]);
    if (!t || mi_sdk_numel(t) != len)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "LayerNormalization: scale/bias must cover the normalized shape");
  }
  if (!(l = ew_launch(p, "layernorm", n->inputs[0], n->outputs[0], &st))) return st;
  if ((st = mi__ocl_bind(p, n->inputs[1], &a)) != MI_OK) return st;
  mi__ocl_arg(l, a);
  if (has_b && (st = mi__ocl_bind(p, n->inputs[2], &a)) != MI_OK) return st;
  if (!has_b) a.kind = ARG_DUMMY;
  mi__ocl_arg(l, a);
  mi__ocl_arg_int(l, (cl_int)rows);
  mi__ocl_arg_int(l, (cl_int)len);
  mi__ocl_arg_float(l, mi_sdk_attr_float(n, "epsilon", 1e-5f));
  mi__ocl_arg_int(l, has_b);
  mi__ocl_grid1(l, (size_t)rows, WG(p));
  return mi__ocl_check_wg(p, l);
}

static int32_t prep_pool(ocl_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]);
  const mi_tensor_desc_t *y = mi__ocl_tensor(p->desc, n->outputs[0]);
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int is_max = is_op(n, "MaxPool"), i;
  cl_int g[14];
  ocl_launch_t *l;
  int32_t st;
  if (x->rank != 4 || y->rank != 4 || p->desc->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: only 2-D pooling without indices", n->op_type);
  g[0] = (cl_int)x->dims[2];
  g[1] = (cl_int)x->dims[3];
  g[2] = (cl_int)y->dims[2];
  g[3] = (cl_int)y->dims[3];
  for (i = 0; i < 2; i++) {
    g[4 + i] = (cl_int)mi_sdk_attr_ints_at(n, "kernel_shape", i, 1);
    g[6 + i] = (cl_int)mi_sdk_attr_ints_at(n, "strides", i, 1);
    g[8 + i] = (cl_int)mi_sdk_attr_ints_at(n, "pads", i, 0);
    g[10 + i] = (cl_int)mi_sdk_attr_ints_at(n, "dilations", i, 1);
    g[12 + i] = g[i] + (cl_int)mi_sdk_attr_ints_at(n, "pads", i + 2, 0);
    if (ap && ap->type == MI_ATTR_STRING && ap->s && strncmp(ap->s, "SAME", 4) == 0) {
      int tot = (g[2 + i] - 1) * g[6 + i] + (g[4 + i] - 1) * g[10 + i] + 1 - g[i];
      if (tot < 0) tot = 0;
      g[8 + i] = strcmp(ap->s, "SAME_LOWER") == 0 ? tot - tot / 2 : tot / 2;
      g[12 + i] = g[i] + tot - g[8 + i];
    }
  }
  if (!(l = ew_launch(p, "pool2d", n->inputs[0], n->outputs[0], &st))) return st;
  mi__ocl_arg_int(l, (cl_int)mi_sdk_numel(y));
  if ((st = mi__ocl_arg_ints(p, l, g, 14)) != MI_OK) return st;
  mi__ocl_arg_int(l, is_max ? 0 : (mi_sdk_attr_int(n, "count_include_pad", 0) ? 2 : 1));
  mi__ocl_grid1(l, (size_t)mi_sdk_numel(y), WG(p));
  return mi__ocl_check_wg(p, l);
}

/* A launch without a kernel: bytes of t_in from src_off copied to t_out at dst_off (ocl_run.c). */
static int32_t copy_launch(ocl_prep_t *p, int t_in, int t_out, size_t bytes, size_t src_off, size_t dst_off) {
  ocl_launch_t *l;
  int32_t st;
  if (p->k->nl >= OCL_MAX_LAUNCHES)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "opencl: more than %d launches", OCL_MAX_LAUNCHES);
  l = &p->k->launches[p->k->nl];
  memset(l, 0, sizeof *l);
  if ((st = mi__ocl_bind(p, t_in, &l->args[0])) != MI_OK) return st;
  if ((st = mi__ocl_bind(p, t_out, &l->args[1])) != MI_OK) return st;
  l->nargs = 2;
  l->copy_bytes = bytes;
  l->src_off = src_off;
  l->dst_off = dst_off;
  p->k->nl++;
  return MI_OK;
}

/* 1 when strides `st` walk dims as one dense row-major block (unit axes aside). */
static int dense(int rank, const int64_t *dims, const int64_t *st) {
  int64_t want = 1;
  for (int i = rank - 1; i >= 0; i--) {
    if (dims[i] == 1) continue;
    if (st[i] != want) return 0;
    want *= dims[i];
  }
  return 1;
}

int32_t mi__ocl_strided_copy(ocl_prep_t *p, int t_in, int t_out, int rank, const int64_t *dims,
                             const int64_t *sin, int64_t in_base, const int64_t *sout,
                             int64_t out_base) {
  cl_int shp[3 * MI_MAX_RANK];
  int64_t cnt = 1;
  int i, r = rank > 0 ? rank : 1;
  ocl_launch_t *l;
  int32_t st;
  for (i = 0; i < rank; i++) {
    shp[i] = (cl_int)dims[i];
    shp[r + i] = (cl_int)sin[i];
    shp[2 * r + i] = (cl_int)sout[i];
    cnt *= dims[i];
  }
  if (rank == 0) shp[0] = 1, shp[1] = 0, shp[2] = 0;
  if (cnt == 0) return MI_OK;
  if (dense(rank, dims, sin) && dense(rank, dims, sout) && t_in != t_out) {
    /* One block on both sides (a Concat or Split along the outermost non-unit axis, a Slice of
     * whole rows): a buffer copy at an offset. The kernel spends a division and a modulo per axis
     * per element, one element per work-item: on a CPU device a Concat of 28 channels at 64x64
     * took 0.8 ms that way, a tenth of the model's layer time. */
    return copy_launch(p, t_in, t_out, (size_t)cnt * 4, (size_t)in_base * 4, (size_t)out_base * 4);
  }
  if (!(l = ew_launch(p, "strided_copy", t_in, t_out, &st))) return st;
  mi__ocl_arg_int(l, (cl_int)cnt);
  mi__ocl_arg_int(l, r);
  if ((st = mi__ocl_arg_ints(p, l, shp, 3 * r)) != MI_OK) return st;
  mi__ocl_arg_int(l, (cl_int)in_base);
  mi__ocl_arg_int(l, (cl_int)out_base);
  mi__ocl_grid1(l, (size_t)cnt, WG(p));
  return mi__ocl_check_wg(p, l);
}

static int32_t prep_copy(ocl_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]);
  const mi_tensor_desc_t *y = mi__ocl_tensor(p->desc, n->outputs[0]);
  int64_t sx[MI_MAX_RANK], sy[MI_MAX_RANK], sp[MI_MAX_RANK];
  int i;
  mi_sdk_strides(x, sx);
  mi_sdk_strides(y, sy);
  if (is_op(n, "Transpose")) {
    const mi_attr_t *pa = mi_sdk_attr(n, "perm");
    for (i = 0; i < y->rank; i++) {
      int64_t src = pa && pa->type == MI_ATTR_INTS && i < pa->count ? pa->ints[i] : y->rank - 1 - i;
      if (src < 0 || src >= x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Transpose: bad perm");
      sp[i] = sx[src];
    }
    return mi__ocl_strided_copy(p, n->inputs[0], n->outputs[0], y->rank, y->dims, sp, 0, sy, 0);
  }
  if (is_op(n, "Concat")) {
    int64_t axis = mi_sdk_attr_int(n, "axis", 0), off = 0;
    int32_t st;
    if (axis < 0) axis += y->rank;
    if (axis < 0 || axis >= y->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Concat: bad axis");
    for (i = 0; i < n->input_count; i++) {
      const mi_tensor_desc_t *t = mi__ocl_tensor(p->desc, n->inputs[i]);
      int64_t st_in[MI_MAX_RANK];
      if (!t || t->rank != y->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Concat: rank mismatch");
      mi_sdk_strides(t, st_in);
      st = mi__ocl_strided_copy(p, n->inputs[i], n->outputs[0], t->rank, t->dims, st_in, 0, sy,
                                off * sy[axis]);
      if (st != MI_OK) return st;
      off += t->dims[axis];
    }
    return MI_OK;
  }
  /* Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: the bytes do not move */
  if (mi_sdk_numel(x) != mi_sdk_numel(y) || p->desc->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: sizes differ or extra outputs", n->op_type);
  return copy_launch(p, n->inputs[0], n->outputs[0], (size_t)mi_sdk_numel(y) * 4, 0, 0);
}

int32_t mi__ocl_prepare_op(ocl_prep_t *p) {
  const mi_node_desc_t *n = p->desc->nodes[0];
  const char *id = p->var->v.id;
  int code;
  float a, b;
  if (n->input_count < 1 || n->output_count < 1 || !mi__ocl_tensor(p->desc, n->inputs[0]) ||
      !mi__ocl_tensor(p->desc, n->outputs[0]))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: missing input or output", n->op_type);
  if (p->desc->node_count > 1 && !p->var->v.fuse_mask)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s fuses nothing", id);
  if (strncmp(id, "ew.", 3) == 0) {
    if (is_op(n, "BatchNormalization") || mi__ocl_act_of(p->desc, n, &code, &a, &b, NULL) > 0)
      return prep_unary(p, n);
    return prep_binary(p, n);
  }
  if (strncmp(id, "reduce.", 7) == 0) return prep_reduce(p, n);
  if (strncmp(id, "softmax.", 8) == 0) return prep_softmax(p, n);
  if (strncmp(id, "norm.", 5) == 0) return prep_layernorm(p, n);
  if (strncmp(id, "pool.", 5) == 0) return prep_pool(p, n);
  if (strncmp(id, "shape.", 6) == 0) return mi__ocl_prepare_shape(p);
  return prep_copy(p, n);
}
