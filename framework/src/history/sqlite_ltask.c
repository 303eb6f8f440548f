/* sqlite_ltask.c - the SQLite store's layer-task table (schema 4): kernel choices of a workload
 * measured on a device and stack, written, queried, exported and imported as JSON Lines. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "history/history_internal.h"
#include "metainfer/mi_ltask.h"

int32_t mi__sqlite_ltask_put(void *state, const struct mi_ltask_row *row, mi_error_t *err) {
  mi__sqlite_t *s = state;
  sqlite3_stmt *st = NULL;
  char at[32];
  int rc;
  if (!row || !row->key || !row->device_hash || !row->stack_hash || !row->op || !row->text || !row->choice)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "history: a layer-task row needs key, device, stack, op, text and choice");
  mi__now_iso(at);
  /* A choice measured again replaces its row: the table keeps the latest figure. */
  if ((rc = mi__sqlite_prepare(
           s->db,
           "INSERT INTO layer_tasks(key, device_hash, stack_hash, op, text, features,"
           " choice, ok, seconds, created_at) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,"
           " coalesce(?10, ?11)) ON CONFLICT(key, device_hash, stack_hash, choice) DO"
           " UPDATE SET ok = excluded.ok, seconds = excluded.seconds,"
           " created_at = excluded.created_at",
           &st, "layer tasks", err)) != MI_OK)
    return rc;
  mi__sqlite_bind_texts(st, 1, (const char *const[]){row->key, row->device_hash, row->stack_hash, row->op, row->text, row->features, row->choice}, 7);
  sqlite3_bind_int(st, 8, row->ok ? 1 : 0);
  if (row->ok) sqlite3_bind_double(st, 9, row->seconds);
  mi__sqlite_bind_texts(st, 10, (const char *const[]){row->created_at, at}, 2);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return mi_errorf(err, MI_ERR_IO, "history: layer tasks: %s", sqlite3_errmsg(s->db));
  return MI_OK;
}

int32_t mi__sqlite_ltask_query(void *state, const char *device_hash, const char *stack_hash,
                               const char *op, const char *key,
                               int (*fn)(void *user, const struct mi_ltask_row *row), void *user,
                               mi_error_t *err) {
  mi__sqlite_t *s = state;
  sqlite3_stmt *st = NULL;
  int rc;
  if ((rc = mi__sqlite_prepare(
           s->db,
           "SELECT key, device_hash, stack_hash, op, text, features, choice, ok,"
           " seconds, created_at FROM layer_tasks WHERE (?1 IS NULL OR device_hash = ?1)"
           " AND (?2 IS NULL OR stack_hash = ?2) AND (?3 IS NULL OR op = ?3)"
           " AND (?4 IS NULL OR key = ?4) ORDER BY key, ok DESC, seconds, id",
           &st, "layer tasks", err)) != MI_OK)
    return rc;
  mi__sqlite_bind_texts(st, 1, (const char *const[]){device_hash, stack_hash, op, key}, 4);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    mi_ltask_row_t r;
    memset(&r, 0, sizeof r);
    r.key = (const char *)sqlite3_column_text(st, 0);
    r.device_hash = (const char *)sqlite3_column_text(st, 1);
    r.stack_hash = (const char *)sqlite3_column_text(st, 2);
    r.op = (const char *)sqlite3_column_text(st, 3);
    r.text = (const char *)sqlite3_column_text(st, 4);
    r.features = (const char *)sqlite3_column_text(st, 5);
    r.choice = (const char *)sqlite3_column_text(st, 6);
    r.ok = sqlite3_column_int(st, 7);
    r.seconds = sqlite3_column_double(st, 8);
    r.created_at = (const char *)sqlite3_column_text(st, 9);
    if (fn(user, &r)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return mi_errorf(err, MI_ERR_IO, "history: layer tasks: %s", sqlite3_errmsg(s->db));
  return MI_OK;
}

int32_t mi__sqlite_ltask_export(mi__sqlite_t *s, FILE *f, int64_t *count, mi_error_t *err) {
  return mi__sqlite_export_rows(s->db,
                                "SELECT json_object('format', 1, 'kind', 'layer_task', 'key', key,"
                                " 'device_hash', device_hash, 'stack_hash', stack_hash, 'op', op, 'text', text,"
                                " 'features', features, 'choice', choice, 'ok', json(CASE ok WHEN 1 THEN"
                                " 'true' ELSE 'false' END), 'seconds', seconds, 'created_at', created_at)"
                                " FROM layer_tasks ORDER BY id",
                                f, count, err);
}

int mi__sqlite_ltask_import(mi__sqlite_t *s, const char *line, int *added, mi_error_t *err) {
  static const char *const paths[] = {"$.kind", "$.key", "$.device_hash", "$.stack_hash", "$.op",
                                      "$.text", "$.choice", "$.ok", "$.features", "$.seconds",
                                      "$.created_at"};
  sqlite3_stmt *st = NULL, *ex = NULL;
  const char *v[11];
  int32_t rc = MI_OK;
  mi_ltask_row_t row;
  if ((rc = mi__sqlite_json_fields(s->db, line, paths, 11, &st, err)) != MI_OK) return rc;
  if (sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_int(st, 0) || !sqlite3_column_text(st, 1) ||
      strcmp((const char *)sqlite3_column_text(st, 1), "layer_task") != 0) {
    sqlite3_finalize(st);
    return -1; /* not a layer-task line: the measurement import reads it */
  }
  for (int i = 0; i < 11; i++) {
    v[i] = (const char *)sqlite3_column_text(st, i + 1);
    if (i < 8 && !v[i]) {
      rc = mi_errorf(err, MI_ERR_PARSE, "layer_task: missing %s", paths[i] + 2);
      goto done;
    }
  }
  memset(&row, 0, sizeof row);
  row.key = v[1];
  row.device_hash = v[2];
  row.stack_hash = v[3];
  row.op = v[4];
  row.text = v[5];
  row.choice = v[6];
  row.ok = sqlite3_column_int(st, 8);
  row.features = v[8];
  row.seconds = sqlite3_column_double(st, 10);
  row.created_at = v[10];
  /* Importing the same file twice adds nothing: an existing row is left as it is. */
  *added = 0;
  if ((rc = mi__sqlite_prepare(s->db,
                               "SELECT 1 FROM layer_tasks WHERE key=?1 AND device_hash=?2"
                               " AND stack_hash=?3 AND choice=?4",
                               &ex, "import", err)) != MI_OK)
    goto done;
  mi__sqlite_bind_texts(ex, 1, (const char *const[]){row.key, row.device_hash, row.stack_hash, row.choice}, 4);
  if (sqlite3_step(ex) != SQLITE_ROW) {
    rc = mi__sqlite_ltask_put(s, &row, err);
    *added = rc == MI_OK;
  }
done:
  sqlite3_finalize(ex);
  sqlite3_finalize(st);
  return rc;
}
