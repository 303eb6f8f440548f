/* vk_prepare_ops.c - kernel_prepare for the element-wise, normalization, pooling, reduction
 * and data-movement ops (one node each). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

#define EW_RANK 6

static void fpush(vk_disp_t *d, int at, float v) { memcpy(&d->push[at], &v, 4); }

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* An element-wise dispatch: push words n op act rank p0 p1 ooff boff2 dims sa sb so. */
static vk_disp_t *ew_new(vk_prep_t *p, int op, int act, float p0, float p1, int rank,
                         const int64_t *dims, int32_t *rc) {
  vk_disp_t *d = mi__vk_disp_new(p, "eltwise", rc);
  int i;
  if (!d) return NULL;
  d->push[0] = (uint32_t)prod(dims, 0, rank);
  d->push[1] = (uint32_t)op;
  d->push[2] = (uint32_t)act;
  d->push[3] = (uint32_t)rank;
  fpush(d, 4, p0);
  fpush(d, 5, p1);
  for (i = 0; i < rank; i++) d->push[8 + i] = (uint32_t)dims[i];
  mi__vk_grid1(p, d, d->push[0]);
  return d;
}

static void contiguous(const int64_t *dims, int rank, uint32_t *out) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) out[i] = (uint32_t)s, s *= dims[i];
}

/* Strides of `t` right-aligned to an output of `rank` dims: 0 where t broadcasts. */
static int bcast(const mi_tensor_desc_t *t, const int64_t *odims, int rank, uint32_t *out) {
  int64_t s = 1;
  int i, off = rank - t->rank;
  if (off < 0) return 0;
  for (i = rank - 1; i >= 0; i--) {
    int64_t dim = i >= off ? t->dims[i - off] : 1;
    if (dim != 1 && dim != odims[i]) return 0;
    out[i] = dim == 1 ? 0 : (uint32_t)s;
    s *= dim;
  }
  return 1;
}

static int32_t copy_op(vk_prep_t *p, int in, int out) {
  int32_t rc;
  vk_disp_t *d = mi__vk_disp_new(p, NULL, &rc);
  if (!d) return rc;
  d->copy_bytes = (uint64_t)mi_sdk_numel(mi__vk_tensor(p->desc, out)) * 4;
  if ((rc = mi__vk_bind(p, in, &d->bind[0])) != MI_OK) return rc;
  return mi__vk_bind(p, out, &d->bind[2]);
}

static const char *const k_binary[] = {"", "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu", NULL};

static int32_t binary(vk_prep_t *p, const mi_node_desc_t *n, int op) {
  const mi_kernel_desc_t *desc = p->desc;
  const mi_tensor_desc_t *y = mi__vk_tensor(desc, n->outputs[0]);
  const mi_tensor_desc_t *a = mi__vk_tensor(desc, n->inputs[0]), *b = mi__vk_tensor(desc, n->inputs[1]);
  uint32_t sa[EW_RANK], sb[EW_RANK], so[EW_RANK];
  vk_disp_t *d;
  int32_t rc;
  int i, rank = y->rank ? y->rank : 1;
  int64_t one = 1;
  const int64_t *dims = y->rank ? y->dims : &one;
  if (rank > EW_RANK || !a || !b || !bcast(a, dims, rank, sa) || !bcast(b, dims, rank, sb))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: rank > %d or shapes do not broadcast",
                         n->op_type, EW_RANK);
  contiguous(dims, rank, so);
  if (!(d = ew_new(p, op, ACT_NONE, 0, 0, rank, dims, &rc))) return rc;
  for (i = 0; i < rank; i++) d->push[14 + i] = sa[i], d->push[20 + i] = sb[i], d->push[26 + i] = so[i];
  if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
  if ((rc = mi__vk_bind(p, n->inputs[1], &d->bind[1])) != MI_OK) return rc;
  return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
}

static int32_t batchnorm(vk_prep_t *p, const mi_node_desc_t *n) {
  const mi_kernel_desc_t *desc = p->desc;
  const mi_tensor_desc_t *x = mi__vk_tensor(desc, n->inputs[0]), *t[4];
  float *packed;
  int64_t C, dims[3];
  int32_t rc;
  vk_disp_t *d;
  int i, k;
  if (n->input_count < 5 || !x || x->rank < 2 || n->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: BatchNormalization: inference form only");
  C = x->dims[1];
  for (k = 0; k < 4; k++) {
    t[k] = mi__vk_tensor(desc, n->inputs[k + 1]);
    if (!t[k] || !t[k]->data || t[k]->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t[k]) != C)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: BatchNormalization: parameters must be constant");
  }
  if (!(packed = malloc((size_t)C * 8)))
    return mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  for (i = 0; i < C; i++) {
    const float *s = t[0]->data, *b = t[1]->data, *m = t[2]->data, *v = t[3]->data;
    float sc = s[i] / sqrtf(v[i] + mi_sdk_attr_float(n, "epsilon", 1e-5f));
    packed[i] = sc;
    packed[C + i] = b[i] - m[i] * sc;
  }
  dims[0] = x->dims[0], dims[1] = C, dims[2] = prod(x->dims, 2, x->rank);
  d = ew_new(p, 9, ACT_NONE, 0, 0, 3, dims, &rc);
  if (d) {
    d->push[7] = (uint32_t)C;
    d->push[14] = d->push[26] = (uint32_t)(C * dims[2]);
    d->push[15] = d->push[27] = (uint32_t)dims[2];
    d->push[16] = d->push[28] = 1;
    d->push[21] = 1;
    rc = mi__vk_upload(p, packed, (size_t)C * 8, &d->bind[1]);
    if (rc == MI_OK) rc = mi__vk_bind(p, n->inputs[0], &d->bind[0]);
    if (rc == MI_OK) rc = mi__vk_bind(p, n->outputs[0], &d->bind[2]);
  }
  free(packed);
  return rc;
}

static int32_t transpose(vk_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[0]);
  uint32_t in_st[EW_RANK];
  vk_disp_t *d;
  int32_t rc;
  int i, r = x->rank;
  if (r < 1 || r > EW_RANK) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Transpose: rank %d", r);
  contiguous(x->dims, r, in_st);
  if (!(d = ew_new(p, 0, ACT_NONE, 0, 0, r, mi__vk_tensor(p->desc, n->outputs[0])->dims, &rc))) return rc;
  contiguous(mi__vk_tensor(p->desc, n->outputs[0])->dims, r, &d->push[26]);
  for (i = 0; i < r; i++) {
    int64_t pi = mi_sdk_attr_ints_at(n, "perm", i, r - 1 - i);
    if (pi < 0 || pi >= r) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Transpose: bad perm");
    d->push[14 + i] = in_st[pi];
  }
  if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
  return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
}

/* Attribute (opset < 10) or constant INT64 input `slot` (opset >= 10) of Slice; -1 when absent,
 * -2 when it is a runtime tensor. */
static int slice_arg(vk_prep_t *p, const mi_node_desc_t *n, int slot, const char *attr, const int64_t **v) {
  const mi_tensor_desc_t *t;
  const mi_attr_t *a;
  *v = NULL;
  if (n->opset > 0 && n->opset < 10) {
    if (!(a = mi_sdk_attr(n, attr)) || a->type != MI_ATTR_INTS) return -1;
    *v = a->ints;
    return (int)a->count;
  }
  if (slot >= n->input_count || n->inputs[slot] < 0) return -1;
  t = mi__vk_tensor(p->desc, n->inputs[slot]);
  if (!t || !t->data || t->dtype != MI_DTYPE_INT64) return -2;
  *v = t->data;
  return (int)mi_sdk_numel(t);
}

/* Slice is a strided copy: per axis the input stride times the step, and the first element's
 * offset in push word 7 (eltwise reads it as A's offset when op == 0). The output shape comes
 * from shape inference, so only the clamped starts are computed here. */
static int32_t slice(vk_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[0]), *y = mi__vk_tensor(p->desc, n->outputs[0]);
  const int64_t *st, *en, *ax, *sp;
  int64_t start[EW_RANK] = {0}, step[EW_RANK] = {1, 1, 1, 1, 1, 1}, off = 0;
  uint32_t in_st[EW_RANK];
  int ns = slice_arg(p, n, 1, "starts", &st), ne = slice_arg(p, n, 2, "ends", &en);
  int na = slice_arg(p, n, 3, "axes", &ax), np = slice_arg(p, n, 4, "steps", &sp);
  int i, r = x->rank;
  vk_disp_t *d;
  int32_t rc;
  if (r < 1 || r > EW_RANK || !y || y->rank != r || ns < 0 || ne != ns || na == -2 || (na >= 0 && na != ns) ||
      np == -2 || (np >= 0 && np != ns))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Slice: needs constant starts/ends/axes/steps, rank <= %d",
                         EW_RANK);
  for (i = 0; i < ns; i++) {
    int64_t a = na >= 0 ? ax[i] : i, dim, s0 = st[i], k = np >= 0 ? sp[i] : 1;
    if (a < 0) a += r;
    if (a < 0 || a >= r || k == 0) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Slice: bad axis or step");
    dim = x->dims[a];
    if (s0 < 0) s0 += dim;
    if (s0 < 0) s0 = 0;
    if (k > 0 && s0 > dim) s0 = dim;
    if (k < 0 && s0 > dim - 1) s0 = dim - 1;
    start[a] = s0, step[a] = k;
  }
  contiguous(x->dims, r, in_st);
  if (!(d = ew_new(p, 0, ACT_NONE, 0, 0, r, y->dims, &rc))) return rc;
  contiguous(y->dims, r, &d->push[26]);
  for (i = 0; i < r; i++) {
    d->push[14 + i] = (uint32_t)(int32_t)(in_st[i] * step[i]);
    off += start[i] * in_st[i];
  }
  d->push[7] = (uint32_t)off;
  if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
  return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
}

/* Resize by integer factors with nearest sampling where every mode picks floor(o / f): the
 * output is viewed with one extra dim of size f (input stride 0) after each upsampled axis,
 * which makes it a broadcast copy. */
static int32_t resize(vk_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[0]), *y = mi__vk_tensor(p->desc, n->outputs[0]);
  const mi_tensor_desc_t *sc = n->input_count > 2 && n->inputs[2] >= 0 ? mi__vk_tensor(p->desc, n->inputs[2]) : NULL;
  const mi_attr_t *mode = mi_sdk_attr(n, "mode"), *ctm = mi_sdk_attr(n, "coordinate_transformation_mode");
  const mi_attr_t *nm = mi_sdk_attr(n, "nearest_mode");
  const char *c = ctm && ctm->s ? ctm->s : "half_pixel", *r = nm && nm->s ? nm->s : "round_prefer_floor";
  int64_t dims[EW_RANK];
  uint32_t in_st[MI_MAX_RANK], st[EW_RANK];
  int i, k = 0, ok;
  vk_disp_t *d;
  int32_t rc;
  /* half_pixel maps o = f*i + j into (i - 1/2, i + 1/2), so both round modes give i. */
  ok = n->opset >= 11 && (!mode || !mode->s || !strcmp(mode->s, "nearest")) && y && y->rank == x->rank &&
       ((!strcmp(c, "asymmetric") && !strcmp(r, "floor")) ||
        (!strcmp(c, "half_pixel") && !strncmp(r, "round_prefer_", 13)));
  if (ok && sc && mi_sdk_numel(sc) > 0 && (!sc->data || sc->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(sc) != x->rank))
    ok = 0;
  if (ok) contiguous(x->dims, x->rank, in_st);
  for (i = 0; ok && i < x->rank; i++) {
    int64_t f = x->dims[i] > 0 ? y->dims[i] / x->dims[i] : 0;
    if (f < 1 || y->dims[i] != f * x->dims[i] || (sc && mi_sdk_numel(sc) > 0 && ((const float *)sc->data)[i] != (float)f) ||
        k + (f > 1) >= EW_RANK) {
      ok = 0;
      break;
    }
    dims[k] = x->dims[i], st[k++] = in_st[i];
    if (f > 1) dims[k] = f, st[k++] = 0;
  }
  if (!ok)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "vulkan: Resize: only nearest by integer factors (asymmetric+floor or half_pixel), at most %d view dims",
                         EW_RANK);
  if (!(d = ew_new(p, 0, ACT_NONE, 0, 0, k, dims, &rc))) return rc;
  contiguous(dims, k, &d->push[26]);
  for (i = 0; i < k; i++) d->push[14 + i] = st[i];
  if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
  return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
}

static int32_t concat(vk_prep_t *p, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *y = mi__vk_tensor(p->desc, n->outputs[0]);
  int64_t axis = mi_sdk_attr_int(n, "axis", 0), off = 0, outer, inner, dims[3];
  int32_t rc;
  int i;
  if (axis < 0) axis += y->rank;
  if (axis < 0 || axis >= y->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Concat: bad axis");
  outer = prod(y->dims, 0, (int)axis);
  inner = prod(y->dims, (int)axis + 1, y->rank);
  for (i = 0; i < n->input_count; i++) {
    const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[i]);
    vk_disp_t *d;
    if (!x || x->rank != y->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Concat: bad input");
    dims[0] = outer, dims[1] = x->dims[axis], dims[2] = inner;
    if (dims[1] == 0) continue;
    if (outer == 1) {
      /* The input is one block of the output (a channel Concat of one image): a buffer copy at
       * an offset, not a shader invocation per element. */
      if (!(d = mi__vk_disp_new(p, NULL, &rc))) return rc;
      d->copy_bytes = (uint64_t)(dims[1] * inner) * 4;
      d->dst_off = (uint64_t)(off * inner) * 4;
      if ((rc = mi__vk_bind(p, n->inputs[i], &d->bind[0])) != MI_OK) return rc;
      if ((rc = mi__vk_bind(p, n->outputs[0], &d->bind[2])) != MI_OK) return rc;
      off += dims[1];
      continue;
    }
    if (!(d = ew_new(p, 0, ACT_NONE, 0, 0, 3, dims, &rc))) return rc;
    d->push[6] = (uint32_t)(off * inner);
    d->push[14] = (uint32_t)(dims[1] * inner), d->push[15] = (uint32_t)inner, d->push[16] = 1;
    d->push[26] = (uint32_t)(y->dims[axis] * inner), d->push[27] = (uint32_t)inner, d->push[28] = 1;
    if ((rc = mi__vk_bind(p, n->inputs[i], &d->bind[0])) != MI_OK) return rc;
    if ((rc = mi__vk_bind(p, n->outputs[0], &d->bind[2])) != MI_OK) return rc;
    off += dims[1];
  }
  return MI_OK;
}

static int32_t pool(vk_prep_t *p, const mi_node_desc_t *n, int mode) {
  const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[0]), *y = mi__vk_tensor(p->desc, n->outputs[0]);
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int64_t v[17];
  vk_disp_t *d;
  int32_t rc;
  int i;
  if (!x || x->rank != 4 || n->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: 2-D, one output only", n->op_type);
  v[0] = x->dims[0] * x->dims[1], v[1] = x->dims[2], v[2] = x->dims[3], v[3] = y->dims[2], v[4] = y->dims[3];
  v[5] = mi_sdk_attr_ints_at(n, "kernel_shape", 0, 1), v[6] = mi_sdk_attr_ints_at(n, "kernel_shape", 1, 1);
  v[7] = mi_sdk_attr_ints_at(n, "strides", 0, 1), v[8] = mi_sdk_attr_ints_at(n, "strides", 1, 1);
  v[9] = mi_sdk_attr_ints_at(n, "pads", 0, 0), v[10] = mi_sdk_attr_ints_at(n, "pads", 1, 0);
  v[11] = mi_sdk_attr_ints_at(n, "dilations", 0, 1), v[12] = mi_sdk_attr_ints_at(n, "dilations", 1, 1);
  v[13] = mode, v[14] = mi_sdk_attr_int(n, "count_include_pad", 0);
  v[15] = mi_sdk_attr_ints_at(n, "pads", 2, v[9]), v[16] = mi_sdk_attr_ints_at(n, "pads", 3, v[10]);
  if (ap && ap->s && strncmp(ap->s, "SAME", 4) == 0)
    for (i = 0; i < 2; i++) {
      int64_t tot = (v[3 + i] - 1) * v[7 + i] + (v[5 + i] - 1) * v[11 + i] + 1 - v[1 + i];
      if (tot < 0) tot = 0;
      v[9 + i] = strcmp(ap->s, "SAME_LOWER") == 0 ? tot - tot / 2 : tot / 2;
      v[15 + i] = tot - v[9 + i];
    }
  if (!(d = mi__vk_disp_new(p, "pool", &rc))) return rc;
  for (i = 0; i < 17; i++) d->push[i] = (uint32_t)v[i];
  mi__vk_grid1(p, d, (uint64_t)(v[0] * v[3] * v[4]));
  if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
  return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
}

/* rowop: outer L inner mode eps has_gamma has_beta. */
static int32_t rowop(vk_prep_t *p, const mi_node_desc_t *n, int64_t outer, int64_t L,
                     int64_t inner, int mode, float eps, int gamma, int beta) {
  vk_disp_t *d;
  int32_t rc;
  if (!(d = mi__vk_disp_new(p, "rowop", &rc))) return rc;
  d->push[0] = (uint32_t)outer, d->push[1] = (uint32_t)L, d->push[2] = (uint32_t)inner;
  d->push[3] = (uint32_t)mode;
  fpush(d, 4, eps);
  d->push[5] = gamma >= 0, d->push[6] = beta >= 0;
  mi__vk_grid1(p, d, (uint64_t)(outer * inner));
  if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
  if (gamma >= 0 && (rc = mi__vk_bind(p, gamma, &d->bind[3])) != MI_OK) return rc;
  if (beta >= 0 && (rc = mi__vk_bind(p, beta, &d->bind[4])) != MI_OK) return rc;
  return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
}

static int32_t reduce(vk_prep_t *p, const mi_node_desc_t *n, int mode) {
  const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[0]);
  const mi_attr_t *aa = mi_sdk_attr(n, "axes");
  const int64_t *axes = NULL;
  int64_t cnt = 0, lo = MI_MAX_RANK, hi = -1;
  int i, mask = 0;
  if (aa && aa->type == MI_ATTR_INTS) axes = aa->ints, cnt = aa->count;
  if (n->input_count > 1 && n->inputs[1] >= 0) {
    const mi_tensor_desc_t *t = mi__vk_tensor(p->desc, n->inputs[1]);
    if (!t || !t->data || t->dtype != MI_DTYPE_INT64)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: axes must be constant", n->op_type);
    axes = t->data, cnt = mi_sdk_numel(t);
  }
  if (cnt == 0 && mi_sdk_attr_int(n, "noop_with_empty_axes", 0)) return copy_op(p, n->inputs[0], n->outputs[0]);
  for (i = 0; i < (cnt ? cnt : x->rank); i++) {
    int64_t a = cnt ? axes[i] : i;
    if (a < 0) a += x->rank;
    if (a < 0 || a >= x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: bad axis", n->op_type);
    mask |= 1 << a;
    lo = a < lo ? a : lo, hi = a > hi ? a : hi;
  }
  for (i = (int)lo; i <= hi; i++)
    if (!(mask & (1 << i)))
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: only contiguous axes", n->op_type);
  return rowop(p, n, prod(x->dims, 0, (int)lo), prod(x->dims, (int)lo, (int)hi + 1),
               prod(x->dims, (int)hi + 1, x->rank), mode, 0.0f, -1, -1);
}

int32_t mi__vk_prepare_op(vk_prep_t *p) {
  const mi_node_desc_t *n = p->desc->nodes[0];
  const char *op = n->op_type;
  const mi_tensor_desc_t *x = mi__vk_tensor(p->desc, n->inputs[0]);
  int code, i;
  float a, b;
  if (p->desc->node_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: fused groups only start with Conv/Gemm/MatMul", op);
  if (!x || n->output_count < 1 || !mi__vk_tensor(p->desc, n->outputs[0]))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: missing input or output", op);
  if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") ||
      !strcmp(op, "Unsqueeze") || !strcmp(op, "Identity") ||
      ((!strcmp(op, "Max") || !strcmp(op, "Min")) && n->input_count == 1))
    return copy_op(p, n->inputs[0], n->outputs[0]);
  for (i = 1; k_binary[i]; i++)
    if (!strcmp(op, k_binary[i])) {
      if (n->input_count != 2)
        return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s with %d inputs", op, (int)n->input_count);
      return binary(p, n, i);
    }
  if (mi__vk_act_of(p->desc, n, &code, &a, &b)) {
    int64_t num = mi_sdk_numel(x);
    uint32_t one = 1;
    int32_t rc;
    vk_disp_t *d = ew_new(p, 0, code, a, b, 1, &num, &rc);
    if (!d) return rc;
    d->push[14] = d->push[26] = one;
    if ((rc = mi__vk_bind(p, n->inputs[0], &d->bind[0])) != MI_OK) return rc;
    return mi__vk_bind(p, n->outputs[0], &d->bind[2]);
  }
  if (!strcmp(op, "BatchNormalization")) return batchnorm(p, n);
  if (!strcmp(op, "Transpose")) return transpose(p, n);
  if (!strcmp(op, "Concat")) return concat(p, n);
  if (!strcmp(op, "Slice")) return slice(p, n);
  if (!strcmp(op, "Resize")) return resize(p, n);
  if (!strcmp(op, "MaxPool")) return pool(p, n, 0);
  if (!strcmp(op, "AveragePool")) return pool(p, n, 1);
  if (!strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool")) {
    if (x->rank < 3) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: rank %d", op, (int)x->rank);
    return rowop(p, n, x->dims[0] * x->dims[1], prod(x->dims, 2, x->rank), 1, op[6] == 'A' ? 3 : 5, 0, -1, -1);
  }
  if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) {
    int64_t axis = mi_sdk_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: bad axis", op);
    if (n->opset >= 13)
      return rowop(p, n, prod(x->dims, 0, (int)axis), x->dims[axis], prod(x->dims, (int)axis + 1, x->rank),
                   op[0] == 'L', 0, -1, -1);
    return rowop(p, n, prod(x->dims, 0, (int)axis), prod(x->dims, (int)axis, x->rank), 1, op[0] == 'L', 0, -1, -1);
  }
  if (!strcmp(op, "LayerNormalization")) {
    int64_t axis = mi_sdk_attr_int(n, "axis", -1), L;
    int g = n->input_count > 1 ? n->inputs[1] : -1, bt = n->input_count > 2 ? n->inputs[2] : -1;
    if (axis < 0) axis += x->rank;
    L = prod(x->dims, (int)axis, x->rank);
    if (n->output_count > 1 || axis < 0 || axis >= x->rank ||
        (g >= 0 && mi_sdk_numel(mi__vk_tensor(p->desc, g)) != L) ||
        (bt >= 0 && mi_sdk_numel(mi__vk_tensor(p->desc, bt)) != L))
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: LayerNormalization: scale/bias must cover the normalized dims, one output");
    return rowop(p, n, prod(x->dims, 0, (int)axis), L, 1, 2, mi_sdk_attr_float(n, "epsilon", 1e-5f), g, bt);
  }
  if (!strcmp(op, "ReduceMean")) return reduce(p, n, 3);
  if (!strcmp(op, "ReduceSum")) return reduce(p, n, 4);
  if (!strcmp(op, "ReduceMax")) return reduce(p, n, 5);
  if (!strcmp(op, "ReduceMin")) return reduce(p, n, 6);
  return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: op %s is not implemented", op);
}
