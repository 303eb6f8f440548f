/* space_build.c - builds the joint space of one (model, device) from the plugin's descriptions. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

void mi_space_options_default(mi_space_options_t *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->model_dims = MI_SPACE_MODEL_ALL;
  o->int_levels = 16;
  o->float_levels = 5;
  o->prune_levels = 3;
}

/* `item` is one of the comma-separated names of `list` (spaces around names ignored). */
int mi__list_has(const char *list, const char *item) {
  size_t n = strlen(item);
  const char *p = list;
  while (*p) {
    const char *e;
    while (*p == ' ' || *p == ',') p++;
    e = p;
    while (*e && *e != ',') e++;
    {
      const char *t = e;
      while (t > p && t[-1] == ' ') t--;
      if ((size_t)(t - p) == n && n > 0 && memcmp(p, item, n) == 0) return 1;
    }
    p = e;
  }
  return 0;
}

/* A variant reads a knob when it lists it, and a variant-scope knob also applies to it. */
static int variant_reads(const mi_variant_desc_t *v, const mi_knob_desc_t *k) {
  if (!mi__list_has(v->knobs, k->name)) return 0;
  if (k->scope == MI_KNOB_SCOPE_VARIANT && k->applies_to[0] && !mi__list_has(k->applies_to, v->id))
    return 0;
  return 1;
}

int32_t mi__space_add_dim(mi_space_t *s, const char *name, int32_t kind, int32_t node,
                          int32_t count, mi_error_t *err) {
  mi__dim_t *d;
  if (s->dim_count == s->dim_cap) {
    int32_t cap = s->dim_cap ? s->dim_cap * 2 : 64;
    mi__dim_t *nd = realloc(s->dims, (size_t)cap * sizeof *nd);
    if (!nd) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
    s->dims = nd;
    s->dim_cap = cap;
  }
  d = &s->dims[s->dim_count];
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->node = node;
  d->count = count;
  d->knob = -1;
  d->model = -1;
  d->variant_dim = -1;
  d->name = strdup(name);
  d->labels = calloc((size_t)count, sizeof *d->labels);
  d->ivals = calloc((size_t)count, sizeof *d->ivals);
  d->fvals = calloc((size_t)count, sizeof *d->fvals);
  s->dim_count++; /* counted before the checks so that destroy frees what was allocated */
  if (!d->name || !d->labels || !d->ivals || !d->fvals)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  return MI_OK;
}

static int32_t set_label(mi__dim_t *d, int32_t i, const char *text, mi_error_t *err) {
  d->labels[i] = strdup(text);
  return d->labels[i] ? MI_OK : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
}

/* Integer domains may span all of int64 (min INT64_MIN, max INT64_MAX): their arithmetic is done
 * in uint64, where max - min and min + offset cannot overflow. */
static uint64_t int_steps(const mi_knob_desc_t *k) {
  uint64_t step = k->step > 0 ? (uint64_t)k->step : 1;
  return k->max > k->min ? ((uint64_t)k->max - (uint64_t)k->min) / step : 0;
}

/* (int64)u without relying on the implementation-defined conversion of values above INT64_MAX. */
static int64_t from_u64(uint64_t u) {
  return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

static uint64_t distance(int64_t a, int64_t b) {
  return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* The values a knob's domain offers the search: every listed value, a whole small range, or
 * `levels` evenly spaced values (always including the default) of a wide one. */
static int32_t knob_value_count(const mi_space_t *s, const mi_knob_desc_t *k) {
  switch (k->type) {
  case MI_KNOB_BOOL: return 2;
  case MI_KNOB_FLOAT: return k->fmax > k->fmin ? (s->opts.float_levels > 1 ? s->opts.float_levels : 2) : 1;
  case MI_KNOB_ENUM: {
    int32_t n = 1;
    for (const char *p = k->choices; *p; p++) n += *p == '|';
    return n;
  }
  default: {
    uint64_t steps = int_steps(k);
    if (k->value_count) return (int32_t)k->value_count;
    return steps < (uint64_t)s->opts.int_levels ? (int32_t)steps + 1 : s->opts.int_levels;
  }
  }
}

static int32_t fill_knob_dim(const mi_space_t *s, const mi_knob_desc_t *k, mi__dim_t *d,
                             mi_error_t *err) {
  char buf[96];
  int32_t i, rc = MI_OK;
  int64_t step = k->step > 0 ? k->step : 1;
  for (i = 0; i < d->count && rc == MI_OK; i++) {
    switch (k->type) {
    case MI_KNOB_BOOL:
      d->ivals[i] = i;
      snprintf(buf, sizeof buf, "%d", (int)i);
      if (i == k->default_int) d->dflt = i;
      break;
    case MI_KNOB_FLOAT:
      if (d->count < 2) {
        d->fvals[i] = k->fmin;
      } else if (isfinite(k->fmax - k->fmin)) {
        d->fvals[i] = k->fmin + (k->fmax - k->fmin) * i / (d->count - 1);
      } else { /* [-DBL_MAX, DBL_MAX]: the span itself overflows to inf */
        double t = (double)i / (d->count - 1);
        d->fvals[i] = k->fmin * (1 - t) + k->fmax * t;
      }
      snprintf(buf, sizeof buf, "%.6g", d->fvals[i]);
      if (fabs(d->fvals[i] - k->default_float) < fabs(d->fvals[d->dflt] - k->default_float))
        d->dflt = i;
      break;
    case MI_KNOB_ENUM: {
      const char *p = k->choices;
      int32_t j = 0;
      size_t n;
      while (j < i && *p) j += *p++ == '|';
      n = strcspn(p, "|");
      snprintf(buf, sizeof buf, "%.*s", (int)(n < 90 ? n : 90), p);
      d->ivals[i] = i;
      if (i == k->default_int) d->dflt = i;
      break;
    }
    default:
      if (k->value_count) {
        d->ivals[i] = k->values[i];
      } else {
        /* floor(steps * i / n1) without the product, which overflows on a wide domain */
        uint64_t steps = int_steps(k), n1 = d->count > 1 ? (uint64_t)d->count - 1 : 1;
        uint64_t off = (steps / n1) * (uint64_t)i + (steps % n1) * (uint64_t)i / n1;
        d->ivals[i] = from_u64((uint64_t)k->min + off * (uint64_t)step);
      }
      if (d->ivals[i] == k->default_int) d->dflt = i;
      snprintf(buf, sizeof buf, "%lld", (long long)d->ivals[i]);
      break;
    }
    rc = set_label(d, i, buf, err);
  }
  /* A wide range cut to levels may miss the default: put it in place of the nearest level. */
  if (rc == MI_OK && k->type == MI_KNOB_INT && !k->value_count && d->ivals[d->dflt] != k->default_int) {
    int32_t best = 0;
    for (i = 1; i < d->count; i++)
      if (distance(d->ivals[i], k->default_int) < distance(d->ivals[best], k->default_int)) best = i;
    d->ivals[best] = k->default_int;
    snprintf(buf, sizeof buf, "%lld", (long long)k->default_int);
    free(d->labels[best]);
    rc = set_label(d, best, buf, err);
    d->dflt = best;
  }
  return rc;
}

static int32_t add_knob_dim(mi_space_t *s, uint32_t knob, const char *name, int32_t node,
                            mi_error_t *err) {
  const mi_knob_desc_t *k = &s->knobs[knob];
  int32_t rc = mi__space_add_dim(s, name, MI_DIM_KNOB, node, knob_value_count(s, k), err);
  if (rc != MI_OK) return rc;
  s->dims[s->dim_count - 1].knob = (int32_t)knob;
  return fill_knob_dim(s, k, &s->dims[s->dim_count - 1], err);
}

static const char *node_name(const mi_graph_t *g, int32_t n, char *buf, size_t cap) {
  if (g->nodes[n].name && g->nodes[n].name[0]) return g->nodes[n].name;
  snprintf(buf, cap, "#%d", (int)n);
  return buf;
}

/* One node: its variant dimension, the knobs its variants read, its model-side choices. */
static int32_t add_node(mi_space_t *s, int32_t n, mi_error_t *err) {
  const mi_node_t *node = &s->g->nodes[n];
  int32_t vars[MI__VARIANTS_MAX], nvar = 0, rc, i;
  uint32_t dtypes = 0;
  char nb[32], name[256];
  mi__node_t *slot;
  for (uint32_t v = 0; v < s->variant_count && nvar < MI__VARIANTS_MAX; v++)
    if (strcmp(s->variants[v].op_type, node->op_type) == 0) {
      int ok;
      if (!(s->variants[v].dtype_mask & mi__space_precision_dtypes())) {
        s->pruned++; /* computes in a precision no model-side choice stands for */
        continue;
      }
      ok = s->probe_consts ? mi__space_probe(s, n, (int32_t)v) : 1;
      if (ok > 0 && mi__space_precision_variant(s->variants[v].dtype_mask)) {
        /* offered as the node's precision (bf16), not as its kernel */
        dtypes |= s->variants[v].dtype_mask;
        s->pruned++;
        continue;
      }
      if (ok < 0)
        return mi_errorf(err, s->probe_err.code ? s->probe_err.code : MI_ERR_CRASHED, "%s",
                         s->probe_err.message);
      if (!ok) {
        s->pruned++; /* the plugin refuses this node with this variant: never offer it */
        continue;
      }
      vars[nvar++] = (int32_t)v;
    }
  if (nvar == 0) return MI_OK; /* the host runs it: nothing to choose */
  slot = &s->nodes[s->node_count];
  memset(slot, 0, sizeof *slot);
  slot->node = n;
  slot->first_dim = s->dim_count;
  slot->variants = malloc(((size_t)nvar + 1) * sizeof *slot->variants);
  if (!slot->variants) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  slot->variants[0] = MI__VARIANT_AUTO;
  memcpy(slot->variants + 1, vars, (size_t)nvar * sizeof *vars);
  s->node_count++;
  snprintf(name, sizeof name, "node.%s.variant", node_name(s->g, n, nb, sizeof nb));
  if ((rc = mi__space_add_dim(s, name, MI_DIM_VARIANT, n, nvar + 1, err)) != MI_OK) return rc;
  slot->variant_dim = s->dim_count - 1;
  /* Value 0, the default, is "auto": no variant named, the plugin picks the kernel as it does
   * when mi-run runs without a configuration, so the default point is what users get. */
  s->dims[slot->variant_dim].ivals[0] = MI__VARIANT_AUTO;
  if ((rc = set_label(&s->dims[slot->variant_dim], 0, MI_SPACE_VARIANT_AUTO, err)) != MI_OK)
    return rc;
  for (i = 0; i < nvar; i++) {
    s->dims[slot->variant_dim].ivals[i + 1] = vars[i];
    if ((rc = set_label(&s->dims[slot->variant_dim], i + 1, s->variants[vars[i]].id, err)) != MI_OK)
      return rc;
  }
  for (uint32_t k = 0; k < s->knob_count; k++) {
    uint32_t reads = 0;
    if (s->knobs[k].scope == MI_KNOB_SCOPE_DEVICE) continue;
    /* Bit v+1 for explicit variant v; bit 0 (auto) stays clear: the plugin sets its own knobs. */
    for (i = 0; i < nvar; i++)
      if (variant_reads(&s->variants[vars[i]], &s->knobs[k])) reads |= 1u << (i + 1);
    if (!reads) continue;
    snprintf(name, sizeof name, "node.%s.knob.%s", node_name(s->g, n, nb, sizeof nb),
             s->knobs[k].name);
    if ((rc = add_knob_dim(s, k, name, n, err)) != MI_OK) return rc;
    s->dims[s->dim_count - 1].variant_dim = slot->variant_dim;
    s->dims[s->dim_count - 1].reads = malloc(sizeof(uint32_t));
    if (!s->dims[s->dim_count - 1].reads)
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
    s->dims[s->dim_count - 1].reads[0] = reads;
  }
  for (i = 0; i < nvar; i++) dtypes |= s->variants[vars[i]].dtype_mask;
  if ((rc = mi__space_add_node_model_dims(s, n, dtypes, err)) != MI_OK) return rc;
  slot->end_dim = s->dim_count;
  return MI_OK;
}

int32_t mi_space_create(const mi_graph_t *g, const mi_plugin_t *plugin, uint32_t device,
                        const mi_space_options_t *opts, mi_space_t **out, mi_error_t *err) {
  mi_space_t *s = NULL;
  int32_t rc;
  char name[160];
  if (out) *out = NULL;
  if (!g || !plugin || !out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: graph, plugin and out are required");
  s = calloc(1, sizeof *s);
  if (!s) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  s->g = g;
  s->plugin = plugin;
  s->device = device;
  mi_space_options_default(&s->opts);
  if (opts) {
    /* Read only the fields the caller's struct declares. */
    size_t n = opts->struct_size < sizeof s->opts ? opts->struct_size : sizeof s->opts;
    if (n > sizeof(uint32_t)) memcpy((char *)&s->opts + 4, (const char *)opts + 4, n - 4);
    if (s->opts.int_levels < 2) s->opts.int_levels = 16;
    if (s->opts.float_levels < 2) s->opts.float_levels = 5;
    if (s->opts.prune_levels < 2) s->opts.prune_levels = 3;
  }
  if (mi__space_asks_begin(s) != MI_OK) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
    goto fail;
  }
  if ((rc = mi_plugin_device_info(plugin, device, &s->dev, err)) != MI_OK) goto fail;
  if ((rc = mi_plugin_knobs(plugin, device, &s->knobs, &s->knob_count, err)) != MI_OK) goto fail;
  if ((rc = mi_plugin_variants(plugin, device, &s->variants, &s->variant_count, err)) != MI_OK)
    goto fail;
  if ((rc = mi_plugin_constraints(plugin, device, &s->cons, &s->con_count, err)) != MI_OK)
    goto fail;
  s->device_dim = malloc((s->knob_count + 1) * sizeof *s->device_dim);
  s->nodes = calloc((size_t)g->node_count + 1, sizeof *s->nodes);
  if (!s->device_dim || !s->nodes) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
    goto fail;
  }
  for (uint32_t k = 0; k < s->knob_count; k++) {
    s->device_dim[k] = -1;
    if (s->knobs[k].scope != MI_KNOB_SCOPE_DEVICE) continue;
    snprintf(name, sizeof name, "device.%s", s->knobs[k].name);
    if ((rc = add_knob_dim(s, k, name, -1, err)) != MI_OK) goto fail;
    s->device_dim[k] = s->dim_count - 1;
  }
  if ((rc = mi__space_add_model_dims(s, err)) != MI_OK) goto fail;
  if (!s->opts.no_probe && mi__space_probe_begin(s) != MI_OK) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
    goto fail;
  }
  for (int32_t n = 0; n < g->node_count; n++)
    if ((rc = add_node(s, n, err)) != MI_OK) goto fail;
  mi__space_probe_end(s);
  if ((rc = mi__space_sort_names(s, err)) != MI_OK) goto fail;
  *out = s;
  return MI_OK;
fail:
  mi_space_destroy(s);
  return rc;
}

void mi_space_destroy(mi_space_t *s) {
  if (!s) return;
  for (int32_t i = 0; i < s->dim_count; i++) {
    mi__dim_t *d = &s->dims[i];
    for (int32_t v = 0; d->labels && v < d->count; v++) free(d->labels[v]);
    free(d->labels);
    free(d->ivals);
    free(d->fvals);
    free(d->reads);
    free(d->name);
  }
  mi__space_probe_end(s);
  mi__space_asks_end(s);
  for (int32_t i = 0; i < s->node_count; i++) free(s->nodes[i].variants);
  free(s->nodes);
  free(s->dims);
  free(s->name_order);
  free(s->device_dim);
  free(s->knobs);
  free(s->variants);
  free(s->cons);
  free(s);
}

int32_t mi_space_dim_count(const mi_space_t *s) { return s ? s->dim_count : 0; }

#define DIM_OK(s, d) ((s) && (d) >= 0 && (d) < (s)->dim_count)

const char *mi_space_dim_name(const mi_space_t *s, int32_t d) {
  return DIM_OK(s, d) ? s->dims[d].name : NULL;
}
int32_t mi_space_dim_kind(const mi_space_t *s, int32_t d) { return DIM_OK(s, d) ? s->dims[d].kind : -1; }
int32_t mi_space_dim_node(const mi_space_t *s, int32_t d) { return DIM_OK(s, d) ? s->dims[d].node : -1; }
int32_t mi_space_dim_size(const mi_space_t *s, int32_t d) { return DIM_OK(s, d) ? s->dims[d].count : 0; }

const char *mi_space_dim_label(const mi_space_t *s, int32_t d, int32_t v) {
  if (!DIM_OK(s, d) || v < 0 || v >= s->dims[d].count) return NULL;
  return s->dims[d].labels[v];
}

uint32_t mi__space_variant_fuse(const mi_space_t *s, int32_t d, int32_t v) {
  int64_t g;
  if (!DIM_OK(s, d) || s->dims[d].kind != MI_DIM_VARIANT || v < 0 || v >= s->dims[d].count) return 0;
  g = s->dims[d].ivals[v];
  return g >= 0 && g < (int64_t)s->variant_count ? s->variants[g].fuse_mask : 0;
}

int mi__space_variant_keeps_fp32(const mi_space_t *s, int32_t d, int32_t v) {
  const uint32_t f32 = MI_DTYPE_BIT(MI_DTYPE_FLOAT32);
  int64_t g;
  if (!DIM_OK(s, d) || s->dims[d].kind != MI_DIM_VARIANT || v < 0 || v >= s->dims[d].count) return 1;
  g = s->dims[d].ivals[v];
  if (g < 0 || g >= (int64_t)s->variant_count || (s->variants[g].dtype_mask & f32)) return 1;
  for (int32_t i = 0; i < s->dims[d].count; i++) { /* a device that has FP32 kernels for it */
    int64_t o = s->dims[d].ivals[i];
    if (o >= 0 && o < (int64_t)s->variant_count && (s->variants[o].dtype_mask & f32)) return 0;
  }
  return 1;
}

double mi_space_log10_size(const mi_space_t *s) {
  double l = 0;
  for (int32_t i = 0; s && i < s->dim_count; i++) l += log10((double)s->dims[i].count);
  return l;
}

static int mul_ok(int64_t *acc, int64_t f) {
  if (f != 0 && *acc > ((int64_t)1 << 62) / f) return 0;
  *acc *= f;
  return 1;
}

int64_t mi_space_exact_size(const mi_space_t *s) {
  int64_t total = 1;
  if (!s) return -1;
  for (int32_t i = 0; i < s->dim_count; i++)
    if (s->dims[i].node < 0 && !mul_ok(&total, s->dims[i].count)) return -1;
  for (int32_t n = 0; n < s->node_count; n++) {
    const mi__node_t *slot = &s->nodes[n];
    int64_t node_total = 0;
    const mi__dim_t *vd = &s->dims[slot->variant_dim];
    for (int32_t v = 0; v < vd->count; v++) {
      int64_t per = 1;
      for (int32_t d = slot->first_dim; d < slot->end_dim; d++) {
        const mi__dim_t *dd = &s->dims[d];
        if (d == slot->variant_dim) continue;
        if (dd->reads && !(dd->reads[0] & (1u << v))) continue;
        if (!mul_ok(&per, dd->count)) return -1;
      }
      node_total += per;
      if (node_total > ((int64_t)1 << 62)) return -1;
    }
    if (!mul_ok(&total, node_total)) return -1;
  }
  return total;
}

void mi_space_size_text(const mi_space_t *s, char *buf, size_t cap) {
  double l = mi_space_log10_size(s);
  if (l < 6)
    snprintf(buf, cap, "%.0f", pow(10, l));
  else
    snprintf(buf, cap, "10^%.0f", floor(l));
}
