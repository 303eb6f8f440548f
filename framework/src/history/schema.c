/* schema.c - the SQLite store's versioned schema: one migration per version, applied in order
 * (docs/history.md describes every table). Migrations are only appended. */
#include <stdio.h>
#include <string.h>

#include "history/history_internal.h"

/* k_migrations[i] takes a file from version i to version i + 1. */
static const char *const k_migrations[MI_HISTORY_SCHEMA_VERSION] = {
    /* 0 -> 1: the first schema */
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "INSERT INTO schema_version VALUES(0);"
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, text TEXT NOT NULL);"
    "CREATE TABLE devices(id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT,"
    " fingerprint TEXT);"
    "CREATE TABLE tasks(id INTEGER PRIMARY KEY, model_hash TEXT NOT NULL, model_name TEXT,"
    " model_features TEXT, device_id INTEGER NOT NULL REFERENCES devices(id),"
    " batch INTEGER NOT NULL, input_shapes TEXT NOT NULL,"
    " UNIQUE(model_hash, device_id, batch, input_shapes));"
    "CREATE TABLE configs(id INTEGER PRIMARY KEY, hash TEXT NOT NULL, canonical TEXT NOT NULL,"
    " model_hash TEXT NOT NULL DEFAULT '', model_canonical TEXT, UNIQUE(hash, model_hash));"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
    " started_at TEXT NOT NULL, tool TEXT, note TEXT);"
    "CREATE TABLE measurements(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
    " run_id INTEGER REFERENCES runs(id), task_id INTEGER NOT NULL REFERENCES tasks(id),"
    " config_id INTEGER NOT NULL REFERENCES configs(id),"
    " stack_id INTEGER NOT NULL REFERENCES stacks(id), device_spec TEXT,"
    " created_at TEXT NOT NULL, ok INTEGER NOT NULL, failure TEXT, clock TEXT, n INTEGER,"
    " median_s REAL, mean_s REAL, trimmed_mean_s REAL, p10_s REAL, p90_s REAL, cv REAL,"
    " samples TEXT, repeats INTEGER, rounds INTEGER, prepare_s REAL, peak_memory_bytes INTEGER,"
    " energy_j REAL, energy_source TEXT CHECK(energy_source IN ('measured','modeled')),"
    " accuracy TEXT, layers TEXT);",
    /* 1 -> 2: samples dropped for device-state changes, and the warm-start lookup index */
    "ALTER TABLE measurements ADD COLUMN discarded INTEGER;"
    "CREATE INDEX measurements_task ON measurements(task_id, config_id);",
    /* 2 -> 3: the machine's load when the measurement began, and whether it was under load */
    "ALTER TABLE measurements ADD COLUMN load1 REAL;"
    "ALTER TABLE measurements ADD COLUMN loaded INTEGER;",
    /* 3 -> 4: layer tasks, a kernel choice of a workload measured on a device and stack */
    "CREATE TABLE layer_tasks(id INTEGER PRIMARY KEY, key TEXT NOT NULL,"
    " device_hash TEXT NOT NULL, stack_hash TEXT NOT NULL, op TEXT NOT NULL, text TEXT NOT NULL,"
    " features TEXT, choice TEXT NOT NULL, ok INTEGER NOT NULL, seconds REAL,"
    " created_at TEXT NOT NULL, UNIQUE(key, device_hash, stack_hash, choice));"
    "CREATE INDEX layer_tasks_op ON layer_tasks(device_hash, stack_hash, op);",
    /* 4 -> 5: a measurement paired with another configuration's runs (a tune's default) */
    "ALTER TABLE measurements ADD COLUMN paired_ratio REAL;"
    "ALTER TABLE measurements ADD COLUMN paired_s REAL;",
};

int32_t mi__sqlite_exec(sqlite3 *db, const char *sql, const char *what, mi_error_t *err) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return MI_OK;
  mi_errorf(err, MI_ERR_IO, "history: %s: %s", what, msg ? msg : sqlite3_errmsg(db));
  sqlite3_free(msg);
  return MI_ERR_IO;
}

int32_t mi__sqlite_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *what,
                           mi_error_t *err) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK) return MI_OK;
  sqlite3_finalize(*st);
  *st = NULL;
  return mi_errorf(err, MI_ERR_IO, "history: %s: %s", what, sqlite3_errmsg(db));
}

void mi__sqlite_bind_texts(sqlite3_stmt *st, int first, const char *const *texts, int n) {
  for (int i = 0; i < n; i++) sqlite3_bind_text(st, first + i, texts[i], -1, SQLITE_STATIC);
}

int mi__sqlite_version(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  int v = -1;
  if (sqlite3_prepare_v2(db,
                         "SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                         "name='schema_version'",
                         -1, &st, NULL) != SQLITE_OK)
    return -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0) ? -2 : 0;
  sqlite3_finalize(st);
  if (v != -2) return v;
  if (sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &st, NULL) !=
      SQLITE_OK)
    return -1;
  v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

int32_t mi__sqlite_migrate(sqlite3 *db, int target, mi_error_t *err) {
  int v = mi__sqlite_version(db);
  char what[64], bump[96];
  int32_t rc;
  if (v < 0) return mi_errorf(err, MI_ERR_IO, "history: cannot read the schema version: %s",
                              sqlite3_errmsg(db));
  if (v > MI_HISTORY_SCHEMA_VERSION)
    return mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "history: schema version %d is newer than this build knows (%d)", v,
                     MI_HISTORY_SCHEMA_VERSION);
  for (; v < target; v++) {
    snprintf(what, sizeof what, "migration %d -> %d", v, v + 1);
    snprintf(bump, sizeof bump, "UPDATE schema_version SET version = %d;", v + 1);
    /* Each step commits on its own: a crash mid-way leaves a file at a known version. */
    if ((rc = mi__sqlite_exec(db, "BEGIN IMMEDIATE", what, err))) return rc;
    if ((rc = mi__sqlite_exec(db, k_migrations[v], what, err)) ||
        (rc = mi__sqlite_exec(db, bump, what, err)) ||
        (rc = mi__sqlite_exec(db, "COMMIT", what, err))) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      return rc;
    }
  }
  return MI_OK;
}
