/* shape_infer_rnn.c - shapes of the recurrent ops' outputs (LSTM's Y, Y_h, Y_c; GRU's and RNN's
 * Y, Y_h) by direction and layout: layout 1 puts the batch first ([N, S, D, H], [N, D, H]). */
#include <string.h>

#include "graph/shape_infer.h"

int32_t mi__si_recurrent(mi__si_t *c, const mi_node_t *n, int32_t outputs) {
  int32_t rc = mi__si_need(c, n, 3);
  if (rc) return rc;
  const mi_tensor_t *x = mi__si_in(c, n, 0);
  int64_t H = mi_node_attr_int(n, "hidden_size", 0), layout = mi_node_attr_int(n, "layout", 0);
  int64_t D = strcmp(mi_node_attr_string(n, "direction", "forward"), "bidirectional") == 0 ? 2 : 1;
  if (H <= 0) return mi__si_fail(c, n, MI_ERR_PARSE, "hidden_size must be positive");
  if (layout != 0 && layout != 1)
    return mi__si_fail(c, n, MI_ERR_PARSE, "layout %lld is not 0 or 1", (long long)layout);
  if (x->rank >= 0 && x->rank != 3)
    return mi__si_fail(c, n, MI_ERR_PARSE, "X has rank %d, expected 3", (int)x->rank);
  int64_t S = x->rank == 3 ? x->dims[layout ? 1 : 0] : MI_DIM_DYNAMIC;
  int64_t N = x->rank == 3 ? x->dims[layout ? 0 : 1] : MI_DIM_DYNAMIC;
  int64_t y0[4] = {S, D, N, H}, y1[4] = {N, S, D, H}, h0[3] = {D, N, H}, h1[3] = {N, D, H};
  mi__si_set(c, n, 0, x->dtype, 4, layout ? y1 : y0);
  for (int32_t i = 1; i < outputs; i++) mi__si_set(c, n, i, x->dtype, 3, layout ? h1 : h0);
  return MI_OK;
}

int32_t mi__si_gru(mi__si_t *c, const mi_node_t *n) { return mi__si_recurrent(c, n, 2); }
