/* blis_qwhere.c - com.microsoft QLinearWhere (condition, X, x_scale, x_zero_point, Y, y_scale,
 * y_zero_point, z_scale, z_zero_point) with the reference's arithmetic (framework/src/ref/ref_qlut.c,
 * ONNX Runtime's): X's and Y's codes requantized to Z's parameters through a 256-entry table each,
 * built at prepare (dequantize as scale * (code - zp) in float, quantize as saturate(nearbyint(v /
 * z_scale) + z_zp)); the identity where an input's parameters are Z's. The three operands broadcast
 * numpy-style; the output's rows along its last axis split across threads. The BOOL condition may
 * be a constant or a runtime tensor (one byte, 0 or 1, per element). */
#include <math.h>
#include <string.h>

#include "blis_qgemm.h"

typedef struct qwhere {
  int32_t c, x, y, z, rank;
  int64_t dims[MI_MAX_RANK], st[3][MI_MAX_RANK]; /* z's dims; each operand's element strides (0: broadcast) */
  int64_t D;                                     /* z's last axis, one row */
  uint8_t tab[2][256];                           /* X's and Y's codes to Z's */
} qwhere_t;

static void table(uint8_t *t, int s8, float s, int32_t zp, float zs, int32_t zz) {
  float lo = s8 ? -128.0f : 0.0f, hi = s8 ? 127.0f : 255.0f;
  for (int32_t i = 0; i < 256; i++) {
    int32_t code = s8 ? (int32_t)(int8_t)(uint8_t)i : i;
    float q = nearbyintf(s * (float)(code - zp) / zs) + (float)zz;
    q = q < lo ? lo : q > hi ? hi
                             : q;
    t[i] = (uint8_t)(int32_t)q;
  }
  if (s == zs && zp == zz)
    for (int32_t i = 0; i < 256; i++) t[i] = (uint8_t)i; /* the reference copies: same bytes */
}

/* Rows [b, e) of z along its last axis. */
static void where_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *t = arg;
  const qwhere_t *q = t->state;
  const uint8_t *c = t->t[q->c], *x = t->t[q->x], *y = t->t[q->y];
  uint8_t *z = t->t[q->z];
  int32_t last = q->rank - 1;
  int64_t sc = q->st[0][last], sx = q->st[1][last], sy = q->st[2][last];
  for (int64_t r = b; r < e; r++) {
    int64_t oc = 0, ox = 0, oy = 0, rem = r;
    for (int32_t d = last - 1; d >= 0; d--) { /* the row's multi-index, last axis first */
      int64_t i = rem % q->dims[d];
      rem /= q->dims[d];
      oc += i * q->st[0][d];
      ox += i * q->st[1][d];
      oy += i * q->st[2][d];
    }
    uint8_t *zr = z + r * q->D;
    for (int64_t i = 0; i < q->D; i++)
      zr[i] = c[oc + i * sc] ? q->tab[0][x[ox + i * sx]] : q->tab[1][y[oy + i * sy]];
  }
}

static int32_t run_qwhere(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qwhere_t *q = s->state;
  int64_t rows = 1;
  (void)err;
  for (int32_t d = 0; d + 1 < q->rank; d++) rows *= q->dims[d];
  if (rows * q->D == 0) return MI_OK;
  return mi__blis_run_parts(s, t, env, rows, 1, 2 * q->D, where_part);
}

/* Operand a's strides against z's dims (0 where broadcast); 0 when a does not broadcast to z. */
static int strides(const mi_tensor_desc_t *a, const mi_tensor_desc_t *z, int32_t rank, int64_t *st) {
  int32_t off = rank - a->rank;
  int64_t s = 1;
  if (off < 0) return 0;
  for (int32_t d = rank - 1; d >= 0; d--) {
    int64_t n = d >= off ? a->dims[d - off] : 1, zd = z->rank > 0 ? z->dims[d - (rank - z->rank)] : 1;
    if (n != 1 && n != zd) return 0;
    st[d] = n == 1 ? 0 : s;
    s *= n;
  }
  return 1;
}

int32_t mi__blis_prep_qwhere(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *c = mi__blis_tensor(p, mi__blis_in(n, 0)), *x = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_in(n, 4)), *z = mi__blis_tensor(p, mi__blis_out(n, 0));
  float xs, ys, zs;
  int32_t zx, zy, zz;
  qwhere_t *q;
  if (p->desc->node_count != 1) return mi__blis_unsupported(err, n, "runs alone, not in a fused group");
  if (n->input_count != 9 || !c || !x || !y || !z) return mi__blis_unsupported(err, n, "takes 9 inputs and an output");
  if (c->dtype != MI_DTYPE_BOOL || !mi__blis_is_q8(x) || y->dtype != x->dtype || z->dtype != x->dtype)
    return mi__blis_unsupported(err, n, "needs a BOOL condition and X, Y, Z of one INT8/UINT8 dtype");
  if (mi__blis_in(n, 3) < 0 || mi__blis_in(n, 6) < 0 || mi__blis_in(n, 8) < 0 ||
      !mi__blis_qpair_f(p, n, 2, 3, x->dtype, &xs, &zx) || !mi__blis_qpair_f(p, n, 5, 6, x->dtype, &ys, &zy) ||
      !mi__blis_qpair_f(p, n, 7, 8, x->dtype, &zs, &zz))
    return mi__blis_unsupported(err, n, "scales and zero points must be per-tensor constants");
  if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
  q->rank = z->rank > 0 ? z->rank : 1;
  for (int32_t d = 0; d < q->rank; d++) q->dims[d] = z->rank > 0 ? z->dims[d] : 1;
  const mi_tensor_desc_t *ops[3] = {c, x, y};
  for (int32_t k = 0; k < 3; k++)
    if (!strides(ops[k], z, q->rank, q->st[k]))
      return mi__blis_unsupported(err, n, "condition, X and Y do not broadcast to the output's shape");
  q->D = q->dims[q->rank - 1];
  q->c = mi__blis_in(n, 0);
  q->x = mi__blis_in(n, 1);
  q->y = mi__blis_in(n, 4);
  q->z = mi__blis_out(n, 0);
  int s8 = x->dtype == MI_DTYPE_INT8;
  table(q->tab[0], s8, xs, zx, zs, zz);
  table(q->tab[1], s8, ys, zy, zs, zz);
  s->run = run_qwhere;
  return MI_OK;
}

int mi__blis_where_cond(const mi_kernel_desc_t *d, int32_t t) {
  int any = 0;
  for (int32_t i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int where = strcmp(n->op_type, "QLinearWhere") == 0;
    for (int32_t j = 0; j < n->input_count; j++)
      if (n->inputs[j] == t) {
        if (!where || j != 0) return 0;
        any = 1;
      }
    for (int32_t j = 0; j < n->output_count; j++)
      if (n->outputs[j] == t) return 0;
  }
  return any;
}
