/* pg_store.c - the PostgreSQL store behind mi_store_ops_t: records, runs, queries, counts and
 * JSON Lines export; the tables and migrations are SQLite's (docs/history.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "history/history_internal.h"
#include "history/pg_internal.h"
#include "metainfer/mi_farm.h"

#ifdef MI_HAVE_LIBPQ

typedef struct pg_state {
  PGconn *c;
} pg_state_t;

static int32_t pg_open(const char *where, void **state, mi_error_t *err) {
  pg_state_t *s = calloc(1, sizeof *s);
  int32_t rc;
  *state = NULL;
  if (!s) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "history: out of memory");
  if ((rc = mi__pg_connect(where, &s->c, err)) || (rc = mi__pg_migrate(s->c, err))) {
    PQfinish(s->c);
    free(s);
    return rc;
  }
  *state = s;
  return MI_OK;
}

static void pg_close(void *state) {
  pg_state_t *s = state;
  if (!s) return;
  PQfinish(s->c);
  free(s);
}

static int32_t pg_begin(void *state, mi_error_t *err) {
  return mi__pg_exec(((pg_state_t *)state)->c, "BEGIN", "begin", err);
}
static int32_t pg_commit(void *state, mi_error_t *err) {
  return mi__pg_exec(((pg_state_t *)state)->c, "COMMIT", "commit", err);
}
static void pg_rollback(void *state) { PQclear(PQexec(((pg_state_t *)state)->c, "ROLLBACK")); }

static int32_t pg_put_run(void *state, const char *tool, const char *note, int64_t *id,
                          mi_error_t *err) {
  char uuid[33], at[32];
  const char *v[4] = {uuid, at, tool, note};
  int found;
  mi__uuid(uuid);
  mi__now_iso(at);
  return mi__pg_int(((pg_state_t *)state)->c,
                    "INSERT INTO runs(uuid, started_at, tool, note) VALUES($1,$2,$3,$4) RETURNING id",
                    4, v, id, &found, err);
}

/* INSERT ... ON CONFLICT DO NOTHING, then the id of the row either way: needs no UPDATE grant. */
static int32_t upsert(PGconn *c, const char *ins, const char *sel, int n, const char *const *v,
                      int64_t *id, mi_error_t *err) {
  int found;
  int32_t rc = mi__pg_int(c, ins, n, v, id, &found, err);
  if (rc || found) return rc;
  if ((rc = mi__pg_int(c, sel, n, v, id, &found, err))) return rc;
  return found ? MI_OK : mi_errorf(err, MI_ERR_INTERNAL, "history: no row for %.40s", sel);
}

int32_t mi__pg_task_config(PGconn *c, const mi_record_t *r, int64_t *task_id, int64_t *cfg_id,
                           mi_error_t *err) {
  char chash[17], mhash[17] = "", dev[24], batch[24];
  const char *canon = r->config_canonical ? r->config_canonical : "default";
  int64_t dev_id;
  int32_t rc;
  if (!r->model_hash || !r->device_hash || !r->input_shapes)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "history: a record needs model_hash, input_shapes and device_hash");
  mi_hash64_hex(mi_hash64(canon, strlen(canon), MI_HASH64_SEED), chash);
  if (r->model_config_canonical)
    mi_hash64_hex(mi_hash64(r->model_config_canonical, strlen(r->model_config_canonical),
                            MI_HASH64_SEED),
                  mhash);
  {
    const char *v[3] = {r->device_hash, r->device_name, r->device_json};
    if ((rc = upsert(c,
                     "INSERT INTO devices(hash, name, fingerprint) VALUES($1,$2,$3) "
                     "ON CONFLICT DO NOTHING RETURNING id",
                     "SELECT id FROM devices WHERE hash = $1 AND $2::text IS NULL IS NOT NULL "
                     "AND $3::text IS NULL IS NOT NULL",
                     3, v, &dev_id, err)))
      return rc;
  }
  snprintf(dev, sizeof dev, "%lld", (long long)dev_id);
  snprintf(batch, sizeof batch, "%lld", (long long)r->batch);
  {
    const char *v[6] = {r->model_hash, r->model_name, r->model_features_json, dev, batch,
                        r->input_shapes};
    if ((rc = upsert(c,
                     "INSERT INTO tasks(model_hash, model_name, model_features, device_id,"
                     " batch, input_shapes) VALUES($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING"
                     " RETURNING id",
                     "SELECT id FROM tasks WHERE model_hash = $1 AND device_id = $4 AND batch = $5"
                     " AND input_shapes = $6 AND $2::text IS NULL IS NOT NULL"
                     " AND $3::text IS NULL IS NOT NULL",
                     6, v, task_id, err)))
      return rc;
  }
  {
    const char *v[4] = {chash, canon, mhash, r->model_config_canonical};
    return upsert(c,
                  "INSERT INTO configs(hash, canonical, model_hash, model_canonical)"
                  " VALUES($1,$2,$3,$4) ON CONFLICT DO NOTHING RETURNING id",
                  "SELECT id FROM configs WHERE hash = $1 AND model_hash = $3"
                  " AND $2::text IS NULL IS NOT NULL AND $4::text IS NULL IS NOT NULL",
                  4, v, cfg_id, err);
  }
}

/* A double as text, or NULL when it is not a finite number or `has` is 0. */
static const char *num(char *buf, int has, double x) {
  if (!has || !isfinite(x)) return NULL;
  snprintf(buf, 32, "%.17g", x);
  return buf;
}
static const char *inum(char *buf, int has, long long x) {
  if (!has) return NULL;
  snprintf(buf, 32, "%lld", x);
  return buf;
}

int32_t mi__pg_put_measurement(PGconn *c, const mi_record_t *r, const char *uuid, int64_t task_id,
                               int64_t cfg_id, int64_t *id, int *added, mi_error_t *err) {
  char u[33], at[32], b[24][32];
  int64_t stack_id;
  int found, has_lat = r->ok && r->latency_s.n > 0, has_e = r->energy_source != MI_ENERGY_NONE;
  const mi_stats_t *l = &r->latency_s;
  int32_t rc;
  *added = 0;
  if (!r->stack || !r->stack_hash)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "history: a record needs its stack");
  if (!uuid) {
    mi__uuid(u);
    uuid = u;
  }
  mi__now_iso(at);
  {
    const char *v[2] = {r->stack_hash, r->stack};
    if ((rc = upsert(c, "INSERT INTO stacks(hash, text) VALUES($1,$2) ON CONFLICT DO NOTHING RETURNING id",
                     "SELECT id FROM stacks WHERE hash = $1 AND $2::text IS NULL IS NOT NULL", 2, v,
                     &stack_id, err)))
      return rc;
  }
  {
    const char *v[31] = {
        uuid, inum(b[0], r->run_id > 0, r->run_id), inum(b[1], 1, task_id), inum(b[2], 1, cfg_id),
        inum(b[3], 1, stack_id), r->device_spec, at, r->ok ? "1" : "0",
        r->ok ? NULL : (r->failure ? r->failure : "failed"), r->clock,
        inum(b[4], has_lat, l->n), num(b[5], has_lat, l->median), num(b[6], has_lat, l->mean),
        num(b[7], has_lat, l->trimmed_mean), num(b[8], has_lat, l->p10), num(b[9], has_lat, l->p90),
        num(b[10], has_lat, l->cv), r->samples_json, inum(b[11], 1, r->repeats),
        inum(b[12], 1, r->rounds), num(b[13], r->ok, r->prepare_s),
        inum(b[14], r->peak_memory_bytes > 0, (long long)r->peak_memory_bytes),
        num(b[15], has_e, r->energy_j),
        r->energy_source == MI_ENERGY_MEASURED  ? "measured"
        : r->energy_source == MI_ENERGY_MODELED ? "modeled"
                                                : NULL,
        r->accuracy_json, r->layers_json, inum(b[16], 1, r->discarded),
        num(b[17], r->has_load, r->load1), inum(b[18], r->has_load, r->loaded ? 1 : 0),
        num(b[19], r->has_paired, r->paired_ratio), num(b[20], r->has_paired, r->paired_s)};
    if ((rc = mi__pg_int(c,
                         "INSERT INTO measurements(uuid, run_id, task_id, config_id, stack_id,"
                         " device_spec, created_at, ok, failure, clock, n, median_s, mean_s,"
                         " trimmed_mean_s, p10_s, p90_s, cv, samples, repeats, rounds, prepare_s,"
                         " peak_memory_bytes, energy_j, energy_source, accuracy, layers, discarded,"
                         " load1, loaded, paired_ratio, paired_s)"
                         " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,"
                         "$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31) ON CONFLICT(uuid) DO NOTHING"
                         " RETURNING id",
                         31, v, id, &found, err)))
      return rc;
  }
  *added = found;
  return MI_OK;
}

static int32_t pg_put_measurement(void *state, const mi_record_t *r, int64_t *id,
                                  mi_error_t *err) {
  pg_state_t *s = state;
  int64_t task_id, cfg_id;
  int added;
  int32_t rc = mi__pg_task_config(s->c, r, &task_id, &cfg_id, err);
  return rc ? rc : mi__pg_put_measurement(s->c, r, NULL, task_id, cfg_id, id, &added, err);
}

static double dcol(PGresult *r, int i, int k, double none) {
  return PQgetisnull(r, i, k) ? none : strtod(PQgetvalue(r, i, k), NULL);
}

static int32_t pg_query(void *state, const mi_history_query_t *q, mi_history_row_fn fn, void *user,
                        mi_error_t *err) {
  pg_state_t *s = state;
  PGresult *res;
  char lim[24];
  int32_t rc;
  if (!q || !fn) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "history: query: NULL argument");
  if (!q->any_stack && !q->stack_hash)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "history: query: a stack hash is required unless any_stack is set");
  snprintf(lim, sizeof lim, "%lld", (long long)(q->limit > 0 ? q->limit : -1));
  {
    const char *v[7] = {q->model_hash, q->device_hash, q->any_stack ? "1" : "0", q->stack_hash,
                        q->ok_only ? "1" : "0", lim, q->input_shapes};
    if ((rc = mi__pg_run(s->c,
                         "SELECT m.id, t.model_hash, d.hash, s.hash, c.canonical, c.hash, m.ok, m.failure,"
                         " m.median_s, m.p90_s, m.cv, c.model_canonical, t.input_shapes, m.peak_memory_bytes,"
                         " m.energy_j, m.energy_source, m.accuracy, t.model_features, d.fingerprint, m.layers,"
                         " m.paired_ratio, m.paired_s FROM measurements m"
                         " JOIN tasks t ON t.id = m.task_id JOIN devices d ON d.id = t.device_id"
                         " JOIN configs c ON c.id = m.config_id JOIN stacks s ON s.id = m.stack_id"
                         " WHERE ($1::text IS NULL OR t.model_hash = $1) AND ($2::text IS NULL OR d.hash = $2)"
                         " AND ($3::int = 1 OR s.hash = $4) AND ($5::int = 0 OR m.ok = 1)"
                         " AND ($7::text IS NULL OR t.input_shapes = $7)"
                         " ORDER BY m.ok DESC, m.median_s NULLS LAST, m.id"
                         " LIMIT CASE WHEN $6::bigint < 0 THEN NULL ELSE $6::bigint END",
                         7, v, &res, err)))
      return rc;
  }
  for (int i = 0; i < PQntuples(res); i++) {
    mi_history_row_t row;
#define TXT(k) (PQgetisnull(res, i, k) ? NULL : PQgetvalue(res, i, k))
    memset(&row, 0, sizeof row);
    row.id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    row.model_hash = TXT(1);
    row.device_hash = TXT(2);
    row.stack_hash = TXT(3);
    row.config_canonical = TXT(4);
    row.config_hash = TXT(5);
    row.ok = (int32_t)strtol(PQgetvalue(res, i, 6), NULL, 10);
    row.failure = TXT(7);
    row.median_s = dcol(res, i, 8, 0);
    row.p90_s = dcol(res, i, 9, 0);
    row.cv = dcol(res, i, 10, 0);
    row.model_canonical = TXT(11);
    row.input_shapes = TXT(12);
    row.peak_memory_bytes = PQgetisnull(res, i, 13) ? 0 : strtoull(PQgetvalue(res, i, 13), NULL, 10);
    row.energy_j = dcol(res, i, 14, NAN);
    row.energy_source = PQgetisnull(res, i, 15)                          ? MI_ENERGY_NONE
                        : strcmp(PQgetvalue(res, i, 15), "modeled") == 0 ? MI_ENERGY_MODELED
                                                                         : MI_ENERGY_MEASURED;
    row.accuracy_json = TXT(16);
    row.model_features_json = TXT(17);
    row.device_fingerprint_json = TXT(18);
    row.layers_json = TXT(19);
    row.paired_ratio = dcol(res, i, 20, NAN);
    row.paired_s = dcol(res, i, 21, NAN);
#undef TXT
    if (fn(user, &row)) break;
  }
  PQclear(res);
  return MI_OK;
}

static int32_t pg_stats(void *state, mi_history_stats_t *out, mi_error_t *err) {
  pg_state_t *s = state;
  PGresult *res;
  int32_t rc;
  memset(out, 0, sizeof *out);
  if ((rc = mi__pg_run(s->c, MI__HISTORY_STATS_SQL ", (SELECT max(version) FROM schema_version)", 0,
                       NULL, &res, err)))
    return rc;
  for (int i = 0; i < MI__HISTORY_STAT_COUNTS; i++)
    *mi__history_stat(out, i) = strtoll(PQgetvalue(res, 0, i), NULL, 10);
  out->schema_version = (int32_t)strtol(PQgetvalue(res, 0, MI__HISTORY_STAT_COUNTS), NULL, 10);
  PQclear(res);
  return MI_OK;
}

/* The first member of the state is the connection (pg_export.c reads it). */
int32_t mi__pg_export(void *state, FILE *f, int64_t *count, mi_error_t *err);

static int32_t pg_import_line(void *state, const char *line, int *added, mi_error_t *err) {
  (void)state;
  (void)line;
  *added = 0;
  /* Not yet: import into a SQLite log and export from there, or measure into PostgreSQL. */
  return mi_errorf(err, MI_ERR_UNSUPPORTED, "history: import into PostgreSQL is not supported yet");
}

static const mi_store_ops_t k_pg = {"postgresql", pg_open, pg_close, pg_begin,
                                    pg_commit, pg_rollback, pg_put_run, pg_put_measurement,
                                    pg_query, pg_stats, mi__pg_export, pg_import_line, NULL,
                                    NULL, NULL};

MI_API const mi_store_ops_t *mi_store_pg(void) { return &k_pg; }

#else

MI_API const mi_store_ops_t *mi_store_pg(void) { return NULL; }

#endif

MI_API int mi_history_is_url(const char *where) {
  return where && (strstr(where, "postgresql://") || strstr(where, "postgres://"));
}
