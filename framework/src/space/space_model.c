/* space_model.c - the model-side dimensions, defined by a table, and their transform config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_transform.h"
#include "space/space_internal.h"

/* Precision choices: the transform's weight precision and granularity, its activation
 * precision, and the dtypes a variant must compute in for the choice to be offered. A label's
 * code is its index here: histories and recipes hold the labels and the codes, so entries are
 * only appended. */
typedef struct {
  const char *label;
  int32_t weights;
  int32_t scales;
  int32_t activations; /* MI_XF_FP32: weight-only, the layer keeps float activations */
  uint32_t needs;      /* MI_DTYPE_BIT mask a variant must declare in full */
} precision_t;

/* int8_act: INT8 per-channel weights and calibrated asymmetric UINT8 activations (the host
 * quantizer's QDQ form), which is what an INT8 engine (npu-stub's arrays, blis-cpu's INT8 core)
 * needs to run the layer on codes; the weight-only INT8 labels leave the activations float, so
 * such a device runs them on its float path. Offered where a variant declares both INT8 (the
 * weights) and UINT8 (the activations). Its calibration is the recipe's calibration folder, or,
 * without one, the worker's deterministic generated samples (docs/tuning.md). */
static const precision_t k_precisions[] = {
    {"fp32", MI_XF_FP32, MI_XF_PER_TENSOR, MI_XF_FP32, MI_DTYPE_BIT(MI_DTYPE_FLOAT32)},
    {"fp16", MI_XF_FP16, MI_XF_PER_TENSOR, MI_XF_FP32, MI_DTYPE_BIT(MI_DTYPE_FLOAT16)},
    {"int8_tensor", MI_XF_INT8, MI_XF_PER_TENSOR, MI_XF_FP32, MI_DTYPE_BIT(MI_DTYPE_INT8)},
    {"int8_channel", MI_XF_INT8, MI_XF_PER_CHANNEL, MI_XF_FP32, MI_DTYPE_BIT(MI_DTYPE_INT8)},
    {"int8_act", MI_XF_INT8, MI_XF_PER_CHANNEL, MI_XF_INT8,
     MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8)},
    /* BF16 weights and input (FP32 sums): offered where the device has a variant that computes
     * so, which the executor runs the layer on (exec/bf16_in.c) */
    {"bf16", MI_XF_BF16, MI_XF_PER_TENSOR, MI_XF_BF16, MI_DTYPE_BIT(MI_DTYPE_BFLOAT16)},
};
#define PRECISION_N ((int32_t)(sizeof k_precisions / sizeof k_precisions[0]))

/* The compute dtypes some precision choice gives a layer: a variant that computes in none of
 * them would change the model's numerics where no model-side choice says so. */
uint32_t mi__space_precision_dtypes(void) {
  uint32_t m = 0;
  for (int32_t p = 0; p < PRECISION_N; p++) m |= k_precisions[p].needs;
  return m;
}

int mi__space_is_precision(const mi_space_t *s, int32_t d) {
  return s && d >= 0 && d < s->dim_count && s->dims[d].kind == MI_DIM_MODEL && s->dims[d].node >= 0 &&
         s->dims[d].model == MI__MD_PRECISION;
}

int mi__space_precision_variant(uint32_t dtype_mask) {
  return (dtype_mask & MI_DTYPE_BIT(MI_DTYPE_BFLOAT16)) && !(dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32));
}

/* A node whose second input is a constant weight: the layers precision and pruning act on. A
 * recurrent layer the transform rounds (mi_xf_recurrent) too: it gives it FP16 weights only
 * (weight-only), so it is offered fp16 where a variant of its op computes so. */
static int weighted(const mi_graph_t *g, int32_t n) {
  const mi_node_t *node = &g->nodes[n];
  if (mi_xf_recurrent(g, n)) return 1;
  if (strcmp(node->op_type, "Conv") && strcmp(node->op_type, "Gemm") &&
      strcmp(node->op_type, "MatMul"))
    return 0;
  return node->input_count >= 2 && node->inputs[1] >= 0 && g->tensors[node->inputs[1]].data;
}

static int32_t add_choice_dim(mi_space_t *s, const char *name, int32_t node, int32_t model,
                              const char *const *labels, const int64_t *codes, int32_t count,
                              mi_error_t *err) {
  int32_t rc = mi__space_add_dim(s, name, MI_DIM_MODEL, node, count, err);
  mi__dim_t *d;
  if (rc != MI_OK) return rc;
  d = &s->dims[s->dim_count - 1];
  d->model = model;
  for (int32_t i = 0; i < count; i++) {
    d->ivals[i] = codes ? codes[i] : i;
    d->labels[i] = strdup(labels[i]);
    if (!d->labels[i]) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  }
  return MI_OK;
}

int32_t mi__space_add_model_dims(mi_space_t *s, mi_error_t *err) {
  static const char *const k_onoff[] = {"off", "on"};
  static const char *const k_layouts[] = {"nchw", "nhwc"};
  uint32_t fuse = 0, nhwc = 0;
  int has_bn = 0;
  int32_t rc = MI_OK;
  for (uint32_t v = 0; v < s->variant_count; v++) {
    fuse |= s->variants[v].fuse_mask;
    if (!strcmp(s->variants[v].op_type, "Conv"))
      nhwc |= s->variants[v].layout_mask & MI_LAYOUT_BIT(MI_LAYOUT_NHWC);
  }
  for (int32_t n = 0; n < s->g->node_count; n++)
    has_bn |= !strcmp(s->g->nodes[n].op_type, "BatchNormalization");
  if ((s->opts.model_dims & MI_SPACE_FOLD_BN) && has_bn)
    rc = add_choice_dim(s, "model.fold_bn", -1, MI__MD_FOLD_BN, k_onoff, NULL, 2, err);
  if (rc == MI_OK && (s->opts.model_dims & MI_SPACE_FUSE) && fuse)
    rc = add_choice_dim(s, "model.fuse", -1, MI__MD_FUSE, k_onoff, NULL, 2, err);
  if (rc == MI_OK && (s->opts.model_dims & MI_SPACE_LAYOUT) && nhwc) {
    static const int64_t codes[] = {MI_LAYOUT_ANY, MI_LAYOUT_NHWC};
    rc = add_choice_dim(s, "model.layout", -1, MI__MD_LAYOUT, k_layouts, codes, 2, err);
  }
  return rc;
}

int32_t mi__space_add_node_model_dims(mi_space_t *s, int32_t n, uint32_t dtypes, mi_error_t *err) {
  const mi_node_t *node = &s->g->nodes[n];
  const char *labels[PRECISION_N + 8];
  int64_t codes[PRECISION_N + 8];
  int32_t count = 0, rc;
  char name[256], nb[32];
  const char *nn = node->name && node->name[0] ? node->name : nb;
  snprintf(nb, sizeof nb, "#%d", (int)n);
  if (!weighted(s->g, n)) return MI_OK;
  if (s->opts.model_dims & MI_SPACE_PRECISION) {
    /* Only precisions one of the node's variants computes in: a choice no kernel can run
     * would only move the layer to the host. */
    int recurrent = mi_xf_recurrent(s->g, n);
    for (int32_t p = 0; p < PRECISION_N; p++)
      if (p == 0 || ((dtypes & k_precisions[p].needs) == k_precisions[p].needs &&
                     (!recurrent || k_precisions[p].weights == MI_XF_FP16))) {
        labels[count] = k_precisions[p].label;
        codes[count++] = p;
      }
    if (count > 1) {
      snprintf(name, sizeof name, "node.%s.precision", nn);
      if ((rc = add_choice_dim(s, name, n, MI__MD_PRECISION, labels, codes, count, err)) != MI_OK)
        return rc;
    }
  }
  /* Only layers the pass can prune: a choice that changes nothing (a Conv feeding a residual
   * Add) would be searched for nothing and reported in the deployment as applied. */
  if ((s->opts.model_dims & MI_SPACE_PRUNE) && !strcmp(node->op_type, "Conv") &&
      mi_node_attr_int(node, "group", 1) == 1 && mi_xf_prunable(s->g, n)) {
    char text[8][16];
    int32_t levels = s->opts.prune_levels > 8 ? 8 : s->opts.prune_levels;
    for (int32_t i = 0; i < levels; i++) {
      /* Ratios 0 .. 0.5 in percent, so labels stay exact. */
      codes[i] = (int64_t)(50 * i / (levels - 1));
      snprintf(text[i], sizeof text[i], "%.2f", (double)codes[i] / 100.0);
      labels[i] = text[i];
    }
    snprintf(name, sizeof name, "node.%s.prune", nn);
    if ((rc = add_choice_dim(s, name, n, MI__MD_PRUNE, labels, codes, levels, err)) != MI_OK)
      return rc;
  }
  return MI_OK;
}

/* Rounded weights (INT8, INT4, BF16, FP16) get bias correction, which measured the smaller drop
 * on the real models (docs/tuning.md, "Bias correction and least-MSE ranges", and for BF16 "Bias
 * correction for rounded BF16 weights"); least-MSE activation ranges did not, so ranges stay
 * min-max. INT8 activations get cross-layer equalization, which evens the channels their
 * per-tensor scale covers (docs/tuning.md, "Cross-layer equalization"); weight-only points do
 * without it, as their per-channel weight scales need no even channels. The data-aware pass
 * (`equalize: data`) is not used here: it lowered blazeface_back's drop but raised
 * ppocr_v4_det's, and fits its scales to the calibration samples (docs/tuning.md, "Data-aware
 * equalization"). Configurations whose weights all stay FP32 keep their canonical text and hash. */
static void weight_calibration(mi_xf_config_t *c) {
  for (int32_t i = 0; i < c->layer_count; i++) {
    const mi_xf_layer_t *l = &c->layers[i].layer;
    if ((l->set & MI_XF_SET_WEIGHTS) && l->weights != MI_XF_FP32) c->bias_correction = 1;
    if ((l->set & MI_XF_SET_ACTS) && l->activations == MI_XF_INT8) c->equalize = MI_XF_EQUALIZE_WEIGHTS;
  }
}

int32_t mi_space_xf_config(const mi_space_t *s, const int32_t *pt, mi_xf_config_t **out,
                           mi_error_t *err) {
  mi_xf_config_t *c;
  int32_t rc = MI_OK;
  if (out) *out = NULL;
  if (!s || !pt || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  c = mi_xf_config_create();
  if (!c) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  for (int32_t i = 0; i < s->dim_count && rc == MI_OK; i++) {
    const mi__dim_t *d = &s->dims[i];
    int64_t code = d->ivals[pt[i]];
    if (d->kind != MI_DIM_MODEL) continue;
    switch (d->model) {
    case MI__MD_FOLD_BN: c->fold_bn = (int32_t)code; break;
    case MI__MD_FUSE: c->fuse = (int32_t)code; break;
    case MI__MD_LAYOUT: c->layout = (int32_t)code; break;
    default: {
      const mi_node_t *node = &s->g->nodes[d->node];
      mi_xf_layer_t layer;
      char nb[32];
      if (code == 0) break; /* fp32 / no pruning: the defaults */
      snprintf(nb, sizeof nb, "#%d", (int)d->node);
      /* Keep what an earlier dimension of the same node set. */
      mi_xf_config_resolve(c, s->g, d->node, &layer);
      if (d->model == MI__MD_PRECISION) {
        layer.set |= MI_XF_SET_WEIGHTS | MI_XF_SET_SCALES;
        layer.weights = k_precisions[code].weights;
        layer.scales = k_precisions[code].scales;
        /* The weight-only labels leave the activations at FP32 as before, so their configs
         * and the hashes histories hold are unchanged. */
        if (k_precisions[code].activations != MI_XF_FP32) {
          layer.set |= MI_XF_SET_ACTS;
          layer.activations = k_precisions[code].activations;
        }
      } else {
        layer.set |= MI_XF_SET_PRUNE;
        layer.prune = (double)code / 100.0;
      }
      rc = mi_xf_config_set_layer(c, 0, node->name && node->name[0] ? node->name : nb, &layer,
                                  err);
    }
    }
  }
  if (rc == MI_OK) weight_calibration(c);
  if (rc != MI_OK) {
    mi_xf_config_destroy(c);
    return rc;
  }
  *out = c;
  return MI_OK;
}
