/* recipe.c - YAML recipes: parse with libyaml, validate every key with its line and column. */
/* strdup, strndup */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "core/core.h"
#include "core/yaml_io.h"
#include "metainfer/mi_tune.h"

typedef struct {
  yaml_document_t *doc;
  const char *path;
  mi_recipe_t *r;
  const mi_registry_t *reg;
  mi_error_t *err;
} ctx_t;

static int32_t at(ctx_t *c, const yaml_node_t *n, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int32_t at(ctx_t *c, const yaml_node_t *n, int32_t code, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mi_errorf(c->err, code, "%s:%d:%d: %s", c->path, n ? (int)n->start_mark.line + 1 : 1,
                   n ? (int)n->start_mark.column + 1 : 1, msg);
}

static const char *scalar(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int32_t get_string(ctx_t *c, const yaml_node_t *n, const char *key, const char **out) {
  *out = scalar(n);
  if (!*out || !**out) return at(c, n, MI_ERR_PARSE, "'%s' must be a non-empty string", key);
  return MI_OK;
}

static int32_t get_int(ctx_t *c, const yaml_node_t *n, const char *key, int64_t lo, int64_t *out) {
  const char *s = scalar(n);
  char *end;
  long long v;
  if (!s) return at(c, n, MI_ERR_PARSE, "'%s' must be an integer", key);
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return at(c, n, MI_ERR_PARSE, "'%s' must be an integer, not '%.40s'", key, s);
  if (v < lo) return at(c, n, MI_ERR_PARSE, "'%s' must be at least %lld, not %lld", key, (long long)lo, v);
  *out = v;
  return MI_OK;
}

/* get_int with an upper bound: counts that size loops or allocations (measure.repeats of 2e9
 * would run for hours and overflow the doubled repeat count) are refused here. */
static int32_t get_int_max(ctx_t *c, const yaml_node_t *n, const char *key, int64_t lo, int64_t hi,
                           int64_t *out) {
  int32_t rc = get_int(c, n, key, lo, out);
  if (rc == MI_OK && *out > hi)
    return at(c, n, MI_ERR_PARSE, "'%s' must be at most %lld, not %lld", key, (long long)hi, (long long)*out);
  return rc;
}

static int32_t get_number(ctx_t *c, const yaml_node_t *n, const char *key, double *out) {
  const char *s = scalar(n);
  char *end;
  double v;
  if (!s) return at(c, n, MI_ERR_PARSE, "'%s' must be a number", key);
  v = strtod(s, &end);
  if (end == s || *end || !isfinite(v)) return at(c, n, MI_ERR_PARSE, "'%s' must be a number, not '%.40s'", key, s);
  if (v < 0) return at(c, n, MI_ERR_PARSE, "'%s' must not be negative (%g)", key, v);
  *out = v;
  return MI_OK;
}

/* A path relative to the recipe's folder; absolute paths and URLs (postgresql://...) stay. */
static char *resolve(const mi_recipe_t *r, const char *p) {
  size_t n;
  char *out;
  if (p[0] == '/' || strstr(p, "://")) return strdup(p);
  n = strlen(r->dir) + strlen(p) + 2;
  out = malloc(n);
  if (out) snprintf(out, n, "%s/%s", r->dir, p);
  return out;
}

static int32_t add_model(ctx_t *c, const yaml_node_t *n) {
  const char *s;
  mi_recipe_model_t *m, *nm;
  struct stat st;
  int32_t rc;
  if (n->type == YAML_MAPPING_NODE) { /* {path: ...} */
    yaml_node_pair_t *p = n->data.mapping.pairs.start;
    if (p == n->data.mapping.pairs.top || strcmp(scalar(yaml_document_get_node(c->doc, p->key)) ? scalar(yaml_document_get_node(c->doc, p->key)) : "", "path"))
      return at(c, n, MI_ERR_PARSE, "a model entry is a path or {path: FILE}");
    n = yaml_document_get_node(c->doc, p->value);
  }
  if ((rc = get_string(c, n, "model", &s)) != MI_OK) return rc;
  nm = realloc(c->r->models, ((size_t)c->r->model_count + 1) * sizeof *nm);
  if (!nm) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  c->r->models = nm;
  m = &nm[c->r->model_count++];
  memset(m, 0, sizeof *m);
  m->written = strdup(s);
  m->path = resolve(c->r, s);
  m->line = (int32_t)n->start_mark.line + 1;
  m->column = (int32_t)n->start_mark.column + 1;
  if (!m->written || !m->path) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  if (stat(m->path, &st) != 0 || !S_ISREG(st.st_mode))
    return at(c, n, MI_ERR_NOT_FOUND, "model file '%s' not found (resolved to %s)", s, m->path);
  return MI_OK;
}

static int32_t parse_models(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_SEQUENCE_NODE) return add_model(c, n);
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    int32_t rc = add_model(c, yaml_document_get_node(c->doc, *i));
    if (rc != MI_OK) return rc;
  }
  if (c->r->model_count == 0) return at(c, n, MI_ERR_PARSE, "'model' lists no model");
  return MI_OK;
}

static int32_t parse_inputs(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_MAPPING_NODE) return at(c, n, MI_ERR_PARSE, "'inputs' maps input names to shapes");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    mi_recipe_input_t *in, *ni;
    int32_t rc;
    if (!scalar(k)) return at(c, k, MI_ERR_PARSE, "an input name must be a string");
    if (v->type != YAML_SEQUENCE_NODE) return at(c, v, MI_ERR_PARSE, "the shape of '%s' must be a list of integers", scalar(k));
    ni = realloc(c->r->inputs, ((size_t)c->r->input_count + 1) * sizeof *ni);
    if (!ni) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
    c->r->inputs = ni;
    in = &ni[c->r->input_count++];
    memset(in, 0, sizeof *in);
    if (!(in->name = strdup(scalar(k)))) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
      int64_t d;
      if (in->rank == MI_MAX_RANK) return at(c, v, MI_ERR_PARSE, "shape of '%s' has more than %d dims", in->name, MI_MAX_RANK);
      if ((rc = get_int(c, yaml_document_get_node(c->doc, *i), "dimension", 1, &d)) != MI_OK) return rc;
      in->dims[in->rank++] = d;
    }
  }
  return MI_OK;
}

/* values: {NAME: V, NAME: [V0, V1]}: each kept as "V0,V1" (true/false as 1/0). */
static int32_t parse_values(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_MAPPING_NODE) return at(c, n, MI_ERR_PARSE, "'values' maps input names to values (a number, true/false, or a list)");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    mi_recipe_value_t *nv;
    char buf[4096];
    size_t len = 0;
    if (!scalar(k)) return at(c, k, MI_ERR_PARSE, "an input name must be a string");
    buf[0] = '\0';
    for (yaml_node_item_t *i = v->type == YAML_SEQUENCE_NODE ? v->data.sequence.items.start : NULL;
         v->type != YAML_SEQUENCE_NODE || i < v->data.sequence.items.top; i++) {
      const yaml_node_t *e = v->type == YAML_SEQUENCE_NODE ? yaml_document_get_node(c->doc, *i) : v;
      const char *x = scalar(e);
      char *end = NULL;
      if (!x || !*x) return at(c, e, MI_ERR_PARSE, "the value of '%s' must be a number, true/false, or a list of them", scalar(k));
      if (!strcmp(x, "true") || !strcmp(x, "True")) x = "1";
      else if (!strcmp(x, "false") || !strcmp(x, "False"))
        x = "0";
      else if ((void)strtod(x, &end), end == x || *end)
        return at(c, e, MI_ERR_PARSE, "the value of '%s' must be a number, true/false, or a list of them, not '%s'", scalar(k), x);
      if (len + strlen(x) + 2 >= sizeof buf) return at(c, v, MI_ERR_PARSE, "the value of '%s' is too long", scalar(k));
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "", x);
      if (v->type != YAML_SEQUENCE_NODE) break;
    }
    if (!len) return at(c, v, MI_ERR_PARSE, "the value of '%s' is empty", scalar(k));
    for (int32_t j = 0; j < c->r->value_count; j++)
      if (!strcmp(c->r->values[j].name, scalar(k))) return at(c, k, MI_ERR_PARSE, "input '%s' has two values", scalar(k));
    if (!(nv = realloc(c->r->values, ((size_t)c->r->value_count + 1) * sizeof *nv)))
      return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
    c->r->values = nv;
    nv = &nv[c->r->value_count++];
    nv->name = strdup(scalar(k));
    nv->text = strdup(buf);
    if (!nv->name || !nv->text) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  }
  return MI_OK;
}

MI_API void mi_recipe_values_text(const mi_recipe_t *r, char *buf, size_t cap, size_t *at) {
  for (int32_t i = 0; r && i < r->value_count && *at < cap; i++)
    *at += (size_t)snprintf(buf + *at, cap - *at, "%s%s={%s}", *at ? ";" : "", r->values[i].name, r->values[i].text);
}

MI_API void mi_recipe_inputs_text(const mi_recipe_t *r, char *buf, size_t cap) {
  size_t at = 0;
  if (!cap) return;
  buf[0] = '\0';
  for (int32_t i = 0; i < r->input_count && at < cap; i++) {
    at += (size_t)snprintf(buf + at, cap - at, "%s%s:", i ? ";" : "", r->inputs[i].name);
    for (int32_t d = 0; d < r->inputs[i].rank && at < cap; d++)
      at += (size_t)snprintf(buf + at, cap - at, d ? "x%lld" : "%lld", (long long)r->inputs[i].dims[d]);
  }
  mi_recipe_values_text(r, buf, cap, &at);
}

static int32_t parse_pool(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_SEQUENCE_NODE) return at(c, n, MI_ERR_PARSE, "'pool' must be a list of {plugin: NAME}");
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    yaml_node_t *e = yaml_document_get_node(c->doc, *i);
    mi_recipe_device_t *d, *nd;
    const mi_plugin_t *pl;
    const char *name = NULL;
    int64_t dev = 0;
    int32_t rc;
    if (e->type == YAML_SCALAR_NODE) {
      name = scalar(e);
    } else if (e->type == YAML_MAPPING_NODE) {
      for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
        const char *ks = scalar(k) ? scalar(k) : "";
        if (!strcmp(ks, "plugin")) {
          if ((rc = get_string(c, v, "plugin", &name)) != MI_OK) return rc;
        } else if (!strcmp(ks, "device")) {
          if ((rc = get_int_max(c, v, "device", 0, INT32_MAX, &dev)) != MI_OK) return rc;
        } else {
          return at(c, k, MI_ERR_PARSE, "unknown key '%s' in a pool entry (known: plugin, device)", ks);
        }
      }
    }
    if (!name || !*name) return at(c, e, MI_ERR_PARSE, "a pool entry needs 'plugin'");
    /* A plugin refused at load stays in the pool: its device fails with the reason. */
    if (c->reg && !mi_registry_find(c->reg, name) && !mi_registry_refusal(c->reg, name))
      return at(c, e, MI_ERR_NOT_FOUND, "unknown plugin '%s' (not loaded)", name);
    /* A refused plugin has no device count to check the index against. */
    if (c->reg && (pl = mi_registry_find(c->reg, name)) && (uint32_t)dev >= pl->device_count)
      return at(c, e, MI_ERR_NOT_FOUND, "plugin '%s' has no device %lld (it has %u)", name,
                (long long)dev, (unsigned)pl->device_count);
    nd = realloc(c->r->pool, ((size_t)c->r->device_count + 1) * sizeof *nd);
    if (!nd) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
    c->r->pool = nd;
    d = &nd[c->r->device_count++];
    d->plugin = strdup(name);
    d->device = (int32_t)dev;
    d->line = (int32_t)e->start_mark.line + 1;
    d->column = (int32_t)e->start_mark.column + 1;
    if (!d->plugin) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  }
  if (c->r->device_count == 0) return at(c, n, MI_ERR_PARSE, "'pool' is empty");
  return MI_OK;
}

static int32_t parse_objectives(ctx_t *c, const yaml_node_t *n, const char *key, int32_t *list,
                                int32_t *count) {
  if (n->type != YAML_SEQUENCE_NODE) return at(c, n, MI_ERR_PARSE, "'%s' must be a list of objectives", key);
  *count = 0;
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    yaml_node_t *e = yaml_document_get_node(c->doc, *i);
    int32_t o = scalar(e) ? mi_objective_find(scalar(e)) : -1;
    if (o < 0) return at(c, e, MI_ERR_PARSE, "unknown objective '%s' (known: latency, memory, energy, accuracy_drop)", scalar(e) ? scalar(e) : "?");
    for (int32_t k = 0; k < *count; k++)
      if (list[k] == o) return at(c, e, MI_ERR_PARSE, "objective '%s' listed twice", scalar(e));
    list[(*count)++] = o;
  }
  if (*count == 0) return at(c, n, MI_ERR_PARSE, "'%s' is empty", key);
  return MI_OK;
}

static int32_t parse_constraints(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_MAPPING_NODE) return at(c, n, MI_ERR_PARSE, "'constraints' must be a mapping");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    const char *ks = scalar(k) ? scalar(k) : "", *bk;
    int32_t o = -1, rc;
    for (int32_t i = 0; i < MI_OBJ_COUNT; i++)
      if (mi_objective_name(i, &bk) && !strcmp(bk, ks)) o = i;
    if (o < 0) return at(c, k, MI_ERR_PARSE, "unknown constraint '%s' (known: latency_ms, peak_memory_mb, energy_mj, accuracy_drop)", ks);
    if ((rc = get_number(c, v, ks, &c->r->bound[o])) != MI_OK) return rc;
    c->r->has_bound[o] = 1;
  }
  return MI_OK;
}

/* Known sub-keys of a mapping, each with a handler in the switch below. */
static int32_t parse_budget(ctx_t *c, const yaml_node_t *n) {
  /* `budget: 12` is what people write first: a count of measurements, the usual budget. */
  if (n->type == YAML_SCALAR_NODE) return get_int(c, n, "budget", 0, &c->r->budget_measurements);
  if (n->type != YAML_MAPPING_NODE)
    return at(c, n, MI_ERR_PARSE,
              "'budget' must be a number of measurements or a mapping {measurements, seconds}");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    const char *ks = scalar(k) ? scalar(k) : "";
    int32_t rc;
    if (!strcmp(ks, "measurements")) rc = get_int(c, v, "budget.measurements", 0, &c->r->budget_measurements);
    else if (!strcmp(ks, "seconds"))
      rc = get_number(c, v, "budget.seconds", &c->r->budget_seconds);
    else
      rc = at(c, k, MI_ERR_PARSE, "unknown key 'budget.%s' (known: measurements, seconds)", ks);
    if (rc != MI_OK) return rc;
  }
  return MI_OK;
}

static int32_t parse_search(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_MAPPING_NODE) return at(c, n, MI_ERR_PARSE, "'search' must be a mapping");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    const char *ks = scalar(k) ? scalar(k) : "", *s;
    int64_t x;
    int32_t rc = MI_OK;
    if (!strcmp(ks, "strategy")) {
      if ((rc = get_string(c, v, "search.strategy", &s)) == MI_OK && mi_strategy_find(s) < 0)
        rc = at(c, v, MI_ERR_PARSE, "unknown strategy '%s' (known: meta, random, exhaustive, nsga2)", s);
      if (rc == MI_OK && !(c->r->strategy = strdup(s))) rc = mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
    } else if (!strcmp(ks, "seed")) {
      if ((rc = get_int(c, v, "search.seed", 0, &x)) == MI_OK) c->r->seed = (uint64_t)x;
    } else if (!strcmp(ks, "population")) {
      if ((rc = get_int(c, v, "search.population", 2, &x)) == MI_OK) c->r->population = (int32_t)x;
    } else if (!strcmp(ks, "model")) {
      static const char *const names[] = {"precision", "prune", "fuse", "layout", "fold_bn"};
      if (v->type != YAML_SEQUENCE_NODE) return at(c, v, MI_ERR_PARSE, "'search.model' must be a list");
      c->r->model_dims = 0;
      for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, *i);
        int j;
        for (j = 0; j < 5 && !(scalar(e) && !strcmp(scalar(e), names[j])); j++) {
        }
        if (j == 5) return at(c, e, MI_ERR_PARSE, "unknown model dimension '%s' (known: precision, prune, fuse, layout, fold_bn)", scalar(e) ? scalar(e) : "?");
        c->r->model_dims |= 1u << j;
      }
    } else {
      rc = at(c, k, MI_ERR_PARSE, "unknown key 'search.%s' (known: strategy, seed, population, model)", ks);
    }
    if (rc != MI_OK) return rc;
  }
  return MI_OK;
}

static int32_t parse_measure(ctx_t *c, const yaml_node_t *n) {
  if (n->type != YAML_MAPPING_NODE) return at(c, n, MI_ERR_PARSE, "'measure' must be a mapping");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    const char *ks = scalar(k) ? scalar(k) : "";
    int64_t x;
    int32_t rc;
    if (!strcmp(ks, "repeats")) {
      if ((rc = get_int_max(c, v, "measure.repeats", 5, 10000, &x)) == MI_OK) c->r->repeats = (int32_t)x;
    } else if (!strcmp(ks, "warmup")) {
      if ((rc = get_int_max(c, v, "measure.warmup", 0, 10000, &x)) == MI_OK) c->r->warmup = (int32_t)x;
    } else if (!strcmp(ks, "timeout_s")) {
      double t = 0;
      if ((rc = get_number(c, v, "measure.timeout_s", &t)) == MI_OK && !(t > 0 && t <= 86400))
        rc = at(c, v, MI_ERR_PARSE, "'measure.timeout_s' must be more than 0 and at most 86400 seconds, not %g", t);
      if (rc == MI_OK) c->r->timeout_s = t;
    } else {
      rc = at(c, k, MI_ERR_PARSE, "unknown key 'measure.%s' (known: repeats, warmup, timeout_s)", ks);
    }
    if (rc != MI_OK) return rc;
  }
  return MI_OK;
}

static int32_t path_key(ctx_t *c, const yaml_node_t *v, const char *key, char **out) {
  const char *s;
  int32_t rc = get_string(c, v, key, &s);
  if (rc != MI_OK) return rc;
  free(*out);
  *out = resolve(c->r, s);
  return *out ? MI_OK : mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
}

/* A key given twice in one mapping is an error (YAML leaves it undefined, and the second value
 * would silently replace the first). Checked over the whole document before parsing; each node
 * is visited once, since aliases (`&a [*a, *a]`) can make the node graph cyclic. */
static int32_t unique_keys(ctx_t *c, const yaml_node_t *n, unsigned char *seen) {
  size_t id;
  if (!n) return MI_OK;
  id = (size_t)(n - c->doc->nodes.start);
  if (seen[id]) return MI_OK;
  seen[id] = 1;
  if (n->type == YAML_SEQUENCE_NODE) {
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
      int32_t rc = unique_keys(c, yaml_document_get_node(c->doc, *i), seen);
      if (rc != MI_OK) return rc;
    }
  } else if (n->type == YAML_MAPPING_NODE) {
    const yaml_node_t *first, *again;
    switch (mi__yaml_repeated_key(c->doc, n, &first, &again)) {
    case 0: break;
    case 1: return at(c, again, MI_ERR_PARSE, "key '%s' given twice (first at line %d)",
                      scalar(again), (int)first->start_mark.line + 1);
    default: return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
      int32_t rc = unique_keys(c, yaml_document_get_node(c->doc, p->value), seen);
      if (rc != MI_OK) return rc;
    }
  }
  return MI_OK;
}

static int32_t parse_root(ctx_t *c, const yaml_node_t *root) {
  int seen_version = 0, seen_model = 0, seen_pool = 0, seen_pref = 0;
  if (!root || root->type != YAML_MAPPING_NODE) return at(c, root, MI_ERR_PARSE, "a recipe is a YAML mapping");
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key), *v = yaml_document_get_node(c->doc, p->value);
    const char *ks = scalar(k) ? scalar(k) : "";
    int32_t rc;
    int64_t x;
    if (!strcmp(ks, "version")) {
      if ((rc = get_int(c, v, "version", 1, &x)) == MI_OK && x != 1)
        rc = at(c, v, MI_ERR_PARSE, "recipe version %lld is not supported (this build reads version 1)", (long long)x);
      c->r->version = (int32_t)x;
      seen_version = 1;
    } else if (!strcmp(ks, "model") || !strcmp(ks, "models")) {
      rc = parse_models(c, v);
      seen_model = 1;
    } else if (!strcmp(ks, "inputs")) {
      rc = parse_inputs(c, v);
    } else if (!strcmp(ks, "values")) {
      rc = parse_values(c, v);
    } else if (!strcmp(ks, "calibration")) {
      struct stat st;
      rc = path_key(c, v, "calibration", &c->r->calibration);
      if (rc == MI_OK && (stat(c->r->calibration, &st) != 0 || !S_ISDIR(st.st_mode)))
        rc = at(c, v, MI_ERR_NOT_FOUND, "calibration folder not found (resolved to %s)", c->r->calibration);
    } else if (!strcmp(ks, "pool")) {
      rc = parse_pool(c, v);
      seen_pool = 1;
    } else if (!strcmp(ks, "constraints")) {
      rc = parse_constraints(c, v);
    } else if (!strcmp(ks, "objectives")) {
      rc = parse_objectives(c, v, "objectives", c->r->objectives, &c->r->objective_count);
    } else if (!strcmp(ks, "preference")) {
      rc = parse_objectives(c, v, "preference", c->r->preference, &c->r->preference_count);
      seen_pref = 1;
    } else if (!strcmp(ks, "budget")) {
      rc = parse_budget(c, v);
    } else if (!strcmp(ks, "history")) {
      /* "none": no history at all; without the key tune keeps one in its output folder. */
      c->r->history_given = 1;
      if (!scalar(v) || strcmp(scalar(v), "none") != 0) rc = path_key(c, v, "history", &c->r->history);
    } else if (!strcmp(ks, "search")) {
      rc = parse_search(c, v);
    } else if (!strcmp(ks, "measure")) {
      rc = parse_measure(c, v);
    } else {
      rc = at(c, k, MI_ERR_PARSE, "unknown key '%s' (known: version, model, inputs, values, calibration, pool, constraints, objectives, preference, budget, history, search, measure)", ks);
    }
    if (rc != MI_OK) return rc;
  }
  if (!seen_version) return at(c, root, MI_ERR_PARSE, "missing key 'version' (write version: 1)");
  if (!seen_model) return at(c, root, MI_ERR_PARSE, "missing key 'model'");
  if (!seen_pool) return at(c, root, MI_ERR_PARSE, "missing key 'pool'");
  if (!seen_pref) {
    memcpy(c->r->preference, c->r->objectives, sizeof c->r->objectives);
    c->r->preference_count = c->r->objective_count;
  }
  return MI_OK;
}

static int32_t parse_doc(void *user, yaml_document_t *doc) {
  ctx_t *c = user;
  size_t nodes = (size_t)(doc->nodes.top - doc->nodes.start);
  unsigned char *seen = calloc(nodes ? nodes : 1, 1);
  int32_t rc;
  c->doc = doc;
  rc = seen ? unique_keys(c, yaml_document_get_root_node(doc), seen)
            : mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  free(seen);
  return rc == MI_OK ? parse_root(c, yaml_document_get_root_node(doc)) : rc;
}

/* A recipe is a page of YAML: 1 MiB is generous, the depth limit (32) far beyond its 4 levels,
 * and aliases are allowed but each repeats a subtree for the walk, so they are counted. */
static const mi__yaml_limits_t k_limits = {1u << 20, 0, 256};

int32_t mi_recipe_parse(const char *text, size_t len, const char *path, const mi_registry_t *reg,
                        mi_recipe_t **out, mi_error_t *err) {
  mi_recipe_t *r;
  ctx_t c;
  int32_t rc;
  if (out) *out = NULL;
  if (!text || !path || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "recipe: NULL argument");
  r = calloc(1, sizeof *r);
  if (!r) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  r->path = strdup(path);
  r->dir = mi__path_dir(path);
  r->objectives[0] = MI_OBJ_LATENCY;
  r->objective_count = 1;
  r->budget_measurements = 40;
  r->budget_seconds = 300; /* the whole tune of a (model, device), shared out by the tuner */
  r->seed = 1;
  r->model_dims = MI_SPACE_MODEL_ALL;
  r->repeats = 5;
  r->warmup = 2;
  r->timeout_s = 120;
  r->population = 8;
  if (!r->path || !r->dir) {
    mi_recipe_destroy(r);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "recipe: out of memory");
  }
  c.path = path;
  c.r = r;
  c.reg = reg;
  c.err = err;
  if ((rc = mi__yaml_walk(text, len, path, &k_limits, parse_doc, &c, err)) != MI_OK) {
    mi_recipe_destroy(r);
    return rc;
  }
  *out = r;
  return MI_OK;
}

int32_t mi_recipe_load(const char *path, const mi_registry_t *reg, mi_recipe_t **out,
                       mi_error_t *err) {
  char *buf = NULL;
  size_t n;
  int32_t rc;
  if (out) *out = NULL;
  if (!path || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "recipe: NULL argument");
  /* refused once past the limit, not read into memory whole */
  if ((rc = mi__read_file(path, k_limits.max_bytes, &buf, &n, err)) != MI_OK) return rc;
  rc = mi_recipe_parse(buf, n, path, reg, out, err);
  free(buf);
  return rc;
}

void mi_recipe_destroy(mi_recipe_t *r) {
  if (!r) return;
  for (int32_t i = 0; i < r->model_count; i++) {
    free(r->models[i].path);
    free(r->models[i].written);
  }
  for (int32_t i = 0; i < r->input_count; i++) free(r->inputs[i].name);
  for (int32_t i = 0; i < r->value_count; i++) {
    free(r->values[i].name);
    free(r->values[i].text);
  }
  free(r->values);
  for (int32_t i = 0; i < r->device_count; i++) free(r->pool[i].plugin);
  free(r->models);
  free(r->inputs);
  free(r->pool);
  free(r->calibration);
  free(r->history);
  free(r->strategy);
  free(r->path);
  free(r->dir);
  free(r);
}

const char *mi_objective_name(int32_t o, const char **bound_key) {
  static const char *const names[] = {"latency", "memory", "energy", "accuracy_drop"};
  static const char *const keys[] = {"latency_ms", "peak_memory_mb", "energy_mj", "accuracy_drop"};
  if (o < 0 || o >= MI_OBJ_COUNT) return NULL;
  if (bound_key) *bound_key = keys[o];
  return names[o];
}

int32_t mi_objective_find(const char *name) {
  const char *k;
  if (!name) return -1;
  for (int32_t i = 0; i < MI_OBJ_COUNT; i++)
    if (!strcmp(name, mi_objective_name(i, &k)) || !strcmp(name, k)) return i;
  if (!strcmp(name, "peak_memory") || !strcmp(name, "accuracy")) return !strcmp(name, "accuracy") ? MI_OBJ_ACCURACY : MI_OBJ_MEMORY;
  return -1;
}

/* Strategy names are recipe vocabulary; the search module implements them. */
int32_t mi_strategy_find(const char *name) {
  for (int32_t i = 0; i <= MI_STRATEGY_META; i++)
    if (name && !strcmp(name, mi_strategy_name(i))) return i;
  return -1;
}

const char *mi_strategy_name(int32_t s) {
  static const char *const names[] = {"random", "exhaustive", "nsga2", "meta"};
  return s >= 0 && s <= MI_STRATEGY_META ? names[s] : NULL;
}
