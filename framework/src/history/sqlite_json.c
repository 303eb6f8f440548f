/* sqlite_json.c - what the SQLite store's exports and imports share: one JSON line per row of a
 * query, and a statement that pulls a line's fields out with SQLite's JSON functions. */
#include <stdio.h>

#include "history/history_internal.h"

int32_t mi__sqlite_export_rows(sqlite3 *db, const char *sql, FILE *f, int64_t *count,
                               mi_error_t *err) {
  sqlite3_stmt *st = NULL;
  int r;
  int32_t rc;
  if ((rc = mi__sqlite_prepare(db, sql, &st, "export", err)) != MI_OK) return rc;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    fprintf(f, "%s\n", (const char *)sqlite3_column_text(st, 0));
    (*count)++;
  }
  sqlite3_finalize(st);
  if (r != SQLITE_DONE) return mi_errorf(err, MI_ERR_IO, "history: export: %s", sqlite3_errmsg(db));
  return MI_OK;
}

/* json_extract on text that is not JSON is an error, not NULL: every path is guarded, so a bad
 * line still yields its row, with column 0 saying it is not JSON. */
int32_t mi__sqlite_json_fields(sqlite3 *db, const char *line, const char *const *paths, int n,
                               sqlite3_stmt **out, mi_error_t *err) {
  char sql[4096];
  int32_t rc;
  size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT json_valid(?1)");
  *out = NULL;
  for (int i = 0; i < n && len < sizeof sql; i++)
    len += (size_t)snprintf(sql + len, sizeof sql - len,
                            ", CASE WHEN json_valid(?1) THEN json_extract(?1, '%s') END", paths[i]);
  if (len >= sizeof sql) return mi_errorf(err, MI_ERR_INTERNAL, "history: import query too long");
  if ((rc = mi__sqlite_prepare(db, sql, out, "import", err)) != MI_OK) return rc;
  mi__sqlite_bind_texts(*out, 1, &line, 1);
  return MI_OK;
}
