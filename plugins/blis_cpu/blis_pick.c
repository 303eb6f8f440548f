/* blis_pick.c - CastLike (FLOAT32 to FLOAT32), Hardmax, OneHot, GatherND and ScatterElements (any element type): ops that pick or move whole elements. */
#include <stdio.h>
#include <string.h>

#include "blis_internal.h"

/* An index tensor's element i (INT64 or INT32; OneHot's may be FLOAT32, truncated as ONNX casts). */
static inline int64_t index_at(const void *p, int32_t dtype, int64_t i) {
  if (dtype == MI_DTYPE_INT64) return ((const int64_t *)p)[i];
  if (dtype == MI_DTYPE_INT32) return ((const int32_t *)p)[i];
  {
    float v = ((const float *)p)[i];
    return v > -1e15f && v < 1e15f ? (int64_t)v : INT64_MAX; /* NaN, huge: out of range */
  }
}

static int is_index(const mi_tensor_desc_t *t) {
  return t && (t->dtype == MI_DTYPE_INT64 || t->dtype == MI_DTYPE_INT32);
}

static int is_f32(const mi_tensor_desc_t *t) {
  return t && t->dtype == MI_DTYPE_FLOAT32;
}

int mi__blis_index_input(const mi_kernel_desc_t *d, int32_t t) {
  int32_t i, j, read = 0;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int at = !strcmp(n->op_type, "OneHot")                                                                                ? 0
             : !strcmp(n->op_type, "Gather") || !strcmp(n->op_type, "GatherND") || !strcmp(n->op_type, "ScatterElements") ? 1
                                                                                                                          : -1;
    for (j = 0; j < n->output_count; j++)
      if (n->outputs[j] == t) return 0;
    for (j = 0; j < n->input_count; j++) {
      if (n->inputs[j] != t) continue;
      if (j != at) return 0;
      read = 1;
    }
  }
  return read;
}

/* An index found out of range at run time: a one-line error naming the node. */
static int32_t bad_index(mi_error_t *err, const char *op, const char *name, int64_t v, int32_t axis, int64_t len) {
  return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: %s '%s': index %lld is out of range for axis %d of size %lld",
                       op, name, (long long)v, (int)axis, (long long)len);
}

/* ---- CastLike: the plugin's runtime tensors are FLOAT32, so only a FLOAT32 -> FLOAT32 copy */

int32_t mi__blis_prep_castlike(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  if (!is_f32(mi__blis_tensor(p, mi__blis_in(n, 0))) || !is_f32(mi__blis_tensor(p, mi__blis_in(n, 1))) ||
      !is_f32(mi__blis_tensor(p, mi__blis_out(n, 0))))
    return mi__blis_unsupported(err, n, "only FLOAT32 like FLOAT32 is run");
  return mi__blis_prep_copy(p, s, err);
}

/* ---- Hardmax: 1 at the first maximum of each line, 0 elsewhere */

typedef struct line_state {
  int32_t x, y, ind, vals, idt;
  int64_t outer, len, inner;
} line_state_t;

static void hardmax_part(void *arg, int64_t o0, int64_t o1) {
  const mi__blis_task_t *nt = arg;
  const line_state_t *st = nt->state;
  const float *x = nt->t[st->x];
  float *y = nt->t[st->y];
  int64_t o, r, k, blk = st->len * st->inner;
  for (o = o0; o < o1; o++) {
    const float *xb = x + o * blk;
    float *yb = y + o * blk;
    memset(yb, 0, (size_t)blk * sizeof *yb);
    for (r = 0; st->len > 0 && r < st->inner; r++) {
      int64_t best = 0;
      float bv = xb[r];
      for (k = 1; k < st->len; k++)
        if (xb[k * st->inner + r] > bv) bv = xb[(best = k) * st->inner + r];
      yb[best * st->inner + r] = 1.0f;
    }
  }
}

static int32_t run_hardmax(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const line_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer, 1, st->len * st->inner * 2, hardmax_part);
}

int32_t mi__blis_prep_hardmax(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
  line_state_t *st;
  if (!is_f32(x) || !is_f32(y) || x->rank < 1 || mi_sdk_numel(x) != mi_sdk_numel(y))
    return mi__blis_unsupported(err, n, "input and output must be FLOAT32 of one shape, rank >= 1");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!mi__blis_axis_split(x, &axis, &st->outer, &st->len, &st->inner))
    return mi__blis_unsupported(err, n, "axis out of range");
  if (n->opset < 13) { /* the input as a 2-D [outer, rest] matrix: one line per row */
    st->len *= st->inner;
    st->inner = 1;
  }
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  s->run = run_hardmax;
  return MI_OK;
}

/* ---- OneHot: y = indices' shape with depth inserted at axis; on where j == index (negative
 * indices count from depth), off elsewhere; an out-of-range index gives a line of off */

static void onehot_part(void *arg, int64_t o0, int64_t o1) {
  const mi__blis_task_t *nt = arg;
  const line_state_t *st = nt->state;
  const void *ind = nt->t[st->ind];
  const float *v = nt->t[st->vals];
  float *y = nt->t[st->y], off = v[0], on = v[1];
  int64_t o, r, j, depth = st->len, blk = depth * st->inner;
  for (o = o0; o < o1; o++) {
    float *yb = y + o * blk;
    for (j = 0; j < blk; j++) yb[j] = off;
    for (r = 0; r < st->inner; r++) {
      int64_t k = index_at(ind, st->idt, o * st->inner + r);
      if (k < 0 && k >= -depth) k += depth;
      if (k >= 0 && k < depth) yb[k * st->inner + r] = on;
    }
  }
}

static int32_t run_onehot(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const line_state_t *st = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, st->outer, 1, st->len * st->inner + st->inner * 4, onehot_part);
}

int32_t mi__blis_prep_onehot(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *ind = mi__blis_tensor(p, mi__blis_in(n, 0)), *vals = mi__blis_tensor(p, mi__blis_in(n, 2));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t depth, axis = mi_sdk_attr_int(n, "axis", -1);
  int32_t d;
  line_state_t *st;
  if (!ind || !(is_index(ind) || is_f32(ind)) || !is_f32(vals) || !is_f32(y) || mi_sdk_numel(vals) != 2)
    return mi__blis_unsupported(err, n, "indices must be INT64, INT32 or FLOAT32 and values two FLOAT32");
  if (mi__blis_const_ints(p, mi__blis_in(n, 1), &depth, 1) != 1 || depth < 1)
    return mi__blis_unsupported(err, n, "depth must be a constant integer of at least 1");
  if (axis < 0) axis += ind->rank + 1;
  if (axis < 0 || axis > ind->rank || y->rank != ind->rank + 1) return mi__blis_unsupported(err, n, "axis out of range");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->outer = st->inner = 1;
  for (d = 0; d < ind->rank; d++) {
    if (y->dims[d < axis ? d : d + 1] != ind->dims[d]) return mi__blis_unsupported(err, n, "output shape");
    if (d < axis) st->outer *= ind->dims[d];
    else
      st->inner *= ind->dims[d];
  }
  if (y->dims[axis] != depth) return mi__blis_unsupported(err, n, "output shape");
  st->len = depth;
  st->ind = mi__blis_in(n, 0);
  st->idt = ind->dtype;
  st->vals = mi__blis_in(n, 2);
  st->y = mi__blis_out(n, 0);
  s->run = run_onehot;
  return MI_OK;
}

/* ---- GatherND (batch_dims b): each tuple of k indices picks the slice data[batch..., tuple] */

typedef struct nd_state {
  int32_t x, ind, upd, y, idt, k, b, axis, red, dt, es; /* dt, es: ScatterElements' data type and its size */
  int64_t tuples, per_batch, slice, n, total;           /* total: data's values */
  int64_t xdims[MI_MAX_RANK], xs[MI_MAX_RANK];
  int32_t rank;
  int64_t idims[MI_MAX_RANK], ist[MI_MAX_RANK]; /* ScatterElements: indices' dims, their strides into x (axis 0) */
  char op[24], name[64];
} nd_state_t;

static int32_t run_gather_nd(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const nd_state_t *st = s->state;
  const float *x = t[st->x];
  const void *ind = t[st->ind];
  float *y = t[st->y];
  int64_t tu;
  int32_t d, j;
  (void)env;
  for (tu = 0; tu < st->tuples; tu++) {
    int64_t off = 0, bi = st->per_batch ? tu / st->per_batch : 0;
    for (d = st->b - 1; d >= 0; d--) { /* the batch index as a multi-index over data's first b dims */
      off += (bi % st->xdims[d]) * st->xs[d];
      bi /= st->xdims[d];
    }
    for (j = 0; j < st->k; j++) {
      int64_t v = index_at(ind, st->idt, tu * st->k + j), len = st->xdims[st->b + j];
      if (v < -len || v >= len) return bad_index(err, st->op, st->name, v, st->b + j, len);
      off += (v < 0 ? v + len : v) * st->xs[st->b + j];
    }
    memcpy(y + tu * st->slice, x + off, (size_t)st->slice * sizeof *y);
  }
  return MI_OK;
}

static nd_state_t *nd_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n, const mi_tensor_desc_t *x,
                          mi_error_t *err) {
  nd_state_t *st = mi__blis_state_new(p, s, sizeof *st, err);
  int32_t d;
  int64_t stride = 1;
  if (!st) return NULL;
  snprintf(st->op, sizeof st->op, "%s", n->op_type);
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  st->rank = x->rank;
  for (d = x->rank - 1; d >= 0; d--) {
    st->xdims[d] = x->dims[d];
    st->xs[d] = stride;
    stride *= x->dims[d];
  }
  st->total = stride;
  return st;
}

int32_t mi__blis_prep_gather_nd(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *ind = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t b = mi_sdk_attr_int(n, "batch_dims", 0), k, batch = 1;
  int32_t d;
  nd_state_t *st;
  if (!is_f32(x) || !is_f32(y) || !is_index(ind)) return mi__blis_unsupported(err, n, "data must be FLOAT32, indices INT64 or INT32");
  if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= x->rank) return mi__blis_unsupported(err, n, "batch_dims out of range");
  k = ind->dims[ind->rank - 1];
  if (k < 1 || k > x->rank - b) return mi__blis_unsupported(err, n, "the last dim of indices is out of range");
  for (d = 0; d < b; d++) {
    if (ind->dims[d] != x->dims[d]) return mi__blis_unsupported(err, n, "batch dims of indices and data differ");
    batch *= x->dims[d];
  }
  if (!(st = nd_new(p, s, n, x, err))) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->ind = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->idt = ind->dtype;
  st->k = (int32_t)k;
  st->b = (int32_t)b;
  st->slice = 1;
  for (d = (int32_t)(b + k); d < x->rank; d++) st->slice *= x->dims[d];
  st->tuples = mi_sdk_numel(ind) / k;
  st->per_batch = batch ? st->tuples / batch : 0;
  if (mi_sdk_numel(y) != st->tuples * st->slice) return mi__blis_unsupported(err, n, "output shape");
  s->run = run_gather_nd;
  return MI_OK;
}

/* ---- ScatterElements: y = data, then each update at position q lands at q with q[axis] replaced
 * by indices[q] (replacing, or combined by add, mul, max, min), in row-major order as the
 * reference applies them (so with duplicate indices and no reduction the last one wins) */

enum { RED_NONE,
       RED_ADD,
       RED_MUL,
       RED_MAX,
       RED_MIN };

/* One update combined into dst: the reference's combine() per element type. */
#define SCATTER_COMBINE(T)                                                        \
  do {                                                                            \
    T a = *(T *)dst, b = *(const T *)src;                                         \
    *(T *)dst = st->red == RED_ADD ? a + b : st->red == RED_MUL ? a * b           \
                                         : st->red == RED_MAX   ? (a > b ? a : b) \
                                                                : (a < b ? a : b);  \
  } while (0)

static int32_t run_scatter_el(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const nd_state_t *st = s->state;
  const char *x = t[st->x], *u = t[st->upd];
  const void *ind = t[st->ind];
  char *y = t[st->y];
  size_t es = (size_t)st->es;
  int64_t i, pos[MI_MAX_RANK] = {0}, base = 0, len = st->xdims[st->axis];
  (void)env;
  if (y != x) memcpy(y, x, (size_t)st->total * es);
  for (i = 0; i < st->n; i++) {
    int64_t v = index_at(ind, st->idt, i);
    char *dst;
    const char *src = u + (size_t)i * es;
    if (v < -len || v >= len) return bad_index(err, st->op, st->name, v, st->axis, len);
    dst = y + (size_t)(base + (v < 0 ? v + len : v) * st->xs[st->axis]) * es;
    if (st->red == RED_NONE) memcpy(dst, src, es);
    else if (st->dt == MI_DTYPE_FLOAT32)
      SCATTER_COMBINE(float);
    else if (st->dt == MI_DTYPE_INT64)
      SCATTER_COMBINE(int64_t);
    else
      SCATTER_COMBINE(int32_t);
    mi__blis_next_index(st->rank, st->idims, st->ist, pos, &base);
  }
  return MI_OK;
}

int32_t mi__blis_prep_scatter_elements(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *ind = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *u = mi__blis_tensor(p, mi__blis_in(n, 2)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const char *red = n->opset >= 16 ? mi_sdk_attr_string(n, "reduction", "none") : "none";
  int64_t axis = mi_sdk_attr_int(n, "axis", 0);
  int32_t d, r;
  nd_state_t *st;
  size_t es = x && x->dtype != MI_DTYPE_INT4 ? mi_sdk_dtype_size(x->dtype) : 0;
  /* any element type of 1, 2, 4 or 8 bytes replaced; the reductions on FLOAT32, INT64, INT32
   * (the reference's) */
  if (!(es == 1 || es == 2 || es == 4 || es == 8) || !u || u->dtype != x->dtype || !y || y->dtype != x->dtype ||
      !is_index(ind))
    return mi__blis_unsupported(err, n, "data and updates must be of one 1, 2, 4 or 8-byte type, indices INT64 or INT32");
  if (!strcmp(red, "none")) r = RED_NONE;
  else if (!strcmp(red, "add"))
    r = RED_ADD;
  else if (!strcmp(red, "mul"))
    r = RED_MUL;
  else if (!strcmp(red, "max") && n->opset >= 18)
    r = RED_MAX;
  else if (!strcmp(red, "min") && n->opset >= 18)
    r = RED_MIN;
  else
    return mi__blis_unsupported(err, n, "reduction");
  if (r != RED_NONE && x->dtype != MI_DTYPE_FLOAT32 && x->dtype != MI_DTYPE_INT64 && x->dtype != MI_DTYPE_INT32)
    return mi__blis_unsupported(err, n, "a reduction on data other than FLOAT32, INT64, INT32");
  if (axis < 0) axis += x->rank;
  if (x->rank < 1 || axis < 0 || axis >= x->rank) return mi__blis_unsupported(err, n, "axis out of range");
  if (ind->rank != x->rank || u->rank != x->rank || mi_sdk_numel(y) != mi_sdk_numel(x))
    return mi__blis_unsupported(err, n, "indices and updates must have the data's rank");
  for (d = 0; d < x->rank; d++)
    if (u->dims[d] != ind->dims[d] || (d != axis && ind->dims[d] > x->dims[d]))
      return mi__blis_unsupported(err, n, "indices and updates shapes");
  if (!(st = nd_new(p, s, n, x, err))) return MI_ERR_OUT_OF_MEMORY;
  for (d = 0; d < x->rank; d++) {
    st->idims[d] = ind->dims[d];
    st->ist[d] = d == axis ? 0 : st->xs[d];
  }
  st->x = mi__blis_in(n, 0);
  st->ind = mi__blis_in(n, 1);
  st->upd = mi__blis_in(n, 2);
  st->y = mi__blis_out(n, 0);
  st->idt = ind->dtype;
  st->axis = (int32_t)axis;
  st->red = r;
  st->dt = x->dtype;
  st->es = (int32_t)es;
  st->n = mi_sdk_numel(ind);
  s->run = run_scatter_el;
  return MI_OK;
}
