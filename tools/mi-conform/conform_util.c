/* conform_util.c - shared helpers of the conformance rules. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_util.h"

/* Fetches `count` descriptions of `size` bytes each through `get`, zeroed and size-prefixed,
 * then runs `terminate` on each (as `e`) to end its fixed char arrays. */
#define FETCH(arr, cnt, countfn, descfn, type, terminate)                                 \
  do {                                                                                    \
    if (a->countfn && a->descfn) {                                                        \
      if (a->countfn(c->plugin.ctx, dev, &d->cnt, &err) != MI_OK) {                       \
        snprintf(why, n, "device %u: " #countfn " failed: %s", dev, err.message);         \
        goto fail;                                                                        \
      }                                                                                   \
      if (d->cnt > 4096) {                                                                \
        snprintf(why, n, "device %u: " #countfn " says %u", dev, d->cnt);                 \
        goto fail;                                                                        \
      }                                                                                   \
      d->arr = calloc(d->cnt ? d->cnt : 1, sizeof(type));                                 \
      if (!d->arr) goto fail;                                                             \
      for (uint32_t i = 0; i < d->cnt; i++) {                                             \
        d->arr[i].struct_size = sizeof(type);                                             \
        if (a->descfn(c->plugin.ctx, dev, i, &d->arr[i], &err) != MI_OK) {                \
          snprintf(why, n, "device %u: " #descfn "(%u) failed: %s", dev, i, err.message); \
          goto fail;                                                                      \
        }                                                                                 \
        type *e = &d->arr[i];                                                             \
        terminate;                                                                        \
      }                                                                                   \
    }                                                                                     \
  } while (0)

/* Forces every fixed char array of the descriptions to be terminated. */
#define TERMINATE(field) (field)[sizeof(field) - 1] = '\0'

static int vverdict(char *why, size_t n, int verdict, const char *fmt, va_list ap) {
  if (vsnprintf(why, n, fmt, ap) < 0 && n) why[0] = '\0';
  return verdict;
}

int conform_verdict(char *why, size_t n, int verdict, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verdict = vverdict(why, n, verdict, fmt, ap);
  va_end(ap);
  return verdict;
}

int conform_checked(char *why, size_t n, int checked, const char *none, const char *fmt, ...) {
  va_list ap;
  int verdict;
  if (!checked) return conform_verdict(why, n, CONFORM_SKIP, "%s", none);
  va_start(ap, fmt);
  verdict = vverdict(why, n, CONFORM_PASS, fmt, ap);
  va_end(ap);
  return verdict;
}

int32_t conform_descs_get(conform_ctx_t *c, uint32_t dev, conform_descs_t *d, char *why,
                          size_t n) {
  const mi_plugin_api_t *a = &c->plugin.api;
  mi_error_t err = {0};
  memset(d, 0, sizeof *d);
  d->device.struct_size = sizeof d->device;
  if (a->device_info(c->plugin.ctx, dev, &d->device, &err) != MI_OK) {
    snprintf(why, n, "device %u: device_info failed: %s", dev, err.message);
    goto fail;
  }
  TERMINATE(d->device.name);
  FETCH(knobs, knob_count, knob_count, knob_desc, mi_knob_desc_t,
        (TERMINATE(e->name), TERMINATE(e->choices), TERMINATE(e->applies_to)));
  FETCH(variants, variant_count, variant_count, variant_desc, mi_variant_desc_t,
        (TERMINATE(e->id), TERMINATE(e->op_type), TERMINATE(e->knobs)));
  FETCH(counters, counter_count, counter_count, counter_desc, mi_counter_desc_t,
        (TERMINATE(e->name), TERMINATE(e->unit)));
  FETCH(constraints, constraint_count, constraint_count, constraint_desc, mi_constraint_desc_t,
        (TERMINATE(e->a), TERMINATE(e->b), TERMINATE(e->reason)));
  return MI_OK;
fail:
  conform_descs_free(d);
  return MI_ERR_ABI;
}

void conform_descs_free(conform_descs_t *d) {
  free(d->knobs);
  free(d->variants);
  free(d->counters);
  free(d->constraints);
  memset(d, 0, sizeof *d);
}

int64_t conform_enum_count(const mi_knob_desc_t *k) {
  int64_t count = 0;
  const char *p = k->choices;
  if (!*p) return 0;
  for (count = 1; *p; p++)
    if (*p == '|') count++;
  return count;
}

int conform_unit_ok(int32_t kind, const char *unit) {
  static const char *const k_units[][5] = {
      [MI_COUNTER_TIMER] = {"ns", "us", "ms", "s", NULL},
      [MI_COUNTER_MEMORY] = {"bytes", NULL},
      [MI_COUNTER_ENERGY] = {"J", "mJ", "uJ", NULL},
      [MI_COUNTER_POWER] = {"W", "mW", NULL},
      [MI_COUNTER_FREQUENCY] = {"Hz", "kHz", "MHz", "GHz", NULL},
      [MI_COUNTER_TEMPERATURE] = {"C", NULL},
  };
  if (kind == MI_COUNTER_OTHER) return 1;
  if (kind < 0 || kind > MI_COUNTER_TEMPERATURE) return 0;
  for (int i = 0; k_units[kind][i]; i++)
    if (!strcmp(unit, k_units[kind][i])) return 1;
  return 0;
}

int conform_constraint_holds(const mi_constraint_desc_t *k, int64_t a, int64_t b) {
  int has_b = k->b[0] != '\0';
  switch (k->kind) {
  case MI_CONSTRAINT_DIVIDES: {
    int64_t rhs = has_b ? b : k->value;
    return a != 0 && (a == -1 || rhs % a == 0); /* INT64_MIN % -1 overflows (SIGFPE) */
  }
  case MI_CONSTRAINT_LESS_EQUAL: return a <= (has_b ? b : k->value);
  case MI_CONSTRAINT_PRODUCT_LE: {
    int64_t p, bb = has_b ? b : 1;
    /* as the host's space does: past int64, a negative product is below any bound */
    if (__builtin_mul_overflow(a, bb, &p)) return (a < 0) != (bb < 0);
    return p <= k->value;
  }
  case MI_CONSTRAINT_IMPLIES: return a != k->value || b == k->value2;
  default: return 1;
  }
}

int32_t conform_try_config(conform_ctx_t *c, uint32_t dev, const mi_variant_desc_t *v,
                           const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  mi_graph_t *g;
  double rel;
  int32_t rc;
  if (c->plugin.api.check_config)
    return c->plugin.api.check_config(c->plugin.ctx, dev, v->id, knobs, knob_count, err);
  g = conform_case_graph(v->op_type, 0, 1);
  if (!g) return mi_errorf(err, MI_ERR_UNSUPPORTED, "no case graph for %s", v->op_type);
  rc = conform_compare(c, dev, g, v->id, knobs, knob_count, 1, &rel, err);
  mi_graph_destroy(g);
  return rc;
}

static double rel_l2(const mi_array_t *ref, const mi_array_t *got) {
  const float *a = ref->data, *b = got->data;
  double num = 0, den = 0;
  int64_t n = mi_array_numel(ref);
  for (int64_t i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    num += d * d;
    den += (double)a[i] * (double)a[i];
  }
  if (!isfinite(num)) return INFINITY;
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* A session running every node of `g` on `variant` with `knobs`, without host fallback, and
 * seeded inputs for it. The caller frees both (mi_session_destroy, free_inputs). */
static int32_t open_case(conform_ctx_t *c, uint32_t dev, const mi_graph_t *g, const char *variant,
                         const mi_knob_value_t *knobs, int32_t knob_count, uint64_t seed,
                         mi_array_t **in, mi_session_t **s, mi_error_t *err) {
  mi_node_choice_t *choices;
  mi_session_options_t opts;
  int32_t rc;
  *s = NULL;
  for (int32_t i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    in[i] = mi_array_create(t->dtype, t->rank, t->dims);
    if (!in[i]) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    mi_array_fill_random(in[i], seed + (uint64_t)i);
  }
  choices = calloc((size_t)g->node_count, sizeof *choices);
  if (!choices) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < g->node_count; i++) {
    choices[i].node = g->nodes[i].name;
    choices[i].variant_id = variant;
    choices[i].knob_count = knob_count;
    choices[i].knobs = knobs;
  }
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.choice_count = g->node_count;
  opts.choices = choices;
  opts.allow_host_fallback = 0;
  opts.per_node_timing = c->per_node_timing;
  rc = mi_session_create(g, &c->plugin, dev, &opts, s, err);
  free(choices);
  return rc;
}

static void free_arrays(mi_array_t **a, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    mi_array_destroy(a[i]);
    a[i] = NULL;
  }
}

int32_t conform_compare(conform_ctx_t *c, uint32_t dev, const mi_graph_t *g, const char *variant,
                        const mi_knob_value_t *knobs, int32_t knob_count, uint64_t seed,
                        double *rel, mi_error_t *err) {
  mi_session_t *s = NULL;
  mi_array_t *in[MI_MAX_RANK] = {0}, *ref[4] = {0}, *got[4] = {0};
  int32_t rc = MI_OK, nin = g->input_count, nout = g->output_count;

  *rel = 0;
  if (nin > MI_MAX_RANK || nout > 4) return mi_errorf(err, MI_ERR_INTERNAL, "case too large");
  rc = open_case(c, dev, g, variant, knobs, knob_count, seed, in, &s, err);
  if (rc != MI_OK) goto done;
  rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, ref, nout, err);
  if (rc != MI_OK) goto done;
  rc = mi_session_run(s, (const mi_array_t *const *)in, nin, got, nout, err);
  if (rc != MI_OK) goto done;
  for (int32_t i = 0; i < nout; i++) {
    double e;
    if (got[i]->dtype != ref[i]->dtype || mi_array_numel(got[i]) != mi_array_numel(ref[i])) {
      rc = mi_errorf(err, MI_ERR_INTERNAL, "output %d has another dtype or size than the reference", i);
      goto done;
    }
    e = ref[i]->dtype == MI_DTYPE_FLOAT32 ? rel_l2(ref[i], got[i])
                                          : (memcmp(ref[i]->data, got[i]->data, ref[i]->nbytes) ? 1.0 : 0.0);
    if (e > *rel) *rel = e;
  }
done:
  mi_session_destroy(s);
  free_arrays(in, nin);
  free_arrays(ref, nout);
  free_arrays(got, nout);
  return rc;
}

int32_t conform_run_case(conform_ctx_t *c, uint32_t dev, const mi_graph_t *g, const char *variant,
                         uint64_t seed, int runs, conform_run_fn each, void *user, int *stopped,
                         mi_error_t *err) {
  mi_session_t *s = NULL;
  mi_array_t *in[MI_MAX_RANK] = {0}, *got[4] = {0};
  int32_t rc, nin = g->input_count, nout = g->output_count;
  *stopped = 0;
  if (nin > MI_MAX_RANK || nout > 4) return mi_errorf(err, MI_ERR_INTERNAL, "case too large");
  rc = open_case(c, dev, g, variant, NULL, 0, seed, in, &s, err);
  for (int r = 0; rc == MI_OK && r < runs && !*stopped; r++) {
    rc = mi_session_run(s, (const mi_array_t *const *)in, nin, got, nout, err);
    if (rc == MI_OK) *stopped = each(user, s, g);
    free_arrays(got, nout);
  }
  mi_session_destroy(s);
  free_arrays(in, nin);
  return rc;
}
