/* cmd_compare.c - `mi-host compare`: configurations of one model on one device measured in
 * interleaved rounds in fresh workers; each one's median and its ratio to the first with a 95%
 * bootstrap interval (docs/measurement.md, "Paired comparison"). */
#define _GNU_SOURCE 1
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "tune.h"

#define MAX_SETS 32

typedef struct cmp_config {
  const char *source;         /* "default", or the --config argument */
  const char *sets[MAX_SETS]; /* --set KEY=VALUE after it */
  int nset;
  char *text; /* canonical "key=value" lines */
  int32_t *pt;
} cmp_config_t;

typedef struct cmp_args {
  const char *model, *device;
  const char *fallback; /* --fallback: 'ref' or PLUGIN:INDEX; NULL: the default */
  /* --shape, --input, --calib */
  const char *shapes[MI_HOST_MAX_INPUT_ARGS], *files[MI_HOST_MAX_INPUT_ARGS], *calib;
  int nshape, nfile, nvalue;
  const char *values[MI_HOST_MAX_INPUT_ARGS]; /* --value NAME=V0,V1, then a --config table's own */
  char *table_values[MI_HOST_MAX_INPUT_ARGS]; /* those of the tables (owned) */
  int ntable_values;
  /* the shapes of --calib's first sample, for inputs with dynamic dims */
  char calib_shapes[MI_HOST_MAX_INPUT_ARGS][256];
  char inputs[MI_HOST_INPUTS_TEXT]; /* every input's shape "NAME:D0xD1;..." for the workers, when given */
  char fixed[MI_HOST_FIXED_TEXT];   /* the --input files "NAME=/ABS/FILE.npy;..." for the workers */
  cmp_config_t cfg[MI_COMPARE_MAX_CONFIGS];
  int n;
  mi_measure_options_t mo;
  mi_compare_options_t co;
  double timeout_s;
} cmp_args_t;

#define OPTIONS(X)                                                                            \
  MI_CLI_OPT_MODEL(X)                                                                         \
  X(O_DEVICE, "device", "PLUGIN:INDEX", "the device to measure on")                           \
  MI_CLI_OPT_FALLBACK(X)                                                                      \
  X(O_CONFIG, "config", "C.yaml[#N]",                                                         \
    "a configuration: a deployment.yaml (#N: its Nth configuration\n"                         \
    "of the device's entry, 0 the chosen one) or a YAML mapping of\n"                         \
    "space keys (repeatable)")                                                                \
  X(O_DEFAULT, "default", NULL, "the space's default configuration (repeatable)")             \
  X(O_SET, "set", "KEY=VALUE", "change one key of the --config or --default before it")       \
  MI_CLI_OPTS_MODEL_INPUT(X)                                                                  \
  MI_CLI_OPT_VALUE(X)                                                                         \
  X(O_CALIB, "calib", "DIR",                                                                  \
    "the runs' inputs from DIR's first sample (*.npy, a\n"                                    \
    "subfolder per input for several; as a recipe's calibration)")                            \
  X(O_TARGET, "target", "X", "stop when every ratio is known to +-X, a share (default 0.02)") \
  X(O_BUDGET, "budget-s", "S", "stop after S seconds (default 120)")                          \
  MI_CLI_OPT_WORKER_TIMEOUT(X)                                                                \
  X(O_MIN_ROUNDS, "min-rounds", "N", "at least N rounds (default 5)")                         \
  X(O_MAX_ROUNDS, "max-rounds", "N", "at most N rounds (default 30)")                         \
  X(O_SEED, "seed", "S", "the seed of the round orders and the bootstrap")                    \
  X(O_REPEAT, "repeat", "N",                                                                  \
    "N timed cycles per round, each running every\n"                                          \
    "configuration once (default up to 150 within 1 s)")                                      \
  X(O_WARMUP, "warmup", "N", "warm-up cycles per round (and at least 0.1 s)")                 \
  MI_CLI_OPT_JSON(X)
MI_CLI_TABLE(OPTIONS, k_opts);

static int parse(mi_host_t *h, int argc, char **argv, cmp_args_t *a) {
  mi_cli_t c;
  int k, st;
  mi_measure_options_default(&a->mo);
  /* A round (one worker running every configuration in turn, docs/measurement.md): 0.1 s of
   * warm-up, then up to 150 cycles within 1 s (half the budget); the rounds do the rest. */
  a->mo.min_warmup_s = 0.1;
  a->mo.max_repeats = 150;
  a->mo.budget_s = 2;
  mi_compare_options_default(&a->co);
  a->timeout_s = 60;
  mi_host_cli_begin(h, &c, "compare", k_opts, NULL, argc, argv);
  while ((k = mi_host_cli_next(&c, &st))) {
    const char *o = c.opt, *v = c.value;
    char *end = NULL;
    if (k == O_JSON) {
      h->json = 1;
      continue;
    }
    if (k == O_DEFAULT || k == O_CONFIG) {
      if (a->n == MI_COMPARE_MAX_CONFIGS)
        return mi_host_usage_error("compare: at most %d configurations", MI_COMPARE_MAX_CONFIGS);
      a->cfg[a->n++].source = k == O_DEFAULT ? "default" : v;
      continue;
    }
    if (k == O_MODEL) a->model = v;
    else if (k == O_DEVICE)
      a->device = v;
    else if (k == O_FALLBACK)
      a->fallback = v;
    else if (k == O_SET) {
      cmp_config_t *cf = a->n ? &a->cfg[a->n - 1] : NULL;
      if (!cf || !strchr(v, '=') || v[0] == '=' || cf->nset == MAX_SETS)
        return mi_host_usage_error("compare: --set KEY=VALUE follows the --config or --default it changes, got '%s'", v);
      cf->sets[cf->nset++] = v;
    } else if (k == O_SHAPE || k == O_INPUT || k == O_VALUE) {
      /* Checked against the model by mi_graph_input_args, as profile and accuracy do. */
      int *n = k == O_SHAPE ? &a->nshape : k == O_INPUT ? &a->nfile
                                                        : &a->nvalue;
      if (*n == MI_HOST_MAX_INPUT_ARGS)
        return mi_host_usage_error("compare: at most %d %s options", MI_HOST_MAX_INPUT_ARGS, o);
      (k == O_SHAPE ? a->shapes : k == O_INPUT ? a->files
                                               : a->values)[(*n)++] = v;
    } else if (k == O_CALIB) {
      a->calib = v;
    } else if (k == O_TARGET || k == O_BUDGET || k == O_TIMEOUT) {
      double x = strtod(v, &end);
      if (*end || !(x > 0 && x <= 100000)) return mi_host_usage_error("compare: bad %s '%s'", o, v);
      if (k == O_TARGET) a->co.target = x;
      else if (k == O_BUDGET)
        a->co.budget_s = x;
      else
        a->timeout_s = x;
    } else {
      long n = strtol(v, &end, 10);
      if (*end || n < 0 || n > 100000) return mi_host_usage_error("compare: bad %s '%s'", o, v);
      if (k == O_MIN_ROUNDS) a->co.min_rounds = (int32_t)n;
      else if (k == O_MAX_ROUNDS) {
        if (n < 2 || n > MI_COMPARE_MAX_ROUNDS)
          return mi_host_usage_error("compare: --max-rounds wants 2..%d", MI_COMPARE_MAX_ROUNDS);
        a->co.max_rounds = (int32_t)n;
      } else if (k == O_SEED)
        a->co.seed = (uint64_t)n;
      else if (k == O_REPEAT) {
        a->mo.min_repeats = (int32_t)n;
        if (a->mo.max_repeats < n) a->mo.max_repeats = (int32_t)n;
      } else
        a->mo.warmup = (int32_t)n;
    }
  }
  if (st != MI_HOST_OK) return st;
  if (!a->model || !a->device || a->n < 2)
    return mi_host_usage_error(
        "compare needs --model M.onnx, --device PLUGIN:INDEX and two or more of "
        "--config C.yaml / --default");
  return MI_HOST_OK;
}

/* A configuration file as canonical text: a deployment.yaml (FILE, or FILE#N for the Nth
 * configuration of the device's entry, 0 the chosen one), else a YAML mapping of space keys to
 * values (the `configuration:` block of a deployment, at the top or under that key). */
static int32_t load_config_text(const char *arg, const char *device, char **out, mi_error_t *err) {
  char path[PATH_MAX];
  const char *hash = strrchr(arg, '#');
  long idx = 0;
  mi_deploy_table_t *t = NULL;
  mi_error_t derr;
  FILE *f;
  yaml_parser_t yp;
  yaml_document_t doc;
  yaml_node_t *root;
  int32_t rc = MI_OK;
  *out = NULL;
  snprintf(path, sizeof path, "%.*s", hash ? (int)(hash - arg) : (int)strlen(arg), arg);
  if (hash) {
    char *end;
    idx = strtol(hash + 1, &end, 10);
    if (*end || idx < 0) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: '#N' wants a number", arg);
  }
  if (mi_deploy_load(path, &t, &derr) == MI_OK) {
    int32_t e = mi_deploy_find(t, NULL, device);
    if (e < 0 || idx >= t->entries[e].config_count)
      rc = mi_errorf(err, MI_ERR_NOT_FOUND, "%s: no configuration %ld for %s", path, idx, device);
    else if (!(*out = mi_deploy_config_text(&t->entries[e].configs[idx])))
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "compare: out of memory");
    mi_deploy_destroy(t);
    return rc;
  }
  if (hash) return mi_errorf(err, MI_ERR_PARSE, "%s", derr.message);
  if (!(f = fopen(path, "rb"))) return mi_errorf(err, MI_ERR_IO, "%s: cannot open", path);
  yaml_parser_initialize(&yp);
  yaml_parser_set_input_file(&yp, f);
  if (!yaml_parser_load(&yp, &doc)) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s:%d:%d: %s", path, (int)yp.problem_mark.line + 1,
                   (int)yp.problem_mark.column + 1, yp.problem ? yp.problem : "bad YAML");
    yaml_parser_delete(&yp);
    fclose(f);
    return rc;
  }
  root = yaml_document_get_root_node(&doc);
  if (root && root->type == YAML_MAPPING_NODE &&
      root->data.mapping.pairs.top - root->data.mapping.pairs.start == 1) {
    yaml_node_pair_t *p = root->data.mapping.pairs.start;
    yaml_node_t *k = yaml_document_get_node(&doc, p->key);
    if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, "configuration"))
      root = yaml_document_get_node(&doc, p->value);
  }
  if (!root || root->type != YAML_MAPPING_NODE) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: neither a deployment table (%s) nor a mapping of space keys to values",
                   path, derr.message);
  } else {
    size_t cap = 1, at = 0;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(&doc, p->key), *v = yaml_document_get_node(&doc, p->value);
      if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
        rc = mi_errorf(err, MI_ERR_PARSE,
                       "%s:%d: each entry of a configuration is KEY: VALUE (as a deployment "
                       "table: %.200s)",
                       path, k ? (int)k->start_mark.line + 1 : 0, derr.message);
        break;
      }
      cap += k->data.scalar.length + v->data.scalar.length + 2;
    }
    if (rc == MI_OK && !(*out = malloc(cap))) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "compare: out of memory");
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; rc == MI_OK && p < root->data.mapping.pairs.top; p++)
      at += (size_t)snprintf(*out + at, cap - at, "%s=%s\n",
                             (const char *)yaml_document_get_node(&doc, p->key)->data.scalar.value,
                             (const char *)yaml_document_get_node(&doc, p->value)->data.scalar.value);
    if (rc == MI_OK && at == 0) (*out)[0] = '\0';
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&yp);
  fclose(f);
  return rc;
}

/* Reads configuration c into a point of s: its text, then its --set lines. */
static int32_t make_point(const mi_space_t *s, const char *device, cmp_config_t *c, mi_error_t *err) {
  size_t n = 1, at = 0;
  char *base = NULL, *all;
  int32_t rc;
  if (strcmp(c->source, "default") != 0 && (rc = load_config_text(c->source, device, &base, err))) return rc;
  n += base ? strlen(base) : 0;
  for (int i = 0; i < c->nset; i++) n += strlen(c->sets[i]) + 1;
  if (!(all = malloc(n)) || !(c->pt = calloc((size_t)mi_space_dim_count(s) + 1, sizeof *c->pt))) {
    free(base);
    free(all);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "compare: out of memory");
  }
  at += (size_t)snprintf(all, n, "%s", base ? base : "");
  for (int i = 0; i < c->nset; i++) at += (size_t)snprintf(all + at, n - at, "%s\n", c->sets[i]);
  free(base);
  c->text = all;
  mi_space_default(s, c->pt);
  if (!all[0]) rc = mi_space_repair(s, c->pt, NULL, err); /* the default, as the tuner measures it */
  else if (!(rc = mi_space_parse(s, all, c->pt, err)))
    rc = mi_space_check(s, c->pt, err);
  if (rc) return rc;
  /* What is measured, in full: every active dimension, not only the ones the file named. */
  free(c->text);
  c->text = NULL;
  return mi_space_canonical(s, c->pt, &c->text, err);
}

/* An input with dynamic dims that neither --shape nor --input fixed takes the shape of --calib's
 * first sample, the sample the runs use (as a recipe's calibration does): it is added to the
 * --shape options, so the space is built, and the workers run, at that shape. Without it the
 * space was built on the dynamic graph, where no INT8 variant could be probed (int8_act was not
 * offered) and every worker refused the shapes as not concrete. */
static int32_t calib_shapes(cmp_args_t *a, mi_graph_t *g, mi_error_t *err) {
  mi_xf_samples_t *smp = NULL;
  const char *specs[MI_HOST_MAX_INPUT_ARGS];
  int n = 0, dynamic = 0;
  int32_t rc;
  for (int32_t i = 0; i < g->input_count; i++) dynamic |= mi_tensor_dynamic_dim(&g->tensors[g->inputs[i]]) >= 0;
  if (!dynamic) return MI_OK;
  if ((rc = mi_xf_samples_load_dir(g, a->calib, &smp, err))) return rc;
  if (smp->sample_count < 1 || smp->input_count != g->input_count) {
    mi_xf_samples_destroy(smp);
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--calib %s: no sample for the model's %d inputs", a->calib,
                     (int)g->input_count);
  }
  for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    const mi_array_t *x = smp->inputs[i];
    size_t at;
    if (mi_tensor_dynamic_dim(t) < 0) continue;
    if (a->nshape + n >= MI_HOST_MAX_INPUT_ARGS) {
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "compare: at most %d --shape options", MI_HOST_MAX_INPUT_ARGS);
      break;
    }
    at = (size_t)snprintf(a->calib_shapes[n], sizeof a->calib_shapes[n], "%s=", t->name);
    for (int32_t d = 0; d < x->rank && at < sizeof a->calib_shapes[n]; d++)
      at += (size_t)snprintf(a->calib_shapes[n] + at, sizeof a->calib_shapes[n] - at, d ? ",%lld" : "%lld",
                             (long long)x->dims[d]);
    if (at >= sizeof a->calib_shapes[n])
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--calib: input '%s': name too long", t->name);
    specs[n] = a->calib_shapes[n];
    n++;
  }
  mi_xf_samples_destroy(smp);
  if (rc == MI_OK && n > 0) rc = mi_graph_input_args(g, NULL, 0, specs, n, NULL, err);
  for (int i = 0; rc == MI_OK && i < n; i++) a->shapes[a->nshape++] = specs[i];
  return rc;
}

/* The fixed values a --config deployment table records in its `inputs:` ("sr={16000}", tune's
 * `values:`): its configuration names the nodes of the branch they chose, so the model is
 * compared with them fixed too, unless a --value of that input says otherwise. */
static int32_t table_values(cmp_args_t *a, mi_error_t *err) {
  for (int i = 0; i < a->n; i++) {
    const char *src = a->cfg[i].source, *hash = strrchr(src, '#');
    char path[PATH_MAX], *text, *save = NULL;
    mi_deploy_table_t *t = NULL;
    mi_error_t derr;
    if (!strcmp(src, "default")) continue;
    snprintf(path, sizeof path, "%.*s", hash ? (int)(hash - src) : (int)strlen(src), src);
    if (mi_deploy_load(path, &t, &derr) != MI_OK) continue; /* a plain mapping: no inputs */
    text = t->inputs ? strdup(t->inputs) : NULL;
    mi_deploy_destroy(t);
    for (char *it = text ? strtok_r(text, ";", &save) : NULL; it; it = strtok_r(NULL, ";", &save)) {
      char *eq = strstr(it, "={");
      size_t len = strlen(it), name = eq ? (size_t)(eq - it) : 0;
      int given = 0;
      if (!eq || it[len - 1] != '}') continue; /* a shape */
      for (int v = 0; v < a->nvalue && !given; v++) given = mi_cli_names_input(a->values[v], it, name);
      for (int v = 0; v < a->nfile && !given; v++) given = mi_cli_names_input(a->files[v], it, name);
      for (int v = 0; v < a->nshape && !given; v++) given = mi_cli_names_input(a->shapes[v], it, name);
      if (given) continue;
      if (a->nvalue == MI_HOST_MAX_INPUT_ARGS) {
        free(text);
        return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: over %d fixed values", path, MI_HOST_MAX_INPUT_ARGS);
      }
      /* "NAME={V0,V1}" -> "NAME=V0,V1", as --value takes it */
      it[len - 1] = '\0';
      memmove(eq + 1, eq + 2, strlen(eq + 2) + 1);
      if (!(a->table_values[a->ntable_values] = strdup(it))) {
        free(text);
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "compare: out of memory");
      }
      a->values[a->nvalue++] = a->table_values[a->ntable_values++];
    }
    free(text);
  }
  return MI_OK;
}

/* The model with --shape/--input applied (mi_graph_input_args: the rules of profile, accuracy
 * and mi-run), and what the workers get: every input's shape when any was given, and the
 * --input files by absolute path (a worker need not share the working directory). */
static int32_t load_graph(cmp_args_t *a, mi_graph_t **g, mi_error_t *err) {
  int32_t rc;
  if ((rc = mi_cli_check_values(a->values, a->nvalue, a->files, a->nfile, a->shapes, a->nshape, err)) ||
      (rc = mi_onnx_load(a->model, g, err)) || (rc = table_values(a, err)))
    return rc;
  if ((rc = mi_graph_input_args(*g, a->files, a->nfile, a->shapes, a->nshape, NULL, err)) ||
      (rc = mi_graph_input_values(*g, a->values, a->nvalue, err)))
    return rc;
  if (a->calib && (rc = calib_shapes(a, *g, err))) return rc;
  if (a->nshape + a->nfile + a->nvalue > 0 &&
      (rc = mi_host_inputs_text(*g, a->values, a->nvalue, a->inputs, sizeof a->inputs, err)))
    return rc;
  /* Checked here, before the space is built on the graph: a worker would only refuse it later
   * as "shapes are not concrete". */
  for (int32_t i = 0; i < (*g)->input_count; i++) {
    const mi_tensor_t *t = &(*g)->tensors[(*g)->inputs[i]];
    int32_t d = mi_tensor_dynamic_dim(t);
    if (d >= 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "input '%s' has dynamic dim %d: give --shape %s=D0xD1x..., --input %s=FILE.npy "
                       "or --calib DIR",
                       t->name, (int)d, t->name, t->name);
  }
  if ((rc = mi_host_fixed_inputs(a->files, a->nfile, a->fixed, sizeof a->fixed, err)))
    return rc;
  /* the space is built on the tuner's graph: an If fixed values decide is its branch, constants
   * folded (tune_run.c) */
  return mi_graph_make_static(*g, NULL, err);
}

static void verdict_text(const mi_compare_ratio_t *r, char *buf, size_t cap) {
  if (r->verdict == MI_COMPARE_TIED) snprintf(buf, cap, "no significant difference");
  else
    snprintf(buf, cap, "%.2fx %s than", r->verdict == MI_COMPARE_FASTER ? 1 / r->ratio : r->ratio,
             r->verdict == MI_COMPARE_FASTER ? "faster" : "slower");
}

/* "default", or the file, with its --set changes: how the reader named the configuration. */
static void label(const cmp_config_t *c, char *buf, size_t cap) {
  size_t at = (size_t)snprintf(buf, cap, "%s", c->source);
  for (int i = 0; i < c->nset && at < cap; i++) at += (size_t)snprintf(buf + at, cap - at, " %s", c->sets[i]);
}

static void print_result(const cmp_args_t *a, const mi_compare_result_t *res, const char *failure) {
  double lmin = INFINITY, lmax = -INFINITY;
  for (int32_t k = 0; k < res->rounds; k++)
    for (int32_t c = 0; c < res->count; c++)
      if (isfinite(res->load[k][c])) {
        lmin = fmin(lmin, res->load[k][c]);
        lmax = fmax(lmax, res->load[k][c]);
      }
  printf("compare: %s on %s, %d configurations, %d paired rounds in %.1f s (%s)\n", a->model, a->device,
         (int)res->count, (int)res->rounds, res->seconds,
         res->target_met ? "every interval within the target" : failure ? "stopped by a failure"
                                                                        : "budget or rounds ended before the target");
  for (int32_t c = 0; c < res->count; c++) {
    char v[64], name[256];
    const mi_compare_ratio_t *r = &res->vs_first[c];
    verdict_text(r, v, sizeof v);
    label(&a->cfg[c], name, sizeof name);
    if (c == 0)
      printf("  [0] %-40.40s median %.4f ms  (reference)\n", name, res->median_s[c] * 1e3);
    else
      printf("  [%d] %-40.40s median %.4f ms  ratio %.4f to [0] (95%% CI %.4f-%.4f, +-%.1f%%): %s [0]\n", (int)c,
             name, res->median_s[c] * 1e3, r->ratio, r->lo, r->hi, r->half_width * 100,
             r->verdict != MI_COMPARE_TIED             ? v
             : res->rounds < MI_COMPARE_VERDICT_ROUNDS ? "too few rounds for a verdict against"
                                                       : "no significant difference from");
  }
  if (res->rounds > 0)
    printf("  load average %.2f-%.2f on %d CPUs; %d of %d measurements taken under load (above %.1f per CPU)\n",
           lmin, lmax, (int)res->cpus, (int)res->loaded, (int)(res->rounds * res->count), a->co.load_limit);
  if (failure) printf("  FAILED: %s\n", failure);
}

/* One rounds x configurations matrix of the result as a JSON array of arrays: the samples in
 * ms, the order each round measured them in, or the 1-min load when each began. */
enum { ROUND_SAMPLES_MS,
       ROUND_ORDER,
       ROUND_LOAD };
static void json_rounds(const mi_compare_result_t *res, int what) {
  printf("[");
  for (int32_t k = 0; k < res->rounds; k++) {
    printf("%s[", k ? "," : "");
    for (int32_t c = 0; c < res->count; c++) {
      if (c) printf(",");
      if (what == ROUND_ORDER) printf("%d", (int)res->order[k][c]);
      else
        mi_json_double(stdout, what == ROUND_LOAD ? res->load[k][c] : res->sample_s[k][c] * 1e3);
    }
    printf("]");
  }
  printf("]");
}

static void print_json(const cmp_args_t *a, const mi_compare_result_t *res, const char *failure) {
  int first = 1;
  printf("{");
  mi_json_key(stdout, &first, "model");
  mi_json_string(stdout, a->model);
  mi_json_key(stdout, &first, "device");
  mi_json_string(stdout, a->device);
  printf(",\"ok\":%s,\"rounds\":%d,\"seconds\":", failure ? "false" : "true", (int)res->rounds);
  mi_json_double(stdout, res->seconds);
  printf(",\"target\":");
  mi_json_double(stdout, a->co.target);
  printf(",\"target_met\":%s,\"cpus\":%d,\"loaded\":%d", res->target_met ? "true" : "false", (int)res->cpus,
         (int)res->loaded);
  if (failure) {
    printf(",\"failure\":");
    mi_json_string(stdout, failure);
  }
  printf(",\"configs\":[");
  for (int32_t c = 0; c < a->n; c++) {
    const mi_compare_ratio_t *r = &res->vs_first[c];
    printf("%s{\"source\":", c ? "," : "");
    mi_json_string(stdout, a->cfg[c].source);
    printf(",\"canonical\":");
    mi_json_string(stdout, a->cfg[c].text);
    if (res->rounds > 0) {
      printf(",\"median_ms\":");
      mi_json_double(stdout, res->median_s[c] * 1e3);
      printf(",\"ratio\":");
      mi_json_double(stdout, r->ratio);
      printf(",\"ci95\":[");
      mi_json_double(stdout, r->lo);
      printf(",");
      mi_json_double(stdout, r->hi);
      printf("],\"half_width\":");
      mi_json_double(stdout, r->half_width);
      printf(",\"verdict\":\"%s\"", r->verdict == MI_COMPARE_FASTER   ? "faster"
                                    : r->verdict == MI_COMPARE_SLOWER ? "slower"
                                                                      : "no significant difference");
    }
    printf("}");
  }
  printf("],\"samples_ms\":");
  json_rounds(res, ROUND_SAMPLES_MS);
  printf(",\"order\":");
  json_rounds(res, ROUND_ORDER);
  printf(",\"load\":");
  json_rounds(res, ROUND_LOAD);
  printf("}\n");
}

int mi_host_cmd_compare(mi_host_t *h, int argc, char **argv) {
  cmp_args_t *a = calloc(1, sizeof *a);
  mi_compare_result_t *res = calloc(1, sizeof *res);
  mi_registry_t *reg;
  mi_plugin_t *pl = NULL;
  uint32_t dev = 0;
  mi_graph_t *g = NULL;
  mi_space_t *s = NULL;
  mi_space_options_t so;
  mi_worker_pool_t *pool = NULL;
  mi_worker_options_t wo;
  mi_worker_config_t base;
  mi_error_t err;
  char why[sizeof err.message + 320]; /* the failure, with the configuration it names */
  const int32_t *pts[MI_COMPARE_MAX_CONFIGS];
  int rc;
  if (!a || !res) {
    free(a);
    free(res);
    fprintf(stderr, "mi-host: compare: out of memory\n");
    return MI_HOST_FAIL;
  }
  if ((rc = parse(h, argc, argv, a)) != MI_HOST_OK) {
    if (rc == MI_HOST_DONE) rc = MI_HOST_OK; /* --help was printed */
    goto done;
  }
  rc = MI_HOST_FAIL;
  mi_error_clear(&err);
  /* Plugins are described in a sacrificial worker; no plugin code runs in this process. */
  h->described_only = 1;
  if (!(reg = mi_host_registry(h))) goto done;
  mi_worker_options_default(&wo);
  if (!(wo.plugin_dirs = mi_host_plugin_path(h))) {
    fprintf(stderr, "mi-host: compare: out of memory\n");
    goto done;
  }
  wo.timeout_s = a->timeout_s;
  wo.fallback = a->fallback;
  if (mi_host_check_fallback(h, "compare", a->fallback)) {
    rc = MI_HOST_USAGE;
    goto done;
  }
  if (mi_worker_pool_create(&wo, &pool, &err)) {
    fprintf(stderr, "mi-host: compare: %s\n", err.message);
    goto done;
  }
  /* The space is built here from the model and the plugin's declarations, as the tuner builds
   * it: its prepare probes and check_config questions go to the device's worker, and the
   * configurations run only in the workers. */
  mi_space_options_default(&so);
  so.probe_pool = pool;
  so.probe_spec = a->device;
  so.probe_model = a->model;
  if (mi_registry_device(reg, a->device, &pl, &dev, &err) || load_graph(a, &g, &err) ||
      ((so.probe_inputs = a->inputs[0] ? a->inputs : NULL), 0) ||
      mi_space_create(g, pl, dev, &so, &s, &err)) {
    fprintf(stderr, "mi-host: compare: %s\n", err.message);
    rc = MI_HOST_USAGE;
    goto done;
  }
  for (int i = 0; i < a->n; i++) {
    if (make_point(s, a->device, &a->cfg[i], &err)) {
      fprintf(stderr, "mi-host: compare: %s: %s\n", a->cfg[i].source, err.message);
      rc = MI_HOST_USAGE;
      goto done;
    }
    pts[i] = a->cfg[i].pt;
  }
  memset(&base, 0, sizeof base);
  base.struct_size = sizeof base;
  base.model = a->model;
  base.inputs = a->inputs[0] ? a->inputs : NULL;
  base.fixed_inputs = a->fixed[0] ? a->fixed : NULL;
  base.calibration = a->calib;
  base.samples = 2;
  if (!h->json)
    fprintf(stderr,
            "compare: %d configurations in interleaved rounds, each measurement in a fresh worker; "
            "until every ratio is known to +-%.1f%% or %.0f s\n",
            a->n, a->co.target * 100, a->co.budget_s);
  rc = mi_tune_compare_points(pool, a->device, s, &base, pts, a->n, &a->mo, &a->co, res, &err) == MI_OK
           ? MI_HOST_OK
           : MI_HOST_FAIL;
  if (rc != MI_HOST_OK && res->failed >= 0 && res->failed < a->n) {
    /* Which configuration it was: wrong outputs or impossible times are that configuration's
     * (or that device's) fault, and nothing about it is compared. */
    char name[256];
    label(&a->cfg[res->failed], name, sizeof name);
    snprintf(why, sizeof why, "configuration [%d] (%s) refused: %s", (int)res->failed, name,
             err.message);
  } else {
    snprintf(why, sizeof why, "%s", err.message);
  }
  if (h->json) print_json(a, res, rc == MI_HOST_OK ? NULL : why);
  else
    print_result(a, res, rc == MI_HOST_OK ? NULL : why);
done:
  mi_space_detach_pool(s);
  mi_worker_pool_destroy(pool);
  for (int i = 0; i < a->n; i++) {
    free(a->cfg[i].text);
    free(a->cfg[i].pt);
  }
  for (int i = 0; i < a->ntable_values; i++) free(a->table_values[i]);
  mi_space_destroy(s);
  mi_graph_destroy(g);
  free(a);
  free(res);
  return rc;
}
