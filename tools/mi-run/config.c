/* config.c - mi-run --config: applies a model-side transform configuration (mi_transform.h)
 * to the loaded model before the session is created, and reports which passes ran. */
#include <stdlib.h>
#include <string.h>

#include "mi_run.h"

/* Calibration set for INT8 activations: deterministic random samples, like mi-host accuracy
 * without --calib (the report says so). */
#define CALIB_SAMPLES 4

static int needs_calibration(const mi_xf_config_t *c) {
  if (c->defaults.activations == MI_XF_INT8) return 1;
  for (int32_t i = 0; i < c->op_count; i++)
    if ((c->ops[i].layer.set & MI_XF_SET_ACTS) && c->ops[i].layer.activations == MI_XF_INT8)
      return 1;
  for (int32_t i = 0; i < c->layer_count; i++)
    if ((c->layers[i].layer.set & MI_XF_SET_ACTS) && c->layers[i].layer.activations == MI_XF_INT8)
      return 1;
  return 0;
}

int32_t run_apply_config(mi_graph_t **g, const run_opts_t *o, const mi_plugin_t *p,
                         uint32_t device, run_xf_t *out, mi_error_t *err) {
  mi_xf_config_t *c = NULL;
  mi_xf_samples_t *calib = NULL;
  mi_variant_desc_t *variants = NULL;
  mi_xf_apply_opts_t ao;
  mi_graph_t *x = NULL;
  uint32_t nv = 0;
  int32_t rc;
  memset(out, 0, sizeof *out);
  if ((rc = mi_xf_config_load(o->config, &c, err))) return rc;
  memset(&ao, 0, sizeof ao);
  if (c->fuse && p) {
    if ((rc = mi_plugin_variants(p, device, &variants, &nv, err))) goto done;
    ao.variants = variants;
    ao.variant_count = nv;
  }
  if (needs_calibration(c)) {
    if ((rc = mi_xf_samples_random(*g, CALIB_SAMPLES, o->seed + 1, &calib, err))) goto done;
    ao.calib = calib;
    out->calib_samples = CALIB_SAMPLES;
  }
  if ((rc = mi_xf_apply(*g, c, &ao, &x, &out->st, err))) goto done;
  mi_graph_destroy(*g);
  *g = x;
  out->applied = 1;
  out->hash = mi_xf_config_hash(c);
  out->fold_bn = c->fold_bn;
  out->fuse = c->fuse ? (p ? 1 : -1) : 0; /* -1: asked for, but the reference has no variants */
  out->layout = c->layout;
  out->block = c->block;
  out->channel_align = c->channel_align;
done:
  free(variants);
  mi_xf_samples_destroy(calib);
  mi_xf_config_destroy(c);
  return rc;
}

void run_print_passes(FILE *f, const run_xf_t *x, int json) {
  const mi_xf_stats_t *st = &x->st;
  const char *layout = x->layout == MI_LAYOUT_NHWC ? "nhwc" : x->layout == MI_LAYOUT_NCHWC ? "nchwc"
                                                                                           : NULL;
  int first = 1;
#define SEP() (json ? (first ? (first = 0, "") : ", ") : "")
  if (json) {
    fprintf(f, ", \"transform\": {\"hash\": \"%016llx\", \"calibration_samples\": %d, \"passes\": [",
            (unsigned long long)x->hash, x->calib_samples);
  } else {
    fprintf(f, "transform: config hash %016llx%s\n", (unsigned long long)x->hash,
            x->calib_samples ? ", INT8 activations calibrated on deterministic random samples" : "");
  }
  if (x->fold_bn)
    fprintf(f, json ? "%s{\"pass\": \"fold_bn\", \"bn_folded\": %d}" : "%spass fold_bn: %d BatchNormalization folded\n",
            SEP(), st->bn_folded);
  if (st->equalized_pairs)
    fprintf(f, json ? "%s{\"pass\": \"equalize\", \"pairs\": %d}" : "%spass equalize: %d Conv pairs\n",
            SEP(), st->equalized_pairs);
  if (st->pruned_layers || st->prune_skipped)
    fprintf(f, json ? "%s{\"pass\": \"prune\", \"layers\": %d, \"skipped\": %d, \"channels\": %lld}" : "%spass prune: %d layers, %d skipped, %lld channels removed\n",
            SEP(), st->pruned_layers, st->prune_skipped, (long long)st->pruned_channels);
  if (x->channel_align > 1)
    fprintf(f, json ? "%s{\"pass\": \"pad_channels\", \"align\": %d, \"layers\": %d, \"channels\": %lld}" : "%spass pad_channels (align %d): %d layers, %lld channels added\n",
            SEP(), x->channel_align, st->padded_layers, (long long)st->padded_channels);
  if (st->quantized_layers || st->quantized_acts)
    fprintf(f, json ? "%s{\"pass\": \"quantize\", \"layers\": %d, \"activations\": %d}" : "%spass quantize: %d layers' weights, %d activations (Q/DQ pairs)\n",
            SEP(), st->quantized_layers, st->quantized_acts);
  if (layout)
    fprintf(f, json ? "%s{\"pass\": \"layout\", \"layout\": \"%s\", \"tensors\": %d, \"conversions\": %d}" : "%spass layout %s: %d tensors, %d conversions\n",
            SEP(), layout, st->layout_tensors, st->layout_converts);
  if (x->fuse > 0)
    fprintf(f, json ? "%s{\"pass\": \"fuse\", \"groups\": %d, \"nodes\": %d}" : "%spass fuse: %d groups of %d nodes\n",
            SEP(), st->groups, st->grouped_nodes);
  else if (x->fuse < 0 && !json)
    fputs("pass fuse: skipped (the reference interpreter has no kernel variants)\n", f);
#undef SEP
  if (json) fputs("]}", f);
}
