/* sqlite_io.c - the SQLite store's reads: JSON Lines export and import (built and parsed with
 * SQLite's own JSON functions), warm-start queries and summary counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/history_internal.h"

#define MI_STR2(x) #x
#define MI_STR(x) MI_STR2(x)

/* One self-contained line per measurement: everything needed to recreate it elsewhere. */
static const char k_export_sql[] =
    "SELECT json_object('format', " MI_STR(MI_HISTORY_FORMAT_VERSION)
        ", 'kind', 'measurement',"
        " 'uuid', m.uuid, 'created_at', m.created_at,"
        " 'run', json_object('uuid', r.uuid, 'started_at', r.started_at, 'tool', r.tool),"
        " 'task', json_object('model_hash', t.model_hash, 'model_name', t.model_name,"
        "   'model_features', json(t.model_features), 'batch', t.batch,"
        "   'input_shapes', t.input_shapes),"
        " 'device', json_object('spec', m.device_spec, 'name', d.name, 'hash', d.hash,"
        "   'fingerprint', json(d.fingerprint)),"
        " 'config', json_object('canonical', c.canonical, 'hash', c.hash,"
        "   'model_canonical', c.model_canonical),"
        " 'stack', json_object('hash', s.hash, 'text', s.text),"
        " 'result', json_object('ok', json(CASE m.ok WHEN 1 THEN 'true' ELSE 'false' END),"
        "   'failure', m.failure, 'clock', m.clock, 'latency_s', CASE WHEN m.n IS NULL THEN NULL"
        "   ELSE json_object('n', m.n, 'median', m.median_s, 'mean', m.mean_s, 'trimmed_mean',"
        "   m.trimmed_mean_s, 'p10', m.p10_s, 'p90', m.p90_s, 'cv', m.cv) END,"
        "   'samples', json(m.samples), 'repeats', m.repeats, 'rounds', m.rounds,"
        "   'discarded', m.discarded, 'prepare_s', m.prepare_s,"
        "   'peak_memory_bytes', m.peak_memory_bytes, 'energy_j', m.energy_j,"
        "   'energy_source', m.energy_source, 'accuracy', json(m.accuracy),"
        "   'layers', json(m.layers), 'load1', m.load1,"
        "   'loaded', json(CASE m.loaded WHEN 1 THEN 'true' WHEN 0 THEN 'false' END),"
        "   'paired_ratio', m.paired_ratio, 'paired_s', m.paired_s))"
        " FROM measurements m JOIN tasks t ON t.id = m.task_id JOIN devices d ON d.id = t.device_id"
        " JOIN configs c ON c.id = m.config_id JOIN stacks s ON s.id = m.stack_id"
        " LEFT JOIN runs r ON r.id = m.run_id ORDER BY m.id";

int32_t mi__sqlite_export(void *state, FILE *f, int64_t *count, mi_error_t *err) {
  mi__sqlite_t *s = state;
  int32_t rc;
  *count = 0;
  if ((rc = mi__sqlite_export_rows(s->db, k_export_sql, f, count, err)) != MI_OK) return rc;
  /* Then the layer-task table (schema 4), one "kind":"layer_task" line per row. */
  if (mi__sqlite_ltask_export(s, f, count, err) != MI_OK) return err ? err->code : MI_ERR_IO;
  if (ferror(f)) return mi_errorf(err, MI_ERR_IO, "history: export: write failed");
  return MI_OK;
}

/* The fields an import reads, as JSON paths; the first ones are required. */
static const char *const k_paths[] = {
    "$.format", "$.kind", "$.uuid", "$.task.model_hash", "$.task.input_shapes",
    "$.device.hash", "$.stack.hash", "$.stack.text", "$.config.canonical", "$.result.ok",
    /* optional from here */
    "$.created_at", "$.run.uuid", "$.run.started_at", "$.run.tool", "$.task.model_name",
    "$.task.model_features", "$.task.batch", "$.device.spec", "$.device.name",
    "$.device.fingerprint", "$.config.model_canonical", "$.result.failure", "$.result.clock",
    "$.result.latency_s.n", "$.result.latency_s.median", "$.result.latency_s.mean",
    "$.result.latency_s.trimmed_mean", "$.result.latency_s.p10", "$.result.latency_s.p90",
    "$.result.latency_s.cv", "$.result.samples", "$.result.repeats", "$.result.rounds",
    "$.result.discarded", "$.result.prepare_s", "$.result.peak_memory_bytes",
    "$.result.energy_j", "$.result.energy_source", "$.result.accuracy", "$.result.layers",
    "$.result.load1", "$.result.loaded", "$.result.paired_ratio", "$.result.paired_s"};
enum { N_REQUIRED = 10,
       N_PATHS = sizeof k_paths / sizeof k_paths[0] };
enum {
  F_FORMAT,
  F_KIND,
  F_UUID,
  F_MHASH,
  F_SHAPES,
  F_DHASH,
  F_SHASH,
  F_STACK,
  F_CANON,
  F_OK,
  F_CREATED,
  F_RUUID,
  F_RSTART,
  F_RTOOL,
  F_MNAME,
  F_FEAT,
  F_BATCH,
  F_SPEC,
  F_DNAME,
  F_FP,
  F_MCANON,
  F_FAIL,
  F_CLOCK,
  F_N,
  F_MED,
  F_MEAN,
  F_TRIM,
  F_P10,
  F_P90,
  F_CV,
  F_SAMPLES,
  F_REP,
  F_ROUNDS,
  F_DISC,
  F_PREP,
  F_MEM,
  F_EJ,
  F_ESRC,
  F_ACC,
  F_LAYERS,
  F_LOAD,
  F_LOADED,
  F_PRATIO,
  F_PS
};

int32_t mi__sqlite_import_line(void *state, const char *line, int *added, mi_error_t *err) {
  mi__sqlite_t *s = state;
  sqlite3_stmt *st = NULL;
  int32_t rc = MI_OK;
  mi_record_t r;
  const char *v[N_PATHS];
  int lt;
  *added = 0;
  if ((lt = mi__sqlite_ltask_import(s, line, added, err)) != -1) return lt;
  if ((rc = mi__sqlite_json_fields(s->db, line, k_paths, N_PATHS, &st, err)) != MI_OK) return rc;
  if (sqlite3_step(st) != SQLITE_ROW) {
    rc = mi_errorf(err, MI_ERR_IO, "history: import: %s", sqlite3_errmsg(s->db));
    goto done;
  }
  if (!sqlite3_column_int(st, 0)) {
    rc = mi_errorf(err, MI_ERR_PARSE, "not valid JSON");
    goto done;
  }
  for (int i = 0; i < N_PATHS; i++) {
    v[i] = (const char *)sqlite3_column_text(st, i + 1);
    if (i < N_REQUIRED && !v[i]) {
      rc = mi_errorf(err, MI_ERR_PARSE, "missing %s", k_paths[i] + 2);
      goto done;
    }
  }
  if (sqlite3_column_int(st, 1 + F_FORMAT) != MI_HISTORY_FORMAT_VERSION) {
    rc = mi_errorf(err, MI_ERR_UNSUPPORTED, "format %s is not %d", v[F_FORMAT],
                   MI_HISTORY_FORMAT_VERSION);
    goto done;
  }
  if (strcmp(v[F_KIND], "measurement") != 0) {
    rc = mi_errorf(err, MI_ERR_PARSE, "kind '%s' is not 'measurement'", v[F_KIND]);
    goto done;
  }
  memset(&r, 0, sizeof r);
  r.model_hash = v[F_MHASH];
  r.input_shapes = v[F_SHAPES];
  r.device_hash = v[F_DHASH];
  r.stack_hash = v[F_SHASH];
  r.stack = v[F_STACK];
  r.config_canonical = v[F_CANON];
  r.ok = sqlite3_column_int(st, 1 + F_OK);
  r.model_name = v[F_MNAME];
  r.model_features_json = v[F_FEAT];
  r.batch = sqlite3_column_int64(st, 1 + F_BATCH);
  r.device_spec = v[F_SPEC];
  r.device_name = v[F_DNAME];
  r.device_json = v[F_FP];
  r.model_config_canonical = v[F_MCANON];
  r.failure = v[F_FAIL];
  r.clock = v[F_CLOCK];
  r.latency_s.n = v[F_N] ? sqlite3_column_int(st, 1 + F_N) : 0;
  r.latency_s.median = sqlite3_column_double(st, 1 + F_MED);
  r.latency_s.mean = sqlite3_column_double(st, 1 + F_MEAN);
  r.latency_s.trimmed_mean = sqlite3_column_double(st, 1 + F_TRIM);
  r.latency_s.p10 = sqlite3_column_double(st, 1 + F_P10);
  r.latency_s.p90 = sqlite3_column_double(st, 1 + F_P90);
  r.latency_s.cv = sqlite3_column_double(st, 1 + F_CV);
  r.samples_json = v[F_SAMPLES];
  r.repeats = sqlite3_column_int(st, 1 + F_REP);
  r.rounds = sqlite3_column_int(st, 1 + F_ROUNDS);
  r.discarded = sqlite3_column_int(st, 1 + F_DISC);
  r.prepare_s = sqlite3_column_double(st, 1 + F_PREP);
  r.peak_memory_bytes = (uint64_t)sqlite3_column_int64(st, 1 + F_MEM);
  r.energy_j = sqlite3_column_double(st, 1 + F_EJ);
  r.energy_source = !v[F_ESRC]                           ? MI_ENERGY_NONE
                    : strcmp(v[F_ESRC], "measured") == 0 ? MI_ENERGY_MEASURED
                    : strcmp(v[F_ESRC], "modeled") == 0  ? MI_ENERGY_MODELED
                                                         : -1;
  if (r.energy_source < 0) {
    rc = mi_errorf(err, MI_ERR_PARSE, "energy_source '%s' is not measured|modeled", v[F_ESRC]);
    goto done;
  }
  r.accuracy_json = v[F_ACC];
  r.layers_json = v[F_LAYERS];
  r.has_load = v[F_LOAD] != NULL;
  r.load1 = sqlite3_column_double(st, 1 + F_LOAD);
  r.loaded = sqlite3_column_int(st, 1 + F_LOADED);
  r.has_paired = v[F_PRATIO] != NULL && v[F_PS] != NULL;
  r.paired_ratio = sqlite3_column_double(st, 1 + F_PRATIO);
  r.paired_s = sqlite3_column_double(st, 1 + F_PS);
  {
    int64_t id;
    /* The uuid makes a second import of the same line a no-op. */
    rc = mi__sqlite_put(s, &r, v[F_UUID], v[F_RUUID], v[F_RSTART], v[F_RTOOL], v[F_CREATED],
                        &id, added, err);
  }
done:
  sqlite3_finalize(st);
  return rc;
}

int32_t mi__sqlite_query(void *state, const mi_history_query_t *q, mi_history_row_fn fn,
                         void *user, mi_error_t *err) {
  mi__sqlite_t *s = state;
  sqlite3_stmt *st = NULL;
  int32_t rc;
  int r;
  if (!q || !fn) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "history: query: NULL argument");
  if (!q->any_stack && !q->stack_hash)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "history: query: a stack hash is required unless any_stack is set");
  if ((rc = mi__sqlite_prepare(
           s->db,
           "SELECT m.id, t.model_hash, d.hash, s.hash, c.canonical, c.hash, m.ok, m.failure,"
           " m.median_s, m.p90_s, m.cv, c.model_canonical, t.input_shapes, m.peak_memory_bytes,"
           " m.energy_j, m.energy_source, m.accuracy, t.model_features, d.fingerprint, m.layers,"
           " m.paired_ratio, m.paired_s FROM measurements m JOIN tasks t ON t.id = m.task_id"
           " JOIN devices d ON d.id = t.device_id JOIN configs c ON c.id = m.config_id"
           " JOIN stacks s ON s.id = m.stack_id WHERE (?1 IS NULL OR t.model_hash = ?1)"
           " AND (?2 IS NULL OR d.hash = ?2) AND (?3 OR s.hash = ?4) AND (?5 = 0 OR m.ok = 1)"
           " AND (?7 IS NULL OR t.input_shapes = ?7)"
           " ORDER BY m.ok DESC, m.median_s LIMIT ?6",
           &st, "query", err)) != MI_OK)
    return rc;
  mi__sqlite_bind_texts(st, 1, (const char *const[]){q->model_hash, q->device_hash}, 2);
  sqlite3_bind_int(st, 3, q->any_stack ? 1 : 0);
  mi__sqlite_bind_texts(st, 4, (const char *const[]){q->stack_hash}, 1);
  sqlite3_bind_int(st, 5, q->ok_only ? 1 : 0);
  sqlite3_bind_int64(st, 6, q->limit > 0 ? q->limit : -1);
  mi__sqlite_bind_texts(st, 7, (const char *const[]){q->input_shapes}, 1);
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    mi_history_row_t row;
    row.id = sqlite3_column_int64(st, 0);
    row.model_hash = (const char *)sqlite3_column_text(st, 1);
    row.device_hash = (const char *)sqlite3_column_text(st, 2);
    row.stack_hash = (const char *)sqlite3_column_text(st, 3);
    row.config_canonical = (const char *)sqlite3_column_text(st, 4);
    row.config_hash = (const char *)sqlite3_column_text(st, 5);
    row.ok = sqlite3_column_int(st, 6);
    row.failure = (const char *)sqlite3_column_text(st, 7);
    row.median_s = sqlite3_column_double(st, 8);
    row.p90_s = sqlite3_column_double(st, 9);
    row.cv = sqlite3_column_double(st, 10);
    row.model_canonical = (const char *)sqlite3_column_text(st, 11);
    row.input_shapes = (const char *)sqlite3_column_text(st, 12);
    row.peak_memory_bytes = (uint64_t)sqlite3_column_int64(st, 13);
    row.energy_j = sqlite3_column_type(st, 14) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 14);
    {
      const char *es = (const char *)sqlite3_column_text(st, 15);
      row.energy_source = !es                          ? MI_ENERGY_NONE
                          : strcmp(es, "modeled") == 0 ? MI_ENERGY_MODELED
                                                       : MI_ENERGY_MEASURED;
    }
    row.accuracy_json = (const char *)sqlite3_column_text(st, 16);
    row.model_features_json = (const char *)sqlite3_column_text(st, 17);
    row.device_fingerprint_json = (const char *)sqlite3_column_text(st, 18);
    row.layers_json = (const char *)sqlite3_column_text(st, 19);
    row.paired_ratio = sqlite3_column_type(st, 20) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 20);
    row.paired_s = sqlite3_column_type(st, 21) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 21);
    if (fn(user, &row)) break;
  }
  sqlite3_finalize(st);
  if (r != SQLITE_DONE && r != SQLITE_ROW)
    return mi_errorf(err, MI_ERR_IO, "history: query: %s", sqlite3_errmsg(s->db));
  return MI_OK;
}

int32_t mi__sqlite_stats(void *state, mi_history_stats_t *out, mi_error_t *err) {
  mi__sqlite_t *s = state;
  sqlite3_stmt *st = NULL;
  int32_t rc;
  memset(out, 0, sizeof *out);
  if ((rc = mi__sqlite_prepare(s->db, MI__HISTORY_STATS_SQL, &st, "stats", err)) != MI_OK) return rc;
  if (sqlite3_step(st) == SQLITE_ROW)
    for (int i = 0; i < MI__HISTORY_STAT_COUNTS; i++) *mi__history_stat(out, i) = sqlite3_column_int64(st, i);
  sqlite3_finalize(st);
  out->schema_version = mi__sqlite_version(s->db);
  return MI_OK;
}
