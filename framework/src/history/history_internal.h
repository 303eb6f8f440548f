/* history_internal.h - the SQLite store's shared state, its migrations and record writer. */
#ifndef MI_HISTORY_INTERNAL_H
#define MI_HISTORY_INTERNAL_H

#include <sqlite3.h>

#include "metainfer/mi_measure.h"

typedef struct mi__sqlite {
  sqlite3 *db;
} mi__sqlite_t;

/* Brings the schema of `db` up to version `target` (<= MI_HISTORY_SCHEMA_VERSION), one
 * migration per version step, each in its own transaction. Tests use it to make old files. */
int32_t mi__sqlite_migrate(sqlite3 *db, int target, mi_error_t *err);
/* The schema version of `db` (0 for an empty file), or -1 on error. */
int mi__sqlite_version(sqlite3 *db);

/* Runs SQL without results; err names `what`. */
int32_t mi__sqlite_exec(sqlite3 *db, const char *sql, const char *what, mi_error_t *err);
/* Prepares `sql` into *st (NULL on failure); err names `what` and SQLite's reason. */
int32_t mi__sqlite_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *what,
                           mi_error_t *err);
/* Binds texts[0..n) to parameters first, first+1, ... without copying (they must outlive the
 * statement's steps); a NULL text binds SQL NULL, which is what "?k IS NULL" filters test. */
void mi__sqlite_bind_texts(sqlite3_stmt *st, int first, const char *const *texts, int n);

/* Writes a record inside the caller's transaction. `uuid` NULL = a new one; `run_uuid` names
 * the run for imported records (else r->run_id is used). *added = 0 when the uuid was there. */
int32_t mi__sqlite_put(mi__sqlite_t *st, const mi_record_t *r, const char *uuid,
                       const char *run_uuid, const char *run_started, const char *run_tool,
                       const char *created_at, int64_t *id, int *added, mi_error_t *err);

/* The counts mi_history_stats reports, the same query in both stores (the schemas agree): one
 * row whose column i < MI__HISTORY_STAT_COUNTS is the count mi__history_stat(out, i) points at. */
#define MI__HISTORY_STATS_SQL                                             \
  "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM tasks),"     \
  " (SELECT count(*) FROM configs), (SELECT count(*) FROM stacks),"       \
  " (SELECT count(*) FROM devices), (SELECT count(*) FROM measurements)," \
  " (SELECT count(*) FROM measurements WHERE ok = 0)"
#define MI__HISTORY_STAT_COUNTS 7
int64_t *mi__history_stat(mi_history_stats_t *out, int i);

/* 32 hex digits from /dev/urandom (time and pid when it cannot be read). */
void mi__uuid(char out[33]);

/* Writes the one text column of each row of `sql` as a line of f, counting them in *count. */
int32_t mi__sqlite_export_rows(sqlite3 *db, const char *sql, FILE *f, int64_t *count,
                               mi_error_t *err);
/* A statement, bound to `line` and not yet stepped, whose row is json_valid(line) and then the
 * n JSON paths' values (NULL where absent or the line is not JSON). sqlite_json.c */
int32_t mi__sqlite_json_fields(sqlite3 *db, const char *line, const char *const *paths, int n,
                               sqlite3_stmt **out, mi_error_t *err);

/* The store's import and export (sqlite_io.c). */
int32_t mi__sqlite_export(void *state, FILE *f, int64_t *count, mi_error_t *err);
int32_t mi__sqlite_import_line(void *state, const char *line, int *added, mi_error_t *err);
int32_t mi__sqlite_query(void *state, const mi_history_query_t *q, mi_history_row_fn fn,
                         void *user, mi_error_t *err);
int32_t mi__sqlite_stats(void *state, mi_history_stats_t *out, mi_error_t *err);
/* sqlite_prune.c */
int32_t mi__sqlite_prune(void *state, const mi_history_prune_t *p, int64_t *removed,
                         mi_error_t *err);
/* sqlite_ltask.c: the layer-task table */
int32_t mi__sqlite_ltask_put(void *state, const struct mi_ltask_row *row, mi_error_t *err);
int32_t mi__sqlite_ltask_query(void *state, const char *device_hash, const char *stack_hash,
                               const char *op, const char *key,
                               int (*fn)(void *user, const struct mi_ltask_row *row), void *user,
                               mi_error_t *err);
int32_t mi__sqlite_ltask_export(mi__sqlite_t *s, FILE *f, int64_t *count, mi_error_t *err);
/* Imports a "kind":"layer_task" line; -1 when the line is not one. */
int mi__sqlite_ltask_import(mi__sqlite_t *s, const char *line, int *added, mi_error_t *err);

#endif
