/* history.c - the evaluation log's front end over a store: one transaction per record, JSON
 * Lines import line by line, and the canonical text of a hardware-side configuration. */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "history/history_internal.h"
#include "metainfer/mi_farm.h"
#include "metainfer/mi_ltask.h"

struct mi_history {
  const mi_store_ops_t *ops;
  void *state;
};

MI_API int32_t mi_history_open_store(const mi_store_ops_t *ops, const char *where,
                                     mi_history_t **out, mi_error_t *err) {
  mi_history_t *h;
  int32_t rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_open: out is NULL");
  *out = NULL;
  if (!ops || !where) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_open: NULL");
  h = calloc(1, sizeof *h);
  if (!h) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "history: out of memory");
  h->ops = ops;
  if ((rc = ops->open(where, &h->state, err))) {
    free(h);
    return rc;
  }
  *out = h;
  return MI_OK;
}

MI_API int32_t mi_history_open(const char *path, mi_history_t **out, mi_error_t *err) {
  /* A postgresql:// URL selects the shared store (pg_store.c); anything else is a file. */
  if (mi_history_is_url(path)) {
    if (out) *out = NULL;
    if (!mi_store_pg())
      return mi_errorf(err, MI_ERR_UNSUPPORTED, "history: this build has no PostgreSQL client (libpq)");
    return mi_history_open_store(mi_store_pg(), path, out, err);
  }
  return mi_history_open_store(mi_store_sqlite(), path, out, err);
}

MI_API void mi_history_close(mi_history_t *h) {
  if (!h) return;
  h->ops->close(h->state);
  free(h);
}

MI_API int32_t mi_history_begin_run(mi_history_t *h, const char *tool, const char *note,
                                    int64_t *run_id, mi_error_t *err) {
  if (!h || !run_id) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_begin_run: NULL");
  return h->ops->put_run(h->state, tool, note, run_id, err);
}

MI_API char *mi_record_set_profile(mi_record_t *r, const mi_profile_t *p) {
  r->clock = p->clock == MI_CLOCK_DEVICE ? "device" : "wall";
  r->latency_s = p->latency.stats;
  r->repeats = p->latency.runs;
  r->rounds = p->latency.rounds;
  r->discarded = p->latency.discarded;
  r->prepare_s = p->prepare_s;
  r->peak_memory_bytes = p->peak_memory_source ? p->peak_memory_bytes : 0;
  r->energy_j = p->energy_j;
  r->energy_source = !p->has_energy      ? MI_ENERGY_NONE
                     : p->energy_modeled ? MI_ENERGY_MODELED
                                         : MI_ENERGY_MEASURED;
  r->has_load = isfinite(p->load1) && p->cpus > 0;
  r->load1 = r->has_load ? p->load1 : 0;
  r->loaded = r->has_load && p->load1 > p->cpus;
  r->has_paired = p->paired_count > 0;
  r->paired_ratio = r->has_paired ? p->paired_ratio : 0;
  r->paired_s = r->has_paired ? p->paired_s : 0;
  r->layers_json = mi_profile_layers_json(p);
  return (char *)r->layers_json;
}

MI_API int mi_record_set_fallback_stack(mi_record_t *r, const mi_profile_t *p, char *buf, size_t cap,
                                        char hash[17]) {
  if (!r || !p || !buf || !cap || p->fallback_on_device <= 0 || !p->fallback_stack[0] || !r->stack) return 0;
  mi_stack_with_fallback(r->stack, p->fallback_stack, buf, cap, hash);
  r->stack = buf;
  r->stack_hash = hash;
  return 1;
}

MI_API int32_t mi_history_put(mi_history_t *h, const mi_record_t *r, int64_t *id,
                              mi_error_t *err) {
  int64_t tmp;
  int32_t rc;
  if (!h || !r) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_put: NULL");
  if ((rc = h->ops->begin(h->state, err))) return rc;
  if ((rc = h->ops->put_measurement(h->state, r, id ? id : &tmp, err))) {
    h->ops->rollback(h->state);
    return rc;
  }
  /* Committed before returning: a kill after this keeps the record. */
  if ((rc = h->ops->commit(h->state, err))) h->ops->rollback(h->state);
  return rc;
}

MI_API int32_t mi_history_query(mi_history_t *h, const mi_history_query_t *q,
                                mi_history_row_fn fn, void *user, mi_error_t *err) {
  if (!h) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_query: NULL");
  return h->ops->query(h->state, q, fn, user, err);
}

MI_API int32_t mi_history_prune(mi_history_t *h, const mi_history_prune_t *p, int64_t *removed,
                                mi_error_t *err) {
  int64_t tmp;
  if (!h || !p) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_prune: NULL");
  if (!p->failed && !p->model && !p->device)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "history prune: say which records (failed, a model or a device)");
  if (!h->ops->prune) return mi_errorf(err, MI_ERR_UNSUPPORTED, "history: the %s store cannot prune", h->ops->name);
  return h->ops->prune(h->state, p, removed ? removed : &tmp, err);
}

MI_API int32_t mi_history_stats(mi_history_t *h, mi_history_stats_t *out, mi_error_t *err) {
  if (!h || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_stats: NULL");
  return h->ops->stats(h->state, out, err);
}

int64_t *mi__history_stat(mi_history_stats_t *out, int i) {
  int64_t *f[MI__HISTORY_STAT_COUNTS] = {&out->runs, &out->tasks, &out->configs, &out->stacks,
                                         &out->devices, &out->measurements, &out->failed};
  return f[i];
}

MI_API int32_t mi_history_export(mi_history_t *h, FILE *f, int64_t *count, mi_error_t *err) {
  int64_t n = 0;
  int32_t rc;
  if (!h || !f) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_export: NULL");
  rc = h->ops->export_jsonl(h->state, f, &n, err);
  if (count) *count = n;
  return rc;
}

MI_API int32_t mi_history_import(mi_history_t *h, FILE *f, int64_t *added, int64_t *skipped,
                                 mi_error_t *err) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int64_t lineno = 0, a = 0, s = 0;
  int32_t rc = MI_OK;
  if (!h || !f) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_import: NULL");
  while ((len = getline(&line, &cap, f)) >= 0) {
    mi_error_t e;
    int one = 0;
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (len == 0) continue;
    mi_error_clear(&e);
    /* One transaction per line: a bad line leaves the lines before it imported. */
    if ((rc = h->ops->begin(h->state, &e)) == MI_OK &&
        (rc = h->ops->import_line(h->state, line, &one, &e)) == MI_OK)
      rc = h->ops->commit(h->state, &e);
    if (rc) {
      h->ops->rollback(h->state);
      rc = mi_errorf(err, rc, "line %lld: %s", (long long)lineno, e.message);
      break;
    }
    if (one) a++;
    else
      s++;
  }
  free(line);
  if (added) *added = a;
  if (skipped) *skipped = s;
  return rc;
}

MI_API int32_t mi_history_ltask_put(mi_history_t *h, const mi_ltask_row_t *row, mi_error_t *err) {
  if (!h || !row) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_ltask_put: NULL");
  if (!h->ops->ltask_put)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "history: the %s store keeps no layer tasks", h->ops->name);
  return h->ops->ltask_put(h->state, row, err);
}

MI_API int32_t mi_history_ltask_query(mi_history_t *h, const char *device_hash,
                                      const char *stack_hash, const char *op, const char *key,
                                      mi_ltask_row_fn fn, void *user, mi_error_t *err) {
  if (!h || !fn) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_history_ltask_query: NULL");
  if (!h->ops->ltask_query)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "history: the %s store keeps no layer tasks", h->ops->name);
  return h->ops->ltask_query(h->state, device_hash, stack_hash, op, key, fn, user, err);
}

static int cmp_choice(const void *x, const void *y) {
  const mi_node_choice_t *a = *(const mi_node_choice_t *const *)x;
  const mi_node_choice_t *b = *(const mi_node_choice_t *const *)y;
  return strcmp(a->node ? a->node : "", b->node ? b->node : "");
}

static int cmp_knob(const void *x, const void *y) {
  const mi_knob_value_t *a = *(const mi_knob_value_t *const *)x;
  const mi_knob_value_t *b = *(const mi_knob_value_t *const *)y;
  return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* "{a=1,b=2.5}" with knobs sorted by name; FLOAT knobs are written when f != 0. */
static void knobs(mi__sbuf_t *b, const mi_knob_value_t *k, int32_t n) {
  const mi_knob_value_t **p = calloc((size_t)n + 1, sizeof *p);
  if (!p) {
    b->failed = 1;
    return;
  }
  for (int32_t i = 0; i < n; i++) p[i] = &k[i];
  qsort(p, (size_t)n, sizeof *p, cmp_knob);
  mi__sbuf_printf(b, "{");
  for (int32_t i = 0; i < n; i++) {
    if (p[i]->f != 0) mi__sbuf_printf(b, "%s%s=%.17g", i ? "," : "", p[i]->name, p[i]->f);
    else
      mi__sbuf_printf(b, "%s%s=%lld", i ? "," : "", p[i]->name, (long long)p[i]->i);
  }
  mi__sbuf_printf(b, "}");
  free(p);
}

MI_API char *mi_config_canonical(const mi_session_options_t *o) {
  mi__sbuf_t b = {0};
  const mi_node_choice_t **c;
  int32_t n = o ? o->choice_count : 0;
  if (!o || (o->device_knob_count <= 0 && n <= 0)) return strdup("default");
  c = calloc((size_t)n + 1, sizeof *c);
  if (!c) return NULL;
  for (int32_t i = 0; i < n; i++) c[i] = &o->choices[i];
  qsort(c, (size_t)n, sizeof *c, cmp_choice);
  mi__sbuf_printf(&b, "device");
  knobs(&b, o->device_knobs, o->device_knob_count > 0 ? o->device_knob_count : 0);
  for (int32_t i = 0; i < n; i++) {
    mi__sbuf_printf(&b, ";%s:%s", c[i]->node ? c[i]->node : "",
                    c[i]->variant_id ? c[i]->variant_id : "default");
    knobs(&b, c[i]->knobs, c[i]->knob_count > 0 ? c[i]->knob_count : 0);
  }
  free(c);
  return mi__sbuf_take(&b);
}
