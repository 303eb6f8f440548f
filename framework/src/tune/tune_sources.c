/* tune_sources.c - past tasks of the history (same software stack) as warm-start sources of
 * the surrogate-guided search: their measured configurations read into the new task's space. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune_internal.h"

/* Measurements kept per source task: rows come fastest first, so these are its best. */
#define MAX_ROWS_PER_SOURCE 256
#define MAX_SOURCES 32

typedef struct {
  mi_tune_sources_t *out;
  const mi_tune_task_t *t;
  const mi_space_t *s;
  int32_t D;
  char keys[MAX_SOURCES][200];
  int32_t cap[MAX_SOURCES];
  int32_t *pt;
  int target_fp; /* 1: fp holds the target device's fingerprint part */
  double fp[MI_META_DESC_SIZE - MI_META_FP_OFFSET];
  const mi_graph_t *g;        /* the new task's graph: per-layer times of its model (NULL: none) */
  int32_t lrows[MAX_SOURCES]; /* per task, configurations that came with layers */
} load_ctx_t;

/* The first `needle` in [p, end), or NULL. */
static const char *find_in(const char *p, const char *end, const char *needle) {
  size_t n = strlen(needle);
  for (; p + n <= end; p++)
    if (!strncmp(p, needle, n)) return p;
  return NULL;
}

/* The median (ms in the JSON, seconds here) of the stats object after `key` in [p, end). */
static double stats_median(const char *p, const char *end, const char *key) {
  const char *k = find_in(p, end, key), *m;
  if (!k || !(m = find_in(k, end, "\"median\":"))) return NAN;
  return strtod(m + 9, NULL) * 1e-3; /* "null" (NaN) reads as 0: rejected by the caller */
}

/* 1 when a profiled layer's name is the node's: mi_layer_profile_t.name keeps 63 characters, so
 * a name of that length matches a node whose name starts with it (blazeface's and M-LSD's
 * tf2onnx names run longer). */
static int same_name(const char *node, const char *name) {
  size_t l = strlen(name);
  if (!node) return 0;
  return l >= sizeof((mi_layer_profile_t *)0)->name - 1 ? !strncmp(node, name, l) : !strcmp(node, name);
}

int32_t mi__tune_node_of(const mi_graph_t *g, const char *name, int32_t hint) {
  if (!g) return hint;
  if (!name) return -1;
  if (hint >= 0 && hint < g->node_count && same_name(g->nodes[hint].name, name)) return hint;
  for (int32_t n = 0; n < g->node_count; n++)
    if (same_name(g->nodes[n].name, name)) return n;
  return -1;
}

int32_t mi__tune_layer_pairs(const char *json, const mi_graph_t *g, int32_t *node, double *sec, int32_t cap) {
  const char *p = json, *end = json + strlen(json);
  int32_t got = 0;
  while ((p = find_in(p, end, "{\"node\":"))) {
    const char *next = find_in(p + 1, end, "{\"node\":");
    const char *stop = next ? next : end;
    long nd = strtol(p + 8, NULL, 10);
    double v = stats_median(p, stop, "\"device_ms\":");
    if (!(v > 0)) v = stats_median(p, stop, "\"wall_ms\":");
    if (g) {
      /* by name: a transformed model's node indices are not the graph's (QDQ nodes come first) */
      const char *q = find_in(p, stop, "\"name\":\""), *e;
      char name[128];
      nd = -1;
      if (q && (e = memchr(q + 8, '"', (size_t)(stop - q - 8))) && e - (q + 8) < (long)sizeof name) {
        memcpy(name, q + 8, (size_t)(e - (q + 8)));
        name[e - (q + 8)] = 0;
        nd = mi__tune_node_of(g, name, -1);
      }
    }
    if (nd >= 0 && nd <= INT32_MAX && v > 0 && !find_in(p, stop, "\"where\":\"folded\"")) {
      if (got < cap) {
        node[got] = (int32_t)nd;
        sec[got] = v;
      }
      got++;
    }
    p = stop;
  }
  return got;
}

/* A measurement's per-layer times as mi_profile_layers_json wrote them, by node of g into sec
 * (g->node_count entries, NaN where none): the device clock where there is one, else wall.
 * Returns the number of layers read. */
static int32_t read_layers(const char *json, const mi_graph_t *g, double *sec) {
  int32_t n = mi__tune_layer_pairs(json, g, NULL, NULL, 0), got = 0, *node;
  double *v;
  if (n <= 0) return 0;
  node = malloc((size_t)n * sizeof *node);
  v = malloc((size_t)n * sizeof *v);
  if (node && v) {
    n = mi__tune_layer_pairs(json, g, node, v, n);
    for (int32_t i = 0; i < n; i++)
      if (node[i] < g->node_count) {
        sec[node[i]] = v[i];
        got++;
      }
  }
  free(node);
  free(v);
  return got;
}

static int add_row(void *user, const mi_history_row_t *row) {
  load_ctx_t *c = user;
  mi_tune_sources_t *o = c->out;
  const mi_record_t *b = c->t->base;
  char key[200];
  int32_t k, matched = 0, got;
  mi_meta_task_t *task;
  double *obj;
  if (!row->ok) return 0;
  if (!c->target_fp && row->device_fingerprint_json && !strcmp(row->device_hash, b->device_hash)) {
    /* The target device's fingerprint, when an earlier run (mi-host profile) stored it. */
    double d[MI_META_DESC_SIZE];
    if (mi_meta_describe_json(NULL, row->device_fingerprint_json, d) & 2) {
      memcpy(c->fp, d + MI_META_FP_OFFSET, sizeof c->fp);
      c->target_fp = 1;
    }
  }
  /* The task itself is replayed by the lookup, not used as its own prior. */
  if (!strcmp(row->model_hash, b->model_hash) && !strcmp(row->device_hash, b->device_hash) &&
      row->input_shapes && !strcmp(row->input_shapes, b->input_shapes))
    return 0;
  snprintf(key, sizeof key, "%s|%s|%s", row->model_hash, row->device_hash,
           row->input_shapes ? row->input_shapes : "");
  for (k = 0; k < o->count && strcmp(c->keys[k], key); k++) continue;
  if (k == o->count) {
    if (o->count == MAX_SOURCES) return 0;
    snprintf(c->keys[k], sizeof c->keys[k], "%s", key);
    task = &o->tasks[o->count++];
    memset(task, 0, sizeof *task);
    task->space = c->s;
    /* A row of this run's stack with its fallback device is of this run's stack: its workers
     * run the nodes the device refuses on that same fallback device. */
    task->stack_hash = c->t->fb_stack_hash && !strcmp(row->stack_hash, c->t->fb_stack_hash)
                           ? strtoull(b->stack_hash, NULL, 16)
                           : strtoull(row->stack_hash, NULL, 16);
    /* The task's own model features and its device's fingerprint, as stored with it; a row
     * written without features takes this run's when it is the same model (else zeros: it
     * ranks behind). */
    got = mi_meta_describe_json(row->model_features_json, row->device_fingerprint_json, task->desc);
    if (!(got & 1) && !strcmp(row->model_hash, b->model_hash))
      memcpy(task->desc, o->desc, MI_META_FP_OFFSET * sizeof *task->desc);
    task->name = "history";
  }
  task = &o->tasks[k];
  if (task->count >= MAX_ROWS_PER_SOURCE) return 0;
  if (c->cap[k] == 0) {
    o->points[k] = malloc((size_t)MAX_ROWS_PER_SOURCE * c->D * sizeof *o->points[k] + 1);
    o->obj[k] = malloc((size_t)MAX_ROWS_PER_SOURCE * MI_OBJ_COUNT * sizeof *o->obj[k]);
    if (!o->points[k] || !o->obj[k]) return 1;
    c->cap[k] = MAX_ROWS_PER_SOURCE;
    task->points = o->points[k];
    task->objectives = o->obj[k];
  }
  if (mi_space_from_canonical(c->s, row->config_canonical, row->model_canonical, c->pt, &matched, NULL) != MI_OK)
    return 0;
  memcpy(o->points[k] + (size_t)task->count * c->D, c->pt, (size_t)c->D * sizeof *c->pt);
  if (c->g && row->layers_json && !strcmp(row->model_hash, b->model_hash) && row->input_shapes &&
      b->input_shapes && !strcmp(row->input_shapes, b->input_shapes)) {
    /* The same model on another device: its layers are this graph's nodes. */
    int32_t N = c->g->node_count;
    if (!o->layers[k]) {
      if (!(o->layers[k] = malloc((size_t)MAX_ROWS_PER_SOURCE * N * sizeof *o->layers[k] + 1))) return 1;
      for (size_t q = 0; q < (size_t)MAX_ROWS_PER_SOURCE * N; q++) o->layers[k][q] = NAN;
    }
    if (read_layers(row->layers_json, c->g, o->layers[k] + (size_t)task->count * N) > 0) {
      c->lrows[k]++;
      o->layer_rows++;
    }
  }
  obj = o->obj[k] + (size_t)task->count * MI_OBJ_COUNT;
  for (int j = 0; j < MI_OBJ_COUNT; j++) obj[j] = NAN;
  obj[MI_OBJ_LATENCY] = row->median_s * 1e3;
  if (row->peak_memory_bytes) obj[MI_OBJ_MEMORY] = (double)row->peak_memory_bytes / 1048576.0;
  if (row->energy_source != MI_ENERGY_NONE) obj[MI_OBJ_ENERGY] = row->energy_j * 1e3;
  if (row->accuracy_json) {
    const char *a = strstr(row->accuracy_json, "\"rel_l2\":");
    if (a) obj[MI_OBJ_ACCURACY] = strtod(a + 9, NULL);
  }
  task->count++;
  o->rows++;
  return 0;
}

int32_t mi_tune_sources_load_graph(const mi_tune_task_t *t, const mi_space_t *s,
                                   const mi_model_features_t *mf, const mi_graph_t *g,
                                   mi_tune_sources_t *out, mi_error_t *err) {
  mi_history_query_t q;
  load_ctx_t *c;
  int32_t rc;
  memset(out, 0, sizeof *out);
  mi_meta_describe(mf, NULL, out->desc);
  if (!t->history) return MI_OK;
  c = calloc(1, sizeof *c);
  out->tasks = calloc(MAX_SOURCES, sizeof *out->tasks);
  out->points = calloc(MAX_SOURCES, sizeof *out->points);
  out->obj = calloc(MAX_SOURCES, sizeof *out->obj);
  out->layers = calloc(MAX_SOURCES, sizeof *out->layers);
  if (!c || !out->tasks || !out->points || !out->obj || !out->layers ||
      !(c->pt = malloc((size_t)mi_space_dim_count(s) * sizeof *c->pt + 1))) {
    free(c);
    mi_tune_sources_free(out);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  }
  c->out = out;
  c->t = t;
  c->s = s;
  c->D = mi_space_dim_count(s);
  c->g = g;
  memset(&q, 0, sizeof q);
  q.stack_hash = t->base->stack_hash; /* same software stack only (docs/meta.md) */
  q.ok_only = 1;
  if (t->base->device_json &&
      (mi_meta_describe_json(NULL, t->base->device_json, out->desc) & 2)) {
    /* This run measured the fingerprint itself. */
    memcpy(c->fp, out->desc + MI_META_FP_OFFSET, sizeof c->fp);
    c->target_fp = 1;
  }
  mi_meta_describe(mf, NULL, out->desc);
  rc = mi_history_query(t->history, &q, add_row, c, err);
  if (rc == MI_OK && t->fb_stack_hash) {
    /* and the rows whose sessions ran refused nodes on the same fallback device (tune_eval.c) */
    q.stack_hash = t->fb_stack_hash;
    rc = mi_history_query(t->history, &q, add_row, c, err);
  }
  /* Devices enter retrieval only when the target's fingerprint is known: otherwise the
   * sources' fingerprints are dropped and model features alone decide. */
  for (int32_t k = 0; k < out->count && !c->target_fp; k++)
    for (int32_t i = MI_META_FP_OFFSET; i < MI_META_DESC_SIZE; i++) out->tasks[k].desc[i] = 0;
  if (c->target_fp) memcpy(out->desc + MI_META_FP_OFFSET, c->fp, sizeof c->fp);
  /* A task whose rows all failed to map is no source. */
  for (int32_t k = 0; k < out->count; k++)
    if (out->tasks[k].count == 0) out->tasks[k].objectives = NULL;
  /* Sources with per-layer times: the graph their node indices refer to, and the times. */
  for (int32_t k = 0; k < out->count; k++)
    if (c->lrows[k] > 0 && out->tasks[k].count > 0) {
      out->tasks[k].graph = g;
      out->tasks[k].layer_latency = out->layers[k];
    }
  free(c->pt);
  free(c);
  if (rc != MI_OK) mi_tune_sources_free(out);
  return rc;
}

void mi_tune_sources_free(mi_tune_sources_t *s) {
  for (int32_t k = 0; s->points && k < MAX_SOURCES; k++) {
    free(s->points[k]);
    free(s->obj[k]);
    if (s->layers) free(s->layers[k]);
  }
  free(s->layers);
  free(s->points);
  free(s->obj);
  free(s->tasks);
  memset(s, 0, sizeof *s);
}
