/* pg_conn.c - the PostgreSQL store's connection and schema: connect by URL (the password is
 * never printed), statements with text parameters, and the same migrations as SQLite's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/pg_internal.h"

void mi__pg_redact(const char *url, char *out, size_t cap) {
  const char *at, *colon, *scheme, *pw;
  size_t n;
  if (!cap) return;
  snprintf(out, cap, "%s", url ? url : "");
  if (!url) return;
  if ((scheme = strstr(url, "://")) != NULL) {
    /* scheme://user:PASSWORD@host: keep the user, hide what follows the colon */
    at = strchr(scheme + 3, '@');
    colon = strchr(scheme + 3, ':');
    if (at && colon && colon < at) {
      n = (size_t)(colon - url) + 1;
      snprintf(out, cap, "%.*s***%s", (int)n, url, at);
    }
  }
  /* key=value form or URL parameter: password=... up to the next space or & */
  if ((pw = strstr(out, "password=")) != NULL) {
    char tail[1024];
    const char *end = pw + 9;
    while (*end && *end != ' ' && *end != '&') end++;
    snprintf(tail, sizeof tail, "%s", end);
    snprintf((char *)pw + 9, cap - (size_t)(pw + 9 - out), "***%s", tail);
  }
}

#ifdef MI_HAVE_LIBPQ

int32_t mi__pg_connect(const char *where, PGconn **out, mi_error_t *err) {
  const char *url = where ? strstr(where, "postgresql://") : NULL;
  char shown[512];
  PGconn *c;
  *out = NULL;
  if (!url && where) url = strstr(where, "postgres://");
  if (!url) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "history: not a postgresql:// URL");
  mi__pg_redact(url, shown, sizeof shown);
  /* libpq's default sslmode is prefer: TLS whenever the server offers it. */
  c = PQconnectdb(url);
  if (!c) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "history: %s: out of memory", shown);
  if (PQstatus(c) != CONNECTION_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
    msg[strcspn(msg, "\n")] = '\0';
    PQfinish(c);
    return mi_errorf(err, MI_ERR_IO, "history: cannot connect to %s: %s", shown, msg);
  }
  PQclear(PQexec(c, "SET client_min_messages = warning"));
  *out = c;
  return MI_OK;
}

static int32_t fail(PGconn *c, const char *what, mi_error_t *err) {
  char msg[256];
  snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
  msg[strcspn(msg, "\n")] = '\0';
  return mi_errorf(err, MI_ERR_IO, "history: %s: %s", what, msg);
}

int32_t mi__pg_exec(PGconn *c, const char *sql, const char *what, mi_error_t *err) {
  PGresult *r = PQexec(c, sql);
  int ok = r && (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);
  PQclear(r);
  return ok ? MI_OK : fail(c, what, err);
}

int32_t mi__pg_run(PGconn *c, const char *sql, int n, const char *const *vals, PGresult **out,
                   mi_error_t *err) {
  PGresult *r = PQexecParams(c, sql, n, NULL, vals, NULL, NULL, 0);
  char what[72];
  if (out) *out = NULL;
  if (!r || (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)) {
    PQclear(r);
    snprintf(what, sizeof what, "%.60s...", sql);
    return fail(c, what, err);
  }
  if (out) *out = r;
  else
    PQclear(r);
  return MI_OK;
}

int32_t mi__pg_int(PGconn *c, const char *sql, int n, const char *const *vals, int64_t *v,
                   int *found, mi_error_t *err) {
  PGresult *r;
  int32_t rc = mi__pg_run(c, sql, n, vals, &r, err);
  if (rc) return rc;
  *found = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0);
  *v = *found ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
  PQclear(r);
  return MI_OK;
}

/* k_migrations[i] takes a database from version i to i + 1: SQLite's steps with PostgreSQL
 * types (INTEGER PRIMARY KEY -> BIGSERIAL, REAL -> DOUBLE PRECISION). */
static const char *const k_migrations[MI_HISTORY_SCHEMA_VERSION] = {
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "INSERT INTO schema_version VALUES(0);"
    "CREATE TABLE stacks(id BIGSERIAL PRIMARY KEY, hash TEXT NOT NULL UNIQUE, text TEXT NOT NULL);"
    "CREATE TABLE devices(id BIGSERIAL PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT,"
    " fingerprint TEXT);"
    "CREATE TABLE tasks(id BIGSERIAL PRIMARY KEY, model_hash TEXT NOT NULL, model_name TEXT,"
    " model_features TEXT, device_id BIGINT NOT NULL REFERENCES devices(id),"
    " batch BIGINT NOT NULL, input_shapes TEXT NOT NULL,"
    " UNIQUE(model_hash, device_id, batch, input_shapes));"
    "CREATE TABLE configs(id BIGSERIAL PRIMARY KEY, hash TEXT NOT NULL, canonical TEXT NOT NULL,"
    " model_hash TEXT NOT NULL DEFAULT '', model_canonical TEXT, UNIQUE(hash, model_hash));"
    "CREATE TABLE runs(id BIGSERIAL PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
    " started_at TEXT NOT NULL, tool TEXT, note TEXT);"
    "CREATE TABLE measurements(id BIGSERIAL PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
    " run_id BIGINT REFERENCES runs(id), task_id BIGINT NOT NULL REFERENCES tasks(id),"
    " config_id BIGINT NOT NULL REFERENCES configs(id),"
    " stack_id BIGINT NOT NULL REFERENCES stacks(id), device_spec TEXT,"
    " created_at TEXT NOT NULL, ok INTEGER NOT NULL, failure TEXT, clock TEXT, n BIGINT,"
    " median_s DOUBLE PRECISION, mean_s DOUBLE PRECISION, trimmed_mean_s DOUBLE PRECISION,"
    " p10_s DOUBLE PRECISION, p90_s DOUBLE PRECISION, cv DOUBLE PRECISION,"
    " samples TEXT, repeats BIGINT, rounds BIGINT, prepare_s DOUBLE PRECISION,"
    " peak_memory_bytes BIGINT, energy_j DOUBLE PRECISION,"
    " energy_source TEXT CHECK(energy_source IN ('measured','modeled')),"
    " accuracy TEXT, layers TEXT);",
    "ALTER TABLE measurements ADD COLUMN discarded BIGINT;"
    "CREATE INDEX measurements_task ON measurements(task_id, config_id);",
    "ALTER TABLE measurements ADD COLUMN load1 DOUBLE PRECISION;"
    "ALTER TABLE measurements ADD COLUMN loaded INTEGER;",
    "CREATE TABLE layer_tasks(id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL,"
    " device_hash TEXT NOT NULL, stack_hash TEXT NOT NULL, op TEXT NOT NULL, text TEXT NOT NULL,"
    " features TEXT, choice TEXT NOT NULL, ok INTEGER NOT NULL, seconds DOUBLE PRECISION,"
    " created_at TEXT NOT NULL, UNIQUE(key, device_hash, stack_hash, choice));"
    "CREATE INDEX layer_tasks_op ON layer_tasks(device_hash, stack_hash, op);",
    "ALTER TABLE measurements ADD COLUMN paired_ratio DOUBLE PRECISION;"
    "ALTER TABLE measurements ADD COLUMN paired_s DOUBLE PRECISION;",
};

static int32_t version(PGconn *c, int64_t *v, mi_error_t *err) {
  int found;
  return mi__pg_int(c, "SELECT max(version) FROM schema_version", 0, NULL, v, &found, err);
}

int32_t mi__pg_migrate(PGconn *c, mi_error_t *err) {
  int64_t v = 0, exists = 0;
  int found;
  int32_t rc;
  char what[64], bump[96];
  if ((rc = mi__pg_int(c, "SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 ELSE 1 END",
                       0, NULL, &exists, &found, err)))
    return rc;
  if (exists && (rc = version(c, &v, err))) return rc;
  if (v > MI_HISTORY_SCHEMA_VERSION)
    return mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "history: schema version %lld is newer than this build knows (%d)",
                     (long long)v, MI_HISTORY_SCHEMA_VERSION);
  if (v == MI_HISTORY_SCHEMA_VERSION) return MI_OK; /* the agent role may not CREATE: skip */
  for (;;) {
    /* An advisory lock per step: two hosts opening a new database migrate it once. */
    if ((rc = mi__pg_exec(c, "BEGIN; SELECT pg_advisory_xact_lock(7170601)", "migrate", err)))
      return rc;
    v = 0;
    if ((rc = mi__pg_int(c, "SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 ELSE 1 END",
                         0, NULL, &exists, &found, err)) ||
        (exists && (rc = version(c, &v, err))))
      goto fail;
    if (v >= MI_HISTORY_SCHEMA_VERSION) break;
    snprintf(what, sizeof what, "migration %lld -> %lld", (long long)v, (long long)v + 1);
    snprintf(bump, sizeof bump, "UPDATE schema_version SET version = %lld", (long long)v + 1);
    if ((rc = mi__pg_exec(c, k_migrations[v], what, err)) || (rc = mi__pg_exec(c, bump, what, err)) ||
        (rc = mi__pg_exec(c, "COMMIT", what, err)))
      goto fail;
  }
  return mi__pg_exec(c, "COMMIT", "migrate", err);
fail:
  PQclear(PQexec(c, "ROLLBACK"));
  return rc;
}

#endif
