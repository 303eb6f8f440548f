/* pg_internal.h - what the PostgreSQL store and the farm queue share: connecting (password never
 * in messages), running statements with text parameters, and the record writer. */
#ifndef MI_PG_INTERNAL_H
#define MI_PG_INTERNAL_H

#ifdef MI_HAVE_LIBPQ
#include <libpq-fe.h>

#include "metainfer/mi_measure.h"

/* Connects to the postgresql:// URL found in `where` (a recipe may have prefixed its folder),
 * sets client messages to warnings only. Errors name the URL with its password hidden. */
int32_t mi__pg_connect(const char *where, PGconn **out, mi_error_t *err);
/* Runs SQL without parameters or results. */
int32_t mi__pg_exec(PGconn *c, const char *sql, const char *what, mi_error_t *err);
/* Runs `sql` with n text parameters (NULL = SQL NULL). On MI_OK *out (may be NULL) holds the
 * result, which the caller PQclear()s. */
int32_t mi__pg_run(PGconn *c, const char *sql, int n, const char *const *vals, PGresult **out,
                   mi_error_t *err);
/* Runs `sql` and reads the first column of the first row as an integer; *found = 0 when no row. */
int32_t mi__pg_int(PGconn *c, const char *sql, int n, const char *const *vals, int64_t *v,
                   int *found, mi_error_t *err);
/* Brings the history schema up to MI_HISTORY_SCHEMA_VERSION (same steps as SQLite's). */
int32_t mi__pg_migrate(PGconn *c, mi_error_t *err);
/* Ids of the rows a record refers to, inserted when missing (host side, not the agent role). */
int32_t mi__pg_task_config(PGconn *c, const mi_record_t *r, int64_t *task_id, int64_t *cfg_id,
                           mi_error_t *err);
/* Inserts the measurement of `r` with uuid (NULL: new) against known task and config rows;
 * its stack row is added when missing. *added = 0 when the uuid was already there. */
int32_t mi__pg_put_measurement(PGconn *c, const mi_record_t *r, const char *uuid, int64_t task_id,
                               int64_t cfg_id, int64_t *id, int *added, mi_error_t *err);
#endif

/* Writes `url` with the password (user:PASSWORD@ or password=...) replaced by "***". */
void mi__pg_redact(const char *url, char *out, size_t cap);

#endif
