/* xf_apply.c - runs a configuration's passes on a copy of a model, in a fixed order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

/* Names of the weighted nodes, so passes that renumber nodes cannot lose track of them. */
static char **weighted_names(const mi_graph_t *g, int32_t *count) {
  char **names = calloc((size_t)g->node_count + 1, sizeof *names);
  *count = 0;
  if (!names) return NULL;
  for (int32_t n = 0; n < g->node_count; n++)
    if (mi__xf_is_weighted(g, n) && g->nodes[n].name) names[(*count)++] = g->nodes[n].name;
  return names;
}

static int32_t find_node(const mi_graph_t *g, const char *name) {
  for (int32_t n = 0; n < g->node_count; n++)
    if (g->nodes[n].name && strcmp(g->nodes[n].name, name) == 0) return n;
  return -1;
}

static int32_t prune_all(mi_graph_t *g, const mi_xf_config_t *c, mi_xf_stats_t *st, mi_error_t *err) {
  int32_t count, rc = MI_OK;
  char **names = weighted_names(g, &count);
  char **copies = calloc((size_t)count + 1, sizeof *copies);
  if (!names || !copies) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "prune: out of memory");
  /* Pruning adds tensors but never renames nodes; copy the names anyway, it frees nothing. */
  for (int32_t i = 0; rc == MI_OK && i < count; i++) {
    size_t len = strlen(names[i]) + 1;
    if (!(copies[i] = malloc(len))) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "prune: out of memory");
    else
      memcpy(copies[i], names[i], len);
  }
  for (int32_t i = 0; rc == MI_OK && i < count; i++) {
    int32_t n = find_node(g, copies[i]);
    mi_xf_layer_t l;
    int done = 0;
    if (n < 0) continue;
    mi_xf_config_resolve(c, g, n, &l);
    if (l.prune > 0.0) rc = mi_xf_prune_layer(g, n, l.prune, &done, st, err);
  }
  for (int32_t i = 0; copies && i < count; i++) free(copies[i]);
  free(copies);
  free(names);
  return rc;
}

/* Quantizes node n's weights; with `means` (bias correction) folds the shift the quantized
 * (or BF16/FP16-rounded) weights give on the calibration inputs' means into its bias. */
static int32_t quantize_layer(mi_graph_t *g, int32_t n, const mi_xf_layer_t *l, double **means,
                              const int8_t *mean_axis, mi_xf_stats_t *st, mi_error_t *err) {
  int32_t w = mi__xf_is_weighted(g, n) ? g->nodes[n].inputs[1] : -1, in = g->nodes[n].inputs[0], rc;
  const double *mean = means && w >= 0 && l->weights != MI_XF_FP32 && in >= 0 ? means[in] : NULL;
  int64_t cnt = w >= 0 ? mi__xf_numel(g, w) : 0, mc;
  const float *wv = w >= 0 ? g->tensors[w].data : NULL;
  float *deq = NULL;
  if (!mean || cnt <= 0) return mi__xf_quantize_weights(g, n, l, NULL, st, err);
  mc = g->tensors[in].rank > mean_axis[in] ? g->tensors[in].dims[mean_axis[in]] : -1;
  if (!(deq = malloc((size_t)cnt * sizeof *deq)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "quantize: out of memory");
  /* The FP32 weight stays an initializer until the compaction, so wv stays valid. */
  rc = mi__xf_quantize_weights(g, n, l, deq, st, err);
  if (rc == MI_OK) rc = mi__xf_bias_correct(g, n, wv, deq, mean, mc, err);
  free(deq);
  return rc;
}

/* cache: the means kept across calls (NULL: none, or the passes before changed the graph). */
static int32_t quantize_all(mi_graph_t *g, const mi_xf_config_t *c, const mi_xf_samples_t *calib,
                            mi_xf_means_t *cache, mi_xf_stats_t *st, mi_error_t *err) {
  int32_t rc = MI_OK, nn = g->node_count, nt = g->tensor_count, need_calib = 0, need_means = 0;
  int cached = 0;
  uint8_t *int8 = calloc((size_t)nn + 1, 1), *qt = calloc((size_t)nt + 1, 1);
  int8_t *mean_axis = malloc((size_t)nt + 1);
  double **means = calloc((size_t)nt + 1, sizeof *means);
  mi_xf_layer_t *set = calloc((size_t)nn + 1, sizeof *set);
  float *ranges = malloc(((size_t)nt + 1) * 2 * sizeof *ranges);
  if (!int8 || !qt || !set || !ranges || !mean_axis || !means) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "quantize: out of memory");
    goto done;
  }
  memset(mean_axis, -1, (size_t)nt + 1);
  for (int32_t n = 0; n < nn; n++) {
    if (!mi__xf_is_weighted(g, n)) continue;
    mi_xf_config_resolve(c, g, n, &set[n]);
    int8[n] = set[n].activations == MI_XF_INT8;
    /* Bias correction needs the samples; without them (weight-only INT8 in a run that has
     * none) the layer is quantized as before. */
    if (c->bias_correction && calib && calib->sample_count > 0 && set[n].weights != MI_XF_FP32) {
      int32_t axis = mi__xf_bias_input_axis(g, n), in = g->nodes[n].inputs[0];
      if (axis >= 0 && in >= 0 && !g->tensors[in].data) {
        mean_axis[in] = (int8_t)axis;
        need_means = 1;
      }
    }
  }
  if ((rc = mi__xf_plan_qdq(g, int8, c->float_output, qt, err)) != MI_OK) goto done;
  for (int32_t t = 0; t < nt; t++) need_calib |= qt[t];
  if (need_means && cache && (rc = mi__xf_means_get(cache, g, mean_axis, calib, means, &cached, err)) != MI_OK)
    goto done;
  if ((need_calib || (need_means && !cached)) &&
      (rc = mi__xf_calibrate(g, qt, need_means && !cached ? mean_axis : NULL, calib, c->calib_method,
                             c->percentile, ranges, cached ? NULL : means, err)) != MI_OK)
    goto done;
  /* New nodes and tensors go to the end: indices below nn and nt stay put until the refresh. */
  for (int32_t n = 0; n < nn && rc == MI_OK; n++)
    if (set[n].set) rc = quantize_layer(g, n, &set[n], need_means ? means : NULL, mean_axis, st, err);
  for (int32_t n = 0; n < nn && rc == MI_OK; n++)
    if (set[n].activations == MI_XF_BF16) rc = mi__xf_round_input_bf16(g, n, err);
  /* A recurrent layer takes FP16 weights only (W and R rounded, weight-only); the other
   * precisions leave it as it is, as they leave every op that is not a weighted layer. */
  for (int32_t n = 0; n < nn && rc == MI_OK; n++) {
    mi_xf_layer_t l;
    if (!mi_xf_recurrent(g, n)) continue;
    mi_xf_config_resolve(c, g, n, &l);
    if (l.weights != MI_XF_FP16) continue;
    if ((rc = mi__xf_round_recurrent_fp16(g, n, err)) == MI_OK && st) st->quantized_layers++;
  }
  for (int32_t t = 0; t < nt && rc == MI_OK; t++) {
    if (!qt[t]) continue;
    if (isnan(ranges[2 * t]))
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "quantize: activation '%s' has no calibrated range", g->tensors[t].name);
    else if ((rc = mi__xf_insert_qdq(g, t, ranges[2 * t], ranges[2 * t + 1], err)) == MI_OK && st)
      st->quantized_acts++;
  }
  if (rc == MI_OK) rc = mi__xf_refresh(g, err);
done:
  for (int32_t t = 0; means && t < nt; t++) free(means[t]);
  free(means);
  free(mean_axis);
  free(int8);
  free(qt);
  free(set);
  free(ranges);
  return rc;
}

/* A BatchNormalization right after a layer with INT8 activations is folded into it, fold_bn or
 * not: left apart it is a float op between the layer's codes and the next layer's, run as a
 * dequantize, the normalization and a quantize with one more rounding (ppocr_v2_cls with every
 * layer at int8_act on blis-cpu, one thread: 0.79 ms unfolded, 0.58 ms folded). */
static int32_t fold_bn_int8(mi_graph_t *g, const mi_xf_config_t *c, mi_xf_stats_t *st, mi_error_t *err) {
  uint8_t *only = calloc((size_t)g->node_count + 1, 1);
  int any = 0;
  int32_t rc;
  if (!only) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "fold_bn: out of memory");
  for (int32_t n = 0; n < g->node_count; n++) {
    mi_xf_layer_t l;
    if (!mi__xf_is_weighted(g, n)) continue;
    mi_xf_config_resolve(c, g, n, &l);
    only[n] = l.activations == MI_XF_INT8;
    any |= only[n];
  }
  rc = any ? mi__xf_fold_bn_after(g, only, st, err) : MI_OK;
  free(only);
  return rc;
}

MI_API int32_t mi_xf_apply(const mi_graph_t *g, const mi_xf_config_t *c,
                           const mi_xf_apply_opts_t *opts, mi_graph_t **out, mi_xf_stats_t *st,
                           mi_error_t *err) {
  mi_xf_apply_opts_t none;
  mi_xf_stats_t local;
  mi_graph_t *x = NULL;
  int32_t rc;
  if (out) *out = NULL;
  if (!g || !c || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "apply: NULL argument");
  if (!opts) {
    memset(&none, 0, sizeof none);
    opts = &none;
  }
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  if (!(x = mi_graph_clone(g))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "apply: out of memory");
  /* A weight computed from constants (a quantized export's Cast and Mul of INT8 codes) is the
   * layer's weight for every pass, as it is for the search space (mi_graph_fold_weights). */
  rc = mi_graph_fold_weights(x, NULL, err);
  if (rc == MI_OK) rc = mi_xf_config_check(c, x, err);
  if (rc == MI_OK) rc = mi__xf_refresh(x, err);
  if (rc == MI_OK) rc = c->fold_bn ? mi_xf_fold_bn(x, st, err) : fold_bn_int8(x, c, st, err);
  /* After the folding, so that Conv -> BN -> Relu -> Conv chains are Conv pairs. */
  /* Data-aware equalization needs the samples; without them it is the weight-based one. */
  if (rc == MI_OK && c->equalize == MI_XF_EQUALIZE_DATA && opts->calib && opts->calib->sample_count > 0)
    rc = mi__xf_equalize_data(x, opts->calib, st, err);
  else if (rc == MI_OK && c->equalize)
    rc = mi_xf_equalize(x, st, err);
  if (rc == MI_OK) rc = prune_all(x, c, st, err);
  if (rc == MI_OK && c->channel_align > 1) rc = mi_xf_pad_channels(x, c->channel_align, st, err);
  /* The kept means are the model's own: only where no pass before changed the graph. */
  if (rc == MI_OK)
    rc = quantize_all(x, c, opts->calib,
                      st->bn_folded || st->equalized_pairs || st->pruned_layers || st->padded_layers ? NULL
                                                                                                     : opts->means,
                      st, err);
  if (rc == MI_OK && (c->layout == MI_LAYOUT_NHWC || c->layout == MI_LAYOUT_NCHWC))
    rc = mi_xf_layout(x, c->layout, c->block, st, err);
  if (rc == MI_OK && c->fuse && opts->variants)
    rc = mi_xf_fuse(x, opts->variants, opts->variant_count, st, err);
  if (rc == MI_OK) rc = mi__xf_compact(x, err);
  if (rc == MI_OK) rc = mi__xf_refresh(x, err);
  if (rc != MI_OK) {
    mi_graph_destroy(x);
    return rc;
  }
  *out = x;
  return MI_OK;
}
