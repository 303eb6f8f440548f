/* ocl_prepare_shape.c - prepares the data-movement ops whose operands are constant index
 * tensors: Slice, Split, Pad, Gather and Resize (nearest and linear over H and W). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#define WG(p) ((size_t)(p)->kn.v[K_WG_X])

static int is_op(const mi_node_desc_t *n, const char *op) { return strcmp(n->op_type, op) == 0; }

/* Operand `i` of node n as a constant tensor (NULL when absent); *bad when it is runtime data,
 * which these kernels cannot read at prepare time. */
static const mi_tensor_desc_t *const_in(const ocl_prep_t *p, const mi_node_desc_t *n, int i,
                                        int *bad) {
  const mi_tensor_desc_t *t;
  if (i >= n->input_count || n->inputs[i] < 0) return NULL;
  t = mi__ocl_tensor(p->desc, n->inputs[i]);
  if (!t || (!t->data && mi_sdk_numel(t) > 0)) {
    *bad = 1;
    return NULL;
  }
  return t;
}

/* Integer values of a constant INT64 tensor or of an INTS attribute; -1 when neither. */
static int ints_of(const mi_tensor_desc_t *t, const mi_node_desc_t *n, const char *attr,
                   int64_t *out, int max) {
  int i, cnt;
  if (t) {
    if (t->dtype != MI_DTYPE_INT64 || mi_sdk_numel(t) > max) return -1;
    cnt = (int)mi_sdk_numel(t);
    if (cnt > 0) memcpy(out, t->data, (size_t)cnt * sizeof *out);
    return cnt;
  }
  {
    const mi_attr_t *a = attr ? mi_sdk_attr(n, attr) : NULL;
    if (!a || a->type != MI_ATTR_INTS || a->count > max) return -1;
    for (i = 0; i < a->count; i++) out[i] = a->ints[i];
    return a->count;
  }
}

/* y (dims, contiguous) gets x read at in_base with in strides: Slice and Split. */
static int32_t strided(ocl_prep_t *p, int t_in, int t_out, int rank, const int64_t *dims,
                       const int64_t *sin, int64_t in_base) {
  int64_t sout[MI_MAX_RANK], acc = 1;
  int i;
  for (i = rank - 1; i >= 0; i--) {
    sout[i] = acc;
    acc *= dims[i];
  }
  return mi__ocl_strided_copy(p, t_in, t_out, rank, dims, sin, in_base, sout, 0);
}

static int32_t prep_slice(ocl_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t *x,
                          const mi_tensor_desc_t *y) {
  int64_t st[MI_MAX_RANK], en[MI_MAX_RANK], ax[MI_MAX_RANK], sp[MI_MAX_RANK];
  int64_t sx[MI_MAX_RANK], sin[MI_MAX_RANK], base = 0, start[MI_MAX_RANK], step[MI_MAX_RANK];
  int bad = 0, ns, ne, na, nst, i;
  const mi_tensor_desc_t *ts = const_in(p, n, 1, &bad), *te = const_in(p, n, 2, &bad);
  const mi_tensor_desc_t *ta = const_in(p, n, 3, &bad), *tp = const_in(p, n, 4, &bad);
  if (bad) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Slice: runtime starts/ends/axes/steps");
  ns = ints_of(ts, n, "starts", st, MI_MAX_RANK);
  ne = ints_of(te, n, "ends", en, MI_MAX_RANK);
  na = ta || mi_sdk_attr(n, "axes") ? ints_of(ta, n, "axes", ax, MI_MAX_RANK) : ns;
  nst = tp ? ints_of(tp, NULL, NULL, sp, MI_MAX_RANK) : ns;
  if (ns < 0 || ne != ns || na != ns || nst != ns)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Slice: starts/ends/axes/steps disagree");
  for (i = 0; i < x->rank; i++) start[i] = 0, step[i] = 1;
  for (i = 0; i < ns; i++) {
    int64_t a = (ta || mi_sdk_attr(n, "axes")) ? ax[i] : i, s = tp ? sp[i] : 1, d, b;
    if (a < 0) a += x->rank;
    if (a < 0 || a >= x->rank || s == 0)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Slice: bad axis or zero step");
    d = x->dims[a];
    b = st[i] < 0 ? st[i] + d : st[i];
    /* clamp as ONNX does: [0, d] going forward, [0, d-1] going backward */
    if (s > 0) b = b < 0 ? 0 : b > d ? d
                                     : b;
    else
      b = b < 0 ? 0 : b > d - 1 ? d - 1
                                : b;
    start[a] = b;
    step[a] = s;
  }
  mi_sdk_strides(x, sx);
  for (i = 0; i < x->rank; i++) {
    if (y->dims[i] > 0) base += start[i] * sx[i];
    sin[i] = sx[i] * step[i];
  }
  return strided(p, n->inputs[0], n->outputs[0], y->rank, y->dims, sin, base);
}

static int32_t prep_split(ocl_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t *x) {
  int64_t axis = mi_sdk_attr_int(n, "axis", 0), sx[MI_MAX_RANK], off = 0;
  int i;
  int32_t st;
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Split: bad axis");
  mi_sdk_strides(x, sx);
  for (i = 0; i < n->output_count; i++) {
    const mi_tensor_desc_t *y = mi__ocl_tensor(p->desc, n->outputs[i]);
    if (!y || y->rank != x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Split: rank mismatch");
    st = strided(p, n->inputs[0], n->outputs[i], y->rank, y->dims, sx, off * sx[axis]);
    if (st != MI_OK) return st;
    off += y->dims[axis];
  }
  return off == x->dims[axis] ? MI_OK
                              : mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Split: parts do not cover the axis");
}

static int32_t prep_pad(ocl_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t *x,
                        const mi_tensor_desc_t *y) {
  int64_t pads[2 * MI_MAX_RANK], axes[MI_MAX_RANK], sx[MI_MAX_RANK], begin[MI_MAX_RANK] = {0};
  cl_int shp[4 * MI_MAX_RANK];
  const char *mode = "constant";
  const mi_attr_t *ma = mi_sdk_attr(n, "mode");
  int bad = 0, np, na, i, r = x->rank, m;
  float value = 0.0f;
  const mi_tensor_desc_t *tp = const_in(p, n, 1, &bad), *tv = const_in(p, n, 2, &bad);
  const mi_tensor_desc_t *ta = const_in(p, n, 3, &bad);
  ocl_launch_t *l;
  int32_t st;
  if (bad) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Pad: runtime pads/value/axes");
  if (ma && ma->type == MI_ATTR_STRING && ma->s) mode = ma->s;
  m = strcmp(mode, "constant") == 0 ? 0 : strcmp(mode, "reflect") == 0 ? 1
                                      : strcmp(mode, "edge") == 0      ? 2
                                                                       : -1;
  if (m < 0) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Pad: mode '%s'", mode);
  np = ints_of(tp, n, "pads", pads, 2 * MI_MAX_RANK);
  na = ta ? ints_of(ta, NULL, NULL, axes, MI_MAX_RANK) : r;
  if (np < 0 || na < 0 || np != 2 * na || r < 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Pad: pads and axes disagree");
  for (i = 0; i < na; i++) {
    int64_t a = ta ? axes[i] : i;
    if (a < 0) a += r;
    if (a < 0 || a >= r) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Pad: bad axis");
    begin[a] = pads[i];
  }
  if (tv && mi_sdk_numel(tv) > 0) {
    if (tv->dtype != MI_DTYPE_FLOAT32) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Pad: value dtype");
    memcpy(&value, tv->data, sizeof value);
  } else if (!tp) {
    value = mi_sdk_attr_float(n, "value", 0.0f);
  }
  for (i = 0; i < r; i++)
    if (x->dims[i] == 0 && y->dims[i] > 0 && m != 0)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Pad: %s of an empty axis", mode);
  mi_sdk_strides(x, sx);
  for (i = 0; i < r; i++) {
    shp[i] = (cl_int)y->dims[i];
    shp[r + i] = (cl_int)x->dims[i];
    shp[2 * r + i] = (cl_int)sx[i];
    shp[3 * r + i] = (cl_int)begin[i];
  }
  if (mi_sdk_numel(y) == 0) return MI_OK;
  if (!(l = mi__ocl_launch_io(p, mi__ocl_src_shape, "pad_nd", n->inputs[0], n->outputs[0], &st))) return st;
  mi__ocl_arg_int(l, (cl_int)mi_sdk_numel(y));
  mi__ocl_arg_int(l, r);
  if ((st = mi__ocl_arg_ints(p, l, shp, 4 * r)) != MI_OK) return st;
  mi__ocl_arg_int(l, m);
  mi__ocl_arg_float(l, value);
  mi__ocl_grid1(l, (size_t)mi_sdk_numel(y), WG(p));
  return mi__ocl_check_wg(p, l);
}

static int32_t prep_gather(ocl_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t *x,
                           const mi_tensor_desc_t *y) {
  int64_t axis = mi_sdk_attr_int(n, "axis", 0), inner = 1, nidx, i, k;
  int bad = 0;
  const mi_tensor_desc_t *ti = const_in(p, n, 1, &bad);
  const int64_t *iv;
  cl_int *idx;
  ocl_launch_t *l;
  int32_t st;
  if (bad || !ti || ti->dtype != MI_DTYPE_INT64)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Gather: indices must be constant INT64");
  if (x->data) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Gather: constant data");
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Gather: bad axis");
  k = x->dims[axis];
  for (i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
  nidx = mi_sdk_numel(ti);
  if (mi_sdk_numel(y) == 0) return MI_OK;
  idx = malloc((size_t)(nidx > 0 ? nidx : 1) * sizeof *idx);
  if (!idx) return mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  iv = ti->data;
  for (i = 0; i < nidx; i++) {
    int64_t v = iv[i] < 0 ? iv[i] + k : iv[i];
    if (v < 0 || v >= k) {
      free(idx);
      return mi_sdk_errorf(p->err, MI_ERR_INVALID_ARGUMENT, "Gather: index %lld outside [0, %lld)",
                           (long long)iv[i], (long long)k);
    }
    idx[i] = (cl_int)v;
  }
  l = mi__ocl_launch_io(p, mi__ocl_src_shape, "gather_axis", n->inputs[0], n->outputs[0], &st);
  if (l) {
    const cl_int sz[] = {(cl_int)mi_sdk_numel(y), (cl_int)nidx, (cl_int)inner, (cl_int)k};
    mi__ocl_arg_intv(l, sz, 4);
    st = mi__ocl_arg_ints(p, l, idx, (int)nidx);
  }
  free(idx);
  if (st != MI_OK) return st;
  mi__ocl_grid1(l, (size_t)mi_sdk_numel(y), WG(p));
  return mi__ocl_check_wg(p, l);
}

/* Fills one axis's table: i0 at tab[0..out), i1 at tab[out..2out), weights at wt[0..out). */
static void axis_table(int linear, int ct, int nm, float scale, int64_t in, int64_t out,
                       cl_int *tab, cl_float *wt) {
  int64_t j;
  for (j = 0; j < out; j++) {
    int64_t a, b;
    float w;
    if (out == in && scale == 1.0f) { /* the reference leaves such an axis alone */
      a = b = j;
      w = 0.0f;
    } else {
      mi_sdk_resize_tap(linear, ct, nm, scale, in, out, j, &a, &b, &w);
    }
    tab[j] = (cl_int)a;
    tab[out + j] = (cl_int)b;
    wt[j] = w;
  }
}

static int32_t prep_resize(ocl_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t *x,
                           const mi_tensor_desc_t *y) {
  static const char *const modes[] = {"nearest", "linear"};
  int linear = mi_sdk_pick(mi_sdk_attr_string(n, "mode", "nearest"), modes, 2);
  int ct = mi_sdk_resize_ct_from_name(mi_sdk_attr_string(n, "coordinate_transformation_mode", "half_pixel"));
  int nm = mi_sdk_resize_nearest_from_name(mi_sdk_attr_string(n, "nearest_mode", "round_prefer_floor"));
  int bad = 0, r = x->rank, i;
  const mi_tensor_desc_t *ts = const_in(p, n, 2, &bad);
  float sel[MI_MAX_RANK];
  int64_t hi, wi, ho, wo;
  cl_int *tab = NULL;
  cl_float *wt = NULL;
  ocl_arg_t a;
  ocl_launch_t *l;
  int32_t st;
  if (n->opset < 11 || linear < 0 || ct < 0 || ct > MI_SDK_CT_ASYMMETRIC || nm < 0 || mi_sdk_attr_int(n, "antialias", 0) ||
      mi_sdk_attr(n, "axes") || strcmp(mi_sdk_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch"))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "Resize: opset %d or attributes not "
                         "implemented (nearest/linear, 4 coordinate modes, opset 11+)",
                         (int)n->opset);
  if (bad) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Resize: runtime scales");
  if (r < 2 || y->rank != r) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Resize: rank %d", r);
  for (i = 0; i < r; i++) {
    if (ts && mi_sdk_numel(ts) > 0) {
      if (ts->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(ts) != r)
        return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Resize: scales");
      sel[i] = ((const float *)ts->data)[i];
    } else {
      if (x->dims[i] == 0) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Resize: empty axis");
      sel[i] = (float)y->dims[i] / (float)x->dims[i];
    }
    if (i < r - 2 && (sel[i] != 1.0f || y->dims[i] != x->dims[i]))
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Resize: only the last two axes may change");
  }
  hi = x->dims[r - 2], wi = x->dims[r - 1], ho = y->dims[r - 2], wo = y->dims[r - 1];
  if (mi_sdk_numel(y) == 0) return MI_OK;
  if (hi < 1 || wi < 1) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Resize: empty input");
  tab = malloc((size_t)(2 * ho + 2 * wo) * sizeof *tab);
  wt = malloc((size_t)(ho + wo) * sizeof *wt);
  st = tab && wt ? MI_OK : mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  if (st == MI_OK) {
    axis_table(linear, ct, nm, sel[r - 2], hi, ho, tab, wt);
    axis_table(linear, ct, nm, sel[r - 1], wi, wo, tab + 2 * ho, wt + ho);
    l = mi__ocl_launch_io(p, mi__ocl_src_shape, "resize_hw", n->inputs[0], n->outputs[0], &st);
    if (l) {
      const cl_int sz[] = {(cl_int)mi_sdk_numel(y), (cl_int)hi, (cl_int)wi, (cl_int)ho, (cl_int)wo};
      mi__ocl_arg_intv(l, sz, 5);
      st = mi__ocl_arg_ints(p, l, tab, (int)(2 * ho + 2 * wo));
      if (st == MI_OK && (st = mi__ocl_upload(p, wt, (size_t)(ho + wo) * sizeof *wt, &a)) == MI_OK)
        mi__ocl_arg(l, a);
      if (st == MI_OK) {
        mi__ocl_grid1(l, (size_t)mi_sdk_numel(y), WG(p));
        st = mi__ocl_check_wg(p, l);
      }
    }
  }
  free(tab);
  free(wt);
  return st;
}

int32_t mi__ocl_prepare_shape(ocl_prep_t *p) {
  const mi_node_desc_t *n = p->desc->nodes[0];
  const mi_tensor_desc_t *x = mi__ocl_tensor(p->desc, n->inputs[0]);
  const mi_tensor_desc_t *y = mi__ocl_tensor(p->desc, n->outputs[0]);
  if (p->desc->node_count > 1) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s fuses nothing", p->var->v.id);
  if (x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: FP32 data only", n->op_type);
  if (is_op(n, "Split")) return prep_split(p, n, x);
  if (y->rank != x->rank && !is_op(n, "Gather"))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: rank changes", n->op_type);
  if (is_op(n, "Slice")) return prep_slice(p, n, x, y);
  if (is_op(n, "Pad")) return prep_pad(p, n, x, y);
  if (is_op(n, "Gather")) return prep_gather(p, n, x, y);
  return prep_resize(p, n, x, y);
}
