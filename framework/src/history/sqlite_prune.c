/* sqlite_prune.c - dropping records from the SQLite store: failed ones (a run that could not
 * start its plugin recorded only failures, which a rerun would replay instead of measuring),
 * or every record of a chosen model or device; tasks and configurations left without records go
 * with them. */
#include <stdlib.h>
#include <string.h>

#include "history/history_internal.h"

/* The model matches by hash, by the name the recipe wrote, or by that name's last part. */
static const char k_select[] =
    "SELECT m.id FROM measurements m JOIN tasks t ON m.task_id = t.id"
    " JOIN devices d ON t.device_id = d.id"
    " WHERE (?1 = 0 OR m.ok = 0)"
    " AND (?2 IS NULL OR t.model_hash = ?2 OR t.model_name = ?2 OR t.model_name LIKE '%/' || ?2)"
    " AND (?3 IS NULL OR d.hash = ?3 OR d.name = ?3 OR m.device_spec = ?3)";

int32_t mi__sqlite_prune(void *state, const mi_history_prune_t *p, int64_t *removed,
                         mi_error_t *err) {
  mi__sqlite_t *s = state;
  sqlite3_stmt *st = NULL;
  char sql[sizeof k_select + 64];
  int32_t rc;
  *removed = 0;
  if ((rc = mi__sqlite_exec(s->db, "BEGIN IMMEDIATE", "prune", err))) return rc;
  snprintf(sql, sizeof sql, "DELETE FROM measurements WHERE id IN (%s)", k_select);
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) goto fail;
  sqlite3_bind_int(st, 1, p->failed ? 1 : 0);
  if (p->model) sqlite3_bind_text(st, 2, p->model, -1, SQLITE_STATIC);
  if (p->device) sqlite3_bind_text(st, 3, p->device, -1, SQLITE_STATIC);
  if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  *removed = sqlite3_changes(s->db);
  sqlite3_finalize(st);
  st = NULL;
  if ((rc = mi__sqlite_exec(s->db,
                            "DELETE FROM tasks WHERE id NOT IN (SELECT task_id FROM measurements);"
                            "DELETE FROM configs WHERE id NOT IN (SELECT config_id FROM measurements);"
                            "COMMIT",
                            "prune", err))) {
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    *removed = 0;
    return rc;
  }
  return MI_OK;
fail:
  rc = mi_errorf(err, MI_ERR_IO, "history: prune: %s", sqlite3_errmsg(s->db));
  sqlite3_finalize(st);
  sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}
