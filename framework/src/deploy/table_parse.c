/* table_parse.c - deployment.yaml read with libyaml, strictly: every error names PATH:LINE:COL,
 * and every config_id is checked against the configuration it names. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/yaml_io.h"
#include "deploy/deploy_internal.h"

typedef struct {
  yaml_document_t *doc;
  const char *path;
  mi_error_t *err;
  mi_deploy_table_t *t; /* what the document fills */
} ctx_t;

static int32_t at(ctx_t *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int32_t at(ctx_t *c, const yaml_node_t *n, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mi_errorf(c->err, MI_ERR_PARSE, "%s:%d:%d: %s", c->path,
                   n ? (int)n->start_mark.line + 1 : 1, n ? (int)n->start_mark.column + 1 : 1, msg);
}

static const char *scalar(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int32_t get_str(ctx_t *c, const yaml_node_t *n, const char *key, char **out) {
  const char *s = scalar(n);
  if (!s) return at(c, n, "'%s' must be a string", key);
  if (*out) return at(c, n, "'%s' given twice", key);
  if (!(*out = strdup(s))) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  return MI_OK;
}

static int32_t get_num(ctx_t *c, const yaml_node_t *n, const char *key, double *out) {
  const char *s = scalar(n);
  char *end;
  if (!s) return at(c, n, "'%s' must be a number", key);
  errno = 0;
  *out = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(*out))
    return at(c, n, "'%s' must be a number, not '%.40s'", key, s);
  return MI_OK;
}

static int32_t get_bool(ctx_t *c, const yaml_node_t *n, const char *key, int32_t *out) {
  const char *s = scalar(n);
  if (s && strcmp(s, "true") == 0) *out = 1;
  else if (s && strcmp(s, "false") == 0)
    *out = 0;
  else
    return at(c, n, "'%s' must be true or false", key);
  return MI_OK;
}

/* A count: a plain decimal integer in 0..INT32_MAX, nothing else. */
static int32_t get_count(ctx_t *c, const yaml_node_t *n, const char *key, int32_t *out) {
  const char *s = scalar(n);
  char *end;
  long long v;
  if (!s || !*s || strspn(s, "0123456789") != strlen(s))
    return at(c, n, "'%s' must be a whole number", key);
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || v > INT32_MAX)
    return at(c, n, "'%s' is out of range (at most %d)", key, (int)INT32_MAX);
  *out = (int32_t)v;
  return MI_OK;
}

#define FOR_PAIRS(c, n, p) \
  for (yaml_node_pair_t *p = (n)->data.mapping.pairs.start; p < (n)->data.mapping.pairs.top; p++)
#define KEY(c, p) yaml_document_get_node((c)->doc, (p)->key)
#define VAL(c, p) yaml_document_get_node((c)->doc, (p)->value)

static int32_t need_map(ctx_t *c, const yaml_node_t *n, const char *what) {
  if (!n || n->type != YAML_MAPPING_NODE) return at(c, n, "%s must be a mapping", what);
  return MI_OK;
}

/* need_map for an item that remembers where it stands (1-based), for later messages about it. */
static int32_t need_map_at(ctx_t *c, const yaml_node_t *n, const char *what, int32_t *line,
                           int32_t *column) {
  int32_t rc = need_map(c, n, what);
  if (rc == MI_OK) {
    *line = (int32_t)n->start_mark.line + 1;
    *column = (int32_t)n->start_mark.column + 1;
  }
  return rc;
}

/* `measured:` / `constraints:`: the bound keys of the objectives (mi_objective_name). */
static int32_t parse_figures(ctx_t *c, const yaml_node_t *n, const char *what, double *v,
                             int32_t *has, int32_t *modeled) {
  int32_t rc;
  if ((rc = need_map(c, n, what))) return rc;
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p));
    int32_t o = -1;
    for (int32_t j = 0; k && j < MI_OBJ_COUNT && o < 0; j++) {
      const char *bk;
      mi_objective_name(j, &bk);
      if (strcmp(k, bk) == 0) o = j;
    }
    if (modeled && k && strcmp(k, "energy_source") == 0) {
      const char *s = scalar(VAL(c, p));
      if (!s || (strcmp(s, "modeled") && strcmp(s, "measured")))
        return at(c, VAL(c, p), "'energy_source' must be modeled or measured");
      *modeled = strcmp(s, "modeled") == 0;
      continue;
    }
    if (o < 0) return at(c, KEY(c, p), "unknown key '%.40s' in %s", k ? k : "?", what);
    if (has && has[o]) return at(c, KEY(c, p), "'%s' given twice", k);
    if ((rc = get_num(c, VAL(c, p), k, &v[o]))) return rc;
    if (has) has[o] = 1;
  }
  return MI_OK;
}

static int32_t parse_kv(ctx_t *c, const yaml_node_t *n, mi_deploy_config_t *cf) {
  const yaml_node_t *first, *again;
  int32_t rc;
  size_t cap;
  if ((rc = need_map(c, n, "'configuration'"))) return rc;
  cap = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start) + 1;
  cf->keys = calloc(cap, sizeof *cf->keys);
  cf->values = calloc(cap, sizeof *cf->values);
  if (!cf->keys || !cf->values) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  switch (mi__yaml_repeated_key(c->doc, n, &first, &again)) {
  case 0: break;
  case 1: return at(c, again, "'%.60s' given twice (first at line %d)", scalar(again),
                    (int)first->start_mark.line + 1);
  default: return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  }
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p)), *v = scalar(VAL(c, p));
    if (!k || !*k || strchr(k, '=') || strchr(k, '\n'))
      return at(c, KEY(c, p), "configuration keys are space dimension names");
    if (!v || strchr(v, '\n')) return at(c, VAL(c, p), "the value of '%.60s' must be a one-line string", k);
    cf->keys[cf->kv_count] = strdup(k);
    cf->values[cf->kv_count] = strdup(v);
    if (!cf->keys[cf->kv_count] || !cf->values[cf->kv_count++])
      return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  }
  return MI_OK;
}

/* `verification: {runs: N, violations: B, failures: F}`: counts from tune's re-measurements. */
static int32_t parse_verification(ctx_t *c, const yaml_node_t *n, mi_deploy_config_t *cf) {
  int32_t rc;
  if ((rc = need_map(c, n, "'verification'"))) return rc;
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p));
    int32_t *dst = !k ? NULL : !strcmp(k, "runs")     ? &cf->verify_runs
                           : !strcmp(k, "violations") ? &cf->verify_violations
                           : !strcmp(k, "failures")   ? &cf->verify_failures
                                                      : NULL;
    if (!dst) return at(c, KEY(c, p), "unknown key '%.40s' in 'verification'", k ? k : "?");
    if ((rc = get_count(c, VAL(c, p), k, dst))) return rc;
  }
  if (cf->verify_runs < 1 || cf->verify_violations > cf->verify_runs ||
      cf->verify_failures > cf->verify_runs)
    return at(c, n, "'verification' needs runs >= 1 and at most that many violations and failures");
  return MI_OK;
}

static int32_t parse_config(ctx_t *c, const yaml_node_t *n, mi_deploy_config_t *cf) {
  const yaml_node_t *id_node = NULL;
  char id[17];
  int32_t rc, has_id = 0, has_cfg = 0, has_meas = 0, has_verif = 0;
  for (int32_t j = 0; j < MI_OBJ_COUNT; j++) cf->measured[j] = NAN;
  if ((rc = need_map_at(c, n, "a configuration entry", &cf->line, &cf->column))) return rc;
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p));
    const yaml_node_t *v = VAL(c, p);
    if (k && strcmp(k, "config_id") == 0) {
      const char *s = scalar(v);
      if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
        return at(c, v, "'config_id' must be 16 lowercase hex digits");
      if (has_id) return at(c, KEY(c, p), "'config_id' given twice");
      memcpy(cf->id, s, 17);
      id_node = v;
      has_id = 1;
    } else if (k && strcmp(k, "verified") == 0) {
      const char *s = scalar(v);
      if (!s || (strcmp(s, "ok") && strcmp(s, "VIOLATED")))
        return at(c, v, "'verified' must be \"ok\" or \"VIOLATED\"");
      snprintf(cf->verified, sizeof cf->verified, "%s", s);
    } else if (k && strcmp(k, "verification") == 0) {
      if (has_verif) return at(c, KEY(c, p), "'verification' given twice");
      if ((rc = parse_verification(c, v, cf))) return rc;
      has_verif = 1;
    } else if (k && strcmp(k, "measured") == 0) {
      if (has_meas) return at(c, KEY(c, p), "'measured' given twice");
      if ((rc = parse_figures(c, v, "'measured'", cf->measured, NULL, &cf->energy_modeled))) return rc;
      has_meas = 1;
    } else if (k && strcmp(k, "configuration") == 0) {
      if (has_cfg) return at(c, KEY(c, p), "'configuration' given twice");
      if ((rc = parse_kv(c, v, cf))) return rc;
      has_cfg = 1;
    } else {
      return at(c, KEY(c, p), "unknown key '%.40s' in a configuration", k ? k : "?");
    }
  }
  if (!has_id || !has_cfg || !has_meas)
    return at(c, n, "a configuration needs 'config_id', 'measured' and 'configuration'");
  /* The id names the configuration everywhere (history, logs, mi-run's report): a table whose
   * configuration was edited or cut short must not run under it as something else. */
  if (mi_deploy_config_id(cf, id) != MI_OK)
    return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  if (strcmp(id, cf->id) != 0)
    return at(c, id_node,
              "config_id %s does not match its configuration (%d key%s, which hash to %s): "
              "the table was edited or cut short",
              cf->id, (int)cf->kv_count, cf->kv_count == 1 ? "" : "s", id);
  return MI_OK;
}

/* `vs_default:` of an entry (mi-host tune's paired check of the chosen against the default). */
static int32_t parse_vs_default(ctx_t *c, const yaml_node_t *n, mi_deploy_entry_t *e) {
  int32_t rc, seen = 0;
  if ((rc = need_map(c, n, "'vs_default'"))) return rc;
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p));
    const yaml_node_t *v = VAL(c, p);
    if (k && strcmp(k, "speedup") == 0) rc = get_num(c, v, k, &e->vs_default), seen |= 1;
    else if (k && strcmp(k, "ci95_low") == 0)
      rc = get_num(c, v, k, &e->vs_default_lo), seen |= 2;
    else if (k && strcmp(k, "ci95_high") == 0)
      rc = get_num(c, v, k, &e->vs_default_hi), seen |= 4;
    else if (k && strcmp(k, "rounds") == 0)
      rc = get_count(c, v, k, &e->vs_default_rounds), seen |= 8;
    else if (k && strcmp(k, "verdict") == 0) {
      const char *s = scalar(v);
      if (!s || strlen(s) >= sizeof e->vs_default_verdict)
        return at(c, v, "'verdict' must be a short string");
      snprintf(e->vs_default_verdict, sizeof e->vs_default_verdict, "%s", s);
      seen |= 16;
    } else
      return at(c, KEY(c, p), "unknown key '%.40s' in vs_default", k ? k : "?");
    if (rc) return rc;
  }
  if (seen != 31)
    return at(c, n, "vs_default needs speedup, ci95_low, ci95_high, rounds and verdict");
  e->has_vs_default = 1;
  return MI_OK;
}

static int32_t grow_configs(ctx_t *c, mi_deploy_entry_t *e, int32_t add) {
  mi_deploy_config_t *nc = realloc(e->configs, (size_t)(e->config_count + add) * sizeof *nc);
  if (!nc) return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  memset(nc + e->config_count, 0, (size_t)add * sizeof *nc);
  e->configs = nc;
  return MI_OK;
}

static int32_t parse_entry(ctx_t *c, const yaml_node_t *n, mi_deploy_entry_t *e) {
  int32_t rc, has_chosen = 0, has_fb = 0;
  if ((rc = need_map_at(c, n, "a deployment", &e->line, &e->column))) return rc;
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p));
    const yaml_node_t *v = VAL(c, p);
    if (!k) return at(c, KEY(c, p), "keys must be strings");
    if (strcmp(k, "model") == 0) rc = get_str(c, v, k, &e->model);
    else if (strcmp(k, "device") == 0)
      rc = get_str(c, v, k, &e->device);
    else if (strcmp(k, "status") == 0)
      rc = get_str(c, v, k, &e->status);
    else if (strcmp(k, "stack") == 0)
      rc = get_str(c, v, k, &e->stack);
    else if (strcmp(k, "stack_hash") == 0)
      rc = get_str(c, v, k, &e->stack_hash);
    else if (strcmp(k, "fallback") == 0)
      rc = get_str(c, v, k, &e->fallback);
    else if (strcmp(k, "assigned") == 0)
      rc = get_bool(c, v, k, &e->assigned);
    else if (strcmp(k, "vs_default") == 0)
      rc = parse_vs_default(c, v, e);
    else if (strcmp(k, "chosen") == 0) {
      /* chosen comes first in the table, but a hand-written one may order keys freely */
      if (has_chosen) return at(c, KEY(c, p), "'chosen' given twice");
      if ((rc = grow_configs(c, e, 1))) return rc;
      memmove(e->configs + 1, e->configs, (size_t)e->config_count * sizeof *e->configs);
      memset(e->configs, 0, sizeof *e->configs);
      e->config_count++;
      rc = parse_config(c, v, &e->configs[0]);
      has_chosen = 1;
    } else if (strcmp(k, "fallbacks") == 0) {
      int32_t m;
      if (has_fb) return at(c, KEY(c, p), "'fallbacks' given twice");
      if (v->type != YAML_SEQUENCE_NODE) return at(c, v, "'fallbacks' must be a list");
      m = (int32_t)(v->data.sequence.items.top - v->data.sequence.items.start);
      if ((rc = grow_configs(c, e, m))) return rc;
      for (int32_t i = 0; i < m && !rc; i++) {
        mi_deploy_config_t *cf = &e->configs[e->config_count++];
        rc = parse_config(c, yaml_document_get_node(c->doc, v->data.sequence.items.start[i]), cf);
      }
      has_fb = 1;
    } else {
      return at(c, KEY(c, p), "unknown key '%.40s' in a deployment", k);
    }
    if (rc) return rc;
  }
  if (!e->model || !e->device) return at(c, n, "a deployment needs 'model' and 'device'");
  if (!e->status && !has_chosen) return at(c, n, "a deployment needs 'chosen' (or a 'status')");
  if (has_fb && !has_chosen) return at(c, n, "'fallbacks' without 'chosen'");
  if (has_chosen && (!e->stack || !e->stack_hash))
    return at(c, n, "a deployment with a configuration needs 'stack' and 'stack_hash'");
  return MI_OK;
}

static int32_t parse_list(ctx_t *c, const yaml_node_t *n, const char *what, int32_t *count,
                          void **items, size_t size) {
  int32_t m;
  if (!n || n->type != YAML_SEQUENCE_NODE) return at(c, n, "'%s' must be a list", what);
  if (*items) return at(c, n, "'%s' given twice", what);
  m = (int32_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  if (!(*items = calloc((size_t)m + 1, size)))
    return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  *count = m;
  return MI_OK;
}

static int32_t parse_assignment(ctx_t *c, const yaml_node_t *n, mi_deploy_table_t *t) {
  int32_t rc, m;
  if ((rc = parse_list(c, n, "assignment", &m, (void **)&t->assign_model, sizeof(char *)))) return rc;
  if (!(t->assign_device = calloc((size_t)m + 1, sizeof(char *))))
    return mi_errorf(c->err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  for (int32_t i = 0; i < m; i++) {
    const yaml_node_t *it = yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
    if ((rc = need_map(c, it, "an assignment"))) return rc;
    t->assignment_count = i + 1;
    FOR_PAIRS(c, it, p) {
      const char *k = scalar(KEY(c, p));
      if (k && strcmp(k, "model") == 0) rc = get_str(c, VAL(c, p), k, &t->assign_model[i]);
      else if (k && strcmp(k, "device") == 0)
        rc = get_str(c, VAL(c, p), k, &t->assign_device[i]);
      else
        rc = at(c, KEY(c, p), "unknown key '%.40s' in an assignment", k ? k : "?");
      if (rc) return rc;
    }
    if (!t->assign_model[i] || !t->assign_device[i])
      return at(c, it, "an assignment needs 'model' and 'device'");
  }
  return MI_OK;
}

static int32_t parse_root(ctx_t *c, const yaml_node_t *n, mi_deploy_table_t *t) {
  int32_t rc, has_version = 0;
  if (!n) return at(c, n, "the table is empty");
  if ((rc = need_map(c, n, "the table"))) return rc;
  FOR_PAIRS(c, n, p) {
    const char *k = scalar(KEY(c, p));
    const yaml_node_t *v = VAL(c, p);
    if (!k) return at(c, KEY(c, p), "keys must be strings");
    if (strcmp(k, "version") == 0) {
      const char *s = scalar(v);
      if (!s || strcmp(s, "1") != 0) return at(c, v, "'version' must be 1");
      t->version = 1;
      has_version = 1;
    } else if (strcmp(k, "deployments") == 0) {
      if ((rc = parse_list(c, v, k, &t->entry_count, (void **)&t->entries, sizeof *t->entries)))
        return rc;
      for (int32_t i = 0; i < t->entry_count; i++)
        if ((rc = parse_entry(c, yaml_document_get_node(c->doc, v->data.sequence.items.start[i]),
                              &t->entries[i])))
          return rc;
    } else if (strcmp(k, "assignment") == 0) {
      if ((rc = parse_assignment(c, v, t))) return rc;
    } else if (strcmp(k, "recipe") == 0) {
      free(t->recipe); /* may hold the header comment's path; the key wins */
      t->recipe = NULL;
      if ((rc = get_str(c, v, k, &t->recipe))) return rc;
    } else if (strcmp(k, "inputs") == 0) {
      if ((rc = get_str(c, v, k, &t->inputs))) return rc;
    } else if (strcmp(k, "constraints") == 0) {
      if ((rc = parse_figures(c, v, "'constraints'", t->bound, t->has_bound, NULL))) return rc;
    } else {
      return at(c, KEY(c, p), "unknown key '%.40s'", k);
    }
  }
  if (!has_version) return at(c, n, "the table needs 'version: 1'");
  if (!t->entries) return at(c, n, "the table needs 'deployments'");
  return MI_OK;
}

/* mi-host tune names its recipe in the first line; libyaml drops comments, so read it here. */
static int32_t header_recipe(const char *text, size_t len, mi_deploy_table_t *t) {
  static const char tag[] = "# Meta Infer deployment table, written by mi-host tune from ";
  const char *nl;
  if (len <= sizeof tag - 1 || memcmp(text, tag, sizeof tag - 1) != 0) return MI_OK;
  text += sizeof tag - 1;
  len -= sizeof tag - 1;
  nl = memchr(text, '\n', len);
  if (!nl || nl == text) return MI_OK;
  t->recipe = strndup(text, (size_t)(nl - text));
  return t->recipe ? MI_OK : MI_ERR_OUT_OF_MEMORY;
}

static int32_t parse_doc(void *user, yaml_document_t *doc) {
  ctx_t *c = user;
  c->doc = doc;
  return parse_root(c, yaml_document_get_root_node(doc), c->t);
}

/* The writer never uses aliases, and a table nests 6 levels. */
static const mi__yaml_limits_t k_limits = {MI__DEPLOY_MAX_BYTES, 16, 0};

int32_t mi_deploy_parse(const char *text, size_t len, const char *path, mi_deploy_table_t **out,
                        mi_error_t *err) {
  mi_deploy_table_t *t;
  ctx_t c;
  int32_t rc;
  if (out) *out = NULL;
  if (!text || !path || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "deploy: NULL argument");
  if (!(t = calloc(1, sizeof *t))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  t->path = strdup(path);
  t->dir = mi__path_dir(path);
  if (!t->path || !t->dir || header_recipe(text, len, t)) {
    mi_deploy_destroy(t);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  }
  c = (ctx_t){.path = path, .err = err, .t = t};
  if ((rc = mi__yaml_walk(text, len, path, &k_limits, parse_doc, &c, err)) != MI_OK) {
    mi_deploy_destroy(t);
    return rc;
  }
  *out = t;
  return MI_OK;
}

int32_t mi_deploy_load(const char *path, mi_deploy_table_t **out, mi_error_t *err) {
  char *buf = NULL;
  size_t n = 0;
  int32_t rc;
  if (out) *out = NULL;
  if (!path || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "deploy: NULL argument");
  if ((rc = mi__read_file(path, MI__DEPLOY_MAX_BYTES, &buf, &n, err))) return rc;
  rc = mi_deploy_parse(buf, n, path, out, err);
  free(buf);
  return rc;
}
