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

static int32_t quantize_all(mi_graph_t *g, const mi_xf_config_t *c, const mi_xf_samples_t *calib,
                            mi_xf_stats_t *st, mi_error_t *err) {
  int32_t rc = MI_OK, nn = g->node_count, nt = g->tensor_count, need_calib = 0;
  uint8_t *int8 = calloc((size_t)nn + 1, 1), *qt = calloc((size_t)nt + 1, 1);
  mi_xf_layer_t *set = calloc((size_t)nn + 1, sizeof *set);
  float *ranges = malloc(((size_t)nt + 1) * 2 * sizeof *ranges);
  if (!int8 || !qt || !set || !ranges) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "quantize: out of memory");
    goto done;
  }
  for (int32_t n = 0; n < nn; n++) {
    if (!mi__xf_is_weighted(g, n)) continue;
    mi_xf_config_resolve(c, g, n, &set[n]);
    int8[n] = set[n].activations == MI_XF_INT8;
  }
  if ((rc = mi__xf_plan_qdq(g, int8, c->float_output, qt, err)) != MI_OK) goto done;
  for (int32_t t = 0; t < nt; t++) need_calib |= qt[t];
  if (need_calib &&
      (rc = mi__xf_calibrate(g, qt, calib, c->calib_method, c->percentile, ranges, err)) != MI_OK)
    goto done;
  /* New nodes and tensors go to the end: indices below nn and nt stay put until the refresh. */
  for (int32_t n = 0; n < nn && rc == MI_OK; n++)
    if (set[n].set) rc = mi__xf_quantize_weights(g, n, &set[n], st, err);
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
  free(int8);
  free(qt);
  free(set);
  free(ranges);
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
  if ((rc = mi_xf_config_check(c, g, err)) != MI_OK) return rc;
  if (!(x = mi_graph_clone(g))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "apply: out of memory");
  rc = mi__xf_refresh(x, err);
  if (rc == MI_OK && c->fold_bn) rc = mi_xf_fold_bn(x, st, err);
  if (rc == MI_OK) rc = prune_all(x, c, st, err);
  if (rc == MI_OK && c->channel_align > 1) rc = mi_xf_pad_channels(x, c->channel_align, st, err);
  if (rc == MI_OK) rc = quantize_all(x, c, opts->calib, st, err);
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
