/* pg_export.c - the PostgreSQL store's JSON Lines export: the same fields as SQLite's lines,
 * built by the server's json_build_object. */
#include <stdio.h>

#include "history/pg_internal.h"

#ifdef MI_HAVE_LIBPQ

#define MI_STR2(x) #x
#define MI_STR(x) MI_STR2(x)

static const char k_sql[] =
    "SELECT json_build_object('format', " MI_STR(MI_HISTORY_FORMAT_VERSION)
        ", 'kind', 'measurement',"
        " 'uuid', m.uuid, 'created_at', m.created_at,"
        " 'run', json_build_object('uuid', r.uuid, 'started_at', r.started_at, 'tool', r.tool),"
        " 'task', json_build_object('model_hash', t.model_hash, 'model_name', t.model_name,"
        "   'model_features', t.model_features::json, 'batch', t.batch, 'input_shapes', t.input_shapes),"
        " 'device', json_build_object('spec', m.device_spec, 'name', d.name, 'hash', d.hash,"
        "   'fingerprint', d.fingerprint::json),"
        " 'config', json_build_object('canonical', c.canonical, 'hash', c.hash,"
        "   'model_canonical', c.model_canonical),"
        " 'stack', json_build_object('hash', s.hash, 'text', s.text),"
        " 'result', json_build_object('ok', m.ok = 1, 'failure', m.failure, 'clock', m.clock,"
        "   'latency_s', CASE WHEN m.n IS NULL THEN NULL ELSE json_build_object('n', m.n,"
        "   'median', m.median_s, 'mean', m.mean_s, 'trimmed_mean', m.trimmed_mean_s, 'p10', m.p10_s,"
        "   'p90', m.p90_s, 'cv', m.cv) END, 'samples', m.samples::json, 'repeats', m.repeats,"
        "   'rounds', m.rounds, 'discarded', m.discarded, 'prepare_s', m.prepare_s,"
        "   'peak_memory_bytes', m.peak_memory_bytes, 'energy_j', m.energy_j,"
        "   'energy_source', m.energy_source, 'accuracy', m.accuracy::json, 'layers', m.layers::json,"
        "   'load1', m.load1, 'loaded', CASE m.loaded WHEN 1 THEN true WHEN 0 THEN false END,"
        "   'paired_ratio', m.paired_ratio, 'paired_s', m.paired_s))"
        " FROM measurements m JOIN tasks t ON t.id = m.task_id JOIN devices d ON d.id = t.device_id"
        " JOIN configs c ON c.id = m.config_id JOIN stacks s ON s.id = m.stack_id"
        " LEFT JOIN runs r ON r.id = m.run_id ORDER BY m.id";

int32_t mi__pg_export(void *state, FILE *f, int64_t *count, mi_error_t *err) {
  PGconn *c = *(PGconn **)state;
  PGresult *res;
  int32_t rc;
  *count = 0;
  if ((rc = mi__pg_run(c, k_sql, 0, NULL, &res, err))) return rc;
  for (int i = 0; i < PQntuples(res); i++) {
    fprintf(f, "%s\n", PQgetvalue(res, i, 0));
    (*count)++;
  }
  PQclear(res);
  if (ferror(f)) return mi_errorf(err, MI_ERR_IO, "history: export: write failed");
  return MI_OK;
}

#endif
