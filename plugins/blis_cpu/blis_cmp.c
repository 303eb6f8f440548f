/* blis_cmp.c - a comparison of FLOAT32 values and the Cast to FLOAT that alone reads its bool result, as one pass writing 0/1 floats. */
#include <string.h>

#include "blis_internal.h"

/* Why: the plugin's runtime tensors are FLOAT32, so a comparison alone (bool out) ran on the host's
 * reference loop: M-LSD's peak mask, Equal(x, MaxPool(x)) -> Cast -> Mul on 160x160, 0.24 + 0.05 ms
 * there at 1 and 2 threads (1-2% of the model). The session pairs a comparison with that Cast
 * where this op declares MI_FUSE_ACT (exec/plan.c), and the bool never exists. */

enum { CMP_EQ,
       CMP_LT,
       CMP_GT,
       CMP_LE,
       CMP_GE };

typedef struct cmp_state {
  int32_t a, b, y, kind;
  int64_t n, bn; /* elements; b's: n, or 1 (a scalar, broadcast) */
} cmp_state_t;

static void cmp_part(void *arg, int64_t i0, int64_t i1) {
  const mi__blis_task_t *q = arg;
  const cmp_state_t *c = q->state;
  const float *a = q->t[c->a], *b = q->t[c->b];
  float *y = q->t[c->y];
  int64_t i, bs = c->bn == 1 ? 0 : 1;
  switch (c->kind) { /* one loop a kind, so each vectorises */
  case CMP_EQ:
    for (i = i0; i < i1; i++) y[i] = a[i] == b[i * bs] ? 1.0f : 0.0f;
    break;
  case CMP_LT:
    for (i = i0; i < i1; i++) y[i] = a[i] < b[i * bs] ? 1.0f : 0.0f;
    break;
  case CMP_GT:
    for (i = i0; i < i1; i++) y[i] = a[i] > b[i * bs] ? 1.0f : 0.0f;
    break;
  case CMP_LE:
    for (i = i0; i < i1; i++) y[i] = a[i] <= b[i * bs] ? 1.0f : 0.0f;
    break;
  default:
    for (i = i0; i < i1; i++) y[i] = a[i] >= b[i * bs] ? 1.0f : 0.0f;
    break;
  }
}

static int32_t run_cmp(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const cmp_state_t *c = s->state;
  (void)err;
  return mi__blis_run_parts(s, t, env, c->n, 4096, 2, cmp_part);
}

/* Equal, Less, Greater, LessOrEqual, GreaterOrEqual of two FLOAT32 tensors of one shape (or the
 * second a single value), read only by the Cast to FLOAT that is the kernel's next node. */
int32_t mi__blis_prep_cmp(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  static const char *kinds[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  const mi_node_desc_t *n = mi__blis_node(p, 0), *cast = mi__blis_node(p, 1);
  const mi_tensor_desc_t *a = mi__blis_tensor(p, mi__blis_in(n, 0)), *b = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = cast ? mi__blis_tensor(p, mi__blis_out(cast, 0)) : NULL;
  cmp_state_t *c;
  int32_t kind;
  for (kind = 0; kind < (int32_t)(sizeof kinds / sizeof kinds[0]) && strcmp(n->op_type, kinds[kind]); kind++) {
  }
  if (!cast || strcmp(cast->op_type, "Cast") || mi__blis_in(cast, 0) != mi__blis_out(n, 0) ||
      mi_sdk_attr_int(cast, "to", 0) != 1 /* FLOAT */ || mi__blis_consumers(p, mi__blis_out(n, 0)) != 1 ||
      mi__blis_is_kernel_output(p, mi__blis_out(n, 0)))
    return mi__blis_unsupported(err, n, "only with the Cast to FLOAT that alone reads it (no bool tensors)");
  if (!a || !b || !y || a->dtype != MI_DTYPE_FLOAT32 || b->dtype != MI_DTYPE_FLOAT32 ||
      y->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(y) != mi_sdk_numel(a) ||
      (mi_sdk_numel(b) != mi_sdk_numel(a) && mi_sdk_numel(b) != 1))
    return mi__blis_unsupported(err, n, "FLOAT32 operands of one shape (or a single value) only");
  if (y->layout != a->layout || (mi_sdk_numel(b) != 1 && b->layout != a->layout))
    return mi__blis_unsupported(err, n, "operands and result in different layouts");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->a = mi__blis_in(n, 0);
  c->b = mi__blis_in(n, 1);
  c->y = mi__blis_out(cast, 0);
  c->kind = kind;
  c->n = mi_sdk_numel(a);
  c->bn = mi_sdk_numel(b);
  p->nodes_used = 2;
  s->run = run_cmp;
  return MI_OK;
}
