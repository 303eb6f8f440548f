/* xf_config_yaml.c - reads a model-side configuration from YAML (libyaml), errors with line:column. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/yaml_io.h"
#include "transform/xf_internal.h"

typedef struct yctx {
  yaml_document_t *doc;
  const char *what;
  mi_error_t *err;
} yctx_t;

static int32_t fail_at(const yctx_t *y, const yaml_node_t *n, const char *fmt, const char *a,
                       const char *b) {
  char msg[200];
  snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
  return mi_errorf(y->err, MI_ERR_PARSE, "%s:%d:%d: %s", y->what, (int)n->start_mark.line + 1,
                   (int)n->start_mark.column + 1, msg);
}

static const char *scalar(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int32_t need_map(const yctx_t *y, const yaml_node_t *n, const char *what) {
  if (!n || n->type != YAML_MAPPING_NODE)
    return fail_at(y, n, "%s must be a mapping%s", what, NULL);
  return MI_OK;
}

/* Index of `s` in the NULL-terminated `names`, or -1. */
static int lookup(const char *s, const char *const *names) {
  for (int i = 0; s && names[i]; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

static int32_t get_enum(const yctx_t *y, const yaml_node_t *v, const char *key,
                        const char *const *names, const char *allowed, int32_t *out) {
  int i = lookup(scalar(v), names);
  if (i < 0) {
    char k[160];
    snprintf(k, sizeof k, "%s: expected one of %s", key, allowed);
    return fail_at(y, v, "%s, got '%s'", k, scalar(v) ? scalar(v) : "(not a scalar)");
  }
  *out = i;
  return MI_OK;
}

static int32_t get_double(const yctx_t *y, const yaml_node_t *v, const char *key, double lo,
                          double hi, double *out) {
  const char *s = scalar(v);
  char *end = NULL;
  errno = 0;
  double d = s ? strtod(s, &end) : NAN;
  if (!s || end == s || *end || errno || !(d >= lo && d <= hi)) {
    char k[120];
    snprintf(k, sizeof k, "%s: expected a number in [%g, %g]", key, lo, hi);
    return fail_at(y, v, "%s, got '%s'", k, s ? s : "(not a scalar)");
  }
  *out = d;
  return MI_OK;
}

static int32_t get_bool(const yctx_t *y, const yaml_node_t *v, const char *key, int32_t *out) {
  static const char *const names[] = {"false", "true", "no", "yes", "off", "on", "0", "1", NULL};
  int32_t i;
  int32_t rc = get_enum(y, v, key, names, "true/false", &i);
  if (rc == MI_OK) *out = i % 2;
  return rc;
}

/* indexed by mi_xf_precision */
static const char *const k_prec[] = {"fp32", "fp16", "int8", "int4", "bf16", NULL};

static int32_t parse_layer(const yctx_t *y, const yaml_node_t *m, mi_xf_layer_t *l) {
  static const char *const gran[] = {"per_tensor", "per_channel", NULL};
  int32_t rc = need_map(y, m, "a layer setting");
  memset(l, 0, sizeof *l);
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; rc == MI_OK && p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(y->doc, p->key), *v = yaml_document_get_node(y->doc, p->value);
    const char *key = scalar(k);
    if (key && strcmp(key, "weights") == 0) {
      rc = get_enum(y, v, key, k_prec, "fp32, fp16, int8, int4, bf16", &l->weights);
      l->set |= MI_XF_SET_WEIGHTS;
    } else if (key && strcmp(key, "scales") == 0) {
      rc = get_enum(y, v, key, gran, "per_tensor, per_channel", &l->scales);
      l->set |= MI_XF_SET_SCALES;
    } else if (key && strcmp(key, "activations") == 0) {
      rc = get_enum(y, v, key, k_prec, "fp32, int8, bf16", &l->activations);
      if (rc == MI_OK && l->activations != MI_XF_FP32 && l->activations != MI_XF_INT8 &&
          l->activations != MI_XF_BF16)
        rc = fail_at(y, v, "activations: only fp32, int8 and bf16 are supported, got '%s'%s", scalar(v), NULL);
      l->set |= MI_XF_SET_ACTS;
    } else if (key && strcmp(key, "prune") == 0) {
      rc = get_double(y, v, key, 0.0, 0.95, &l->prune);
      l->set |= MI_XF_SET_PRUNE;
    } else {
      rc = fail_at(y, k, "unknown layer key '%s' (weights, scales, activations, prune)%s", key, NULL);
    }
  }
  return rc;
}

static int32_t parse_overrides(const yctx_t *y, const yaml_node_t *m, int32_t kind,
                               mi_xf_config_t *c) {
  const yaml_node_t *first, *again;
  int32_t rc = need_map(y, m, kind ? "ops" : "layers");
  if (rc != MI_OK) return rc;
  /* Sorted, not pairwise: a hostile file of many layers must not take quadratic time here. */
  switch (mi__yaml_repeated_key(y->doc, m, &first, &again)) {
  case 0: break;
  case 1: return fail_at(y, again, "'%s' is given twice%s", scalar(again), NULL);
  default: return mi_errorf(y->err, MI_ERR_OUT_OF_MEMORY, "config: out of memory");
  }
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; rc == MI_OK && p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(y->doc, p->key), *v = yaml_document_get_node(y->doc, p->value);
    const char *name = scalar(k);
    mi_xf_layer_t l;
    if (!name || !name[0]) return fail_at(y, k, "%s: a name must be a non-empty string%s", kind ? "ops" : "layers", NULL);
    if ((rc = parse_layer(y, v, &l)) != MI_OK) return rc;
    if ((rc = mi_xf_config_set_layer(c, kind, name, &l, y->err)) != MI_OK) return rc;
    mi_xf_override_t *o = kind ? &c->ops[c->op_count - 1] : &c->layers[c->layer_count - 1];
    o->line = (int32_t)k->start_mark.line + 1;
    o->column = (int32_t)k->start_mark.column + 1;
  }
  return rc;
}

static int32_t parse_passes(const yctx_t *y, const yaml_node_t *m, mi_xf_config_t *c) {
  static const char *const layouts[] = {"keep", "nchw", "nhwc", "nchwc", NULL};
  int32_t rc = need_map(y, m, "passes");
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; rc == MI_OK && p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(y->doc, p->key), *v = yaml_document_get_node(y->doc, p->value);
    const char *key = scalar(k);
    double d;
    if (key && strcmp(key, "fold_bn") == 0) rc = get_bool(y, v, key, &c->fold_bn);
    else if (key && strcmp(key, "fuse") == 0)
      rc = get_bool(y, v, key, &c->fuse);
    else if (key && strcmp(key, "float_output") == 0)
      rc = get_bool(y, v, key, &c->float_output);
    else if (key && strcmp(key, "layout") == 0)
      rc = get_enum(y, v, key, layouts, "keep, nchw, nhwc, nchwc", &c->layout);
    else if (key && strcmp(key, "block") == 0) {
      if ((rc = get_double(y, v, key, 2, 64, &d)) == MI_OK) c->block = (int32_t)d;
    } else if (key && strcmp(key, "channel_align") == 0) {
      if ((rc = get_double(y, v, key, 1, 16, &d)) == MI_OK) {
        c->channel_align = (int32_t)d;
        if (d != 1 && d != 4 && d != 8 && d != 16)
          rc = fail_at(y, v, "channel_align: expected 1, 4, 8 or 16, got '%s'%s", scalar(v), NULL);
      }
    } else {
      rc = fail_at(y, k, "unknown pass '%s' (fold_bn, fuse, layout, block, channel_align, float_output)%s", key, NULL);
    }
  }
  if (rc == MI_OK && c->layout == MI_LAYOUT_NCHWC && c->block < 2)
    rc = fail_at(y, m, "layout nchwc needs a block (2..64)%s%s", NULL, NULL);
  return rc;
}

static int32_t parse_calib(const yctx_t *y, const yaml_node_t *m, mi_xf_config_t *c) {
  static const char *const methods[] = {"minmax", "percentile", "mse", NULL};
  int32_t rc = need_map(y, m, "calibration");
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; rc == MI_OK && p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(y->doc, p->key), *v = yaml_document_get_node(y->doc, p->value);
    const char *key = scalar(k);
    if (key && strcmp(key, "method") == 0) rc = get_enum(y, v, key, methods, "minmax, percentile, mse", &c->calib_method);
    else if (key && strcmp(key, "percentile") == 0)
      rc = get_double(y, v, key, 50.0, 100.0, &c->percentile);
    else if (key && strcmp(key, "bias_correction") == 0)
      rc = get_bool(y, v, key, &c->bias_correction);
    else if (key && strcmp(key, "equalize") == 0) {
      const char *val = scalar(v);
      if (val && strcmp(val, "data") == 0)
        c->equalize = MI_XF_EQUALIZE_DATA;
      else
        rc = get_bool(y, v, key, &c->equalize);
    } else
      rc = fail_at(y, k, "unknown calibration key '%s' (method, percentile, bias_correction, equalize)%s", key, NULL);
  }
  return rc;
}

static int32_t parse_root(const yctx_t *y, mi_xf_config_t *c) {
  yaml_node_t *root = yaml_document_get_root_node(y->doc);
  /* An empty file (or one holding only comments, or a bare `~`) is the empty configuration:
   * no pass, every layer FP32. */
  if (!root) return MI_OK;
  if (root->type == YAML_SCALAR_NODE && (root->data.scalar.length == 0 ||
                                         strcmp((const char *)root->data.scalar.value, "~") == 0 ||
                                         strcmp((const char *)root->data.scalar.value, "null") == 0))
    return MI_OK;
  int32_t rc = need_map(y, root, "the configuration");
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; rc == MI_OK && p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(y->doc, p->key), *v = yaml_document_get_node(y->doc, p->value);
    const char *key = scalar(k);
    double d;
    if (key && strcmp(key, "version") == 0) {
      if ((rc = get_double(y, v, key, 1, 1, &d)) != MI_OK) return rc;
    } else if (key && strcmp(key, "passes") == 0)
      rc = parse_passes(y, v, c);
    else if (key && strcmp(key, "calibration") == 0)
      rc = parse_calib(y, v, c);
    else if (key && strcmp(key, "defaults") == 0) {
      mi_xf_layer_t l;
      if ((rc = parse_layer(y, v, &l)) == MI_OK) {
        l.set |= c->defaults.set;
        mi_xf_layer_t base = c->defaults;
        if (l.set & MI_XF_SET_WEIGHTS) base.weights = l.weights;
        if (l.set & MI_XF_SET_SCALES) base.scales = l.scales;
        if (l.set & MI_XF_SET_ACTS) base.activations = l.activations;
        if (l.set & MI_XF_SET_PRUNE) base.prune = l.prune;
        c->defaults = base;
      }
    } else if (key && strcmp(key, "ops") == 0)
      rc = parse_overrides(y, v, 1, c);
    else if (key && strcmp(key, "layers") == 0)
      rc = parse_overrides(y, v, 0, c);
    else
      rc = fail_at(y, k, "unknown key '%s' (version, passes, calibration, defaults, ops, layers)%s", key, NULL);
  }
  return rc;
}

/* Per-layer overrides make these longer than recipes; they still nest 4 levels at most. */
static const mi__yaml_limits_t k_limits = {16u << 20, 0, 256};

MI_API int32_t mi_xf_config_parse(const char *text, size_t len, const char *what,
                                  mi_xf_config_t **out, mi_error_t *err) {
  yaml_document_t doc;
  int have_doc = 0;
  int32_t rc;
  mi_xf_config_t *c = NULL;
  if (out) *out = NULL;
  if (!text || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "config: NULL argument");
  if (!what) what = "config";
  if ((rc = mi__yaml_load(text, len, what, &k_limits, &doc, err)) != MI_OK) return rc;
  have_doc = 1;
  if (!(c = mi_xf_config_create())) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "config: out of memory");
    goto done;
  }
  if (!(c->source = mi__xf_strdup(what))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "config: out of memory");
    goto done;
  }
  yctx_t y = {&doc, what, err};
  rc = parse_root(&y, c);
done:
  if (have_doc) yaml_document_delete(&doc);
  if (rc != MI_OK) mi_xf_config_destroy(c);
  else
    *out = c;
  return rc;
}

MI_API int32_t mi_xf_config_load(const char *path, mi_xf_config_t **out, mi_error_t *err) {
  FILE *f;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  int32_t rc;
  if (out) *out = NULL;
  if (!path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "config: NULL path");
  if (!(f = fopen(path, "rb"))) return mi_errorf(err, MI_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  for (;;) {
    if (n > k_limits.max_bytes) { /* stop reading a file that can only be refused */
      free(buf);
      fclose(f);
      return mi_errorf(err, MI_ERR_PARSE, "%s: too large (more than %zu bytes)", path,
                       k_limits.max_bytes);
    }
    if (n == cap) {
      char *p = realloc(buf, cap = cap ? cap * 2 : 4096);
      if (!p) {
        free(buf);
        fclose(f);
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      }
      buf = p;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return mi_errorf(err, MI_ERR_IO, "%s: read error", path);
  }
  rc = mi_xf_config_parse(buf ? buf : "", n, path, out, err);
  free(buf);
  return rc;
}
