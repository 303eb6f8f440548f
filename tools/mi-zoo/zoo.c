/* zoo.c - the family table, option checking and the mi_zoo_build entry point. */
#include <stdio.h>
#include <string.h>

#include "zoo_builder.h"

typedef void (*gen_fn)(mi__zb_t *b, const mi__zoo_cfg_t *c);

static const struct {
  mi_zoo_family_t info;
  gen_fn gen;
} families[] = {
    {{"mobilenetv2", "MobileNetV2-like CNN: inverted residuals, depthwise 3x3, ReLU6 (Clip)", 10,
      96, 32, 1024, 100, 13, "input"},
     mi__zoo_mobilenetv2},
    {{"mobilenetv3", "MobileNetV3-like CNN: squeeze-excite, hard-swish, 5x5 depthwise", 8, 96,
      32, 1024, 100, 14, "input"},
     mi__zoo_mobilenetv3},
    {{"resnet", "ResNet-like CNN: 7x7 stem, max pool, basic blocks with projections", 4, 64, 32,
      1024, 100, 13, "input"},
     mi__zoo_resnet},
    {{"transformer", "transformer encoder: LayerNorm, 4-head attention, Softmax, Gelu MLP", 2,
      16, 1, 512, 10, 20, "tokens"},
     mi__zoo_transformer},
    {{"mlp", "MLP: Flatten, Gemm + Relu layers on a [B,1,R,R] input", 2, 28, 1, 64, 10, 13,
      "input"},
     mi__zoo_mlp},
    {{"kws", "keyword-spotting DS-CNN on [B,1,frames,10] MFCCs: depthwise-separable blocks", 4,
      49, 10, 1024, 12, 13, "mfcc"},
     mi__zoo_kws},
};

#define NFAMILIES ((int32_t)(sizeof families / sizeof families[0]))

void mi_zoo_options_default(mi_zoo_options_t *opt) {
  memset(opt, 0, sizeof *opt);
  opt->width = 1.0;
  opt->batch = 1;
}

int32_t mi_zoo_family_count(void) { return NFAMILIES; }

const mi_zoo_family_t *mi_zoo_family_at(int32_t index) {
  return index >= 0 && index < NFAMILIES ? &families[index].info : NULL;
}

const mi_zoo_family_t *mi_zoo_family_find(const char *name) {
  for (int32_t i = 0; name && i < NFAMILIES; i++)
    if (strcmp(families[i].info.name, name) == 0) return &families[i].info;
  return NULL;
}

int64_t mi_zoo_param_count(const mi_graph_t *g) {
  int64_t n = 0;
  for (int32_t i = 0; g && i < g->tensor_count; i++)
    if (g->tensors[i].data && g->tensors[i].dtype == MI_DTYPE_FLOAT32)
      n += (int64_t)(g->tensors[i].nbytes / sizeof(float));
  return n;
}

/* Applies defaults and checks ranges; the message names the option and the allowed range. */
static int32_t resolve(const mi_zoo_family_t *f, const mi_zoo_options_t *o, mi__zoo_cfg_t *c,
                       mi_error_t *err) {
  c->family = f;
  c->width = o->width == 0.0 ? 1.0 : o->width;
  c->depth = o->depth == 0 ? f->default_depth : o->depth;
  c->resolution = o->resolution == 0 ? f->default_resolution : o->resolution;
  c->batch = o->batch == 0 ? 1 : o->batch;
  if (!(c->width > 0.0 && c->width <= MI_ZOO_MAX_WIDTH))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi-zoo: %s: width %g is out of range (0, %g]",
                     f->name, c->width, MI_ZOO_MAX_WIDTH);
  if (c->depth < 1 || c->depth > MI_ZOO_MAX_DEPTH)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi-zoo: %s: depth %d is out of range [1, %d]",
                     f->name, (int)c->depth, MI_ZOO_MAX_DEPTH);
  if (c->resolution < 1)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi-zoo: %s: resolution %d is too small",
                     f->name, (int)c->resolution);
  if (c->resolution > f->max_resolution)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "mi-zoo: %s: resolution %d is out of range (at most %d)", f->name,
                     (int)c->resolution, (int)f->max_resolution);
  if (c->batch < 1 || c->batch > MI_ZOO_MAX_BATCH)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi-zoo: %s: batch %d is out of range [1, %d]",
                     f->name, (int)c->batch, MI_ZOO_MAX_BATCH);
  return MI_OK;
}

int32_t mi_zoo_build(const char *family, const mi_zoo_options_t *opt, mi_graph_t **out,
                     mi_error_t *err) {
  mi_zoo_options_t dflt;
  mi__zoo_cfg_t cfg;
  mi__zb_t b;
  int32_t i, rc;
  if (out) *out = NULL;
  if (!family || !out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_zoo_build: family and out are required");
  for (i = 0; i < NFAMILIES; i++)
    if (strcmp(families[i].info.name, family) == 0) break;
  if (i == NFAMILIES) {
    char known[128] = "";
    size_t len = 0;
    for (int32_t k = 0; k < NFAMILIES && len < sizeof known; k++) {
      int n = snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "",
                       families[k].info.name);
      if (n < 0) break;
      len += (size_t)n;
    }
    return mi_errorf(err, MI_ERR_NOT_FOUND, "mi-zoo: unknown family '%s' (known: %s)", family,
                     known);
  }
  if (!opt) {
    mi_zoo_options_default(&dflt);
    opt = &dflt;
  }
  rc = resolve(&families[i].info, opt, &cfg, err);
  if (rc != MI_OK) return rc;
  memset(&b, 0, sizeof b);
  b.err = err;
  b.batch = cfg.batch;
  /* Mix the family in so that two families with one seed do not share weight streams. */
  b.rng.state = opt->seed ^ (0xA24BAED4963EE407ull * (uint64_t)(i + 1));
  b.g = mi_graph_create(family);
  if (!b.g) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "mi-zoo: %s: out of memory", family);
  b.g->opset = families[i].info.opset;
  families[i].gen(&b, &cfg);
  if (b.status == MI_OK) rc = mi_graph_toposort(b.g, err);
  else
    rc = b.status;
  if (rc != MI_OK) {
    mi_graph_destroy(b.g);
    return rc;
  }
  *out = b.g;
  return MI_OK;
}
