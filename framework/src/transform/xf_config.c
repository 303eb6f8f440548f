/* xf_config.c - the model-side configuration as data: defaults, overrides, resolution,
 * canonical text and its hash. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

MI_API mi_xf_config_t *mi_xf_config_create(void) {
  mi_xf_config_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->channel_align = 1;
  c->percentile = 99.99;
  c->defaults.set = MI_XF_SET_WEIGHTS | MI_XF_SET_SCALES | MI_XF_SET_ACTS | MI_XF_SET_PRUNE;
  c->defaults.scales = MI_XF_PER_CHANNEL;
  return c;
}

static void free_list(mi_xf_override_t *o, int32_t n) {
  for (int32_t i = 0; o && i < n; i++) free(o[i].name);
  free(o);
}

MI_API void mi_xf_config_destroy(mi_xf_config_t *c) {
  if (!c) return;
  free_list(c->ops, c->op_count);
  free_list(c->layers, c->layer_count);
  free(c->source);
  free(c);
}

static int copy_list(mi_xf_override_t **dst, const mi_xf_override_t *src, int32_t n) {
  *dst = NULL;
  if (n == 0) return 1;
  if (!(*dst = calloc((size_t)n, sizeof **dst))) return 0;
  for (int32_t i = 0; i < n; i++) {
    (*dst)[i] = src[i];
    size_t len = strlen(src[i].name) + 1;
    if (!((*dst)[i].name = malloc(len))) return 0;
    memcpy((*dst)[i].name, src[i].name, len);
  }
  return 1;
}

MI_API mi_xf_config_t *mi_xf_config_clone(const mi_xf_config_t *c) {
  if (!c) return NULL;
  mi_xf_config_t *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  *d = *c;
  d->ops = d->layers = NULL;
  d->op_count = d->layer_count = 0;
  d->source = NULL;
  int ok = !c->source || (d->source = mi__xf_strdup(c->source)) != NULL;
  ok = ok && copy_list(&d->ops, c->ops, c->op_count);
  d->op_count = d->ops ? c->op_count : 0;
  ok = ok && copy_list(&d->layers, c->layers, c->layer_count);
  d->layer_count = d->layers ? c->layer_count : 0;
  if (!ok) {
    mi_xf_config_destroy(d);
    return NULL;
  }
  return d;
}

MI_API int32_t mi_xf_config_set_layer(mi_xf_config_t *c, int32_t kind, const char *node,
                                      const mi_xf_layer_t *layer, mi_error_t *err) {
  if (!c || !node || !layer || (kind != 0 && kind != 1))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "config: bad override arguments");
  mi_xf_override_t **list = kind ? &c->ops : &c->layers;
  int32_t *count = kind ? &c->op_count : &c->layer_count;
  for (int32_t i = 0; i < *count; i++)
    if (strcmp((*list)[i].name, node) == 0) {
      (*list)[i].layer = *layer;
      return MI_OK;
    }
  mi_xf_override_t *p = realloc(*list, (size_t)(*count + 1) * sizeof *p);
  if (!p) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "config: out of memory");
  *list = p;
  size_t len = strlen(node) + 1;
  char *name = malloc(len);
  if (!name) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "config: out of memory");
  memcpy(name, node, len);
  p[*count] = (mi_xf_override_t){.name = name, .layer = *layer};
  (*count)++;
  return MI_OK;
}

static void overlay(mi_xf_layer_t *dst, const mi_xf_layer_t *src) {
  if (src->set & MI_XF_SET_WEIGHTS) dst->weights = src->weights;
  if (src->set & MI_XF_SET_SCALES) dst->scales = src->scales;
  if (src->set & MI_XF_SET_ACTS) dst->activations = src->activations;
  if (src->set & MI_XF_SET_PRUNE) dst->prune = src->prune;
  dst->set |= src->set;
}

MI_API void mi_xf_config_resolve(const mi_xf_config_t *c, const mi_graph_t *g, int32_t node,
                                 mi_xf_layer_t *out) {
  memset(out, 0, sizeof *out);
  if (!c || !g || node < 0 || node >= g->node_count) return;
  const mi_node_t *x = &g->nodes[node];
  overlay(out, &c->defaults);
  for (int32_t i = 0; i < c->op_count; i++)
    if (strcmp(c->ops[i].name, x->op_type) == 0) overlay(out, &c->ops[i].layer);
  for (int32_t i = 0; x->name && i < c->layer_count; i++)
    if (strcmp(c->layers[i].name, x->name) == 0) overlay(out, &c->layers[i].layer);
}

MI_API int32_t mi_xf_config_check(const mi_xf_config_t *c, const mi_graph_t *g, mi_error_t *err) {
  if (!c || !g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "config check: NULL argument");
  for (int32_t i = 0; i < c->layer_count; i++) {
    int32_t found = -1;
    for (int32_t n = 0; n < g->node_count && found < 0; n++)
      if (g->nodes[n].name && strcmp(g->nodes[n].name, c->layers[i].name) == 0) found = n;
    if (found < 0)
      return mi_errorf(err, MI_ERR_NOT_FOUND,
                       "%s:%d:%d: layers: no node named '%s' in model '%s'",
                       c->source ? c->source : "config", (int)c->layers[i].line, (int)c->layers[i].column, c->layers[i].name,
                       g->name ? g->name : "");
    if (mi_xf_recurrent(g, found)) {
      /* LSTM/GRU/RNN: weight-only FP16 (or FP32), nothing else */
      const mi_xf_layer_t *l = &c->layers[i].layer;
      if (((l->set & MI_XF_SET_WEIGHTS) && l->weights != MI_XF_FP32 && l->weights != MI_XF_FP16) ||
          ((l->set & MI_XF_SET_ACTS) && l->activations != MI_XF_FP32) || ((l->set & MI_XF_SET_PRUNE) && l->prune > 0))
        return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "%s:%d:%d: layers: node '%s' (%s): a recurrent layer's weights may be fp32 or fp16 "
                         "(weight-only), with fp32 activations and no pruning",
                         c->source ? c->source : "config", (int)c->layers[i].line, (int)c->layers[i].column,
                         c->layers[i].name, g->nodes[found].op_type);
      continue;
    }
    if (!mi__xf_is_weighted(g, found))
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "%s:%d:%d: layers: node '%s' is a %s, not a Conv/Gemm/MatMul with "
                       "constant weights nor an LSTM/GRU/RNN with constant W and R",
                       c->source ? c->source : "config", (int)c->layers[i].line, (int)c->layers[i].column,
                       c->layers[i].name, g->nodes[found].op_type);
  }
  return MI_OK;
}

MI_API const char *mi_xf_precision_name(int32_t p) {
  switch (p) {
  case MI_XF_FP32: return "fp32";
  case MI_XF_FP16: return "fp16";
  case MI_XF_INT8: return "int8";
  case MI_XF_INT4: return "int4";
  case MI_XF_BF16: return "bf16";
  default: return "?";
  }
}

static const char *layout_name(int32_t l) {
  switch (l) {
  case MI_LAYOUT_NCHW: return "nchw";
  case MI_LAYOUT_NHWC: return "nhwc";
  case MI_LAYOUT_NCHWC: return "nchwc";
  default: return "keep";
  }
}

/* A growable string for the canonical text. */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  int oom;
} sbuf_t;

static void put(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf_t *b, const char *fmt, ...) {
  va_list ap;
  if (b->oom) return;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = 1;
      return;
    }
    if (b->p && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = (b->cap + (size_t)k + 64) * 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
}

static void put_layer(sbuf_t *b, const mi_xf_layer_t *l) {
  int is_int = l->weights == MI_XF_INT8 || l->weights == MI_XF_INT4;
  if (l->set & MI_XF_SET_WEIGHTS) put(b, " weights=%s", mi_xf_precision_name(l->weights));
  /* Scales only mean something for integer weights; drop them where they cannot matter. */
  if ((l->set & MI_XF_SET_SCALES) && (is_int || !(l->set & MI_XF_SET_WEIGHTS)))
    put(b, " scales=%s", l->scales == MI_XF_PER_CHANNEL ? "per_channel" : "per_tensor");
  if (l->set & MI_XF_SET_ACTS) put(b, " activations=%s", mi_xf_precision_name(l->activations));
  if (l->set & MI_XF_SET_PRUNE) put(b, " prune=%.6g", l->prune + 0.0);
  put(b, "\n");
}

static int cmp_override(const void *a, const void *b) {
  return strcmp((*(const mi_xf_override_t *const *)a)->name,
                (*(const mi_xf_override_t *const *)b)->name);
}

static void put_list(sbuf_t *b, const char *kind, const mi_xf_override_t *o, int32_t n) {
  const mi_xf_override_t **s = malloc((size_t)(n + 1) * sizeof *s);
  if (!s) {
    b->oom = 1;
    return;
  }
  for (int32_t i = 0; i < n; i++) s[i] = &o[i];
  qsort(s, (size_t)n, sizeof *s, cmp_override);
  for (int32_t i = 0; i < n; i++) {
    if (!s[i]->layer.set) continue; /* an empty override changes nothing */
    put(b, "%s %s:", kind, s[i]->name);
    put_layer(b, &s[i]->layer);
  }
  free(s);
}

MI_API int32_t mi_xf_config_canonical(const mi_xf_config_t *c, char **out, mi_error_t *err) {
  sbuf_t b = {0};
  if (out) *out = NULL;
  if (!c || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "canonical: NULL argument");
  put(&b, "mi-transform-config 1\n");
  put(&b, "fold_bn=%d fuse=%d layout=%s", c->fold_bn ? 1 : 0, c->fuse ? 1 : 0,
      layout_name(c->layout));
  if (c->layout == MI_LAYOUT_NCHWC) put(&b, "/%d", (int)c->block);
  put(&b, " channel_align=%d", c->channel_align > 1 ? (int)c->channel_align : 1);
  /* Only written when set, so configurations older than the option keep their hash. */
  if (c->float_output) put(&b, " float_output=1");
  put(&b, "\n");
  if (c->calib_method == MI_XF_CALIB_PERCENTILE) put(&b, "calibration=percentile:%.6g", c->percentile);
  else
    put(&b, "calibration=%s", c->calib_method == MI_XF_CALIB_MSE ? "mse" : "minmax");
  /* Only written when set, as float_output. */
  if (c->bias_correction) put(&b, " bias_correction=1");
  if (c->equalize) put(&b, c->equalize == MI_XF_EQUALIZE_DATA ? " equalize=data" : " equalize=1");
  put(&b, "\n");
  put(&b, "defaults:");
  put_layer(&b, &c->defaults);
  put_list(&b, "op", c->ops, c->op_count);
  put_list(&b, "layer", c->layers, c->layer_count);
  if (b.oom) {
    free(b.p);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "canonical: out of memory");
  }
  *out = b.p;
  return MI_OK;
}

MI_API uint64_t mi_xf_config_hash(const mi_xf_config_t *c) {
  char *s = NULL;
  uint64_t h = 0xcbf29ce484222325ull;
  if (mi_xf_config_canonical(c, &s, NULL) != MI_OK) return 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  free(s);
  return h;
}
