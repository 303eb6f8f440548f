/* blis_gather_rows.c - blis-cpu's Gather of rows along axis 0 of a FLOAT32 table with runtime
 * INT32/INT64 indices: an embedding lookup (word, position and segment embeddings; the loader
 * lowers ONNX Runtime's EmbedLayerNormalization onto it), one row copy per index. Constant
 * indices keep blis_misc.c's map. */
#include <string.h>

#include "blis_conv.h"

typedef struct rows_state {
  int32_t x, ind, y;
  int32_t wide; /* INT64 indices */
  int64_t rows, width, count;
} rows_state_t;

static int32_t run_rows(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const rows_state_t *st = s->state;
  const float *x = t[st->x];
  float *y = t[st->y];
  (void)env;
  for (int64_t i = 0; i < st->count; i++) {
    int64_t v = st->wide ? ((const int64_t *)t[st->ind])[i] : ((const int32_t *)t[st->ind])[i];
    if (v < 0) v += st->rows;
    if (v < 0 || v >= st->rows)
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "Gather: index %lld at %lld is out of range (%lld rows)",
                           (long long)(st->wide ? ((const int64_t *)t[st->ind])[i] : ((const int32_t *)t[st->ind])[i]),
                           (long long)i, (long long)st->rows);
    memcpy(y + i * st->width, x + v * st->width, (size_t)st->width * sizeof *y);
  }
  return MI_OK;
}

int32_t mi__blis_prep_gather_any(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  int32_t ii = mi__blis_in(n, 1);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *ind = mi__blis_tensor(p, ii),
                         *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  if (!ind || mi__blis_is_const(p, ii)) return mi__blis_prep_gather(p, s, err);
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank < 1)
    return mi__blis_unsupported(err, n, "runtime indices: a FLOAT32 table");
  if (mi_sdk_attr_int(n, "axis", 0) != 0 && mi_sdk_attr_int(n, "axis", 0) != -x->rank)
    return mi__blis_unsupported(err, n, "runtime indices: axis 0 only");
  if (ind->dtype != MI_DTYPE_INT32 && ind->dtype != MI_DTYPE_INT64)
    return mi__blis_unsupported(err, n, "runtime indices must be INT32 or INT64");
  rows_state_t *st = mi__blis_state_new(p, s, sizeof *st, err);
  if (!st) return MI_ERR_OUT_OF_MEMORY;
  st->x = mi__blis_in(n, 0);
  st->ind = ii;
  st->y = mi__blis_out(n, 0);
  st->wide = ind->dtype == MI_DTYPE_INT64;
  st->rows = x->dims[0];
  st->width = st->rows ? mi_sdk_numel(x) / st->rows : 0;
  st->count = mi_sdk_numel(ind);
  if (mi_sdk_numel(y) != st->count * st->width) return mi__blis_unsupported(err, n, "output shape");
  s->run = run_rows;
  return MI_OK;
}
