/* xf_fold_bn.c - folds inference-mode BatchNormalization into the Conv or Gemm before it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

/* The BN's per-channel multiplier and offset: y = x * s + o. */
static int bn_affine(const mi_graph_t *g, const mi_node_t *bn, int64_t ch, float *s, float *o) {
  const float *gam = mi__xf_const_f32(g, bn, 1), *beta = mi__xf_const_f32(g, bn, 2);
  const float *mean = mi__xf_const_f32(g, bn, 3), *var = mi__xf_const_f32(g, bn, 4);
  float eps = mi_node_attr_float(bn, "epsilon", 1e-5f);
  if (!gam || !beta || !mean || !var || bn->output_count != 1) return 0;
  for (int32_t k = 1; k <= 4; k++)
    if (mi__xf_numel(g, bn->inputs[k]) != ch) return 0;
  for (int64_t c = 0; c < ch; c++) {
    s[c] = gam[c] / sqrtf(var[c] + eps);
    o[c] = beta[c] - mean[c] * s[c];
  }
  return 1;
}

/* Folds s, o into conv n: W'[m] = W[m] * s[m], b'[m] = b[m] * s[m] + o[m]. */
static int32_t fold_conv(mi_graph_t *g, int32_t n, const float *s, const float *o, int64_t m) {
  const mi_tensor_t *wt = &g->tensors[g->nodes[n].inputs[1]];
  const float *w = wt->data, *b = mi__xf_const_f32(g, &g->nodes[n], 2);
  int64_t per = mi__xf_numel(g, g->nodes[n].inputs[1]) / m, bd = m;
  int64_t dims[MI_MAX_RANK];
  int32_t rank = wt->rank, rc = MI_ERR_OUT_OF_MEMORY, tw, tb;
  float *nw = malloc((size_t)(per * m) * sizeof *nw), *nb = malloc((size_t)m * sizeof *nb);
  memcpy(dims, wt->dims, sizeof dims);
  if (!nw || !nb) goto done;
  for (int64_t c = 0; c < m; c++) {
    for (int64_t i = 0; i < per; i++) nw[c * per + i] = w[c * per + i] * s[c];
    nb[c] = (b ? b[c] : 0.0f) * s[c] + o[c];
  }
  tw = mi__xf_add_const(g, g->nodes[n].name, ".w_bn", MI_DTYPE_FLOAT32, rank, dims, nw,
                        (size_t)(per * m) * sizeof *nw);
  tb = mi__xf_add_const(g, g->nodes[n].name, ".b_bn", MI_DTYPE_FLOAT32, 1, &bd, nb,
                        (size_t)m * sizeof *nb);
  if (tw < 0 || tb < 0) goto done;
  g->nodes[n].inputs[1] = tw;
  rc = mi__xf_set_input(g, n, 2, tb);
done:
  free(nw);
  free(nb);
  return rc;
}

/* Gemm: Y = alpha A B' + beta C; folds into B' columns and a new C of N entries. */
static int32_t fold_gemm(mi_graph_t *g, int32_t n, const float *s, const float *o, int64_t nn) {
  mi_node_t *x = &g->nodes[n];
  const mi_tensor_t *wt = &g->tensors[x->inputs[1]];
  int transb = (int)mi_node_attr_int(x, "transB", 0);
  float alpha = mi_node_attr_float(x, "alpha", 1.0f), beta = mi_node_attr_float(x, "beta", 1.0f);
  const float *w = wt->data, *cb = mi__xf_const_f32(g, x, 2);
  int64_t cn = x->input_count > 2 && x->inputs[2] >= 0 ? mi__xf_numel(g, x->inputs[2]) : 0;
  int64_t dims[2] = {wt->dims[0], wt->dims[1]}, k = transb ? dims[1] : dims[0];
  int32_t rc = MI_ERR_OUT_OF_MEMORY, tw, tb;
  float *nw, *nb;
  if (wt->rank != 2 || (transb ? dims[0] : dims[1]) != nn) return MI_ERR_UNSUPPORTED;
  if (x->input_count > 2 && x->inputs[2] >= 0 && (!cb || (cn != 1 && cn != nn)))
    return MI_ERR_UNSUPPORTED;
  nw = malloc((size_t)(k * nn) * sizeof *nw);
  nb = malloc((size_t)nn * sizeof *nb);
  if (!nw || !nb) goto done;
  for (int64_t i = 0; i < k; i++)
    for (int64_t c = 0; c < nn; c++) {
      int64_t at = transb ? c * k + i : i * nn + c;
      nw[at] = alpha * w[at] * s[c];
    }
  for (int64_t c = 0; c < nn; c++)
    nb[c] = (cb ? beta * cb[cn == 1 ? 0 : c] : 0.0f) * s[c] + o[c];
  tw = mi__xf_add_const(g, g->nodes[n].name, ".w_bn", MI_DTYPE_FLOAT32, 2, dims, nw,
                        (size_t)(k * nn) * sizeof *nw);
  tb = mi__xf_add_const(g, g->nodes[n].name, ".b_bn", MI_DTYPE_FLOAT32, 1, &nn, nb,
                        (size_t)nn * sizeof *nb);
  if (tw < 0 || tb < 0) goto done;
  g->nodes[n].inputs[1] = tw;
  if ((rc = mi__xf_set_input(g, n, 2, tb)) != MI_OK) goto done;
  rc = mi_node_set_float(g, n, "alpha", 1.0f);
  if (rc == MI_OK) rc = mi_node_set_float(g, n, "beta", 1.0f);
done:
  free(nw);
  free(nb);
  return rc;
}

/* Output channels of the weighted node: Conv W[0]; Gemm N. -1 when unknown. */
static int64_t out_channels(const mi_graph_t *g, const mi_node_t *x) {
  const mi_tensor_t *wt = &g->tensors[x->inputs[1]];
  if (strcmp(x->op_type, "Conv") == 0) return wt->dims[0];
  if (wt->rank != 2) return -1;
  return mi_node_attr_int(x, "transB", 0) ? wt->dims[0] : wt->dims[1];
}

MI_API int32_t mi_xf_fold_bn(mi_graph_t *g, mi_xf_stats_t *st, mi_error_t *err) {
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "fold_bn: graph is NULL");
  return mi__xf_fold_bn_after(g, NULL, st, err);
}

int32_t mi__xf_fold_bn_after(mi_graph_t *g, uint8_t *only, mi_xf_stats_t *st, mi_error_t *err) {
  int32_t rc = MI_OK;
  for (int32_t n = 0; n < g->node_count; n++) {
    mi_node_t *x = &g->nodes[n];
    int is_conv = strcmp(x->op_type, "Conv") == 0, is_gemm = strcmp(x->op_type, "Gemm") == 0;
    if ((!is_conv && !is_gemm) || (only && !only[n]) || !mi__xf_is_weighted(g, n) || x->output_count != 1)
      continue;
    if (is_conv && x->input_count > 2 && x->inputs[2] >= 0 && !mi__xf_const_f32(g, x, 2)) continue;
    int32_t bn = mi__xf_sole_consumer(g, x->outputs[0]);
    if (bn < 0 || strcmp(g->nodes[bn].op_type, "BatchNormalization") != 0 ||
        g->nodes[bn].inputs[0] != x->outputs[0])
      continue;
    int64_t m = out_channels(g, x);
    if (m <= 0) continue;
    float *s = malloc((size_t)m * sizeof *s), *o = malloc((size_t)m * sizeof *o);
    if (!s || !o) {
      free(s);
      free(o);
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "fold_bn: out of memory");
    }
    if (bn_affine(g, &g->nodes[bn], m, s, o)) {
      rc = is_conv ? fold_conv(g, n, s, o, m) : fold_gemm(g, n, s, o, m);
      if (rc == MI_OK) {
        /* The conv now writes the BN's output tensor, so names seen outside stay the same. */
        g->nodes[n].outputs[0] = g->nodes[bn].outputs[0];
        g->tensors[g->nodes[bn].outputs[0]].producer = n;
        if (only) memmove(only + bn, only + bn + 1, (size_t)(g->node_count - bn - 1));
        mi__xf_remove_node(g, bn);
        if (st) st->bn_folded++;
      } else if (rc == MI_ERR_UNSUPPORTED) {
        rc = MI_OK;
      }
    }
    free(s);
    free(o);
    if (rc != MI_OK)
      return mi_errorf(err, rc, "fold_bn: node '%s': %s", g->nodes[n].name, mi_status_message(rc));
  }
  return mi__xf_refresh(g, err);
}
