/* ref_einsum.c - reference Einsum over the equations graph/einsum.h accepts: one loop over
 * every label, summing products into the output. */
#include <stdlib.h>
#include <string.h>

#include "graph/einsum.h"
#include "ref/ref_ops.h"

int32_t mi__ref_einsum(mi__ref_call_t *c) {
  const char *eq = mi_node_attr_string(c->node, "equation", NULL), *why = NULL;
  const mi_array_t *x[2] = {NULL, NULL};
  mi__einsum_t e;
  int64_t size[MI__EINSUM_MAX_LABELS], odims[MI_MAX_RANK], st[MI_MAX_RANK];
  int64_t step[3][MI__EINSUM_MAX_LABELS] = {{0}}; /* per label: element step in out, x0, x1 */
  int32_t rc;
  mi_array_t *y;
  if (!eq) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "attribute 'equation' is missing");
  if (mi__einsum_parse(eq, c->nin, &e, &why) != 0)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "equation '%s' is not supported: %s", eq, why);
  for (int32_t k = 0; k < e.nlab; k++) size[k] = -1;
  for (int32_t i = 0; i < e.nin; i++) {
    if ((rc = mi__ref_need(c, i, MI_DTYPE_BIT(MI_DTYPE_FLOAT32), &x[i])) != MI_OK) return rc;
    if (x[i]->rank != e.in_rank[i])
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "equation '%s' gives operand %d %d labels, it has rank %d", eq, (int)i,
                          (int)e.in_rank[i], (int)x[i]->rank);
    mi__ref_strides(x[i]->rank, x[i]->dims, st);
    for (int32_t d = 0; d < x[i]->rank; d++) {
      int32_t l = e.in_lab[i][d];
      if (size[l] >= 0 && size[l] != x[i]->dims[d])
        return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                            "equation '%s': one label has sizes %lld and %lld", eq,
                            (long long)size[l], (long long)x[i]->dims[d]);
      size[l] = x[i]->dims[d];
      step[1 + i][l] = st[d];
    }
  }
  for (int32_t d = 0; d < e.out_rank; d++) odims[d] = size[e.out_lab[d]];
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_FLOAT32, e.out_rank, odims, &y)) != MI_OK) return rc;
  mi__ref_strides(e.out_rank, odims, st);
  for (int32_t d = 0; d < e.out_rank; d++) step[0][e.out_lab[d]] = st[d];

  int64_t total = 1, on = mi_array_numel(y);
  for (int32_t k = 0; k < e.nlab; k++) total *= size[k];
  double *acc = calloc((size_t)(on ? on : 1), sizeof *acc);
  if (!acc) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  /* Odometer over all labels; off[] follows the output and operand offsets along. */
  int64_t idx[MI__EINSUM_MAX_LABELS] = {0}, off[3] = {0, 0, 0};
  const float *a = (const float *)x[0]->data, *b = x[1] ? (const float *)x[1]->data : NULL;
  for (int64_t it = 0; it < total; it++) {
    acc[off[0]] += b ? (double)a[off[1]] * b[off[2]] : a[off[1]];
    for (int32_t k = e.nlab - 1; k >= 0; k--) {
      idx[k]++;
      for (int j = 0; j < 3; j++) off[j] += step[j][k];
      if (idx[k] < size[k]) break;
      for (int j = 0; j < 3; j++) off[j] -= step[j][k] * size[k];
      idx[k] = 0;
    }
  }
  for (int64_t i = 0; i < on; i++) ((float *)y->data)[i] = (float)acc[i];
  free(acc);
  return MI_OK;
}
